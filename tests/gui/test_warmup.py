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
