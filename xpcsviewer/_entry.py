"""The ``xpcsviewer`` console script: Ctrl-C is routed to the interrupt flag
before the command line is imported (a Ctrl-C during those imports printed a
traceback), then :func:`xpcsviewer.cli.main` runs."""

from __future__ import annotations


def main() -> int:
    """Entry point of the ``xpcsviewer`` console script and ``python -m xpcsviewer``."""
    from xpcsviewer.progress import early_interrupt_handlers

    early_interrupt_handlers()
    from xpcsviewer.cli import main as cli_main

    return cli_main()
