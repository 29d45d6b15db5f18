"""g2 by sample age of a result file: read -> cut -> fit -> ageing law -> records.

The file's age x lag map (``/xpcs/twotime/age_lag``) is read if it has one, otherwise
its full two-time maps (:func:`xpcsviewer.compute.ages.age_lag.from_full_maps`); the cuts
are :func:`xpcsviewer.compute.ages.analysis.age_cuts`, the fits and laws
:func:`xpcsviewer.fitting.ageing_law.fit_age_cuts`. Used by ``xpcsviewer ages``,
``fit --ages`` and the two-time tab. Units: seconds, q in 1/Angstrom.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.compute.ages.age_lag import AgeLagMap, from_full_maps
from xpcsviewer.compute.ages.analysis import (
    FLAG_P,
    WAYS,
    AgeCuts,
    AgeWindows,
    age_cuts,
    age_windows,
)
from xpcsviewer.compute.ages.groups import batch_sd, group_cut_g2, group_flag, group_tau_errors
from xpcsviewer.fitting.ageing_law import (
    LAWS,
    AgeFits,
    fit_age_cuts,
    fit_law,
    law_points,
    with_tau_errors,
)
from xpcsviewer.fitting.spec import FitSpec
from xpcsviewer.fitting.vocabulary import ROUGH_STATUSES

__all__ = [
    "MAX_FULL_FRAMES",
    "MAX_GROUP_BYTES",
    "AgesOutput",
    "ages_file",
    "analyse_ages",
    "csv_rows",
    "json_record",
    "read_groups",
    "read_map",
    "windows_for",
]

#: Largest full two-time map read whole (8 bytes x N^2 per bin: 0.5 GB at 8192).
MAX_FULL_FRAMES = 8192


@dataclass
class AgesOutput:
    """Everything ``ages`` reports for one file."""

    cuts: AgeCuts
    fits: AgeFits
    q: np.ndarray  #: (B,) of the cut bins (NaN when unknown)
    phi: np.ndarray
    path: str = ""
    source: str = ""  #: "age_lag" or "full maps"
    n_frames: int = 0  #: of the map cut


def windows_for(amap: AgeLagMap, *, ages: Sequence[float] | None = None,
                widths: float | Sequence[float] | None = None, n_windows: int | None = None,
                log: bool = False) -> AgeWindows:
    """Age windows over the map's run (default: 5 equal windows)."""
    span = (0.0, amap.n_frames * float(amap.frame_time))
    if ages is None and n_windows is None:
        n_windows = 5
    return age_windows(ages, widths, n=n_windows, log=log, span=span)


def analyse_ages(amap: AgeLagMap, windows: AgeWindows | None = None, *,
                 ages: Sequence[float] | None = None,
                 widths: float | Sequence[float] | None = None,
                 n_windows: int | None = None, log: bool = False,
                 bins: Sequence[int] | None = None, model: str = "auto",
                 fit: FitSpec | None = None, law: str = "linear",
                 q: np.ndarray | None = None, phi: np.ndarray | None = None,
                 label: str = "", source: str = "", progress: Any = None,
                 cancel: Any = None, groups: Any = None) -> AgesOutput:
    """Cut, fit and fit the ageing law.

    ``q``, ``phi``: per dynamic bin of the file (indexed by bin - 1), or None.
    ``fit`` (a FitSpec) wins over ``model``. ``groups``: the file's two-time maps per
    pixel group (:class:`xpcsviewer.io.results.twotime_groups.TwotimeGroups`: ``bins``,
    ``pixels`` (K, B), ``maps`` per bin (K, N, N)), or None: then each cut's tau error
    is the groups' spread (:mod:`xpcsviewer.compute.ages.groups`) and the laws are
    fitted with it.
    """
    from xpcsviewer.progress import report

    w = windows or windows_for(amap, ages=ages, widths=widths, n_windows=n_windows, log=log)
    cuts = age_cuts(amap, w, bins=bins, cancel=cancel,
                    progress=None if progress is None else
                    (lambda d, t, m: progress(d, 4 * t, m)))
    idx = cuts.bins - 1
    qq = np.full(idx.size, np.nan) if q is None else np.asarray(q, float)[idx]
    pp = np.full(idx.size, np.nan) if phi is None else np.asarray(phi, float)[idx]
    per_group = None
    if groups is not None:
        report(progress, cancel, 1, 4, "cuts of the pixel groups")
        per_group = group_cut_g2(cuts, groups, cancel=cancel)
    report(progress, cancel, 2, 4, f"fitting {2 * w.n * idx.size} age cuts")
    # the groups' cuts also tell the fits how the lags' noise is correlated
    fits = fit_age_cuts(cuts, fit or FitSpec(model=model), law=law, q=qq, phi=pp,
                        label=label, source=source, cancel=cancel,
                        group_g2=None if per_group is None else per_group[0])
    if per_group is not None:
        report(progress, cancel, 3, 4, "tau errors from the pixel groups")
        err, tau_g, weight = group_tau_errors(cuts, fits.tau, fits.contrast, None,
                                              group_g2=per_group)
        # the two ways' flag against the null the groups show (lags are not independent)
        flag = group_flag(cuts, per_group[0], per_group[1], FLAG_P)
        fits = replace(fits, disagree=flag & np.asarray(fits.flag_testable, bool))
        k = int(np.asarray(groups.pixels).shape[0])
        fits = with_tau_errors(fits, err, f"pixel groups ({k})",
                               _group_law_errors(fits, tau_g, weight))
    report(progress, cancel, 4, 4, "ages done")
    return AgesOutput(cuts=cuts, fits=fits, q=qq, phi=pp, path=source,
                      n_frames=int(amap.n_frames))


def _group_law_errors(fits: AgeFits, tau_g: np.ndarray, weight: np.ndarray
                      ) -> dict[str, list[dict[str, float]]]:
    """Per law and bin, the errors of its parameters from the pixel groups: each group's
    taus (the same points the law reads, limits as limits, the fit's errors as weights)
    give the group's law; weighted batch means over the groups, and "dof": the groups
    behind them less one (the intervals' Student t)."""
    use = law_points(fits)
    # a lower limit the law passes below acts as a value, so its noise moves the law:
    # each group reads its own (issue 48: C01 bin 2's slope pull sd 1.41 -> 1.11 on 20
    # demo seeds); a law that reads a tau at a bound keeps its own errors (the groups'
    # spread of such a tau is not its uncertainty)
    lower = fits.status[0] == "unresolved"
    closed = np.all(~use | ~np.isin(fits.status[0], [s for s in ROUGH_STATUSES
                                                     if s != "unresolved"]), axis=0)
    out: dict[str, list[dict[str, float]]] = {}
    for name in LAWS:
        per_bin = []
        for b in range(fits.tau.shape[2]):
            vals: dict[str, list[float]] = {}
            if not closed[b]:
                per_bin.append({})
                continue
            for g in range(tau_g.shape[0]):
                t = np.where(use[:, b], tau_g[g, 0, :, b], np.nan)
                lf = fit_law(fits.t_w[0, :, b], t, fits.tau_err[0, :, b], name,
                             lower[:, b])
                for key, v in lf.value.items():
                    vals.setdefault(key, []).append(v)
            errs = {key: batch_sd(np.asarray(v), weight[:, b]) for key, v in vals.items()}
            held = np.isfinite(np.asarray(vals.get("tau0", []), float)) & (weight[:, b] > 0)
            errs["dof"] = float(held.sum() - 1)
            per_bin.append(errs)
        out[name] = per_bin
    return out


def read_map(path: str | Path, bins: Sequence[int] | None = None) -> tuple[AgeLagMap, str]:
    """The file's age x lag map, or its full two-time maps as one; and which it was.

    Raises XpcsFileError for a file without two-time data or a full map too large
    to read whole (:data:`MAX_FULL_FRAMES`).
    """

    from xpcsviewer.io import read_c2, read_result
    from xpcsviewer.io._h5 import open_h5
    from xpcsviewer.io.errors import XpcsFileError
    from xpcsviewer.io.results.age_lag import has_age_lag, read_age_lag

    with open_h5(path) as f:  # checked first: a link to a FIFO would hang the lookup
        has = has_age_lag(f)
    if has:
        return read_age_lag(path, bins), "age_lag"
    res = read_result(path)
    tt = res.twotime
    if tt is None:
        raise XpcsFileError(str(path), "has no two-time data", dataset="/xpcs/twotime",
                            expected="an age x lag map or full two-time maps")
    if tt.n_frames > MAX_FULL_FRAMES:
        raise XpcsFileError(str(path), f"holds {tt.n_frames}-frame full maps and no age x "
                            "lag map", dataset="/xpcs/twotime",
                            expected=f"at most {MAX_FULL_FRAMES} frames, or an age x lag "
                            "map (xpcsviewer correlate --twotime-ages)")
    processed = [int(b) for b in tt.processed_bins]
    want = processed if bins is None else [int(b) for b in bins]
    missing = [b for b in want if b not in processed]
    if missing:
        raise XpcsFileError(str(path), f"has no two-time map of bins {missing}",
                            dataset="/xpcs/twotime",
                            expected=f"one of the processed bins {processed}")
    maps, dt = [], None
    for b in want:
        view = read_c2(path, processed.index(b), max_size=tt.n_frames)
        maps.append(view.c2)
        dt = float(view.t0)
    return from_full_maps(maps, want, dt), "full maps"


#: Largest pixel-group maps read (K x N^2 x 8 bytes per bin).
MAX_GROUP_BYTES = 1 << 30


def read_groups(path: str | Path, kind: str, bins: Sequence[int] | None = None) -> Any:
    """The file's maps per pixel group of the kind the cuts come from, for the cut bins,
    or None: none in the file, or they would take more than :data:`MAX_GROUP_BYTES` per
    bin to hold. ``kind``: "full maps" (:class:`~xpcsviewer.io.results.twotime_groups.
    TwotimeGroups`) or "age_lag" (:class:`~xpcsviewer.io.results.age_lag_groups.AgeLagGroups`).
    Raises XpcsFileError for maps of the wrong kind or shape."""
    from xpcsviewer.io._h5 import open_h5
    from xpcsviewer.io.results.age_lag_groups import (
        read_age_lag_groups_group,
        read_age_lag_groups_header,
    )
    from xpcsviewer.io.results.twotime_groups import (
        read_twotime_groups_group,
        read_twotime_groups_header,
    )

    full = kind == "full maps"
    header = read_twotime_groups_header if full else read_age_lag_groups_header
    read = read_twotime_groups_group if full else read_age_lag_groups_group
    with open_h5(path) as f:
        h = header(f)
        if h is None or h.bytes_per_bin > MAX_GROUP_BYTES:
            return None
        return read(f, bins)


def ages_file(path: str | Path, res: Any = None, **kw: Any) -> AgesOutput:
    """:func:`analyse_ages` of one result file (keywords as there; ``res``: the file's
    result when already read); tau errors from the file's pixel groups where it has
    them (:func:`read_groups`) unless ``groups`` is given (None: the fits')."""
    from xpcsviewer.io import read_result

    amap, kind = read_map(path, kw.get("bins"))
    res = read_result(path) if res is None else res
    if "groups" not in kw:  # not read at all when the caller says
        kw["groups"] = read_groups(path, kind, kw.get("bins"))
    out = analyse_ages(amap, q=res.qmap.dynamic_q, phi=res.qmap.dynamic_phi,
                       label=res.label, source=str(path), **kw)
    out.source = kind
    out.path = str(path)
    return out


CSV_HEADER = ["file", "bin", "q", "phi", "way", "age_lo_s", "age_hi_s", "t_w_s", "model",
              "status", "tau_s", "tau_err_s", "contrast", "contrast_err", "stretch",
              "stretch_err", "chi2_red", "ways_disagree", "ways_chi2", "ways_dof", "law",
              "law_tau0_s", "law_slope", "law_slope_err", "law_slope_lo95",
              "law_slope_hi95", "verdict"]


def _num(x: Any) -> Any:
    x = float(x)
    return None if not np.isfinite(x) else float(f"{x:.10g}")


def csv_rows(out: AgesOutput, header: bool = True) -> list[list]:
    """One row per (bin, window, way); the bin's law repeated on each of its rows."""
    c, f = out.cuts, out.fits
    rows: list[list] = [list(CSV_HEADER)] if header else []
    chi2r = np.asarray(f.fits.chi2_red).reshape(f.tau.shape)
    for j, b in enumerate(c.bins):
        lf = f.laws[f.law][j]
        s = lf.slope_name
        for wi in range(c.windows.n):
            for way, name in enumerate(WAYS):
                rows.append([out.path, int(b), _num(out.q[j]), _num(out.phi[j]), name,
                             _num(c.windows.lo[wi]), _num(c.windows.hi[wi]),
                             _num(f.t_w[way, wi, j]), f.model[way, wi, j],
                             f.status[way, wi, j], _num(f.tau[way, wi, j]),
                             _num(f.tau_err[way, wi, j]), _num(f.contrast[way, wi, j]),
                             _num(f.contrast_err[way, wi, j]), _num(f.stretch[way, wi, j]),
                             _num(f.stretch_err[way, wi, j]), _num(chi2r[way, wi, j]),
                             _flag(f, wi, j), _num(c.diff_chi2[wi, j]),
                             int(c.diff_dof[wi, j]), lf.law, _num(lf.value["tau0"]),
                             _num(lf.value[s]), _num(lf.error[s]),
                             _num(lf.interval[s][0]), _num(lf.interval[s][1]), lf.verdict])
    return rows


def _flag(f: AgeFits, wi: int, j: int) -> Any:
    """True / False, or None where the flag cannot be trusted (tau > half the window)."""
    return bool(f.disagree[wi, j]) if f.flag_testable[wi, j] else None


def _arr(a: np.ndarray) -> Any:
    a = np.asarray(a, dtype=object if np.asarray(a).dtype == object else float)
    if a.dtype == object:
        return a.tolist()
    return np.where(np.isfinite(a), a, np.nan).tolist()


def json_record(out: AgesOutput, curves: bool = True) -> dict[str, Any]:
    """The JSON form (arrays indexed [way][window][bin]; NaN -> null by the writer)."""
    from xpcsviewer.io.outputs import to_jsonable

    c, f = out.cuts, out.fits
    laws = {}
    for name, lst in f.laws.items():
        laws[name] = [{"value": lf.value, "error": lf.error,
                       "interval95": {k: list(v) for k, v in lf.interval.items()},
                       "chi2_red": lf.chi2_red, "n_points": lf.n_points,
                       "verdict": lf.verdict} for lf in lst]
    rec: dict[str, Any] = {
        "source": out.source,
        "ways": list(WAYS),
        "bins": c.bins.tolist(),
        "q": _arr(out.q), "phi": _arr(out.phi),
        "windows": {"lo_s": _arr(c.windows.lo), "hi_s": _arr(c.windows.hi),
                    "centre_s": _arr(c.windows.centres)},
        "t_w_s": _arr(f.t_w),
        "model": _arr(f.model), "status": _arr(f.status),
        "tau_s": {"value": _arr(f.tau), "error": _arr(f.tau_err)},
        "tau_error_source": f.tau_err_source,
        "contrast": {"value": _arr(f.contrast), "error": _arr(f.contrast_err)},
        "stretch": {"value": _arr(f.stretch), "error": _arr(f.stretch_err)},
        "ways_disagree": [[_flag(f, wi, j) for j in range(c.bins.size)]
                          for wi in range(c.windows.n)],
        "ways_chi2": _arr(c.diff_chi2),
        "ways_dof": c.diff_dof.tolist(),
        "law": f.law, "laws": laws, "verdict": f.verdict,
    }
    if curves:
        rec["curves"] = {"lag_s": _arr(c.tau), "g2": _arr(c.g2), "g2_err": _arr(c.g2_err),
                         "n_entries": _arr(c.n_entries)}
        rec["heterogeneity"] = {"lag_s": _arr(c.tau), "chi4": _arr(c.chi4),
                                "noise_floor": _arr(c.chi4_floor),
                                "definition": "var_t1[C(t1, t1 + lag)] / (<C> - 1)^2 "
                                              "over the constant-age cut; noise floor: "
                                              "half the mean squared difference of "
                                              "t1-adjacent entries, same scale"}
    return to_jsonable(rec)
