"""The resumable multi-tau correlator: a snapshot at n frames is the batch result of the
first n frames, whatever the chunks, the growth of its state and the engine."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.compute.inputs import Partition
from xpcsviewer.compute.multitau._cpu import available as numba_available
from xpcsviewer.compute.multitau.correlator import correlate_multitau
from xpcsviewer.compute.multitau.stream import StreamingMultitau
from xpcsviewer.compute.options import MultitauOptions
from xpcsviewer.compute.spec import CorrelateSpec

ENGINES = ["backend", pytest.param("compiled", marks=pytest.mark.skipif(
    not numba_available(), reason="numba is not installed"))]


def _partition(h=20, w=24):
    yy, xx = np.mgrid[:h, :w]
    r = np.hypot(yy - h / 2, xx - w / 2)
    dq = np.clip((r / 3).astype(int) + 1, 1, 4)
    sq = np.clip((r / 1.5).astype(int) + 1, 1, 8)
    out = r > 11.5
    dq[out] = 0
    sq[out] = 0
    mask = np.ones((h, w), bool)
    mask[3, 4] = False
    return dq, sq, mask


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("normalize", [False, True])
def test_snapshots_equal_batch_of_first_n(rng, engine, normalize):
    dq, sq, mask = _partition()
    frames = rng.poisson(1.5, (1300, *dq.shape)).astype(np.uint16)
    # expected_frames=4: the state starts tiny and must grow (levels and means) 8 times
    s = StreamingMultitau(Partition(dq, sq, mask, n_dynamic=4, n_static=8),
                          CorrelateSpec(normalize_frame=normalize),
                          options=MultitauOptions(chunk_size=50), engine=engine,
                          expected_frames=4)
    fed = 0
    for n in (2, 3, 9, 17, 64, 65, 401, 1024, 1300):
        s.feed(frames[fed:n])
        fed = n
        got = s.result()
        again = s.result()  # a snapshot leaves the state alone
        ref = correlate_multitau(frames[:n], Partition(dq, sq, mask, n_dynamic=4, n_static=8),
                                 CorrelateSpec(normalize_frame=normalize), engine=engine)
        np.testing.assert_array_equal(got.delay_frames, ref.delay_frames)
        np.testing.assert_array_equal(got.g2, again.g2)
        for a, b in ((got.g2, ref.g2), (got.g2_err, ref.g2_err), (got.g2_static, ref.g2_static)):
            assert np.array_equal(np.isnan(a), np.isnan(b))
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, equal_nan=True)
        assert got.n_frames == n
    assert s.corr.n_frames_expected >= 1300


def test_means_equal_batch(rng):
    dq, sq, mask = _partition()
    frames = rng.poisson(2.0, (700, *dq.shape)).astype(np.uint16)
    s = StreamingMultitau(Partition(dq, sq, mask, n_dynamic=4, n_static=8), engine="backend",
                          expected_frames=10)
    for a in range(0, 700, 33):
        s.feed(frames[a : a + 33])
    ref = correlate_multitau(frames, Partition(dq, sq, mask, n_dynamic=4, n_static=8),
                             options=MultitauOptions(with_scattering=True),
                             engine="backend").scattering
    np.testing.assert_allclose(s.scat.intensity_vs_time(), ref.intensity_vs_time(), rtol=1e-13)
    np.testing.assert_allclose(s.scat.saxs_1d(), ref.saxs_1d(), rtol=1e-13, equal_nan=True)
    np.testing.assert_allclose(s.scat.mean_image(), ref.mean_image(), rtol=1e-13)
    np.testing.assert_allclose(s.scat.saxs_1d_segments(16), ref.saxs_1d_segments(16),
                               rtol=1e-13, equal_nan=True)


def test_fewer_than_two_frames_and_bad_shapes():
    dq, sq, mask = _partition()
    s = StreamingMultitau(Partition(dq, sq, mask, n_dynamic=4, n_static=8))
    s.feed(np.ones((1, *dq.shape)))
    with pytest.raises(ValueError, match="at least 2"):
        s.result()
    with pytest.raises(ValueError, match="frames must be"):
        s.feed(np.ones((3, 5, 5)))
