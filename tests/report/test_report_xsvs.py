"""The report's XSVS section (issue 46): a raw source or a result file with an
``NAME_xsvs.h5`` beside it gets "Speckle visibility (XSVS)" with the beta(T) figure and
the per-bin table (beta0, tau with its status, the g2 fit beside, beta0 / contrast); a file
without one gets none; an unreadable one a note."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _xsvs_fake import fake_xsvs
from test_report import check_html


@pytest.fixture(scope="module")
def raw_with_xsvs(tmp_path_factory):
    from xpcsviewer.cli import main
    from xpcsviewer.jobs.xsvs import write_xsvs

    d = tmp_path_factory.mktemp("report_xsvs")
    rng = np.random.default_rng(5)
    path = d / "run_raw.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("/entry/data/data", data=rng.poisson(0.1, (64, 24, 24))
                         .astype(np.uint16))
    assert main(["qmap", "--shape", "24", "24", "--energy", "10", "--det-dist", "5",
                 "--pixel-size", "75e-6", "--bcx", "12", "--bcy", "12", "--dq-num", "3",
                 "--sq-num", "6", "-o", str(d / "run_raw_qmap.h5"), "--quiet"]) == 0
    write_xsvs(d / "run_raw_xsvs.h5", fake_xsvs(source=str(path)))
    return path


def test_part_has_table_figure_and_sentence(raw_with_xsvs):
    from xpcsviewer.report.xsvs_section import xsvs_part

    part = xsvs_part(raw_with_xsvs)
    assert part["what"] == "run_raw_xsvs.h5"
    assert "negative binomial" in part["text"]
    assert [r[0] for r in part["rows"]] == ["1", "2", "3", "4"]
    assert part["rows"][3][3] == "\u03c4 > 50 ms" and part["rows"][3][4] == "tau_above"
    assert part["rows"][0][5].startswith("0.306")  # the g2 contrast beside
    assert part["rows"][0][7].startswith("0.98")  # beta0 / contrast
    fig = part["figures"][0]
    assert fig["pngs"] and fig["pngs"][0][:4] == b"\x89PNG"
    summary = dict(part["summary"])
    assert summary["exposures"] == "6: 1 ms to 32 ms" and summary["q-bins"] == "4"


def test_none_without_a_file_and_a_note_for_a_bad_one(tmp_path):
    from xpcsviewer.report.xsvs_section import xsvs_part

    p = tmp_path / "a.h5"
    p.write_bytes(b"")
    assert xsvs_part(p) is None
    (tmp_path / "a_xsvs.h5").write_bytes(b"not hdf5")
    part = xsvs_part(p)
    assert "a_xsvs.h5 was not read" in part["note"]


def test_report_of_a_raw_source_shows_the_section(raw_with_xsvs, tmp_path):
    from xpcsviewer.report import write_report

    o = write_report([raw_with_xsvs], tmp_path / "r.html", tmp_path / "r.pdf", workers=1)
    assert o.exit_code == 0
    text = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<h3>Speckle visibility (XSVS)</h3>" in text
    assert text.count('<tr data-q-bin="') == 4
    assert "\u03b2(T): the visibility" in text and "data:image/png;base64" in text
    assert not check_html(text).problems
    assert o.pdf_pages >= 1


def test_report_of_a_result_file_finds_the_file_beside_it(tiny_demo_dir, tmp_path):
    from xpcsviewer.jobs.xsvs import write_xsvs
    from xpcsviewer.report.sections import file_section

    src = sorted(tiny_demo_dir.glob("*_results.hdf"))[0]
    res_path = tmp_path / src.name
    shutil.copy(src, res_path)
    assert file_section(str(res_path), figures=False).get("xsvs") is None
    write_xsvs(tmp_path / (res_path.stem + "_xsvs.h5"), fake_xsvs(source="x.h5"))
    sec = file_section(str(res_path), figures=False)
    assert len(sec["xsvs"]["rows"]) == 4 and sec["xsvs"]["figures"] == []
