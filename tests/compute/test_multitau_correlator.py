"""Multi-tau correlator: exact reference, backend parity, invariants, streaming options."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from xpcsviewer.backends import get_backend
from xpcsviewer.compute.inputs import FrameStream, Partition
from xpcsviewer.compute.multitau._cpu import available as cpu_kernel_available
from xpcsviewer.compute.multitau.correlator import correlate_multitau, delay_list
from xpcsviewer.compute.options import MultitauOptions
from xpcsviewer.compute.spec import CorrelateSpec
from xpcsviewer.progress import Cancelled, CancelToken

BACKENDS = ["numpy", "jax"]
# the backends' array kernels, and the compiled CPU kernel (numba) where installed
ENGINES = ["numpy", "jax"] + (["compiled"] if cpu_kernel_available() else [])


def _mt(*args, **kw):
    """The correlator on the backend asked for (no CPU engine routing)."""
    return correlate_multitau(*args, engine="backend", **kw)


def _run(engine, frames, partition, spec=None, options=None, **kw):
    """``engine``: a backend name (its array kernels) or "compiled"."""
    options = options if options is not None else MultitauOptions()
    if engine == "compiled":
        return correlate_multitau(frames, partition, spec, options=options, engine="compiled",
                                  **kw)
    return correlate_multitau(frames, partition, spec,
                              options=replace(options, backend=get_backend(engine)),
                              engine="backend", **kw)


def _partition(h=6, w=7):
    dq = np.ones((h, w), int)
    dq[:, 4:] = 2
    sq = (np.arange(h * w).reshape(h, w) % 3) + 1
    sq[:, 4:] += 3
    return dq, sq


def _reference(frames, dq, sq, mask=None, dpl=4):
    """Straightforward multi-tau: explicit coarse-graining, loops over delays and bins."""
    n = frames.shape[0]
    flat = frames.reshape(n, -1).astype(np.float64)
    valid = (dq.ravel() > 0) & (sq.ravel() > 0)
    if mask is not None:
        valid &= mask.ravel() > 0
    # independent delay rule: 1..2m at level 0, (m+1..2m)*2^L while x < N >> L
    delays, per = [], []
    level = 0
    while True:
        xs = [x for x in (range(1, 2 * dpl + 1) if level == 0 else range(dpl + 1, 2 * dpl + 1))
              if x < (n >> level)]
        if not xs:
            break
        for x in xs:
            delays.append(x * 2**level)
            per.append((level, x))
        level += 1
    nd = dq.max()
    g2 = np.zeros((len(delays), nd))
    err = np.zeros((len(delays), nd))
    for k, (lvl, x) in enumerate(per):
        m = n >> lvl
        a = flat[: m << lvl].reshape(m, 2**lvl, -1).mean(axis=1)
        G2 = np.array([np.mean([a[t, p] * a[t + x, p] for t in range(m - x)])
                       for p in range(a.shape[1])])
        IP = a[: m - x].mean(axis=0)
        IF = a[x:].mean(axis=0)
        for j in range(1, nd + 1):
            in_d = valid & (dq.ravel() == j)
            gs = []
            for s in np.unique(sq.ravel()[in_d]):
                sel = in_d & (sq.ravel() == s)
                gs.append(sel.sum() * G2[sel].sum() / (IP[sel].sum() * IF[sel].sum()))
            g2[k, j - 1] = np.mean(gs)
            pix = G2[in_d] / (IP[in_d] * IF[in_d])
            err[k, j - 1] = pix.std() / np.sqrt(in_d.sum())
        if m - x < 2:  # one frame pair: g2 is 1 by construction, not a measurement
            g2[k], err[k] = np.nan, np.nan
    return np.array(delays), g2, err


def test_delay_list_follows_the_standard_rule():
    d, lvl, x = delay_list(100_000)
    assert d[:12].tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16]
    assert np.all(d == x << lvl)
    assert np.all(np.diff(d) > 0)
    # every delay fits the level's frame count, and the next one would not
    assert np.all(x < (100_000 >> lvl))
    last_l = lvl[-1]
    assert x[-1] + 1 >= (100_000 >> last_l) or x[-1] == 8
    assert delay_list(2)[0].tolist() == [1]
    assert delay_list(10, 2)[0].tolist() == [1, 2, 3, 4, 6, 8]


@pytest.mark.realdata
def test_delay_list_matches_a_production_file(real_data_dir):
    import h5py

    f = sorted((real_data_dir / "aps8idi_llps_saxpcs").glob("*_results.hdf"))[0]
    with h5py.File(f, "r") as h:
        ref = h["/xpcs/multitau/delay_list"][()].ravel()
        n = h["/xpcs/spatial_mean/intensity_vs_time"].shape[1]
    assert np.array_equal(delay_list(n)[0], ref)


@pytest.mark.parametrize("engine", ENGINES)
def test_matches_straightforward_reference(engine, rng):
    dq, sq = _partition()
    mask = np.ones_like(dq, bool)
    mask[0, 0] = mask[3, 5] = False
    frames = rng.poisson(2.0, (77, *dq.shape)).astype(np.uint16)
    d, g2_ref, err_ref = _reference(frames, dq, sq, mask)
    res = _run(engine, frames, Partition(dq, sq, mask), options=MultitauOptions(chunk_size=13))
    assert np.array_equal(res.delay_frames, d)
    np.testing.assert_allclose(res.g2, g2_ref, rtol=1e-12)
    np.testing.assert_allclose(res.g2_err, err_ref, rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("other", [e for e in ENGINES if e != "numpy"])
def test_backends_agree_to_1e12(other, rng):
    dq, sq = _partition()
    frames = rng.poisson(1.5, (150, *dq.shape)).astype(np.float64)
    kw = {"spec": CorrelateSpec(num_partial_g2=3, normalize_frame=True),
          "options": MultitauOptions(chunk_size=32)}
    a = _run("numpy", frames, Partition(dq, sq), **kw)
    b = _run(other, frames, Partition(dq, sq), **kw)
    for name in ("g2", "g2_err", "g2_static", "g2_partial", "g2_partial_err"):
        # errors that are exactly zero in exact arithmetic differ by round-off only
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-12, atol=1e-14,
                                   err_msg=name)
    assert np.array_equal(a.g2_partial_labels, b.g2_partial_labels)


@pytest.mark.parametrize("engine", ENGINES)
def test_chunking_does_not_change_the_result(engine, rng):
    dq, sq = _partition()
    frames = rng.poisson(1.0, (100, *dq.shape)).astype(np.float64)
    a = _run(engine, frames, Partition(dq, sq), options=MultitauOptions(chunk_size=100))
    b = _run(engine, FrameStream(lambda: (frames[i : i + 7] for i in range(0, 100, 7)), 100),
             Partition(dq, sq), options=MultitauOptions(chunk_size=5))
    np.testing.assert_allclose(a.g2, b.g2, rtol=1e-12)
    np.testing.assert_allclose(a.g2_err, b.g2_err, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_constant_input_gives_g2_one(backend):
    dq, sq = _partition()
    frames = np.full((64, *dq.shape), 3.5)
    res = _mt(frames, Partition(dq, sq), options=MultitauOptions(backend=get_backend(backend)))
    ok = np.isfinite(res.g2)  # the last, single-pair delay is not reported
    assert ok[:-1].all() and not ok[-1].any()
    np.testing.assert_allclose(res.g2[ok], 1.0, rtol=1e-13)
    np.testing.assert_allclose(res.g2_err[ok], 0.0, atol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
def test_shuffling_pixels_within_a_static_bin_keeps_g2(backend, rng):
    dq, sq = _partition()
    frames = rng.poisson(2.0, (90, *dq.shape)).astype(np.float64)
    flat = frames.reshape(90, -1).copy()
    perm = np.arange(flat.shape[1])
    for s in np.unique(sq):
        idx = np.flatnonzero(sq.ravel() == s)
        perm[idx] = rng.permutation(idx)
    shuffled = flat[:, perm].reshape(frames.shape)
    be = get_backend(backend)
    a = _mt(frames, Partition(dq, sq), options=MultitauOptions(backend=be))
    b = _mt(shuffled, Partition(dq, sq), options=MultitauOptions(backend=be))
    np.testing.assert_allclose(a.g2, b.g2, rtol=1e-12)
    np.testing.assert_allclose(a.g2_err, b.g2_err, rtol=1e-10, atol=1e-15)
    # and a shuffle across bins does change it (the test can fail)
    c = _mt(flat[:, rng.permutation(flat.shape[1])].reshape(frames.shape), Partition(dq, sq),
            options=MultitauOptions(backend=be))
    assert not np.allclose(a.g2, c.g2, rtol=1e-6)


def test_static_smoothing_is_ratio_of_sums_not_mean_of_ratios(rng):
    # one static bin = one dynamic bin: g2 must be n*sum(G2)/(sum(IP)*sum(IF))
    dq = np.ones((4, 5), int)
    sq = np.ones((4, 5), int)
    frames = rng.poisson(0.3, (40, 4, 5)).astype(float)
    res = _mt(frames, Partition(dq, sq), options=MultitauOptions(backend=get_backend("numpy")))
    a = frames.reshape(40, -1)
    g2_lag1 = 20 * (a[:-1] * a[1:]).mean(0).sum() / (a[:-1].mean(0).sum() * a[1:].mean(0).sum())
    assert res.g2[0, 0] == pytest.approx(g2_lag1, rel=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_partial_snapshots_are_cumulative(engine, rng):
    dq, sq = _partition()
    frames = rng.poisson(2.0, (96, *dq.shape)).astype(float)
    res = _run(engine, frames, Partition(dq, sq), CorrelateSpec(num_partial_g2=4),
               options=MultitauOptions(chunk_size=40))
    assert res.g2_partial_labels.tolist() == [24, 48, 72, 96]
    np.testing.assert_allclose(res.g2_partial[-1], res.g2, rtol=1e-12)
    first = _run(engine, frames[:24], Partition(dq, sq))
    t = first.delay_frames.size
    np.testing.assert_allclose(res.g2_partial[0, :t], first.g2, rtol=1e-12)
    assert np.isnan(res.g2_partial[0, t:]).all()


def test_frame_normalization_cancels_flux_changes(rng):
    dq, sq = _partition()
    frames = rng.poisson(5.0, (64, *dq.shape)).astype(float)
    flux = np.linspace(0.5, 2.0, 64)[:, None, None]
    be = get_backend("numpy")
    a = _mt(frames, Partition(dq, sq), CorrelateSpec(normalize_frame=True),
            options=MultitauOptions(backend=be))
    b = _mt(frames * flux, Partition(dq, sq), CorrelateSpec(normalize_frame=True),
            options=MultitauOptions(backend=be))
    c = _mt(frames * flux, Partition(dq, sq), CorrelateSpec(normalize_frame=False),
            options=MultitauOptions(backend=be))
    np.testing.assert_allclose(a.g2, b.g2, rtol=1e-12)
    assert not np.allclose(a.g2, c.g2, rtol=1e-3)


def test_progress_and_cancel():
    dq, sq = _partition()
    frames = np.ones((50, *dq.shape))
    seen = []
    _mt(frames, Partition(dq, sq),
        options=MultitauOptions(chunk_size=10, backend=get_backend("numpy")),
        progress=lambda d, t, m="": seen.append((d, t)))
    assert seen[-1] == (50, 50) and len(seen) >= 5
    tok = CancelToken()
    tok.cancel()
    with pytest.raises(Cancelled):
        _mt(frames, Partition(dq, sq), options=MultitauOptions(backend=get_backend("numpy")),
            cancel=tok)


def test_bad_partition_is_rejected():
    dq = np.ones((3, 3), int)
    sq = np.ones((3, 3), int)
    dq[0] = 2  # static bin 1 spans dynamic bins 1 and 2
    with pytest.raises(ValueError, match="static bin spans"):
        _mt(np.ones((10, 3, 3)), Partition(dq, sq))


def test_auto_engine_routes_jax_on_cpu_to_numpy_with_identical_results(rng):
    dq, sq = _partition()
    frames = rng.poisson(2.0, (40, *dq.shape)).astype(float)
    auto = correlate_multitau(frames, Partition(dq, sq),
                              options=MultitauOptions(backend=get_backend("jax")))
    ref = correlate_multitau(frames, Partition(dq, sq),
                             options=MultitauOptions(backend=get_backend("numpy")))
    assert auto.config["backend"] == "numpy"  # no accelerator in the test run
    np.testing.assert_array_equal(auto.g2, ref.g2)
    arrays = _mt(frames, Partition(dq, sq), options=MultitauOptions(backend=get_backend("numpy")))
    np.testing.assert_allclose(auto.g2, arrays.g2, rtol=1e-12)
    with pytest.raises(ValueError, match="engine"):
        correlate_multitau(frames, Partition(dq, sq), engine="fast")


@pytest.mark.skipif(not cpu_kernel_available(), reason="numba not installed")
def test_compiled_kernel_many_levels_and_tiles(rng):
    # more pixels than one tile and enough frames for 8 levels, odd chunk sizes
    from xpcsviewer.compute.multitau._cpu import TILE

    h, w = 3, TILE // 2 + 5
    dq = np.ones((h, w), int)
    dq[:, w // 2 :] = 2
    sq = dq * 3 - (np.arange(w)[None, :] % 3)
    frames = rng.poisson(0.7, (1100, h, w)).astype(np.uint16)
    a = _run("numpy", frames, Partition(dq, sq), options=MultitauOptions(chunk_size=256))
    b = _run("compiled",
             FrameStream(lambda: (frames[i : i + 97] for i in range(0, 1100, 97)), 1100),
             Partition(dq, sq), CorrelateSpec(normalize_frame=False),
             options=MultitauOptions(chunk_size=61))
    np.testing.assert_allclose(a.g2, b.g2, rtol=1e-12)
    np.testing.assert_allclose(a.g2_err, b.g2_err, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(a.g2_static, b.g2_static, rtol=1e-12)


@pytest.mark.skipif(not cpu_kernel_available(), reason="numba not installed")
@pytest.mark.parametrize("dpl", [2, 3, 4])
def test_compiled_kernel_other_delays_per_level(dpl, rng):
    dq, sq = _partition()
    frames = rng.poisson(1.5, (83, *dq.shape)).astype(np.uint16)
    d, g2_ref, err_ref = _reference(frames, dq, sq, dpl=dpl)
    res = _run("compiled", frames, Partition(dq, sq),
               options=MultitauOptions(delays_per_level=dpl, chunk_size=10))
    assert np.array_equal(res.delay_frames, d)
    np.testing.assert_allclose(res.g2, g2_ref, rtol=1e-12)
    np.testing.assert_allclose(res.g2_err, err_ref, rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("engine", ENGINES)
def test_scattering_means_equal_plain_numpy(engine, rng):
    # compiled frame/static-bin sums (numba) or the bincount path: the same means
    dq, sq = _partition()
    mask = np.ones_like(dq, bool)
    mask[1, 2] = False
    frames = rng.poisson(3.0, (37, *dq.shape)).astype(np.uint16)
    run = _run(engine, frames, Partition(dq, sq, mask),
               options=MultitauOptions(with_scattering=True, chunk_size=8))
    acc = run.scattering
    flat = frames.reshape(37, -1).astype(np.float64)
    valid = ((dq > 0) & (sq > 0) & mask).ravel()
    np.testing.assert_allclose(acc.mean_image(), frames.mean(axis=0), rtol=1e-13)
    np.testing.assert_allclose(acc.intensity_vs_time(), flat[:, valid].mean(axis=1), rtol=1e-13)
    ref = [flat[:, valid & (sq.ravel() == s)].mean() for s in range(1, sq.max() + 1)]
    np.testing.assert_allclose(acc.saxs_1d(), ref, rtol=1e-13)
    seg = acc.saxs_1d_segments(3)
    b = np.linspace(0, 37, 4).round().astype(int)
    for k in range(3):
        ref_k = [flat[b[k] : b[k + 1], valid & (sq.ravel() == s)].mean()
                 for s in range(1, sq.max() + 1)]
        np.testing.assert_allclose(seg[k], ref_k, rtol=1e-13)


def test_single_pair_delays_are_not_reported(rng):
    # With one frame pair G2 = IP * IF exactly: g2 would read 1 with error 0 whatever
    # the dynamics (our demo's lone last delay did, and fits took it at face value).
    n = 24
    frames = rng.poisson(2.0, size=(n, 6, 6)).astype(np.uint16)
    dq = np.ones((6, 6), np.int64)
    res = correlate_multitau(frames, Partition(dq, dq))
    _d, lvl, x = delay_list(n)
    pairs = (n >> np.asarray(lvl)) - np.asarray(x)
    got = np.isfinite(res.g2[:, 0])
    np.testing.assert_array_equal(got, pairs >= 2)
    assert np.all(res.g2_err[got, 0] > 0)
