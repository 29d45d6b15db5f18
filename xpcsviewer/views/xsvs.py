"""What the XSVS view of the Raw tab, its exported figure, the report and ``info`` show of
an :class:`~xpcsviewer.model.xsvs.XsvsResult` (issue 46; no Qt).

- :func:`pk_view`: P(k) of one q-bin at one exposure, the measured points (the samples
  censored at the counter cap apart), the fitted negative binomial and the Poisson of
  the same mean, and a line of text with the fit;
- :func:`beta_view`: beta(T) of every q-bin with ok points, its errors, the fitted
  visibility law beta0 V(T; tau) and the g2 fit's contrast where known;
- :func:`table_rows`: per q-bin q, beta0, tau (or its limit), status and the g2 fit
  beside it.

The model curves come from :mod:`xpcsviewer.fitting.xsvs` (``nb_logpmf``,
``visibility``), the same functions the fits use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "TABLE_COLUMNS",
    "XSVS_TEXT",
    "BetaCurve",
    "PkView",
    "beta_view",
    "exposure_text",
    "exposures",
    "fmt_pm",
    "pk_view",
    "seconds_text",
    "table_rows",
    "tau_text",
]

#: One sentence on what XSVS is (the report, the view's tooltip).
XSVS_TEXT = ("X-ray speckle visibility spectroscopy (XSVS) reads the dynamics from the "
             "photon-count statistics of the speckle: at each exposure T the counts of a "
             "q-bin's pixels follow a negative binomial of M modes, whose visibility "
             "\u03b2 = 1/M falls with T as the sample moves during the exposure, "
             "\u03b2(T) = \u03b2\u2080 (2/T\u00b2) \u222b\u2080\u1d40 (T \u2212 t) "
             "|g\u2081(t)|\u00b2 dt; \u03b2\u2080 checks the contrast a g2 fit extrapolates "
             "to \u03c4 = 0.")
#: Columns of :func:`table_rows`.
TABLE_COLUMNS = ("q-bin", "q (\u00c5\u207b\u00b9)", "\u03b2\u2080", "\u03c4",
                 "status", "g2 contrast", "g2 \u03c4", "\u03b2\u2080 / contrast")
#: Statuses of a P(k) fit that carry an M (and beta).
NB_FITTED = ("ok", "misfit")
#: Statuses of the beta(T) fit whose model curve is drawn (the others give no law).
VIS_DRAWN = ("ok", "tau_below", "tau_above")
#: Statuses whose beta0 is quoted: with tau below the shortest exposure only
#: beta0 * tau is known, not beta0.
BETA0_QUOTED = ("ok", "tau_above", "misfit")


def _f(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def seconds_text(s: float) -> str:
    """A time in the unit that reads best: ``12.5 µs``, ``3 ms``, ``1.2 s``."""
    s = _f(s)
    if not math.isfinite(s):
        return "\u2013"
    a = abs(s)
    for unit, k in (("s", 1.0), ("ms", 1e-3), ("\u00b5s", 1e-6), ("ns", 1e-9)):
        if a >= k or unit == "ns":
            return f"{s / k:.3g} {unit}"
    return f"{s:.3g} s"  # pragma: no cover


def exposure_text(res: Any, level: int) -> str:
    """Exposure ``level`` in words: ``T = 4 ms (4 frames)`` (frames alone without a frame
    time)."""
    w = int(res.windows[level])
    frames = f"{w} frame{'s' * (w != 1)}"
    t = _f(res.exposure_s[level])
    return f"T = {seconds_text(t)} ({frames})" if math.isfinite(t) else f"T = {frames}"


def fmt_pm(v: Any, e: Any, digits: int = 3) -> str:
    """``v ± e`` (``v`` alone without a finite error; an en dash without a value)."""
    v, e = _f(v), _f(e)
    if not math.isfinite(v):
        return "\u2013"
    if not math.isfinite(e) or e <= 0:
        return f"{v:.{digits}g}"
    return f"{v:.{digits}g} \u00b1 {e:.2g}"


def _tau_pm(v: float, e: float) -> str:
    """``2.1 ± 0.3 ms``: value and error in the value's unit."""
    if not math.isfinite(v):
        return "\u2013"
    if not math.isfinite(e) or e <= 0:
        return seconds_text(v)
    num, unit = seconds_text(v).split(" ")
    k = float(num) / v if v else 1.0
    return f"{num} \u00b1 {e * k:.2g} {unit}"


def tau_text(res: Any, b: int) -> str:
    """tau of q-bin row ``b``: ``τ ± err``, or its limit (``τ < 20 µs``, ``τ > 1 s``) where
    the exposures do not resolve it, or an en dash."""
    vis = res.vis
    if not vis:
        return "\u2013"
    status = str(vis["status"][b])
    limit = _f(vis["limit"][b]) if "limit" in vis else math.nan
    if status == "tau_below":
        return f"\u03c4 < {seconds_text(limit)}" if math.isfinite(limit) else "\u03c4 below T"
    if status == "tau_above":
        return f"\u03c4 > {seconds_text(limit)}" if math.isfinite(limit) else "\u03c4 above T"
    if status != "ok":
        return "\u2013"
    return _tau_pm(_f(vis["tau"][b]), _f(vis["tau_error"][b]))


# ------------------------------------------------------------------ P(k)
@dataclass(frozen=True)
class PkView:
    """P(k) of one q-bin and exposure, ready to draw (log y: zero points left out)."""

    b: int  #: row of the result (not the q-bin number)
    level: int
    k: np.ndarray  #: (n,) counts k with exact samples (P > 0)
    p: np.ndarray  #: (n,) P(k): exact samples over all samples
    k_cens: np.ndarray  #: (m,) counts k where samples were censored (true count >= k)
    p_cens: np.ndarray  #: (m,) P(count >= k) of those samples
    k_tail: float | None  #: K + 1 stands for k > K (None: no such sample)
    p_tail: float
    k_model: np.ndarray  #: (j,) 0..the largest k drawn
    nb: np.ndarray | None  #: (j,) fitted negative binomial (None: no M)
    poisson: np.ndarray | None  #: (j,) Poisson of the same mean (None: no mean)
    nb_cens: np.ndarray | None  #: (m,) the fit's P(count >= k) at ``k_cens``
    title: str
    text: str  #: mean, M ± err, beta ± err, status and reason

    @property
    def empty(self) -> bool:
        return self.k.size == 0 and self.k_cens.size == 0


def _pmf_nb(k: np.ndarray, mu: float, m: float) -> np.ndarray:
    from xpcsviewer.fitting.xsvs import nb_logpmf

    return np.exp(np.asarray(nb_logpmf(k, mu, m), dtype=np.float64))


def _pmf_poisson(k: np.ndarray, mu: float) -> np.ndarray:
    from xpcsviewer.fitting.xsvs import nb_logpmf

    return np.exp(np.asarray(nb_logpmf(k, mu, np.inf), dtype=np.float64))


def pk_view(res: Any, b: int, level: int) -> PkView:
    """P(k) of row ``b`` (q-bin ``res.bin_ids[b]``) at exposure ``level``.

    The measured points are the exact samples over all samples (exact and censored);
    the censored ones sit apart at the count they were cut at, as P(count >= k). The
    model curves run over 0..max(the largest k seen, 3 means).
    """
    nb = res.nb
    hist = np.asarray(res.hist[b, level], dtype=np.float64)
    cens = np.asarray(res.cens[b, level], dtype=np.float64)
    n = hist.sum() + cens.sum()
    kk = np.arange(hist.size, dtype=np.float64)
    big = hist.size - 1  # the last column: k > K
    if n > 0:
        p, pc = hist / n, cens / n
    else:
        p = pc = np.zeros_like(hist)
    ok = p[:big] > 0
    okc = pc > 0
    mu = _f(nb["mean"][b, level]) if nb else math.nan
    m = _f(nb["M"][b, level]) if nb else math.nan
    status = str(nb["status"][b, level]) if nb else "no fit"
    seen = np.flatnonzero((hist + cens) > 0)
    top = int(seen[-1]) if seen.size else 0
    if math.isfinite(mu):
        top = max(top, math.ceil(3 * mu + 3))
    top = min(top, big)
    if okc.any():  # beyond the cap the counts are not known: P(k) stops there
        top = min(top, int(kk[okc].min()) - 1)
    k_model = np.arange(max(top, 0) + 1, dtype=np.float64)
    fitted = status in NB_FITTED and math.isfinite(mu) and math.isfinite(m) and m > 0
    nb_curve = _pmf_nb(k_model, mu, m) if fitted else None
    nb_cens = None
    if fitted and okc.any():
        from xpcsviewer.fitting.xsvs import nb_logsf

        nb_cens = np.exp(np.asarray(nb_logsf(kk[okc], mu, m), dtype=np.float64))
    pois = _pmf_poisson(k_model, mu) if math.isfinite(mu) and mu >= 0 else None
    bid = int(res.bin_ids[b])
    q = _f(res.q[b])
    qt = f", q = {q:.4g} \u00c5\u207b\u00b9" if math.isfinite(q) else ""
    title = f"q-bin {bid}{qt}, {exposure_text(res, level)}"
    if nb:
        reason = str(nb["reason"][b, level]) if "reason" in nb else ""
        text = (f"k\u0304 = {fmt_pm(mu, nb['mean_error'][b, level], 4)} photons/pixel, "
                f"M = {fmt_pm(m, nb['M_error'][b, level])}, "
                f"\u03b2 = {fmt_pm(nb['beta'][b, level], nb['beta_error'][b, level])}, "
                f"{int(n):,} samples: {status}" + (f" ({reason})" if reason else ""))
    else:
        text = f"{int(n):,} samples: not fitted"
    return PkView(b, level, kk[:big][ok], p[:big][ok], kk[okc], pc[okc],
                  float(big) if p[big] > 0 else None, float(p[big]), k_model, nb_curve,
                  pois, nb_cens, title, text)


# -------------------------------------------------------------- beta(T)
@dataclass(frozen=True)
class BetaCurve:
    """beta(T) of one q-bin: its fitted points, the model and the g2 contrast."""

    b: int
    q_bin: int
    label: str  #: "q-bin 3 (0.0123 Å⁻¹)"
    t: np.ndarray  #: (n,) s (or frames without a frame time) of the ok points
    beta: np.ndarray
    err: np.ndarray  #: (n,) 0 where unknown
    t_misfit: np.ndarray  #: points of a poor negative-binomial fit (drawn open)
    beta_misfit: np.ndarray
    t_model: np.ndarray | None  #: (j,) the model's abscissae (None: no law)
    model: np.ndarray | None
    model_ok: bool  #: the law is fitted (ok), not only a limit of tau
    contrast: float | None  #: the g2 fit's contrast (None: unknown)
    contrast_err: float


def _visibility(t: np.ndarray, tau: float, stretch: float) -> np.ndarray:
    from xpcsviewer.fitting.xsvs import visibility

    return np.asarray(visibility(t, tau, stretch), dtype=np.float64)


def exposures(res: Any) -> tuple[np.ndarray, str]:
    """The abscissa of beta(T): (L,) seconds and ``"T (s)"``, or frames and
    ``"T (frames)"`` without a frame time."""
    t = np.asarray(res.exposure_s, dtype=np.float64)
    if np.all(np.isfinite(t)) and t.size:
        return t, "exposure T (s)"
    return np.asarray(res.windows, dtype=np.float64), "exposure T (frames)"


def beta_view(res: Any, bins: list[int] | None = None) -> list[BetaCurve]:
    """beta(T) of every row (or of rows ``bins``) with at least one ok point."""
    nb, vis, g2 = res.nb, res.vis, res.g2
    if not nb:
        return []
    t_all, _ = exposures(res)
    seconds = bool(np.all(np.isfinite(res.exposure_s)))
    out = []
    rows = range(len(res.bin_ids)) if bins is None else bins
    for b in rows:
        st = np.asarray(nb["status"][b]).astype(str)
        # the visibility the law is fitted to (moments where exact; older files: the fit's)
        key = "beta_T" if "beta_T" in nb else "beta"
        beta = np.asarray(nb[key][b], dtype=np.float64)
        err = np.nan_to_num(np.asarray(nb[key + "_error"][b], dtype=np.float64), nan=0.0)
        ok = np.isin(st, ("ok", "poisson")) & np.isfinite(beta) & (t_all > 0)
        if not ok.any():
            continue
        mis = (st == "misfit") & np.isfinite(beta) & (t_all > 0)
        t_model = model = None
        model_ok = False
        if vis and str(vis["status"][b]) in VIS_DRAWN and seconds:
            b0, tau = _f(vis["beta0"][b]), _f(vis["tau"][b])
            stretch = _f(vis["stretch"][b]) if "stretch" in vis else 1.0
            stretch = stretch if math.isfinite(stretch) else 1.0
            if math.isfinite(b0) and math.isfinite(tau) and tau > 0:
                model_ok = str(vis["status"][b]) == "ok"
                drawn = ok | mis  # the law over every point it was fitted to
                lo, hi = float(t_all[drawn].min()), float(t_all[drawn].max())
                if model_ok:  # a law past the points; a limit only where they are
                    lo, hi = lo / 1.5, hi * 1.5
                t_model = np.geomspace(lo, hi, 120)
                model = b0 * _visibility(t_model, tau, stretch)
        c = ce = None
        if g2 and "contrast" in g2:
            cv = _f(g2["contrast"][b])
            if math.isfinite(cv):
                c = cv
                ce = _f(g2["contrast_error"][b]) if "contrast_error" in g2 else math.nan
        q = _f(res.q[b])
        bid = int(res.bin_ids[b])
        label = f"q-bin {bid}" + (f" ({q:.4g} \u00c5\u207b\u00b9)" if math.isfinite(q) else "")
        out.append(BetaCurve(b, bid, label, t_all[ok], beta[ok], err[ok], t_all[mis],
                             beta[mis], t_model, model, model_ok, c,
                             ce if ce is not None and math.isfinite(ce) else 0.0))
    return out


# ---------------------------------------------------------------- table
def _g2_pm(res: Any, b: int, name: str) -> tuple[float, float]:
    g2 = res.g2
    if not g2 or name not in g2:
        return math.nan, math.nan
    err = g2.get(f"{name}_error")
    return _f(g2[name][b]), (_f(err[b]) if err is not None else math.nan)


def agreement(res: Any, b: int) -> tuple[float, float]:
    """beta0 / (the g2 contrast) of row ``b`` and its error (nan: not both known)."""
    quoted = res.vis and str(res.vis["status"][b]) in BETA0_QUOTED
    b0 = _f(res.vis["beta0"][b]) if quoted else math.nan
    e0 = _f(res.vis["beta0_error"][b]) if res.vis else math.nan
    c, ce = _g2_pm(res, b, "contrast")
    if not (math.isfinite(b0) and math.isfinite(c) and c != 0):
        return math.nan, math.nan
    r = b0 / c
    rel = math.hypot(e0 / b0 if math.isfinite(e0) and b0 else 0.0,
                     ce / c if math.isfinite(ce) else 0.0)
    return r, abs(r) * rel


def table_rows(res: Any) -> list[list[str]]:
    """Per q-bin the cells of :data:`TABLE_COLUMNS` (the view's table, the report's)."""
    rows = []
    vis = res.vis
    for b, bid in enumerate(res.bin_ids):
        q = _f(res.q[b])
        if vis:
            status = str(vis["status"][b])
            b0 = (fmt_pm(vis["beta0"][b], vis["beta0_error"][b])
                  if status in BETA0_QUOTED else "\u2013")
            reason = str(vis["reason"][b]) if "reason" in vis else ""
            if reason and status != "ok":
                status = f"{status}: {reason}"
        else:
            b0, status = "\u2013", "not fitted"
        c, ce = _g2_pm(res, b, "contrast")
        gt, gte = _g2_pm(res, b, "tau")
        g2_status = str(res.g2["status"][b]) if res.g2 and "status" in res.g2 else ""
        g2_tau = _tau_pm(gt, gte)
        if g2_status and g2_status not in ("converged", "ok") and math.isfinite(gt):
            g2_tau += f" ({g2_status})"
        r, re = agreement(res, b)
        rows.append([str(int(bid)), f"{q:.4g}" if math.isfinite(q) else "\u2013", b0,
                     tau_text(res, b), status, fmt_pm(c, ce), g2_tau, fmt_pm(r, re)])
    return rows
