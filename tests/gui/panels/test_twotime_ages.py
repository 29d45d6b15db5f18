"""Issue 35: the Two-Time tab's ages: windows on the map, the cuts both ways against a
brute-force average of the map, nothing stale on screen, the flag, the CSV, and the
exported figure drawing the tab's points."""

from __future__ import annotations

import copy
import csv
import dataclasses

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtWidgets import QGraphicsPolygonItem

from xpcsviewer.gui.context import AppContext
from xpcsviewer.gui.panels.twotime import TwotimePanel
from xpcsviewer.gui.workers import TaskRunner


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A small ageing gel (the demo's C01 spec, 300 frames, bins 2 and 3): most cuts
    converge, so tau is drawn with every kind of marker the rule has."""
    from xpcsviewer.io import read_result
    from xpcsviewer.io.results.writer import write_result
    from xpcsviewer.synthetic.demo_specs import DEMO_SPECS
    from xpcsviewer.synthetic.results import build_result

    spec = copy.deepcopy(next(s for s in DEMO_SPECS if s["name"].startswith("C01")))
    spec["acquisition"]["n_frames"] = 300
    spec["twotime"] = {"n_frames": 300, "bins": [2, 3]}
    res, extras = build_result(spec, seed=1)
    path = tmp_path_factory.mktemp("ttages") / "E001_results.hdf"
    write_result(path, res, saxs_2d=extras["saxs_2d"], c2_maps=extras["c2_maps"])
    return [read_result(path)]


@pytest.fixture
def panel(qtbot):
    ctx = AppContext(runner=TaskRunner())
    p = TwotimePanel(ctx)
    qtbot.addWidget(p)
    p.resize(1400, 900)
    p.show()
    yield p
    p.cancel_jobs()
    ctx.runner.wait_for_done(20000)


def _shown(qtbot, panel, results):
    with qtbot.waitSignal(panel.ages.sigAgesShown, timeout=120000):
        panel.set_results(results)
    return panel.ages.outcome


def _brute_cut(c2: np.ndarray, dt: float, lo: float, hi: float, way: str) -> dict:
    """lag (frames) -> plain mean of C(i, i + lag) over the entries in [lo, hi)."""
    n = c2.shape[0]
    out = {}
    for lag in range(1, n):
        vals = []
        for i in range(n - lag):
            t = (i + 0.5 * lag) * dt if way == "age" else i * dt
            if lo <= t < hi:
                vals.append(c2[i, i + lag])
        if vals:
            out[lag] = float(np.mean(vals))
    return out


def test_cuts_on_screen_are_the_map_averages(qtbot, panel, results):
    from xpcsviewer.io import read_c2

    o = _shown(qtbot, panel, results)
    tt = results[0].twotime
    assert o.request.dq == int(tt.processed_bins[0]) and o.cuts.windows.n == 5
    c2 = read_c2(results[0].path, 0, max_size=tt.n_frames).c2
    drawn = panel.ages.drawn_points()
    for way in ("age", "t1"):
        pts = np.array(drawn[way])
        for k in (0, 2, 4):
            lo, hi = o.cuts.windows.lo[k], o.cuts.windows.hi[k]
            ref = _brute_cut(c2, tt.t0, lo, hi, way)
            assert len(ref) > 10
            # every lag of the window is drawn, at the brute-force mean
            for lag, mean in ref.items():
                hit = (np.abs(pts[:, 0] - lag * tt.t0) < 1e-12) & (np.abs(pts[:, 1] - mean)
                                                                  < 1e-9)
                assert hit.any(), (way, k, lag)
    # five windows of each way, each curve with its fit
    for way in ("age", "t1"):
        plot = panel.ages.cut_plots[way]
        symbols = [it for it in plot.listDataItems() if it.opts.get("symbol")]
        assert len(symbols) == 5
    # the windows on the map: one band per window, at the band polygon of views.ages
    from xpcsviewer.views.ages import band_polygon

    items = [it for it in panel.c2_plot.items if isinstance(it, QGraphicsPolygonItem)]
    assert len(items) == 5
    t_end = (tt.n_frames - 1) * tt.t0
    poly = items[1].polygon()
    np.testing.assert_allclose([(p.x(), p.y()) for p in poly],
                               band_polygon(o.cuts.windows.lo[1], o.cuts.windows.hi[1],
                                            t_end, "age"))
    panel.ages.bands.setCurrentIndex(panel.ages.bands.findData("both"))
    items = [it for it in panel.c2_plot.items if isinstance(it, QGraphicsPolygonItem)]
    assert len(items) == 10


def test_nothing_stale_when_the_bin_changes(qtbot, panel, results):
    _shown(qtbot, panel, results)
    assert panel.ages.drawn_points()
    with qtbot.waitSignal(panel.ages.sigAgesShown, timeout=120000):
        panel.set_bin_index(1)
        # cleared at once: no cut, tau point or band of bin 1 while bin 3 is computed
        assert panel.ages.outcome is None and panel.ages.drawn_points() == {}
        assert not [it for it in panel.c2_plot.items if isinstance(it, QGraphicsPolygonItem)]
    assert panel.ages.outcome.request.dq == int(results[0].twotime.processed_bins[1])
    # a colour level does not restart the analysis
    before = panel.ages.outcome
    panel.auto_check.setChecked(False)
    assert panel.ages.outcome is before


def test_typed_ages_and_a_bad_entry(qtbot, panel, results):
    _shown(qtbot, panel, results)
    ages = panel.ages
    ages.spacing.setCurrentIndex(ages.spacing.findData("list"))
    qtbot.wait(50)
    ages.ages_edit.setText("0.03, abc")
    ages.ages_edit.editingFinished.emit()
    assert "ages: 'abc' is not a number of seconds" in ages.status.text()
    assert ages.outcome is None and ages.drawn_points() == {}
    ages.ages_edit.setText("1.5, 4.5")
    ages.widths_edit.setText("1")
    with qtbot.waitSignal(ages.sigAgesShown, timeout=120000):
        ages.ages_edit.editingFinished.emit()
    np.testing.assert_allclose(ages.outcome.cuts.windows.centres, [1.5, 4.5])
    np.testing.assert_allclose(ages.outcome.cuts.windows.widths, [1.0, 1.0])


def test_a_disagreement_is_flagged(qtbot, panel, results):
    o = _shown(qtbot, panel, results)
    flags = np.zeros_like(o.cuts.disagree)
    flags[2, 0] = True
    # the tab shows the trusted flag (AgeFits.disagree), never the raw cut test alone
    raw_only = dataclasses.replace(o, cuts=dataclasses.replace(o.cuts, disagree=flags),
                                   fits=dataclasses.replace(o.fits, disagree=np.zeros_like(
                                       flags)))
    panel.ages.outcome = raw_only
    panel.ages.redraw()
    assert "ways disagree at" not in panel.ages.status.text()
    fits = dataclasses.replace(o.fits, disagree=flags)
    panel.ages.outcome = dataclasses.replace(o, fits=fits)
    panel.ages.redraw()
    for way in ("age", "t1"):
        assert "ways disagree" in panel.ages.cut_plots[way].titleLabel.text
    assert "\u26a0 ways disagree at" in panel.ages.status.text()
    items = [it for it in panel.c2_plot.items if isinstance(it, QGraphicsPolygonItem)]
    dashed = [k for k, it in enumerate(items) if it.pen().style().name == "DashLine"]
    assert dashed == [2]


def test_csv_and_figure_draw_what_the_tab_draws(qtbot, panel, results, tmp_path):
    from xpcsviewer.export import make_figure

    _shown(qtbot, panel, results)
    assert panel.figure_kind == "ages"
    # CSV: the drawn cut points, written atomically by the export job
    path = tmp_path / "ages.csv"
    with qtbot.waitSignal(panel.sigExported, timeout=20000):
        panel.export_data(path)
    rows = [r for r in csv.reader(path.read_text().splitlines()) if r and not r[0].startswith("#")]
    head, body = rows[0], rows[1:]
    cut_rows = [r for r in body if r[head.index("way")]]
    drawn = panel.ages.drawn_points()
    assert len(cut_rows) == len(drawn["age"]) + len(drawn["t1"])
    tw = [r for r in body if r[head.index("tw_way")]]
    assert len(tw) == 10 and {r[head.index("tw_way")] for r in tw} == {"age", "t1"}
    # the figure: the same cut points and tau markers
    fig = make_figure("ages", panel.shown_results(), "double", **panel.figure_options())
    ax_tau, ax_age, ax_t1 = fig.axes[1], fig.axes[2], fig.axes[3]

    def points(ax):
        out = []
        for ln in ax.get_lines():
            if ln.get_marker() not in (None, "None", "") and ln.get_linestyle() == "None":
                out.extend(zip(np.asarray(ln.get_xdata(), float),
                               np.asarray(ln.get_ydata(), float), strict=True))
        return sorted(out)

    for key, ax in (("age", ax_age), ("t1", ax_t1), ("tau", ax_tau)):
        np.testing.assert_allclose(points(ax), sorted(drawn.get(key, [])), rtol=1e-12)


def test_cancel_settings_and_a_map_too_large(qtbot, panel, results, monkeypatch):
    from xpcsviewer.gui.panels import _twotime_ages

    _shown(qtbot, panel, results)
    ages = panel.ages
    # cancel: the job stops, nothing is drawn, the status says so
    with qtbot.waitSignal(panel.context.runner.sigJobFinished, timeout=60000):
        ages.model_combo.setCurrentIndex(ages.model_combo.findData("single"))
        assert ages.cancel_btn.isEnabled()
        ages.cancel_btn.click()
    assert ages.outcome is None and ages.drawn_points() == {}
    assert "cancelled" in ages.status.text() and not ages.cancel_btn.isEnabled()
    # settings round trip (session file)
    ages.spacing.setCurrentIndex(ages.spacing.findData("log"))
    ages.n_spin.setValue(3)
    ages.bands.setCurrentIndex(ages.bands.findData("both"))
    s = panel.get_settings()["ages"]
    panel.cancel_jobs()
    other = TwotimePanel(AppContext(runner=TaskRunner()))
    qtbot.addWidget(other)
    other.set_settings({"ages": s})
    assert other.ages.get_settings() == s
    # a full map beyond the tab's bound: a one-line error naming the file, no traceback
    monkeypatch.setattr(_twotime_ages, "TAB_MAX_FULL_FRAMES", 50)
    ages._timer.stop()
    ages.start()
    qtbot.waitUntil(lambda: "too large" in ages.status.text(), timeout=60000)
    text = ages.status.text()
    assert "E001_results.hdf" in text and "too large to cut by age" in text
    assert "Traceback" not in text and ages.outcome is None
    # the other bins are said not analysed, not left "analysing…" (issue 49)
    assert panel.context.runner.wait_until_idle(60000)
    line = ages.verdicts.text()
    assert "analysing" not in line and "no q-bin has" not in line
    assert "<b>bin 2</b>: not analysed: see the status line" in line
    assert "<b>bin 3</b>: not analysed: the shown bin failed" in line


def test_back_from_a_refused_entry_and_the_law_without_a_rerun(qtbot, panel, results):
    o = _shown(qtbot, panel, results)
    ages = panel.ages
    # the other law is drawn from the same analysis (both laws are fitted)
    ages.law_combo.setCurrentIndex(ages.law_combo.findData("power"))
    assert ages.outcome is o and "ageing law" in ages.law_label.text()
    panel.max_size.setValue(100)
    panel.max_size.editingFinished.emit()  # the map is read again, the ages stay
    assert ages.outcome is o
    # a refused entry, then back to N windows: analysed again
    ages.spacing.setCurrentIndex(ages.spacing.findData("list"))
    ages.ages_edit.setText("x")
    ages.ages_edit.editingFinished.emit()
    assert ages.outcome is None and "not a number" in ages.status.text()
    with qtbot.waitSignal(ages.sigAgesShown, timeout=120000):
        ages.spacing.setCurrentIndex(ages.spacing.findData("linear"))
    assert ages.outcome.cuts.windows.n == 5


def test_contrast_against_age_in_tab_and_figure(qtbot, panel, results):
    from xpcsviewer.export import make_figure
    from xpcsviewer.views.ages import param_points

    o = _shown(qtbot, panel, results)
    ages = panel.ages
    ages.quantity.setCurrentIndex(ages.quantity.findData("contrast"))
    assert ages.outcome is o  # a redraw, not a new analysis
    want = []
    for way in ("age", "t1"):
        p = param_points(o.fits, way, 0, "contrast")
        # converged cuts only, at their fitted contrast
        st = o.fits.status[0 if way == "age" else 1, :, 0]
        assert p.x.size == int(np.sum(st == "converged") - np.sum(
            ~np.isfinite(o.fits.contrast[0 if way == "age" else 1, :, 0][st == "converged"])))
        want += list(zip(p.x, p.y, strict=True))
    assert want and sorted(ages.drawn_points().get("tau", [])) == sorted(want)
    assert not panel.ages.tau_plot.getAxis("left").logMode
    fig = make_figure("ages", panel.shown_results(), "double", **panel.figure_options())
    got = sorted((x, y) for ln in fig.axes[1].get_lines() if ln.get_marker() == "o"
                 and len(ln.get_xdata()) for x, y in zip(ln.get_xdata(), ln.get_ydata(),
                                                        strict=True))
    assert got == sorted(want)


def test_the_tab_says_when_errors_come_from_pixel_groups(qtbot, panel, results, tmp_path):
    # a file with pixel-group maps: the tab's ages take the tau errors from them and say so
    from xpcsviewer.io import read_c2, read_result
    from xpcsviewer.io.results.writer import write_result
    from xpcsviewer.model.groups import TwotimeGroups

    src = results[0]
    tt = src.twotime
    rng = np.random.default_rng(3)
    maps, c2s = [], []
    for j in range(len(tt.processed_bins)):
        c2 = read_c2(src.path, j, max_size=tt.n_frames).c2
        c2s.append(np.triu(c2).astype(np.float32))
        noise = 0.01 * rng.standard_normal((6, *c2.shape))
        maps.append(np.triu(c2[None] + noise).astype(np.float32))
    groups = TwotimeGroups(bins=np.asarray(tt.processed_bins), pixels=np.full((6, 2), 50),
                           maps=maps, tile_px=8, seed=0)
    path = tmp_path / "G001_results.hdf"
    write_result(path, src, c2_maps=c2s, twotime_groups=groups)
    o = _shown(qtbot, panel, [read_result(path)])
    assert o.fits.tau_err_source == "pixel groups (6)"
    panel.ages.quantity.setCurrentIndex(0)
    assert "pixel groups (6)" in panel.ages.law_label.text()
    o_plain = _shown(qtbot, panel, results)
    assert o_plain.fits.tau_err_source == "fit"
    assert "pixel groups" not in panel.ages.law_label.text()


def test_dark_theme_keeps_the_constant_age_points_and_the_full_g2_visible(qtbot, panel,
                                                                         results):
    # the figures' near-black vanished on the dark theme's #1e1e1e: the tab draws
    # constant-age tau, its key and the full map's g2 in the theme's text colour
    import pyqtgraph as pg

    before = pg.getConfigOption("foreground")
    pg.setConfigOptions(foreground="#dddddd")
    try:
        _shown(qtbot, panel, results)
        qtbot.waitUntil(lambda: bool(panel.g2_plot.listDataItems()), timeout=60000)
        full = [it for it in panel.g2_plot.listDataItems() if it.name() == "full"]
        assert full and full[0].opts["pen"].color().lightness() > 150
        symbols = [it for it in panel.ages.tau_plot.listDataItems()
                   if it.opts.get("symbol") is not None]
        colours = {pg.mkPen(it.opts["symbolPen"]).color().name() for it in symbols}
        assert symbols and "#dddddd" in colours and "#1f1f1f" not in colours
        assert "color:#dddddd'>\u25cf</span> constant age" in panel.ages.law_label.text()
    finally:
        pg.setConfigOptions(foreground=before)
