"""SIGINT and SIGTERM close the GUI the way the user closing the window does.

The window's session is saved, its jobs are cancelled and awaited (a bounded
time), the temporary files it made are removed, and the process exits
128 + signal (130 for Ctrl-C, 143 for SIGTERM), as every command does. A second
signal ends the process at once (its session may then be unsaved).

Python runs a signal handler only when the interpreter gets control; Qt's event
loop sleeps in C++. ``signal.set_wakeup_fd`` makes the C-level handler write a
byte to a socket that a ``QSocketNotifier`` watches, which wakes the loop (any
loop: a modal dialog's too) at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from PySide6.QtCore import QObject, QSocketNotifier, QTimer
from PySide6.QtWidgets import QApplication, QDialog

__all__ = ["READY_ENV", "SIGNAL_WAIT_S", "SignalCloser", "wait_for_workers",
           "write_ready_marker"]

logger = logging.getLogger(__name__)

#: After a signal, how long (s) cancelled jobs may take to stop (a JIT compile
#: cannot stop at once) before the process exits without them.
SIGNAL_WAIT_S = 5.0
#: A file written (the process id) once the window shows and the event loop runs:
#: for scripts and tests that must know the GUI is up.
READY_ENV = "XPCSVIEWER_READY_FILE"


def write_ready_marker() -> None:
    """Write ``$XPCSVIEWER_READY_FILE`` (if set) with this process's id."""
    path = os.environ.get(READY_ENV)
    if not path:
        return
    try:
        Path(path).write_text(f"{os.getpid()}\n", encoding="ascii")
    except OSError as exc:
        logger.warning("ready file %s not written: %s", path, exc)


def _exit_now(signum: int) -> None:
    with contextlib.suppress(OSError):
        os.write(2, b"xpcsviewer: interrupted again, exiting now\n")
    os._exit(128 + signum)


class SignalCloser(QObject):
    """Route SIGINT and SIGTERM to :meth:`close_app` while the GUI runs.

    Parameters
    ----------
    window : QMainWindow
        The main window: it is closed with ``close()``, the user's path.
    signals : tuple of int
        The signals handled.
    """

    def __init__(self, window, signals: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM),
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.window = window
        #: The signal that started the shutdown (0: none yet), and when (monotonic).
        self.signum = 0
        self.signal_time = 0.0
        self._old: dict[int, object] = {}
        self._old_fd: int | None = None
        self._socks: tuple[socket.socket, socket.socket] | None = None
        self._notifier: QSocketNotifier | None = None
        self._timer: QTimer | None = None
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in signals:
            with contextlib.suppress(ValueError, OSError):
                self._old[sig] = signal.signal(sig, self._handler)
        try:
            rsock, wsock = socket.socketpair()
            for s in (rsock, wsock):
                s.setblocking(False)
            self._old_fd = signal.set_wakeup_fd(wsock.fileno(), warn_on_full_buffer=False)
            self._socks = (rsock, wsock)
            self._notifier = QSocketNotifier(rsock.fileno(), QSocketNotifier.Type.Read, self)
            self._notifier.activated.connect(self._on_wakeup)
        except (OSError, ValueError):  # no wake-up fd here: poll instead
            logger.debug("no signal wake-up fd; polling", exc_info=True)
            self._timer = QTimer(self, interval=200)
            self._timer.timeout.connect(self._on_wakeup)
            self._timer.start()

    def _handler(self, signum: int, _frame: object) -> None:
        if self.signum:  # the user insists
            _exit_now(signum)
        self.signum = signum
        self.signal_time = time.monotonic()
        # the loop is woken by the wake-up fd; this also covers a handler run by
        # Python code on the GUI thread before the notifier fires
        QTimer.singleShot(0, self.close_app)

    def _on_wakeup(self, *_args) -> None:
        if self._socks is not None:
            with contextlib.suppress(OSError):
                while self._socks[0].recv(64):
                    pass
        if self.signum:
            self.close_app()

    def close_app(self) -> None:
        """Close every dialog and the window (session saved, jobs cancelled,
        temporaries removed), then leave the event loop with 128 + signal."""
        if getattr(self, "_closing", False) or not self.signum:
            return
        self._closing = True
        name = signal.Signals(self.signum).name
        print(f"xpcsviewer: {name}: closing (send it again to exit at once)",
              file=sys.stderr, flush=True)
        app = QApplication.instance()
        # A modal dialog's nested loop would otherwise keep running: reject it, so
        # the code that opened it sees "cancelled".
        for _ in range(20):
            w = QApplication.activePopupWidget() or QApplication.activeModalWidget()
            if w is None:
                break
            if isinstance(w, QDialog):
                w.reject()
            w.close()
            w.hide()
        with contextlib.suppress(RuntimeError):  # already deleted
            self.window.close()
        if app is not None:
            app.closeAllWindows()
            app.exit(128 + self.signum)

    def restore(self) -> None:
        """Give the signals back to the handlers they had before."""
        if self._notifier is not None:
            self._notifier.setEnabled(False)
        if self._timer is not None:
            self._timer.stop()
        if self._socks is not None:
            with contextlib.suppress(ValueError, OSError):
                signal.set_wakeup_fd(-1 if self._old_fd is None else self._old_fd)
            for s in self._socks:
                s.close()
            self._socks = None
        for sig, old in self._old.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, old)
        self._old = {}


def wait_for_workers(seconds: float, since: float | None = None) -> bool:
    """Wait until ``since + seconds`` (``since``: monotonic time, default now) for every
    runner's pool threads, in short slices so that a second signal is handled
    meanwhile. True when none is left running."""
    from xpcsviewer.gui.workers import live_runners

    deadline = (time.monotonic() if since is None else since) + seconds
    for runner in live_runners():
        while True:
            try:
                if runner.pool.waitForDone(50):
                    break
            except RuntimeError:  # deleted with its window
                break
            if time.monotonic() >= deadline:
                logger.warning("not finished %.1f s after the signal: %s", seconds,
                               ", ".join(runner.running_descriptions()) or "a pool thread")
                return False
    return True
