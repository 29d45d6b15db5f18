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

    return cli_main()
