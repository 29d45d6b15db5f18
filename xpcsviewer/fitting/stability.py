"""Stationarity of one file from its cumulative partial g2 snapshots (Qt-free).

The correlator snapshots the cumulative g2 every N/P frames
(``normalized_g2_partial``, labelled by frames accumulated). If the dynamics are
stationary every snapshot has the same shape; a sample that ages or is damaged by
the beam shows a drifting relaxation time. :func:`fit_partial_snapshots` fits
every snapshot and q-bin with a single exponential (one batched least-squares
solve) and measures the drift: the relative change of the fitted tau between the
first and the last snapshot, as the median over the q-bins whose fits are well
determined. The g2 stability tab and its publication figure both use it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["StabilityFit", "drift_flagged", "drift_text", "fit_partial_snapshots"]


@dataclass(frozen=True)
class StabilityFit:
    """Fits of every snapshot and q-bin of one file.

    Attributes
    ----------
    tau : (T,) s
    partial, partial_err : (P, T, Nd)
    labels : (P,) frames accumulated
    fit_tau : (P, Nd)
        Fitted relaxation time (s); NaN where the fit did not converge.
    grid : (G,) s
        Delays of the fitted curves.
    curves : (P, Nd, G)
        Fitted g2 on ``grid``; NaN where the fit did not converge.
    drift : (Nd,) float64
        ``tau_last / tau_first - 1`` per q-bin (NaN where either fit failed or
        its tau is poorly determined: relative error >= 30 % or outside the delays).
    drift_median : float
        Median of ``drift`` over the q-bins with both fits (NaN if none).
    bin_labels : list of str
    """

    tau: np.ndarray
    partial: np.ndarray
    partial_err: np.ndarray
    labels: np.ndarray
    fit_tau: np.ndarray
    grid: np.ndarray
    curves: np.ndarray
    drift: np.ndarray
    drift_median: float
    bin_labels: list


def fit_partial_snapshots(
    tau, partial, partial_err, labels, bin_labels, progress=None, cancel=None
) -> StabilityFit:
    """Worker job: single-exponential fit of every snapshot x q-bin, and the tau drift.

    Parameters
    ----------
    tau : (T,) s
    partial : (P, T, Nd) float64, NaN where missing
    partial_err : (P, T, Nd) or None
        Without errors the points are weighted equally.
    labels : (P,) frames accumulated, or None
    bin_labels : list of str
    """
    from xpcsviewer.fitting import fit_g2

    part = np.asarray(partial, dtype=np.float64)
    n_p, n_t, n_d = part.shape
    err = (
        np.ones_like(part)
        if partial_err is None
        else np.asarray(partial_err, dtype=np.float64)
    )
    valid = np.isfinite(part) & np.isfinite(err) & (err > 0) & (part != 0)
    # (P, T, Nd) -> (P * Nd, T): one batched solve for all curves
    y = part.transpose(0, 2, 1).reshape(n_p * n_d, n_t)
    e = err.transpose(0, 2, 1).reshape(n_p * n_d, n_t)
    v = valid.transpose(0, 2, 1).reshape(n_p * n_d, n_t)
    res = fit_g2(
        np.asarray(tau, dtype=np.float64),
        np.where(v, y, 0.0),
        np.where(v, e, 1.0),
        v,
        model="single",
        progress=progress,
        cancel=cancel,
    )
    ok = res.ok.reshape(n_p, n_d)

    def grid(name: str) -> np.ndarray:
        return np.where(ok, res.params[name].reshape(n_p, n_d), np.nan)

    ftau = grid("tau")
    tau = np.asarray(tau, dtype=np.float64)
    # Only well-determined taus count toward the drift: a noisy, nearly flat curve
    # can "converge" to any tau, and one such bin would dominate the ratio.
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.abs(res.errors["tau"].reshape(n_p, n_d)) / ftau
    determined = (
        np.isfinite(ftau)
        & np.isfinite(rel)
        & (rel < 0.3)
        & (ftau >= tau[0])
        & (ftau <= tau[-1])
    )
    tgrid = np.geomspace(tau[0], tau[-1], 128)
    curves = res.curve(tgrid).reshape(n_p, n_d, -1)
    curves[~ok] = np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        drift = np.where(
            determined[-1] & determined[0], ftau[-1] / ftau[0] - 1.0, np.nan
        )
    finite = drift[np.isfinite(drift)]
    lab = np.arange(1, n_p + 1) if labels is None else np.asarray(labels).ravel()
    return StabilityFit(
        tau=tau,
        partial=part,
        partial_err=err,
        labels=lab,
        fit_tau=ftau,
        grid=tgrid,
        curves=curves,
        drift=drift,
        drift_median=float(np.median(finite)) if finite.size else float("nan"),
        bin_labels=list(bin_labels),
    )


def drift_text(fit: StabilityFit, bin_index: int) -> str:
    """The headline: drift of the fitted tau, first -> last snapshot.

    Parameters
    ----------
    fit : StabilityFit
    bin_index : int
        The shown q-bin (clamped to the bins of ``fit``).
    """
    j = min(max(int(bin_index), 0), fit.partial.shape[2] - 1)
    n_ok = int(np.isfinite(fit.drift).sum())
    if not np.isfinite(fit.drift_median):
        return "\u03c4 drift: no converged fits of the first and last snapshot"
    sel = fit.drift[j]
    sel_txt = f"{100 * sel:+.1f} %" if np.isfinite(sel) else "no fit"
    return (
        f"\u03c4 drift first \u2192 last snapshot: {100 * fit.drift_median:+.1f} % "
        f"(median of {n_ok} q-bins); this bin {sel_txt}"
    )


def drift_flagged(fit: StabilityFit, threshold_percent: float) -> bool | None:
    """True when ``|median drift|`` exceeds ``threshold_percent`` (None: no drift)."""
    if not np.isfinite(fit.drift_median):
        return None
    return bool(abs(fit.drift_median) * 100 > float(threshold_percent))
