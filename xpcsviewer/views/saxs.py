"""View data of the SAXS-1D and Stability tabs and their figures: I(q) curves of the
static bins (φ lines, normalisations, background), per-segment stability
(views/stability.py).

Pure NumPy float64, shared by the GUI tabs and the exported figures so both show the
same numbers. Units: q in 1/Angstrom, phi in degrees, intensity in photons/pixel/frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "NORMALIZATIONS",
    "Curve",
    "apply_normalization",
    "expand_static",
    "normalization_label",
    "q_range_mask",
    "saxs1d_curves",
    "saxs1d_profiles",
    "segment_profiles",
    "subtract_background",
]

# Normalisation names -> y-axis label; "i0" is I divided by I at the first q point
# of each curve (the existing viewers divide by the first *curve*, a bug).
NORMALIZATIONS: dict[str, str] = {
    "none": "I (photons/pixel/frame)",
    "iq2": "I\u00b7q\u00b2 (photons/pixel/frame \u00b7 \u00c5\u207b\u00b2)",
    "iq4": "I\u00b7q\u2074 (photons/pixel/frame \u00b7 \u00c5\u207b\u2074)",
    "i0": "I / I(q\u2080)",
}



@dataclass(frozen=True)
class Curve:
    """One line to draw: ``y(x)`` with a label.

    Attributes
    ----------
    x, y : (n,) float64
    label : str
    kind : str
        ``"mean"`` (phi average), ``"phi"`` (one phi sector), ``"segment"``, ``"trace"``.
    index : int
        File index (SAXS-1D, traces) or segment index (stability).
    """

    x: np.ndarray
    y: np.ndarray
    label: str
    kind: str = "mean"
    index: int = 0


# ----------------------------------------------------------------- static bins
def expand_static(values: np.ndarray, qmap: Any) -> np.ndarray:
    """Expand compressed static-bin values onto the natural (q, phi) grid.

    Parameters
    ----------
    values : (..., Ns) array
        Per compressed static bin (``saxs_1d`` or ``saxs_1d_segments``).
    qmap : QMap
        Supplies ``static_index_mapping`` and ``static_num_pts`` = (n_s0, n_s1).

    Returns
    -------
    (..., n_s0, n_s1) float64
        NaN where a (q, phi) cell has no pixels.

    Raises
    ------
    ValueError
        The last axis does not match the number of static bins.
    """
    values = np.asarray(values, dtype=np.float64)
    mapping = np.asarray(qmap.static_index_mapping, dtype=np.int64)
    n0, n1 = (int(v) for v in qmap.static_num_pts)
    if values.shape[-1] != mapping.size:
        raise ValueError(
            f"static data has {values.shape[-1]} bins but the q-map has {mapping.size}")
    if mapping.size and (mapping.min() < 0 or mapping.max() >= n0 * n1):
        raise ValueError("static_index_mapping points outside the static grid")
    out = np.full((*values.shape[:-1], n0 * n1), np.nan)
    out[..., mapping] = values
    return out.reshape((*values.shape[:-1], n0, n1))


def _static_axes(qmap: Any) -> tuple[np.ndarray, np.ndarray]:
    n0, n1 = (int(v) for v in qmap.static_num_pts)
    q = np.asarray(qmap.static_v_list_dim0, dtype=np.float64)[:n0]
    phi = np.asarray(qmap.static_v_list_dim1, dtype=np.float64)[:n1]
    if phi.size < n1:
        phi = np.arange(n1, dtype=np.float64)
    return q, phi


def _nanmean_last(a: np.ndarray) -> np.ndarray:
    finite = np.isfinite(a)
    n = finite.sum(axis=-1)
    s = np.where(finite, a, 0.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, s / np.maximum(n, 1), np.nan)


def saxs1d_profiles(saxs_1d: np.ndarray, qmap: Any) -> tuple[np.ndarray, np.ndarray,
                                                            np.ndarray, np.ndarray]:
    """Phi-averaged I(q) and the per-phi lines from compressed static bins.

    Parameters
    ----------
    saxs_1d : (Ns,) array
    qmap : QMap

    Returns
    -------
    q : (n_s0,) float64
    mean : (n_s0,) float64
        Mean over the phi sectors that have pixels (NaN if none).
    phi : (n_s1,) float64
    lines : (n_s1, n_s0) float64
        I(q) of each phi sector (NaN for empty cells).
    """
    grid = expand_static(np.asarray(saxs_1d).reshape(-1), qmap)  # (n0, n1)
    q, phi = _static_axes(qmap)
    return q, _nanmean_last(grid), phi, grid.T.copy()


def segment_profiles(segments: np.ndarray, qmap: Any) -> tuple[np.ndarray, np.ndarray]:
    """Phi-averaged I(q) of each time segment.

    Parameters
    ----------
    segments : (S, Ns) array
    qmap : QMap

    Returns
    -------
    q : (n_s0,) float64
    profiles : (S, n_s0) float64
    """
    segments = np.asarray(segments, dtype=np.float64)
    if segments.ndim != 2:
        raise ValueError(f"segments must be (S, Ns), got shape {segments.shape}")
    grid = expand_static(segments, qmap)  # (S, n0, n1)
    q, _ = _static_axes(qmap)
    return q, _nanmean_last(grid)


# ---------------------------------------------------------- 1-D manipulations
def apply_normalization(q: np.ndarray, intensity: np.ndarray, mode: str = "none") -> np.ndarray:
    """Normalise I(q) curves.

    Parameters
    ----------
    q : (n,) float64
        1/Angstrom.
    intensity : (..., n) float64
    mode : {"none", "iq2", "iq4", "i0"}
        ``i0`` divides each curve by its value at the first q where it is finite
        and non-zero.

    Returns
    -------
    (..., n) float64
    """
    q = np.asarray(q, dtype=np.float64)
    y = np.array(intensity, dtype=np.float64)
    if mode == "none":
        return y
    if mode == "iq2":
        return y * q**2
    if mode == "iq4":
        return y * q**4
    if mode == "i0":
        flat = y.reshape(-1, y.shape[-1])
        out = np.full_like(flat, np.nan)
        for i, row in enumerate(flat):
            ok = np.flatnonzero(np.isfinite(row) & (row != 0))
            if ok.size:
                out[i] = row / row[ok[0]]
        return out.reshape(y.shape)
    raise ValueError(f"unknown normalisation {mode!r}; use one of {sorted(NORMALIZATIONS)}")


def normalization_label(mode: str) -> str:
    """Y-axis label of a normalisation mode."""
    return NORMALIZATIONS[mode]


def subtract_background(q: np.ndarray, intensity: np.ndarray, q_bkg: np.ndarray,
                        intensity_bkg: np.ndarray, weight: float = 1.0,
                        clip_negative: bool = True) -> np.ndarray:
    """``I - weight * I_bkg`` on the same q grid.

    Parameters
    ----------
    q, q_bkg : (n,) float64
        Must agree (``np.allclose``): no interpolation is done, so different
        partitions are refused rather than silently mixed.
    intensity : (..., n) float64
    intensity_bkg : (n,) float64
    weight : float
    clip_negative : bool
        Set values <= 0 after subtraction to NaN (they cannot be shown on a log axis
        and mean over-subtraction).

    Raises
    ------
    ValueError
        The q grids differ.
    """
    q = np.asarray(q, dtype=np.float64)
    q_bkg = np.asarray(q_bkg, dtype=np.float64)
    if q.shape != q_bkg.shape or not np.allclose(q, q_bkg, equal_nan=True):
        raise ValueError("background q grid differs from the sample's (different partition)")
    out = np.asarray(intensity, dtype=np.float64) - float(weight) * np.asarray(
        intensity_bkg, dtype=np.float64)
    if clip_negative:
        out = np.where(out > 0, out, np.nan)
    return out


def q_range_mask(q: np.ndarray, qmin: float | None = None, qmax: float | None = None) -> np.ndarray:
    """Boolean mask of ``qmin <= q <= qmax`` (None = open end).

    Raises
    ------
    ValueError
        ``qmin >= qmax``.
    """
    q = np.asarray(q, dtype=np.float64)
    if qmin is not None and qmax is not None and qmin >= qmax:
        raise ValueError(f"q range is empty: qmin={qmin} >= qmax={qmax}")
    m = np.isfinite(q)
    if qmin is not None:
        m &= q >= qmin
    if qmax is not None:
        m &= q <= qmax
    return m


def saxs1d_curves(results: list, *, phi_lines: bool = False, norm: str = "none",
                  qmin: float | None = None, qmax: float | None = None,
                  background: Any = None, bkg_weight: float = 1.0,
                  sampling: int = 1) -> list[Curve]:
    """The SAXS-1D curves of several files (phi average, optionally each phi line).

    Parameters
    ----------
    results : list of XpcsResult
    phi_lines : bool
        Add one curve per phi sector (only when the static map has > 1 sector).
    norm : str
        See :func:`apply_normalization` (applied after background subtraction).
    qmin, qmax : float, optional
        q range (1/Angstrom).
    background : XpcsResult, optional
        Subtracted with ``bkg_weight`` (same partition required).
    sampling : int
        Keep every ``sampling``-th q point (of q *and* I).

    Returns
    -------
    list of Curve
        ``index`` is the file index; labels are ``label`` and ``label φ=…``.
    """
    curves: list[Curve] = []
    bkg = None
    if background is not None:
        qb, mb, _, lb = saxs1d_profiles(background.saxs_1d, background.qmap)
        bkg = (qb, mb, lb)
    step = max(1, int(sampling))
    for i, res in enumerate(results):
        q, mean, phi, lines = saxs1d_profiles(res.saxs_1d, res.qmap)
        if bkg is not None:
            mean = subtract_background(q, mean, bkg[0], bkg[1], bkg_weight)
            if lines.shape == bkg[2].shape:
                lines = subtract_background(q, lines, bkg[0], bkg[2], bkg_weight)
            else:
                lines = subtract_background(q, lines, bkg[0], bkg[1], bkg_weight)
        keep = q_range_mask(q, qmin, qmax)
        idx = np.flatnonzero(keep)[::step]
        curves.append(Curve(q[idx], apply_normalization(q, mean, norm)[idx], res.label,
                            "mean", i))
        if phi_lines and lines.shape[0] > 1:
            normed = apply_normalization(q, lines, norm)
            for k in range(lines.shape[0]):
                curves.append(Curve(q[idx], normed[k][idx],
                                    f"{res.label} \u03c6={phi[k]:.1f}\u00b0", "phi", i))
    return curves


# Moved to views/stability.py; kept importable from here (lazily: no import cycle).
def __getattr__(name: str):
    if name in ("StabilityResult", "stability_analysis"):
        from xpcsviewer.views import stability

        return getattr(stability, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
