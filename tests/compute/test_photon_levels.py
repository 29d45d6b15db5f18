"""The photon correlator's compact state (``_photon_levels.SparseLevels``): float32 only
where exact (else float64, also from the middle of a run on), levels grown later, only
the q-map's pixels held, frame numbers past 2^31; every result equal to the float64
run and to the dense correlator."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from xpcsviewer.compute.inputs import Partition
from xpcsviewer.compute.multitau.correlator import correlate_multitau
from xpcsviewer.compute.multitau.photons import SparseMultitauCorrelator

pytestmark = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                reason="the photon correlator needs numba")


def _partition(h, w):
    yy, xx = np.mgrid[:h, :w]
    r = np.hypot(yy - h / 2, xx - w / 2)
    return (r // 4).astype(int) + 1, (r // 2).astype(int) + 1, np.ones((h, w), bool)


def _movie(rng, n=400, h=10, w=12, occ=0.05, dtype=np.uint16):
    m = ((rng.random((n, h, w)) < occ) * rng.integers(1, 4, (n, h, w))).astype(dtype)
    m[:, 3, 4] = rng.integers(1, 3, n)  # a pixel hit in every frame
    return m


def _feed(movie, k, *, as_float=False, n_frames=None, growable=False, part=None,
          big=None):
    """A SparseMultitauCorrelator fed ``movie`` in blocks of k frames; ``big``:
    (frame, pixel, value) added to the movie's hits (a count float32 cannot hold)."""
    n, h, w = movie.shape
    dq, sq, mask = part if part is not None else _partition(h, w)
    c = SparseMultitauCorrelator(Partition(dq, sq, mask).pixels(), n_frames or n,
                                 growable=growable)
    flat = movie.reshape(n, h * w)
    for a in range(0, n, k):
        f, p = np.nonzero(flat[a:a + k])
        v = flat[a:a + k][f, p]
        if big is not None and a <= big[0] < a + k:
            v = v.astype(np.uint32)
            v[(f == big[0] - a) & (p == big[1])] = big[2]
        c.process_events(min(n, a + k), f + a, p, v.astype(np.float64) if as_float else v)
    return c


def _same(c32, c64):
    for a, b in zip(c32.result(), c64.result(), strict=True):
        np.testing.assert_array_equal(a, b)  # bit for bit: float32 held the same numbers
    for lvl in range(c64.n_levels):
        xs = c64._levels[lvl].xs
        for a, b in zip(c32._cpu.level_state(lvl, xs), c64._cpu.level_state(lvl, xs),
                        strict=True):
            np.testing.assert_array_equal(a, b)


def test_integer_counts_are_kept_in_float32_and_give_the_float64_result(rng):
    movie = _movie(rng)
    c32, c64 = _feed(movie, 37), _feed(movie, 37, as_float=True)
    assert c32._cpu.win.dtype == np.float32 and c32._cpu.sp.dtype == np.float32
    assert c64._cpu.win.dtype == np.float64 and c64._cpu.sp.dtype == np.float64
    assert c32._cpu.nbytes < 0.6 * c64._cpu.nbytes
    _same(c32, c64)


def test_a_count_too_big_for_float32_turns_the_state_float64_midway(rng):
    movie = _movie(rng, n=300)
    # a count of 2^22 at frame 200: 2^22 * 2^(levels - 1) passes 2^24, so the rule no
    # longer proves float32 exact (from that block on)
    big = (200, 3 * 12 + 4, 1 << 22)  # the pixel hit in every frame
    c = _feed(movie, 50, big=big)
    ref = _feed(movie, 50, big=big, as_float=True)
    assert c._cpu.vdtype == np.float64 and c._cpu.sdtype == np.float64
    _same(c, ref)
    # and the dense correlator on the same frames
    m2 = movie.astype(np.uint32)
    m2[200, 3, 4] = 1 << 22
    d = correlate_multitau(m2, Partition(*_partition(10, 12)), engine="backend")
    np.testing.assert_allclose(c.result()[0], d.g2, rtol=1e-12)


def test_sums_of_products_alone_turn_float64(rng):
    """Values stay exact in float32, but a pixel's total times the largest value passes
    2^24: the sums of products are kept in float64, the values in float32."""
    n = 4096
    movie = np.zeros((n, 4, 4), np.uint16)
    movie[:, 1, 1] = 200  # every frame: totals 8e5, times 200 * 2^11
    movie[::7, 2, 2] = 3
    c = _feed(movie, 1000)
    ref = _feed(movie, 1000, as_float=True)
    assert c._cpu.vdtype == np.float32 and c._cpu.sdtype == np.float64
    _same(c, ref)


def test_levels_added_while_growing_give_the_batch_result(rng):
    movie = _movie(rng, n=700, occ=0.1)
    g = _feed(movie, 29, n_frames=8, growable=True)
    b = _feed(movie, 700)
    assert g._cpu.n_levels >= b._cpu.n_levels
    ga, ea, sa = g.snapshot()[1:]
    gb, eb, sb = b.result()
    t = ga.shape[0]
    for x, y in ((ga, gb[:t]), (ea, eb[:t]), (sa, sb[:t])):
        np.testing.assert_array_equal(x, y)


def test_growing_levels_can_end_float32(rng):
    """More levels double the bound: a stream of counts of 1000 leaves float32 once
    2^(levels - 1) * 1000 reaches 2^24 (levels > 14)."""
    n = 1 << 15
    movie = np.zeros((n, 2, 3), np.uint16)
    movie[::5, 0, 1] = 1000
    c = _feed(movie, 4096, n_frames=16, growable=True)
    ref = _feed(movie, 4096, n_frames=16, growable=True, as_float=True)
    assert c._cpu.n_levels >= 15 and c._cpu.vdtype == np.float64
    _same(c, ref)


def test_only_the_q_maps_pixels_hold_state(rng):
    h, w = 40, 50
    movie = _movie(rng, n=200, h=h, w=w, occ=0.02)
    dq, sq, mask = _partition(h, w)
    mask[:] = False
    mask[10:14, 20:30] = True  # 40 of 2,000 pixels
    c = _feed(movie, 64, part=(dq, sq, mask))
    assert c._cpu.win.shape[0] == c._cpu.sp.shape[0] == 40
    d = correlate_multitau(movie, Partition(dq, sq, mask), engine="backend")
    g = c.result()[0]
    ok = ~np.isnan(d.g2)
    np.testing.assert_allclose(g[ok], d.g2[ok], rtol=1e-12)


def test_frames_past_2_to_the_31(rng):
    """Frame numbers of time-tag runs pass 2^31: the newest-hit frames become int64."""
    pixels = Partition(*_partition(2, 4)).pixels()
    t0 = (1 << 31) + 5
    c = SparseMultitauCorrelator(pixels, 1 << 20, growable=True)
    c.process_events(t0, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint8))
    assert c._cpu.last.dtype == np.int64
    f = np.array([t0, t0 + 1, t0 + 3], np.int64)
    p = np.full(3, 5, np.int64)
    c.process_events(t0 + 10, f, p, np.array([2, 3, 4], np.uint8))
    q = int(np.searchsorted(pixels.pixel_index, 5))
    # delays 1 and 2 of level 0: 2*3, 3*4 and nothing else (an independent count)
    sp = [c._cpu._sumprod(0, x)[q] for x in (1, 2, 3)]
    assert sp == [6.0, 12.0, 8.0]
    assert c._cpu.last[q, 0] == t0 + 3
