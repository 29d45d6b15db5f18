"""Render a tab of the main window offscreen to a PNG (``xpcsviewer snapshot``, the gallery)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from xpcsviewer.commands._display import has_display

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
        win.resize(int(size[0]), int(size[1]))
        if theme != "light":
            win.set_theme(theme)
        win.show()
        runner = win.context.runner
        if files:
            win.open_paths([str(Path(f).resolve()) for f in files])
        if not runner.wait_until_idle(wait_ms):
            raise TimeoutError("opening the files took too long")
        win.select_tab(tab)
        app.processEvents()
        if not runner.wait_until_idle(wait_ms):
            raise TimeoutError(f"the {tab} tab did not finish in time")
        if prepare is not None:
            prepare(win.panels[tab])
            app.processEvents()
            if not runner.wait_until_idle(wait_ms):
                raise TimeoutError(f"preparing the {tab} tab took too long")
        app.processEvents()
        out = Path(output)
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{out.stem}.", suffix=".png", dir=out.parent)
        os.close(fd)
        try:
            if not win.grab().save(tmp, "PNG"):
                raise OSError(f"could not write {out}")
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private; a PNG is not
            os.replace(tmp, out)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        for err in win.errors:
            print(f"warning: {err.message}", file=sys.stderr)
        return out
    finally:
        win.shutdown()
        win.close()
        win.deleteLater()
        app.processEvents()
