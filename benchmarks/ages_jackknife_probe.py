"""Probe: do errors from independent pixel groups make the age cuts' tau errors right?

    python benchmarks/ages_jackknife_probe.py [--seeds 20] [--groups 16] [--tile 8]

The demo gel's converged tau(t_w) misses its truth by 1.1-2.4 stated errors (sd of the
pull) late in the run, because a cut's g2 is correlated across lags and the fit treats
the lags as independent (docs/ages.md, section 8). This probe tests the proposed fix
before it is built into the correlator: the C01 frames are simulated as the demo
simulates them, the detector is cut into tiles (``--tile`` pixels, larger than a
speckle) dealt at random to ``--groups`` groups, and the two-time map of every bin is
computed for the whole bin and for each group's pixels (our ``twotime_map``). The cuts
of the whole map are fitted as ``xpcsviewer ages`` fits them; each group's cuts give
tau through the fit's linearisation (tau_g = tau + h . (g2_g - g2)), and the spread of
those over the groups (weighted batch means) is tau's error. Printed per window and
bin: the pull sd with the fit's error and with the groups' error (1 for right errors),
and the same for the linear law's slope.

Nothing here is in the product yet: the correlator writes no group maps. Pure CPU,
about 10 s a seed.
"""

from __future__ import annotations

import argparse
import time
from types import SimpleNamespace

import numpy as np


def _frames(spec: dict, seed: int) -> tuple[np.ndarray, object]:
    """(N, H, W) float frames of a demo two-time spec, as simulate_result makes them."""
    from xpcsviewer.synthetic.analytic import sphere_form_factor
    from xpcsviewer.synthetic.results import spec_qmap
    from xpcsviewer.synthetic.simulated import sample_truth
    from xpcsviewer.synthetic.speckle import iter_frames

    qm, q, phi = spec_qmap(spec)
    acq, smp = spec["acquisition"], spec["sample"]
    truth = sample_truth(spec)
    ta = smp.get("ageing_time_s")
    ageing = (lambda t, ta=float(ta): 1.0 / (1.0 + t / ta)) if ta else None
    rate = float(acq["rate"]) * (sphere_form_factor(q, truth["radius"][0])
                                 + float(acq.get("background", 0.02)))
    n = int(spec.get("twotime", {}).get("n_frames", acq["n_frames"]))
    chunks = iter_frames(q, n, float(acq["frame_time"]), truth["D"][0],
                         beta=1.0 / truth["speckle_modes"][0], rate=rate, phi_map=phi,
                         ageing=ageing, mask=qm.mask, speckle_px=int(acq.get("speckle_px", 2)),
                         seed=seed, chunk=256)
    return np.concatenate([np.asarray(c, np.float64) for c in chunks]), qm


def _maps(frames: np.ndarray, qm, bins: list[int], groups: np.ndarray, k: int):
    """Per bin: the whole map and the K group maps (full symmetric)."""
    from xpcsviewer.compute.twotime.correlator import twotime_map

    dyn = np.asarray(qm.dynamic_roi_map)
    sta = np.asarray(qm.static_roi_map)
    flat = frames.reshape(frames.shape[0], -1)
    whole, parts, weights = [], [], []
    for b in bins:
        pix = np.flatnonzero((dyn.ravel() == b) & np.asarray(qm.mask).ravel())
        gid = sta.ravel()[pix]
        whole.append(twotime_map(flat[:, pix], gid, full=True))
        per, w = [], []
        for g in range(k):
            sub = pix[groups.ravel()[pix] == g]
            per.append(twotime_map(flat[:, sub], sta.ravel()[sub], full=True)
                       if sub.size else None)
            w.append(sub.size)
        parts.append(per)
        weights.append(np.asarray(w, np.float64) / max(1, sum(w)))
    return whole, parts, weights


def _batch_sd(x: np.ndarray, w: np.ndarray) -> float:
    """Standard error of sum_g w_g x_g from the groups' spread (weighted batch means)."""
    ok = np.isfinite(x)
    if ok.sum() < 3:
        return np.nan
    x, w = x[ok], w[ok] / w[ok].sum()
    m = float(np.sum(w * x))
    k = x.size
    return float(np.sqrt(np.sum(w * w * (x - m) ** 2) * k / (k - 1)))


def main(argv: list[str] | None = None) -> int:
    from xpcsviewer.compute.ages.age_lag import from_full_maps
    from xpcsviewer.compute.ages.analysis import age_cuts
    from xpcsviewer.fitting.ageing_law import fit_law
    from xpcsviewer.jobs.ages import analyse_ages
    from xpcsviewer.synthetic.demo_specs import DEMO_SPECS
    from xpcsviewer.synthetic.results import spec_qmap, twotime_truth

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--groups", type=int, default=16)
    ap.add_argument("--tile", type=int, default=8)
    ap.add_argument("--windows", type=int, default=5)
    args = ap.parse_args(argv)
    spec = next(s for s in DEMO_SPECS if s["name"].startswith("C01"))
    bins = list(spec["twotime"]["bins"])
    qm0, _, _ = spec_qmap(spec)
    truth = twotime_truth(spec, qm0, np.asarray(bins))
    dt = float(spec["acquisition"]["frame_time"])
    t0 = time.perf_counter()
    pull_fit, pull_grp, slope_fit, slope_grp = [], [], [], []
    pull_prod: list[np.ndarray] = []
    slope_prod: list[tuple[int, float]] = []
    for seed in range(args.seeds):
        frames, qm = _frames(spec, seed)
        h, w = frames.shape[1:]
        rng = np.random.default_rng(1000 + seed)
        tiles = rng.integers(0, args.groups, size=(-(-h // args.tile), -(-w // args.tile)))
        groups = np.kron(tiles, np.ones((args.tile, args.tile), np.int64))[:h, :w]
        whole, parts, weights = _maps(frames, qm, bins, groups, args.groups)
        amap = from_full_maps(whole, bins, dt)
        out = analyse_ages(amap, n_windows=args.windows, model="auto")
        f, cuts = out.fits, out.cuts
        # the product's path (jobs.ages with the groups) beside this probe's own sums
        nan = np.full_like(whole[0], np.nan)
        grp = SimpleNamespace(bins=bins, pixels=np.array(weights).T,
                              maps=[np.stack([m if m is not None else nan for m in per])
                                    for per in parts])
        prod = analyse_ages(amap, n_windows=args.windows, model="auto", groups=grp).fits
        conv0 = f.status[0] == "converged"
        pull_prod.append(np.where(conv0, (prod.tau[0] - truth["tau0"][None, :] * (
            1 + prod.t_w[0] / truth["ageing_time"])) / prod.tau_err[0], np.nan))
        slope_prod.extend((b, (prod.laws["linear"][b].value["a"] - truth["ageing_slope"][b])
                           / prod.laws["linear"][b].error["a"]) for b in range(len(bins)))
        # per group and bin (a group may hold no pixel of a small bin)
        gcuts = [[age_cuts(from_full_maps([parts[j][g]], [bins[j]], dt), cuts.windows)
                  if parts[j][g] is not None else None for j in range(len(bins))]
                 for g in range(args.groups)]
        tau_true = truth["tau0"][None, :] * (1 + f.t_w[0] / truth["ageing_time"])
        nw, nb = f.tau.shape[1:]
        sd_g = np.full((nw, nb), np.nan)
        tau_g = np.full((args.groups, nw, nb), np.nan)
        for wi in range(nw):
            for b in range(nb):
                t_s, beta = f.tau[0, wi, b], f.contrast[0, wi, b]
                ok = cuts.valid[0, wi, b]
                if not (np.isfinite(t_s) and ok.sum() > 3 and f.status[0, wi, b] == "converged"):
                    continue
                x, e = cuts.tau[ok], cuts.g2_err[0, wi, b][ok]
                ex = np.exp(-2 * x / t_s)
                bb = beta if np.isfinite(beta) else 1.0
                jac = np.stack([ex, 2 * bb * x / t_s**2 * ex, np.ones_like(x)], axis=1)
                wj = jac / e[:, None] ** 2
                hvec = np.linalg.solve(jac.T @ wj, wj.T)[1]
                g_all = cuts.g2[0, wi, b][ok]
                xs = np.array([np.nan if gc[b] is None else
                               t_s + float(np.sum(hvec * (gc[b].g2[0, wi, 0][ok] - g_all)))
                               for gc in gcuts])
                tau_g[:, wi, b] = xs
                sd_g[wi, b] = _batch_sd(xs, weights[b])
        pull_fit.append((f.tau[0] - tau_true) / f.tau_err[0])
        pull_grp.append((f.tau[0] - tau_true) / sd_g)
        conv = f.status[0] == "converged"
        # the law's slope: its own error, and the groups' spread of the slopes
        for b in range(nb):
            lf = f.laws["linear"][b]
            a_true = truth["ageing_slope"][b]
            use = conv[:, b]
            sl = [fit_law(f.t_w[0, use, b], tau_g[g, use, b], f.tau_err[0, use, b]).value["a"]
                  for g in range(args.groups)] if use.sum() >= 3 else []
            sg = _batch_sd(np.asarray(sl, float), weights[b]) if sl else np.nan
            slope_fit.append((b, (lf.value["a"] - a_true) / lf.error["a"]))
            slope_grp.append((b, (lf.value["a"] - a_true) / sg))
        print(f"seed {seed}: {time.perf_counter() - t0:.0f} s", flush=True)
    pf, pg = np.array(pull_fit), np.array(pull_grp)
    np.set_printoptions(precision=2, suppress=True, linewidth=150)
    with np.errstate(invalid="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            print(f"\n{args.seeds} seeds, {args.groups} groups of {args.tile}-px tiles; "
                  f"{time.perf_counter() - t0:.0f} s")
            print("converged tau: pull sd with the fit's error (rows windows, columns bins)")
            print(np.nanstd(np.where(np.isfinite(pg), pf, np.nan), axis=0))
            print("converged tau: pull sd with the groups' error")
            print(np.nanstd(pg, axis=0))
            print("within 2 sigma (fit's error | groups' error), of the converged:")
            print(np.sum(np.abs(np.where(np.isfinite(pg), pf, np.nan)) <= 2, axis=0), "|",
                  np.sum(np.abs(pg) <= 2, axis=0), "of", np.sum(np.isfinite(pg), axis=0))
            print("the product (analyse_ages with groups): pull sd of the converged tau")
            print(np.nanstd(np.array(pull_prod), axis=0))
            for name, rows in (("fit's", slope_fit), ("groups'", slope_grp),
                               ("product's", slope_prod)):
                per = {b: [p for bb, p in rows if bb == b and np.isfinite(p)]
                       for b in range(len(bins))}
                print(f"law slope pull sd, {name} error: "
                      + ", ".join(f"bin {bins[b]} {np.std(v):.2f} (n={len(v)})"
                                  for b, v in per.items() if v))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
