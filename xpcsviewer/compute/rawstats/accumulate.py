"""The statistics of a raw run in one pass: over blocks of hits (photon-sparse and event
sources) or over chunks of dense frames.

Per frame: photons, hit pixels and hit pixels at the counter cap (valid pixels), photons
per dynamic q-bin. Per pixel (every pixel, masked ones too, so that a masked hot pixel
is still seen): summed counts, the largest count in one frame, the frames at the cap.
Per q-bin: the count distribution P(k), zeros included (pixels x frames - hits). And the
hits that may belong to a cosmic-ray cluster (:mod:`.clusters`), marked as they pass.

The counter cap of a sparse source is not known before the pass (a Rigaku file does not
store its bit depth): the counts at each candidate cap (3, 15, 255, 4095) are kept, and
:meth:`RawStatsAccumulator.finish` keeps those of the cap it is given (the smallest
candidate >= the largest count seen, :func:`infer_cap`, unless the caller knows it).

Two engines give the same numbers (tests compare them, exactly): the compiled one (one
numba loop over the hits, :mod:`._numba`) and a plain NumPy one (:func:`hits_numpy`).
Dense chunks take a vectorised NumPy path. Memory: a few (H, W) maps (5 float64 and one
int32 per candidate cap) and the O(N) timelines; nothing the size of the run.
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass

import numpy as np

from xpcsviewer.compute.spec import Engine

__all__ = ["BRIGHT_P", "CAP_LEVELS", "KMAX", "RawStats", "RawStatsAccumulator",
           "hits_numpy", "infer_cap", "make_lut"]

#: the counter caps of the Rigaku XSPA's 2-, 4-, 8- and 12-bit modes (2**b - 1)
CAP_LEVELS = (3, 15, 255, 4095)
#: P(k) is kept for k = 0..KMAX, and k > KMAX in one last column: the photon statistics of
#: XPCS live at small k; a larger KMAX only makes the table longer
KMAX = 63
#: a hit may start a cosmic-ray cluster when its count is >= 2 and so high that even a
#: fully coherent speckle (one mode: P(X >= k) = (m / (1 + m))**k, the heaviest tail
#: speckle has) at the pixel's mean m over the frames before would give it at most this
#: often. Loose on purpose: clusters are scored at the end with the run's means; this only
#: keeps the candidates few (a pixel at 1 % occupancy needs 2 counts, one at 1 needs 10)
BRIGHT_P = 1e-3


def infer_cap(max_count: float, levels: tuple[int, ...] = CAP_LEVELS) -> int | None:
    """The smallest of ``levels`` at least ``max_count`` (a Rigaku mode's cap), or None
    when the counts exceed them all or there are none."""
    if not np.isfinite(max_count) or max_count <= 0:
        return None
    for c in levels:
        if max_count <= c:
            return int(c)
    return None


def make_lut(shape: tuple[int, int], valid: np.ndarray | None,
             bins: np.ndarray | None) -> tuple[np.ndarray, int]:
    """(flat pixel -> -1 not valid / 0 valid in no bin / 1-based q-bin, number of bins).

    ``valid`` (H, W) bool (None: every pixel); ``bins`` (H, W) int dynamic bins (0: none).
    """
    npix = int(shape[0]) * int(shape[1])
    lut = np.zeros(npix, dtype=np.int32)
    nb = 0
    if bins is not None:
        b = np.asarray(bins).reshape(-1)
        if b.size != npix:
            raise ValueError(f"q-bin map of {np.asarray(bins).shape} for frames of {shape}")
        lut[:] = np.clip(b, 0, None).astype(np.int32)
        nb = int(lut.max()) if npix else 0
    if valid is not None:
        m = np.asarray(valid, dtype=bool).reshape(-1)
        if m.size != npix:
            raise ValueError(f"mask of {np.asarray(valid).shape} for frames of {shape}")
        lut[~m] = -1
    return lut, nb


@dataclass
class RawStats:
    """What :meth:`RawStatsAccumulator.finish` returns (arrays described there)."""

    n_frames: int
    shape: tuple[int, int]
    counter_cap: int | None
    photons: np.ndarray  #: (N,) float64
    hit_pixels: np.ndarray  #: (N,) int64
    at_cap: np.ndarray  #: (N,) int64
    bin_photons: np.ndarray | None  #: (N, n_bins) float32
    pixel_sum: np.ndarray  #: (H, W) float64
    pixel_max: np.ndarray  #: (H, W) float64
    pixel_cap_frames: np.ndarray  #: (H, W) int32
    count_hist: np.ndarray | None  #: (n_bins, KMAX + 2) int64, zeros included
    n_valid: int
    lut: np.ndarray  #: (H * W,) int32, as :func:`make_lut`
    candidates: tuple[np.ndarray, np.ndarray, np.ndarray]  #: (frame, pixel, value)


#: the per-pixel state's columns: run sum, maximum in one frame, last frame lit, its value
#: there, the pixel's :func:`make_lut` entry; padded to 8 (64 bytes, one cache line)
LUT_COL = 4
STATE_COLS = 8


def _aligned_state(npix: int) -> np.ndarray:
    """(npix, STATE_COLS) float64 zeros whose rows start on 64-byte boundaries.

    A photon-sparse run lights a random pixel per hit: every hit's state is then a cache
    miss, and one line per hit (not the two or three of separate maps) is what bounds the
    pass's speed."""
    buf = np.zeros(npix * STATE_COLS + 8, dtype=np.float64)
    skip = (-buf.ctypes.data % 64) // 8
    return buf[skip:skip + npix * STATE_COLS].reshape(npix, STATE_COLS)


def _compiled_available() -> bool:
    return importlib.util.find_spec("numba") is not None


class RawStatsAccumulator:
    """Statistics of frames ``[0, n_frames)`` of a detector, fed in any order of blocks.

    Parameters
    ----------
    shape : (H, W)
    n_frames : int
    valid : (H, W) bool, optional
        Pixels counted in the timelines and P(k) (None: all).
    bins : (H, W) int, optional
        Dynamic q-bins, 1-based (0: in none); None: no per-bin statistics.
    caps : tuple of int
        Candidate counter caps (one known cap, or :data:`CAP_LEVELS`); () for none.
    engine : Engine
        ``compiled`` (numba, when importable) or ``array`` (NumPy) for the hits; ``auto``
        takes numba when it is importable.
    """

    def __init__(self, shape: tuple[int, int], n_frames: int, *,
                 valid: np.ndarray | None = None, bins: np.ndarray | None = None,
                 caps: tuple[int, ...] = CAP_LEVELS, engine: Engine | str = Engine.AUTO):
        self.shape = (int(shape[0]), int(shape[1]))
        self.npix = self.shape[0] * self.shape[1]
        self.n_frames = int(n_frames)
        self.lut, self.n_bins = make_lut(self.shape, valid, bins)
        self.n_valid = int(np.count_nonzero(self.lut >= 0))
        self.caps = np.asarray(sorted(int(c) for c in caps), dtype=np.float64)
        eng = Engine.parse(engine)
        if eng is Engine.AUTO:
            eng = Engine.COMPILED if _compiled_available() else Engine.ARRAY
        self.engine = eng
        n, nl = self.n_frames, self.caps.size
        self.state = _aligned_state(self.npix)
        self.state[:, 2] = -1.0  # no frame lit yet
        self.state[:, LUT_COL] = self.lut
        self.cap_frames = np.zeros((nl, self.npix), dtype=np.int32)
        self.photons = np.zeros(n, dtype=np.float64)
        self.hits = np.zeros(n, dtype=np.int64)
        self.at_level = np.zeros((n, nl), dtype=np.int64)
        self.bin_ph = np.zeros((n, self.n_bins), dtype=np.float32)
        self.hist = np.zeros((self.n_bins + 1, KMAX + 2), dtype=np.int64)
        self._cand: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._buf: tuple[np.ndarray, np.ndarray] | None = None
        self.log_bright = math.log(BRIGHT_P)

    # ------------------------------------------------------------------ hits
    def add_hits(self, frame: np.ndarray, pixel: np.ndarray, value: np.ndarray) -> int:
        """Add a block of hits (processed frame, flat pixel, count), frames in
        ``[0, n_frames)``, in frame order; returns the cosmic candidates it held."""
        frame = np.asarray(frame)
        pixel = np.asarray(pixel)
        value = np.asarray(value)
        n = frame.size
        if n == 0:
            return 0
        if self._buf is None or self._buf[0].size < n:
            self._buf = (np.zeros(n, np.uint8), np.zeros(n, np.float64))
        cand, cand_val = self._buf[0][:n], self._buf[1][:n]
        if self.engine is Engine.COMPILED:
            from xpcsviewer.compute.rawstats._numba import hits_pass

            hits_pass(frame, pixel, value, self.caps, KMAX, self.log_bright,
                      self.state, self.cap_frames, self.photons, self.hits, self.at_level,
                      self.bin_ph, self.hist, cand, cand_val)
        else:
            hits_numpy(self, frame, pixel, value, cand, cand_val)
        at = np.flatnonzero(cand)
        if at.size == 0:
            return 0
        return self._keep_candidates(frame[at].astype(np.int64), pixel[at].astype(np.int64),
                                     cand_val[at].copy())

    def _keep_candidates(self, f: np.ndarray, p: np.ndarray, v: np.ndarray) -> int:
        # a pixel-frame marked twice (repeated hits) keeps its last, whole value
        key = f * self.npix + p
        order = np.lexsort((v, key))
        key, f, p, v = key[order], f[order], p[order], v[order]
        last = np.r_[key[1:] != key[:-1], True]
        self._cand.append((f[last], p[last], v[last]))
        return int(np.count_nonzero(last))

    # ------------------------------------------------------------------ dense frames
    def add_frames(self, start: int, frames: np.ndarray) -> int:
        """Add dense frames ``[start, start + n)`` (n, H, W); returns the cosmic
        candidates they held. Negative or fractional counts go into P(k) floored and
        clipped at 0; a hit is a value > 0."""
        x = np.asarray(frames).reshape(-1, self.npix)
        n = x.shape[0]
        if n == 0:
            return 0
        if self.engine is Engine.COMPILED and x.dtype.kind == "u":
            # counts of a photon-counting detector: its lit pixels go through the hits'
            # kernel (~10 x faster than the NumPy passes below); the same numbers, as a
            # test checks, since nothing is negative or fractional
            fi, pi = np.nonzero(x)
            return self.add_hits(fi + int(start), pi, x[fi, pi])
        f_idx = np.arange(start, start + n)
        valid = self.lut >= 0
        xs = x[:, valid]
        self.photons[f_idx] += xs.sum(axis=1, dtype=np.float64)
        self.hits[f_idx] += np.count_nonzero(xs > 0, axis=1)
        rows = self.lut[valid]
        if self.n_bins:
            order = np.argsort(rows, kind="stable")
            srt = rows[order]
            inbin = srt > 0
            b_ids, first = np.unique(srt[inbin], return_index=True)
            if b_ids.size:
                seg = xs[:, order[inbin]]
                sums = np.add.reduceat(seg, first, axis=1, dtype=np.float64)
                self.bin_ph[np.ix_(f_idx, b_ids - 1)] += sums.astype(np.float32)
        k = np.clip(np.floor(xs), 0, KMAX + 1).astype(np.int64)
        self.hist += np.bincount((rows[None, :].astype(np.int64) * (KMAX + 2) + k).ravel(),
                                 minlength=self.hist.size).reshape(self.hist.shape)
        for m, c in enumerate(self.caps):
            at = x == c
            self.cap_frames[m] += np.count_nonzero(at, axis=0).astype(np.int32)
            self.at_level[f_idx, m] += np.count_nonzero(at[:, valid], axis=1)
        before = self.state[:, 0].copy()
        cum = np.cumsum(x, axis=0, dtype=np.float64)
        self.state[:, 0] += cum[-1]
        np.maximum(self.state[:, 1], x.max(axis=0), out=self.state[:, 1])
        fi, pi = np.nonzero(x >= 2)
        if fi.size == 0:
            return 0
        v = x[fi, pi].astype(np.float64)
        lam = (before[pi] + cum[fi, pi] - v) / (start + fi + 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            keep = (lam <= 0) | (v * np.log(lam / (1.0 + lam)) <= self.log_bright)
        if np.any(keep):
            self._cand.append(((start + fi[keep]).astype(np.int64), pi[keep].astype(np.int64),
                               v[keep]))
        return int(np.count_nonzero(keep))

    # ------------------------------------------------------------------ result
    @property
    def max_count(self) -> float:
        """The largest count of one pixel in one frame so far (0 when none)."""
        return float(self.state[:, 1].max()) if self.npix else 0.0

    def finish(self, cap: int | None) -> RawStats:
        """The statistics, with the counts at ``cap`` (one of the candidate caps given
        at construction; None: no cap, zeros)."""
        h, w = self.shape
        n = self.n_frames
        at_cap = np.zeros(n, dtype=np.int64)
        cap_frames = np.zeros(self.npix, dtype=np.int32)
        if cap is not None:
            hit = np.flatnonzero(self.caps == float(cap))
            if hit.size == 0:
                raise ValueError(f"counter cap {cap} is not one of the caps counted "
                                 f"({[int(c) for c in self.caps]})")
            at_cap = self.at_level[:, hit[0]].copy()
            cap_frames = self.cap_frames[hit[0]].copy()
        hist = None
        bin_ph = None
        if self.n_bins:
            hist = self.hist[1:].copy()
            per_bin = np.bincount(self.lut[self.lut > 0], minlength=self.n_bins + 1)[1:]
            # zeros: every pixel-frame of the bin that holds no count >= 1
            hist[:, 0] = per_bin.astype(np.int64) * n - hist[:, 1:].sum(axis=1)
            bin_ph = self.bin_ph
        if self._cand:
            cf, cp, cv = (np.concatenate([c[i] for c in self._cand]) for i in range(3))
        else:
            cf = cp = np.empty(0, np.int64)
            cv = np.empty(0, np.float64)
        return RawStats(
            n_frames=n, shape=(h, w), counter_cap=cap, photons=self.photons,
            hit_pixels=self.hits, at_cap=at_cap, bin_photons=bin_ph,
            pixel_sum=self.state[:, 0].reshape(h, w).copy(),
            pixel_max=self.state[:, 1].reshape(h, w).copy(),
            pixel_cap_frames=cap_frames.reshape(h, w), count_hist=hist,
            n_valid=self.n_valid, lut=self.lut, candidates=(cf, cp, cv))


def hits_numpy(acc: RawStatsAccumulator, frame: np.ndarray, pixel: np.ndarray,
               value: np.ndarray, cand: np.ndarray, cand_val: np.ndarray) -> None:
    """The NumPy twin of :func:`._numba.hits_pass` (the reference the tests compare the
    kernel with): repeated pixel-frames summed first (``np.unique``), then every update
    by ``np.add.at`` / ``np.bincount``. Candidates are marked on the last hit of each
    pixel-frame (the kernel marks that one too: the value only grows)."""
    f = np.asarray(frame, dtype=np.int64)
    p = np.asarray(pixel, dtype=np.int64)
    v = np.asarray(value, dtype=np.float64)
    cand[:] = 0
    pos = v > 0
    idx = np.flatnonzero(pos)
    if idx.size == 0:
        return
    f, p, v = f[idx], p[idx], v[idx]
    key = f * acc.npix + p
    uk, first, inv = np.unique(key, return_index=True, return_inverse=True)
    vals = np.bincount(inv, weights=v, minlength=uk.size)
    last = np.zeros(uk.size, dtype=np.int64)
    np.maximum.at(last, inv, np.arange(inv.size))
    uf, up = uk // acc.npix, uk % acc.npix
    st = acc.state
    # a pixel-frame lit in an earlier block of the same frame (blocks never split frames,
    # but a caller may): continue it as the kernel does
    cont = st[up, 2] == uf
    old = np.where(cont, st[up, 3], 0.0)
    new = old + vals
    # the mean over the frames before: this block's earlier frames count, in frame order
    order = np.lexsort((uf, up))
    ps, fs, vs = up[order], uf[order], vals[order]
    csum = np.cumsum(vs)
    start_of = np.r_[True, ps[1:] != ps[:-1]]
    base = np.maximum.accumulate(np.where(start_of, np.arange(ps.size), 0))
    before_in_block = csum - vs - (csum[base] - vs[base])
    earlier = np.empty(uk.size)
    earlier[order] = before_in_block
    prev_sum = st[up, 0] - np.where(cont, st[up, 3], 0.0) + earlier
    del fs
    st[up, 3] = new
    st[up, 2] = uf
    np.add.at(st[:, 0], up, vals)
    np.maximum.at(st[:, 1], up, new)
    lut = acc.lut[up]
    ok = lut >= 0
    np.add.at(acc.photons, uf[ok], vals[ok])
    np.add.at(acc.hits, uf[ok & ~cont], 1)
    top = KMAX + 1
    kn = np.minimum(new.astype(np.int64), top)
    ko = np.minimum(old.astype(np.int64), top)
    np.add.at(acc.hist, (lut[ok], kn[ok]), 1)
    gone = ok & cont
    np.add.at(acc.hist, (lut[gone], ko[gone]), -1)
    inb = ok & (lut > 0)
    np.add.at(acc.bin_ph, (uf[inb], lut[inb] - 1), vals[inb])
    for m, c in enumerate(acc.caps):
        np.add.at(acc.cap_frames[m], up[cont & (old == c)], -1)
        np.add.at(acc.cap_frames[m], up[new == c], 1)
        np.add.at(acc.at_level[:, m], uf[ok & cont & (old == c)], -1)
        np.add.at(acc.at_level[:, m], uf[ok & (new == c)], 1)
    lam = prev_sum / (uf + 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        bright = (new >= 2) & ((lam <= 0) | (new * np.log(lam / (1.0 + lam))
                                             <= acc.log_bright))
    at = idx[last[bright]]
    cand[at] = 1
    cand_val[at] = new[bright]
    del first
