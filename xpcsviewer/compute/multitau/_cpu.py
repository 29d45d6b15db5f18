"""Multi-tau level updates compiled for the CPU (numba), all levels in one pass.

The array-at-a-time update (``_multitau_backend.level_kernel``) streams every block through
memory once per delay and per temporary; on a CPU that is memory-bound and far from
the arithmetic. Here each thread takes tiles of pixels and carries each tile through
every level: a level's block is its B history rows followed by its new frames, in one
cache-resident work buffer per thread, and the sums of products for all delays are
taken four frames at a time (each pass over the tile's pixels loads 12 rows and does 32
multiply-adds per pixel and accumulator row pair, instead of 2 loads and a store per
multiply-add). History rows before the first frame are zero, so the first frames need no
special case. The next level's block is formed from pairs of the new frames (the first
with the unpaired last frame of the previous call). The state is tile-major
(``(tiles, levels, B, W)``), so one tile's state is contiguous; :meth:`CpuLevels.level_state`
returns the per-level layout the finalisation expects.

Numerics are those of the NumPy reference (float64, same pairing and windows); only
the summation order of the sums of products differs, i.e. agreement to rounding
(exact for integer counts, whose partial sums are exact in float64).
"""

from __future__ import annotations

import importlib.util
import warnings
from typing import Any

import numpy as np

__all__ = ["COMPILED_MIN_WORK", "CpuLevels", "available", "frame_sums", "worth_compiling"]

#: pixels per tile: the state of every level of one tile fits the L2 cache
TILE = 256

def available() -> bool:
    """Whether numba is installed (the CPU engine falls back to NumPy without it)."""
    return importlib.util.find_spec("numba") is not None


#: pixel-frames from which ``engine="auto"`` takes the compiled kernels: below it the
#: NumPy kernels finish before numba is imported and its cache loaded (~0.5 s)
COMPILED_MIN_WORK = 2e7


def worth_compiling(work: float) -> bool:
    """Whether a job of ``work`` pixel-frames should run the compiled kernels."""
    return float(work) >= COMPILED_MIN_WORK and available()


def _kernels() -> Any:
    """The compiled kernels' module; importing it imports numba (~0.5 s), so only on use."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's notices about caching and threading
        from xpcsviewer.compute.multitau import _numba as _multitau_numba

    return _multitau_numba


_SEEN: set = set()


def _call(fn: Any, args: tuple) -> None:
    """Call a kernel; the first call per argument types compiles (or loads the cache)
    with numba's notices silenced."""
    key = (id(fn), *(getattr(a, "dtype", type(a)) for a in args))
    if key in _SEEN:
        fn(*args)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn(*args)
    _SEEN.add(key)


def frame_sums(x: np.ndarray, sid: np.ndarray, static: np.ndarray, image: np.ndarray) -> None:
    """Add ``x`` (n, H*W) into ``image`` (H*W,) and per frame into ``static[t, sid]``.

    ``static`` is (n, n_static + 1); pixels outside every static bin carry
    ``sid = n_static`` and land in the last column.
    """
    _call(_kernels().frame_sums, (x, sid, static, image))


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
        self.hist = np.zeros(shape)
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
        import numba

        args = (np.ascontiguousarray(block), np.ascontiguousarray(scale, dtype=np.float64),
                self.hist, self.first, self.sumprod, self.total, self.count, self.has_left,
                self.m, min(numba.get_num_threads(), self.hist.shape[0]))
        _call(_kernels().update, args)
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
        hist = self._flat(self.hist[:, lvl])
        first = self._flat(self.first[:, lvl])
        sp = self._flat(self.sumprod[:, lvl][:, np.asarray(xs) - 1])
        total = self._flat(self.total[:, lvl][:, None, :])[0]
        return hist, first, sp, total, c
