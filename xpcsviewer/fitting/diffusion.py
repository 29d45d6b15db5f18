"""tau(q) power laws, diffusion coefficients and the Stokes-Einstein radius (the joint
fit of D to all g2 curves of a file is :mod:`xpcsviewer.fitting.diffusion_joint`).

Units: q in 1/Angstrom, tau in s, D in Angstrom^2/s (1 A^2/s = 1e-20 m^2/s), radii in nm.
For g2 = 1 + beta exp(-2 t/tau) with tau = 1/Gamma and Gamma = D q^2, tau = (1/D) q^-2,
so the power law tau = A q^b with b fixed at -2 gives D = 1/A.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from xpcsviewer.fitting.lsq import FitStatus, G2FitResult

__all__ = [
    "BOLTZMANN",
    "DiffusionResult",
    "DiffusionVerdict",
    "diffusion_verdict",
    "fit_diffusion",
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
    D: float  # physics symbol
    D_err: float
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
#: What people read D in: µm²/s (1 µm²/s = 1e8 Å²/s; "1.018 µm²/s", not "1.018e+08
#: Å²/s"); files keep Å²/s, the unit of q.
D_SHOWN_UNIT = "\u00b5m\u00b2/s"
D_SHOWN_PER_A2 = 1e-8


def d_text(d: float, d_err: float) -> str:
    """D and its error as people read them: "1.018 ± 0.071 µm²/s"."""
    return (f"{d * D_SHOWN_PER_A2:.4g} {PM} {d_err * D_SHOWN_PER_A2:.2g} {D_SHOWN_UNIT}")
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
    def D(self) -> float:  # physics symbol
        """D in A^2/s, NaN unless diffusive."""
        return self.fixed.D if self.diffusive else float("nan")

    @property
    def D_err(self) -> float:
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
        f"D = {d_text(fixed.D, fixed.D_err)} (b = {b:.3g} {PM} {be:.2g})",
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


def water_viscosity(temperature_K: float) -> float:
    """Dynamic viscosity of liquid water (Pa s), Vogel equation.

    eta = 2.414e-5 * 10^(247.8 / (T - 140)); 8.90e-4 Pa s at 298.15 K, valid within a
    few percent from 273 to 373 K.
    """
    t = float(temperature_K)
    if not (250.0 < t < 400.0):
        raise ValueError(f"water viscosity formula used outside 250-400 K (T = {t} K)")
    return 2.414e-5 * 10.0 ** (247.8 / (t - 140.0))


def hydrodynamic_radius(
    D: float,
    temperature_K: float,
    viscosity_Pa_s: float,
    D_err: float | None = 0.0,
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
