"""``xpcsviewer demo [--out DIR] [--no-gui] [--overwrite]``: the demo data set, then the GUI on it.

A complete demo set in DIR (judged by what each file records, see
:func:`xpcsviewer.synthetic.demo.check_demo_file`) is reused; only missing files are
simulated. A file in the way that is not a complete demo file of this version and
seed is refused (exit 2, one line per file) unless ``--overwrite`` is given, which
simulates the whole set again. Besides the result files, DIR/raw holds one small
photon-sparse acquisition per raw layout with its q-map, three acquisitions with planted
faults (dense HDF5, Rigaku 2-bit, ESRF CSR), and DIR/raw/truth.json.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from xpcsviewer.io.errors import display_path
from xpcsviewer.progress import TextProgressBar
from xpcsviewer.synthetic.demo import DemoRefusedError, write_demo

EXIT_USAGE = 2


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer demo``."""
    out = Path(args.out)
    quiet = bool(getattr(args, "quiet", False))
    try:
        with TextProgressBar("demo", enabled=not quiet) as bar:
            files = write_demo(out, seed=getattr(args, "seed", 0), progress=bar,
                               overwrite=bool(getattr(args, "overwrite", False)))
    except DemoRefusedError as exc:
        for path, why in exc.problems:
            print(f"xpcsviewer demo: {display_path(path)}: {why}", file=sys.stderr)
        print(f"xpcsviewer demo: refusing to replace {len(exc.problems)} file(s) in "
              f"{display_path(out)} (use --overwrite to simulate the demo set again, "
              "or choose another --out)", file=sys.stderr)
        return EXIT_USAGE
    where = out.resolve()
    if files.simulated and files.reused:
        print(f"reused {len(files.reused)} complete demo file(s) in {where}; "
              f"simulated the {len(files.simulated)} missing")
    elif files.reused:
        print(f"reused {len(files.reused)} complete demo files in {where} "
              "(simulated 0; --overwrite simulates them again)")
    else:
        print(f"simulated {len(files.simulated)} demo result files into {where}")
    if (out / "raw" / "truth.json").is_file():
        print(f"raw files (one photon-sparse acquisition per layout, three with planted "
              f"faults, two with XSVS truth), their q-maps and truth: {out}/raw "
              "(truth.json)")
    if getattr(args, "no_gui", False):
        print(f"look at them with: xpcsviewer info {out}/*_results.hdf   or   xpcsviewer {out}")
        return 0
    from xpcsviewer.commands.gui import launch
    from xpcsviewer.gui.platform_check import has_display

    # the folder, one file as the target, on the g2 tab with its fit
    first = sorted(Path(f) for f in files if str(f).endswith("_results.hdf"))[0]
    code = launch([str(out), str(first)], fit_tab="g2")
    # Without a screen the files are still written: that is a success (`make demo`
    # on a headless machine must not fail), launch() has printed why no window opened.
    return 0 if not has_display() else code


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``xpcsviewer demo`` (called by :mod:`xpcsviewer.cli`)."""
    p.add_argument("--out", default="demo_data", help="output folder (default: ./demo_data)")
    p.add_argument("--no-gui", action="store_true", help="only write the files")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--overwrite", action="store_true",
                   help="simulate the whole set again, replacing the files in --out "
                        "(default: reuse complete demo files, simulate only missing ones, "
                        "refuse to replace any other file)")
