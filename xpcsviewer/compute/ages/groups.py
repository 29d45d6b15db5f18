"""The error of each age cut's tau from independent pixel groups.

A cut's g2 is correlated across lags (the same frames and speckles behind every lag),
so a fit that treats the lags as independent states tau 1.5-2.5 times too precisely
once tau nears the window (docs/ages.md, section 8), and no noise model read off the
map alone can say by how much. Pixels far apart are independent, though: the correlator
can write the two-time map of each bin for K groups of detector tiles (each larger than
a speckle, dealt at random), and the spread of a number over the groups is its error.

Here the number is the fitted tau of a cut, through its linearisation at the fit of
the whole map, tau_g = tau + h . (g2_g - g2), with h the tau row of the weighted
pseudo-inverse of d(baseline + contrast exp(-2 t / tau)) / d(contrast, tau, baseline):
the same cut of each group's map, weighted batch means over the groups (weights: the
groups' pixel counts). Tested against the truth of the demo gel in
``benchmarks/ages_jackknife_probe.py`` and ``benchmarks/ages_truth.py``.

Pure NumPy, float64; times in seconds.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from xpcsviewer.compute.ages.age_lag import AgeLagMap, from_full_maps
from xpcsviewer.compute.ages.analysis import AgeCuts, age_cut_g2

__all__ = ["MIN_GROUPS", "batch_sd", "group_cut_g2", "group_flag", "group_tau_errors",
           "tau_influence"]

#: Fewest groups with pixels behind an error (fewer: the spread says little).
MIN_GROUPS = 4


def tau_influence(lag_s: np.ndarray, err: np.ndarray, tau_s: float, contrast: float
                  ) -> np.ndarray | None:
    """(T,) h with tau_hat - tau = sum_L h_L dg_L to first order, or None if singular."""
    beta = contrast if np.isfinite(contrast) and contrast != 0 else 1.0
    ex = np.exp(-2.0 * lag_s / tau_s)
    jac = np.stack([ex, 2.0 * beta * lag_s / tau_s**2 * ex, np.ones_like(lag_s)], axis=1)
    wj = jac / err[:, None] ** 2
    try:
        return np.linalg.solve(jac.T @ wj, wj.T)[1]
    except np.linalg.LinAlgError:
        return None


def batch_sd(x: np.ndarray, w: np.ndarray) -> float:
    """Standard error of sum_g w_g x_g (w normalised over the finite x) from the groups'
    spread: sqrt(K / (K - 1) sum_g w_g^2 (x_g - xbar)^2); NaN below :data:`MIN_GROUPS`."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    ok = np.isfinite(x) & (w > 0)
    k = int(ok.sum())
    if k < MIN_GROUPS:
        return np.nan
    x, w = x[ok], w[ok] / w[ok].sum()
    m = float(np.sum(w * x))
    return float(np.sqrt(np.sum(w * w * (x - m) ** 2) * k / (k - 1)))


def _group_map(groups: Any, g: int, j: int, frame_time: float) -> AgeLagMap | None:
    """Group g's age x lag map of the groups' j-th bin, from either kind of group maps;
    None where the group has no pixel there."""
    if hasattr(groups, "group_map"):  # AgeLagGroups: age x lag maps already
        return groups.group_map(g, j)
    one = np.asarray(groups.maps[j][g])  # TwotimeGroups: full maps
    if not np.isfinite(one).any():
        return None
    return from_full_maps([one], [int(groups.bins[j])], frame_time)


def group_cut_g2(cuts: AgeCuts, groups: Any, progress=None, cancel=None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The cuts of each pixel group's map.

    ``groups``: the file's maps per pixel group, ``bins``, ``pixels`` (K, B) and either
    full maps (:class:`~xpcsviewer.io.results.twotime_groups.TwotimeGroups`: ``maps`` per bin
    (K, N, N), upper triangles do, NaN for a group without pixels) or age x lag maps
    (:class:`~xpcsviewer.io.results.age_lag_groups.AgeLagGroups`).

    Returns
    -------
    g2 : (K, 2, W, B, T)
        Group k's g2 of each cut (NaN where the group has no pixel in the bin, or the
        groups do not hold the bin).
    weight : (K, B)
        The groups' pixels in each cut bin.
    """
    from xpcsviewer.progress import report

    mb = [int(b) for b in groups.bins]
    pix = np.asarray(groups.pixels, np.float64)
    k_all = pix.shape[0]
    nb = cuts.bins.size
    g2 = np.full((k_all, *cuts.g2.shape), np.nan)  # (K, 2, W, B, T)
    weight = np.zeros((k_all, nb))
    for j, b in enumerate(cuts.bins):
        report(progress, cancel, j, nb, f"pixel-group cuts, bin {int(b)}")
        if int(b) not in mb:
            continue
        jb = mb.index(int(b))
        weight[:, j] = pix[:, jb]
        for g in range(k_all):
            gmap = _group_map(groups, g, jb, cuts.frame_time) if pix[g, jb] > 0 else None
            if gmap is None:
                continue
            # the means alone: the cuts' errors, flags and chi4 are not read here
            lag, gg = age_cut_g2(gmap, cuts.windows)
            if lag.size == cuts.lag.size:
                g2[g, :, :, j] = gg[:, :, 0]
    report(progress, cancel, nb, nb, "pixel-group cuts done")
    return g2, weight


def group_tau_errors(cuts: AgeCuts, tau: np.ndarray, contrast: np.ndarray, groups: Any,
                     progress=None, cancel=None, *,
                     group_g2: tuple[np.ndarray, np.ndarray] | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Standard error of each cut's tau from the pixel groups.

    ``tau``, ``contrast``: (2, W, B) the fits of ``cuts`` (the cuts' bins). ``groups``:
    as :func:`group_cut_g2`, or None with ``group_g2`` its result.

    Returns
    -------
    sd : (2, W, B)
        NaN where tau is not finite or fewer than :data:`MIN_GROUPS` groups hold the cut.
    tau_g : (K, 2, W, B)
        Each group's linearised tau (NaN where it has none), for errors of numbers
        derived from the taus (the ageing law's parameters).
    weight : (K, B)
        The groups' pixels in each cut bin.
    """
    tau = np.asarray(tau, np.float64)
    g2, weight = (group_g2 if group_g2 is not None
                  else group_cut_g2(cuts, groups, progress, cancel))
    out = np.full(tau.shape, np.nan)
    tau_g = np.full((g2.shape[0], *tau.shape), np.nan)
    valid = cuts.valid
    for j in range(cuts.bins.size):
        if not (weight[:, j] > 0).any():
            continue
        for way in range(2):
            for wi in range(cuts.windows.n):
                t_s = float(tau[way, wi, j])
                ok = valid[way, wi, j]
                if not (np.isfinite(t_s) and t_s > 0 and ok.sum() > 3):
                    continue
                h = tau_influence(cuts.tau[ok], cuts.g2_err[way, wi, j][ok], t_s,
                                  float(contrast[way, wi, j]))
                if h is None:
                    continue
                d = g2[:, way, wi, j][:, ok] - cuts.g2[way, wi, j][ok][None, :]
                with np.errstate(invalid="ignore"):
                    x = t_s + d @ h  # NaN for a group missing a lag of the cut
                tau_g[:, way, wi, j] = x
                out[way, wi, j] = batch_sd(x, weight[:, j])
    return out, tau_g, weight


#: Fewest groups behind a flag's null (its spread decides the threshold).
FLAG_MIN_GROUPS = 8


def group_flag(cuts: AgeCuts, group_g2: np.ndarray, weight: np.ndarray, p: float
               ) -> np.ndarray:
    """(W, B) the two ways' disagreement judged against the null the groups show.

    The flag's chi-square (:attr:`AgeCuts.diff_chi2`) sums lags as if independent; they
    are not (the same frames behind every lag), so on a stationary map its spread is
    wider than chi-square's and long windows are flagged by chance. Each group's
    deviation from the whole, (D_g - D) with D = g2_age - g2_t1, has the variance of D
    times (1/w_g - 1) (w_g its share of the pixels) and the same correlation over lags,
    so chi2_g = sum_L (D_g - D)^2 / ((1/w_g - 1) var_L) is a draw of the flag's
    chi-square under no disagreement. Their mean m and variance v give a scaled
    chi-square (Satterthwaite: nu = min(lags, 2 m^2 / v), scale m / nu) whose 1 - ``p``
    quantile is the threshold. A cut is flagged only where the cuts' own flag is set as
    well: the groups' own normalisation can make their spread smaller than the whole's
    (a 10x longer demo null, bin 1: chi2 37 on 58 lags was past it), and 16 groups say
    little about the far tail. Cuts with fewer than :data:`FLAG_MIN_GROUPS` groups keep
    the cuts' own flag.
    """
    from scipy.stats import chi2 as chi2_dist

    out = np.asarray(cuts.disagree, bool).copy()
    if cuts.diff_var is None:
        return out
    d = cuts.g2[0] - cuts.g2[1]  # (W, B, T)
    dg = group_g2[:, 0] - group_g2[:, 1]  # (K, W, B, T)
    use = np.isfinite(cuts.diff_var) & np.isfinite(d)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = weight / weight.sum(axis=0, keepdims=True)  # (K, B)
        scale = np.where(share > 0, 1.0 / share - 1.0, np.nan)
        z = (dg - d[None]) ** 2 / (scale[:, None, :, None] * cuts.diff_var[None])
    whole = np.all(np.isfinite(z) | ~use[None], axis=3) & np.isfinite(scale)[:, None, :]
    chi_g = np.where(whole, np.where(use[None], z, 0.0).sum(axis=3), np.nan)  # (K, W, B)
    n_g = np.isfinite(chi_g).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        m = np.nanmean(chi_g, axis=0)
        v = np.nanvar(chi_g, axis=0, ddof=1)
        nu = np.minimum(cuts.diff_dof, 2.0 * m * m / v)
        thr = (m / nu) * chi2_dist.ppf(1.0 - p, nu)
    ok = (n_g >= FLAG_MIN_GROUPS) & np.isfinite(thr) & (nu > 0) & (cuts.diff_dof > 0)
    return np.where(ok, (cuts.diff_chi2 > thr) & out, out)
