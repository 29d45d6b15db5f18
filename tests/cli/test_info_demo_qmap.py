"""``xpcsviewer info``, ``demo`` and ``qmap`` end to end (in-process through cli.main)."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from xpcsviewer.cli import main
from xpcsviewer.compute.detector.partition import check_consistency
from xpcsviewer.compute.detector.qmap import compute_qmap
from xpcsviewer.io import read_result
from xpcsviewer.io.results.reader import _read_qmap_nexus
from xpcsviewer.synthetic.demo import DEMO_SPECS


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    assert main(["demo", "--no-gui", "--quiet", "--out", str(out)]) == 0
    return out


def test_demo_then_info_json(demo_dir, capsys):
    files = sorted(demo_dir.glob("*_results.hdf"))
    assert len(files) >= 6
    capsys.readouterr()
    assert main(["info", "--json", *map(str, files)]) == 0
    data = json.loads(capsys.readouterr().out)
    recs = data["files"]
    assert len(recs) == len(files)
    keys = {
        "path",
        "analysis_type",
        "detector_shape",
        "n_frames",
        "frame_time",
        "energy_kev",
        "det_dist_m",
        "pixel_size_m",
        "beam_center",
        "q_dynamic",
        "phi_dynamic",
        "n_tau",
    }
    for rec, f in zip(recs, files, strict=True):
        assert keys <= set(rec)
        r = read_result(f)
        assert rec["path"] == str(f)
        assert rec["analysis_type"] == list(r.analysis_type)
        geo = next(s for s in DEMO_SPECS if f.name.startswith(s["name"]))["geometry"]
        assert rec["detector_shape"] == list(geo["shape"])
        assert rec["q_dynamic"] == pytest.approx(r.qmap.dynamic_q.tolist())
        assert len(rec["phi_dynamic"]) == len(rec["q_dynamic"]) == r.qmap.n_dynamic
        assert (
            rec["energy_kev"] == geo["energy_kev"]
            and rec["det_dist_m"] == geo["det_dist_m"]
            and rec["pixel_size_m"] == geo["pixel_size_m"]
        )
    types = {tuple(r["analysis_type"]) for r in recs}
    assert {("Multitau",), ("Twotime",), ("Twotime", "Multitau")} <= types


def test_info_bad_files_exit_3_good_still_reported(demo_dir, tmp_path, capsys):
    bad = tmp_path / "bad.hdf"
    bad.write_bytes(b"nonsense")
    good = sorted(demo_dir.glob("*_results.hdf"))[0]
    capsys.readouterr()
    rc = main(["info", str(bad), str(good)])
    out, err = capsys.readouterr()
    assert rc == 3
    assert good.name in out and "Multitau" in out
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 2 and str(bad) in lines[0] and "not an HDF5 file" in lines[0]
    assert lines[1] == "xpcsviewer info: 1 of 2 file(s) failed"  # the batch's closing count
    assert "Traceback" not in err


def test_info_real_files(real_data_dir, capsys):
    files = sorted((real_data_dir / "aps8idi_llps_saxpcs").glob("*.hdf"))
    capsys.readouterr()
    assert main(["info", "--json", *map(str, files)]) == 0
    recs = json.loads(capsys.readouterr().out)["files"]
    assert len(recs) == 11
    for rec in recs:
        assert rec["analysis_type"] == ["Multitau"]
        assert rec["detector_shape"] == [512, 1024] and rec["n_frames"] == 100000
        assert rec["frame_time"] == 2e-5 and rec["energy_kev"] == 10.945
        assert rec["n_tau"] == 61 and len(rec["q_dynamic"]) == 27
        assert rec["q_dynamic"][0] == pytest.approx(0.00376, abs=1e-5)
        assert rec["beam_center"] == [581.5, 235.5]
        # the lone last delay's too-small error is reported (and left out of fits)
        assert rec["err_suspect_count"] > 0 and rec["err_suspect_delays_s"][-1] == 1.6384
        assert any("left out of fits" in w for w in rec["warnings"])


def test_qmap_command_writes_standard_partition(tmp_path, capsys):
    mask = np.ones((48, 64), bool)
    mask[20:26, 30:36] = False  # beam stop
    np.save(tmp_path / "mask.npy", mask)
    out = tmp_path / "qmap.hdf"
    rc = main(
        [
            "qmap",
            "--shape",
            "48",
            "64",
            "--energy",
            "10",
            "--det-dist",
            "5",
            "--pixel-size",
            "75e-6",
            "--bcx",
            "32.5",
            "--bcy",
            "23",
            "--mask",
            str(tmp_path / "mask.npy"),
            "--dq-num",
            "5",
            "--sq-num",
            "20",
            "--dp-num",
            "4",
            "--sp-num",
            "8",
            "-o",
            str(out),
        ]
    )
    assert rc == 0
    with h5py.File(out, "r") as f:
        g = f["qmap"]
        assert g.attrs["hash"] and g.attrs["version"]
        for k in (
            "beam_center_x",
            "beam_center_y",
            "pixel_size",
            "mask",
            "blemish",
            "energy",
            "detector_distance",
            "map_names",
            "map_units",
            "source_file",
            "dynamic_num_pts",
            "dynamic_roi_map",
            "dynamic_v_list_dim0",
            "dynamic_v_list_dim1",
            "dynamic_index_mapping",
            "static_num_pts",
            "static_roi_map",
            "static_v_list_dim0",
            "static_v_list_dim1",
            "static_index_mapping",
        ):
            assert k in g, k
        qm = _read_qmap_nexus(f, "/qmap", [])
    assert check_consistency(qm) == []
    np.testing.assert_array_equal(qm.mask, mask)
    assert qm.dynamic_num_pts == (5, 4) and qm.static_num_pts == (20, 8)
    q, _ = compute_qmap((48, 64), 10, 5, 75e-6, 32.5, 23)
    assert (
        qm.dynamic_v_list_dim0[0] > q[mask].min()
        and qm.dynamic_v_list_dim0[-1] < q[mask].max()
    )


def test_qmap_command_bad_masks(tmp_path, capsys):
    base = [
        "qmap",
        "--shape",
        "8",
        "8",
        "--energy",
        "10",
        "--det-dist",
        "5",
        "--pixel-size",
        "75e-6",
        "--bcx",
        "4",
        "--bcy",
        "4",
        "-o",
        str(tmp_path / "q.hdf"),
    ]
    np.save(tmp_path / "wrong.npy", np.ones((4, 4)))
    assert main([*base, "--mask", str(tmp_path / "wrong.npy")]) == 3
    assert "detector shape (8, 8)" in capsys.readouterr().err
    (tmp_path / "m.tif").write_bytes(b"II*\x00")
    rc = main([*base, "--mask", str(tmp_path / "m.tif")])
    err = capsys.readouterr().err
    try:
        import tifffile  # noqa: F401
    except ImportError:
        assert rc == 3 and "tifffile" in err
    with h5py.File(tmp_path / "m.hdf", "w") as f:
        f["qmap/mask"] = np.ones((8, 8), np.uint8)
    assert main([*base, "--mask", str(tmp_path / "m.hdf")]) == 0


def test_demo_without_display_still_succeeds(tmp_path, monkeypatch, capsys):
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr("sys.platform", "linux")
    assert main(["demo", "--quiet", "--out", str(tmp_path / "d")]) == 0
    captured = capsys.readouterr()
    assert "simulated" in captured.out and "No display" in captured.err
    assert len(list((tmp_path / "d").glob("*.hdf"))) >= 6


def test_info_describes_the_g2_side_file(tiny_demo_dir, capsys):
    """`info DIR/*` of a folder with a per-pixel G2 side file: described, exit 0."""
    files = sorted(tiny_demo_dir.iterdir())
    side = tiny_demo_dir / "T03_tiny_g2_results_G2.hdf"
    assert side in files
    capsys.readouterr()
    assert main(["info", *map(str, files)]) == 0  # was exit 3 for the side file
    out, err = capsys.readouterr()
    assert err == ""
    note = next(ln for ln in out.splitlines() if "T03_tiny_g2_results_G2.hdf" in ln)
    n_tau = len(read_result(tiny_demo_dir / "T03_tiny_g2_results.hdf").multitau.tau)
    assert "per-pixel G2 side file of T03_tiny_g2_results.hdf" in note
    assert f"{n_tau} delays x 24 x 24 pixels" in note
    assert main(["info", "--json", *map(str, files)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["path"] for r in doc["files"]] == [str(f) for f in files if f != side]
    (rec,) = doc["side_files"]
    assert rec["path"] == str(side) and rec["stack_shape"] == [n_tau, 3, 24, 24]
    assert rec["result_file"] == str(tiny_demo_dir / "T03_tiny_g2_results.hdf")
    assert rec["linked_from_result"] is True and rec["channels"] == ["G2", "IP", "IF"]
    # only the side file: still described, exit 0; a broken file is still exit 3
    assert main(["info", str(side)]) == 0
    assert "per-pixel G2 side file" in capsys.readouterr().out
