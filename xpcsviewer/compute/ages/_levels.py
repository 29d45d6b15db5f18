"""The streaming levels of the multi-tau two-time correlator (:mod:`.twotime_ages`).

A level holds the pre-scaled rows ``z`` (one per block of ``width`` frames, the mean of
the frames' rows) in a sliding buffer. Once the rows of a batch of first blocks and all
their partners are in, a numba kernel computes its entries (:mod:`._twotime_ages_numba`:
only the entries, parallel over bins and rows), or one BLAS product per bin (``engine=
"blas"``, or without numba):
``G = Z[a0:a1] Z[a0 + kmin : a1 + kmax]ᵀ`` and entry ``(a, k)`` is ``G[a - a0, a - a0 + k
- kmin]``, a skewed (strided) view of ``G``. Rows before the next first block are never
needed again and are dropped, so memory is the buffer, not the run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Level", "level_plan"]


def level_plan(n_frames: int, m: int,
               max_levels: int | None = None) -> list[tuple[int, int, int, int]]:
    """``(width, kmin, n_lag, n_t)`` per level: level 0 lags 0..2m-1 frames; level l >= 1
    blocks of 2**l frames and lags m..2m-1 blocks; a level exists while it has an entry."""
    plan = []
    width = 1
    while True:
        li = len(plan)
        n_t = n_frames // width
        kmin, n_lag = (0, 2 * m) if li == 0 else (m, m)
        if n_t <= kmin or (max_levels is not None and li >= max_levels):
            break
        plan.append((width, kmin, n_lag, n_t))
        width *= 2
    return plan


class Level:
    """One level: its row buffer, and its entries ``c`` (n_bins, n_t, n_lag) (NaN-filled
    by the caller; entries whose partner leaves the run stay NaN)."""

    def __init__(self, kmin: int, n_lag: int, n_t: int, spans: list[tuple[int, int]],
                 c: np.ndarray, n_pix: int, batch: int, kmod: Any = None) -> None:
        self.kmin, self.n_lag, self.n_t = kmin, n_lag, n_t
        # the numba kernels (None: NumPy and BLAS)
        self.kernel = None if kmod is None else kmod.band_products
        self.pairs = None if kmod is None else kmod.pair_means
        self.starts = np.array([a for a, _b in spans], dtype=np.int64)
        self.ends = np.array([b for _a, b in spans], dtype=np.int64)
        self.kmax = kmin + n_lag - 1
        self.spans, self.c, self.batch = spans, c, batch
        self.buf = np.empty((2 * (batch + self.kmax + 1), n_pix))
        self.gbuf = np.empty((batch, batch + n_lag - 1))
        self.base = 0  # block index of buf[0]
        self.len = 0  # rows held
        self.next_a = 0  # next first block to compute
        self.pushed = 0
        self.odd: np.ndarray | None = None  # a row waiting for its pair (coarsening)

    def push(self, rows: np.ndarray) -> None:
        """Append block rows (k, P) in order; compute every batch that is complete."""
        i = 0
        k = min(rows.shape[0], self.n_t - self.pushed)  # a trailing part block is dropped
        while i < k:
            if self.len == self.buf.shape[0]:
                drop = self.next_a - self.base
                self.buf[: self.len - drop] = self.buf[drop : self.len]
                self.len -= drop
                self.base += drop
            n = min(self.buf.shape[0] - self.len, k - i)
            self.buf[self.len : self.len + n] = rows[i : i + n]
            self.len += n
            i += n
            self.pushed += n
            self._run(final=False)

    def finish(self) -> None:
        """Compute the entries left (their partners are all in, or past the run)."""
        self._run(final=True)

    def pair_means(self, rows: np.ndarray) -> np.ndarray:
        """Rows of the next level: means of consecutive pairs of this level's rows (a
        row left over waits for the next call)."""
        k = rows.shape[0]
        head = self.odd is not None and k > 0
        s0 = 1 if head else 0
        n2 = (k - s0) // 2
        out = np.empty((n2 + head, rows.shape[1]))
        if head:
            np.add(self.odd, rows[0], out=out[0])
            out[0] *= 0.5
            self.odd = None
        if self.pairs is not None:
            self.pairs(rows, s0, n2, out, int(head))
        elif n2:
            body = out[int(head):]
            np.add(rows[s0 : s0 + 2 * n2 : 2], rows[s0 + 1 : s0 + 2 * n2 : 2], out=body)
            body *= 0.5
        if (k - s0) % 2:
            self.odd = rows[-1].copy()
        return out

    def _run(self, final: bool) -> None:
        end = self.base + self.len  # rows available: blocks < end
        while True:
            a0 = self.next_a
            if final:
                a1 = min(a0 + self.batch, self.n_t)
            else:
                a1 = a0 + self.batch
                if a1 + self.kmax > end:  # a full batch with all its partners only
                    return
            if a1 <= a0:
                return
            self._products(a0, a1, end)
            self.next_a = a1

    def _products(self, a0: int, a1: int, end: int) -> None:
        r = a1 - a0
        if self.kernel is not None:
            self.kernel(self.buf, a0 - self.base, r, self.kmin, self.n_lag, end - self.base,
                        self.starts, self.ends, self.c, a0)
            return
        w0 = a0 + self.kmin
        w1 = min(a1 + self.kmax, end)
        width = w1 - w0
        if width <= 0:
            return
        a = self.buf[a0 - self.base : a1 - self.base]
        b = self.buf[w0 - self.base : w1 - self.base]
        g = self.gbuf[:r, : r + self.n_lag - 1]
        if width < g.shape[1]:
            g[:, width:] = np.nan  # partners past the run
        st = g.strides
        skew = np.lib.stride_tricks.as_strided(g, shape=(r, self.n_lag),
                                               strides=(st[0] + st[1], st[1]), writeable=False)
        for bi, (s, e) in enumerate(self.spans):
            np.matmul(a[:, s:e], b[:, s:e].T, out=g[:, :width])
            self.c[bi, a0:a1] = skew
