"""Write -> read round trips of our result and partition files."""

from __future__ import annotations

import os

import h5py
import numpy as np
import pytest

from xpcsviewer.compute.detector.partition import check_consistency
from xpcsviewer.io import (
    get_analysis_type,
    read_c2,
    read_g2_stack_delay,
    read_result,
    read_saxs_2d,
    write_qmap_file,
    write_result,
)
from xpcsviewer.io.results.reader import _read_qmap_nexus, g2_outliers


def test_result_roundtrip(small_file, small_built):
    res, extras = small_built
    r = read_result(small_file)
    assert r.analysis_type == ("Twotime", "Multitau")
    assert r.layout == "nexus"
    qa, qb = res.qmap, r.qmap
    for name in (
        "dynamic_roi_map",
        "static_roi_map",
        "mask",
        "dynamic_index_mapping",
        "static_index_mapping",
        "dynamic_v_list_dim0",
        "dynamic_v_list_dim1",
        "static_v_list_dim0",
        "static_v_list_dim1",
    ):
        np.testing.assert_array_equal(
            getattr(qb, name), getattr(qa, name), err_msg=name
        )
    assert (
        qb.dynamic_num_pts == qa.dynamic_num_pts
        and qb.static_num_pts == qa.static_num_pts
    )
    assert qb.hash == qa.hash == qa.content_hash()
    assert (
        qb.energy_kev == qa.energy_kev and qb.detector_distance == qa.detector_distance
    )
    assert (qb.beam_center_x, qb.beam_center_y) == (qa.beam_center_x, qa.beam_center_y)
    assert qb.map_names == ("q", "phi") and qb.map_units == (
        "\u00c5\u207b\u00b9",
        "deg",
    )
    assert check_consistency(qb) == []
    # float results are stored as float32, as the standard correlator does
    np.testing.assert_allclose(r.multitau.g2, res.multitau.g2, rtol=1e-6)
    np.testing.assert_allclose(r.multitau.g2_err, res.multitau.g2_err, rtol=1e-6)
    np.testing.assert_array_equal(r.multitau.delay_frames, res.multitau.delay_frames)
    np.testing.assert_allclose(
        r.multitau.tau, res.multitau.delay_frames * 1e-3, rtol=1e-12
    )
    # valid except the analytic noise's impossible values (g2 < 0 in starved bins)
    np.testing.assert_array_equal(
        r.multitau.valid, ~g2_outliers(res.multitau.g2, np.ones(res.multitau.g2.shape, bool))
    )
    np.testing.assert_allclose(r.saxs_1d, res.saxs_1d, rtol=1e-6)
    np.testing.assert_allclose(r.saxs_1d_segments, res.saxs_1d_segments, rtol=1e-6)
    np.testing.assert_allclose(r.intensity_vs_time, res.intensity_vs_time, rtol=1e-6)
    np.testing.assert_allclose(read_saxs_2d(small_file), extras["saxs_2d"], rtol=1e-6)
    assert r.frame_time == 1e-3 and r.start_time == res.start_time
    # truth parameters with units
    assert r.sample["D"] == pytest.approx(res.sample["D"], rel=1e-12)
    assert r.sample_units["D"] == "\u00c5^2/s"
    assert r.metadata["entry/sample/D (\u00c5^2/s)"] == pytest.approx(res.sample["D"])
    assert r.metadata["entry/instrument/detector_1/frame_time (s)"] == 1e-3  # the format's unit
    # two-time: bins, g2 from c2 computed by the writer = diagonal means of the map
    tt = r.twotime
    np.testing.assert_array_equal(tt.processed_bins, [1, 3, 5])
    assert tt.map_names == ["c2_00001", "c2_00002", "c2_00003"] and tt.n_frames == 200
    c = extras["c2_maps"][1]
    ref = np.array([np.mean([c[i, i + k] for i in range(200 - k)]) for k in range(200)])
    np.testing.assert_allclose(tt.g2_full[1], ref, rtol=1e-6)
    blk = c[40:80, 40:80]
    ref_seg = np.array(
        [np.mean([blk[i, i + k] for i in range(40 - k)]) for k in range(40)]
    )
    np.testing.assert_allclose(tt.g2_segments[1, 1], ref_seg, rtol=1e-6)
    assert get_analysis_type(small_file) == ("Twotime", "Multitau")


def test_written_layout_is_upstream_compatible(small_file):
    with h5py.File(small_file, "r") as f:
        assert isinstance(f["/entry/start_time"][()], bytes)
        assert f["/xpcs/qmap"].attrs["hash"]
        assert f["/xpcs/temporal_mean/scattering_2d"].shape == (1, 64, 72)
        assert f["/xpcs/temporal_mean/scattering_1d"].ndim == 2
        assert f["/xpcs/multitau/normalized_g2"].dtype == np.float32
        assert f["/xpcs/multitau/delay_list"].dtype == np.int64
        assert f["/xpcs/multitau/config/stride_frame"][()] == 1
        assert f["/xpcs/twotime/normalized_g2"].shape == (200, 3)
        assert f["/xpcs/twotime/normalized_g2_segments"].shape == (40, 5, 3)
        c = f["/xpcs/twotime/correlation_map/c2_00001"][()]
        assert np.all(np.tril(c, -1) == 0)  # upper triangle only
        # whole-row chunks: a strided view decompresses only the rows it shows
        assert f["/xpcs/twotime/correlation_map/c2_00001"].chunks[1] == 200
        assert "/entry/instrument/bluesky/metadata" in f
        names = [
            x.decode() if isinstance(x, bytes) else x
            for x in f["/xpcs/qmap/map_names"][()]
        ]
        assert names == ["q", "phi"]


def test_c2_view_full_and_decimated(small_file, small_built):
    _, extras = small_built
    full = extras["c2_maps"][2]
    v = read_c2(small_file, 2, max_size=1024)
    assert v.stride == 1 and v.dq_bin == 5 and v.t0 == pytest.approx(1e-3)
    np.testing.assert_allclose(v.c2, full, rtol=1e-6)  # mirrored, diagonal once
    np.testing.assert_array_equal(v.c2, v.c2.T)
    d = read_c2(small_file, 2, max_size=60)
    assert d.stride == 4 and d.c2.shape == (50, 50) and d.t0 == pytest.approx(4e-3)
    np.testing.assert_allclose(d.c2, full[::4, ::4], rtol=1e-6)
    c = read_c2(small_file, 2, max_size=60, correct_diagonal=True).c2
    m = d.c2
    assert c[0, 0] == pytest.approx(m[0, 1])
    assert c[5, 5] == pytest.approx(0.5 * (m[5, 6] + m[4, 5]))
    assert c[-1, -1] == pytest.approx(m[-2, -1])
    assert "q=" in v.label
    with pytest.raises(IndexError):
        read_c2(small_file, 3)


def test_g2_stack_roundtrip_and_external_link(tmp_path, small_built, monkeypatch):
    res, extras = small_built
    t = len(res.multitau.delay_frames)
    stack = np.random.default_rng(0).random((t, 3, 64, 72))
    p = tmp_path / "a_results.hdf"
    write_result(
        p, res, saxs_2d=extras["saxs_2d"], c2_maps=extras["c2_maps"], g2_stack=stack
    )
    g2, ip, if_ = read_g2_stack_delay(p, 4)
    np.testing.assert_allclose(np.stack([g2, ip, if_]), stack[4], rtol=1e-6)
    assert read_result(p).multitau.has_unnormalized_G2
    # the standard correlator's side file: lower-case name, ExternalLink, relative path
    q = tmp_path / "b_results.hdf"
    write_result(q, res, c2_maps=extras["c2_maps"])
    with h5py.File(tmp_path / "b_results_G2.hdf", "w") as f:
        f["G2IPIF"] = stack.astype(np.float32)
    with h5py.File(q, "a") as f:
        f["/xpcs/multitau/unnormalized_g2"] = h5py.ExternalLink(
            "b_results_G2.hdf", "/G2IPIF"
        )
    monkeypatch.chdir("/")  # the link must resolve next to the file, not in the cwd
    g2b, _, ifb = read_g2_stack_delay(q, t - 1)
    np.testing.assert_allclose(g2b, stack[t - 1, 0], rtol=1e-6)
    np.testing.assert_allclose(ifb, stack[t - 1, 2], rtol=1e-6)
    with pytest.raises(IndexError):
        read_g2_stack_delay(q, t)


def test_atomic_write_and_overwrite(tmp_path, small_built):
    res, extras = small_built
    p = tmp_path / "x_results.hdf"
    write_result(p, res, c2_maps=extras["c2_maps"])
    before = p.read_bytes()
    with pytest.raises(FileExistsError):
        write_result(p, res, c2_maps=extras["c2_maps"])
    with pytest.raises(ValueError):  # a failing write leaves the old file untouched
        write_result(p, res, saxs_2d=np.zeros((3, 3)), overwrite=True)
    assert p.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["x_results.hdf"]  # no temp files left
    write_result(p, res, c2_maps=extras["c2_maps"], overwrite=True)
    assert read_result(p).analysis_type == ("Twotime", "Multitau")


def test_qmap_file_roundtrip(tmp_path, small_built):
    qm = small_built[0].qmap
    p = write_qmap_file(tmp_path / "qmap.hdf", qm)
    with h5py.File(p, "r") as f:
        assert f["qmap"].attrs["hash"] == qm.hash and f["qmap"].attrs["version"]
        assert f["qmap/dynamic_v_list_dim0"].attrs["name"] == "q"
        back = _read_qmap_nexus(f, "/qmap", [])
    np.testing.assert_array_equal(back.dynamic_roi_map, qm.dynamic_roi_map)
    np.testing.assert_array_equal(back.static_index_mapping, qm.static_index_mapping)
    assert back.hash == qm.hash


_UPSTREAM = """
import json, sys
from pyxpcsviewer.core.xpcs_file import XpcsFile
xf = XpcsFile(sys.argv[1])
q, t_el, g2, g2_err, labels = xf.get_g2_data()
print(json.dumps({"atype": list(xf.atype), "t": list(map(float, t_el)),
                  "g2": [[float(v) for v in row] for row in g2]}))
"""


def test_upstream_viewer_opens_our_file(small_file):
    """The official viewer (xpcs-viewer 1.2.2, ``make bench-refs`` puts it in its own
    venv) opens our file and reads the same g2 and delays; skipped without it."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    venv_py = Path(__file__).resolve().parents[2] / ".bench-venvs/xpcsviewer/bin/python"
    try:
        import pyxpcsviewer.core.xpcs_file  # noqa: F401

        py = sys.executable
    except ImportError:
        if not venv_py.exists():
            pytest.skip("the official viewer (pyxpcsviewer) is not installed")
        py = str(venv_py)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run(
        [py, "-c", _UPSTREAM, str(small_file)], capture_output=True, text=True,
        env=env, timeout=300, check=True,
    ).stdout
    theirs = json.loads(out.strip().splitlines()[-1])
    ours = read_result(small_file)
    assert set(theirs["atype"]) == set(ours.analysis_type)
    np.testing.assert_allclose(theirs["t"], ours.multitau.tau, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(theirs["g2"]), ours.multitau.g2, rtol=1e-6)


def test_read_qmap_from_partition_and_result_files(tmp_path, small_file, small_built):
    from xpcsviewer.io import XpcsFileError, read_qmap

    qm = small_built[0].qmap
    p = write_qmap_file(tmp_path / "part.hdf", qm)
    for src in (p, small_file):
        back = read_qmap(src)
        np.testing.assert_array_equal(back.static_roi_map, qm.static_roi_map)
        assert back.hash == qm.hash
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["x"] = 1
    with pytest.raises(XpcsFileError, match="no partition"):
        read_qmap(other)


def test_rewrite_read_result_keeps_metadata(tmp_path, small_file):
    """A result read from a file writes back (its flattened metadata includes
    xpcs/... config keys, which used to pre-create /xpcs and fail) and keeps
    extra pass-through paths, without overwriting what the result itself holds."""
    r = read_result(small_file)
    r.twotime, r.analysis_type = None, ("Multitau",)  # its maps are not re-read here
    assert any(k.startswith("xpcs/") for k in r.metadata)
    r.metadata["xpcs/rawdata_path"] = "/data/raw/run1.h5"
    r.metadata["entry/instrument/bluesky/metadata/slit_width (mm)"] = 0.05
    r.metadata["xpcs/multitau/delay_list"] = "must not replace the delays"
    out = tmp_path / "again_results.hdf"
    write_result(out, r, saxs_2d=read_saxs_2d(small_file))
    back = read_result(out)
    np.testing.assert_array_equal(back.multitau.delay_frames, r.multitau.delay_frames)
    np.testing.assert_array_equal(back.multitau.g2, r.multitau.g2)
    with h5py.File(out, "r") as f:
        assert f["/xpcs/rawdata_path"][()].decode() == "/data/raw/run1.h5"
        ds = f["/entry/instrument/bluesky/metadata/slit_width"]
        assert ds[()] == 0.05 and ds.attrs["units"] == "mm"
    for k, v in r.metadata.items():
        if k.startswith("xpcs/multitau/config/"):
            assert back.metadata[k] == v
