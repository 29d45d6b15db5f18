"""The start-up warm-up compiles exactly the programs real fits use."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.backends import get_backend
from xpcsviewer.fitting import averaging_factors, fit_g2, grid, lm
from xpcsviewer.jobs.warmup import _curves, precompile


@pytest.fixture
def programs(monkeypatch):
    """Every compiled least-squares program handed out (solvers and grid kernels)."""
    seen: dict[tuple, object] = {}
    for mod, name in ((lm, "_solver_cached"), (grid, "_kernel_cached"),
                      (grid, "_double_kernel_cached")):
        real = getattr(mod, name)

        def wrap(*key, _real=real, _name=name):
            prog = _real(*key)
            seen[(_name, *key)] = prog
            return prog

        monkeypatch.setattr(mod, name, wrap)

    def sizes():
        return {k: p._cache_size() for k, p in seen.items()}

    return sizes


def test_precompile_covers_the_automatic_fit_of_other_files(programs):
    # Issue 23: the default (auto) fits all four candidates; the warm-up compiled only
    # the single exponential, so the first automatic fit compiled the other three
    get_backend("jax")
    out = precompile(nuts=False)
    assert out["backend"].startswith("JAX") and "lsq" in out["seconds"]
    before = programs()
    assert {getattr(k[2], "value", k[2]) for k in before if k[0] == "_solver_cached"} == {
        "single", "single_avgcorr", "stretched", "double"}
    rng = np.random.default_rng(1)
    for n_b, n_t in ((48, 38), (297, 61), (3, 20)):
        tau, _, _, frames = _curves(n_t)
        err = np.full((n_b, n_t), 0.003)
        y = 1 + 0.2 * np.exp(-2 * tau / 1e-3) + err * rng.standard_normal(err.shape)
        for model in ("auto", "single"):
            aux = (averaging_factors(frames), 1e-5) if model == "auto" else None
            res = fit_g2(tau, y, err, model=model, aux=aux, backend=get_backend("jax"))
            assert res.n_curves == n_b
    # no new compiled program: the warm-up's shapes are the real fits' shapes
    assert programs() == before


@pytest.mark.slow
def test_precompile_with_the_sampler():
    from xpcsviewer.fitting.bayes import fit_g2_bayes
    from xpcsviewer.fitting.bayes_run import _per_bin_programs
    from xpcsviewer.fitting.spec import FitSpec, SamplerSpec
    from xpcsviewer.jobs.warmup import BAYES_DEFAULTS

    precompile()
    misses = _per_bin_programs.cache_info().misses
    # a single exponential, a Kohlrausch and a two-step decay: three models sampled
    tau, _, _, frames = _curves(45)
    rng = np.random.default_rng(2)
    err = np.full((3, tau.size), 0.003)
    y = 1 + 0.2 * np.stack([np.exp(-2 * tau / 3e-4), np.exp(-2 * (tau / 1e-3) ** 0.5),
                            (0.5 * np.exp(-tau / 1e-4) + 0.5 * np.exp(-tau / 5e-3)) ** 2])
    y = y + err * rng.standard_normal(err.shape)
    aux = (averaging_factors(frames), 1e-5)
    lsq = fit_g2(tau, y, err, model="auto", aux=aux)
    assert set(lsq.model_names()) == {"single", "stretched", "double"}
    nuts = SamplerSpec(num_warmup=BAYES_DEFAULTS["num_warmup"], num_samples=500,
                       num_chains=BAYES_DEFAULTS["num_chains"])
    r = fit_g2_bayes(tau, y, err, fit=FitSpec(model="auto"), sampler=nuts, init=lsq, aux=aux)
    assert r.sampled.all()
    assert _per_bin_programs.cache_info().misses == misses
