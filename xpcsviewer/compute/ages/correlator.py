"""Multi-tau two-time correlator (MT-2TC): an age x lag map in N log N time and memory.

Entries
-------
The frames are normalised exactly as for the full map (:mod:`.twotime`): each pixel
value is divided by the mean, in the same frame, of its static bin (``smooth="sqmap"``)
or dynamic bin (``"dqmap"``), a non-positive mean becoming 1, and the row of a bin with
``P_b`` pixels is pre-scaled, ``z_t = y_t sqrt(P_b) / S_t`` with ``S_t = sum(y_t)``, so
that the full map is ``C(t1, t2) = z_t1 . z_t2``.

Level 0 holds ``C(t, t + k)`` for lags k = 0 .. 2m-1 frames: the full map's entries.
Level l >= 1 averages the rows in blocks of ``w = 2**l`` frames (blocks aligned at
multiples of w) and holds ``Z_i . Z_{i+k}`` for k = m .. 2m-1 blocks, with ``Z_i`` the mean
row of block i. By bilinearity this is **exactly the mean of the w x w pairs of the full
map** behind the entry::

    Z_i . Z_j = (1/w²) sum_{a in i} sum_{b in j} z_a . z_b = mean C[block i, block j]

(not a ratio of averaged numerators and denominators: the normalisation is applied per
frame first, so a coarse entry is an average of full-map entries and agrees with them to
float64 round-off). The lags in frames continue without a gap: level 0 ends at 2m-1,
level l covers m 2**l .. (2m-1) 2**l in steps of 2**l. Frames after the last whole block
of a level are left out of that level, as in multi-tau.

Cost: level l has N / 2**l blocks and at most 2m lags, so the map has about 3 m N
entries per bin; time is one pass over the frames (normalisation) plus one small BLAS
product per bin per batch of blocks (:mod:`._twotime_ages_levels`); memory is the map,
the chunk being read and 2 (batch + 2m) rows per level, never N² and never all frames.
Values must be non-negative (counts): the full map's "non-positive denominator -> 1"
rule for signed data cannot be folded into block averages.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from xpcsviewer.compute._binning import PixelBins
from xpcsviewer.compute.ages._levels import Level, level_plan
from xpcsviewer.compute.inputs import FrameStream, Partition, frame_chunks
from xpcsviewer.compute.multitau._cpu import available, worth_compiling
from xpcsviewer.compute.options import AgesOptions
from xpcsviewer.compute.spec import CorrelateSpec, Engine, parse_bins
from xpcsviewer.model.age_lag import AgeLagLevel, AgeLagMap
from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = ["age_lag_bytes", "correlate_twotime_ages", "correlate_twotime_ages_events",
           "level_plan"]

ENTRY = "mean of the full map's pairs"
#: frame dtypes the numba kernel reads (others, e.g. float16 or big-endian, go through NumPy)
_KERNEL_DTYPES = ("u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8", "f4", "f8")
_NEGATIVE = ("frame values must be non-negative counts (the multi-tau two-time correlator "
             "cannot take negative or NaN values)")


def age_lag_bytes(n_frames: int, points_per_level: int, n_bins: int) -> int:
    """Bytes of the float64 map (entries and weights) the correlator returns."""
    cells = sum(n_t * n_lag for _w, _k, n_lag, n_t in level_plan(n_frames, points_per_level))
    return 8 * cells * (n_bins + 1)


def _kernels(engine: Engine, work: float) -> Any:
    """The numba kernels' module for ``engine`` (``auto``: when numba is installed and the
    job has :data:`COMPILED_MIN_WORK` pixel-frames), or None (NumPy and BLAS)."""
    if engine is Engine.COMPILED and not available():
        raise ValueError("engine='numba' needs numba, which is not installed")
    if engine is Engine.ARRAY or (engine is Engine.AUTO and not worth_compiling(work)):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's notices about caching and threading
        from xpcsviewer.compute.ages import _numba as _twotime_ages_numba
    return _twotime_ages_numba


class _Accumulator:
    """The correlator's state: pixel layout, per-frame normalisation and the levels."""

    def __init__(self, pixels: PixelBins, bins: np.ndarray, n_frames: int, smooth: str,
                 m: int, max_levels: int | None, batch: int, engine: Engine) -> None:
        sel = np.flatnonzero(np.isin(pixels.dynamic_id, bins - 1))
        grp_all = pixels.static_id if smooth == "sqmap" else pixels.dynamic_id
        order = sel[np.lexsort((grp_all[sel], pixels.dynamic_id[sel]))]
        self.order = order  # correlated-pixel numbers of the selected pixels
        self.sel_index = pixels.pixel_index[order]  # their flat detector indices
        dyn, grp = pixels.dynamic_id[order], grp_all[order]
        self.n_pix = order.size
        cut = np.flatnonzero(np.r_[True, (grp[1:] != grp[:-1]) | (dyn[1:] != dyn[:-1])])
        self.gstarts = cut
        self.gcount = np.diff(np.r_[cut, order.size]).astype(np.float64)
        self.gidx = np.repeat(np.arange(cut.size), np.diff(np.r_[cut, order.size]))
        gbin = dyn[cut]  # dynamic bin of each group
        self.bstarts = np.flatnonzero(np.r_[True, gbin[1:] != gbin[:-1]])  # in groups
        self.group_bin = np.repeat(np.arange(self.bstarts.size),
                                   np.diff(np.r_[self.bstarts, cut.size]))
        lo = np.searchsorted(dyn, bins - 1, side="left")
        hi = np.searchsorted(dyn, bins - 1, side="right")
        self.spans = [(int(a), int(b)) for a, b in zip(lo, hi, strict=True)]
        self.sqrt_pb = np.sqrt(np.array([b - a for a, b in self.spans], dtype=np.float64))
        self.n_frames = n_frames
        self.plan = level_plan(n_frames, m, max_levels)
        self.maps = []
        self.levels: list[Level] = []
        self.kmod = _kernels(engine, float(n_frames) * self.n_pix)
        self.engine = "blas" if self.kmod is None else "numba"
        self.gends = np.r_[cut[1:], order.size].astype(np.int64)
        self.bends = np.r_[self.bstarts[1:], cut.size].astype(np.int64)
        for _width, kmin, n_lag, n_t in self.plan:
            c = np.full((len(bins), n_t, n_lag), np.nan)
            self.maps.append(c)
            self.levels.append(Level(kmin, n_lag, n_t, self.spans, c, self.n_pix, batch,
                                     self.kmod))
        self.done = 0

    def normalise(self, x: np.ndarray) -> np.ndarray:
        """(k, P) selected values -> float64 pre-scaled rows z (in place when float64)."""
        z = np.asarray(x, dtype=np.float64)
        if z.size and not z.min() >= 0:
            raise ValueError(_NEGATIVE)
        gsum = np.add.reduceat(z, self.gstarts, axis=1) if z.size else \
            np.zeros((z.shape[0], self.gstarts.size))
        pos = gsum > 0
        w = np.where(pos, self.gcount / np.where(pos, gsum, 1.0), 1.0)  # 1 / group mean
        s = np.add.reduceat(w * gsum, self.bstarts, axis=1)  # S_t per bin
        f = self.sqrt_pb / np.where(s > 0, s, 1.0)  # S = 0: an all-zero bin row
        v = w * f[:, self.group_bin]
        if z is x and not z.flags.writeable:
            z = z.copy()
        z *= np.take(v, self.gidx, axis=1)
        return z

    def add_frames(self, flat: np.ndarray) -> None:
        """Whole frames (k, H*W) of the next k frames."""
        if self.kmod is None or flat.dtype.str[1:] not in _KERNEL_DTYPES \
                or not flat.dtype.isnative:
            self.add(np.take(flat, self.sel_index, axis=1))
            return
        self._check_count(flat.shape[0])
        rows = np.empty((flat.shape[0], self.n_pix))
        bad = np.zeros(flat.shape[0], dtype=np.bool_)
        self.kmod.normalise_rows(flat, self.sel_index, self.gstarts, self.gends, self.gcount,
                                 self.bstarts, self.bends, self.sqrt_pb, rows, bad)
        if bad.any():
            raise ValueError(_NEGATIVE)
        self._push(rows)

    def _check_count(self, k: int) -> None:
        if self.done + k > self.n_frames:
            raise ValueError(f"more frames than announced ({self.done + k} > {self.n_frames})")

    def add(self, x: np.ndarray) -> None:
        """Selected pixel values (k, P) of the next k frames."""
        self._check_count(x.shape[0])
        self._push(self.normalise(x))

    def _push(self, rows: np.ndarray) -> None:
        self.done += rows.shape[0]
        for li, lv in enumerate(self.levels):
            nxt = li + 1 < len(self.levels)
            coarse = lv.pair_means(rows) if nxt else None
            lv.push(rows)
            if coarse is None or coarse.shape[0] == 0:
                break
            rows = coarse

    def result(self, frame_time: float, bins: np.ndarray, smooth: str, m: int) -> AgeLagMap:
        if self.done != self.n_frames:
            raise ValueError(f"expected {self.n_frames} frames, got {self.done}")
        levels = []
        for (width, kmin, n_lag, n_t), lv, c in zip(self.plan, self.levels, self.maps,
                                                     strict=True):
            lv.finish()
            k = kmin + np.arange(n_lag)
            inside = np.arange(n_t)[:, None] + k[None, :] < n_t
            levels.append(AgeLagLevel(
                width=width, t1=np.arange(n_t, dtype=np.float64) * width,
                lag=(k * width).astype(np.float64), c=c,
                weight=np.where(inside, float(width * width), 0.0)))
        return AgeLagMap(bins=np.asarray(bins, dtype=np.int64), n_frames=int(self.n_frames),
                         frame_time=float(frame_time), levels=tuple(levels),
                         config={"points_per_level": int(m), "smooth": smooth,
                                 "entry": ENTRY, "engine": self.engine})


def _setup(partition: Partition | Any, spec: CorrelateSpec | None, n_frames: int,
           options: AgesOptions | None, engine: Engine | str
           ) -> tuple[PixelBins, np.ndarray, _Accumulator, CorrelateSpec, AgesOptions]:
    spec = spec if spec is not None else CorrelateSpec()
    opt = options if options is not None else AgesOptions()
    engine = Engine.parse(engine)
    if engine not in (Engine.AUTO, Engine.COMPILED, Engine.ARRAY):
        raise ValueError(f"engine must be auto, compiled (numba) or array (blas), "
                         f"got {engine.value!r}")
    points = int(spec.ages_points)
    if points < 1:
        raise ValueError(f"points_per_level must be >= 1, got {points}")
    if int(opt.batch) < 1:
        raise ValueError(f"batch must be >= 1, got {opt.batch}")
    if int(n_frames) < 1:
        raise ValueError(f"n_frames must be >= 1, got {n_frames}")
    pixels = Partition.of(partition).pixels()
    bins = parse_bins(spec.dq, pixels.n_dynamic)
    bins = bins[pixels.dynamic_count[bins - 1] > 0]
    if bins.size == 0:
        raise ValueError("no pixels in the selected dynamic bins")
    acc = _Accumulator(pixels, bins, int(n_frames), spec.smooth, points, opt.max_levels,
                       int(opt.batch), engine)
    return pixels, bins, acc, spec, opt


def _frame_time(frames: Any, opt: AgesOptions) -> float:
    """Seconds per correlated frame: the options', else the stream's step, else 1 s."""
    if opt.frame_time is not None:
        return float(opt.frame_time)
    return frames.t0 if isinstance(frames, FrameStream) else 1.0


def correlate_twotime_ages(
    frames: FrameStream | np.ndarray,
    partition: Partition | Any,
    spec: CorrelateSpec | None = None,
    *,
    options: AgesOptions | None = None,
    engine: Engine | str = Engine.AUTO,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> AgeLagMap:
    """The age x lag map of selected dynamic bins from a stream of dense frames.

    Parameters
    ----------
    frames : FrameStream or (N, H, W) array
        Counts (non-negative); read once, chunk by chunk.
    partition : Partition or QMap
        As for :func:`~xpcsviewer.compute.twotime.correlator.correlate_twotime`.
    spec : CorrelateSpec, optional
        ``dq`` and ``smooth`` as for the full map; ``ages_points`` m: level 0 has lags
        0 .. 2m-1 frames, level l >= 1 lags m .. 2m-1 blocks.
    options : AgesOptions, optional
        ``frame_time`` (recorded in the map), ``max_levels``, ``chunk_size`` (frames
        per read of an array), ``batch`` (first blocks per kernel call).
    engine : {auto, compiled, array}
        The entries' kernel: numba (``compiled``, old word ``numba``: parallel, exactly
        the entries) or one BLAS product per bin and batch (``array``, old word
        ``blas``); ``auto``: numba when installed, for jobs of at least
        ``COMPILED_MIN_WORK`` pixel-frames.
    progress, cancel
        Reported / checked between chunks. May run off the main thread.

    Returns
    -------
    AgeLagMap
        float64; entry definition in the module notes.
    """
    chunk_size = (options or AgesOptions()).chunk_size
    chunks, n_frames = frame_chunks(frames, chunk_size)
    _pixels, bins, acc, spec, opt = _setup(partition, spec, n_frames, options, engine)
    report(progress, cancel, 0, int(n_frames), "two-time ages")
    for chunk in chunks:
        acc.add_frames(np.asarray(chunk).reshape(chunk.shape[0], -1))
        report(progress, cancel, acc.done, int(n_frames), "two-time ages")
    return acc.result(_frame_time(frames, opt), bins, spec.smooth, int(spec.ages_points))


def correlate_twotime_ages_events(
    frames: FrameStream,
    partition: Partition | Any,
    spec: CorrelateSpec | None = None,
    *,
    options: AgesOptions | None = None,
    engine: Engine | str = Engine.AUTO,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> AgeLagMap:
    """:func:`correlate_twotime_ages` from a stream of photon hits.

    ``frames.open()`` gives the :class:`~xpcsviewer.io.raw.sparse.EventBlock` s the sparse
    readers give (hits of frames ``[start, stop)``, in order, covering
    0..n_frames-1; values of one pixel in one frame add). They are made dense
    ``options.chunk_size`` frames at a time over the selected pixels only: the map's
    cost is dense in pixels anyway (one row of every selected pixel per block), so the
    result equals the dense path's on the same frames to float64 round-off.
    """
    n_frames = int(frames.n_frames)
    pixels, bins, acc, spec, opt = _setup(partition, spec, n_frames, options, engine)
    rows_per_step = int(opt.chunk_size)
    local_of = np.full(pixels.n_pixels, -1, dtype=np.int64)
    local_of[acc.order] = np.arange(acc.n_pix)
    h, w = pixels.shape
    lut = np.full(h * w, -1, dtype=np.int64)
    lut[pixels.pixel_index] = local_of
    p = acc.n_pix
    report(progress, cancel, 0, int(n_frames), "two-time ages")
    for blk in frames.open():
        start, stop = int(blk.start), int(blk.stop)
        if start != acc.done:
            raise ValueError(f"event blocks must come in order: expected frame {acc.done}, "
                             f"got a block from {start}")
        if stop < start or stop > n_frames:
            raise ValueError(f"bad block [{start}, {stop}) for {n_frames} frames")
        fr = np.asarray(blk.frame, dtype=np.int64)
        px = np.asarray(blk.pixel, dtype=np.int64)
        val = np.asarray(blk.value, dtype=np.float64)
        if fr.size and (fr.min() < start or fr.max() >= stop):
            raise ValueError(f"a block of frames [{start}, {stop}) holds hits of frames "
                             f"{fr.min()}..{fr.max()}")
        if px.size and (px.min() < 0 or px.max() >= h * w):
            raise ValueError(f"pixel indices must lie in 0..{h * w - 1}")
        loc = lut[px]
        keep = loc >= 0
        fr, loc, val = fr[keep], loc[keep], val[keep]
        for a in range(start, stop, rows_per_step):
            b = min(stop, a + rows_per_step)
            in_step = (fr >= a) & (fr < b)
            dense = np.bincount((fr[in_step] - a) * p + loc[in_step], weights=val[in_step],
                                minlength=(b - a) * p).reshape(b - a, p)
            acc.add(dense)
        report(progress, cancel, acc.done, int(n_frames), "two-time ages")
    return acc.result(_frame_time(frames, opt), bins, spec.smooth, int(spec.ages_points))
