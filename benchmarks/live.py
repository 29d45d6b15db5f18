"""Live at the beamline: how fast a detector may write while ``xpcsviewer live`` follows.

A writer process (``python -m xpcsviewer.synthetic.acquisition``, SWMR, blocks every
20 ms) appends 256 x 256 uint16 speckle frames (the W1 physics of
``xpcsviewer.synthetic.speckle``: a pool of simulated frames, cycled) to a growing file
at a stated rate, while ``xpcsviewer live --fit --json-events`` follows it in another
process. Printed:

- for each rate of ``--rates`` (``--duration`` s of frames each): the lag behind the
  writer during the acquisition and the latency from the writer's last frame to the
  fitted result on disk; a rate is *kept up* when that latency is within ``--goal`` s
  (the backlog of a rate that is not kept up grows with the acquisition);
- for ``--frames`` frames (default 10,000) at the highest rate kept up: the latency from
  the last frame to the result file and to the fits on disk, and the largest difference
  between the final live file and ``xpcsviewer correlate`` of the complete file;
- with ``--gui``: the same acquisition followed by the Live tab (offscreen unless a
  display is set): the latency to the fitted result drawn on screen and the longest
  stall of the GUI thread while following (against an idle baseline on this machine);
  ``--shots DIR`` saves screenshots during the acquisition;
- with ``--repeats R``: the ``--frames`` run R times, each with the final update's
  breakdown (last frame -> seen at a poll -> end detected -> last frames correlated ->
  result assembled -> written -> fitted); ``--rates ''`` skips the sweep;
- with ``--load N``: N busy processes (a pure-Python loop each) run beside the writer
  and ``live`` the whole time, as other jobs on a shared machine.

Run on demand (not a test)::

    .venv/bin/python benchmarks/live.py [--rates 500,1000,2000,3000] [--gui --shots DIR]
        [--repeats 3] [--load 6] [--json out.json]

The machine's load is printed with the table: timings on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
#: tau at the detector's median q, in frames: slow enough that multi-tau's frame averaging
#: at the short delays hardly bends the exponential, fast enough that the low-q bins decay
#: within the pool of simulated frames (gone through back and forth)
TAU_FRAMES = 30.0
ENV = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def prepare(work: Path, size: int) -> Path:
    """The q-map of the simulated geometry (cached in ``work``)."""
    qmap = work / f"qmap{size}.hdf"
    if not qmap.exists():
        subprocess.run([sys.executable, "-m", "xpcsviewer", "qmap", "--shape", str(size),
                        str(size), "--energy", "10", "--det-dist", "5", "--pixel-size",
                        "75e-6", "--bcx", str(size / 2), "--bcy", str(size / 2), "-o",
                        str(qmap), "--quiet"], check=True, env=ENV)
    return qmap


def speckle_pool(work: Path, size: int, n: int, seed: int = 0) -> Path:
    """``n`` simulated speckle frames (2-pixel speckles) in a .npy, cached in ``work``.

    A run longer than ``n`` goes through them back and forth (fine for timing; the
    latency run gets a pool as long as itself, so its g2 is the physics).
    """
    pool = work / f"speckle_{size}_{n}_{seed}_tau{TAU_FRAMES:g}.npy"
    if pool.exists():
        return pool
    sys.path.insert(0, str(REPO))
    from xpcsviewer.synthetic.acquisition import frame_source

    t = time.perf_counter()
    tmp = pool.with_suffix(".part.npy")
    arr = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint16, shape=(n, size, size))
    a = 0
    for ch in frame_source((size, size), n, kind="speckle", frame_time=1e-3, seed=seed,
                           tau_frames=TAU_FRAMES, speckle_px=2):
        arr[a : a + ch.shape[0]] = ch
        a += ch.shape[0]
    arr.flush()
    del arr
    tmp.rename(pool)
    print(f"simulated {n} speckle frames of {size}x{size} in {time.perf_counter() - t:.0f} s",
          file=sys.stderr)
    return pool


def _writer(raw: Path, stats: Path, rate: float, n: int, size: int, pool: Path) -> subprocess.Popen:
    block = max(1, round(rate * 0.02))
    return subprocess.Popen(
        [sys.executable, "-m", "xpcsviewer.synthetic.acquisition", str(raw), "--frames", str(n),
         "--rate", str(rate), "--shape", str(size), str(size), "--pool-file", str(pool),
         "--mode", "swmr", "--block", str(block), "--frame-time", str(1.0 / rate),
         "--stats", str(stats)], env=ENV)


def _fresh(*paths: Path) -> None:
    for p in paths:
        p.unlink(missing_ok=True)


def run_cli(work: Path, tag: str, rate: float, n: int, size: int, qmap: Path, pool: Path,
            every: float) -> dict:
    """One acquisition followed by ``xpcsviewer live``; the measurements."""
    raw, out, stats = work / f"{tag}.h5", work / f"{tag}_results.hdf", work / f"{tag}.json"
    fit = out.with_name(out.stem + "_fit.json")
    _fresh(raw, out, stats, fit)
    live = subprocess.Popen(
        [sys.executable, "-m", "xpcsviewer", "live", str(raw), "--qmap", str(qmap), "-o",
         str(out), "--fit", "--json-events", "--every", str(every), "--idle", "15"],
        env=ENV, stdout=subprocess.PIPE, text=True)
    events: list[tuple[float, dict]] = []
    ready = threading.Event()

    def reader() -> None:
        for line in live.stdout:
            if line.strip():
                ev = json.loads(line)
                if ev["event"] == "ready":
                    ready.set()
                else:
                    events.append((time.time(), ev))
        ready.set()

    th = threading.Thread(target=reader)
    th.start()
    # as at a beamline: `live` is started (kernels and fits loaded) before the detector
    t_ready = time.perf_counter()
    ready.wait(300)
    t_ready = time.perf_counter() - t_ready
    w = _writer(raw, stats, rate, n, size, pool)
    w.wait()
    code = live.wait()
    th.join()
    st = json.loads(stats.read_text())
    last = st["last_frame_wall"]
    final = events[-1][1] if events else {}
    during = [e for t, e in events if e["event"] == "update" and t <= last + 0.5]
    res = {
        "rate_hz": rate, "frames": n, "exit": code, "end": final.get("end"),
        "frames_correlated": final.get("frames"),
        "writer_max_block_s": max(st["block_s"]),
        "writer_rate_hz": n / max(last - st["start_wall"], 1e-9),
        "lag_s_max": max((e["lag_s"] or 0.0 for e in during), default=None),
        "lag_frames_max": max((e["lag_frames"] for e in during), default=None),
        "updates": len(events),
        "latency_result_s": out.stat().st_mtime - last if out.exists() else None,
        "latency_fit_s": fit.stat().st_mtime - last if fit.exists() else None,
        "latency_reported_s": final.get("latency_s"),
        "converged_bins": sum(b["status"] == "converged" for b in final.get("bins", [])),
        "bins": len(final.get("bins", [])),
        "raw": str(raw), "output": str(out), "live_start_to_ready_s": t_ready,
        "stages": final.get("stages", {}),
    }
    return res


def busy(n: int) -> list[subprocess.Popen]:
    """``n`` processes that each keep a core busy until killed."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def breakdown(r: dict) -> str:
    """One row: last frame -> seen -> end -> read -> result -> write -> fit (s, each step)."""
    st, fit = r["stages"], r["latency_fit_s"]
    if not st or fit is None:
        return f"| {fit} | (no stages) |"
    seen = fit - st["fit"]  # the writer's last frame to the poll that saw it
    order = ["end", "read", "result", "write", "fit"]
    steps, prev = [], 0.0
    for k in order:
        v = st.get(k, prev)
        steps.append(v - prev)
        prev = v
    cells = " | ".join(f"{x:.2f}" for x in (seen, *steps))
    return f"| {fit:.2f} | {cells} | {st.get('end_partial', 0.0):.2f} |"


def final_vs_batch(work: Path, raw: str, live_out: str, qmap: Path) -> dict:
    """Largest differences between the live file and ``correlate`` of the complete file."""
    import h5py

    ref = work / "batch_results.hdf"
    _fresh(ref)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "xpcsviewer", "correlate", raw, "--qmap", str(qmap),
                    "-o", str(ref), "--quiet"], check=True, env=ENV)
    batch_s = time.perf_counter() - t
    out: dict = {"batch_correlate_s": batch_s}
    worst = 0.0
    with h5py.File(live_out, "r") as a, h5py.File(ref, "r") as b:
        names: list[str] = []
        b.visititems(lambda k, o: names.append(k) if isinstance(o, h5py.Dataset) else None)
        for k in names:
            x = np.asarray(b[k][()])
            if x.dtype.kind != "f" or k not in a:
                continue
            d = float(np.max(np.abs(np.asarray(a[k][()], np.float64) - x))) if x.size else 0.0
            worst = max(worst, d)
            if k.endswith("normalized_g2"):
                out["g2_max_abs_diff"] = d
        out["all_datasets_max_abs_diff"] = worst
        out["datasets_compared"] = len(names)
    return out


def run_gui(work: Path, rate: float, n: int, size: int, qmap: Path, pool: Path, every: float,
            shots: Path | None) -> dict:
    """The Live tab follows an acquisition: on-screen latency and GUI stalls."""
    if not os.environ.get("DISPLAY"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    sys.path.insert(0, str(REPO))
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(["live-bench"])
    from xpcsviewer.gui.app import configure_pyqtgraph
    from xpcsviewer.gui.heartbeat import Heartbeat
    from xpcsviewer.gui.main_window import MainWindow

    configure_pyqtgraph()
    win = MainWindow(restore_session=False, save_session_on_close=False)
    win.resize(1500, 950)
    win.show()
    win.show_live()
    panel = win.panels["live"]
    raw, stats = work / "gui.h5", work / "gui.json"
    _fresh(raw, stats, work / "gui_results.hdf", work / "gui_results_fit.json")

    def spin(seconds: float) -> None:
        t_end = time.monotonic() + seconds
        while time.monotonic() < t_end:
            app.processEvents()
            time.sleep(0.002)

    # the start-up warm-up (JAX, the fit programs) finishes first, as at a beamline
    win.context.runner.wait_until_idle(120000)
    spin(1.0)
    beat = Heartbeat(10).start()
    t0 = time.monotonic()
    spin(3.0)
    idle_gap = beat.max_gap(t0)
    panel.qmap_edit.setText(str(qmap))
    panel.every.setValue(every)
    drawn: dict = {}

    def on_drawn() -> None:
        up = panel.last_update
        if up is not None and up.final and "final" not in drawn:
            drawn["final"] = time.time()

    panel.sigUpdated.connect(on_drawn)
    panel.source_edit.setText(str(raw))
    panel.start()  # before the detector, as at a beamline
    while not (panel.sink.ready or not panel.running):
        app.processEvents()
        time.sleep(0.01)
    w = _writer(raw, stats, rate, n, size, pool)
    t1 = time.monotonic()
    dur = n / rate
    shot_at = [0.45 * dur, 0.85 * dur] if shots else []
    taken: list[str] = []
    grabs: list[tuple[float, float]] = []
    while panel.running:
        app.processEvents()
        el = time.monotonic() - t1
        if shot_at and el >= shot_at[0]:
            shot_at.pop(0)
            shots.mkdir(parents=True, exist_ok=True)
            p = shots / f"live_tab_{len(taken) + 1}_during.png"
            tg = time.monotonic()
            win.grab().save(str(p))
            grabs.append((tg, time.monotonic()))
            taken.append(str(p))
        time.sleep(0.002)
    # stalls while following, leaving out our own screenshots (a grab renders the
    # whole window on the GUI thread)
    beats = np.asarray([b for b in beat.beats if b >= t1] + [time.monotonic()])
    gaps = np.diff(beats)
    own = np.zeros(gaps.size, bool)
    for g0, g1 in grabs:
        own |= (beats[1:] >= g0) & (beats[:-1] <= g1)
    gaps = gaps[~own]
    gap = float(gaps.max()) if gaps.size else float("nan")
    w.wait()
    spin(1.0)
    if shots:
        p = shots / "live_tab_3_final.png"
        win.grab().save(str(p))
        taken.append(str(p))
    beat.stop()
    last = json.loads(stats.read_text())["last_frame_wall"]
    up = panel.final
    res = {"rate_hz": rate, "frames": n, "gui_frames": None if up is None else up.frames,
           "latency_on_screen_s": drawn.get("final", float("nan")) - last,
           "gui_max_stall_s": gap, "gui_p99_beat_gap_s": float(np.percentile(gaps, 99)),
           "gui_idle_baseline_max_stall_s": idle_gap, "screenshots": taken}
    win.shutdown(5000)
    win.close()
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--rates", default="500,1000,2000,3000,4000")
    ap.add_argument("--duration", type=float, default=10.0, help="seconds per rate")
    ap.add_argument("--frames", type=int, default=10_000)
    ap.add_argument("--latency-rate", type=float, default=None,
                    help="rate of the --frames run (default: the highest kept up)")
    ap.add_argument("--every", type=float, default=2.0)
    ap.add_argument("--goal", type=float, default=2.0, help="latency goal (s)")
    ap.add_argument("--pool", type=int, default=1024, help="simulated speckle frames, cycled")
    ap.add_argument("--gui", action="store_true")
    ap.add_argument("--shots", default=None)
    ap.add_argument("--work", default=None, help="folder for the files (default: a temp dir)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--repeats", type=int, default=1, help="runs of the --frames acquisition")
    ap.add_argument("--load", type=int, default=0, help="busy processes beside the run")
    ap.add_argument("--no-compare", action="store_true",
                    help="skip the comparison with `correlate` of the complete file")
    a = ap.parse_args()
    work = Path(a.work or tempfile.mkdtemp(prefix="xpcs_live_bench_"))
    work.mkdir(parents=True, exist_ok=True)
    qmap = prepare(work, a.size)
    pool = speckle_pool(work, a.size, a.pool)
    full = speckle_pool(work, a.size, a.frames)
    host = {"python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "load_before": os.getloadavg(), "busy": a.load}
    hogs = busy(a.load)
    try:
        return _run(a, work, qmap, pool, full, host)
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def _run(a: argparse.Namespace, work: Path, qmap: Path, pool: Path, full: Path,
         host: dict) -> int:
    rows = []
    kept = None
    rates = [float(x) for x in a.rates.split(",") if x.strip()]
    for r in rates:
        n = int(r * a.duration)
        res = run_cli(work, f"rate{int(r)}", r, n, a.size, qmap, pool, a.every)
        res["kept_up"] = bool(res["exit"] == 0 and res["latency_fit_s"] is not None
                              and res["latency_fit_s"] <= a.goal
                              and res["frames_correlated"] == n)
        rows.append(res)
        print(f"{r:7.0f} fps x {n:6d}: lag max {res['lag_s_max'] or 0:.2f} s "
              f"({res['lag_frames_max']} frames), latency to fit {res['latency_fit_s']:.2f} s, "
              f"writer block max {res['writer_max_block_s'] * 1000:.0f} ms -> "
              f"{'kept up' if res['kept_up'] else 'NOT kept up'}", file=sys.stderr)
        if res["kept_up"]:
            kept = r
        else:
            break
    rate = a.latency_rate or kept or (rates[0] if rates else 1000.0)
    lats = [run_cli(work, "latency", rate, a.frames, a.size, qmap, full, a.every)
            for _ in range(max(1, a.repeats))]
    lat = lats[-1]
    cmp = ({"batch_correlate_s": float("nan"), "datasets_compared": 0,
            "all_datasets_max_abs_diff": None} if a.no_compare
           else final_vs_batch(work, lat["raw"], lat["output"], qmap))
    gui = run_gui(work, rate, a.frames, a.size, qmap, full, a.every,
                  Path(a.shots) if a.shots else None) if a.gui else None
    host["load_after"] = os.getloadavg()
    print("\n| rate (fps) | frames | kept up | max lag during (s) | latency last frame -> "
          "fitted result on disk (s) |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['rate_hz']:.0f} | {r['frames']} | {'yes' if r['kept_up'] else 'no'} | "
              f"{r['lag_s_max'] or 0:.2f} | {r['latency_fit_s']:.2f} |")
    print(f"\n{a.frames} frames of {a.size}x{a.size} at {rate:.0f} fps: result on disk "
          f"{lat['latency_result_s']:.2f} s, fitted result on disk {lat['latency_fit_s']:.2f} s "
          f"after the last frame ({lat['converged_bins']}/{lat['bins']} bins converged; "
          f"end: {lat['end']}); writer's slowest block {lat['writer_max_block_s'] * 1000:.0f} ms")
    print(f"final vs `correlate` of the complete file: max |diff| g2 "
          f"{cmp.get('g2_max_abs_diff')}, all {cmp['datasets_compared']} datasets "
          f"{cmp['all_datasets_max_abs_diff']} (batch correlate {cmp['batch_correlate_s']:.1f} s)")
    if gui:
        print(f"GUI: fitted result on screen {gui['latency_on_screen_s']:.2f} s after the last "
              f"frame; GUI thread longest stall {gui['gui_max_stall_s'] * 1000:.0f} ms "
              f"(p99 beat gap {gui['gui_p99_beat_gap_s'] * 1000:.0f} ms; idle baseline "
              f"{gui['gui_idle_baseline_max_stall_s'] * 1000:.0f} ms)")
    print(f"\n{a.frames} frames at {rate:.0f} fps, {a.load} busy processes: last frame -> "
          "fitted result on disk (s), and its steps")
    print("| total | last frame -> seen at a poll | -> end detected | -> last frames "
          "correlated | -> result assembled | -> written | -> fitted | of which waiting "
          "for a partial update |")
    print("|---|---|---|---|---|---|---|---|")
    for r in lats:
        print(breakdown(r))
    print(f"host: {host['cpus']} CPUs, load average {host['load_before'][0]:.1f} before, "
          f"{host['load_after'][0]:.1f} after")
    if a.json:
        Path(a.json).write_text(json.dumps({"host": host, "rates": rows, "latency": lat,
                                            "runs": lats, "final_vs_batch": cmp,
                                            "gui": gui}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
