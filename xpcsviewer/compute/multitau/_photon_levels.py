"""The per-pixel, per-level state of the photon multi-tau correlator
(:mod:`~xpcsviewer.compute.multitau.photons`) and its block update; kernels in
``_photons_numba``."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

__all__ = ["F32_EXACT", "SparseLevels"]


def _kernels() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from xpcsviewer.compute.multitau import _photons_numba as _multitau_sparse_numba

    return _multitau_sparse_numba


def _threads() -> int:
    import numba

    return max(1, int(numba.get_num_threads()))


def _bands(p: int, n: int) -> np.ndarray:
    """Edges of ``n`` equal bands of ``p`` pixels."""
    return np.linspace(0, p, max(1, min(n, p)) + 1).round().astype(np.int64)


def _work_bands(off: np.ndarray, walk: np.ndarray, n: int) -> np.ndarray:
    """Edges (in ``walk``, the pixels carried) of about ``n`` bands holding equal numbers
    of hits (plus a pixel's worth of fixed work each), so that threads finish together."""
    p = walk.size
    # hits, plus per-pixel level overhead
    work = np.cumsum(off[walk + 1] - off[walk]) + np.arange(1, p + 1) * 4
    cuts = np.searchsorted(work, np.linspace(0, work[-1] if p else 0, n + 1)[1:-1])
    return np.unique(np.concatenate([[0], cuts, [p]])).astype(np.int64)


#: Integer counts of magnitude below this, times 2^(levels - 1), keep every level's frame
#: value (a sum of counts over 2^L frames, divided by 2^L) exact in float32.
F32_EXACT = 1 << 24
_I32_FRAMES = (1 << 31) - 1


class SparseLevels:
    """The per-pixel, per-level state of the photon correlator.

    Parameters
    ----------
    n_pixels, n_levels, delays_per_level : int
    n_frames : int, optional
        Frames the stream will have (frame numbers of 2^31 and more need int64).

    Notes
    -----
    Per pixel (only the correlated ones: the q-map's pixels) and level: ``win`` the
    values of its last B frames (slot ``frame % B``, frames ``(last - B, last]``; later
    frames have no hit), ``last`` the newest frame with a hit; ``first`` its first B
    frames and ``sp`` the sums of products of its delays, both (P, levels + 1, m): level
    0 in rows 0 and 1 (frames / delays 0..B-1 / 1..B), level L > 0 in row L + 1 (frames
    m..B-1, the others are pairs of level L-1's; delays m+1..B, the only ones it has).
    Values and sums are float32 while that is exact (counts: integers >= 0, no per-frame
    scale, bounds in :meth:`_exact`) and float64 from the first block that breaks the
    rule on. About 68 bytes per pixel and level in float32, 132 in float64.
    ``count[L]`` (frames of level L) is shared by all pixels; ``level_state`` returns the
    layout the dense correlator's finalisation reads.
    """

    def __init__(self, n_pixels: int, n_levels: int, delays_per_level: int,
                 n_frames: int | None = None) -> None:
        self.p = int(n_pixels)
        self.m = int(delays_per_level)
        self.buf = 2 * self.m
        self.n_levels = 0
        self.tot0 = np.zeros(self.p)
        self.vdtype: Any = np.dtype(np.float32)  # frame values (win, first)
        self.sdtype: Any = np.dtype(np.float32)  # sums of products (sp)
        self.vmax = 0.0  # largest count fed (float32 rule)
        self.tdtype: Any = np.dtype(np.int32 if (n_frames or 0) < _I32_FRAMES else np.int64)
        # bit L: the pixel's newest level-L hit waits for its pair (so the pixel is
        # carried, even without a hit, through the next block in which level L grows)
        self.pend = np.zeros(self.p, dtype=np.int64)
        self._alloc(int(n_levels))
        self._totals: tuple[int, list[np.ndarray]] | None = None
        self.walked = 0  # pixels carried through the levels, over all blocks

    #: carry every pixel at every block (the reference the pixel-restricted walk is
    #: tested against)
    walk_all = False

    def _alloc(self, n_levels: int) -> None:
        # zeros: pages are mapped only when a pixel's level is written (window slots are
        # read only for frames up to ``last``, which starts before frame 0)
        shape = (self.p, n_levels, self.buf)
        self.win = np.zeros(shape, dtype=self.vdtype)
        self.first = np.zeros((self.p, n_levels + 1, self.m), dtype=self.vdtype)
        self.sp = np.zeros((self.p, n_levels + 1, self.m), dtype=self.sdtype)
        self.last = np.full((self.p, n_levels), -1, dtype=self.tdtype)
        self.count = np.zeros(n_levels, dtype=np.int64)
        self.n_levels = n_levels

    def grow(self, n_levels: int) -> None:
        """Room for ``n_levels`` levels (a level added later has missed nothing: level L
        receives its first frame after 2^L frames)."""
        have = self.n_levels
        if n_levels <= have:
            return
        old = (self.win, self.first, self.sp, self.last, self.count)
        self._alloc(int(n_levels))
        self.win[:, :have] = old[0]
        self.first[:, :have + 1] = old[1]
        self.sp[:, :have + 1] = old[2]
        self.last[:, :have] = old[3]
        self.count[:have] = old[4]
        self._exact(0.0, True, 0)

    def _exact(self, vmax: float, integer: bool, maxn: int) -> None:
        """Keep float32 only while it stays exact; else float64 from now on (the float32
        contents convert exactly).

        Frame values: a level-L value is C / 2^L, C a sum of counts over 2^L frames, so
        ``C <= vmax 2^L``. Sums of products: ``S / 4^L`` with ``S = sum_t C(t) C(t + x)
        <= vmax 2^L T``, T the pixel's total count (bounded by the largest total so far
        plus ``vmax`` times this block's most hits of a pixel, ``maxn``). Both exact in
        float32 while the integer is below 2^24 (partial sums too: counts are >= 0).
        """
        self.vmax = max(self.vmax, float(vmax))
        top = self.vmax * 2.0 ** (self.n_levels - 1)
        fresh = int(self.count[0]) == 0  # nothing written: fresh zero pages

        def wide(a: np.ndarray) -> np.ndarray:
            return np.zeros(a.shape) if fresh else a.astype(np.float64)

        if self.vdtype != np.float64 and (not integer or top >= F32_EXACT):
            self.vdtype = np.dtype(np.float64)
            self.win, self.first = wide(self.win), wide(self.first)
        if self.sdtype != np.float64:
            tmax = float(self.tot0.max(initial=0.0)) + self.vmax * maxn
            if not integer or top * tmax >= F32_EXACT:
                self.sdtype = np.dtype(np.float64)
                self.sp = wide(self.sp)

    def _buffers(self, n: int, tdtype: Any) -> tuple[np.ndarray, np.ndarray]:
        """Pixel-ordered hit buffers of ``n`` entries, kept from block to block (fresh
        big arrays cost more in first-touch page faults than the sort itself)."""
        bt, bv = getattr(self, "_bufs", (None, None))
        if bt is None or bt.size < n or bt.dtype != tdtype:
            cap = max(n, int(1.25 * n))
            bt, bv = np.empty(cap, dtype=tdtype), np.empty(cap)
            self._bufs = (bt, bv)
        return bt[:n], bv[:n]

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.win, self.first, self.sp, self.last, self.tot0))

    def process(self, stop: int, frame: np.ndarray, pixel: np.ndarray, value: np.ndarray,
                lut: np.ndarray, scale: np.ndarray | None = None) -> None:
        """Correlate the hits of level-0 frames ``[count[0], stop)``.

        ``frame`` non-decreasing, ``pixel`` detector indices (``lut`` maps them to
        correlated pixels or -1), ``scale``: per-frame factors for frames
        ``count[0]..stop-1`` (``normalize_frame``), or None.
        """
        k = _kernels()
        f0 = int(self.count[0])
        stop = int(stop)
        if stop < f0:
            raise ValueError(f"frames must come in order: at {f0}, asked to stop at {stop}")
        if stop == f0:
            return
        frame = np.ascontiguousarray(frame)
        if frame.dtype.kind not in "iu":
            frame = frame.astype(np.int64)
        pixel = np.ascontiguousarray(pixel)
        if pixel.dtype.kind not in "iu":
            pixel = pixel.astype(np.int64)
        value = np.ascontiguousarray(value)
        if value.dtype.kind not in "fiu" or value.dtype.itemsize > 8:
            value = value.astype(np.float64)
        if frame.size and (frame[0] < f0 or frame[-1] >= stop):
            raise ValueError(f"hits outside frames [{f0}, {stop})")
        if stop >= _I32_FRAMES and self.last.dtype != np.int64:
            self.tdtype = np.dtype(np.int64)
            self.last = self.last.astype(np.int64)
        nt = _threads()
        chunks = _bands(pixel.size, nt)
        per = np.zeros((chunks.size - 1, self.p), dtype=np.int64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            k.count_hits(pixel, lut, chunks, per)
            cnt = per.sum(axis=0) if per.shape[0] != 1 else per[0]
            off = np.zeros(self.p + 1, dtype=np.int64)
            np.cumsum(cnt, out=off[1:])
            n = int(off[-1])
            # where each chunk's hits of a pixel start: after the chunks before it
            pos = np.cumsum(per, axis=0)
            pos -= per
            pos += off[:-1]
            maxn = int(cnt.max(initial=0))
            if np.float32 in (self.vdtype, self.sdtype):
                integer = scale is None and value.dtype.kind in "iu" and (
                    value.size == 0 or int(value.min()) >= 0)
                self._exact(float(value.max()) if integer and value.size else 0.0,
                            integer, maxn)
            # times relative to the block: 4 bytes a hit (blocks are far below 2^31 frames)
            ht, hv = self._buffers(n, np.int32 if stop - f0 < (1 << 31) else np.int64)
            sc = (np.zeros(0) if scale is None
                  else np.ascontiguousarray(scale, dtype=np.float64))
            k.scatter_hits(frame, pixel, value, sc, f0, lut, chunks, pos, ht, hv)
            cprev = self.count.copy()
            cnew = np.empty_like(cprev)
            c = stop
            for lvl in range(self.n_levels):
                cnew[lvl] = c
                c >>= 1
            # only pixels with hits or a frame waiting for its pair can change (tested
            # against the walk over every pixel): the walk does not grow with the detector
            grown = sum(1 << lvl for lvl in range(self.n_levels) if cnew[lvl] > cprev[lvl])
            walk = (np.arange(self.p) if self.walk_all else
                    np.flatnonzero((cnt != 0) | ((self.pend & grown) != 0)))
            k.levels_update(walk, off, ht, hv, f0, _work_bands(off, walk, 8 * nt), self.win,
                            self.last, self.sp, self.first, self.tot0, cprev, cnew, self.m,
                            maxn, self.pend)
            self.walked += int(walk.size)
        self.count = cnew
        self._totals = None

    # ------------------------------------------------------------ finalisation
    def _hist(self, lvl: int) -> np.ndarray:
        """(B, P) the last B frames of level ``lvl``, oldest first (zeros before frame 0)."""
        hist = np.zeros((self.buf, self.p))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _kernels().window_hist(self.win, self.last, lvl, int(self.count[lvl]), hist)
        return hist

    def _total(self, lvl: int) -> np.ndarray:
        key = int(self.count[0])
        if self._totals is None or self._totals[0] != key:
            self._totals = (key, [self.tot0.copy()])
        tots = self._totals[1]
        while len(tots) <= lvl:
            below = len(tots) - 1
            t = tots[below].copy()
            c = int(self.count[below])
            if c & 1:
                newest = np.empty(self.p)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    _kernels().window_frame(self.win, self.last, below, c - 1, newest)
                t -= newest
            tots.append(0.5 * t)
        return tots[lvl]

    def bin_sums(self, row_lvl: np.ndarray, row_x: np.ndarray, sid: np.ndarray,
                 did: np.ndarray, d_count: np.ndarray, ns: int,
                 nd: int) -> tuple[np.ndarray, ...]:
        """(s_g2, s_ip, s_if, dss) of the rows (level, delay in level frames; levels
        ascending) straight from this state, equal to the dense finalisation."""
        nr = int(row_lvl.size)
        bands = _bands(self.p, 4 * _threads())
        nb = bands.size - 1
        s_g2, s_ip, s_if = (np.zeros((nb, nr, ns)) for _ in range(3))
        dsum, dss = np.zeros((nb, nr, nd)), np.zeros((nb, nr, nd))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _kernels().bin_sums(self.win, self.last, self.sp, self.first, self.tot0,
                                self.count, np.asarray(row_lvl, np.int64),
                                np.asarray(row_x, np.int64), sid, did,
                                np.asarray(d_count, np.float64), bands, s_g2, s_ip, s_if,
                                dsum, dss)
        return s_g2.sum(axis=0), s_ip.sum(axis=0), s_if.sum(axis=0), dss.sum(axis=0)

    def _sumprod(self, lvl: int, x: int) -> np.ndarray:
        """(P,) the sums of products of delay x at level ``lvl``."""
        return self.sp[:, 0, x - 1] if x <= self.m else self.sp[:, lvl + 1, x - self.m - 1]

    def level_state(self, lvl: int, xs: tuple[int, ...]) -> tuple[Any, ...]:
        """(hist (B, P) oldest first, first (B, P), sumprod (len(xs), P), total (P), count)."""
        sumprod = np.empty((len(xs), self.p))
        for i, x in enumerate(xs):
            sumprod[i] = self._sumprod(lvl, int(x))
        return (self._hist(lvl), self._first(lvl), sumprod, self._total(lvl),
                int(self.count[lvl]))

    def _first(self, lvl: int) -> np.ndarray:
        """(B, P) the first B frames of level ``lvl`` (as the kernels' ``_first_frames``:
        a level's frames below m are pairs of the level below's first frames)."""
        f = np.concatenate([self.first[:, 0], self.first[:, 1]], axis=1).astype(np.float64)
        f[:, max(int(self.count[0]), 0):] = 0.0
        for lv in range(1, lvl + 1):
            f = np.concatenate([0.5 * (f[:, 0::2] + f[:, 1::2]), self.first[:, lv + 1]],
                               axis=1)
            f[:, max(int(self.count[lv]), 0):] = 0.0
        return np.ascontiguousarray(f.T)
