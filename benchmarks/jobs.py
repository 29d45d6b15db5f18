"""Whole-process jobs side by side with the established tools (the issue-14 table).

Run on demand (not a test)::

    .venv/bin/python benchmarks/jobs.py                       # every row, medians of 3
    .venv/bin/python benchmarks/jobs.py --rows twotime --repeats 1
    .venv/bin/python benchmarks/jobs.py --mt-frames 2000      # a quicker multi-tau row

Rows (defaults are the issue's workloads):

- ``multitau``: 256x256 x 10,000 uint16 frames, 36 dynamic / 360 static rings.
  Job: ``xpcsviewer correlate RAW.npy --qmap Q.hdf --mode multitau`` (reads, correlates,
  writes the result file) vs boost-corr's Python API (reads the same .npy, correlates
  with ``MultitauCorrelator``, reduces its per-pixel G2/IP/IF with the same static
  smoothing). Warm: the second call in one process, frames already in memory, ours
  (compiled CPU engine and NumPy array kernels) vs boost-corr. The achieved fraction
  of the arithmetic limit = multiply-adds of the level updates / time / (DGEMM peak
  measured in the same process, as multiply-adds per second).
- ``twotime``: 128x128 x 4,000 frames, 8 dynamic / 80 static rings. Job:
  ``xpcsviewer correlate --mode twotime`` (writes 8 float32 upper-triangle maps) vs
  boost-corr's API job (``TwotimeCorrelator`` as its 8-ID-I driver uses it: float32
  cache, static smoothing, maps and g2 written to HDF5) and xpcs-correlator's
  ``correlator_dense_reference`` on the same frames and ROIs. Per-run ratios are
  printed too (ours and theirs alternate, so each ratio pairs neighbouring runs).
- SAXS-1D / q-map: ``benchmarks/saxs_reduction.py`` (pyFAI).

Every job is a fresh process timed from the outside (wall clock, Python start-up and
imports included); peak memory is that process's ``VmHWM``. Ours and theirs run
alternately, ``--repeats`` times each; medians and the ratio ours / theirs are printed
(compare ratios only within one run: the machine is shared). A tool missing from
``.bench-venvs/`` is skipped with a message.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
VENVS = REPO / ".bench-venvs"
OURS = REPO / ".venv" / "bin" / "python"
if not OURS.exists():
    OURS = Path(sys.executable)


# ----------------------------------------------------------------------------- inputs
def ring_maps(size: int, n_dyn: int, n_sta: int) -> tuple[np.ndarray, np.ndarray]:
    yy, xx = np.mgrid[:size, :size]
    r = np.hypot(yy - size / 2 + 0.5, xx - size / 2 + 0.5) / (size / 2 * np.sqrt(2))
    dq = np.clip((r * n_dyn).astype(int) + 1, 1, n_dyn)
    sq = (dq - 1) * (n_sta // n_dyn) + np.clip(
        ((r * n_dyn - (dq - 1)) * (n_sta // n_dyn)).astype(int), 0, n_sta // n_dyn - 1) + 1
    return dq, sq


def write_inputs(tmp: Path, size: int, n_frames: int, n_dyn: int, n_sta: int) -> tuple[Path, Path]:
    """uint16 Poisson frames (.npy, written in blocks) and a /qmap file of rings."""
    sys.path.insert(0, str(REPO))
    from xpcsviewer.compute.detector.partition import _compress, _smallest_uint
    from xpcsviewer.io.results.writer import write_qmap_file
    from xpcsviewer.model.result import QMap

    raw = tmp / f"raw_{size}_{n_frames}.npy"
    rng = np.random.default_rng(0)
    pool = rng.poisson(1.0, (64, size, size)).astype(np.uint16)
    mm = np.lib.format.open_memmap(raw, mode="w+", dtype=np.uint16, shape=(n_frames, size, size))
    for a in range(0, n_frames, 256):
        k = min(256, n_frames - a)
        mm[a : a + k] = pool[(a + np.arange(k) * 7) % 64]
    mm.flush()
    del mm
    dq, sq = ring_maps(size, n_dyn, n_sta)
    one = np.ones_like(dq)
    d_roi, d_map = _compress(dq, one, 1)
    s_roi, s_map = _compress(sq, one, 1)
    qm = QMap(
        dynamic_roi_map=_smallest_uint(d_roi, len(d_map)),
        static_roi_map=_smallest_uint(s_roi, len(s_map)),
        mask=np.ones(dq.shape, bool),
        dynamic_v_list_dim0=np.linspace(1e-3, 1e-2, n_dyn), dynamic_v_list_dim1=np.zeros(1),
        static_v_list_dim0=np.linspace(1e-3, 1e-2, n_sta), static_v_list_dim1=np.zeros(1),
        dynamic_index_mapping=d_map, static_index_mapping=s_map,
        dynamic_num_pts=(n_dyn, 1), static_num_pts=(n_sta, 1),
        beam_center_x=size / 2, beam_center_y=size / 2, detector_distance=5.0,
        pixel_size=75e-6, energy_kev=10.0,
    )
    qpath = tmp / f"qmap_{size}_{n_dyn}.hdf"
    write_qmap_file(qpath, qm, overwrite=True)
    return raw, qpath


# ----------------------------------------------------------------------------- workers
def hwm_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def mt_macs(n_frames: int, n_pix: int, m: int = 4) -> float:
    """Multiply-adds of the sums of products (the arithmetic of the level updates)."""
    sys.path.insert(0, str(REPO))
    from xpcsviewer.compute.multitau.correlator import delay_list

    _d, lvl, x = delay_list(n_frames, m)
    return float(sum((n_frames >> int(L)) - int(xx) for L, xx in zip(lvl, x, strict=True))) * n_pix


def dgemm_peak_macs() -> float:
    """Measured float64 GEMM rate (multiply-adds per second), best of 3, this process."""
    a = np.random.default_rng(0).random((2048, 2048))
    a @ a
    best = min(_timed(lambda: a @ a) for _ in range(3))
    return 2048.0**3 / best


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def ours_warm_worker(spec: dict) -> dict:
    sys.path.insert(0, str(REPO))
    from xpcsviewer.backends import get_backend
    from xpcsviewer.compute.multitau.correlator import correlate_multitau
    from xpcsviewer.compute.options import MultitauOptions
    from xpcsviewer.io.results.reader import read_qmap

    frames = np.load(spec["raw"])  # in memory, as boost-corr's warm call
    qm = read_qmap(spec["qmap"])
    be = get_backend("numpy")
    out = {}
    for engine in spec["engines"]:
        kw = {"options": MultitauOptions(backend=be), "engine": engine}
        correlate_multitau(frames[:256], qm, **kw)
        t, c = time.perf_counter(), time.process_time()
        res = correlate_multitau(frames, qm, **kw)
        out[engine] = time.perf_counter() - t
        out[engine + "_cpu"] = time.process_time() - c  # all threads: robust under load
        np.save(spec["dump"], res.g2)
    out["peak_macs"] = dgemm_peak_macs()
    out["macs"] = mt_macs(frames.shape[0], int((qm.mask > 0).sum()))
    return out


def boost_worker(spec: dict) -> dict:
    """Runs inside .bench-venvs/boost: one job, or a warm second call."""
    import torch
    from boost_corr.multitau import MultitauCorrelator

    frames = np.load(spec["raw"], mmap_mode=None if spec["warm"] else "r")
    n, h, w = frames.shape

    def run():
        xb = MultitauCorrelator(det_size=(h, w), frame_num=n, device=spec.get("device", "cpu"),
                                queue_size=64, auto_queue=True, max_memory=2.0)
        for a in range(0, n, 128):
            xb.process(torch.from_numpy(np.asarray(frames[a : a + 128], dtype=np.float32)
                                        .reshape(-1, h * w)))
        xb.post_process()
        return xb.get_results()[1]

    if spec["warm"]:
        run()
    t = time.perf_counter()
    mt = run()
    dt = time.perf_counter() - t
    import h5py

    with h5py.File(spec["qmap"], "r") as f:
        dq = f["/qmap/dynamic_roi_map"][()].ravel().astype(int)
        sq = f["/qmap/static_roi_map"][()].ravel().astype(int)
    g = mt["G2"]
    g = (g.numpy() if hasattr(g, "numpy") else np.asarray(g)).astype(np.float64)
    g = g.reshape(g.shape[0], 3, -1)
    ns, nd = sq.max(), dq.max()
    sums = np.stack([[np.bincount(sq - 1, weights=g[t, c], minlength=ns) for c in range(3)]
                     for t in range(g.shape[0])])
    cnt = np.bincount(sq - 1, minlength=ns)
    gs = cnt * sums[:, 0] / (sums[:, 1] * sums[:, 2])
    s2d = np.zeros(ns, int)
    s2d[sq - 1] = dq - 1
    g2 = np.stack([np.bincount(s2d, weights=gs[t], minlength=nd) / np.bincount(s2d, minlength=nd)
                   for t in range(gs.shape[0])])
    if spec.get("dump"):
        tau = mt["tau"]
        np.savez(spec["dump"], g2=g2, tau=np.asarray(tau).ravel())
    return {"seconds": dt, "torch": torch.__version__}


def boost_twotime_worker(spec: dict) -> dict:
    """Runs inside .bench-venvs/boost: boost-corr's two-time API job.

    What its 8-ID-I two-time driver does with the correlator, minus its own raw and
    q-map readers: pixels sorted bin by bin (its ``qinfo``), every frame cached as
    float32, static-bin smoothing, one float32 GEMM per bin, g2 by bincount, and each
    map's upper triangle written to HDF5 as its result writer does (one lzf chunk).
    """
    import h5py
    import torch
    from boost_corr.twotime import TwotimeCorrelator

    frames = np.load(spec["raw"], mmap_mode="r")
    n, h, w = frames.shape
    with h5py.File(spec["qmap"], "r") as f:
        dq = f["/qmap/dynamic_roi_map"][()].ravel().astype(int)
        sq = f["/qmap/static_roi_map"][()].ravel().astype(int)
    info: dict = {"dq_slc": [], "sq_slc": [], "dq_idx": [], "sq_idx": []}
    cols, start = [], 0
    for d in np.unique(dq[dq > 0]):
        d_start = start
        for s in np.unique(sq[(dq == d) & (sq > 0)]):
            pix = np.flatnonzero((dq == d) & (sq == s))
            cols.append(pix)
            info["sq_slc"].append(slice(start, start + pix.size))
            info["sq_idx"].append(int(s))
            start += pix.size
        info["dq_idx"].append(int(d))
        info["dq_slc"].append(slice(d_start, start))
    idx = np.concatenate(cols)
    crop = torch.zeros(h * w, dtype=torch.bool)
    crop[torch.from_numpy(idx)] = True
    tc = TwotimeCorrelator(info, frame_num=n, det_size=(h, w), method="normal",
                           mask_crop=crop, window=1024, device="cpu")
    for a in range(0, n, 128):
        blk = np.asarray(frames[a : a + 128]).reshape(-1, h * w)[:, idx]
        tc.process(torch.from_numpy(blk.astype(np.float32)))
    tc.post_processing(smooth_method="sqmap")
    with h5py.File(spec["out"], "w") as f:
        for payload in tc.get_twotime_generator():
            for key, val in payload.items():
                val = np.asarray(val)
                if val.ndim == 2 and val.size > 8192:
                    f.create_dataset(key, data=val, compression="lzf", chunks=val.shape)
                else:
                    f.create_dataset(key, data=val)
    return {"torch": torch.__version__}


def xpcscorr_worker(spec: dict) -> dict:
    """Runs inside .bench-venvs/xpcscorr: the dense reference two-time correlator."""
    import h5py
    import xpcscorr

    frames = np.load(spec["raw"])
    with h5py.File(spec["qmap"], "r") as f:
        dq = f["/qmap/dynamic_roi_map"][()]
    roi = np.stack([dq == b for b in range(1, int(dq.max()) + 1)])
    res = xpcscorr.correlator_dense_reference(frames, roi, ttcf_format="t1,t2")
    return {"ttcf_shape": list(np.shape(res.ttcf)), "ttcf_dtype": str(np.asarray(res.ttcf).dtype)}


# ----------------------------------------------------------------------------- driver
def job(cmd: list[str], env: dict | None = None) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MB, stdout) of a whole process, via /usr/bin/time -v."""
    tv = ["/usr/bin/time", "-v"] if Path("/usr/bin/time").exists() else []
    t = time.perf_counter()
    p = subprocess.run(tv + cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    dt = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(f"{cmd[:3]} failed:\n{p.stderr[-2000:]}")
    rss = float("nan")
    for line in p.stderr.splitlines():
        if "Maximum resident set size" in line:
            rss = int(line.split()[-1]) / 1024.0
    return dt, rss, p.stdout


def worker_cmd(python: Path, entry: str, spec: dict) -> list[str]:
    return [str(python), str(Path(__file__).resolve()), f"--{entry}", json.dumps(spec)]


def med(xs: list[float]) -> float:
    return float(np.median(xs)) if xs else float("nan")


def row_multitau(args, tmp: Path, rec: list) -> None:
    size, n = args.mt_size, args.mt_frames
    print(f"multi-tau {size}x{size} x {n} frames, 36 dynamic / 360 static rings")
    raw, qpath = write_inputs(tmp, size, n, 36, 360)
    out = tmp / "mt.hdf"
    boost = VENVS / "boost" / "bin" / "python"
    ours_cmd = [str(OURS), "-m", "xpcsviewer", "correlate", str(raw), "--qmap", str(qpath),
                "-o", str(out), "--mode", "multitau", "--quiet"]
    res: dict[str, list] = {"ours": [], "boost": []}
    for _ in range(args.repeats):
        res["ours"].append(job(ours_cmd))
        if boost.exists():
            spec = {"raw": str(raw), "qmap": str(qpath), "warm": False}
            res["boost"].append(job(worker_cmd(boost, "boost-worker", spec)))
    line = {k: (med([t for t, _, _ in v]), med([m for _, m, _ in v])) for k, v in res.items() if v}
    for k, (t, m) in line.items():
        print(f"  job  {k:11s} {t:7.2f} s  peak RSS {m:6.0f} MB")
    if "boost" in line:
        print(f"  job  ratio ours / boost-corr = {line['ours'][0] / line['boost'][0]:.2f} "
              "(goal <= 0.5)")
    else:
        print("  boost-corr: skipped (no .bench-venvs/boost; make bench-refs)")
    # warm, in one process
    engines = ["auto", "backend"] if args.before else ["auto"]
    warm = [json.loads(job(worker_cmd(OURS, "ours-warm-worker",
                                      {"raw": str(raw), "qmap": str(qpath), "engines": engines,
                                       "dump": str(tmp / "ours_g2.npy")}))[2].splitlines()[-1])
            for _ in range(args.repeats)]
    tw = med([w["auto"] for w in warm])
    cpu = med([w["auto_cpu"] for w in warm])
    peak = med([w["peak_macs"] for w in warm])
    macs = warm[0]["macs"]
    print(f"  warm ours (compiled)   {tw:7.2f} s wall, {cpu:.2f} CPU-s over {os.cpu_count()} "
          f"cores; {macs / tw / 1e9:5.2f} G multiply-adds/s = {macs / tw / peak:.1%} of this "
          f"machine's DGEMM rate measured in the same process ({peak / 1e9:.0f} G/s; the "
          f"arithmetic alone would take {macs / peak:.2f} s at that rate)")
    if args.before:
        print("  warm ours (NumPy kernels, before) "
              f"{med([w['backend'] for w in warm]):7.2f} s wall, "
              f"{med([w['backend_cpu'] for w in warm]):.2f} CPU-s")
    bw = []
    if boost.exists():
        for _ in range(args.repeats):
            bw.append(json.loads(job(worker_cmd(boost, "boost-worker", {
                "raw": str(raw), "qmap": str(qpath), "warm": True,
                "dump": str(tmp / "boost.npz")}))[2].splitlines()[-1])["seconds"])
        b = np.load(tmp / "boost.npz")
        ours_g2 = np.load(tmp / "ours_g2.npy")
        sys.path.insert(0, str(REPO))
        from xpcsviewer.compute.multitau.correlator import delay_list

        ours_d = delay_list(n)[0]
        tau = np.rint(b["tau"]).astype(int)
        both = [d for d in ours_d if d in set(tau.tolist())]
        ia = [int(np.flatnonzero(ours_d == d)[0]) for d in both]
        ib = [int(np.flatnonzero(tau == d)[0]) for d in both]
        diff = float(np.nanmax(np.abs(b["g2"][ib] - ours_g2[ia]))) if both else float("nan")
        print(f"  warm boost-corr        {med(bw):7.2f} s   ratio ours / boost-corr = "
              f"{tw / med(bw):.2f}; max |g2 difference| {diff:.1e} (its bfloat16 buffers)")
    rec.append({"row": "multitau", "size": size, "frames": n, "jobs": line, "warm_ours": tw,
                "warm_ours_cpu": cpu,
                "warm_boost": med(bw), "macs": macs, "peak_macs": peak})


def row_twotime(args, tmp: Path, rec: list) -> None:
    size, n = args.tt_size, args.tt_frames
    print(f"two-time {size}x{size} x {n} frames, 8 dynamic / 80 static rings")
    raw, qpath = write_inputs(tmp, size, n, 8, 80)
    out = tmp / "tt.hdf"
    xc = VENVS / "xpcscorr" / "bin" / "python"
    boost = VENVS / "boost" / "bin" / "python"
    ours_cmd = [str(OURS), "-m", "xpcsviewer", "correlate", str(raw), "--qmap", str(qpath),
                "-o", str(out), "--mode", "twotime", "--quiet", "--overwrite"]
    spec = {"raw": str(raw), "qmap": str(qpath), "out": str(tmp / "tt_boost.hdf")}
    tools = [(name, py, entry) for name, py, entry in (
        ("boost-corr", boost, "boost-twotime-worker"),
        ("xpcs-correlator", xc, "xpcscorr-worker")) if py.exists()]
    res: dict[str, list] = {"ours": [], **{name: [] for name, _, _ in tools}}
    for _ in range(args.repeats):  # alternately, so that load changes hit every tool
        res["ours"].append(job(ours_cmd))
        for name, py, entry in tools:
            res[name].append(job(worker_cmd(py, entry, spec)))
    line = {k: (med([t for t, _, _ in v]), med([m for _, m, _ in v])) for k, v in res.items() if v}
    spread = {k: (min(t for t, _, _ in v), max(t for t, _, _ in v)) for k, v in res.items() if v}
    for k, (t, m) in line.items():
        lo, hi = spread[k]
        print(f"  job  {k:15s} {t:7.2f} s ({lo:.2f}-{hi:.2f})  {n / t:7.1f} frames/s  "
              f"peak RSS {m:6.0f} MB")
    ratios = {}
    for name, _, _ in tools:
        o, r = line["ours"], line[name]
        per_run = [a[0] / b[0] for a, b in zip(res["ours"], res[name], strict=True)]
        ratios[name] = per_run
        print(f"  job  ratio ours / {name}: time {o[0] / r[0]:.2f} (runs "
              f"{', '.join(f'{x:.2f}' for x in per_run)}), memory {o[1] / r[1]:.2f} "
              "(goal <= 1.0)")
    for name in ("boost-corr", "xpcs-correlator"):
        if name not in line:
            print(f"  {name}: skipped (not in .bench-venvs/; make bench-refs)")
    macs = 0.5 * n * n * size * size
    print(f"  arithmetic: {macs:.2e} multiply-adds (half of X Xᵀ over all bins)")
    rec.append({"row": "twotime", "size": size, "frames": n, "jobs": line,
                "runs": {k: [t for t, _, _ in v] for k, v in res.items()}, "ratios": ratios})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default="multitau,twotime")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--mt-size", type=int, default=256)
    ap.add_argument("--mt-frames", type=int, default=10000)
    ap.add_argument("--tt-size", type=int, default=128)
    ap.add_argument("--tt-frames", type=int, default=4000)
    ap.add_argument("--before", action="store_true",
                    help="also time the NumPy array kernels (the engine before the compiled one)")
    ap.add_argument("--json", default=None)
    for name in ("ours-warm-worker", "boost-worker", "boost-twotime-worker",
                 "xpcscorr-worker"):
        ap.add_argument(f"--{name}", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    for name, fn in (("ours_warm_worker", ours_warm_worker), ("boost_worker", boost_worker),
                     ("boost_twotime_worker", boost_twotime_worker),
                     ("xpcscorr_worker", xpcscorr_worker)):
        val = getattr(args, name)
        if val:
            print(json.dumps(fn(json.loads(val))))
            return 0
    rec: list = []
    print(f"host: {platform.platform()}, {os.cpu_count()} CPUs, load {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        rows = [r for r in args.rows.split(",") if r]
        if "multitau" in rows:
            row_multitau(args, tmp, rec)
        if "twotime" in rows:
            row_twotime(args, tmp, rec)
    if args.json:
        Path(args.json).write_text(json.dumps({"load_end": os.getloadavg(), "rows": rec}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
