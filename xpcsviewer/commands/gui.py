"""``xpcsviewer [gui] [PATH ...]``: open the main window."""

from __future__ import annotations

import argparse
import sys

from xpcsviewer.gui.platform_check import NO_DISPLAY_HINT, has_display


def launch(paths: list[str], fit_tab: str | None = None) -> int:
    """Open the GUI on ``paths`` (folder or files); exits cleanly without a display.

    A folder opens as the demo does: its first target shown on the g2 tab, fitted
    (``fit_tab`` "g2"; issue 49: ``xpcsviewer FOLDER`` never fitted by itself)."""
    from pathlib import Path

    if fit_tab is None and any(Path(p).is_dir() for p in paths):
        fit_tab = "g2"
    if not has_display():
        print(NO_DISPLAY_HINT, file=sys.stderr)
        return 1
    from xpcsviewer.gui.app import run_app

    return run_app(paths, fit_tab=fit_tab)


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer gui``."""
    return launch(list(args.paths))


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``xpcsviewer gui`` (called by :mod:`xpcsviewer.cli`)."""
    p.add_argument("paths", nargs="*", metavar="PATH")
