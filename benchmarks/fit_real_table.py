"""The real-file fit table (issue 23's, again for issue 32): statuses per file, and how far a
converged tau moves when the fit window ends earlier.

For each result file: ``xpcsviewer fit`` (auto model) over the whole window and over a
window ending at ``--short`` s (default 0.98 s, the review's choice for the 1.31 s long
8-ID-I runs). A bin "moves" when it is converged in both windows and the whole-window
tau lies outside the short window's 2-sigma profile interval.

Usage: ``python benchmarks/fit_real_table.py [FILES...] [--short 0.98] [--json OUT]``
(default files: ../shared/data/real/**/*_results.hdf).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

STATUSES = ("converged", "unresolved", "limit", "at_bound", "misfit", "poor_fit", "no_decay",
            "failed")


def fit(files: list[str], t_range: tuple[float, float] | None, out: Path) -> list[dict]:
    cmd = [sys.executable, "-m", "xpcsviewer", "fit", *files, "--quiet", "-o", str(out)]
    if t_range is not None:
        cmd += ["--t-range", str(t_range[0]), str(t_range[1])]
    subprocess.run(cmd, check=False, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    return json.loads(out.read_text())["files"]


def tau_of(rec: dict, b: int) -> tuple[str, float, float, float]:
    """(name, value, lo2, hi2) of bin b's headline time."""
    name = "tau1" if rec["models"][b] == "double" else "tau"
    e = rec[name]
    return name, e["value"][b], e.get("lo2", [None] * 99)[b], e.get("hi2", [None] * 99)[b]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*")
    ap.add_argument("--short", type=float, default=0.98)
    ap.add_argument("--json")
    a = ap.parse_args()
    here = Path(__file__).resolve().parents[1]
    files = a.files or sorted(glob.glob(str(here.parent / "shared/data/real/**/*_results.hdf"),
                                        recursive=True))
    if not files:
        print("no files (../shared absent?)")
        return 0
    with tempfile.TemporaryDirectory() as d:
        full = fit(files, None, Path(d) / "full.json")
        short = fit(files, (0.0, a.short), Path(d) / "short.json")
    rows, total = [], Counter()
    moved_all = []
    print(f"{'file':44s} " + " ".join(f"{s[:9]:>9s}" for s in STATUSES) + "  moved/both  up")
    for rf, rs in zip(full, short, strict=True):
        c = Counter()
        for b, st in enumerate(rf["status"]):
            lim = rf["tau_lower_limit"][b] is not None or rf["tau_upper_limit"][b] is not None
            c["limit" if st == "unresolved" and lim else st] += 1
        both = moved = up = 0
        for b in range(len(rf["status"])):
            if rf["status"][b] == "converged" and rs["status"][b] == "converged":
                both += 1
                _, v, _, _ = tau_of(rf, b)
                _, vs, lo2, hi2 = tau_of(rs, b)
                if v is None or vs is None:
                    continue
                out = (lo2 is not None and v < lo2) or (hi2 is not None and v > hi2)
                if out:
                    moved += 1
                    moved_all.append((Path(rf["path"]).name, rf["bins"][b], vs, v))
                up += v > vs
        name = Path(rf["path"]).name.replace("_results.hdf", "")[-44:]
        print(f"{name:44s} " + " ".join(f"{c[s]:9d}" for s in STATUSES)
              + f"  {moved:2d}/{both:<3d}     {up:2d}")
        total.update(c)
        total["both"] += both
        total["moved"] += moved
        total["up"] += up
        rows.append({"file": rf["path"], **{s: c[s] for s in STATUSES}, "both": both,
                     "moved": moved, "up": up})
    print(f"{'all':44s} " + " ".join(f"{total[s]:9d}" for s in STATUSES)
          + f"  {total['moved']:2d}/{total['both']:<3d}     {total['up']:2d}")
    for f, b, vs, v in moved_all:
        print(f"  moved: {f} bin {b}: {vs:.3g} s (short) -> {v:.3g} s (whole window)")
    if a.json:
        Path(a.json).write_text(json.dumps({"rows": rows, "moved": moved_all}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
