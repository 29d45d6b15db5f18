"""Raw-data inspection (issue 45): open, show a frame, timelines and faults, against the goals.

Run on demand (not a test; a few minutes, ~1.5 GB of temporary files, deleted after)::

    .venv/bin/python benchmarks/raw_inspect.py                 # every part
    .venv/bin/python benchmarks/raw_inspect.py --only rigaku   # rigaku | dense | recall
    .venv/bin/python benchmarks/raw_inspect.py --hits 1e7      # a smaller 3M set

Parts:

- ``rigaku``: a Rigaku 3M set (six module files) of ``--hits`` photons (default 10^8,
  ~800 MB) over ``--frames`` frames (10^6), written a block of frames at a time into a
  temporary folder and read once (warm page cache). Timed in a fresh process: opening it
  (:func:`~xpcsviewer.io.raw.open_raw_source`, frames and hits counted), showing any
  frame (:func:`~xpcsviewer.jobs.inspect.frame_image` of 20 random frames: max and
  median) and the timelines with the fault finders
  (:func:`~xpcsviewer.jobs.inspect.inspect_source`, without and with a 36-ring q-map),
  with the process's peak resident memory before and after.
- ``dense``: a 1M-pixel (1024 x 1024) HDF5 run, ``/entry/data/data`` uint16 with lzf, of
  ``--dense-frames`` frames (default 1000: the goal's 10^4 frames are 20 GB, more than the
  disk and 2 cores allow here; the ratio is what the goal states): the time of reading it
  once (every chunk, :class:`~xpcsviewer.io.raw.dense.RawFrames`) against the time of
  :func:`~xpcsviewer.jobs.inspect.inspect_source` on it.
- ``recall``: the demo's faulty acquisitions R01-R03 written at full size, inspected with
  the options their truth states, the findings matched against the planted faults
  (:func:`~xpcsviewer.synthetic.faults.match_findings`: recall, frequency error), and the
  same acquisitions without faults (false alarms per frame).

Prints a table with the goals beside the numbers, and a JSON record (``--json``). The
machine is shared: the load average is printed with the numbers.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

#: the issue's goals (seconds)
GOAL_OPEN_S = 2.0
GOAL_FRAME_S = 0.100
GOAL_TIMELINES_S = 3.0


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ---------------------------------------------------------------------- Rigaku 3M
def write_rigaku_3m_set(base: Path, n_hits: float, n_frames: int, seed: int = 0,
                        block: int = 20_000) -> list[Path]:
    """Six module files of a 3M with ~``n_hits`` hits over ``n_frames`` frames, written a
    block of frames at a time (memory: one block). Hits are spread over each module (a
    photon-sparse speckle pattern's statistics do not matter to the reader's speed)."""
    from xpcsviewer.synthetic.sparse_files import (
        RIGAKU_3M_PLACEMENT,
        RIGAKU_MODULE_SHAPE,
        rigaku_3m_files,
        rigaku_words,
    )

    rng = np.random.default_rng(seed)
    files = rigaku_3m_files(base)
    per_frame = float(n_hits) / n_frames / 6.0
    npx = RIGAKU_MODULE_SHAPE[0] * RIGAKU_MODULE_SHAPE[1]
    handles = {k: open(files[k], "wb") for k in range(6)}
    try:
        for a in range(0, n_frames, block):
            b = min(n_frames, a + block)
            for pos in range(6):
                k = rng.poisson(per_frame, b - a)
                if b == n_frames:
                    k[-1] = max(k[-1], 1)  # every module reaches the last frame
                f = np.repeat(np.arange(a, b, dtype=np.int64), k)
                p = rng.integers(0, npx, f.size)
                # photon-sparse (~3e-5 photons per pixel per frame): a count of 2 is
                # rare (1e-4 of the hits), as in speckle at that rate
                c = 1 + (rng.random(f.size) < 1e-4)
                rigaku_words(f, p, c).tofile(handles[RIGAKU_3M_PLACEMENT[pos]])
    finally:
        for h in handles.values():
            h.close()
    return files


def ring_qmap(path: Path, shape: tuple[int, int], n_dyn: int = 36) -> Path:
    """A /qmap file of ``n_dyn`` rings over the detector (every pixel valid)."""
    from xpcsviewer.compute.detector.partition import PartitionGrid, make_partition
    from xpcsviewer.compute.detector.qmap import DetectorGeometry, compute_qmap
    from xpcsviewer.io.results.writer import write_qmap_file

    geo = DetectorGeometry(beam_center_x=shape[1] / 2, beam_center_y=shape[0] / 2,
                           detector_distance=5.0, pixel_size=75e-6, energy_kev=10.0)
    q, phi = compute_qmap(shape, 10.0, 5.0, 75e-6, shape[1] / 2, shape[0] / 2)
    qm = make_partition(q, phi, None, PartitionGrid(n_dyn, n_dyn * 10, 1, 1), geo)
    write_qmap_file(path, qm, source_file="benchmarks/raw_inspect.py", overwrite=True)
    return path


def _warm(paths: list[Path]) -> float:
    """Read the files once (page cache); returns the seconds it took."""
    t = time.perf_counter()
    for p in paths:
        with open(p, "rb") as fh:
            while fh.read(1 << 24):
                pass
    return time.perf_counter() - t


def child_rigaku(stem: str, qmap: str) -> dict:
    """In a fresh process: open, 20 frames, timelines (without and with the q-map)."""
    from xpcsviewer.io.raw import open_raw_source
    from xpcsviewer.jobs.inspect import frame_image, inspect_source

    out: dict = {"rss_start_mb": _rss_mb()}
    t = time.perf_counter()
    src = open_raw_source(stem)
    n, hits = int(src.n_frames), int(src.n_events)
    out.update(open_s=time.perf_counter() - t, frames=n, hits=hits)
    rng = np.random.default_rng(1)
    times = []
    for k in rng.integers(0, n, 20):
        t = time.perf_counter()
        img = frame_image(src, int(k))
        times.append(time.perf_counter() - t)
        assert img.shape == src.frame_shape
    src.close()
    out.update(frame_max_s=max(times), frame_median_s=float(np.median(times)),
               rss_after_frames_mb=_rss_mb())
    t, c = time.perf_counter(), time.process_time()
    ins = inspect_source(stem)
    out.update(timelines_s=time.perf_counter() - t, timelines_cpu_s=time.process_time() - c,
               rss_timelines_mb=_rss_mb(), findings=len(ins.findings),
               photons=float(ins.photons.sum()))
    del ins
    t, c = time.perf_counter(), time.process_time()
    ins = inspect_source(stem, qmap=qmap)
    out.update(timelines_qmap_s=time.perf_counter() - t,
               timelines_qmap_cpu_s=time.process_time() - c,
               rss_timelines_qmap_mb=_rss_mb(), findings_qmap=len(ins.findings))
    return out


def run_rigaku(tmp: Path, n_hits: float, n_frames: int) -> dict:
    base = tmp / "bench3m.bin"
    t = time.perf_counter()
    files = write_rigaku_3m_set(base, n_hits, n_frames)
    write_s = time.perf_counter() - t
    qmap = ring_qmap(tmp / "bench3m_qmap.h5", (1676, 2100))
    size = sum(p.stat().st_size for p in files)
    warm_s = _warm(files)
    res = _child("rigaku", str(base), str(qmap))
    res.update(write_s=write_s, bytes=size, warm_read_s=warm_s)
    for p in files:
        p.unlink()
    return res


# ---------------------------------------------------------------------- dense
def write_dense_run(path: Path, n_frames: int, shape=(1024, 1024), rate=0.1, seed=0,
                    block: int = 50) -> Path:
    import h5py

    rng = np.random.default_rng(seed)
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("/entry/data/data", shape=(n_frames, *shape), dtype=np.uint16,
                              chunks=(1, *shape), compression="lzf")
        for a in range(0, n_frames, block):
            b = min(n_frames, a + block)
            ds[a:b] = rng.poisson(rate, (b - a, *shape)).astype(np.uint16)
    return path


def child_dense(path: str) -> dict:
    from xpcsviewer.io.raw import open_raw_source
    from xpcsviewer.jobs.inspect import inspect_source

    t = time.perf_counter()
    total = 0
    with open_raw_source(path) as raw:
        for chunk in raw.iter_chunks(64, reuse=True):
            total += int(chunk.shape[0])
    read_s = time.perf_counter() - t
    t = time.perf_counter()
    c = time.process_time()
    ins = inspect_source(path, frame_time=1e-3)
    return {"read_once_s": read_s, "frames": total, "timelines_s": time.perf_counter() - t,
            "timelines_cpu_s": time.process_time() - c, "rss_mb": _rss_mb(),
            "findings": len(ins.findings)}


def run_dense(tmp: Path, n_frames: int) -> dict:
    path = tmp / "bench_dense.h5"
    t = time.perf_counter()
    write_dense_run(path, n_frames)
    write_s = time.perf_counter() - t
    _warm([path])
    res = _child("dense", str(path))
    res.update(write_s=write_s, bytes=path.stat().st_size)
    path.unlink()
    return res


# ---------------------------------------------------------------------- recall
def run_recall(tmp: Path) -> list[dict]:
    """The demo's R01-R03 at full size: planted faults found, false alarms; then clean."""
    from xpcsviewer.jobs.inspect import inspect_source
    from xpcsviewer.synthetic.demo_faults import FAULT_SPECS
    from xpcsviewer.synthetic.faults import match_findings
    from xpcsviewer.synthetic.raw_sim import write_acquisition

    rows = []
    for i, spec in enumerate(FAULT_SPECS):
        for clean in (False, True):
            s = copy.deepcopy(spec)
            if clean:
                s["faults"] = {"cap": s["faults"]["cap"]}
                s["name"] += "_clean"
            acq = write_acquisition(tmp, s, seed=1000 + i)
            t = time.perf_counter()
            ins = inspect_source(acq.files[0], qmap=acq.qmap_path, frame_time=acq.frame_time,
                                 bin_time=acq.bin_time, counter_cap=acq.counter_cap)
            dt = time.perf_counter() - t
            found = [f.as_dict() for f in ins.findings]
            missed, false = match_findings(acq.faults, found)
            mods = [f for f in found if f["kind"] == "modulation"]
            truth_f = [t["frequency_hz"] for t in acq.faults if t["kind"] == "modulation"]
            err = (min(abs(f["frequency_hz"] - truth_f[0]) for f in mods)
                   if mods and truth_f else None)
            rows.append({"name": s["name"], "frames": ins.n_frames, "planted": len(acq.faults),
                         "found": len(acq.faults) - len(missed), "missed": missed,
                         "false_alarms": false, "freq_error_hz": err, "inspect_s": dt})
            for p in (*acq.files, acq.qmap_path):
                p.unlink()
    return rows


# ---------------------------------------------------------------------- driver
def _child(kind: str, *args: str) -> dict:
    cmd = [sys.executable, __file__, "--child", kind, *args]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _row(what: str, value: float, goal: float | None, unit: str = "s") -> str:
    ok = "" if goal is None else ("  ok" if value <= goal else "  MISSED")
    g = "" if goal is None else f"<= {goal:g} {unit}"
    return f"  {what:<44} {value:10.3f} {unit:<3} {g:<12}{ok}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=["rigaku", "dense", "recall"], default=None)
    ap.add_argument("--hits", type=float, default=1e8)
    ap.add_argument("--frames", type=int, default=1_000_000)
    ap.add_argument("--dense-frames", type=int, default=1000)
    ap.add_argument("--tmp", default=None, help="folder for the temporary files")
    ap.add_argument("--json", default=None)
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, *rest = args.child
        res = child_rigaku(*rest) if kind == "rigaku" else child_dense(*rest)
        print(json.dumps(res))
        return 0
    record: dict = {"host": platform.node(), "python": platform.python_version(),
                    "cpus": os.cpu_count(), "load_before": os.getloadavg()}
    tmp = Path(tempfile.mkdtemp(prefix="raw_inspect_", dir=args.tmp))
    try:
        if args.only in (None, "rigaku"):
            record["rigaku"] = run_rigaku(tmp, args.hits, args.frames)
        if args.only in (None, "dense"):
            record["dense"] = run_dense(tmp, args.dense_frames)
        if args.only in (None, "recall"):
            record["recall"] = run_recall(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    record["load_after"] = os.getloadavg()
    print(f"raw inspection benchmark ({record['cpus']} CPUs, load {record['load_before'][0]:.1f}"
          f" -> {record['load_after'][0]:.1f})")
    if "rigaku" in record:
        r = record["rigaku"]
        print(f" Rigaku 3M set: {r['hits']:.3g} hits, {r['frames']} frames, "
              f"{r['bytes'] / 1e6:.0f} MB (warm page cache)")
        print(_row("open (frames and hits counted)", r["open_s"], GOAL_OPEN_S))
        print(_row("any frame: max of 20 random", r["frame_max_s"], GOAL_FRAME_S))
        print(_row("any frame: median of 20 random", r["frame_median_s"], GOAL_FRAME_S))
        print(_row("timelines + finders, no q-map", r["timelines_s"], GOAL_TIMELINES_S))
        print(_row("  the same, CPU time (all threads)", r["timelines_cpu_s"], GOAL_TIMELINES_S))
        print(_row("timelines + finders, 36-ring q-map", r["timelines_qmap_s"], None))
        print(_row("  the same, CPU time (all threads)", r["timelines_qmap_cpu_s"], None))
        print(_row("peak RSS after the timelines (no q-map)", r["rss_timelines_mb"], None,
                   "MB"))
        print(_row("peak RSS after the frames", r["rss_after_frames_mb"], None, "MB"))
        print(_row("peak RSS after the timelines (q-map)", r["rss_timelines_qmap_mb"], None,
                   "MB"))
    if "dense" in record:
        d = record["dense"]
        print(f" dense 1024 x 1024 HDF5 (lzf), {d['frames']} frames, {d['bytes'] / 1e6:.0f} MB"
              " (scaled down from 10^4 frames)")
        print(_row("read once (every chunk)", d["read_once_s"], None))
        print(_row("timelines + finders", d["timelines_s"], None))
        print(f"  {'ratio timelines / read once':<44} {d['timelines_s'] / d['read_once_s']:10.2f}"
              "     ~1")
    if "recall" in record:
        print(" demo faulty acquisitions at full size (planted faults found, false alarms):")
        for r in record["recall"]:
            fe = "" if r["freq_error_hz"] is None else f", |f - f0| {r['freq_error_hz']:.3f} Hz"
            print(f"  {r['name']:<30} {r['frames']:>6} frames: {r['found']}/{r['planted']} "
                  f"found, {len(r['false_alarms'])} false{fe}, inspect {r['inspect_s']:.2f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
