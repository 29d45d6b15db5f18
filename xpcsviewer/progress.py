"""Progress reporting and cooperative cancellation, shared by the CLI and the GUI.

Compute functions take ``progress: ProgressCallback | None`` and
``cancel: CancelToken | None`` and check the token between chunks. Nothing here
imports Qt; the GUI wraps these in its workers.

Ctrl-C (SIGINT) and SIGTERM: inside :func:`interrupt_handlers` the handler only
records the signal in a flag. Raising ``KeyboardInterrupt`` at an arbitrary
bytecode (the Python default) lands inside imports, finalizers, JAX tracing or
host callbacks, where it is printed as a traceback, swallowed, or even crashes
the process; the flag is instead checked at safe points (every :func:`report`,
progress-bar update and bounded read) and when the command returns. A second
signal ends the process at once (exit 128 + signal); the temporary files it
leaves are swept by the next write into their folder.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Protocol, TextIO

__all__ = [
    "CancelToken",
    "Cancelled",
    "ProgressCallback",
    "TextProgressBar",
    "check_interrupted",
    "early_interrupt_handlers",
    "interrupt_handlers",
    "interrupted",
    "report",
]

_INTERRUPT = threading.Event()
_SIGNUM = [0]
#: Set by :func:`early_interrupt_handlers` (the ``xpcsviewer`` entry point): a
#: signal received before ``main`` runs is kept for it, not cleared.
_EARLY = [False]


def _on_signal(signum: int, _frame: object) -> None:
    if _INTERRUPT.is_set():  # the second Ctrl-C: the user insists
        os.write(2, b"xpcsviewer: interrupted\n")
        os._exit(128 + signum)
    _SIGNUM[0] = signum
    _INTERRUPT.set()


def early_interrupt_handlers(pending: int = 0) -> None:
    """Route SIGINT and SIGTERM to the interrupt flag from now on, before the
    command line is even imported (a Ctrl-C during the imports printed a
    traceback); :func:`interrupt_handlers` then keeps a signal already received.
    ``pending``: a signal the entry point received before this (0: none).
    Only for the process's entry point: a library must not take over Ctrl-C.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(ValueError, OSError):
            signal.signal(sig, _on_signal)
    if pending:
        _SIGNUM[0] = pending
        _INTERRUPT.set()
    _EARLY[0] = True


@contextlib.contextmanager
def interrupt_handlers() -> Iterator[None]:
    """Route SIGINT and SIGTERM to the interrupt flag inside this block.

    Restores the previous handlers and clears the flag on exit (``main`` may
    run several times in one process, e.g. in tests). Only the main thread can
    install handlers; elsewhere the block just clears the flag. After
    :func:`early_interrupt_handlers` a signal received before the block is kept.
    """
    if not _EARLY[0]:
        _INTERRUPT.clear()
        _SIGNUM[0] = 0
    _EARLY[0] = False
    old = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(ValueError, OSError):
                old[sig] = signal.signal(sig, _on_signal)
    try:
        yield
    finally:
        for sig, handler in old.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, handler)
        _INTERRUPT.clear()
        _SIGNUM[0] = 0


def interrupted() -> int:
    """The signal number received inside :func:`interrupt_handlers` (0: none)."""
    return _SIGNUM[0] if _INTERRUPT.is_set() else 0


def check_interrupted() -> None:
    """Raise ``KeyboardInterrupt`` if an interrupt was received (a safe point; any thread)."""
    if _INTERRUPT.is_set():
        raise KeyboardInterrupt


class Cancelled(Exception):  # the name reads as an event
    """Raised by :meth:`CancelToken.raise_if_cancelled` when the user cancelled."""


class ProgressCallback(Protocol):
    """``progress(done, total, message)``; may be called from any thread."""

    def __call__(self, done: int, total: int, message: str = "") -> None: ...


class CancelToken:
    """A thread-safe cancel flag checked between chunks of work."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        """Ask the work to stop at its next check."""
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        """Raise :class:`Cancelled` if cancelled."""
        if self._event.is_set():
            raise Cancelled()


def report(
    progress: ProgressCallback | None,
    cancel: CancelToken | None,
    done: int,
    total: int,
    message: str = "",
) -> None:
    """Check for cancellation, then report progress (either may be ``None``)."""
    check_interrupted()
    if cancel is not None:
        cancel.raise_if_cancelled()
    if progress is not None:
        progress(done, total, message)


def _fit_text(message: str, room: int) -> str:
    # the end of a progress message holds its newest detail ("ESS 400: 500 more draws"):
    # a long one loses its middle, not its end
    if len(message) <= room:
        return message
    keep = max(room - 1, 0)
    return message[: keep // 3] + "\u2026" + message[len(message) - (keep - keep // 3):]


class TextProgressBar:
    """A progress bar on stderr for the command line, at most ~10 redraws a second."""

    def __init__(
        self,
        label: str = "",
        stream: TextIO | None = None,
        width: int = 30,
        enabled: bool = True,
    ) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.enabled = enabled
        self._last = 0.0
        self._t0 = time.monotonic()
        self._lock = threading.Lock()
        self._shown = False

    def __call__(self, done: int, total: int, message: str = "") -> None:
        check_interrupted()
        if not self.enabled:
            return
        now = time.monotonic()
        with self._lock:
            if done < total and now - self._last < 0.1:
                return
            self._last = now
            frac = 0.0 if total <= 0 else min(max(done / total, 0.0), 1.0)
            fill = round(frac * self.width)
            bar = "#" * fill + "-" * (self.width - fill)
            elapsed = now - self._t0
            head = f"\r{self.label} [{bar}] {100 * frac:5.1f}% {elapsed:6.1f}s "
            self.stream.write((head + _fit_text(message, 160 - len(head))).ljust(80))
            self.stream.flush()
            self._shown = True

    def close(self) -> None:
        """End the bar's line."""
        if self.enabled and self._shown:
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> TextProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
