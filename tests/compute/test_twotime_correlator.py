"""Two-time correlator: explicit reference, parity, symmetry, link to multi-tau."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.backends import get_backend
from xpcsviewer.compute.detector.partition import PartitionGrid
from xpcsviewer.compute.inputs import Partition
from xpcsviewer.compute.multitau.correlator import correlate_multitau
from xpcsviewer.compute.options import MultitauOptions, TwotimeOptions
from xpcsviewer.compute.spec import CorrelateSpec, parse_bins
from xpcsviewer.compute.twotime.correlator import (
    c2_diagonal_mean,
    c2_g2_segments,
    correlate_twotime,
)

BACKENDS = ["numpy", "jax"]


def _mt(*args, **kw):
    """The correlator on the backend asked for (no CPU engine routing)."""
    return correlate_multitau(*args, engine="backend", **kw)


def _partition(h=6, w=8):
    dq = np.ones((h, w), int)
    dq[:, 4:] = 2
    sq = (np.arange(h * w).reshape(h, w) % 4) + 1  # 4 static bins of equal size per dq bin
    sq[:, 4:] += 4
    return dq, sq


def _reference_c2(frames, dq, sq, b, smooth="sqmap"):
    n = frames.shape[0]
    flat = frames.reshape(n, -1).astype(np.float64)
    pix = np.flatnonzero(dq.ravel() == b)
    y = flat[:, pix].copy()
    groups = sq.ravel()[pix] if smooth == "sqmap" else np.zeros(pix.size)
    for g in np.unique(groups):
        m = groups == g
        mean = y[:, m].mean(axis=1, keepdims=True)
        y[:, m] /= np.where(mean > 0, mean, 1.0)
    c = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            c[i, j] = pix.size * np.dot(y[i], y[j]) / (y[i].sum() * y[j].sum())
    return c


@pytest.mark.parametrize(("backend", "engine"),
                         [("numpy", "auto"), ("jax", "auto"), ("jax", "backend")])
@pytest.mark.parametrize("smooth", ["sqmap", "dqmap"])
def test_matches_straightforward_reference(backend, engine, smooth, rng):
    dq, sq = _partition()
    frames = rng.poisson(2.0, (41, *dq.shape)).astype(np.uint16)
    res = correlate_twotime(frames, Partition(dq, sq), CorrelateSpec(smooth=smooth),
                            options=TwotimeOptions(block_rows=16, chunk_size=9,
                                                   backend=get_backend(backend)),
                            engine=engine)
    assert res.processed_bins.tolist() == [1, 2]
    for i, b in enumerate(res.processed_bins):
        ref = _reference_c2(frames, dq, sq, b, smooth)
        np.testing.assert_allclose(res.c2[i], ref, rtol=1e-12)
        g = np.array([np.mean([ref[t, t + k] for t in range(41 - k)]) for k in range(41)])
        np.testing.assert_allclose(res.g2_full[:, i], g, rtol=1e-12)
        seg = np.array([[np.mean([ref[s * 8 + t, s * 8 + t + k] for t in range(8 - k)])
                         for s in range(5)] for k in range(8)])
        np.testing.assert_allclose(res.g2_segments[:, :, i], seg, rtol=1e-12)


def test_backends_agree_and_maps_are_symmetric(rng):
    dq, sq = _partition()
    frames = rng.poisson(1.0, (60, *dq.shape)).astype(np.float64)
    a = correlate_twotime(frames, Partition(dq, sq), CorrelateSpec(dq="2"),
                          options=TwotimeOptions(block_rows=25, backend=get_backend("numpy")))
    # the jitted kernels (accelerator route), forced on the CPU
    b = correlate_twotime(frames, Partition(dq, sq), CorrelateSpec(dq=[2]),
                          options=TwotimeOptions(block_rows=25, backend=get_backend("jax")),
                          engine="backend")
    assert a.processed_bins.tolist() == [2]
    np.testing.assert_allclose(a.c2[0], b.c2[0], rtol=1e-12)
    np.testing.assert_array_equal(a.c2[0], a.c2[0].T)
    np.testing.assert_allclose(a.g2_full, b.g2_full, rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_diagonal_mean_equals_multitau_g2_at_level0(backend, rng):
    # With per-frame static-bin sums held constant (and equal-size static bins), the
    # two-time normalisation and the multi-tau static smoothing coincide exactly.
    dq, sq = _partition()
    n = 48
    # integer counts (exact in the two-time float32 store), each static bin's pixels
    # a per-frame permutation of fixed values: constant sums, varying speckle
    flat = np.zeros((n, dq.size))
    for s in np.unique(sq):
        idx = np.flatnonzero(sq.ravel() == s)
        base = rng.poisson(3.0, idx.size).astype(np.float64) + 1
        for t in range(n):
            flat[t, idx] = base[rng.permutation(idx.size)] if t % 3 else base
    frames = flat.reshape(n, *dq.shape)
    be = get_backend(backend)
    tt = correlate_twotime(frames, Partition(dq, sq), options=TwotimeOptions(backend=be))
    mt = _mt(frames, Partition(dq, sq), options=MultitauOptions(backend=be))
    for k in range(1, 9):  # level-0 delays
        np.testing.assert_allclose(tt.g2_full[k], mt.g2[k - 1], rtol=1e-12)


def test_shuffling_pixels_within_static_bins_keeps_c2(rng):
    dq, sq = _partition()
    frames = rng.poisson(2.0, (30, *dq.shape)).astype(float)
    flat = frames.reshape(30, -1)
    perm = np.arange(flat.shape[1])
    for s in np.unique(sq):
        idx = np.flatnonzero(sq.ravel() == s)
        perm[idx] = rng.permutation(idx)
    be = get_backend("numpy")
    a = correlate_twotime(frames, Partition(dq, sq), options=TwotimeOptions(backend=be))
    b = correlate_twotime(flat[:, perm].reshape(frames.shape), Partition(dq, sq),
                          options=TwotimeOptions(backend=be))
    for x, y in zip(a.c2, b.c2, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-12)


def test_constant_input_gives_c2_one():
    dq, sq = _partition()
    res = correlate_twotime(np.full((20, *dq.shape), 4.0), Partition(dq, sq),
                            options=TwotimeOptions(backend=get_backend("jax")))
    np.testing.assert_allclose(res.c2[0], 1.0, rtol=1e-14)


def test_helpers():
    assert parse_bins("1-3,5", 6).tolist() == [1, 2, 3, 5]
    assert parse_bins("all", 3).tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="outside"):
        parse_bins("7", 6)
    with pytest.raises(ValueError, match="bad bin range"):
        parse_bins("3-x", 6)
    c = np.arange(16.0).reshape(4, 4)
    assert c2_diagonal_mean(c).tolist() == [np.mean([0, 5, 10, 15]), np.mean([1, 6, 11]), 4.5, 3.0]
    assert c2_g2_segments(np.ones((12, 12))).shape == (2, 5)


@pytest.mark.slow
def test_simulated_speckle_two_time_g2_has_known_contrast_and_rate():
    from scipy.optimize import curve_fit

    from xpcsviewer.compute.detector.partition import make_partition
    from xpcsviewer.synthetic.speckle import Geometry, simulate_frames

    geo = Geometry(shape=(48, 48), energy_kev=10.0, det_dist_m=5.0, pixel_size_m=75e-6,
                   bcx=-10.0, bcy=24.0)
    q, phi = geo.qmap()
    qm = make_partition(q, phi, None, PartitionGrid(3, 12))
    d_true, dt, n = 5e6, 1e-3, 2000
    frames = simulate_frames(q, n, dt, D=d_true, beta=0.25, rate=2.0, seed=5)
    res = correlate_twotime(frames, Partition(qm.dynamic_roi_map, qm.static_roi_map, qm.mask),
                            options=TwotimeOptions(backend=get_backend("numpy")))
    k = np.arange(1, 60)
    for j in range(qm.n_dynamic):
        qp = q[qm.dynamic_roi_map == j + 1]

        def model(k, d, b, qp=qp):
            return 1 + b * np.exp(-2 * d * np.outer(k * dt, qp**2)).mean(axis=1)

        p, _ = curve_fit(model, k, res.g2_full[k, j], p0=[0.7 * d_true, 0.2])
        # the diagonal means of one 2-s run are strongly correlated: a few % is the
        # honest precision here (multi-tau physics test: 2 %)
        assert abs(p[0] / d_true - 1) < 0.06, j
        assert abs(p[1] - 0.25) < 0.01, j
    # off the diagonal, far beyond the correlation time, C is 1
    far = np.mean([np.diagonal(res.c2[-1], o).mean() for o in range(1500, 1600)])
    assert abs(far - 1) < 5e-3


@pytest.mark.parametrize("cache", [True, False])
def test_tiles_cache_and_upper_format_give_the_reference(cache, rng, monkeypatch):
    import xpcsviewer.compute.twotime.correlator as tt

    if not cache:  # every tile normalised again for each block
        monkeypatch.setattr(tt, "CACHE_BYTES", 0)
    dq, sq = _partition()
    frames = rng.poisson(3.0, (53, *dq.shape)).astype(np.uint16)
    full = correlate_twotime(frames, Partition(dq, sq),
                             options=TwotimeOptions(block_rows=7, backend=get_backend("numpy")))
    up = correlate_twotime(frames, Partition(dq, sq),
                           options=TwotimeOptions(block_rows=11, c2_format="upper32",
                                                  backend=get_backend("numpy")))
    for i, b in enumerate(full.processed_bins):
        ref = _reference_c2(frames, dq, sq, b)
        np.testing.assert_allclose(full.c2[i], ref, rtol=1e-12)
        assert up.c2[i].dtype == np.float32
        np.testing.assert_array_equal(up.c2[i], np.triu(ref).astype(np.float32))
    np.testing.assert_allclose(up.g2_full, full.g2_full, rtol=1e-12)
    np.testing.assert_allclose(up.g2_segments, full.g2_segments, rtol=1e-12)


def test_signed_input_keeps_the_denominator_rule(rng):
    # negative values can make a per-frame sum non-positive: that denominator -> 1
    dq, sq = _partition()
    frames = rng.normal(0.0, 1.0, (30, *dq.shape))
    frames[3] = -np.abs(frames[3])
    res = correlate_twotime(frames, Partition(dq, sq),
                            options=TwotimeOptions(block_rows=8, backend=get_backend("numpy")))
    for i, b in enumerate(res.processed_bins):
        n = frames.shape[0]
        flat = frames.reshape(n, -1).astype(np.float32).astype(np.float64)  # float store
        pix = np.flatnonzero(dq.ravel() == b)
        y = flat[:, pix].copy()
        groups = sq.ravel()[pix]
        for g in np.unique(groups):
            m = groups == g
            mean = y[:, m].mean(axis=1, keepdims=True)
            y[:, m] /= np.where(mean > 0, mean, 1.0)
        s = y.sum(axis=1)
        den = np.outer(s, s)
        ref = pix.size * (y @ y.T) / np.where(den > 0, den, 1.0)
        np.testing.assert_allclose(res.c2[i], ref, rtol=1e-10, atol=1e-12)


def test_diagonal_sums_of_an_upper_map_equal_traces(rng):
    from xpcsviewer.compute.twotime.correlator import _diagonal_sums, _map_g2

    n = 23
    flat = np.zeros(n * n + n)
    c = flat[: n * n].reshape(n, n)
    c[:] = np.triu(rng.random((n, n)))
    np.testing.assert_allclose(_diagonal_sums(flat, n), [np.trace(c, k) for k in range(n)],
                               rtol=1e-13)
    full = c + np.triu(c, 1).T
    g, seg = _map_g2(c, flat)
    np.testing.assert_allclose(g, c2_diagonal_mean(full), rtol=1e-13)
    np.testing.assert_allclose(seg, c2_g2_segments(full), rtol=1e-13)


def test_cpu_job_compiles_nothing(rng, monkeypatch):
    # a JAX job on the CPU goes to BLAS through NumPy: no jitted kernel is built
    import xpcsviewer.compute.twotime._xla as tx

    monkeypatch.setattr(tx, "upper_map_xla", lambda *a: pytest.fail("XLA engine used"))
    dq, sq = _partition()
    res = correlate_twotime(rng.poisson(1.0, (20, *dq.shape)), Partition(dq, sq),
                            options=TwotimeOptions(backend=get_backend("jax")))
    assert res.config["backend"] == "numpy"


def test_cpu_scattering_equals_the_accumulator(rng):
    # the CPU job's means come from its reading pass (static-bin runs of the store, the
    # other bins' pixels, the image sum): equal to ScatteringAccumulator fed the frames
    from xpcsviewer.compute._binning import select_pixels
    from xpcsviewer.compute.multitau.correlator import ScatteringAccumulator

    dq, sq = _partition()
    mask = np.ones(dq.shape, bool)
    mask[0, :3] = False
    n = 37
    frames = rng.poisson(2.0, (n, *dq.shape)).astype(np.uint16)
    be = get_backend("numpy")
    for bins in ("2", None):
        run = correlate_twotime(frames, Partition(dq, sq, mask), CorrelateSpec(dq=bins),
                                options=TwotimeOptions(chunk_size=10, with_scattering=True,
                                                       backend=be))
        acc = ScatteringAccumulator(select_pixels(dq, sq, mask), n, backend=be, compiled=False)
        for a in range(0, n, 10):
            flat = frames[a : a + 10].reshape(-1, dq.size)
            acc.add(flat, flat[:, acc.pixels.pixel_index].astype(np.float64))
        got = run.scattering
        assert got.count == n
        np.testing.assert_allclose(got.mean_image(), acc.mean_image(), rtol=1e-14)
        np.testing.assert_allclose(got.saxs_1d(), acc.saxs_1d(), rtol=1e-14)
        np.testing.assert_allclose(got.saxs_1d_segments(4), acc.saxs_1d_segments(4), rtol=1e-14)
        np.testing.assert_allclose(got.intensity_vs_time(), acc.intensity_vs_time(), rtol=1e-14)


@pytest.mark.parametrize("smooth", ["sqmap", "dqmap"])
def test_cpu_paths_equal_the_reference(smooth, rng, monkeypatch):
    # a bin whose rows are held whole (factors from the reading pass's static-bin sums),
    # and one wider than its map with no cache (tiles normalised again per block); an
    # all-zero frame and an all-zero static bin in some frames
    import xpcsviewer.compute.twotime.correlator as tt

    dq, sq = _partition(6, 40)
    dq[:, 4:] = 2  # bin 1: 24 pixels, bin 2: 216 pixels
    sq[:, 4:] = 5 + (np.arange(6 * 36).reshape(6, 36) % 3)
    n = 30
    frames = rng.poisson(1.5, (n, *dq.shape)).astype(np.uint16)
    frames[4] = 0
    frames[7:9][:, sq == 6] = 0
    monkeypatch.setattr(tt, "CACHE_BYTES", 0)
    res = correlate_twotime(frames, Partition(dq, sq), CorrelateSpec(smooth=smooth),
                            options=TwotimeOptions(block_rows=16, chunk_size=7,
                                                   backend=get_backend("numpy")))
    flat = frames.reshape(n, -1).astype(np.float64)
    for i, b in enumerate(res.processed_bins):
        pix = np.flatnonzero(dq.ravel() == b)
        y = flat[:, pix].copy()
        groups = sq.ravel()[pix] if smooth == "sqmap" else np.zeros(pix.size)
        for g in np.unique(groups):
            m = groups == g
            mean = y[:, m].mean(axis=1, keepdims=True)
            y[:, m] /= np.where(mean > 0, mean, 1.0)
        den = np.outer(y.sum(axis=1), y.sum(axis=1))
        ref = pix.size * (y @ y.T) / np.where(den > 0, den, 1.0)
        np.testing.assert_allclose(res.c2[i], ref, rtol=1e-12, atol=1e-15)
        assert not res.c2[i][4].any()
        np.testing.assert_allclose(res.g2_full[:, i], c2_diagonal_mean(ref), rtol=1e-12)


def test_xla_engine_matches_and_compiles_per_width_not_per_frames(rng):
    """The XLA two-time engine (JAX on the CPU device) gives the CPU engine's maps, sends
    each bin's frames once, and its programs do not depend on the frame count."""
    import jax

    from xpcsviewer.backends import get_transfer_stats, reset_transfer_stats
    from xpcsviewer.backends.jax_backend import compile_counts
    from xpcsviewer.compute.twotime import _xla as _twotime_xla

    dq = np.ones((32, 32), int)
    dq[:, 16:] = 2  # two bins of 512 pixels: no pixel padding
    sq = (np.arange(32 * 32).reshape(32, 32) % 4) + 1 + 4 * (dq - 1)
    cpu = jax.devices("cpu")[0]
    lowered = []
    for n in (48, 96):  # whole tiles of 16 frames: no frame padding
        _twotime_xla._PROGRAMS.clear()
        fr = rng.poisson(2.0, (n, *dq.shape)).astype(np.uint16)
        ref = correlate_twotime(fr, Partition(dq, sq),
                                options=TwotimeOptions(backend=get_backend("numpy")))
        before = compile_counts()["lowered"]
        reset_transfer_stats()
        got = correlate_twotime(fr, Partition(dq, sq),
                                options=TwotimeOptions(backend=get_backend("jax"), block_rows=16),
                                device=cpu, engine="backend")
        lowered.append(compile_counts()["lowered"] - before)
        for a, b in zip(got.c2, ref.c2, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        # frames sent once, as stored (uint16), plus the group tables
        assert fr.nbytes <= get_transfer_stats().host_to_device_bytes <= 1.05 * fr.nbytes
    assert lowered[0] == lowered[1] <= 2 * len(got.processed_bins)


def test_small_pages_arrays_are_fresh_zero_and_writable():
    from xpcsviewer.compute.twotime.correlator import SMALL_PAGES_BYTES, _small_pages

    big = _small_pages((SMALL_PAGES_BYTES // 4 + 3,), np.float32)
    small = _small_pages((5, 2), np.uint16)
    for a, dt in ((big, np.float32), (small, np.uint16)):
        assert a.dtype == dt and a.flags.writeable and a.flags.c_contiguous
        assert not a.any()
        a.flat[-1] = 7
        assert a.flat[-1] == 7
    assert big.shape == (SMALL_PAGES_BYTES // 4 + 3,) and small.shape == (5, 2)
