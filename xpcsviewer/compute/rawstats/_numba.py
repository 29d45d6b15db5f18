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

# columns of the per-pixel state: run sum, maximum in one frame, last frame lit, its value
SUM, MAX, LAST, CUR = 0, 1, 2, 3


@njit(cache=True, nogil=True)
def hits_pass(frame, pixel, value, lut, caps, kmax, log_bright, state, cap_frames,
              photons, hits, at_level, bin_ph, hist, cand, cand_val):  # pragma: no cover
    """Add the hits ``(frame, pixel, value)`` to the statistics (see :mod:`.accumulate`).

    ``lut``: detector pixel -> -1 (not valid), 0 (valid, in no q-bin) or its 1-based bin;
    ``caps``: candidate counter caps; ``state`` (npix, 4) float64; ``cap_frames`` (L, npix);
    timelines indexed by frame; ``hist`` (n_bins + 1, kmax + 2). Hits of value <= 0 are
    skipped. ``cand[e]`` is set to 1 for a hit whose pixel-frame value (so far) is >= 2 and
    whose single-mode tail under the pixel's mean over the frames before it is at most
    ``exp(log_bright)`` (``cand_val[e]``: that value).
    """
    n = frame.shape[0]
    nl = caps.shape[0]
    top = kmax + 1
    for e in range(n):
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
        for m in range(nl):
            if old == caps[m]:
                cap_frames[m, p] -= 1
            if new == caps[m]:
                cap_frames[m, p] += 1
        b = lut[p]
        if b >= 0:
            photons[f] += v
            if old == 0.0:
                hits[f] += 1
            else:
                ko = min(np.int64(old), top)
                hist[b, ko] -= 1
            kn = min(np.int64(new), top)
            hist[b, kn] += 1
            if b > 0:
                bin_ph[f, b - 1] += v
            for m in range(nl):
                if old == caps[m]:
                    at_level[f, m] -= 1
                if new == caps[m]:
                    at_level[f, m] += 1
        if new >= 2.0:
            lam = (state[p, SUM] - new) / (fl + 1.0)  # mean over the frames before
            if lam <= 0.0 or new * math.log(lam / (1.0 + lam)) <= log_bright:
                cand[e] = 1
                cand_val[e] = new
