""".npy frames are read by file reads (not left mapped), with stride, avg and reuse."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.io.raw import RawFrames


@pytest.mark.parametrize(("begin", "end", "stride", "avg"),
                         [(0, -1, 1, 1), (3, 40, 3, 1), (1, 37, 2, 3)])
def test_npy_reads_equal_the_array(tmp_path, rng, begin, end, stride, avg):
    frames = rng.integers(0, 500, (41, 5, 7)).astype(np.uint16)
    path = tmp_path / "raw.npy"
    np.save(path, frames)
    sel = frames[begin : None if end < 0 else end : stride]
    n = len(sel) // avg
    ref = sel[: n * avg].reshape(n, avg, 5, 7).mean(axis=1) if avg > 1 else sel
    with RawFrames(path, begin, end, stride, avg) as raw:
        assert raw.n_frames == n
        got = np.concatenate([c.copy() for c in raw.iter_chunks(4, reuse=True)])
        np.testing.assert_array_equal(got, ref)
        np.testing.assert_array_equal(np.concatenate(list(raw.iter_chunks(5))), ref)
        np.testing.assert_array_equal(raw.read(2, 6), ref[2:6])
