"""The raw data's findings where a user reads them (issue 45): ``info --inspect``, the
pixel audit's rows of the raw source's hot, dead and at-the-cap pixels (``audit``, with
``--raw`` when the recorded source moved), and the report's "Raw data" section."""

from __future__ import annotations

import csv
import json
import shutil

import pytest

from xpcsviewer.cli import main
from xpcsviewer.synthetic.raw_sim import write_acquisition

pytest.importorskip("xpcsviewer.jobs.inspect")

HOT, DEAD = (10, 30), (20, 10)


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    """A small dense acquisition with a hot and a dead pixel, correlated with the
    per-pixel G2 stack (what the audit reads)."""
    out = tmp_path_factory.mktemp("raw_findings")
    spec = {
        "name": "faulty", "layout": "hdf5",
        "geometry": {"shape": (40, 40), "energy_kev": 10.0, "det_dist_m": 5.0,
                     "pixel_size_m": 75e-6, "bcx": 20.0, "bcy": 20.0},
        "roi": {"row": 0, "col": 0, "rows": 40, "cols": 40},
        "beamstop_px": 3, "partition": {"dq_num": 3, "sq_num": 6, "r_max_px": 15},
        "acquisition": {"frame_time": 0.01, "n_frames": 400, "rate": 0.1,
                        "background": 0.3, "speckle_px": 2},
        "sample": {"model": "brownian", "radius_m": 100e-9, "contrast": 0.25},
        "faults": {"cap": 255, "hot_pixels": [{"row": HOT[0], "col": HOT[1], "rate": 2.0}],
                   "dead_pixels": [list(DEAD)]},
    }
    acq = write_acquisition(out, spec, seed=3)
    result = out / "faulty_results.hdf"
    assert main(["correlate", str(acq.files[0]), "--qmap", str(acq.qmap_path), "-o",
                 str(result), "--frame-time", "0.01", "--save-g2-pixel", "--quiet"]) == 0
    return acq, result


def test_info_inspect_lists_the_findings(faulty, capsys):
    acq, _ = faulty
    assert main(["info", str(acq.files[0])]) == 0
    plain = capsys.readouterr().out
    assert "info --inspect" in plain and "hot_pixel" not in plain  # cheap, and says how
    assert main(["info", str(acq.files[0]), "--inspect", "--qmap", str(acq.qmap_path),
                 "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "one pass over the data" in text and "hot_pixel" in text and "dead_pixel" in text
    assert f"({HOT[0]}, {HOT[1]})" in text
    assert main(["info", str(acq.files[0]), "--inspect", "--qmap", str(acq.qmap_path),
                 "--json", "--quiet"]) == 0
    rec = json.loads(capsys.readouterr().out)["files"][0]
    found = {(f["kind"], tuple(f["pixels"][0])) for f in rec["inspection"]["findings"]}
    assert found == {("hot_pixel", HOT), ("dead_pixel", DEAD)}
    assert rec["inspection"]["counter_cap"] == 255


def _rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_audit_adds_the_raw_sources_pixels(faulty, tmp_path, capsys):
    acq, result = faulty
    out = tmp_path / "pixels.csv"
    assert main(["audit", str(result), "-o", str(out)]) == 0
    raw = {(int(r["row"]), int(r["col"])): r for r in _rows(out)
           if r["reason"].startswith("raw ")}
    assert set(raw) == {HOT, DEAD}
    assert raw[HOT]["reason"].startswith("raw hot_pixel: ")
    assert raw[DEAD]["reason"].startswith("raw dead_pixel: ")
    assert raw[HOT]["bin"] != ""  # the audit's own numbers of that pixel beside its kind
    assert "raw data inspected" in capsys.readouterr().err
    # the raw file moved away: said, no raw rows; --raw gives it back
    moved = tmp_path / "elsewhere.h5"
    shutil.copy(acq.files[0], moved)
    acq.files[0].rename(acq.files[0].with_suffix(".away"))
    try:
        assert main(["audit", str(result), "-o", str(out), "--overwrite"]) == 0
        assert not any(r["reason"].startswith("raw ") for r in _rows(out))
        assert "not reachable" in capsys.readouterr().err
        assert main(["audit", str(result), "-o", str(out), "--overwrite", "--raw",
                     str(moved)]) == 0
        assert {(int(r["row"]), int(r["col"])) for r in _rows(out)
                if r["reason"].startswith("raw ")} == {HOT, DEAD}
    finally:
        acq.files[0].with_suffix(".away").rename(acq.files[0])
    assert main(["audit", str(result), str(result), "-o", str(out), "--overwrite",
                 "--raw", str(moved)]) == 2


def test_report_has_a_raw_data_section(faulty, tmp_path):
    """A result's section gains the Raw data part (its reachable raw source; drawn here
    without the figures and fits a report also makes); a raw source given itself gets a
    section of that part alone (the whole command)."""
    from xpcsviewer.report.html import _raw_html
    from xpcsviewer.report.sections import file_part

    acq, result = faulty
    raw = file_part(str(result), "images", figures=False)["raw"]
    assert raw["what"].startswith(str(acq.files[0]))
    assert dict(raw["summary"])["counter cap"].startswith("255 counts")
    kinds = {(r[0], r[2]) for r in raw["findings"][1:]}
    assert kinds == {("hot_pixel", f"({HOT[0]}, {HOT[1]})"),
                     ("dead_pixel", f"({DEAD[0]}, {DEAD[1]})")}
    text = "\n".join(_raw_html(raw))
    assert "<h3>Raw data</h3>" in text and f"({HOT[0]}, {HOT[1]})" in text
    html = tmp_path / "raw.html"
    assert main(["report", str(acq.files[0]), "-o", str(html), "--pdf",
                 str(tmp_path / "raw.pdf"), "--workers", "1", "--quiet"]) == 0
    page = html.read_text()
    assert "<h3>Raw data</h3>" in page and f"({DEAD[0]}, {DEAD[1]})" in page
    assert "raw source" in page  # its summary row
    # the q-map beside it (NAME_qmap.h5, as the window pairs them) gives the bins
    assert f"q-map {acq.qmap_path.name}" in page
    assert (tmp_path / "raw.pdf").stat().st_size > 1000


def test_report_says_an_unreachable_raw_source(faulty, tmp_path):
    from xpcsviewer.report.sections import file_part

    acq, result = faulty
    away = acq.files[0].with_suffix(".away")
    acq.files[0].rename(away)
    try:
        raw = file_part(str(result), "images", figures=False)["raw"]
    finally:
        away.rename(acq.files[0])
    assert set(raw) == {"note"} and "not reachable" in raw["note"]
