"""D/truth of the clean Brownian demo files: does fitting the demo recover its truth?

    python benchmarks/demo_truth.py DEMO_DIR [--model auto] [--bins] [--all]

Fits each file's multi-tau g2 with the app's fit job (``xpcsviewer fit``:
:func:`xpcsviewer.jobs.fit.fit_files`) and prints, per file, D ± D_err from
``diffusion_from_fit``, the true D written under ``/entry/sample/D``, their ratio and
pull (D - truth) / D_err; then, over the converged bins, tau q^2 D_true (1 for an
unbiased fit; tau is the mean relaxation time the D fit uses) and the count of bins
whose pull (tau - tau_true) / sigma_tau is beyond 2. ``--bins`` lists every converged
bin (q, tau q^2 D_true, pull). By default only the clean Brownian files (model
``brownian``, no defect, not photon-sparse) are tabulated; ``--all`` adds the other
files whose truth states a D (the photon-sparse S files, G01's defect).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import h5py
import numpy as np


def _truth(path: Path) -> dict[str, object]:
    with h5py.File(path, "r", locking=False) as f:
        smp = f.get("entry/sample")
        if smp is None:
            return {}
        out = {}
        for k in ("D", "model", "defect"):
            if k in smp:
                v = smp[k][()]
                out[k] = v.decode() if isinstance(v, bytes) else v
        out["sparse"] = "xpcs/demo/raw_files" in f
        return out


def _clean(t: dict[str, object]) -> bool:
    return t.get("model") == "brownian" and "defect" not in t and not t.get("sparse")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("demo_dir", type=Path)
    ap.add_argument("--model", default="auto")
    ap.add_argument("--bins", action="store_true", help="list every converged bin")
    ap.add_argument("--all", action="store_true", help="also the other files with a true D")
    args = ap.parse_args(argv)

    from xpcsviewer.jobs.fit import FitOptions, fit_files

    files = sorted(p for p in args.demo_dir.glob("*_results.hdf"))
    picked = []
    for p in files:
        t = _truth(p)
        if "D" in t and t.get("model") == "brownian" and (args.all or _clean(t)):
            picked.append((p, t))
    if not picked:
        print(f"no Brownian demo files with a true D in {args.demo_dir}", file=sys.stderr)
        return 1
    outs = fit_files(FitOptions(model=args.model),
                     [{"path": str(p), "shown": p.name} for p, _ in picked])
    print(f"{'file':<42} {'D (A^2/s)':>11} {'D_err':>10} {'truth':>11} {'ratio':>6} "
          f"{'pull':>6}  {'conv':>4} {'>2sig':>5}  {'tau q2 D (mean)':>15}")
    n_conv = n_off = 0
    ratios, rows = [], []
    for (p, t), o in zip(picked, outs, strict=True):
        if not o.ok:
            print(f"{p.name:<42} {o.error}")
            continue
        rec = o.value
        d_true = float(t["D"])
        q = np.asarray(rec["q"], float)
        tm = np.array([np.nan if v is None else v for v in rec["tau_mean"]["value"]], float)
        te = np.array([np.nan if v is None else v for v in rec["tau_mean"]["error"]], float)
        conv = np.array([s == "converged" for s in rec["status"]]) & np.isfinite(tm) & (te > 0)
        tau_true = 1.0 / (d_true * q**2)
        x = tm * q**2 * d_true
        pull = (tm - tau_true) / te
        off = conv & (np.abs(pull) > 2)
        n_conv += int(conv.sum())
        n_off += int(off.sum())
        dif = rec["diffusion"]
        D, De = dif.get("D"), dif.get("D_err")
        if D is not None and De:
            ratio, dpull = D / d_true, (D - d_true) / De
            ratios.append(ratio)
            shown = f"{D:11.4g} {De:10.3g} {d_true:11.4g} {ratio:6.3f} {dpull:6.2f}"
        else:
            shown = f"{'-':>11} {'-':>10} {d_true:11.4g} {'-':>6} {'-':>6}"
        xm = float(np.mean(x[conv])) if conv.any() else float("nan")
        print(f"{p.name:<42} {shown}  {int(conv.sum()):4d} {int(off.sum()):5d}  {xm:15.3f}")
        for i in np.flatnonzero(conv):
            rows.append((p.name, i + 1, q[i], x[i], pull[i], rec["models"][i]))
    if ratios:
        print(f"D/truth: mean {np.mean(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f} "
              f"over {len(ratios)} files; converged bins {n_conv}, > 2 sigma off {n_off}")
    if args.bins:
        print(f"\n{'file':<42} {'bin':>3} {'q (1/A)':>9} {'tau q2 D':>8} {'pull':>6} model")
        for name, b, qq, xx, pp, m in rows:
            flag = "  <-- > 2 sigma" if abs(pp) > 2 else ""
            print(f"{name:<42} {b:3d} {qq:9.5f} {xx:8.3f} {pp:6.2f} {m}{flag}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
