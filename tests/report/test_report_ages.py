"""The report's g2-by-age part (issue 35): a file with two-time data gets the numbers
`xpcsviewer ages` gives (law slope and its 95 % interval, verdict, tau errors' source,
windows converged and flagged), in the HTML and the PDF, with the ages figure; a file
without two-time data gets none."""

from __future__ import annotations

import numpy as np
import pytest


def _section(path):
    from xpcsviewer.report.sections import file_section

    return file_section(str(path))


@pytest.fixture(scope="module")
def aged(age_lag_only_file):
    return age_lag_only_file, _section(age_lag_only_file)


def test_numbers_are_those_of_the_ages_command(aged):
    from xpcsviewer.jobs.ages import ages_file

    path, sec = aged
    out = ages_file(path)  # the command's defaults: 5 windows, model auto, linear law
    a = sec["ages"]
    assert a["source"] == out.source and a["law"] == "linear" and a["windows"] == 5
    assert a["tau_error_source"] == out.fits.tau_err_source == "fit"
    assert [r["bin"] for r in a["bins"]] == out.cuts.bins.tolist()
    for j, r in enumerate(a["bins"]):
        lf = out.fits.laws["linear"][j]
        assert r["verdict"] == lf.verdict
        for got, want in ((r["slope"], lf.value["a"]), (r["slope_lo95"], lf.interval["a"][0]),
                          (r["slope_hi95"], lf.interval["a"][1]),
                          (r["tau0_s"], lf.value["tau0"])):
            if np.isfinite(want):
                assert got == pytest.approx(want, rel=1e-12)
            else:
                assert got is None
        assert r["converged"] == int(np.sum(out.fits.status[0, :, j] == "converged"))
        assert r["flagged"] == int(np.sum(out.fits.disagree[:, j]))
    # bins 2 and 3 decay within the run: a law and a verdict other than undetermined
    assert any(r["verdict"] != "undetermined" and r["slope"] is not None for r in a["bins"])


def test_html_and_pdf_carry_the_table_and_the_figure(aged):
    from xpcsviewer.report.content import AGES_COLUMNS, ages_rows, fmt
    from xpcsviewer.report.html import render_html
    from xpcsviewer.report.pdf import plan_pages

    path, sec = aged
    from xpcsviewer.report import collect_report

    report = collect_report([path], workers=1)
    sec = report["sections"][0]
    rows = ages_rows(sec)
    assert len(rows) == len(sec["ages"]["bins"]) and all(len(r) == len(AGES_COLUMNS)
                                                        for r in rows)
    r = next(b for b in sec["ages"]["bins"] if b["slope"] is not None)
    text = f"a = {fmt(r['slope'], 3)} [{fmt(r['slope_lo95'], 3)}, {fmt(r['slope_hi95'], 3)}]"
    page = render_html(report)
    assert "g\u2082 by sample age" in page and text in page
    lines = [t for pg in plan_pages(report) for _, t, _ in pg if isinstance(t, str)]
    assert any("g\u2082 by sample age" in t for t in lines)
    assert any(text in t for t in lines)
    figs = [f for f in sec["figures"] if f["kind"] == "ages"]
    assert len(figs) == 1 and figs[0]["pngs"] and figs[0]["pngs"][0][:4] == b"\x89PNG"


def test_a_file_without_two_time_has_no_ages_part(tiny_demo_dir):
    from xpcsviewer.report.content import ages_rows, ages_text

    path = next(tiny_demo_dir.glob("T01_*.hdf"))
    sec = _section(path)
    assert sec["ages"] is None and ages_text(sec) is None and ages_rows(sec) == []
    assert not [f for f in sec["figures"] if f["kind"] == "ages"]


def test_the_figure_is_drawn_from_the_tables_analysis(age_lag_only_file, monkeypatch):
    # one analysis per file: the figure reuses the table's (every bin's), at its bin
    import xpcsviewer.jobs.ages_bin as ages_run

    def again(*a, **k):
        raise AssertionError("analysed twice")

    monkeypatch.setattr(ages_run, "run_ages", again)
    sec = _section(age_lag_only_file)
    figs = [f for f in sec["figures"] if f["kind"] == "ages"]
    assert len(figs) == 1 and figs[0]["pngs"] and not figs[0]["note"]
    first = next(r for r in sec["ages"]["bins"] if r["verdict"] != "undetermined")
    assert f"bin {first['bin']}" in figs[0]["caption"]
