"""``xpcsviewer info`` of XSVS files (issue 46): ``info NAME_xsvs.h5`` says what it holds;
a raw source or result file with one beside it names it; the browser lists it as a
side file of its source."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from xpcsviewer.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _xsvs_fake import fake_xsvs


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from xpcsviewer.jobs.xsvs import write_xsvs

    d = tmp_path_factory.mktemp("info_xsvs")
    with h5py.File(d / "run.h5", "w") as f:
        f.create_dataset("/entry/data/data",
                         data=np.random.default_rng(1).poisson(0.1, (16, 8, 8))
                         .astype(np.uint16))
    write_xsvs(d / "run_xsvs.h5", fake_xsvs(source=str(d / "run.h5")))
    return d


def test_info_of_an_xsvs_file(folder, capsys):
    assert main(["info", str(folder / "run_xsvs.h5")]) == 0
    out = capsys.readouterr().out
    assert "run_xsvs.h5: XSVS (speckle visibility by exposure) of" in out
    assert "64x64 pixels, 1,000 frames of 0.001 s" in out
    assert "exposures: 6, 1 ms to 32 ms; q-bins: 4; counter cap: none known" in out
    assert "g2 fit beside: run_results.hdf" in out
    lines = [ln.split() for ln in out.splitlines() if ln.startswith("  4 ")]
    assert lines and "tau_above" in lines[0] and ">" in lines[0]
    assert main(["info", "--json", str(folder / "run_xsvs.h5")]) == 0
    rec = json.loads(capsys.readouterr().out)["files"][0]
    assert rec["kind"] == "xsvs" and rec["n_bins"] == 4 and rec["windows"][-1] == 32
    assert rec["exposures_s"][0] == pytest.approx(1e-3)
    b = rec["bins"][0]
    assert b["q_bin"] == 1 and b["beta0"] == pytest.approx(0.30)
    assert b["status"] == "ok" and b["g2_contrast"] == pytest.approx(0.306)
    assert rec["bins"][3]["tau_error"] is not None and rec["bins"][3]["limit"] == 0.05


def test_raw_source_names_the_file_beside_it(folder, capsys):
    assert main(["info", str(folder / "run.h5")]) == 0
    out = capsys.readouterr().out
    assert "note: run.h5: XSVS beside it: run_xsvs.h5" in out
    assert main(["info", "--json", str(folder / "run.h5")]) == 0
    rec = json.loads(capsys.readouterr().out)["files"][0]
    assert rec["xsvs_beside"].endswith("run_xsvs.h5")


def test_result_file_names_the_file_beside_it(tiny_demo_dir, tmp_path, capsys):
    from xpcsviewer.jobs.xsvs import write_xsvs

    src = sorted(tiny_demo_dir.glob("*_results.hdf"))[0]
    res = tmp_path / src.name
    shutil.copy(src, res)
    assert main(["info", "--json", str(res)]) == 0
    assert json.loads(capsys.readouterr().out)["files"][0]["xsvs_beside"] is None
    write_xsvs(tmp_path / (res.stem + "_xsvs.h5"), fake_xsvs())
    assert main(["info", str(res)]) == 0
    assert f"XSVS beside it: {res.stem}_xsvs.h5" in capsys.readouterr().out


def test_browser_lists_it_as_a_side_file(folder):
    from xpcsviewer.io.classify import classify_path, list_sources

    fk = classify_path(folder / "run_xsvs.h5")
    assert fk.kind == "side" and fk.text.endswith("of run.h5")
    kinds = {e.name: e.kind.kind for e in list_sources(folder, others=True)}
    assert kinds == {"run.h5": "raw", "run_xsvs.h5": "side"}
