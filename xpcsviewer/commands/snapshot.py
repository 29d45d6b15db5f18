"""``xpcsviewer snapshot [FILE ...] --tab NAME -o OUT.png``: render a GUI tab offscreen."""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer snapshot``; the Qt work lives in :mod:`xpcsviewer.gui.snapshot`."""
    from xpcsviewer.gui.snapshot import render_snapshot

    out = render_snapshot(list(args.files), args.tab, args.output, tuple(args.size))
    if not getattr(args, "quiet", False):
        print(out)
    return 0
