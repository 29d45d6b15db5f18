"""Live on photons: does ``xpcsviewer live`` keep up with a Rigaku ``.bin`` being written?

A writer process appends 64-bit hit words (frame << 40 | pixel << 16 | count) of a
512 x 1024 module to a ``.bin`` file at a stated hit rate (``--rate``, default 10^7 hits/s)
and occupancy (``--occupancy``, default 0.5 % of the pixels per frame: 2,621 hits per frame,
so 3,815 frames/s at 10^7 hits/s), every 10 ms the words of the frames due, the write cut
mid-word as a real writer's buffers are. The hits come from a pool of simulated speckle
frames (2-pixel speckles, a field correlation time of ``--tau`` frames; the pool is
cycled, each pass moved across the module so that no frame repeats), so g2 decays and the
fits have something to fit.

``xpcsviewer live SCAN.bin --qmap Q --fit --json-events --frames N`` follows it in another
process, started first and ready (kernels and fits loaded) before the writer starts, as at
a beamline; the q-map covers the whole module (36 x 360 q-bins), so every hit is
correlated. Printed: the hits per second written and correlated, the lag behind the writer,
and the time from the last hit written to the fitted final g2 on disk (``OUT_fit.json``).
The goal of issue 30: keep up with >= 10^7 hits/s on 2 cores, the fitted g2 <= 2 s after
the last event.

Run on demand (not a test)::

    .venv/bin/python benchmarks/live_sparse.py [--rate 1e7] [--occupancy 0.005]
        [--duration 10] [--model auto] [--every 2] [--no-expected] [--json out.json]

``--no-expected`` leaves ``--frames`` out: the run then ends when the file has not changed
for the writer-closed grace time (1 s), which adds to the latency. The machine's core count
and load are printed with the numbers: timings on a shared machine are noisy.
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
ENV = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
SHAPE = (512, 1024)
#: pixels the pool's pattern moves by from one pass to the next (a prime)
SHIFT = 104_729


# ------------------------------------------------------------------------ set-up
def make_qmap(work: Path) -> Path:
    """A q-map of the whole module (beam at its centre, 36 dynamic x 360 static bins)."""
    qmap = work / "rigaku_qmap.hdf"
    if not qmap.exists():
        subprocess.run([sys.executable, "-m", "xpcsviewer", "qmap", "--shape", "512", "1024",
                        "--energy", "10", "--det-dist", "5", "--pixel-size", "76e-6",
                        "--bcx", "512", "--bcy", "256", "-o", str(qmap), "--quiet"],
                       check=True, env=ENV)
    return qmap


def make_pool(work: Path, n: int, occupancy: float, tau: float, seed: int = 0) -> Path:
    """``n`` frames of hits (words without the frame field) and their offsets, in a .npz.

    The field of 2-pixel speckles follows E <- a E + sqrt(1 - a^2) noise with
    a = exp(-1 / tau) per frame (g2 - 1 = beta exp(-2 t / tau), t in frames); each
    frame's hits are drawn from its intensity
    (a Poisson number of photons, pixels by the intensity's cumulative sum, photons on one
    pixel merged into one word with its count).
    """
    path = work / f"pool_{n}_{occupancy:g}_{tau:g}_{seed}.npz"
    if path.exists():
        return path
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    h, w = SHAPE[0] // 2, SHAPE[1] // 2
    a = np.exp(-1.0 / tau)
    field = (rng.standard_normal((h, w)) + 1j * rng.standard_normal((h, w))) / np.sqrt(2)
    mean_hits = occupancy * SHAPE[0] * SHAPE[1]
    low, ptr = [], [0]
    for _ in range(n):
        noise = (rng.standard_normal((h, w)) + 1j * rng.standard_normal((h, w))) / np.sqrt(2)
        field = a * field + np.sqrt(1 - a * a) * noise
        inten = np.repeat(np.repeat(np.abs(field) ** 2, 2, axis=0), 2, axis=1).ravel()
        cdf = np.cumsum(inten)
        k = rng.poisson(mean_hits)
        px = np.searchsorted(cdf, rng.random(k) * cdf[-1])
        px, cnt = np.unique(np.minimum(px, inten.size - 1), return_counts=True)
        u = np.uint64
        low.append((px.astype(u) << u(16)) | np.minimum(cnt, 0xFFF).astype(u))
        ptr.append(ptr[-1] + px.size)
    np.savez(path, low=np.concatenate(low), ptr=np.asarray(ptr, np.int64))
    print(f"simulated a pool of {n} frames of hits in {time.perf_counter() - t0:.0f} s",
          file=sys.stderr)
    return path


# ------------------------------------------------------------------------ writer
def writer_main(argv: list[str]) -> int:
    """``--writer OUT POOL FPS FRAMES STATS``: append the frames' words at FPS frames/s."""
    out, pool_path, fps, frames, stats = argv
    fps, frames = float(fps), int(frames)
    pool = np.load(pool_path)
    low, ptr = pool["low"], pool["ptr"]
    n_pool = ptr.size - 1
    n_px = SHAPE[0] * SHAPE[1]
    u = np.uint64
    hits = 0
    behind = 0.0
    carry = b""
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    t0 = time.monotonic()
    wall0 = time.time()
    k = 0
    while k < frames:
        due = min(frames, int((time.monotonic() - t0) * fps) + 1)
        if due <= k:
            time.sleep(0.002)
            continue
        behind = max(behind, time.monotonic() - t0 - k / fps)
        fr = np.arange(k, due)
        parts = [low[ptr[j]: ptr[j + 1]] for j in (fr % n_pool).tolist()]
        sizes = [x.size for x in parts]
        words = np.concatenate(parts)
        # pass q of the pool is its pattern shifted by q * SHIFT pixels: no frame is ever
        # written twice (a repeated frame of 0.5 % occupancy would spike g2 at its delay)
        shift = np.repeat((fr // n_pool) * SHIFT % n_px, sizes).astype(u)
        pixel = ((words >> u(16)) + shift) % u(n_px)
        words = ((np.repeat(fr, sizes).astype(u) << u(40)) | (pixel << u(16))
                 | (words & u(0xFFF))).astype("<u8")
        hits += words.size
        data = carry + words.tobytes()
        cut = len(data) - 3 if due < frames else len(data)  # a word split across writes
        os.write(fd, data[:cut])
        carry = data[cut:]
        k = due
        time.sleep(max(0.0, 0.01 - (time.monotonic() - t0 - k / fps)))
    if carry:
        os.write(fd, carry)
    os.close(fd)
    wall1 = time.time()
    Path(stats).write_text(json.dumps({"start_wall": wall0, "last_word_wall": wall1,
                                       "hits": hits, "frames": frames,
                                       "max_behind_s": behind}))
    return 0


# ------------------------------------------------------------------------ one run
def _live(raw: Path, qmap: Path, out: Path, frames: int | None, fps: float, model: str,
          every: float, fit: bool) -> tuple[subprocess.Popen, list, threading.Event,
                                             threading.Thread]:
    """``xpcsviewer live`` in another process; its JSON events as (wall time, event)."""
    cmd = [sys.executable, "-m", "xpcsviewer", "live", str(raw), "--qmap", str(qmap), "-o",
           str(out), "--json-events", "--every", str(every), "--idle", "20",
           "--frame-time", str(1.0 / fps), "--overwrite"]
    if fit:
        cmd += ["--fit", "--model", model]
    if frames:
        cmd += ["--frames", str(frames)]
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, text=True)
    events: list[tuple[float, dict]] = []
    ready = threading.Event()

    def reader() -> None:
        for line in proc.stdout:
            if line.strip():
                ev = json.loads(line)
                events.append((time.time(), ev))
                if ev["event"] == "ready":
                    ready.set()
        ready.set()

    th = threading.Thread(target=reader)
    th.start()
    return proc, events, ready, th


def run(work: Path, qmap: Path, pool: Path, rate: float, occupancy: float, duration: float,
        model: str, every: float, expected: bool, fit: bool) -> dict:
    fps = rate / (occupancy * SHAPE[0] * SHAPE[1])
    frames = round(fps * duration)
    raw, out, stats = work / "scan.bin", work / "scan_results.hdf", work / "writer.json"
    fit_json = out.with_name(out.stem + "_fit.json")
    for p in (raw, out, stats, fit_json):
        p.unlink(missing_ok=True)
    proc, events, ready, th = _live(raw, qmap, out, frames if expected else None, fps, model,
                                    every, fit)
    t_ready = time.perf_counter()
    ready.wait(600)  # as at a beamline: kernels and fits loaded before the detector starts
    t_ready = time.perf_counter() - t_ready
    load0 = os.getloadavg()
    w = subprocess.Popen([sys.executable, __file__, "--writer", str(raw), str(pool), str(fps),
                          str(frames), str(stats)], env=ENV)
    w.wait()
    code = proc.wait()
    th.join()
    load1 = os.getloadavg()
    st = json.loads(stats.read_text())
    t0, last = st["start_wall"], st["last_word_wall"]
    ups = [(t, e) for t, e in events if e["event"] == "update"]
    final_t, final = next(((t, e) for t, e in events if e["event"] == "final"), (None, {}))
    bins = final.get("bins", [])
    res = {
        "rate_goal_hits_s": rate, "occupancy": occupancy, "frames_per_s": fps,
        "frames": frames, "hits_written": st["hits"], "writer_seconds": last - t0,
        "writer_hits_s": st["hits"] / max(last - t0, 1e-9),
        "writer_max_behind_s": st["max_behind_s"],
        "exit": code, "end": final.get("end"), "frames_correlated": final.get("frames"),
        "hits_correlated": final.get("hits"),
        "updates": [{"t_s": round(t - t0, 2), "frames": e["frames"], "hits": e.get("hits"),
                     "lag_frames": e["lag_frames"], "lag_s": e["lag_s"],
                     "interval_s": e["interval_s"]} for t, e in ups],
        "lag_s_max_during_writing": max((e["lag_s"] or 0.0 for t, e in ups if t <= last),
                                        default=None),
        "correlated_hits_s_overall": (final.get("hits") or 0) / max((final_t or last) - t0,
                                                                    1e-9),
        "last_word_to_final_event_s": (final_t - last) if final_t else None,
        "last_word_to_result_file_s": out.stat().st_mtime - last if out.exists() else None,
        "last_word_to_fitted_g2_s": (fit_json.stat().st_mtime - last) if fit_json.exists()
        else None,
        "latency_reported_s": final.get("latency_s"),
        "seen_to_result_s": final.get("seen_to_result_s"),
        "bins_converged": sum(b["status"] == "converged" for b in bins), "bins": len(bins),
        "live_start_to_ready_s": t_ready, "load_before": load0, "load_after": load1,
        "note": final.get("note", ""),
    }
    return res


def run_offline(work: Path, qmap: Path, frames: int, fps: float) -> dict:
    """``xpcsviewer live`` (no fit) on the finished file: the follower's own throughput."""
    raw, out = work / "scan.bin", work / "offline_results.hdf"
    t = time.time()
    proc, events, ready, th = _live(raw, qmap, out, frames, fps, "single", 2.0, False)
    ready.wait(600)
    t_ready = time.time()
    proc.wait()
    th.join()
    final_t, final = next(((t, e) for t, e in events if e["event"] == "final"), (None, {}))
    span = (final_t or time.time()) - t_ready
    return {"offline_seconds": span, "offline_hits": final.get("hits"),
            "offline_hits_s": (final.get("hits") or 0) / max(span, 1e-9),
            "offline_updates": sum(e["event"] == "update" for _, e in events),
            "offline_ready_s": t_ready - t, "offline_load": os.getloadavg()}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--writer":
        return writer_main(argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=1e7, help="hits per second written")
    ap.add_argument("--occupancy", type=float, default=0.005,
                    help="fraction of the 512 x 1024 pixels hit per frame")
    ap.add_argument("--duration", type=float, default=10.0, help="seconds of writing")
    ap.add_argument("--tau", type=float, default=20.0, help="field correlation time, frames")
    ap.add_argument("--pool", type=int, default=1024, help="simulated frames (cycled)")
    ap.add_argument("--model", default="auto", help="fit model (as live --model)")
    ap.add_argument("--no-fit", action="store_true", help="no --fit")
    ap.add_argument("--every", type=float, default=2.0, help="live --every")
    ap.add_argument("--no-expected", action="store_true", help="no --frames")
    ap.add_argument("--no-offline", action="store_true",
                    help="skip following the finished file again (the follower's throughput)")
    ap.add_argument("--dir", default=None, help="work folder (default: a temporary one)")
    ap.add_argument("--json", default=None, help="also write the numbers here")
    a = ap.parse_args(argv)
    work = Path(a.dir) if a.dir else Path(tempfile.mkdtemp(prefix="live_sparse_"))
    work.mkdir(parents=True, exist_ok=True)
    qmap = make_qmap(work)
    pool = make_pool(work, a.pool, a.occupancy, a.tau)
    res = run(work, qmap, pool, a.rate, a.occupancy, a.duration, a.model, a.every,
              not a.no_expected, not a.no_fit)
    if not a.no_offline:
        res.update(run_offline(work, qmap, res["frames"], res["frames_per_s"]))
    res["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version(),
                      "platform": platform.platform()}
    mb = 1e6
    print(f"machine: {os.cpu_count()} cores, load average {res['load_before'][0]:.1f} before / "
          f"{res['load_after'][0]:.1f} after the run (other jobs included)")
    print(f"writer: {res['frames']:,} frames of 512 x 1024 at {res['frames_per_s']:.0f}/s "
          f"planned, {res['hits_written']:,} hits in {res['writer_seconds']:.2f} s = "
          f"{res['writer_hits_s'] / mb:.2f} M hits/s written (goal {a.rate / mb:.1f} M; at "
          f"most {res['writer_max_behind_s']:.2f} s behind its schedule)")
    print(f"live: end {res['end']}, {res['frames_correlated']} frames, "
          f"{res['hits_correlated']} hits; {res['correlated_hits_s_overall'] / mb:.2f} M hits/s "
          f"correlated from the first word written to the final result; the largest lag "
          f"at a partial update while writing {res['lag_s_max_during_writing']} s")
    for u in res["updates"]:
        print(f"  update at {u['t_s']:6.2f} s: {u['frames']:6d} frames, lag {u['lag_frames']} "
              f"frames ({u['lag_s']} s), next in {u['interval_s']} s")
    fitted = res["last_word_to_fitted_g2_s"]
    print(f"last hit written -> final event {res['last_word_to_final_event_s']:.2f} s, -> "
          f"result file {res['last_word_to_result_file_s']:.2f} s, -> fitted g2 on disk "
          + (f"{fitted:.2f} s" if fitted is not None else "(no fit)")
          + f" ({res['bins_converged']}/{res['bins']} bins converged)")
    if "offline_hits_s" in res:
        print(f"the same file followed again when finished (no writer, no fit): "
              f"{res['offline_hits_s'] / mb:.2f} M hits/s ({res['offline_seconds']:.1f} s from "
              f"ready to the final result, {res['offline_updates']} partial updates, load "
              f"{res['offline_load'][0]:.1f})")
    if res["note"]:
        print(f"note: {res['note']}")
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
