"""Display pixels for large images, made off the GUI thread.

pyqtgraph rescales a float image through its lookup table whenever it renders it
(60-90 ms for 3-4 Mpixels on the GUI thread). A uint8 image with a 256-entry table is
shown as an indexed QImage with no pass over the data, so the worker quantizes the
image once for given levels, and colour maps or a level drag only change the table
(:func:`remap_table`) until the worker has re-quantized.
"""

from __future__ import annotations

import numpy as np

__all__ = ["N_COLOURS", "NO_VALUE", "image_histogram", "quantize_image", "quantize_job",
           "remap_table"]

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
