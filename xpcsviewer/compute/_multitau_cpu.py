"""Multi-tau level updates compiled for the CPU (numba), all levels in one pass.

The array-at-a-time update (``multitau._level_kernel``) streams every block through
memory once per delay and per temporary; on a CPU that is memory-bound and far from
the arithmetic. Here each thread owns a tile of pixels and walks the frames in time
order through every level: per frame and level the tile's history (a ring of the last
B frames), running sums and sums of products stay in cache, so the cost is the
multiply-adds themselves. The state is tile-major (``(tiles, levels, B, W)``) so that
one tile's state is contiguous; :meth:`CpuLevels.level_state` returns the
chronological per-level layout the finalisation expects.

Numerics are those of the NumPy reference (float64, same pairing and windows); only
the summation order of the sums of products differs (frame by frame instead of block
by block), i.e. agreement to rounding (~1e-15 relative).
"""

from __future__ import annotations

import importlib.util
import warnings
from typing import Any

import numpy as np

__all__ = ["CpuLevels", "available", "frame_sums"]

#: pixels per tile: the state of every level of one tile fits the L2 cache
TILE = 256

_KERNEL: Any = None
_SUMS: Any = None


def available() -> bool:
    """Whether numba is installed (the CPU engine falls back to NumPy without it)."""
    return importlib.util.find_spec("numba") is not None


def _kernel() -> Any:
    global _KERNEL
    if _KERNEL is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numba's own notices (caching, threading)
            _KERNEL = _build()
    return _KERNEL


def frame_sums(x: np.ndarray, sid: np.ndarray, static: np.ndarray, image: np.ndarray) -> None:
    """Add ``x`` (n, H*W) into ``image`` (H*W,) and per frame into ``static[t, sid]``.

    ``static`` is (n, n_static + 1); pixels outside every static bin carry
    ``sid = n_static`` and land in the last column.
    """
    global _SUMS
    if _SUMS is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _SUMS = _build_sums()
    _SUMS(x, sid, static, image)


def _build_sums() -> Any:
    import numba
    from numba import prange

    @numba.njit(parallel=True, cache=True, boundscheck=False, nogil=True)
    def sums(x, sid, static, image):  # pragma: no cover
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

    return sums


def _build() -> Any:
    import numba
    from numba import prange

    # contract: fused multiply-adds (rounding differs from NumPy by ~1 ulp per product)
    @numba.njit(parallel=True, cache=True, boundscheck=False, nogil=True,
                fastmath={"contract"})
    def update(x, scale, ring, first, sumprod, total, count, has_left, m):  # pragma: no cover
        n, p = x.shape
        n_tiles, n_lv, buf, w = ring.shape
        for it in prange(n_tiles):
            s = it * w
            e = min(p, s + w)
            cnt = count.copy()
            left = has_left.copy()
            v = np.zeros((n_lv, w))
            rg = ring[it]
            fs = first[it]
            sp = sumprod[it]
            tt = total[it]
            for t in range(n):
                v0 = v[0]
                sc = scale[t]
                for j in range(e - s):
                    v0[j] = x[t, s + j] * sc
                lvl = 0
                while True:
                    c = cnt[lvl]
                    vl = v[lvl]
                    x0 = 1 if lvl == 0 else m + 1
                    for xx in range(x0, min(buf, c) + 1):
                        h = rg[lvl, (c - xx) % buf]
                        acc = sp[lvl, xx - 1]
                        for j in range(w):
                            acc[j] += vl[j] * h[j]
                    if c < buf:
                        f = fs[lvl, c]
                        for j in range(w):
                            f[j] = vl[j]
                    tl = tt[lvl]
                    for j in range(w):
                        tl[j] += vl[j]
                    pair = left[lvl] == 1
                    if pair and lvl + 1 < n_lv:
                        # the unpaired frame is the previous one in the ring
                        hp = rg[lvl, (c - 1) % buf]
                        vn = v[lvl + 1]
                        for j in range(w):
                            vn[j] = 0.5 * (hp[j] + vl[j])
                    dst = rg[lvl, c % buf]
                    for j in range(w):
                        dst[j] = vl[j]
                    cnt[lvl] = c + 1
                    if pair:
                        left[lvl] = 0
                        lvl += 1
                        if lvl >= n_lv:
                            break
                    else:
                        left[lvl] = 1
                        break

    return update


class CpuLevels:
    """Streaming state of all levels for P pixels, updated by the compiled kernel.

    Parameters
    ----------
    n_pixels : int
    n_levels : int
    delays_per_level : int
        m; the buffer is B = 2 m.
    """

    def __init__(self, n_pixels: int, n_levels: int, delays_per_level: int) -> None:
        self.p = int(n_pixels)
        self.n_levels = int(n_levels)
        self.m = int(delays_per_level)
        self.buf = 2 * self.m
        nt = max(1, -(-self.p // TILE))
        shape = (nt, self.n_levels, self.buf, TILE)
        self.ring = np.zeros(shape)
        self.first = np.zeros(shape)
        self.sumprod = np.zeros(shape)
        self.total = np.zeros((nt, self.n_levels, TILE))
        self.count = np.zeros(self.n_levels, dtype=np.int64)
        self.has_left = np.zeros(self.n_levels, dtype=np.int64)
        self._ones = np.ones(0)

    def process(self, block: np.ndarray, scale: np.ndarray | None = None) -> None:
        """Feed (n, P) level-0 frames (any real dtype), optionally scaled per frame."""
        n = block.shape[0]
        if n == 0:
            return
        if scale is None:
            if self._ones.size < n:
                self._ones = np.ones(n)
            scale = self._ones[:n]
        if block.dtype.kind not in "fiu" or block.dtype.itemsize > 8:
            block = block.astype(np.float64)
        _kernel()(np.ascontiguousarray(block), np.ascontiguousarray(scale, dtype=np.float64),
                  self.ring, self.first, self.sumprod, self.total, self.count,
                  self.has_left, self.m)
        # every tile replayed the same per-level counters; advance the shared copy
        for _ in range(n):
            lvl = 0
            while lvl < self.n_levels:
                self.count[lvl] += 1
                if self.has_left[lvl]:
                    self.has_left[lvl] = 0
                    lvl += 1
                else:
                    self.has_left[lvl] = 1
                    break

    def _flat(self, a: np.ndarray) -> np.ndarray:
        # (tiles, rows, TILE) -> (rows, P)
        nt, rows, w = a.shape
        return a.transpose(1, 0, 2).reshape(rows, nt * w)[:, : self.p]

    def level_state(self, lvl: int, xs: tuple[int, ...]) -> tuple[np.ndarray, ...]:
        """(hist (B, P) oldest first, first (B, P), sumprod (len(xs), P), total (P), count)."""
        c = int(self.count[lvl])
        order = (c + np.arange(self.buf)) % self.buf
        hist = self._flat(self.ring[:, lvl][:, order])
        first = self._flat(self.first[:, lvl])
        sp = self._flat(self.sumprod[:, lvl][:, np.asarray(xs) - 1])
        total = self._flat(self.total[:, lvl][:, None, :])[0]
        return hist, first, sp, total, c
