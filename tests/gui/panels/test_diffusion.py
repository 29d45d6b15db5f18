"""Diffusion tab: reads the g2 fits, drops failed ones, D and radius near the truth."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from xpcsviewer.fitting.block_fits import fit_g2_blocks
from xpcsviewer.fitting.blocks import g2_blocks
from xpcsviewer.fitting.fit_table import G2Fits
from xpcsviewer.gui.context import AppContext
from xpcsviewer.gui.panels.diffusion import DiffusionPanel
from xpcsviewer.gui.workers import TaskRunner

_FAKE = Path(__file__).resolve().parents[2] / "export" / "fake_results.py"


@pytest.fixture(scope="module")
def fake():
    spec = importlib.util.spec_from_file_location("xpcs_test_fake_results_diff", _FAKE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def results(tmp_path_factory, fake):
    d = tmp_path_factory.mktemp("diffpanel")
    return [
        fake.make_result(d / "C001_results.hdf", seed=1, kind="both"),
        fake.make_result(d / "C002_results.hdf", seed=2, kind="multitau", beta=0.2),
    ]


@pytest.fixture(scope="module")
def fits(results):
    return fit_g2_blocks(g2_blocks(results), "single")


@pytest.fixture
def panel(qtbot):
    ctx = AppContext(runner=TaskRunner())
    p = DiffusionPanel(ctx)
    qtbot.addWidget(p)
    p.resize(1000, 700)
    p.show()
    yield p
    p.cancel_jobs()
    ctx.runner.wait_for_done(10000)


def _points(panel):
    """Data-point items in file order (by their legend name)."""
    import pyqtgraph as pg

    items = [
        it
        for it in panel.plot_items()
        if isinstance(it, pg.PlotDataItem) and it.opts.get("symbol") is not None
    ]
    return sorted(items, key=lambda it: it.name())


def test_reads_published_fits_and_reports_D(qtbot, panel, results, fits, fake):
    panel.set_results(results)
    assert "no g2 fits" in panel.status.text()
    with qtbot.waitSignal(panel.sigComputed, timeout=60000):
        panel.context.set_shared("g2_fits", fits)
    pts = _points(panel)
    assert len(pts) == 2 and all(p.xData.size == 6 for p in pts)
    np.testing.assert_allclose(pts[0].xData, fits.q[:6])
    r = panel.readout()
    for label in ("C001", "C002"):
        assert r[label]["verdict"] == "diffusive"
        assert r[label]["D"] == pytest.approx(fake.D_TRUE, rel=0.05)
        assert r[label]["joint_D"] == pytest.approx(fake.D_TRUE, rel=0.05)
        # these files state no solvent: no radius until the user gives one
        assert math.isnan(r[label]["R_nm"]) and r[label]["radius_source"] == "no solvent stated"
    assert panel.table.rowCount() == 2
    assert panel.table.item(0, 1).text() == "diffusive"
    assert "\u00b1" in panel.table.item(0, 2).text()
    # water at 25 C, chosen by the user: kT / (6 pi eta D)
    with qtbot.waitSignal(panel.sigComputed, timeout=60000):
        panel.solvent.setCurrentIndex(panel.solvent.findData("water"))
    r = panel.readout()
    kt = 1.380649e-23 * 298.15
    eta = 2.414e-5 * 10 ** (247.8 / (298.15 - 140.0))
    for label in ("C001", "C002"):
        ref_nm = kt / (6 * math.pi * eta * r[label]["D"] * 1e-20) * 1e9
        assert r[label]["R_nm"] == pytest.approx(ref_nm, rel=1e-9)
        assert r[label]["radius_source"] == "water at T"


def test_not_diffusive_file_gets_no_d(qtbot, panel, results, fits):
    # tau independent of q (an arrested sample): the verdict says so and no D is shown
    f2 = G2Fits(**{**fits.__dict__,
                           "params": {k: v.copy() for k, v in fits.params.items()},
                           "errors": {k: v.copy() for k, v in fits.errors.items()}})
    f2.params["tau"][:] = 0.01 * (fits.q / fits.q[0]) ** -0.2
    f2.errors["tau"][:] = 0.02 * f2.params["tau"]
    # the table's relaxation time is the solver's mean time (single: its tau)
    f2.tau_mean, f2.tau_mean_err = f2.params["tau"].copy(), f2.errors["tau"].copy()
    panel.set_results(results)
    with qtbot.waitSignal(panel.sigComputed, timeout=60000):
        panel.context.set_shared("g2_fits", f2)
    r = panel.readout()
    assert r["C001"]["verdict"] == "not_diffusive" and math.isnan(r["C001"]["D"])
    assert panel.table.item(0, 2).text() == "\u2014"
    assert "not diffusive" in panel.table.item(0, 9).text()


def test_why_column_symbols_inside_the_table(qtbot, panel, results, fits):
    """Issue 22 (10): the verdict wrote '+-' and 'A^2/s' (elsewhere \u00b1 and
    \u00c5\u00b2/s) and the column was cut off at the table's right edge."""
    from PySide6.QtCore import QRect, Qt

    panel.resize(820, 700)
    panel.set_results(results)
    with qtbot.waitSignal(panel.sigComputed, timeout=60000):
        panel.context.set_shared("g2_fits", fits)
    t = panel.table
    last = t.columnCount() - 1
    assert t.horizontalHeaderItem(last).text() == "why"
    why = t.item(0, last).text()
    assert "+-" not in why and "A^2" not in why
    assert "\u00b1" in why and "\u00b5m\u00b2/s" in why  # issue 33: D in µm²/s
    assert t.item(0, last).toolTip() == why
    # the column ends inside the table and its text wraps to the row height
    hh = t.horizontalHeader()
    # as the user sees it: once the view has laid itself out (a vertical scroll bar that
    # comes with the rows narrows the viewport a layout pass later)
    qtbot.waitUntil(lambda: t.horizontalScrollBar().maximum() == 0, timeout=5000)
    assert hh.sectionViewportPosition(last) + hh.sectionSize(last) <= t.viewport().width()
    need = t.fontMetrics().boundingRect(
        QRect(0, 0, hh.sectionSize(last) - 8, 10000), Qt.TextFlag.TextWordWrap, why)
    assert need.height() <= t.rowHeight(0)


def test_failed_fits_dropped_and_gamma(qtbot, panel, results, fits):
    f2 = G2Fits(**{**fits.__dict__, "status": fits.status.copy()})
    f2.status[0] = "failed"
    panel.set_results(results)
    with qtbot.waitSignal(panel.sigComputed, timeout=60000):
        panel.context.set_shared("g2_fits", f2)
    pts = _points(panel)
    assert sorted(p.xData.size for p in pts) == [5, 6]
    assert "1 other bin(s) left out" in panel.status.text()
    with qtbot.waitSignal(panel.sigComputed, timeout=60000):
        panel.quantity.setCurrentIndex(1)  # Gamma
    g = _points(panel)[1]
    np.testing.assert_allclose(g.yData, 1.0 / f2.params["tau"][6:12], rtol=1e-12)


def test_fitted_exponent_and_offset(qtbot, panel, results, fits):
    panel.set_results(results)
    with qtbot.waitSignal(panel.sigComputed, timeout=60000):
        panel.context.set_shared("g2_fits", fits)
    assert panel.fit_exp.isChecked()  # the exponent is fitted by default
    r = panel.readout()
    assert r["C001"]["exponent"] == pytest.approx(-2.0, abs=0.1)
    panel.offset.setValue(1.0)  # second file drawn x10
    pts = _points(panel)
    np.testing.assert_allclose(
        pts[1].yData, 10.0 * fits.params["tau"][6:12], rtol=1e-12
    )


def test_fit_g2_now_without_g2_tab(qtbot, panel, results, fake):
    panel.set_results(results)
    with qtbot.waitSignal(panel.sigComputed, timeout=120000):
        panel.fit_g2_now()
    assert panel.readout()["C001"]["D"] == pytest.approx(fake.D_TRUE, rel=0.05)


def test_export_data(qtbot, panel, results, fits, tmp_path):
    panel.set_results(results)
    with qtbot.waitSignal(panel.sigComputed, timeout=60000):
        panel.context.set_shared("g2_fits", fits)
    with qtbot.waitSignal(panel.sigExported, timeout=10000):
        panel.export_data(str(tmp_path / "d.csv"))
    text = (tmp_path / "d.csv").read_text()
    assert "C001:q_invA" in text and "D = " in text
    with qtbot.waitSignal(panel.sigExported, timeout=30000):
        panel.export_figure(str(tmp_path / "d.pdf"))
    assert (tmp_path / "d.pdf").read_bytes()[:5] == b"%PDF-"


def test_fits_from_another_target_list_match_by_file(qtbot, panel, results, fake):
    # Fitted with only the second file: its joint fit must use that file, not results[0].
    f = fit_g2_blocks(g2_blocks(results[1:]), "single")
    panel.set_results(results)
    with qtbot.waitSignal(panel.sigComputed, timeout=60000):
        panel.context.set_shared("g2_fits", f)
    r = panel.readout()
    assert list(r) == ["C002"]
    assert r["C002"]["joint_D"] == pytest.approx(fake.D_TRUE, rel=0.05)
    assert len(_points(panel)) == 1
    # C002 was written with contrast 0.2 (C001: 0.25).
    joint = panel.files[0].joint
    np.testing.assert_allclose(np.nanmean(joint.contrast), 0.2, rtol=0.05)


@pytest.fixture(scope="module")
def demo_results(demo_set_dir):
    from xpcsviewer.io import read_result

    return [read_result(p) for p in sorted(demo_set_dir.glob("*_results.hdf"))]


@pytest.mark.slow
def test_demo_brownian_files_give_truth(qtbot, panel, demo_results):
    """The g2 fit of the demo silica files through the worker, then D and R near the truth."""
    from xpcsviewer.gui.panels.g2 import G2Panel

    brownian = [
        r
        for r in demo_results
        if r.sample.get("model") == "brownian"
        and r.multitau is not None
        and r.qmap.dynamic_num_pts[1] == 1
    ][:3]
    assert len(brownian) >= 2
    g2 = G2Panel(panel.context)
    qtbot.addWidget(g2)
    g2.show()
    with qtbot.waitSignal(g2.sigUpdated, timeout=20000):
        g2.set_results(brownian)
    panel.set_results(brownian)
    with qtbot.waitSignal(panel.sigComputed, timeout=120000):
        g2.run_fit()
    r = panel.readout()
    for res in brownian:
        truth = float(res.sample["D"])
        # 10 %: the demo is simulated frames through our correlator (2000 frames,
        # a few hundred speckles per bin), with the q-smearing of real bins
        assert r[res.label]["D"] == pytest.approx(truth, rel=0.1), res.label
        radius_nm = float(res.sample["radius"]) * 1e9
        assert r[res.label]["R_nm"] == pytest.approx(radius_nm, rel=0.1), res.label


def test_only_the_targets_fits_are_shown(qtbot, panel, results, fits, fake, tmp_path):
    # fits of C001 and C002; the targets are C002 and a namesake of C001 elsewhere
    twin = fake.make_result(tmp_path / results[0].path.name, seed=9, kind="multitau")
    panel.set_results([twin, results[1]])
    with qtbot.waitSignal(panel.sigComputed, timeout=60000):
        panel.context.set_shared("g2_fits", fits)
    assert list(panel.readout()) == ["C002"]  # the twin's name is not its fit
    laws = panel.figure_options()["analysis"].laws  # the figure is handed these
    assert [law.label for law in laws] == ["C002"]
    assert laws[0].points.q.size + laws[0].points.n_dropped == 6
    panel.set_results([twin])
    assert "no g2 fits" in panel.status.text() and panel.figure_options()["analysis"] is None


def test_empty_plot_frames_the_files_q_span(qtbot, panel, results):
    # issue 33 (8): with no fits the axes showed pyqtgraph's 1-10 ("q = 2 ... 9 1/A")
    panel.set_results(results)
    panel.refresh()
    lo, hi = panel.empty_q_span()
    (x0, x1), _ = panel.plot.getViewBox().viewRange()
    if panel.logx.isChecked():
        x0, x1 = 10 ** x0, 10 ** x1
    assert x0 <= lo * 1.01 and hi <= x1 * 1.01 and x1 < 10 * hi
    assert not panel.plot.getAxis("left").style["showValues"]
