"""Raw-frame reader: HDF5 and .npy, frame selection, chunks, clear errors."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.raw import RawFrames


@pytest.fixture
def stack(rng):
    return rng.integers(0, 50, (23, 4, 5)).astype(np.uint16)


@pytest.fixture(params=["h5", "npy"])
def raw_path(request, tmp_path, stack):
    if request.param == "npy":
        p = tmp_path / "frames.npy"
        np.save(p, stack)
    else:
        p = tmp_path / "frames.h5"
        with h5py.File(p, "w") as f:
            f.create_dataset("/entry/data/data", data=stack, chunks=(4, 4, 5))
    return p


@pytest.mark.parametrize(
    "begin,end,stride,avg",
    [(0, -1, 1, 1), (2, 20, 3, 1), (1, -1, 2, 3), (5, 6, 1, 1), (0, 23, 1, 4)],
)
def test_selection_matches_numpy_slicing(raw_path, stack, begin, end, stride, avg):
    e = 23 if end < 0 else end
    sel = stack[begin:e:stride].astype(np.float64)
    n = sel.shape[0] // avg
    want = sel[: n * avg].reshape(n, avg, 4, 5).mean(axis=1)
    with RawFrames(raw_path, begin, end, stride, avg) as r:
        assert r.shape == (n, 4, 5)
        got = np.concatenate(list(r.iter_chunks(3)))
        assert all(c.shape[0] <= 3 for c in r.iter_chunks(3))
        if avg == 1:
            assert got.dtype == np.uint16
    np.testing.assert_array_equal(got, want)


def test_reader_leaves_file_unchanged(raw_path):
    before = raw_path.read_bytes()
    with RawFrames(raw_path) as r:
        list(r.iter_chunks(7))
    assert raw_path.read_bytes() == before


def test_errors_name_file_and_dataset(tmp_path):
    with pytest.raises(XpcsFileError, match="file not found"):
        RawFrames(tmp_path / "missing.h5")
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"not hdf5 at all")
    with pytest.raises(XpcsFileError, match="not an HDF5 file"):
        RawFrames(bad)
    nod = tmp_path / "nodata.h5"
    with h5py.File(nod, "w") as f:
        f["x"] = 1
    with pytest.raises(XpcsFileError, match="/entry/data/data: raw frames not found") as ei:
        RawFrames(nod)
    assert str(nod) in str(ei.value)
    flat = tmp_path / "flat.npy"
    np.save(flat, np.zeros((4, 5)))
    with pytest.raises(XpcsFileError, match=r"\(frames, rows, cols\)"):
        RawFrames(flat)
    ok = tmp_path / "ok.npy"
    np.save(ok, np.zeros((4, 2, 2)))
    with pytest.raises(XpcsFileError, match="leaves no frame"):
        RawFrames(ok, begin=3, avg=2)
    junk = tmp_path / "junk.npy"
    junk.write_bytes(b"\x93NUMPYgarbage")
    with pytest.raises(XpcsFileError, match=r"not a readable \.npy"):
        RawFrames(junk)
