"""Two-time correlation C(t1, t2) from photon hits (the event-fed twin of ``twotime``).

Same semantics and outputs as :func:`~xpcsviewer.compute.twotime.correlator.correlate_twotime` on
the dense frames the hits make (see that module's notes), equal to float64 round-off,
but the cost grows with the hits, not with frames x pixels.

Algorithm
---------
Only the hits of the selected bins' pixels are kept, as (frame, local pixel, value),
and put pixel-major with each pixel's times ascending; hits of one pixel in one frame
are merged (their values add). Per bin:

1. the per-frame group sums (static bin, or dynamic bin with ``smooth="dqmap"``) are a
   ``bincount`` of the hits; each hit is divided by its group's mean in its frame;
2. ``S_t``, the per-frame sum of the normalised hits, and each hit is scaled by
   ``sqrt(P_b) / S_t`` (as the dense ``_TileNormalizer`` does for non-negative input), so
   that ``C`` is a plain Gram matrix of the scaled hits;
3. the upper triangle: for every pixel, every pair of its hits ``t_i <= t_j`` (a hit with
   itself included: the photon at lag 0 counts v²) adds ``y_i y_j`` to ``C[t_i, t_j]``.

Step 3 is a numba kernel (:mod:`._twotime_numba`), parallel over bands of rows; a plain
NumPy version serves when numba is missing. The work of step 3 is the pair count
``sum over pixels of h (h + 1) / 2`` (h hits of the pixel): :func:`twotime_pair_count`
and :func:`estimate_pair_count` give it, so a job can choose between this path and the
dense one (whose work is ``N (N + 1) / 2`` products per pixel, on BLAS).

Values must be non-negative (counts, or means of counts): the rule "non-positive
denominator -> 1" of signed data cannot be folded into the hits. A float value is kept in
float64 (the dense path stores float frames as float32).

Memory: about 16 bytes per kept hit while reading, 32 while sorting, then per bin
8 bytes per hit of the bin, the float64 map buffer (N * N) and the finished maps.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from xpcsviewer.compute._binning import PixelBins
from xpcsviewer.compute._scattering_sparse import SparseScattering, pixel_lookup
from xpcsviewer.compute.inputs import FrameStream, Partition
from xpcsviewer.compute.multitau._cpu import available
from xpcsviewer.compute.options import TwotimeOptions
from xpcsviewer.compute.spec import CorrelateSpec, Engine
from xpcsviewer.compute.twotime.correlator import (
    TwotimeResult,
    TwotimeRun,
    finish_map,
    parse_bins,
)
from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = [
    "COMPILED_MIN_PAIRS",
    "correlate_twotime_events",
    "estimate_pair_count",
    "twotime_pair_count",
]

#: pairs from which ``engine="auto"`` takes the compiled kernels: below it the NumPy
#: version finishes before numba is imported and its cache loaded (~0.5 s)
COMPILED_MIN_PAIRS = 1e7
#: pairs per chunk of the NumPy version (bounds its temporaries to ~200 MB)
_NUMPY_CHUNK = 1 << 22
#: (group, frame) sums are a dense bincount up to this many cells (or 4 per hit)
_GROUP_CELLS = 1 << 20


# ------------------------------------------------------------------ work estimates
def twotime_pair_count(hits_per_pixel: np.ndarray | Sequence[int]) -> float:
    """Pair work of the sparse path: ``sum h (h + 1) / 2`` over pixels with h hits.

    ``hits_per_pixel``: hits (distinct frames) of each correlated pixel, e.g. a
    ``bincount`` of the pixels of all events. The dense path's work for the same job is
    ``P * N (N + 1) / 2`` multiply-adds (on BLAS, 20-100x cheaper each).
    """
    h = np.asarray(hits_per_pixel, dtype=np.float64)
    return float(np.sum(h * (h + 1.0)) / 2.0)


def estimate_pair_count(n_hits: float, n_pixels: int, n_frames: int) -> float:
    """:func:`twotime_pair_count` expected for ``n_hits`` spread evenly (binomially)
    over ``n_pixels`` pixels and ``n_frames`` frames.

    Uneven intensity (speckle, the q-dependence of I(q)) raises the true count by the
    factor ``1 + CV²`` of the hits per pixel; count them when that matters.
    """
    p = max(int(n_pixels), 1)
    m = float(n_hits) / p
    occ = min(m / max(int(n_frames), 1), 1.0)
    # E[h (h + 1) / 2] for h ~ Binomial(N, occ): (var + mean² + mean) / 2
    return p * (m * (1.0 - occ) + m * m + m) / 2.0


# ------------------------------------------------------------------ numba plumbing
def _kernels() -> Any:
    """The compiled kernels' module; importing it imports numba (~0.5 s), so only on use."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's notices about caching and threading
        from xpcsviewer.compute.twotime import _numba as _twotime_numba

    return _twotime_numba


_SEEN: set = set()


def _call(fn: Any, args: tuple) -> Any:
    """Call a kernel; the first call per argument types compiles (or loads the cache)
    with numba's notices silenced."""
    key = (id(fn), *(getattr(a, "dtype", type(a)) for a in args))
    if key in _SEEN:
        return fn(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(*args)
    _SEEN.add(key)
    return out


# ------------------------------------------------------------------ hit preparation
def _pixel_major(px: np.ndarray, fr: np.ndarray, v: np.ndarray, counts: np.ndarray,
                 compiled: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Frame-ordered hits -> (ptr, frame, value, pixel) pixel-major, duplicates merged."""
    n_pix = counts.size
    ptr = np.zeros(n_pix + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    if compiled:
        h = px.size
        fr_o = np.empty(h, dtype=fr.dtype)
        v_o = np.empty(h)
        px_o = np.empty(h, dtype=np.int32)
        ptr_o = np.empty(n_pix + 1, dtype=np.int64)
        m = int(_call(_kernels().pixel_major, (px, fr, v, ptr, fr_o, v_o, px_o, ptr_o)))
        return ptr_o, fr_o[:m], v_o[:m], px_o[:m]
    order = np.argsort(px, kind="stable")  # times stay ascending inside a pixel
    ps, fs, vs = px[order], fr[order], v[order]
    if ps.size:
        new = np.ones(ps.size, dtype=bool)
        new[1:] = (ps[1:] != ps[:-1]) | (fs[1:] != fs[:-1])
        starts = np.flatnonzero(new)
        vs = np.add.reduceat(vs, starts) if starts.size < ps.size else vs
        ps, fs = ps[starts], fs[starts]
    ptr_o = np.zeros(n_pix + 1, dtype=np.int64)
    np.cumsum(np.bincount(ps, minlength=n_pix), out=ptr_o[1:])
    return ptr_o, fs, vs, ps.astype(np.int32, copy=False)


def _normalise(t: np.ndarray, v: np.ndarray, gid: np.ndarray, gcount: np.ndarray,
               n: int, n_pix: int) -> np.ndarray:
    """Hits of one bin -> ``v / group mean (t) * sqrt(P_b) / S_t`` (float64).

    ``gid``: local group (0..G-1) of each hit; ``gcount``: pixels per group.
    """
    g = gcount.size
    key = gid.astype(np.int64) * n + t
    if g * n <= max(4 * key.size, _GROUP_CELLS):
        gsum = np.bincount(key, weights=v, minlength=g * n)
        gmean = gsum / np.repeat(gcount.astype(np.float64), n)
        gmean[~(gmean > 0)] = 1.0
        y = v * (1.0 / gmean)[key]
    else:  # many groups and few hits: sums of the (group, frame) pairs that occur
        uk, inv = np.unique(key, return_inverse=True)
        gmean = np.bincount(inv, weights=v, minlength=uk.size) / gcount[uk // n]
        gmean[~(gmean > 0)] = 1.0
        y = v * (1.0 / gmean)[inv]
    s = np.bincount(t, weights=y, minlength=n)
    scale = np.sqrt(float(n_pix))
    f = np.where(s > 0, scale / np.where(s > 0, s, 1.0), scale)
    y *= f[t]
    return y


# ------------------------------------------------------------------ the map
def _gram_numpy(t: np.ndarray, y: np.ndarray, pix: np.ndarray, ptr: np.ndarray,
                flat: np.ndarray, n: int) -> None:
    """NumPy version of ``_twotime_numba.gram_upper`` (correct, slower), whole buffer."""
    flat[:] = 0.0
    h = t.size
    if h == 0:
        return
    m = ptr[pix.astype(np.int64) + 1] - np.arange(h)  # pairs of each hit with later hits
    cm = np.cumsum(m)
    h0 = 0
    t64 = t.astype(np.int64)
    while h0 < h:
        base = cm[h0 - 1] if h0 else 0
        h1 = max(h0 + 1, int(np.searchsorted(cm, base + _NUMPY_CHUNK, side="right")))
        mm = m[h0:h1]
        first = np.repeat(np.arange(h0, h1), mm)
        offs = np.arange(first.size) - np.repeat(np.cumsum(mm) - mm, mm)
        second = first + offs
        np.add.at(flat, t64[first] * n + t64[second], y[first] * y[second])
        h0 = h1


def _gram(t: np.ndarray, y: np.ndarray, pix: np.ndarray, ptr: np.ndarray, flat: np.ndarray,
          n: int, compiled: bool) -> np.ndarray:
    """Fill ``flat`` (N*N + N) with the upper triangle of the bin's C; the (N, N) view."""
    if compiled:
        import numba

        k = _kernels()
        row_ptr = np.empty(n + 1, dtype=np.int64)
        rows = np.empty(t.size, dtype=np.int64)
        _call(k.time_order, (t, n, row_ptr, rows))
        n_th = max(1, numba.get_num_threads())
        # bands of rows small enough for a round robin to balance the falling work
        band = int(max(1, min(64, n // (8 * n_th))))
        _call(k.gram_upper, (t, y, pix, ptr, row_ptr, rows, flat, n, band, n_th))
        flat[n * n :] = 0.0
    else:
        _gram_numpy(t, y, pix, ptr, flat, n)
    return flat[: n * n].reshape(n, n)


# ------------------------------------------------------------------ the job
def correlate_twotime_events(
    frames: FrameStream,
    partition: Partition | Any,
    spec: CorrelateSpec | None = None,
    *,
    options: TwotimeOptions | None = None,
    engine: Engine | str = Engine.AUTO,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> TwotimeResult | TwotimeRun:
    """Two-time maps of selected dynamic bins from a stream of hits.

    Parameters
    ----------
    frames : FrameStream
        ``open()`` gives the EventBlocks of processed frames ``[start, stop)`` each
        (``frame``, flat detector ``pixel``, ``value`` >= 0; a pixel hit twice in a
        frame: the values add), covering frames 0..n_frames-1 in order.
    partition, spec
        As for :func:`~xpcsviewer.compute.twotime.correlator.correlate_twotime` (``spec.dq``,
        ``spec.smooth``).
    options : TwotimeOptions, optional
        ``with_scattering`` (also the temporal/spatial means of all hits, a
        :class:`SparseScattering`) and ``c2_format``, as there.
    engine : {auto, compiled, array}
        ``auto``: the compiled kernels when numba is installed and the job has at least
        :data:`COMPILED_MIN_PAIRS` pairs, NumPy otherwise (old words: ``numba``,
        ``numpy``).
    progress, cancel
        Reported / checked between blocks and between bins.

    Returns
    -------
    TwotimeResult or TwotimeRun
        ``config``: ``{"smooth", "backend": "numpy", "path": "sparse"}``.

    Raises
    ------
    ValueError
        Bad options, negative values, blocks out of order or not covering n_frames.
    """
    spec = spec if spec is not None else CorrelateSpec()
    opt = options if options is not None else TwotimeOptions()
    smooth, c2_format = spec.smooth, opt.c2_format
    if c2_format not in ("full", "upper32"):
        raise ValueError(f"c2_format must be 'full' or 'upper32', got {c2_format!r}")
    engine = Engine.parse(engine)
    if engine not in (Engine.AUTO, Engine.COMPILED, Engine.ARRAY):
        raise ValueError(f"engine must be auto, compiled or array, got {engine.value!r}")
    if engine is Engine.COMPILED and not available():
        raise ValueError("engine='numba' needs numba, which is not installed")
    n_frames = int(frames.n_frames)
    if n_frames < 0:
        raise ValueError(f"n_frames must be >= 0, got {n_frames}")
    pixels: PixelBins = Partition.of(partition).pixels()
    bins = parse_bins(spec.dq, pixels.n_dynamic)
    bins = bins[pixels.dynamic_count[bins - 1] > 0]
    # local pixels: those of the selected bins, bin by bin, inside a bin by group
    sel = np.flatnonzero(np.isin(pixels.dynamic_id, bins - 1))
    grp_all = pixels.static_id if smooth == "sqmap" else pixels.dynamic_id
    order = sel[np.lexsort((grp_all[sel], pixels.dynamic_id[sel]))]
    sel_dyn = pixels.dynamic_id[order]
    sel_group = grp_all[order]
    n_local = order.size
    local_of = np.full(pixels.n_pixels + 1, -1, dtype=np.int32)  # [-1] -> -1
    local_of[order] = np.arange(n_local, dtype=np.int32)
    lut = local_of[pixel_lookup(pixels)]  # detector pixel -> local pixel or -1
    n_det = lut.size
    t_dtype = np.int32 if n_frames < 2**31 - 1 else np.int64

    acc = SparseScattering(pixels, n_frames) if opt.with_scattering else None
    counts = np.zeros(n_local, dtype=np.int64)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    done = 0
    total_steps = n_frames + len(bins)
    report(progress, cancel, 0, total_steps, "two-time: reading")
    for blk in frames.open():
        start, stop = int(blk.start), int(blk.stop)
        if start != done:
            raise ValueError(f"event blocks must come in order: expected frame {done}, "
                             f"got a block from {start}")
        if stop < start or stop > n_frames:
            raise ValueError(f"more frames than announced ({stop} > {n_frames})"
                             if stop > n_frames else f"bad block [{start}, {stop})")
        fr = np.asarray(blk.frame, dtype=np.int64)
        px = np.asarray(blk.pixel, dtype=np.int64)
        val = np.asarray(blk.value)
        if not (fr.shape == px.shape == val.shape and fr.ndim == 1):
            raise ValueError("an event block's frame, pixel and value must be 1-D of one size")
        if fr.size:
            if val.dtype.kind not in "buif":
                raise ValueError(f"event values must be real numbers, got {val.dtype}")
            if val.dtype.kind in "if" and not np.all(val >= 0):
                raise ValueError("event values must be non-negative (counts); the sparse "
                                 "two-time path cannot take negative or NaN values")
            if fr.min() < start or fr.max() >= stop:
                raise ValueError(f"a block of frames [{start}, {stop}) holds hits of frames "
                                 f"{fr.min()}..{fr.max()}")
            if px.min() < 0 or px.max() >= n_det:
                raise ValueError(f"pixel indices must lie in 0..{n_det - 1}")
        if acc is not None:
            acc.add_events(start, stop, fr, px, val)
        if fr.size:
            loc = lut[px]
            keep = (loc >= 0) & (val != 0)  # a zero adds nothing to a sum or a product
            if keep.any():
                loc, f_k, v_k = loc[keep], fr[keep], val[keep].astype(np.float64)
                if f_k.size > 1 and np.any(f_k[1:] < f_k[:-1]):
                    o = np.argsort(f_k, kind="stable")
                    loc, f_k, v_k = loc[o], f_k[o], v_k[o]
                counts += np.bincount(loc, minlength=n_local)
                parts.append((loc, f_k.astype(t_dtype), v_k))
        done = stop
        report(progress, cancel, done, total_steps, "two-time: reading")
    if done != n_frames:
        raise ValueError(f"expected {n_frames} frames, got {done}")

    pairs = twotime_pair_count(counts)
    compiled = engine is Engine.COMPILED or (engine is Engine.AUTO
                                             and pairs >= COMPILED_MIN_PAIRS and available())
    if parts:
        px_all = np.concatenate([p[0] for p in parts])
        fr_all = np.concatenate([p[1] for p in parts])
        v_all = np.concatenate([p[2] for p in parts])
    else:
        px_all = np.zeros(0, dtype=np.int32)
        fr_all = np.zeros(0, dtype=t_dtype)
        v_all = np.zeros(0)
    parts.clear()
    ptr, t_h, v_h, pix_h = _pixel_major(px_all, fr_all, v_all, counts, compiled)
    del px_all, fr_all, v_all

    n = n_frames
    maps: list[np.ndarray] = []
    g2 = np.zeros((n, len(bins)))
    g2_seg = np.zeros((n // 5, 5, len(bins)))
    lo = np.searchsorted(sel_dyn, bins - 1, side="left")
    hi = np.searchsorted(sel_dyn, bins - 1, side="right")
    full = c2_format == "full"
    flat = np.empty(n * n + n)  # one float64 map buffer for all bins
    for i, (a, b) in enumerate(zip(lo, hi, strict=True)):
        s, e = int(ptr[a]), int(ptr[b])
        t_b = t_h[s:e]
        pix_b = pix_h[s:e] - np.int32(a)
        ptr_b = ptr[a : b + 1] - s
        _, g_local, g_count = np.unique(sel_group[a:b], return_inverse=True, return_counts=True)
        y = _normalise(t_b, v_h[s:e], g_local[pix_b], g_count, n, int(b - a))
        c = _gram(t_b, y, pix_b, ptr_b, flat, n, compiled)
        g2[:, i], g2_seg[:, :, i] = finish_map(c, flat, full, maps)
        report(progress, cancel, n + i + 1, total_steps, f"two-time: bin {bins[i]}")
    res = TwotimeResult(
        processed_bins=bins,
        c2=maps,
        g2_full=g2,
        g2_segments=g2_seg,
        n_frames=n,
        config={"smooth": smooth, "backend": "numpy", "path": "sparse"},
    )
    if acc is not None:
        return TwotimeRun(res, acc)
    return res
