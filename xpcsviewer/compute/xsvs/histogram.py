"""Photon-count histograms per q-bin and exposure: what XSVS fits (issue 46).

An exposure of ``m`` frames is a window of ``m`` consecutive frames; the windows of one
exposure tile the run from frame 0 (a last, partial window is dropped: its exposure
would be shorter). For every pixel of a q-bin and every whole window the photons are
summed and counted in the bin's histogram at that exposure: P(k) over pixels x windows,
zeros included (pixels x windows minus the windows that saw a photon).

Exposures come in nested chains (2^k frames, the default, is one chain): the pass keeps
per pixel only its last frame and one count per level (:mod:`._numba`), so its cost
grows with the hits, not with pixels x frames. A list of exposures that do not divide
each other is split into chains, each its own state.

A window in which a frame of the pixel was at the counter cap holds a lower bound of its
count: it goes to a second histogram, ``cens`` (true count >= k), which the fit treats
as censored. Counts above ``kmax`` go to the last column of either (true count > kmax).

:func:`histograms_dense` is the plain reference (whole frames in memory): the tests
compare the pass with it, exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["KMAX", "XsvsAccumulator", "XsvsCounts", "correct_spread", "default_windows",
           "histograms_dense", "mean_spread", "split_chains"]

#: P(k) is kept for k = 0..KMAX and k > KMAX in one last column (censored there): XSVS
#: lives at a few photons per window; the last column keeps long exposures fittable
KMAX = 511
#: the default exposures stop where fewer whole windows than this remain
MIN_WINDOWS = 8
#: and at this many levels
MAX_LEVELS = 20


def default_windows(n_frames: int, levels: int = MAX_LEVELS,
                    min_windows: int = MIN_WINDOWS) -> np.ndarray:
    """Frames per exposure: 1, 2, 4, ... while at least ``min_windows`` whole windows
    remain (at most ``levels``)."""
    out = []
    m = 1
    while len(out) < max(1, int(levels)) and int(n_frames) // m >= max(1, min_windows):
        out.append(m)
        m *= 2
    if not out and n_frames >= 1:
        out = [1]
    return np.asarray(out, dtype=np.int64)


def split_chains(windows: np.ndarray) -> list[np.ndarray]:
    """Indices of ``windows`` (ascending) in chains where each divides the next."""
    w = np.asarray(windows, dtype=np.int64)
    chains: list[list[int]] = []
    for i, m in enumerate(w):
        for ch in chains:
            if m % w[ch[-1]] == 0:
                ch.append(i)
                break
        else:
            chains.append([i])
    return [np.asarray(c, dtype=np.int64) for c in chains]


@dataclass
class XsvsCounts:
    """The histograms of one pass (see the module notes).

    Attributes
    ----------
    windows : (L,) int64
        Frames per exposure.
    n_windows : (L,) int64
        Whole windows per exposure.
    n_pixels : (B,) int64
        Valid pixels of each q-bin.
    hist, cens : (B, L, kmax + 2) int64
        Samples (pixel x window) with exactly k photons, and with at least k photons
        (a frame at the cap); the last column: more than ``kmax`` (at least kmax + 1).
    photons : (B, L) float64
        Photons summed over the whole windows (exact, also beyond ``kmax``).
    counter_cap : int or None
    moments : (B, L, 4) float64
        Sums of k, k², k³, k⁴ over the samples (zeros add nothing): the moments of the
        counts also beyond ``kmax``; those of censored samples are lower bounds.
    pixel_photons : (n,) float64
        Photons of each pixel of the q-bins over the run (``pixels`` its flat indices).
    pixels : (n,) int64
    """

    windows: np.ndarray
    n_windows: np.ndarray
    n_pixels: np.ndarray
    hist: np.ndarray
    cens: np.ndarray
    photons: np.ndarray
    counter_cap: int | None
    moments: np.ndarray | None = None
    pixel_photons: np.ndarray | None = None
    pixels: np.ndarray | None = None


#: threads of the pass at most (each keeps its own histograms: 2 x bins x levels x
#: (KMAX + 2) x 8 bytes, 16 MB at 100 bins x 20 levels)
MAX_THREADS = 4


def _threads() -> int:
    """Threads of the pass: numba's, at most :data:`MAX_THREADS`."""
    try:
        import numba
    except ImportError:  # pragma: no cover - numba is a dependency
        return 1
    return max(1, min(MAX_THREADS, int(numba.get_num_threads())))


def _aligned_rows(n: int, cols: int) -> np.ndarray:
    """(n, cols rounded up to 16) int32 zeros, each row on its own 64-byte lines: a
    hit then loads whole lines of its pixel only (one line for up to 13 levels: the
    lines a hit loads, not the work on them, bound the pass's speed)."""
    cols += -cols % 16
    buf = np.zeros(n * cols + 16, dtype=np.int32)
    skip = (-buf.ctypes.data % 64) // 4
    return buf[skip:skip + n * cols].reshape(n, cols)


class XsvsAccumulator:
    """Histograms of frames ``[0, n_frames)`` fed as blocks of hits (in frame order) or
    chunks of dense frames (in order).

    Parameters
    ----------
    shape : (H, W)
    n_frames : int
    bins : (H, W) int
        Dynamic q-bins, 1-based (0: in none). The histograms have ``bins.max()`` rows.
    valid : (H, W) bool, optional
    windows : (L,) int
        Frames per exposure, ascending (default :func:`default_windows`).
    counter_cap : int, optional
        Count at which a frame's pixel saturates (its window is censored).
    kmax : int
    """

    def __init__(self, shape: tuple[int, int], n_frames: int, bins: np.ndarray, *,
                 valid: np.ndarray | None = None, windows: np.ndarray | None = None,
                 counter_cap: int | None = None, kmax: int = KMAX):
        self.shape = (int(shape[0]), int(shape[1]))
        self.n_frames = int(n_frames)
        b = np.asarray(bins).reshape(-1).astype(np.int64)
        if b.size != self.shape[0] * self.shape[1]:
            raise ValueError(f"q-bin map of {np.asarray(bins).shape} for frames of {shape}")
        if valid is not None:
            v = np.asarray(valid, dtype=bool).reshape(-1)
            if v.size != b.size:
                raise ValueError(f"mask of {np.asarray(valid).shape} for frames of {shape}")
            b = np.where(v, b, 0)
        b = np.clip(b, 0, None)
        self.n_bins = int(b.max()) if b.size else 0
        sel = np.flatnonzero(b > 0)
        self.cidx = np.full(b.size, -1, dtype=np.int32)
        self.cidx[sel] = np.arange(sel.size, dtype=np.int32)
        self.cbin = (b[sel] - 1).astype(np.int32)
        self.sel = sel
        self.n_pixels = np.bincount(self.cbin, minlength=self.n_bins).astype(np.int64)
        w = default_windows(self.n_frames) if windows is None else np.asarray(windows)
        w = np.asarray(w, dtype=np.int64)
        if w.ndim != 1 or w.size == 0 or np.any(w < 1) or np.any(np.diff(w) <= 0):
            raise ValueError("exposures must be whole numbers of frames >= 1, ascending "
                             f"and distinct (got {w.tolist()})")
        self.windows = w
        self.n_windows = self.n_frames // w
        self.cap = int(counter_cap) if counter_cap else 0
        self.kmax = int(kmax)
        nb, nl = self.n_bins, w.size
        # (bins, k, levels) while counting: see _numba._record
        # a leading axis: one histogram per thread of the pass (_numba.hits_parts)
        self.parts = _threads()
        self._hist = np.zeros((self.parts, nb, self.kmax + 2, nl), dtype=np.int64)
        self._cens = np.zeros_like(self._hist)
        log2 = np.log2(w).round().astype(np.int64)
        self.shift = np.where(np.left_shift(1, log2) == w, log2, -1).astype(np.int64)
        self._sums = np.zeros((self.parts, nb, nl, 4), dtype=np.float64)  # k .. k⁴
        self.chains = split_chains(w)
        self._states = []
        for ch in self.chains:
            st = _aligned_rows(sel.size, 3 + ch.size)
            st[:, 1] = -1  # no frame lit yet
            self._states.append(st)
        self.not_whole = 0
        self._done = False

    def _views(self, k: int) -> tuple[np.ndarray, ...]:
        ch = self._level_index(k)  # contiguous levels: views, written in place
        return (self.windows[ch], self.shift[ch], self.n_windows[ch],
                self._hist[..., ch], self._cens[..., ch], self._sums[:, :, ch])

    def _level_index(self, k: int) -> np.ndarray | slice:
        ch = self.chains[k]
        return slice(int(ch[0]), int(ch[-1]) + 1) if ch.size == ch[-1] - ch[0] + 1 else ch

    def _run(self, fn: str, *args: np.ndarray) -> None:
        from xpcsviewer.compute.xsvs import _numba as nb

        for k in range(len(self.chains)):
            ch = self._level_index(k)
            win, sh, nfull, h, c, ph = self._views(k)
            if fn == "hits":
                nb.hits_parts(*args, self.cidx, self.cbin, self._states[k], win, sh, nfull,
                              self.cap, h, c, ph, self.kmax)
            else:
                nb.close_all(self._states[k], self.cbin, win, nfull, h[0], c[0], ph[0],
                             self.kmax)
            if not isinstance(ch, slice):  # copies: write them back
                self._hist[..., ch], self._cens[..., ch] = h, c
                self._sums[:, :, ch] = ph

    def add_hits(self, frame: np.ndarray, pixel: np.ndarray, value: np.ndarray) -> None:
        """A block of hits (processed frame, flat pixel, count), frames non-decreasing
        and after those of the blocks before."""
        frame, pixel, value = np.asarray(frame), np.asarray(pixel), np.asarray(value)
        if frame.size:
            self._run("hits", frame, pixel, self._whole(value))

    def add_frames(self, start: int, chunk: np.ndarray) -> None:
        """Dense frames ``[start, start + len(chunk))``: their nonzero pixels of the
        q-bins go through the same pass as hits."""
        x = np.asarray(chunk).reshape(chunk.shape[0], -1)[:, self.sel]
        fr, j = np.nonzero(x)
        if fr.size:
            self._run("hits", fr.astype(np.int64) + int(start), self.sel[j],
                      self._whole(x[fr, j]))

    def _whole(self, value: np.ndarray) -> np.ndarray:
        # int32 for the kernel (one compiled variant a hit layout, not one a count
        # dtype: the parallel pass compiles in seconds); float counts must be whole
        if value.dtype.kind in "iu":
            if value.dtype == np.int32:
                return value
            if value.dtype.itemsize < 4:
                return value.astype(np.int32)
            return np.minimum(value, np.iinfo(np.int32).max).astype(np.int32)
        bad = ~(np.floor(value) == value) & (value > 0)
        self.not_whole += int(np.count_nonzero(bad))
        v = np.where(bad | ~(value > 0), 0, np.minimum(value, np.iinfo(np.int32).max))
        return v.astype(np.int32)

    def finish(self) -> XsvsCounts:
        """Close every open window and fill in the zeros."""
        if not self._done:
            self._run("close")
            self.hist = np.ascontiguousarray(self._hist.sum(axis=0).transpose(0, 2, 1))
            self.cens = np.ascontiguousarray(self._cens.sum(axis=0).transpose(0, 2, 1))
            self._sums = self._sums.sum(axis=0)
            k = np.arange(self.kmax + 1, dtype=np.float64)
            both = (self.hist + self.cens)[:, :, :self.kmax + 1].astype(np.float64)
            for p in range(4):  # the counts up to kmax from the histogram, exactly
                self._sums[..., p] += both @ k ** (p + 1)
            seen = self.hist.sum(axis=2) + self.cens.sum(axis=2)
            self.hist[:, :, 0] += self.n_pixels[:, None] * self.n_windows[None, :] - seen
            self._done = True
        if self.not_whole:
            raise ValueError(f"{self.not_whole} counts are not whole "
                             "numbers: XSVS counts photons (frames of averaged or "
                             "corrected intensities cannot be used)")
        st, tcol = self._states[0], 2
        return XsvsCounts(windows=self.windows.copy(), n_windows=self.n_windows.copy(),
                          n_pixels=self.n_pixels.copy(), hist=self.hist, cens=self.cens,
                          photons=self._sums[..., 0].copy(), counter_cap=self.cap or None,
                          moments=self._sums.copy(),
                          pixel_photons=st[:, tcol].astype(np.float64),
                          pixels=self.sel.copy())


def histograms_dense(frames: np.ndarray, bins: np.ndarray, windows: np.ndarray, *,
                     valid: np.ndarray | None = None, counter_cap: int | None = None,
                     kmax: int = KMAX) -> XsvsCounts:
    """The reference: the same histograms from whole dense frames ``(N, H, W)``, window
    sums by reshaping, one ``bincount`` per bin and exposure."""
    x = np.asarray(frames)
    n = x.shape[0]
    b = np.asarray(bins).astype(np.int64)
    if valid is not None:
        b = np.where(np.asarray(valid, dtype=bool), b, 0)
    nb = int(b.max())
    w = np.asarray(windows, dtype=np.int64)
    hist = np.zeros((nb, w.size, kmax + 2), dtype=np.int64)
    cens = np.zeros_like(hist)
    sums = np.zeros((nb, w.size, 4))
    capped = (x >= counter_cap) if counter_cap else np.zeros(x.shape, dtype=bool)
    for li, m in enumerate(w):
        nw = n // m
        s = x[:nw * m].reshape(nw, m, *x.shape[1:]).sum(axis=1).astype(np.int64)
        c = capped[:nw * m].reshape(nw, m, *x.shape[1:]).any(axis=1)
        for bi in range(nb):
            px = b == bi + 1
            sv, cv = s[:, px].ravel(), c[:, px].ravel()
            k = np.minimum(sv, kmax + 1)
            hist[bi, li] = np.bincount(k[~cv], minlength=kmax + 2)
            cens[bi, li] = np.bincount(k[cv], minlength=kmax + 2)
            sums[bi, li] = [(sv.astype(np.float64) ** p).sum() for p in (1, 2, 3, 4)]
    return XsvsCounts(windows=w, n_windows=n // w,
                      n_pixels=np.bincount(b[b > 0] - 1, minlength=nb).astype(np.int64),
                      hist=hist, cens=cens, photons=sums[..., 0].copy(), moments=sums,
                      counter_cap=int(counter_cap) if counter_cap else None)


def mean_spread(pixel_photons: np.ndarray, pixels: np.ndarray, bins: np.ndarray,
                static: np.ndarray | None, n_bins: int) -> np.ndarray:
    """(n_bins,) relative variance s² of the pixels' mean intensity within each q-bin.

    A pixel's mean is taken as that of its static bin's pixels (the q-map's finer
    partition: many speckles, so the speckle averages out and what remains is I(q)
    across the q-bin). A pooled histogram of pixels whose means spread by s² looks like
    a negative binomial of visibility β(1 + s²) + s² (:func:`correct_spread`). Pixels
    without a static bin count at their q-bin's mean; a static partition no finer than
    the dynamic one gives 0.
    """
    b = np.asarray(bins).reshape(-1)[pixels].astype(np.int64)
    ph = np.asarray(pixel_photons, dtype=np.float64)
    out = np.zeros(n_bins)
    if static is None or ph.size == 0:
        return out
    s = np.asarray(static).reshape(-1)[pixels].astype(np.int64)
    key = np.where(s > 0, s, -b)  # no static bin: the q-bin's own mean
    _, inv = np.unique(key, return_inverse=True)
    w = (np.bincount(inv, weights=ph) / np.bincount(inv))[inv]
    cnt = np.bincount(b - 1, minlength=n_bins).astype(np.float64)
    m1 = np.bincount(b - 1, weights=w, minlength=n_bins) / np.maximum(cnt, 1)
    m2 = np.bincount(b - 1, weights=w * w, minlength=n_bins) / np.maximum(cnt, 1)
    ok = (cnt > 0) & (m1 > 0)
    out[ok] = np.maximum(m2[ok] / m1[ok] ** 2 - 1.0, 0.0)
    return out


def correct_spread(beta: np.ndarray, beta_error: np.ndarray,
                   s2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The visibility of one pixel from that of a pooled histogram whose pixel means
    spread by ``s2``: counts K | pixel ~ NB(μ w, 1/β) with mean w = 1 and var w = s²
    have Var K = μ + μ² (β (1 + s²) + s²), so β = (β_pooled - s²) / (1 + s²)."""
    s2 = np.asarray(s2, dtype=np.float64)
    return (np.asarray(beta) - s2) / (1.0 + s2), np.asarray(beta_error) / (1.0 + s2)
