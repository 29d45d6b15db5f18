"""Issue 49 item 7: the window's fits run in the fit process (one child for the module:
its start imports JAX, seconds). A fit there equals the in-thread fit; a child killed
during a fit is a clear error in the status bar, and the next Fit starts a new one."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

pytestmark = pytest.mark.gui


@pytest.fixture(scope="module")
def fit_proc():
    from xpcsviewer.jobs import fit_process as fp

    fp.shutdown_fit_process()
    yield fp.fit_process()
    fp.shutdown_fit_process()


@pytest.fixture
def proc_window(qtbot, monkeypatch, fit_proc, tiny_demo_dir, wait_idle):
    from xpcsviewer.gui.main_window import MainWindow

    monkeypatch.setenv("XPCS_FIT_PROCESS", "1")
    win = MainWindow(restore_session=False, save_session_on_close=False)
    qtbot.addWidget(win)
    win.resize(1200, 800)
    win.show()
    win.select_tab("g2")
    win.open_paths([str(sorted(tiny_demo_dir.glob("T01*_results.hdf"))[0])])
    g2 = win.panels["g2"]
    qtbot.waitUntil(lambda: bool(g2.blocks), timeout=60000)
    wait_idle(win, 60000)
    yield win
    win.shutdown(10000)


def _fit(qtbot, g2):
    with qtbot.waitSignal(g2.sigFitsReady, timeout=240000):
        g2.fit_btn.click()
    return g2.fits


def test_a_killed_fit_process_is_a_clear_error_and_the_next_fit_works(
        qtbot, proc_window, fit_proc, wait_idle):
    from xpcsviewer.fitting.block_fits import fit_curves
    from xpcsviewer.fitting.spec import FitSpec

    win, g2 = proc_window, proc_window.panels["g2"]
    fit_proc.shutdown()
    starts = fit_proc.starts
    # killed while it starts (importing JAX) under the first fit
    threading.Timer(1.0, lambda: os.kill(fit_proc.pid, 9) if fit_proc.pid else None).start()
    g2.fit_btn.click()
    qtbot.waitUntil(lambda: "fit failed" in g2.fit_status.text(), timeout=120000)
    wait_idle(win, 60000)
    assert "fitting process stopped" in win.message_label.text()
    assert "next fit starts a new one" in win.message_label.text()
    assert g2.fit_btn.isEnabled()
    fits = _fit(qtbot, g2)  # a new child
    assert fit_proc.starts == starts + 2 and fit_proc.pid not in (None, os.getpid())
    here = fit_curves(g2.blocks, FitSpec(g2.model()))
    for n in here.params:
        np.testing.assert_allclose(fits.params[n], here.params[n], rtol=1e-12, atol=0)
    assert "curves:" in g2.fit_status.text()
