"""The CPU engine of the two-time correlator (BLAS, no compilation).

One reading pass gathers the selected pixels into a store and sums every static bin per
frame (:class:`_RunSums`): the sums give each bin's normalisation and the job's
scattering means; a bin's pre-scaled rows are then one blocked symmetric product
(:func:`_gram_upper`). Used by :func:`~xpcsviewer.compute.twotime.correlator.correlate_twotime`
for jobs on the CPU; docs/correlators.md has the measurements.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from xpcsviewer.backends import get_backend
from xpcsviewer.compute._binning import PixelBins
from xpcsviewer.compute.multitau.correlator import ScatteringAccumulator
from xpcsviewer.compute.twotime import correlator as tt
from xpcsviewer.progress import CancelToken, ProgressCallback, report


def _gram_upper(d: np.ndarray, c: np.ndarray, rows: int) -> None:
    """Upper triangle (diagonal included) of ``d dᵀ`` into ``c``, in row tiles.

    A diagonal tile is ``D_I D_Iᵀ`` (NumPy hands a same-operand product to BLAS
    ``syrk``), the tiles right of it one GEMM each: half of a full product. Only the
    diagonal tiles' lower halves are written below the diagonal (and zeroed here), so a
    lower triangle that was zero stays zero.
    """
    n = d.shape[0]
    for a0 in range(0, n, rows):
        a1 = min(n, a0 + rows)
        di = d[a0:a1]
        view = c[a0:a1, a0:a1]
        np.matmul(di, di.T, out=view)
        for k in range(1, a1 - a0):
            view[k, :k] = 0.0
        if a1 < n:
            np.matmul(di, d[a1:].T, out=c[a0:a1, a1:])


def _sum_dtype(dt: np.dtype, k: int) -> type:
    """An exact and fast accumulator for a column sum of k values of dtype ``dt``."""
    dt = np.dtype(dt)
    if dt.kind == "u" and dt.itemsize <= 2 and k <= 65536:
        return np.uint32  # k * 65535 < 2**32
    if dt.kind in "ui":
        return np.int64
    return np.float64


class _RunSums:
    """Per-frame sums over the selected pixels' static bins, made while reading.

    The store keeps the selected pixels ordered by (dynamic bin, static bin), so each
    static bin is one run of columns; a static bin never spans two dynamic bins
    (``select_pixels`` checks it). The sums give the normalisation of every bin (no pass
    over the frames per bin) and, with the unselected pixels' runs and the image sum, the
    scattering means of the job, so the CPU job needs no compiled kernel.
    """

    def __init__(self, pixels: PixelBins, sel: np.ndarray, n_frames: int,
                 with_scattering: bool) -> None:
        self.pixels = pixels
        sid = pixels.static_id[sel]
        self.starts = np.flatnonzero(np.r_[True, sid[1:] != sid[:-1]]) if sel.size else \
            np.zeros(0, np.int64)
        self.lengths = np.diff(np.r_[self.starts, sel.size])
        self.sid = sid[self.starts]
        self.sums = np.zeros((n_frames, self.starts.size))
        self.scattering = with_scattering
        rest = np.zeros(0, np.int64)
        if with_scattering:
            rest = np.setdiff1d(np.arange(pixels.n_pixels), sel, assume_unique=True)
            rest = rest[np.argsort(pixels.static_id[rest], kind="stable")]
            rsid = pixels.static_id[rest]
            self.rest_starts = np.flatnonzero(np.r_[True, rsid[1:] != rsid[:-1]]) \
                if rest.size else np.zeros(0, np.int64)
            self.rest_sid = rsid[self.rest_starts]
            self.rest_sums = np.zeros((n_frames, self.rest_starts.size))
            h, w = pixels.shape
            self.images = [np.zeros(h * w), np.zeros(h * w)]  # one per reading thread
        self.rest_index = pixels.pixel_index[rest]

    def add(self, rows: np.ndarray, flat: np.ndarray, a: int, slot: int = 0) -> None:
        """Add the store rows ``rows`` (frames a..) and their full frames ``flat``
        (``slot``: the image sum of this reading thread)."""
        k = rows.shape[0]
        if self.starts.size:
            acc = np.int64 if rows.dtype.kind in "ui" else np.float64
            self.sums[a : a + k] = np.add.reduceat(rows, self.starts, axis=1, dtype=acc)
        if not self.scattering:
            return
        self.images[slot] += flat.sum(axis=0, dtype=_sum_dtype(flat.dtype, k))
        if self.rest_starts.size:
            part = np.take(flat, self.rest_index, axis=1)
            acc = np.int64 if part.dtype.kind in "ui" else np.float64
            self.rest_sums[a : a + k] = np.add.reduceat(part, self.rest_starts, axis=1,
                                                        dtype=acc)

    def accumulator(self, count: int) -> ScatteringAccumulator:
        """The job's scattering means, as :class:`ScatteringAccumulator` holds them."""
        px = self.pixels
        acc = ScatteringAccumulator(px, count, backend=get_backend("numpy"), compiled=False)
        np.add(*self.images, out=acc.sum_image)
        acc.static_sums[:, self.sid] = self.sums[:count]
        if self.rest_starts.size:
            acc.static_sums[:, self.rest_sid] = self.rest_sums[:count]
        if px.n_pixels:
            acc.intensity[:] = acc.static_sums.sum(axis=1) / px.n_pixels
        acc.count = count
        return acc


def _bin_factors(gsum: np.ndarray, counts: np.ndarray, n_pix: int) -> np.ndarray:
    """(N, groups) factors v with ``z = x * v[group]`` the pre-scaled rows of a bin.

    ``y = x / gmean`` (a non-positive group mean becomes 1) and ``z = y * sqrt(P) / S``
    with ``S = sum(y) = sum_g gsum / gmean``, so a block of the map is one product of
    z rows. An all-zero frame (S = 0, non-negative input) keeps ``z = 0``, whose map
    entries are 0 as the denominator rule gives.
    """
    pos = gsum > 0
    w = np.where(pos, counts / np.where(pos, gsum, 1.0), 1.0)
    s = np.sum(w * gsum, axis=1)
    f = np.sqrt(float(n_pix)) / np.where(s > 0, s, 1.0)
    return w * f[:, None]


def _two_parts(pool: ThreadPoolExecutor | None, fn: Callable[[int, int, int], None], n: int,
               split: int | None = None) -> None:
    """``fn(lo, hi, slot)`` over [0, n): [0, split) on the pool's thread (slot 0) while
    this thread does [split, n) (slot 1), or all here without a pool. NumPy releases
    the GIL in these passes, so the second core works while BLAS is idle."""
    h = n // 2 if split is None else int(split)
    if pool is None or not 0 < h < n:
        fn(0, n, 1)
        return
    fut = pool.submit(fn, 0, h, 0)
    try:
        fn(h, n, 1)
    finally:
        fut.result()


def _finish_upper32(c: np.ndarray, flat: np.ndarray, maps: list[np.ndarray],
                    pool: ThreadPoolExecutor | None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`finish_map` for a float32 upper map, the cast shared by two threads (this
    one also takes the diagonal sums: it casts the last third of the rows)."""
    n = c.shape[0]
    m = tt._small_pages(c.shape, np.float32)
    g2: list[tuple[np.ndarray, np.ndarray]] = []

    def part(lo: int, hi: int, slot: int) -> None:
        np.copyto(m[lo:hi], c[lo:hi], casting="same_kind")
        if slot == 1:
            g2.append(tt._map_g2(c, flat, 5))

    _two_parts(pool, part, n, split=(2 * n) // 3)
    maps.append(m)
    return g2[0]


def correlate_cpu(
    chunks: Iterable[np.ndarray],
    n_frames: int,
    pixels: PixelBins,
    bins: np.ndarray,
    spec: Any,
    options: Any,
    progress: ProgressCallback | None,
    cancel: CancelToken | None,
) -> tt.TwotimeResult | tt.TwotimeRun:
    """:func:`correlate_twotime` on the CPU: one reading pass, then BLAS per bin
    (``spec``: its CorrelateSpec, ``smooth`` read; ``options``: its TwotimeOptions).

    The reading pass gathers the selected pixels into the store (their own dtype) and
    sums every static bin per frame; a bin's pre-scaled rows are then one multiply per
    static bin (factors from those sums) into a reused float64 buffer, and its map one
    blocked symmetric product (:func:`_gram_upper`). Signed input with negative values
    and bins too large to hold whole go through :func:`_upper_map` (tiles).
    """
    smooth, block_rows, with_scattering = spec.smooth, options.block_rows, options.with_scattering
    full = options.c2_format == "full"
    sel = np.flatnonzero(np.isin(pixels.dynamic_id, bins - 1))
    sel = sel[np.lexsort((pixels.static_id[sel], pixels.dynamic_id[sel]))]
    sums = _RunSums(pixels, sel, n_frames, with_scattering)
    # a second thread for the passes NumPy runs on one core (BLAS has both for products)
    pool = ThreadPoolExecutor(1) if (os.cpu_count() or 1) > 1 else None
    try:
        return _correlate_cpu_pass(chunks, n_frames, pixels, bins, sel, sums, pool,
                                   smooth=smooth, block_rows=block_rows, progress=progress,
                                   cancel=cancel, with_scattering=with_scattering, full=full)
    finally:
        if pool is not None:
            pool.shutdown()


def _correlate_cpu_pass(
    chunks: Iterable[np.ndarray],
    n_frames: int,
    pixels: PixelBins,
    bins: np.ndarray,
    sel: np.ndarray,
    sums: _RunSums,
    pool: ThreadPoolExecutor | None,
    *,
    smooth: str,
    block_rows: int,
    progress: ProgressCallback | None,
    cancel: CancelToken | None,
    with_scattering: bool,
    full: bool,
) -> tt.TwotimeResult | tt.TwotimeRun:
    """The body of :func:`correlate_cpu` (``pool``: its second thread, or None)."""
    sel_index = pixels.pixel_index[sel]
    sel_dyn = pixels.dynamic_id[sel]
    store: np.ndarray | None = None
    done = 0
    total_steps = n_frames + len(bins)
    report(progress, cancel, 0, total_steps, "two-time: reading")
    for chunk in chunks:
        chunk = np.asarray(chunk)
        flat = chunk.reshape(chunk.shape[0], -1)
        k = flat.shape[0]
        if done + k > n_frames:
            raise ValueError(f"more frames than announced ({done + k} > {n_frames})")
        if store is None:
            store = tt._small_pages((n_frames, sel.size), tt._store_dtype(flat.dtype))
        elif not np.can_cast(flat.dtype, store.dtype, "safe"):
            store = store.astype(np.float32)

        def read(lo: int, hi: int, slot: int, store: np.ndarray = store, flat: np.ndarray = flat,
                 a: int = done) -> None:
            rows, part = store[a + lo : a + hi], flat[lo:hi]
            if part.dtype == store.dtype:
                np.take(part, sel_index, axis=1, out=rows, mode="clip")  # indices are valid
            else:
                rows[...] = part[:, sel_index]
            sums.add(rows, part, a + lo, slot)

        _two_parts(pool, read, k)
        done += k
        report(progress, cancel, done, total_steps, "two-time: reading")
    if done != n_frames or store is None:
        raise ValueError(f"expected {n_frames} frames, got {done}")
    maps: list[np.ndarray] = []
    g2 = np.zeros((n_frames, len(bins)))
    g2_seg = np.zeros((n_frames // 5, 5, len(bins)))
    bounds = np.searchsorted(sel_dyn, bins - 1, side="left")
    ends = np.searchsorted(sel_dyn, bins - 1, side="right")
    n = n_frames
    # S <= 0 rows need the explicit denominator rule: only signed input can make them
    nonneg = store.dtype.kind == "u" or store.size == 0 or bool(np.min(store) >= 0)
    whole = [nonneg and 8 * n * (b - a) <= max(8 * n * n, tt.CACHE_BYTES)
             for a, b in zip(bounds, ends, strict=True)]
    widest = max([b - a for a, b, w in zip(bounds, ends, whole, strict=True) if w], default=0)
    dbuf = tt._small_pages((n * widest,), np.float64)
    # one float64 map buffer for all bins; its lower triangle and tail stay zero
    flat_map = tt._small_pages((n * n + n,), np.float64)
    c = flat_map[: n * n].reshape(n, n)
    group = pixels.static_id[sel] if smooth == "sqmap" else sel_dyn
    for i, (a, b) in enumerate(zip(bounds, ends, strict=True)):
        pb = int(b - a)
        if whole[i]:
            r0, r1 = np.searchsorted(sums.starts, [a, b])
            gsum, counts = sums.sums[:, r0:r1], sums.lengths[r0:r1]
            starts = sums.starts[r0:r1] - a
            if smooth == "dqmap":
                gsum, counts, starts = gsum.sum(axis=1, keepdims=True), np.array([pb]), [0]
            v = _bin_factors(gsum, counts, pb)
            d = dbuf[: n * pb].reshape(n, pb)
            x = store[:, a:b]

            def norm(lo: int, hi: int, _slot: int, x: np.ndarray = x, d: np.ndarray = d,
                     v: np.ndarray = v, starts: Any = starts, counts: Any = counts) -> None:
                for g, (s0, ln) in enumerate(zip(starts, counts, strict=True)):
                    np.multiply(x[lo:hi, s0 : s0 + ln], v[lo:hi, g : g + 1],
                                out=d[lo:hi, s0 : s0 + ln])

            _two_parts(pool, norm, n)
            rows = max(16, min(int(block_rows), tt.TILE_BYTES // max(8 * pb, 1)))
            _gram_upper(d, c, rows)
        else:
            tt._upper_map(store[:, a:b], group[a:b], flat_map, block_rows=block_rows,
                       backend=get_backend("numpy"), device=None, cpu=True)
        if full:
            g2[:, i], g2_seg[:, :, i] = tt.finish_map(c, flat_map, full, maps)
        else:
            g2[:, i], g2_seg[:, :, i] = _finish_upper32(c, flat_map, maps, pool)
        report(progress, cancel, n_frames + i + 1, total_steps, f"two-time: bin {bins[i]}")
    res = tt.TwotimeResult(
        processed_bins=bins,
        c2=maps,
        g2_full=g2,
        g2_segments=g2_seg,
        n_frames=int(n_frames),
        config={"smooth": smooth, "backend": "numpy"},
    )
    if with_scattering:
        return tt.TwotimeRun(res, sums.accumulator(done))
    return res
