"""Two-time from photon hits: equal to the dense correlator on the frames the hits make."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.compute.inputs import FrameStream, Partition
from xpcsviewer.compute.multitau._cpu import available
from xpcsviewer.compute.options import TwotimeOptions
from xpcsviewer.compute.spec import CorrelateSpec
from xpcsviewer.compute.twotime import photons as twotime_sparse
from xpcsviewer.compute.twotime.correlator import correlate_twotime
from xpcsviewer.compute.twotime.photons import (
    correlate_twotime_events,
    estimate_pair_count,
    twotime_pair_count,
)
from xpcsviewer.model.events import EventBlock

ENGINES = [
    "numpy",
    pytest.param("numba", marks=pytest.mark.skipif(not available(), reason="numba missing")),
]
H, W = 24, 32


def _qmap():
    """4 dynamic rings, 3 static sub-rings in each, a masked patch, pixels outside."""
    yy, xx = np.mgrid[:H, :W]
    r = np.hypot(yy - 11.5, xx - 3.0)
    ring = (r / 6.0).astype(int)  # 0..5
    sub = ((r / 2.0).astype(int) % 3) + 1
    dq = np.where(ring < 4, ring + 1, 0)
    sq = np.where(dq > 0, (dq - 1) * 3 + sub, 0)
    mask = np.ones((H, W), bool)
    mask[2:7, 10:16] = False
    return dq, sq, mask


def _movie(rng, n, occ, *, dq=None):
    """(n, H, W) uint16 counts 1-4 at occupancy ``occ``; bin 1 silent in frames 10-29,
    one pixel of bin 2 hit in every frame."""
    hit = rng.random((n, H, W)) < occ
    mov = (hit * rng.integers(1, 5, (n, H, W))).astype(np.uint16)
    if dq is not None:
        mov[10:30][:, dq == 1] = 0
        py, px = np.argwhere(dq == 2)[0]
        mov[:, py, px] = rng.integers(1, 5, n)
    return mov


def _blocks(mov, k, rng=None, split=False):
    """EventBlocks of k frames; ``split``: every hit of v >= 2 becomes two hits (1, v-1)
    and each block's hits are shuffled within their frame."""
    n = mov.shape[0]
    flat = mov.reshape(n, -1)
    out = []
    for a in range(0, n, k):
        sub = flat[a : a + k]
        f, p = np.nonzero(sub)
        v = sub[f, p]
        if split:
            two = v >= 2
            f = np.concatenate([f, f[two]])
            p = np.concatenate([p, p[two]])
            v = np.concatenate([np.where(two, 1, v), v[two] - 1]).astype(sub.dtype)
            o = np.lexsort((rng.random(f.size), f))  # frames in order, pixels shuffled
            f, p, v = f[o], p[o], v[o]
        out.append(EventBlock(a, min(n, a + k), f.astype(np.int64) + a, p.astype(np.int64), v))
    return out


def _assert_same(s, d, rtol=1e-12):
    assert s.processed_bins.tolist() == d.processed_bins.tolist()
    assert s.n_frames == d.n_frames
    assert len(s.c2) == len(d.c2)
    for a, b in zip(s.c2, d.c2, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        if a.dtype == np.float32:
            np.testing.assert_allclose(a, b, rtol=3e-7, atol=0)
            assert not np.tril(a, -1).any()
        else:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=0)
            np.testing.assert_array_equal(a, a.T)
    np.testing.assert_allclose(s.g2_full, d.g2_full, rtol=rtol, atol=0)
    np.testing.assert_allclose(s.g2_segments, d.g2_segments, rtol=rtol, atol=0)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("smooth", ["sqmap", "dqmap"])
@pytest.mark.parametrize(("occ", "n", "k"), [(0.005, 800, 97), (0.05, 500, 64), (0.4, 300, 41)])
def test_matches_dense(occ, n, k, smooth, engine, rng):
    dq, sq, mask = _qmap()
    mov = _movie(rng, n, occ, dq=dq)
    d = correlate_twotime(mov, Partition(dq, sq, mask), CorrelateSpec(smooth=smooth))
    s = correlate_twotime_events(FrameStream(lambda: _blocks(mov, k), n), Partition(dq, sq, mask),
                                 CorrelateSpec(smooth=smooth), engine=engine)
    assert s.config == {"smooth": smooth, "backend": "numpy", "path": "sparse"}
    assert s.processed_bins.tolist() == [1, 2, 3, 4]
    _assert_same(s, d)
    # bin 1 is silent in frames 10-29: its rows and columns there are zero
    assert not s.c2[0][10:30].any() and not s.c2[0][:, 10:30].any()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("bins", "smooth"), [("2,4", "sqmap"), ([1, 3], "dqmap"), ("3", "sqmap")])
def test_upper32_and_bin_subsets(bins, smooth, engine, rng):
    dq, sq, mask = _qmap()
    mov = _movie(rng, 350, 0.08, dq=dq)
    spec, opts = CorrelateSpec(dq=bins, smooth=smooth), TwotimeOptions(c2_format="upper32")
    d = correlate_twotime(mov, Partition(dq, sq, mask), spec, options=opts)
    s = correlate_twotime_events(FrameStream(lambda: _blocks(mov, 50), 350),
                                 Partition(dq, sq, mask), spec, options=opts, engine=engine)
    _assert_same(s, d)
    full = correlate_twotime_events(FrameStream(lambda: _blocks(mov, 50), 350),
                                    Partition(dq, sq, mask), CorrelateSpec(dq=bins, smooth=smooth),
                                    engine=engine)
    for u, f in zip(s.c2, full.c2, strict=True):
        np.testing.assert_array_equal(u, np.triu(f).astype(np.float32))


@pytest.mark.parametrize("engine", ENGINES)
def test_scattering_matches_dense_accumulator(engine, rng):
    dq, sq, mask = _qmap()
    mov = _movie(rng, 400, 0.05, dq=dq)
    d = correlate_twotime(mov, Partition(dq, sq, mask), CorrelateSpec(dq="1,3"),
                          options=TwotimeOptions(with_scattering=True))
    s = correlate_twotime_events(FrameStream(lambda: _blocks(mov, 33), 400),
                                 Partition(dq, sq, mask), CorrelateSpec(dq="1,3"),
                                 options=TwotimeOptions(with_scattering=True), engine=engine)
    _assert_same(s.twotime, d.twotime)
    a, b = s.scattering, d.scattering
    assert a.count == b.count == 400
    np.testing.assert_allclose(a.mean_image(), b.mean_image(), rtol=1e-12)
    np.testing.assert_allclose(a.saxs_1d(), b.saxs_1d(), rtol=1e-12)
    np.testing.assert_allclose(a.saxs_1d_segments(10), b.saxs_1d_segments(10), rtol=1e-12)
    np.testing.assert_allclose(a.intensity_vs_time(), b.intensity_vs_time(), rtol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_duplicate_hits_and_unsorted_pixels_add_up(engine, rng):
    dq, sq, mask = _qmap()
    mov = _movie(rng, 300, 0.1, dq=dq)
    mov[:, dq == 4] = 0  # a selected bin without a single hit: C = 0
    d = correlate_twotime(mov, Partition(dq, sq, mask))
    blocks = _blocks(mov, 45, rng, split=True)
    assert sum(b.n_events for b in blocks) > np.count_nonzero(mov)
    s = correlate_twotime_events(FrameStream(lambda: blocks, 300), Partition(dq, sq, mask),
                                 engine=engine)
    _assert_same(s, d)
    assert not s.c2[3].any() and not s.g2_full[:, 3].any()
    # hits of a block in any order (not frame-sorted) give the same maps
    shuffled = []
    for b in blocks:
        o = rng.permutation(b.n_events)
        shuffled.append(EventBlock(b.start, b.stop, b.frame[o], b.pixel[o], b.value[o]))
    s2 = correlate_twotime_events(FrameStream(lambda: shuffled, 300), Partition(dq, sq, mask),
                                  engine=engine)
    _assert_same(s2, d)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("smooth", ["sqmap", "dqmap"])
def test_float_values(smooth, engine, rng, monkeypatch):
    monkeypatch.setattr(twotime_sparse, "_NUMPY_CHUNK", 997)  # NumPy version: many chunks
    dq, sq, mask = _qmap()
    # means of 4 frames: multiples of 1/4, exact in the dense path's float32 store too
    mov = _movie(rng, 320, 0.1, dq=dq).astype(np.float64) / 4.0
    d = correlate_twotime(mov, Partition(dq, sq, mask), CorrelateSpec(smooth=smooth))
    s = correlate_twotime_events(FrameStream(lambda: _blocks(mov, 70), 320),
                                 Partition(dq, sq, mask), CorrelateSpec(smooth=smooth),
                                 options=TwotimeOptions(with_scattering=True), engine=engine)
    _assert_same(s.twotime, d)


@pytest.mark.parametrize("engine", ENGINES)
def test_constant_and_poisson_intensity(engine, rng):
    dq, sq, mask = _qmap()
    n = 200
    const = np.full((n, H, W), 3, dtype=np.uint8)
    s = correlate_twotime_events(FrameStream(lambda: _blocks(const, 64), n),
                                 Partition(dq, sq, mask), engine=engine)
    for c in s.c2:
        np.testing.assert_allclose(c, 1.0, rtol=1e-13)
    np.testing.assert_allclose(s.g2_full, 1.0, rtol=1e-13)
    np.testing.assert_allclose(s.g2_segments, 1.0, rtol=1e-13)
    # independent Poisson frames of constant mean: E[C(t1 != t2)] = 1, the diagonal
    # 1 + 1 / (mean counts per pixel) for dqmap smoothing
    mean = 0.5
    dq1 = (dq > 0).astype(int)
    pois = rng.poisson(mean, (n, H, W)).astype(np.uint8)
    s = correlate_twotime_events(FrameStream(lambda: _blocks(pois, 50), n), Partition(dq1, dq1),
                                 CorrelateSpec(smooth="dqmap"), engine=engine)
    c = s.c2[0]
    off = c[~np.eye(n, dtype=bool)]
    assert abs(off.mean() - 1.0) < 5e-3
    assert abs(np.diag(c).mean() - (1.0 + 1.0 / mean)) < 0.05


def test_progress_cancel_and_pair_count(rng):
    dq, sq, mask = _qmap()
    mov = _movie(rng, 120, 0.05, dq=dq)
    calls = []
    correlate_twotime_events(FrameStream(lambda: _blocks(mov, 25), 120), Partition(dq, sq, mask),
                             CorrelateSpec(dq="1-2"), progress=lambda d, t, m: calls.append((d, t)))
    assert calls[0] == (0, 122) and calls[-1] == (122, 122)
    assert [d for d, _ in calls] == [0, 25, 50, 75, 100, 120, 121, 122]

    class Stop(Exception):
        pass

    class Token:
        def raise_if_cancelled(self):
            raise Stop

    with pytest.raises(Stop):
        correlate_twotime_events(FrameStream(lambda: _blocks(mov, 25), 120),
                                 Partition(dq, sq, mask), cancel=Token())
    h = np.array([0, 1, 2, 5])
    assert twotime_pair_count(h) == 0 + 1 + 3 + 15
    _, p = np.nonzero(mov.reshape(120, -1))
    exact = twotime_pair_count(np.bincount(p, minlength=H * W))
    uniform = rng.random((120, H * W)) < 0.05
    fu, pu = np.nonzero(uniform)
    est = estimate_pair_count(fu.size, H * W, 120)
    assert est == pytest.approx(twotime_pair_count(np.bincount(pu, minlength=H * W)), rel=0.05)
    assert exact > 0


@pytest.mark.parametrize("n", [50, 500_000])
def test_normalisation_of_hits(n, rng):
    """Both ways of the group sums (dense bincount; sparse for many frames, few hits)."""
    gcount = np.array([4, 7, 5])
    n_pix = int(gcount.sum())
    h = 300
    t = np.sort(rng.integers(0, min(n, 40), h)).astype(np.int32) * (n // 50)
    gid = rng.integers(0, 3, h)
    v = rng.integers(1, 5, h).astype(np.float64)
    y = twotime_sparse._normalise(t, v, gid, gcount, n, n_pix)
    gsum: dict = {}
    for ti, gi, vi in zip(t, gid, v, strict=True):
        gsum[ti, gi] = gsum.get((ti, gi), 0.0) + vi
    z = np.array([vi * gcount[gi] / gsum[ti, gi] for ti, gi, vi in zip(t, gid, v, strict=True)])
    s: dict = {}
    for ti, zi in zip(t, z, strict=True):
        s[ti] = s.get(ti, 0.0) + zi
    ref = np.array([zi * np.sqrt(n_pix) / s[ti] for ti, zi in zip(t, z, strict=True)])
    np.testing.assert_allclose(y, ref, rtol=1e-13)


def test_without_numba(rng, monkeypatch):
    """No numba: "auto" takes the NumPy version, "numba" is refused."""
    monkeypatch.setattr(twotime_sparse, "available", lambda: False)
    monkeypatch.setattr(twotime_sparse, "COMPILED_MIN_PAIRS", 0)
    monkeypatch.setattr(twotime_sparse, "_kernels", None)  # any use would fail
    dq, sq, mask = _qmap()
    mov = _movie(rng, 150, 0.05, dq=dq)
    d = correlate_twotime(mov, Partition(dq, sq, mask))
    _assert_same(correlate_twotime_events(FrameStream(lambda: _blocks(mov, 40), 150),
                                          Partition(dq, sq, mask)),
                 d)
    with pytest.raises(ValueError, match="needs numba"):
        correlate_twotime_events(FrameStream(lambda: _blocks(mov, 40), 150),
                                 Partition(dq, sq, mask), engine="numba")


def test_bad_input(rng):
    dq, sq, _ = _qmap()
    mov = _movie(rng, 60, 0.05)
    blocks = _blocks(mov, 20)
    with pytest.raises(ValueError, match="expected 60 frames"):
        correlate_twotime_events(FrameStream(lambda: blocks[:2], 60), Partition(dq, sq))
    with pytest.raises(ValueError, match="in order"):
        correlate_twotime_events(FrameStream(lambda: [blocks[0], blocks[2]], 60), Partition(dq, sq))
    with pytest.raises(ValueError, match="more frames"):
        correlate_twotime_events(FrameStream(lambda: blocks, 50), Partition(dq, sq))
    b = blocks[0]
    neg = EventBlock(0, 20, b.frame, b.pixel, -b.value.astype(np.float64))
    with pytest.raises(ValueError, match="non-negative"):
        correlate_twotime_events(FrameStream(lambda: [neg, *blocks[1:]], 60), Partition(dq, sq))
    out = EventBlock(0, 20, b.frame + 20, b.pixel, b.value)
    with pytest.raises(ValueError, match="holds hits"):
        correlate_twotime_events(FrameStream(lambda: [out, *blocks[1:]], 60), Partition(dq, sq))
    with pytest.raises(ValueError, match="smooth"):
        correlate_twotime_events(FrameStream(lambda: blocks, 60), Partition(dq, sq),
                                 CorrelateSpec(smooth="x"))
    with pytest.raises(ValueError, match="c2_format"):
        correlate_twotime_events(FrameStream(lambda: blocks, 60), Partition(dq, sq),
                                 options=TwotimeOptions(c2_format="x"))
