"""Does the model fit? Residual structure (runs test) and the model choice (AICc).

- :func:`runs_test`: Wald-Wolfowitz runs test on the signs of the weighted residuals of
  the fitted points in delay order. With n+ positive and n- negative residuals
  (n = n+ + n-) and R runs, z = (R - mu) / sigma, mu = 2 n+ n- / n + 1,
  sigma^2 = (mu - 1)(mu - 2) / (n - 1). A model that misses part of the curve leaves
  long runs of one sign (z << 0). It uses the signs only, so errors stated too small
  by a constant factor do not change it (that is what chi2_red sees).
- :func:`noise_calibration`: where a curve's points are not independent (the lags of an
  age cut of a two-time map share frames, so its noise is correlated over about tau/2),
  white-noise tests misfire: long runs of one sign and a large early sum come from the
  noise itself. Given K independent parts of the data (pixel groups), their deviations
  from the whole carry the same correlation and no model error: the runs z of each
  part gives the z a correlated null reaches (its mean and spread), and the variance of
  their partial sums over the sum of their variances gives the early scan's inflation.
- :func:`aicc`: Akaike's criterion with the small-sample correction for a least-squares
  fit whose error scale is estimated: AICc = n ln(chi2 / n) + 2K + 2K(K + 1) / (n - K - 1),
  K = free parameters + 1 (the scale). Differences are then Delta chi2 / chi2_red to
  first order: the same scaling as the errors, so a misfit scale does not by itself
  favour the more complex model.
- :func:`choose_models`: AICc compares the candidates that fit without residual
  structure (all of them where none does): in order of complexity, a later one
  replaces the current choice only when its AICc is lower by more than
  :data:`AICC_MARGIN` (strong evidence; a margin of 2 would pick a stretched or double
  model for ~5 % of true single exponentials by chance). A chosen model whose
  residuals still have structure is reported as a misfit.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from xpcsviewer.fitting.vocabulary import MODEL_LABELS

__all__ = [
    "AICC_MARGIN",
    "MODEL_LABELS",
    "RUNS_MIN_POINTS",
    "aicc",
    "calibrated_runs",
    "choose_models",
    "misfit_region",
    "noise_calibration",
    "runs_test",
    "strongest_run",
]

#: A more complex candidate must lower AICc by more than this to be chosen.
AICC_MARGIN = 10.0
#: The runs test needs this many fitted points (below it z is NaN: not tested).
RUNS_MIN_POINTS = 10

#: Candidates that are variants of one model (the margin is reported against others).
FAMILY = {"single_avgcorr": "single"}


def _ordered_signs(resid: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # Signs of the usable residuals moved to the front of each row, in delay order;
    # exact zeros (a point on the curve) carry no sign and are skipped.
    r = np.atleast_2d(np.asarray(resid, dtype=np.float64))
    ok = np.atleast_2d(np.asarray(mask, dtype=bool)) & np.isfinite(r) & (r != 0)
    order = np.argsort(~ok, axis=1, kind="stable")
    s = np.take_along_axis(np.sign(np.where(ok, r, 0.0)), order, axis=1)
    return s, ok.sum(axis=1)


def runs_test(resid: Any, mask: Any) -> tuple[np.ndarray, np.ndarray]:
    """Wald-Wolfowitz runs test per curve.

    Parameters
    ----------
    resid : (B, T) weighted residuals (data - model) / sigma, delays in order
    mask : (B, T) bool, the fitted points

    Returns
    -------
    z : (B,) float64
        (R - mu) / sigma; NaN with fewer than :data:`RUNS_MIN_POINTS` signed points;
        -inf when every residual has the same sign (one run).
    runs : (B,) int
    """
    s, n = _ordered_signs(resid, mask)
    cols = np.arange(s.shape[1])[None, :]
    change = (s[:, 1:] != s[:, :-1]) & (cols[:, 1:] < n[:, None])
    runs = np.where(n > 0, 1 + change.sum(axis=1), 0)
    n_pos = (s > 0).sum(axis=1).astype(np.float64)
    n_neg = (s < 0).sum(axis=1).astype(np.float64)
    nn = n_pos + n_neg
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = 2.0 * n_pos * n_neg / nn + 1.0
        var = (mu - 1.0) * (mu - 2.0) / (nn - 1.0)
        z = (runs - mu) / np.sqrt(var)
    z = np.where((n_pos == 0) | (n_neg == 0), -np.inf, z)
    z = np.where(nn < RUNS_MIN_POINTS, np.nan, z)
    return z, runs


#: Parts needed to calibrate the residual tests (:func:`noise_calibration`).
CALIBRATION_MIN_PARTS = 4


def noise_calibration(noise: Any, sigma: Any, mask: Any) -> tuple[np.ndarray, np.ndarray]:
    """The residual tests' null for curves whose noise is correlated along the delays.

    Parameters
    ----------
    noise : (B, K, T) deviations of K independent parts of each curve's data (pixel
        groups) from the whole, in the curve's units; a part with a non-finite value
        at a fitted delay is left out
    sigma, mask : (B, T) the points' errors and the fitted points

    Returns
    -------
    runs_ref : (B, 2)
        Mean and standard deviation of the parts' runs z (:func:`runs_test` of their
        signs); NaN with fewer than :data:`CALIBRATION_MIN_PARTS` parts, and (-inf,
        NaN) when a part has a single run (too correlated to test).
    scan_c : (B, T)
        Var(sum of the first k fitted points) / (sum of their variances), at the
        column of the k-th fitted point, from the parts; at least 1 (1 without parts).
    """
    d = np.asarray(noise, np.float64)
    m = np.asarray(mask, bool)
    sg = np.asarray(sigma, np.float64)
    n_b, n_k, n_t = d.shape
    with np.errstate(invalid="ignore", divide="ignore"):
        u = d / sg[:, None, :]
    part_ok = np.all(np.isfinite(u) | ~m[:, None, :], axis=2)  # (B, K)
    u = np.where(m[:, None, :] & part_ok[:, :, None], u, 0.0)
    z, _ = runs_test(u.reshape(n_b * n_k, n_t), np.repeat(m, n_k, axis=0) & part_ok.reshape(-1, 1))
    z = z.reshape(n_b, n_k)
    z = np.where(part_ok, z, np.nan)
    n_ok = np.isfinite(z).sum(axis=1) + np.isneginf(z).sum(axis=1)
    enough = n_ok >= CALIBRATION_MIN_PARTS
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(np.where(np.isfinite(z), z, np.nan), axis=1)
        sd = np.nanstd(np.where(np.isfinite(z), z, np.nan), axis=1, ddof=1)
    single = np.isneginf(z).any(axis=1)
    ref = np.stack([np.where(single, -np.inf, mean), np.where(single, np.nan, sd)], axis=1)
    ref = np.where(enough[:, None], ref, np.nan)
    s = np.cumsum(u, axis=2)
    v = np.cumsum(u * u, axis=2)
    w = part_ok[:, :, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        c = (np.sum(np.where(w, s * s, 0.0), axis=1)
             / np.sum(np.where(w, v, 0.0), axis=1))
    c = np.where(enough[:, None] & np.isfinite(c), np.maximum(c, 1.0), 1.0)
    return ref, c


def calibrated_runs(z: Any, runs_ref: Any) -> np.ndarray:
    """The runs z against a correlated null (``runs_ref`` of :func:`noise_calibration`):
    (z - mean) / max(sd, 1) where the reference is known; NaN (not tested) where a part
    had a single run; z unchanged where there is no reference."""
    z = np.asarray(z, np.float64)
    ref = np.asarray(runs_ref, np.float64)
    mean, sd = ref[:, 0], ref[:, 1]
    with np.errstate(invalid="ignore"):
        cal = (z - mean) / np.maximum(sd, 1.0)
    return np.where(np.isneginf(mean), np.nan, np.where(np.isfinite(mean), cal, z))


def early_scan(resid: Any, mask: Any, scale: Any, inflation: Any = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """The largest excess of the first delays, on one side of the fit, together.

    The sign-only runs test cannot see a short run of large residuals (the first 18
    points 10 sigma above the fit, z = -2.5): this scan sums the weighted residuals of
    the first k fitted delays, S_k, and takes max |S_k| / sqrt(k) over the first half
    of the points (k >= 3), the excess of the short delays in sigma.

    Parameters
    ----------
    resid, mask : (B, T) weighted residuals (data - model) / sigma in delay order; the
        fitted points
    scale : (B,) misfit scale s = max(1, chi2_red): residuals are divided by sqrt(s)
    inflation : (B, T), optional
        Variance of the partial sums over white noise's, per column
        (:func:`noise_calibration`); the sums are divided by its square root.

    Returns
    -------
    scan : (B,) NaN with fewer than :data:`RUNS_MIN_POINTS` points
    k : (B,) int, the number of first delays where it is reached (0 when NaN)
    """
    r = np.where(mask, np.asarray(resid, np.float64), 0.0)
    m = np.asarray(mask, bool)
    r = r / np.sqrt(np.maximum(np.asarray(scale, np.float64), 1.0))[:, None]
    n = m.sum(axis=1)
    k = np.cumsum(m, axis=1)  # fitted points so far at each column
    s = np.cumsum(r, axis=1)
    c = 1.0 if inflation is None else np.asarray(inflation, np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = np.abs(s) / np.sqrt(k * c)
    use = m & (k >= 3) & (k <= np.maximum(n // 2, 3)[:, None])
    stat = np.where(use, stat, -np.inf)
    best = np.argmax(stat, axis=1)
    rr = np.arange(r.shape[0])
    scan = stat[rr, best]
    ok = (n >= RUNS_MIN_POINTS) & np.isfinite(scan)
    return np.where(ok, scan, np.nan), np.where(ok, k[rr, best], 0).astype(np.int64)


def strongest_run(resid: np.ndarray, mask: np.ndarray) -> tuple[int, int]:
    """Column indices (first, last) of the run of one sign that deviates most.

    Runs are ranked by |sum of residuals| / sqrt(length) (the run's own z for white
    residuals): a long run of tiny residuals on the baseline ranks below a short run
    of large ones where the model misses the decay.

    Parameters
    ----------
    resid, mask : (T,) one curve
    """
    r = np.asarray(resid, dtype=np.float64)
    cols = np.flatnonzero(np.asarray(mask, bool) & np.isfinite(r) & (r != 0))
    if cols.size == 0:
        return -1, -1
    v = r[cols]
    s = np.sign(v)
    best, start, span = -1.0, 0, (0, 0)
    for i in range(1, s.size + 1):
        if i == s.size or s[i] != s[start]:
            score = abs(v[start:i].sum()) / np.sqrt(i - start)
            if score > best:
                best, span = score, (start, i - 1)
            start = i
    return int(cols[span[0]]), int(cols[span[1]])


def misfit_region(shape: np.ndarray) -> str:
    """Which part of the curve a run of residuals lies in, from the fitted decay there.

    ``shape`` is (g2 - baseline) / contrast of the fit at the run's points: 1 before the
    decay, 0 on the baseline.
    """
    shape = np.asarray(shape, dtype=np.float64)
    fin = shape[np.isfinite(shape)]  # all-NaN (contrast 0) warned "Mean of empty slice"
    m = float(fin.mean()) if fin.size else float("nan")
    if not np.isfinite(m):
        return "the curve"
    if m >= 0.9:
        return "the first delays (before the decay)"
    if m >= 0.5:
        return "the early decay"
    if m >= 0.1:
        return "the late decay"
    return "the baseline (after the decay)"


def aicc(chi2: Any, n_points: Any, n_free: int | Any, n_effective: Any = None
         ) -> np.ndarray:
    """AICc of least-squares fits with an estimated error scale; +inf where undefined.

    Parameters
    ----------
    chi2 : (B,) weighted sum of squares at the optimum
    n_points : (B,) fitted points
    n_free : free parameters of the model (the scale is added here)
    n_effective : (B,), optional
        Independent points the fitted ones are worth where their noise is correlated
        (n / the variance inflation of their sum, :func:`noise_calibration`): a smooth
        wiggle of the noise then lowers chi2 as a real feature would, and counting every
        point would choose the more complex model for it.
    """
    chi2 = np.asarray(chi2, dtype=np.float64)
    n = np.asarray(n_points, dtype=np.float64)
    ne = n if n_effective is None else np.asarray(n_effective, dtype=np.float64)
    k = np.asarray(n_free, dtype=np.float64) + 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        out = ne * np.log(chi2 / n) + 2.0 * k + 2.0 * k * (k + 1.0) / (ne - k - 1.0)
    ok = np.isfinite(out) & (ne - k - 1.0 > 0) & (chi2 > 0)
    return np.where(ok, out, np.inf)


def choose_models(
    scores: dict[str, np.ndarray],
    order: list[str],
    margin: float = AICC_MARGIN,
    runs_z: dict[str, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One model per curve from the candidates' AICc.

    Parameters
    ----------
    scores : model name -> (B,) AICc (+inf where the model has no fit)
    order : candidate names from the simplest; a later one replaces the current choice
        only when its AICc is lower by more than ``margin``
    margin : float
    runs_z : model name -> (B,) runs-test z, optional
        Where at least one candidate's residuals have no structure (|z| <=
        :data:`~xpcsviewer.fitting.status.RUNS_Z_MAX`), the structured ones are not
        eligible: AICc compares only models that fit.

    Returns
    -------
    chosen : (B,) int index into ``order``
    delta : (B,) AICc of the best other eligible candidate of another family minus
        that of the chosen one (``single_avgcorr`` is the single exponential's family:
        its AICc is nearly the same and says nothing about the choice); negative when
        a more complex model is lower, though not by ``margin``; +inf when no other
        candidate is eligible
    """
    from xpcsviewer.fitting.status import RUNS_Z_MAX

    a = np.stack([np.asarray(scores[m], dtype=np.float64) for m in order])  # (M, B)
    n_b = a.shape[1]
    if runs_z is not None:
        z = np.stack([np.asarray(runs_z[m], dtype=np.float64) for m in order])
        fits = np.isfinite(a) & ~(~np.isnan(z) & ~(np.abs(z) <= RUNS_Z_MAX))
        a = np.where(fits.any(axis=0)[None, :] & ~fits, np.inf, a)
    chosen = np.zeros(n_b, dtype=np.int64)
    cur = a[0].copy()
    for k in range(1, len(order)):
        better = (a[k] < cur - margin) | (~np.isfinite(cur) & np.isfinite(a[k]))
        chosen = np.where(better, k, chosen)
        cur = np.where(better, a[k], cur)
    fam = np.array([FAMILY.get(m, m) for m in order])
    others = np.where(fam[:, None] == fam[chosen][None, :], np.inf, a)
    with np.errstate(invalid="ignore"):
        delta = np.min(others, axis=0) - cur
    delta = np.where(np.isfinite(cur), delta, np.nan)
    return chosen, delta
