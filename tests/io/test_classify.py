"""What a file is (issue 45): results, raw sources of every layout, q-maps, side files,
told from headers; a folder listed with each multi-file source once."""

from __future__ import annotations

import shutil
import time

import h5py
import numpy as np
import pytest

from xpcsviewer.io.classify import (
    classify_path,
    default_bin_time,
    list_sources,
    qmap_beside,
)
from xpcsviewer.io.raw import open_raw_source
from xpcsviewer.synthetic.raw_examples import write_raw_examples


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    d = tmp_path_factory.mktemp("raw_examples")
    return d, write_raw_examples(d)


@pytest.mark.parametrize("role,kind,layout", [
    ("result", "result", None), ("side", "side", None), ("qmap", "qmap", None),
    ("dense", "raw", "hdf5"), ("npy", "raw", "npy"), ("rigaku", "raw", "rigaku"),
    ("rigaku_3m", "raw", "rigaku-3m"), ("esrf", "raw", "esrf-csr"),
    ("id11", "raw", "id11-sparse"), ("timepix", "raw", "timepix"), ("text", "other", None),
])
def test_every_kind(examples, role, kind, layout):
    _, files = examples
    fk = classify_path(files[role])
    assert (fk.kind, fk.layout) == (kind, layout), fk
    assert fk.text and "\n" not in fk.text


@pytest.mark.parametrize("role", ["dense", "npy", "rigaku", "rigaku_3m", "esrf", "id11",
                                  "timepix"])
def test_counts_match_the_readers(examples, role):
    """Frames and hits from the headers equal what the readers count when opened."""
    _, files = examples
    fk = classify_path(files[role])
    with open_raw_source(files[role], shape=(32, 40), bin_time=fk.bin_time) as src:
        assert fk.frames == src.raw_frames
        if role in ("dense", "npy"):
            assert fk.events is None
        else:
            assert fk.events == src.raw_events
        assert fk.detector_shape in (None, tuple(src.frame_shape))
    assert classify_path(files[role]).files[0] == str(files[role])


def test_multi_file_sources_are_one(examples):
    d, files = examples
    fk = classify_path(files["rigaku_3m"])
    assert len(fk.files) == 6 and "6 module files" in fk.text
    # the 3M stem (which does not exist) and any block of a series stand for the set
    assert classify_path(d / "S02_rigaku3m.bin").layout == "rigaku-3m"
    mid = classify_path(d / "S03_esrf_sparse_frame_0_00001.h5")
    assert mid.frames == 30 and len(mid.files) == 3


def test_folder_listing(examples):
    d, files = examples
    got = {e.name: e for e in list_sources(d)}
    assert sorted(got) == [
        "A01_example_results.hdf", "A01_example_results_G2.hdf", "D01_dense.h5",
        "D02_dense.npy", "S01_rigaku.bin", "S02_rigaku3m.bin.000-005",
        "S03_esrf_qmap.h5", "S03_esrf_sparse_frame_0_00000-00002.h5", "S04_id11_sparse.h5",
        "S05_timepix_events.h5"]
    assert got["S02_rigaku3m.bin.000-005"].path == str(files["rigaku_3m"])
    assert got["S03_esrf_sparse_frame_0_00000-00002.h5"].path == str(files["esrf"])
    kinds = {n: e.kind.kind for n, e in got.items()}
    assert [n for n, k in kinds.items() if k == "result"] == ["A01_example_results.hdf"]
    assert kinds["S03_esrf_qmap.h5"] == "qmap"
    assert kinds["A01_example_results_G2.hdf"] == "side"


def test_qmap_beside(tmp_path):
    for raw in ("S01.bin", "S02.bin.000", "S03_sparse_frame_0_00002.h5", "S04_sparse.h5",
                "S05_events.h5"):
        (tmp_path / raw).write_bytes(b"")
        stem = raw.split(".")[0].split("_")[0]
        q = tmp_path / f"{stem}_qmap.h5"
        assert qmap_beside(tmp_path / raw) is None
        q.write_bytes(b"")
        assert qmap_beside(tmp_path / raw) == str(q)


def test_timepix_default_bin_time():
    assert default_bin_time(1e-9, 999) == 1e-9  # fewer ticks than frames: one tick
    assert default_bin_time(1.5625e-9, 128_000) == pytest.approx(20 * 1.5625e-9)
    for span in (1, 7, 12_345, 10**9 + 7):
        bt = default_bin_time(1.0, span)
        assert bt == int(bt) and int(str(int(bt))[0]) in (1, 2, 5)
        assert span / bt <= 10_000 + 1e-9  # at most about 10^4 frames


def test_timepix_file_bin_time_attribute_wins(tmp_path):
    p = tmp_path / "ev.h5"
    with h5py.File(p, "w") as f:
        f.attrs["detector_shape"] = [4, 4]
        f["x"] = np.zeros(3, np.int16)
        f["y"] = np.zeros(3, np.int16)
        f["toa"] = np.array([0.0, 1e-3, 2e-3])  # float seconds
        f.attrs["bin_time"] = 5e-4
    fk = classify_path(p)
    assert fk.layout == "timepix" and fk.bin_time == 5e-4 and fk.frames == 5


def test_bad_files_are_other(tmp_path):
    (tmp_path / "x.bin").write_bytes(b"\xff" * 16)
    (tmp_path / "y.h5").write_bytes(b"not hdf5 at all")
    (tmp_path / "z.npy").write_bytes(b"\x93NUMPY garbage")
    for n in ("x.bin", "y.h5", "z.npy", "missing.h5"):
        assert classify_path(tmp_path / n).kind == "other"
    assert list_sources(tmp_path) == []
    listed = list_sources(tmp_path, others=True)  # the browser shows them, with why
    assert [(e.name, e.kind.kind) for e in listed] == [
        ("x.bin", "other"), ("y.h5", "other"), ("z.npy", "other")]
    assert "not a readable .npy" in listed[2].kind.text


def test_a_thousand_files_list_fast(tmp_path, examples):
    _, files = examples
    for i in range(1000):
        shutil.copy(files["dense"], tmp_path / f"run_{i:04d}.h5")
    t = time.perf_counter()
    got = list_sources(tmp_path)
    took = time.perf_counter() - t
    assert len(got) == 1000 and all(e.kind.layout == "hdf5" for e in got)
    assert took < 20, took  # ~0.3 s on 2 cores; a data pass would take far longer


def test_legacy_result_and_linked_frames(tmp_path):
    legacy = tmp_path / "old.hdf"
    with h5py.File(legacy, "w") as f:
        f["/xpcs/dqmap"] = np.ones((4, 4), np.uint8)
        f["/exchange/norm-0-g2"] = np.ones((3, 1))
    fk = classify_path(legacy)
    assert (fk.kind, fk.text) == ("result", "result: multi-tau")
    # an Eiger master: the frames are in a linked file (never followed while listing)
    data = tmp_path / "data_000001.h5"
    with h5py.File(data, "w") as f:
        f["data"] = np.zeros((5, 2, 3), np.uint16)
    master = tmp_path / "master.h5"
    with h5py.File(master, "w") as f:
        f["/entry/data/data"] = h5py.ExternalLink(data.name, "data")
        f["/entry/instrument/detector/detectorSpecific/nimages"] = 5
    fk = classify_path(master)
    assert (fk.kind, fk.layout, fk.frames) == ("raw", "hdf5", 5)
    # a file with an unrelated /entry and nothing else is no source
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["/entry/title"] = "x"
    assert classify_path(other).kind == "other"


def test_a_mask_file_is_a_side_file_not_a_qmap(tmp_path):
    """The correlate dialog's OUT_mask.hdf (/qmap/mask and /mask only) is named a mask."""
    import numpy as np

    from xpcsviewer.io.classify import classify_path
    from xpcsviewer.io.masks import write_mask_file

    m = np.ones((6, 8), bool)
    m[2, 3] = False
    k = classify_path(write_mask_file(tmp_path / "r_results_mask.hdf", m))
    assert k.kind == "side" and k.text.startswith("mask on 6 x 8")
    assert k.detector_shape == (6, 8)
