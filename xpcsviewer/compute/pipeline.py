"""Frames to a complete result: the multi-tau and/or two-time passes plus the means.

Shared by ``xpcsviewer correlate`` (raw files) and the demo set (simulated frames),
so that what the demo shows is exactly what our correlator produces.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.compute.inputs import FrameStream, Partition
from xpcsviewer.compute.multitau.correlator import correlate_multitau
from xpcsviewer.compute.options import MultitauOptions, TwotimeOptions
from xpcsviewer.compute.spec import MODES, CorrelateSpec, Engine
from xpcsviewer.compute.twotime.correlator import correlate_twotime
from xpcsviewer.model.result import Multitau, QMap, Twotime, XpcsResult
from xpcsviewer.progress import CancelToken, ProgressCallback

__all__ = ["MODES", "CorrelatedResult", "FrameStream", "ResultRecord", "assemble_result",
           "correlate_to_result", "multitau_model", "multitau_segments", "twotime_model"]


def multitau_segments(n: int) -> int:
    """Number of I(q) time segments the standard correlator stores for N frames.

    It keeps one row per level-L buffer entry with the smallest L such that
    N >> L <= 16; we write proper segment means for the same number of rows.
    """
    level = 0
    while (n >> level) > 16:
        level += 1
    return max(1, n >> level)


class CorrelatedResult:
    """A result ready for :func:`xpcsviewer.io.results.writer.write_result`.

    Attributes
    ----------
    result : XpcsResult
    saxs_2d : (H, W) float64
        Time-averaged image.
    c2_maps : list of (N, N) float32 or None
        Two-time maps in ``result.twotime.processed_bins`` order, upper triangles
        (diagonal included, lower triangle zero) as the result file stores them.
    twotime_groups : TwotimeGroups or None
        The two-time maps of K independent pixel groups of each processed bin
        (``spec.groups`` K of :func:`correlate_to_result`), float32 upper triangles like
        ``c2_maps``; see :mod:`xpcsviewer.compute.twotime.groups`.
    """

    def __init__(self, result: XpcsResult, saxs_2d: np.ndarray, c2_maps: list[np.ndarray] | None,
                 twotime_groups: Any = None):
        self.result = result
        self.saxs_2d = saxs_2d
        self.c2_maps = c2_maps
        self.twotime_groups = twotime_groups


@dataclass(frozen=True)
class ResultRecord:
    """What a result records besides the correlation, and where its side stack goes.

    ``config`` is merged into each analysis group's config; ``raw_path`` is written as
    ``/xpcs/rawdata_path``; ``pixel_sink`` ``(k, plane)`` receives the per-pixel G2/IP/IF
    stack of the multi-tau pass one delay at a time, (3, H, W) float32 (e.g.
    :func:`xpcsviewer.io.results.g2stack.open_g2_stack_writer`).
    """

    path: str | Path = "result.hdf"
    raw_path: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    count_time: float | None = None
    start_time: str | None = None
    pixel_sink: Callable[[int, np.ndarray], None] | None = None


def _backend_of(engine: Engine) -> Any:
    """The backend an engine runs on: the XLA program on JAX, the compiled kernels on
    NumPy (no JAX loaded for a CPU job); the others on the default backend."""
    from xpcsviewer.backends import get_backend

    if engine is Engine.XLA:
        return get_backend("jax")
    if engine is Engine.COMPILED:
        return get_backend("numpy")
    return None


def correlate_to_result(
    frames: FrameStream,
    qmap: QMap,
    spec: CorrelateSpec,
    record: ResultRecord | None = None,
    *,
    engine: Engine | str = Engine.AUTO,
    device: Any = "auto",
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> CorrelatedResult:
    """Correlate a frame stream on a partition into a result (nothing is written).

    ``frames`` is read once per pass (twice for ``mode="both"``: the multi-tau pass keeps
    memory independent of N, the two-time pass holds the selected pixels; once more for
    pixel groups). ``spec`` says what is computed (mode, two-time bins ``dq``,
    normalisation, partial g2, smoothing, pixel groups: with two-time also the maps of
    ``spec.groups`` pixel groups of each processed bin, at most
    :data:`~xpcsviewer.compute.twotime.groups.MAX_GROUP_FRAMES` frames); ``record``
    what the result records. ``engine``: the dense correlators' engine (``xla``: one
    XLA program per job on ``device``, two-time then on the backend's jitted kernels on
    JAX; ``compiled``: the CPU kernels); ``progress`` messages name the pass.
    """
    engine = Engine.parse(engine)
    record = record if record is not None else ResultRecord()
    if record.pixel_sink is not None and spec.mode == "twotime":
        raise ValueError("the per-pixel G2 stack comes from the multi-tau pass")
    if not frames.frame_time > 0:
        raise ValueError(f"frame_time must be positive, got {frames.frame_time}")
    n_frames = int(frames.n_frames)
    k_groups = int(spec.groups)
    if k_groups and spec.two_time:
        from xpcsviewer.compute.twotime.groups import MAX_GROUP_FRAMES

        if n_frames > MAX_GROUP_FRAMES:  # before any pass, not after the long ones
            raise ValueError(
                f"two-time group maps hold K x bins x N^2 floats: at most "
                f"{MAX_GROUP_FRAMES} frames, got {n_frames} (use fewer frames or no "
                "group maps)")
    t0 = frames.t0
    stride_frame, avg_frame = int(frames.stride), int(frames.avg)
    common = dict(record.config)
    backend = _backend_of(engine)
    partition = Partition.of(qmap)
    run_how = {"device": device, "progress": progress, "cancel": cancel}
    mt = tt = None
    scat = None
    c2_maps = None
    if spec.multi_tau:
        run = correlate_multitau(
            frames, partition, spec,
            options=MultitauOptions(backend=backend, with_scattering=True,
                                    pixel_sink=record.pixel_sink),
            engine=engine, **run_how)
        r, scat = run.multitau, run.scattering
        mt = multitau_model(r, t0, stride_frame, avg_frame, common)
    segments = None
    groups = None
    if spec.two_time:
        if engine is Engine.XLA:
            from xpcsviewer.compute.multitau._xla import xla_device

            run_how["device"] = xla_device(device)
        # float32 upper triangles: what the file stores, a quarter of the memory
        run_tt = correlate_twotime(
            frames, partition, spec,
            options=TwotimeOptions(backend=backend, with_scattering=scat is None,
                                   c2_format="upper32"),
            # the plan's engine as the two-time pass knows it (auto: a caller without one)
            engine=Engine.ARRAY if engine in (Engine.XLA, Engine.ARRAY) else engine,
            **run_how)
        if scat is None:
            r2, scat = run_tt.twotime, run_tt.scattering
            segments = scat.saxs_1d_segments(10)
        else:
            r2 = run_tt
        c2_maps = r2.c2
        if k_groups:
            from xpcsviewer.compute.twotime.groups import group_maps

            groups = group_maps(frames, partition,
                                replace(spec, dq=tuple(int(b) for b in r2.processed_bins)),
                                progress=progress, cancel=cancel)
        tt = twotime_model(r2, n_frames, t0, stride_frame, avg_frame, common)
    result = assemble_result(qmap, scat, mt=mt, tt=tt, segments=segments,
                             frame_time=frames.frame_time, record=record)
    return CorrelatedResult(result, scat.mean_image(), c2_maps, groups)


def _zero_empty_bins(a: np.ndarray, g2: np.ndarray | None = None) -> np.ndarray:
    # NaN -> 0 per bin, but a delay NaN in every bin stays NaN (see multitau_model)
    a = np.asarray(a, dtype=np.float64)
    ref = a if g2 is None else np.asarray(g2)
    if ref.ndim < 2 or ref.shape[0] == 0:
        return np.nan_to_num(a, nan=0.0)
    none = np.isnan(ref).all(axis=tuple(range(1, ref.ndim)))
    out = np.nan_to_num(a, nan=0.0)
    out[none] = np.nan
    return out


def multitau_model(r: Any, t0: float, stride_frame: int, avg_frame: int,
                   common: dict[str, Any]) -> Multitau:
    """The file model of a :class:`~xpcsviewer.compute.multitau.correlator.MultitauResult`.

    Bins without photons have no g2: stored as 0 (the standard files' convention)
    and flagged invalid so nothing plots or fits them. A delay with no g2 in any bin
    (one frame pair: no measurement) stays NaN, never a zero that reads as a decay
    to 0 (issue 48). Shared by ``correlate`` and the live job, so both write the same
    numbers.
    """
    mt = Multitau(
        delay_frames=r.delay_frames,
        tau=r.delay_frames * t0,
        g2=_zero_empty_bins(r.g2),
        g2_err=_zero_empty_bins(r.g2_err, r.g2),
        valid=np.isfinite(r.g2),
        t0_eff=t0,
        stride_frame=int(stride_frame),
        avg_frame=int(avg_frame),
        config={**common, **r.config, "analysis_type": "multitau"},
    )
    if r.g2_partial is not None:
        gp, ep = np.asarray(r.g2_partial, float), np.asarray(r.g2_partial_err, float)
        mt.g2_partial = np.array([_zero_empty_bins(g) for g in gp]).reshape(gp.shape)
        mt.g2_partial_err = np.array([_zero_empty_bins(e, g) for e, g in
                                      zip(ep, gp, strict=True)]).reshape(ep.shape)
        mt.g2_partial_labels = r.g2_partial_labels
    return mt


def twotime_model(r2: Any, n_frames: int, t0: float, stride_frame: int, avg_frame: int,
                  common: dict[str, Any]) -> Twotime:
    """The file model of a :class:`~xpcsviewer.compute.twotime.correlator.TwotimeResult` (shared by
    the dense and the photon pipelines)."""
    return Twotime(
        processed_bins=r2.processed_bins,
        map_names=[f"c2_{i + 1:05d}" for i in range(len(r2.processed_bins))],
        n_frames=int(n_frames),
        t0=t0,
        g2_full=r2.g2_full.T,
        g2_segments=r2.g2_segments.transpose(2, 1, 0),
        stride_frame=int(stride_frame),
        avg_frame=int(avg_frame),
        config={**common, **r2.config, "analysis_type": "twotime"},
    )


def assemble_result(qmap: QMap, scat: Any, *, mt: Multitau | None, tt: Twotime | None,
                    segments: np.ndarray | None, frame_time: float,
                    record: ResultRecord) -> XpcsResult:
    """The result of the correlators' outputs and the means ``scat`` of the same frames
    (``segments``: I(q) time segments; None: the multi-tau number of rows); ``record``
    gives its path, raw path, count and start times (its config and sink are the
    passes')."""
    if segments is None:
        segments = scat.saxs_1d_segments(multitau_segments(scat.count))
    itime = scat.intensity_vs_time()
    start_time, raw_path = record.start_time, record.raw_path
    if start_time is None:
        start_time = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    result = XpcsResult(
        path=Path(record.path),
        analysis_type=tuple(a for a, x in (("Multitau", mt), ("Twotime", tt)) if x is not None),
        layout="nexus",
        qmap=qmap,
        frame_time=float(frame_time),
        count_time=record.count_time,
        start_time=start_time,
        saxs_1d=np.nan_to_num(scat.saxs_1d(), nan=0.0),
        saxs_1d_segments=np.nan_to_num(segments, nan=0.0),
        intensity_vs_time=np.vstack([np.arange(itime.size, dtype=np.float64), itime]),
        multitau=mt,
        twotime=tt,
    )
    if raw_path is not None:
        result.metadata["xpcs/rawdata_path"] = str(raw_path)
    return result
