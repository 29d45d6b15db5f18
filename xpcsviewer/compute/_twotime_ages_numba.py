"""The numba kernel of the multi-tau two-time levels (imported on first use).

Computes exactly the entries of a batch (no BLAS-sized waste, no BLAS threads: on a
loaded 2-core machine OpenBLAS's threads made the small products 20x slower).
"""

import numba
from numba import prange

__all__ = ["band_products"]

# reassoc: the dot products vectorise (round-off ~1 ulp per term, as BLAS's own order)
_OPTS = {"cache": True, "boundscheck": False, "nogil": True,
         "fastmath": {"reassoc", "contract"}}


@numba.njit(parallel=True, **_OPTS)
def band_products(buf, r0, r, kmin, n_lag, n_avail, starts, ends, out, a0):
    """``out[b, a0 + i, q] = buf[r0 + i, s:e] . buf[r0 + i + kmin + q, s:e]`` for the bins
    b (columns ``starts[b]:ends[b]``), i < r, q < n_lag and partner rows < ``n_avail``
    (entries past it are left as they are). Parallel over (bin, row) pairs."""
    n_bins = starts.shape[0]
    for job in prange(n_bins * r):
        bi = job // r
        i = job - bi * r
        s = starts[bi]
        e = ends[bi]
        ra = r0 + i
        for q in range(n_lag):
            rb = ra + kmin + q
            if rb >= n_avail:
                break
            acc = 0.0
            for p in range(s, e):
                acc += buf[ra, p] * buf[rb, p]
            out[bi, a0 + i, q] = acc
