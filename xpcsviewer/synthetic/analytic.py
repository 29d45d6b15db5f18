"""Analytic physics for synthetic XPCS data: diffusion, correlation functions, form factors.

Units: q in 1/Angstrom, D in Angstrom^2/s, times in seconds, lengths in metres,
temperature in kelvin, viscosity in Pa s.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = [
    "BOLTZMANN",
    "c2_model",
    "decay_rate",
    "g2_model",
    "sphere_form_factor",
    "stokes_einstein",
    "water_viscosity",
]

#: Boltzmann constant (J/K).
BOLTZMANN = 1.380649e-23
_M2_TO_A2 = 1e20


def stokes_einstein(
    radius_m: float, temperature_k: float = 298.15, viscosity_pa_s: float | None = None
) -> float:
    """Translational diffusion coefficient D = kT / (6 pi eta R) of a sphere, in Angstrom^2/s.

    ``viscosity_pa_s`` defaults to water at ``temperature_k`` (:func:`water_viscosity`).
    """
    if not radius_m > 0 or not temperature_k > 0:
        raise ValueError("radius and temperature must be > 0")
    eta = (
        water_viscosity(temperature_k)
        if viscosity_pa_s is None
        else float(viscosity_pa_s)
    )
    return BOLTZMANN * temperature_k / (6.0 * np.pi * eta * radius_m) * _M2_TO_A2


def water_viscosity(temperature_k: float) -> float:
    """Dynamic viscosity of water (Pa s), Vogel form 2.414e-5 * 10**(247.8 / (T - 140)).

    Good to about 1 % between 0 and 100 degC (0.890 mPa s at 25 degC).
    """
    return 2.414e-5 * 10.0 ** (247.8 / (float(temperature_k) - 140.0))


def decay_rate(
    q: np.ndarray,
    D: float,
    phi: np.ndarray | None = None,
    flow_rate: float = 0.0,
    flow_angle_deg: float = 0.0,
) -> np.ndarray:
    """Field decay rate Gamma (1/s) = D q^2 + flow_rate * |q cos(phi - flow_angle)|.

    The second term is an anisotropic extra decorrelation for a sheared or
    flowing sample (velocity spread ``flow_rate`` in Angstrom/s along
    ``flow_angle_deg``): q parallel to the flow decorrelates faster.
    """
    q = np.asarray(q, dtype=np.float64)
    gamma = D * q**2
    if flow_rate:
        p = np.zeros_like(q) if phi is None else np.asarray(phi, dtype=np.float64)
        gamma = gamma + flow_rate * np.abs(q * np.cos(np.radians(p - flow_angle_deg)))
    return gamma


def g2_model(
    tau: np.ndarray,
    q: np.ndarray,
    D: float,
    beta: float,
    baseline: float = 1.0,
    phi: np.ndarray | None = None,
    flow_rate: float = 0.0,
    flow_angle_deg: float = 0.0,
) -> np.ndarray:
    """Intensity autocorrelation ``baseline + beta * exp(-2 Gamma tau)``.

    Parameters
    ----------
    tau : (T,) s
    q : (Nq,) 1/Angstrom (and ``phi`` (Nq,) deg for flow)
    D : Angstrom^2/s

    Returns
    -------
    (T, Nq) float64, the viewer's g2 orientation.
    """
    gamma = decay_rate(q, D, phi, flow_rate, flow_angle_deg)
    tau = np.asarray(tau, dtype=np.float64)
    return baseline + beta * np.exp(-2.0 * tau[:, None] * np.atleast_1d(gamma)[None, :])


def c2_model(
    t: np.ndarray,
    gamma0: float,
    beta: float,
    gamma_factor: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """Two-time correlation ``1 + beta * exp(-2 |integral_{t1}^{t2} Gamma(t) dt|)``.

    Parameters
    ----------
    t : (N,) frame times (s)
    gamma0 : float
        Decay rate (1/s) at factor 1.
    gamma_factor : callable, optional
        Gamma(t) / gamma0 (ageing: decreasing with age). Integrated with the
        trapezoid rule on ``t``.

    Returns
    -------
    (N, N) float64 symmetric.
    """
    t = np.asarray(t, dtype=np.float64)
    fac = (
        np.ones_like(t)
        if gamma_factor is None
        else np.asarray(gamma_factor(t), dtype=np.float64)
    )
    cum = (
        np.concatenate([[0.0], np.cumsum(0.5 * (fac[1:] + fac[:-1]) * np.diff(t))])
        * gamma0
    )
    return 1.0 + beta * np.exp(-2.0 * np.abs(cum[:, None] - cum[None, :]))


def sphere_form_factor(q: np.ndarray, radius_m: float) -> np.ndarray:
    """Normalised sphere form factor P(q) = [3 (sin x - x cos x) / x^3]^2, x = q R (P(0) = 1)."""
    x = np.asarray(q, dtype=np.float64) * radius_m * 1e10
    out = np.ones_like(x)
    big = x > 1e-3
    xb = x[big]
    out[big] = (3.0 * (np.sin(xb) - xb * np.cos(xb)) / xb**3) ** 2
    small = ~big  # series 1 - x^2/5 avoids cancellation near 0
    out[small] = 1.0 - x[small] ** 2 / 5.0
    return out
