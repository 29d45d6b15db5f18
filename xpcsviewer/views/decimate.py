"""Decimation of long curves to what a screen can show (min/max envelopes).

A trace of 100,000 points on a plot 1,500 pixels wide draws ~70 points per pixel
column; the min/max of each column shows the same picture (every spike stays) with
4,000 points. The GUI draws the envelope; exports keep the data.
"""

from __future__ import annotations

import numpy as np

__all__ = ["envelope"]


def envelope(x: np.ndarray, y: np.ndarray, n_bins: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """Min/max envelope of y over ``n_bins`` equal runs of consecutive points.

    Returns (x, y) with two points per run (its min and its max, in their order of
    occurrence, at their own x); curves shorter than 2 * n_bins come back unchanged.
    Non-finite y are skipped in the min/max (a run of them gives NaN).
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    n = y.size
    if n <= 2 * n_bins:
        return x, y
    edges = np.linspace(0, n, n_bins + 1).astype(np.int64)
    size = np.diff(edges)
    m = int(size.max())
    # (n_bins, m) blocks, padded with NaN where a run is shorter
    idx = edges[:-1, None] + np.arange(m)[None, :]
    ok = np.arange(m)[None, :] < size[:, None]
    idx = np.where(ok, idx, 0)
    blk = np.where(ok, y[idx], np.nan)
    fin = np.isfinite(blk)
    lo_i = np.argmin(np.where(fin, blk, np.inf), axis=1)
    hi_i = np.argmax(np.where(fin, blk, -np.inf), axis=1)
    first = np.minimum(lo_i, hi_i)
    second = np.maximum(lo_i, hi_i)
    rows = np.arange(n_bins)
    pos = np.stack([idx[rows, first], idx[rows, second]], axis=1).ravel()
    any_fin = np.repeat(fin.any(axis=1), 2)
    yy = np.where(any_fin, y[pos], np.nan)
    return x[pos], yy
