"""App-level pieces: error hooks, themes, backend menu, folder watching, help."""

from __future__ import annotations

import shutil
import sys
import threading

import pyqtgraph as pg
import pytest

pytestmark = pytest.mark.gui


def test_error_hooks_route_to_the_sink(qtbot, sync_context, monkeypatch):
    from xpcsviewer.gui.app import install_error_hooks

    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    monkeypatch.setattr(threading, "excepthook", threading.excepthook)
    monkeypatch.setenv("XPCSVIEWER_CATCH_ERRORS", "0")
    assert install_error_hooks(sync_context) is False
    monkeypatch.setenv("XPCSVIEWER_CATCH_ERRORS", "1")
    assert install_error_hooks(sync_context) is True
    seen = []
    sync_context.sigError.connect(seen.append)
    try:
        raise RuntimeError("boom on the GUI thread")
    except RuntimeError:
        sys.excepthook(*sys.exc_info())
    assert seen[-1].message == "boom on the GUI thread"

    def bad():
        raise ValueError("boom in a thread")

    with qtbot.waitSignal(sync_context.sigError, timeout=5000) as blocker:
        t = threading.Thread(target=bad)
        t.start()
        t.join()
    assert blocker.args[0].message == "boom in a thread"
    assert "Traceback" in blocker.args[0].traceback_text


def test_dark_theme_changes_plot_backgrounds(window):
    view = window.panels["saxs1d"].pw
    window.set_theme("dark")
    assert view.backgroundBrush().color().name() == "#1e1e1e"
    window.set_theme("light")
    assert view.backgroundBrush().color() == pg.mkColor("w")


def test_backend_menu_switches_and_reports(window, fresh_device_manager):
    window.set_backend("numpy")
    assert window.backend_label.text().startswith("NumPy")
    window.set_backend("auto")
    assert "float64" in window.backend_label.text()


def test_watched_folder_shows_new_files(window, demo_files, tmp_path, qtbot, wait_idle):
    shutil.copy(demo_files[0], tmp_path / demo_files[0].name)
    window.browser.watch_check.setChecked(True)
    window.browser.open_folder(str(tmp_path))
    wait_idle(window)
    assert len(window.browser.source_names()) == 1
    with qtbot.waitSignal(window.browser.sigScanned, timeout=10000):
        shutil.copy(demo_files[1], tmp_path / demo_files[1].name)
    wait_idle(window)
    assert len(window.browser.source_names()) == 2


def test_help_shortcuts_and_tab_keys(window, demo_files, open_demo):
    box = window.show_shortcuts()
    assert box.table.item(0, 0).text() == "Ctrl+O"
    box.close()
    open_demo(window, demo_files, names={"A01"})
    window.select_tab("saxs2d")
    window._step_tab(+1)
    assert window.current_panel().name == "saxs1d"
    window.reset_layout()
    assert window.browser_dock.isVisible()


def test_run_app_opens_files_and_saves_session_on_close(qapp, demo_files, _config_dir,
                                                        monkeypatch):
    from PySide6.QtWidgets import QApplication

    from xpcsviewer.gui.app import run_app
    from xpcsviewer.gui.main_window import MainWindow

    seen = {}

    def fake_exec(_app=None):
        # Stands in for the main loop: quitting pytest-qt's shared QApplication
        # would break the event loops of later tests.
        wins = [w for w in qapp.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]
        assert len(wins) == 1
        win = wins[0]
        assert win.context.runner.wait_until_idle(30000)
        seen["n"] = len(win.results)
        seen["visible"] = win.isVisible()
        win.close()
        return 0

    monkeypatch.setattr(QApplication, "exec", fake_exec)
    assert run_app([str(demo_files[0]), str(demo_files[1])]) == 0
    assert seen == {"n": 2, "visible": True}
    assert (_config_dir / "session.json").exists()


def test_titles_and_legends_follow_the_theme(window, demo_files, open_demo, wait_idle):
    open_demo(window, demo_files, names=["A01", "D01"])
    window.select_tab("g2")
    wait_idle(window, 60000)
    g2 = window.panels["g2"]
    title = g2._plots[0].titleLabel
    window.set_theme("dark")
    assert pg.mkColor(title.opts["color"]).lightness() > 150
    window.set_theme("light")  # titles made in the dark theme must not stay pale
    assert pg.mkColor(title.opts["color"]).lightness() < 100
    legend = g2._top_legend
    _sample, label = legend.items[0]
    assert pg.mkColor(label.opts["color"]).lightness() < 100
    assert legend.brush().color().lightness() > 200


def test_device_menu_is_a_value_the_jobs_run_under(window, wait_idle, monkeypatch):
    import os

    from xpcsviewer.backends import current_config

    env = dict(os.environ)
    window.set_device("cpu")
    window.set_backend("numpy")
    assert window.context.runner.config.device == "cpu"
    assert window.backend_label.text().startswith("NumPy")
    seen = []
    window.context.runner.submit(
        "test:cfg", lambda progress=None, cancel=None: current_config(),
        on_result=seen.append)
    wait_idle(window)
    assert (seen[0].backend, seen[0].device) == ("numpy", "cpu")
    assert dict(os.environ) == env  # the choice never went through the environment
    window.set_backend("auto")
    window.set_device("auto")
