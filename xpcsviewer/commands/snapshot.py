"""``xpcsviewer snapshot [FILE ...] --tab NAME -o OUT.png``: render a GUI tab offscreen.

Every file is read first, as ``info`` does: a file that cannot be read stops the
command with exit 3 and one line naming it (never a blank picture). A per-pixel G2
side file among the inputs (``X_results_G2.hdf``, e.g. from ``demo_data/*``) is
skipped with a note: it belongs to its result file. A folder or a raw source opens
as ``xpcsviewer PATH`` opens it (the folder listed in the browser, a raw source in the
Raw tab, its mask in the Detector tab). The window size is bounded: a huge grab would
exhaust memory inside Qt.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

#: Bounds of ``--size`` (pixels per side).
MIN_SIDE, MAX_SIDE = 200, 8192


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer snapshot``; the Qt work lives in :mod:`xpcsviewer.gui.snapshot`."""
    from xpcsviewer.io.classify import classify_path
    from xpcsviewer.io.errors import XpcsFileError
    from xpcsviewer.io.outputs import check_output, display_path
    from xpcsviewer.io.results.g2stack import describe_g2_side_file
    from xpcsviewer.io.results.reader import read_qmap, read_result

    w, h = (int(v) for v in args.size)
    if not (MIN_SIDE <= w <= MAX_SIDE and MIN_SIDE <= h <= MAX_SIDE):
        print(
            f"xpcsviewer snapshot: --size must be {MIN_SIDE}..{MAX_SIDE} pixels per side "
            f"(got {w} {h})",
            file=sys.stderr,
        )
        return 2
    given = list(args.files)
    check_output(args.output, given, getattr(args, "overwrite", False))
    files = []
    for f in given:
        if Path(f).is_dir() and not _folder_fits(Path(f), args.tab, classify_path):
            need = {"raw": "raw source", "xsvs": "raw source",
                    "detector": "result file or raw source"}.get(
                args.tab, "result file")
            print(f"xpcsviewer snapshot: {display_path(f)}: a folder without a {need} "
                  f"(the {args.tab} tab would be empty)", file=sys.stderr)
            return 3
        if Path(f).is_dir():
            files.append(f)  # opens as in the window: the folder listed
            continue
        if classify_path(f).kind == "raw":
            from xpcsviewer.io.classify import qmap_beside
            from xpcsviewer.io.raw import open_raw_source

            q = qmap_beside(f)  # the detector shape of layouts that store none, as the tab
            shape = read_qmap(q).shape if q else None
            with open_raw_source(f, shape=shape):  # XpcsFileError: exit 3, no blank tab
                pass
            files.append(f)  # opens as in the window: the Raw tab shows it
            continue
        try:
            read_result(f)  # raises XpcsFileError: exit 3 with one line
        except XpcsFileError:
            side = describe_g2_side_file(f)
            if side is None:
                raise
            of = side["result_file"]
            print(f"xpcsviewer snapshot: note: skipping {display_path(f)}: a per-pixel G2 "
                  f"side file{' of ' + display_path(of) if of else ''}, not a result file",
                  file=sys.stderr)
            continue
        files.append(f)
    if given and not files:
        print(f"xpcsviewer snapshot: {display_path(given[0])}: no result file among the "
              "inputs (only per-pixel G2 side files)", file=sys.stderr)
        return 3
    from xpcsviewer.gui.snapshot import render_snapshot

    quiet = bool(getattr(args, "quiet", False))
    # no time limit (a loaded machine took over 120 s): a note names what still runs
    kw = {"say": None} if quiet else {}
    out = render_snapshot(files, args.tab, args.output, (w, h), **kw)
    if not quiet:
        print(display_path(out))
    return 0


def _folder_fits(folder: Path, tab: str, classify) -> bool:
    """Whether a folder holds something the tab shows (its files, not below)."""
    if tab == "live":
        return True
    want = {"raw": {"raw"}, "xsvs": {"raw"}, "detector": {"raw", "result"}}.get(
        tab, {"result"})
    try:
        entries = sorted(p for p in folder.iterdir() if p.is_file())
    except OSError:
        return False
    return any(classify(p).kind in want for p in entries)


TABS = (
    "saxs2d",
    "saxs1d",
    "stability",
    "intensity",
    "g2",
    "diffusion",
    "twotime",
    "g2stability",
    "g2map",
    "g2pixel",
    "average",
    "qmap",
    "detector",
    "metadata",
    "live",
    "series",
    "raw",
    "xsvs",  # the Raw tab's XSVS page
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``xpcsviewer snapshot`` (called by :mod:`xpcsviewer.cli`)."""
    p.add_argument("files", nargs="*", metavar="FILE")
    p.add_argument("--tab", choices=TABS, required=True)
    p.add_argument("-o", "--output", required=True, metavar="OUT.png")
    p.add_argument("--overwrite", action="store_true", help="replace an existing OUT.png")
    p.add_argument("--size", nargs=2, type=int, default=(1400, 900), metavar=("W", "H"),
                   help="window size in pixels, each 200..8192 (default 1400 900)")
