"""The pixel audit of a 3-megapixel per-pixel G2 stack (issue 36: <= 10 s on 2 cores).

Run on demand (not a test)::

    .venv/bin/python benchmarks/pixel_audit.py [--shape 1500 2000] [--delays 30]
        [--bins 36 360] [--memory] [--json out.json]

Writes a side file like ``correlate --save-g2-pixel`` does (``/G2IPIF`` (T, 3, H, W)
float32, one lzf chunk per (delay, channel) image) into a temporary folder, then
times :func:`xpcsviewer.compute.detector.pixel_audit.audit_pixels` reading it one delay at a
time (each read opens the file, as :func:`xpcsviewer.io.read_g2_stack_delay` does),
so memory stays at one plane plus a few per-pixel vectors; the peak resident size is
reported, with the CPU time (on a machine shared with other jobs the wall time also
counts their turns) and the load average. ``--memory`` also times the audit of the
same stack held in memory (no I/O).
The q partition (``--bins`` dynamic and static q bins) comes from
``compute.partition.make_partition`` on a detector 5 m from the sample.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from xpcsviewer.compute.detector.partition import PartitionGrid, make_partition
from xpcsviewer.compute.detector.pixel_audit import audit_pixels, ranked
from xpcsviewer.compute.detector.qmap import compute_qmap
from xpcsviewer.io.results.g2stack import open_g2_stack_writer


def make_stack(writer, shape, n_delays, qm, seed=0):
    """Speckle-like per-pixel G2, IP, IF with a few hot pixels (returned)."""
    rng = np.random.default_rng(seed)
    h, w = shape
    mean = (0.5 + rng.gamma(5.0, 0.2, (h, w))).astype(np.float32)
    mean[~qm.mask] = 0
    hot = rng.choice(np.flatnonzero(qm.mask), 5, replace=False)
    mean.flat[hot] *= 10
    for k in range(n_delays):
        ip = mean * rng.uniform(0.97, 1.03, (h, w)).astype(np.float32)
        if_ = mean * rng.uniform(0.97, 1.03, (h, w)).astype(np.float32)
        beta = 0.2 * np.exp(-k / 10)
        g2 = ip * if_ * (1 + beta + 0.05 * rng.standard_normal((h, w)).astype(np.float32))
        writer(k, np.stack([g2, ip, if_]))
    return hot


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", nargs=2, type=int, default=(1500, 2000))
    ap.add_argument("--delays", type=int, default=30)
    ap.add_argument("--bins", nargs=2, type=int, default=(36, 360))
    ap.add_argument("--memory", action="store_true", help="also time the in-memory stack")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    shape = tuple(args.shape)
    q, phi = compute_qmap(shape, 10.0, 5.0, 75e-6, shape[1] / 2, shape[0] / 2)
    mask = np.ones(shape, bool)
    qm = make_partition(q, phi, mask, PartitionGrid(args.bins[0], args.bins[1], 1, 1))
    out: dict = {"shape": list(shape), "delays": args.delays, "bins": list(args.bins),
                 "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        side = Path(tmp) / "bench_results_G2.hdf"
        t0 = time.perf_counter()
        with open_g2_stack_writer(side, args.delays, shape) as wr:
            hot = make_stack(wr, shape, args.delays, qm)
        out["write_s"] = time.perf_counter() - t0
        out["side_file_mb"] = side.stat().st_size / 2**20

        def read(k):
            with h5py.File(side, "r", locking=False) as f:
                plane = f["G2IPIF"][k]
            return plane[0], plane[1], plane[2]

        t0, c0 = time.perf_counter(), time.process_time()
        au = audit_pixels(read, qm, n_delays=args.delays)
        out["audit_file_s"] = time.perf_counter() - t0
        # CPU time: what the audit costs where it has the cores to itself (the wall
        # time includes waiting for other processes on a shared machine)
        out["audit_file_cpu_s"] = time.process_time() - c0
        out["load_average"] = os.getloadavg()[0]
        out["pixels"] = int(au.pixel_index.size)
        out["hot_found_top10"] = bool(set(hot) <= set(au.pixel_index[ranked(au, 10)]))
        out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        if args.memory:
            with h5py.File(side, "r", locking=False) as f:
                stack = f["G2IPIF"][()]
            t0, c0 = time.perf_counter(), time.process_time()
            audit_pixels(stack, qm)
            out["audit_memory_s"] = time.perf_counter() - t0
            out["audit_memory_cpu_s"] = time.process_time() - c0
    print(json.dumps(out, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
