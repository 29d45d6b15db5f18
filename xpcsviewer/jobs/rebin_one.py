"""Re-correlate one dynamic q-bin of a result from its raw data, with another mask.

Issue 45: on the g2 tab, "recompute this q-bin with this mask". :func:`recompute_bin`
finds the raw source from the result's own record (the multi-tau config the correlate
job writes: the raw path, the frame selection, the normalisation, the delays per level;
an event list's frames from its frame time), reads only what the bin needs and
correlates it with the same settings:

- photons (a sparse source): the hits stream once and those of other pixels are dropped
  block by block, before the photon correlator sorts them;
- dense frames: only the bin's bounding box is read per chunk (an HDF5 hyperslab, the
  pages of a .npy); integer counts of every pixel of the bin (masked or not) are kept
  (up to CACHE_BYTES, the last bin only), so that the same bin with another mask is
  correlated without reading the file again; a sparse source's bin keeps its hits alike.

A dynamic bin's g2 depends on its own pixels only (each static bin lies inside one
dynamic bin), so the bin alone gives the whole job's numbers for it (float64 round-off:
tested to 1e-12). The one exception is ``normalize_frame``: each frame is divided by its
mean over *every* correlated pixel, so that mean is taken over the whole frame (all
hits) under the new mask and applied to the bin's values before they are correlated.
Multi-tau only: the two-time maps are not recomputed here.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.compute.spec import CorrelateSpec, Engine
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.jobs._rebin_streams import bin_stream

__all__ = ["BinRecompute", "RawSourceMissing", "RebinSource", "rebin_source",
           "recompute_bin"]



class RawSourceMissing(XpcsFileError):
    """The raw source a result records is not where it was (moved, another machine):
    give its path (``raw=...``, or the window's file dialog)."""

    def __init__(self, result: str | Path, recorded: str) -> None:
        super().__init__(recorded, f"not found: the raw data of {Path(result).name} "
                         "(recorded in the result) is not there; give its path",
                         "/xpcs/multitau/config/raw", "the raw file the result was made from")
        self.recorded = str(recorded)
        self.result = str(result)


@dataclasses.dataclass(frozen=True)
class RebinSource:
    """What a result records of its raw source and of the multi-tau run.

    ``frame_time``: seconds per raw frame (an event list's bin time when it was read in
    frames); ``time_tag``: an event list correlated per detector tick.
    """

    raw: str
    layout: str
    begin: int
    end: int
    stride: int
    avg: int
    n_frames: int
    raw_frames: int
    frame_time: float
    time_tag: bool
    normalize_frame: bool
    delays_per_level: int


@dataclasses.dataclass(frozen=True)
class BinRecompute:
    """One q-bin correlated anew, beside the result's own curve.

    Attributes
    ----------
    q_bin : int
        1-based dynamic bin.
    tau : (T,) float64
        Delays (s), the result's.
    delay_frames : (T,) int64
    g2, g2_err : (T,) float64
        The new curve (NaN where no pair of frames or no photon gives a value).
    old_g2, old_g2_err : (T,) float64
        The result's curve (NaN where the result marks the point missing).
    n_pixels, n_pixels_before : int
        The bin's correlated pixels with the new mask and with the result's.
    raw : str
        The raw source read.
    path : {"sparse", "dense"}
        Photons or dense frames.
    n_frames : int
    seconds : float
        Wall time of the read and correlation.
    notes : tuple of str
    """

    q_bin: int
    tau: np.ndarray
    delay_frames: np.ndarray
    g2: np.ndarray
    g2_err: np.ndarray
    old_g2: np.ndarray
    old_g2_err: np.ndarray
    n_pixels: int
    n_pixels_before: int
    raw: str
    path: str
    n_frames: int
    seconds: float
    notes: tuple[str, ...] = ()

    @property
    def pixels_removed(self) -> int:
        return self.n_pixels_before - self.n_pixels

    def first_change(self, k: int = 3) -> np.ndarray:
        """g2 new - old at the first ``k`` delays."""
        return (self.g2 - self.old_g2)[:k]


def rebin_source(result: Any) -> RebinSource:
    """The raw source and run settings a result records (its multi-tau config).

    Raises
    ------
    XpcsFileError
        No multi-tau analysis, or a result that records no raw source (not written by
        ``xpcsviewer correlate``).
    """
    mt = getattr(result, "multitau", None)
    where = "/xpcs/multitau/config"
    if mt is None:
        raise XpcsFileError(result.path, "no multi-tau analysis to recompute", "/xpcs/multitau",
                            "a multi-tau result")
    cfg = mt.config or {}
    if not cfg.get("raw"):
        raise XpcsFileError(result.path, "the result records no raw source", f"{where}/raw",
                            "a result written by xpcsviewer correlate (it records its raw "
                            "file and frame selection)")
    try:
        return RebinSource(
            raw=str(cfg["raw"]), layout=str(cfg.get("raw_layout", "dense")),
            begin=int(cfg.get("begin_frame", 0)), end=int(cfg.get("end_frame", -1)),
            stride=int(cfg.get("stride_frame", 1)), avg=int(cfg.get("avg_frame", 1)),
            n_frames=int(cfg["n_frames"]), raw_frames=int(cfg.get("raw_frames", -1)),
            frame_time=float(result.frame_time), time_tag=bool(cfg.get("time_tag", False)),
            normalize_frame=bool(cfg.get("normalize_frame", False)),
            delays_per_level=int(cfg.get("delays_per_level", 4)))
    except (KeyError, TypeError, ValueError) as exc:
        raise XpcsFileError(result.path, f"the raw source's record is incomplete ({exc})",
                            where, "begin/end/stride/avg_frame and n_frames") from None


def _open_raw(src: RebinSource, raw: str | Path | None, result_path: Path, shape: Any) -> Any:
    from xpcsviewer.io.raw import open_raw_source
    from xpcsviewer.io.raw.rigaku import is_3m_stem

    path = Path(raw) if raw is not None else Path(src.raw)
    if raw is None and not (path.exists() or is_3m_stem(path)):
        raise RawSourceMissing(result_path, src.raw)
    bin_time = None
    if src.layout == "timepix" and not src.time_tag:
        bin_time = src.frame_time  # the frames' length is the frame time of the result
    try:
        source = open_raw_source(path, shape=shape, bin_time=bin_time, begin=src.begin,
                                 end=src.end, stride=src.stride, avg=src.avg)
    except ValueError as exc:
        raise XpcsFileError(path, str(exc)) from None
    raw_frames = getattr(source, "raw_frames", src.raw_frames)
    if source.n_frames != src.n_frames or (src.raw_frames >= 0
                                            and raw_frames != src.raw_frames):
        source.close()
        raise XpcsFileError(path, f"{raw_frames} frames ({source.n_frames} selected), but "
                            f"{result_path.name} was correlated from {src.raw_frames} "
                            f"({src.n_frames} selected)", getattr(source, "dataset_path", None),
                            "the raw source the result was made from")
    if tuple(source.frame_shape) != tuple(shape):
        source.close()
        raise XpcsFileError(path, f"frames are {source.frame_shape[0]}x"
                            f"{source.frame_shape[1]}, the result's q-map "
                            f"{shape[0]}x{shape[1]}", getattr(source, "dataset_path", None),
                            "frames of the result's detector")
    return source


def recompute_bin(result_path: str | Path, q_bin: int, mask: np.ndarray, *,
                  raw: str | Path | None = None, progress: Any = None,
                  cancel: Any = None) -> BinRecompute:
    """Correlate dynamic bin ``q_bin`` (1-based) of a result anew from its raw data,
    with ``mask`` ((H, W) bool, True = valid; it replaces the q-map's mask).

    ``raw``: the raw source, where it is no longer at the recorded path.

    Raises
    ------
    RawSourceMissing
        The raw source is not at the path the result records (and no ``raw``).
    XpcsFileError
        A result without multi-tau or raw record; a raw source that is not the one the
        result was made from (frames, detector); bad counts at the bin's pixels.
    ValueError
        A bin outside the q-map, a mask of another shape, a mask that leaves the bin
        no pixel.
    """
    from xpcsviewer.backends import get_backend
    from xpcsviewer.compute.multitau._cpu import available as cpu_kernel_available
    from xpcsviewer.compute.multitau.correlator import correlate_multitau
    from xpcsviewer.compute.options import MultitauOptions
    from xpcsviewer.io.results.reader import read_result
    from xpcsviewer.jobs._correlate_counts import (
        Masked,
        NonFiniteCount,
        nonfinite_event_pixels,
        nonfinite_pixels,
    )

    t_start = time.perf_counter()
    result_path = Path(result_path)
    res = read_result(result_path)
    src = rebin_source(res)
    qm = res.qmap
    q_bin = int(q_bin)
    if not 1 <= q_bin <= qm.n_dynamic:
        raise ValueError(f"q-bin {q_bin} is outside 1..{qm.n_dynamic} of {result_path.name}")
    mask = np.asarray(mask, bool)
    if mask.shape != qm.shape:
        raise ValueError(f"the mask is {mask.shape[0]}x{mask.shape[1]}, the detector of "
                         f"{result_path.name} {qm.shape[0]}x{qm.shape[1]}")
    in_bin = (np.asarray(qm.dynamic_roi_map) == q_bin) & (np.asarray(qm.static_roi_map) > 0)
    n_before = int((in_bin & (np.asarray(qm.mask) > 0)).sum())
    if not (in_bin & mask).any():
        raise ValueError(f"the mask leaves q-bin {q_bin} of {result_path.name} no pixel "
                         f"(it had {n_before})")
    spec = CorrelateSpec(normalize_frame=False)  # the normalisation is applied here
    options = MultitauOptions(delays_per_level=src.delays_per_level)
    # the job's CPU engine (a GPU job's too: one bin is no work for a device)
    engine = Engine.COMPILED if cpu_kernel_available() else Engine.ARRAY
    dense_options = dataclasses.replace(options, backend=get_backend("numpy"))
    notes: list[str] = []
    masked = Masked(qm.shape)
    with _open_raw(src, raw, result_path, qm.shape) as source:
        photons = bool(getattr(source, "sparse", False))
        if photons:
            from xpcsviewer.compute.multitau.photons import available

            photons = available()  # without numba: dense frames formed from the hits
        while True:
            valid = mask & ~masked.pixels
            if not (in_bin & valid).any():
                raise XpcsFileError(source.path, f"NaN or Inf counts at every pixel of q-bin "
                                    f"{q_bin}", getattr(source, "dataset_path", None),
                                    "finite counts")
            stream, part = bin_stream(source, qm, q_bin, valid, src.normalize_frame,
                                      photons, notes, masked, progress, cancel)
            try:
                if photons:
                    from xpcsviewer.compute.multitau.photons import correlate_multitau_events

                    run = correlate_multitau_events(stream, part, spec, options=options,
                                                    progress=progress, cancel=cancel)
                else:
                    run = correlate_multitau(stream, part, spec, options=dense_options,
                                             engine=engine, progress=progress, cancel=cancel)
                break
            except NonFiniteCount:
                found = (nonfinite_event_pixels(source, progress) if photons
                         else nonfinite_pixels(source, progress))
                masked.pixels |= found & mask
                masked.strict = False
    if masked.pixels.any():
        notes.append(f"{int((masked.pixels & in_bin).sum())} pixel(s) of the bin with NaN "
                     "or Inf counts were masked")
    mt = res.multitau
    col = q_bin - 1
    if not np.array_equal(np.asarray(run.delay_frames), np.asarray(mt.delay_frames)):
        raise XpcsFileError(result_path, "its delays are not those of its raw source's "
                            "frames", "/xpcs/multitau/delay_list",
                            "the delays of the recorded frame selection")
    old = np.where(mt.valid[:, col], mt.g2[:, col], np.nan)
    old_err = np.where(mt.valid[:, col], mt.g2_err[:, col], np.nan)
    n_now = int((in_bin & mask & ~masked.pixels).sum())
    return BinRecompute(
        q_bin=q_bin, tau=np.asarray(mt.tau, np.float64), delay_frames=run.delay_frames,
        g2=np.asarray(run.g2[:, col], np.float64), g2_err=np.asarray(run.g2_err[:, col],
                                                                      np.float64),
        old_g2=old, old_g2_err=old_err, n_pixels=n_now, n_pixels_before=n_before,
        raw=os.fspath(raw if raw is not None else src.raw),
        path="sparse" if photons else "dense", n_frames=src.n_frames,
        seconds=time.perf_counter() - t_start, notes=tuple(dict.fromkeys(notes)))
