"""Issue 49 items 2 and 6: a fitted first look, a warm-up named truly, Fit over every
bin of the targets, a double exponential's times in the table's main column.

Real-window tests (MainWindow, the menu's actions); the fits run in this process
(``XPCS_FIT_PROCESS=0``, tests/conftest.py); the fit process is tested in
tests/jobs/test_fit_process.py and tests/gui/test_fit_process_gui.py.
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gui


def _fitted(qtbot, win, ms=120000):
    g2 = win.panels["g2"]
    qtbot.waitUntil(lambda: g2.fits is not None and g2.shown_fits is not None, timeout=ms)
    return g2


def test_xpcsviewer_folder_opens_as_the_demo_does(monkeypatch, tmp_path):
    # `xpcsviewer FOLDER` and `xpcsviewer demo` take one path: the window's open-and-fit
    from xpcsviewer.commands import gui as cmd
    from xpcsviewer.gui import app

    seen = []
    monkeypatch.setattr(cmd, "has_display", lambda: True)
    monkeypatch.setattr(app, "run_app", lambda paths, fit_tab=None: seen.append(fit_tab) or 0)
    (tmp_path / "a_results.hdf").write_bytes(b"")
    assert cmd.launch([str(tmp_path)]) == 0
    assert cmd.launch([str(tmp_path / "a_results.hdf")]) == 0
    assert seen == ["g2", None]  # a folder: fitted first look; files as chosen


def test_open_folder_fits_the_first_target(qtbot, window, monkeypatch, tiny_demo_dir,
                                           wait_idle):
    from PySide6.QtWidgets import QFileDialog

    from xpcsviewer.gui.panels.g2 import NO_FIT_TEXT

    g2 = window.panels["g2"]
    assert g2.fit_status.text() == NO_FIT_TEXT and "press Fit" in NO_FIT_TEXT
    monkeypatch.setattr(QFileDialog, "getExistingDirectory",
                        staticmethod(lambda *a, **k: str(tiny_demo_dir)))
    action = next(a for a in window.menuBar().actions()[0].menu().actions()
                  if a.text().replace("&", "").startswith("Open Folder"))
    action.trigger()  # File > Open Folder..., as a user would
    g2 = _fitted(qtbot, window)
    wait_idle(window, 60000)
    assert window.current_panel() is g2
    assert len(window.results) == 1  # the folder's first file, fitted
    assert g2.fits.method == "lsq" and g2.fits.model == g2.model()
    assert g2.fits.n_curves == sum(b.n_bins for b in g2.blocks) > 0
    assert "curves:" in g2.fit_status.text() and "no fit yet" not in g2.fit_status.text()
    # the first look is for that open only: files added later are not fitted by it
    assert getattr(window, "_first_fit", None) is None


def test_a_folder_without_results_arms_no_fit(qtbot, window, tiny_demo_dir, tmp_path,
                                              wait_idle):
    from xpcsviewer.gui.panels.g2 import NO_FIT_TEXT

    empty = tmp_path / "empty"
    empty.mkdir()
    window.open_folder_first_look(str(empty))
    wait_idle(window, 60000)
    assert getattr(window, "_first_fit", None) is None
    window.browser.add_paths([str(sorted(tiny_demo_dir.glob("T01*_results.hdf"))[0])])
    g2 = window.panels["g2"]
    window.select_tab("g2")
    qtbot.waitUntil(lambda: bool(g2.blocks), timeout=60000)
    wait_idle(window, 60000)
    assert g2.fits is None and g2.fit_status.text() == NO_FIT_TEXT


def test_the_warm_up_says_what_it_does(window):
    from xpcsviewer.gui._window_extras import WARMUP_DESCRIPTION

    assert WARMUP_DESCRIPTION == "preparing the fitting engine; you can fit now"
    window.warmup_done = False
    window._label_progress({"key": WARMUP_DESCRIPTION, "done": 1, "total": 5,
                            "message": "least-squares programs"})
    assert window.progress_label.toolTip().startswith(WARMUP_DESCRIPTION)
    assert window.progress_label.text().startswith("preparing the fitting engine")
    assert "compil" not in window.progress_label.toolTip()


def test_fit_covers_every_bin_not_only_the_page(qtbot, window, tiny_demo_dir, wait_idle):
    g2 = window.panels["g2"]
    window.select_tab("g2")
    window.open_paths([str(p) for p in sorted(tiny_demo_dir.glob("T0*_results.hdf"))[:2]])
    qtbot.waitUntil(lambda: bool(g2.blocks), timeout=60000)
    wait_idle(window, 60000)
    total = sum(b.n_bins for b in g2.blocks)
    assert total >= 4
    with qtbot.waitSignal(g2.sigUpdated, timeout=60000):
        g2.max_bins.setValue(1)
        g2.max_bins.editingFinished.emit()
    assert g2.page.maximum() >= 2 and sum(b.n_bins for b in g2.blocks) == 2
    with qtbot.waitSignal(g2.sigFitsReady, timeout=120000):
        g2.fit_btn.click()
    assert g2.fits.n_curves == total  # every page's bins
    assert g2.results_table.rowCount() == 2
    assert f"{total - 2} more fitted on other pages" in g2.fit_status.text()
    # page 2 shows its fits without a new fit
    with qtbot.waitSignal(g2.sigUpdated, timeout=60000):
        g2.page.setValue(2)
    wait_idle(window, 60000)
    assert g2.shown_fits is not None and g2.shown_fits.n_curves == 2


def _double_block():
    from xpcsviewer.fitting.blocks import G2Block

    frames = list(range(1, 9))
    while len(frames) < 61:
        step = 2 ** (len(frames) // 4 - 1)
        frames += [(4 + j) * step for j in range(1, 5)]
    frames = np.array(frames[:61], float)
    tau = 1e-5 * frames
    rng = np.random.default_rng(3)
    f = 0.5 * np.exp(-tau / 2e-3) + 0.5 * np.exp(-tau / 0.3)
    err = np.full((tau.size, 1), 0.001)
    g = 1.0 + 0.2 * f[:, None] ** 2 + err * rng.standard_normal(err.shape)
    return G2Block(0, "double", tau, g, err, np.ones_like(g, bool), np.array([0]),
                   np.array([0.002]), np.array([0.0]), ["1"], frames.astype(int), 1e-5,
                   source="double.hdf")


@pytest.mark.parametrize("model", ["double", "auto"])
def test_a_converged_double_shows_both_times_in_the_main_column(qtbot, model):
    from xpcsviewer.fitting.block_fits import fit_curves
    from xpcsviewer.fitting.spec import FitSpec
    from xpcsviewer.gui.panels._g2_results import FitResultsTable

    fits = fit_curves([_double_block()], FitSpec(model))
    assert fits.model_of(0) == "double" and str(fits.status[0]) == "converged"
    t = FitResultsTable()
    qtbot.addWidget(t)
    t.show_fits(fits)
    head = [t.horizontalHeaderItem(c).text() for c in range(t.columnCount())]
    col = 3  # status, bin, q, then the time: in sight in the narrow panel
    assert head[col] in ("tau (s)", "tau1 / tau2 (s)")
    cell = t.item(0, col).text()
    assert "\u2014" not in cell and " / " in cell
    t1, t2 = (float(x.split()[0]) for x in cell.split(" / "))
    assert t1 == pytest.approx(2e-3, rel=0.2) and t2 == pytest.approx(0.3, rel=0.3)
    assert "double" in t.item(0, col).toolTip()
