"""Multi-tau correlation of a frame stream whose length is not known in advance.

:func:`~xpcsviewer.compute.multitau.correlator.correlate_multitau` is told N up front (it sizes the
levels and the per-frame means by it). An acquisition being followed has no N yet, so
:class:`StreamingMultitau` grows instead:

- **Levels.** Level L receives its first frame once 2^L processed frames have been fed,
  so before feeding frames up to a total of n the correlator holds
  ``n.bit_length()`` levels (at least); a level added then has missed nothing. The
  state of the existing levels is kept as it is (the compiled kernel's tile-major
  arrays are copied into larger ones), so no frame is ever correlated twice.
- **Delays.** The delay list of N frames is a prefix of the list of any N' > N (a level
  that loses a delay for N has no delay left at the next level), so a snapshot at n
  frames is the rows of :func:`~xpcsviewer.compute.multitau.correlator.delay_list` ``(n)``.
- **Means.** The per-frame intensity and static-bin sums double their capacity when full.

A snapshot therefore equals the batch correlator run on the first n frames (the same
state, the same finalisation; only the summation order of chunks can differ, i.e.
float64 round-off; tested), and the snapshot at the last frame equals the batch run on
the whole file. Taking a snapshot does not change the state.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xpcsviewer.backends import get_backend
from xpcsviewer.compute._scattering import ScatteringAccumulator
from xpcsviewer.compute.inputs import Partition
from xpcsviewer.compute.multitau._cpu import COMPILED_MIN_WORK
from xpcsviewer.compute.multitau._cpu import available as cpu_kernel_available
from xpcsviewer.compute.multitau.correlator import (
    MultitauCorrelator,
    MultitauResult,
    _Level,
    delay_list,
)
from xpcsviewer.compute.options import MultitauOptions
from xpcsviewer.compute.spec import CorrelateSpec, Engine

__all__ = ["GrowingMultitauCorrelator", "GrowingScattering", "StreamingMultitau",
           "snapshot_result"]

#: frames the state is first sized for when the caller cannot say
DEFAULT_CAPACITY = 4096
#: levels are allocated for this many frames from the start (detectors up to
#: PREALLOC_MAX_PIXELS correlated pixels: ~4 MB of untouched zeros per level and array
#: for 65536 pixels); larger detectors allocate as they grow
PREALLOC_FRAMES = 1 << 20
PREALLOC_MAX_PIXELS = 1 << 18


class GrowingMultitauCorrelator(MultitauCorrelator):
    """A :class:`~xpcsviewer.compute.multitau.correlator.MultitauCorrelator` without a frame limit.

    ``capacity`` is only where the state starts; it doubles as frames arrive. The NumPy
    backend only (the live path runs on the CPU).
    """

    def __init__(self, pixels: Any, capacity: int = DEFAULT_CAPACITY,
                 delays_per_level: int = 4, normalize_frame: bool = False, *,
                 cpu_kernel: bool = False) -> None:
        super().__init__(pixels, max(int(capacity), 2), delays_per_level, normalize_frame,
                         backend=get_backend("numpy"), device=None, cpu_kernel=cpu_kernel)
        # Levels for PREALLOC_FRAMES frames up front (zeros: pages are only mapped once
        # frames reach a level), so a run rarely copies its state to grow.
        pre = PREALLOC_FRAMES if pixels.n_pixels <= PREALLOC_MAX_PIXELS else 0
        self._add_levels(max(len(self._levels), self.n_frames_expected.bit_length(),
                             pre.bit_length()))

    def _add_levels(self, n_levels: int) -> None:
        have = len(self._levels)
        if n_levels <= have:
            return
        p, buf = self.pixels.n_pixels, self.buf
        for lvl in range(have, n_levels):
            xs = tuple(range(1, buf + 1)) if lvl == 0 else tuple(range(self.m + 1, buf + 1))
            if self._cpu is not None:
                self._levels.append(_Level(xs, None, None, None, None))
            else:
                self._levels.append(_Level(xs, np.zeros((buf, p)), np.zeros((buf, p)),
                                           np.zeros((len(xs), p)), np.zeros(p)))
        cpu = self._cpu
        if cpu is not None:
            def grown(a: np.ndarray) -> np.ndarray:
                out = np.zeros((a.shape[0], n_levels, *a.shape[2:]), dtype=a.dtype)
                out[:, :have] = a
                return out

            cpu.hist, cpu.first, cpu.sumprod, cpu.total = (
                grown(cpu.hist), grown(cpu.first), grown(cpu.sumprod), grown(cpu.total))
            cpu.count = np.concatenate([cpu.count, np.zeros(n_levels - have, np.int64)])
            cpu.has_left = np.concatenate([cpu.has_left, np.zeros(n_levels - have, np.int64)])
            cpu.n_levels = n_levels
        self.n_levels = n_levels

    def _grow(self, capacity: int) -> None:
        self.n_frames_expected = int(capacity)
        self.delays, self.levels, self.xs = delay_list(self.n_frames_expected, self.m)
        self._add_levels(max(int(self.levels.max()) + 1, self.n_frames_expected.bit_length()))

    def process(self, block: Any) -> None:
        """Correlate the next (n, P) frames; the state grows when needed."""
        need = self.n_processed + int(block.shape[0])
        if need > self.n_frames_expected:
            self._grow(max(need, 2 * self.n_frames_expected))
        super().process(block)

    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(delays, g2, g2_err, g2_static) for the frames fed so far (delay_list(n) rows)."""
        n = self.n_processed
        delays = delay_list(n, self.m)[0] if n >= 2 else np.zeros(0, np.int64)
        g2, err, g2s = self.result()
        t = delays.size
        return delays, g2[:t], err[:t], g2s[:t]


class GrowingScattering(ScatteringAccumulator):
    """:class:`~xpcsviewer.compute._scattering.ScatteringAccumulator` whose per-frame
    arrays double when full."""

    def add(self, frames_flat: np.ndarray, block: Any) -> None:
        need = self.count + frames_flat.shape[0]
        if need > self.intensity.shape[0]:
            cap = max(need, 2 * self.intensity.shape[0])
            inten = np.zeros(cap)
            inten[: self.count] = self.intensity[: self.count]
            sums = np.zeros((cap, self.static_sums.shape[1]))
            sums[: self.count] = self.static_sums[: self.count]
            self.intensity, self.static_sums, self.n_frames = inten, sums, cap
        super().add(frames_flat, block)


def snapshot_result(corr: Any, delays_per_level: int, normalize_frame: bool,
                    **config: Any) -> MultitauResult:
    """The result of a growing correlator's frames so far (its state is unchanged).

    Raises
    ------
    ValueError
        Fewer than 2 frames.
    """
    n = corr.n_processed
    if n < 2:
        raise ValueError(f"need at least 2 frames to correlate, got {n}")
    delays, g2, err, g2s = corr.snapshot()
    return MultitauResult(
        delay_frames=delays.copy(), g2=g2, g2_err=err, g2_static=g2s, n_frames=n,
        config={"delays_per_level": delays_per_level, "normalize_frame": normalize_frame,
                "num_partial_g2": 0, "backend": "numpy", **config})


class StreamingMultitau:
    """Multi-tau g2 plus the means of the same pass, fed chunk by chunk, any length.

    Parameters
    ----------
    partition : Partition or QMap
        As for :func:`~xpcsviewer.compute.multitau.correlator.correlate_multitau`.
    spec : CorrelateSpec, optional
        ``normalize_frame``, as there.
    options : MultitauOptions, optional
        ``delays_per_level``, as there; ``chunk_size``: frames per correlator update
        (larger pieces are split).
    expected_frames : int, optional
        A hint: the state is sized for it (it still grows past it).
    engine : Engine or str
        ``compiled``: the numba kernel; ``array``: the NumPy kernels; ``auto``: the
        compiled one when numba is installed and pixels x expected frames (10,000 when
        not known) reaches ``COMPILED_MIN_WORK`` (as ``correlate_multitau`` decides for a
        file). All engines agree to 1e-12.
    """

    def __init__(self, partition: Partition | Any, spec: CorrelateSpec | None = None, *,
                 options: MultitauOptions | None = None,
                 expected_frames: int | None = None,
                 engine: Engine | str = Engine.AUTO) -> None:
        engine = Engine.parse(engine)
        if engine not in (Engine.AUTO, Engine.COMPILED, Engine.ARRAY):
            raise ValueError(f"engine must be auto, compiled or array, got {engine.value!r}")
        spec = spec if spec is not None else CorrelateSpec()
        opt = options if options is not None else MultitauOptions()
        self.pixels = Partition.of(partition).pixels()
        hint = int(expected_frames) if expected_frames else 10_000
        if engine is Engine.COMPILED and not cpu_kernel_available():
            raise ValueError("engine='compiled' needs numba")
        compiled = engine is Engine.COMPILED or (
            engine is Engine.AUTO and cpu_kernel_available()
            and float(self.pixels.n_pixels) * hint >= COMPILED_MIN_WORK)
        self.engine = "compiled" if compiled else "backend"
        cap = max(hint if expected_frames else DEFAULT_CAPACITY, 2)
        self.delays_per_level = int(opt.delays_per_level)
        self.normalize_frame = bool(spec.normalize_frame)
        self.corr = GrowingMultitauCorrelator(self.pixels, cap, self.delays_per_level,
                                              self.normalize_frame, cpu_kernel=compiled)
        self.scat = GrowingScattering(self.pixels, cap, backend=get_backend("numpy"),
                                      compiled=compiled)
        self.chunk_size = int(opt.chunk_size)
        idx = self.pixels.pixel_index
        self._all_pixels = idx.size == self.pixels.shape[0] * self.pixels.shape[1]

    def warm(self, dtype: Any = np.uint16) -> None:
        """Load the compiled kernels for frames of ``dtype`` now (numba's cache: ~1 s the
        first time in a process), on a throwaway state, so the first frames do not wait."""
        if Engine.parse(self.engine) is not Engine.COMPILED:
            return
        from xpcsviewer.compute.multitau._cpu import CpuLevels, frame_sums

        tiny = np.zeros((2, 4), dtype=dtype)
        CpuLevels(4, 2, self.delays_per_level).process(tiny)
        frame_sums(tiny, np.zeros(4, np.int64), np.zeros((2, 2)), np.zeros(4))

    @property
    def n_frames(self) -> int:
        """Processed frames fed so far."""
        return self.corr.n_processed

    def feed(self, frames: np.ndarray) -> None:
        """Correlate the next (n, H, W) frames, in time order."""
        frames = np.asarray(frames)
        if frames.ndim != 3 or frames.shape[1:] != tuple(self.pixels.shape):
            raise ValueError(f"frames must be (n, {self.pixels.shape[0]}, "
                             f"{self.pixels.shape[1]}), got {frames.shape}")
        flat = frames.reshape(frames.shape[0], -1)
        idx = self.pixels.pixel_index
        for a in range(0, flat.shape[0], self.chunk_size):
            part = flat[a : a + self.chunk_size]
            block = part if self._all_pixels else np.take(part, idx, axis=1)
            self.corr.process(block)
            self.scat.add(part, block)

    def result(self) -> MultitauResult:
        """The multi-tau result of the frames fed so far (the state is unchanged).

        Raises
        ------
        ValueError
            Fewer than 2 frames.
        """
        return snapshot_result(self.corr, self.delays_per_level, self.normalize_frame)
