"""Multi-tau two-time correlator (MT-2TC): time and peak memory of an age x lag map.

Goal (issue 35): 10^5 frames of 128 x 128 into an age x lag map in <= 1 GB and <= 120 s
on 2 cores (the full map would be 80 GB per bin). Frames are made on the fly, chunk by
chunk, never all in memory: Poisson counts (mean ``--photons`` per pixel per frame) drawn
from a pool of 64 frames (``--source pool``, cheap, so the timing is the correlator's) or
fresh for every frame (``--source poisson``, slow to generate; its time is reported apart).
Rings of equal width give ``--bins`` dynamic bins (10 static bins each). One run in this
process; peak RSS is ``VmHWM``.

    python benchmarks/twotime_ages.py --frames 100000 --size 128 --threads 2
    python benchmarks/twotime_ages.py --frames 1000000 --json out.json   # a big host
    python benchmarks/twotime_ages.py --frames 100000 --bins 2 --groups 16   # pixel groups too

Prints a table and, last, the JSON record (also written to ``--json``), with the 10^6
frame figure extrapolated (time and the map grow linearly in N, the buffers not at all).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path


def _args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=128, help="detector rows = cols")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                    help="BLAS and numba threads (set before NumPy loads)")
    ap.add_argument("--bins", type=int, default=10, help="dynamic bins (rings)")
    ap.add_argument("--m", type=int, default=8, help="points per level")
    ap.add_argument("--batch", type=int, default=32, help="first blocks per BLAS product")
    ap.add_argument("--chunk", type=int, default=256, help="frames per chunk")
    ap.add_argument("--photons", type=float, default=1.0)
    ap.add_argument("--source", choices=("pool", "poisson"), default="pool")
    ap.add_argument("--groups", type=int, default=0,
                    help="also the age x lag maps of K pixel groups (8-px tiles), timed apart")
    ap.add_argument("--json", default=None, help="write the record here")
    return ap.parse_args(argv)


ARGS = _args() if __name__ == "__main__" else None
if ARGS is not None:
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMBA_NUM_THREADS"):
        os.environ[var] = str(ARGS.threads)

import numpy as np  # noqa: E402  (after the thread count is set)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from dataclasses import replace  # noqa: E402

from xpcsviewer.compute.ages.correlator import (  # noqa: E402
    age_lag_bytes,
    correlate_twotime_ages,
)
from xpcsviewer.compute.inputs import FrameStream, Partition  # noqa: E402
from xpcsviewer.compute.options import AgesOptions  # noqa: E402
from xpcsviewer.compute.spec import CorrelateSpec  # noqa: E402


def peak_rss_mb() -> float:
    """Peak resident memory of this process (MB)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def partition(size: int, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Rings: ``n_bins`` dynamic bins of 10 static bins each over the whole detector."""
    yy, xx = np.mgrid[:size, :size]
    r = np.hypot(yy - (size - 1) / 2, xx - (size - 1) / 2)
    frac = r / (r.max() + 1e-9)
    sq = (frac * 10 * n_bins).astype(np.int64) + 1
    dq = (sq - 1) // 10 + 1
    return dq, sq


class Frames:
    """Chunks of Poisson frames; ``seconds`` is the time spent making them."""

    def __init__(self, n: int, size: int, chunk: int, photons: float, source: str) -> None:
        self.n, self.size, self.chunk, self.source = n, size, chunk, source
        self.rng = np.random.default_rng(0)
        self.photons = photons
        self.seconds = 0.0
        self.pool = (self.rng.poisson(photons, (64, size, size)).astype(np.uint16)
                     if source == "pool" else None)

    def __iter__(self):
        for a in range(0, self.n, self.chunk):
            t = time.perf_counter()
            k = min(self.chunk, self.n - a)
            if self.pool is not None:
                out = self.pool[(a + np.arange(k) * 7) % 64]
            else:
                out = self.rng.poisson(self.photons, (k, self.size, self.size)).astype(np.uint16)
            self.seconds += time.perf_counter() - t
            yield out


def main() -> int:
    args = ARGS if ARGS is not None else _args()
    dq, sq = partition(args.size, args.bins)
    frames = Frames(args.frames, args.size, args.chunk, args.photons, args.source)
    rss0 = peak_rss_mb()
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    spec = CorrelateSpec(ages=True, ages_points=args.m, groups=args.groups or 0)
    amap = correlate_twotime_ages(FrameStream(lambda: iter(frames), args.frames),
                                  Partition(dq, sq), spec, options=AgesOptions(batch=args.batch))
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    rss = peak_rss_mb()
    n_bins = len(amap.bins)
    cells = sum(lv.c.shape[1] * lv.c.shape[2] for lv in amap.levels)
    map_mb = age_lag_bytes(args.frames, args.m, n_bins) / 1e6
    corr = wall - frames.seconds
    scale = 1e6 / args.frames
    full_map_gb = 4 * args.frames**2 / 1e9  # one float32 full map per bin, as stored
    rec = {
        "benchmark": "twotime_ages",
        "host": {"platform": platform.platform(), "python": platform.python_version(),
                 "cpus": os.cpu_count(), "load_avg": os.getloadavg()},
        "versions": {"numpy": np.__version__},
        "params": {"frames": args.frames, "size": args.size, "threads": args.threads,
                   "bins": n_bins, "pixels": int(np.count_nonzero(dq)), "m": args.m,
                   "batch": args.batch, "chunk": args.chunk, "source": args.source,
                   "photons": args.photons},
        "levels": len(amap.levels),
        "entries_per_bin": int(cells),
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "frame_generation_s": round(frames.seconds, 3),
        "correlator_s": round(corr, 3),
        "frames_per_s": round(args.frames / corr, 1),
        "peak_rss_mb": round(rss, 1),
        "rss_before_mb": round(rss0, 1),
        "map_mb": round(map_mb, 1),
        "full_map_gb_per_bin": round(full_map_gb, 1),
        "extrapolated_1e6": {
            "correlator_s": round(corr * scale, 1),
            "map_mb": round(age_lag_bytes(10**6, args.m, n_bins) / 1e6, 1),
            "peak_rss_mb": round(rss + (age_lag_bytes(10**6, args.m, n_bins) / 1e6 - map_mb),
                                 1),
        },
    }
    print(f"{args.frames} frames of {args.size}x{args.size}, {n_bins} bins, m={args.m}, "
          f"{args.threads} threads, load {os.getloadavg()[0]:.1f}")
    print(f"  levels {len(amap.levels)}, entries/bin {cells}, map {map_mb:.0f} MB "
          f"(a full map: {full_map_gb:.1f} GB per bin)")
    print(f"  wall {wall:.1f} s (frames made in {frames.seconds:.1f} s, correlator "
          f"{corr:.1f} s = {args.frames / corr:.0f} frames/s), cpu {cpu:.1f} s, "
          f"peak RSS {rss:.0f} MB")
    e = rec["extrapolated_1e6"]
    print(f"  10^6 frames (extrapolated): correlator {e['correlator_s']:.0f} s, "
          f"map {e['map_mb']:.0f} MB, peak RSS {e['peak_rss_mb']:.0f} MB")
    if args.groups:
        from xpcsviewer.compute.ages.correlator_groups import age_lag_groups, group_age_lag_bytes

        again = Frames(args.frames, args.size, args.chunk, args.photons, args.source)
        t1 = time.perf_counter()
        grp = age_lag_groups(FrameStream(lambda: iter(again), args.frames), Partition(dq, sq),
                             replace(spec, dq=tuple(amap.bins)))
        gwall = time.perf_counter() - t1 - again.seconds
        g_mb = group_age_lag_bytes(args.frames, args.m, n_bins, args.groups) / 1e6
        rec["groups"] = {"n_groups": args.groups, "pairs": len(grp.amap.bins),
                         "correlator_s": round(gwall, 3), "map_mb": round(g_mb, 1),
                         "peak_rss_mb": round(peak_rss_mb(), 1)}
        print(f"  {args.groups} pixel groups: correlator {gwall:.1f} s, maps {g_mb:.0f} MB, "
              f"peak RSS {peak_rss_mb():.0f} MB (both passes)")
    if args.json:
        Path(args.json).write_text(json.dumps(rec, indent=2))
    print(json.dumps(rec))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
