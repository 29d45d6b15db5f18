"""XSVS negative binomial fits: calibration, the size for 1 % on beta, a 2-bit counter cap,
and the time of a table (issue 46). Run on demand, not part of the tests.

    python benchmarks/xsvs_fit.py [--seeds 100] [--quick]

(the fits are single-threaded numpy; ``taskset -c 0,1`` for the 2-core figure)

1. Calibration: for each mean count and M, ``--seeds`` histograms of N samples (pixels x
   windows) drawn from the negative binomial (multinomial on its pmf), N chosen so that
   beta's statistical error is 2 %; mean beta / truth - 1 (goal within 1 %) and the sd of
   the pulls (beta - truth) / beta_error (goal 0.8-1.25).
2. N for a 1 % error on beta (from the Fisher information of the expected histogram) and,
   at that N, the fraction of seeds with beta within 3 % (goal >= 95 %).
3. A counter cap of 3 (Rigaku 2-bit) at M = 2: the censored fit's bias and the naive
   fit's (capped counts taken as exact). One-frame windows (the cap is on the count
   itself) and, for information, two-frame windows (cap per frame, gamma-Poisson
   draws with a constant intensity over the window).
4. Wall time of ``fit_nb_table`` for 100 q-bins x 20 exposures x (K = 511), mean count
   0.005 x 2^level (the last ones mostly in the overflow column), without and with a cap.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

K = 511


def _probs(mu, M, kmax=K):
    from xpcsviewer.fitting.xsvs import nb_logpmf, nb_logsf

    k = np.arange(kmax + 1)
    p = np.append(np.exp(nb_logpmf(k, mu, M)), np.exp(nb_logsf(kmax + 1, mu, M)))
    return p / p.sum()


def _draw(rng, mu, M, n, seeds):
    """(seeds, K + 2) histograms of n samples."""
    return rng.multinomial(int(n), _probs(mu, M), size=seeds)


def _n_for(mu, M, rel):
    """Samples for a relative error ``rel`` on beta (observed information of the expected
    histogram scaled to N)."""
    from xpcsviewer.fitting.xsvs import fit_nb

    big = 1e12
    h = np.round(_probs(mu, M) * big).astype(np.int64)
    r = fit_nb(h)
    sd1 = float(r.beta_error) * np.sqrt(big)
    return int(np.ceil((sd1 / (rel / M)) ** 2))


def calibration(rng, seeds):
    from xpcsviewer.fitting.xsvs import fit_nb_table

    print(f"\n1. calibration, {seeds} seeds, N for a 2 % error on beta")
    print("| mean | M | N (pixels x windows) | mean beta/truth - 1 | pull sd | not ok |")
    print("|---|---|---|---|---|---|")
    for mu in (0.005, 0.02, 0.1, 0.3, 1.0):
        for M in (1.25, 2.0, 5.0):
            n = _n_for(mu, M, 0.02)
            t = fit_nb_table(_draw(rng, mu, M, n, seeds))
            ok = t.status == "ok"
            b = t.beta[ok]
            pull = (b - 1 / M) / t.beta_error[ok]
            print(f"| {mu:g} | {M:g} | {n:.3g} | {np.mean(b) * M - 1:+.4f} "
                  f"(+-{np.std(b) * M / np.sqrt(b.size):.4f}) | {np.std(pull, ddof=1):.3f} "
                  f"| {int((~ok).sum())} |")


def one_percent(rng, seeds):
    from xpcsviewer.fitting.xsvs import fit_nb_table

    print(f"\n2. N for a 1 % error on beta; {seeds} seeds at that N")
    print("| mean | M | N for 1 % | within 3 % | mean stated error / beta |")
    print("|---|---|---|---|---|")
    for mu in (0.005, 0.02, 0.1, 0.3, 1.0):
        for M in (1.25, 2.0, 5.0):
            n = _n_for(mu, M, 0.01)
            t = fit_nb_table(_draw(rng, mu, M, n, seeds))
            b = np.where(t.status == "ok", t.beta, np.nan)
            within = np.mean(np.abs(b * M - 1) <= 0.03)
            print(f"| {mu:g} | {M:g} | {n:.3g} | {100 * within:.0f} % "
                  f"| {np.nanmean(t.beta_error) * M:.4f} |")


def _capped_one_frame(rng, mu, M, n, seeds, cap=3):
    h = _draw(rng, mu, M, n, seeds)
    c = np.zeros_like(h)
    c[:, cap] = h[:, cap:].sum(1)
    h[:, cap:] = 0
    return h, c


def _capped_two_frames(rng, mu, M, n, seeds, cap=3, kmax=K):
    hs, cs = [], []
    for _ in range(seeds):
        inten = rng.gamma(M, mu / M / 2, n)
        f = rng.poisson(inten[:, None], (n, 2))
        cen = (f >= cap).any(1)
        obs = np.minimum(f, cap).sum(1)
        hs.append(np.bincount(np.minimum(obs[~cen], kmax + 1), minlength=kmax + 2))
        cs.append(np.bincount(np.minimum(obs[cen], kmax + 1), minlength=kmax + 2))
    return np.array(hs), np.array(cs)


def cap3(rng, seeds):
    from xpcsviewer.fitting.xsvs import fit_nb_table

    print(f"\n3. counter cap 3 (2-bit), M = 2, {seeds} seeds")
    print("| windows | mean | N | censored fit: beta/truth - 1 | naive fit: beta/truth - 1 "
          "| censored pull sd |")
    print("|---|---|---|---|---|---|")
    for frames, mu in ((1, 1.0), (1, 0.3), (2, 1.0), (2, 0.3)):
        n = 1_000_000 if frames == 1 else 200_000
        draw = _capped_one_frame if frames == 1 else _capped_two_frames
        s = seeds if frames == 1 else max(seeds // 5, 5)
        h, c = draw(rng, mu, 2.0, n, s)
        tc = fit_nb_table(h, c)
        tn = fit_nb_table(h + c)
        bc, bn = tc.beta * 2 - 1, tn.beta * 2 - 1
        pull = (tc.beta - 0.5) / tc.beta_error
        print(f"| {frames} frame{'s' if frames > 1 else ''} | {mu:g} | {n:.3g} x {s} "
              f"| {np.nanmean(bc):+.4f} (+-{np.nanstd(bc) / np.sqrt(s):.4f}) "
              f"| {np.nanmean(bn):+.4f} | {np.nanstd(pull, ddof=1):.2f} |")


def timing(rng):
    from xpcsviewer.fitting.xsvs import fit_nb_table

    B, L, n = 100, 20, 100_000
    h = np.zeros((B, L, K + 2), np.int64)
    for lev in range(L):
        mu = 0.005 * 2.0**lev
        for b, M in enumerate(np.linspace(1.25, 5.0, B)):
            h[b, lev] = rng.multinomial(n, _probs(mu, M))
    c = np.zeros_like(h)
    hc = h.copy()
    c[..., 3] = hc[..., 3:].sum(-1)
    hc[..., 3:] = 0
    print(f"\n4. fit_nb_table, {B} bins x {L} exposures x (K = {K}), {n} samples each, "
          f"mean 0.005 x 2^level, {os.cpu_count()} cores seen")
    print("| case | wall s | statuses |")
    print("|---|---|---|")
    for name, hh, cc in (("no cap (overflow at K + 1 only)", h, None),
                         ("cap of 3 (every bin censored)", hc, c)):
        t0 = time.perf_counter()
        t = fit_nb_table(hh, cc)
        dt = time.perf_counter() - t0
        st, cnt = np.unique(t.status, return_counts=True)
        counts = ", ".join(f"{a} {b}" for a, b in zip(st, cnt, strict=True))
        print(f"| {name} | {dt:.2f} | {counts} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--quick", action="store_true", help="20 seeds")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    seeds = 20 if args.quick else args.seeds
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    calibration(rng, seeds)
    one_percent(rng, seeds)
    cap3(rng, seeds)
    timing(rng)
    print(f"\n(total {time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
