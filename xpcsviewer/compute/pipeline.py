"""Frames to a complete result: the multi-tau and/or two-time passes plus the means.

Shared by ``xpcsviewer correlate`` (raw files) and the demo set (simulated frames),
so that what the demo shows is exactly what our correlator produces.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.compute.multitau import correlate_multitau
from xpcsviewer.compute.twotime import correlate_twotime, parse_bins
from xpcsviewer.io.model import Multitau, QMap, Twotime, XpcsResult
from xpcsviewer.progress import CancelToken, ProgressCallback

__all__ = ["CorrelatedResult", "assemble_result", "correlate_to_result", "multitau_model",
           "multitau_segments", "twotime_model"]

MODES = ("multitau", "twotime", "both")


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
    """A result ready for :func:`xpcsviewer.io.writer.write_result`.

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
        (``correlate_to_result(twotime_groups=K)``), float32 upper triangles like
        ``c2_maps``; see :mod:`xpcsviewer.compute.twotime_groups`.
    """

    def __init__(self, result: XpcsResult, saxs_2d: np.ndarray, c2_maps: list[np.ndarray] | None,
                 twotime_groups: Any = None):
        self.result = result
        self.saxs_2d = saxs_2d
        self.c2_maps = c2_maps
        self.twotime_groups = twotime_groups


def correlate_to_result(
    chunks: Callable[[], Iterable[np.ndarray]],
    qmap: QMap,
    n_frames: int,
    frame_time: float,
    *,
    mode: str = "multitau",
    dq_bins: str | Iterable[int] | None = "all",
    stride_frame: int = 1,
    avg_frame: int = 1,
    normalize_frame: bool = False,
    num_partial_g2: int = 0,
    count_time: float | None = None,
    start_time: str | None = None,
    config: dict[str, Any] | None = None,
    path: str | Path = "result.hdf",
    raw_path: str | None = None,
    backend: Any = None,
    device: Any = "auto",
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    g2_pixel_sink: Callable[[int, np.ndarray], None] | None = None,
    engine: str = "auto",
    twotime_groups: int = 0,
    twotime_group_tile: int = 8,
    twotime_group_seed: int = 0,
) -> CorrelatedResult:
    """Correlate a frame stream on a partition into a result (nothing is written).

    Parameters
    ----------
    chunks : callable returning an iterable of (n, H, W) frame chunks
        Called once per pass (twice for ``mode="both"``: the multi-tau pass keeps
        memory independent of N, the two-time pass holds the selected pixels).
    qmap : QMap
        The partition; its detector shape must match the frames.
    n_frames : int
        Frames after begin/end/stride/avg.
    frame_time : float
        Seconds between raw frames; the effective step is ``frame_time * stride * avg``.
    mode : {"multitau", "twotime", "both"}
    dq_bins :
        Two-time bins (``"1-5,8"``, a list of 1-based bins, or ``"all"``).
    normalize_frame, num_partial_g2 :
        See :func:`~xpcsviewer.compute.multitau.correlate_multitau`.
    count_time, start_time, config, path :
        Recorded in the result (``config`` is merged into each analysis group's config).
    raw_path : str, optional
        The raw input, written as ``/xpcs/rawdata_path``.
    backend, device, progress, cancel :
        Passed to the correlators; ``progress`` messages name the pass.
    g2_pixel_sink : callable ``(k, plane)``, optional
        Receives the per-pixel G2/IP/IF stack of the multi-tau pass one delay at a
        time, (3, H, W) float32 (e.g. :func:`xpcsviewer.io.g2stack.open_g2_stack_writer`).
    engine : {"auto", "compiled", "xla"}
        The dense correlators' engine (``"xla"``: one XLA program per job on
        ``device``; two-time then runs the backend's jitted kernels on JAX).
    twotime_groups, twotime_group_tile, twotime_group_seed : int
        K > 0 (with two-time): also the two-time maps of K pixel groups of each processed
        bin, of the same frames, the detector cut into ``twotime_group_tile``-pixel tiles
        dealt at random (``twotime_group_seed``) to the groups; another pass over
        ``chunks`` (:func:`~xpcsviewer.compute.twotime_groups.group_maps`; at most
        :data:`~xpcsviewer.compute.twotime_groups.MAX_GROUP_FRAMES` frames).

    Returns
    -------
    CorrelatedResult
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if g2_pixel_sink is not None and mode == "twotime":
        raise ValueError("the per-pixel G2 stack comes from the multi-tau pass")
    if not frame_time > 0:
        raise ValueError(f"frame_time must be positive, got {frame_time}")
    k_groups = int(twotime_groups)
    if k_groups < 0:
        raise ValueError(f"twotime_groups must be >= 0, got {twotime_groups}")
    if k_groups and mode in ("twotime", "both"):
        from xpcsviewer.compute.twotime_groups import MAX_GROUP_FRAMES

        if int(n_frames) > MAX_GROUP_FRAMES:  # before any pass, not after the long ones
            raise ValueError(
                f"two-time group maps hold K x bins x N^2 floats: at most "
                f"{MAX_GROUP_FRAMES} frames, got {int(n_frames)} (use fewer frames or no "
                "group maps)")
    t0 = float(frame_time) * int(stride_frame) * int(avg_frame)
    common = dict(config or {})
    kw: dict[str, Any] = {
        "n_frames": int(n_frames),
        "n_dynamic": qmap.n_dynamic,
        "n_static": qmap.n_static,
        "backend": backend,
        "device": device,
        "progress": progress,
        "cancel": cancel,
    }
    maps = (qmap.dynamic_roi_map, qmap.static_roi_map, qmap.mask)
    mt = tt = None
    scat = None
    c2_maps = None
    if mode in ("multitau", "both"):
        run = correlate_multitau(
            chunks(),
            *maps,
            normalize_frame=normalize_frame,
            num_partial_g2=num_partial_g2,
            with_scattering=True,
            pixel_sink=g2_pixel_sink,
            engine=engine,
            **kw,
        )
        r, scat = run.multitau, run.scattering
        mt = multitau_model(r, t0, stride_frame, avg_frame, common)
    segments = None
    groups = None
    if mode in ("twotime", "both"):
        bins = parse_bins(dq_bins, qmap.n_dynamic)
        # float32 upper triangles: what the file stores, a quarter of the memory
        kw_tt = dict(kw)
        if engine == "xla":
            from xpcsviewer.backends import get_backend

            kw_tt["backend"] = get_backend("jax")
            from xpcsviewer.compute._multitau_xla import xla_device

            kw_tt["device"] = xla_device(device)
        run_tt = correlate_twotime(
            chunks(), *maps, dq_bins=bins, with_scattering=scat is None,
            c2_format="upper32", engine="backend" if engine == "xla" else "auto", **kw_tt
        )
        if scat is None:
            r2, scat = run_tt.twotime, run_tt.scattering
            segments = scat.saxs_1d_segments(10)
        else:
            r2 = run_tt
        c2_maps = r2.c2
        if k_groups:
            from xpcsviewer.compute.twotime_groups import group_maps

            groups = group_maps(chunks(), *maps, r2.processed_bins, int(n_frames),
                                n_groups=k_groups, tile_px=twotime_group_tile,
                                seed=twotime_group_seed, n_dynamic=qmap.n_dynamic,
                                n_static=qmap.n_static, progress=progress, cancel=cancel)
        tt = twotime_model(r2, n_frames, t0, stride_frame, avg_frame, common)
    result = assemble_result(qmap, scat, mt=mt, tt=tt, segments=segments,
                             frame_time=frame_time, count_time=count_time,
                             start_time=start_time, path=path, raw_path=raw_path)
    return CorrelatedResult(result, scat.mean_image(), c2_maps, groups)


def multitau_model(r: Any, t0: float, stride_frame: int, avg_frame: int,
                   common: dict[str, Any]) -> Multitau:
    """The file model of a :class:`~xpcsviewer.compute.multitau.MultitauResult`.

    Bins without photons have no g2: stored as 0 (the standard files' convention)
    and flagged invalid so nothing plots or fits them. Shared by ``correlate`` and
    the live job, so both write the same numbers.
    """
    mt = Multitau(
        delay_frames=r.delay_frames,
        tau=r.delay_frames * t0,
        g2=np.nan_to_num(r.g2, nan=0.0),
        g2_err=np.nan_to_num(r.g2_err, nan=0.0),
        valid=np.isfinite(r.g2),
        t0_eff=t0,
        stride_frame=int(stride_frame),
        avg_frame=int(avg_frame),
        config={**common, **r.config, "analysis_type": "multitau"},
    )
    if r.g2_partial is not None:
        mt.g2_partial = np.nan_to_num(r.g2_partial, nan=0.0)
        mt.g2_partial_err = np.nan_to_num(r.g2_partial_err, nan=0.0)
        mt.g2_partial_labels = r.g2_partial_labels
    return mt


def twotime_model(r2: Any, n_frames: int, t0: float, stride_frame: int, avg_frame: int,
                  common: dict[str, Any]) -> Twotime:
    """The file model of a :class:`~xpcsviewer.compute.twotime.TwotimeResult` (shared by
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
                    count_time: float | None, start_time: str | None,
                    path: str | Path, raw_path: str | None) -> XpcsResult:
    """The result of the correlators' outputs and the means ``scat`` of the same frames
    (``segments``: I(q) time segments; None: the multi-tau number of rows)."""
    if segments is None:
        segments = scat.saxs_1d_segments(multitau_segments(scat.count))
    itime = scat.intensity_vs_time()
    if start_time is None:
        start_time = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    result = XpcsResult(
        path=Path(path),
        analysis_type=tuple(a for a, x in (("Multitau", mt), ("Twotime", tt)) if x is not None),
        layout="nexus",
        qmap=qmap,
        frame_time=float(frame_time),
        count_time=count_time,
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
