"""Where does the accelerator start to beat the CPU? Measures the routing threshold.

Two representative kernels, each timed warm (after compilation) on the JAX CPU
device and on the first accelerator, across work sizes; the time includes the
host->device transfer of the inputs and the device->host transfer of the result,
because that is what a job pays:

* ``g2_model``: a batched g2 model evaluation, work = n_curves x n_points;
* ``segment_sum``: a detector image summed into q bins, work = n_pixels.

The recommended threshold is the smallest work score from which the accelerator is
faster at every larger size, over both kernels. Without an accelerator the script
says so, still prints the CPU timings, and exits 0.

Usage: ``python benchmarks/device_crossover.py [--json OUT.json] [--repeats N]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

os.environ.setdefault("XPCS_JAX_CACHE_DIR", "off")

from xpcsviewer.backends import ensure_numpy, get_backend, get_device_manager


def _time(fn, repeats: int) -> float:
    fn()  # warm: compile and first transfer
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _g2_case(jb, size: int, device):
    n_points = 64
    n_curves = max(1, size // n_points)
    rng = np.random.default_rng(0)
    tau = np.logspace(-5, 1, n_points)
    params = rng.uniform(0.1, 1.0, size=(n_curves, 3))
    xp = jb.xp

    @jb.jit
    def model(p, t):
        return 1.0 + p[:, 0:1] * xp.exp(-2.0 * t[None, :] / p[:, 1:2]) ** p[:, 2:3]

    def run():
        return ensure_numpy(model(jb.asarray(params, device=device),
                                  jb.asarray(tau, device=device)))

    return run, n_curves * n_points


def _segment_case(jb, size: int, device):
    side = max(8, int(np.sqrt(size)))
    rng = np.random.default_rng(1)
    image = rng.poisson(2.0, size=(side, side)).astype(np.float64).ravel()
    radius = np.hypot(*np.meshgrid(np.arange(side), np.arange(side))).ravel()
    labels = (radius % 360).astype(np.int64)
    import jax

    @jax.jit
    def reduce(img, lab):
        return jb.segment_sum(img, lab, 360)

    def run():
        return ensure_numpy(reduce(jb.asarray(image, device=device),
                                   jb.asarray(labels, device=device)))

    return run, side * side


CASES = {"g2_model": _g2_case, "segment_sum": _segment_case}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=None, help="write the record to this file")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--max-exp", type=int, default=8, help="largest size 10**N (default 8)")
    args = ap.parse_args(argv)

    dm = get_device_manager()
    if dm.backend_name != "jax":
        print("JAX is not in use (NumPy backend); nothing to route. Exiting.")
        return 0
    jb = get_backend("jax")
    import jax

    cpu = dm.cpu_device()
    accels = dm.accelerator_devices()
    sizes = [int(10**e) for e in np.arange(3, args.max_exp + 0.01, 0.5)]
    record = {
        "host": platform.node(),
        "python": sys.version.split()[0],
        "jax": jax.__version__,
        "cpu_count": os.cpu_count(),
        "accelerator": str(accels[0]) if accels else None,
        "rows": [],
    }
    if not accels:
        print("No accelerator visible to JAX: the routing threshold cannot be measured here.")
        print("CPU timings for reference (warm, best of repeats, transfers included):")
        sizes = [s for s in sizes if s <= 10**7]
    print(f"{'kernel':<12} {'work':>12} {'cpu ms':>10} {'accel ms':>10} {'accel/cpu':>10}")
    for name, make in CASES.items():
        for size in sizes:
            run_cpu, work = make(jb, size, cpu)
            t_cpu = _time(run_cpu, args.repeats)
            t_acc = None
            if accels:
                run_acc, _ = make(jb, size, accels[0])
                t_acc = _time(run_acc, args.repeats)
            ratio = (t_acc / t_cpu) if t_acc else None
            record["rows"].append(
                {"kernel": name, "work": work, "cpu_s": t_cpu, "accel_s": t_acc}
            )
            acc_s = f"{1e3 * t_acc:10.3f}" if t_acc else f"{'-':>10}"
            rat_s = f"{ratio:10.2f}" if ratio else f"{'-':>10}"
            print(f"{name:<12} {work:>12,} {1e3 * t_cpu:10.3f} {acc_s} {rat_s}")

    if accels:
        crossover = 0
        for name in CASES:
            rows = sorted((r for r in record["rows"] if r["kernel"] == name),
                          key=lambda r: r["work"])
            first = None
            for i, r in enumerate(rows):
                if all(x["accel_s"] < x["cpu_s"] for x in rows[i:]):
                    first = r["work"]
                    break
            crossover = max(crossover, first if first is not None else rows[-1]["work"] * 10)
        record["recommended_threshold"] = crossover
        print(f"\nRecommended XPCS_DEVICE_THRESHOLD = {crossover:,} "
              f"(current default {dm.threshold:,})")
    else:
        record["recommended_threshold"] = None
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(record, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
