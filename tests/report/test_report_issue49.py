"""The report's summary and sections (issue 49, item 4): a two-time file's summary row
gives its ageing law per bin (the ages table's numbers), sections without data are left
out (no empty bin table, no tau(q) line, no empty Figures heading), and no text quotes a
tau its status does not allow (the fit table's rule, ``tau_quotable``)."""

from __future__ import annotations

import copy
import re
from html import unescape

import pytest

from xpcsviewer.report.content import (
    AGEING_COLUMN,
    ages_verdicts,
    file_summary,
    summary_columns,
    summary_rows,
)

_GEO = {"shape": (24, 24), "energy_kev": 10.0, "det_dist_m": 5.0, "pixel_size_m": 150e-6,
        "bcx": 11.5, "bcy": 12.0}
# a gel that ages, two-time only (as the demo's C01), small enough for a test
_AGEING = {
    "name": "C09_tiny_ageing", "description": "tiny ageing gel, two-time only",
    "geometry": _GEO, "beamstop_px": 2, "partition": {"dq_num": 2, "sq_num": 4},
    "acquisition": {"frame_time": 0.02, "n_frames": 200, "rate": 3.0, "background": 0.05},
    "sample": {"model": "ageing", "radius_m": 100e-9, "temperature_k": 298.15,
               "viscosity_pa_s": 2.0, "contrast": 0.2, "ageing_time_s": 2.0},
    "analysis": ("Twotime",), "twotime": {"n_frames": 200, "bins": [1, 2]},
}


@pytest.fixture(scope="module")
def twotime_only(tmp_path_factory):
    """(path, section without figures) of a two-time-only file."""
    from unittest import mock

    from xpcsviewer.report.sections import file_section
    from xpcsviewer.synthetic import demo as demo_mod

    out = tmp_path_factory.mktemp("tiny_ageing")
    with mock.patch.object(demo_mod, "DEMO_SPECS", [copy.deepcopy(_AGEING)]):
        demo_mod.write_demo(out, seed=0)
    path = next(out.glob("C09_*_results.hdf"))
    return path, file_section(str(path), figures=False, saxs1d=False)


@pytest.fixture(scope="module")
def t01(tiny_demo_dir):
    """The section (no figures) of the tiny demo's multi-tau file."""
    from xpcsviewer.report.sections import file_section

    return file_section(str(next(tiny_demo_dir.glob("T01_*.hdf"))), figures=False,
                        saxs1d=False)


def _report(sections):
    from xpcsviewer.report.content import software_versions

    return {"title": "t", "created": "now", "versions": software_versions(),
            "fit_text": "least squares", "sections": sections, "set_figures": [],
            "set_notes": [], "dpi": 70}


def _summary_cells(page: str) -> list[dict[str, str]]:
    """The summary table of a rendered page: one {column: text} per file."""
    table = page[page.index('<table class="summary">'):]
    table = table[:table.index("</table>")]
    head = [unescape(h) for h in re.findall(r"<th>(.*?)</th>", table)]
    rows = re.findall(r"<tr>((?:<td>.*?</td>)+)</tr>", table)
    return [dict(zip(head, (unescape(c) for c in re.findall(r"<td>(.*?)</td>", r)),
                     strict=True)) for r in rows]


def _ageing_sec(verdicts: list[tuple[int, str, float | None]]) -> dict:
    """A two-time-only section by hand: (bin, verdict, slope) per bin."""
    rows = [{"bin": b, "q": 0.001 * b, "verdict": v, "slope_name": "a", "slope": s,
             "slope_lo95": None if s is None else s - 0.1,
             "slope_hi95": None if s is None else s + 0.1, "tau0_s": 0.2, "n_points": 4,
             "converged": 0 if s is None else 4, "flagged": 0} for b, v, s in verdicts]
    return {"path": "/x/C.hdf", "label": "C", "bins": [], "notes": [], "multitau": False,
            "diffusion": {"verdict": "no_fits", "message": "no g2 fits", "n_good": 0},
            "stability": {"verdict": "stable", "summary": "stable"},
            "ages": {"source": "full maps", "law": "linear", "windows": 5,
                     "contrast": [0.18, 0.2, 0.21], "tau_error_source": "fit",
                     "bins": rows}}


# ------------------------------------------------------------------ summary of ages
def test_a_two_time_files_summary_gives_its_ageing_verdicts(twotime_only):
    from xpcsviewer.report.html import render_html

    _path, sec = twotime_only
    assert sec["bins"] == [] and sec["ages"]["bins"]
    page = render_html(_report([sec]))
    row = _summary_cells(page)[0]
    cell = row[AGEING_COLUMN]
    # every two-time bin, with the ages table's verdict (or "no law" where undetermined)
    for r in sec["ages"]["bins"]:
        want = (f"bin {r['bin']}: no law" if r["verdict"] == "undetermined"
                else f"bin {r['bin']}: {r['verdict']} (a = ")
        assert want in cell
    assert cell == "; ".join(ages_verdicts(sec))
    # not the blank row of issue 49
    assert "no fitted bins" not in row["failed bins: why"]
    assert "no g2 fits" not in row["diffusive?"]
    assert row["bins"].startswith(f"{len(sec['ages']['bins'])} two-time bins")
    if sec["ages"]["contrast"]:
        assert "constant-age cuts" in row["contrast"] and not row["contrast"].startswith("\u2013")


def test_the_ageing_words_are_the_ages_tables():
    sec = _ageing_sec([(1, "undetermined", None), (2, "ageing", 0.611),
                       (3, "stationary", -0.01)])
    v = ages_verdicts(sec)
    assert v[0].startswith("bin 1: no law: 4 \u03c4 drawn, 0 of 5 windows converged")
    assert v[1] == "bin 2: ageing (a = 0.611 [0.511, 0.711])"
    assert v[2] == "bin 3: stationary (a = -0.01 [-0.11, 0.09])"
    s = file_summary(sec)
    assert s["failed bins: why"].startswith("no ageing law: bin 1")
    assert s["bins"] == "3 two-time bins, 2 with an ageing law"
    assert s["contrast"].startswith("0.2 (median of 3 converged constant-age cuts")


def test_the_ageing_column_only_in_a_set_with_two_time_data():
    multitau = {**_ageing_sec([]), "ages": None, "multitau": True}
    assert AGEING_COLUMN not in summary_columns([multitau])
    cols = summary_columns([multitau, _ageing_sec([(2, "ageing", 0.5)])])
    assert cols[cols.index(AGEING_COLUMN) - 1] == "\u03c4 per q-bin (s)"
    rows = summary_rows([multitau, _ageing_sec([(2, "ageing", 0.5)])])
    assert rows[0][cols.index(AGEING_COLUMN)] == "\u2013"
    assert rows[1][cols.index(AGEING_COLUMN)].startswith("bin 2: ageing")


# ------------------------------------------------------------ empty sections left out
def test_sections_without_data_are_left_out(twotime_only, t01):
    from xpcsviewer.report.html import render_html
    from xpcsviewer.report.pdf import plan_pages

    _path, sec = twotime_only
    multi = t01
    page = render_html(_report([sec, multi]))
    one = page[page.index('<section id="file1">'):page.index('<section id="file2">')]
    two = page[page.index('<section id="file2">'):]
    # the two-time file: no empty bin table, no tau(q) line, no Figures heading; one line why
    assert '<table class="bins">' not in one and "Fits: every q-bin" not in one
    assert "the exponent and D" not in one and "<h3>Figures</h3>" not in one
    assert one.count("no multi-tau g2 in the file") == 1
    # the multi-tau file keeps them
    assert '<table class="bins">' in two and "the exponent and D" in two
    lines = [t for pg in plan_pages(_report([sec])) for _, t, _ in pg if isinstance(t, str)]
    assert not any("Fits: every q-bin" in t or "the exponent and D" in t for t in lines)
    assert not any(t.startswith("Bins per status") for t in lines)  # no bins in the set


# --------------------------------------------------------------- no unquotable tau
_NUM = r"[-+]?\d[\d.]*(?:e[-+]?\d+)?"


def quoted_tau_problems(page: str, sections: list[dict]) -> list[str]:
    """Every tau value the page prints (the summary's tau column and the bin tables) of
    a bin whose status does not allow it (``tau_quotable``); [] when none."""
    from xpcsviewer.fitting.status_limits import tau_quotable

    allowed = {}
    for s in sections:
        for b in s.get("bins", []):
            allowed[s.get("label"), b["bin"]] = (
                tau_quotable(b["status"], b["reason"], b["tau_name"], b.get("limit_name", "")),
                b["status"])
    out = []
    for s, row in zip(sections, _summary_cells(page), strict=True):
        for part in row["\u03c4 per q-bin (s)"].split("; "):
            m = re.match(rf"(\d+): ({_NUM})", part)
            if m:
                ok, st = allowed[s.get("label"), int(m.group(1))]
                if not ok:
                    out.append(f"summary {s.get('label')} {part} ({st})")
    rows = re.findall(r'<tr class="[^"]*" id="[^"]*" data-file="[^"]*" data-bin="(\d+)" '
                      r'data-status="([^"]*)"[^>]*>(.*?)</tr>', page)
    for k, s in enumerate(sections):
        sec_html = page[page.find(f'<section id="file{k + 1}">'):]
        sec_html = sec_html[:sec_html.find("</section>")]
        for b, st, cells in re.findall(r'data-bin="(\d+)" data-status="([^"]*)"[^>]*>(.*?)</tr>',
                                       sec_html):
            tau = unescape(re.findall(r"<td[^>]*>(.*?)</td>", cells)[8])
            if re.match(rf"(tau\d? )?{_NUM}", tau) and not allowed[s.get("label"), int(b)][0]:
                out.append(f"bin table {s.get('label')} bin {b}: {tau} ({st})")
    assert rows or not any(s.get("bins") for s in sections)
    return out


def test_a_tau_the_status_does_not_allow_is_never_printed(monkeypatch, t01):
    """The text's own check: a section whose numbers carry a tau beside a status that
    does not allow one (as issue 49's "16: 13.1 ± 1.2e+02 (unresolved)") prints none."""
    from xpcsviewer.report.html import render_html

    def b(n, status, tau, limit="", limit_name=""):
        return {"bin": n, "label": str(n), "q": 0.01, "phi": 0.0, "model": "single",
                "status": status, "reason": "why", "contrast": 0.2, "contrast_err": 0.01,
                "tau_name": "tau", "tau": tau, "tau_err": None if tau is None else 120.0,
                "tau_mean": None, "tau_mean_err": None, "limit": limit,
                "limit_name": limit_name, "chi2_red": 1.0}

    sec = {**t01, "label": "C", "ages": None,
           "bins": [b(1, "converged", 0.01), b(16, "unresolved", 13.1),
                    b(17, "misfit", 2.0), b(18, "unresolved", 5.0, "tau > 3 s", "tau")]}
    row = file_summary(sec)
    assert row["\u03c4 per q-bin (s)"] == "1: 0.01 \u00b1 1.2e+02; 18: tau > 3 s"
    assert "13.1" not in row["\u03c4 per q-bin (s)"]
    from xpcsviewer.report.content import bin_rows

    taus = {c[1]: c[8] for c, _ in bin_rows(sec)}
    assert taus == {"1": "0.01 \u00b1 1.2e+02", "16": "\u2013", "17": "\u2013",
                    "18": "tau > 3 s"}
    assert quoted_tau_problems(render_html(_report([sec])), [sec]) == []
    # without the check the scan finds the leak in both places
    from xpcsviewer.report import content

    monkeypatch.setattr(content, "tau_shown", lambda b: b["tau"] is not None)
    found = quoted_tau_problems(render_html(_report([sec])), [sec])
    assert any(t.startswith("summary C 16: 13.1") for t in found)
    assert any(t.startswith("bin table C bin 16: 13.1") for t in found)


def test_the_demo_report_quotes_no_unquotable_tau(tiny_demo_dir, twotime_only):
    from xpcsviewer.report.html import render_html
    from xpcsviewer.report.sections import file_section

    secs = [file_section(str(p), figures=False, saxs1d=False)
            for p in sorted(tiny_demo_dir.glob("T0*_results.hdf")) if "_G2" not in p.name]
    secs.append(twotime_only[1])
    page = render_html(_report(secs))
    assert quoted_tau_problems(page, secs) == []


@pytest.mark.realdata
@pytest.mark.slow
def test_real_files_report_quotes_no_unquotable_tau(real_data_dir):
    """The 11 real 8-ID-I files (issue 49 saw "16: 13.1 ± 1.2e+02 (unresolved)")."""
    from xpcsviewer.report.html import render_html
    from xpcsviewer.report.sections import file_section

    files = sorted((real_data_dir / "aps8idi_llps_saxpcs").glob("*_results.hdf"))
    secs = [file_section(str(p), figures=False, saxs1d=False) for p in files]
    page = render_html(_report(secs))
    assert quoted_tau_problems(page, secs) == []
    assert not re.search(rf"{_NUM} \u00b1 {_NUM} \((unresolved|misfit|poor_fit|failed|"
                         r"no_decay|errors_understated)\)", page)


# ------------------------------------------------------------------- figure drawing
def test_report_figures_are_drawn_once_and_are_exports(tiny_demo_dir, monkeypatch):
    """The report's figures are laid out, tidied and drawn in one drawing where nothing
    collides (issue 49: the layout pass and the drawing were most of the report's time):
    the same page size as export's, the axes where export puts them (within 2 % of the
    page), not blank."""
    import io

    import numpy as np
    from matplotlib.figure import Figure
    from PIL import Image

    from xpcsviewer.export import make_figures
    from xpcsviewer.export._fig_common import export_style
    from xpcsviewer.export._layout import tidy_drawn
    from xpcsviewer.io import read_result
    from xpcsviewer.report.sections import figure_pngs

    res = read_result(next(tiny_demo_dir.glob("T02*_results.hdf")))
    draws = []
    orig = Figure.draw
    monkeypatch.setattr(Figure, "draw", lambda self, r: (draws.append(1), orig(self, r))[1])
    n_old = n_new = 0
    for kind in ("saxs2d", "stability", "twotime"):
        draws.clear()
        ref = make_figures(kind, [res], "double")[0]
        buf = io.BytesIO()
        ref.savefig(buf, format="png", dpi=80)  # export's route: a layout pass, a drawing
        want = Image.open(buf)
        old = len(draws)
        with export_style("double"):
            fig = make_figures(kind, [res], tidy=False)[0]
            draws.clear()
            tidy_drawn(fig, 80)
        # one drawing where nothing collides, never more passes than export's route
        assert len(draws) <= old, kind
        n_old, n_new = n_old + old, n_new + len(draws)
        pos = [np.array(a.get_position().bounds) for a in fig.axes]
        ref_pos = [np.array(a.get_position().bounds) for a in ref.axes]
        assert len(pos) == len(ref_pos) and max(np.abs(a - b).max() for a, b in
                                                zip(pos, ref_pos, strict=True)) < 0.02, kind
        got = Image.open(io.BytesIO(figure_pngs(kind, res, 80)[0]))
        assert got.size == want.size, kind
        assert np.asarray(got.convert("L")).std() > 10, kind  # drawn, not a blank page
    assert n_new < n_old


def test_the_pool_starts_with_the_largest_files_and_the_report_keeps_its_order(tmp_path):
    """Issue 49: a two-time file (the largest, 3-5 times a multi-tau file's work) left to
    the end ran alone on one worker; the pool now takes the largest first. The sections
    stay in the order given."""
    from xpcsviewer.report.build import _longest_first

    sizes = {"a": 10, "b": 3000, "c": 10, "d": 500}
    files = []
    for name, n in sizes.items():
        p = tmp_path / f"{name}.hdf"
        p.write_bytes(b"x" * n)
        files.append(str(p))
    files.append(str(tmp_path / "missing.hdf"))
    assert _longest_first(files) == [1, 3, 0, 2, 4]  # equal sizes keep their order
