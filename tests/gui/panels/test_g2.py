"""g2 tab: layouts, ranges, invalid points, fits through the worker, NUTS cancel, export."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from xpcsviewer.gui.context import AppContext
from xpcsviewer.gui.panels.g2 import G2Panel
from xpcsviewer.gui.workers import TaskRunner

_FAKE = Path(__file__).resolve().parents[2] / "export" / "fake_results.py"


def _fake():
    spec = importlib.util.spec_from_file_location("xpcs_test_fake_results_g2", _FAKE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def fake():
    return _fake()


@pytest.fixture(scope="module")
def results(tmp_path_factory, fake):
    d = tmp_path_factory.mktemp("g2panel")
    return [
        fake.make_result(d / "B001_results.hdf", seed=1, kind="both"),
        fake.make_result(d / "B002_results.hdf", seed=2, kind="multitau", beta=0.2),
    ]


@pytest.fixture
def panel(qtbot):
    ctx = AppContext(runner=TaskRunner())
    p = G2Panel(ctx)
    qtbot.addWidget(p)
    p.resize(1200, 800)
    p.show()
    yield p
    p.cancel_jobs()
    ctx.runner.wait_for_done(10000)


def _load(qtbot, panel, results):
    with qtbot.waitSignal(panel.sigUpdated, timeout=10000):
        panel.set_results(results)


def _curves(panel):
    import pyqtgraph as pg

    # data curves; the grey "x" items mark points left out of fits
    return [
        it
        for it in panel.plot_items()
        if isinstance(it, pg.PlotDataItem) and it.opts.get("symbol") is not None
        and not getattr(it, "excluded_points", False)
    ]


def test_layouts_and_points(qtbot, panel, results):
    _load(qtbot, panel, results)
    assert len(panel.plot_widgets()) == 6  # one panel per q-bin
    curves = _curves(panel)
    assert len(curves) == 12  # 2 files x 6 bins
    mt = results[0].multitau
    xs = [c.xData for c in curves]
    # x in seconds (log mode keeps the data in s); invalid points never drawn.
    lens = sorted(x.size for x in xs)
    assert lens[0] == mt.tau.size - 3 and lens[-1] == mt.tau.size
    assert min(x.min() for x in xs) == pytest.approx(mt.tau[0])
    assert max(x.max() for x in xs) == pytest.approx(mt.tau[-1])
    assert all(np.all(c.yData != 0) for c in curves)
    with qtbot.waitSignal(panel.sigUpdated, timeout=10000):
        panel.layout_combo.setCurrentIndex(panel.layout_combo.findData("file"))
    assert len(panel.plot_widgets()) == 2
    with qtbot.waitSignal(panel.sigUpdated, timeout=10000):
        panel.layout_combo.setCurrentIndex(panel.layout_combo.findData("combined"))
    assert len(panel.plot_widgets()) == 1 and len(_curves(panel)) == 12
    # At most "max panels" are drawn; the status says so.
    with qtbot.waitSignal(panel.sigUpdated, timeout=10000):
        panel.layout_combo.setCurrentIndex(panel.layout_combo.findData("qbin"))
    with qtbot.waitSignal(panel.sigUpdated, timeout=10000):
        panel.max_panels.setValue(4)
    assert len(panel.plot_widgets()) == 4
    assert "first 4 of 6 panels" in panel.status.text()


def test_q_and_t_range(qtbot, panel, results):
    _load(qtbot, panel, results)
    panel.qmin.setValue(0.0045)
    panel.qmax.setValue(0.009)
    panel.tmin.setText("0.002")
    panel.tmax.setText("1")
    with qtbot.waitSignal(panel.sigUpdated, timeout=10000):
        panel.q_check.setChecked(True)
    assert len(panel.plot_widgets()) == 3
    with qtbot.waitSignal(panel.sigUpdated, timeout=10000):
        panel.t_check.setChecked(True)
    xs = [c.xData for c in _curves(panel)]
    assert min(x.min() for x in xs) >= 0.002 and max(x.max() for x in xs) <= 1.0


def test_fit_through_worker_fills_table_and_publishes(qtbot, panel, results, fake):
    _load(qtbot, panel, results)
    seen = []
    panel.context.sigSharedChanged.connect(seen.append)
    with qtbot.waitSignal(panel.sigFitsReady, timeout=60000):
        assert panel.run_fit() is not None
    fits = panel.fits
    assert fits.method == "lsq" and fits.n_curves == 12
    assert seen == ["g2_fits"] and panel.context.shared["g2_fits"] is fits
    t = panel.results_table
    assert t.rowCount() == 12
    assert t.horizontalHeaderItem(0).text() == "status"
    assert {t.item(r, 0).text() for r in range(12)} == {"converged"}
    head = [t.horizontalHeaderItem(c).text() for c in range(t.columnCount())]
    assert head[1] == "file"  # several files: the file beside the status (issue 33)
    assert "\u00b1" in t.item(0, head.index("tau (s)")).text()  # tau value +- error
    assert "12 converged" in panel.fit_status.text()
    # the default is the automatic model choice; each row names its model
    assert panel.model() == "auto" and fits.model == "auto"
    head = [t.horizontalHeaderItem(c).text() for c in range(t.columnCount())]
    assert {t.item(r, head.index("model")).text() for r in range(12)} == {"single"}
    np.testing.assert_allclose(
        fits.params["tau"], 1 / (fake.D_TRUE * fits.q**2), rtol=0.1
    )
    # Fit curves overlaid: one line per curve.
    import pyqtgraph as pg

    lines = [
        it
        for it in panel.plot_items()
        if isinstance(it, pg.PlotDataItem) and it.opts.get("symbol") is None
    ]
    assert len(lines) == 12
    assert panel.fit_btn.isEnabled() and not panel.cancel_btn.isEnabled()


def test_fixed_parameter_is_held_at_shown_value(qtbot, panel, results):
    _load(qtbot, panel, results)
    panel.params.set_cell("baseline", "value", 1.001)
    panel.params.set_cell("baseline", "fixed", True)
    with qtbot.waitSignal(panel.sigFitsReady, timeout=60000):
        panel.run_fit()
    np.testing.assert_array_equal(panel.fits.params["baseline"], 1.001)
    np.testing.assert_array_equal(panel.fits.errors["baseline"], 0.0)
    # Replotting (a range change) keeps the user's edit.
    with qtbot.waitSignal(panel.sigUpdated, timeout=10000):
        panel.refresh()
    assert panel.params.overrides()["baseline"] == {"fixed": True, "value": 1.001}


def test_export_fits_csv_json(qtbot, panel, results, tmp_path):
    _load(qtbot, panel, results)
    with qtbot.waitSignal(panel.sigFitsReady, timeout=60000):
        panel.run_fit()
    for name in ("fits.csv", "fits.json"):
        with qtbot.waitSignal(panel.sigExported, timeout=10000):
            panel.export_fits(str(tmp_path / name))
    rows = [
        ln
        for ln in (tmp_path / "fits.csv").read_text().splitlines()
        if not ln.startswith("#")
    ]
    assert len(rows) == 13 and rows[0].startswith("status,status_detail,model,file,bin,q_invA")
    d = json.loads((tmp_path / "fits.json").read_text())
    assert len(d["curves"]) == 12
    # Figure export through the base class uses this panel's options (with fits).
    with qtbot.waitSignal(panel.sigExported, timeout=30000):
        panel.export_figure(str(tmp_path / "g2.png"))
    assert (tmp_path / "g2.png").read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "fits.csv",
        "fits.json",
        "g2.png",
    ]


@pytest.mark.slow
def test_bayesian_fit_band(qtbot, panel, results):
    _load(qtbot, panel, results[:1])
    panel.qmin.setValue(0.0045)
    panel.qmax.setValue(0.0055)
    with qtbot.waitSignal(panel.sigUpdated, timeout=10000):
        panel.q_check.setChecked(True)
    panel.warmup.setValue(100)
    panel.samples.setValue(30)
    panel.chains.setValue(1)
    assert panel.model() == "auto"
    with qtbot.waitSignal(panel.sigFitsReady, timeout=180000):
        panel.run_bayes()
    fits = panel.fits
    # issue 23: the automatic choice stays, each curve sampled with its chosen model
    assert panel.model() == "auto" and fits.model == "auto"
    assert list(fits.model_names()) == ["single"] and panel.shown_fits is not None
    assert fits.method == "bayes" and fits.n_curves == 1
    assert fits.params["tau"][0] == pytest.approx(1 / (1e5 * 0.005**2), rel=0.15)
    # 30 stored draws of one chain cannot reach ESS 100, even after the extension
    # round (it thins to 30): said, with the figures shown
    assert fits.status[0] == "failed" and "ESS" in fits.detail[0]
    head = [panel.results_table.horizontalHeaderItem(c).text()
            for c in range(panel.results_table.columnCount())]
    assert {"r\u0302", "ESS", "div.", "BFMI"} <= set(head)
    import pyqtgraph as pg

    assert any(
        isinstance(it, pg.FillBetweenItem) for it in panel.plot_widgets()[0].items
    )


@pytest.mark.slow
def test_bayesian_cancel(qtbot, panel, results):
    _load(qtbot, panel, results[:1])
    panel.warmup.setValue(100)
    panel.samples.setValue(20000)
    panel.chains.setValue(1)
    runner = panel.context.runner
    with qtbot.waitSignal(runner.sigProgress, timeout=120000):
        panel.run_bayes()
    assert panel.cancel_btn.isEnabled()
    with qtbot.waitSignal(
        runner.sigJobFinished,
        timeout=120000,
        check_params_cb=lambda key, rid: key == "g2:bayes",
    ):
        panel.cancel_fit()
    assert panel.fits is None  # the cancelled result never arrives
    assert panel.fit_btn.isEnabled() and not panel.cancel_btn.isEnabled()
    assert panel.fit_status.text() == "cancelled"


def test_settings_roundtrip(qtbot, panel):
    panel.layout_combo.setCurrentIndex(2)
    panel.offset.setValue(0.05)
    s = panel.get_settings()
    panel.set_settings({"layout": "qbin", "offset": 0.0})
    panel.set_settings(s)
    assert panel.get_settings() == s
    panel.set_settings({"offset": "garbage", "layout": 3})  # ignored, no crash


def test_demo_files_plot(qtbot, panel, demo_set_dir):
    from xpcsviewer.io import read_result

    res = [read_result(p) for p in sorted(demo_set_dir.glob("*_results.hdf"))]
    mt = [r for r in res if r.multitau is not None]
    panel.max_bins.setValue(4)
    panel.max_files.setValue(len(res))  # the demo holds more than the default 20
    panel.max_panels.setValue(256)  # and more q values than the default 36 panels
    with qtbot.waitSignal(panel.sigUpdated, timeout=30000):
        panel.set_results(res)
    curves = _curves(panel)
    # a curve for every bin with a point in range (demo R01's hot pixels, left in on
    # purpose, put two bins out of it: their panels say why, no curve is drawn)
    assert len(curves) == sum(int(np.asarray(r.multitau.valid)[:, :4].any(axis=0).sum())
                              for r in mt)
    t_all = np.concatenate([r.multitau.tau for r in mt])
    assert min(c.xData.min() for c in curves) >= t_all.min() - 1e-15
    assert max(c.xData.max() for c in curves) <= t_all.max() + 1e-15


# ---------------------------------------------------------------- stale fits
def _fit_lines(panel):
    """(file label, g2 column) of every fit line drawn now."""
    out = []
    for v in panel._views[: len(panel.panel_specs)]:  # the pool keeps removed panels
        for slot in v.slots:
            if slot.key is None or slot.fit.xData is None or slot.fit.xData.size == 0:
                continue
            fi, j, _ci, _shift = slot.key
            b = next(b for b in panel.blocks if b.file_index == fi)
            out.append((b.label, int(b.columns[j])))
    return sorted(out)


def _fitted(qtbot, panel):
    with qtbot.waitSignal(panel.sigFitsReady, timeout=60000):
        assert panel.run_fit() is not None
    qtbot.waitUntil(lambda: panel._draw_gen is None, timeout=10000)


def test_fit_is_drawn_only_on_the_curves_it_was_made_from(qtbot, panel, results, tmp_path):
    _load(qtbot, panel, results)
    _fitted(qtbot, panel)
    both = _fit_lines(panel)
    assert len(both) == 12
    # the second file alone: its own fits stay (now file 0), the first file's go
    _load(qtbot, panel, results[1:])
    assert _fit_lines(panel) == [x for x in both if x[0] == results[1].label]
    assert panel.results_table.rowCount() == 6
    assert set(panel.shown_fits.file_labels) == {results[1].label}
    assert "6 more fitted on other pages or files" in panel.fit_status.text()
    # the exported fits and figure are those of the shown curves only
    with qtbot.waitSignal(panel.sigExported, timeout=10000):
        panel.export_fits(str(tmp_path / "fits.json"))
    d = json.loads((tmp_path / "fits.json").read_text())
    assert {c["path"] for c in d["curves"]} == {str(results[1].path)}
    assert panel.figure_options()["fits"].n_curves == 6


def test_fit_of_other_files_is_never_drawn(qtbot, panel, results, fake, tmp_path):
    _load(qtbot, panel, results[:1])
    _fitted(qtbot, panel)
    assert len(_fit_lines(panel)) == 6
    # another file with the same name, bins and delays in another folder
    other = fake.make_result(tmp_path / results[0].path.name, seed=7, kind="multitau")
    _load(qtbot, panel, [other])
    assert _fit_lines(panel) == []
    assert panel.results_table.rowCount() == 0 and panel.shown_fits is None
    assert "other curves" in panel.fit_status.text()
    assert not panel.export_fits_btn.isEnabled()
    assert panel.figure_options()["fits"] is None


def test_fit_arriving_after_a_target_change_is_not_drawn(qtbot, panel, results):
    from xpcsviewer.fitting.block_fits import fit_g2_blocks
    from xpcsviewer.fitting.blocks import g2_blocks

    _load(qtbot, panel, results[:1])
    old = fit_g2_blocks(g2_blocks(results[:1]), "single")
    _load(qtbot, panel, results[1:])  # the user moved on while the fit ran
    with qtbot.waitSignal(panel.sigFitsReady, timeout=10000):
        panel._on_fits(old)
    qtbot.waitUntil(lambda: panel._draw_gen is None, timeout=10000)
    assert _fit_lines(panel) == []
    assert panel.results_table.rowCount() == 0
    assert "not drawn" in panel.fit_status.text()


def test_fit_hidden_when_points_or_model_change(qtbot, panel, results):
    _load(qtbot, panel, results[:1])
    _fitted(qtbot, panel)
    assert len(_fit_lines(panel)) == 6
    # a t range that drops fitted delays: the fits were made from other points
    panel.tmin.setText("0.002")
    panel.tmax.setText("100")
    with qtbot.waitSignal(panel.sigUpdated, timeout=10000):
        panel.t_check.setChecked(True)
    assert _fit_lines(panel) == [] and panel.results_table.rowCount() == 0
    with qtbot.waitSignal(panel.sigUpdated, timeout=10000):
        panel.t_check.setChecked(False)
    assert len(_fit_lines(panel)) == 6  # the same points again: the fit is theirs
    # another model: the single-exponential lines are not the stretched model's fit
    panel.model_combo.setCurrentIndex(panel.model_combo.findData("stretched"))
    qtbot.waitUntil(lambda: panel._draw_gen is None, timeout=10000)
    assert _fit_lines(panel) == [] and panel.results_table.rowCount() == 0
    assert "another model" in panel.fit_status.text()
    # the fit was the automatic choice (the default): only that shows it again
    panel.model_combo.setCurrentIndex(panel.model_combo.findData("auto"))
    qtbot.waitUntil(lambda: panel._draw_gen is None, timeout=10000)
    assert len(_fit_lines(panel)) == 6 and panel.results_table.rowCount() == 6


def test_a_failed_fit_shows_its_reason_in_the_narrow_panel(qtbot, results):
    # Issue 22: a failed bin's reason was in a column that needed sideways scrolling.
    from xpcsviewer.fitting.block_fits import fit_g2_blocks
    from xpcsviewer.fitting.blocks import g2_blocks
    from xpcsviewer.fitting.fit_table import G2Fits
    from xpcsviewer.fitting.results import fits_table
    from xpcsviewer.gui.panels._g2_results import FitResultsTable

    fits = fit_g2_blocks(g2_blocks(results[:1]), "single")
    st, det = fits.status.copy(), fits.detail.copy()
    st[2], det[2] = "failed", "sampler: ESS 180 < 200, r_hat 1.012 > 1.01"
    failed = G2Fits(**{**fits.__dict__, "status": st, "detail": det})
    table = FitResultsTable()
    qtbot.addWidget(table)
    table.resize(330, 300)  # the g2 tab's right column
    table.show()
    table.show_fits(failed)
    row = next(r for r in range(table.rowCount())
               if table.item(r, 0).text().startswith("failed"))
    assert table.item(row, 0).text() == "failed\nESS 180 < 200"
    assert "r_hat 1.012 > 1.01" in table.item(row, 0).toolTip()
    # issue 48: no value for a tau its status does not claim, a failed one's neither
    assert table.item(row, 3).text() == "\u2014"
    # status, its reason and tau readable without scrolling sideways
    fm = table.fontMetrics()
    assert table.columnWidth(0) >= fm.horizontalAdvance("ESS 180 < 200")
    assert table.rowHeight(row) >= 2 * fm.lineSpacing()
    right = table.columnViewportPosition(3) + table.columnWidth(3)
    assert right <= table.viewport().width() - 20, (right, table.viewport().width())
    # exports and the diffusion analysis never quote a failed tau
    assert np.isnan(fits_table(failed)[0]["tau_s"][2])
    assert np.isnan(failed.reported("tau")[0][2]) and not failed.ok[2]


def test_a_fit_published_by_another_tab_is_shown_here(qtbot, panel, results):
    # Issue 25: Diffusion's "Fit g2 now" published a fit the g2 tab never showed; its
    # table kept the older fit. One board: the g2 tab takes the last fit from anyone.
    from xpcsviewer.fitting.block_fits import fit_g2_blocks
    from xpcsviewer.fitting.blocks import g2_blocks

    _load(qtbot, panel, results)
    _fitted(qtbot, panel)
    mine = panel.fits
    theirs = fit_g2_blocks(g2_blocks(results[1:]), panel.model())
    panel.context.set_shared("g2_fits", theirs)
    assert panel.fits is theirs and panel.fits is not mine
    qtbot.waitUntil(lambda: panel._draw_gen is None, timeout=10000)
    assert _fit_lines(panel) == sorted(
        (results[1].label, int(c)) for c in panel.blocks[1].columns)
    assert panel.results_table.rowCount() == 6
    assert "6 curves" in panel.fit_status.text()
    # its own publication does not loop back
    panel.context.set_shared("g2_fits", panel.fits)
    assert panel.fits is theirs


def test_posterior_bands_go_with_their_fit(qtbot, panel, results, monkeypatch):
    # Issue 22 seen again in a real window: after a Bayesian fit and a change of
    # targets the fit lines went but the shaded posterior bands stayed on the new
    # file's panels (pyqtgraph keeps a fill's path when its curves are emptied).
    from xpcsviewer.fitting.block_fits import fit_g2_blocks
    from xpcsviewer.fitting.fit_table import G2Fits

    def fake_band(self, rows, grid):
        one = np.stack([np.full(grid.size, v) for v in (1.05, 1.1, 1.15)])
        return np.stack([one] * len(rows))

    _load(qtbot, panel, results[:1])
    fits = fit_g2_blocks(panel.blocks, panel.model())
    monkeypatch.setattr(G2Fits, "band", fake_band)
    with qtbot.waitSignal(panel.sigFitsReady, timeout=10000):
        panel._on_fits(fits)
    qtbot.waitUntil(lambda: panel._draw_gen is None, timeout=10000)

    def fills():
        return [s.band for v in panel._views[: len(panel.panel_specs)] for s in v.slots
                if s.key is not None and s.band is not None and s.band.isVisible()
                and not s.band.path().isEmpty()]

    assert len(fills()) == 6
    _load(qtbot, panel, results[1:])
    qtbot.waitUntil(lambda: panel._draw_gen is None, timeout=10000)
    assert fills() == []
    panel.show_band.setChecked(True)
    _load(qtbot, panel, results[:1])  # back to the fitted file: its bands come back
    qtbot.waitUntil(lambda: panel._draw_gen is None, timeout=10000)
    assert len(fills()) == 6
    panel.show_band.setChecked(False)
    qtbot.waitUntil(lambda: panel._draw_gen is None, timeout=10000)
    assert fills() == []


def test_parameter_table_says_start_not_value(qtbot, panel):
    # issue 33 (8): an unedited start (contrast 0.029) read as a result beside fitted 0.2
    t = panel.params
    assert t.horizontalHeaderItem(1).text() == "start"
    assert "results table" in t.horizontalHeaderItem(1).toolTip()


def test_results_table_names_the_file_of_each_row_and_keeps_tau_whole(qtbot):
    # issue 33 (7): 48 rows of three files repeated bins 1-16 with the file column out
    # of sight, and tau cells were cut
    from xpcsviewer.fitting.fit_table import G2Fits
    from xpcsviewer.gui.panels._g2_results import FitResultsTable, short_labels

    assert short_labels(["A01_silica_R100nm_water", "A02_silica_R250nm_water"]) == [
        "A01_silica_R100nm", "A02_silica_R250nm"]
    n = 6
    labels = ["A01_silica_R100nm_water"] * 3 + ["A02_silica_R250nm_water"] * 3
    fits = G2Fits(
        model="single", method="lsq", file_index=np.repeat([0, 1], 3), file_labels=labels,
        columns=np.tile(np.arange(3), 2), q=np.linspace(0.001, 0.006, n), phi=np.zeros(n),
        bin_labels=[str(i) for i in range(n)],
        params={"contrast": np.full(n, 0.2), "tau": np.full(n, 1.234567e-3),
                "stretch": np.ones(n), "baseline": np.ones(n)},
        errors={"contrast": np.full(n, 0.01), "tau": np.full(n, 2.5e-5),
                "stretch": np.zeros(n), "baseline": np.full(n, 1e-4)},
        status=np.array(["converged"] * n, dtype=object), chi2_red=np.ones(n),
        dt=np.full(n, 1e-5))
    t = FitResultsTable()
    qtbot.addWidget(t)
    t.show_fits(fits)
    head = [t.horizontalHeaderItem(c).text() for c in range(t.columnCount())]
    assert head[:2] == ["status", "file"]
    assert [t.item(r, 1).text() for r in range(n)] == ["A01_silica_R100nm"] * 3 + [
        "A02_silica_R250nm"] * 3
    tc = head.index("tau (s)")
    fm = t.fontMetrics()
    assert all(fm.horizontalAdvance(t.item(r, tc).text()) < t.columnWidth(tc) for r in range(n))


def test_a_panel_whose_points_are_all_out_of_range_says_why(qtbot, panel, fake, tmp_path):
    """A bin with a hot pixel left in has g2 of hundreds at every delay: none is drawn
    (out of the physical range), and the panel says so instead of staying blank."""
    import h5py

    from xpcsviewer.io.results.reader import read_result

    path = tmp_path / "H001_results.hdf"
    fake.make_result(path, seed=3, kind="multitau")
    with h5py.File(path, "r+") as f:
        g2 = f["xpcs/multitau/normalized_g2"]
        wild = g2[()]
        wild[:, 2] = 800.0 + np.arange(wild.shape[0])
        g2[...] = wild
    _load(qtbot, panel, [read_result(path)])
    views = panel._views[: len(panel.panel_specs)]
    notes = [v.note.toPlainText() if v.note is not None and v.note.isVisible() else None
             for v in views]
    assert notes[2] is not None and "no point drawn: all" in notes[2]
    assert "hot pixel" in notes[2] and "(median 8" in notes[2]
    assert [n for i, n in enumerate(notes) if i != 2] == [None] * (len(notes) - 1)


def test_contrast_start_is_an_estimate_of_the_setup_marked_as_automatic(qtbot, panel, results):
    # issue 49 (9): a start of 0.03 beside fitted contrasts of 0.2 read as a wrong result
    with qtbot.waitSignal(panel.sigUpdated, timeout=30000):
        panel.set_results(results[1:])  # simulated with contrast 0.2
    t = panel.params
    row = t._names.index("contrast")
    cell = t.item(row, 1)
    assert float(cell.text()) == pytest.approx(0.2, rel=0.2)
    assert cell.font().italic() and "not a result" in cell.toolTip()
    assert t.is_auto("contrast")
    t.set_cell("contrast", "value", 0.25)  # typed by the user: no longer automatic
    assert not t.item(row, 1).font().italic()
    assert not t.is_auto("contrast")
    assert t.overrides()["contrast"] == {"value": 0.25}
