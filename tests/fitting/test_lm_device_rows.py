"""The LM solves keep the curves on the device: bytes sent, programs, and equal results.

The starts and the profile-likelihood points of a fit are many solve rows per curve;
``lm_solve_batch(rows=...)`` sends each curve once and gathers the rows on the device.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from xpcsviewer.backends import get_backend, get_transfer_stats, reset_transfer_stats
from xpcsviewer.fitting import fit_g2
from xpcsviewer.fitting.lm import LM_ROWS, lm_solve_batch
from xpcsviewer.fitting.models import G2Model

jax_backend = pytest.importorskip("xpcsviewer.backends.jax_backend")


def _problem(rng, tau, n_b):
    taus = np.geomspace(1e-4, 1e-1, n_b)
    g2 = 1 + 0.25 * np.exp(-2 * tau[None, :] / taus[:, None])
    err = 0.002 + 0.003 * rng.random(g2.shape)
    return g2 + err * rng.standard_normal(g2.shape), err


def _lm_bytes(monkeypatch) -> dict:
    # host->device bytes counted inside lm.py (the grid scan sends its own)
    got = {"lm": 0, "all": 0}
    orig = jax_backend.count_host_to_device

    def count(nbytes: int) -> None:
        f = sys._getframe(1)
        while f is not None and os.path.basename(f.f_code.co_filename) != "lm.py":
            f = f.f_back
        got["all"] += nbytes
        if f is not None:
            got["lm"] += nbytes
        orig(nbytes)

    monkeypatch.setattr(jax_backend, "count_host_to_device", count)
    return got


def test_fit_sends_each_curve_once(rng, delays, monkeypatch):
    _, tau = delays
    n_b = 2 * LM_ROWS
    y, err = _problem(rng, tau, n_b)
    be = get_backend("jax")
    fit_g2(tau, y, err, model="single", backend=be)  # compiled
    got = _lm_bytes(monkeypatch)
    reset_transfer_stats()
    c0 = jax_backend.compile_counts()["lowered"]
    res = fit_g2(tau, y, err, model="single", backend=be)
    data = 3 * y.size * 8  # tau, g2, g2_err as (B, T) float64
    # the starts and 26 profile points per curve used to send ~45x the data
    assert got["lm"] < 3 * data, got["lm"] / data
    assert get_transfer_stats().host_to_device_bytes == got["all"]
    assert jax_backend.compile_counts()["lowered"] == c0
    assert np.isfinite(res.interval["tau"]).all()


def test_no_program_per_curve_count(rng, delays):
    # a fit of another size gathers with the same fixed-shape programs
    _, tau = delays
    be = get_backend("jax")
    y, err = _problem(rng, tau, 40)
    fit_g2(tau, y, err, model="stretched", backend=be)
    for n_b in (7, 300):
        y, err = _problem(rng, tau, n_b)
        c0 = jax_backend.compile_counts()["lowered"]
        fit_g2(tau, y, err, model="stretched", backend=be)
        assert jax_backend.compile_counts()["lowered"] == c0, n_b


def _rows_problem(rng, n_c=37, n_t=32, reps=9):
    tau = np.geomspace(1e-5, 1.0, n_t)
    y, err = _problem(rng, tau, n_c)
    t = np.ascontiguousarray(np.broadcast_to(tau, y.shape))
    mask = np.ones(y.shape, bool)
    mask[::5, -3:] = False
    rows = np.repeat(np.arange(n_c), reps)
    x0 = np.tile([0.2, np.log(1e-3), 1.0, 1.0], (rows.size, 1))
    x0[:, 1] += np.tile(np.linspace(-2, 2, reps), n_c)
    lo = np.tile([0.0, np.log(1e-7), 0.2, 0.5], (rows.size, 1))
    hi = np.tile([1.0, np.log(1e2), 2.0, 1.5], (rows.size, 1))
    lo[::4, 0] = -0.1  # bounds that vary within a curve's rows
    return t, y, err, mask, rows, x0, lo, hi


@pytest.mark.parametrize("aux", [False, True])
def test_rows_equal_expanded_arrays(rng, aux):
    t, y, err, mask, rows, x0, lo, hi = _rows_problem(rng)
    free = np.array([True, True, False, True])
    if aux:  # no stretch column
        x0, lo, hi, free = (np.delete(a, 2, axis=-1) for a in (x0, lo, hi, free))
    m = 1.0 + rng.random(y.shape) if aux else None
    ax = (m, np.full(y.shape[0], 1e-5)) if aux else None
    model = G2Model.SINGLE_AVGCORR if aux else G2Model.SINGLE
    be = get_backend("jax")
    got = lm_solve_batch(model, t, y, err, mask, x0, lo, hi, free, ax, backend=be, rows=rows)
    ax_r = None if ax is None else (ax[0][rows], ax[1][rows])
    ref = lm_solve_batch(model, t[rows], y[rows], err[rows], mask[rows], x0, lo, hi, free,
                         ax_r, backend=be)
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_array_equal(a, b)  # the same kernel on the same values
    num = lm_solve_batch(model, t, y, err, mask, x0, lo, hi, free, ax,
                         backend=get_backend("numpy"), rows=rows)
    # the backends' iterations may differ in the last bits
    np.testing.assert_allclose(got[0], num[0], rtol=1e-7)
    np.testing.assert_allclose(got[1], num[1], rtol=1e-7)
    np.testing.assert_array_equal(got[4], num[4])


def test_changed_curves_are_sent_again(rng):
    t, y, err, mask, rows, x0, lo, hi = _rows_problem(rng)
    free = np.array([True, True, False, True])
    be = get_backend("jax")
    a = lm_solve_batch(G2Model.SINGLE, t, y, err, mask, x0, lo, hi, free, backend=be, rows=rows)
    reset_transfer_stats()
    b = lm_solve_batch(G2Model.SINGLE, t, y, err, mask, x0, lo, hi, free, backend=be, rows=rows)
    kept = get_transfer_stats().host_to_device_bytes
    np.testing.assert_array_equal(a[1], b[1])
    y[:, :4] += 0.05  # in place: the kept copy is stale
    reset_transfer_stats()
    c = lm_solve_batch(G2Model.SINGLE, t, y, err, mask, x0, lo, hi, free, backend=be, rows=rows)
    assert get_transfer_stats().host_to_device_bytes > kept
    ref = lm_solve_batch(G2Model.SINGLE, t[rows], y[rows], err[rows], mask[rows], x0, lo, hi,
                         free, backend=be)
    np.testing.assert_array_equal(c[1], ref[1])


@pytest.mark.slow
@pytest.mark.parametrize(("model", "rtol"), [("double", 1e-6), ("single_avgcorr", 1e-7)])
def test_jax_fit_equals_numpy_profiles_included(rng, delays, model, rtol):
    # params, errors, statuses and the profile intervals, limits and window refits;
    # the backends' iterations may differ in the last bits
    frames, tau = delays
    y, err = _problem(rng, tau, 12)
    if model == "double":  # two decays 30x apart
        t1 = np.geomspace(1e-4, 1e-3, 12)[:, None]
        g = 1 + 0.25 * (0.5 * np.exp(-tau / t1) + 0.5 * np.exp(-tau / (30 * t1))) ** 2
        y = g + err * rng.standard_normal(g.shape)
    from xpcsviewer.fitting import averaging_factors

    aux = (averaging_factors(frames), 1e-5)
    a = fit_g2(tau, y, err, model=model, aux=aux, backend=get_backend("numpy"))
    b = fit_g2(tau, y, err, model=model, aux=aux, backend=get_backend("jax"))
    assert [str(s) for s in a.status] == [str(s) for s in b.status]
    for field in ("params", "errors", "interval", "interval2", "window"):
        for n, v in getattr(a, field).items():
            np.testing.assert_allclose(v, getattr(b, field)[n], rtol=rtol, err_msg=field + n)
    for field in ("tau_lower_limit", "tau_upper_limit", "chi2_red"):
        np.testing.assert_allclose(getattr(a, field), getattr(b, field), rtol=rtol,
                                   err_msg=field)
