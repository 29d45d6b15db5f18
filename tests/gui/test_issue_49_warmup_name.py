"""Issue 49 item 2 (rest), in a real window: the status bar names the start-up
warm-up ("preparing the fitting engine; you can fit now") as soon as it starts, not
at its first progress message (seconds later: JAX's import comes first)."""

from __future__ import annotations

import threading

import pytest

pytestmark = pytest.mark.gui


def test_the_warm_up_is_named_before_its_first_message(window, qtbot, monkeypatch,
                                                       wait_idle):
    from xpcsviewer.export import figures
    from xpcsviewer.gui._window_extras import WARMUP_DESCRIPTION
    from xpcsviewer.jobs import precompile as pc
    from xpcsviewer.jobs import warmup

    release = threading.Event()

    def silent(*_a, progress=None, cancel=None, **_k):  # no message until released
        release.wait(30)
        return {"backend": "JAX (test)"}

    monkeypatch.setattr(warmup, "precompile", silent)
    monkeypatch.setattr(warmup, "prepare_engine", silent)
    monkeypatch.setattr(figures, "preload_plotting", lambda progress=None, cancel=None: None)
    monkeypatch.setattr(pc, "ensure_kernels", lambda progress=None, cancel=None: {})
    try:
        window._start_warmup()
        qtbot.waitUntil(window.progress_label.isVisible, timeout=5000)
        qtbot.waitUntil(lambda: window.progress_label.text() != "", timeout=5000)
        assert window.progress_label.text().startswith("preparing the fitting engine")
        assert WARMUP_DESCRIPTION in window.progress_label.toolTip()
        assert "key" not in window._progress_state  # no progress message came yet
    finally:
        release.set()
    wait_idle(window, 30000)
    assert not window.progress_label.isVisible()
