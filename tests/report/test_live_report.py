"""``live --report``: the report of the final file once the acquisition ends, and a
refused report path before anything is read."""

from __future__ import annotations

import h5py
import numpy as np

from xpcsviewer.cli import main


def _raw(path, shape, n=200, seed=0):
    rng = np.random.default_rng(seed)
    with h5py.File(path, "w") as f:
        f["/entry/data/data"] = rng.poisson(2.0, (n, *shape)).astype(np.uint16)


def test_live_report_of_the_final_file(tiny_demo_dir, tmp_path, capsys):
    qmap = next(tiny_demo_dir.glob("T01*_results.hdf"))  # its /xpcs/qmap (24 x 24)
    raw, out, rep = tmp_path / "raw.h5", tmp_path / "live.hdf", tmp_path / "live.html"
    _raw(raw, (24, 24))
    code = main(["live", str(raw), "--qmap", str(qmap), "-o", str(out), "--frame-time", "1e-3",
                 "--idle", "0.5", "--frames", "200", "--report", str(rep)])
    assert code == 0, capsys.readouterr().err
    text = rep.read_text(encoding="utf-8")
    assert str(out) in text and "<table" in text  # the live file, with its bins
    assert "wrote the report" in capsys.readouterr().err


def test_live_report_refused_before_the_acquisition(tiny_demo_dir, tmp_path, capsys):
    qmap = next(tiny_demo_dir.glob("T01*_results.hdf"))
    rep = tmp_path / "r.html"
    rep.write_text("keep")
    args = ["live", str(tmp_path / "none.h5"), "--qmap", str(qmap), "-o", str(tmp_path / "o.hdf")]
    assert main([*args, "--report", str(rep)]) == 2
    assert rep.read_text() == "keep" and "r.html" in capsys.readouterr().err
    assert main([*args, "--report", str(tmp_path / "r.txt")]) == 2
    assert not (tmp_path / "o.hdf").exists()
