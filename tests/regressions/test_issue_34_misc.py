"""Issue 34, items 4, 6, 8, 9 and 10: a hostile session file, ``--overwrite`` of a
file another result links to, ``snapshot`` under load, a non-Dask service at the
scheduler address, the same file twice and doubled temporary names.

Each test failed (or hung) on the code before the fix.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest


# ------------------------------------------------------------ item 4: session file
def _hostile_sessions(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    cases = {
        "nested": "[" * 200_000 + "]" * 200_000,
        "digits": '{"current_target": ' + "9" * 5000 + "}",
        "wrong_types": json.dumps({
            "recent_folders": 5, "geometry": 7, "window_state": "\u00e9\u00e9",
            "theme": "dark", "browser": [1], "panels": {"g2": 3, "saxs2d": [1]},
            "folder": 12, "targets": [], "current_target": 10**300,
            "active_tab": "metadata"}),
    }
    out = {}
    for name, text in cases.items():
        p = folder / f"{name}.json"
        p.write_text(text)
        out[name] = p
    (folder / "a_folder.json").mkdir()
    out["a_folder"] = folder / "a_folder.json"
    return out


def _load_in_thread(path: Path, timeout: float = 10.0):
    """``load_session(path)`` in a thread: a FIFO blocked the old code for ever."""
    from xpcsviewer.gui.session import load_session

    box: dict = {}

    def go() -> None:
        try:
            box["out"] = load_session(path)
        except BaseException as exc:  # the test reports it
            box["exc"] = exc

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive() and path.exists():  # release the blocked reader
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        t.join(5)
    assert "out" in box, f"load_session({path.name}) raised or blocked: {box.get('exc')!r}"
    return box["out"]


def test_hostile_session_files_are_ignored_naming_the_file(tmp_path):
    cases = _hostile_sessions(tmp_path / "s")
    fifo = tmp_path / "s" / "fifo.json"
    os.mkfifo(fifo)
    cases["fifo"] = fifo
    for name, path in cases.items():
        data, warn = _load_in_thread(path)
        if name == "wrong_types":  # valid JSON: applied part by part
            assert isinstance(data, dict) and warn is None
            continue
        assert data == {}, name
        assert warn is not None and str(path) in warn, (name, warn)


@pytest.mark.gui
@pytest.mark.parametrize("case", ["nested", "digits", "wrong_types", "a_folder"])
def test_hostile_session_never_stops_the_window(qtbot, tmp_path, monkeypatch, case):
    from xpcsviewer.gui.main_window import MainWindow

    cfg = tmp_path / "config"
    path = _hostile_sessions(tmp_path / "s")[case]
    cfg.mkdir()
    os.replace(path, cfg / "session.json")
    monkeypatch.setenv("XPCSVIEWER_CONFIG_DIR", str(cfg))
    monkeypatch.setenv("XPCSVIEWER_CATCH_ERRORS", "0")
    win = MainWindow(restore_session=True, save_session_on_close=False)
    qtbot.addWidget(win)
    win.show()
    assert win.results == []
    if case == "wrong_types":  # each bad value ignored alone, the rest restored
        assert win.theme == "dark" and win.current_panel().name == "metadata"
    if case in ("nested", "digits", "a_folder"):
        # the status bar says which file was ignored
        assert any(str(cfg / "session.json") in e.message for e in win.errors), \
            [e.message for e in win.errors]
    win.shutdown(5000)
