"""The report (issue 36, item 1): its numbers are the fit table's, it is self-contained
valid HTML5, the PDF has its pages and TrueType fonts, every bin of every file is listed
with its status, and bad files or outputs are handled as every command handles them."""

from __future__ import annotations

import hashlib
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from xpcsviewer.cli import main
from xpcsviewer.report.content import fmt, fmt_pm

VOID = {"meta", "img", "br", "hr", "link", "input", "col", "area", "base", "source", "wbr"}


class _Check(HTMLParser):
    """Balanced structure, unique ids, and the bin rows' data attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.ids: list[str] = []
        self.tags: list[str] = []
        self.doctype = ""
        self.rows: list[dict[str, str]] = []
        self._row: dict[str, str] | None = None
        self._cell: list[str] | None = None

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        self.tags.append(tag)
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "tr" and "data-bin" in a:
            self._row = {**a, "cells": []}
        if tag == "td" and self._row is not None:
            self._cell = []
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            return
        self.stack.pop()
        if tag == "td" and self._row is not None and self._cell is not None:
            self._row["cells"].append("".join(self._cell))
            self._cell = None
        if tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def check_html(text: str) -> _Check:
    c = _Check()
    c.feed(text)
    c.close()
    return c


def pdf_font_problems(data: bytes) -> list[str]:
    out = []
    if re.search(rb"/Subtype\s*/Type3", data):
        out.append("Type 3 font in the PDF")
    if not re.search(rb"/FontFile2|/Subtype\s*/TrueType|/CIDFontType2", data):
        out.append("no TrueType font embedded")
    return out


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def tiny_report(tiny_demo_dir, tmp_path_factory):
    """The report of the tiny demo set (in this process), with its inputs' checksums."""
    from xpcsviewer.report import write_report

    files = sorted(p for p in tiny_demo_dir.glob("*_results.hdf"))
    before = {p: _sha(p) for p in files}
    out = tmp_path_factory.mktemp("report")
    o = write_report(files, out / "r.html", out / "r.pdf", workers=1)
    return files, before, o, (out / "r.html").read_text(encoding="utf-8"), (out / "r.pdf")


def test_numbers_are_the_fit_tables(tiny_report):
    """Every bin row carries the fit table's values (an independent fit of the same
    file with the one fit loop) and prints them with the report's format."""
    from xpcsviewer.fitting.block_fits import fit_curves
    from xpcsviewer.fitting.blocks import g2_blocks
    from xpcsviewer.fitting.spec import FitSpec
    from xpcsviewer.io import read_result

    files, _, _, text, _ = tiny_report
    rows = check_html(text).rows
    for p in files:
        res = read_result(p)
        fits = fit_curves(g2_blocks([res]), FitSpec("auto"))
        mine = [r for r in rows if r["data-file"] == str(p)]
        # every bin of the file is listed, once, with its status
        assert sorted(int(r["data-bin"]) for r in mine) == list(
            range(1, res.multitau.g2.shape[1] + 1))
        c, ce = fits.reported("contrast")
        for r in mine:
            b = fits.find(0, int(r["data-bin"]) - 1)
            t, te = fits.reported(fits.tau_name(b))
            assert r["data-status"] == str(fits.status[b])
            assert r["cells"][5] == str(fits.status[b])
            assert r["cells"][6] == str(fits.detail[b])
            for key, v in (("data-q", fits.q[b]), ("data-contrast", c[b]), ("data-tau", t[b]),
                           ("data-chi2-red", fits.chi2_red[b])):
                if np.isfinite(v):
                    assert float(r[key]) == pytest.approx(float(v), rel=1e-9), key
                else:
                    assert r[key] == "None", key
            assert r["cells"][2] == fmt(fits.q[b])
            assert r["cells"][7] == fmt_pm(c[b] if np.isfinite(c[b]) else None,
                                           ce[b] if np.isfinite(ce[b]) else None)
            if np.isfinite(t[b]):
                assert r["cells"][8].endswith(fmt_pm(t[b], te[b] if np.isfinite(te[b]) else None))


def test_self_contained(tiny_report):
    _, _, o, text, _ = tiny_report
    low = text.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:|//|file:)""", low)
    assert "<script" not in low and "<link" not in low and "<iframe" not in low
    assert "@import" not in low and "url(" not in low
    srcs = re.findall(r'src="([^"]{0,40})', text)
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)
    hrefs = re.findall(r'href="([^"]*)"', text)
    assert all(h.startswith("#") for h in hrefs)
    assert o.html_bytes == len(text.encode("utf-8")) <= 10_000_000


def test_valid_html5(tiny_report):
    _, _, _, text, _ = tiny_report
    c = check_html(text)
    assert c.doctype.lower() == "doctype html"
    assert c.problems == [] and c.stack == []
    assert len(c.ids) == len(set(c.ids))
    assert c.tags[:3] == ["html", "head", "meta"] and c.tags.count("body") == 1
    assert "figure" in c.tags and "table" in c.tags


def test_pdf_pages_and_fonts(tiny_report):
    from xpcsviewer.report import collect_report
    from xpcsviewer.report.pdf import plan_pages

    files, _, o, text, pdf = tiny_report
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and b"%%EOF" in data[-64:]
    pages = len(re.findall(rb"/Type\s*/Page[^s]", data))
    assert pages == o.pdf_pages == len(plan_pages(collect_report(files, workers=1)))
    assert pages >= 1 + len(files)  # the summary, then each file on its own pages
    assert pdf_font_problems(data) == []
    # the same figures in both: one image per HTML figure
    assert len(re.findall(rb"/Subtype\s*/Image", data)) >= text.count("<figure>")


def test_summary_lists_failed_bins_with_reasons(tiny_report):
    """The summary names every bin that is not converged, its status and a reason."""
    from xpcsviewer.report.content import AGEING_COLUMN, SUMMARY_COLUMNS, file_summary
    from xpcsviewer.report.sections import file_section

    files, _, _, text, _ = tiny_report
    for p in files:
        sec = file_section(str(p), figures=False)
        s = file_summary(sec)
        assert set(s) == {*SUMMARY_COLUMNS, AGEING_COLUMN}
        bad = [b for b in sec["bins"] if b["status"] != "converged"]
        for b in bad:
            assert b["status"] in s["failed bins: why"]
            assert re.search(rf"\b{b['bin']}\b", s["failed bins: why"])
        if not bad:
            assert s["failed bins: why"] == "none"
        assert f"{len(sec['bins']) - len(bad)}/{len(sec['bins'])} converged" == s["bins"]
        assert s["failed bins: why"].replace("<", "&lt;").replace(">", "&gt;") in text \
            or "&" in s["failed bins: why"]


def test_inputs_unchanged_and_file_sections(tiny_report):
    files, before, _, text, _ = tiny_report
    assert {p: _sha(p) for p in files} == before
    for p in files:
        assert before[p] in text  # the checksum is in the provenance
    assert "two-time C(t" in text  # T02 has two-time: its thumbnails
    assert "numpy" in text and "h5py" in text and "jax" in text


def test_bad_file_and_names_escaped(tiny_demo_dir, tmp_path, capsys):
    """A file that cannot be read is reported (exit 3), the others are; a name with
    HTML characters stays text."""
    src = next(tiny_demo_dir.glob("T01*_results.hdf"))
    odd = tmp_path / "a<b>&c_results.hdf"
    shutil.copy(src, odd)
    bad = tmp_path / "broken_results.hdf"
    bad.write_bytes(b"not hdf5")
    out = tmp_path / "r.html"
    code = main(["report", str(odd), str(bad), "-o", str(out), "--workers", "1", "--quiet"])
    assert code == 3
    err = capsys.readouterr().err
    assert "broken_results.hdf" in err and "Traceback" not in err
    text = out.read_text(encoding="utf-8")
    assert "a&lt;b&gt;&amp;c_results" in text and "a<b>" not in text
    c = check_html(text)
    assert c.problems == [] and c.stack == []
    assert "not read" in text


def test_refuses_existing_output_and_inputs(tiny_demo_dir, tmp_path, capsys):
    src = next(tiny_demo_dir.glob("T01*_results.hdf"))
    out = tmp_path / "r.html"
    out.write_text("keep")
    assert main(["report", str(src), "-o", str(out), "--quiet"]) == 2
    assert out.read_text() == "keep"
    assert "r.html" in capsys.readouterr().err
    assert main(["report", str(src), "-o", str(tmp_path / "r.txt"), "--quiet"]) == 2


def test_html_shrinks_to_the_size_cap(tiny_report, monkeypatch):
    """A report over the cap has its figures scaled down until the page fits."""
    from xpcsviewer.report import build, collect_report

    files = tiny_report[0]
    rep = collect_report(files[:1], workers=1)
    full = len(build.html_within_limit(rep).encode("utf-8"))
    figs = sum(len(p) for s in rep["sections"] for f in s["figures"] for p in f["pngs"])
    cap = full - figs // 2
    monkeypatch.setattr(build, "MAX_HTML_BYTES", cap)
    rep = collect_report(files[:1], workers=1)
    text = build.html_within_limit(rep)
    assert len(text.encode("utf-8")) <= cap
    assert check_html(text).problems == []


@pytest.mark.slow
def test_process_pool_gives_the_same_report(tiny_report):
    """Two processes give the same sections as one (the per-file work is independent)."""
    from xpcsviewer.report import collect_report

    files = tiny_report[0]
    one = collect_report(files, workers=1)
    two = collect_report(files, workers=2)
    for a, b in zip(one["sections"], two["sections"], strict=True):
        assert a["bins"] == b["bins"] and a["diffusion"] == b["diffusion"]
        assert a["provenance"] == b["provenance"]
        assert [f["kind"] for f in a["figures"]] == [f["kind"] for f in b["figures"]]
    # a run of files: I(q) of all of them, and the series
    assert [f["kind"] for f in one["set_figures"]] == ["saxs1d", "series"]
    assert all(f["pngs"] for f in one["set_figures"])


@pytest.mark.realdata
def test_real_files(real_data_dir, tmp_path):
    """A real 8-ID-I file: every bin listed with its status; D only where diffusive."""
    from xpcsviewer.report import write_report

    files = sorted((real_data_dir / "aps8idi_llps_saxpcs").glob("*_results.hdf"))[:1]
    o = write_report(files, tmp_path / "r.html", workers=1)
    text = (tmp_path / "r.html").read_text(encoding="utf-8")
    c = check_html(text)
    assert c.problems == [] and o.errors == []
    from xpcsviewer.io import read_result

    n = read_result(files[0]).multitau.g2.shape[1]
    assert len(c.rows) == n
    from xpcsviewer.report.sections import file_section

    sec = file_section(str(files[0]), figures=False)
    if sec["diffusion"]["verdict"] != "diffusive":
        assert sec["diffusion"]["D"] is None and "radius_nm" not in sec["diffusion"]


def test_data_quality_lists_the_pixel_audit(tiny_demo_dir):
    """A file with a per-pixel G2 stack: its audit's pixels of most leverage, in the
    audit's order, with their bins (1-based, as the bin table); others say why not."""
    from xpcsviewer.compute.detector.pixel_audit import audit_table_rows
    from xpcsviewer.jobs.pixel_audit import audit_file
    from xpcsviewer.report.content import quality_rows
    from xpcsviewer.report.sections import AUDIT_TOP, file_section

    side = next(p for p in tiny_demo_dir.glob("T03*_results.hdf") if not p.stem.endswith("_G2"))
    rows = quality_rows(file_section(str(side), figures=False))
    want = audit_table_rows(audit_file(side), top=AUDIT_TOP)[1:]
    got = [name for name, _ in rows if name.startswith("bin ")]
    assert got == [f"bin {r[1]}, pixel ({r[2]}, {r[3]})" for r in want] and got
    plain = next(tiny_demo_dir.glob("T01*_results.hdf"))
    text = dict(quality_rows(file_section(str(plain), figures=False)))["pixel audit"]
    assert text.startswith("not done")


@pytest.mark.slow
def test_summary_answers_the_newcomer_on_the_demo(demo_set_dir):
    """From the summary alone: contrast, tau per q, diffusive (with D and the radius of
    the file's truth), damaged (the beam-damage demo file) and the failed bins."""
    from xpcsviewer.io import read_result
    from xpcsviewer.report.content import file_summary
    from xpcsviewer.report.sections import file_section

    a01 = next(demo_set_dir.glob("A01*_results.hdf"))
    e01 = next(demo_set_dir.glob("E01*_results.hdf"))
    s = file_summary(file_section(str(a01), figures=False))
    truth = read_result(a01).sample
    assert s["diffusive?"].startswith("yes: b = ")
    r = float(re.search(r"radius ([\d.]+) ", s["D, radius"]).group(1))
    assert r == pytest.approx(float(truth["radius"]) * 1e9, rel=0.25)
    c = float(s["contrast"].split()[0])
    assert c == pytest.approx(float(truth["contrast"]), rel=0.25)
    assert s["damaged?"].startswith("no: ")
    assert re.match(r"1: [\d.e+-]+ \u00b1 ", s["\u03c4 per q-bin (s)"])
    d = file_summary(file_section(str(e01), figures=False))
    assert d["damaged?"].startswith("yes: ")


def test_report_figures_are_exports(tiny_demo_dir):
    """The report's picture of a view is export's figure: the axes where export's own
    save puts them (its layout kept, not recomputed: within 1 % of the page), and the
    pixels of that figure up to the 256-colour quantizer's error."""
    import io

    from PIL import Image

    from xpcsviewer.export import make_figures
    from xpcsviewer.io import read_result
    from xpcsviewer.report.sections import png_bytes

    res = read_result(next(tiny_demo_dir.glob("T02*_results.hdf")))
    for kind in ("saxs2d", "stability", "twotime"):
        ref = make_figures(kind, [res], "double")[0]
        ref.savefig(io.BytesIO(), format="rgba", dpi=80)  # export's route: laid out again
        fig = make_figures(kind, [res], "double")[0]
        got = Image.open(io.BytesIO(png_bytes(fig, 80))).convert("RGB")
        pos = [np.array(a.get_position().bounds) for a in fig.axes]
        want = [np.array(a.get_position().bounds) for a in ref.axes]
        assert len(pos) == len(want) and max(np.abs(a - b).max() for a, b in
                                             zip(pos, want, strict=True)) < 0.01, kind
        buf = io.BytesIO()
        fig.savefig(buf, format="rgba", dpi=80)
        w, h = got.size
        raw = np.frombuffer(buf.getvalue(), np.uint8).reshape(h, w, 4)[..., :3].astype(int)
        assert np.percentile(np.abs(np.asarray(got, int) - raw), 99) <= 16, kind


def test_one_qmap_figure_per_qmap(tiny_report):
    """Files of one q-map (same hash) show its figure once; the others point to it."""
    from xpcsviewer.io import read_result
    from xpcsviewer.report import collect_report

    files = tiny_report[0]
    assert len({read_result(p).qmap.hash for p in files}) == 1
    rep = collect_report(files[:2], workers=1)
    q = [next(f for f in s["figures"] if f["kind"] == "qmap") for s in rep["sections"]]
    assert q[0]["pngs"] and not q[1]["pngs"]
    assert files[0].name in q[1]["note"] and "same hash" in q[1]["note"]
