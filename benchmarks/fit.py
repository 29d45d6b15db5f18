"""g2 fitting speed: our batched solver vs a loop of scipy.optimize.curve_fit, and NUTS.

Problem: all q-bins of ``--files`` files (default 100 files x 36 bins x 60 delays),
single-exponential curves with noise and per-bin relaxation times over three decades.

* ours (JAX): one batched, jitted LM solve for all curves; *cold* is the first call in
  this process (tracing + XLA compilation; the persistent compilation cache is off
  unless ``--cache``), *warm* the best of ``--repeats`` further calls;
* ours (NumPy backend): the same kernel curve by curve (the reference);
* scipy: ``curve_fit`` per curve (trf, bounded, sigma = g2_err), what the existing
  viewers do; its cold time includes importing scipy.optimize.

Also: the agreement between our tau and scipy's, and the NUTS wall time for all bins of
one file (4 chains, 500 warm-up + 1000 draws) with vectorised chains and, in a
subprocess with one XLA host device per chain, parallel chains.

Usage: ``python benchmarks/fit.py [--files N] [--bins N] [--json OUT.json] [--no-nuts]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

if "--cache" not in sys.argv:
    os.environ.setdefault("XPCS_JAX_CACHE_DIR", "off")


def make_problem(n_files: int, n_bins: int, n_t: int, seed: int = 0):
    """(tau (T,), g2 (B, T), err (B, T), true tau (B,))."""
    rng = np.random.default_rng(seed)
    tau = np.geomspace(1e-5, 2.0, n_t)
    b = n_files * n_bins
    taus = np.tile(np.geomspace(1e-4, 1e-1, n_bins), n_files)
    contrast = rng.uniform(0.1, 0.4, b)
    g2 = 1.0 + contrast[:, None] * np.exp(-2.0 * tau[None, :] / taus[:, None])
    err = 0.002 + 0.003 * rng.random((b, n_t))
    return tau, g2 + err * rng.standard_normal(g2.shape), err, taus


def time_ours(tau, g2, err, backend_name: str, repeats: int):
    from xpcsviewer.backends import get_backend
    from xpcsviewer.fitting import fit_g2

    be = get_backend(backend_name)
    t0 = time.perf_counter()
    res = fit_g2(tau, g2, err, model="single", backend=be)
    cold = time.perf_counter() - t0
    warm = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = fit_g2(tau, g2, err, model="single", backend=be)
        warm = min(warm, time.perf_counter() - t0)
    return res, cold, warm


def time_scipy(tau, g2, err, limit: int | None):
    t0 = time.perf_counter()
    from scipy.optimize import curve_fit

    from xpcsviewer.fitting import default_params

    def f(t, c, tt, b):
        return b + c * np.exp(-2.0 * t / tt)

    n = g2.shape[0] if limit is None else min(limit, g2.shape[0])
    out = np.full(n, np.nan)
    for i in range(n):
        s = default_params("single", tau, g2[i])
        p0 = [s["contrast"].value, s["tau"].value, s["baseline"].value]
        lo = [s["contrast"].lower, s["tau"].lower, s["baseline"].lower]
        hi = [s["contrast"].upper, s["tau"].upper, s["baseline"].upper]
        try:
            popt, _ = curve_fit(f, tau, g2[i], p0=p0, sigma=err[i], bounds=(lo, hi))
            out[i] = popt[1]
        except RuntimeError:
            pass
    return out, time.perf_counter() - t0, n


def time_nuts(n_bins: int, chain_method: str, num_chains: int = 4,
              sampler: str = "per_bin") -> dict:
    from xpcsviewer.fitting import fit_g2
    from xpcsviewer.fitting.bayes import fit_g2_bayes
    from xpcsviewer.fitting.spec import SamplerSpec

    tau, g2, err, _ = make_problem(1, n_bins, 60, seed=1)
    init = fit_g2(tau, g2, err)
    nuts = SamplerSpec(num_warmup=500, num_samples=1000, num_chains=num_chains, seed=0,
                       chain_method=chain_method, sampler=sampler)
    t0 = time.perf_counter()
    b = fit_g2_bayes(tau, g2, err, init=init, sampler=nuts)
    wall = time.perf_counter() - t0
    # second run: same shapes, shows what compilation cost
    t0 = time.perf_counter()
    fit_g2_bayes(tau, g2, err, init=init, sampler=nuts.with_(seed=1))
    wall2 = time.perf_counter() - t0
    return {
        "sampler": sampler,
        "mean_tree_steps": b.mean_tree_steps,
        "chain_method": b.chain_method,
        "bins": n_bins,
        "chains": num_chains,
        "wall_s_first": wall,
        "wall_s_second": wall2,
        "converged_fraction": float(np.mean(b.converged)),
        "divergences": b.divergences,
        "min_ess_bulk_tau": float(np.nanmin(b.ess_bulk["tau"])),
        "max_r_hat_tau": float(np.nanmax(b.r_hat["tau"])),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--bins", type=int, default=36)
    ap.add_argument("--delays", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--scipy-limit", type=int, default=None,
                    help="fit only this many curves with scipy and extrapolate")
    ap.add_argument("--no-nuts", action="store_true")
    ap.add_argument("--cache", action="store_true", help="keep the persistent JAX cache on")
    ap.add_argument("--json", default=None)
    ap.add_argument("--nuts-only", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--sampler", default="per_bin", help=argparse.SUPPRESS)
    ap.add_argument("--no-joint", action="store_true", help="skip the joint-model NUTS timing")
    args = ap.parse_args()

    if args.nuts_only:
        print(json.dumps(time_nuts(args.bins, args.nuts_only, sampler=args.sampler)))
        return 0

    import jax
    import scipy

    load0 = os.getloadavg()
    print(f"load average at start: {load0[0]:.1f} on {os.cpu_count()} CPUs")
    tau, g2, err, _ = make_problem(args.files, args.bins, args.delays)
    n = g2.shape[0]
    print(f"{args.files} files x {args.bins} bins x {args.delays} delays = {n} curves")
    res_j, cold_j, warm_j = time_ours(tau, g2, err, "jax", args.repeats)
    print(f"ours (JAX)   cold {cold_j:8.3f} s   warm {warm_j:8.3f} s")
    _res_n, cold_n, _ = time_ours(tau, g2, err, "numpy", 0)
    print(f"ours (NumPy)      {cold_n:8.3f} s")
    tau_s, t_scipy, n_s = time_scipy(tau, g2, err, args.scipy_limit)
    t_scipy_all = t_scipy * n / n_s
    note = "" if n_s == n else f" (measured on {n_s} curves, scaled)"
    print(f"scipy loop        {t_scipy_all:8.3f} s{note}")
    print(f"ratio scipy / ours warm: {t_scipy_all / warm_j:8.1f}x")
    print(f"ratio scipy / ours cold: {t_scipy_all / cold_j:8.1f}x")
    print(f"ratio NumPy backend / JAX warm: {cold_n / warm_j:8.1f}x")
    ok = res_j.ok[:n_s] & np.isfinite(tau_s)
    rel = np.abs(res_j.params["tau"][:n_s][ok] / tau_s[ok] - 1)
    print(f"tau agreement with scipy (default tolerances): median {np.median(rel):.1e}, "
          f"max {np.max(rel):.1e} over {ok.sum()} curves; converged {res_j.ok.mean():.3f}")
    record = {
        "benchmark": "fit",
        "load_average_start": load0,
        "host": platform.node(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "versions": {"jax": jax.__version__, "numpy": np.__version__, "scipy": scipy.__version__},
        "jax_devices": [str(d) for d in jax.devices()],
        "curves": n,
        "ours_jax_cold_s": cold_j,
        "ours_jax_warm_s": warm_j,
        "ours_numpy_s": cold_n,
        "scipy_loop_s": t_scipy_all,
        "scipy_curves_measured": n_s,
        "ratio_warm": t_scipy_all / warm_j,
        "ratio_cold": t_scipy_all / cold_j,
        "tau_rel_diff_median": float(np.median(rel)),
        "tau_rel_diff_max": float(np.max(rel)),
    }
    if not args.no_nuts:
        import numpyro

        record["versions"]["numpyro"] = numpyro.__version__
        def show(tag, r):
            print(f"NUTS {args.bins} bins, 4 chains x (500+1000), {tag}: "
                  f"{r['wall_s_first']:.1f} s first (with compilation), "
                  f"{r['wall_s_second']:.1f} s second; converged {r['converged_fraction']:.2f}, "
                  f"min ESS(tau) {r['min_ess_bulk_tau']:.0f}, "
                  f"mean tree steps {r['mean_tree_steps']:.0f}")

        vec = time_nuts(args.bins, "vectorized")
        show("per-bin kernel, vectorised chains", vec)
        env = dict(os.environ)
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "")
                            + " --xla_force_host_platform_device_count=4").strip()
        env.setdefault("JAX_PLATFORMS", "cpu")
        out = subprocess.run(
            [sys.executable, __file__, "--nuts-only", "parallel", "--bins", str(args.bins)],
            env=env, capture_output=True, text=True, check=False,
        )
        try:
            par = json.loads(out.stdout.strip().splitlines()[-1])
            show("per-bin kernel, parallel chains (4 host devices)", par)
        except (IndexError, json.JSONDecodeError):
            par = {"error": out.stderr[-2000:]}
            print("parallel-chains run failed:", out.stderr[-500:])
        record["nuts"] = {"per_bin_vectorized": vec, "per_bin_parallel": par}
        if not args.no_joint:
            joint = time_nuts(args.bins, "vectorized", sampler="joint")
            show("joint model (numpyro MCMC), vectorised chains", joint)
            record["nuts"]["joint_vectorized"] = joint
    record["load_average_end"] = os.getloadavg()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(record, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
