"""Render a tab of the main window offscreen to a PNG (``xpcsviewer snapshot``, the gallery)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from xpcsviewer.gui.platform_check import has_display

__all__ = ["REPORT_S", "SUB_VIEWS", "WAIT_MS", "render_snapshot"]

#: No limit by default: on a loaded machine opening the files and the warm-up
#: (compiling the fits) took over 120 s, and a fixed limit failed the command.
WAIT_MS: int | None = None
#: While waiting, what is still running is said every this many seconds.
REPORT_S = 15.0


def _say_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _show_xsvs(panel) -> None:
    """The Raw tab's XSVS page; computed when no ``NAME_xsvs.h5`` beside the source
    was read."""
    panel.modes.setCurrentWidget(panel.xsvs)
    if panel.xsvs.res is None and panel.xsvs.compute_btn.isEnabled():
        panel.xsvs.compute()


#: Views inside a tab that ``snapshot --tab`` names too: name -> (tab, prepare).
SUB_VIEWS = {"xsvs": ("raw", _show_xsvs)}


def render_snapshot(files: list[str], tab: str, output: str | os.PathLike,
                    size: tuple[int, int] = (1400, 900), theme: str = "light",
                    wait_ms: int | None = WAIT_MS, prepare=None, say=_say_stderr) -> Path:
    """Build the main window, open ``files``, show ``tab``, wait for the jobs, save a PNG.

    The window does not read or write the user's session. Waiting is on the task
    runner's idle signal (no sleeps), until every job has finished or failed (at
    most ``wait_ms`` per phase when given); every :data:`REPORT_S` seconds ``say``
    (None: silent) gets a line naming what is still running. ``prepare``, if given,
    is called with the panel once it shows its data (for example to press a tab's
    "Fit" button); its jobs are waited for as well.

    Raises
    ------
    XpcsFileError
        A file does not exist.
    TimeoutError
        ``wait_ms`` was given and the jobs did not finish in time.
    """
    from xpcsviewer.io.errors import XpcsFileError

    if tab in SUB_VIEWS:
        tab, show = SUB_VIEWS[tab]
        prepare = show if prepare is None else (lambda p, first=prepare: (show(p), first(p)))
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
    # No warm-up: it compiles every fit and sampler for an interactive session (51 s
    # on 2 cores, over 120 s under load) that a picture never uses; a tab's own
    # jobs compile what they need. The picture is the same.
    saved = os.environ.get("XPCS_GUI_WARMUP")
    os.environ["XPCS_GUI_WARMUP"] = "0"
    try:
        win = MainWindow(restore_session=False, save_session_on_close=False)
    finally:
        if saved is None:
            os.environ.pop("XPCS_GUI_WARMUP", None)
        else:
            os.environ["XPCS_GUI_WARMUP"] = saved
    try:
        # The waits poll the interrupt flag (Ctrl-C) while Qt's event loop runs.
        return _render(app, win, files, tab, output, size, theme, wait_ms, prepare, say)
    finally:
        win.shutdown(1000)
        win.close()
        win.deleteLater()
        app.processEvents()


def _wait(runner, wait_ms: int | None, what: str, say=None,
          report_s: float = REPORT_S) -> None:
    """Run the event loop until the jobs are done; Ctrl-C cancels them.

    No deadline unless ``wait_ms``: a loaded machine is slow, not stuck; what is
    running (and its last progress message) goes to ``say`` every ``report_s``.
    """
    from xpcsviewer.progress import interrupted

    t0 = time.monotonic()
    deadline = None if wait_ms is None else t0 + wait_ms / 1000.0
    next_report = t0 + report_s
    latest: dict[str, str] = {}

    def on_progress(name: str, done: int, total: int, message: str) -> None:
        text = "" if message == name else message
        latest[name] = f"{text} {done}/{total}".strip() if total else text

    runner.sigProgress.connect(on_progress)
    try:
        while True:
            if interrupted():
                runner.cancel_all()
                raise KeyboardInterrupt
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                raise TimeoutError(f"{what} took too long")
            if say is not None and now >= next_report:
                running = runner.running_descriptions()
                shown = "; ".join(f"{d} ({latest[d]})" if latest.get(d) else d
                                  for d in running[:4])
                say(f"snapshot: {what}: {now - t0:.0f} s, still running: {shown}")
                next_report = now + report_s
            step = 0.2 if deadline is None else min(deadline - now, 0.2)
            if runner.wait_until_idle(int(max(step, 0.001) * 1000)):
                if interrupted():
                    raise KeyboardInterrupt
                return
    finally:
        try:
            runner.sigProgress.disconnect(on_progress)
        except (RuntimeError, TypeError):
            pass


def _render(app, win, files, tab, output, size, theme, wait_ms, prepare, say) -> Path:
    from xpcsviewer.io.errors import XpcsFileError
    from xpcsviewer.io.outputs import atomic_path

    win.resize(int(size[0]), int(size[1]))
    if theme != "light":
        win.set_theme(theme)
    win.show()
    runner = win.context.runner
    if files:
        win.open_paths([str(Path(f).resolve()) for f in files])
    _wait(runner, wait_ms, "opening the files", say)
    if win.load_errors:
        path, msg = win.load_errors[0]
        raise XpcsFileError(path, msg)
    win.select_tab(tab)
    app.processEvents()
    _wait(runner, wait_ms, f"the {tab} tab", say)
    if prepare is not None:
        prepare(win.panels[tab])
        app.processEvents()
        _wait(runner, wait_ms, f"preparing the {tab} tab", say)
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
