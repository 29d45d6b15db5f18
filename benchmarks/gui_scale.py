"""The GUI with many targets: memory, g2-tab time and closing time.

Run on demand (not a test; the test suite runs a lenient version)::

    .venv/bin/python benchmarks/gui_scale.py [--n 1000] [--shape 512 1024] [--json out.json]

Writes one result file of a realistic size (a 512 x 1024 detector like the APS
8-ID-I files in ``../shared/data/real``: 36 dynamic and 360 static q-bins, 10,000
frames of intensity vs time) and copies it ``--n`` times into a temporary folder,
then, in the real ``MainWindow`` offscreen: opens the folder, adds every file as a
target, shows the g2 tab, asks the g2 tab to recompute and closes the window while
it works.
Prints the resident memory (RSS, from /proc/self/status) after each step, the
peak, and the time of each step.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

SPEC = {
    "name": "scale",
    "geometry": {"shape": (512, 1024), "bcx": 512.0, "bcy": 256.0, "det_dist_m": 5.0},
    "partition": {"dq_num": 36, "sq_num": 360, "dp_num": 1, "sp_num": 1},
    "acquisition": {"frame_time": 1e-3, "n_frames": 10_000, "rate": 0.3},
    "sample": {"radius_m": 150e-9, "contrast": 0.2},
    "analysis": ("Multitau",),
}


def rss_mb() -> tuple[float, float]:
    """(current, peak) resident memory of this process in MB."""
    cur = peak = float("nan")
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                cur = int(line.split()[1]) / 1024
            elif line.startswith("VmHWM:"):
                peak = int(line.split()[1]) / 1024
    return cur, peak


def make_folder(folder: Path, n: int, shape: tuple[int, int]) -> list[Path]:
    """``n`` copies of one result file (copies, not links: each is its own file)."""
    from xpcsviewer.io.results.writer import write_result
    from xpcsviewer.synthetic.results import build_result

    spec = dict(
        SPEC,
        geometry=dict(
            SPEC["geometry"], shape=shape, bcx=shape[1] / 2, bcy=shape[0] / 2
        ),
    )
    res, extras = build_result(spec, seed=1)
    first = folder / "S00000_results.hdf"
    write_result(first, res, saxs_2d=extras["saxs_2d"])
    paths = [first]
    for i in range(1, n):
        p = folder / f"S{i:05d}_results.hdf"
        shutil.copyfile(first, p)
        paths.append(p)
    return paths


def _say(out: dict, key: str, value) -> None:
    """Record a figure and print it at once (a run cut short still reports)."""
    out[key] = value
    text = f"{value:.2f}" if isinstance(value, float) else str(value)
    print(f"{key:24s} {text}", flush=True)


def run(n: int, shape: tuple[int, int], folder: Path, wait_s: float = 900.0) -> dict:
    """Open ``n`` files in the window; returns the figures (printed as they come)."""
    from PySide6.QtWidgets import QApplication

    from xpcsviewer.gui.app import configure_pyqtgraph
    from xpcsviewer.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication(["gui-scale"])
    configure_pyqtgraph()
    out: dict = {"n_files": n, "detector": list(shape)}
    _say(out, "rss_start_mb", rss_mb()[0])
    win = MainWindow(restore_session=False, save_session_on_close=False)
    win.resize(1400, 900)
    win.show()
    app.processEvents()
    _say(out, "rss_empty_window_mb", rss_mb()[0])
    runner = win.context.runner
    t0 = time.perf_counter()
    win.open_paths([str(folder)])
    runner.wait_until_idle(int(wait_s * 1000))
    win.browser.source_list.selectAll()
    win.browser.add_selected()
    ok = runner.wait_until_idle(int(wait_s * 1000))
    app.processEvents()
    _say(out, "open_s", time.perf_counter() - t0)
    _say(out, "open_finished", bool(ok))
    _say(out, "targets", len(win.results))
    _say(out, "rss_after_open_mb", rss_mb()[0])
    t0 = time.perf_counter()
    win.select_tab("g2")
    app.processEvents()
    ok = runner.wait_until_idle(int(wait_s * 1000))
    app.processEvents()
    _say(out, "g2_tab_s", time.perf_counter() - t0)
    _say(out, "g2_tab_finished", bool(ok))
    _say(out, "rss_after_g2_mb", rss_mb()[0])
    for tab in ("saxs1d", "intensity"):  # the other tabs that overlay every file
        t0 = time.perf_counter()
        win.select_tab(tab)
        app.processEvents()
        runner.wait_until_idle(int(wait_s * 1000))
        app.processEvents()
        _say(out, f"{tab}_tab_s", time.perf_counter() - t0)
    win.select_tab("g2")
    app.processEvents()
    runner.wait_until_idle(int(wait_s * 1000))
    # Close while the g2 tab works: ask it to recompute, then close at once.
    win.panels["g2"].refresh()
    app.processEvents()
    _say(out, "job_running_at_close", runner.is_busy)
    t0 = time.perf_counter()
    win.close()
    _say(out, "close_s", time.perf_counter() - t0)
    win.deleteLater()
    app.processEvents()
    _say(out, "rss_peak_mb", rss_mb()[1])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="number of target files")
    ap.add_argument(
        "--shape", type=int, nargs=2, default=(512, 1024), metavar=("H", "W")
    )
    ap.add_argument("--folder", type=Path, help="reuse (or keep) the files here")
    ap.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = ap.parse_args(argv)
    tmp = None
    folder = args.folder
    if folder is None:
        tmp = tempfile.mkdtemp(prefix="gui-scale-")
        folder = Path(tmp)
    folder.mkdir(parents=True, exist_ok=True)
    have = sorted(folder.glob("S*_results.hdf"))
    if len(have) != args.n:
        for p in have:
            p.unlink()
        t0 = time.perf_counter()
        make_folder(folder, args.n, tuple(args.shape))
        print(
            f"wrote {args.n} files in {time.perf_counter() - t0:.1f} s", file=sys.stderr
        )
    try:
        fig = run(args.n, tuple(args.shape), folder)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(fig, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
