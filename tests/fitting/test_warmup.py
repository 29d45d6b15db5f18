"""The start-up warm-up compiles exactly the programs real fits use."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.backends import get_backend
from xpcsviewer.fitting import fit_g2
from xpcsviewer.fitting.grid import _kernel_cached
from xpcsviewer.fitting.lm import _solver_cached
from xpcsviewer.fitting.models import G2Model
from xpcsviewer.fitting.warmup import precompile


def _jit_sizes():
    solver = _solver_cached("jax", G2Model.SINGLE, 4, 200, True)
    kernel = _kernel_cached("jax", G2Model.SINGLE, True)
    return solver._cache_size(), kernel._cache_size()


def test_precompile_covers_other_curve_and_delay_counts():
    get_backend("jax")
    out = precompile(nuts=False)
    assert out["backend"].startswith("JAX") and "lsq" in out["seconds"]
    before = _jit_sizes()
    rng = np.random.default_rng(1)
    for n_b, n_t in ((48, 38), (297, 61), (3, 20)):
        tau = np.geomspace(1e-5, 1.0, n_t)
        err = np.full((n_b, n_t), 0.003)
        y = 1 + 0.2 * np.exp(-2 * tau / 1e-3) + err * rng.standard_normal(err.shape)
        res = fit_g2(tau, y, err, backend=get_backend("jax"))
        assert res.n_curves == n_b
    # no new compiled program: the warm-up's shapes are the real fits' shapes
    assert _jit_sizes() == before


@pytest.mark.slow
def test_precompile_with_the_sampler():
    from xpcsviewer.fitting.bayes import _per_bin_programs

    precompile()
    misses = _per_bin_programs.cache_info().misses
    from xpcsviewer.fitting.bayes import fit_g2_bayes
    from xpcsviewer.fitting.warmup import BAYES_DEFAULTS

    tau = np.geomspace(1e-5, 1.0, 45)
    err = np.full((11, 45), 0.003)
    y = 1 + 0.2 * np.exp(-2 * tau / 3e-3) + err * np.random.default_rng(2).standard_normal(err.shape)
    fit_g2_bayes(tau, y, err, num_warmup=BAYES_DEFAULTS["num_warmup"], num_samples=500,
                 num_chains=BAYES_DEFAULTS["num_chains"])
    assert _per_bin_programs.cache_info().misses == misses
