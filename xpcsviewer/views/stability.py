"""Stability tab and figure: I(q) per time segment on the SAXS-1D scale, and whether it
drifts during the measurement (beam damage, ageing) by more than the noise.

Scale: our correlator writes ``scattering_1d_segments`` as per-segment means
(photons/pixel/frame, the scale of ``scattering_1d``); boost_corr multi-tau files do
not (sums of 2^L frames / N, of frames divided by their own mean when
``normalize_frame``), so their rows are k times the SAXS-1D curve with a k that differs
from file to file (APS B0147: 400-890). The segments are divided by the measured k
(:func:`segment_scale`) and the axis says so.

Verdict: photons of each segment are summed in ``n_groups`` q groups of equal photon
totals; a straight line over the segments gives the drift (first -> last) in each
group; it counts only where it exceeds ``z`` standard errors, the errors from the
segment-to-segment scatter. Noise at high q lands in a group of its own whose error is
large, so it cannot drive the number.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from xpcsviewer.views.saxs import (
    normalization_label,
    q_range_mask,
    saxs1d_profiles,
    segment_profiles,
)

__all__ = [
    "StabilityResult",
    "segment_scale",
    "stability_analysis",
    "stability_axis_label",
    "stability_scale_note",
    "stability_summary",
    "stability_tooltip",
]

#: Drifts smaller than this many standard errors are taken for noise.
Z_SIGNIFICANT = 4.0


@dataclass(frozen=True)
class StabilityResult:
    """I(q) per time segment and how much it drifts.

    Attributes
    ----------
    q : (n_q,) float64
    profiles : (S, n_q) float64
        Phi-averaged I(q) per segment divided by :attr:`scale` (the SAXS-1D scale).
    rel_change : (S,) float64
        Change of each segment against the first segment's fitted value, in the q group
        that drives the verdict (noise-weighted: photon sums of the group).
    max_rel_change : float
        The beam-damage number: largest |drift| among the significant groups (0 if none).
    worst_segment : int
    threshold : float
        :attr:`flagged` when :attr:`max_rel_change` is above it.
    drift, drift_err : (G,) float64
        First -> last change of the straight-line fit per q group, relative to the fit
        at the first segment, and its standard error.
    significant : (G,) bool
        ``|drift| > z * drift_err``.
    q_groups : (G, 2) float64
        q range of each group.
    scale : float
        Segments were divided by this (1.0: already on the SAXS-1D scale).
    mean_profile : (n_q,) float64 or None
        The file's SAXS-1D I(q) (phi average), NaN where absent.
    """

    q: np.ndarray
    profiles: np.ndarray
    rel_change: np.ndarray
    max_rel_change: float
    worst_segment: int
    threshold: float = 0.10
    drift: np.ndarray = field(default_factory=lambda: np.zeros(0))
    drift_err: np.ndarray = field(default_factory=lambda: np.zeros(0))
    significant: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    q_groups: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    scale: float = 1.0
    mean_profile: np.ndarray | None = None
    z: float = Z_SIGNIFICANT
    extra: dict = field(default_factory=dict)

    @property
    def flagged(self) -> bool:
        """True when a significant drift is above the threshold."""
        return bool(self.max_rel_change > self.threshold)

    @property
    def driving_group(self) -> int:
        """Index of the group behind the number (largest significance if none counts)."""
        if self.drift.size == 0:
            return -1
        if self.significant.any():
            return int(np.argmax(np.where(self.significant, np.abs(self.drift), -1.0)))
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(self.drift_err > 0, np.abs(self.drift) / self.drift_err, 0.0)
        return int(np.nanargmax(np.nan_to_num(t)))


def segment_scale(saxs_1d: Any, segments: Any) -> float:
    """k with ``segments ~ k * saxs_1d``: sum of the segments' mean over the sum of
    ``saxs_1d``, over the static bins finite and positive in both (1.0 if none, and
    exactly 1.0 when within 1e-3 of it, as in files written by our correlator)."""
    if saxs_1d is None or segments is None:
        return 1.0
    s1 = np.asarray(saxs_1d, dtype=np.float64).reshape(-1)
    seg = np.asarray(segments, dtype=np.float64)
    if seg.ndim != 2 or seg.shape[1] != s1.size:
        return 1.0
    m = seg.mean(axis=0)
    ok = np.isfinite(m) & np.isfinite(s1) & (m > 0) & (s1 > 0)
    if not ok.any():
        return 1.0
    k = float(m[ok].sum() / s1[ok].sum())
    return 1.0 if abs(k - 1.0) < 1e-3 or not np.isfinite(k) or k <= 0 else k


def _bin_q_and_pixels(qmap: Any, ns: int) -> tuple[np.ndarray, np.ndarray]:
    mapping = np.asarray(qmap.static_index_mapping, dtype=np.int64)
    n1 = int(qmap.static_num_pts[1])
    q = np.asarray(qmap.static_v_list_dim0, dtype=np.float64)[mapping // n1]
    npix = np.ones(ns)
    roi = getattr(qmap, "static_roi_map", None)
    if roi is not None:
        counts = np.bincount(np.asarray(roi, dtype=np.int64).ravel().clip(0),
                             minlength=ns + 1)[1:ns + 1].astype(np.float64)
        if counts.size == ns and np.asarray(roi).max() == ns and (counts > 0).all():
            npix = counts  # photons per bin ~ I * pixels; else equal weights
    return q, npix


def _q_groups(q: np.ndarray, photons: np.ndarray, n_groups: int) -> np.ndarray:
    """Group id of each bin (sorted by q): contiguous q ranges of equal photon totals;
    bins of one q value stay together."""
    uq, inv = np.unique(q, return_inverse=True)
    per_q = np.bincount(inv, weights=photons, minlength=uq.size)
    total = per_q.sum()
    cum = np.cumsum(per_q) / total if total > 0 else np.arange(1, uq.size + 1) / uq.size
    gq = np.minimum((cum * n_groups - 1e-9).astype(np.int64), n_groups - 1).clip(0)
    _, gq = np.unique(gq, return_inverse=True)  # no empty group ids
    return gq[inv]


def stability_analysis(segments: np.ndarray, qmap: Any, threshold: float = 0.10,
                       qmin: float | None = None, qmax: float | None = None,
                       n_groups: int = 8, saxs_1d: Any = None,
                       z: float = Z_SIGNIFICANT) -> StabilityResult:
    """Segment I(q) profiles and their drift during the measurement.

    Parameters
    ----------
    segments : (S, Ns) array
        ``saxs_1d_segments``.
    qmap : QMap
    threshold : float
        Drift above which a significant change is flagged (default 10 %).
    qmin, qmax : float, optional
        Restrict the verdict to a q range.
    n_groups : int
        Number of q groups (equal photon totals).
    saxs_1d : (Ns,) array, optional
        The file's ``saxs_1d``: sets the plotting scale (:func:`segment_scale`) and
        :attr:`StabilityResult.mean_profile`.
    z : float
        Significance in standard errors.
    """
    seg = np.asarray(segments, dtype=np.float64)
    k = segment_scale(saxs_1d, seg)
    q, prof = segment_profiles(seg / k, qmap)
    mean_profile = None
    if saxs_1d is not None and np.asarray(saxs_1d).size == seg.shape[-1]:
        mean_profile = saxs1d_profiles(saxs_1d, qmap)[1]
    n_seg, ns = seg.shape
    qb, npix = _bin_q_and_pixels(qmap, ns)
    keep = np.all(np.isfinite(seg), axis=0) & q_range_mask(qb, qmin, qmax)
    photons = seg[:, keep] * npix[keep]  # proportional to photon counts
    keep_q = qb[keep]
    base = {"q": q, "profiles": prof, "threshold": float(threshold), "scale": k,
            "mean_profile": mean_profile, "z": float(z)}
    if n_seg < 2 or photons.shape[1] == 0 or not (photons.mean(axis=0) > 0).any():
        return StabilityResult(rel_change=np.zeros(n_seg), max_rel_change=0.0,
                               worst_segment=0, extra={"n_groups": 0}, **base)
    gid = _q_groups(keep_q, photons.mean(axis=0), int(n_groups))
    n_g = int(gid.max()) + 1
    sums = np.stack([photons[:, gid == g].sum(axis=1) for g in range(n_g)], axis=1)
    mean_g = sums.mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = sums / mean_g  # (S, G), 1 on average
        t = np.arange(n_seg) - (n_seg - 1) / 2.0
        stt = float((t**2).sum())
        slope = (t[:, None] * rel).sum(axis=0) / stt
        first = 1.0 - slope * (n_seg - 1) / 2.0  # fitted value at the first segment
        # noise from successive differences (a drift hardly enters them): per bin
        # pooled, of the group sums (noise common to all bins), and a shot-noise model
        # var ~ F * photons with F the median over bins (guards groups of few bins,
        # whose own estimate has only S-1 degrees of freedom)
        d_bin = (np.diff(photons, axis=0) ** 2).sum(axis=0) / (2 * (n_seg - 1))
        m_bin = photons.mean(axis=0)
        pooled = np.sqrt(np.bincount(gid, weights=d_bin, minlength=n_g)) / mean_g
        grouped = np.sqrt((np.diff(rel, axis=0) ** 2).sum(axis=0) / (2 * (n_seg - 1)))
        f_shot = float(np.median(d_bin[m_bin > 0] / m_bin[m_bin > 0]))
        shot = np.sqrt(f_shot * np.bincount(gid, weights=m_bin, minlength=n_g)) / mean_g
        err_slope = np.maximum(np.maximum(pooled, grouped), shot) / np.sqrt(stt)
        drift = slope * (n_seg - 1) / first
        drift_err = err_slope * (n_seg - 1) / np.abs(first)
        sig = (np.abs(drift) > z * drift_err) & (drift != 0) & (mean_g > 0) & (first > 0)
    drift = np.nan_to_num(drift)
    drift_err = np.nan_to_num(drift_err)
    q_groups = np.array([[keep_q[gid == g].min(), keep_q[gid == g].max()]
                         for g in range(n_g)])
    number = float(np.abs(drift[sig]).max()) if sig.any() else 0.0
    res = StabilityResult(rel_change=np.zeros(n_seg), max_rel_change=number,
                          worst_segment=0, drift=drift, drift_err=drift_err,
                          significant=sig, q_groups=q_groups,
                          extra={"n_groups": n_g, "n_q_used": int(np.unique(keep_q).size)},
                          **base)
    g = res.driving_group
    change = np.nan_to_num(rel[:, g] / first[g] - 1.0) if first[g] > 0 else np.zeros(n_seg)
    worst = int(np.argmax(np.abs(change)))
    return replace(res, rel_change=change, worst_segment=worst)


# ------------------------------------------------------------------ labels
def stability_axis_label(result: StabilityResult | None, norm: str = "none") -> str:
    """Y-axis label: the SAXS-1D unit, and the factor the segments were divided by."""
    label = normalization_label(norm)
    if result is None or result.scale == 1.0 or norm == "i0":
        return label
    return f"{label}, segments \u00f7 {result.scale:.4g}"


def stability_scale_note(result: StabilityResult | None) -> str:
    """What the segment curves are, on which scale ("" when nothing to say)."""
    if result is None:
        return ""
    ref = " (black dashed)" if result.mean_profile is not None else ""
    if result.scale == 1.0:
        return (f"Segments: mean I(q) of each time segment, on the scale of the SAXS-1D "
                f"curve{ref}." if result.mean_profile is not None else "")
    return (f"Segments divided by {result.scale:.4g} so that their mean matches the file's "
            f"SAXS-1D I(q){ref}: this file stores them on another scale (boost_corr: "
            "sums of frames / N, frame-normalised).")


def stability_summary(result: StabilityResult, label: str = "") -> str:
    """One line: the drift number, its error and q range, and the verdict."""
    head = f"{label}: " if label else ""
    if result.drift.size == 0:
        return f"{head}too few segments or photons to judge the stability"
    g = result.driving_group
    d, e = 100 * result.drift[g], 100 * result.drift_err[g]
    q0, q1 = result.q_groups[g]
    where = f"q {q0:.4g}\u2013{q1:.4g} \u00c5\u207b\u00b9"
    n = result.profiles.shape[0]
    if result.flagged:
        return (f"{head}\u26a0 I(q) drifts {d:+.1f} \u00b1 {e:.1f} % over the {n} segments "
                f"({where}) \u2014 beam damage or ageing?")
    if result.significant.any():
        return (f"{head}\u2713 stable: drift {d:+.1f} \u00b1 {e:.1f} % ({where}) is "
                f"significant but below {100 * result.threshold:.3g} %")
    return (f"{head}\u2713 stable: no drift above the noise over the {n} segments "
            f"(largest {d:+.1f} \u00b1 {e:.1f} %, {where}, needs {result.z:.0f}\u03c3)")


def stability_tooltip(result: StabilityResult | None = None) -> str:
    """What the Stability number measures."""
    n_g = result.drift.size if result is not None and result.drift.size else 8
    return (f"Drift of I(q) from the first to the last time segment (a straight line "
            f"over the segments), in {n_g} q groups of equal photon counts. A group counts "
            f"only when its drift exceeds {Z_SIGNIFICANT:.0f} standard errors, estimated "
            "from the scatter between consecutive segments, so a noisy high-q tail cannot "
            "drive it. Flagged when a counted drift is above the threshold.")
