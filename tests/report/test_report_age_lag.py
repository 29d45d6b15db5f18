"""The report of a file with only a multi-tau two-time age x lag map (issue 35:
``correlate --mode multitau --twotime-ages``): its two-time figures are export's, drawn
from that map, within the thumbnail cap, and its provenance names the map's bins,
frames, frame time and levels; a full-map file's report is as before."""

from __future__ import annotations

import io

import numpy as np

from xpcsviewer.cli import main


def _twotime(sec):
    return [f for f in sec["figures"] if f["kind"] == "twotime"]


def test_report_draws_the_age_lag_map(age_lag_only_file, tmp_path):
    from PIL import Image

    from xpcsviewer.io.results.age_lag import read_age_lag
    from xpcsviewer.report import collect_report
    from xpcsviewer.report.build import MAX_HTML_BYTES
    from xpcsviewer.report.content import provenance_rows
    from xpcsviewer.report.html import render_html

    rep = collect_report([age_lag_only_file], workers=1)
    sec = rep["sections"][0]
    figs = _twotime(sec)
    assert [f["caption"].split("bin ")[1].split(" ")[0] for f in figs] == ["1", "2", "3"]
    for f in figs:
        assert "age \u00d7 lag map" in f["caption"] and not f["note"]
        assert len(f["pngs"]) == 1
        im = Image.open(io.BytesIO(f["pngs"][0]))
        assert im.size[0] > 1.5 * im.size[1]  # the map and its g2 side by side
        assert np.asarray(im.convert("L")).std() > 20  # drawn, not a blank page
    amap = read_age_lag(age_lag_only_file)
    row = dict(provenance_rows(sec))["two-time"]
    assert f"of 3 bins (1-3): 300 frames of 0.01 s, {len(amap.levels)} levels" in row
    assert "no full two-time map" in row
    text = render_html(rep)
    assert len(text.encode()) < MAX_HTML_BYTES
    assert text.count("two-time age \u00d7 lag map C(age, lag)") == 2 * 3  # alt + caption
    html, pdf = tmp_path / "r.html", tmp_path / "r.pdf"
    assert main(["report", str(age_lag_only_file), "-o", str(html), "--pdf", str(pdf),
                 "--workers", "1", "--quiet"]) == 0
    assert "bin 3 (no full map in the file)" in html.read_text(encoding="utf-8")
    assert pdf.stat().st_size > 0


def test_the_thumbnail_cap_holds_for_the_map(age_lag_only_file, monkeypatch):
    from xpcsviewer.io import read_result
    from xpcsviewer.report import sections

    monkeypatch.setattr(sections, "MAX_TWOTIME", 2)
    figs = sections._figures(read_result(age_lag_only_file), None, None, 50.0,
                             kinds=("twotime",))
    assert [f["caption"].split("bin ")[1].split(" ")[0] for f in figs] == ["1", "2"]


def test_a_full_map_file_is_reported_as_before(tiny_demo_dir):
    from xpcsviewer.io import read_result
    from xpcsviewer.report import sections
    from xpcsviewer.report.content import provenance_rows

    p = next(tiny_demo_dir.glob("T02*_results.hdf"))
    res = read_result(p)
    figs = sections._figures(res, None, None, 50.0, kinds=("twotime",))
    assert [f["caption"] for f in figs] == ["two-time C(t\u2081, t\u2082), bin 1"]
    assert figs[0]["pngs"]
    prov = sections._provenance(res, p, "0")
    assert prov["age_lag"] is None
    assert "two-time" not in dict(provenance_rows({"provenance": prov}))
