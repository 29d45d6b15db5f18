"""GUI test fixtures: demo data written once, a clean config folder, and a check
that no worker is still running when a test ends."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Uncaught exceptions in tests must fail loudly, not go to a status bar.
os.environ.setdefault("XPCSVIEWER_CATCH_ERRORS", "0")

pytest.importorskip("pytestqt")


@pytest.fixture(scope="session", autouse=True)
def _pyqtgraph_options():
    from xpcsviewer.gui.app import configure_pyqtgraph

    configure_pyqtgraph()


@pytest.fixture(autouse=True)
def _no_dangling_workers(request):
    """Fail the test if a TaskRunner still has running jobs at teardown."""
    yield
    if "qapp" not in request.fixturenames and "qtbot" not in request.fixturenames:
        return
    from xpcsviewer.gui.workers import live_runners

    busy = []
    for runner in live_runners():
        try:
            # A job that has reported "finished" may still be returning from run().
            done = runner.pool.waitForDone(2000) if not runner.is_busy else False
        except RuntimeError:  # C++ side already deleted with its window
            continue
        if runner.is_busy or not done:
            busy.append(runner.running_descriptions() or ["a pool thread"])
            runner.cancel_all()
            runner.pool.waitForDone(10000)  # do not leak threads into the next test
    assert not busy, f"workers still running at teardown: {busy}"


@pytest.fixture(autouse=True)
def _config_dir(tmp_path, monkeypatch):
    """Every test gets its own empty settings folder."""
    cfg = tmp_path / "config"
    monkeypatch.setenv("XPCSVIEWER_CONFIG_DIR", str(cfg))
    return cfg


@pytest.fixture(autouse=True)
def _export_dir(tmp_path, monkeypatch):
    """Every test gets its own per-user export folder (never ~/Documents/xpcsviewer)."""
    folder = tmp_path / "exports"
    monkeypatch.setenv("XPCSVIEWER_EXPORT_DIR", str(folder))
    return folder


@pytest.fixture(scope="session")
def demo_dir(demo_set_dir) -> Path:
    """The built-in demo set, written once per test session (read-only for tests)."""
    return demo_set_dir


@pytest.fixture(scope="session")
def demo_files(demo_dir) -> list[Path]:
    """Paths of the demo result files, sorted by name."""
    return sorted(demo_dir.glob("*_results.hdf"))


@pytest.fixture(scope="session")
def demo_results(demo_files) -> dict:
    """``{stem: XpcsResult}`` of the demo set."""
    from xpcsviewer.io import read_result

    return {p.name.split("_")[0]: read_result(p) for p in demo_files}


@pytest.fixture
def sync_context(qapp):
    """An AppContext whose runner runs jobs inline."""
    from xpcsviewer.gui.context import AppContext
    from xpcsviewer.gui.workers import TaskRunner

    return AppContext(TaskRunner(synchronous=True))


@pytest.fixture
def window(qtbot):
    """A main window with an asynchronous runner and no restored session."""
    from xpcsviewer.gui.main_window import MainWindow

    win = MainWindow(restore_session=False, save_session_on_close=False)
    qtbot.addWidget(win)
    win.resize(1200, 800)
    win.show()
    yield win
    win.shutdown(10000)


def _wait_idle(win_or_runner, ms: int = 30000) -> None:
    runner = getattr(getattr(win_or_runner, "context", None), "runner", win_or_runner)
    assert runner.wait_until_idle(ms), f"jobs still running: {runner.running_descriptions()}"


def _open_demo(win, demo_files, names=None, ms: int = 60000):
    """Open the demo folder, add ``names`` (stems; all by default) and wait."""
    win.browser.open_folder(str(demo_files[0].parent))
    _wait_idle(win, ms)
    paths = [str(p) for p in demo_files
             if names is None or p.name.split("_")[0] in names]
    win.browser.add_paths(paths)
    _wait_idle(win, ms)
    return paths


@pytest.fixture
def wait_idle():
    """``wait_idle(window_or_runner, ms)``: run the event loop until no job is left."""
    return _wait_idle


@pytest.fixture
def open_demo():
    """``open_demo(window, demo_files, names=None)``: open the folder, add targets, wait."""
    return _open_demo


