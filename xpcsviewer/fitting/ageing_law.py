"""Fits of g2 by age and the ageing law of tau(t_w) (no Qt).

The cuts of :func:`xpcsviewer.compute.ages.analysis.age_cuts` become one
:class:`~xpcsviewer.fitting.blocks.G2Block` per (way, window) and go through the one
fit loop, :func:`~xpcsviewer.fitting.block_fits.fit_curves`, so they get the model
choice and statuses of any g2; only quotable relaxation times
(:func:`~xpcsviewer.fitting.status.quotable`) of the constant-age cuts enter the law.

Laws (weighted least squares on tau with its error; an ``unresolved`` tau is a lower
limit, censored, see :func:`fit_law`):

- ``linear``: tau = tau0 + a * t_w (slope ``a``, dimensionless)
- ``power``:  tau = tau0 * t_w**mu, fitted as ln tau = ln tau0 + mu ln t_w (``mu``)

The covariance is scaled by chi2_red where the scatter exceeds the errors (chi2
beyond its 95 % quantile), so stated errors are trusted unless the points contradict
them; intervals are normal (1.96 sigma for 95 %), Student t where the errors come from
K pixel groups (:func:`law_with_errors`). The verdict per bin reads the slope's 99 %
interval (2.576 sigma), so a stationary sample is called stationary in 99 of 100 bins:
``ageing`` (slope > 0), ``accelerating`` (< 0), ``stationary``, or ``undetermined``
with fewer than 3 drawn times (converged, unresolved or at a bound) or fewer than 2 of
them values (not unresolved).

A converged tau beyond :data:`REACH_FRACTION` of the longest lag its cut holds (a cut
at the run's ends) is made ``unresolved``: a lower limit (:func:`beyond_reach`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from xpcsviewer.fitting.blocks import G2Block
from xpcsviewer.fitting.fit_table import G2Fits
from xpcsviewer.fitting.spec import FitSpec, SamplerSpec
from xpcsviewer.fitting.vocabulary import ROUGH_STATUSES

#: :class:`xpcsviewer.compute.ages.analysis.AgeCuts` (fitting does not import compute: ADR-7)
AgeCuts = Any

__all__ = ["LAWS", "REACH_FRACTION", "VERDICTS", "AgeFits", "LawFit", "beyond_reach",
           "cut_blocks", "cut_reach", "fit_age_cuts", "fit_law", "law_points",
           "law_with_errors", "with_tau_errors"]

LAWS = ("linear", "power")
VERDICTS = ("stationary", "ageing", "accelerating", "undetermined")
#: the two ways of cutting (as :data:`xpcsviewer.compute.ages.analysis.WAYS`)
WAYS = ("age", "t1")
_Z95 = 1.959963984540054
_Z99 = 2.5758293035489004


@dataclass(frozen=True)
class LawFit:
    """One bin's ageing law: tau = tau0 + a t_w (``linear``) or tau0 t_w**mu (``power``)."""

    law: str
    value: dict[str, float]  #: tau0 (s), and a or mu
    error: dict[str, float]  #: 1 sigma
    interval: dict[str, tuple[float, float]]  #: 95 %
    chi2_red: float
    n_points: int
    verdict: str

    @property
    def slope_name(self) -> str:
        return "a" if self.law == "linear" else "mu"

    def predict(self, t_w: np.ndarray) -> np.ndarray:
        """tau (s) at ages ``t_w`` (s)."""
        t = np.asarray(t_w, np.float64)
        if self.law == "linear":
            return self.value["tau0"] + self.value["a"] * t
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.value["tau0"] * t ** self.value["mu"]


def _chi2_upper(p: float, dof: int) -> float:
    """chi-square quantile (Wilson-Hilferty; a few % off at dof 1-2)."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(p)
    return dof * (1.0 - 2.0 / (9.0 * dof) + z * np.sqrt(2.0 / (9.0 * dof))) ** 3


def _nan_law(law: str, n: int) -> LawFit:
    s = "a" if law == "linear" else "mu"
    nan = float("nan")
    return LawFit(law, {"tau0": nan, s: nan}, {"tau0": nan, s: nan},
                  {"tau0": (nan, nan), s: (nan, nan)}, nan, n, "undetermined")


def _quantiles(dof: float | None) -> tuple[float, float]:
    """Two-sided 95 % and 99 % quantiles: normal, or Student t for errors estimated
    with ``dof`` degrees of freedom (K pixel groups' spread: K - 1)."""
    if dof is None or not np.isfinite(dof) or dof <= 0:
        return _Z95, _Z99
    from scipy.stats import t

    return float(t.ppf(0.975, dof)), float(t.ppf(0.995, dof))


def _intervals_verdict(law: str, value: dict[str, float], error: dict[str, float],
                       dof: float | None = None
                       ) -> tuple[dict[str, tuple[float, float]], str]:
    """The 95 % intervals (tau0's log-normal for the power law) and the verdict from the
    slope's 99 % interval; Student t quantiles where the errors have ``dof``."""
    z95, z99 = _quantiles(dof)
    slope = "a" if law == "linear" else "mu"
    s, s_err = value[slope], error[slope]
    t0, t0_err = value["tau0"], error["tau0"]
    if law == "power" and t0 > 0:
        i0 = (t0 * float(np.exp(-z95 * t0_err / t0)), t0 * float(np.exp(z95 * t0_err / t0)))
    else:
        i0 = (t0 - z95 * t0_err, t0 + z95 * t0_err)
    verdict = ("ageing" if s - z99 * s_err > 0 else
               "accelerating" if s + z99 * s_err < 0 else "stationary")
    return {"tau0": i0, slope: (s - z95 * s_err, s + z95 * s_err)}, verdict


def fit_law(t_w: np.ndarray, tau: np.ndarray, tau_err: np.ndarray,
            law: str = "linear", lower: np.ndarray | None = None) -> LawFit:
    """Weighted least squares of tau(t_w) (s) on the points with a finite time and error.

    Points need tau > 0 and err > 0 (and t_w > 0 for ``power``); at least 3, of which at
    least 2 are values. ``lower`` (bool per point) marks lower limits: an ``unresolved``
    tau, whose decay was not pinned down (the window ended first), says the true tau is
    at least about its fitted value. Such a point enters censored (Tobit): its
    likelihood is Phi((law(t_w) - tau) / err), so a law above it pays nothing and one
    below pays as for a value; the law is then the maximum likelihood (Newton, the
    problem is convex) and its covariance the inverse Hessian there.
    """
    if law not in LAWS:
        raise ValueError(f"unknown ageing law {law!r} (choose from {', '.join(LAWS)})")
    t = np.asarray(t_w, np.float64).ravel()
    y = np.asarray(tau, np.float64).ravel()
    e = np.asarray(tau_err, np.float64).ravel()
    cens = (np.zeros(t.shape, bool) if lower is None
            else np.broadcast_to(np.asarray(lower, bool).ravel(), t.shape))
    ok = np.isfinite(t) & np.isfinite(y) & np.isfinite(e) & (e > 0) & (y > 0)
    if law == "power":
        ok &= t > 0
    n = int(ok.sum())
    if n < 3 or int((ok & ~cens).sum()) < 2:
        return _nan_law(law, n)
    t, y, e, cens = t[ok], y[ok], e[ok], cens[ok]
    if law == "power":
        x, yy, ee = np.log(t), np.log(y), e / y
    else:
        x, yy, ee = t, y, e
    design = np.stack([np.ones_like(x), x], axis=1)
    solved = _censored_wls(design, yy, ee, cens)
    if solved is None:
        return _nan_law(law, n)
    p, cov, chi2, dof = solved
    chi2_red = chi2 / dof if dof > 0 else float("nan")
    if dof > 0 and chi2 > _chi2_upper(0.95, dof):  # scatter beyond the errors: trust it
        cov = cov * chi2_red
    sd = np.sqrt(np.diag(cov))
    slope = "a" if law == "linear" else "mu"
    if law == "power":
        tau0, tau0_err = float(np.exp(p[0])), float(np.exp(p[0]) * sd[0])
    else:
        tau0, tau0_err = float(p[0]), float(sd[0])
    value = {"tau0": tau0, slope: float(p[1])}
    error = {"tau0": tau0_err, slope: float(sd[1])}
    interval, verdict = _intervals_verdict(law, value, error)
    return LawFit(law, value, error, interval, chi2_red, n, verdict)


def _censored_wls(design: np.ndarray, y: np.ndarray, err: np.ndarray, cens: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, float, int] | None:
    """(p, cov, chi2, dof) of y ~ design @ p: weighted least squares on the values, and
    the points in ``cens`` as lower limits (likelihood Phi(z), z = (fit - y) / err).
    chi2 counts the values and the limits the fit falls below; dof those less 2."""
    from scipy.special import log_ndtr

    a = design / err[:, None]
    b = y / err
    ex = ~cens
    try:
        p = np.linalg.solve(a[ex].T @ a[ex], a[ex].T @ b[ex])
    except np.linalg.LinAlgError:
        return None

    def cost(q: np.ndarray) -> float:
        z = a @ q - b
        return float(0.5 * np.sum(z[ex] ** 2) - np.sum(log_ndtr(z[cens])))

    def grad_hess(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z = a @ q - b
        zc = z[cens]
        # inverse Mills ratio phi/Phi, stable for z << 0
        lam = np.exp(-0.5 * zc**2 - 0.5 * np.log(2 * np.pi) - log_ndtr(zc))
        g = a[ex].T @ z[ex] - a[cens].T @ lam
        h = a[ex].T @ a[ex] + (a[cens] * (lam * (zc + lam))[:, None]).T @ a[cens]
        return g, h

    if cens.any():
        c0 = cost(p)
        for _ in range(100):
            g, h = grad_hess(p)
            try:
                step = np.linalg.solve(h, g)
            except np.linalg.LinAlgError:
                return None
            s = 1.0
            while s > 1e-8 and cost(p - s * step) > c0:
                s *= 0.5
            p = p - s * step
            c1 = cost(p)
            if c0 - c1 <= 1e-12 * max(1.0, abs(c0)):
                c0 = c1
                break
            c0 = c1
    _, h = grad_hess(p)
    try:
        cov = np.linalg.inv(h)
    except np.linalg.LinAlgError:
        return None
    z = a @ p - b
    below = cens & (z < 0)
    chi2 = float(np.sum(z[ex] ** 2) + np.sum(z[below] ** 2))
    return p, cov, chi2, int(ex.sum() + below.sum()) - 2


def cut_blocks(cuts: AgeCuts, q: np.ndarray | None = None, phi: np.ndarray | None = None,
               label: str = "", source: str = "", group_g2: np.ndarray | None = None
               ) -> list[G2Block]:
    """One G2Block per (way, window): file_index = way * W + window; lag 0 left out.

    ``q``, ``phi``: per cut bin (NaN when unknown). ``source`` keys the curves (with
    the way and window appended), so a fit is matched to its cut only. ``group_g2``
    (K, 2, W, B, T): the same cuts of K independent pixel groups; their deviations from
    the whole become the blocks' ``noise``, so the fits judge residual structure against
    the lags' correlated noise.
    """
    keep = cuts.lag > 0
    tau = cuts.tau[keep]
    nb = cuts.bins.size
    qq = np.full(nb, np.nan) if q is None else np.asarray(q, np.float64)
    pp = np.full(nb, np.nan) if phi is None else np.asarray(phi, np.float64)
    valid = cuts.valid
    out = []
    for way, name in enumerate(WAYS):
        for wi in range(cuts.windows.n):
            lo, hi = cuts.windows.lo[wi], cuts.windows.hi[wi]
            out.append(G2Block(
                file_index=way * cuts.windows.n + wi,
                label=f"{label} {name} {lo:.4g}-{hi:.4g} s".strip(),
                tau=tau,
                g2=cuts.g2[way, wi][:, keep].T.copy(),
                g2_err=cuts.g2_err[way, wi][:, keep].T.copy(),
                valid=valid[way, wi][:, keep].T.copy(),
                columns=cuts.bins - 1,
                q=qq, phi=pp,
                bin_labels=[f"bin {b}" for b in cuts.bins],
                delay_frames=np.rint(cuts.lag[keep]).astype(np.int64),
                t0=float(cuts.frame_time),
                source=f"{source}#ages:{name}:{lo:.9g}:{hi:.9g}",
                noise=None if group_g2 is None else np.transpose(
                    (group_g2[:, way, wi] - cuts.g2[way, wi][None])[:, :, keep], (0, 2, 1)),
            ))
    return out


@dataclass
class AgeFits:
    """Fits of every cut and the ageing law per bin.

    Arrays indexed (way, window, bin), way 0 = constant age, 1 = constant t1.
    """

    fits: G2Fits  #: rows in (way, window, bin) order
    t_w: np.ndarray  #: (2, W, B) s: the age each tau was measured at
    tau: np.ndarray  #: (2, W, B) s, quotable (NaN otherwise)
    tau_err: np.ndarray
    contrast: np.ndarray
    contrast_err: np.ndarray
    stretch: np.ndarray  #: NaN where the model has none
    stretch_err: np.ndarray
    status: np.ndarray  #: (2, W, B) object
    model: np.ndarray  #: (2, W, B) object: the model of each cut
    #: (W, B) the two ways' flag where it can be trusted (:attr:`flag_testable`)
    disagree: np.ndarray | None = None
    #: (W, B) both cuts converged and the constant-age tau is at most half the window:
    #: the noise correlation along t1 (about tau / 2) fits in the error's blocks
    flag_testable: np.ndarray | None = None
    laws: dict[str, list[LawFit]] = field(default_factory=dict)  #: law -> one per bin
    law: str = "linear"  #: the law the verdict is read from
    #: where tau_err comes from: "fit" (the least-squares covariance) or the pixel groups
    tau_err_source: str = "fit"

    @property
    def verdict(self) -> list[str]:
        """One verdict per bin, from :attr:`law`."""
        return [lf.verdict for lf in self.laws[self.law]]


def _fitted_ages(cuts: AgeCuts, tau: np.ndarray, contrast: np.ndarray) -> np.ndarray:
    """(2, W, B) the age each fitted tau speaks for.

    Each lag's g2 is the mean of entries of its own mean age (near a run's ends long
    lags reach only the inner ages). If tau changes linearly with age, the fitted tau
    (linearised: a weighted sum h_L of the points) is tau at t* = sum_L h_L J_L m_L,
    with J the derivative of a single exponential (contrast, tau, baseline free) by
    tau, h the tau row of its weighted pseudo-inverse (sum h_L J_L = 1) and m_L the
    lag's mean age. Without a tau: the mean age of the cut's entries."""
    lag = cuts.tau
    out = np.repeat(np.asarray(cuts.age_mean, np.float64)[:, :, None], tau.shape[2], axis=2)
    valid = cuts.valid
    for way in range(2):
        for wi in range(tau.shape[1]):
            m = cuts.lag_age[way, wi]
            for b in range(tau.shape[2]):
                t, beta = tau[way, wi, b], contrast[way, wi, b]
                ok = valid[way, wi, b] & np.isfinite(m)
                if not (np.isfinite(t) and t > 0 and ok.sum() > 3):
                    continue
                beta = beta if np.isfinite(beta) else 1.0
                x, e = lag[ok], cuts.g2_err[way, wi, b][ok]
                ex = np.exp(-2 * x / t)
                jac = np.stack([ex, 2 * beta * x / t**2 * ex, np.ones_like(x)], axis=1)
                wj = jac / e[:, None] ** 2
                try:
                    h = np.linalg.solve(jac.T @ wj, wj.T)[1]
                except np.linalg.LinAlgError:
                    continue
                c = h * jac[:, 1]
                if abs(c.sum() - 1) < 1e-6:
                    out[way, wi, b] = float(np.sum(c * m[ok]))
    return out


#: A converged tau longer than this fraction of the longest lag its cut holds is at
#: most a lower limit: on the demo's 20 seeds such taus fell short of the truth by
#: -0.4 to -3 sigma on average (the free baseline takes up the unseen decay), pull sd
#: 1.4-2.0; below it the pulls' sd is 0.9-1.1 (docs/ages.md, benchmarks/ages_seeds.py).
REACH_FRACTION = 0.3


def cut_reach(cuts: AgeCuts) -> np.ndarray:
    """(2, W, B) s: the longest lag each cut holds a fittable point at. Short where a
    cut meets the run's ends: the constant-t1 cut of the last window reaches only its
    width, the constant-age cuts of the first and last windows twice it."""
    lag = np.asarray(cuts.tau, np.float64)
    return np.where(cuts.valid, lag, 0.0).max(axis=-1)


def beyond_reach(cuts: AgeCuts, tau: np.ndarray, status: np.ndarray) -> np.ndarray:
    """(2, W, B) bool: converged taus beyond :data:`REACH_FRACTION` of their cut's
    reach (:func:`cut_reach`)."""
    with np.errstate(invalid="ignore"):
        return (np.asarray(status) == "converged") & (
            np.asarray(tau, np.float64) > REACH_FRACTION * cut_reach(cuts))


def _mark_beyond_reach(fits: G2Fits, rows: np.ndarray, reach: np.ndarray) -> G2Fits:
    """The fit table with ``rows`` unresolved and why (a copy)."""
    status = np.asarray(fits.status, dtype=object).copy()
    status[rows] = "unresolved"
    detail = (np.array([""] * status.size, dtype=object) if fits.detail is None
              else np.asarray(fits.detail, dtype=object).copy())
    for r in np.flatnonzero(rows):
        detail[r] = (f"tau longer than {REACH_FRACTION:g} of the longest lag the cut "
                     f"holds ({reach[r]:.3g} s): a lower limit")
    return replace(fits, status=status, detail=detail)


def _laws(t_w: np.ndarray, tau3: np.ndarray, err3: np.ndarray, st: np.ndarray
          ) -> dict[str, list[LawFit]]:
    """Both laws per bin from the constant-age taus the plots draw (the Series rule:
    converged, and unresolved or at a bound as open points); a misfit's or poor fit's
    tau is quotable but not drawn, and a law from points nobody sees cannot be checked
    by eye."""
    law_tau = np.where(_drawn(st[0]), tau3[0], np.nan)
    lower = st[0] == "unresolved"  # open above: a lower limit (fit_law)
    return {name: [fit_law(t_w[0, :, b], law_tau[:, b], err3[0, :, b], name, lower[:, b])
                   for b in range(tau3.shape[2])] for name in LAWS}


def _drawn(status: np.ndarray) -> np.ndarray:
    """Statuses whose tau the plots draw and the laws read."""
    return np.isin(status, ("converged", *ROUGH_STATUSES))


def law_points(af: AgeFits) -> np.ndarray:
    """(W, B) bool: the constant-age taus the laws read (the drawn ones)."""
    return _drawn(af.status[0]) & np.isfinite(af.tau[0])


def law_with_errors(lf: LawFit, errors: dict[str, float], dof: float | None = None
                    ) -> LawFit:
    """``lf`` with its parameters' errors replaced where ``errors`` gives a finite one;
    intervals (95 %) and the verdict (the slope's 99 % interval) follow them, with
    Student t quantiles where the errors were estimated with ``dof`` degrees of
    freedom."""
    err = dict(lf.error)
    err.update({k: float(v) for k, v in errors.items() if k in err and np.isfinite(v)
                and v > 0})
    inter, verdict = _intervals_verdict(lf.law, lf.value, err, dof)
    s, s_err = lf.value[lf.slope_name], err[lf.slope_name]
    if not (np.isfinite(s) and np.isfinite(s_err)) or lf.verdict == "undetermined":
        verdict = lf.verdict
    return replace(lf, error=err, interval=inter, verdict=verdict)


def with_tau_errors(af: AgeFits, tau_err: np.ndarray, source: str,
                    law_errors: dict[str, list[dict[str, float]]] | None = None) -> AgeFits:
    """``af`` with the tau errors replaced where ``tau_err`` (2, W, B) is finite, tau too
    and not unresolved or at a bound, and the laws' errors by ``law_errors`` (law -> per
    bin {param: error}, and "dof": the degrees of freedom of those errors).

    The laws keep their values: the new tau errors come from few groups and are noisy,
    and weights from them scattered the slope more (0.18-0.39 of it against
    0.11-0.28 on the demo gel); their errors come from the same groups instead.
    """
    new = np.asarray(tau_err, np.float64)
    # not for an unresolved or bounded tau: its linearised spread over the groups is not
    # its uncertainty (its interval is open), so it keeps the fit's
    use = (np.isfinite(new) & (new > 0) & np.isfinite(af.tau)
           & ~np.isin(af.status, ROUGH_STATUSES))
    err = np.where(use, new, af.tau_err)
    laws = af.laws
    if law_errors:
        laws = {name: [law_with_errors(lf, law_errors[name][b],
                                       law_errors[name][b].get("dof")) if name in law_errors
                       else lf for b, lf in enumerate(lst)] for name, lst in af.laws.items()}
    return replace(af, tau_err=err, laws=laws,
                   tau_err_source=source if use.any() else af.tau_err_source)


def _cut_taus(fits: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A cut's tau as the ages read it (the rule before issue 48, kept here): the fitted
    value, marked by its status, except where there is no decay, the errors are
    understated, the fit failed, or a limit on this time says what is known. The laws
    read an ``unresolved`` one as a lower-limit point (open above) and draw no misfit;
    the group errors compare each cut with its pixel groups' own fits, whatever the
    whole map's status (a correlated noise can make it a misfit by the white-noise
    runs test and the groups' calibrated test not)."""
    v = np.array(fits.params[name], dtype=np.float64, copy=True)
    e = np.array(fits.errors[name], dtype=np.float64, copy=True)
    st = np.array([str(x) for x in fits.status], dtype=object)
    lim = np.isfinite(np.asarray(fits.tau_lower_limit, float)) | np.isfinite(
        np.asarray(fits.tau_upper_limit, float))
    on = np.array([str(x) in (name, "") for x in (fits.limit_name if fits.limit_name
                                                   is not None else [""] * st.size)])
    drop = (np.isin(st, ("no_decay", "errors_understated", "failed"))
            | ((st == "unresolved") & lim & on))
    v[drop], e[drop] = np.nan, np.nan
    return v, e


def fit_age_cuts(cuts: AgeCuts, fit: FitSpec | None = None,
                 sampler: SamplerSpec | None = None, *, law: str = "linear",
                 q: np.ndarray | None = None, phi: np.ndarray | None = None,
                 label: str = "", source: str = "", progress: Any = None,
                 cancel: Any = None, backend: Any = None,
                 group_g2: np.ndarray | None = None) -> AgeFits:
    """Fit every cut (the one fit loop) and the ageing laws of the constant-age taus;
    ``group_g2``: see :func:`cut_blocks`."""
    from xpcsviewer.fitting.block_fits import fit_curves

    if law not in LAWS:
        raise ValueError(f"unknown ageing law {law!r} (choose from {', '.join(LAWS)})")
    fit = fit or FitSpec()
    blocks = cut_blocks(cuts, q, phi, label, source, group_g2)
    fits = fit_curves(blocks, fit, sampler, progress=progress, cancel=cancel,
                      backend=backend)
    shape = (2, cuts.windows.n, cuts.bins.size)
    n = fits.n_curves
    tau, tau_err = np.full(n, np.nan), np.full(n, np.nan)
    for name in ("tau", "tau1"):
        if name not in fits.params:
            continue
        v, e = _cut_taus(fits, name)
        rows = np.array([fits.tau_name(b) == name for b in range(n)], bool)
        tau[rows], tau_err[rows] = v[rows], e[rows]

    def param(name: str) -> tuple[np.ndarray, np.ndarray]:
        if name not in fits.params:
            return np.full(shape, np.nan), np.full(shape, np.nan)
        v, e = fits.reported(name)
        return v.reshape(shape), e.reshape(shape)

    c, ce = param("contrast")
    s, se = param("stretch")
    tau3, err3 = tau.reshape(shape), tau_err.reshape(shape)
    t_w = _fitted_ages(cuts, tau3, c)
    st = np.asarray(fits.status, dtype=object).reshape(shape)
    short = beyond_reach(cuts, tau3, st)
    if short.any():
        st = np.where(short, "unresolved", st)
        fits = _mark_beyond_reach(fits, short.ravel(), cut_reach(cuts).ravel())
    laws = _laws(t_w, tau3, err3, st)
    with np.errstate(invalid="ignore"):
        testable = ((tau3[0] <= 0.5 * cuts.windows.widths[:, None])
                    & (st[0] == "converged") & (st[1] == "converged"))
    return AgeFits(fits=fits, t_w=t_w, tau=tau3, tau_err=err3, contrast=c,
                   disagree=np.asarray(cuts.disagree, bool) & testable,
                   flag_testable=testable,
                   contrast_err=ce, stretch=s, stretch_err=se,
                   status=st,
                   model=fits.model_names().reshape(shape), laws=laws, law=law)
