"""tau(q) power laws, D, Stokes-Einstein radius, joint D fit."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.fitting import (
    FitStatus,
    diffusion_from_fit,
    diffusion_verdict,
    fit_diffusion,
    fit_diffusion_joint,
    fit_g2,
    hydrodynamic_radius,
    solvent_from_sample,
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
    r, r_err = hydrodynamic_radius(d_a2, 298.15, water_viscosity(298.15), D_err=0.02 * d_a2)
    assert r == pytest.approx(100.0, rel=0.01)
    assert r_err == pytest.approx(2.0, rel=0.01)
    r2, _ = hydrodynamic_radius(d_a2, 300.0, 1e-3)
    assert r2 == pytest.approx(1.380649e-23 * 300 / (6 * np.pi * 1e-3 * 2.4537e-12) * 1e9)
    # no solvent is ever assumed
    with pytest.raises(TypeError):
        hydrodynamic_radius(d_a2)  # type: ignore[call-arg]


def test_solvent_only_from_explicit_sample_entries():
    assert solvent_from_sample({"temperature": 298.15, "viscosity": 8.9e-4},
                               {"temperature": "K", "viscosity": "Pa s"}) == (298.15, 8.9e-4)
    t, eta = solvent_from_sample({"temperature": 25.0, "viscosity": 0.89},
                                 {"temperature": "degC", "viscosity": "mPa s"})
    assert t == pytest.approx(298.15) and eta == pytest.approx(8.9e-4)
    # a real 8-ID-I file: controller read-backs only, no solvent
    assert solvent_from_sample({"qnw1_temperature": 30.0, "qnw_lakeshore": 300.2}) is None
    assert solvent_from_sample({"temperature": 298.0}) is None


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
    per = diffusion_from_fit(q, fit_g2(tau, g2, err))
    assert per.verdict == "diffusive", per.message
    assert abs(per.D - jf.D) < 4 * np.hypot(per.D_err, jf.D_err)


def test_joint_fit_is_unbiased_over_noise():
    rng = np.random.default_rng(3)
    pulls = []
    for _ in range(15):
        q, tau, g2, err = _colloid_file(rng, d_true=5e4, noise=0.01)
        j = fit_diffusion_joint(q, tau, g2, err, alpha=2.0)
        pulls.append((j.D - 5e4) / j.D_err)
    assert abs(np.mean(pulls)) < 0.8 and 0.5 < np.std(pulls) < 1.6


def test_verdict_gates_d_on_the_exponent():
    q = np.geomspace(0.004, 0.03, 8)
    diffusive = 1 / (2e5 * q**2)
    v = diffusion_verdict(q, diffusive, 0.03 * diffusive)
    assert v.verdict == "diffusive" and v.D == pytest.approx(2e5, rel=1e-9)
    assert v.to_dict()["D"] == pytest.approx(2e5, rel=1e-9)
    # an arrested sample: tau barely depends on q
    arrested = 1.2 * (q / q[0]) ** -0.3
    v = diffusion_verdict(q, arrested, 0.05 * arrested)
    assert v.verdict == "not_diffusive" and np.isnan(v.D) and v.to_dict()["D"] is None
    assert "not diffusive (b = -0.3" in v.message
    # two good bins are not enough; nor is an undetermined exponent
    v = diffusion_verdict(q[:2], diffusive[:2], 0.03 * diffusive[:2])
    assert v.verdict == "too_few_bins" and np.isnan(v.D)
    noisy = diffusive * np.exp(np.array([1.5, -1.2, 0.8, -1.0, 1.3, -0.9, 1.1, -1.4]))
    v = diffusion_verdict(q[:3], noisy[:3], 1.5 * noisy[:3])
    assert v.verdict == "too_few_bins" and "undetermined" in v.message


def test_noise_only_file_has_no_d(rng):
    tau = np.geomspace(1e-5, 2.0, 60)
    q = np.linspace(0.004, 0.02, 12)
    err = np.full((12, 60), 0.002)
    g2 = 1.0 + err * rng.standard_normal(err.shape)
    v = diffusion_from_fit(q, fit_g2(tau, g2, err))
    assert v.verdict == "too_few_bins" and np.isnan(v.D)


@pytest.mark.slow
def test_demo_brownian_files_give_d_within_10_percent(demo_set_dir):
    # The Brownian files of three radii and the "both" file. Measured D/truth over demo
    # seeds 0-3 for every Brownian file (A01-A03, D01, F01-F03): 0.81-1.04, mean 0.95;
    # the simulated runs are short (tau biased ~5 % high), the repeats F01-F03 most.
    # With the automatic model choice (the CLI and GUI default) A01's lowest-q bin is a
    # stretched decay (AICc lower by 20; a misfit for the single exponential) whose mean
    # time is 26 % high; the 10 % systematic per bin keeps it from setting the exponent.
    from xpcsviewer.fitting import averaging_factors
    from xpcsviewer.io import read_result

    names = ["A01", "A02", "A03", "D01"]
    for name in names:
        path = next(demo_set_dir.glob(f"{name}_*_results.hdf"))
        res = read_result(path)
        mt = res.multitau
        aux = (averaging_factors(mt.delay_frames), mt.t0_eff)
        for model in ("single", "auto"):
            fit = fit_g2(mt.tau, mt.g2.T, mt.g2_err.T, mt.fit_mask.T, model=model, aux=aux)
            v = diffusion_from_fit(res.qmap.dynamic_q, fit)
            assert v.verdict == "diffusive", (name, model, v.message)
            assert v.D == pytest.approx(res.sample["D"], rel=0.10), (name, model, v.D)


def test_d_reads_in_square_micrometres_per_second():
    # issue 33 (8): "1.018e+08 Å²/s" reads as 1.018 µm²/s; files keep Å²/s
    from xpcsviewer.fitting.diffusion import d_text

    assert d_text(1.018e8, 7.1e6) == "1.018 \u00b1 0.071 \u00b5m\u00b2/s"
