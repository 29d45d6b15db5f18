"""Per-pixel G2/IP/IF of the multi-tau correlator and their reduction to bins.

One implementation serves three callers, so that a per-pixel stack regrouped with
the correlator's own partition gives back exactly the correlator's g2:

- :class:`~xpcsviewer.compute.multitau.correlator.MultitauCorrelator` (``result()``) reduces
  the per-pixel terms of each level to static/dynamic sums (:func:`finalize_kernel`)
  and combines them (:func:`combine_bin_sums`);
- :func:`iter_pixel_planes` streams the per-pixel terms of a finished correlator,
  one delay at a time, scattered back to the detector (the ``unnormalized_G2``
  stack of a result file);
- :mod:`xpcsviewer.compute.detector.regroup` reads those planes back from a file and bins
  them with any partition.

Per pixel and delay x of a level with ``count`` frames (result-file-format.md §5)::

    G2 = sumprod / (count - x)
    IP = (total - sum of the last x frames) / (count - x)     (past window)
    IF = (total - sum of the first x frames) / (count - x)    (future window)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from xpcsviewer.backends import ensure_numpy
from xpcsviewer.compute._binning import kernel_cache, segment_sum_rows

__all__ = [
    "MIN_PAIRS",
    "ZERO_DENOMINATOR",
    "combine_bin_sums",
    "finalize_kernel",
    "iter_pixel_planes",
    "pixel_terms",
    "reduce_pixel_terms",
]

#: a zero denominator becomes this (g2 ~ 0), as in the standard correlator
ZERO_DENOMINATOR = 1e8
#: fewest frame pairs (at the delay's level) for a delay to be reported
MIN_PAIRS = 2


def pixel_terms(xp: Any, hist: Any, first: Any, sumprod: Any, total: Any, count: Any,
                xs: np.ndarray) -> tuple[Any, Any, Any]:
    """Per-pixel G2, IP, IF of one level from its streaming state.

    Parameters
    ----------
    xp : array namespace (numpy or jax.numpy)
    hist : (B, P) the last B frames, oldest first
    first : (B, P) the first B frames
    sumprod : (k, P) sums of products for the delays ``xs``
    total : (P,) running sum
    count : int, frames seen at this level
    xs : (k,) int, delays in level frames

    Returns
    -------
    G2, IP, IF : (k, P) float64
    """
    norm = xp.maximum(count - xp.asarray(xs), 1).astype(xp.float64)[:, None]
    # one sum per delay (xs is static): no (B, P) temporaries when k is 1
    b = hist.shape[0]
    last = xp.stack([hist[b - int(x):].sum(axis=0) for x in xs])
    firsts = xp.stack([first[: int(x)].sum(axis=0) for x in xs])
    return sumprod / norm, (total[None, :] - last) / norm, (total[None, :] - firsts) / norm


def reduce_pixel_terms(backend: Any, terms: tuple[Any, Any, Any], sid: Any, did: Any,
                       d_count: Any, ns: int, nd: int) -> tuple[Any, ...]:
    """Static sums of G2/IP/IF and the dynamic sums for g2's spread (traceable).

    Parameters
    ----------
    terms : (g2, ip, if_), each (k, P)
        Per-pixel terms of k delays.
    sid, did : (P,) 0-based static / dynamic bin of each pixel
    d_count : (nd,) pixels per dynamic bin
    ns, nd : numbers of static / dynamic bins

    Returns
    -------
    s_g2, s_ip, s_if : (k, ns) static-bin sums
    dsum : (k, nd) sum over each dynamic bin of the per-pixel ``G2 / (IP IF)``
    dss : (k, nd) sum of its squared deviations from the bin mean
    """
    xp = backend.xp
    g2, ip, if_ = terms
    s_g2 = segment_sum_rows(backend, g2.T, sid, ns).T
    s_ip = segment_sum_rows(backend, ip.T, sid, ns).T
    s_if = segment_sum_rows(backend, if_.T, sid, ns).T
    pden = ip * if_
    pix = g2 / xp.where(pden == 0, ZERO_DENOMINATOR, pden)
    dsum = segment_sum_rows(backend, pix.T, did, nd).T
    dmean = dsum / xp.where(d_count > 0, d_count, 1.0)[None, :]
    dev = pix - dmean[:, did]
    dss = segment_sum_rows(backend, (dev * dev).T, did, nd).T
    return s_g2, s_ip, s_if, dsum, dss


def finalize_kernel(backend: Any, buf: int, xs: tuple[int, ...]) -> Any:
    """Jitted: per-pixel terms of one level reduced to static and dynamic sums."""

    def build() -> Any:
        xp = backend.xp
        xs_arr = np.asarray(xs)

        def fin(hist, first, sumprod, total, count, sid, did, d_count, ns, nd):
            g2, ip, if_ = pixel_terms(xp, hist, first, sumprod, total, count, xs_arr)
            return reduce_pixel_terms(backend, (g2, ip, if_), sid, did, d_count, ns, nd)

        return backend.jit(fin, static_argnames=("ns", "nd"))

    return kernel_cache(backend, ("multitau_finalize", buf, xs), build)


def combine_bin_sums(s_g2: np.ndarray, s_ip: np.ndarray, s_if: np.ndarray,
                     dss: np.ndarray, static_count: np.ndarray, dynamic_count: np.ndarray,
                     static_to_dynamic: np.ndarray, nd: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Static smoothing (ratio of sums) and errors from the bin sums (host, float64).

    ``g2_s = n_s ΣG2 / (ΣIP ΣIF)`` per static bin; the dynamic g2 is the mean of
    ``g2_s`` over the non-empty static bins inside it; the error is the standard
    deviation of the per-pixel g2 over the dynamic bin divided by √n.

    Returns
    -------
    g2, err : (k, nd); NaN for dynamic bins without pixels
    g2_static : (k, ns); NaN for static bins without pixels
    """
    s_count = np.asarray(static_count, dtype=np.float64)
    d_count = np.asarray(dynamic_count, dtype=np.float64)
    s_ok = s_count > 0
    s2d = np.where(s_ok, static_to_dynamic, nd)  # empty static bins dropped
    n_s_in_d = np.bincount(np.asarray(static_to_dynamic)[s_ok], minlength=nd)[:nd]
    den = s_ip * s_if
    den = np.where(den == 0, ZERO_DENOMINATOR, den)
    gs = s_count * s_g2 / den
    gs_sum = np.zeros((gs.shape[0], nd + 1))
    for r in range(gs.shape[0]):  # rows are few (delays of one level or one plane)
        gs_sum[r] = np.bincount(s2d, weights=gs[r], minlength=nd + 1)[: nd + 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        g2 = gs_sum[:, :nd] / n_s_in_d
        err = np.sqrt(dss / d_count) / np.sqrt(d_count)
    return g2, err, np.where(s_ok, gs, np.nan)


def iter_pixel_planes(corr: Any) -> Iterator[tuple[int, np.ndarray]]:
    """Per-pixel G2, IP, IF of a correlator, one delay at a time, on the detector.

    Parameters
    ----------
    corr : MultitauCorrelator
        After its frames were processed (its state is only read).

    Yields
    ------
    k : int
        Row of the delay list.
    plane : (3, H, W) float32
        G2, IP, IF of delay k at every correlated pixel; 0 elsewhere (the standard
        correlator's convention) and at delays with fewer than ``MIN_PAIRS`` pairs,
        which the correlator does not report either (g2 = 0, error 0 on regrouping).

    Notes
    -----
    Memory is one plane plus a few (P,) vectors: the level state is read one delay
    at a time.
    """
    pb = corr.pixels
    h, w = pb.shape
    idx = pb.pixel_index
    row = 0
    for lvl, lv in enumerate(corr._levels):
        n_here = int((corr.levels == lvl).sum())
        if corr._cpu is not None:
            state = corr._cpu.level_state(lvl, lv.xs)
        else:
            state = (lv.hist, lv.first, lv.sumprod, lv.total, lv.count)
        hist, first, sumprod, total = (ensure_numpy(a) for a in state[:4])
        count = int(state[4])
        for j, x in enumerate(lv.xs[:n_here]):
            plane = np.zeros((3, h * w), dtype=np.float32)
            if count - x >= MIN_PAIRS:
                terms = pixel_terms(np, hist, first, sumprod[j : j + 1], total, count,
                                    np.asarray([x]))
                for c in range(3):
                    plane[c, idx] = terms[c][0]
                del terms  # before the next delay's: memory stays a few frames
            yield row, plane.reshape(3, h, w)
            del plane
            row += 1
