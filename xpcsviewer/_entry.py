"""The ``xpcsviewer`` console script and ``python -m xpcsviewer``.

Ctrl-C is caught from the first line of this module, before anything else of
ours is imported (a Ctrl-C during the imports printed a traceback): the signal
is only remembered here, handed to the interrupt flag of :mod:`xpcsviewer.progress`,
and :func:`xpcsviewer.cli.main` then exits 130. Import this module only as the
entry point: importing it takes over SIGINT and SIGTERM.
"""

from __future__ import annotations

try:  # the C module: ``signal`` itself imports enum, which takes milliseconds
    import _signal as _sig
except ImportError:  # pragma: no cover - not CPython
    import signal as _sig

_PENDING: list[int] = []


def _remember(signum: int, _frame: object) -> None:
    _PENDING.append(signum)


for _num in (_sig.SIGINT, _sig.SIGTERM):
    try:
        _sig.signal(_num, _remember)
    except (ValueError, OSError):  # not the main thread
        break


def main() -> int:
    """Entry point of the ``xpcsviewer`` console script and ``python -m xpcsviewer``."""
    from xpcsviewer.progress import early_interrupt_handlers

    early_interrupt_handlers(_PENDING[0] if _PENDING else 0)
    from xpcsviewer.cli import main as cli_main

    return leave(cli_main())


def leave(code: int) -> int:
    """``code``, or the process ended with it at once while a daemon thread still runs.

    Python's shutdown stops a daemon thread that is inside native code by unwinding its
    C++ frames, which aborts the process ("FATAL: exception not rethrown", signal 6)
    when that thread is compiling with XLA, e.g. the live fit warm-up after a Ctrl-C.
    Our outputs are written and closed (atomically) before a command returns, so only
    the standard streams and the logging handlers need flushing.
    """
    import threading

    if not any(t.daemon and t.is_alive() for t in threading.enumerate()):
        return code
    import logging
    import os
    import sys

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # closed or replaced
            pass
    os._exit(code)
