"""Whole jobs per device (issue 31): ours on the CPU, ours as one XLA program, auto, and
the GPU rows where a GPU is present, with compile counts and bytes sent per job.

Run on demand (not a test)::

    .venv/bin/python benchmarks/device_jobs.py                  # W1, W2, W4, W5
    .venv/bin/python benchmarks/device_jobs.py --rows W1 --repeats 3
    .venv/bin/python benchmarks/device_jobs.py --large          # also W1L (512x512x10k)

Workloads (the issue's): W1 multi-tau 256x256 x 10k uint16 frames (36/360 rings), W1L
512x512 x 10k, W2 two-time 128x128 x 4k (8/80 rings), W4 least-squares fit of 100
result files, W5 NUTS of one file (``fit --bayes``).

Every job is a fresh process timed from the outside (start-up and imports included):
``xpcsviewer correlate|fit`` run through ``main()`` in a wrapper that prints, at the
end, the XLA programs lowered/compiled and the bytes sent host to device in that job
(0 when JAX never loaded). Columns:

- ``cpu``: ``--engine compiled`` / ``--device cpu`` (numba/BLAS, JAX-free for correlate);
- ``xla-cpu``: ``--engine xla --device cpu`` (one XLA program per job on the CPU device:
  the GPU engine's proxy);
- ``gpu``: ``--engine xla --device gpu`` (only with a GPU);
- ``auto``: no flags (the route from the machine profile, ``device --calibrate``);
- ``boost-gpu``: boost-corr's GPU multi-tau job (its API on the same .npy, torch on
  ``cuda``) where a GPU and ``.bench-venvs/boost`` are present.

The persistent JAX cache is warm for the repeated runs (one untimed run first) unless
``--cold``; the median of ``--repeats`` is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
OURS = REPO / ".venv" / "bin" / "python"
if not OURS.exists():
    OURS = Path(sys.executable)

WRAP = r"""
import json, sys, time
t0 = time.perf_counter()
from xpcsviewer.cli import main
rc = main(sys.argv[1:])
out = {"rc": rc, "lowered": 0, "compiled": 0, "h2d_bytes": 0, "jax": "jax" in sys.modules}
if "xpcsviewer.backends.jax_backend" in sys.modules:
    from xpcsviewer.backends.jax_backend import compile_counts
    out.update(compile_counts())
from xpcsviewer.backends import get_transfer_stats
out["h2d_bytes"] = get_transfer_stats().host_to_device_bytes
print("JOBSTATS " + json.dumps(out))
"""


def run_job(args: list[str], env: dict | None = None) -> dict:
    t = time.perf_counter()
    got = subprocess.run([str(OURS), "-c", WRAP, *args], capture_output=True, text=True,
                         env=env, timeout=3600)
    dt = time.perf_counter() - t
    line = [s for s in got.stdout.splitlines() if s.startswith("JOBSTATS ")]
    if got.returncode != 0 or not line:
        raise RuntimeError(f"job failed: {' '.join(args)}\n"
                           f"{got.stdout[-2000:]}{got.stderr[-2000:]}")
    out = json.loads(line[0][9:])
    if out["rc"] != 0:
        raise RuntimeError(f"job exit {out['rc']}: {' '.join(args)}\n{got.stderr[-2000:]}")
    out["seconds"] = dt
    return out


def gpu_here() -> bool:
    sys.path.insert(0, str(REPO))
    from xpcsviewer.backends.routing import gpu_present

    return gpu_present()


def medians(rows: list[dict]) -> dict:
    out = dict(rows[-1])
    out["seconds"] = statistics.median(r["seconds"] for r in rows)
    out["spread"] = (min(r["seconds"] for r in rows), max(r["seconds"] for r in rows))
    return out


def make_inputs(tmp: Path, name: str) -> tuple[list[str], float]:
    """The job's arguments (without engine/device flags) and its stored frame bytes."""
    from jobs import write_inputs

    if name in ("W1", "W1L", "W2"):
        size, n, nd, ns, mode = {"W1": (256, 10000, 36, 360, "multitau"),
                                 "W1L": (512, 10000, 36, 360, "multitau"),
                                 "W2": (128, 4000, 8, 80, "twotime")}[name]
        raw, qmap = write_inputs(tmp, size, n, nd, ns)
        return (["correlate", str(raw), "--qmap", str(qmap), "-o", str(tmp / f"{name}.hdf"),
                 "--overwrite", "--quiet", "--mode", mode], float(size * size * n * 2))
    sys.path.insert(0, str(REPO))
    from xpcsviewer.synthetic.demo import DEMO_SPECS, write_demo

    demo = tmp / "demo"
    if not demo.exists():
        first = next(s["name"] for s in DEMO_SPECS if "layout" not in s)
        write_demo(demo, seed=0, names=[first])
    src = sorted(demo.glob("*.hdf"))[0]
    if name == "W5":
        return (["fit", str(src), "--bayes", "--quiet", "--overwrite", "-o",
                 str(tmp / "W5.json")], 0.0)
    files = tmp / "w4"
    files.mkdir(exist_ok=True)
    for i in range(100):
        dst = files / f"f{i:03d}.hdf"
        if not dst.exists():
            shutil.copyfile(src, dst)
    return (["fit", *sorted(str(p) for p in files.glob("*.hdf")), "--quiet", "--overwrite",
             "-o", str(tmp / "W4.json")], 0.0)


def job_arg(cmd: list[str], i: int) -> str:
    return cmd[i]


COLUMNS = {
    "cpu": {"correlate": ["--engine", "compiled"], "fit": ["--device", "cpu"]},
    "xla-cpu": {"correlate": ["--engine", "xla", "--device", "cpu"], "fit": None},
    "gpu": {"correlate": ["--engine", "xla", "--device", "gpu"], "fit": ["--device", "gpu"]},
    "auto": {"correlate": [], "fit": []},
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", nargs="*", default=None, help="W1 W1L W2 W4 W5")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--large", action="store_true", help="include W1L (5 GB of frames)")
    ap.add_argument("--cold", action="store_true", help="no untimed warm-up run")
    ap.add_argument("--json", default=None, help="also write the rows as JSON here")
    args = ap.parse_args()
    rows = args.rows or (["W1", "W1L", "W2", "W4", "W5"] if args.large
                         else ["W1", "W2", "W4", "W5"])
    gpu = gpu_here()
    cols = [c for c in COLUMNS if gpu or c != "gpu"]
    print(f"device_jobs: {os.cpu_count()} CPU cores, GPU {'present' if gpu else 'absent'}; "
          f"repeats {args.repeats}")
    if not gpu:
        print("  the gpu and boost-gpu columns need a GPU machine: run this script there")
    rec = []
    with tempfile.TemporaryDirectory(prefix="device_jobs_") as td:
        tmp = Path(td)
        for name in rows:
            job, nbytes = make_inputs(tmp, name)
            line = {"row": name, "stored_bytes": nbytes}
            for col in cols:
                flags = COLUMNS[col][job[0]]
                if flags is None:
                    continue
                cmd = job + flags
                if not args.cold:
                    run_job(cmd)
                res = medians([run_job(cmd) for _ in range(args.repeats)])
                line[col] = res
                sent = res["h2d_bytes"]
                ratio = f"{sent / nbytes:.3f}x stored" if nbytes and sent else f"{sent} B"
                print(f"  {name:4s} {col:8s} {res['seconds']:8.2f} s  "
                      f"programs {res['compiled']:3d} (from cache {res.get('cache_hits', 0):3d})  "
                      f"sent {ratio}  JAX {'loaded' if res['jax'] else 'not loaded'}",
                      flush=True)
            boost = REPO / ".bench-venvs" / "boost" / "bin" / "python"
            if gpu and name in ("W1", "W1L") and boost.exists():
                from jobs import job, worker_cmd

                spec = {"raw": job_arg(cmd, 1), "qmap": job_arg(cmd, 3), "warm": False,
                        "device": "cuda"}
                t = [job(worker_cmd(boost, "boost-worker", spec))[0]
                     for _ in range(args.repeats)]
                line["boost-gpu"] = {"seconds": statistics.median(t)}
                print(f"  {name:4s} boost-gpu {statistics.median(t):8.2f} s (job)")
            if "cpu" in line and "xla-cpu" in line:
                print(f"  {name:4s} xla-cpu / cpu = "
                      f"{line['xla-cpu']['seconds'] / line['cpu']['seconds']:.2f}")
            if "auto" in line:
                best = min(line[c]["seconds"] for c in ("cpu", "gpu") if c in line)
                print(f"  {name:4s} auto / best device = {line['auto']['seconds'] / best:.2f}")
            rec.append(line)
    if args.json:
        Path(args.json).write_text(json.dumps(rec, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
