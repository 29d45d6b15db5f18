"""numba kernels of the photon multi-tau correlator (``multitau_sparse``).

Imported only when a sparse job runs (importing numba costs ~0.5 s); compiled once per
machine into numba's disk cache.

Per block of frames the hits are put in pixel order (a counting sort: stable, so each
pixel's hits stay in frame order), then each thread takes a band of pixels and carries
each pixel through every level: at level L the pixel's hits are paired with its last B
hits of that level (a small ring: one entry per hit, so the B frames before a hit are
all there), and consecutive pairs of level-L frames give the pixel's hits at level L+1.
The cost is the hits of each level (at most pixels x frames / 2^L) plus a few operations
per pixel and level per block; no dense frame is ever formed.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["count_hits", "levels_update", "scatter_hits"]


@njit(cache=True, nogil=True)
def count_hits(pixel, lut, cnt):  # pragma: no cover - compiled
    """cnt[q] += hits of correlated pixel q (``lut``: detector pixel -> q or -1)."""
    for e in range(pixel.shape[0]):
        q = lut[pixel[e]]
        if q >= 0:
            cnt[q] += 1


@njit(cache=True, nogil=True)
def scatter_hits(frame, pixel, value, scale, f0, lut, off, out_t, out_v):  # pragma: no cover
    """Hits into pixel order (stable); ``scale`` per frame (relative to f0), or empty."""
    pos = off[:-1].copy()
    use_scale = scale.shape[0] > 0
    for e in range(pixel.shape[0]):
        q = lut[pixel[e]]
        if q < 0:
            continue
        k = pos[q]
        t = frame[e]
        out_t[k] = t
        v = np.float64(value[e])
        if use_scale:
            v = v * scale[t - f0]
        out_v[k] = v
        pos[q] = k + 1


@njit(cache=True, nogil=True, inline="always")
def _level(q, lvl, ta, va, na, tb, vb, rt, rv, rh, sp, first, tot0, cprev, cnew, xmin, nl):
    """One level of one pixel: pairs, ring, first frames, totals; returns hits emitted
    into (tb, vb) for level lvl + 1.

    A hit's partners are the hits before it within B frames: first in this block's list
    (``ta``), then, for the first hits only, in the ring of hits from earlier blocks. The
    ring is written once at the end (its last B hits), not per hit.
    """
    buf = rt.shape[2]
    h = rh[q, lvl]
    pos = h % buf  # ring slot of the next hit; the newest is pos - 1
    nring = h if h < buf else buf
    nxt = lvl + 1 < nl
    cnext = cnew[lvl + 1] if nxt else 0
    cur_k = -1
    cur_v = 0.0
    if nxt and (cprev[lvl] & 1) == 1 and h > 0:
        # the unpaired frame left by the previous block: the pixel's newest hit, if it
        # is that frame (dense: hist[-1])
        idx = pos - 1 if pos > 0 else buf - 1
        if rt[q, lvl, idx] == cprev[lvl] - 1:
            cur_k = (cprev[lvl] - 1) >> 1
            cur_v = rv[q, lvl, idx]
    nout = 0
    acc = 0.0
    for i in range(na):
        t = ta[i]
        v = va[i]
        j = i - 1
        near = True
        while j >= 0:
            dt = t - ta[j]
            if dt > buf:
                near = False
                break
            if dt >= xmin:
                sp[q, lvl, dt - 1] += v * va[j]
            j -= 1
        if near and nring > 0:
            idx = pos
            for _ in range(nring):
                idx = idx - 1 if idx > 0 else buf - 1
                dt = t - rt[q, lvl, idx]
                if dt > buf:
                    break
                if dt >= xmin:
                    sp[q, lvl, dt - 1] += v * rv[q, lvl, idx]
        if t < buf:
            first[q, lvl, t] = v
        acc += v
        if nxt:
            k = t >> 1
            if k < cnext:
                if k == cur_k:
                    cur_v += v
                else:
                    if cur_k >= 0:
                        tb[nout] = cur_k
                        vb[nout] = 0.5 * cur_v
                        nout += 1
                    cur_k = k
                    cur_v = v
    if nxt and cur_k >= 0 and cur_k < cnext:
        tb[nout] = cur_k
        vb[nout] = 0.5 * cur_v
        nout += 1
    if lvl == 0:
        tot0[q] += acc
    i0 = na - buf if na > buf else 0
    pos = (h + i0) % buf
    for i in range(i0, na):
        rt[q, lvl, pos] = ta[i]
        rv[q, lvl, pos] = va[i]
        pos = pos + 1 if pos + 1 < buf else 0
    rh[q, lvl] = h + na
    return nout


@njit(cache=True, parallel=True, nogil=True)
def levels_update(off, ht, hv, rt, rv, rh, sp, first, tot0, cprev, cnew, m, maxn,
                  n_threads):  # pragma: no cover - compiled
    """Carry every pixel's hits of one block through all levels (see the module notes).

    off (P+1,), ht/hv: pixel-ordered hits (frame, value); state arrays (P, NL, B) and
    (P, NL); cprev/cnew (NL,): frames of each level before/after the block.
    """
    p = off.shape[0] - 1
    nl = rt.shape[1]
    band = (p + n_threads - 1) // n_threads
    for th in prange(n_threads):
        lo = th * band
        hi = min(p, lo + band)
        ta = np.empty(maxn + 2, dtype=np.int64)
        va = np.empty(maxn + 2, dtype=np.float64)
        tb = np.empty(maxn + 2, dtype=np.int64)
        vb = np.empty(maxn + 2, dtype=np.float64)
        for q in range(lo, hi):
            # level-0 hits of this pixel, hits of one frame merged (values add)
            na = 0
            for e in range(off[q], off[q + 1]):
                t = ht[e]
                if na > 0 and ta[na - 1] == t:
                    va[na - 1] += hv[e]
                else:
                    ta[na] = t
                    va[na] = hv[e]
                    na += 1
            for lvl in range(nl):
                if cnew[lvl] == cprev[lvl]:
                    break  # no new frame at this level or above
                xmin = 1 if lvl == 0 else m + 1
                if na == 0 and not ((cprev[lvl] & 1) == 1 and lvl + 1 < nl
                                    and cnew[lvl + 1] > cprev[lvl + 1]):
                    # nothing new here and no pending frame to pair: levels above get
                    # nothing from this pixel either, unless they have a pending frame
                    nb = 0
                else:
                    nb = _level(q, lvl, ta, va, na, tb, vb, rt, rv, rh, sp, first, tot0,
                                cprev, cnew, xmin, nl)
                ta, tb = tb, ta
                va, vb = vb, va
                na = nb


@njit(cache=True, nogil=True)
def hit_sums(frame, pixel, value, r0, group, sid, ns, image, static):  # pragma: no cover
    """image[pixel] += value; static[(frame // group) - r0, sid[pixel]] += value for
    pixels in a static bin (``sid`` >= 0): the scattering sums of a block of hits."""
    for e in range(pixel.shape[0]):
        px = pixel[e]
        v = np.float64(value[e])
        image[px] += v
        s = sid[px]
        if s >= 0:
            static[frame[e] // group - r0, s] += v


@njit(cache=True, nogil=True)
def ring_hist(rt, rv, rh, lvl, count, hist):  # pragma: no cover - compiled
    """hist[j, q] = the value of frame count - B + j of pixel q at level ``lvl`` (from its
    ring of hits; frames without a hit stay 0)."""
    buf = rt.shape[2]
    base = count - buf
    for q in range(rt.shape[0]):
        n = rh[q, lvl]
        lim = n if n < buf else buf
        for s in range(lim):
            j = rt[q, lvl, s] - base
            if j >= 0 and j < buf:
                hist[j, q] = rv[q, lvl, s]
