"""Multi-tau correlation on photons: the cost grows with hits, not pixels x frames.

XPCS frames from fast counting detectors are mostly empty (0.1-1 % of pixels hit). The
dense correlator (:mod:`~xpcsviewer.compute.multitau.correlator`) touches every pixel of every
frame; this one touches only hits. It computes exactly the dense correlator's streaming
state (per level: the sums of products for each delay, the running sum, the first and
the last B frames), so the finalisation, the static smoothing, the errors and the
per-pixel G2/IP/IF planes are the dense correlator's own code, and the results equal
the dense path on the same frames to float64 round-off (integer counts: exactly).

How (kernels in ``_multitau_sparse_numba``): per block of frames the hits are sorted
by pixel, then every pixel is carried through all levels. At level L a pixel's hits are
paired with its last B hits of that level (one entry per hit, so all hits within B
frames are there); a pair ``(t, t + x)`` with x in the level's delays adds
``a(t) a(t + x)``. Consecutive pairs of level-L frames form the pixel's hits at level
L + 1 (the unpaired last frame of a block waits in the ring, as the dense correlator
keeps it as its newest history row). The running sum of level L is not kept: it is
``(sum_{L-1} - [n_{L-1} odd] a_{L-1}(n_{L-1} - 1)) / 2``, exact for counts.

Work: the hits of every level, ``sum_L min(hits, P n_L)`` with ``n_L = N / 2^L`` (at low
levels the hits stay as many as the photons; once coarse frames are no longer sparse,
``P N / 2^L``), plus a few operations per pixel, level and block. Memory: the block
(~``EVENTS_PER_BLOCK`` hits) plus per pixel and level a ring of B hits, the sums of
products and the first B frames (about 260 bytes), independent of N.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from xpcsviewer.backends import get_backend
from xpcsviewer.compute._binning import PixelBins, select_pixels
from xpcsviewer.compute._scattering_sparse import SparseScattering, pixel_lookup
from xpcsviewer.compute.inputs import FrameStream, Partition
from xpcsviewer.compute.multitau.correlator import (
    MultitauCorrelator,
    MultitauResult,
    MultitauRun,
    _Level,
    attach_snapshots,
    delay_list,
    emit_pixel_planes,
)
from xpcsviewer.compute.multitau.pixels import MIN_PAIRS, combine_bin_sums
from xpcsviewer.compute.multitau.stream import snapshot_result
from xpcsviewer.compute.options import MultitauOptions
from xpcsviewer.compute.spec import CorrelateSpec
from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = [
    "SparseLevels",
    "SparseMultitauCorrelator",
    "StreamingSparseMultitau",
    "available",
    "correlate_multitau_events",
    "level_hits_estimate",
    "level_work_estimate",
    "split_block",
]

_NEVER = -(1 << 62)


def available() -> bool:
    """Whether the compiled kernels can run (numba installed)."""
    from xpcsviewer.compute.multitau._cpu import available as numba_available

    return numba_available()


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


class SparseLevels:
    """The per-pixel, per-level state of the photon correlator.

    Parameters
    ----------
    n_pixels, n_levels, delays_per_level : int

    Notes
    -----
    ``count[L]`` (frames of level L) is shared by all pixels; ``level_state`` returns the
    layout the dense correlator's finalisation reads.
    """

    def __init__(self, n_pixels: int, n_levels: int, delays_per_level: int) -> None:
        self.p = int(n_pixels)
        self.m = int(delays_per_level)
        self.buf = 2 * self.m
        self.n_levels = 0
        self.tot0 = np.zeros(self.p)
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
        # zeros: pages are mapped only when a level is reached (ring slots are read only
        # up to the hits written, so their initial value does not matter)
        shape = (self.p, n_levels, self.buf)
        self.rt = np.zeros(shape, dtype=np.int64)
        self.rv = np.zeros(shape)
        self.sp = np.zeros(shape)
        self.first = np.zeros(shape)
        self.rh = np.zeros((self.p, n_levels), dtype=np.int64)
        self.count = np.zeros(n_levels, dtype=np.int64)
        self.n_levels = n_levels

    def grow(self, n_levels: int) -> None:
        """Room for ``n_levels`` levels (a level added later has missed nothing: level L
        receives its first frame after 2^L frames)."""
        have = self.n_levels
        if n_levels <= have:
            return
        old = (self.rt, self.rv, self.sp, self.first, self.rh, self.count)
        self._alloc(int(n_levels))
        for new, a in zip((self.rt, self.rv, self.sp, self.first, self.rh), old[:5],
                          strict=True):
            new[:, :have] = a
        self.count[:have] = old[5]

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
        return sum(a.nbytes for a in (self.rt, self.rv, self.sp, self.first, self.rh,
                                      self.tot0))

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
        nt = _threads()
        cnt = np.zeros(self.p, dtype=np.int64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            k.count_hits(pixel, lut, _bands(self.p, nt), cnt)
            off = np.zeros(self.p + 1, dtype=np.int64)
            np.cumsum(cnt, out=off[1:])
            n = int(off[-1])
            # times relative to the block: 4 bytes a hit (blocks are far below 2^31 frames)
            ht, hv = self._buffers(n, np.int32 if stop - f0 < (1 << 31) else np.int64)
            sc = (np.zeros(0) if scale is None
                  else np.ascontiguousarray(scale, dtype=np.float64))
            k.scatter_hits(frame, pixel, value, sc, f0, lut, off, _bands(self.p, nt), ht, hv)
            cprev = self.count.copy()
            cnew = np.empty_like(cprev)
            c = stop
            for lvl in range(self.n_levels):
                cnew[lvl] = c
                c >>= 1
            maxn = int(cnt.max(initial=0))
            # only pixels with hits or a frame waiting for its pair can change (tested
            # against the walk over every pixel): the walk does not grow with the detector
            grown = sum(1 << lvl for lvl in range(self.n_levels) if cnew[lvl] > cprev[lvl])
            walk = (np.arange(self.p) if self.walk_all else
                    np.flatnonzero((cnt != 0) | ((self.pend & grown) != 0)))
            k.levels_update(walk, off, ht, hv, f0, _work_bands(off, walk, 8 * nt), self.rt,
                            self.rv, self.rh, self.sp, self.first, self.tot0, cprev, cnew,
                            self.m, maxn, self.pend)
            self.walked += int(walk.size)
        self.count = cnew
        self._totals = None

    # ------------------------------------------------------------ finalisation
    def _hist(self, lvl: int) -> np.ndarray:
        """(B, P) the last B frames of level ``lvl``, oldest first (zeros before frame 0)."""
        hist = np.zeros((self.buf, self.p))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _kernels().ring_hist(self.rt, self.rv, self.rh, lvl, int(self.count[lvl]), hist)
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
                    _kernels().ring_frame(self.rt, self.rv, self.rh, below, c - 1, newest)
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
            _kernels().bin_sums(self.rt, self.rv, self.rh, self.sp, self.first, self.tot0,
                                self.count, np.asarray(row_lvl, np.int64),
                                np.asarray(row_x, np.int64), sid, did,
                                np.asarray(d_count, np.float64), bands, s_g2, s_ip, s_if,
                                dsum, dss)
        return s_g2.sum(axis=0), s_ip.sum(axis=0), s_if.sum(axis=0), dss.sum(axis=0)

    def level_state(self, lvl: int, xs: tuple[int, ...]) -> tuple[Any, ...]:
        """(hist (B, P) oldest first, first (B, P), sumprod (len(xs), P), total (P), count)."""
        cols = np.asarray(xs) - 1
        return (self._hist(lvl), np.ascontiguousarray(self.first[:, lvl, :].T),
                np.ascontiguousarray(self.sp[:, lvl, :][:, cols].T), self._total(lvl),
                int(self.count[lvl]))


class SparseMultitauCorrelator(MultitauCorrelator):
    """A multi-tau correlator fed hits (see the module notes).

    Parameters
    ----------
    pixels : PixelBins
    n_frames : int
        Processed frames that will be fed (sets levels and delays); with
        ``growable=True`` a starting size only (a live stream).
    delays_per_level, normalize_frame :
        As :class:`~xpcsviewer.compute.multitau.correlator.MultitauCorrelator`.
    growable : bool
        Allow more frames than ``n_frames`` (levels are added as they are reached).

    Notes
    -----
    :meth:`result` and :meth:`pixel_planes` are the dense correlator's, reading this
    state; only :meth:`process_events` differs.
    """

    def __init__(self, pixels: PixelBins, n_frames: int, delays_per_level: int = 4,
                 normalize_frame: bool = False, *, growable: bool = False) -> None:
        self.backend = get_backend("numpy")
        self.device = None
        self.pixels = pixels
        self.m = int(delays_per_level)
        self.buf = 2 * self.m
        self.normalize_frame = bool(normalize_frame)
        self.growable = bool(growable)
        self.n_frames_expected = max(int(n_frames), 2)
        self.delays, self.levels, self.xs = delay_list(self.n_frames_expected, self.m)
        if self.delays.size == 0:
            raise ValueError(f"need at least 2 frames to correlate, got {n_frames}")
        self.n_levels = int(self.levels.max()) + 1
        if self.growable:
            # level L receives its first frame after 2^L frames: with n.bit_length()
            # levels none misses a frame before the next growth
            self.n_levels = max(self.n_levels, self.n_frames_expected.bit_length())
        self._cpu = SparseLevels(pixels.n_pixels, self.n_levels, self.m)
        self._levels: list[_Level] = []
        self._add_levels(self.n_levels)
        self.n_processed = 0
        self._sid = pixels.static_id
        self._did = pixels.dynamic_id
        self.lut = pixel_lookup(pixels)

    def _add_levels(self, n: int) -> None:
        for lvl in range(len(self._levels), n):
            xs = tuple(range(1 if lvl == 0 else self.m + 1, self.buf + 1))
            self._levels.append(_Level(xs, None, None, None, None))
        self._cpu.grow(n)
        self.n_levels = max(self.n_levels, n)

    def _grow(self, n_frames: int) -> None:
        self.n_frames_expected = int(n_frames)
        self.delays, self.levels, self.xs = delay_list(self.n_frames_expected, self.m)
        self._add_levels(max(int(self.levels.max()) + 1, len(self._levels),
                             self.n_frames_expected.bit_length()))

    def process(self, block: Any) -> None:  # pragma: no cover - guard
        raise TypeError("the photon correlator is fed hits: use process_events")

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Current (g2 (T, Nd), g2_err (T, Nd), g2_static (T, Ns)); unreachable delays NaN
        (the dense correlator's rows and rules; the bin sums of every level in one pass
        over the photon state)."""
        pb = self.pixels
        ns, nd = pb.n_static, pb.n_dynamic
        t = self.delays.size
        g2 = np.full((t, nd), np.nan)
        err = np.full((t, nd), np.nan)
        g2s = np.full((t, ns), np.nan)
        rows, row_lvl, row_x = [], [], []
        row0 = 0
        for lvl, lv in enumerate(self._levels):
            n_here = int((self.levels == lvl).sum())
            count = int(self._cpu.count[lvl])
            if n_here and count - min(lv.xs) >= MIN_PAIRS:
                # one frame pair gives g2 = 1 whatever the dynamics: not a measurement
                keep = [i for i, x in enumerate(lv.xs) if count - x >= MIN_PAIRS][:n_here]
                rows += [row0 + i for i in range(len(keep))]
                row_lvl += [lvl] * len(keep)
                row_x += [lv.xs[i] for i in keep]
            row0 += n_here
        if rows:
            s_g2, s_ip, s_if, dss = self._cpu.bin_sums(
                np.asarray(row_lvl), np.asarray(row_x), self._sid, self._did,
                pb.dynamic_count, ns, nd)
            r = np.asarray(rows)
            g2[r], err[r], g2s[r] = combine_bin_sums(
                s_g2, s_ip, s_if, dss, pb.static_count, pb.dynamic_count,
                pb.static_to_dynamic, nd)
        return g2, err, g2s

    def frame_scale(self, start: int, stop: int, frame: np.ndarray, pixel: np.ndarray,
                    value: np.ndarray) -> np.ndarray:
        """Per-frame 1 / (mean over the correlated pixels) for ``normalize_frame``."""
        q = self.lut[pixel]
        ok = q >= 0
        sums = np.bincount(frame[ok] - start, weights=np.asarray(value, np.float64)[ok],
                           minlength=stop - start)[: stop - start]
        mean = sums / max(self.pixels.n_pixels, 1)
        return 1.0 / np.where(mean > 0, mean, 1.0)

    def process_events(self, stop: int, frame: np.ndarray, pixel: np.ndarray,
                       value: np.ndarray) -> None:
        """Correlate the hits of processed frames ``[n_processed, stop)`` (frame order)."""
        stop = int(stop)
        if stop > self.n_frames_expected:
            if not self.growable:
                raise ValueError(
                    f"more frames than announced ({stop} > {self.n_frames_expected})")
            self._grow(max(stop, 2 * self.n_frames_expected))
        scale = None
        if self.normalize_frame:
            scale = self.frame_scale(self.n_processed, stop, frame, pixel, value)
        self._cpu.process(stop, frame, pixel, value, self.lut, scale)
        self.n_processed = stop

    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(delays, g2, g2_err, g2_static) of the frames fed so far."""
        n = self.n_processed
        delays = delay_list(n, self.m)[0] if n >= 2 else np.zeros(0, np.int64)
        g2, err, g2s = self.result()
        t = delays.size
        return delays, g2[:t], err[:t], g2s[:t]


def split_block(block: Any, at: int) -> tuple[Any, Any]:
    """An event block cut at processed frame ``at`` (``start < at < stop``)."""
    from xpcsviewer.model.events import EventBlock

    k = int(np.searchsorted(block.frame, at, side="left"))
    a = EventBlock(block.start, at, block.frame[:k], block.pixel[:k], block.value[:k])
    b = EventBlock(at, block.stop, block.frame[k:], block.pixel[k:], block.value[k:])
    return a, b


def correlate_multitau_events(
    frames: FrameStream,
    partition: Partition | Any,
    spec: CorrelateSpec | None = None,
    *,
    options: MultitauOptions | None = None,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> MultitauResult | MultitauRun:
    """Multi-tau g2 of a stream of hits on a static/dynamic partition.

    Parameters
    ----------
    frames : FrameStream
        ``open()`` gives the EventBlocks of processed frames 0..n_frames-1, in order
        (:meth:`xpcsviewer.io.raw.sparse.SparseSource.iter_events`).
    partition, spec, options, progress, cancel :
        As :func:`~xpcsviewer.compute.multitau.correlator.correlate_multitau` (``options``
        ``chunk_size`` and ``backend`` are not read; ``scattering_group``: frames per
        row of the per-frame means); the result is the same (float64 round-off; exact
        for integer counts).

    Returns
    -------
    MultitauResult or MultitauRun (``scattering`` a :class:`SparseScattering`)
    """
    if not available():
        raise ValueError("the photon correlator needs numba")
    spec = spec if spec is not None else CorrelateSpec()
    opt = options if options is not None else MultitauOptions()
    blocks, n_frames = frames.open(), int(frames.n_frames)
    num_partial_g2 = int(spec.num_partial_g2)
    pixels = Partition.of(partition).pixels()
    corr = SparseMultitauCorrelator(pixels, n_frames, opt.delays_per_level,
                                    spec.normalize_frame)
    acc = None
    if opt.with_scattering:
        from xpcsviewer.compute.pipeline import multitau_segments

        # the result asks for the segments of its frames (assemble_result), not of the
        # rows: with a group that is not a power of two the two differ (a 0.4 s Timepix
        # list in 2560-tick rows: 12 against 15, and correlate refused it)
        acc = SparseScattering(pixels, n_frames, opt.scattering_group,
                               segments=multitau_segments(int(n_frames)))
    marks = ([round(n_frames * (i + 1) / num_partial_g2) for i in range(num_partial_g2)]
             if num_partial_g2 > 0 else [])
    snaps: list[tuple[int, np.ndarray, np.ndarray]] = []
    events = 0
    report(progress, cancel, 0, n_frames, "multi-tau (photons)")
    from xpcsviewer.model.events import prefetched

    for block in prefetched(iter(blocks)):
        if block.start != corr.n_processed:
            raise ValueError(f"blocks must follow each other: at frame {corr.n_processed}, "
                             f"got a block from {block.start}")
        rest = block
        while rest is not None:
            cut = next((m for m in marks if rest.start < m < rest.stop), None)
            part, rest = (split_block(rest, cut) if cut is not None else (rest, None))
            corr.process_events(part.stop, part.frame, part.pixel, part.value)
            if acc is not None:
                acc.add_events(part.start, part.stop, part.frame, part.pixel, part.value)
            events += part.frame.size
            if corr.n_processed in marks and (not snaps or snaps[-1][0] != corr.n_processed):
                g, e, _ = corr.result()
                snaps.append((corr.n_processed, g, e))
        report(progress, cancel, corr.n_processed, n_frames,
               f"multi-tau (photons): {events:,} hits")
    if corr.n_processed != n_frames:
        raise ValueError(f"expected {n_frames} frames, got {corr.n_processed}")
    g2, err, g2s = corr.result()
    emit_pixel_planes(corr, opt.pixel_sink, progress, cancel)
    res = MultitauResult(
        delay_frames=corr.delays.copy(), g2=g2, g2_err=err, g2_static=g2s,
        n_frames=corr.n_processed,
        config={"delays_per_level": int(opt.delays_per_level),
                "normalize_frame": bool(spec.normalize_frame),
                "num_partial_g2": int(num_partial_g2), "backend": "numpy",
                "path": "sparse", "events": int(events)},
    )
    attach_snapshots(res, snaps)
    if acc is not None:
        return MultitauRun(res, acc)
    return res


def level_hits_estimate(n_frames: int, n_pixels: int, occupancy: float,
                        n_levels: int | None = None) -> float:
    """Hits over all levels, ``sum_L P n_L (1 - (1 - o)^(2^L))``, for frames whose pixels
    are hit independently with probability ``o`` (the work of the photon correlator)."""
    return level_work_estimate(n_frames, n_pixels, occupancy, n_levels=n_levels)[0]


def level_work_estimate(n_frames: int, n_pixels: int, occupancy: float, buf: int = 8,
                        n_levels: int | None = None) -> tuple[float, float]:
    """(hits over all levels, partners sought over all levels) for independent hits of
    probability ``o``: a level-L frame is hit with ``o_L = 1 - (1 - o)^(2^L)`` and a hit
    finds about ``B o_L`` hits among the B frames before it."""
    n_levels = n_levels if n_levels is not None else max(1, int(n_frames).bit_length())
    o = min(max(float(occupancy), 0.0), 1.0)
    hits = pairs = 0.0
    for lvl in range(n_levels):
        n_l = int(n_frames) >> lvl
        if n_l < 2:
            break
        frac = 1.0 - math.exp(min(0.0, (2 ** lvl) * math.log1p(-o))) if o < 1 else 1.0
        hits += float(n_pixels) * n_l * frac
        pairs += float(n_pixels) * n_l * frac * buf * frac
    return hits, pairs


class StreamingSparseMultitau:
    """Photon multi-tau g2 plus the means of the same pass, fed blocks of hits of any
    length (the live twin of :class:`~xpcsviewer.compute.multitau.stream.StreamingMultitau`).

    A snapshot equals :func:`correlate_multitau_events` on the frames fed so far (and the
    dense correlator on the same frames, to float64 round-off); taking one does not change
    the state.
    """

    engine = "sparse"  # what a live update reports (its JSON's "engine")
    photons = True

    def __init__(self, partition: Partition | Any, spec: CorrelateSpec | None = None, *,
                 options: MultitauOptions | None = None,
                 expected_frames: int | None = None) -> None:
        if not available():
            raise ValueError("the photon correlator needs numba")
        self.pixels = Partition.of(partition).pixels()
        cap = max(int(expected_frames) if expected_frames else 4096, 2)
        self.delays_per_level = int((options or MultitauOptions()).delays_per_level)
        self.normalize_frame = bool((spec or CorrelateSpec()).normalize_frame)
        self.corr = SparseMultitauCorrelator(self.pixels, cap, self.delays_per_level,
                                             self.normalize_frame, growable=True)
        self.scat = SparseScattering(self.pixels, cap)

    def warm(self, dtype: Any = np.uint16) -> None:
        """Load the compiled kernels now (numba's cache), on a throwaway state."""
        px = select_pixels(np.ones((1, 2), int), np.ones((1, 2), int))
        c = SparseMultitauCorrelator(px, 4)
        one = np.zeros(1, np.int64)
        c.process_events(2, one, one, np.ones(1, dtype=dtype))
        c.result()
        SparseScattering(px, 4).add_events(0, 2, one, one, np.ones(1, dtype=dtype))

    @property
    def n_frames(self) -> int:
        """Processed frames fed so far."""
        return self.corr.n_processed

    def feed_events(self, block: Any) -> None:
        """Correlate the next block of hits (frames ``[n_frames, block.stop)``)."""
        if block.start != self.corr.n_processed:
            raise ValueError(f"blocks must follow each other: at frame "
                             f"{self.corr.n_processed}, got a block from {block.start}")
        self.corr.process_events(block.stop, block.frame, block.pixel, block.value)
        self.scat.add_events(block.start, block.stop, block.frame, block.pixel, block.value)

    def result(self) -> MultitauResult:
        """The multi-tau result of the frames fed so far.

        Raises
        ------
        ValueError
            Fewer than 2 frames.
        """
        return snapshot_result(self.corr, self.delays_per_level, self.normalize_frame,
                               path="sparse")
