"""The numba kernels of :mod:`xpcsviewer.compute.multitau._cpu` (imported on first use).

Defined at module level so that numba's on-disk cache holds them: compiled once per
machine, loaded in well under a second afterwards.
"""

import numba
import numpy as np
from numba import prange

__all__ = ["frame_sums", "update"]

# contract: fused multiply-adds (rounding differs from NumPy by ~1 ulp per product)
_OPTS = {"cache": True, "boundscheck": False, "nogil": True, "fastmath": {"contract"}}


@numba.njit(**_OPTS)
def _tile(x, scale, hist, first, sumprod, total, count, has_left, m, it, wa, wb):
    """Carry pixel tile ``it`` through every level for the new frames ``x``."""
    n, p = x.shape
    n_lv, buf, w = hist.shape[1], hist.shape[2], hist.shape[3]
    s = it * w
    e = min(p, s + w)
    fa = wa
    fb = wb
    if e - s < w:
        fa[:] = 0.0
    # level 0 block: history then the new frames (columns past the detector stay 0)
    fa[:buf] = hist[it, 0]
    for t in range(n):
        sc = scale[t]
        for j in range(e - s):
            fa[buf + t, j] = x[t, s + j] * sc
    nl = n
    for lvl in range(n_lv):
        if nl == 0:
            break
        c = count[lvl]
        f = fa
        sp = sumprod[it, lvl]
        x0 = 1 if lvl == 0 else m + 1
        # sums of products; rows before the first frame are zero history rows
        t = 0
        if x0 == 1 and buf == 8:
            while t + 4 <= nl:
                r = buf + t
                for j in range(w):
                    f0 = f[r, j]
                    f1 = f[r + 1, j]
                    f2 = f[r + 2, j]
                    f3 = f[r + 3, j]
                    g1 = f[r - 1, j]
                    g2 = f[r - 2, j]
                    g3 = f[r - 3, j]
                    g4 = f[r - 4, j]
                    g5 = f[r - 5, j]
                    g6 = f[r - 6, j]
                    g7 = f[r - 7, j]
                    g8 = f[r - 8, j]
                    sp[0, j] += f0 * g1 + f1 * f0 + f2 * f1 + f3 * f2
                    sp[1, j] += f0 * g2 + f1 * g1 + f2 * f0 + f3 * f1
                    sp[2, j] += f0 * g3 + f1 * g2 + f2 * g1 + f3 * f0
                    sp[3, j] += f0 * g4 + f1 * g3 + f2 * g2 + f3 * g1
                    sp[4, j] += f0 * g5 + f1 * g4 + f2 * g3 + f3 * g2
                    sp[5, j] += f0 * g6 + f1 * g5 + f2 * g4 + f3 * g3
                    sp[6, j] += f0 * g7 + f1 * g6 + f2 * g5 + f3 * g4
                    sp[7, j] += f0 * g8 + f1 * g7 + f2 * g6 + f3 * g5
                t += 4
        elif buf == 8:
            while t + 4 <= nl:
                r = buf + t
                for j in range(w):
                    f0 = f[r, j]
                    f1 = f[r + 1, j]
                    f2 = f[r + 2, j]
                    f3 = f[r + 3, j]
                    g1 = f[r - 1, j]
                    g2 = f[r - 2, j]
                    g3 = f[r - 3, j]
                    g4 = f[r - 4, j]
                    g5 = f[r - 5, j]
                    g6 = f[r - 6, j]
                    g7 = f[r - 7, j]
                    g8 = f[r - 8, j]
                    sp[4, j] += f0 * g5 + f1 * g4 + f2 * g3 + f3 * g2
                    sp[5, j] += f0 * g6 + f1 * g5 + f2 * g4 + f3 * g3
                    sp[6, j] += f0 * g7 + f1 * g6 + f2 * g5 + f3 * g4
                    sp[7, j] += f0 * g8 + f1 * g7 + f2 * g6 + f3 * g5
                t += 4
        for tt in range(t, nl):
            r = buf + tt
            for xx in range(x0, buf + 1):
                for j in range(w):
                    sp[xx - 1, j] += f[r, j] * f[r - xx, j]
        if c < buf:
            for k in range(min(buf - c, nl)):
                for j in range(w):
                    first[it, lvl, c + k, j] = f[buf + k, j]
        tl = total[it, lvl]
        for k in range(nl):
            for j in range(w):
                tl[j] += f[buf + k, j]
        # next level: pairs of consecutive frames, the first with the pending one
        left = has_left[lvl]
        nn = (nl + left) // 2
        if lvl + 1 < n_lv and nn > 0:
            fb[:buf] = hist[it, lvl + 1]
            start = buf - left  # row of the first frame of the first pair
            for k in range(nn):
                ra = start + 2 * k
                for j in range(w):
                    fb[buf + k, j] = 0.5 * (f[ra, j] + f[ra + 1, j])
        # new history: the last buf rows of [history, new frames]
        hist[it, lvl] = f[nl : nl + buf]
        fa, fb = fb, fa
        nl = nn if lvl + 1 < n_lv else 0


@numba.njit(parallel=True, **_OPTS)
def update(x, scale, hist, first, sumprod, total, count, has_left, m, n_th):
    """All tiles, ``n_th`` threads; per-level counters are read, not advanced."""
    n = x.shape[0]
    n_tiles, _, buf, w = hist.shape
    for th in prange(n_th):
        # one pair of work buffers per thread: fresh pages per tile cost more than the work
        wa = np.zeros((buf + n, w))
        wb = np.zeros((buf + n, w))
        for it in range(th, n_tiles, n_th):
            _tile(x, scale, hist, first, sumprod, total, count, has_left, m, it, wa, wb)


@numba.njit(parallel=True, cache=True, boundscheck=False, nogil=True)
def frame_sums(x, sid, static, image):
    """``image += x.sum(0)``; ``static[t, sid[j]] += x[t, j]``."""
    n, p = x.shape
    for t in prange(n):
        row = static[t]
        for j in range(p):
            row[sid[j]] += x[t, j]
    w = 4096
    for it in prange((p + w - 1) // w):
        s = it * w
        e = min(p, s + w)
        for t in range(n):
            for j in range(s, e):
                image[j] += x[t, j]

