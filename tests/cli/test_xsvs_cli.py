"""``xpcsviewer xsvs`` and ``correlate --xsvs`` through the command line: the per-bin
table, the CSV contract, the file beside the result with the g2 fit compared, refusals."""

from __future__ import annotations

import csv

import numpy as np

from xpcsviewer.cli import main
from xpcsviewer.compute.detector.partition import PartitionGrid, make_partition
from xpcsviewer.compute.detector.qmap import DetectorGeometry
from xpcsviewer.io.results.writer import write_qmap_file
from xpcsviewer.jobs.xsvs import read_xsvs
from xpcsviewer.model.xsvs import CSV_COLUMNS
from xpcsviewer.synthetic.speckle import Geometry, simulate_frames


def _inputs(d):
    shape, bc = (24, 32), (-4.0, 12.0)
    geo = Geometry(shape=shape, energy_kev=10.0, det_dist_m=5.0, pixel_size_m=75e-6,
                   bcx=bc[0], bcy=bc[1])
    q, phi = geo.qmap()
    qm = make_partition(q, phi, np.ones(shape, bool), PartitionGrid(3, 1),
                        DetectorGeometry(energy_kev=10.0, detector_distance=5.0,
                                         pixel_size=75e-6, beam_center_x=bc[0],
                                         beam_center_y=bc[1]))
    qpath = write_qmap_file(d / "qmap.hdf", qm)
    movie = simulate_frames(q, 1024, 1e-3, D=2e6, beta=0.5, rate=0.5, seed=3)
    np.save(d / "raw.npy", movie.astype(np.uint16))
    return d / "raw.npy", qpath


def test_xsvs_prints_writes_csv_and_h5(tmp_path, capsys):
    raw, qpath = _inputs(tmp_path)
    rc = main(["xsvs", str(raw), "--qmap", str(qpath), "--frame-time", "1e-3",
               "-o", str(tmp_path / "x.csv"), "--quiet"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "3 q-bins" in out and "beta0" in out and "per bin and exposure" in out
    rows = list(csv.reader(open(tmp_path / "x.csv", encoding="utf-8")))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert {r[0] for r in rows[1:]} == {"1", "2", "3"}
    first = next(r for r in rows[1:] if r[0] == "1")
    assert float(first[2]) == 1e-3 and first[8] == "ok"
    # one frame: the simulator holds the intensity over a frame, so beta = 1/M = 0.5
    assert abs(float(first[6]) - 0.5) < 5 * float(first[7])
    assert main(["xsvs", str(raw), "--qmap", str(qpath), "--exposures", "1e-3,4e-3",
                 "--frame-time", "1e-3", "-o", str(tmp_path / "x.h5"), "--quiet"]) == 0
    res = read_xsvs(tmp_path / "x.h5")
    assert res.windows.tolist() == [1, 4] and res.hist.shape[:2] == (3, 2)


def test_correlate_writes_xsvs_beside_with_g2(tmp_path, capsys):
    raw, qpath = _inputs(tmp_path)
    out = tmp_path / "run_results.hdf"
    assert main(["correlate", str(raw), "--qmap", str(qpath), "-o", str(out),
                 "--frame-time", "1e-3", "--xsvs"]) == 0
    err = capsys.readouterr().err
    side = tmp_path / "run_results_xsvs.h5"
    assert f"wrote {side}" in err
    res = read_xsvs(side)
    assert res.g2_source == str(out) and set(res.g2) >= {"contrast", "tau", "status"}
    ok = np.isfinite(res.g2["contrast"])
    assert ok.any()
    # the Raw tab finds it through the result correlated from the source
    from xpcsviewer.gui.panels._raw_xsvs import find_xsvs_job
    from xpcsviewer.io.results.reader import read_result

    assert find_xsvs_job(str(raw)) is None  # nothing beside the raw source itself
    found = find_xsvs_job(str(raw), [read_result(out)])
    assert found is not None and found[0] == str(side)


def test_xsvs_refusals(tmp_path, capsys):
    raw, qpath = _inputs(tmp_path)
    assert main(["xsvs", str(raw), "--qmap", str(qpath), "-o", str(tmp_path / "x.txt")]) == 2
    assert main(["xsvs", str(raw), "--qmap", str(qpath), "--exposures", "1e-3,abc",
                 "--quiet"]) == 2
    assert main(["xsvs", str(raw), "--qmap", str(qpath), "--exposures", "1.5e-3",
                 "--frame-time", "1e-3", "--quiet"]) == 2
    assert main(["xsvs", str(tmp_path / "missing.npy"), "--qmap", str(qpath),
                 "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "missing.npy" in err and "whole numbers" in err and "--exposures" in err
