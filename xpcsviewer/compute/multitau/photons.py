"""Multi-tau correlation on photons: the cost grows with hits, not pixels x frames.

XPCS frames from fast counting detectors are mostly empty (0.1-1 % of pixels hit). The
dense correlator (:mod:`~xpcsviewer.compute.multitau.correlator`) touches every pixel of every
frame; this one touches only hits. It computes exactly the dense correlator's streaming
state (per level: the sums of products for each delay, the running sum, the first and
the last B frames), so the finalisation, the static smoothing, the errors and the
per-pixel G2/IP/IF planes are the dense correlator's own code, and the results equal
the dense path on the same frames to float64 round-off (integer counts: exactly).

How (kernels in ``_photons_numba``, state in ``_photon_levels``): per block of frames the
hits are sorted by pixel, then every pixel is carried through all levels. At level L a
pixel's hits are paired with each other and with the window of its last B frames of that
level; a pair ``(t, t + x)`` with x in the level's delays adds ``a(t) a(t + x)``.
Consecutive pairs of level-L frames form the pixel's hits at level L + 1 (the unpaired
last frame of a block waits in the window, as the dense correlator keeps it as its newest
history row). The running sum of level L is not kept: it is
``(sum_{L-1} - [n_{L-1} odd] a_{L-1}(n_{L-1} - 1)) / 2``, exact for counts.

Work: the hits of every level, ``sum_L min(hits, P n_L)`` with ``n_L = N / 2^L`` (at low
levels the hits stay as many as the photons; once coarse frames are no longer sparse,
``P N / 2^L``), plus a few operations per pixel, level and block. Memory: the block
(~``EVENTS_PER_BLOCK`` hits) plus per pixel and level the window of its last B frames,
the sums of products and the first B frames (68 bytes in float32, used while exact, else
132; :class:`~xpcsviewer.compute.multitau._photon_levels.SparseLevels`), independent of N.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from xpcsviewer.backends import get_backend
from xpcsviewer.compute._binning import PixelBins, select_pixels
from xpcsviewer.compute._scattering_sparse import SparseScattering, pixel_lookup
from xpcsviewer.compute.inputs import FrameStream, Partition
from xpcsviewer.compute.multitau._photon_levels import SparseLevels
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


def available() -> bool:
    """Whether the compiled kernels can run (numba installed)."""
    from xpcsviewer.compute.multitau._cpu import available as numba_available

    return numba_available()


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
        self._cpu = SparseLevels(pixels.n_pixels, self.n_levels, self.m, self.n_frames_expected)
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
