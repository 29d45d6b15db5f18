"""At start-up the window loads JAX and compiles the fits in a worker, never blocking."""

from __future__ import annotations

import time

import pytest

pytestmark = [pytest.mark.gui, pytest.mark.slow]


def test_window_warms_up_in_a_worker(qtbot, monkeypatch, wait_idle):
    from xpcsviewer.gui.heartbeat import Heartbeat
    from xpcsviewer.gui.main_window import MainWindow

    monkeypatch.setenv("XPCS_GUI_WARMUP", "1")
    win = MainWindow(restore_session=False, save_session_on_close=False)
    qtbot.addWidget(win)
    win.show()
    assert win.backend_label.text().startswith("JAX: starting")
    # measured from the first paint on: building the window is the start-up cost,
    # what matters here is that the worker's import and compilation never block it
    import gc

    from PySide6.QtCore import QCoreApplication, QEvent

    # The windows of earlier tests are deleted by the event loop (deferred deletes of
    # thousands of plot items take seconds in C++) and their garbage by a full pass:
    # both would land in the measured interval, neither is the warm-up's.
    for _ in range(3):
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        QCoreApplication.processEvents()
    gc.collect()
    beat = Heartbeat(10).start()
    t0 = time.monotonic()
    wait_idle(win, 240000)
    assert win.warmup_done and "float64" in win.backend_label.text()
    # the compilation ran in a worker: the GUI thread kept beating (lenient bound)
    assert beat.max_gap(t0) < 1.0
    beat.stop()


def test_bayesian_clicked_during_the_warm_up_works(qtbot, monkeypatch, demo_files, wait_idle):
    # Issue 22: Bayesian clicked while the start-up warm-up traced the sampler gave
    # "all sites must have unique names" (NumPyro's handler stack is process-global).
    import threading

    from xpcsviewer.fitting import bayes_run
    from xpcsviewer.gui.main_window import MainWindow

    bayes_run._per_bin_programs.cache_clear()  # the warm-up has to trace the model
    in_trace, go_on = threading.Event(), threading.Event()
    real = bayes_run.g2_model

    def model(*a, **k):
        if not in_trace.is_set():  # the first trace: the warm-up's, before any click
            in_trace.set()
            go_on.wait(120)
        return real(*a, **k)

    monkeypatch.setattr(bayes_run, "g2_model", model)  # what the samplers call
    monkeypatch.setenv("XPCS_GUI_WARMUP", "1")
    win = MainWindow(restore_session=False, save_session_on_close=False)
    qtbot.addWidget(win)
    win.show()
    try:
        win.browser.open_folder(str(demo_files[0].parent))
        qtbot.waitUntil(lambda: in_trace.is_set(), timeout=240000)
        win.browser.add_paths([str(p) for p in demo_files if p.name.startswith("A01")])
        win.select_tab("g2")
        g2 = win.panels["g2"]
        qtbot.waitUntil(lambda: bool(g2.blocks), timeout=60000)
        g2.max_bins.setValue(2)
        g2.max_bins.editingFinished.emit()
        qtbot.waitUntil(lambda: sum(b.n_bins for b in g2.blocks) == 2, timeout=60000)
        g2.warmup.setValue(40)
        g2.samples.setValue(40)
        g2.chains.setValue(1)
        assert g2.bayes_btn.isEnabled() and not win.warmup_done
        g2.bayes_btn.click()
        # the user's fit waits for the warm-up's step, visibly
        qtbot.waitUntil(lambda: "waiting for the sampler warm-up" in g2.fit_status.text(),
                        timeout=120000)
        with qtbot.waitSignal(g2.sigFitsReady, timeout=300000):
            go_on.set()
        wait_idle(win, 300000)
    finally:
        go_on.set()
        win.shutdown(10000)
    # Bayesian covers every bin of the targets (issue 49), not only the 2 shown
    assert g2.fits.method == "bayes" and g2.fits.n_curves == 16
    assert win.errors == [] and win.warmup_done


def test_escape_cancels_the_users_jobs_not_the_warmup(window, qtbot, wait_idle):
    """Esc (and the status bar's Cancel) during the start-up warm-up stops the user's
    computations only: a cancelled warm-up left "JAX: starting…" for good, and a
    cancelled opening of the targets left every tab blank."""
    import threading

    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    release = threading.Event()
    seen = {}

    def job(name):
        def run(progress=None, cancel=None):
            release.wait(10)
            seen[name] = bool(cancel is not None and cancel.cancelled)
            return name
        return run

    runner = window.context.runner
    runner.submit("warmup", job("warmup"), description="compiling the fits (first run only)")
    window.panels["g2"]._dirty = False
    runner.submit("g2:fit", job("fit"), description="fitting")
    runner.submit("window:load", job("load"), description="Opening files")
    qtbot.waitUntil(lambda: set(runner.running_keys()) == {"warmup", "g2:fit", "window:load"},
                    timeout=5000)
    QTest.keyClick(window, Qt.Key.Key_Escape)
    release.set()
    wait_idle(window, 20000)
    assert seen["warmup"] is False and seen["load"] is False  # never told to stop
    assert seen.get("fit", True) is True  # told to stop (or, still queued, never started)
    # the tab whose job was cut recomputes when shown again (it stayed blank)
    assert window.panels["g2"]._dirty
    # the warm-up alone: nothing of the user's to cancel, and it says so
    release.clear()
    runner.submit("warmup", job("warmup2"), description="compiling the fits (first run only)")
    qtbot.waitUntil(lambda: runner.running_keys() == ["warmup"], timeout=5000)
    window.cancel_jobs()
    assert "warm-up and the opening of files go on" in window.message_label.text()
    release.set()
    wait_idle(window, 20000)
    assert seen["warmup2"] is False
