"""``xpcsviewer demo [--out DIR] [--no-gui]``: write the demo data set, then open the GUI on it."""

from __future__ import annotations

import argparse
from pathlib import Path

from xpcsviewer.progress import TextProgressBar
from xpcsviewer.synthetic.demo import write_demo


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer demo``."""
    out = Path(args.out)
    with TextProgressBar("demo", enabled=not getattr(args, "quiet", False)) as bar:
        files = write_demo(out, seed=getattr(args, "seed", 0), progress=bar)
    print(f"wrote {len(files)} demo result files to {out.resolve()}")
    if getattr(args, "no_gui", False):
        print(f"look at them with: xpcsviewer info {out}/*_results.hdf   or   xpcsviewer {out}")
        return 0
    from xpcsviewer.commands._display import has_display
    from xpcsviewer.commands.gui import launch

    # the folder, one file as the target, on the g2 tab with its fit
    first = sorted(Path(f) for f in files if str(f).endswith("_results.hdf"))[0]
    code = launch([str(out), str(first)], fit_tab="g2")
    # Without a screen the files are still written: that is a success (`make demo`
    # on a headless machine must not fail), launch() has printed why no window opened.
    return 0 if not has_display() else code
