"""Cosmic-ray and gamma clusters: a few neighbouring pixels lit far above their rates in
one frame.

The pass marks bright hits (:data:`.accumulate.BRIGHT_P`); here they are joined into
8-connected clusters of one frame (neighbours found by a search on the sorted keys
``frame * H * W + pixel``: no frame is made dense) and scored with the run's pixel means.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["COSMIC_MARGIN", "COSMIC_MIN_PIXELS", "Cluster", "find_clusters",
           "score_clusters"]

#: fewest pixels of a cluster: one or two bright pixels are a hot pixel's flicker or a
#: bright speckle; a track or a gamma's charge cloud lights three or more
COSMIC_MIN_PIXELS = 3
#: a cluster is reported when both of its scores exceed log10(frames x valid pixels) (the
#: places a cluster could have been) by this much: about 10**-3 false clusters per run
COSMIC_MARGIN = 3.0

_NEIGHBOURS = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))


@dataclass(frozen=True)
class Cluster:
    """One frame's 8-connected bright pixels."""

    frame: int
    pixels: np.ndarray  #: (m,) flat pixel indices, ascending
    values: np.ndarray  #: (m,) their counts in that frame


def find_clusters(frame: np.ndarray, pixel: np.ndarray, value: np.ndarray,
                  shape: tuple[int, int],
                  min_pixels: int = COSMIC_MIN_PIXELS) -> list[Cluster]:
    """8-connected groups of at least ``min_pixels`` of the hits ``(frame, pixel, value)``
    (each pixel-frame once) within one frame, in (frame, first pixel) order."""
    h, w = int(shape[0]), int(shape[1])
    npix = h * w
    f = np.asarray(frame, dtype=np.int64)
    p = np.asarray(pixel, dtype=np.int64)
    v = np.asarray(value, dtype=np.float64)
    if f.size < min_pixels:
        return []
    key = f * npix + p
    order = np.argsort(key, kind="stable")
    key, f, p, v = key[order], f[order], p[order], v[order]
    r, c = np.divmod(p, w)
    src, dst = [], []
    for dr, dc in _NEIGHBOURS[4:]:  # each pair once: the neighbour after the pixel
        rr, cc = r + dr, c + dc
        ok = (rr >= 0) & (rr < h) & (cc >= 0) & (cc < w)
        nk = f * npix + rr * w + cc
        at = np.minimum(np.searchsorted(key, nk), key.size - 1)
        hit = ok & (key[at] == nk)
        src.append(np.flatnonzero(hit))
        dst.append(at[hit])
    a = np.concatenate(src)
    b = np.concatenate(dst)
    if a.size == 0 and min_pixels > 1:
        return []
    label = np.arange(key.size)
    while a.size:  # min-label propagation with pointer jumping: a few rounds
        lo = np.minimum(label[a], label[b])
        new = label.copy()
        np.minimum.at(new, a, lo)
        np.minimum.at(new, b, lo)
        new = new[new]
        if np.array_equal(new, label):
            break
        label = new
    ids, inv, counts = np.unique(label, return_inverse=True, return_counts=True)
    big = np.flatnonzero(counts >= min_pixels)
    out = []
    for g in big:
        members = np.flatnonzero(inv == g)
        out.append(Cluster(int(f[members[0]]), p[members], v[members]))
    out.sort(key=lambda cl: (cl.frame, int(cl.pixels[0])))
    del ids
    return out


def _poisson_log10_sf(k: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """log10 P(X >= k) for X ~ Poisson(mean), k >= 1."""
    from scipy.special import gammainc

    k = np.asarray(k, dtype=np.float64)
    mean = np.asarray(mean, dtype=np.float64)
    with np.errstate(divide="ignore"):
        direct = np.log10(gammainc(k, mean))  # P(X >= k) = P(k, mean), regularised
    # far in the tail gammainc underflows: the leading term mean**k e**-mean / k!
    from scipy.special import gammaln

    approx = (k * np.log(mean) - mean - gammaln(k + 1.0)) / math.log(10.0)
    return np.where(np.isfinite(direct) & (direct > -250), direct, approx)


def score_clusters(clusters: list[Cluster], pixel_sum: np.ndarray,
                   n_frames: int) -> list[tuple[float, float]]:
    """(joint Poisson score, single-mode score) of each cluster, as -log10 of a tail
    probability, with each pixel's mean over the run's other frames.

    - joint Poisson: the product over the pixels of P(X >= count | pixel mean), the
      pixels independent;
    - single mode: P(K >= summed counts) for the summed mean under one fully coherent
      speckle mode (a geometric law, the heaviest tail speckle has), so that a bright
      speckle covering the cluster's pixels at once is not taken for a cosmic.

    A pixel never lit in the other frames is given the mean of one count in the run (the
    least a rate estimated from N frames can be told from zero).
    """
    flat = np.asarray(pixel_sum, dtype=np.float64).reshape(-1)
    n = max(int(n_frames), 2)
    out = []
    for cl in clusters:
        others = np.maximum(flat[cl.pixels] - cl.values, 0.0) / (n - 1)
        mean = np.maximum(others, 1.0 / n)
        k = np.maximum(np.floor(cl.values), 1.0)
        joint = float(-np.sum(_poisson_log10_sf(k, mean)))
        m, kk = float(mean.sum()), float(k.sum())
        single = -kk * math.log10(m / (1.0 + m))
        out.append((joint, single))
    return out
