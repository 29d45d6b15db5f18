"""What the two-time tab's ages and the exported ages figure draw (no Qt).

One rule for the tab and the figure (issue 35): the age windows as bands on the map
(:func:`map_bands`), the g2 of each window cut both ways beside each other
(:func:`cut_curves`: points with their errors and the fit of each cut, windows where
the two ways disagree flagged), and tau against age (:func:`tau_drawing`, drawn with
the Series tab's rule :func:`xpcsviewer.views.series.series_drawing`: converged fits
filled, unresolved open, 95 % limits as triangles, the rest left out and counted)
with the ageing law's line, its interval band and its verdict (:func:`law_line`).

The analysis is :mod:`xpcsviewer.compute.ages.analysis` (an ``AgeCuts`` of one or more bins);
``bin_pos`` is a bin's position in ``cuts.bins``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from xpcsviewer.views._age_bands import WAYS, band_polygon, clip_polygon

__all__ = [
    "BAND_CHOICES",
    "QUANTITIES",
    "WAYS",
    "WAY_LABELS",
    "WINDOW_COLORS",
    "CutCurve",
    "LawLine",
    "MapBand",
    "ages_columns",
    "ages_of",
    "band_polygon",
    "clip_polygon",
    "cut_curves",
    "disagree_text",
    "fit_row",
    "flags",
    "law_line",
    "law_verdict",
    "map_bands",
    "param_points",
    "tau_drawing",
    "tau_ylim",
    "window_color",
]

#: Names of the two ways, as the tab and the figure title them.
WAY_LABELS = {"age": "constant age (t\u2081 + t\u2082)/2", "t1": "constant t\u2081"}
#: What the map's bands show: one way, or both (constant t1 mirrored above the diagonal).
BAND_CHOICES = ("age", "t1", "both")
#: One colour per window ("#rrggbb": pyqtgraph and matplotlib read it); matplotlib's
#: tab10 order, so the bands, the cuts and their legend agree.
WINDOW_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                 "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
#: Drawn where the two ways disagree beyond their errors.
FLAG_COLOR = "#d62728"
#: marker colours of the two ways' tau (the GUI draws constant age in the theme's text
#: colour instead: near-black vanishes on its dark theme)
TAU_COLORS = {"age": "#1f1f1f", "t1": "#ff7f0e"}


def window_color(k: int) -> str:
    """Colour of window ``k``."""
    return WINDOW_COLORS[int(k) % len(WINDOW_COLORS)]


@dataclass(frozen=True)
class MapBand:
    """One window on the map: corners (x = t2, y = t1 in s), the way it is read,
    whether it is mirrored above the diagonal, and whether the two ways disagree."""

    window: int
    way: str
    polygon: np.ndarray
    mirrored: bool
    flagged: bool


def map_bands(lo: np.ndarray, hi: np.ndarray, t_end: float, shown: str = "age",
              flagged: np.ndarray | None = None) -> list[MapBand]:
    """Bands of windows ``[lo, hi]`` (s) on a map ending at ``t_end`` (s).

    ``shown``: ``"age"`` or ``"t1"`` in the stored half (t1 <= t2), or ``"both"``:
    constant age there and constant t1 mirrored into the other half.
    """
    if shown not in BAND_CHOICES:
        raise ValueError(f"shown must be one of {BAND_CHOICES}, got {shown!r}")
    ways = [("age", False), ("t1", True)] if shown == "both" else [(shown, False)]
    flags = np.zeros(len(lo), bool) if flagged is None else np.asarray(flagged, bool)
    out = []
    for k, (a, b) in enumerate(zip(lo, hi, strict=True)):
        for way, mirror in ways:
            poly = band_polygon(a, b, t_end, way, mirror)
            if poly.shape[0]:
                out.append(MapBand(k, way, poly, mirror, bool(flags[k])))
    return out


@dataclass(frozen=True)
class CutCurve:
    """g2 of one window read one way, for one bin.

    x : (n,) lag (s, > 0); y : (n,) g2; lo, hi : (n,) error bar ends (NaN: no bar);
    fit : (grid (G,), curve (G,), status) or None (drawn in the look of
    :data:`xpcsviewer.views.g2_fit.FIT_LOOK`); flagged: the two ways disagree.
    """

    window: int
    way: str
    label: str
    color: str
    x: np.ndarray
    y: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    fit: tuple[np.ndarray, np.ndarray, str] | None
    flagged: bool


def _fit_of(age_fits: Any, way: int, window: int, bin_pos: int, tau: np.ndarray):
    """(grid, curve, status) of a cut's fit (an ``AgeFits``), or None without one."""
    if age_fits is None:
        return None
    table = age_fits.fits
    row = fit_row(age_fits, way, window, bin_pos)
    if not np.isfinite(table.params[table.param_names[0]][row]):
        return None
    from xpcsviewer.fitting.blocks import g2_tau_grid

    grid = g2_tau_grid(tau)
    return grid, table.curve([row], grid)[0], str(table.status[row])


def flags(cuts: Any, fits: Any = None) -> np.ndarray:
    """(W, B) where the two ways disagree, as shown: the flag where it can be trusted
    (``fits.disagree``: both cuts converged and tau at most half the window; see
    :class:`~xpcsviewer.fitting.ageing_law.AgeFits`). Before the fits, none."""
    trusted = None if fits is None else getattr(fits, "disagree", None)
    if trusted is None:
        return np.zeros(np.shape(cuts.disagree), bool)
    return np.asarray(trusted, bool)


def cut_curves(cuts: Any, way: str, bin_pos: int = 0, fits: Any = None) -> list[CutCurve]:
    """The windows of ``cuts`` read ``way`` for bin ``bin_pos``: points at lags > 0
    with a finite g2 (error bars where the error is finite) and each cut's fit
    (``fits``: the ``AgeFits`` of these cuts, or None)."""
    w = WAYS.index(way)
    tau = np.asarray(cuts.tau, dtype=np.float64)
    labels = cuts.windows.labels()
    out = []
    shown = flags(cuts, fits)
    for k in range(cuts.windows.n):
        g = np.asarray(cuts.g2[w, k, bin_pos], dtype=np.float64)
        e = np.asarray(cuts.g2_err[w, k, bin_pos], dtype=np.float64)
        m = (tau > 0) & np.isfinite(g)
        eb = np.where(np.isfinite(e[m]), e[m], np.nan)
        fit = _fit_of(fits, w, k, bin_pos, tau[m]) if m.any() else None
        out.append(CutCurve(k, way, labels[k], window_color(k), tau[m], g[m], g[m] - eb,
                            g[m] + eb, fit, bool(shown[k, bin_pos])))
    return out


def disagree_text(cuts: Any, bin_pos: int = 0, fits: Any = None) -> str:
    """"ways disagree: 2.99 s (χ² 48 / 20 lags)" for the flagged windows (:func:`flags`),
    "the two ways agree within their errors in 2 of 5 windows (…)", or, where no window
    could be tested, "no window could compare the two cuts" and why."""
    hits = np.flatnonzero(flags(cuts, fits)[:, bin_pos])
    if hits.size == 0:
        testable = None if fits is None else getattr(fits, "flag_testable", None)
        if testable is None:
            return "the two ways not compared yet (no fits)"
        n, nw = int(np.asarray(testable, bool)[:, bin_pos].sum()), cuts.windows.n
        if n == 0:
            st = np.asarray(fits.status, dtype=object)[:, :, bin_pos]
            both = int(np.sum((st[0] == "converged") & (st[1] == "converged")))
            why = (f"in none of the {nw} windows did both cuts converge" if both == 0 else
                   f"where both converged ({both} of {nw}), \u03c4 was over half the window")
            return f"no window could compare the two cuts ({why})"
        return (f"the two ways agree within their errors in {n} of {nw} windows (those "
                "where both converged with \u03c4 at most half the window)")
    parts = [f"{cuts.windows.centres[k]:.3g} s (\u03c7\u00b2 {cuts.diff_chi2[k, bin_pos]:.0f}"
             f" / {int(cuts.diff_dof[k, bin_pos])} lags)" for k in hits]
    return "\u26a0 ways disagree at " + ", ".join(parts)


# ------------------------------------------------------------ fits and tau(t_w)
def fit_row(age_fits: Any, way: int, window: int, bin_pos: int) -> int:
    """Row of the cut (way, window, bin) in ``age_fits.fits`` ((way, window, bin) order)."""
    nw, nb = age_fits.tau.shape[1], age_fits.tau.shape[2]
    return (int(way) * nw + int(window)) * nb + int(bin_pos)


def ages_of(age_fits: Any, way: int, bin_pos: int) -> np.ndarray:
    """(W,) s: the age each tau of a way and bin was measured at (``t_w`` of shape
    (2, W, B), or (2, W) for every bin)."""
    t = np.asarray(age_fits.t_w, dtype=np.float64)
    return t[int(way), :, int(bin_pos)] if t.ndim == 3 else t[int(way)]


class _TauTable:
    """One way of an ``AgeFits`` read as a series table (``curve``/``bin_q``), so
    tau(t_w) is drawn with the Series tab's rule."""

    def __init__(self, age_fits: Any, way: int) -> None:
        self.f, self.way = age_fits, int(way)

    def bin_q(self) -> dict[int, float]:
        q = np.asarray(self.f.fits.q, dtype=np.float64)
        nb = self.f.tau.shape[2]
        return {b: float(q[fit_row(self.f, self.way, 0, b)]) for b in range(nb)}

    def curve(self, b: int, name: str):
        f, w = self.f, self.way
        rows = [fit_row(f, w, k, b) for k in range(f.tau.shape[1])]
        x = ages_of(f, w, b)
        st = [str(s) for s in f.status[w, :, b]]
        if name == "tau_s":
            return x, f.tau[w, :, b], f.tau_err[w, :, b], st
        if name == "contrast":
            return x, f.contrast[w, :, b], f.contrast_err[w, :, b], st
        lim = {"tau_lower_limit_s": f.fits.tau_lower_limit,
               "tau_upper_limit_s": f.fits.tau_upper_limit}[name]
        v = np.asarray(lim, dtype=np.float64)[rows]
        return x, v, np.full(v.shape, np.nan), st


def tau_drawing(age_fits: Any, way: str, bin_pos: int = 0) -> Any:
    """tau against age of one way and bin, by the Series tab's rule: a
    :class:`~xpcsviewer.views.series.BinDrawing` (``tau`` by marker kind, ``left_out``)."""
    from xpcsviewer.views.series import series_drawing

    (d,) = series_drawing(_TauTable(age_fits, WAYS.index(way)), [int(bin_pos)])
    return d


def tau_ylim(drawings: list, line: Any = None) -> tuple[float, float] | None:
    """(lo, hi) s of the tau axis: the drawn points and the law's line, a factor 1.5
    beyond; not the band, which reaches 0 (off a log axis) where the law is loose."""
    ys = [p.y for d in drawings for p in d.tau.values() if p.y.size]
    ys += [p.hi[np.isfinite(p.hi)] for d in drawings for p in d.tau.values() if p.y.size]
    if line is not None:
        ys.append(line.tau)
    y = np.concatenate(ys) if ys else np.zeros(0)
    y = y[np.isfinite(y) & (y > 0)]
    if y.size == 0:
        return None
    return float(y.min()) / 1.5, float(y.max()) * 1.5


#: What the age plot shows against age: tau (with the law), or a parameter of the
#: converged cuts (the Series tab draws contrast so).
QUANTITIES = {"tau": "\u03c4 (s)", "contrast": "contrast", "stretch": "stretching exponent"}


def param_points(age_fits: Any, way: str, bin_pos: int, name: str) -> Any:
    """``contrast`` or ``stretch`` against age of the converged cuts of one way and bin,
    with error bars: a :class:`~xpcsviewer.views.series.SeriesPoints`."""
    from xpcsviewer.views.series import SeriesPoints

    if name not in ("contrast", "stretch"):
        raise ValueError(f"name must be 'contrast' or 'stretch', got {name!r}")
    w = WAYS.index(way)
    x = ages_of(age_fits, w, bin_pos)
    v = np.asarray(getattr(age_fits, name)[w, :, bin_pos], dtype=np.float64)
    e = np.asarray(getattr(age_fits, f"{name}_err")[w, :, bin_pos], dtype=np.float64)
    st = [str(t) for t in age_fits.status[w, :, bin_pos]]
    ok = np.array([t == "converged" for t in st]) & np.isfinite(v) & np.isfinite(x)
    eb = np.where(np.isfinite(e), e, np.nan)
    return SeriesPoints(x[ok], v[ok], (v - eb)[ok], (v + eb)[ok],
                        tuple(t for t, k in zip(st, ok, strict=True) if k))


@dataclass(frozen=True)
class LawLine:
    """The ageing law drawn over tau(t_w): line and 95 % band on ``t`` (s), and the
    text of its parameters and verdict."""

    t: np.ndarray
    tau: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    text: str
    verdict: str
    short: str = ""  #: "a = 0.48 [0.1, 0.86]: ageing" (a single journal column)


def _law_cov(law: Any, t: np.ndarray, tau: np.ndarray, err: np.ndarray) -> np.ndarray | None:
    """Covariance of (intercept, slope) of the law's weighted least squares: the
    normal matrix of its points (ln tau against ln t_w for the power law), scaled to
    the slope error the law states (which says how it weighed the scatter)."""
    cov = getattr(law, "cov", None)
    if cov is not None:
        return np.asarray(cov, dtype=np.float64)
    ok = np.isfinite(t) & np.isfinite(tau) & np.isfinite(err) & (err > 0) & (tau > 0)
    if law.law == "power":
        ok &= t > 0
    s_err = float(law.error[law.slope_name])
    if ok.sum() < 3 or not np.isfinite(s_err):
        return None
    x, e = t[ok], err[ok]
    if law.law == "power":
        x, e = np.log(x), e / tau[ok]
    a = np.stack([np.ones_like(x), x], axis=1) / e[:, None]
    try:
        cov = np.linalg.inv(a.T @ a)
    except np.linalg.LinAlgError:
        return None
    return cov * (s_err**2 / cov[1, 1])


def law_line(age_fits: Any, bin_pos: int = 0, law: str | None = None,
             t_span: tuple[float, float] | None = None, n: int = 64) -> LawLine | None:
    """The law ``law`` (default the analysis' own) of bin ``bin_pos`` over ``t_span``
    (default the constant-age cuts' ages), or None where it was not determined."""
    name = law or age_fits.law
    lf = age_fits.laws[name][int(bin_pos)]
    if lf.verdict == "undetermined" or not all(np.isfinite(v) for v in lf.value.values()):
        return None
    tw = ages_of(age_fits, 0, bin_pos)
    if t_span is None:
        fin = tw[np.isfinite(tw) & ((tw > 0) if name == "power" else True)]
        if fin.size == 0:
            return None
        t_span = (float(fin.min()), float(fin.max()))
    lo_t, hi_t = t_span
    t = (np.geomspace(lo_t, hi_t, n) if name == "power" and lo_t > 0
         else np.linspace(lo_t, hi_t, n))
    y = lf.predict(t)
    cov = _law_cov(lf, tw, np.asarray(age_fits.tau[0, :, bin_pos], np.float64),
                   np.asarray(age_fits.tau_err[0, :, bin_pos], np.float64))
    z = 1.959963984540054
    if cov is None:
        lo = hi = np.full(t.shape, np.nan)
    else:
        x = np.log(t) if name == "power" else t
        sd = np.sqrt(np.maximum(cov[0, 0] + 2 * x * cov[0, 1] + x * x * cov[1, 1], 0.0))
        if name == "power":
            lo, hi = y * np.exp(-z * sd), y * np.exp(z * sd)
        else:
            lo, hi = y - z * sd, y + z * sd
    s = lf.slope_name
    lo_s, hi_s = lf.interval[s]
    sym = "\u03bc" if s == "mu" else "a"
    form = ("\u03c4 = \u03c4\u2080 + a\u00b7t_w" if name == "linear"
            else "\u03c4 = \u03c4\u2080\u00b7t_w^\u03bc")
    # short lines: the tab's plot title is as wide as its longest line
    text = (f"{form}: {sym} = {lf.value[s]:.3g} [{lo_s:.3g}, {hi_s:.3g}] (95 %)\n"
            f"\u03c4\u2080 = {lf.value['tau0']:.3g} s, from {lf.n_points} \u03c4 at "
            f"constant age\n{lf.verdict} (99 % interval of {sym})")
    short = f"{sym} = {lf.value[s]:.2g} [{lo_s:.2g}, {hi_s:.2g}]: {lf.verdict}"
    return LawLine(t, y, lo, hi, text, lf.verdict, short)


def law_verdict(age_fits: Any, bin_pos: int = 0, law: str | None = None) -> str:
    """The law's result of one bin in one line: its :attr:`LawLine.short` ("μ = 0.86
    [0.6, 1.1]: ageing"), or "undetermined" with what the law lacked."""
    line = law_line(age_fits, bin_pos, law)
    if line is not None:
        return line.short
    from xpcsviewer.fitting.ageing_law import law_points

    lf = age_fits.laws[law or age_fits.law][int(bin_pos)]
    if lf.verdict != "undetermined":
        return lf.verdict
    use = law_points(age_fits)[:, int(bin_pos)]
    st = np.asarray(age_fits.status, dtype=object)[0, :, int(bin_pos)]
    resolved = int(np.sum(use & (st != "unresolved")))
    why = (f"{int(use.sum())} \u03c4 drawn, {resolved} resolved; the law needs 3, 2 "
           "resolved")
    if np.all(st == "unresolved"):
        why += "; every constant-age cut unresolved: \u03c4 beyond the windows' reach"
    return f"undetermined ({why})"


# ------------------------------------------------------------------- table
def ages_columns(outcome: Any, bin_pos: int = 0) -> tuple[dict[str, np.ndarray], list[str]]:
    """The CSV of the ages view: the drawn cut points (one row per way, window and
    lag) and, beside them, the tau(t_w) table (one row per way and window), with the
    laws and the flag in the header. ``outcome``: an ``AgesOutcome``
    (:mod:`xpcsviewer.jobs.ages_bin`)."""
    cuts, fits = outcome.cuts, outcome.fits
    cols: dict[str, list] = {k: [] for k in ("way", "window", "age_lo_s", "age_hi_s",
                                             "lag_s", "g2", "g2_err", "ways_disagree")}
    for way in WAYS:
        for c in cut_curves(cuts, way, bin_pos, fits):
            n = c.x.size
            k = c.window
            cols["way"] += [way] * n
            cols["window"] += [k + 1] * n
            cols["age_lo_s"] += [float(cuts.windows.lo[k])] * n
            cols["age_hi_s"] += [float(cuts.windows.hi[k])] * n
            cols["lag_s"] += list(c.x)
            cols["g2"] += list(c.y)
            cols["g2_err"] += list(0.5 * (c.hi - c.lo))
            cols["ways_disagree"] += [int(c.flagged)] * n
    tab: dict[str, list] = {k: [] for k in (
        "tw_way", "tw_window", "t_w_s", "tau_s", "tau_err_s", "tau_lower_limit_s",
        "tau_upper_limit_s", "status", "model", "contrast", "contrast_err", "stretch",
        "stretch_err")}
    nw = cuts.windows.n
    for w, way in enumerate(WAYS):
        for k in range(nw):
            r = fit_row(fits, w, k, bin_pos)
            tab["tw_way"].append(way)
            tab["tw_window"].append(k + 1)
            tab["t_w_s"].append(float(ages_of(fits, w, bin_pos)[k]))
            tab["tau_s"].append(float(fits.tau[w, k, bin_pos]))
            tab["tau_err_s"].append(float(fits.tau_err[w, k, bin_pos]))
            tab["tau_lower_limit_s"].append(float(fits.fits.tau_lower_limit[r]))
            tab["tau_upper_limit_s"].append(float(fits.fits.tau_upper_limit[r]))
            tab["status"].append(str(fits.status[w, k, bin_pos]))
            tab["model"].append(str(fits.model[w, k, bin_pos]))
            for name in ("contrast", "stretch"):
                tab[name].append(float(getattr(fits, name)[w, k, bin_pos]))
                tab[f"{name}_err"].append(float(getattr(fits, f"{name}_err")[w, k, bin_pos]))
    req = outcome.request
    header = [f"g2 by age of {req.label}, q-bin {req.dq} (q = {req.q:.5g} 1/A), from the "
              f"{outcome.source}",
              "columns way..ways_disagree: the drawn cut points (way: age = constant age "
              "(t1+t2)/2, t1 = constant t1); tw_*..stretch_err: tau against age per cut",
              disagree_text(cuts, bin_pos, fits)]
    for name, laws in fits.laws.items():
        lf = laws[bin_pos]
        s = lf.slope_name
        header.append(f"law {name}: tau0 = {lf.value['tau0']:.6g} s, {s} = "
                      f"{lf.value[s]:.6g} (95 % {lf.interval[s][0]:.6g} .. "
                      f"{lf.interval[s][1]:.6g}), chi2_red = {lf.chi2_red:.4g}, "
                      f"{lf.n_points} points: {lf.verdict}")
    kinds = {"way": object, "tw_way": object, "status": object, "model": object,
             "window": np.int64, "tw_window": np.int64, "ways_disagree": np.int64}
    out = {k: np.asarray(v, dtype=kinds.get(k, np.float64)) for k, v in (cols | tab).items()}
    return out, header
