"""The numba kernels of :mod:`xpcsviewer.compute.twotime.photons` (imported on first use).

Defined at module level so that numba's on-disk cache holds them: compiled once per
machine, loaded in well under a second afterwards.

Hit arrays are pixel-major: the hits of local pixel p are ``ptr[p]:ptr[p + 1]``, their
times ascending; ``pix[h]`` is the pixel of hit h.
"""

import numba
from numba import prange

__all__ = ["gram_upper", "pixel_major", "time_order"]

# contract: fused multiply-adds (rounding differs from NumPy by ~1 ulp per product)
_OPTS = {"cache": True, "boundscheck": False, "nogil": True, "fastmath": {"contract"}}


@numba.njit(**_OPTS)
def pixel_major(px, fr, v, ptr, fr_out, v_out, px_out, ptr_out):
    """Frame-ordered hits -> pixel-major, duplicates (pixel, frame) merged; returns the
    number of merged hits.

    ``ptr`` (P + 1) are the pixels' offsets before merging (a cumulative bincount of
    ``px``). A stable counting sort keeps each pixel's times ascending, so the hits of
    one pixel in one frame are neighbours; their values are added in input order.
    ``ptr_out`` receives the offsets after merging.
    """
    n_pix = ptr.shape[0] - 1
    pos = ptr[:-1].copy()
    for h in range(px.shape[0]):
        p = px[h]
        k = pos[p]
        fr_out[k] = fr[h]
        v_out[k] = v[h]
        pos[p] = k + 1
    m = 0
    ptr_out[0] = 0
    for p in range(n_pix):
        last = -1
        for k in range(ptr[p], ptr[p + 1]):
            if fr_out[k] == last:
                v_out[m - 1] += v_out[k]
            else:
                last = fr_out[k]
                fr_out[m] = last
                v_out[m] = v_out[k]
                px_out[m] = p
                m += 1
        ptr_out[p + 1] = m
    return m


@numba.njit(**_OPTS)
def time_order(t, n, row_ptr, rows):
    """Hits grouped by time: ``rows[row_ptr[r]:row_ptr[r + 1]]`` are the hits at time r
    (``row_ptr`` (n + 1) and ``rows`` (H) int64, filled here)."""
    row_ptr[:] = 0
    for h in range(t.shape[0]):
        row_ptr[t[h] + 1] += 1
    for r in range(n):
        row_ptr[r + 1] += row_ptr[r]
    pos = row_ptr[:-1].copy()
    for h in range(t.shape[0]):
        r = t[h]
        rows[pos[r]] = h
        pos[r] += 1


@numba.njit(parallel=True, **_OPTS)
def gram_upper(t, y, pix, ptr, row_ptr, rows, out, n, band, n_th):
    """Upper triangle of ``C[t_i, t_j] = sum over pixels of y_i y_j`` into ``out`` (N*N).

    Every pair of hits of one pixel with ``t_i <= t_j`` (a hit paired with itself
    included) adds ``y_i y_j`` to row ``t_i``. Rows go in bands of ``band``; thread
    ``th`` takes bands th, th + n_th, ... (round robin: the work per row falls with the
    row, so contiguous halves would not balance), zeroes their rows (lower triangle
    included) and fills them: no two threads write the same row. The hits of a row
    come from ``rows`` (the time order), each paired with the later hits of its pixel,
    so the work is the pair count plus N rows, whatever the occupancy.
    """
    n_bands = (n + band - 1) // band
    for th in prange(n_th):
        for b in range(th, n_bands, n_th):
            r0 = b * band
            r1 = min(n, r0 + band)
            out[r0 * n : r1 * n] = 0.0
            for r in range(r0, r1):
                base = r * n
                for k in range(row_ptr[r], row_ptr[r + 1]):
                    h = rows[k]
                    yi = y[h]
                    for j in range(h, ptr[pix[h] + 1]):
                        out[base + t[j]] += yi * y[j]

