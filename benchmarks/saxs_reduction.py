"""I(q) of a 4-Mpixel image: our static-bin reduction vs pyFAI ``integrate1d``.

Run on demand (not a test)::

    .venv/bin/python benchmarks/saxs_reduction.py [--shape 2167 2070] [--bins 500] [--json out.json]

Two comparisons (issue 14's row):

- **job**: a fresh process that computes the q-map and the partition of the detector
  and one I(q) (ours: ``geometry_partition`` + ``saxs_1d``; pyFAI: an
  ``AzimuthalIntegrator`` and ``integrate1d``), timed from the outside, Python start-up
  and imports included; ours and pyFAI alternate, medians of ``--job-repeats``.
- **warm**: I(q) of a *new* image with the same geometry inside one process (ours: the
  partition and binner come from the content-keyed caches; pyFAI: its integrator's
  cached engine).

Both sides use the same image, geometry, mask and equal-width q bins between the
minimum and maximum q of the valid pixels. Ours: a q partition from
``compute.partition.make_partition`` and ``compute.saxs.StaticBinner`` (bin ids and
counts placed once, one compiled scatter-add per image). pyFAI (optional, from
``.bench-venvs/pyfai``; skipped with a message when absent) runs with the like-for-like
settings of reference-tools.md: ``method=("no", "histogram", "cython")``, no solid
angle, no polarisation. Times are medians of repeated calls after the first one; the
first call (set-up + compile) is reported separately.
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
PYFAI = REPO / ".bench-venvs" / "pyfai" / "bin" / "python"
GEOM = {"energy_kev": 10.0, "det_dist_m": 5.0, "pixel_size_m": 75e-6}


def make_inputs(shape: tuple[int, int], seed: int = 0) -> tuple[np.ndarray, np.ndarray, dict]:
    rng = np.random.default_rng(seed)
    h, w = shape
    bcx, bcy = w * 0.45, h * 0.52
    yy, xx = np.mgrid[:h, :w]
    r = np.hypot(yy - bcy, xx - bcx) + 1.0
    img = rng.poisson(1e4 * r**-1.5 + 0.5).astype(np.float64)
    mask = np.ones((h, w), bool)
    mask[:, w // 2 - 4 : w // 2 + 4] = False  # a module gap
    mask[int(bcy) - 20 : int(bcy) + 20, int(bcx) - 20 : int(bcx) + 20] = False  # beam stop
    return img, mask, {**GEOM, "bcx": bcx, "bcy": bcy}


def ours_job(spec: dict) -> dict:
    """A whole job in this (fresh) process: q-map, partition, one I(q)."""
    import numpy as np  # the job's own import cost is part of it

    from xpcsviewer.backends import get_job_backend
    from xpcsviewer.compute.detector.partition import PartitionGrid, geometry_partition
    from xpcsviewer.compute.detector.saxs import saxs_1d

    d = np.load(spec["npz"])
    qm = geometry_partition(d["img"].shape, _geometry(spec["geom"]), d["mask"],
                            PartitionGrid(1, spec["bins"]))
    iq = saxs_1d(d["img"], qm, backend=get_job_backend())
    return {"n": int(np.isfinite(iq.intensity).sum())}


def _geometry(g: dict):
    """The DetectorGeometry of this benchmark's geometry dict."""
    from xpcsviewer.compute.detector.qmap import DetectorGeometry

    return DetectorGeometry(beam_center_x=g["bcx"], beam_center_y=g["bcy"],
                            detector_distance=g["det_dist_m"], pixel_size=g["pixel_size_m"],
                            energy_kev=g["energy_kev"])


def pyfai_job(spec: dict) -> dict:
    """Runs inside .bench-venvs/pyfai: the same job with pyFAI."""
    from pyFAI.integrator.azimuthal import AzimuthalIntegrator

    d = np.load(spec["npz"])
    g = spec["geom"]
    p = g["pixel_size_m"]
    ai = AzimuthalIntegrator(dist=g["det_dist_m"], poni1=(g["bcy"] + 0.5) * p,
                             poni2=(g["bcx"] + 0.5) * p, pixel1=p, pixel2=p,
                             wavelength=12.398 / g["energy_kev"] * 1e-10)
    res = ai.integrate1d(d["img"], spec["bins"], unit="q_A^-1",
                         method=("no", "histogram", "cython"), correctSolidAngle=False,
                         polarization_factor=None, mask=~d["mask"])
    return {"n": int(np.isfinite(res.intensity).sum())}


def timed_process(cmd: list[str]) -> float:
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"})
    dt = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-1500:])
    return dt


def median_time(fn, reps: int) -> float:
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def pyfai_worker(spec: dict) -> dict:
    """Runs inside .bench-venvs/pyfai."""
    import pyFAI
    from pyFAI.integrator.azimuthal import AzimuthalIntegrator

    d = np.load(spec["npz"])
    img, mask = d["img"], d["mask"]
    g = spec["geom"]
    p = g["pixel_size_m"]
    wl = 12.398 / g["energy_kev"] * 1e-10
    t = time.perf_counter()
    ai = AzimuthalIntegrator(dist=g["det_dist_m"], poni1=(g["bcy"] + 0.5) * p,
                             poni2=(g["bcx"] + 0.5) * p, pixel1=p, pixel2=p, wavelength=wl)
    kw = {
        "unit": "q_A^-1",
        "method": ("no", "histogram", "cython"),
        "correctSolidAngle": False,
        "polarization_factor": None,
        "radial_range": (spec["qmin"], spec["qmax"]),
        "mask": ~mask,
    }
    res = ai.integrate1d(img, spec["bins"], **kw)
    first = time.perf_counter() - t
    rep = median_time(lambda: ai.integrate1d(img, spec["bins"], **kw), spec["reps"])
    np.save(spec["out"], np.asarray(res.intensity))
    return {"tool": "pyFAI", "version": pyFAI.version, "first_s": first, "median_s": rep}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", type=int, nargs=2, default=(2167, 2070), help="image rows, columns")
    ap.add_argument("--job-repeats", type=int, default=3)
    ap.add_argument("--bins", type=int, default=500)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--backends", default="jax,numpy")
    ap.add_argument("--json", default=None)
    ap.add_argument("--pyfai-worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--ours-job", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--pyfai-job", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    for name, fn in (("pyfai_worker", pyfai_worker), ("ours_job", ours_job),
                     ("pyfai_job", pyfai_job)):
        if getattr(args, name):
            print(json.dumps(fn(json.loads(getattr(args, name)))))
            return 0
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    sys.path.insert(0, str(REPO))
    from xpcsviewer.backends import get_backend
    from xpcsviewer.compute.detector.partition import PartitionGrid, geometry_partition
    from xpcsviewer.compute.detector.qmap import compute_qmap
    from xpcsviewer.compute.detector.saxs import StaticBinner, saxs_1d

    shape = tuple(args.shape)
    img, mask, geom = make_inputs(shape)
    q, _phi = compute_qmap(shape, geom["energy_kev"], geom["det_dist_m"],
                          geom["pixel_size_m"], geom["bcx"], geom["bcy"])
    qmin, qmax = float(q[mask].min()), float(q[mask].max())
    npix = shape[0] * shape[1]
    print(f"I(q) of a {shape[0]}x{shape[1]} image ({npix / 1e6:.1f} Mpixel), {args.bins} q bins")
    record: dict = {"host": {"platform": platform.platform(), "cpus": os.cpu_count(),
                             "load_avg": os.getloadavg()},
                    "shape": list(shape), "bins": args.bins, "results": []}
    with tempfile.TemporaryDirectory() as tmp:
        npz = Path(tmp) / "job.npz"
        np.savez(npz, img=img, mask=mask)
        spec = json.dumps({"npz": str(npz), "geom": geom, "bins": args.bins})
        ours_t, fai_t = [], []
        for _ in range(args.job_repeats):
            ours_t.append(timed_process([sys.executable, __file__, "--ours-job", spec]))
            if PYFAI.exists():
                fai_t.append(timed_process([str(PYFAI), __file__, "--pyfai-job", spec]))
        o = float(np.median(ours_t))
        line = (f"  job (q-map + partition + one I(q), whole process): ours {o:.2f} s "
                f"({min(ours_t):.2f}-{max(ours_t):.2f})")
        if fai_t:
            f = float(np.median(fai_t))
            per_run = [a / b for a, b in zip(ours_t, fai_t, strict=True)]
            line += (f", pyFAI {f:.2f} s ({min(fai_t):.2f}-{max(fai_t):.2f}), ratio ours / "
                     f"pyFAI {o / f:.2f}; per run (neighbouring jobs) "
                     f"{', '.join(f'{x:.2f}' for x in per_run)} (goal <= 0.4)")
            record["results"].append({"row": "job", "ours_s": o, "pyfai_s": f, "ratio": o / f,
                                      "ours_runs": ours_t, "pyfai_runs": fai_t,
                                      "ratio_runs": per_run})
        print(line)

    def partition_and_iq(image):
        qm_ = geometry_partition(shape, _geometry(geom), mask, PartitionGrid(1, args.bins))
        return qm_, saxs_1d(image, qm_, backend=get_backend("numpy"))

    qm, _ = partition_and_iq(img)
    rng0 = np.random.default_rng(2)
    new_files = [img + rng0.random() for _ in range(3)]
    kk = iter(range(10**9))
    warm = median_time(lambda: partition_and_iq(new_files[next(kk) % 3]), args.reps)
    print(f"  warm: a new image with the same geometry (partition from the cache, one "
          f"bincount): {warm * 1e3:.1f} ms")
    record["results"].append({"row": "warm_same_geometry", "ours_s": warm})
    ours = {}
    for b in [x for x in args.backends.split(",") if x]:
        be = get_backend(b)
        t = time.perf_counter()
        binner = StaticBinner(qm.static_roi_map, qm.n_static, qm.mask, backend=be)
        iq = binner.mean(img)
        first = time.perf_counter() - t
        rng = np.random.default_rng(1)
        others = [img + rng.random() for _ in range(3)]  # new images, same partition
        k = iter(range(10**9))
        def one_image(binner=binner, others=others, k=k):
            return binner.mean(others[next(k) % 3])

        rep = median_time(one_image, args.reps)
        ours[b] = {"backend": b, "first_s": first, "median_s": rep, "iq": iq}
        record["results"].append({"tool": "ours", "backend": b, "first_s": first, "median_s": rep})
        print(f"  ours/{b:6s} first call {first * 1e3:8.1f} ms, then {rep * 1e3:7.2f} ms per image")
    if not PYFAI.exists():
        print(f"  pyFAI: skipped (no {PYFAI.relative_to(REPO)}; see reference-tools.md)")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            npz = Path(tmp) / "in.npz"
            np.savez(npz, img=img, mask=mask)
            spec = {"npz": str(npz), "geom": geom, "bins": qm.n_static, "qmin": qmin, "qmax": qmax,
                    "reps": args.reps, "out": str(Path(tmp) / "iq.npy")}
            p = subprocess.run([str(PYFAI), __file__, "--pyfai-worker", json.dumps(spec)],
                               capture_output=True, text=True)
            if p.returncode != 0:
                print(f"  pyFAI failed:\n{p.stderr[-1500:]}")
            else:
                r = json.loads(p.stdout.strip().splitlines()[-1])
                ref = np.load(spec["out"])
                print(f"  pyFAI {r['version']}: first call {r['first_s'] * 1e3:8.1f} ms, then "
                      f"{r['median_s'] * 1e3:7.2f} ms per image")
                for b, o in ours.items():
                    ok = np.isfinite(o["iq"]) & (ref > 0)
                    rel = np.abs(o["iq"][ok] / ref[ok] - 1)
                    ratio = r["median_s"] / o["median_s"]
                    print(f"  ours/{b} vs pyFAI: {ratio:.1f}x faster per image (warm ours with "
                          f"the cached partition: {r['median_s'] / warm:.1f}x); I(q) relative "
                          f"difference median {np.median(rel):.1e}, max {rel.max():.1e} "
                          "(bin-edge pixels)")
                    record["results"].append({**r, "ratio_vs_" + b: ratio,
                                              "rel_diff_median_" + b: float(np.median(rel)),
                                              "rel_diff_max_" + b: float(rel.max())})
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
