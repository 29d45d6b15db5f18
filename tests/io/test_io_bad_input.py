"""Every kind of bad input gives an XpcsFileError naming the file, the dataset and the
expectation."""

from __future__ import annotations

import shutil

import h5py
import numpy as np
import pytest

from xpcsviewer.io import XpcsFileError, read_c2, read_result, read_saxs_2d, scan_folder


def _copy(src, tmp_path, name="bad_results.hdf"):
    dst = tmp_path / name
    shutil.copy(src, dst)
    return dst


def _edit(path, fn):
    with h5py.File(path, "a") as f:
        fn(f)


def _expect(path, *words, reader=read_result):
    with pytest.raises(XpcsFileError) as ei:
        reader(path)
    msg = ei.value.one_line()
    assert str(path) in msg
    for w in words:
        assert w in msg, msg
    return ei.value


def test_missing_empty_garbage_truncated(tmp_path, small_file):
    _expect(tmp_path / "nope.hdf", "not found")
    empty = tmp_path / "empty.hdf"
    empty.write_bytes(b"")
    _expect(empty, "empty")
    junk = tmp_path / "junk.hdf"
    junk.write_bytes(b"this is not hdf5 at all" * 100)
    _expect(junk, "not an HDF5 file")
    data = small_file.read_bytes()
    trunc = tmp_path / "trunc.hdf"
    trunc.write_bytes(data[: len(data) // 3])
    err = _expect(trunc, "truncated")
    assert err.expected
    _expect(tmp_path, "folder")


def test_unknown_layout_and_no_results(tmp_path, small_file):
    p = tmp_path / "other.h5"
    with h5py.File(p, "w") as f:
        f["data"] = np.zeros(3)
    _expect(p, "unknown layout")
    q = _copy(small_file, tmp_path)
    _edit(
        q, lambda f: (f.__delitem__("/xpcs/multitau"), f.__delitem__("/xpcs/twotime"))
    )
    _expect(q, "no analysis results")


@pytest.mark.parametrize(
    "dataset, words",
    [
        ("/xpcs/qmap/dynamic_roi_map", ["missing required dataset", "dynamic_roi_map"]),
        (
            "/xpcs/qmap/static_index_mapping",
            ["missing required dataset", "static_index_mapping"],
        ),
        (
            "/entry/instrument/detector_1/frame_time",
            ["missing required dataset", "frame_time"],
        ),
        ("/xpcs/multitau/delay_list", ["missing required dataset", "delay_list"]),
        ("/xpcs/qmap/pixel_size", ["pixel_size"]),
    ],
)
def test_missing_required(tmp_path, small_file, dataset, words):
    p = _copy(small_file, tmp_path)
    _edit(p, lambda f: f.__delitem__(dataset))
    err = _expect(p, *words)
    assert err.dataset == dataset


def _replace(f, path, value):
    del f[path]
    f[path] = value


@pytest.mark.parametrize(
    "dataset, value, words",
    [
        (
            "/xpcs/multitau/normalized_g2",
            np.zeros((5, 6), np.float32),
            ["shape (5, 6)", "(T, Nd)"],
        ),
        ("/xpcs/multitau/normalized_g2", np.zeros((3,), np.float32), ["shape (3,)"]),
        (
            "/xpcs/multitau/normalized_g2_err",
            np.zeros((2, 2), np.float32),
            ["normalized_g2_err"],
        ),
        ("/xpcs/multitau/normalized_g2", np.array(["a", "b"], dtype=object), ["dtype"]),
        (
            "/xpcs/qmap/dynamic_roi_map",
            np.zeros((10, 10), np.uint8),
            ["detector shape"],
        ),
        ("/xpcs/qmap/dynamic_roi_map", np.ones((64, 72), np.float32), ["integer"]),
        (
            "/xpcs/temporal_mean/scattering_1d",
            np.zeros((1, 3), np.float32),
            ["(1, Ns)"],
        ),
        (
            "/xpcs/spatial_mean/intensity_vs_time",
            np.zeros((3, 10), np.float32),
            ["(2, N)"],
        ),
        ("/xpcs/qmap/dynamic_num_pts", np.array([6]), ["bin lists"]),
        ("/entry/instrument/detector_1/frame_time", np.float64(-1.0), ["positive"]),
        ("/entry/instrument/detector_1/frame_time", np.zeros(3), ["scalar"]),
        ("/xpcs/twotime/processed_bins", np.array([1, 3]), ["processed bins"]),
        ("/xpcs/twotime/processed_bins", np.array([1, 3, 99]), ["1..12"]),
        ("/xpcs/twotime/normalized_g2", np.zeros((7, 3), np.float32), ["(N, Np)"]),
    ],
)
def test_wrong_shape_or_dtype(tmp_path, small_file, dataset, value, words):
    p = _copy(small_file, tmp_path)
    _edit(p, lambda f: _replace(f, dataset, value))
    err = _expect(p, *words)
    assert err.dataset == dataset


def test_inconsistent_qmap(tmp_path, small_file):
    p = _copy(small_file, tmp_path)

    def cut(f):
        m = f["/xpcs/qmap/dynamic_index_mapping"][()]
        _replace(f, "/xpcs/qmap/dynamic_index_mapping", m[:-1])

    _edit(p, cut)
    _expect(p, "inconsistent q-map", "len(index_mapping)", "dynamic_index_mapping")


def test_bad_c2_and_saxs(tmp_path, small_file):
    p = _copy(small_file, tmp_path)
    _edit(
        p,
        lambda f: _replace(
            f, "/xpcs/twotime/correlation_map/c2_00001", np.zeros((4, 5), np.float32)
        ),
    )
    _expect(p, "square", reader=read_result)
    with pytest.raises(XpcsFileError, match="square"):
        read_c2(p, 0)
    q = _copy(small_file, tmp_path, "b_results.hdf")
    _edit(
        q,
        lambda f: _replace(
            f, "/xpcs/temporal_mean/scattering_2d", np.zeros((1, 5, 5), np.float32)
        ),
    )
    _expect(q, "scattering_2d", "detector shape", reader=read_saxs_2d)


def test_input_file_never_modified(tmp_path, small_file):
    before = small_file.read_bytes()
    read_result(small_file)
    read_c2(small_file, 0, max_size=10)
    read_saxs_2d(small_file)
    assert small_file.read_bytes() == before


def test_scan_folder_reports_bad_files(tmp_path, small_file):
    (tmp_path / "junk.hdf").write_bytes(b"garbage")
    (tmp_path / "notes.txt").write_text("ignored")
    out = scan_folder(tmp_path)
    assert [s.path.name for s in out] == ["junk.hdf", "small_results.hdf"]
    assert out[0].error and "not an HDF5 file" in out[0].error and not out[0].ok
    good = out[1]
    assert good.ok and good.analysis_type == ("Twotime", "Multitau")
    assert good.n_dynamic == len(good.labels) == read_result(small_file).qmap.n_dynamic
    assert good.labels == read_result(small_file).qmap.dynamic_labels()
