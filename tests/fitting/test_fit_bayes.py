"""NumPyro NUTS on small problems: convergence, reproducibility, blocks, cancel."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numpyro")

from xpcsviewer.fitting.bayes import (  # noqa: E402
    bfmi,
    ess_bulk,
    ess_tail,
    fit_g2_bayes,
)
from xpcsviewer.progress import CancelToken, Cancelled  # noqa: E402


def _data(seed=0, n_b=3):
    rng = np.random.default_rng(seed)
    tau = np.geomspace(1e-5, 1.0, 40)
    taus = np.geomspace(1e-4, 1e-2, n_b)
    g2 = 1 + 0.3 * np.exp(-2 * tau[None, :] / taus[:, None])
    err = np.full_like(g2, 0.005)
    return tau, g2 + err * rng.standard_normal(g2.shape), err, taus


@pytest.mark.slow
def test_nuts_converges_reproducible_and_covers_truth():
    tau, g2, err, taus = _data()
    kw = dict(num_warmup=300, num_samples=1000, num_chains=4, seed=11, block_size=200)
    seen = []
    a = fit_g2_bayes(tau, g2, err, progress=lambda d, t, m: seen.append((d, t)), **kw)
    assert all(np.all(a.r_hat[n] <= 1.01) for n in ("contrast", "tau", "baseline"))
    assert a.divergences == 0 and np.all(a.divergences_per_bin == 0) and np.all(a.bfmi >= 0.2)
    assert np.all(a.ess_bulk["tau"] >= 400)
    assert a.converged.all()
    # the truth is inside the 94% HDI of every bin
    assert np.all((a.hdi_low["tau"] <= taus) & (taus <= a.hdi_high["tau"]))
    assert np.all(a.std["stretch"] == 0) and np.all(a.mean["stretch"] == 1.0)
    assert seen[-1][0] == seen[-1][1] == 7  # 2 warm-up + 5 sampling blocks
    # same seed, same draws (the compiled programs are cached: this run is quick)
    b = fit_g2_bayes(tau, g2, err, **kw)
    np.testing.assert_array_equal(a.samples["tau"], b.samples["tau"])
    c = fit_g2_bayes(tau, g2, err, **{**kw, "seed": 12})
    assert not np.array_equal(a.samples["tau"], c.samples["tau"])
    band = a.band(np.geomspace(1e-5, 1, 20))
    assert band.shape == (3, 3, 20)
    assert np.all(band[:, 0] <= band[:, 1]) and np.all(band[:, 1] <= band[:, 2])


@pytest.mark.slow
def test_nuts_cancel_between_blocks():
    tau, g2, err, _ = _data(n_b=2)
    token = CancelToken()

    def prog(done, total, msg):
        if done >= 1:  # after the first warm-up block
            token.cancel()

    with pytest.raises(Cancelled):
        fit_g2_bayes(tau, g2, err, num_warmup=50, num_samples=100, num_chains=1,
                     block_size=50, progress=prog, cancel=token)


def test_diagnostics_against_independent_draws(rng):
    # Independent normal draws: ESS close to the draw count, BFMI close to 2.
    x = rng.standard_normal((4, 1000, 3))
    eb, et = ess_bulk(x), ess_tail(x)
    assert np.all((eb > 3000) & (eb < 5000)) and np.all((et > 2500) & (et < 5500))
    # A random walk has a tiny ESS
    walk = np.cumsum(rng.standard_normal((4, 1000, 1)), axis=1)
    assert ess_bulk(walk)[0] < 100
    e = rng.standard_normal((2, 5000))
    np.testing.assert_allclose(bfmi(e), 2.0, rtol=0.1)


@pytest.mark.slow
def test_joint_sampler_agrees_with_per_bin():
    tau, g2, err, _ = _data(n_b=1)
    kw = dict(num_warmup=200, num_samples=400, num_chains=2, seed=3)
    a = fit_g2_bayes(tau, g2, err, sampler="per_bin", **kw)
    b = fit_g2_bayes(tau, g2, err, sampler="joint", **kw)
    # same posterior: means agree within a few Monte-Carlo standard errors
    mcse = np.hypot(a.std["tau"] / np.sqrt(a.ess_bulk["tau"]), b.std["tau"] / np.sqrt(b.ess_bulk["tau"]))
    assert np.all(np.abs(a.mean["tau"] - b.mean["tau"]) < 5 * mcse)
    np.testing.assert_allclose(a.std["tau"], b.std["tau"], rtol=0.2)


@pytest.mark.slow
def test_joint_diffusion_posterior_recovers_d():
    from xpcsviewer.fitting import fit_diffusion_joint_bayes

    rng = np.random.default_rng(5)
    tau = np.geomspace(1e-5, 2.0, 40)
    q = np.linspace(0.004, 0.02, 6)
    d_true = 2e5
    g2 = 1.0 + 0.2 * np.exp(-2 * tau[None, :] * d_true * q[:, None] ** 2)
    err = np.full_like(g2, 0.004)
    g2 = g2 + err * rng.standard_normal(g2.shape)
    r = fit_diffusion_joint_bayes(q, tau, g2, err, alpha=2.0, num_warmup=300,
                                  num_samples=500, num_chains=2, seed=0)
    s = r.summary["D"]
    assert abs(s["mean"] - d_true) < 4 * s["std"]
    assert s["hdi_low"] < s["mean"] < s["hdi_high"]
    assert s["r_hat"] <= 1.01 and r.divergences == 0
    # flat priors, near-Gaussian posterior: matches the least-squares answer
    from xpcsviewer.fitting import fit_diffusion_joint

    j = fit_diffusion_joint(q, tau, g2, err, alpha=2.0)
    assert abs(s["mean"] - j.D) < 0.3 * j.D_err
    assert s["std"] == pytest.approx(j.D_err, rel=0.2)
    assert "alpha" not in r.summary


@pytest.mark.slow
def test_nuts_90_percent_intervals_cover_the_truth_in_90_percent():
    # 100 simulated curves, stated errors = the true noise. Measured (seed 2024):
    # tau 0.91, contrast 0.95, baseline 0.91 with 4 chains x (300 + 500) draws.
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from conftest import multitau_delays

    _, tau = multitau_delays()
    rng = np.random.default_rng(2024)
    n = 100
    true_tau = np.exp(rng.uniform(np.log(20 * tau[0]), np.log(tau[-1] / 20), n))
    true_c = rng.uniform(0.15, 0.3, n)
    true_b = 1.0 + rng.normal(0, 0.002, n)
    err = np.full((n, tau.size), 0.004)
    g2 = true_b[:, None] + true_c[:, None] * np.exp(-2 * tau[None, :] / true_tau[:, None])
    y = g2 + err * rng.standard_normal(g2.shape)
    r = fit_g2_bayes(tau, y, err, num_warmup=300, num_samples=500, num_chains=4, seed=3)
    for name, truth in (("tau", true_tau), ("contrast", true_c)):
        lo, hi = np.quantile(r.samples[name].reshape(-1, n), [0.05, 0.95], axis=0)
        coverage = np.mean((lo <= truth) & (truth <= hi))
        assert 0.80 <= coverage <= 0.98, (name, coverage)
    assert np.mean([s.value == "converged" for s in r.status]) >= 0.85


@pytest.mark.slow
def test_nuts_widths_follow_the_misfit_like_least_squares():
    # Errors stated 4.5x too small (chi2_red ~ 20): the noise scale widens the posterior
    # to the least-squares error (which is scaled by sqrt(chi2_red)).
    from xpcsviewer.fitting import fit_g2

    rng = np.random.default_rng(4)
    tau = np.geomspace(1e-5, 1.0, 50)
    true = 1 + 0.25 * np.exp(-2 * tau / 2e-3)
    y = (true + 0.009 * rng.standard_normal((2, tau.size)))
    err = np.full_like(y, 0.002)
    lsq = fit_g2(tau, y, err)
    assert np.all(lsq.chi2_red > 10)
    r = fit_g2_bayes(tau, y, err, init=lsq, num_warmup=300, num_samples=600, num_chains=2,
                     seed=1)
    np.testing.assert_allclose(r.noise_scale, np.sqrt(lsq.chi2_red))
    ratio = r.std["tau"] / lsq.errors["tau"]
    assert np.all((ratio > 0.7) & (ratio < 1.4)), ratio


@pytest.mark.slow
def test_nuts_statuses_say_no_decay_and_limits():
    tau = np.geomspace(1e-5, 1.0, 50)
    rng = np.random.default_rng(6)
    err = np.full((2, tau.size), 0.001)
    flat = 1.0 + err[0] * rng.standard_normal(tau.size)
    # decays visibly inside the window, but tau (30 s) is beyond 10 t_max: a limit only
    slow = 1 + 0.3 * np.exp(-2 * tau / 30.0) + err[1] * rng.standard_normal(tau.size)
    r = fit_g2_bayes(tau, np.stack([flat, slow]), err, num_warmup=300, num_samples=600,
                     num_chains=2, seed=2)
    assert r.status[0].value == "no_decay"
    assert r.status[1].value == "unresolved", r.detail[1]
    assert np.isfinite(r.tau_lower_limit[1]) and 1.0 < r.tau_lower_limit[1] < 30.0
    assert r.detail[1].startswith("tau > ")
    v, _ = r.reported("tau")
    assert np.isnan(v[0])
