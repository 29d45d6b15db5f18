"""GUI-thread stalls: the real window driven through the heavy actions, with a heartbeat.

Run on demand (the test suite has a lenient version per action)::

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/gui_stalls.py [--json out.json]
        [--only NAME ...] [--real ../shared/data/real/aps8idi_llps_saxpcs]
        [--load N [--repeat R]] [--trace]

``--load N`` runs the actions in fresh processes twice (quiet, then while N busy
processes spin at normal priority, as a user's other work would), ``--repeat`` times
each, and prints a table: action, quiet max gap, loaded max gap (ranges over the
repeats). ``--trace`` (or ``XPCS_STALL_TRACE=seconds``) prints, for each stall over
50 ms, the GUI thread's top Python stacks and the other threads seen in Python
(``xpcsviewer.gui.heartbeat.StallTrace``).

A 10 ms QTimer beats on the GUI thread (``xpcsviewer.gui.heartbeat``); each action is
started, the event loop runs until its jobs are done and the result is drawn, and the
longest gap between two beats is the stall a user would feel. Inputs are written to a
temporary folder: the demo set, a 1676 x 2100 (Rigaku-like) and a 2048 x 2048
(4 Mpixel) result file, and 11 files of 100,000 frames of intensity vs time. The real
8-ID-I files are used when present.

Actions (goal: every stall < 100 ms on 2 cores):

* ``bayes_during_warmup``: "Bayesian" clicked while the start-up warm-up (JAX, the fit
  programs) still runs (in a process of its own with ``--load``);
* ``first_bayes_click``: the first click on "Bayesian" in a fresh process;
* ``stability_first_b0147``: the first show of the Stability tab on the real
  B0147 00001-00200 file (when present);
* ``live_follow``: the Live tab following a writer process (256 x 256 speckle frames,
  500 frames/s, 3,000 frames);
* ``saxs2d_log_toggle_3mpx`` / ``..._4mpx``: log <-> linear on the large images;
* ``g2_layout_change``: per q-bin -> per file -> combined, demo set;
* ``g2_redraw_after_fit``: the least-squares fit of 48 demo curves and its redraw;
* ``g2_real_fit``: the same on the 11 real files (when present);
* ``intensity_tab_11x100k``: the Intensity-Time tab on 11 x 100,000 frames;
* ``raw_xsvs_compute``: *Compute XSVS* on the Raw tab (demo R01), its fits and plots;
* ``first_nuts_compile``: whether "compiling (first run only)" is shown while the
  first NUTS program compiles.
* ``detector_tab_3mpx`` / ``detector_partition_3mpx`` / ``detector_polygon_3mpx``: the
  Detector tab on the 1676 x 2100 file, a q x phi partition, and a polygon mask applied.
* ``twotime_first_open`` / ``twotime_bin_change``: the Two-Time tab's first show on the
  demo's ageing C01 (its map, the ages of the shown bin, the survey of the others), then
  two other q-bins chosen.
* ``qmap_tab_3mpx``: the Q-Map tab on the 1676 x 2100 file, then each of its maps.
* ``g2pixel_tab_3mpx``: the G2 (per-pixel) tab on a 1676 x 2100 G2/IP/IF stack, then
  three delays, IP instead of g2, and another colour map (the stack is written only
  when this action runs).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def simulated_result(name: str, shape, n_frames: int, seed: int, dq: int = 24):
    """(result, extras) of a synthetic result (xpcsviewer.synthetic.results); also the
    inputs of the lenient copy of these checks, tests/gui/test_stalls.py."""
    from xpcsviewer.synthetic.results import build_result

    spec = {
        "name": name,
        "geometry": {"shape": shape, "bcx": shape[1] / 2 + 7.3, "bcy": shape[0] / 3,
                     "det_dist_m": 5.0},
        "partition": {"dq_num": dq, "sq_num": 10 * dq, "dp_num": 1, "sp_num": 1},
        "acquisition": {"frame_time": 1e-4, "n_frames": n_frames, "rate": 0.3},
        "sample": {"radius_m": 150e-9, "contrast": 0.2},
        "analysis": ("Multitau",),
    }
    return build_result(spec, seed=seed)


#: which inputs each action needs (so that a short run writes only those)
NEEDS = {"demo": ("bayes_during_warmup", "first_bayes_click", "g2_layout_change",
                  "g2_redraw_after_fit", "g2_export_figure", "file_report",
                  "twotime_first_open", "twotime_bin_change"),
         "rigaku": ("saxs2d_log_toggle_3mpx", "detector_tab_3mpx", "detector_partition_3mpx",
                    "detector_polygon_3mpx", "qmap_tab_3mpx", "g2pixel_tab_3mpx"),
         "4mpx": ("saxs2d_log_toggle_4mpx",), "long": ("intensity_tab_11x100k",),
         "raw": ("raw_tab_3m_open", "raw_frame_scrub_3m"),
         "demo_raw": ("raw_correlate_dialog", "g2_recompute_bin", "raw_xsvs_compute")}
ACTIONS = ["bayes_during_warmup", "first_bayes_click", "saxs2d_log_toggle_3mpx",
           "saxs2d_log_toggle_4mpx", "g2_layout_change", "g2_redraw_after_fit", "g2_real_fit",
           "intensity_tab_11x100k", "detector_tab_3mpx", "detector_partition_3mpx",
           "detector_polygon_3mpx", "qmap_tab_3mpx", "g2pixel_tab_3mpx",
           "stability_first_b0147", "live_follow", "raw_tab_3m_open", "raw_frame_scrub_3m",
           "raw_correlate_dialog", "g2_recompute_bin", "raw_xsvs_compute", "g2_export_figure",
           "file_report", "twotime_first_open", "twotime_bin_change"]


def write_inputs(folder: Path, only: list[str] | None = None) -> dict[str, list[Path]]:
    """The demo set and the large / long synthetic files (those ``only`` needs)."""
    from xpcsviewer.io.results.writer import write_result
    from xpcsviewer.synthetic.demo import write_demo

    def need(key: str) -> bool:
        return only is None or any(a in only for a in NEEDS[key])

    out: dict[str, list[Path]] = {}
    demo = folder / "demo"
    if need("demo"):  # written once per folder (--inputs keeps them between runs)
        done = sorted(demo.glob("*_results.hdf"))
        out["demo"] = done or sorted(Path(p) for p in write_demo(demo, seed=0))

    def one(name: str, shape, n_frames: int, seed: int, dq: int = 24) -> Path:
        path = folder / f"{name}_results.hdf"
        if not path.exists():
            res, extras = simulated_result(name, shape, n_frames, seed, dq)
            write_result(path, res, saxs_2d=extras["saxs_2d"])
        return path

    if need("rigaku"):
        out["rigaku"] = [one("R3M", (1676, 2100), 1000, 1)]
    if need("4mpx"):
        out["4mpx"] = [one("E4M", (2048, 2048), 1000, 2)]
    if need("long"):
        out["long"] = [one(f"L{i:02d}", (64, 64), 100_000, 10 + i, dq=8) for i in range(11)]
    if need("raw"):  # a Rigaku 3M set of 10^7 hits over 10^5 frames, its q-map beside it
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from raw_inspect import ring_qmap, write_rigaku_3m_set

        base = folder / "RAW3M.bin"
        if not (folder / "RAW3M_qmap.h5").exists():
            write_rigaku_3m_set(base, 1e7, 100_000)
            ring_qmap(folder / "RAW3M_qmap.h5", (1676, 2100))
        out["raw"] = [Path(str(base) + ".000")]
    if need("demo_raw"):  # the demo's R01 (dense HDF5 with planted faults)
        raw = folder / "demo_raw"
        if not (raw / "raw" / "R01_dense_faults.h5").exists():
            from xpcsviewer.cli import main as cli

            cli(["demo", "--no-gui", "--quiet", "--out", str(raw)])
        out["demo_raw"] = [raw / "raw" / "R01_dense_faults.h5"]
    return out


def write_g2_stack(folder: Path) -> Path:
    """A 1676 x 2100 result with a per-pixel G2/IP/IF side file (a smooth, coarsely
    quantized pattern, so that the side file compresses to a few MB)."""
    import types

    import numpy as np

    from xpcsviewer.io.results.writer import write_result_with_g2_stack

    shape = (1676, 2100)
    res, extras = simulated_result("P3M", shape, 300, seed=3)
    n_delays = res.multitau.delay_frames.size
    yy, xx = np.mgrid[0:shape[0], 0:shape[1]]
    base = np.round(8 * (1.0 + 0.5 * np.sin(xx / 97.0) * np.cos(yy / 53.0))) / 8
    base = base.astype(np.float32)

    def produce(sink):
        for k in range(n_delays):
            sink(k, np.stack([(1 + 0.2 * np.exp(-k / 5)) * base * base, base, base]))
        return types.SimpleNamespace(result=res, saxs_2d=extras["saxs_2d"], c2_maps=None)

    path = folder / "P3M_results.hdf"
    write_result_with_g2_stack(path, produce, n_delays, shape)
    return path


class Driver:
    """The window, the heartbeat and a way to wait for the jobs of an action."""

    def __init__(self, settle: bool = True) -> None:
        from PySide6.QtWidgets import QApplication

        from xpcsviewer.gui.app import configure_pyqtgraph
        from xpcsviewer.gui.heartbeat import Heartbeat, StallTrace
        from xpcsviewer.gui.main_window import MainWindow

        self.app = QApplication.instance() or QApplication(["gui-stalls"])
        if os.environ.get("XPCS_SWITCH_INTERVAL"):  # to measure the GIL's hand-over
            sys.setswitchinterval(float(os.environ["XPCS_SWITCH_INTERVAL"]))
        configure_pyqtgraph()
        self.win = MainWindow(restore_session=False, save_session_on_close=False)
        self.win.resize(1600, 1000)
        self.win.show()
        self.runner = self.win.context.runner
        self.beat = Heartbeat(10).start()
        self.trace = None
        if os.environ.get("XPCS_STALL_TRACE"):
            self.trace = StallTrace(self.beat, float(os.environ["XPCS_STALL_TRACE"])).start()
        if settle:
            self.settle()

    def spin(self, seconds: float) -> None:
        t_end = time.monotonic() + seconds
        while time.monotonic() < t_end:
            self.app.processEvents()

    def settle(self, timeout_s: float = 900.0) -> bool:
        """Run the event loop until no job is left and the drawing is done."""
        ok = self.runner.wait_until_idle(int(timeout_s * 1000))
        self.spin(0.15)  # let the last paints through
        return ok

    def open(self, paths: list[Path], tab: str | None = None) -> None:
        """Make ``paths`` the targets (and show ``tab``); not measured."""
        self.win.browser.clear_targets()
        self.win.open_paths([str(p) for p in paths])
        self.settle()
        if tab is not None:
            self.win.select_tab(tab)
        self.settle()

    def traced(self, t0: float, t1: float) -> None:
        if self.trace is not None:
            for line in self.trace.report(t0, t1, above_s=self.trace.late_s):
                print("   ", line, flush=True)

    def measure(self, action) -> tuple[float, float]:
        """(longest GUI-thread gap s, wall time s) of ``action()`` and what follows."""
        self.settle()
        prof = None
        if os.environ.get("XPCS_STALL_PROFILE"):  # where the GUI thread spends the action
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
        t0 = time.monotonic()
        action()
        self.settle()
        t1 = time.monotonic()
        if prof is not None:
            import pstats

            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(12)
        self.traced(t0, t1)
        return self.beat.max_gap(t0, t1), t1 - t0


def _warmup_jobs() -> tuple[str, ...]:
    from xpcsviewer.gui._window_extras import WARMUP_DESCRIPTION

    return ("loading matplotlib", WARMUP_DESCRIPTION, "correlators: checking the compiled kernels")


def bayes_during_warmup(d: Driver, demo: Path) -> tuple[float, float, bool]:
    """Open a file and click "Bayesian" while the warm-up runs: (gap, wall, was it still
    running at the click)."""
    win = d.win
    win.open_paths([str(demo)])
    t_end = time.monotonic() + 300
    while time.monotonic() < t_end:  # the file loaded; the warm-up may go on
        d.spin(0.05)
        if all(j in _warmup_jobs() for j in d.runner.running_descriptions()):
            break
    win.select_tab("g2")
    d.spin(0.3)
    g2 = win.panels["g2"]
    g2.warmup.setValue(50)
    g2.samples.setValue(50)
    g2.chains.setValue(1)
    during = not win.warmup_done
    t0 = time.monotonic()
    g2.run_bayes()
    d.settle()
    t1 = time.monotonic()
    d.traced(t0, t1)
    return d.beat.max_gap(t0, t1), t1 - t0, during


def live_follow(d: Driver, work: Path, rate: float = 500, n: int = 3000,
                size: int = 256) -> tuple[float, float]:
    """The Live tab follows a writer (benchmarks/live.py's): (longest gap, wall)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import live as lb

    qmap = lb.prepare(work, size)
    pool = lb.speckle_pool(work, size, 1000)
    win = d.win
    win.show_live()
    d.settle()
    panel = win.panels["live"]
    raw, stats = work / "live.h5", work / "live.json"
    lb._fresh(raw, stats, *work.glob("live_results*"))
    panel.qmap_edit.setText(str(qmap))
    panel.source_edit.setText(str(raw))
    panel.start()  # before the detector, as at a beamline
    while not (panel.sink.ready or not panel.running):
        d.spin(0.01)
    w = lb._writer(raw, stats, rate, n, size, pool)
    t0 = time.monotonic()
    while panel.running:
        d.spin(0.05)
    w.wait()
    d.settle()
    t1 = time.monotonic()
    d.traced(t0, t1)
    return d.beat.max_gap(t0, t1), t1 - t0


def _in_process() -> bool:
    from xpcsviewer.gui.figure_job import draw_in_process

    return draw_in_process()


def run(inputs: dict[str, list[Path]], only: list[str] | None, real: Path | None,
        work: Path) -> dict:
    from PySide6.QtCore import QSignalBlocker

    def want(name: str) -> bool:
        return only is None or name in only

    warm_click = want("bayes_during_warmup")
    d = Driver(settle=not warm_click)
    win = d.win
    out: dict = {}

    def report(name: str, gap: float, wall: float, extra: str = "") -> None:
        out[name] = {"stall_s": round(gap, 4), "wall_s": round(wall, 3)}
        flag = "ok" if gap < 0.1 else "STALL"
        print(f"{name:28s} stall {1000 * gap:7.0f} ms   (action {wall:6.2f} s) {flag} {extra}",
              flush=True)

    demo = {p.name.split("_")[0]: p for p in inputs.get("demo", [])}
    if warm_click:  # first: the warm-up starts with the window
        gap, wall, during = bayes_during_warmup(d, demo["A02"])
        report("bayes_during_warmup", gap, wall,
               "(warm-up still running at the click)" if during else "(warm-up was done)")
        out["bayes_during_warmup"]["during_warmup"] = during
        d.settle()
    if want("first_bayes_click"):
        d.open([demo["A02"]], "g2")
        g2 = win.panels["g2"]
        g2.warmup.setValue(50)
        g2.samples.setValue(50)
        g2.chains.setValue(1)
        seen = []
        win.context.runner.sigProgress.connect(lambda k, a, b, m: seen.append(m))
        gap, wall = d.measure(g2.run_bayes)
        hint = any("compiling" in m for m in seen) or "compiling" in g2.fit_status.text()
        report("first_bayes_click", gap, wall)
        out["first_nuts_compile"] = {"hint_shown": bool(hint)}
        print(f"{'first_nuts_compile':28s} 'compiling (first run only)' shown: {hint}")
    for key, name in (("rigaku", "saxs2d_log_toggle_3mpx"), ("4mpx", "saxs2d_log_toggle_4mpx")):
        if want(name):
            d.open(inputs[key], "saxs2d")
            s2 = win.panels["saxs2d"]
            gaps = []
            for _ in range(2):
                gap, wall = d.measure(
                    lambda s2=s2: s2.scale_combo.setCurrentIndex(1 - s2.scale_combo.currentIndex()))
                gaps.append((gap, wall))
            gap, wall = max(gaps)
            report(name, gap, wall)
    if want("g2_layout_change"):
        d.open(inputs["demo"], "g2")
        g2 = win.panels["g2"]
        worst = (0.0, 0.0)
        for i in (1, 2, 0):
            worst = max(worst, d.measure(lambda i=i: g2.layout_combo.setCurrentIndex(i)))
        report("g2_layout_change", *worst)
    if want("g2_redraw_after_fit"):
        d.open([demo["A01"], demo["A02"], demo["A03"]], "g2")
        g2 = win.panels["g2"]
        gap, wall = d.measure(g2.run_fit)
        report("g2_redraw_after_fit", gap, wall, f"{g2.fits.n_curves} curves")
    if real is not None and want("g2_real_fit"):
        files = sorted(real.glob("*_results.hdf"))
        d.open(files, "g2")
        g2 = win.panels["g2"]
        gap, wall = d.measure(g2.run_fit)
        report("g2_real_fit", gap, wall, f"{g2.fits.n_curves} curves")
    if want("intensity_tab_11x100k"):
        d.open(inputs["long"], None)
        gap, wall = d.measure(lambda: win.select_tab("intensity"))
        report("intensity_tab_11x100k", gap, wall)
    if any(want(n) for n in ("detector_tab_3mpx", "detector_partition_3mpx",
                             "detector_polygon_3mpx")):
        d.open(inputs["rigaku"], None)
        gap, wall = d.measure(lambda: win.select_tab("detector"))
        report("detector_tab_3mpx", gap, wall)
        det = win.panels["detector"]
        ed = det.editor

        def qphi() -> None:
            det.tabs.setCurrentWidget(ed)
            ed.mode_combo.setCurrentIndex(ed.mode_combo.findData("qphi"))
            ed.dp.setValue(12)
            ed.sp.setValue(36)

        gap, wall = d.measure(qphi)
        report("detector_partition_3mpx", gap, wall, "q x phi, 24 x 12 bins")

        def polygon() -> None:
            det.mask_tools.add_polygon([(200, 200), (1500, 250), (1400, 1200), (300, 1000)])
            det.mask_tools.apply()  # masks in a worker, then re-partitions

        d.settle()
        t0 = time.monotonic()
        polygon()
        for _ in range(2):  # the mask job, then the re-partition after its 300 ms debounce
            d.settle()
            t_end = time.monotonic() + 0.4
            while time.monotonic() < t_end:
                d.app.processEvents()
        d.settle()
        t1 = time.monotonic()
        report("detector_polygon_3mpx", d.beat.max_gap(t0, t1), t1 - t0,
               f"{det.history().n_masked:,} px masked, re-partitioned")
    if want("twotime_first_open") or want("twotime_bin_change"):
        d.open([demo["C01"]], None)
        gap, wall = d.measure(lambda: win.select_tab("twotime"))
        report("twotime_first_open", gap, wall, "C01: the map, the ages, the bin survey")
        tt = win.panels["twotime"]
        worst = (0.0, 0.0)
        for i in range(min(tt.bin_combo.count(), 3)):
            if i != tt.bin_combo.currentIndex():
                worst = max(worst, d.measure(lambda i=i: tt.bin_combo.setCurrentIndex(i)))
        report("twotime_bin_change", *worst, "C01, other q-bins")
    if want("qmap_tab_3mpx"):
        d.open(inputs["rigaku"], None)
        gap, wall = d.measure(lambda: win.select_tab("qmap"))
        qm = win.panels["qmap"]
        for target in ("scattering", "static", "dynamic"):
            gap2, wall2 = d.measure(lambda t=target: qm.target_combo.setCurrentText(t))
            gap, wall = max(gap, gap2), wall + wall2
        report("qmap_tab_3mpx", gap, wall, "show, then scattering / static / dynamic")
    if want("g2pixel_tab_3mpx"):
        d.open([write_g2_stack(Path(inputs["rigaku"][0]).parent)], None)
        gap, wall = d.measure(lambda: win.select_tab("g2pixel"))
        gp = win.panels["g2pixel"]

        def delay(k: int) -> None:  # as the slider does, without its 120 ms debounce
            with QSignalBlocker(gp.slider):
                gp.slider.setValue(k)
            gp.load_plane()

        steps = [lambda k=k: delay(k) for k in (2, 5, 9)]
        steps.append(lambda: gp.target_combo.setCurrentIndex(gp.target_combo.findData("IP")))
        steps.append(lambda: gp.cmap_combo.setCurrentIndex(gp.cmap_combo.currentIndex() + 1))
        for step in steps:
            gap2, wall2 = d.measure(step)
            gap, wall = max(gap, gap2), wall + wall2
        report("g2pixel_tab_3mpx", gap, wall, "show, 3 delays, IP, colour map")
    b0147 = sorted(real.glob("*B0147*_00001_00200_results.hdf")) if real else []
    if b0147 and want("stability_first_b0147"):
        d.open(b0147, None)
        gap, wall = d.measure(lambda: win.select_tab("stability"))
        report("stability_first_b0147", gap, wall)
    if want("raw_tab_3m_open") or want("raw_frame_scrub_3m"):
        raw = win.panels["raw"]
        gap, wall = d.measure(lambda: win.open_paths([str(inputs["raw"][0])]))
        report("raw_tab_3m_open", gap, wall, "10^7 hits, 10^5 frames: open, inspect, draw")
        iv = raw.image_view

        def scrub() -> None:
            for k in range(0, 100_000, 5_000):  # a slider dragged over the run
                iv.slider.setValue(k)
                d.spin(0.01)

        gap, wall = d.measure(scrub)
        report("raw_frame_scrub_3m", gap, wall, "20 frames of the 3M set")
    if want("raw_xsvs_compute"):
        win.open_paths([str(inputs["demo_raw"][0])])
        d.settle()
        raw = win.panels["raw"]
        raw.modes.setCurrentWidget(raw.xsvs)
        d.spin(0.5)
        gap, wall = d.measure(raw.xsvs.compute)
        report("raw_xsvs_compute", gap, wall, "R01: Compute XSVS, its fits, P(k) and beta(T)")
    if want("raw_correlate_dialog") or want("g2_recompute_bin"):
        from xpcsviewer.gui.correlate_dialog import open_correlate_dialog
        from xpcsviewer.gui.raw_sources import raw_target

        src = inputs["demo_raw"][0]
        out_path = work / "R01_stalls_results.hdf"
        out_path.unlink(missing_ok=True)
        win.open_paths([str(src)])
        d.settle()
        dlg = open_correlate_dialog(win, win.context, raw_target(src))
        dlg.output_edit.setText(str(out_path))
        d.spin(1.0)  # the plan and its estimate
        gap, wall = d.measure(dlg.start)
        report("raw_correlate_dialog", gap, wall, "R01, 2,000 frames of 128 x 128")
        dlg.close()
        if want("g2_recompute_bin"):
            import numpy as np

            from xpcsviewer.gui.panels.detector import MASK_KEY, DetectorMask
            from xpcsviewer.io.results.reader import read_qmap

            d.open([out_path], "g2")
            qm = read_qmap(out_path)
            m = np.asarray(qm.mask, bool).copy()
            m[20:22, 100:102] = False
            win.context.set_shared(MASK_KEY, DetectorMask(str(out_path), m, int((~m).sum())))
            g2 = win.panels["g2"]
            g2.rebin_bin.setValue(4)
            gap, wall = d.measure(g2.recompute_bin)
            report("g2_recompute_bin", gap, wall, "bin 4 of R01 with 4 pixels masked")
    # issue 49 item 7: drawing in a worker process (XPCS_DRAW_IN_PROCESS=0: in a thread)
    if want("g2_export_figure"):
        d.open([demo["A01"], demo["A02"], demo["A03"]], "g2")
        g2 = win.panels["g2"]
        target = work / "g2_export.png"
        gap, wall = d.measure(lambda: g2.export_figure(str(target)))
        report("g2_export_figure", gap, wall,
               f"3 demo files, {'process' if _in_process() else 'thread'}")
    if want("file_report"):
        from xpcsviewer.gui._report_action import report_targets

        d.open([demo["A01"], demo["A02"]], None)
        target = work / "stalls_report.html"
        gap, wall = d.measure(lambda: report_targets(win, str(target)))
        report("file_report", gap, wall,
               f"2 demo files, {'process' if _in_process() else 'thread'}")
    if want("live_follow"):
        gap, wall = live_follow(d, work)
        report("live_follow", gap, wall, "500 fps x 3,000 frames of 256 x 256")
    d.beat.stop()
    if d.trace is not None:
        d.trace.stop()
    win.shutdown(5000)
    win.close()
    return out


def _spin_load(seed: int, parent: int) -> None:
    """A busy process: pure-Python work with some small NumPy (a user's other work)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    a = rng.random((64, 64))
    while os.getppid() == parent:  # not left spinning if the benchmark is killed
        x = 0
        for i in range(20_000):
            x += i * i
        a = np.tanh(a @ a.T / 64)


def start_load(n: int) -> list:
    """``n`` busy processes at the normal priority (nice 0)."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    procs = []
    for i in range(n):
        p = ctx.Process(target=_spin_load, args=(i, os.getpid()), daemon=True)
        p.start()
        procs.append(p)
    return procs


def stop_load(procs: list) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        p.join(5)


def _child(only: list[str], args, tag: str) -> dict:
    """One fresh process over ``only``; its figures."""
    import subprocess

    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        js = Path(f.name)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--json", str(js), "--real", args.real,
           "--inputs", args.inputs]
    for a in only:
        cmd += ["--only", a]
    env = dict(os.environ)
    if args.trace:
        env["XPCS_STALL_TRACE"] = "0.05"
    print(f"--- {tag}: {' '.join(only)}", flush=True)
    subprocess.run(cmd, env=env, check=False)
    try:
        return json.loads(js.read_text())
    except (OSError, ValueError):
        return {}
    finally:
        js.unlink(missing_ok=True)


def compare(args) -> dict:
    """Quiet and loaded passes (fresh processes, ``args.repeat`` each); the table."""
    only = args.only or ACTIONS
    if not args.inputs:
        args.inputs = tempfile.mkdtemp(prefix="xpcs-stalls-")
    t0 = time.monotonic()
    write_inputs(Path(args.inputs), only)  # once, before the load starts
    print(f"inputs written in {time.monotonic() - t0:.1f} s", flush=True)
    groups = [g for g in ([a for a in only if a == "bayes_during_warmup"],
                          [a for a in only if a != "bayes_during_warmup"]) if g]
    figures: dict[str, dict[str, list]] = {"quiet": {}, "loaded": {}}
    loads: dict[str, list] = {"quiet": [], "loaded": []}
    for r in range(args.repeat):
        for mode in args.passes.split(","):
            procs = start_load(args.load) if mode == "loaded" else []
            try:
                if procs:
                    time.sleep(3)  # let the load average climb a little
                for g in groups:
                    out = _child(g, args, f"{mode} run {r + 1}")
                    loads[mode].append(os.getloadavg()[0])
                    for k, v in out.items():
                        if isinstance(v, dict) and "stall_s" in v:
                            figures[mode].setdefault(k, []).append(v["stall_s"])
            finally:
                stop_load(procs)

    def cell(v: list) -> str:
        if not v:
            return "—"
        lo, hi = min(v), max(v)
        return f"{1000 * lo:.0f} ms" if len(v) == 1 else f"{1000 * lo:.0f}-{1000 * hi:.0f} ms"

    la = {m: f"{min(v):.1f}-{max(v):.1f}" if v else "?" for m, v in loads.items()}
    print(f"\n| action | quiet max gap (load {la['quiet']}) | --load {args.load} max gap "
          f"(load {la['loaded']}) |")
    print("|---|---|---|")
    for a in ACTIONS:
        if a in figures["quiet"] or a in figures["loaded"]:
            print(f"| {a} | {cell(figures['quiet'].get(a, []))} | "
                  f"{cell(figures['loaded'].get(a, []))} |")
    print(f"({args.repeat} run(s) each, {os.cpu_count()} cores)")
    return {"load": args.load, "repeat": args.repeat, "figures": figures,
            "load_average": loads}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--only", action="append", help="only these actions (repeatable)")
    ap.add_argument("--real", default=str(REPO.parent / "shared" / "data" / "real"
                                          / "aps8idi_llps_saxpcs"))
    ap.add_argument("--load", type=int, default=0,
                    help="also run under N busy processes; print quiet and loaded side by side")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each pass (with --load)")
    ap.add_argument("--passes", default="quiet,loaded",
                    help="with --load: which passes (quiet, loaded or both)")
    ap.add_argument("--inputs", help="folder for the inputs (kept; reused when there)")
    ap.add_argument("--trace", action="store_true",
                    help="print the GUI thread's stacks in each stall over 50 ms")
    args = ap.parse_args(argv)
    if args.trace:
        os.environ.setdefault("XPCS_STALL_TRACE", "0.05")
    if args.load > 0:
        out = compare(args)
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=2))
        return 0
    real = Path(args.real) if Path(args.real).is_dir() else None
    with tempfile.TemporaryDirectory(prefix="xpcs-stalls-") as tmp:
        folder = Path(args.inputs) if args.inputs else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        inputs = write_inputs(folder, args.only)
        print(f"inputs written in {time.monotonic() - t0:.1f} s", flush=True)
        out = run(inputs, args.only, real, folder)
    out["load_average"] = os.getloadavg()[0]
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
