"""The visibility integral of XSVS and the fit of beta(T) (issue 46).

Kept apart from :mod:`xpcsviewer.fitting.xsvs` (the photon statistics) for size; import
both from there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares
from scipy.special import gamma, gammainc
from scipy.stats import chi2 as chi2_dist

__all__ = ["VIS_STATUSES", "VisFit", "fit_visibility", "visibility"]

VIS_STATUSES = ("ok", "tau_below", "tau_above", "few_points", "misfit")
#: one-sided 95 % limit: a rise of the chi2 profile by this much
_DCHI2_LIMIT = 2.706
#: the misfit threshold, as for the photon-count fits
_GOF_P_MIN = 1e-4
#: the stretch of the "stretched" model is kept within these bounds
_STRETCH_BOUNDS = (0.2, 3.0)


def visibility(T, tau, stretch=1.0) -> np.ndarray:
    """V(T) = (2/T^2) int_0^T (T - t) exp(-2 (t/tau)^stretch) dt, V(0) = 1.

    The project's convention g2 = 1 + beta exp(-2 (t/tau)^s) gives
    |g1|^2 = exp(-2 (t/tau)^s). With u = t/T and c = 2 (T/tau)^s the integral is a pair of
    incomplete gamma functions (exact, no quadrature):
    V = (2/s) [c^(-1/s) gamma(1/s, c) - c^(-2/s) gamma(2/s, c)]; stretch 1 is
    V = 2 (exp(-x) - 1 + x) / x^2 with x = 2 T / tau. Small c uses the series
    V = sum_n (-c)^n / n! * 2 / ((n s + 1)(n s + 2)) (no cancellation).

    Parameters
    ----------
    T, tau, stretch : array_like
        Exposure, relaxation time (same unit), stretch s > 0; broadcast together.

    Returns
    -------
    ndarray
        V in (0, 1], float64.
    """
    if np.ndim(stretch) == 0 and float(stretch) == 1.0:
        return _visibility_exp(np.asarray(T, np.float64), np.asarray(tau, np.float64))
    T, tau, s = np.broadcast_arrays(np.asarray(T, np.float64), np.asarray(tau, np.float64),
                                    np.asarray(stretch, np.float64))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        c = 2.0 * (T / tau) ** s
        small = c < 0.1
        cs = np.where(small, c, 0.0)
        # 20 terms: c^20/20! < 1e-38 for c < 0.1
        ser = np.zeros_like(cs)
        term = np.ones_like(cs)
        for n in range(20):
            ser = ser + term * 2.0 / ((n * s + 1.0) * (n * s + 2.0))
            term = term * (-cs) / (n + 1.0)
        cl = np.where(small, 1.0, c)
        one = s == 1.0
        x = cl
        v1 = 2.0 * (np.expm1(-x) + x) / (x * x)
        p1, p2 = 1.0 / s, 2.0 / s
        vs = (2.0 / s) * (cl ** -p1 * gamma(p1) * gammainc(p1, cl)
                          - cl ** -p2 * gamma(p2) * gammainc(p2, cl))
        big = np.where(one, v1, vs)
        # c = inf (tau = 0): V = 0
        big = np.where(np.isinf(c), 0.0, big)
        out = np.where(small, ser, big)
    return out


def _visibility_exp(T: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """:func:`visibility` of a single exponential (the fits call it thousands of times):
    2 (e^-x - 1 + x) / x^2, x = 2 T / tau; below x = 0.01 its Taylor series to x^5
    (the closed form cancels there; the next term is < 5e-17)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x = 2.0 * T / tau
        xs = np.where(x < 0.01, x, 0.0)
        ser = 1.0 + xs * (-1.0 / 3 + xs * (1.0 / 12 + xs * (-1.0 / 60 + xs * (
            1.0 / 360 - xs / 2520))))
        xl = np.where(x < 0.01, 1.0, x)
        big = 2.0 * (np.expm1(-xl) + xl) / (xl * xl)
        big = np.where(np.isinf(x), 0.0, big)
        return np.where(x < 0.01, ser, big)


@dataclass(frozen=True)
class VisFit:
    """The fit of beta(T) = beta0 * V(T; tau, stretch) over the exposures of one q-bin."""

    model: str  #: "single" or "stretched"
    beta0: float
    beta0_error: float
    tau: float
    tau_error: float
    stretch: float
    stretch_error: float
    chi2_red: float
    n_points: int
    status: str  #: one of VIS_STATUSES
    reason: str
    limit: float  #: tau upper (tau_below) or lower (tau_above) 95 % limit, else nan


def _beta0_linear(v, y, w):
    """The weighted least-squares beta0 for fixed V (linear) and its chi2."""
    den = np.sum(w * v * v, axis=-1)
    b0 = np.where(den > 0, np.sum(w * v * y, axis=-1) / np.where(den > 0, den, 1.0), 0.0)
    chi2 = np.sum(w * (y - b0[..., None] * v) ** 2, axis=-1)
    return b0, chi2


def _bad(model, n, status, reason):
    nan = float("nan")
    return VisFit(model, nan, nan, nan, nan, nan if model == "stretched" else 1.0,
                  nan if model == "stretched" else 0.0, nan, int(n), status, reason, nan)


def fit_visibility(T, beta, beta_error, model: str = "single") -> VisFit:
    """Weighted least squares of beta(T) = beta0 * visibility(T, tau, stretch).

    ``model="single"`` fixes the stretch at 1 (beta0, tau); ``"stretched"`` fits it too,
    within 0.2..3. Points whose beta or error is not finite (or error <= 0) are ignored.
    beta0 is linear: the chi2 profile over log tau (beta0 solved exactly) is scanned on a
    grid spanning 6 decades either side of the exposures, then refined. When that profile
    stays within 2.71 of its minimum down to the grid's end, tau is below what the
    exposures resolve (``tau_below``, ``limit`` = the 95 % upper limit); likewise above
    (``tau_above``, ``limit`` = the lower limit). Errors: the inverse of J^T J with the
    stated errors (not scaled by chi2_red).

    Parameters
    ----------
    T, beta, beta_error : array_like (n,)
        Exposures (any time unit; tau comes out in it), beta and its error.
    model : {"single", "stretched"}

    Returns
    -------
    VisFit
    """
    if model not in ("single", "stretched"):
        raise ValueError(f"model must be 'single' or 'stretched', not {model!r}")
    T = np.asarray(T, np.float64).ravel()
    y = np.asarray(beta, np.float64).ravel()
    e = np.asarray(beta_error, np.float64).ravel()
    ok = np.isfinite(T) & np.isfinite(y) & np.isfinite(e) & (e > 0) & (T > 0)
    T, y, e = T[ok], y[ok], e[ok]
    n = T.size
    npar = 2 if model == "single" else 3
    if n < npar + 1:
        return _bad(model, n, "few_points",
                    f"{n} usable exposures: {npar + 1} or more are needed")
    w = 1.0 / e**2
    lt_lo, lt_hi = np.log(T.min()) - 6 * np.log(10), np.log(T.max()) + 6 * np.log(10)
    grid = np.linspace(lt_lo, lt_hi, 241)
    svals = (1.0,) if model == "single" else (0.35, 0.5, 0.7, 1.0, 1.4, 2.0)

    def profile(lt, s):
        v = visibility(T[None, :], np.exp(lt)[:, None], s)
        return _beta0_linear(v, y[None, :], w[None, :])

    best = None
    for s in svals:
        b0, chi2 = profile(grid, s)
        i = int(np.argmin(chi2))
        if best is None or chi2[i] < best[0]:
            best = (chi2[i], grid[i], s, b0[i])

    def resid(p):
        s = p[2] if npar == 3 else 1.0
        return (p[0] * visibility(T, np.exp(p[1]), s) - y) / e

    p0 = [best[3], best[1]] + ([best[2]] if npar == 3 else [])
    lo = [-np.inf, lt_lo - 10] + ([_STRETCH_BOUNDS[0]] if npar == 3 else [])
    hi = [np.inf, lt_hi + 10] + ([_STRETCH_BOUNDS[1]] if npar == 3 else [])
    # started at the profile's minimum: 1e-10 is far below any stated error, and the
    # 1e-14 of a first version cost ~60 evaluations a bin (4 s for 100 bins)
    r = least_squares(resid, p0, bounds=(lo, hi), x_scale="jac", xtol=1e-10, ftol=1e-10,
                      gtol=1e-10, max_nfev=2000)
    p = r.x
    chi2 = float(2.0 * r.cost)
    dof = n - npar
    s_hat = float(p[2]) if npar == 3 else 1.0
    try:
        cov = np.linalg.inv(r.jac.T @ r.jac)
        err = np.sqrt(np.clip(np.diag(cov), 0, None))
    except np.linalg.LinAlgError:
        err = np.full(npar, np.nan)
    tau = float(np.exp(p[1]))
    # the chi2 profile in tau at the fitted stretch: is tau bounded on both sides?
    _, chi2g = profile(grid, s_hat)
    within = chi2g <= chi2 + _DCHI2_LIMIT
    status, reason, limit = "ok", "", float("nan")
    p_gof = float(chi2_dist.sf(chi2, dof))
    if within[0] or within[-1]:
        # open on one side: only a limit on tau, at the first grid point outside
        below = bool(within[0]) and not (within[-1] and tau > np.sqrt(T.min() * T.max()))
        if below:
            out = np.nonzero(~within)[0]
            limit = float(np.exp(grid[out[0]])) if out.size else float("nan")
            status = "tau_below"
            reason = (f"tau is below what the exposures resolve (from {T.min():.3g}): "
                      f"tau < {limit:.3g} (95 %)")
        else:
            out = np.nonzero(~within)[0]
            limit = float(np.exp(grid[out[-1]])) if out.size else float("nan")
            status = "tau_above"
            reason = (f"no decay within the exposures (to {T.max():.3g}): "
                      f"tau > {limit:.3g} (95 %)")
    elif dof > 0 and p_gof < _GOF_P_MIN:
        status = "misfit"
        reason = f"poor fit: chi2_red {chi2 / dof:.3g}, p = {p_gof:.1e}"
    return VisFit(model=model, beta0=float(p[0]), beta0_error=float(err[0]), tau=tau,
                  tau_error=float(tau * err[1]), stretch=s_hat,
                  stretch_error=float(err[2]) if npar == 3 else 0.0,
                  chi2_red=chi2 / dof if dof > 0 else float("nan"), n_points=int(n),
                  status=status, reason=reason, limit=limit)
