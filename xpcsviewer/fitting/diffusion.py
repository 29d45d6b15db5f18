"""tau(q) power laws, diffusion coefficients and the Stokes-Einstein radius.

Units: q in 1/Angstrom, tau in s, D in Angstrom^2/s (1 A^2/s = 1e-20 m^2/s), radii in nm.
For g2 = 1 + beta exp(-2 t/tau) with tau = 1/Gamma and Gamma = D q^2, tau = (1/D) q^-2,
so the power law tau = A q^b with b fixed at -2 gives D = 1/A.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xpcsviewer.fitting.lsq import FitStatus, G2FitResult, usable_errors
from xpcsviewer.fitting.models import estimate_starts

__all__ = [
    "BOLTZMANN",
    "DiffusionResult",
    "DiffusionVerdict",
    "JointDiffusionResult",
    "fit_diffusion",
    "fit_diffusion_joint",
    "diffusion_verdict",
    "hydrodynamic_radius",
    "solvent_from_sample",
    "water_viscosity",
]

BOLTZMANN = 1.380649e-23  # J/K (exact, SI 2019)


@dataclass
class DiffusionResult:
    """Power law tau = prefactor * q^exponent fitted to per-bin relaxation times.

    Attributes
    ----------
    prefactor, prefactor_err : float
        A in s * A^(-exponent).
    exponent, exponent_err : float
        b; ``exponent_err`` is 0 when the exponent was fixed.
    D, D_err : float
        1/A in A^2/s when the exponent is -2 (fixed, or fitted and reported as the
        effective value 1/A); NaN otherwise.
    chi2_red : float
    n_points : int
    used : (N,) bool
        Which input points entered the fit.
    exponent_fixed : bool
    q_range : (lo, hi) or None
    """

    prefactor: float
    prefactor_err: float
    exponent: float
    exponent_err: float
    D: float  # noqa: N815 - physics symbol
    D_err: float  # noqa: N815
    chi2_red: float
    n_points: int
    used: np.ndarray
    exponent_fixed: bool
    q_range: tuple[float, float] | None = None

    def curve(self, q_grid: Any) -> np.ndarray:
        """tau on ``q_grid`` (1/A) -> s."""
        return self.prefactor * np.asarray(q_grid, dtype=np.float64) ** self.exponent

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {
            "D": _f(self.D),
            "D_err": _f(self.D_err),
            "exponent": _f(self.exponent),
            "exponent_err": _f(self.exponent_err),
            "prefactor": _f(self.prefactor),
            "prefactor_err": _f(self.prefactor_err),
            "chi2_red": _f(self.chi2_red),
            "n_points": int(self.n_points),
            "exponent_fixed": bool(self.exponent_fixed),
        }


def _f(x: float) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def fit_diffusion(
    q: Any,
    tau: Any,
    tau_err: Any | None = None,
    q_range: tuple[float, float] | None = None,
    exponent: float | None = None,
) -> DiffusionResult:
    """Weighted power-law fit tau = A q^b in log space.

    log tau = log A + b log q is linear, so the weighted least squares has a closed
    form; sigma(log tau) = tau_err / tau (equal weights when errors are missing).
    Parameter errors are scaled by the reduced chi^2 when it exceeds 1 (scatter larger
    than the stated errors), never shrunk below the propagated ones.

    Parameters
    ----------
    q : (N,) 1/A
    tau : (N,) s; non-finite or non-positive entries are skipped
    tau_err : (N,) s, optional
    q_range : (lo, hi), optional
    exponent : float, optional
        Fix b (e.g. -2.0 for Brownian diffusion); None fits it.

    Returns
    -------
    DiffusionResult
        D = 1/A with D_err = D * sigma(log A) when b is -2 (fixed or fitted).
    """
    q = np.asarray(q, dtype=np.float64).ravel()
    tau = np.asarray(tau, dtype=np.float64).ravel()
    if tau.shape != q.shape:
        raise ValueError(f"q {q.shape} and tau {tau.shape} differ")
    if tau_err is None:
        sig = np.ones_like(tau)
        have_err = False
    else:
        tau_err = np.asarray(tau_err, dtype=np.float64).ravel()
        with np.errstate(invalid="ignore", divide="ignore"):
            sig = tau_err / tau
        have_err = True
    used = np.isfinite(q) & (q > 0) & np.isfinite(tau) & (tau > 0) & np.isfinite(sig) & (sig > 0)
    if q_range is not None:
        lo, hi = sorted(float(v) for v in q_range)
        used &= (q >= lo) & (q <= hi)
    x = np.log(np.where(used, q, 1.0))
    y = np.log(np.where(used, tau, 1.0))
    w = np.where(used, 1.0 / np.where(used, sig, 1.0) ** 2, 0.0)
    n = int(used.sum())
    nan = float("nan")
    fixed = exponent is not None
    n_par = 1 if fixed else 2
    if n < n_par or (not fixed and np.ptp(x[used]) == 0):
        return DiffusionResult(nan, nan, float(exponent) if fixed else nan, 0.0 if fixed else nan,
                               nan, nan, nan, n, used, fixed, q_range)
    if fixed:
        b = float(exponent)
        la = np.sum(w * (y - b * x)) / np.sum(w)
        var_la = 1.0 / np.sum(w)
        resid = y - la - b * x
        var_b = 0.0
    else:
        sw, sx, sy = np.sum(w), np.sum(w * x), np.sum(w * y)
        sxx, sxy = np.sum(w * x * x), np.sum(w * x * y)
        det = sw * sxx - sx * sx
        b = (sw * sxy - sx * sy) / det
        la = (sxx * sy - sx * sxy) / det
        var_la, var_b = sxx / det, sw / det
        resid = y - la - b * x
    dof = n - n_par
    chi2_red = float(np.sum(w * resid**2) / dof) if dof > 0 else nan
    # Unit weights carry no error scale: use the scatter. With real errors inflate only.
    if not have_err:
        s = chi2_red if np.isfinite(chi2_red) else nan
    else:
        s = max(1.0, chi2_red) if np.isfinite(chi2_red) else 1.0
    var_la *= s
    var_b *= s
    a = float(np.exp(la))
    a_err = a * float(np.sqrt(var_la))
    b_err = float(np.sqrt(var_b))
    if abs(b + 2.0) < 1e-12:
        d, d_err = 1.0 / a, float(np.sqrt(var_la)) / a
    else:
        d, d_err = nan, nan
    return DiffusionResult(a, a_err, float(b), b_err, d, d_err, chi2_red, n, used, fixed, q_range)


#: Gates for reporting D: at least this many converged bins ...
DIFFUSIVE_MIN_BINS = 3
#: ... an exponent determined to better than this (1 sigma) ...
EXPONENT_ERR_MAX = 0.5
#: ... and consistent with -2 within this many sigma, where sigma combines the fit
#: error with a systematic EXPONENT_SYS for q-smearing over a bin and finite run
#: length (on the simulated demo the lowest-q bin's tau is ~10 % high).
EXPONENT_SIGMAS = 2.0
EXPONENT_SYS = 0.05
#: Symbols of the verdict messages (as in the GUI and the figures; the JSON "units"
#: block stays ASCII for programs).
PM = "\u00b1"
D_UNIT = "\u00c5\u00b2/s"
#: Relative systematic error of a bin's relaxation time in the power law, added in
#: quadrature: what "the" time of a non-exponential decay is (tau Gamma(1 + 1/beta) is
#: 9 % above tau at beta = 0.85), q-smearing and the correlated noise of a finite run
#: at long delays (the demo's lowest-q bin is stretched, its mean time 26 % high at a
#: 3 % fit error: alone it set the exponent to -2.3 +- 0.12).
TAU_SYS = 0.10


@dataclass
class DiffusionVerdict:
    """Whether tau(q) of one file is diffusive, and D only if it is.

    Attributes
    ----------
    verdict : {"diffusive", "not_diffusive", "too_few_bins"}
    message : str
        One line for people ("D = ... \u00c5\u00b2/s", "not diffusive (b = -0.3 \u00b1 0.2)",
        ...), with the symbols the GUI and the figures use.
    free : DiffusionResult
        Power law with the exponent fitted (fitted first, always).
    fixed : DiffusionResult
        Exponent fixed at -2: D = 1/A; used only when diffusive.
    n_good : int
        Converged bins that entered.
    """

    verdict: str
    message: str
    free: DiffusionResult
    fixed: DiffusionResult
    n_good: int

    @property
    def diffusive(self) -> bool:
        """True when D may be reported."""
        return self.verdict == "diffusive"

    @property
    def D(self) -> float:  # noqa: N802 - physics symbol
        """D in A^2/s, NaN unless diffusive."""
        return self.fixed.D if self.diffusive else float("nan")

    @property
    def D_err(self) -> float:  # noqa: N802
        """Error of D, NaN unless diffusive."""
        return self.fixed.D_err if self.diffusive else float("nan")

    def __getitem__(self, key: str) -> DiffusionResult:
        # the older {"free": ..., "fixed": ...} form
        return {"free": self.free, "fixed": self.fixed}[key]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready block (``D`` null unless diffusive)."""
        fr = self.free
        return {
            "verdict": self.verdict,
            "message": self.message,
            "D": _f(self.D),
            "D_err": _f(self.D_err),
            "exponent": _f(fr.exponent),
            "exponent_err": _f(fr.exponent_err),
            "prefactor": _f(fr.prefactor),
            "prefactor_err": _f(fr.prefactor_err),
            "n_bins": int(self.n_good),
            "rule": (
                f">= {DIFFUSIVE_MIN_BINS} converged bins (mean relaxation time, error "
                f"+ {100 * TAU_SYS:g} % systematic in quadrature), exponent error <= "
                f"{EXPONENT_ERR_MAX}, |b + 2| <= {EXPONENT_SIGMAS:g} sqrt(b_err^2 + "
                f"{EXPONENT_SYS}^2)"
            ),
            "units": {"D": "A^2/s", "q": "1/A", "tau": "s"},
        }


def diffusion_verdict(
    q: Any, tau: Any, tau_err: Any, q_range: tuple[float, float] | None = None
) -> DiffusionVerdict:
    """Gate D on the data: fit the free exponent first, then decide.

    ``diffusive`` needs >= :data:`DIFFUSIVE_MIN_BINS` usable points, an exponent error
    <= :data:`EXPONENT_ERR_MAX` and |b + 2| <= EXPONENT_SIGMAS sqrt(b_err^2 +
    EXPONENT_SYS^2); then D comes from the fit with b fixed at -2. Otherwise
    ``too_few_bins`` (also when the exponent is undetermined) or ``not_diffusive``.

    The bins are weighted with tau_err and a relative systematic :data:`TAU_SYS` in
    quadrature.

    Parameters
    ----------
    q : (N,) 1/A; tau, tau_err : (N,) s of the converged bins (NaN elsewhere)
    """
    tau = np.asarray(tau, dtype=np.float64)
    tau_err = np.hypot(np.asarray(tau_err, dtype=np.float64), TAU_SYS * tau)
    free = fit_diffusion(q, tau, tau_err, q_range, None)
    fixed = fit_diffusion(q, tau, tau_err, q_range, -2.0)
    n = int(free.n_points)
    b, be = free.exponent, free.exponent_err
    if n < DIFFUSIVE_MIN_BINS:
        return DiffusionVerdict("too_few_bins", f"too few good bins ({n} < {DIFFUSIVE_MIN_BINS})",
                                free, fixed, n)
    if not (np.isfinite(be) and be <= EXPONENT_ERR_MAX):
        return DiffusionVerdict(
            "too_few_bins",
            f"exponent undetermined (b = {b:.3g} {PM} {be:.2g}): too few good bins or too "
            "narrow a q range",
            free, fixed, n,
        )
    tol = EXPONENT_SIGMAS * math.hypot(be, EXPONENT_SYS)
    if abs(b + 2.0) > tol:
        return DiffusionVerdict(
            "not_diffusive", f"not diffusive (b = {b:.3g} {PM} {be:.2g}, not -2)", free, fixed, n
        )
    return DiffusionVerdict(
        "diffusive",
        f"D = {fixed.D:.4g} {PM} {fixed.D_err:.2g} {D_UNIT} (b = {b:.3g} {PM} {be:.2g})",
        free, fixed, n,
    )


def diffusion_from_fit(
    q: Any,
    fit: G2FitResult,
    q_range: tuple[float, float] | None = None,
) -> DiffusionVerdict:
    """The gated diffusion verdict from a least-squares g2 fit (converged bins only).

    Uses each bin's mean relaxation time as 1/Gamma (:meth:`G2FitResult.relaxation_time`:
    tau of the single exponential, tau Gamma(1 + 1/stretch) of the stretched one, the
    amplitude-weighted f tau1 + (1 - f) tau2 of the double one), whichever model the
    bin has; ``result["free"]`` and ``result["fixed"]`` still give the two power laws.
    """
    ok = np.array([s == FitStatus.CONVERGED for s in fit.status])
    tm, tm_err = fit.relaxation_time()
    t = np.where(ok, tm, np.nan)
    e = np.where(ok, tm_err, np.nan)
    return diffusion_verdict(q, t, e, q_range)


def water_viscosity(temperature_K: float) -> float:  # noqa: N803
    """Dynamic viscosity of liquid water (Pa s), Vogel equation.

    eta = 2.414e-5 * 10^(247.8 / (T - 140)); 8.90e-4 Pa s at 298.15 K, valid within a
    few percent from 273 to 373 K.
    """
    t = float(temperature_K)
    if not (250.0 < t < 400.0):
        raise ValueError(f"water viscosity formula used outside 250-400 K (T = {t} K)")
    return 2.414e-5 * 10.0 ** (247.8 / (t - 140.0))


def hydrodynamic_radius(
    D: float,  # noqa: N803
    temperature_K: float,  # noqa: N803
    viscosity_Pa_s: float,  # noqa: N803
    D_err: float | None = 0.0,  # noqa: N803
) -> tuple[float, float]:
    """Stokes-Einstein radius R = k T / (6 pi eta D).

    Temperature and viscosity are required: a radius from an assumed solvent is not a
    measurement (use :func:`water_viscosity` explicitly for water).

    Parameters
    ----------
    D : float
        Diffusion coefficient in A^2/s.
    temperature_K : float
    viscosity_Pa_s : float
    D_err : float
        Error of ``D`` (A^2/s) to propagate.

    Returns
    -------
    (R, R_err) in nm; R_err = R * D_err / D (first-order propagation).
    """
    eta = float(viscosity_Pa_s)
    t = float(temperature_K)
    d_si = float(D) * 1e-20
    if not (d_si > 0 and eta > 0 and t > 0):
        return float("nan"), float("nan")
    r = BOLTZMANN * t / (6.0 * np.pi * eta * d_si)
    # An unknown error propagates as NaN rather than pretending to be exact.
    r_err = math.nan if D_err is None else r * abs(float(D_err)) / float(D)
    return r * 1e9, r_err * 1e9


def solvent_from_sample(sample: dict, units: dict | None = None) -> tuple[float, float] | None:
    """(temperature K, viscosity Pa s) stated by a file's ``/entry/sample``, or None.

    Only explicit ``temperature`` and ``viscosity`` entries count (units K and Pa s,
    or mPa s / cP / degC when the units attribute says so); controller read-backs
    such as ``qnw1_temperature`` are not the sample's solvent.
    """
    units = units or {}
    try:
        t = float(sample["temperature"])
        eta = float(sample["viscosity"])
    except (KeyError, TypeError, ValueError):
        return None
    tu = str(units.get("temperature", "K")).strip()
    vu = str(units.get("viscosity", "Pa s")).strip().lower().replace("\u00b7", " ")
    if tu in ("C", "degC", "\u00b0C", "celsius"):
        t += 273.15
    if vu in ("mpa s", "mpa*s", "mpas", "cp", "centipoise"):
        eta *= 1e-3
    if not (t > 0 and eta > 0 and math.isfinite(t) and math.isfinite(eta)):
        return None
    return t, eta


# ----------------------------------------------------------------------------------
# Joint fit: D and alpha directly from all curves of one file
# ----------------------------------------------------------------------------------


@dataclass
class JointDiffusionResult:
    """tau(q) = 1 / (D q^alpha) fitted jointly to all g2 curves of one file.

    Attributes
    ----------
    D, D_err : float
        A^alpha/s (A^2/s for alpha = 2).
    alpha, alpha_err : float
    contrast, contrast_err, baseline, baseline_err : (Nq,) float64
        Per-bin nuisance parameters (NaN for bins left out).
    chi2_red : float
    status : FitStatus
    used_bins : (Nq,) bool
    n_iter : int
    """

    D: float  # noqa: N815
    D_err: float  # noqa: N815
    alpha: float
    alpha_err: float
    contrast: np.ndarray
    contrast_err: np.ndarray
    baseline: np.ndarray
    baseline_err: np.ndarray
    chi2_red: float
    status: FitStatus
    used_bins: np.ndarray
    n_iter: int
    alpha_fixed: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def tau(self, q: Any) -> np.ndarray:
        """Model relaxation time at ``q`` (1/A) -> s."""
        return 1.0 / (self.D * np.asarray(q, dtype=np.float64) ** self.alpha)


def fit_diffusion_joint(
    q: Any,
    tau: Any,
    g2: Any,
    g2_err: Any,
    valid: Any | None = None,
    q_range: tuple[float, float] | None = None,
    t_range: tuple[float, float] | None = None,
    alpha: float | None = None,
    init: G2FitResult | None = None,
    max_iter: int = 300,
    bins: Any | None = None,
) -> JointDiffusionResult:
    """Fit D and alpha directly from all g2 curves of one file.

    g2_b(t) = baseline_b + contrast_b exp(-2 t D q_b^alpha), one (D, alpha) for all bins
    and a contrast and baseline per bin; projected LM (log D, alpha in [0.5, 4]) with
    an analytic Jacobian on the host.

    Parameters
    ----------
    q : (Nq,) 1/A
    tau : (T,) s
    g2, g2_err, valid : (Nq, T) (the transpose of the file's (T, Nq) layout)
    q_range, t_range : optional selections
    alpha : float, optional
        Fix alpha (2 for Brownian motion); None fits it.
    init : G2FitResult, optional
        Per-bin single fits for the starting contrast/baseline and D.
    bins : (Nq,) bool, optional
        Bins allowed in (e.g. those whose own fit converged); default all.

    Returns
    -------
    JointDiffusionResult
    """
    q = np.asarray(q, dtype=np.float64).ravel()
    tau = np.asarray(tau, dtype=np.float64).ravel()
    g2 = np.atleast_2d(np.asarray(g2, dtype=np.float64))
    err = np.atleast_2d(np.asarray(g2_err, dtype=np.float64))
    valid = np.ones(g2.shape, bool) if valid is None else np.atleast_2d(np.asarray(valid, bool))
    n_q, n_t = g2.shape
    if q.shape[0] != n_q:
        raise ValueError(f"q has {q.shape[0]} bins but g2 has {n_q} rows")
    mask = valid & np.isfinite(g2) & (tau > 0)[None, :]
    if t_range is not None:
        lo_t, hi_t = sorted(float(v) for v in t_range)
        mask &= ((tau >= lo_t) & (tau <= hi_t))[None, :]
    sigma_all, mask, _ = usable_errors(err, mask)
    use = np.isfinite(q) & (q > 0) & (mask.sum(1) >= 3)
    if bins is not None:
        use &= np.asarray(bins, dtype=bool).ravel()
    if q_range is not None:
        lo_q, hi_q = sorted(float(v) for v in q_range)
        use &= (q >= lo_q) & (q <= hi_q)
    idx = np.nonzero(use)[0]
    nan = float("nan")
    empty = np.full(n_q, np.nan)
    if idx.size < (1 if alpha is not None else 2):
        return JointDiffusionResult(nan, nan, nan, nan, empty, empty.copy(), empty.copy(),
                                    empty.copy(), nan, FitStatus.FAILED, use, 0,
                                    alpha is not None)
    nb = idx.size
    qs = q[idx]
    est = estimate_starts(tau, g2[idx], mask[idx])
    if init is not None and "tau" in init.params:
        t_b = np.where(np.isfinite(init.params["tau"][idx]), init.params["tau"][idx], est["tau"])
        c_b = np.where(np.isfinite(init.params["contrast"][idx]), init.params["contrast"][idx], est["contrast"])
        b_b = np.where(np.isfinite(init.params["baseline"][idx]), init.params["baseline"][idx], est["baseline"])
    else:
        t_b, c_b, b_b = est["tau"], est["contrast"], est["baseline"]
    c_b = np.clip(np.nan_to_num(c_b, nan=0.1), 1e-3, 2.0)
    b_b = np.nan_to_num(b_b, nan=1.0)
    a0 = 2.0 if alpha is None else float(alpha)
    ok = np.isfinite(t_b) & (t_b > 0)
    # D from tau = 1/(D q^alpha) at fixed alpha: geometric mean over bins.
    log_d0 = float(np.mean(-np.log(t_b[ok]) - a0 * np.log(qs[ok]))) if ok.any() else 0.0

    # Parameter vector: [log D, alpha, contrast_1..nb, baseline_1..nb]; one "curve"
    # whose points are all (bin, delay) pairs.
    y = g2[idx].ravel()
    sigma = sigma_all[idx].ravel()
    m = mask[idx].ravel()
    t_all = np.tile(tau, nb)
    bin_of = np.repeat(np.arange(nb), n_t)
    x0 = np.concatenate([[log_d0, a0], c_b, b_b])
    lo = np.concatenate([[log_d0 - 30.0, 0.5], np.zeros(nb), np.minimum(0.5, b_b - 0.2)])
    hi = np.concatenate([[log_d0 + 30.0, 4.0], np.maximum(2.0, 2 * c_b), np.maximum(1.5, b_b + 0.2)])
    free = np.ones(x0.size, bool)
    if alpha is not None:
        free[1] = False
        lo[1] = hi[1] = a0
    x, cost, jac, n_iter, code = _joint_solve(
        t_all, y, sigma, m, x0, lo, hi, free, qs, bin_of, max_iter
    )
    n_pts = int(m.sum())
    n_free = int(free.sum())
    dof = n_pts - n_free
    chi2_red = 2.0 * cost / dof if dof > 0 else nan
    jf = jac[:, free]
    try:
        cov = np.linalg.inv(jf.T @ jf) * chi2_red
        errs = np.zeros(x.size)
        errs[free] = np.sqrt(np.clip(np.diag(cov), 0, None))
    except np.linalg.LinAlgError:
        errs = np.full(x.size, np.nan)
    d = float(np.exp(x[0]))
    if not np.all(np.isfinite(x)):
        status = FitStatus.FAILED
    elif code == 2:
        status = FitStatus.FAILED
    elif (x[0] <= lo[0] + 1e-9) or (x[0] >= hi[0] - 1e-9) or (
        alpha is None and (x[1] <= lo[1] + 1e-9 or x[1] >= hi[1] - 1e-9)
    ):
        status = FitStatus.AT_BOUND
    else:
        status = FitStatus.CONVERGED
    contrast, contrast_err = empty.copy(), empty.copy()
    baseline, baseline_err = empty.copy(), empty.copy()
    contrast[idx], contrast_err[idx] = x[2 : 2 + nb], errs[2 : 2 + nb]
    baseline[idx], baseline_err[idx] = x[2 + nb :], errs[2 + nb :]
    return JointDiffusionResult(
        D=d,
        D_err=d * float(errs[0]),
        alpha=float(x[1]),
        alpha_err=float(errs[1]),
        contrast=contrast,
        contrast_err=contrast_err,
        baseline=baseline,
        baseline_err=baseline_err,
        chi2_red=float(chi2_red),
        status=status,
        used_bins=use,
        n_iter=int(n_iter),
        alpha_fixed=alpha is not None,
    )


def _joint_solve(t, y, sigma, mask, x0, lo, hi, free, qs, bin_of, max_iter):
    """Projected LM for the joint model with an analytic Jacobian (NumPy, host).

    The problem is one curve with 2 + 2 Nq parameters, so a batched kernel brings
    nothing; the analytic Jacobian keeps it exact and fast.
    """
    nb = qs.size
    w = np.where(mask, 1.0 / sigma, 0.0)
    n_par = x0.size
    lq = np.log(qs)[bin_of]

    def resid_jac(x):
        log_d, a = x[0], x[1]
        c = x[2 : 2 + nb][bin_of]
        b = x[2 + nb :][bin_of]
        rate = np.exp(log_d + a * lq)  # 1/tau per point
        e = np.exp(-2.0 * t * rate)
        g = b + c * e
        r = (g - np.where(mask, y, 0.0)) * w
        jac = np.zeros((t.size, n_par))
        dg_drate = c * e * (-2.0 * t)
        jac[:, 0] = dg_drate * rate * w
        jac[:, 1] = dg_drate * rate * lq * w
        rows = np.arange(t.size)
        jac[rows, 2 + bin_of] = e * w
        jac[rows, 2 + nb + bin_of] = w
        jac[:, ~free] = 0.0
        return r, jac

    x = np.clip(x0, lo, hi)
    r, jac = resid_jac(x)
    cost = 0.5 * r @ r
    lam = 1e-3
    code = 2
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - it is reported
        a = jac.T @ jac
        g = jac.T @ r
        dg = np.maximum(np.diag(a), 1e-12 * np.max(np.diag(a)) + 1e-300)
        a = a + np.diag(lam * dg)
        a[~free, :] = 0.0
        a[:, ~free] = 0.0
        a[~free, ~free] = 1.0
        g = np.where(free, g, 0.0)
        try:
            dx = -np.linalg.solve(a, g)
        except np.linalg.LinAlgError:
            dx = np.full(n_par, np.nan)
        x_new = np.where(free, np.clip(x + dx, lo, hi), x)
        r_new, j_new = resid_jac(x_new)
        cost_new = 0.5 * r_new @ r_new
        accept = np.isfinite(cost_new) and cost_new <= cost
        small = accept and (cost - cost_new) <= 1e-14 * cost and np.linalg.norm(x_new - x) <= 1e-12 * (np.linalg.norm(x) + 1e-12)
        if accept:
            x, r, jac, cost = x_new, r_new, j_new, cost_new
            lam = max(lam / 3.0, 1e-12)
        else:
            lam *= 4.0
        if small or lam > 1e16:
            code = 1
            break
    return x, cost, jac, it, code

