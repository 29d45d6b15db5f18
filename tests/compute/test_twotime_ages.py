"""The multi-tau two-time correlator against the full two-time map (brute force)."""

import h5py
import numpy as np
import pytest

from xpcsviewer.compute.ages.correlator import (
    age_lag_bytes,
    correlate_twotime_ages,
    correlate_twotime_ages_events,
    level_plan,
)
from xpcsviewer.compute.inputs import FrameStream, Partition
from xpcsviewer.compute.options import AgesOptions
from xpcsviewer.compute.spec import CorrelateSpec
from xpcsviewer.compute.twotime.correlator import correlate_twotime


def _partition(h=16, w=16):
    yy, xx = np.mgrid[:h, :w]
    r = np.hypot(yy - (h - 1) / 2, xx - (w - 1) / 2)
    dq = np.clip((r / 3).astype(int) + 1, 1, 4)
    sq = np.clip((r / 1.5).astype(int) + 1, 1, 8)
    return dq, sq


def _frames(n, h=16, w=16, seed=0, lam=3.0):
    """Poisson counts with a slowly changing speckle (so that C has structure)."""
    rng = np.random.default_rng(seed)
    speckle = rng.exponential(1.0, (h, w))
    drift = np.linspace(0.0, 1.0, n)[:, None, None]
    mean = lam * ((1 - drift) * speckle + drift * rng.exponential(1.0, (h, w)))
    return rng.poisson(mean).astype(np.uint16)


def _block_mean_reference(c_full, width, t1, lag, n):
    """Mean of the full map over the width x width pairs of an entry, or NaN."""
    t2 = t1 + lag
    if t2 + width > (n // width) * width:
        return np.nan
    return c_full[t1 : t1 + width, t2 : t2 + width].mean()


def _check_against_full(amap, full, n):
    for lv in amap.levels:
        assert lv.c.dtype == np.float64
        for bi in range(len(amap.bins)):
            ref = np.array([[_block_mean_reference(full.c2[bi], lv.width, int(t), int(k), n)
                             for k in lv.lag] for t in lv.t1])
            inside = np.isfinite(ref)
            np.testing.assert_array_equal(np.isfinite(lv.c[bi]), inside)
            np.testing.assert_allclose(lv.c[bi][inside], ref[inside], rtol=1e-12, atol=0)
            np.testing.assert_array_equal(lv.weight, np.where(inside, lv.width**2, 0))


@pytest.mark.parametrize("engine", ["blas", "numba"])
@pytest.mark.parametrize(("n", "m", "smooth", "chunk", "batch"), [
    (64, 4, "sqmap", 64, 32),
    (200, 4, "sqmap", 33, 7),
    (256, 8, "dqmap", 100, 32),
    (129, 2, "sqmap", 17, 1),
])
def test_every_level_is_the_mean_of_the_full_maps_pairs(n, m, smooth, chunk, batch, engine):
    dq, sq = _partition()
    frames = _frames(n, seed=n)
    full = correlate_twotime(frames, Partition(dq, sq), CorrelateSpec(smooth=smooth))
    amap = correlate_twotime_ages(frames, Partition(dq, sq),
                                  CorrelateSpec(smooth=smooth, ages_points=m),
                                  options=AgesOptions(chunk_size=chunk, batch=batch,
                                                      frame_time=0.01),
                                  engine=engine)
    assert amap.config["engine"] == engine
    assert [lv.width for lv in amap.levels] == [2**i for i in range(len(amap.levels))]
    assert len(amap.levels) >= 3
    _check_against_full(amap, full, n)
    # level 0 is the full map itself, lags 0 .. 2m-1
    np.testing.assert_array_equal(amap.levels[0].lag, np.arange(2 * m))
    for lv in amap.levels[1:]:
        np.testing.assert_array_equal(lv.lag, lv.width * np.arange(m, 2 * m))
    assert amap.frame_time == 0.01 and amap.n_frames == n
    np.testing.assert_array_equal(amap.bins, full.processed_bins)


def test_mask_bins_and_a_chunk_iterable():
    dq, sq = _partition()
    n = 96
    frames = _frames(n, seed=5)
    mask = np.ones(dq.shape, dtype=np.int8)
    mask[:3, :] = 0
    full = correlate_twotime(frames, Partition(dq, sq, mask), CorrelateSpec(dq="2,4"))
    chunks = (frames[a : a + 10] for a in range(0, n, 10))
    amap = correlate_twotime_ages(FrameStream(lambda: chunks, n), Partition(dq, sq, mask),
                                  CorrelateSpec(dq="2,4", ages_points=4))
    assert amap.bins.tolist() == [2, 4]
    _check_against_full(amap, full, n)


@pytest.mark.parametrize("dtype", ["<f4", ">u2", "<f2"])
def test_float_frames_and_all_zero_frames(dtype):
    dq, sq = _partition()
    frames = (_frames(80, seed=2) * 0.5).astype(dtype)
    frames[10] = 0  # the full map's rule: zero sums give zero entries
    full = correlate_twotime(frames.astype(np.float64), Partition(dq, sq))
    amap = correlate_twotime_ages(frames, Partition(dq, sq), CorrelateSpec(ages_points=4),
                                  engine="numba")
    _check_against_full(amap, full, 80)
    assert amap.levels[0].c[0, 10, 0] == 0.0


def test_size_grows_as_n_log_n():
    # about 3 m N entries per bin, never N²
    for n in (10**3, 10**5, 10**6):
        cells = sum(nt * nl for _w, _k, nl, nt in level_plan(n, 8))
        assert 2 * 8 * n <= cells <= 3 * 8 * n
        assert len(level_plan(n, 8)) == int(np.ceil(np.log2(n / 8)))  # while N / 2**l > m
    assert age_lag_bytes(10**5, 8, 10) < 300e6


@pytest.mark.parametrize("engine", ["blas", "numba"])
def test_negative_or_nan_counts_are_refused(engine):
    dq, sq = _partition()
    frames = _frames(40).astype(np.float32)
    frames[3, 8, 8] = -1
    with pytest.raises(ValueError, match="non-negative"):
        correlate_twotime_ages(frames, Partition(dq, sq), engine=engine)
    frames[3, 8, 8] = np.nan
    with pytest.raises(ValueError, match="non-negative"):
        correlate_twotime_ages(frames, Partition(dq, sq), engine=engine)


def test_bad_input_is_refused():
    dq, sq = _partition()
    frames = _frames(40).astype(np.int32)
    frames[3, 8, 8] = -1
    with pytest.raises(ValueError, match="non-negative"):
        correlate_twotime_ages(frames, Partition(dq, sq))
    with pytest.raises(ValueError, match="expected 50 frames"):
        correlate_twotime_ages(FrameStream(lambda: iter([frames[:40].clip(0)]), 50),
                               Partition(dq, sq))
    with pytest.raises(ValueError, match="more frames"):
        correlate_twotime_ages(FrameStream(lambda: iter([frames.clip(0)]), 30), Partition(dq, sq))
    with pytest.raises(ValueError, match="points_per_level"):
        correlate_twotime_ages(frames.clip(0), Partition(dq, sq), CorrelateSpec(ages_points=0))
    original = frames.copy()
    correlate_twotime_ages(frames.clip(0), Partition(dq, sq))
    np.testing.assert_array_equal(frames, original)


class _Block:
    def __init__(self, start, stop, frame, pixel, value):
        self.start, self.stop, self.frame, self.pixel, self.value = start, stop, frame, pixel, value


def _event_blocks(frames, per_block):
    """Hits of dense frames, a pixel's count split in two hits where it is >= 2."""
    n, _h, w = frames.shape
    for a in range(0, n, per_block):
        b = min(n, a + per_block)
        f, r, c = np.nonzero(frames[a:b])
        v = frames[a:b][f, r, c].astype(np.int64)
        half = v // 2
        split = half > 0
        fr = np.concatenate([f, f[split]]) + a
        px = np.concatenate([r * w + c, (r * w + c)[split]])
        val = np.concatenate([v - half * split, half[split]])
        o = np.argsort(fr, kind="stable")
        yield _Block(a, b, fr[o], px[o], val[o].astype(np.uint16))


def test_photon_hits_give_the_dense_result():
    dq, sq = _partition()
    n = 150
    frames = _frames(n, seed=9, lam=0.2)  # sparse: most pixels empty
    dense = correlate_twotime_ages(frames, Partition(dq, sq), CorrelateSpec(ages_points=4),
                                   engine="blas")
    hits = correlate_twotime_ages_events(FrameStream(lambda: _event_blocks(frames, 37), n),
                                         Partition(dq, sq), CorrelateSpec(ages_points=4),
                                         options=AgesOptions(chunk_size=16), engine="numba")
    for a, b in zip(dense.levels, hits.levels, strict=True):
        np.testing.assert_allclose(b.c, a.c, rtol=1e-12, equal_nan=True)


def test_a_sparse_demo_source(tmp_path):
    """An ESRF CSR file read as the sparse readers give it, against the full map."""
    from xpcsviewer.io.raw import open_raw_source
    from xpcsviewer.synthetic.sparse_files import write_esrf_csr

    dq, sq = _partition()
    n = 128
    frames = _frames(n, seed=11, lam=0.3)
    f, r, c = np.nonzero(frames)
    path = write_esrf_csr(tmp_path / "sparse.h5", f, r * 16 + c, frames[f, r, c], n_frames=n,
                          shape=(16, 16))[0]
    with open_raw_source(path, shape=(16, 16)) as src:
        assert src.sparse
        amap = correlate_twotime_ages_events(FrameStream(lambda: src.iter_events(max_events=500),
                                                         src.n_frames),
                                             Partition(dq, sq), CorrelateSpec(ages_points=4))
    full = correlate_twotime(frames, Partition(dq, sq))
    _check_against_full(amap, full, n)


def test_write_and_read_back(tmp_path):
    from xpcsviewer.io.results.age_lag import read_age_lag, write_age_lag_group

    dq, sq = _partition()
    amap = correlate_twotime_ages(_frames(100, seed=4), Partition(dq, sq),
                                  CorrelateSpec(ages_points=4),
                                  options=AgesOptions(frame_time=2e-3))
    path = tmp_path / "m.h5"
    with h5py.File(path, "w") as fh:
        write_age_lag_group(fh.require_group("xpcs/twotime"), amap)
    back = read_age_lag(path)
    assert back.n_frames == 100 and back.frame_time == 2e-3
    assert back.config == amap.config
    np.testing.assert_array_equal(back.bins, amap.bins)
    assert len(back.levels) == len(amap.levels)
    for a, b in zip(amap.levels, back.levels, strict=True):
        assert a.width == b.width
        np.testing.assert_array_equal(b.t1, a.t1)
        np.testing.assert_array_equal(b.lag, a.lag)
        np.testing.assert_array_equal(b.weight, a.weight)
        np.testing.assert_allclose(b.c, a.c, rtol=1e-7, equal_nan=True)  # stored float32


def test_reading_chosen_bins(tmp_path):
    from xpcsviewer.io.errors import XpcsFileError
    from xpcsviewer.io.results.age_lag import read_age_lag, write_age_lag_group

    dq, sq = _partition()
    amap = correlate_twotime_ages(_frames(100, seed=6), Partition(dq, sq),
                                  CorrelateSpec(ages_points=4))
    path = tmp_path / "m.h5"
    with h5py.File(path, "w") as fh:
        write_age_lag_group(fh.require_group("xpcs/twotime"), amap)
    part = read_age_lag(path, bins=[4, 2])
    assert part.bins.tolist() == [4, 2]
    for a, b in zip(amap.levels, part.levels, strict=True):
        np.testing.assert_allclose(b.c, a.c[[3, 1]], rtol=1e-7, equal_nan=True)
    with pytest.raises(XpcsFileError, match=r"bins \[7\]"):
        read_age_lag(path, bins=[1, 7])


def test_reading_a_damaged_map_names_the_dataset(tmp_path):
    from xpcsviewer.io.errors import XpcsFileError
    from xpcsviewer.io.results.age_lag import read_age_lag, write_age_lag_group

    dq, sq = _partition()
    amap = correlate_twotime_ages(_frames(64), Partition(dq, sq), CorrelateSpec(ages_points=4))
    path = tmp_path / "m.h5"
    with h5py.File(path, "w") as fh:
        g = write_age_lag_group(fh.require_group("xpcs/twotime"), amap)
        del g["level_01/c"]
        g["level_01"].create_dataset("c", data=np.zeros((1, 2, 3)))
    with pytest.raises(XpcsFileError, match="level_01/c"):
        read_age_lag(path)
    with h5py.File(tmp_path / "none.h5", "w") as fh:
        fh.create_group("xpcs")
    with pytest.raises(XpcsFileError, match="age_lag"):
        read_age_lag(tmp_path / "none.h5")


@pytest.mark.parametrize("engine", ["blas", "numba"])
def test_memory_is_bounded_by_the_map_not_n_squared(engine):
    import tracemalloc

    dq, sq = _partition()
    n, chunk = 8192, 256
    rng = np.random.default_rng(1)

    def chunks():
        for _ in range(n // chunk):
            yield rng.poisson(2.0, (chunk, 16, 16)).astype(np.uint16)

    # numba's import and compilation are not the correlator's memory
    correlate_twotime_ages(_frames(64), Partition(dq, sq), engine=engine)
    tracemalloc.start()
    amap = correlate_twotime_ages(FrameStream(lambda: chunks(), n), Partition(dq, sq),
                                  CorrelateSpec(ages_points=8), engine=engine)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    held = sum(lv.c.nbytes + lv.weight.nbytes for lv in amap.levels)
    assert held < 8 * n * n / 50  # one float64 full map is 537 MB
    assert peak < held + (8 << 20), (peak, held)  # + chunks and level buffers
