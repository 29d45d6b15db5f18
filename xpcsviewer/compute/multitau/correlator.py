"""Streaming multi-tau correlator from raw frames (result-file-format.md §5).

Semantics
---------
Level L works on coarse frames a_L(k), the mean of 2^L consecutive processed frames
(n_L = N >> L of them). With ``delays_per_level = m`` and buffer ``B = 2 m``, level 0
correlates delays x = 1..B and every level L >= 1 delays x = m+1..B (in level-L frames,
i.e. x * 2^L processed frames), keeping a delay only while x < n_L. For the default
m = 4 the delays are 1..8, 10, 12, 14, 16, 20, ... exactly as the standard correlator.

Per pixel, with the symmetric normalisation::

    G2(x) = mean_{t=0}^{n_L-x-1} a(t) a(t+x)
    IP(x) = mean_{t=0}^{n_L-x-1} a(t)        (past window)
    IF(x) = mean_{t=x}^{n_L-1}   a(t)        (future window)

Static-bin smoothing (ratio of sums, unbiased): for static bin s with n_s pixels,
``g2_s = n_s * sum_s G2 / (sum_s IP * sum_s IF)``; the dynamic g2 is the plain mean
of g2_s over the non-empty static bins inside the dynamic bin; ``g2_err`` is the
standard deviation (ddof 0) of the per-pixel ``G2 / (IP IF)`` over the dynamic bin's
pixels divided by sqrt(n_pixels). A zero denominator is replaced by 1e8 (g2 ~ 0).

Streaming
---------
Frames arrive in chunks; memory is the chunk plus, per level, the last B frames
(history), the first B frames, the running sum and the running sums of products:
O((B + B + 1 + n_delays) * P) per level, independent of N. IP and IF need no extra
state: IP(x) = (sum - last x frames) / (n - x), IF(x) = (sum - first x frames) / (n - x).

On the JAX backend each level's update is one jitted kernel (block padded to a power
of two, the real length passed as a dynamic value, so only ~log2(chunk) shapes are
compiled). The NumPy backend runs the same code eagerly and is the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from xpcsviewer.backends import ensure_numpy, get_backend, resolve_device
from xpcsviewer.compute._binning import PixelBins
from xpcsviewer.compute._scattering import ScatteringAccumulator, iter_array_chunks
from xpcsviewer.compute.inputs import FrameStream, Partition, frame_chunks
from xpcsviewer.compute.multitau._backend import (
    MIN_BLOCK,
    level_kernel,
    next_pow2,
    normalize_kernel,
)
from xpcsviewer.compute.multitau._cpu import CpuLevels, worth_compiling
from xpcsviewer.compute.multitau._cpu import available as cpu_kernel_available
from xpcsviewer.compute.multitau._shared import (
    MultitauResult,
    MultitauRun,
    attach_snapshots,
    delay_list,
    feed_frames,
)
from xpcsviewer.compute.multitau.pixels import (
    MIN_PAIRS,
    combine_bin_sums,
    finalize_kernel,
    iter_pixel_planes,
)
from xpcsviewer.compute.options import MultitauOptions
from xpcsviewer.compute.spec import CorrelateSpec, Engine
from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = [
    "MultitauCorrelator",
    "MultitauResult",
    "MultitauRun",
    "ScatteringAccumulator",
    "correlate_multitau",
    "delay_list",
    "iter_array_chunks",
]

@dataclass
class _Level:
    xs: tuple[int, ...]
    hist: Any
    first: Any
    sumprod: Any
    total: Any
    count: int = 0
    has_left: int = 0


class MultitauCorrelator:
    """Streaming multi-tau correlator over the valid pixels of a partition.

    Parameters
    ----------
    pixels : PixelBins
        Valid pixels and their static/dynamic bins (``select_pixels``).
    n_frames : int
        Number of processed frames that will be fed (sets the levels and delays).
    delays_per_level : int
        m (default 4: delays 1..8 then (5..8) * 2^L).
    normalize_frame : bool
        Divide each frame by its mean over the valid pixels before correlating
        (cancels incident-flux fluctuations).
    backend : BackendProtocol, optional
    device : str or jax.Device, optional
        Resolved once here from the work score pixels x frames.

    Notes
    -----
    Feed frames with :meth:`process` as (n, P) blocks of valid-pixel values, in time
    order; call :meth:`result` at any time (it does not change the state).
    """

    def __init__(
        self,
        pixels: PixelBins,
        n_frames: int,
        delays_per_level: int = 4,
        normalize_frame: bool = False,
        *,
        backend: Any = None,
        device: Any = "auto",
        cpu_kernel: bool = False,
    ) -> None:
        self.backend = backend if backend is not None else get_backend()
        self.pixels = pixels
        self.n_frames_expected = int(n_frames)
        self.m = int(delays_per_level)
        self.buf = 2 * self.m
        self.normalize_frame = bool(normalize_frame)
        self.delays, self.levels, self.xs = delay_list(self.n_frames_expected, self.m)
        if self.delays.size == 0:
            raise ValueError(f"need at least 2 frames to correlate, got {n_frames}")
        self.n_levels = int(self.levels.max()) + 1
        be, p = self.backend, pixels.n_pixels
        self.device = (None if be.name == "numpy"
                       else resolve_device(device, work=float(p) * n_frames))
        self._cpu = CpuLevels(p, self.n_levels, self.m) if cpu_kernel else None
        if cpu_kernel and be.name != "numpy":
            raise ValueError("the compiled CPU kernel runs with the NumPy backend")
        z = lambda *s: be.asarray(np.zeros(s), device=self.device)  # noqa: E731
        self._levels: list[_Level] = []
        for lvl in range(self.n_levels):
            xs = tuple(range(1 if lvl == 0 else self.m + 1, self.buf + 1))
            self._levels.append(
                _Level(xs, *(None,) * 4) if cpu_kernel
                else _Level(xs, z(self.buf, p), z(self.buf, p), z(len(xs), p), z(p))
            )
        self.n_processed = 0
        # device copies of the bin ids used by result()
        self._sid = be.asarray(pixels.static_id, device=self.device)
        self._did = be.asarray(pixels.dynamic_id, device=self.device)

    def process(self, block: Any) -> None:
        """Correlate the next (n, P) frames (valid-pixel values, any real dtype)."""
        be = self.backend
        n = int(block.shape[0])
        if n == 0:
            return
        if block.shape[1] != self.pixels.n_pixels:
            raise ValueError(f"block has {block.shape[1]} pixels, expected {self.pixels.n_pixels}")
        if self.n_processed + n > self.n_frames_expected:
            raise ValueError(
                f"more frames than announced ({self.n_processed + n} > {self.n_frames_expected})"
            )
        if self._cpu is not None:
            block = np.asarray(block)
            scale = None
            if self.normalize_frame:
                mean = block.mean(axis=1, dtype=np.float64)
                scale = 1.0 / np.where(mean > 0, mean, 1.0)
            self._cpu.process(block, scale)
            self.n_processed += n
            return
        nb = max(next_pow2(n), MIN_BLOCK)
        host = np.zeros((nb, block.shape[1]))
        host[:n] = ensure_numpy(block)
        x = be.asarray(host, device=self.device)
        if self.normalize_frame:
            x = normalize_kernel(be)(x)
        n_valid = n
        for lv in self._levels:
            if n_valid == 0:
                break
            kern = level_kernel(be, self.buf, lv.xs, lv.has_left, lv.count < self.buf)
            lv.hist, lv.first, lv.sumprod, lv.total, nxt = kern(
                lv.hist, lv.first, lv.sumprod, lv.total, x, n_valid, lv.count
            )
            lv.count += n_valid
            tot = n_valid + lv.has_left
            lv.has_left = tot % 2
            x, n_valid = nxt, tot // 2
        self.n_processed += n

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Current (g2 (T, Nd), g2_err (T, Nd), g2_static (T, Ns)); unreachable delays NaN."""
        be, pb = self.backend, self.pixels
        ns, nd = pb.n_static, pb.n_dynamic
        t = self.delays.size
        g2 = np.full((t, nd), np.nan)
        err = np.full((t, nd), np.nan)
        g2s = np.full((t, ns), np.nan)
        d_cnt_dev = be.asarray(pb.dynamic_count.astype(np.float64), device=self.device)
        row0 = 0
        for lvl, lv in enumerate(self._levels):
            n_here = int((self.levels == lvl).sum())
            n_seen = int(self._cpu.count[lvl]) if self._cpu is not None else lv.count
            if n_here == 0 or n_seen - min(lv.xs) < MIN_PAIRS:
                row0 += n_here  # nothing to keep: no state to gather or finalise
                continue
            count = n_seen
            # One frame pair gives G2 = IP * IF exactly (g2 = 1, error 0) whatever the
            # dynamics: such a delay is not a measurement.
            keep = [i for i, x in enumerate(lv.xs) if count - x >= MIN_PAIRS][:n_here]
            if keep:
                s_g2, s_ip, s_if, dss = self._bin_sums(lvl, lv, keep, d_cnt_dev)
                rows = row0 + np.arange(len(keep))
                g2[rows], err[rows], g2s[rows] = combine_bin_sums(
                    s_g2, s_ip, s_if, dss, pb.static_count, pb.dynamic_count,
                    pb.static_to_dynamic, nd)
            row0 += n_here
        return g2, err, g2s

    def _bin_sums(self, lvl: int, lv: _Level, keep: list[int],
                  d_count: Any) -> tuple[np.ndarray, ...]:
        """(s_g2, s_ip, s_if, dss) of the delays ``keep`` of level ``lvl`` (host arrays)."""
        be, pb = self.backend, self.pixels
        if self._cpu is not None:
            hist, first, sumprod, total, count = self._cpu.level_state(lvl, lv.xs)
        else:
            hist, first, sumprod = lv.hist, lv.first, lv.sumprod
            total, count = lv.total, lv.count
        fin = finalize_kernel(be, self.buf, lv.xs)
        out = fin(hist, first, sumprod, total, count, self._sid, self._did, d_count,
                  ns=pb.n_static, nd=pb.n_dynamic)
        s_g2, s_ip, s_if, _dsum, dss = (ensure_numpy(o)[np.asarray(keep)] for o in out)
        return s_g2, s_ip, s_if, dss

    def pixel_planes(self):
        """Per-pixel G2/IP/IF, one (3, H, W) float32 plane per delay (see
        :func:`~xpcsviewer.compute.multitau.pixels.iter_pixel_planes`)."""
        return iter_pixel_planes(self)


def emit_pixel_planes(corr: Any, sink: Callable[[int, np.ndarray], None] | None,
                      progress: ProgressCallback | None, cancel: CancelToken | None) -> None:
    """Hand a finished correlator's per-pixel G2/IP/IF planes to ``sink``, one delay at a
    time (nothing without a sink)."""
    if sink is None:
        return
    t = corr.delays.size
    for k, plane in corr.pixel_planes():
        report(progress, cancel, k, t, "per-pixel G2")
        sink(k, plane)
    report(progress, cancel, t, t, "per-pixel G2")


def correlate_multitau(
    frames: FrameStream | np.ndarray,
    partition: Partition | Any,
    spec: CorrelateSpec | None = None,
    *,
    options: MultitauOptions | None = None,
    engine: Engine | str = Engine.AUTO,
    device: Any = "auto",
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> MultitauResult | MultitauRun:
    """Multi-tau g2 of a frame stream on a static/dynamic partition.

    Parameters
    ----------
    frames : FrameStream or (N, H, W) array
        Processed frames (after begin/end/stride/avg), counts per pixel; a stream's
        ``open()`` gives (n, H, W) chunks, ``n_frames`` of them in all.
    partition : Partition or QMap
        1-based static and dynamic bins and the mask
        (:class:`~xpcsviewer.compute.inputs.Partition`).
    spec : CorrelateSpec, optional
        ``normalize_frame`` (per-frame intensity normalisation) and ``num_partial_g2``
        (cumulative g2 snapshots after every N / num_partial_g2 frames); the rest is
        not read here.
    options : MultitauOptions, optional
        ``delays_per_level`` (:func:`delay_list`), ``chunk_size`` (frames per device
        transfer), ``backend``, ``with_scattering`` (also the temporal/spatial means of
        the same pass: a ``MultitauRun``), ``pixel_sink`` (the per-pixel G2/IP/IF
        planes, one delay at a time).
    engine : Engine or str
        ``xla`` runs the whole job as one compiled XLA program per block
        (:mod:`~xpcsviewer.compute.multitau._xla`: frames sent as stored, gathered,
        converted and correlated through every level on the device; ``device`` picks
        the CPU or the GPU). ``array`` runs the level updates on the backend's array
        kernels. ``compiled`` runs the compiled CPU kernel (``_multitau_cpu``, numba):
        all levels in one cache-resident pass per pixel tile. ``auto``: a job on the CPU
        (NumPy backend, or JAX routed to the CPU) uses the compiled kernel when numba
        is installed and the job has at least ``COMPILED_MIN_WORK`` pixel-frames (smaller
        ones finish before numba would be loaded), NumPy's otherwise; on a GPU the jitted
        kernels are used. All agree to 1e-12 (tested); docs/correlators.md has the speeds.
    device : str or jax.Device
        ``"auto"``: routed once by pixels x frames.
    progress, cancel
        Reported / checked between chunks.

    Returns
    -------
    MultitauResult or MultitauRun
    """
    spec = spec if spec is not None else CorrelateSpec()
    opt = options if options is not None else MultitauOptions()
    chunks, n_frames = frame_chunks(frames, opt.chunk_size)
    pixels = Partition.of(partition).pixels()
    be = opt.backend if opt.backend is not None else get_backend()
    engine = Engine.parse(engine)
    if engine is Engine.XLA:
        if opt.pixel_sink is not None:
            raise ValueError("engine='xla' does not write per-pixel G2; use 'compiled'")
        from xpcsviewer.compute.multitau._xla import correlate_xla

        return correlate_xla(chunks, n_frames, pixels, spec, opt, device, progress, cancel)
    if engine is Engine.AUTO and be.name != "numpy":
        dev = resolve_device(device, work=float(pixels.n_pixels) * n_frames)
        if dev is None or getattr(dev, "platform", "cpu") == "cpu":
            be, device = get_backend("numpy"), None
    if engine is Engine.COMPILED:
        if not cpu_kernel_available():
            raise ValueError("engine='compiled' needs numba")
        be, device = get_backend("numpy"), None
    compiled = engine is Engine.COMPILED or (
        engine is Engine.AUTO
        and be.name == "numpy"
        and worth_compiling(float(pixels.n_pixels) * n_frames)
    )
    m, normalize_frame = int(opt.delays_per_level), bool(spec.normalize_frame)
    corr = MultitauCorrelator(pixels, n_frames, m, normalize_frame, backend=be,
                              device=device, cpu_kernel=compiled)
    acc = (
        ScatteringAccumulator(pixels, n_frames, backend=be, device=corr.device, compiled=compiled)
        if opt.with_scattering
        else None
    )
    idx = pixels.pixel_index
    all_pixels = idx.size == pixels.shape[0] * pixels.shape[1]

    def feed(part: np.ndarray) -> None:
        # every pixel valid: the frames themselves, no gather; np.take keeps C order
        block = part if all_pixels else np.take(part, idx, axis=1)
        corr.process(block)
        if acc is not None:
            acc.add(part, block if be.name == "numpy"
                    else be.asarray(block, dtype=np.float64, device=corr.device))

    snaps = feed_frames(chunks, corr, feed, n_frames, opt.chunk_size,
                        spec.num_partial_g2, progress, cancel)
    g2, err, g2s = corr.result()
    emit_pixel_planes(corr, opt.pixel_sink, progress, cancel)
    res = MultitauResult(
        delay_frames=corr.delays.copy(),
        g2=g2,
        g2_err=err,
        g2_static=g2s,
        n_frames=corr.n_processed,
        config={
            "delays_per_level": m,
            "normalize_frame": normalize_frame,
            "num_partial_g2": int(spec.num_partial_g2),
                "backend": be.name,
        },
    )
    attach_snapshots(res, snaps)
    if acc is not None:
        return MultitauRun(res, acc)
    return res
