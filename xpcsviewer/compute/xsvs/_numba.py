"""numba kernel of the XSVS count histograms (:mod:`.histogram`).

One loop over the hits of a block in frame order. Each pixel of a q-bin keeps one row:
the frame it was last lit in, then per exposure level the photons of that level's
current window not yet handed up, then its photons over the run (the mean intensity of
the pixel, for the q-bin's spread of means). Levels nest (a window of level l + 1 is a whole number
of level-l windows), so a hit in the same level-j window as the pixel's last hit closes
exactly levels 0..j-1: each closed window is recorded in its level's histogram and its
count carried into the next level. A hit costs its row plus the levels it closes (log2
of the gap to the pixel's last hit), not the number of levels.

A count is kept doubled, its lowest bit set when a frame of the window was at the
counter cap (the true count is then at least the one seen: a censored sample).
Histograms are (bins, k, levels) while counting: the levels one hit closes share a line.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["close_all", "hits_pass"]

#: hits whose rows are loaded ahead of their updates
GROUP = 32
#: a row (int32, 64-byte lines): the frame last lit (``HI << 31 | LO``; ``HI`` -1: none),
#: the pixel's photons over the run (saturating), then the levels' doubled counts
LO, HI, TOT, LEV = 0, 1, 2, 3


@njit(cache=True, nogil=True)
def _big(photons, b, lev, cnt):  # pragma: no cover
    """The moments of a count beyond kmax (rare: a call, not inlined)."""
    x = np.float64(cnt)
    x2 = x * x
    photons[b, lev, 0] += x
    photons[b, lev, 1] += x2
    photons[b, lev, 2] += x2 * x
    photons[b, lev, 3] += x2 * x2


@njit(cache=True, nogil=True)
def hits_pass(frame, pixel, value, cidx, cbin, state, win, shift, nfull, cap, hist, cens,
              photons, kmax, part, nparts):  # pragma: no cover
    """Add the hits ``(frame, pixel, value)`` (frames non-decreasing, values whole
    numbers) to the histograms.

    ``cidx`` (npix,) int32: a pixel's row in ``state`` (-1: in no q-bin); ``cbin`` its
    0-based q-bin; ``state`` (rows, >= 2 + levels) int64, column 0 the last frame (-1:
    none), column 1 + levels the pixel's photons over the run; ``win`` (levels,) frames
    per window, nested; ``shift`` their log2 (-1: not a power of two: a division, ~40
    cycles, instead of a shift); ``nfull`` whole windows per level; ``cap`` the count at
    which a frame is capped (0: none); ``photons`` (bins, levels, 4) the sums of k, k²,
    k³, k⁴ of the windows beyond kmax (the histogram holds the others'). Only rows
    ``c % nparts == part`` are updated (:func:`hits_parts` runs the parts in threads).
    Returns a sum of no meaning (the loads ahead, kept).
    """
    n = frame.shape[0]
    nl = win.shape[0]
    ncol = state.shape[1]
    rows = np.empty(GROUP, dtype=np.int64)
    touch = 0
    for e in range(n):
        j = e % GROUP
        if j == 0:
            # a photon-sparse block lights random pixels: every row is a cache miss.
            # Loading the next GROUP rows first (independent loads the CPU overlaps)
            # hides most of them; one at a time, each update would wait for its miss.
            for g in range(e, min(n, e + GROUP)):
                cg = np.int64(cidx[np.int64(pixel[g])])
                if cg >= 0 and cg % nparts != part:
                    cg = -1
                rows[g - e] = cg
                if cg >= 0:
                    for q in range(0, ncol, 16):
                        touch += state[cg, q]
        c = rows[j]
        if c < 0:
            continue
        iv = np.int64(value[e])
        if iv <= 0:
            continue
        f = np.int64(frame[e])
        hi = np.int64(state[c, HI])
        lf = (hi << 31) | np.int64(state[c, LO])
        if hi >= 0 and lf != f:
            b = cbin[c]
            carry = np.int64(0)
            for lev in range(nl):
                s = shift[lev]
                if s >= 0:
                    wo = lf >> s
                    wn = f >> s
                else:
                    wo = lf // win[lev]
                    wn = f // win[lev]
                a = np.int64(state[c, LEV + lev])
                tot = (((a >> 1) + (carry >> 1)) << 1) | ((a | carry) & 1)
                if wo == wn:
                    state[c, LEV + lev] = tot
                    break
                state[c, LEV + lev] = 0
                if wo < nfull[lev]:
                    cnt = tot >> 1
                    k = cnt if cnt <= kmax else kmax + 1
                    if tot & 1:
                        cens[b, k, lev] += 1
                    else:
                        hist[b, k, lev] += 1
                    if cnt > kmax:  # the histogram holds the moments of the others
                        _big(photons, b, lev, cnt)
                carry = tot
        state[c, LO] = f & 0x7FFFFFFF
        state[c, HI] = f >> 31
        state[c, TOT] = min(np.int64(state[c, TOT]) + iv, 0x7FFFFFFF)
        flag = 1 if (cap > 0 and iv >= cap) else 0
        a = np.int64(state[c, LEV])
        state[c, LEV] = (((a >> 1) + iv) << 1) | ((a | flag) & 1)
    return touch


@njit(cache=True, nogil=True, parallel=True)
def hits_parts(frame, pixel, value, cidx, cbin, state, win, shift, nfull, cap, hist, cens,
               photons, kmax):  # pragma: no cover
    """:func:`hits_pass` in ``hist.shape[0]`` threads, each on its share of the pixels
    (rows ``c % parts``) with its own histograms (a leading axis of ``hist``, ``cens``,
    ``photons``): the rows' cache misses, which bound the pass, are shared out."""
    parts = hist.shape[0]
    touch = 0
    for t in prange(parts):
        touch += hits_pass(frame, pixel, value, cidx, cbin, state, win, shift, nfull, cap,
                           hist[t], cens[t], photons[t], kmax, t, parts)
    return touch


@njit(cache=True, nogil=True)
def close_all(state, cbin, win, nfull, hist, cens, photons, kmax):  # pragma: no cover
    """Record every pixel's open windows (the end of the run)."""
    nl = win.shape[0]
    for c in range(state.shape[0]):
        hi = np.int64(state[c, HI])
        if hi < 0:
            continue
        lf = (hi << 31) | np.int64(state[c, LO])
        b = cbin[c]
        carry = np.int64(0)
        for lev in range(nl):
            a = np.int64(state[c, LEV + lev])
            tot = (((a >> 1) + (carry >> 1)) << 1) | ((a | carry) & 1)
            state[c, LEV + lev] = 0
            if tot > 1 and lf // win[lev] < nfull[lev]:
                cnt = tot >> 1
                k = cnt if cnt <= kmax else kmax + 1
                if tot & 1:
                    cens[b, k, lev] += 1
                else:
                    hist[b, k, lev] += 1
                if cnt > kmax:
                    _big(photons, b, lev, cnt)
            carry = tot
        state[c, HI] = -1
