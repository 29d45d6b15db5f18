"""NumPyro NUTS on small problems: convergence, reproducibility, blocks, cancel."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numpyro")

from xpcsviewer.fitting.bayes import (
    bfmi,
    ess_bulk,
    ess_tail,
    fit_g2_bayes,
)
from xpcsviewer.fitting.spec import FitSpec, SamplerSpec
from xpcsviewer.progress import Cancelled, CancelToken


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
    nuts = SamplerSpec(num_warmup=300, num_samples=1000, num_chains=4, seed=11, block_size=200)
    seen = []
    a = fit_g2_bayes(tau, g2, err, sampler=nuts, progress=lambda d, t, m: seen.append((d, t)))
    assert all(np.all(a.r_hat[n] <= 1.01) for n in ("contrast", "tau", "baseline"))
    assert a.divergences == 0 and np.all(a.divergences_per_bin == 0) and np.all(a.bfmi >= 0.2)
    assert np.all(a.ess_bulk["tau"] >= 400)
    assert a.converged.all()
    # the truth is inside the 94% HDI of every bin
    assert np.all((a.hdi_low["tau"] <= taus) & (taus <= a.hdi_high["tau"]))
    assert np.all(a.std["stretch"] == 0) and np.all(a.mean["stretch"] == 1.0)
    # one bar in thousandths over the sampling and a possible extension round (issue
    # 32): it ends full and never goes back; 2 warm-up + 5 sampling blocks move it
    assert seen[-1] == (1000, 1000)
    done = [d for d, t in seen if t == 1000]
    assert done == sorted(done) and len(set(done)) >= 7
    # same seed, same draws (the compiled programs are cached: this run is quick)
    b = fit_g2_bayes(tau, g2, err, sampler=nuts)
    np.testing.assert_array_equal(a.samples["tau"], b.samples["tau"])
    c = fit_g2_bayes(tau, g2, err, sampler=nuts.with_(seed=12))
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
        fit_g2_bayes(tau, g2, err, sampler=SamplerSpec(num_warmup=50, num_samples=100,
                                                       num_chains=1, block_size=50),
                     progress=prog, cancel=token)


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
    nuts = SamplerSpec(num_warmup=200, num_samples=400, num_chains=2, seed=3)
    a = fit_g2_bayes(tau, g2, err, sampler=nuts.with_(sampler="per_bin"))
    b = fit_g2_bayes(tau, g2, err, sampler=nuts.with_(sampler="joint"))
    # same posterior: means agree within a few Monte-Carlo standard errors
    mcse = np.hypot(a.std["tau"] / np.sqrt(a.ess_bulk["tau"]),
                    b.std["tau"] / np.sqrt(b.ess_bulk["tau"]))
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
    r = fit_g2_bayes(tau, y, err, sampler=SamplerSpec(num_warmup=300, num_samples=500,
                                                      num_chains=4, seed=3))
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
    r = fit_g2_bayes(tau, y, err, init=lsq, sampler=SamplerSpec(
        num_warmup=300, num_samples=600, num_chains=2, seed=1))
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
    nuts = SamplerSpec(num_warmup=300, num_samples=600, num_chains=2, seed=2)
    # least squares finds no decay in one and only a limit in the other: neither is
    # sampled (issue 23), both keep the least-squares status and limit
    r = fit_g2_bayes(tau, np.stack([flat, slow]), err, sampler=nuts)
    assert not r.sampled.any() and np.isnan(r.mean["tau"]).all()
    assert [s.value for s in r.status] == ["no_decay", "unresolved"]
    assert r.detail[1].startswith("not sampled: tau > ")
    assert np.isfinite(r.tau_lower_limit[1]) and 1.0 < r.tau_lower_limit[1] < 30.0
    # sampled all the same, the posterior runs to the prior edge: a limit too
    r = fit_g2_bayes(tau, np.stack([flat, slow]), err, sampler=nuts.with_(sample_all=True))
    assert r.status[0].value == "no_decay"
    assert r.status[1].value == "unresolved", r.detail[1]
    assert np.isfinite(r.tau_lower_limit[1]) and 1.0 < r.tau_lower_limit[1] < 30.0
    assert r.detail[1].startswith("tau > ")
    v, _ = r.reported("tau")
    assert np.isnan(v[0])


def test_sheared_contrast_is_the_same_posterior():
    # The contrast is sampled as y = logit(c / c_max) - 2 (t_ref/tau)^s (issue 22: the
    # (log tau, contrast) ridge cost ESS). A shear has Jacobian 1: the target density
    # at corresponding points must equal the plain parameterisation's exactly.
    import jax.numpy as jnp
    from numpyro.infer.util import potential_energy

    from xpcsviewer.fitting import numpyro_lock
    from xpcsviewer.fitting.bayes import SHEAR_SITE, g2_model
    from xpcsviewer.fitting.models import G2Model

    tau, g2, err, _ = _data(n_b=2)
    t = jnp.asarray(tau)
    lo = {"contrast": jnp.zeros(2), "tau": jnp.full(2, 1e-6), "stretch": jnp.full(2, 0.2),
          "baseline": jnp.full(2, 0.5)}
    hi = {"contrast": jnp.full(2, 1.0), "tau": jnp.full(2, 10.0), "stretch": jnp.full(2, 2.0),
          "baseline": jnp.full(2, 1.5)}
    mask = jnp.ones(g2.shape, bool)
    t_ref = jnp.asarray([2e-5, 5e-5])
    rng = np.random.default_rng(3)
    for model in (G2Model.SINGLE, G2Model.STRETCHED):
        fixed = {"stretch": jnp.ones(2)} if model is G2Model.SINGLE else {}
        kw = {"model": model, "lower": lo, "upper": hi, "fixed": fixed}
        args = (t, jnp.asarray(g2), jnp.asarray(err), mask)
        for _ in range(3):
            z_c = rng.normal(size=2)
            z_t = rng.normal(size=2)  # NumPyro's unconstrained log_tau
            plain = {"contrast": jnp.asarray(z_c), "log_tau": jnp.asarray(z_t),
                     "baseline": jnp.asarray(1.0 + 0.01 * rng.normal(size=2))}
            if model is G2Model.STRETCHED:
                plain["stretch"] = jnp.asarray(rng.normal(size=2))
            log_tau = np.log(1e-6) + (np.log(10.0) - np.log(1e-6)) / (1 + np.exp(-z_t))
            s = 1.0
            if model is G2Model.STRETCHED:
                s = 0.2 + 1.8 / (1 + np.exp(-np.asarray(plain["stretch"])))
            sheared = {k: v for k, v in plain.items() if k != "contrast"}
            sheared[SHEAR_SITE] = jnp.asarray(
                z_c - 2 * np.exp(s * (np.log(np.asarray(t_ref)) - log_tau)))
            with numpyro_lock.hold():
                u = potential_energy(g2_model, args, kw, plain)
                v = potential_energy(g2_model, args, {**kw, "t_ref": t_ref}, sheared)
            assert float(v) == pytest.approx(float(u), rel=1e-10, abs=1e-8)


def _sig(z):
    return 1.0 / (1.0 + np.exp(-np.asarray(z)))


def _double_setup(n_b=2):
    import jax.numpy as jnp

    tau, g2, err, _ = _data(n_b=n_b)
    lo = {"contrast": jnp.zeros(n_b), "tau1": jnp.full(n_b, 1e-6), "tau2": jnp.full(n_b, 1e-6),
          "fraction": jnp.zeros(n_b), "stretch1": jnp.full(n_b, 0.2),
          "stretch2": jnp.full(n_b, 0.2), "baseline": jnp.full(n_b, 0.5)}
    hi = {"contrast": jnp.full(n_b, 1.0), "tau1": jnp.full(n_b, 10.0),
          "tau2": jnp.full(n_b, 10.0), "fraction": jnp.ones(n_b),
          "stretch1": jnp.full(n_b, 2.0), "stretch2": jnp.full(n_b, 2.0),
          "baseline": jnp.full(n_b, 1.5)}
    fixed = {"stretch1": jnp.ones(n_b), "stretch2": jnp.ones(n_b)}
    return tau, g2, err, lo, hi, fixed


def _double_times(z_t1, z_v):
    # NumPyro's unconstrained log_tau1 and tau2_position -> (log tau1, log tau2)
    a, b = np.log(1e-6), np.log(10.0)
    lt1 = a + (b - a) * _sig(z_t1)
    return lt1, lt1 + _sig(z_v) * (b - lt1)


def test_double_sheared_contrast_is_the_same_posterior():
    # The double model's contrast is sheared by the field at the first delay: y =
    # logit(c / c_max) + 2 log[f e^(-t_ref/tau1) + (1 - f) e^(-t_ref/tau2)] (Jacobian 1)
    import jax.numpy as jnp
    from numpyro.infer.util import potential_energy

    from xpcsviewer.fitting import numpyro_lock
    from xpcsviewer.fitting.bayes import SHEAR_SITE, TAU2_SITE, g2_model
    from xpcsviewer.fitting.models import G2Model

    tau, g2, err, lo, hi, fixed = _double_setup()
    t_ref = np.array([2e-5, 5e-5])
    kw = {"model": G2Model.DOUBLE, "lower": lo, "upper": hi, "fixed": fixed}
    args = (jnp.asarray(tau), jnp.asarray(g2), jnp.asarray(err), jnp.ones(g2.shape, bool))
    rng = np.random.default_rng(8)
    for _ in range(4):
        z_c, z_t1, z_v, z_f = (rng.normal(size=2) for _ in range(4))
        plain = {"contrast": jnp.asarray(z_c), "log_tau1": jnp.asarray(z_t1),
                 TAU2_SITE: jnp.asarray(z_v), "fraction": jnp.asarray(z_f),
                 "baseline": jnp.asarray(1.0 + 0.01 * rng.normal(size=2))}
        lt1, lt2 = _double_times(z_t1, z_v)
        f = _sig(z_f)
        g1 = f * np.exp(-t_ref / np.exp(lt1)) + (1 - f) * np.exp(-t_ref / np.exp(lt2))
        sheared = {k: v for k, v in plain.items() if k != "contrast"}
        sheared[SHEAR_SITE] = jnp.asarray(z_c + 2 * np.log(g1))
        with numpyro_lock.hold():
            u = potential_energy(g2_model, args, kw, plain)
            v = potential_energy(g2_model, args, {**kw, "t_ref": jnp.asarray(t_ref)}, sheared)
        assert float(v) == pytest.approx(float(u), rel=1e-10, abs=1e-8)


def test_double_prior_is_flat_on_the_ordered_box():
    # (log tau1, log tau2) uniform on lo < log tau1 < log tau2 < hi, as the least
    # squares' bounds with its ordering: the potential without data plus the log
    # Jacobian of the unconstrained sites is the same everywhere. Before, tau2 = tau1
    # e^d with d ~ U(0, hi - lo) reached decades beyond hi (r-hat 3.6 on a real bin).
    import jax.numpy as jnp
    from numpyro.infer.util import potential_energy

    from xpcsviewer.fitting import numpyro_lock
    from xpcsviewer.fitting.bayes import TAU2_SITE, g2_model
    from xpcsviewer.fitting.models import G2Model

    tau, g2, err, lo, hi, fixed = _double_setup(n_b=1)
    kw = {"model": G2Model.DOUBLE, "lower": lo, "upper": hi, "fixed": fixed}
    args = (jnp.asarray(tau), jnp.asarray(g2[:1]), jnp.asarray(err[:1]),
            jnp.zeros(g2[:1].shape, bool))  # no data: the prior alone
    a, b = np.log(1e-6), np.log(10.0)
    rng = np.random.default_rng(9)
    seen = []
    for _ in range(6):
        z_t1, z_v = rng.normal(scale=2.0, size=1), rng.normal(scale=2.0, size=1)
        point = {"contrast": jnp.zeros(1), "log_tau1": jnp.asarray(z_t1),
                 TAU2_SITE: jnp.asarray(z_v), "fraction": jnp.zeros(1),
                 "baseline": jnp.ones(1)}
        lt1, lt2 = _double_times(z_t1, z_v)
        assert a < lt1[0] < lt2[0] < b
        s1, s2 = _sig(z_t1), _sig(z_v)
        log_jac = np.log((b - a) * s1 * (1 - s1) * (b - lt1) * s2 * (1 - s2))
        with numpyro_lock.hold():
            u = float(potential_energy(g2_model, args, kw, point))
        seen.append(u + float(log_jac[0]))
    np.testing.assert_allclose(seen, seen[0], rtol=0, atol=1e-9)


def test_ess_gate_is_100_per_chain():
    from xpcsviewer.fitting.bayes_diagnostics import ess_min

    # Vehtari et al. (2021): bulk and tail ESS of at least 100 per chain
    assert [ess_min(c) for c in (1, 2, 4)] == [100.0, 200.0, 400.0]


@pytest.mark.slow
def test_bins_short_of_ess_are_sampled_longer_and_thinned():
    # Issue 22: with the GUI's defaults a third of the bins missed the ESS gate. A bin
    # the least squares calls converged that misses only ESS / r-hat goes on sampling
    # from where its chains stopped; the stored draws are the long run thinned.
    tau, g2, err, _ = _data(seed=4, n_b=2)
    nuts = SamplerSpec(num_warmup=100, num_samples=100, num_chains=2, seed=4, block_size=50)
    seen = []
    r = fit_g2_bayes(tau, g2, err, sampler=nuts,
                     progress=lambda d, t, msg="": seen.append(msg))
    longer = np.flatnonzero(r.draws_per_chain > 100)
    assert longer.size and any("more draws" in m for m in seen)
    m = int(r.draws_per_chain[longer[0]] // 100)
    assert 2 <= m <= 4 and np.all(r.draws_per_chain[longer] == 100 * m)
    assert r.samples["tau"].shape == (2, 100, 2)
    plain = fit_g2_bayes(tau, g2, err, sampler=nuts.with_(num_samples=100 * m, extend=False))
    for b in longer:  # exactly the chains of one long run, every m-th draw
        np.testing.assert_array_equal(r.samples["tau"][:, :, b],
                                      plain.samples["tau"][:, m - 1::m, b])
        np.testing.assert_array_equal(r.samples["contrast"][:, :, b],
                                      plain.samples["contrast"][:, m - 1::m, b])
    short = fit_g2_bayes(tau, g2, err, sampler=nuts.with_(extend=False))
    assert np.all(short.draws_per_chain == 100)
    # the gate is the one asked for with two chains
    for b in range(2):
        if r.status[b] == "failed":
            assert "< 200" in r.detail[b]


def _mixed(seed=0):
    # a single exponential, a flat curve (no decay) and a Kohlrausch decay (beta 0.5)
    rng = np.random.default_rng(seed)
    tau = np.geomspace(1e-5, 1.0, 40)
    err = np.full((3, tau.size), 0.004)
    g2 = np.stack([1 + 0.3 * np.exp(-2 * tau / 1e-3), np.ones_like(tau),
                   1 + 0.3 * np.exp(-2 * (tau / 1e-2) ** 0.5)])
    return tau, g2 + err * rng.standard_normal(g2.shape), err


@pytest.mark.slow
def test_auto_samples_each_decaying_bin_with_its_model_reproducibly():
    # Issue 23: NUTS follows the automatic model choice, and only where least squares
    # finds a decay; a no_decay bin keeps its least-squares status, unsampled.
    from xpcsviewer.fitting import fit_g2

    tau, g2, err = _mixed()
    lsq = fit_g2(tau, g2, err, model="auto")
    assert list(lsq.model_names()[[0, 2]]) == ["single", "stretched"]
    assert lsq.status[1].value == "no_decay"
    # 400 + 400: at 200 + 200 the r_hat / ESS gates pass or fail by seed and by JAX
    # version (seeds 5-7 under jax 0.10.2: two of three short runs failed a gate)
    nuts = SamplerSpec(num_warmup=400, num_samples=400, num_chains=2, seed=5)
    kw = {"fit": FitSpec(model="auto"), "init": lsq}
    r = fit_g2_bayes(tau, g2, err, sampler=nuts, **kw)
    assert list(r.model_names()) == list(lsq.model_names())
    assert list(r.sampled) == [True, False, True]
    assert r.status[1].value == "no_decay" and r.detail[1].startswith("not sampled: ")
    assert np.isnan(r.mean["tau"][1]) and np.all(np.isnan(r.samples["tau"][:, :, 1]))
    assert r.draws_per_chain[1] == 0 and r.divergences_per_bin[1] == 0
    assert np.isnan(r.diagnostics()["r_hat"][1])
    # each sampled bin with its own model: the stretch is free only in the stretched one
    assert r.std["stretch"][0] == 0 and r.std["stretch"][2] > 0
    assert abs(r.mean["stretch"][2] - 0.5) < 4 * r.std["stretch"][2]
    assert r.status[0].value == "converged" and np.isnan(r.mean["tau1"]).all()
    band = r.band(np.geomspace(1e-5, 1.0, 12))
    assert np.isfinite(band[[0, 2]]).all() and np.isnan(band[1]).all()
    # the same seed gives the same draws, model by model
    again = fit_g2_bayes(tau, g2, err, sampler=nuts, **kw)
    for n in ("tau", "stretch", "contrast", "baseline"):
        np.testing.assert_array_equal(r.samples[n], again.samples[n])
    # everything on request (the old behaviour): the flat bin is sampled and says so
    every = fit_g2_bayes(tau, g2, err, sampler=nuts.with_(sample_all=True), **kw)
    assert every.sampled.all() and every.status[1].value == "no_decay"
    assert not every.detail[1].startswith("not sampled")


def test_a_pinned_model_needs_its_own_least_squares_start():
    from xpcsviewer.fitting import fit_g2

    tau, g2, err = _mixed()
    lsq = fit_g2(tau, g2, err, model="auto")
    with pytest.raises(ValueError, match="not 'single'"):
        fit_g2_bayes(tau, g2, err, fit=FitSpec(model="single"), init=lsq)


def test_overrides_are_resolved_by_the_caller():
    tau, g2, err, _ = _data(n_b=1)
    fit = FitSpec(model="single", overrides={"baseline": {"fixed": True}})
    with pytest.raises(ValueError, match="overrides"):
        fit_g2_bayes(tau, g2, err, fit=fit)
