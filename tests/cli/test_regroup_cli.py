"""``correlate --save-g2-pixel`` and ``xpcsviewer regroup`` end to end."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest

from xpcsviewer.cli import main
from xpcsviewer.compute.detector.partition import PartitionGrid, make_partition
from xpcsviewer.compute.detector.qmap import DetectorGeometry
from xpcsviewer.compute.detector.regroup import correlated_pixels, regroup_g2
from xpcsviewer.io import read_g2_stack_delay, read_qmap, read_result
from xpcsviewer.io.results.writer import write_qmap_file
from xpcsviewer.synthetic.speckle import Geometry, simulate_frames

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    d = tmp_path_factory.mktemp("regroup")
    geo = Geometry(shape=(30, 36), energy_kev=10.0, det_dist_m=5.0, pixel_size_m=75e-6,
                   bcx=-3.0, bcy=14.0)
    q, phi = geo.qmap()
    mask = np.ones(q.shape, bool)
    mask[:3, :4] = False
    det = DetectorGeometry(energy_kev=10.0, detector_distance=5.0, pixel_size=75e-6,
                           beam_center_x=-3.0, beam_center_y=14.0)
    qm = make_partition(q, phi, mask, PartitionGrid(4, 12), det)
    qpath = write_qmap_file(d / "qmap.hdf", qm)
    # another partition of the same (correlated) pixels: q x phi, log q
    other = make_partition(q, phi, mask, PartitionGrid(3, 6, 2, 4, q_style="log"), det)
    opath = write_qmap_file(d / "other_qmap.hdf", other)
    frames = simulate_frames(q, 400, 1e-3, D=5e6, beta=0.25, rate=2.0, seed=3)
    raw = d / "raw.h5"
    with h5py.File(raw, "w") as f:
        f.create_dataset("/entry/data/data", data=frames, chunks=(16, 30, 36))
        f["/entry/instrument/detector_1/frame_time"] = 1e-3
    out = d / "run_results.hdf"
    assert main(["correlate", str(raw), "--qmap", str(qpath), "-o", str(out),
                 "--save-g2-pixel", "--quiet", "--backend", "numpy"]) == 0
    return d, raw, qpath, opath, out


def test_side_file_and_link(made):
    d, _raw, _q, _o, out = made
    side = d / "run_results_G2.hdf"
    assert side.is_file()
    res = read_result(out)
    t = res.multitau.delay_frames.size
    with h5py.File(out, "r") as f:
        link = f["/xpcs/multitau"].get("unnormalized_G2", getlink=True)
        assert isinstance(link, h5py.ExternalLink) and link.filename == side.name
    with h5py.File(side, "r") as f:
        assert f["G2IPIF"].shape == (t, 3, 30, 36)
    # the result and its side file can move together: the link is relative
    moved = d / "moved"
    moved.mkdir()
    for p in (out, side):
        os.link(p, moved / p.name)
    g, ip, _if = read_g2_stack_delay(moved / out.name, 3)
    assert g.shape == (30, 36) and (ip[res.qmap.mask] > 0).any()
    # a side file opened by mistake says what it is
    with pytest.raises(Exception, match="side file"):
        read_result(side)


def test_correlate_refusals(made, tmp_path, capsys):
    _d, raw, qpath, _o, _out = made
    o = tmp_path / "tt.hdf"
    assert main(["correlate", str(raw), "--qmap", str(qpath), "-o", str(o), "--mode", "twotime",
                 "--save-g2-pixel", "--quiet"]) == 2
    assert "multi-tau" in capsys.readouterr().err and not list(tmp_path.iterdir())
    (tmp_path / "x_G2.hdf").write_bytes(b"keep")  # the side file name is taken
    assert main(["correlate", str(raw), "--qmap", str(qpath), "-o", str(tmp_path / "x.hdf"),
                 "--save-g2-pixel", "--quiet"]) == 2
    assert "exists" in capsys.readouterr().err
    assert (tmp_path / "x_G2.hdf").read_bytes() == b"keep"
    assert not (tmp_path / "x.hdf").exists()


def test_regroup_own_partition_and_refusals(made, tmp_path, capsys):
    d, _raw, _q, _o, out = made
    o = tmp_path / "own.hdf"
    assert main(["regroup", str(out), "-o", str(o), "--quiet"]) == 0
    a, b = read_result(out).multitau, read_result(o).multitau
    np.testing.assert_array_equal(a.valid, b.valid)
    np.testing.assert_allclose(b.g2[a.valid], a.g2[a.valid], rtol=2e-6)
    np.testing.assert_allclose(b.g2_err[a.valid], a.g2_err[a.valid], rtol=2e-5)
    before = out.read_bytes()
    for bad in (out, d / "run_results_G2.hdf"):  # never an input (nor its side file)
        assert main(["regroup", str(out), "-o", str(bad), "--quiet", "--overwrite"]) == 2
    assert out.read_bytes() == before
    assert main(["regroup", str(out), "-o", str(o), "--quiet"]) == 2  # exists
    capsys.readouterr()
    assert main(["regroup", str(o), "-o", str(tmp_path / "again.hdf"), "--quiet"]) == 3
    assert "no per-pixel G2 stack" in capsys.readouterr().err


def test_regroup_other_partition_and_mask(made, tmp_path, capsys):
    _d, _raw, _qpath, opath, out = made
    mask = np.ones((30, 36), np.uint8)
    mask[10:20, 5:25] = 0
    mpath = tmp_path / "mask.hdf"
    with h5py.File(mpath, "w") as f:
        f["qmap/mask"] = mask
    o = tmp_path / "other.hdf"
    assert main(["regroup", str(out), "--qmap", str(opath), "--mask", str(mpath), "-o", str(o),
                 "--quiet"]) == 0
    res = read_result(o)
    src = read_result(out)
    other = read_qmap(opath)
    want = regroup_g2(lambda k: read_g2_stack_delay(out, k), src.multitau.delay_frames.size,
                      other, correlated_pixels(src.qmap) & (mask > 0))
    assert res.qmap.hash == want.qmap.hash and res.qmap.dynamic_num_pts == (3, 2)
    assert not res.qmap.mask[10:20, 5:25].any()
    np.testing.assert_allclose(res.multitau.g2, np.nan_to_num(want.g2), rtol=1e-6)
    # a partition of another detector is bad input
    small = make_partition(*Geometry(shape=(8, 8)).qmap(), None, PartitionGrid(2, 4))
    spath = write_qmap_file(tmp_path / "small.hdf", small)
    capsys.readouterr()
    assert main(["regroup", str(out), "--qmap", str(spath), "-o",
                 str(tmp_path / "bad.hdf"), "--quiet"]) == 3
    assert "detector shape" in capsys.readouterr().err


_UPSTREAM = r"""
import json, sys
import numpy as np
from pyxpcsviewer.core.xpcs_file import XpcsFile
from pyxpcsviewer.core.g2_utils import regroup_G2
src, qmap_file, regrouped = sys.argv[1:4]
xf = XpcsFile(src)
G2 = np.asarray(xf.G2)               # through our ExternalLink to the side file
reg = regroup_G2(src, {"G2": G2}, qmap_fname=qmap_file)   # our /qmap file
xr = XpcsFile(regrouped)             # our regrouped result file (q-map group included)
q, t_el, g2, g2_err, labels = xr.get_g2_data()
print(json.dumps({"G2_shape": list(G2.shape), "G2_plane3": G2[3].tolist(),
                  "g2_from_qmap": np.asarray(reg["g2"]).tolist(),
                  "atype": list(xr.atype), "g2": np.asarray(g2).tolist(),
                  "labels": list(map(str, labels))}))
"""


@pytest.mark.slow
def test_official_viewer_opens_stack_qmap_and_regrouped_file(made, tmp_path):
    """xpcs-viewer 1.2.2 (``make bench-refs``): reads our per-pixel stack through the
    ExternalLink, regroups it with our q-map file, and opens our regrouped file."""
    venv_py = REPO / ".bench-venvs/xpcsviewer/bin/python"
    if not venv_py.exists():
        pytest.skip("the official viewer (.bench-venvs/xpcsviewer) is not installed")
    _d, _raw, _q, opath, out = made
    o = tmp_path / "regrouped_results.hdf"
    assert main(["regroup", str(out), "--qmap", str(opath), "-o", str(o), "--quiet"]) == 0
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    run = subprocess.run([str(venv_py), "-c", _UPSTREAM, str(out), str(opath), str(o)],
                         capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    theirs = json.loads(run.stdout.strip().splitlines()[-1])
    src, mine = read_result(out), read_result(o)
    assert theirs["G2_shape"] == [src.multitau.delay_frames.size, 3, 30, 36]
    g, ip, if_ = read_g2_stack_delay(out, 3)
    np.testing.assert_array_equal(np.asarray(theirs["G2_plane3"]), np.stack([g, ip, if_]))
    # their regrouping (mean smoothing, the same formula) with our q-map file
    v = mine.multitau.valid
    np.testing.assert_allclose(np.asarray(theirs["g2_from_qmap"])[v], mine.multitau.g2[v],
                               rtol=1e-5)
    assert theirs["atype"] == ["Multitau"]
    np.testing.assert_allclose(np.asarray(theirs["g2"]), mine.multitau.g2, rtol=1e-6)
    assert len(theirs["labels"]) == mine.qmap.n_dynamic
