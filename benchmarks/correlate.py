"""Frames per second and peak memory of our multi-tau and two-time correlators.

Run on demand (not a test)::

    .venv/bin/python benchmarks/correlate.py                  # defaults below
    .venv/bin/python benchmarks/correlate.py --mt-size 512 --mt-frames 10000 \
        --tt-size 128 --tt-frames 5000 --json bench.json

Each measurement runs in its own subprocess so that its peak resident memory
(``ru_maxrss``) is its own. Frames are Poisson counts (mean 1 photon/pixel/frame)
streamed from a pool of 64 frames, so generating them costs nothing measurable and
the correlator never sees all frames at once.

Reference tools are optional and run from their own virtual environments under
``.bench-venvs/`` (see shared docs, reference-tools.md): scikit-beam's
``multi_tau_auto_corr`` (``.bench-venvs/skbeam``) and boost-corr's
``MultitauCorrelator`` (``.bench-venvs/boost``). A missing tool is skipped with a
message. They run on the same frames (written once to a temporary .npy file) at the
reference size (``--ref-size``, ``--ref-frames``), and the script prints speed ratios
and the largest g2 difference at the delays both tools compute.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
VENVS = REPO / ".bench-venvs"


# ----------------------------------------------------------------------------- inputs
def ring_partition(size: int, n_dyn: int = 10, n_sta: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Concentric rings about the centre: (dynamic, static) 1-based ROI maps."""
    yy, xx = np.mgrid[:size, :size]
    r = np.hypot(yy - size / 2 + 0.5, xx - size / 2 + 0.5) / (size / 2)
    dq = np.clip((r * n_dyn).astype(int) + 1, 1, n_dyn)
    sq = np.clip((r * n_sta).astype(int) + 1, 1, n_sta)
    return dq, sq


def frame_chunks(size: int, n_frames: int, chunk: int, seed: int = 0):
    """Yield (n, size, size) uint16 Poisson frames from a 64-frame pool."""
    rng = np.random.default_rng(seed)
    pool = rng.poisson(1.0, (64, size, size)).astype(np.uint16)
    for a in range(0, n_frames, chunk):
        n = min(chunk, n_frames - a)
        idx = (a + np.arange(n) * 7) % 64
        yield pool[idx]


def peak_rss_mb() -> float:
    """Peak resident memory of this process (MB).

    ``VmHWM`` resets at exec; ``ru_maxrss`` would inherit the parent's peak through fork.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ----------------------------------------------------------------------------- workers
def worker(spec: dict) -> dict:
    """Run one measurement in this process; returns timings and peak memory."""
    if spec.get("backend") == "jax":
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    sys.path.insert(0, str(REPO))
    from xpcsviewer.backends import get_backend
    from xpcsviewer.compute.inputs import FrameStream, Partition
    from xpcsviewer.compute.options import MultitauOptions, TwotimeOptions

    be = get_backend(spec["backend"])
    size, n = spec["size"], spec["frames"]
    dq, sq = ring_partition(size, spec.get("n_dyn", 10), spec.get("n_sta", 100))
    base_rss = peak_rss_mb()
    out: dict = {**spec}
    if spec["kind"] == "multitau":
        from xpcsviewer.compute.multitau.correlator import correlate_multitau

        part, opts = Partition(dq, sq), MultitauOptions(chunk_size=spec.get("chunk", 128),
                                                         backend=be)
        chunk = opts.chunk_size
        if spec.get("npy"):
            frames = np.load(spec["npy"], mmap_mode="r")
            src = lambda: (np.asarray(frames[a : a + chunk]) for a in range(0, n, chunk))  # noqa: E731
        else:
            src = lambda: frame_chunks(size, n, chunk)  # noqa: E731
        if be.name == "jax":
            # compile every shape once (same chunk size, same pixel count)
            t = time.perf_counter()
            n_warm = min(n, 4 * chunk)
            correlate_multitau(FrameStream(lambda: frame_chunks(size, n_warm, chunk), n_warm),
                               part, options=opts, engine="array")
            out["warmup_s"] = time.perf_counter() - t
        t = time.perf_counter()
        # engine="array": measure the backend itself (the default "auto" would route
        # a JAX job on the CPU to the NumPy kernels)
        res = correlate_multitau(FrameStream(src, n), part, options=opts, engine="array")
        dt = time.perf_counter() - t
        out.update(seconds=dt, fps=n / dt, n_delays=int(res.delay_frames.size))
        if spec.get("dump"):
            np.savez(spec["dump"], delays=res.delay_frames, g2=res.g2)
    elif spec["kind"] == "twotime":
        from xpcsviewer.compute.twotime.correlator import correlate_twotime

        # the whole region is one dynamic bin (the expensive case), static rings inside
        dq1 = np.ones_like(dq)
        t = time.perf_counter()
        res = correlate_twotime(FrameStream(lambda: frame_chunks(size, n, 256), n),
                                Partition(dq1, sq), options=TwotimeOptions(backend=be))
        dt = time.perf_counter() - t
        out.update(seconds=dt, fps=n / dt, map_shape=list(res.c2[0].shape))
    out["peak_rss_mb"] = peak_rss_mb()
    out["rss_before_mb"] = base_rss
    return out


def skbeam_worker(spec: dict) -> dict:
    """Runs inside .bench-venvs/skbeam (numpy + scikit-beam only)."""
    import skbeam.core.correlation as corr

    frames = np.load(spec["npy"], mmap_mode="r")
    size = frames.shape[1]
    dq, _ = ring_partition(size, spec.get("n_dyn", 10), spec.get("n_sta", 100))
    n = frames.shape[0]
    levels = int(np.floor(np.log2(n / 8))) + 1
    t = time.perf_counter()
    g2, lags = corr.multi_tau_auto_corr(levels, 8, dq,
                                        (np.asarray(f, dtype=np.float64) for f in frames))
    dt = time.perf_counter() - t
    np.savez(spec["dump"], delays=np.asarray(lags), g2=np.asarray(g2))
    return {"tool": "scikit-beam", "seconds": dt, "fps": n / dt, "peak_rss_mb": peak_rss_mb()}


def boost_worker(spec: dict) -> dict:
    """Runs inside .bench-venvs/boost (torch + boost-corr)."""
    import torch
    from boost_corr.multitau import MultitauCorrelator

    frames = np.load(spec["npy"], mmap_mode="r")
    n, h, w = frames.shape
    t = time.perf_counter()
    xb = MultitauCorrelator(det_size=(h, w), frame_num=n, device="cpu", queue_size=64,
                            auto_queue=True, max_memory=2.0)
    for a in range(0, n, 128):
        blk = torch.from_numpy(np.asarray(frames[a : a + 128], dtype=np.float32).reshape(-1, h * w))
        xb.process(blk)
    xb.post_process()
    _, mt = xb.get_results()
    dt = time.perf_counter() - t
    g = mt["G2"]
    g = g.numpy() if hasattr(g, "numpy") else np.asarray(g)
    tau = mt["tau"]
    tau = tau.numpy() if hasattr(tau, "numpy") else np.asarray(tau)
    dq, sq = ring_partition(h, spec.get("n_dyn", 10), spec.get("n_sta", 100))
    # static-bin smoothing then dynamic mean, the same semantics as ours
    g = g.astype(np.float64).reshape(g.shape[0], 3, -1)
    ns, nd = sq.max(), dq.max()
    sid, did = sq.ravel() - 1, dq.ravel() - 1
    sums = np.stack([np.stack([np.bincount(sid, weights=g[t, c], minlength=ns) for c in range(3)])
                     for t in range(g.shape[0])])
    cnt = np.bincount(sid, minlength=ns)
    ok = cnt > 0
    gs = cnt[ok] * sums[:, 0, ok] / (sums[:, 1, ok] * sums[:, 2, ok])
    s2d = np.zeros(ns, int)
    s2d[sid] = did
    s2d = s2d[ok]
    g2 = np.stack([np.bincount(s2d, weights=gs[t], minlength=nd) / np.bincount(s2d, minlength=nd)
                   for t in range(gs.shape[0])])
    np.savez(spec["dump"], delays=tau.ravel(), g2=g2)
    return {"tool": "boost-corr", "seconds": dt, "fps": n / dt, "peak_rss_mb": peak_rss_mb(),
            "torch": torch.__version__}


# ----------------------------------------------------------------------------- driver
def run_sub(spec: dict, python: str = sys.executable, entry: str = "worker") -> dict | None:
    cmd = [python, str(Path(__file__).resolve()), f"--{entry}", json.dumps(spec)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        print(f"  ! {spec.get('kind', entry)} failed:\n{p.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


def compare(ours: Path, ref: Path) -> tuple[int, float, float]:
    """(shared delays, max |diff| over them, max |diff| where both use the same level).

    scikit-beam computes delays 8 * 2^L one level coarser than we do (its level L has
    lags 4..7 * 2^L, ours 5..8 * 2^L), so those delays differ by the coarse-graining
    itself, not by an error; the third number leaves them out.
    """
    a, b = np.load(ours), np.load(ref)
    da, db = a["delays"].astype(int), np.asarray(b["delays"]).astype(int)
    shared = [d for d in da if d in set(db.tolist()) and d > 0]
    if not shared:
        return 0, float("nan"), float("nan")
    ia = [int(np.flatnonzero(da == d)[0]) for d in shared]
    ib = [int(np.flatnonzero(db == d)[0]) for d in shared]
    diff = np.abs(a["g2"][ia] - b["g2"][ib]).max(axis=1)
    same = [i for i, d in enumerate(shared) if not (d % 8 == 0 and ((d // 8) & (d // 8 - 1)) == 0)]
    return len(shared), float(diff.max()), float(diff[same].max()) if same else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mt-size", type=int, default=512)
    ap.add_argument("--mt-frames", type=int, default=10000)
    ap.add_argument("--tt-size", type=int, default=128)
    ap.add_argument("--tt-frames", type=int, default=5000)
    ap.add_argument("--ref-size", type=int, default=128)
    ap.add_argument("--ref-frames", type=int, default=2048)
    ap.add_argument("--chunk", type=int, default=128)
    ap.add_argument("--backends", default="jax,numpy")
    ap.add_argument("--skip", default="", help="comma list of: multitau,twotime,refs")
    ap.add_argument("--json", default=None, help="write the record here")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--skbeam-worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--boost-worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    for name, fn in (("worker", worker), ("skbeam_worker", skbeam_worker),
                     ("boost_worker", boost_worker)):
        val = getattr(args, name)
        if val:
            print(json.dumps(fn(json.loads(val))))
            return 0
    skip = set(filter(None, args.skip.split(",")))
    backends = [b for b in args.backends.split(",") if b]
    record: dict = {
        "host": {"platform": platform.platform(), "python": platform.python_version(),
                 "cpus": os.cpu_count(), "load_avg": os.getloadavg()},
        "versions": {"numpy": np.__version__},
        "results": [],
    }
    try:
        import jax

        record["versions"]["jax"] = jax.__version__
    except ImportError:
        pass
    res = record["results"]
    if "multitau" not in skip:
        print(f"multi-tau {args.mt_size}x{args.mt_size} x {args.mt_frames} frames, "
              f"chunk {args.chunk}")
        for b in backends:
            r = run_sub({"kind": "multitau", "backend": b, "size": args.mt_size,
                         "frames": args.mt_frames, "chunk": args.chunk})
            if r:
                res.append(r)
                print(f"  {b:6s} {r['fps']:9.1f} frames/s  {r['seconds']:8.2f} s  peak RSS "
                      f"{r['peak_rss_mb']:7.0f} MB" + (f"  (compile warm-up {r['warmup_s']:.1f} s)"
                                                      if "warmup_s" in r else ""))
    if "twotime" not in skip:
        print(f"two-time {args.tt_size}x{args.tt_size} (one bin) x {args.tt_frames} frames")
        for b in backends:
            r = run_sub({"kind": "twotime", "backend": b, "size": args.tt_size,
                         "frames": args.tt_frames})
            if r:
                res.append(r)
                print(f"  {b:6s} {r['fps']:9.1f} frames/s  {r['seconds']:8.2f} s  peak RSS "
                      f"{r['peak_rss_mb']:7.0f} MB")
    if "refs" not in skip:
        print(f"reference tools: multi-tau {args.ref_size}x{args.ref_size} x "
              f"{args.ref_frames} frames, 10 rings x 100 static rings")
        with tempfile.TemporaryDirectory() as tmp:
            npy = Path(tmp) / "frames.npy"
            np.save(npy, np.concatenate(list(frame_chunks(args.ref_size, args.ref_frames, 256))))
            ours = {}
            for b in backends:
                r = run_sub({"kind": "multitau", "backend": b, "size": args.ref_size,
                             "frames": args.ref_frames, "chunk": args.chunk, "npy": str(npy),
                             "dump": str(Path(tmp) / f"ours_{b}.npz")})
                if r:
                    r["kind"] = "multitau-ref-size"
                    res.append(r)
                    ours[b] = r
                    print(f"  ours/{b:6s} {r['fps']:9.1f} frames/s  "
                          f"peak RSS {r['peak_rss_mb']:6.0f} MB")
            best = min(ours, key=lambda k: ours[k]["seconds"]) if ours else None
            for tool, entry, venv in (("scikit-beam", "skbeam-worker", "skbeam"),
                                      ("boost-corr", "boost-worker", "boost")):
                py = VENVS / venv / "bin" / "python"
                if not py.exists():
                    print(f"  {tool}: skipped (no {py.relative_to(REPO)}; see reference-tools.md)")
                    continue
                # scikit-beam has no static-bin smoothing: it normalises per ROI (one static
                # bin per ring), so compare it with ours on n_sta = n_dyn
                n_sta = 10 if tool == "scikit-beam" else 100
                dump = Path(tmp) / f"{venv}.npz"
                r = run_sub({"npy": str(npy), "dump": str(dump), "n_dyn": 10, "n_sta": n_sta},
                            python=str(py), entry=entry)
                if r is None:
                    continue
                if best:
                    mine = Path(tmp) / f"ours_{best}_{n_sta}.npz"
                    if n_sta != 100:
                        run_sub({"kind": "multitau", "backend": best, "size": args.ref_size,
                                 "frames": args.ref_frames, "chunk": args.chunk, "npy": str(npy),
                                 "n_sta": n_sta, "dump": str(mine)})
                    else:
                        mine = Path(tmp) / f"ours_{best}.npz"
                    n_shared, diff, diff_same = compare(mine, dump)
                    r.update(ratio_ours_faster=r["seconds"] / ours[best]["seconds"],
                             shared_delays=n_shared, max_abs_g2_diff=diff,
                             max_abs_g2_diff_same_level=diff_same, ours_backend=best)
                    print(f"  {tool:11s} {r['fps']:9.1f} frames/s  "
                          f"peak RSS {r['peak_rss_mb']:6.0f} MB"
                          f"  ours/{best} is {r['ratio_ours_faster']:.2f}x its speed; "
                          "max |g2 diff| "
                          f"{diff_same:.1e} at delays computed on the same level "
                          f"({diff:.1e} over all {n_shared} shared delays)")
                res.append(r)
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=2))
        print(f"record written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
