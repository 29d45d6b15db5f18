"""Batch commands serial vs on Dask (issue 15): speed-up, per-task overhead, client memory.

* ``fit`` of ``--n-fit`` result files (default 1000; 12 q-bins each), in-process vs
  ``--workers 2``: wall time of the whole command (cluster start included), the
  peak RSS of the client process, and whether the JSON bytes are identical;
* ``correlate`` of ``--n-raw`` raw data sets (default 16; ``--frames`` frames of
  48 x 64 pixels each), in-process vs ``--workers 2``;
* the cluster's per-task overhead: 1000 no-op tasks on a running 2-worker
  LocalCluster, one file per task (the cost a task adds, without the cluster
  start), and the same with the default chunking of 16 files per task.

Inputs are written to a temporary folder that is removed at the end. Every
command runs as its own process, as a user runs it (the JAX compilation cache
off, so each process compiles as on a fresh machine).

``--baseline-src DIR`` also runs the in-process ``fit`` with the package from another
source tree (e.g. an export of main: ``git archive main | tar -x -C DIR``), for the
before/after of the serial path.

Usage: ``python benchmarks/batch.py [--n-fit N] [--n-raw N] [--frames N] [--workers N]
[--baseline-src DIR] [--no-correlate]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("XPCS_JAX_CACHE_DIR", "off")
os.environ.setdefault("JAX_PLATFORMS", "cpu")


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _run(cmd: list[str]) -> tuple[float, float, int]:
    """(wall s, peak client RSS MiB, exit code) of one command."""
    import psutil

    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    proc = psutil.Process(p.pid)
    peak = [0]

    def poll() -> None:
        while p.poll() is None:
            try:
                peak[0] = max(peak[0], proc.memory_info().rss)
            except psutil.Error:
                break
            time.sleep(0.05)

    t = threading.Thread(target=poll, daemon=True)
    t.start()
    _, err = p.communicate()
    t.join()
    wall = time.perf_counter() - t0
    if p.returncode:
        print(err.decode()[-2000:], file=sys.stderr)
    return wall, peak[0] / 2**20, p.returncode


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "xpcsviewer", *args, "--quiet"]


def write_results(folder: Path, n: int) -> list[Path]:
    from xpcsviewer.io import write_result
    from xpcsviewer.synthetic.results import build_result

    spec = {"name": "bench", "geometry": {"shape": (64, 64), "bcx": 32.0, "bcy": 32.0},
            "partition": {"dq_num": 12, "sq_num": 36},
            "acquisition": {"frame_time": 1e-3, "n_frames": 10000},
            "analysis": ("Multitau",)}
    out = []
    for i in range(n):
        res, extra = build_result(spec, seed=i)
        res.path = folder / f"f{i:04d}_results.hdf"
        write_result(res.path, res, saxs_2d=extra["saxs_2d"])
        out.append(res.path)
    return out


def write_raws(folder: Path, n: int, frames: int) -> tuple[Path, list[Path]]:
    import h5py

    from xpcsviewer.compute.detector.partition import PartitionGrid, make_partition
    from xpcsviewer.compute.detector.qmap import DetectorGeometry
    from xpcsviewer.io.results.writer import write_qmap_file
    from xpcsviewer.synthetic.speckle import Geometry, simulate_frames

    geo = Geometry(shape=(48, 64), energy_kev=10.0, det_dist_m=5.0, pixel_size_m=75e-6,
                   bcx=-4.0, bcy=24.0)
    q, phi = geo.qmap()
    qm = make_partition(q, phi, np.ones(q.shape, bool), PartitionGrid(12, 36),
                        DetectorGeometry(energy_kev=10.0, detector_distance=5.0,
                                         pixel_size=75e-6, beam_center_x=-4.0,
                                         beam_center_y=24.0))
    qpath = write_qmap_file(folder / "qmap.hdf", qm)
    base = simulate_frames(q, frames, 1e-3, D=5e6, beta=0.25, rate=2.0, seed=0)
    raws = []
    for i in range(n):  # the same frames, rolled: equal work, different files
        raw = folder / f"raw{i:02d}.h5"
        with h5py.File(raw, "w") as f:
            f.create_dataset("/entry/data/data", data=np.roll(base, 7 * i, axis=0),
                             chunks=(64, 48, 64))
            f["/entry/instrument/detector_1/frame_time"] = 1e-3
        raws.append(raw)
    return qpath, raws


def _noop(item: int) -> int:
    return item


def task_overhead(n: int, workers: int) -> tuple[float, float]:
    """(ms per task one file per task, ms per file with the default chunking)."""
    from xpcsviewer.batch import Where, open_client
    from xpcsviewer.batch._engine import run_on_client

    items = list(range(n))
    out = []
    with open_client(Where(workers=workers)) as client:
        client.run(lambda: None)  # workers up
        for chunk in (1, None):  # the engine's own loop on the running cluster
            t0 = time.perf_counter()
            run_on_client(client, _noop, items, lambda o: None, lambda: None, chunk)
            out.append(1e3 * (time.perf_counter() - t0) / n)
    return out[0], out[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-fit", type=int, default=1000)
    ap.add_argument("--n-raw", type=int, default=16)
    ap.add_argument("--frames", type=int, default=4000)
    ap.add_argument("--n-noop", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--baseline-src", default=None, metavar="DIR")
    ap.add_argument("--no-correlate", action="store_true")
    args = ap.parse_args()
    w = str(args.workers)
    print(f"{os.cpu_count()} cores, load at start {_load()}")
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="xpcs-bench-batch-"))
    try:
        t0 = time.perf_counter()
        files = write_results(tmp, args.n_fit)
        print(f"wrote {len(files)} result files in {time.perf_counter() - t0:.0f} s")
        s = _run(_cli("fit", *map(str, files), "-o", str(tmp / "serial.json")))
        d = _run(_cli("fit", *map(str, files), "-o", str(tmp / "dask.json"), "--workers", w))
        same = (tmp / "serial.json").read_bytes() == (tmp / "dask.json").read_bytes()
        rows.append((f"fit {len(files)} files", s, d, "identical JSON" if same else "DIFFER"))
        if args.baseline_src:
            code = (f"import sys; sys.path.insert(0, {args.baseline_src!r}); "
                    "from xpcsviewer.cli import main; sys.exit(main())")
            b = _run([sys.executable, "-c", code, "fit", *map(str, files), "-o",
                      str(tmp / "base.json"), "--quiet"])
            same = (tmp / "base.json").read_bytes() == (tmp / "serial.json").read_bytes()
            rows.append((f"fit {len(files)} files: baseline source in-process vs ours "
                         f"--workers {w}", b, d,
                         "same JSON as ours" if same else "JSON differs from ours"))
        for f in files:
            f.unlink()

        t0 = time.perf_counter()
        if args.no_correlate:
            args.n_raw = 0
        qpath, raws = write_raws(tmp, args.n_raw, args.frames)
        print(f"wrote {len(raws)} raw sets of {args.frames} frames in "
              f"{time.perf_counter() - t0:.0f} s")
        common = ["--qmap", str(qpath), "--backend", "numpy"]
        if raws:
            s = _run(_cli("correlate", *map(str, raws), *common, "-o", str(tmp / "cs")))
            d = _run(_cli("correlate", *map(str, raws), *common, "-o", str(tmp / "cd"),
                          "--workers", w))
            rows.append((f"correlate {len(raws)} raw sets", s, d, ""))

        one, chunked = task_overhead(args.n_noop, args.workers)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nload at end {_load()}\n")
    print(f"| job | in-process s | --workers {w} s | speed-up | client peak RSS MiB "
          "(in-process / Dask) | note |")
    print("|---|---|---|---|---|---|")
    for name, s, d, note in rows:
        print(f"| {name} | {s[0]:.1f} | {d[0]:.1f} | {s[0] / d[0]:.2f}x | "
              f"{s[1]:.0f} / {d[1]:.0f} | {note} (exit {s[2]}/{d[2]}) |")
    print(f"\nper-task overhead on a running {args.workers}-worker LocalCluster, "
          f"{args.n_noop} no-op tasks: {one:.2f} ms per task (one file per task), "
          f"{chunked:.2f} ms per file (default chunking)")


if __name__ == "__main__":
    main()
