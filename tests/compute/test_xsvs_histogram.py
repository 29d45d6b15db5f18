"""The XSVS pass (hits kernel) against the plain reference on whole frames, exactly."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.compute.xsvs.histogram import (
    XsvsAccumulator,
    default_windows,
    histograms_dense,
    split_chains,
)


def _frames(n=600, h=12, w=15, mean=0.4, seed=0, cap=None):
    rng = np.random.default_rng(seed)
    x = rng.poisson(rng.gamma(2.0, mean / 2.0, (n, h, w))).astype(np.int64)
    return np.minimum(x, cap) if cap else x


def _bins(h=12, w=15):
    return (np.arange(h * w).reshape(h, w) % 4).astype(np.int64)  # 0: in no bin


def _same(a, b):
    assert np.array_equal(a.hist, b.hist)
    assert np.array_equal(a.cens, b.cens)
    assert np.array_equal(a.photons, b.photons)
    np.testing.assert_allclose(a.moments, b.moments, rtol=1e-13)
    assert np.array_equal(a.n_pixels, b.n_pixels)
    assert np.array_equal(a.n_windows, b.n_windows)


@pytest.mark.parametrize("windows", [None, [1, 3, 4, 6, 12, 20], [2, 5, 7]])
@pytest.mark.parametrize("chunk", [1, 97, 600])
def test_dense_chunks_equal_reference(windows, chunk):
    x = _frames(cap=3)
    valid = np.random.default_rng(1).random((12, 15)) > 0.15
    w = default_windows(x.shape[0]) if windows is None else np.asarray(windows)
    ref = histograms_dense(x, _bins(), w, valid=valid, counter_cap=3, kmax=7)
    acc = XsvsAccumulator((12, 15), x.shape[0], _bins(), valid=valid, windows=w,
                          counter_cap=3, kmax=7)
    for a in range(0, x.shape[0], chunk):
        acc.add_frames(a, x[a:a + chunk])
    _same(acc.finish(), ref)
    # the overflow column is used (kmax 7 at 20 frames of ~0.4), censoring too
    assert ref.hist[..., -1].sum() + ref.cens[..., -1].sum() > 0
    assert ref.cens.sum() > 0


def test_event_hits_repeated_in_a_frame_add_up():
    """An event list gives a pixel several hits in one frame: the window counts the sum."""
    x = _frames(n=300, mean=0.8, seed=3)
    fr, r, c = np.nonzero(x)
    pix = r * 15 + c
    # split each pixel-frame value into unit hits, shuffled within each frame
    rep = np.repeat(np.arange(fr.size), x[fr, r, c])
    rng = np.random.default_rng(4)
    order = np.lexsort((rng.random(rep.size), fr[rep]))
    f_e, p_e = fr[rep][order], pix[rep][order]
    v_e = np.ones(f_e.size, dtype=np.uint16)
    w = np.array([1, 2, 4, 8, 16, 32])
    acc = XsvsAccumulator((12, 15), 300, _bins(), windows=w, kmax=40)
    for a in range(0, f_e.size, 1000):  # blocks that cut frames: order is what matters
        acc.add_hits(f_e[a:a + 1000], p_e[a:a + 1000], v_e[a:a + 1000])
    _same(acc.finish(), histograms_dense(x, _bins(), w, kmax=40))


def test_time_tags_far_apart():
    """Frames of a time-tag list are ticks: 10^12 of them, windows of many ticks."""
    n = 10**12
    frame = np.array([5, 6, 6, 10**6, 10**6 + 3, 5 * 10**11], dtype=np.int64)
    pixel = np.array([0, 0, 1, 0, 0, 1])
    value = np.ones(6, dtype=np.uint8)
    w = np.array([1, 4, 1 << 20, 1 << 39])
    acc = XsvsAccumulator((1, 2), n, np.array([[1, 1]]), windows=w, kmax=5)
    acc.add_hits(frame, pixel, value)
    out = acc.finish()
    h = out.hist[0]
    assert h[0, 1] == 6 and h[0, 2:].sum() == 0   # 1 tick: six singles
    assert h[1, 1] == 2 and h[1, 2] == 2          # 4 ticks: 5,6 and 10^6, 10^6+3 of pixel 0
    assert h[2, 4] == 1 and h[2, 1] == 2          # 2^20: pixel 0's four, pixel 1's apart
    assert h[3, 4] == 1 and h[3, 2] == 1          # 2^39, one whole window: 4 and 2
    assert out.n_windows[3] == n >> 39
    assert (out.hist[0].sum(axis=1) == 2 * out.n_windows).all()


def test_not_whole_counts_refused():
    acc = XsvsAccumulator((1, 2), 10, np.array([[1, 1]]), windows=[1, 2])
    acc.add_hits(np.array([0, 1]), np.array([0, 1]), np.array([1.0, 0.5]))
    with pytest.raises(ValueError, match="not whole numbers"):
        acc.finish()


def test_chains_and_defaults():
    assert [c.tolist() for c in split_chains(np.array([1, 2, 3, 4, 6, 12]))] == \
        [[0, 1, 3, 5], [2, 4]]
    assert default_windows(100).tolist() == [1, 2, 4, 8]
    assert default_windows(3).tolist() == [1]
    with pytest.raises(ValueError, match="ascending"):
        XsvsAccumulator((1, 1), 4, np.ones((1, 1)), windows=[2, 1])


def test_pixel_photons_and_mean_spread():
    from xpcsviewer.compute.xsvs.histogram import correct_spread, mean_spread

    x = _frames(n=50, cap=None)
    acc = XsvsAccumulator((12, 15), 50, _bins(), windows=[1, 2])
    acc.add_frames(0, x)
    out = acc.finish()
    np.testing.assert_array_equal(out.pixel_photons,
                                  x.reshape(50, -1).sum(axis=0)[out.pixels])
    # two static halves of one q-bin with means 1 and 3: s2 = var / mean^2 = 1 / 4
    bins = np.ones((2, 4), np.int64)
    static = np.array([[1, 1, 2, 2], [1, 1, 2, 2]])
    ph = np.array([1.0, 1, 3, 3, 1, 1, 3, 3]) * 10
    s2 = mean_spread(ph, np.arange(8), bins, static, 1)
    np.testing.assert_allclose(s2, [0.25])
    # no static partition: nothing to tell the speckle from I(q) with: no correction
    assert mean_spread(ph, np.arange(8), bins, None, 1).tolist() == [0.0]
    beta, err = correct_spread(np.array([0.5 + 0.25 * 1.5]), np.array([0.01]), s2)
    np.testing.assert_allclose(beta, [0.5])
    np.testing.assert_allclose(err, [0.008])
