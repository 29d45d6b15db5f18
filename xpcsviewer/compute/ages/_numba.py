"""The numba kernels of the multi-tau two-time correlator (imported on first use).

The entries of a batch are computed exactly (no BLAS-sized waste, and no BLAS threads:
on a loaded 2-core machine OpenBLAS's two threads made the small products ~10x slower
per frame); a chunk's rows are gathered and normalised in one parallel pass.
"""

import numba
import numpy as np
from numba import prange

__all__ = ["band_products", "normalise_rows", "pair_means"]

# reassoc: the dot products vectorise (round-off ~1 ulp per term, as BLAS's own order)
_OPTS = {"cache": True, "boundscheck": False, "nogil": True,
         "fastmath": {"reassoc", "contract"}}


@numba.njit(parallel=True, **_OPTS)
def normalise_rows(flat, sel, gstarts, gends, gcount, bg0, bg1, sqrt_pb, out, bad):
    """Pre-scaled rows of a chunk: ``out[t, j] = flat[t, sel[j]] * v[t, group(j)]`` with
    ``v = (count / group sum) * sqrt(P_b) / S_t`` (a non-positive group sum: 1 / 1), as
    the NumPy path (:meth:`_Accumulator.normalise`). Groups ``g`` are the columns
    ``gstarts[g]:gends[g]`` of ``out``, bins the groups ``bg0[b]:bg1[b]``. ``bad[t]`` is
    set where a selected value is negative or NaN. Parallel over frames."""
    n_groups = gstarts.shape[0]
    for t in prange(flat.shape[0]):
        gs = np.empty(n_groups)
        ws = np.empty(n_groups)
        neg = False
        for g in range(n_groups):
            s = 0.0
            for j in range(gstarts[g], gends[g]):
                v = np.float64(flat[t, sel[j]])
                neg |= not v >= 0.0
                out[t, j] = v
                s += v
            gs[g] = s
            ws[g] = gcount[g] / s if s > 0.0 else 1.0
        bad[t] = neg
        for b in range(bg0.shape[0]):
            big_s = 0.0
            for g in range(bg0[b], bg1[b]):
                big_s += ws[g] * gs[g]
            f = sqrt_pb[b] / big_s if big_s > 0.0 else sqrt_pb[b]
            for g in range(bg0[b], bg1[b]):
                v = ws[g] * f
                for j in range(gstarts[g], gends[g]):
                    out[t, j] *= v


@numba.njit(parallel=True, **_OPTS)
def band_products(buf, r0, r, kmin, n_lag, n_avail, starts, ends, out, a0):
    """``out[b, a0 + i, q] = buf[r0 + i, s:e] . buf[r0 + i + kmin + q, s:e]`` for the bins
    b (columns ``starts[b]:ends[b]``), i < r, q < n_lag and partner rows < ``n_avail``
    (entries past it are left as they are). Parallel over bins and groups of four first
    rows: each partner row is loaded once for four dot products (the kernel is bound by
    loads: 20 % less CPU time than one row at a time); the up to three products per
    group beyond the lags are computed and dropped."""
    n_bins = starts.shape[0]
    n_grp = (r + 3) // 4
    for job in prange(n_bins * n_grp):
        bi = job // n_grp
        gi = job - bi * n_grp
        s = starts[bi]
        e = ends[bi]
        i0 = 4 * gi
        ra = r0 + i0
        if i0 + 4 > r:  # a last, partial group: one row at a time
            for i in range(i0, r):
                for q in range(n_lag):
                    rb = r0 + i + kmin + q
                    if rb >= n_avail:
                        break
                    acc = 0.0
                    for p in range(s, e):
                        acc += buf[r0 + i, p] * buf[rb, p]
                    out[bi, a0 + i, q] = acc
            continue
        for d in range(n_lag + 3):
            rb = ra + kmin + d
            if rb >= n_avail:
                break
            c0 = 0.0
            c1 = 0.0
            c2 = 0.0
            c3 = 0.0
            for p in range(s, e):
                bv = buf[rb, p]
                c0 += buf[ra, p] * bv
                c1 += buf[ra + 1, p] * bv
                c2 += buf[ra + 2, p] * bv
                c3 += buf[ra + 3, p] * bv
            # row i0 + j pairs with rb at lag index d - j
            if d < n_lag:
                out[bi, a0 + i0, d] = c0
            if 1 <= d < n_lag + 1:
                out[bi, a0 + i0 + 1, d - 1] = c1
            if 2 <= d < n_lag + 2:
                out[bi, a0 + i0 + 2, d - 2] = c2
            if 3 <= d:
                out[bi, a0 + i0 + 3, d - 3] = c3


@numba.njit(parallel=True, **_OPTS)
def pair_means(src, s0, n2, out, o0):
    """``out[o0 + i] = (src[s0 + 2i] + src[s0 + 2i + 1]) / 2`` for i < n2 (the next
    level's rows), parallel over rows."""
    for i in prange(n2):
        a = s0 + 2 * i
        for p in range(src.shape[1]):
            out[o0 + i, p] = 0.5 * (src[a, p] + src[a + 1, p])
