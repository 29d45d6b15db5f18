"""Time ``xpcsviewer report`` on 1 file and on a run of N files (issue 36 goals: 1 file
<= 5 s, 50 files <= 60 s on 2 cores; the HTML <= 10 MB).

The run is the demo set's result files repeated under new names (symlinks) up to N,
or (``--folder``) the first N result files of a folder, e.g. a mix of demo and real
files linked under distinct names. Prints wall time, CPU time (this process and its
workers), the load and the sizes::

    python benchmarks/report.py [--demo DIR | --folder DIR] [--files 1 50] [--workers 2] [--pdf]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path


def _cpu() -> float:
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def _set(demo: Path, n: int, into: Path) -> list[Path]:
    src = sorted(p for p in demo.glob("*_results.hdf") if not p.stem.endswith("_G2"))
    out = []
    for k in range(n):
        p = into / f"run{k:03d}_{src[k % len(src)].name}"
        p.symlink_to(src[k % len(src)].resolve())
        out.append(p)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--demo", type=Path, default=None,
                    help="a demo set (default: written to a temporary folder)")
    ap.add_argument("--files", type=int, nargs="+", default=[1, 50])
    ap.add_argument("--folder", type=Path, default=None,
                    help="take the first N *_results.hdf of this folder (sorted) instead")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--pdf", action="store_true", help="also write the PDF")
    a = ap.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    from xpcsviewer.report import write_report

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        demo = a.demo
        if demo is None and a.folder is None:
            from xpcsviewer.synthetic.demo import write_demo

            demo = tmp / "demo"
            write_demo(demo, seed=0)
        print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; workers {a.workers}")
        for n in a.files:
            run = tmp / f"set{n}"
            run.mkdir()
            files = (sorted(a.folder.glob("*_results.hdf"))[:n] if a.folder is not None
                     else _set(demo, n, run))
            c0, t0 = _cpu(), time.perf_counter()
            o = write_report(files, run / "r.html", run / "r.pdf" if a.pdf else None,
                             workers=min(a.workers, n))
            wall, cpu = time.perf_counter() - t0, _cpu() - c0
            print(f"{n:3d} files: {wall:6.1f} s wall, {cpu:6.1f} s CPU "
                  f"({cpu / min(a.workers, max(n, 1)):.1f} s per core), "
                  f"HTML {o.html_bytes / 1e6:.2f} MB"
                  + (f", PDF {o.pdf_pages} pages" if a.pdf else "")
                  + f", load {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
