"""GUI-thread stalls: the real window driven through the heavy actions, with a heartbeat.

Run on demand (the test suite has a lenient version per action)::

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/gui_stalls.py [--json out.json]
        [--only NAME ...] [--real ../shared/data/real/aps8idi_llps_saxpcs]

A 10 ms QTimer beats on the GUI thread (``xpcsviewer.gui.heartbeat``); each action is
started, the event loop runs until its jobs are done and the result is drawn, and the
longest gap between two beats is the stall a user would feel. Inputs are written to a
temporary folder: the demo set, a 1676 x 2100 (Rigaku-like) and a 2048 x 2048
(4 Mpixel) result file, and 11 files of 100,000 frames of intensity vs time. The real
8-ID-I files are used when present.

Actions (goal: every stall < 100 ms on 2 cores):

* ``first_bayes_click``: the first click on "Bayesian" in a fresh process;
* ``saxs2d_log_toggle_3mpx`` / ``..._4mpx``: log <-> linear on the large images;
* ``g2_layout_change``: per q-bin -> per file -> combined, demo set;
* ``g2_redraw_after_fit``: the least-squares fit of 48 demo curves and its redraw;
* ``g2_real_fit``: the same on the 11 real files (when present);
* ``intensity_tab_11x100k``: the Intensity-Time tab on 11 x 100,000 frames;
* ``first_nuts_compile``: whether "compiling (first run only)" is shown while the
  first NUTS program compiles.
* ``detector_tab_3mpx`` / ``detector_partition_3mpx`` / ``detector_polygon_3mpx``: the
  Detector tab on the 1676 x 2100 file, a q x phi partition, and a polygon mask applied.
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


def write_inputs(folder: Path) -> dict[str, list[Path]]:
    """The demo set and the large / long synthetic files."""
    from xpcsviewer.io.writer import write_result
    from xpcsviewer.synthetic.demo import write_demo

    out: dict[str, list[Path]] = {}
    demo = folder / "demo"
    out["demo"] = sorted(Path(p) for p in write_demo(demo, seed=0))

    def one(name: str, shape, n_frames: int, seed: int, dq: int = 24) -> Path:
        res, extras = simulated_result(name, shape, n_frames, seed, dq)
        path = folder / f"{name}_results.hdf"
        write_result(path, res, saxs_2d=extras["saxs_2d"])
        return path

    out["rigaku"] = [one("R3M", (1676, 2100), 1000, 1)]
    out["4mpx"] = [one("E4M", (2048, 2048), 1000, 2)]
    out["long"] = [one(f"L{i:02d}", (64, 64), 100_000, 10 + i, dq=8) for i in range(11)]
    return out


def write_g2_stack(folder: Path) -> Path:
    """A 1676 x 2100 result with a per-pixel G2/IP/IF side file (a smooth, coarsely
    quantized pattern, so that the side file compresses to a few MB)."""
    import types

    import numpy as np

    from xpcsviewer.io.writer import write_result_with_g2_stack

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

    def __init__(self) -> None:
        from PySide6.QtWidgets import QApplication

        from xpcsviewer.gui.app import configure_pyqtgraph
        from xpcsviewer.gui.heartbeat import Heartbeat
        from xpcsviewer.gui.main_window import MainWindow

        self.app = QApplication.instance() or QApplication(["gui-stalls"])
        configure_pyqtgraph()
        self.win = MainWindow(restore_session=False, save_session_on_close=False)
        self.win.resize(1600, 1000)
        self.win.show()
        self.runner = self.win.context.runner
        self.beat = Heartbeat(10).start()
        self.sampler = None
        if os.environ.get("XPCS_STALL_TRACE"):
            self.sampler = StallSampler(self.beat, float(os.environ["XPCS_STALL_TRACE"]))
        self.settle()

    def settle(self, timeout_s: float = 600.0) -> bool:
        """Run the event loop until no job is left and the drawing is done."""
        ok = self.runner.wait_until_idle(int(timeout_s * 1000))
        t_end = time.monotonic() + 0.15  # let the last paints through
        while time.monotonic() < t_end:
            self.app.processEvents()
        return ok

    def open(self, paths: list[Path], tab: str | None = None) -> None:
        """Make ``paths`` the targets (and show ``tab``); not measured."""
        self.win.browser.clear_targets()
        self.win.open_paths([str(p) for p in paths])
        self.settle()
        if tab is not None:
            self.win.select_tab(tab)
        self.settle()

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
        return self.beat.max_gap(t0, t1), t1 - t0


class StallSampler:
    """Prints where the GUI thread is while a beat is late (XPCS_STALL_TRACE=seconds)."""

    def __init__(self, beat, late_s: float) -> None:
        import threading

        self.beat, self.late_s = beat, late_s
        self.gui_id = threading.get_ident()
        self.seen: dict[str, int] = {}
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        import traceback

        while True:
            time.sleep(0.02)
            if not self.beat.beats or time.monotonic() - self.beat.beats[-1] < self.late_s:
                continue
            frame = sys._current_frames().get(self.gui_id)
            if frame is None:
                continue
            stack = traceback.extract_stack(frame)[-8:]
            key = " <- ".join(f"{Path(f.filename).name}:{f.lineno}:{f.name}"
                              for f in reversed(stack))
            self.seen[key] = self.seen.get(key, 0) + 1
            if self.seen[key] in (1, 10, 50):
                print(f"  [late {self.seen[key]}x] {key}", flush=True)


def run(inputs: dict[str, list[Path]], only: list[str] | None, real: Path | None) -> dict:
    from PySide6.QtCore import QSignalBlocker

    d = Driver()
    win = d.win
    out: dict = {}

    def want(name: str) -> bool:
        return only is None or name in only

    def report(name: str, gap: float, wall: float, extra: str = "") -> None:
        out[name] = {"stall_s": round(gap, 4), "wall_s": round(wall, 3)}
        flag = "ok" if gap < 0.1 else "STALL"
        print(f"{name:28s} stall {1000 * gap:7.0f} ms   (action {wall:6.2f} s) {flag} {extra}",
              flush=True)

    demo = {p.name.split("_")[0]: p for p in inputs["demo"]}
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
    d.beat.stop()
    win.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--only", action="append", help="only these actions (repeatable)")
    ap.add_argument("--real", default=str(REPO.parent / "shared" / "data" / "real"
                                          / "aps8idi_llps_saxpcs"))
    args = ap.parse_args(argv)
    real = Path(args.real) if Path(args.real).is_dir() else None
    with tempfile.TemporaryDirectory(prefix="xpcs-stalls-") as tmp:
        t0 = time.monotonic()
        inputs = write_inputs(Path(tmp))
        print(f"inputs written in {time.monotonic() - t0:.1f} s", flush=True)
        out = run(inputs, args.only, real)
    out["load_average"] = os.getloadavg()[0]
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
