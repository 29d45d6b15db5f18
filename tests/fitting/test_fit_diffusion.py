"""tau(q) power laws, D, Stokes-Einstein radius, joint D fit."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.fitting import (
    FitStatus,
    diffusion_from_fit,
    fit_diffusion,
    fit_diffusion_joint,
    fit_g2,
    hydrodynamic_radius,
    water_viscosity,
)


def test_exact_power_law():
    q = np.linspace(0.003, 0.03, 12)
    tau = 2.5e-6 * q**-1.7
    r = fit_diffusion(q, tau, 0.01 * tau)
    assert r.exponent == pytest.approx(-1.7, rel=1e-12)
    assert r.prefactor == pytest.approx(2.5e-6, rel=1e-10)
    assert np.isnan(r.D)  # D only for exponent -2
    r2 = fit_diffusion(q, 1 / (4e5 * q**2), exponent=-2.0)
    assert r2.D == pytest.approx(4e5, rel=1e-12) and r2.exponent_err == 0.0


def test_errors_match_weighted_linear_regression(rng):
    # Reference: the textbook weighted least-squares covariance (X^T W X)^-1 in log space.
    q = np.geomspace(0.003, 0.03, 15)
    tau0 = 1 / (2e5 * q**2)
    rel = 0.05
    tau = tau0 * np.exp(rel * rng.standard_normal(q.size))
    r = fit_diffusion(q, tau, rel * tau)
    x = np.column_stack([np.ones(q.size), np.log(q)])
    w = np.full(q.size, 1 / rel**2)
    cov = np.linalg.inv(x.T @ (w[:, None] * x))
    beta = cov @ x.T @ (w * np.log(tau))
    chi2 = np.sum(w * (np.log(tau) - x @ beta) ** 2) / (q.size - 2)
    cov *= max(1.0, chi2)
    assert r.exponent == pytest.approx(beta[1], rel=1e-12)
    assert r.exponent_err == pytest.approx(np.sqrt(cov[1, 1]), rel=1e-10)
    assert r.prefactor_err == pytest.approx(np.exp(beta[0]) * np.sqrt(cov[0, 0]), rel=1e-10)


def test_q_range_and_bad_points():
    q = np.array([0.001, 0.004, 0.006, 0.008, 0.02, 0.05])
    tau = 1 / (1e5 * q**2)
    tau[1] = np.nan
    r = fit_diffusion(q, tau, 0.1 * tau, q_range=(0.002, 0.03), exponent=-2.0)
    assert r.n_points == 3 and r.D == pytest.approx(1e5)
    assert fit_diffusion(q[:1], tau[:1]).n_points == 1  # too few: NaNs, no exception
    assert np.isnan(fit_diffusion(q[:1], tau[:1]).exponent)


def test_water_viscosity_and_stokes_einstein():
    assert water_viscosity(298.15) == pytest.approx(8.90e-4, rel=0.01)
    assert water_viscosity(293.15) == pytest.approx(1.002e-3, rel=0.01)
    # R = kT / (6 pi eta D); D = 2.45e-12 m^2/s in water at 25 C is a 100 nm sphere
    d_a2 = 2.4537e-12 * 1e20
    r, r_err = hydrodynamic_radius(d_a2, D_err=0.02 * d_a2)
    assert r == pytest.approx(100.0, rel=0.01)
    assert r_err == pytest.approx(2.0, rel=0.01)
    r2, _ = hydrodynamic_radius(d_a2, 300.0, 1e-3)
    assert r2 == pytest.approx(1.380649e-23 * 300 / (6 * np.pi * 1e-3 * 2.4537e-12) * 1e9)


def _colloid_file(rng, d_true=2e5, alpha=2.0, n_q=12, noise=0.003):
    tau = np.geomspace(1e-5, 2.0, 60)
    q = np.linspace(0.004, 0.02, n_q)
    taus = 1 / (d_true * q**alpha)
    g2 = 1.0 + 0.2 * np.exp(-2 * tau[None, :] / taus[:, None])
    err = np.full_like(g2, noise)
    return q, tau, g2 + noise * rng.standard_normal(g2.shape), err


def test_joint_fit_recovers_d_and_alpha(rng):
    q, tau, g2, err = _colloid_file(rng)
    j = fit_diffusion_joint(q, tau, g2, err)
    assert j.status is FitStatus.CONVERGED
    assert abs(j.D - 2e5) < 4 * j.D_err
    assert abs(j.alpha - 2.0) < 4 * j.alpha_err
    jf = fit_diffusion_joint(q, tau, g2, err, alpha=2.0)
    assert abs(jf.D - 2e5) < 4 * jf.D_err and jf.alpha_err == 0.0
    # per-bin route agrees within errors
    per = diffusion_from_fit(q, fit_g2(tau, g2, err))["fixed"]
    assert abs(per.D - jf.D) < 4 * np.hypot(per.D_err, jf.D_err)


def test_joint_fit_is_unbiased_over_noise():
    rng = np.random.default_rng(3)
    pulls = []
    for _ in range(15):
        q, tau, g2, err = _colloid_file(rng, d_true=5e4, noise=0.01)
        j = fit_diffusion_joint(q, tau, g2, err, alpha=2.0)
        pulls.append((j.D - 5e4) / j.D_err)
    assert abs(np.mean(pulls)) < 0.8 and 0.5 < np.std(pulls) < 1.6
