"""The Bayesian fit of every bin in units of a few bins (issue 49 item 6): the units'
table equals the whole-file run's, row for row; a stop keeps the finished bins."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from xpcsviewer.fitting.blocks import G2Block
from xpcsviewer.fitting.spec import FitSpec, SamplerSpec

pytestmark = pytest.mark.slow


def _block(n_b: int = 11, seed: int = 3) -> G2Block:
    rng = np.random.default_rng(seed)
    frames = np.unique(np.round(np.logspace(0, 4, 40)).astype(np.int64))
    t0 = 1e-4
    tau = frames * t0
    taus = np.logspace(-3, -1, n_b)
    g2 = 1.0 + 0.2 * np.exp(-2.0 * tau[:, None] / taus[None, :])
    g2[:, -1] = 1.0  # a flat bin: nothing to sample, it keeps its least squares
    err = np.full(g2.shape, 0.003)
    g2 = g2 + rng.normal(0, 0.003, g2.shape)
    return G2Block(
        file_index=0, label="F", tau=tau, g2=g2, g2_err=err,
        valid=np.ones(g2.shape, bool), columns=np.arange(n_b), q=np.linspace(1e-3, 1e-2, n_b),
        phi=np.zeros(n_b), bin_labels=[f"b{j}" for j in range(n_b)], delay_frames=frames,
        t0=t0, source="F.hdf")


SAMPLER = SamplerSpec(num_warmup=60, num_samples=40, num_chains=1, extend=False, seed=5)


def _units_table(blocks, fit, sampler, stop_after=None):
    from xpcsviewer.fitting.bayes_units import (
        CANCELLED_DETAIL,
        keep_lsq,
        offsets,
        place,
        plan,
        sub_block,
    )
    from xpcsviewer.fitting.block_fits import empty_table, fit_curves

    start, units = plan(blocks, fit)
    out = empty_table(blocks, fit.model, "bayes", fit.t_range)
    off = offsets(blocks)
    done = np.zeros(out.n_curves, bool)
    for k, u in enumerate(units):
        if stop_after is not None and k >= stop_after:
            keep_lsq(out, np.flatnonzero(~done), start, CANCELLED_DETAIL)
            break
        rows = off[u.block] + u.cols
        part = fit_curves([sub_block(blocks[u.block], u.cols)], fit,
                          replace(sampler, seed=sampler.seed + u.seed_offset),
                          start=start.take(rows))
        place(out, rows, part)
        done[rows] = True
    return start, units, out


def test_units_equal_the_whole_file_run():
    from xpcsviewer.fitting.block_fits import fit_curves

    blocks = [_block()]
    fit = FitSpec("single", None, None, None)
    whole = fit_curves(blocks, fit, SAMPLER)
    _start, units, out = _units_table(blocks, fit, SAMPLER)
    sampled = [u for u in units if u.n_sampled]
    assert sum(u.n_sampled for u in units) == 10  # the flat bin is not sampled
    assert len(sampled) == 2 and [u.n_sampled for u in sampled] == [8, 2]
    assert sorted(np.concatenate([u.cols for u in units]).tolist()) == list(range(11))
    assert list(out.status) == list(whole.status)
    assert list(out.detail) == list(whole.detail)
    for n in whole.params:  # the same draws: the units' seeds are the chunks'
        np.testing.assert_allclose(out.params[n], whole.params[n], rtol=1e-9, equal_nan=True)
        np.testing.assert_allclose(out.errors[n], whole.errors[n], rtol=1e-9, equal_nan=True)
    for k in whole.diagnostics:
        np.testing.assert_allclose(out.diagnostics[k], whole.diagnostics[k], rtol=1e-9,
                                   equal_nan=True)
    grid = np.logspace(-4, 0, 16)
    np.testing.assert_allclose(out.band(np.arange(11), grid), whole.band(np.arange(11), grid),
                               rtol=1e-9, equal_nan=True)
    assert out.detail[10].startswith("not sampled")


def test_a_stop_keeps_the_finished_bins():
    from xpcsviewer.fitting.bayes_units import CANCELLED_DETAIL

    blocks = [_block()]
    fit = FitSpec("single", None, None, None)
    start, units, out = _units_table(blocks, fit, SAMPLER, stop_after=1)
    first = units[0].cols
    rest = np.setdiff1d(np.arange(11), first)
    assert first.size == 9  # eight sampled bins and the flat one
    assert np.all(np.isfinite(out.diagnostics["ess"][first[:8]]))
    assert all(d == CANCELLED_DETAIL for d in out.detail[rest])
    # the others keep their least-squares numbers and status, said so
    np.testing.assert_array_equal(out.params["tau"][rest], start.params["tau"][rest])
    assert list(out.status[rest]) == list(start.status[rest])
    assert out.for_blocks(blocks).n_curves == 11
