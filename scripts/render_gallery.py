"""Render every GUI tab from the demo set into ``docs/images/<tab>.png``.

Usage::

    python scripts/render_gallery.py [--out docs/images] [--size 1280 800] [--tab NAME ...]

The demo set is written to a temporary folder (``xpcsviewer.synthetic``); each tab
is rendered offscreen by the same code as ``xpcsviewer snapshot``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# Which demo files each tab shows (stems of the demo set); the first is the current one.
FILES = {
    "saxs2d": ["A02"],
    "saxs1d": ["A01", "A02", "A03"],
    "stability": ["E01"],
    "intensity": ["A01", "E01"],
    "g2": ["A02"],
    "diffusion": ["A01", "A02", "A03"],
    "twotime": ["C01"],
    "g2stability": ["E01"],
    "g2map": ["A02"],
    "average": ["F01", "F02", "F03", "F04"],
    "qmap": ["B01"],
    "g2pixel": ["G01"],
    "detector": ["G01"],
    "metadata": ["A01"],
}


def _press_fit_now(panel) -> None:
    """Diffusion needs g2 fits: press the tab's own "Fit g2 now" (if it has one)."""
    fit = getattr(panel, "fit_g2_now", None)
    if callable(fit):
        fit()


def _run_g2_fit(panel) -> None:
    """The g2 tab is shown with its least-squares fits and the results table."""
    panel.run_fit()


def _screen_repeats(panel) -> None:
    """The Average tab after a check with MAD rejection on: the damaged repeat is flagged."""
    panel.use_mad.setChecked(True)
    panel.mad.setValue(5.0)
    panel.stat_combo.setCurrentIndex(panel.stat_combo.findData("g2_z"))
    panel.start(screen_only=True)


PREPARE = {"diffusion": _press_fit_now, "g2": _run_g2_fit, "average": _screen_repeats}


def main(argv: list[str] | None = None) -> int:
    """Write the demo set and render the tabs; prints one line per PNG."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(REPO / "docs" / "images"))
    ap.add_argument("--size", nargs=2, type=int, default=(1280, 800), metavar=("W", "H"))
    ap.add_argument("--tab", action="append", help="only these tabs (repeatable)")
    args = ap.parse_args(argv)

    from xpcsviewer.gui.panels import panel_names
    from xpcsviewer.gui.snapshot import render_snapshot

    try:
        from xpcsviewer.synthetic import write_demo
    except ImportError:
        from xpcsviewer.synthetic.demo import write_demo

    with tempfile.TemporaryDirectory(prefix="xpcs-gallery-") as tmp:
        files = sorted(Path(p) for p in write_demo(tmp, seed=0))
        by_stem = {p.name.split("_")[0]: p for p in files}
        out_dir = Path(args.out)
        out_dir.mkdir(parents=True, exist_ok=True)
        for tab in args.tab or panel_names():
            chosen = [str(by_stem[s]) for s in FILES.get(tab, ["A01"]) if s in by_stem]
            t0 = time.monotonic()
            out = render_snapshot(chosen, tab, out_dir / f"{tab}.png", tuple(args.size),
                                  prepare=PREPARE.get(tab))
            print(f"{out}  ({time.monotonic() - t0:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
