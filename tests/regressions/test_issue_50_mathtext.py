"""Issue 50, item 8: a file name with ``$…{`` is drawn as written, never parsed as
mathtext (which removed every figure of `export` and `report`)."""

from __future__ import annotations

import shutil

import pytest

from xpcsviewer.cli import main

NAME = "A$x{1$b_results.hdf"  # a "$" pair around an unclosed brace


@pytest.fixture()
def odd_named(tiny_demo_dir, tmp_path):
    src = tiny_demo_dir / "T01_tiny_results.hdf"
    dst = tmp_path / NAME
    shutil.copy(src, dst)
    return dst


@pytest.mark.parametrize("plot", ["g2", "saxs1d", "saxs2d"])
def test_export_draws_a_name_with_dollars(odd_named, tmp_path, capsys, plot):
    out = tmp_path / "figs"
    assert main(["export", str(odd_named), "--plot", plot, "--format", "svg", "-o",
                 str(out), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "cannot be drawn" not in err
    svgs = list(out.glob("*.svg"))
    assert svgs
    text = "".join(p.read_text() for p in svgs)
    assert "A$x{1$b" in text  # the name as written (SVG keeps text as text)


def test_report_keeps_its_figures(odd_named, tmp_path, capsys):
    html = tmp_path / "r.html"
    pdf = tmp_path / "r.pdf"
    assert main(["report", str(odd_named), "-o", str(html), "--pdf", str(pdf),
                 "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "not drawn" not in err
    page = html.read_text()
    assert "A$x{1$b" in page and page.count("<img") >= 2
    assert pdf.read_bytes()[:5] == b"%PDF-"


def test_escape_keeps_an_escaped_dollar():
    from xpcsviewer.export._layout import _escape

    assert _escape("a$b$") == "a\\$b\\$"
    assert _escape("a\\$b") == "a\\$b"
