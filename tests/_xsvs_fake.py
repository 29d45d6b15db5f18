"""A fake :class:`~xpcsviewer.model.xsvs.XsvsResult` with known answers (the GUI, report
and info tests of issue 46): negative-binomial counts per q-bin and exposure, the
counter cap's samples censored, the fits filled by hand with the truth."""

from __future__ import annotations

import numpy as np

from xpcsviewer.model.xsvs import XsvsResult

KMAX = 8


def visibility_single(t, tau):
    x = 2.0 * np.asarray(t, dtype=np.float64) / tau
    small = x < 1e-6
    xs = np.where(small, 1.0, x)
    return np.where(small, 1.0 - x / 3.0, 2.0 * (np.exp(-xs) - 1.0 + xs) / xs**2)


def fake_xsvs(n_bins=4, n_levels=6, frame_time=1e-3, cap=None, seed=0, g2=True,
              source="run_raw.h5", pixels=4000):
    rng = np.random.default_rng(seed)
    windows = 2 ** np.arange(n_levels, dtype=np.int64)
    ex = windows * frame_time
    beta0 = np.linspace(0.30, 0.22, n_bins)
    tau = np.geomspace(2e-3, 2e-2, n_bins)
    hist = np.zeros((n_bins, n_levels, KMAX + 2), np.int64)
    cens = np.zeros_like(hist)
    mean = np.zeros((n_bins, n_levels))
    beta = np.zeros((n_bins, n_levels))
    for b in range(n_bins):
        for lev in range(n_levels):
            mu = 0.05 * windows[lev]
            bt = beta0[b] * visibility_single(ex[lev], tau[b])
            m = 1.0 / bt
            k = rng.negative_binomial(m, m / (m + mu), pixels)
            mean[b, lev] = k.mean()
            beta[b, lev] = bt
            if cap is not None:
                cens[b, lev, cap] = int(np.sum(k >= cap))
                k = k[k < cap]
            hist[b, lev] = np.bincount(np.minimum(k, KMAX + 1), minlength=KMAX + 2)
    status = np.full((n_bins, n_levels), "ok", dtype=object)
    status[0, 0] = "poisson"
    status[-1, -1] = "misfit"
    reason = np.full((n_bins, n_levels), "", dtype=object)
    reason[0, 0] = "no excess variance"
    reason[-1, -1] = "chi2 large"
    bb = np.where(status == "poisson", np.nan, beta)
    nb = {"mean": mean, "mean_error": mean / np.sqrt(pixels), "spread": np.sqrt(mean),
          "M": 1.0 / bb, "M_error": 0.05 / bb, "beta": bb, "beta_error": 0.05 * bb,
          "chi2_red": np.ones_like(mean), "gof_p": np.full_like(mean, 0.5),
          "n_samples": np.full(mean.shape, pixels), "n_photons": mean * pixels,
          "status": status.astype(str), "reason": reason.astype(str)}
    vstatus = np.array(["ok"] * n_bins, dtype=object)
    vstatus[-1] = "tau_above"
    vis = {"model": np.array(["single"] * n_bins), "beta0": beta0,
           "beta0_error": 0.01 * beta0, "tau": tau, "tau_error": 0.1 * tau,
           "stretch": np.ones(n_bins), "stretch_error": np.zeros(n_bins),
           "chi2_red": np.ones(n_bins), "n_points": np.full(n_bins, n_levels),
           "status": vstatus.astype(str), "reason": np.array([""] * n_bins),
           "limit": np.where(vstatus == "tau_above", 0.05, np.nan)}
    g2d = {}
    if g2:
        g2d = {"contrast": beta0 * 1.02, "contrast_error": 0.005 * np.ones(n_bins),
               "tau": tau * 1.1, "tau_error": 0.05 * tau,
               "status": np.array(["converged"] * n_bins)}
    return XsvsResult(
        source=source, layout="hdf5", detector_shape=(64, 64), n_frames=1000,
        frame_time=frame_time, time_tag=False, counter_cap=cap, windows=windows,
        n_windows=1000 // windows, bin_ids=np.arange(1, n_bins + 1, dtype=np.int64),
        q=np.linspace(0.002, 0.008, n_bins), n_pixels=np.full(n_bins, pixels),
        hist=hist, cens=cens, photons=mean * pixels, nb=nb, vis=vis, g2=g2d,
        g2_source="run_results.hdf" if g2 else None)
