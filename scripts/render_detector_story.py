"""Render the issue-13 story offscreen, one PNG per step.

Open the demo file G01 (a beam-stop fan spoils some bins), see the fan in the G2 tab,
mask it with a polygon in the Detector tab, regroup, and fit both files in the g2
tab; plus the partition editor and the wedge/ring ROIs in SAXS-2D and SAXS-1D.

Usage::

    python scripts/render_detector_story.py --out DIR [--demo DEMO_DIR]

The demo set is written to a temporary folder unless ``--demo`` names one. Steps
run through the window's own widgets and wait on its task runner, as
``xpcsviewer snapshot`` does.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _fan_polygon(sample: dict, bcx: float, bcy: float, margin_deg: float = 4.0) -> list:
    """Four clicks around the fan (from the file's stated defect geometry)."""
    a = np.deg2rad(sample["defect_angle"])
    half = np.deg2rad(sample["defect_half_width"] + margin_deg)
    r0 = sample["defect_start"] - 3.0
    r1 = (sample["defect_end"] + 4.0) / np.cos(half)
    return [(bcx + 0.5 + r * np.cos(a + s * half), bcy + 0.5 - r * np.sin(a + s * half))
            for r, s in ((r0, -1), (r1, -1), (r1, 1), (r0, 1))]


def main(argv: list[str] | None = None) -> int:
    """Write the PNGs; prints one line per step."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--demo", default=None, help="an existing demo folder")
    ap.add_argument("--size", nargs=2, type=int, default=(1400, 900))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = None
    demo = Path(args.demo) if args.demo else None
    if demo is None:
        from xpcsviewer.synthetic.demo import write_demo

        tmp = tempfile.TemporaryDirectory(prefix="xpcs-story-")
        demo = Path(tmp.name)
        write_demo(demo, names=["G01", "A02"])
    g01 = sorted(demo.glob("G01*_results.hdf"))[0]
    a02 = sorted(demo.glob("A02*_results.hdf"))[0]

    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from xpcsviewer.gui.app import configure_pyqtgraph
    from xpcsviewer.gui.main_window import MainWindow
    from xpcsviewer.gui.snapshot import _wait

    app = QApplication.instance() or QApplication(["xpcsviewer-story"])
    configure_pyqtgraph()
    win = MainWindow(restore_session=False, save_session_on_close=False)
    win.resize(*args.size)
    win.show()
    runner = win.context.runner

    def idle(what: str) -> None:
        for _ in range(3):  # debounced follow-up jobs (partition, ROI profiles)
            QTest.qWait(400)  # longer than the panels' debounce timers
            _wait(runner, 180_000, what)

    def shot(name: str, note: str) -> None:
        idle(name)
        p = out / f"{name}.png"
        win.grab().save(str(p), "PNG")
        print(f"{p}: {note}")

    try:
        win.open_paths([str(g01)])
        idle("open")
        src = win.results[0]
        # 1. the G2 tab: per-pixel g2 at the first delay; the fan's static light
        # (heterodyne) halves the speckle contrast there: a smooth, darker wedge
        win.select_tab("g2pixel")
        gp = win.panels["g2pixel"]
        gp.set_delay(0)
        gp.auto_check.setChecked(False)
        gp.vmin.setValue(0.9)
        gp.vmax.setValue(1.5)
        shot("01_g2pixel_defect", "per-pixel g2 at the first delay: low-contrast fan")
        gp.target_combo.setCurrentIndex(gp.target_combo.findData("IP"))
        gp.auto_check.setChecked(True)
        shot("01b_g2pixel_ip", "IP (mean intensity) per pixel: the fan is bright")
        gp.target_combo.setCurrentIndex(gp.target_combo.findData("g2"))
        gp.auto_check.setChecked(False)
        # 2. g2 tab: fits of the file as stored (spoiled low-q bins)
        win.select_tab("g2")
        idle("g2")
        win.panels["g2"].run_fit()
        shot("02_g2_fit_before", "g2 fits of G01 as stored")
        # 3. Detector tab: the polygon drawn around the fan, not yet applied
        win.select_tab("detector")
        idle("detector")
        det = win.panels["detector"]
        det.mask_tools.set_tool("polygon")
        pts = _fan_polygon(src.sample, src.qmap.beam_center_x, src.qmap.beam_center_y)
        det.mask_tools.add_polygon(pts)
        shot("03_detector_polygon", "polygon around the fan, pending")
        det.mask_tools.apply()
        det.mask_tools.set_tool(None)
        shot("04_detector_masked", "the fan masked (red), undo enabled")
        # 5. partition editor preview
        det.tabs.setCurrentWidget(det.editor)
        det.run_partition()
        shot("05_detector_partition", "the file's partition with the new mask, pixels per bin")
        det.tabs.setCurrentWidget(det.mask_tools)
        # 6. regroup in the G2 tab
        win.select_tab("g2pixel")
        idle("g2pixel")
        gp.regroup()
        shot("06_g2pixel_regrouped", "regrouped with the mask; new file opened as a target")
        # 7. g2 tab: both files fitted
        win.select_tab("g2")
        idle("g2")
        win.panels["g2"].run_fit()
        shot("07_g2_fit_after", "g2 fits of G01 and its regrouped copy")
        fits = win.panels["g2"].fits
        if fits is not None:
            truth = 1.0 / (src.sample["D"] * src.qmap.dynamic_q ** 2)
            for fi in (0, 1):
                sel = fits.file_index == fi
                order = np.argsort(fits.columns[sel])
                tau = fits.params["tau"][sel][order]
                print(f"file {fi}: tau/truth", np.round(tau / truth, 3).tolist())
                print(f"file {fi}: tau (s)", [f"{t:.4g}" for t in tau])
            print("truth (s)", [f"{t:.4g}" for t in truth])
        # 8. wedge and ring ROIs on SAXS-2D, their profiles in SAXS-1D
        win.open_paths([str(a02)])
        idle("open A02")
        win.browser.target_list.setCurrentRow(win.browser.target_list.count() - 1)
        win.select_tab("saxs2d")
        idle("saxs2d")
        s2 = win.panels["saxs2d"]
        s2.rois.add("wedge")
        s2.rois.add("ring")
        shot("08_saxs2d_rois", "a q-wedge and a phi-ring on the image")
        win.select_tab("saxs1d")
        shot("09_saxs1d_rois", "the wedge's I(q) over the files' curves, the ring's I(phi)")
        idle("done")
    finally:
        win.shutdown(5000)
        win.close()
        win.deleteLater()
        app.processEvents()
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
