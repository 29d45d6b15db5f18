"""numba kernel of the raw statistics over hits (:mod:`.accumulate`).

One loop over the hits of a block, in their stored order: every timeline, per-pixel map
and count histogram is updated in the same pass, and the hits that may belong to a
cosmic-ray cluster are marked. No frame is ever made dense.

A pixel may appear more than once in one frame (event lists: values add). Each pixel
keeps the frame it was last lit in and its value there so far; a repeated hit moves that
pixel-frame from its old value to the new one (histogram, cap counts, maximum), so the
result is exactly that of the summed frame.

Imported only when a raw source is inspected (importing numba costs ~0.5 s); compiled
once per machine into numba's disk cache (the precompile's ``raw statistics`` tasks).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["hits_pass"]

# columns of the per-pixel state (one 64-byte row: one cache line per hit): run sum,
# maximum in one frame, last frame lit, its value there, the pixel's lut entry
SUM, MAX, LAST, CUR, LUT = 0, 1, 2, 3, 4
#: hits whose state rows are loaded ahead of their updates
GROUP = 32


@njit(cache=True, nogil=True)
def hits_pass(frame, pixel, value, caps, kmax, log_bright, state, cap_frames,
              photons, hits, at_level, bin_ph, hist, cand, cand_val):  # pragma: no cover
    """Add the hits ``(frame, pixel, value)`` to the statistics (see :mod:`.accumulate`).

    ``state`` (npix, 8) float64 holds per pixel its sums and its lut entry (-1 not valid,
    0 valid in no q-bin, else its 1-based bin); ``caps``: candidate counter caps;
    ``cap_frames`` (L, npix); timelines indexed by frame; ``hist`` (n_bins + 1, kmax + 2).
    Hits of value <= 0 are skipped. ``cand[e]`` is set to 1 for a hit whose pixel-frame
    value (so far) is >= 2 and whose single-mode tail under the pixel's mean over the
    frames before it is at most ``exp(log_bright)`` (``cand_val[e]``: that value).
    """
    n = frame.shape[0]
    nl = caps.shape[0]
    top = kmax + 1
    touch = 0.0
    for e in range(n):
        if e % GROUP == 0:
            # load the next GROUP hits' state rows first: independent loads the CPU
            # overlaps, where the updates below, one hit at a time, wait for each miss
            for g in range(e, min(n, e + GROUP)):
                touch += state[np.int64(pixel[g]), SUM]
        cand[e] = 0
        v = np.float64(value[e])
        if not (v > 0.0):
            continue
        p = np.int64(pixel[e])
        f = np.int64(frame[e])
        fl = np.float64(f)
        if state[p, LAST] == fl:  # the pixel's second hit in this frame: values add
            old = state[p, CUR]
        else:
            old = 0.0
            state[p, LAST] = fl
        new = old + v
        state[p, CUR] = new
        state[p, SUM] += v
        if new > state[p, MAX]:
            state[p, MAX] = new
        # the cap levels the pixel-frame leaves and reaches (caps are distinct: one
        # each), found before any store: a loop of conditional stores over the levels
        # compiles to masked vector stores, microcoded on AMD cores (15 x slower per hit)
        mo = -1
        mn = -1
        for m in range(nl):
            if old == caps[m]:
                mo = m
            if new == caps[m]:
                mn = m
        if mo >= 0:
            cap_frames[mo, p] -= 1
        if mn >= 0:
            cap_frames[mn, p] += 1
        b = np.int64(state[p, LUT])
        if b >= 0:
            photons[f] += v
            if old == 0.0:
                hits[f] += 1
            else:
                hist[b, min(np.int64(old), top)] -= 1
            hist[b, min(np.int64(new), top)] += 1
            if b > 0:
                bin_ph[f, b - 1] += v
            if mo >= 0:
                at_level[f, mo] -= 1
            if mn >= 0:
                at_level[f, mn] += 1
        if new >= 2.0:
            lam = (state[p, SUM] - new) / (fl + 1.0)  # mean over the frames before
            if lam <= 0.0 or new * math.log(lam / (1.0 + lam)) <= log_bright:
                cand[e] = 1
                cand_val[e] = new
    return touch
