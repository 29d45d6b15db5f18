"""Where the age windows lie on a two-time map (no Qt): polygons in seconds.

The map is drawn with t2 along x and t1 along y, frame ``f`` at ``f * t0`` s. A window
``[lo, hi]`` (s) read at constant age is the strip ``lo <= (t1 + t2) / 2 <= hi``
across the diagonal; read at constant t1 it is the rows ``lo <= t1 <= hi`` from the
diagonal to the end of the run. Both are cut to the stored half ``t1 <= t2`` inside
``[0, t_end]``; ``mirror`` swaps x and y (to show the other way in the other half).
"""

from __future__ import annotations

import numpy as np

__all__ = ["WAYS", "band_polygon", "clip_polygon"]

#: The two ways of cutting a map by time (Ragulskaya et al., J. Appl. Cryst. 2024).
WAYS = ("age", "t1")


def clip_polygon(poly: np.ndarray, a: float, b: float, c: float) -> np.ndarray:
    """The part of convex polygon ``poly`` ((k, 2): x, y) where ``a x + b y <= c``."""
    pts = np.asarray(poly, dtype=np.float64)
    if pts.shape[0] == 0:
        return pts.reshape(0, 2)
    out = []
    s = pts @ np.array([a, b]) - c
    for k in range(pts.shape[0]):
        p, q = pts[k], pts[(k + 1) % pts.shape[0]]
        sp, sq = s[k], s[(k + 1) % pts.shape[0]]
        if sp <= 0:
            out.append(p)
        if (sp < 0 < sq) or (sq < 0 < sp):  # the edge crosses the line
            out.append(p + (q - p) * (sp / (sp - sq)))
    return np.array(out, dtype=np.float64).reshape(-1, 2)


def band_polygon(lo: float, hi: float, t_end: float, way: str,
                 mirror: bool = False) -> np.ndarray:
    """(k, 2) corners (x = t2, y = t1 in s) of the window ``[lo, hi]`` read ``way``
    (``"age"`` or ``"t1"``); empty where the window misses the run."""
    if way not in WAYS:
        raise ValueError(f"way must be one of {WAYS}, got {way!r}")
    lo, hi, t_end = float(lo), float(hi), float(t_end)
    # the stored half: 0 <= t1 <= t2 <= t_end, as (x = t2, y = t1)
    poly = np.array([[0.0, 0.0], [t_end, 0.0], [t_end, t_end]])
    if way == "age":  # lo <= (x + y) / 2 <= hi
        cuts = ((1.0, 1.0, 2 * hi), (-1.0, -1.0, -2 * lo))
    else:  # lo <= y <= hi
        cuts = ((0.0, 1.0, hi), (0.0, -1.0, -lo))
    for a, b, c in cuts:
        poly = clip_polygon(poly, a, b, c)
    if poly.shape[0] < 3:
        return np.zeros((0, 2))
    return poly[:, ::-1].copy() if mirror else poly
