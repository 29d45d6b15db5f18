"""D/truth from the bin centres and from each bin's effective q (issue 48).

    PYTHONPATH=. python benchmarks/diffusion_qeff.py [DEMO_DIR] [--seeds 10] [--spec NAME]

1. The clean Brownian demo files (A01-A03, D01, F01-F03; made in DEMO_DIR, or a
   temporary folder, with ``write_demo`` when missing): each file is fitted by the app's
   fit job (``xpcsviewer fit``), and D/truth is printed twice: with D fitted against
   the bin centres (as before issue 48) and against the effective q the job now uses
   (:mod:`xpcsviewer.compute.effective_q`). Both use the same g2 fits; only the q of
   the power law differs.
2. ``--seeds`` re-simulations of one spec (default F01) with seeds 1..N: mean D/truth
   ± its standard error (sd / sqrt(N)) both ways.

Run from the repository root with ``PYTHONPATH=.`` so that this checkout is imported.
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
from pathlib import Path

import numpy as np

CLEAN = ("A01_silica_R100nm_water", "A02_silica_R250nm_water", "A03_silica_R500nm_water",
         "D01_silica_R250nm_both", "F01_repeat_R250nm", "F02_repeat_R250nm",
         "F03_repeat_R250nm")


def _arr(v: list) -> np.ndarray:
    return np.array([np.nan if x is None else x for x in v], dtype=np.float64)


def ratios(path: Path) -> tuple[float, float, str]:
    """(D/truth from the centres, D/truth from the effective q, which q) of one file."""
    import h5py

    from xpcsviewer.fitting import diffusion_verdict
    from xpcsviewer.jobs.fit import FitOptions, fit_files

    with h5py.File(path, "r", locking=False) as f:
        d_true = float(f["entry/sample/D"][()])
    (out,) = fit_files(FitOptions(), [{"path": str(path), "shown": path.name}])
    if not out.ok:
        raise RuntimeError(out.error)
    r = out.value
    conv = np.array([s == "converged" for s in r["status"]])
    tau = np.where(conv, _arr(r["tau_mean"]["value"]), np.nan)
    err = np.where(conv, _arr(r["tau_mean"]["error"]), np.nan)
    centre = diffusion_verdict(_arr(r["q"]), tau, err)
    d_eff = r["diffusion"]["D"]
    return (centre.D / d_true, np.nan if d_eff is None else d_eff / d_true,
            r["diffusion"]["q"])


def demo_files(folder: Path) -> list[Path]:
    from xpcsviewer.synthetic.demo import write_demo

    write_demo(folder, names=list(CLEAN), workers=1)
    return [folder / f"{n}_results.hdf" for n in CLEAN]


def resimulate(name: str, seeds: int, folder: Path) -> list[tuple[float, float, str]]:
    from xpcsviewer.io.results.writer import write_result
    from xpcsviewer.synthetic.demo_specs import DEMO_SPECS
    from xpcsviewer.synthetic.simulated import simulate_result

    spec = copy.deepcopy(next(s for s in DEMO_SPECS if s["name"] == name))
    out = []
    for seed in range(1, seeds + 1):
        made = simulate_result(spec, seed=seed)
        p = folder / f"{name}_seed{seed}_results.hdf"
        made.result.path = p
        write_result(p, made.result, saxs_2d=made.saxs_2d, c2_maps=made.c2_maps)
        out.append(ratios(p))
        print(f"  seed {seed}: centre {out[-1][0]:.4f}  effective {out[-1][1]:.4f}",
              flush=True)
    return out


def _summary(what: str, rows: list[tuple[float, float, str]]) -> None:
    a = np.array([[r[0], r[1]] for r in rows])
    n = len(rows)
    m, se = np.nanmean(a, 0), np.nanstd(a, 0, ddof=1) / np.sqrt(n)
    print(f"{what}: mean D/truth, centre {m[0]:.4f} ± {se[0]:.4f}, "
          f"effective q {m[1]:.4f} ± {se[1]:.4f} (n = {n}, ± standard error)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("demo_dir", type=Path, nargs="?")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--spec", default="F01_repeat_R250nm")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.demo_dir or Path(tmp) / "demo"
        rows = []
        print("file | D/truth (centre) | D/truth (effective q) | q used")
        for p in demo_files(folder):
            rows.append(ratios(p))
            print(f"{p.name[:3]} | {rows[-1][0]:.4f} | {rows[-1][1]:.4f} | {rows[-1][2]}",
                  flush=True)
        _summary("demo A01-A03, D01, F01-F03", rows)
        if args.seeds > 0:
            print(f"re-simulations of {args.spec}, seeds 1..{args.seeds}:")
            _summary(args.spec, resimulate(args.spec, args.seeds, Path(tmp)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
