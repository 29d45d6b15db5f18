"""Delay points whose stated error cannot be right.

In multi-tau results the error of g2 changes smoothly from one delay to the next (by
at most ~1.5x between neighbours in the 8-ID-I files). The last delay of a file often
sits alone on its multi-tau level with few frame pairs, yet the correlator states an
error ~3.7x *smaller* than its neighbour's; fitted with that weight, the one point
pulls tau by 1.5-2x. Such a point is kept (it is drawn) but left out of fits by
default.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SUSPECT_ERROR_RATIO", "suspect_errors"]

#: A point is suspect when its error is below this fraction of the smaller error of
#: its valid neighbours (the one neighbour at either end of the curve).
SUSPECT_ERROR_RATIO = 0.5


def suspect_errors(g2_err: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """(T, N) bool: valid points whose error is implausibly small against its neighbours.

    Parameters
    ----------
    g2_err : (T, N) float
    valid : (T, N) bool
        Points that are data; only those (with a positive, finite error) are compared,
        and the neighbours are the adjacent such points along the delay axis.
    """
    err = np.asarray(g2_err, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        use = np.asarray(valid, dtype=bool) & np.isfinite(err) & (err > 0)
    out = np.zeros(err.shape, dtype=bool)
    for j in range(err.shape[1]):
        idx = np.flatnonzero(use[:, j])
        if idx.size < 2:
            continue
        e = err[idx, j]
        left = np.concatenate([[np.inf], e[:-1]])
        right = np.concatenate([e[1:], [np.inf]])
        out[idx[e < SUSPECT_ERROR_RATIO * np.minimum(left, right)], j] = True
    return out
