"""Photon multi-tau: equal to the dense correlator (and its loop reference) on the same
frames, whatever the blocks, options and occupancy; streaming; per-pixel planes."""

from __future__ import annotations

import importlib.util
import itertools

import numpy as np
import pytest

from xpcsviewer.compute._binning import select_pixels
from xpcsviewer.compute.inputs import FrameStream, Partition
from xpcsviewer.compute.multitau.correlator import correlate_multitau
from xpcsviewer.compute.multitau.photons import (
    SparseMultitauCorrelator,
    StreamingSparseMultitau,
    correlate_multitau_events,
    level_hits_estimate,
)
from xpcsviewer.compute.options import MultitauOptions
from xpcsviewer.compute.pipeline import multitau_segments
from xpcsviewer.compute.spec import CorrelateSpec
from xpcsviewer.model.events import EventBlock
from xpcsviewer.progress import Cancelled, CancelToken

pytestmark = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                reason="the photon correlator needs numba")


def blocks_of(movie: np.ndarray, k: int, float_values: bool = False):
    """EventBlocks of k frames each, from a dense (N, H, W) movie."""
    n, h, w = movie.shape
    for a in range(0, n, k):
        sub = movie[a : a + k].reshape(-1, h * w)
        f, p = np.nonzero(sub)
        v = sub[f, p]
        yield EventBlock(a, min(n, a + k), (f + a).astype(np.int64), p.astype(np.int64),
                         v.astype(np.float64) if float_values else v)


def _partition(h: int, w: int):
    yy, xx = np.mgrid[:h, :w]
    r = np.hypot(yy - h / 2, xx - w / 2)
    dq = (r // 4).astype(int) + 1
    sq = (r // 2).astype(int) + 1  # static bins nest in dynamic ones
    mask = np.ones((h, w), bool)
    mask[:2, :3] = False
    return dq, sq, mask


def _movie(rng, n=700, h=14, w=18, occ=0.05, hot=True):
    m = ((rng.random((n, h, w)) < occ) * rng.integers(1, 5, (n, h, w))).astype(np.uint16)
    if hot:
        m[:, 5, 6] = rng.integers(1, 3, n)  # a pixel hit in every frame
    m[100:140] = 0  # frames without a photon
    return m


def _close(a, b, rtol=1e-12):
    assert a.shape == b.shape
    assert np.array_equal(np.isnan(a), np.isnan(b))
    ok = ~np.isnan(a)
    np.testing.assert_allclose(a[ok], b[ok], rtol=rtol, atol=1e-15)


@pytest.mark.parametrize("k", [3, 64, 10_000])
@pytest.mark.parametrize("occ", [0.003, 0.05, 0.6])
def test_equals_the_dense_correlator_for_any_blocks(rng, k, occ):
    movie = _movie(rng, occ=occ)
    dq, sq, mask = _partition(*movie.shape[1:])
    d = correlate_multitau(movie, Partition(dq, sq, mask), engine="backend")
    s = correlate_multitau_events(FrameStream(lambda: blocks_of(movie, k), movie.shape[0]),
                                  Partition(dq, sq, mask))
    np.testing.assert_array_equal(s.delay_frames, d.delay_frames)
    _close(s.g2, d.g2)
    _close(s.g2_err, d.g2_err, rtol=1e-9)
    _close(s.g2_static, d.g2_static)
    assert s.config["path"] == "sparse"


@pytest.mark.parametrize("dpl", [2, 3, 8])
def test_other_delays_per_level(rng, dpl):
    movie = _movie(rng, n=260, occ=0.1)
    dq, sq, mask = _partition(*movie.shape[1:])
    d = correlate_multitau(movie, Partition(dq, sq, mask),
                           options=MultitauOptions(delays_per_level=dpl), engine="backend")
    s = correlate_multitau_events(FrameStream(lambda: blocks_of(movie, 47), 260),
                                  Partition(dq, sq, mask),
                                  options=MultitauOptions(delays_per_level=dpl))
    _close(s.g2, d.g2)


def test_options_normalize_and_partials(rng):
    movie = _movie(rng, occ=0.08)
    dq, sq, mask = _partition(*movie.shape[1:])
    spec = CorrelateSpec(normalize_frame=True, num_partial_g2=4)
    d = correlate_multitau(movie, Partition(dq, sq, mask), spec, engine="backend")
    s = correlate_multitau_events(FrameStream(lambda: blocks_of(movie, 71), 700),
                                  Partition(dq, sq, mask), spec)
    _close(s.g2, d.g2, rtol=1e-10)
    np.testing.assert_array_equal(s.g2_partial_labels, d.g2_partial_labels)
    _close(s.g2_partial, d.g2_partial, rtol=1e-10)


def test_duplicate_hits_add_and_float_values(rng):
    """Event lists may hit a pixel twice in a frame; averaged frames carry floats."""
    movie = _movie(rng, n=300, occ=0.1).astype(np.float64) / 3.0
    dq, sq, mask = _partition(*movie.shape[1:])
    d = correlate_multitau(movie, Partition(dq, sq, mask), engine="backend")
    half = []
    for b in blocks_of(movie, 50):
        # split every value into two hits of the same pixel and frame
        half.append(EventBlock(b.start, b.stop, np.repeat(b.frame, 2),
                               np.repeat(b.pixel, 2), np.repeat(b.value / 2, 2)))
    s = correlate_multitau_events(FrameStream(lambda: iter(half), 300), Partition(dq, sq, mask))
    _close(s.g2, d.g2, rtol=1e-10)


def test_scattering_means_equal_the_dense_pass(rng):
    movie = _movie(rng, occ=0.07)
    dq, sq, mask = _partition(*movie.shape[1:])
    d = correlate_multitau(movie, Partition(dq, sq, mask),
                           options=MultitauOptions(with_scattering=True), engine="backend")
    s = correlate_multitau_events(FrameStream(lambda: blocks_of(movie, 90), 700),
                                  Partition(dq, sq, mask),
                                  options=MultitauOptions(with_scattering=True))
    a, b = s.scattering, d.scattering
    np.testing.assert_allclose(a.mean_image(), b.mean_image(), rtol=1e-12)
    _close(a.saxs_1d(), b.saxs_1d())
    k = multitau_segments(700)  # the per-segment sums the result file stores
    _close(a.saxs_1d_segments(k), b.saxs_1d_segments(k))
    with pytest.raises(ValueError, match="segments"):
        a.saxs_1d_segments(k + 1)
    np.testing.assert_allclose(a.intensity_vs_time(), b.intensity_vs_time(), rtol=1e-12)


def test_per_pixel_planes_equal_the_dense_ones(rng):
    movie = _movie(rng, n=400, occ=0.1)
    dq, sq, mask = _partition(*movie.shape[1:])
    dense, sparse = {}, {}
    correlate_multitau(movie, Partition(dq, sq, mask),
                       options=MultitauOptions(
                           pixel_sink=lambda k, p: dense.__setitem__(k, p.copy())),
                       engine="backend")
    correlate_multitau_events(FrameStream(lambda: blocks_of(movie, 33), 400),
                              Partition(dq, sq, mask),
                              options=MultitauOptions(
                                  pixel_sink=lambda k, p: sparse.__setitem__(k, p.copy())))
    assert sorted(dense) == sorted(sparse)
    for k in dense:
        np.testing.assert_allclose(sparse[k], dense[k], rtol=1e-6)


def test_streaming_snapshots_equal_batch_runs_on_the_prefix(rng):
    movie = _movie(rng, n=900, occ=0.05)
    dq, sq, mask = _partition(*movie.shape[1:])
    s = StreamingSparseMultitau(Partition(dq, sq, mask), expected_frames=8)  # grows many times
    for i, b in enumerate(blocks_of(movie, 37)):
        s.feed_events(b)
        if i % 6 == 2:
            d = correlate_multitau(movie[: s.n_frames], Partition(dq, sq, mask), engine="backend")
            r = s.result()
            np.testing.assert_array_equal(r.delay_frames, d.delay_frames)
            _close(r.g2, d.g2)
            np.testing.assert_allclose(s.scat.mean_image(), movie[: s.n_frames].mean(0),
                                       rtol=1e-12)


def test_poisson_photons_without_dynamics_give_g2_one(rng):
    """An independent physical check: uncorrelated photons have g2 = 1 at every delay."""
    n, h, w = 4000, 16, 16
    movie = rng.poisson(0.02, (n, h, w)).astype(np.uint8)
    dq = np.ones((h, w), int)
    sq = np.ones((h, w), int)
    s = correlate_multitau_events(FrameStream(lambda: blocks_of(movie, 500), n), Partition(dq, sq))
    ok = np.isfinite(s.g2[:, 0])
    # pairs per delay ~ P N occ^2 / 2^L: the spread shrinks as 1/sqrt(pairs)
    assert np.all(np.abs(s.g2[ok, 0] - 1) < 6 * s.g2_err[ok, 0] + 0.05)
    assert abs(np.average(s.g2[:8, 0]) - 1) < 0.05


def test_blocks_must_follow_each_other_and_cancel(rng):
    movie = _movie(rng, n=200)
    dq, sq, mask = _partition(*movie.shape[1:])
    blocks = list(blocks_of(movie, 50))
    with pytest.raises(ValueError, match="follow"):
        correlate_multitau_events(FrameStream(lambda: [blocks[0], blocks[2]], 200),
                                  Partition(dq, sq, mask))
    tok = CancelToken()
    tok.cancel()
    with pytest.raises(Cancelled):
        correlate_multitau_events(FrameStream(lambda: iter(blocks), 200), Partition(dq, sq, mask),
                                  cancel=tok)
    corr = SparseMultitauCorrelator(select_pixels(dq, sq, mask), 100)
    with pytest.raises(ValueError, match="more frames"):
        corr.process_events(150, blocks[0].frame, blocks[0].pixel, blocks[0].value)


def test_level_hits_estimate_bounds():
    # sparse: about one level's worth per level until coarse frames fill; dense: P N 2
    assert level_hits_estimate(1024, 100, 1.0) == pytest.approx(100 * sum(
        1024 >> k for k in range(10)), rel=1e-12)
    low = level_hits_estimate(1 << 16, 1000, 1e-4)
    assert (1 << 16) * 1000 * 1e-4 * 8 < low < (1 << 16) * 1000 * 1e-4 * 17


def _state(c):
    s = c._cpu
    return (s.win, s.last, s.sp, s.first, s.tot0, s.count)


@pytest.mark.parametrize("normalize", [False, True])
def test_walk_of_hit_and_waiting_pixels_equals_the_walk_of_every_pixel(rng, normalize):
    # a block carries only the pixels with hits and those whose newest hit at some level
    # waits for its pair; the state after every block must be the walk of every pixel's,
    # bit for bit, through blocks of 1..40 frames, empty blocks and level growth
    movie = _movie(rng, n=900, occ=0.01)
    dq, sq, mask = _partition(*movie.shape[1:])
    px = select_pixels(dq * mask, sq * mask)
    cuts = np.unique(np.concatenate([[0, 900], np.cumsum(rng.integers(1, 40, 80))]))
    cuts = cuts[cuts <= 900]
    runs = []
    for mode in ("all", "hits", "no_wait"):
        c = SparseMultitauCorrelator(px, 8, normalize_frame=normalize, growable=True)
        c._cpu.walk_all = mode == "all"
        runs.append((mode, c))
    diverged = False
    for a, b in itertools.pairwise(cuts):
        blk = next(blocks_of(movie[a:b], b - a))
        for mode, c in runs:
            if mode == "no_wait":
                c._cpu.pend[:] = 0  # the waiting frames forgotten: must go wrong
            c.process_events(b, blk.frame + a, blk.pixel, blk.value)
        ref = _state(runs[0][1])
        for x, y in zip(ref, _state(runs[1][1]), strict=True):
            np.testing.assert_array_equal(x, y, err_msg=f"after the block [{a}, {b})")
        diverged |= not all(np.array_equal(x, y)
                            for x, y in zip(ref, _state(runs[2][1]), strict=True))
    assert diverged, "no block needed a waiting pixel: the test cannot tell"
    full, hits = runs[0][1]._cpu.walked, runs[1][1]._cpu.walked
    assert hits < 0.5 * full, (hits, full)
    d = correlate_multitau(movie, Partition(dq, sq, mask), spec=CorrelateSpec(
        normalize_frame=normalize), engine="backend")
    delays, g2, err, g2s = runs[1][1].snapshot()
    np.testing.assert_array_equal(delays, d.delay_frames)
    _close(g2, d.g2)
    _close(err, d.g2_err, rtol=1e-9)
    _close(g2s, d.g2_static)
