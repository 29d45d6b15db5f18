"""Issue 48: a delay made of a single frame pair is no measurement: the correlator
gives it no g2 and the file keeps it NaN, never a zero that reads as g2 = 0 with error
0; bins without photons keep the standard files' 0 (flagged invalid)."""

from __future__ import annotations

import numpy as np

from xpcsviewer.compute.inputs import Partition
from xpcsviewer.compute.multitau.correlator import correlate_multitau, delay_list
from xpcsviewer.compute.pipeline import multitau_model


def test_single_pair_delay_is_nan_in_the_file_model(rng):
    n = 24
    frames = rng.poisson(2.0, size=(n, 6, 6)).astype(np.uint16)
    dq = np.ones((6, 6), np.int64)
    dq[:, 3:] = 2
    frames[:, :, 5] = 0  # one static bin of bin 2 has no photons at all
    res = correlate_multitau(frames, Partition(dq, dq))
    _d, lvl, x = delay_list(n)
    lone = ((n >> np.asarray(lvl)) - np.asarray(x)) < 2
    assert lone.any()
    mt = multitau_model(res, 1e-3, 1, 1, {})
    assert np.isnan(mt.g2[lone]).all() and np.isnan(mt.g2_err[lone]).all()
    assert not mt.valid[lone].any()
    assert np.isfinite(mt.g2[~lone]).all() and (mt.g2[~lone] > 0).all()


def test_a_bin_without_photons_keeps_the_zero_convention():
    from xpcsviewer.compute.multitau._shared import MultitauResult

    g2 = np.array([[1.2, np.nan], [1.1, np.nan], [np.nan, np.nan]])
    r = MultitauResult(delay_frames=np.array([1, 2, 3]), g2=g2, g2_err=g2 * 0.01,
                       g2_static=g2, n_frames=5)
    mt = multitau_model(r, 1.0, 1, 1, {})
    assert mt.g2[0, 1] == 0 and mt.g2_err[0, 1] == 0  # no photons: 0, invalid
    assert np.isnan(mt.g2[2]).all()  # no g2 in any bin: NaN, never 0
    np.testing.assert_array_equal(mt.valid, np.isfinite(g2))
