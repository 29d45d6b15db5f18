"""One q-bin re-correlated with an edited mask vs the whole correlate job (issue 45).

Run on demand (not a test; many minutes, several GB of disk)::

    .venv/bin/python benchmarks/recompute_bin.py             # 10^5 frames, both cases
    .venv/bin/python benchmarks/recompute_bin.py --frames 10000 --only photons

Cases:

- ``photons``: an ESRF CSR file of a 512x1024 detector at 1 % occupancy (uniform hits of
  count 1), 10^5 frames (5e8 hits, 3 GB); a q-map of 36 rings x 8 sectors (about 1,800
  pixels a bin). The whole job is ``correlate_file`` (photon path, multi-tau); the bin is
  :func:`~xpcsviewer.jobs.rebin_one.recompute_bin` of one mid-q bin with 10 % of its
  pixels masked.
- ``dense``: an HDF5 stack of 128x128 uint16 frames (10^5 frames, 3.3 GB: what the page
  cache of our 2-core machines holds), frames of Poisson counts, the same kind of q-map
  (bins of about 2,000 pixels at 8 rings x 1 sector).

Each time is the best of ``--repeats`` runs with a warm page cache (the files are read
once first). ``bin_first_s`` is the first recompute of the bin (it reads the bin; its
counts or hits are then kept), ``bin_s`` the next ones, the mask edited again. The equality
of the bin with the whole job (same mask) is checked on the numbers (max relative
difference). A JSON record goes to ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def sector_qmap(shape: tuple[int, int], n_rings: int, n_sectors: int, per: int = 4):
    """Rings x sectors about the detector's centre (every pixel in a bin); ``per`` static
    rings inside each dynamic bin."""
    from xpcsviewer.compute.detector.partition import _compress, _smallest_uint
    from xpcsviewer.model.result import QMap

    h, w = shape
    yy, xx = np.mgrid[:h, :w]
    r = np.hypot(yy - h / 2 + 0.5, xx - w / 2 + 0.5) / np.hypot(h / 2, w / 2)
    phi = (np.degrees(np.arctan2(yy - h / 2 + 0.5, xx - w / 2 + 0.5)) + 360.0) % 360.0
    ring = np.clip((r * n_rings).astype(int), 0, n_rings - 1)
    sec = np.clip((phi / 360.0 * n_sectors).astype(int), 0, n_sectors - 1)
    dq = ring * n_sectors + sec + 1
    sub = np.clip(((r * n_rings - ring) * per).astype(int), 0, per - 1)
    sq = (dq - 1) * per + sub + 1
    one = np.ones_like(dq)
    d_roi, d_map = _compress(dq, one, 1)
    s_roi, s_map = _compress(sq, one, 1)
    nd, ns = n_rings * n_sectors, n_rings * n_sectors * per  # the natural grids
    return QMap(
        dynamic_roi_map=_smallest_uint(d_roi, len(d_map)),
        static_roi_map=_smallest_uint(s_roi, len(s_map)),
        mask=np.ones(shape, bool),
        dynamic_v_list_dim0=np.linspace(1e-3, 1e-2, nd), dynamic_v_list_dim1=np.zeros(1),
        static_v_list_dim0=np.linspace(1e-3, 1e-2, ns), static_v_list_dim1=np.zeros(1),
        dynamic_index_mapping=d_map, static_index_mapping=s_map,
        dynamic_num_pts=(nd, 1), static_num_pts=(ns, 1), beam_center_x=w / 2,
        beam_center_y=h / 2, detector_distance=5.0, pixel_size=75e-6, energy_kev=10.0)


def write_dense(path: Path, shape: tuple[int, int], n: int, seed: int = 0) -> None:
    import h5py

    rng = np.random.default_rng(seed)
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("/entry/data/data", (n, *shape), np.uint16,
                              chunks=(1, *shape))
        f["/entry/instrument/detector_1/frame_time"] = 1e-4
        step = 2000
        for a in range(0, n, step):
            m = min(step, n - a)
            ds[a:a + m] = rng.poisson(0.5, (m, *shape)).astype(np.uint16)


def best(fn, repeats: int) -> tuple[float, object]:
    out, times = None, []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def run_case(name: str, raw: Path, qm, tmp: Path, q_bin: int, repeats: int) -> dict:
    from xpcsviewer.compute.spec import CorrelateSpec, FrameSelection
    from xpcsviewer.io.results.writer import write_qmap_file
    from xpcsviewer.jobs.correlate import CorrelateJob, correlate_file
    from xpcsviewer.jobs.rebin_one import recompute_bin

    rng = np.random.default_rng(1)
    edited = np.asarray(qm.mask, bool).copy()
    in_bin = np.asarray(qm.dynamic_roi_map) == q_bin
    drop = np.flatnonzero(in_bin.ravel())
    edited.ravel()[rng.choice(drop, drop.size // 10, replace=False)] = False
    qpath = write_qmap_file(tmp / f"{name}_qmap.hdf", qm, overwrite=True)
    qpath_m = write_qmap_file(tmp / f"{name}_qmap_masked.hdf",
                              dataclasses.replace(qm, mask=edited), overwrite=True)
    spec = CorrelateSpec(frames=FrameSelection(), frame_time=1e-4)
    t_job, first = best(lambda: correlate_file(CorrelateJob(
        raw, qpath, tmp / f"{name}.hdf", spec, overwrite=True)), 1)
    t_whole, whole = best(lambda: correlate_file(CorrelateJob(
        raw, qpath_m, tmp / f"{name}_masked.hdf", spec, overwrite=True)), 1)
    from xpcsviewer.jobs import _rebin_streams

    # a first edit (another tenth of the bin masked): the bin is read (and its dense
    # counts kept); then the edit compared with the whole job, the mask edited again
    first_edit = np.asarray(qm.mask, bool).copy()
    first_edit.ravel()[rng.choice(drop, drop.size // 10, replace=False)] = False
    _rebin_streams._cache.clear()
    t_first, _ = best(lambda: recompute_bin(first.output, q_bin, first_edit), 1)
    t_bin, out = best(lambda: recompute_bin(first.output, q_bin, edited), repeats)
    ref = whole.result.multitau.g2[:, q_bin - 1]
    ok = np.isfinite(out.g2) & whole.result.multitau.valid[:, q_bin - 1]
    rel = float(np.max(np.abs(out.g2[ok] / ref[ok] - 1.0)))
    row = {"case": name, "frames": int(first.n_frames), "shape": list(qm.shape),
           "bin": q_bin, "bin_pixels": int(out.n_pixels_before),
           "pixels_removed": int(out.pixels_removed), "path": out.path,
           "job_path": first.plan.path.path, "whole_job_s": round(t_job, 2),
           "whole_job_masked_s": round(t_whole, 2), "bin_first_s": round(t_first, 3),
           "bin_s": round(t_bin, 3),
           "max_rel_diff": rel}
    if name == "photons":
        from xpcsviewer.io.raw import open_raw_source

        with open_raw_source(raw) as src:
            row["hits"] = int(src.n_events)
    print(json.dumps(row), flush=True)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=("photons", "dense"), action="append")
    ap.add_argument("--frames", type=int, default=100_000)
    ap.add_argument("--occupancy", type=float, default=0.01)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tmp", default=None, help="folder for the generated files (kept)")
    args = ap.parse_args()
    cases = args.only or ["photons", "dense"]
    tmp = Path(args.tmp) if args.tmp else Path(tempfile.mkdtemp(prefix="rebin_bench_"))
    tmp.mkdir(parents=True, exist_ok=True)
    rows = []
    if "photons" in cases:
        from benchmarks.sparse import write_csr

        shape = (512, 1024)
        raw = tmp / f"photons_{args.frames}_{args.occupancy}.h5"
        if not raw.exists():
            t = time.perf_counter()
            write_csr(raw, shape, args.frames, args.occupancy)
            print(f"wrote {raw} in {time.perf_counter() - t:.0f} s", flush=True)
        qm = sector_qmap(shape, 36, 8)
        rows.append(run_case("photons", raw, qm, tmp, 8 * 18 + 3, args.repeats))
    if "dense" in cases:
        shape = (128, 128)
        raw = tmp / f"dense_{args.frames}.h5"
        if not raw.exists():
            t = time.perf_counter()
            write_dense(raw, shape, args.frames)
            print(f"wrote {raw} in {time.perf_counter() - t:.0f} s", flush=True)
        qm = sector_qmap(shape, 8, 1)
        rows.append(run_case("dense", raw, qm, tmp, 4, args.repeats))
    print("\n| case | frames | bin pixels | whole job (s) | one bin (s) | speed-up | "
          "max rel. diff |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} ({r['path']}) | {r['frames']:,} | {r['bin_pixels']:,} | "
              f"{r['whole_job_masked_s']:.1f} | {r['bin_s']:.2f} | "
              f"{r['whole_job_masked_s'] / r['bin_s']:.0f}x | {r['max_rel_diff']:.1e} |")
    out = REPO / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    rec = {"host": platform.node(), "python": platform.python_version(), "rows": rows}
    (out / f"recompute_bin_{time.strftime('%Y%m%d_%H%M%S')}.json").write_text(
        json.dumps(rec, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
