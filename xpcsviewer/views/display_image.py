"""View data of the image tabs (SAXS-2D, Detector, Q-Map): display pixels made off the
GUI thread, log images, automatic levels, and what a hovered pixel is.

pyqtgraph rescales a float image through its lookup table whenever it renders it
(60-90 ms for 3-4 Mpixels on the GUI thread). A uint8 image with a 256-entry table is
shown as an indexed QImage with no pass over the data, so the worker quantizes the
image once for given levels, and colour maps or a level drag only change the table
(:func:`remap_table`) until the worker has re-quantized.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "NO_VALUE",
    "N_COLOURS",
    "PixelInfo",
    "auto_levels",
    "image_histogram",
    "log_image",
    "pixel_info",
    "quantize_image",
    "quantize_job",
    "remap_table",
]

HC_KEV_ANGSTROM = 12.398419843320026  # h*c in keV*Angstrom
N_COLOURS = 255  # indices 0..254 carry values; the last index marks non-finite pixels
NO_VALUE = 255


def quantize_image(img: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Colour indices of ``img`` for display levels ``(lo, hi)``.

    Index ``floor((v - lo) / (hi - lo) * 255)`` clipped to 0..254; non-finite pixels
    get :data:`NO_VALUE`.

    Returns
    -------
    (H, W) uint8
    """
    a = np.asarray(img)
    if a.dtype.kind != "f":
        a = a.astype(np.float64)
    span = float(hi) - float(lo)
    if not span > 0:
        span = 1.0
    scaled = (a - a.dtype.type(lo)) * a.dtype.type(N_COLOURS / span)
    finite = np.isfinite(scaled)
    scaled[~finite] = 0
    np.clip(scaled, 0, N_COLOURS - 1, out=scaled)
    out = scaled.astype(np.uint8)  # truncation = floor on the clipped, non-negative values
    out[~finite] = NO_VALUE
    return out


def quantize_job(img: np.ndarray, levels, progress=None, cancel=None) -> dict:
    """Worker job: ``{"pixels": quantize_image(img, *levels), "pixel_levels": levels}``."""
    lo, hi = float(levels[0]), float(levels[1])
    return {"pixels": quantize_image(img, lo, hi), "pixel_levels": (lo, hi)}


def remap_table(colours: np.ndarray, quant_levels: tuple[float, float],
                levels: tuple[float, float]) -> np.ndarray:
    """The 256-entry table that shows pixels quantized for ``quant_levels`` as if they
    had been quantized for ``levels`` (to within one quantization step).

    Parameters
    ----------
    colours : (255, 4) uint8
        The colour map's RGBA entries for indices 0..254.

    Returns
    -------
    (256, 4) uint8
        The last entry is transparent (non-finite pixels).
    """
    colours = np.asarray(colours, dtype=np.uint8)
    if colours.shape != (N_COLOURS, 4):
        raise ValueError(f"colours must be ({N_COLOURS}, 4) uint8, got {colours.shape}")
    qlo, qhi = (float(v) for v in quant_levels)
    lo, hi = (float(v) for v in levels)
    qspan = qhi - qlo if qhi > qlo else 1.0
    span = hi - lo if hi > lo else 1.0
    centres = qlo + (np.arange(N_COLOURS) + 0.5) * (qspan / N_COLOURS)
    idx = np.clip(np.floor((centres - lo) / span * N_COLOURS), 0, N_COLOURS - 1).astype(int)
    table = np.zeros((N_COLOURS + 1, 4), dtype=np.uint8)
    table[:N_COLOURS] = colours[idx]
    return table


def image_histogram(img: np.ndarray, bins: int = 200,
                    max_samples: int = 1_000_000) -> tuple[np.ndarray, np.ndarray]:
    """Histogram of the finite pixels for the levels bar.

    Images larger than ``max_samples`` are sampled with a regular stride (the bar is a
    guide, ~200 bins wide).

    Returns
    -------
    centres, counts : (bins,) float64 arrays (empty when no pixel is finite)
    """
    flat = np.asarray(img).ravel()
    step = max(1, flat.size // max_samples)
    v = flat[::step].astype(np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return np.zeros(0), np.zeros(0)
    lo, hi = float(v.min()), float(v.max())
    if not hi > lo:
        lo, hi = lo - 0.5, hi + 0.5
    counts, edges = np.histogram(v, bins=bins, range=(lo, hi))
    return 0.5 * (edges[:-1] + edges[1:]), counts.astype(np.float64)


# ----------------------------------------------------------------------- images
def log_image(img: np.ndarray) -> np.ndarray:
    """log10 of an image; non-positive and non-finite pixels take the smallest positive value.

    Parameters
    ----------
    img : (H, W) array

    Returns
    -------
    (H, W) float64
        All finite. An image with no positive pixel gives all zeros.
    """
    a = np.asarray(img, dtype=np.float64)
    pos = np.isfinite(a) & (a > 0)
    if not pos.any():
        return np.zeros_like(a)
    floor = a[pos].min()
    return np.log10(np.where(pos, a, floor))


def auto_levels(img: np.ndarray, lo: float = 0.5, hi: float = 99.5,
                mask: np.ndarray | None = None) -> tuple[float, float]:
    """Display levels from percentiles of the finite (and masked-in) pixels.

    Returns
    -------
    (low, high) : floats with ``low < high``.
    """
    a = np.asarray(img, dtype=np.float64)
    sel = np.isfinite(a)
    if mask is not None:
        sel &= np.asarray(mask, dtype=bool)
    v = a[sel]
    if v.size == 0:
        return 0.0, 1.0
    low, high = (float(x) for x in np.percentile(v, [lo, hi]))
    if not high > low:
        high = low + (abs(low) * 1e-6 or 1.0)
    return low, high


@dataclass(frozen=True)
class PixelInfo:
    """What the hover readout shows for one pixel."""

    row: int
    col: int
    inside: bool
    q: float = math.nan  # 1/Angstrom, from the geometry
    phi: float = math.nan  # deg, -atan2(row - bcy, col - bcx)
    qx: float = math.nan
    qy: float = math.nan
    dynamic_bin: int = 0  # 1-based, 0 = excluded
    static_bin: int = 0
    dynamic_q: float = math.nan
    dynamic_phi: float = math.nan
    static_q: float = math.nan
    static_phi: float = math.nan
    valid: bool = False  # mask value

    def text(self, intensity: float | None = None) -> str:
        """One-line readout, e.g. ``"I=1.2e-3  q=0.00312 Å⁻¹  φ=-45.0°  x=10 y=20"``."""
        if not self.inside:
            return ""
        parts = []
        if intensity is not None:
            parts.append(f"I={intensity:.4g}")
        if math.isfinite(self.q):
            parts.append(f"q={self.q:.5f} \u00c5\u207b\u00b9")
        if math.isfinite(self.phi):
            parts.append(f"\u03c6={self.phi:.1f}\u00b0")
        parts.append(f"x={self.col} y={self.row}")
        if self.dynamic_bin:
            parts.append(f"dyn bin {self.dynamic_bin}")
        if self.static_bin:
            parts.append(f"static bin {self.static_bin}")
        if not self.valid:
            parts.append("(masked)")
        return "  ".join(parts)


def pixel_info(qmap: Any, row: float, col: float) -> PixelInfo:
    """q, phi and bins of the detector pixel at (row, col).

    q uses the exact scattering angle ``q = 2 k0 sin(alpha / 2)`` with
    ``alpha = atan(r / D)``, ``r = pixel_size * hypot(row - bcy, col - bcx)`` and
    ``k0 = 2 pi / lambda`` (needs ``qmap.energy_kev``; otherwise q is NaN).
    phi = -atan2(row - bcy, col - bcx) in degrees (the existing viewers' convention).
    """
    h, w = qmap.shape
    r_i, c_i = math.floor(row), math.floor(col)
    if not (0 <= r_i < h and 0 <= c_i < w):
        return PixelInfo(r_i, c_i, False)
    dy = r_i - float(qmap.beam_center_y)
    dx = c_i - float(qmap.beam_center_x)
    phi = -math.degrees(math.atan2(dy, dx))
    q = qx = qy = math.nan
    if qmap.energy_kev:
        k0 = 2 * math.pi / (HC_KEV_ANGSTROM / float(qmap.energy_kev))
        alpha = math.atan(float(qmap.pixel_size) * math.hypot(dy, dx)
                          / float(qmap.detector_distance))
        q = 2 * k0 * math.sin(alpha / 2)
        qx = q * math.cos(math.radians(phi))
        qy = q * math.sin(math.radians(phi))
    d = int(qmap.dynamic_roi_map[r_i, c_i])
    s = int(qmap.static_roi_map[r_i, c_i])
    dq = dp = sq = sp = math.nan
    if 0 < d <= qmap.n_dynamic:
        dq, dp = float(qmap.dynamic_q[d - 1]), float(qmap.dynamic_phi[d - 1])
    if 0 < s <= qmap.n_static:
        sq, sp = float(qmap.static_q[s - 1]), float(qmap.static_phi[s - 1])
    return PixelInfo(r_i, c_i, True, q, phi, qx, qy, d, s, dq, dp, sq, sp,
                     bool(np.asarray(qmap.mask)[r_i, c_i]))
