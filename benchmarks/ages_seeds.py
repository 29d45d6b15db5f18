"""The ages of the demo's two-time files over seeds, against their truth (issue 48).

    python benchmarks/ages_seeds.py [--seeds 20] [--first 0] [--windows 5] [--cache DIR]

For each seed the demo's C01 (ageing gel, tau(t_w) = tau0 (1 + t_w / ageing_time)) and
C02 (the same sample, stationary) are simulated as the demo makes them (speckle frames
through our two-time correlator, with the 16 pixel groups' maps) and run through the
ages job (:func:`xpcsviewer.jobs.ages.analyse_ages`). Printed per file:

- the pull (tau - truth) / stated error of every ``converged`` tau (both ways, every
  window and bin): its sd pooled and per (way, window) (1 for right errors; goal
  0.8-1.25), and the worst |pull| (goal: none beyond 4, about 1 in 20,000 with right
  errors);
- per bin, the linear law's slope: how many seeds' 95 % interval covers the true slope
  (goal >= 18 of 20) and the mean slope over the seeds with its standard error against
  the truth (goal: within 2 standard errors).

``--cache DIR`` keeps each seed's numbers (npz) so a rerun reads them back. Run on
demand (about 8 s a file on one core), not in CI.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

# the tree this script is in, not an installed copy
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FILES = ("C01", "C02")


def _spec(name: str) -> dict:
    from xpcsviewer.synthetic.demo_specs import DEMO_SPECS

    return next(s for s in DEMO_SPECS if s["name"].startswith(name))


def run_seed(name: str, seed: int, windows: int) -> dict[str, np.ndarray]:
    """One demo file's ages: the numbers the summary reads."""
    from xpcsviewer.compute.ages.age_lag import from_full_maps
    from xpcsviewer.jobs.ages import analyse_ages
    from xpcsviewer.synthetic.results import twotime_truth
    from xpcsviewer.synthetic.simulated import simulate_result

    spec = _spec(name)
    cr = simulate_result(spec, seed=seed)
    res = cr.result
    # stored as upper triangles: the full map is read from those
    maps = [np.triu(m) + np.triu(m, 1).T for m in (np.asarray(x, np.float64)
                                                     for x in cr.c2_maps)]
    amap = from_full_maps(maps, res.twotime.processed_bins, res.twotime.t0)
    out = analyse_ages(amap, n_windows=windows, q=res.qmap.dynamic_q,
                       phi=res.qmap.dynamic_phi, groups=cr.twotime_groups)
    truth = twotime_truth(spec, res.qmap, amap.bins)
    f = out.fits
    lin = f.laws["linear"]
    return {
        "tau": f.tau, "tau_err": f.tau_err, "t_w": f.t_w,
        "status": np.asarray(f.status, dtype=str),
        "slope": np.array([lf.value["a"] for lf in lin]),
        "slope_err": np.array([lf.error["a"] for lf in lin]),
        "slope_lo": np.array([lf.interval["a"][0] for lf in lin]),
        "slope_hi": np.array([lf.interval["a"][1] for lf in lin]),
        "tau0": np.asarray(truth["tau0"], float),
        "ageing_time": np.array(float(truth["ageing_time"])),
        "true_slope": np.asarray(truth["ageing_slope"], float),
        "bins": np.asarray(out.cuts.bins),
        "widths": np.asarray(out.cuts.windows.widths, float),
    }


def load_or_run(name: str, seed: int, windows: int, cache: Path | None) -> dict:
    path = None if cache is None else cache / f"{name}_w{windows}_s{seed}.npz"
    if path is not None and path.exists():
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    rec = run_seed(name, seed, windows)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, **rec)
    return rec


def pulls(rec: dict) -> np.ndarray:
    """(2, W, B) (tau - truth) / error of the converged taus; NaN elsewhere."""
    truth = rec["tau0"][None, None, :] * (1 + rec["t_w"] / float(rec["ageing_time"]))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = (rec["tau"] - truth) / rec["tau_err"]
    return np.where(rec["status"] == "converged", p, np.nan)


def summary(name: str, recs: list[dict]) -> list[str]:
    n = len(recs)
    pc = np.array([pulls(r) for r in recs])  # (S, 2, W, B)
    fin = np.isfinite(pc)
    lines = [f"{name}: {n} seeds"]
    if fin.any():
        worst = np.nanmax(np.abs(pc))
        lines.append(f"  converged tau: {int(fin.sum())}, pull sd {np.std(pc[fin]):.2f}, "
                     f"worst |pull| {worst:.1f}, beyond 4 sigma {int((np.abs(pc[fin]) > 4).sum())}")
        for way, wname in enumerate(("age", "t1")):
            cells = []
            for wi in range(pc.shape[2]):
                x = pc[:, way, wi][np.isfinite(pc[:, way, wi])]
                cells.append(f"{np.std(x):.2f} ({x.size})" if x.size > 2 else f"- ({x.size})")
            lines.append(f"  pull sd by window, {wname:>3} cuts: " + "  ".join(cells))
    slope = np.array([r["slope"] for r in recs])
    lo, hi = np.array([r["slope_lo"] for r in recs]), np.array([r["slope_hi"] for r in recs])
    err = np.array([r["slope_err"] for r in recs])
    true = recs[0]["true_slope"]
    for j, b in enumerate(recs[0]["bins"]):
        ok = np.isfinite(slope[:, j])
        k = int(ok.sum())
        if k == 0:
            lines.append(f"  bin {b}: no law in any seed")
            continue
        cover = int(((lo[ok, j] <= true[j]) & (true[j] <= hi[ok, j])).sum())
        m, se = slope[ok, j].mean(), slope[ok, j].std(ddof=1) / np.sqrt(k) if k > 1 else np.nan
        lines.append(f"  bin {b}: slope 95 % covers {true[j]:.4g} in {cover}/{k} laws; mean "
                     f"{m:.4g} +- {se:.2g} (SE; {(m - true[j]) / se:+.1f} SE), scatter "
                     f"{slope[ok, j].std(ddof=1):.3g}, stated error (median) "
                     f"{np.median(err[ok, j]):.3g}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first", type=int, default=0, help="first seed")
    ap.add_argument("--windows", type=int, default=5)
    ap.add_argument("--cache", type=Path, default=None,
                    help="keep each seed's numbers here (and read them back)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    for name in FILES:
        recs = []
        for seed in range(args.first, args.first + args.seeds):
            recs.append(load_or_run(name, seed, args.windows, args.cache))
            print(f"{name} seed {seed} done ({time.perf_counter() - t0:.0f} s)",
                  file=sys.stderr)
        print("\n".join(summary(name, recs)))
    print(f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
