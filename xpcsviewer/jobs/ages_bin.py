"""The ages of one two-time bin as the Two-Time tab and ``xpcsviewer export`` ask for
them (no Qt).

The analysis is that of ``xpcsviewer ages`` (:mod:`xpcsviewer.jobs.ages`: the age x
lag map or the full maps, the cuts both ways, their fits, the ageing laws); this module
only holds what is asked (:class:`AgesRequest`, snapshot on the GUI thread) and runs it
for one bin with progress and cancel (:func:`run_ages`: the tab's worker job, and the
export command's). The ``ages`` figure draws the :class:`AgesOutcome` it is handed
(ADR-8); it runs no analysis.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["AgesOutcome", "AgesRequest", "bin_request", "parse_seconds", "run_ages"]


def parse_seconds(text: str, what: str) -> tuple[float, ...]:
    """``"1, 3 5"`` -> (1.0, 3.0, 5.0); ValueError naming ``what`` on a bad entry."""
    parts = [p for p in text.replace(",", " ").replace(";", " ").split() if p]
    out = []
    for p in parts:
        try:
            v = float(p)
        except ValueError:
            raise ValueError(f"{what}: {p!r} is not a number of seconds") from None
        if not np.isfinite(v) or v < 0:
            raise ValueError(f"{what}: {p!r} must be a finite time >= 0 s")
        out.append(v)
    if not out:
        raise ValueError(f"{what}: give at least one time in seconds")
    return tuple(out)


@dataclass(frozen=True)
class AgesRequest:
    """What the tab asks for, snapshot on the GUI thread.

    ``spacing``: ``"linear"`` or ``"log"`` (``n`` equal windows over the run) or
    ``"list"`` (``ages`` with ``widths``, s). ``index``: the bin's position in the
    file's processed two-time bins, ``dq`` its 1-based dynamic bin.
    """

    path: str
    index: int
    dq: int
    n_frames: int
    t0: float
    spacing: str = "linear"
    n: int = 5
    ages: tuple[float, ...] = ()
    widths: tuple[float, ...] = ()
    model: str = "auto"
    # both laws are fitted; this one only names the verdict's (the tab draws either)
    law: str = field(default="linear", compare=False)
    # what is drawn, not what is asked: out of the comparison (a NaN q would make a
    # request differ from itself, and every result look stale)
    q: float = field(default=float("nan"), compare=False)
    label: str = field(default="", compare=False)

    def window_kw(self) -> dict:
        """The windows asked for, as keywords of :func:`xpcsviewer.jobs.ages.analyse_ages`."""
        if self.spacing == "list":
            w = self.widths if self.widths else None
            if w is not None and len(w) not in (1, len(self.ages)):
                raise ValueError(f"give one width or one per age ({len(self.ages)}), "
                                 f"not {len(w)}")
            return {"ages": list(self.ages),
                    "widths": None if w is None else (w[0] if len(w) == 1 else list(w))}
        return {"n_windows": int(self.n), "log": self.spacing == "log"}


def bin_request(res: Any, bin_index: int = 0, spacing: str = "linear", n: int = 5,
                ages: Any = (), widths: Any = (), model: str = "auto",
                law: str = "linear") -> AgesRequest:
    """The request for the ``bin_index``-th two-time bin of a loaded result (of its full
    maps where it has them, else of its age x lag map), with its q and label.

    ``ages``/``widths`` (s) given: the windows of that list (``spacing`` is then
    ``"list"``); else ``n`` windows of ``spacing``. ValueError without two-time data or
    for a bin index outside the file's bins.
    """
    if res.twotime is not None:  # the bins and extent views.age_lag_map reads too
        tt = res.twotime
        bins, n_frames, t0 = tt.processed_bins, int(tt.n_frames), float(tt.t0)
    elif getattr(res, "age_lag", None) is not None:
        al = res.age_lag
        bins, n_frames, t0 = al.bins, int(al.n_frames), float(al.frame_time)
    else:
        raise ValueError(f"{res.label}: no two-time analysis in the file")
    bins = np.asarray(bins, dtype=np.int64).ravel()
    if not 0 <= int(bin_index) < bins.size:
        raise IndexError(f"bin_index {bin_index} outside 0..{bins.size - 1}")
    dq = int(bins[int(bin_index)])
    qs = np.asarray(res.qmap.dynamic_q, dtype=np.float64).ravel()
    q = float(qs[dq - 1]) if 0 < dq <= qs.size else float("nan")
    ages = tuple(float(a) for a in np.atleast_1d(ages)) if ages is not None else ()
    widths = tuple(float(w) for w in np.atleast_1d(widths)) if widths is not None else ()
    return AgesRequest(str(res.path), int(bin_index), dq, n_frames, t0,
                       "list" if ages else spacing, int(n), ages, widths, model, law, q,
                       res.label)


@dataclass(frozen=True)
class AgesOutcome:
    """The analysis of one request: the cuts and their fits with the ageing laws
    (an ``AgeFits`` of :mod:`xpcsviewer.fitting.ageing_law`)."""

    request: AgesRequest
    source: str  #: "age x lag map" or "full map"
    n_frames: int
    frame_time: float
    cuts: Any
    fits: Any = None


def _check_full_map(req: AgesRequest, max_full_frames: int) -> None:
    """XpcsFileError when the file holds no age x lag map and its full map is larger
    than ``max_full_frames`` frames."""
    from xpcsviewer.io._h5open import open_h5
    from xpcsviewer.io.errors import XpcsFileError
    from xpcsviewer.io.results.age_lag import has_age_lag

    if req.n_frames <= max_full_frames:
        return
    with open_h5(req.path) as f:
        if has_age_lag(f):
            return
    raise XpcsFileError(req.path, f"the two-time map has {req.n_frames} frames and no age x "
                        "lag map: too large to cut by age here", dataset="/xpcs/twotime",
                        expected=f"an age x lag map (correlate --twotime-ages), or at most "
                                 f"{max_full_frames} frames (`xpcsviewer ages` reads more)")


def run_ages(req: AgesRequest, max_full_frames: int | None = None, progress=None,
             cancel=None) -> AgesOutcome:
    """Worker job (any thread): the age windows of ``req`` cut both ways, each cut
    fitted with the request's model (the one fit loop), and the ageing laws; the
    analysis of ``xpcsviewer ages`` (:mod:`xpcsviewer.jobs.ages`) for one bin.

    ``max_full_frames``: refuse a full map (a file without an age x lag map) of more
    frames (the tab: its N x N entries are held three times over while cut).
    """
    from xpcsviewer.jobs.ages import analyse_ages, read_groups, read_map
    from xpcsviewer.progress import report

    report(progress, cancel, 0, 1, "reading the two-time map")
    kw = req.window_kw()  # a bad request fails before the read
    if max_full_frames is not None:
        _check_full_map(req, int(max_full_frames))
    amap, kind = read_map(req.path, [int(req.dq)])
    groups = read_groups(req.path, kind, [int(req.dq)])
    q = np.full(int(req.dq), np.nan)
    q[-1] = req.q
    out = analyse_ages(amap, **kw, bins=[int(req.dq)], model=req.model, law=req.law, q=q,
                       label=req.label, source=req.path, progress=progress, cancel=cancel,
                       groups=groups)
    source = "age x lag map" if kind == "age_lag" else "full map"
    return AgesOutcome(req, source, int(amap.n_frames), float(amap.frame_time), out.cuts,
                       out.fits)
