"""Render a tab of the main window offscreen to a PNG (``xpcsviewer snapshot``, the gallery)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from xpcsviewer.gui.platform_check import has_display

__all__ = ["WAIT_MS", "render_snapshot"]

WAIT_MS = 120_000


def render_snapshot(files: list[str], tab: str, output: str | os.PathLike,
                    size: tuple[int, int] = (1400, 900), theme: str = "light",
                    wait_ms: int = WAIT_MS, prepare=None) -> Path:
    """Build the main window, open ``files``, show ``tab``, wait for the jobs, save a PNG.

    The window does not read or write the user's session. Waiting is on the task
    runner's idle signal (no sleeps), at most ``wait_ms`` per phase. ``prepare``,
    if given, is called with the panel once it shows its data (for example to press
    a tab's "Fit" button); its jobs are waited for as well.

    Raises
    ------
    XpcsFileError
        A file does not exist.
    TimeoutError
        The jobs did not finish in time.
    """
    from xpcsviewer.io.errors import XpcsFileError

    for f in files:
        if not Path(f).exists():
            raise XpcsFileError(f, "file not found")
    if not has_display():
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(["xpcsviewer-snapshot"])
    from xpcsviewer.gui.app import configure_pyqtgraph
    from xpcsviewer.gui.main_window import MainWindow

    configure_pyqtgraph()
    win = MainWindow(restore_session=False, save_session_on_close=False)
    try:
        # The waits poll the interrupt flag (Ctrl-C) while Qt's event loop runs.
        return _render(app, win, files, tab, output, size, theme, wait_ms, prepare)
    finally:
        win.shutdown(1000)
        win.close()
        win.deleteLater()
        app.processEvents()


def _wait(runner, wait_ms: int, what: str) -> None:
    """Run the event loop until the jobs are done; Ctrl-C cancels them."""
    from xpcsviewer.progress import interrupted

    deadline = time.monotonic() + wait_ms / 1000.0
    while True:
        if interrupted():
            runner.cancel_all()
            raise KeyboardInterrupt
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"{what} took too long")
        if runner.wait_until_idle(int(min(left, 0.2) * 1000)):
            if interrupted():
                raise KeyboardInterrupt
            return


def _render(app, win, files, tab, output, size, theme, wait_ms, prepare) -> Path:
    from xpcsviewer.io.errors import XpcsFileError
    from xpcsviewer.io.outputs import atomic_path

    win.resize(int(size[0]), int(size[1]))
    if theme != "light":
        win.set_theme(theme)
    win.show()
    runner = win.context.runner
    if files:
        win.open_paths([str(Path(f).resolve()) for f in files])
    _wait(runner, wait_ms, "opening the files")
    if win.load_errors:
        path, msg = win.load_errors[0]
        raise XpcsFileError(path, msg)
    win.select_tab(tab)
    app.processEvents()
    _wait(runner, wait_ms, f"the {tab} tab")
    if prepare is not None:
        prepare(win.panels[tab])
        app.processEvents()
        _wait(runner, wait_ms, f"preparing the {tab} tab")
    app.processEvents()
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice

    # Encoded in memory, written by Python: a full disk is one OSError naming
    # the output (libpng would print its own "Write Error" line).
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    if not win.grab().save(buf, "PNG"):
        raise RuntimeError(f"could not encode the picture for {out}")
    buf.close()
    with atomic_path(out) as tmp:
        tmp.write_bytes(bytes(data))
    for err in win.errors:
        print(f"warning: {err.message}", file=sys.stderr)
    return out
