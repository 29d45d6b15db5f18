"""What the Series tab and its exported figure draw of a series table (no Qt).

One drawing rule (issue 33): per q-bin, tau of converged fits as filled markers with
their errors; tau known only roughly (:data:`~xpcsviewer.fitting.vocabulary.ROUGH_STATUSES`)
as open markers, or as a triangle where only a 95 % limit is known (up: a lower limit,
tau lies above; down: an upper limit); every other status is left out and counted, so
the tab and the figure can say what they do not draw. Contrast: converged fits only.

A line joins only the files of one group (:mod:`xpcsviewer.views.series_groups`, issue
49: one sample, one q-partition): each chosen q-bin is drawn once per group that has it,
labelled with that group's own q.

The table is a :class:`xpcsviewer.jobs.series.SeriesTable` (read through ``curve``,
``bin_q`` and ``files``; ``jobs`` is a floor this package does not import).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xpcsviewer.fitting.vocabulary import ROUGH_STATUSES, STATUS_ORDER

__all__ = [
    "KEY_TEXT",
    "MARKS",
    "BinDrawing",
    "SeriesPoints",
    "left_out_counts",
    "not_drawn_text",
    "series_drawing",
    "x_span",
]

#: Marker kinds of tau, in drawing order: converged, rough, 95 % lower limit (▲),
#: 95 % upper limit (▼).
MARKS = ("filled", "open", "limit_up", "limit_down")

#: The key the tab's status line and the figure's note both show.
KEY_TEXT = ("filled: converged fits (with errors); open: unresolved or at a bound; "
            "\u25b2/\u25bc a 95 % lower/upper limit of \u03c4")

#: Lower error bars on a log axis stop at this fraction of tau (tau - err may be <= 0).
_LOW_CLIP = 1e-3


@dataclass(frozen=True)
class SeriesPoints:
    """Points of one marker kind: x, y, error bar ends (NaN: no bar) and statuses."""

    x: np.ndarray
    y: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    statuses: tuple[str, ...] = ()

    @property
    def has_bars(self) -> np.ndarray:
        return np.isfinite(self.lo) & np.isfinite(self.hi)


@dataclass(frozen=True)
class BinDrawing:
    """One q-bin of one group: tau points by marker kind (:data:`MARKS`), contrast
    points, and the count per status of files whose tau is not drawn. ``group``: the
    group's short name where the series has several groups, else ""."""

    bin: int
    q: float
    tau: dict[str, SeriesPoints]
    contrast: SeriesPoints
    left_out: dict[str, int] = field(default_factory=dict)
    group: str = ""

    def label(self, unit: str = "") -> str:
        """The legend text: the line's own q (and its group where there are several)."""
        return f"q={self.q:.4g}{unit}" + (f" ({self.group})" if self.group else "")


def _points(x, y, st, m, lo=None, hi=None) -> SeriesPoints:
    nan = np.full(int(m.sum()), np.nan)
    return SeriesPoints(x[m], y[m], nan if lo is None else lo[m], nan if hi is None else hi[m],
                        tuple(s for s, k in zip(st, m, strict=True) if k))


def _bin_drawing(table: Any, b: int, q: float, log_x: bool, only: Any = None,
                 group: str = "") -> BinDrawing:
    kw = {} if only is None else {"only": only}
    x, tau, te, st = table.curve(b, "tau_s", **kw)
    _, c, ce, _ = table.curve(b, "contrast", **kw)
    _, lo_lim, _, _ = table.curve(b, "tau_lower_limit_s", **kw)
    _, hi_lim, _, _ = table.curve(b, "tau_upper_limit_s", **kw)
    fin = np.isfinite(x) & ((x > 0) if log_x else True)
    conv = np.array([s == "converged" for s in st], bool)
    rough = np.array([s in ROUGH_STATUSES for s in st], bool)
    pos = np.isfinite(tau) & (tau > 0)
    with np.errstate(invalid="ignore"):
        up = np.isfinite(lo_lim) & (lo_lim > 0)
        down = np.isfinite(hi_lim) & (hi_lim > 0)
    filled = fin & conv & pos
    limited = up | down
    masks = {"filled": filled, "open": fin & rough & pos & ~limited,
             "limit_up": fin & rough & up, "limit_down": fin & rough & down}
    with np.errstate(invalid="ignore"):
        err = np.where(filled & np.isfinite(te), te, np.nan)
        bar_lo = np.clip(tau - err, tau * _LOW_CLIP, None)
        bar_hi = tau + err
    out = {"filled": _points(x, tau, st, filled, bar_lo, bar_hi),
           "open": _points(x, tau, st, masks["open"]),
           "limit_up": _points(x, lo_lim, st, masks["limit_up"]),
           "limit_down": _points(x, hi_lim, st, masks["limit_down"])}
    drawn = np.zeros(len(st), bool)
    for m in masks.values():
        drawn |= m
    left: dict[str, int] = {}
    for s, d in zip(st, drawn, strict=True):
        if s and not d:
            left[s] = left.get(s, 0) + 1
    okc = fin & conv & np.isfinite(c)
    cerr = np.where(np.isfinite(ce), ce, np.nan)
    contrast = _points(x, c, st, okc, c - cerr, c + cerr)
    return BinDrawing(int(b), q, out, contrast, left, group)


def series_drawing(table: Any, bins: list[int], log_x: bool = False) -> list[BinDrawing]:
    """What to draw of ``bins`` (q-bin numbers, in order): per bin, one line per group of
    files (:func:`~xpcsviewer.views.series_groups.series_groups`) that has it, each with
    its group's q; ``log_x`` leaves out x <= 0."""
    from xpcsviewer.views.series_groups import series_groups

    groups = series_groups(table) if hasattr(table, "files") else []
    if len(groups) < 2:  # one sample on one partition (or a table without files)
        qs = table.bin_q()
        return [_bin_drawing(table, b, qs.get(b, float("nan")), log_x) for b in bins]
    return [_bin_drawing(table, b, g.q[b], log_x, g.files, g.label)
            for b in bins for g in groups if b in g.q]


def left_out_counts(drawings: list[BinDrawing]) -> dict[str, int]:
    """Files (times bins) whose tau is not drawn, per status in :data:`STATUS_ORDER`
    (a status outside it goes last)."""
    tot: dict[str, int] = {}
    for d in drawings:
        for s, n in d.left_out.items():
            tot[s] = tot.get(s, 0) + n
    rank = {s: i for i, s in enumerate(STATUS_ORDER)}
    return dict(sorted(tot.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0])))


def not_drawn_text(drawings: list[BinDrawing]) -> str:
    """``"not drawn: 12 no decay, 3 poor fit"`` (tau of these statuses means nothing),
    or ``"nothing left out"``."""
    counts = left_out_counts(drawings)
    if not counts:
        return "nothing left out"
    return "not drawn: " + ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in counts.items())


def x_span(table: Any, log_x: bool = False) -> tuple[float, float] | None:
    """The abscissa of the whole run (files with nothing drawn are part of the story),
    or None; ``log_x`` leaves out x <= 0."""
    xs = np.asarray(table.x_values(), float)
    xs = xs[np.isfinite(xs) & ((xs > 0) if log_x else True)]
    return (float(xs.min()), float(xs.max())) if xs.size else None
