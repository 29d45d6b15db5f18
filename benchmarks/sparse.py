"""Photon-sparse correlation: events/s against our dense path, the crossover, memory.

Run on demand (not a test; minutes)::

    .venv/bin/python benchmarks/sparse.py                  # the table and the headline job
    .venv/bin/python benchmarks/sparse.py --quick          # smaller files
    .venv/bin/python benchmarks/sparse.py --only headline  # 256x256 x 200,000 frames at 0.5 %
    .venv/bin/python benchmarks/sparse.py --only rigaku    # 512x1024 x 10,000 frames at 0.5 %

Rows:

- ``table``: ESRF-layout CSR files (``entry_0000/measurement/data/{frame_ptr,index,
  intensity}``) of uniformly hit 256x256 and 512x512 detectors at occupancies 0.1, 0.5,
  2 and 10 %, frames chosen so that the dense job takes ~10-20 s. Each file is correlated
  by ``xpcsviewer correlate --path sparse`` and ``--path dense`` (the same file: the
  dense path forms the frames from the hits, as a user with sparse files would run it),
  whole processes timed from the outside; hits/s, pixel-frames/s, the ratio, peak RSS
  against the event bytes, and the crossover occupancy (where the two times meet,
  interpolated in log occupancy). ``auto`` says which path it took on each file.
- ``headline``: the issue's goal job, 256x256 x 200,000 frames at 0.5 % (6.5e7 hits),
  photon path only (the dense path's time is its measured pixel-frame rate times the
  job's pixel-frames).
- ``xla``: the XLA photon engine (``--engine xla``, issue 47) against the numba photon
  path on the same hits, in one process (hits made in memory, uniform, count 1): the
  first job (compiles) and a warm one, wall and CPU seconds, hits/s, programs compiled,
  host->device bytes against the event bytes, and the largest relative g2 difference.
  ``--xla-device gpu`` where one is lent.
- ``rigaku``: the issue-47 module job, a Rigaku ``.bin`` of one 512x1024 module x 10^4
  frames at 0.5 % (2.6e7 hits; ``--quick``: 2,000 frames), ``--path sparse``: wall, CPU
  (user + sys) and peak RSS of the whole process against the event bytes (8 per hit, the
  ``.bin`` word), with the load average around it (goals: <= 3 s and <= 3x the event bytes
  on 2 cores).
- ``boost``: a Rigaku ``.bin`` (one 512x1024 module, 0.5 %) correlated by us and by
  boost-corr's own Rigaku reader + ``MultitauCorrelator`` (CPU), where
  ``.bench-venvs/boost`` exists (``make bench-refs``).

A JSON record (versions, host, every number) goes to ``benchmarks/results/``. The
machine is shared: compare ratios from the same run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
VENVS = REPO / ".bench-venvs"
PY = REPO / ".venv" / "bin" / "python"
if not PY.exists():  # e.g. a machine with the dependencies installed and PYTHONPATH=REPO
    PY = Path(sys.executable)
OURS = [str(PY), "-m", "xpcsviewer"]


def ring_qmap(path: Path, shape: tuple[int, int], n_dyn: int = 36, n_sta: int = 360) -> Path:
    """A /qmap file of rings over the whole detector (every pixel correlated)."""
    from xpcsviewer.compute.detector.partition import _compress, _smallest_uint
    from xpcsviewer.io.results.writer import write_qmap_file
    from xpcsviewer.model.result import QMap

    h, w = shape
    yy, xx = np.mgrid[:h, :w]
    r = np.hypot(yy - h / 2 + 0.5, xx - w / 2 + 0.5) / (min(h, w) / 2 * np.sqrt(2))
    dq = np.clip((r * n_dyn).astype(int) + 1, 1, n_dyn)
    per = n_sta // n_dyn
    sq = (dq - 1) * per + np.clip(((r * n_dyn - (dq - 1)) * per).astype(int), 0, per - 1) + 1
    one = np.ones_like(dq)
    d_roi, d_map = _compress(dq, one, 1)
    s_roi, s_map = _compress(sq, one, 1)
    qm = QMap(
        dynamic_roi_map=_smallest_uint(d_roi, len(d_map)),
        static_roi_map=_smallest_uint(s_roi, len(s_map)),
        mask=np.ones(shape, bool),
        dynamic_v_list_dim0=np.linspace(1e-3, 1e-2, n_dyn), dynamic_v_list_dim1=np.zeros(1),
        static_v_list_dim0=np.linspace(1e-3, 1e-2, n_sta), static_v_list_dim1=np.zeros(1),
        dynamic_index_mapping=d_map, static_index_mapping=s_map,
        dynamic_num_pts=(n_dyn, 1), static_num_pts=(n_sta, 1),
        beam_center_x=w / 2, beam_center_y=h / 2, detector_distance=5.0,
        pixel_size=75e-6, energy_kev=10.0,
    )
    return write_qmap_file(path, qm, overwrite=True)


def write_csr(path: Path, shape: tuple[int, int], n: int, occ: float, seed: int = 0) -> int:
    """Uniform hits (count 1) in ESRF CSR layout, written in pieces; returns the hits."""
    import h5py

    p = shape[0] * shape[1]
    rng = np.random.default_rng(seed)
    total = 0
    with h5py.File(path, "w") as f:
        g = f.create_group("entry_0000/measurement/data")
        g.attrs["shape"] = shape
        idx = g.create_dataset("index", (0,), np.int32, maxshape=(None,), chunks=(1 << 20,))
        val = g.create_dataset("intensity", (0,), np.uint16, maxshape=(None,),
                               chunks=(1 << 20,))
        ptr = np.zeros(n + 1, np.int64)
        step = max(1, int(4e6 / max(p * occ, 1e-9)))
        for a in range(0, n, step):
            m = min(step, n - a)
            k = rng.poisson(p * occ, m)
            key = np.repeat(np.arange(m, dtype=np.int64), k) * p + rng.integers(0, p, k.sum())
            key = np.unique(key)  # one hit per pixel and frame
            fr, px = np.divmod(key, p)
            cnt = np.bincount(fr, minlength=m)
            e = idx.shape[0]
            idx.resize((e + px.size,))
            idx[e:] = px
            val.resize((e + px.size,))
            val[e:] = 1
            ptr[a + 1 : a + m + 1] = e + np.cumsum(cnt)
            total += px.size
        g.create_dataset("frame_ptr", data=ptr)
    return total


def job(cmd: list[str], threads: int | None = None) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MB, stderr) of a whole process, via /usr/bin/time -v;
    ``threads``: NUMBA_NUM_THREADS for it."""
    tv = ["/usr/bin/time", "-v"] if Path("/usr/bin/time").exists() else []
    env = dict(os.environ)
    if threads:
        env["NUMBA_NUM_THREADS"] = str(threads)
    t = time.perf_counter()
    p = subprocess.run(tv + cmd, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(f"{cmd[:3]} failed:\n{p.stderr[-4000:]}")
    rss = float("nan")
    for line in p.stderr.splitlines():
        if "Maximum resident set size" in line:
            rss = int(line.split()[-1]) / 1024.0
    return dt, rss, p.stderr


def cpu_seconds(stderr: str) -> float:
    """User + system CPU seconds of a process, from /usr/bin/time -v's report."""
    total = 0.0
    for line in stderr.splitlines():
        if "User time (seconds)" in line or "System time (seconds)" in line:
            total += float(line.split()[-1])
    return total if total else float("nan")


def correlate(raw: Path, qmap: Path, out: Path, path: str, frame_time: float = 1e-4,
              threads: int | None = None) -> tuple[float, float, str]:
    return job(threads=threads,
               cmd=[*OURS, "correlate", str(raw), "--qmap", str(qmap), "-o", str(out),
                    "--overwrite", "--frame-time", str(frame_time), "--path", path, "--quiet"])


def said_path(out: Path) -> str:
    """The path a job took, from its result's config."""
    import h5py

    try:
        with h5py.File(out, "r") as f:
            v = f["/xpcs/multitau/config/path"][()]
        return v.decode() if isinstance(v, bytes) else str(v)
    except (OSError, KeyError):
        return "?"


def row_table(args, tmp: Path, rec: dict) -> None:
    rows = []
    sizes = (256,) if args.quick else (256, 512)
    for side in sizes:
        shape = (side, side)
        q = ring_qmap(tmp / f"q{side}.hdf", shape)
        # frames for a dense job of ~target pixel-frames
        n = max(2000, int(args.dense_pixel_frames / (side * side)))
        for occ in (0.001, 0.005, 0.02, 0.10):
            raw = tmp / f"c{side}_{occ}.h5"
            hits = write_csr(raw, shape, n, occ)
            ev_bytes = hits * 6  # int32 index + uint16 intensity on disk
            ts, ms, _ = correlate(raw, q, tmp / "s.hdf", "sparse")
            td, md, _ = correlate(raw, q, tmp / "d.hdf", "dense")
            correlate(raw, q, tmp / "a.hdf", "auto")
            pf = side * side * n
            r = {"side": side, "occupancy": occ, "frames": n, "hits": hits,
                 "sparse_s": ts, "dense_s": td, "sparse_rss_mb": ms, "dense_rss_mb": md,
                 "event_mb": ev_bytes / 2**20, "hits_per_s": hits / ts,
                 "sparse_pixel_frames_per_s": pf / ts, "dense_pixel_frames_per_s": pf / td,
                 "speedup": td / ts, "auto": said_path(tmp / "a.hdf")}
            rows.append(r)
            print(f"{side}x{side} occ {occ:6.1%} N={n:7d} hits={hits:.3g}: sparse {ts:6.2f} s "
                  f"({hits / ts:.3g} hits/s, {pf / ts:.3g} px-fr/s, {ms:.0f} MB = "
                  f"{ms * 2**20 / ev_bytes:.2f}x event bytes), dense {td:6.2f} s "
                  f"({pf / td:.3g} px-fr/s, {md:.0f} MB): {td / ts:.1f}x; auto -> {r['auto']}",
                  flush=True)
            raw.unlink()
        sub = [r for r in rows if r["side"] == side]
        cross = crossover(sub)
        rec.setdefault("crossover", {})[str(side)] = cross
        print(f"{side}x{side}: crossover occupancy (equal job times) ~ "
              f"{'above 10 %' if cross is None else f'{cross:.1%}'}", flush=True)
    rec["table"] = rows


def crossover(rows: list[dict]) -> float | None:
    """Occupancy where sparse and dense times meet (log-log interpolation), or None."""
    pts = sorted((r["occupancy"], math.log(r["dense_s"] / r["sparse_s"])) for r in rows)
    for (o1, l1), (o2, l2) in itertools.pairwise(pts):
        if l1 > 0 >= l2:
            f = l1 / (l1 - l2)
            return math.exp(math.log(o1) + f * (math.log(o2) - math.log(o1)))
    return None


def row_headline(args, tmp: Path, rec: dict) -> None:
    side, n, occ = 256, (40_000 if args.quick else 200_000), 0.005
    q = ring_qmap(tmp / "q256.hdf", (side, side))
    raw = tmp / "headline.h5"
    t0 = time.perf_counter()
    hits = write_csr(raw, (side, side), n, occ, seed=1)
    print(f"headline: wrote {hits:.3g} hits in {time.perf_counter() - t0:.0f} s", flush=True)
    for threads in args.threads or [None]:
        runs = [correlate(raw, q, tmp / "h.hdf", "sparse", threads=threads)
                for _ in range(args.repeats)]
        ts = float(np.median([r[0] for r in runs]))
        rss = max(r[1] for r in runs)
        ev = hits * 6
        dense_rate = np.median([r["dense_pixel_frames_per_s"] for r in rec.get("table", [])
                                if r["side"] == side] or [float("nan")])
        pf = side * side * n
        r = {"side": side, "frames": n, "occupancy": occ, "hits": hits, "seconds": ts,
             "threads": threads or os.cpu_count(), "all_seconds": [x[0] for x in runs],
             "hits_per_s": hits / ts, "pixel_frames_per_s": pf / ts, "rss_mb": rss,
             "event_mb": ev / 2**20, "rss_over_event_bytes": rss * 2**20 / ev,
             "dense_pixel_frames_per_s": float(dense_rate),
             "rate_ratio_vs_dense": (pf / ts) / float(dense_rate)}
        rec.setdefault("headline", []).append(r)
        print(f"headline 256x256 x {n} at 0.5 %, {r['threads']} threads: {ts:.2f} s (runs "
              f"{[round(x, 2) for x in r['all_seconds']]}) = {hits / ts:.3g} hits/s (goal >= "
              f"2e7 on 2 cores), {pf / ts:.3g} px-fr/s = {r['rate_ratio_vs_dense']:.0f}x the "
              f"dense path's rate (goal >= 20x), peak {rss:.0f} MB = "
              f"{r['rss_over_event_bytes']:.2f}x the event bytes (goal <= 3x)", flush=True)
    raw.unlink()


def _timed(fn):
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t, time.process_time() - c


def row_xla(args, tmp: Path, rec: dict) -> None:
    from xpcsviewer.backends import get_backend, get_transfer_stats, reset_transfer_stats
    from xpcsviewer.compute.inputs import FrameStream, Partition
    from xpcsviewer.compute.multitau._photons_xla import correlate_events_xla
    from xpcsviewer.compute.multitau.photons import correlate_multitau_events
    from xpcsviewer.model.events import EventBlock

    get_backend("jax")
    from xpcsviewer.backends.jax_backend import compile_counts

    side, n, occ = (128, 10_000, 0.005) if args.quick else (256, 20_000, 0.005)
    p = side * side
    rng = np.random.default_rng(5)
    blocks = []
    for a in range(0, n, 1000):
        m = min(1000, n - a)
        k = rng.poisson(p * occ, m)
        key = np.unique(np.repeat(np.arange(m, dtype=np.int64), k) * p
                        + rng.integers(0, p, k.sum()))
        fr, px = np.divmod(key, p)
        blocks.append(EventBlock(a, a + m, (fr + a).astype(np.int32), px.astype(np.int32),
                                 np.ones(px.size, np.uint16)))
    hits = sum(b.n_events for b in blocks)
    ev_bytes = sum(b.frame.nbytes + b.pixel.nbytes + b.value.nbytes for b in blocks)
    yy, xx = np.mgrid[:side, :side]
    r = np.hypot(yy - side / 2, xx - side / 2)
    part = Partition((r // 8).astype(int) + 1, (r // 4).astype(int) + 1)
    stream = FrameStream(lambda: iter(blocks), n)
    row = {"side": side, "frames": n, "occupancy": occ, "hits": hits,
           "event_bytes": ev_bytes, "device": args.xla_device, "load": os.getloadavg()}
    for name, run in (("numba", lambda: correlate_multitau_events(stream, part)),
                      ("xla", lambda: correlate_events_xla(stream, part,
                                                           device=args.xla_device))):
        before = compile_counts()["lowered"]
        reset_transfer_stats()
        res, wall, cpu = _timed(run)
        row[f"{name}_first_s"], row[f"{name}_first_cpu_s"] = wall, cpu
        if name == "xla":
            row["xla_programs"] = compile_counts()["lowered"] - before
            row["xla_h2d_bytes"] = get_transfer_stats().host_to_device_bytes
        res, wall, cpu = _timed(run)
        row[f"{name}_warm_s"], row[f"{name}_warm_cpu_s"] = wall, cpu
        row[f"{name}_hits_per_s"] = hits / wall
        row[f"{name}_g2"] = res.g2
    a, b = row.pop("xla_g2"), row.pop("numba_g2")
    ok = np.isfinite(b)
    row["max_rel_g2"] = float(np.max(np.abs(a[ok] - b[ok]) / np.abs(b[ok])))
    rec.setdefault("xla", []).append(row)
    print(f"xla photon engine ({args.xla_device}), {side}x{side} x {n} at {occ:.1%} "
          f"({hits:.3g} hits), load {row['load'][0]:.1f}: warm {row['xla_warm_s']:.2f} s "
          f"(CPU {row['xla_warm_cpu_s']:.2f} s) = {row['xla_hits_per_s']:.3g} hits/s, first "
          f"{row['xla_first_s']:.2f} s; numba warm {row['numba_warm_s']:.2f} s (CPU "
          f"{row['numba_warm_cpu_s']:.2f} s) = {row['numba_hits_per_s']:.3g} hits/s; "
          f"{row['xla_programs']} programs, host->device {row['xla_h2d_bytes'] / ev_bytes:.3f}"
          f"x the event bytes; max rel g2 diff {row['max_rel_g2']:.1e}", flush=True)


BOOST_SCRIPT = r"""
import json, sys, time
spec = json.loads(sys.argv[1])
t = time.perf_counter()
from boost_corr.xpcs_aps_8idi.gpu_corr_multitau import solve_multitau_base
# its whole multi-tau job on the CPU (reader, dense batches, correlator, normalisation),
# results not written; max_memory 16 GB (smaller values fail in its queue sizing)
kw = dict(qmap=spec["qmap"], raw=spec["raw"], gpu_id=spec["gpu"], save_results=False,
          verbose=False, num_loaders=2, max_memory=16.0)
solve_multitau_base(**kw)
first = time.perf_counter() - t
t = time.perf_counter()
solve_multitau_base(**kw)  # warm: the second job in the same process
print(json.dumps({"seconds": first, "warm_seconds": time.perf_counter() - t}), file=sys.stderr)
"""


def write_rigaku(raw: Path, n: int, occ: float = 0.005, seed: int = 3) -> np.ndarray:
    """A uniformly hit 512x1024 Rigaku module ``.bin`` of n frames (counts 1); returns the
    hits' frames."""
    from xpcsviewer.synthetic.sparse_files import write_rigaku_bin

    p = 512 * 1024
    rng = np.random.default_rng(seed)
    frames, pixels = [], []
    for a in range(0, n, 500):
        m = min(500, n - a)
        k = rng.poisson(p * occ, m)
        key = np.unique(np.repeat(np.arange(a, a + m, dtype=np.int64), k) * p
                        + rng.integers(0, p, k.sum()))
        frames.append(key // p)
        pixels.append(key % p)
    fr, px = np.concatenate(frames), np.concatenate(pixels)
    write_rigaku_bin(raw, fr, px, np.ones(fr.size, np.int64))
    return fr


def row_rigaku(args, tmp: Path, rec: dict) -> None:
    n = 2000 if args.quick else 10_000
    raw = tmp / "rigaku_module.bin"
    hits = int(write_rigaku(raw, n).size)
    q = ring_qmap(tmp / "q_rigaku.hdf", (512, 1024))
    correlate(raw, q, tmp / "m.hdf", "sparse", 1e-5)  # loads the kernel cache once
    load0 = os.getloadavg()
    t, rss, err = correlate(raw, q, tmp / "m.hdf", "sparse", 1e-5)
    ev = hits * 8
    r = {"frames": n, "hits": hits, "seconds": t, "cpu_seconds": cpu_seconds(err),
         "rss_mb": rss, "event_mb": ev / 2**20, "rss_over_event_bytes": rss * 2**20 / ev,
         "hits_per_s": hits / t, "load_before": load0, "load_after": os.getloadavg()}
    rec["rigaku"] = r
    print(f"Rigaku module 512x1024 x {n} at 0.5 % ({hits:.3g} hits): {t:.2f} s wall, "
          f"{r['cpu_seconds']:.1f} CPU-s, peak {rss:.0f} MB = {r['rss_over_event_bytes']:.2f}x "
          f"the event bytes (goals <= 3 s, <= 3x); load {load0[0]:.1f} -> "
          f"{r['load_after'][0]:.1f}", flush=True)
    raw.unlink()


def row_boost(args, tmp: Path, rec: dict) -> None:
    boost = Path(args.boost_python) if args.boost_python else VENVS / "boost" / "bin" / "python"
    if not boost.exists():
        print("boost-corr: not installed (.bench-venvs/boost; `make bench-refs`); skipped")
        return
    shape = (512, 1024)
    n = args.boost_frames or (1000 if args.quick else 2000)
    p = shape[0] * shape[1]
    raw = tmp / "rigaku.bin"
    fr = write_rigaku(raw, n)
    q = ring_qmap(tmp / "q_rigaku.hdf", shape)
    ours = [correlate(raw, q, tmp / "r.hdf", "auto", 1e-5) for _ in range(2)]
    ours_s, ours_rss = min(o[0] for o in ours), max(o[1] for o in ours)
    script = tmp / "boost_rigaku.py"
    script.write_text(BOOST_SCRIPT)
    try:
        t, brss, out = job([str(boost), str(script),
                            json.dumps({"raw": str(raw), "qmap": str(q), "gpu": args.boost_gpu})])
    except RuntimeError as exc:
        print("boost-corr: failed:\n" + "\n".join(str(exc).splitlines()[-25:]))
        rec["boost"] = {"error": str(exc)[-2000:]}
        return
    warm = next(json.loads(line) for line in reversed(out.splitlines())
                if line.startswith('{"seconds"'))["warm_seconds"]
    where = "CPU" if args.boost_gpu < 0 else f"GPU {args.boost_gpu}"
    r = {"frames": n, "hits": int(fr.size), "ours_s": ours_s, "ours_rss_mb": ours_rss,
         "boost_device": where, "boost_process_s": t, "boost_warm_s": warm,
         "boost_rss_mb": brss, "ratio_ours_over_boost_warm": ours_s / warm,
         "ours_pixel_frames_per_s": p * n / ours_s, "boost_warm_pixel_frames_per_s": p * n / warm}
    rec["boost"] = r
    print(f"Rigaku .bin 512x1024 x {n} at 0.5 % ({fr.size:.3g} hits): ours (whole process) "
          f"{ours_s:.2f} s ({ours_rss:.0f} MB, {p * n / ours_s:.3g} px-fr/s); boost-corr "
          f"{where}: process {t:.2f} s ({brss:.0f} MB), warm job {warm:.2f} s "
          f"({p * n / warm:.3g} px-fr/s); ours / boost warm = {ours_s / warm:.2f}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=("table", "headline", "rigaku", "xla", "boost"),
                    action="append")
    ap.add_argument("--xla-device", default="cpu", help="xla row: cpu or gpu")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dense-pixel-frames", type=float, default=1.2e9)
    ap.add_argument("--tmp", default=None, help="folder for the generated files")
    ap.add_argument("--boost-python", default=None, help="python with boost_corr importable")
    ap.add_argument("--boost-gpu", type=int, default=-1, help="boost-corr's GPU (-1: CPU)")
    ap.add_argument("--boost-frames", type=int, default=0)
    ap.add_argument("--threads", type=int, action="append",
                    help="headline: NUMBA_NUM_THREADS of a run (repeatable)")
    args = ap.parse_args()
    rows = args.only or ["table", "headline", "rigaku", "xla", "boost"]
    rec: dict = {"host": platform.node(), "cpu_count": os.cpu_count(),
                 "python": platform.python_version(), "numpy": np.__version__,
                 "load_before": os.getloadavg(), "date": time.strftime("%Y-%m-%d %H:%M")}
    with tempfile.TemporaryDirectory(dir=args.tmp) as d:
        tmp = Path(d)
        for name in rows:
            {"table": row_table, "headline": row_headline, "rigaku": row_rigaku, "xla": row_xla,
             "boost": row_boost}[name](
                args, tmp, rec)
    rec["load_after"] = os.getloadavg()
    out = REPO / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    f = out / f"sparse_{time.strftime('%Y%m%d_%H%M%S')}.json"
    f.write_text(json.dumps(rec, indent=1, default=float))
    print(f"record: {f.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
