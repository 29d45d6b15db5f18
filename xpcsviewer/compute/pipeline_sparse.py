"""Hits to a complete result, and which path (photons or dense frames) a job takes.

:func:`correlate_events_to_result` is :func:`~xpcsviewer.compute.pipeline.correlate_to_result`
fed hits: the photon multi-tau (:mod:`~xpcsviewer.compute.multitau.photons`) and two-time
(:mod:`~xpcsviewer.compute.twotime.photons`) correlators and the means of the same pass,
assembled into the same result (the same datasets, equal values).

:func:`choose_path` decides per job, from a cost model of whole jobs measured on the
project's 2-core machines by ``benchmarks/sparse.py`` (docs/sparse.md has the figures):
the photon path costs per hit of every level plus per hit read; the dense path per
pixel-frame (frames are formed from the hits, then correlated). Where the coarse frames
are dense from the start (high occupancy) the dense path wins; the choice and both
estimates are recorded in the result (``config/path``) and printed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from xpcsviewer.compute.inputs import Partition
from xpcsviewer.compute.multitau.photons import correlate_multitau_events, level_work_estimate
from xpcsviewer.compute.options import MultitauOptions, TwotimeOptions
from xpcsviewer.compute.pipeline import (
    CorrelatedResult,
    FrameStream,
    ResultRecord,
    assemble_result,
    multitau_model,
    twotime_model,
)
from xpcsviewer.compute.spec import CorrelateSpec
from xpcsviewer.model.result import QMap
from xpcsviewer.progress import CancelToken, ProgressCallback

__all__ = ["PathChoice", "choose_path", "correlate_events_to_result"]

# Whole-job costs on the project's 2-core machines (benchmarks/sparse.py, 256x256 and
# 512x512 at 0.1-10 % occupancy; docs/correlators.md has the table). Fixed start-up is
# the same for both paths and left out.
#: photon multi-tau: seconds per hit read, sorted by pixel and summed into the means
SPARSE_S_PER_HIT = 12e-9
#: ... per hit of each level (coarse hits formed, ring kept)
SPARSE_S_PER_LEVEL_HIT = 3e-9
#: ... per partner sought within B frames (the search is what costs at dense levels)
SPARSE_S_PER_PAIR = 1e-9
#: either path: per correlated pixel and level, the state and its finalisation
S_PER_PIXEL_LEVEL = 0.2e-6
#: photon two-time: seconds per pair of hits of one pixel (0.4-2 ns measured at 2-20 %)
SPARSE_S_PER_TT_PAIR = 1e-9
#: dense multi-tau job on a sparse file: per pixel-frame, frames formed from the hits
#: and correlated by the compiled CPU engine (3.2-4.4 ns measured)
DENSE_S_PER_PIXEL_FRAME = 3.5e-9
#: dense two-time: per pixel and frame pair (BLAS; 0.011-0.020 ns measured)
DENSE_S_PER_MAC = 0.015e-9
#: frames formed from hits for the dense two-time: per pixel-frame
DENSE_S_PER_FORMED = 1e-9
#: the photon path's frames are never formed: above this many pixel-frames the dense
#: path is refused (a time-tag run has 10^9 frames of one detector tick)
DENSE_MAX_PIXEL_FRAMES = 1e12


@dataclass(frozen=True)
class PathChoice:
    """Which correlator path a job takes, and why.

    Attributes
    ----------
    path : {"sparse", "dense"}
    reason : str
        One line for the user.
    sparse_s, dense_s : float
        Estimated seconds of each path (inf: not possible).
    occupancy : float
        Hits per pixel-frame of the processed frames (estimated).
    """

    path: str
    reason: str
    sparse_s: float
    dense_s: float
    occupancy: float

    def as_config(self) -> dict[str, Any]:
        return {"path": self.path, "path_reason": self.reason,
                "path_sparse_s_est": self.sparse_s, "path_dense_s_est": self.dense_s,
                "occupancy_est": self.occupancy}


def estimate_costs(*, n_frames: int, detector_pixels: int, correlated_pixels: int,
                   hits: float, mode: str, bin_pixels: Iterable[int] = (),
                   sparse_ok: bool = True) -> tuple[float, float, float]:
    """(sparse seconds, dense seconds, occupancy) of a job (see the module notes)."""
    n = max(int(n_frames), 1)
    occ = min(1.0, float(hits) / (float(detector_pixels) * n)) if detector_pixels else 0.0
    sparse = SPARSE_S_PER_HIT * hits
    dense = 0.0
    if mode in ("multitau", "both"):
        lh, pairs = level_work_estimate(n, correlated_pixels, occ)
        per_pixel = S_PER_PIXEL_LEVEL * correlated_pixels * max(1, n.bit_length())
        sparse += SPARSE_S_PER_LEVEL_HIT * lh + SPARSE_S_PER_PAIR * pairs + per_pixel
        dense += DENSE_S_PER_PIXEL_FRAME * detector_pixels * n + per_pixel
    if mode in ("twotime", "both"):
        dense += DENSE_S_PER_FORMED * detector_pixels * n
        for pb in bin_pixels:
            per_pixel = occ * n
            sparse += SPARSE_S_PER_TT_PAIR * pb * per_pixel * (per_pixel + 1) / 2
            dense += DENSE_S_PER_MAC * pb * n * n / 2
    if not sparse_ok:
        sparse = math.inf
    if float(detector_pixels) * n > DENSE_MAX_PIXEL_FRAMES:
        dense = math.inf
    return sparse, dense, occ


def choose_path(requested: str, *, sparse_source: bool, time_tag: bool = False,
                **costs: Any) -> PathChoice:
    """The path of one job: ``requested`` "auto", "sparse" or "dense".

    A dense source always takes the dense path; a time-tag run the photon path (its
    frames are detector ticks). Otherwise "auto" takes the cheaper estimate.

    Raises
    ------
    ValueError
        A path that cannot run (photons of a dense file, dense frames of a time-tag run).
    """
    if requested not in ("auto", "sparse", "dense"):
        raise ValueError(f"path must be auto, sparse or dense, got {requested!r}")
    if not sparse_source:
        if requested == "sparse":
            raise ValueError("--path sparse needs a photon-sparse or event source; this one "
                             "stores dense frames")
        return PathChoice("dense", "dense frames", math.inf, math.nan, math.nan)
    from xpcsviewer.compute.multitau.photons import available

    sp, de, occ = estimate_costs(sparse_ok=available(), **costs)
    if time_tag:
        if requested == "dense":
            raise ValueError("--path dense cannot run in time-tag mode (frames are detector "
                             "ticks); give --bin-time for a frame view")
        if not available():
            raise ValueError("time-tag correlation needs numba")
        return PathChoice("sparse", "time-tag mode: photon arrival times", sp, de, occ)
    if requested == "dense":
        if math.isinf(de):
            raise ValueError("--path dense: the frames are too many to form "
                             f"({costs.get('n_frames')} x {costs.get('detector_pixels')} "
                             "pixels)")
        return PathChoice("dense", "asked for (--path dense)", sp, de, occ)
    if requested == "sparse":
        if math.isinf(sp):
            raise ValueError("--path sparse needs numba")
        return PathChoice("sparse", "asked for (--path sparse)", sp, de, occ)
    if sp <= de:
        why = (f"photons: occupancy {occ:.3%}, estimated {sp:.3g} s vs {de:.3g} s on dense "
               "frames")
        return PathChoice("sparse", why, sp, de, occ)
    why = (f"dense frames: occupancy {occ:.3%} is high, estimated {de:.3g} s vs {sp:.3g} s "
           "on photons")
    return PathChoice("dense", why, sp, de, occ)


def correlate_events_to_result(
    frames: FrameStream,
    qmap: QMap,
    spec: CorrelateSpec,
    record: ResultRecord | None = None,
    *,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    scattering_group: int = 1,
    engine: tuple[str, str] = ("compiled", "cpu"),
) -> CorrelatedResult:
    """Correlate a stream of hits into a result (nothing is written).

    ``frames.open`` is called once per pass (twice for ``mode="both"``) and returns the
    hits of processed frames 0..n_frames-1 as EventBlocks; the other parameters are
    those of :func:`~xpcsviewer.compute.pipeline.correlate_to_result`.
    ``scattering_group``: frames per row of the per-frame means (time-tag runs).
    ``engine``: (engine, device): "compiled" (numba, CPU) or "xla" (the multi-tau pass on
    the device by :mod:`~xpcsviewer.compute.multitau._photons_xla`; multi-tau only).
    """
    record = record if record is not None else ResultRecord()
    if record.pixel_sink is not None and spec.mode == "twotime":
        raise ValueError("the per-pixel G2 stack comes from the multi-tau pass")
    if not frames.frame_time > 0:
        raise ValueError(f"frame_time must be positive, got {frames.frame_time}")
    n_frames, frame_time = int(frames.n_frames), frames.frame_time
    stride_frame, avg_frame = int(frames.stride), int(frames.avg)
    t0 = float(frame_time) * int(stride_frame) * int(avg_frame)
    common = dict(record.config or {})
    partition = Partition.of(qmap)
    mt = tt = scat = c2_maps = segments = None
    engine, device = engine
    xla = str(engine) == "xla"
    if xla and (spec.two_time or scattering_group > 1):
        # the plan refuses these first (xla_photon_options); never run them elsewhere
        raise ValueError("the XLA photon engine correlates multi-tau on frames only")
    if spec.multi_tau:
        opts = MultitauOptions(with_scattering=True, scattering_group=scattering_group,
                               pixel_sink=record.pixel_sink)
        if xla:
            from xpcsviewer.compute.multitau._photons_xla import correlate_events_xla

            run = correlate_events_xla(frames, partition, spec, options=opts, device=device,
                                       progress=progress, cancel=cancel)
        else:
            run = correlate_multitau_events(frames, partition, spec, options=opts,
                                            progress=progress, cancel=cancel)
        r, scat = run.multitau, run.scattering
        mt = multitau_model(r, t0, stride_frame, avg_frame, common)
    if spec.two_time:
        from xpcsviewer.compute.twotime.photons import correlate_twotime_events

        run_tt = correlate_twotime_events(
            frames, partition, spec,
            options=TwotimeOptions(with_scattering=scat is None, c2_format="upper32"),
            progress=progress, cancel=cancel)
        if scat is None:
            r2, scat = run_tt.twotime, run_tt.scattering
            segments = scat.saxs_1d_segments(10)
        else:
            r2 = run_tt
        c2_maps = r2.c2
        tt = twotime_model(r2, n_frames, t0, stride_frame, avg_frame, common)
    result = assemble_result(qmap, scat, mt=mt, tt=tt, segments=segments,
                             frame_time=frame_time, record=record)
    if scattering_group > 1:
        # one point per row of frames: the x axis of the trace is its first frame
        itime = result.intensity_vs_time[1]
        result.intensity_vs_time = np.vstack(
            [np.arange(itime.size, dtype=np.float64) * scattering_group, itime])
    return CorrelatedResult(result, scat.mean_image(), c2_maps)
