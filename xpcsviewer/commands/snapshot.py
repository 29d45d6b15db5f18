"""``xpcsviewer snapshot [FILE ...] --tab NAME -o OUT.png``: render a GUI tab offscreen.

Every file is read first, as ``info`` does: a file that cannot be read stops the
command with exit 3 and one line naming it (never a blank picture). The window
size is bounded: a huge grab would exhaust memory inside Qt.
"""

from __future__ import annotations

import argparse
import sys

#: Bounds of ``--size`` (pixels per side).
MIN_SIDE, MAX_SIDE = 200, 8192


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer snapshot``; the Qt work lives in :mod:`xpcsviewer.gui.snapshot`."""
    from xpcsviewer.io.outputs import check_output, display_path
    from xpcsviewer.io.reader import read_result

    w, h = (int(v) for v in args.size)
    if not (MIN_SIDE <= w <= MAX_SIDE and MIN_SIDE <= h <= MAX_SIDE):
        print(
            f"xpcsviewer snapshot: --size must be {MIN_SIDE}..{MAX_SIDE} pixels per side "
            f"(got {w} {h})",
            file=sys.stderr,
        )
        return 2
    files = list(args.files)
    check_output(args.output, files, getattr(args, "overwrite", False))
    for f in files:
        read_result(f)  # raises XpcsFileError: exit 3 with one line
    from xpcsviewer.gui.snapshot import render_snapshot

    out = render_snapshot(files, args.tab, args.output, (w, h))
    if not getattr(args, "quiet", False):
        print(display_path(out))
    return 0
