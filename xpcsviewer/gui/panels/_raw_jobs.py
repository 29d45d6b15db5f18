"""Worker jobs of the Raw tab (Qt-free; the panel and its widgets are in ``raw.py`` and
``_raw_views.py``).

Every read of a raw file runs here, in a worker: opening the source, the frames and
frame ranges shown, the inspection pass (:func:`xpcsviewer.jobs.inspect.inspect_source`),
pixel and ROI traces and their power spectra. The frame reads of one source share one
opened reader (:class:`RawHandle`): a Rigaku 3M set or an ESRF series is opened once,
not at every frame the slider asks for.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "FRAME_HOWS",
    "MAP_KINDS",
    "ImageData",
    "RawHandle",
    "SourceInfo",
    "TraceData",
    "bin_overlays",
    "bin_trace_job",
    "bins_box",
    "display_values",
    "exclusion_ranges",
    "findings_mask",
    "frame_job",
    "inspect_job",
    "map_job",
    "merge_ranges",
    "open_source_job",
    "pixel_trace_job",
    "roi_pixels",
    "save_findings_job",
]

#: How a frame range is shown: one frame, or the sum / mean / max of frames first..last.
FRAME_HOWS = ("one", "sum", "mean", "max")
#: The per-pixel maps of an inspection the image view shows.
MAP_KINDS = ("flux", "max", "cap")
#: Colours of the bins' colour overlay (bin v takes colour (v - 1) % len + 1).
N_BIN_COLOURS = 12


@dataclass(frozen=True)
class SourceInfo:
    """What the tab needs to know of an opened raw source (made in a worker)."""

    path: str
    layout: str
    layout_text: str
    shape: tuple[int, int]
    n_frames: int
    frame_time: float | None  #: the file's own (None: it stores none)
    n_events: int | None  #: stored hits of a sparse source (None: dense frames)
    qmap: Any | None  #: the q-map read from ``qmap_path`` (None: none chosen)
    qmap_path: str | None
    outline: np.ndarray | None  #: (H, W) uint8, 1 on the dynamic bins' edges
    colour: np.ndarray | None  #: (H, W) uint8, 0 outside the bins, 1..12 a bin's colour
    note: str = ""  #: why a q-map beside the source was left out
    box: tuple[int, int, int, int] | None = None  #: rows r0..r1-1, cols c0..c1-1 of the bins

    @property
    def n_bins(self) -> int:
        return 0 if self.qmap is None else int(self.qmap.n_dynamic)


@dataclass(frozen=True)
class ImageData:
    """A frame, a frame range or a per-pixel map, ready for the image view."""

    what: tuple  #: ("one"|"sum"|"mean"|"max", first, last) or ("map", kind)
    log: bool
    image: np.ndarray  #: (H, W) float64 values (before the log)
    shown: np.ndarray  #: (H, W) the values on the colour scale (log10 or linear)
    pixels: np.ndarray  #: (H, W) uint8 colour indices of the shown values
    levels: tuple[float, float]  #: levels ``pixels`` were made for (shown units)
    histogram: tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class TraceData:
    """Photons per frame of a q-bin, a pixel or a region, with its power spectrum and
    that of a control region (the rest of the detector, or the other q-bins)."""

    label: str  #: e.g. "q-bin 3", "pixel (12, 40)", "ROI 8x6 (48 pixels)"
    what: tuple  #: ("bin", b) | ("pixel", r, c) | ("roi", r0, r1, c0, c1)
    trace: np.ndarray  #: (N,) float64
    control: np.ndarray | None  #: (N,) float64 photons of the control region
    control_label: str
    freq: np.ndarray  #: (M,) Hz (or 1/frame without a frame time)
    power: np.ndarray  #: (M,) relative power of ``trace``
    control_power: np.ndarray | None


class RawHandle:
    """One raw source opened once for the tab's frame reads (thread-safe).

    Reads of one handle take its lock in turn (the readers are not meant for two
    threads at once); a newer request waits at most for one frame read.
    """

    def __init__(self, path: str, bin_time: float | None = None,
                 shape: tuple[int, int] | None = None) -> None:
        self.path = str(path)
        self.bin_time = bin_time
        self.shape = shape
        self.lock = threading.Lock()
        self._source: Any = None
        self._closed = False

    def source(self) -> Any:
        """The opened reader (opened at the first call; call with :attr:`lock` held)."""
        if self._closed:
            raise RuntimeError(f"{self.path}: the source was closed (another one is shown)")
        if self._source is None:
            from xpcsviewer.io.raw.source import open_raw_source

            self._source = open_raw_source(self.path, shape=self.shape,
                                           bin_time=self.bin_time)
        return self._source

    def close(self) -> None:
        """Close the reader (waits for a read in progress)."""
        with self.lock:
            self._closed = True
            if self._source is not None:
                self._source.close()
                self._source = None


def bin_overlays(dynamic_map: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two drawings of the dynamic bins over a frame.

    Returns
    -------
    outline : (H, W) uint8
        1 on a pixel of a bin with one of its four neighbours in another bin (or
        outside the bins), 0 elsewhere.
    colour : (H, W) uint8
        0 outside the bins, else ``(v - 1) % 12 + 1`` for bin ``v``.
    """
    m = np.asarray(dynamic_map)
    inside = m > 0
    edge = np.zeros(m.shape, bool)
    edge[:, :-1] |= m[:, :-1] != m[:, 1:]
    edge[:-1, :] |= m[:-1, :] != m[1:, :]
    edge[:, 1:] |= m[:, 1:] != m[:, :-1]
    edge[1:, :] |= m[1:, :] != m[:-1, :]
    outline = (edge & inside).astype(np.uint8)
    colour = np.zeros(m.shape, np.uint8)
    colour[inside] = ((m[inside].astype(np.int64) - 1) % N_BIN_COLOURS + 1).astype(np.uint8)
    return outline, colour


def _frame_time_of(src: Any, path: str) -> float | None:
    """The source's own frame time: a sparse reader's, or stored beside dense frames."""
    if getattr(src, "sparse", False):
        return src.frame_time
    from pathlib import Path

    from xpcsviewer.jobs._correlate_inputs import raw_times

    return raw_times(Path(path))[0]


def open_source_job(handle: RawHandle, qmap_path: str | None, strict: bool = False,
                    progress=None, cancel=None) -> SourceInfo:
    """Open ``handle``'s source with the q-map ``qmap_path`` and say what it is.

    Without a q-map the one beside the source is tried, ``NAME_qmap.h5``
    (:func:`xpcsviewer.io.classify.qmap_beside`; not any q-map of its folder: a folder
    of acquisitions holds several of one shape). A q-map the user did not choose
    (``strict`` False) that cannot be read or does not fit the detector is left out
    (:attr:`SourceInfo.note` says why); a chosen one that does not fit is an error.

    Raises
    ------
    XpcsFileError
        The source cannot be read; with ``strict``, the q-map cannot be read or does not
        fit the source's detector.
    """
    from xpcsviewer.io.errors import XpcsFileError
    from xpcsviewer.io.results.reader import read_qmap
    from xpcsviewer.progress import report

    if not qmap_path:
        from xpcsviewer.io.classify import qmap_beside

        report(progress, cancel, 0, 3, "looking for a q-map beside the source")
        p = qmap_beside(handle.path)
        qmap_path, strict = (None if p is None else str(p)), False
    qmap, note = None, ""
    if qmap_path:
        report(progress, cancel, 1, 3, "reading the q-map")
        try:
            qmap = read_qmap(qmap_path)
        except XpcsFileError as exc:
            if strict:
                raise
            note = f"q-map {os.path.basename(qmap_path)} left out: {exc}"
    report(progress, cancel, 2, 3, "opening the raw source")
    with handle.lock:
        handle.shape = None if qmap is None else tuple(qmap.shape)
        try:
            src = handle.source()
        except XpcsFileError:
            if qmap is None or strict:
                raise
            handle.shape = None  # a shape from a q-map that is another detector's
            src = handle.source()
        shape = tuple(int(n) for n in src.shape[1:])
        if qmap is not None and tuple(qmap.shape) != shape:
            why = (f"the q-map is {qmap.shape[0]}x{qmap.shape[1]} but the frames of "
                   f"{os.path.basename(handle.path)} are {shape[0]}x{shape[1]}")
            if strict:
                raise XpcsFileError(qmap_path, why, "/qmap",
                                    "a q-map of the raw source's detector shape")
            note = f"q-map {os.path.basename(qmap_path)} left out: {why}"
            qmap = None
        n_events = src.n_events if getattr(src, "sparse", False) else None
        frame_time = _frame_time_of(src, handle.path)
        layout, text, n = str(src.layout), str(src.layout_text), int(src.n_frames)
    outline = colour = box = None
    if qmap is not None:
        outline, colour = bin_overlays(qmap.dynamic_roi_map)
        box = bins_box(qmap.dynamic_roi_map)
    report(progress, cancel, 3, 3, "opened")
    return SourceInfo(handle.path, layout, text, shape, n, frame_time, n_events, qmap,
                      qmap_path if qmap is not None else None, outline, colour, note, box)


def bins_box(dynamic_map: np.ndarray) -> tuple[int, int, int, int] | None:
    """(r0, r1, c0, c1): the rows r0..r1-1 and columns c0..c1-1 holding the dynamic bins
    (None: no bin), where the frame view opens."""
    inside = np.asarray(dynamic_map) > 0
    rows, cols = np.flatnonzero(inside.any(axis=1)), np.flatnonzero(inside.any(axis=0))
    if not rows.size:
        return None
    return int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1


def display_values(values: np.ndarray, log: bool) -> tuple[np.ndarray, tuple[float, float]]:
    """The values an image shows and their levels.

    Photon counts are mostly 0 and 1: on the log scale a pixel without counts sits a
    decade below the lowest positive value (not at it, as ``log_image`` puts it), and the
    lower level lies below the lowest count, so single photons stand out from empty
    pixels. Levels come from the pixels with counts (1-99.9 percentiles); the linear
    scale starts at 0.
    """
    from xpcsviewer.views.display_image import auto_levels

    a = np.asarray(values, dtype=np.float64)
    pos = np.isfinite(a) & (a > 0)
    if not pos.any():
        return (np.zeros_like(a) if log else a), (0.0, 1.0)
    if log:
        low = float(np.log10(a[pos].min()))
        shown = np.full(a.shape, low - 1.0)
        shown[pos] = np.log10(a[pos])
        lo, hi = auto_levels(shown, 1.0, 99.9, mask=pos)
        lo = min(lo, low) - 0.25
    else:
        shown = a
        lo, hi = 0.0, auto_levels(a, 1.0, 99.9, mask=pos)[1]
    return shown, (lo, hi if hi > lo else lo + 1.0)


def _display(values: np.ndarray, log: bool, what: tuple) -> ImageData:
    from xpcsviewer.views.display_image import image_histogram, quantize_image

    shown, (lo, hi) = display_values(values, log)
    return ImageData(what, log, values, shown, quantize_image(shown, lo, hi), (lo, hi),
                     image_histogram(shown))


def frame_job(handle: RawHandle, first: int, last: int, how: str, log: bool,
              progress=None, cancel=None) -> ImageData:
    """Frame ``first`` (``how="one"``) or the sum / mean / max of frames first..last,
    from the events of those frames only for a sparse source, ready to show."""
    from xpcsviewer.jobs.inspect import frame_image

    if how not in FRAME_HOWS:
        raise ValueError(f"how must be one of {FRAME_HOWS}, got {how!r}")
    first, last = int(first), int(last)
    if how == "one":
        last = first
    with handle.lock:
        img = frame_image(handle.source(), first, last, how, progress=progress,
                          cancel=cancel)
    return _display(img, log, (how, first, last))


def map_job(values: np.ndarray, kind: str, log: bool, progress=None,
            cancel=None) -> ImageData:
    """A per-pixel map of the inspection (``kind`` of :data:`MAP_KINDS`), ready to show."""
    return _display(np.asarray(values, dtype=np.float64), log, ("map", kind))


def inspect_job(path: str, qmap: Any, frame_time: float | None, bin_time: float | None,
                mask: np.ndarray | None, progress=None, cancel=None) -> Any:
    """The inspection pass over the whole run (:func:`~xpcsviewer.jobs.inspect.inspect_source`)."""
    from xpcsviewer.jobs.inspect import inspect_source

    return inspect_source(path, qmap=qmap, frame_time=frame_time, bin_time=bin_time,
                          mask=mask, progress=progress, cancel=cancel)


def _spectrum(trace: np.ndarray, frame_time: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Power spectrum of the relative fluctuation ``trace / mean - 1`` (so a region and
    its control compare whatever their photon counts)."""
    from xpcsviewer.compute.rawstats.spectrum import power_spectrum

    t = np.asarray(trace, dtype=np.float64)
    mean = float(t.mean()) if t.size else 0.0
    rel = t / mean - 1.0 if mean > 0 else t - mean
    return power_spectrum(rel, frame_time)


def _trace_data(label: str, what: tuple, trace: np.ndarray, control: np.ndarray | None,
                control_label: str, frame_time: float | None, cancel=None) -> TraceData:
    freq, power = _spectrum(trace, frame_time)
    if cancel is not None:
        cancel.raise_if_cancelled()
    cpower = None if control is None else _spectrum(control, frame_time)[1]
    return TraceData(label, what, np.asarray(trace, dtype=np.float64), control,
                     control_label, freq, power, cpower)


def bin_trace_job(inspection: Any, q_bin: int, progress=None, cancel=None) -> TraceData:
    """Photons per frame of dynamic q-bin ``q_bin`` (1-based) against the other bins."""
    bp = inspection.bin_photons
    if bp is None:
        raise ValueError("no q-map: the photons per q-bin are not known")
    n = bp.shape[1]
    if not 1 <= q_bin <= n:
        raise ValueError(f"q-bin {q_bin} is not one of 1..{n}")
    trace = bp[:, q_bin - 1].astype(np.float64)
    control = None
    if n > 1:
        control = bp.sum(axis=1, dtype=np.float64) - trace
    return _trace_data(f"q-bin {q_bin}", ("bin", q_bin), trace, control, "the other q-bins",
                       inspection.frame_time, cancel)


def roi_pixels(r0: int, r1: int, c0: int, c1: int, shape: tuple[int, int],
               mask: np.ndarray | None = None) -> list[tuple[int, int]]:
    """(row, col) of the valid pixels of rows r0..r1-1 and columns c0..c1-1 (clipped to
    the detector; ``mask`` True = valid)."""
    h, w = shape
    r0, r1 = max(0, int(r0)), min(h, int(r1))
    c0, c1 = max(0, int(c0)), min(w, int(c1))
    if r1 <= r0 or c1 <= c0:
        return []
    rr, cc = np.mgrid[r0:r1, c0:c1]
    keep = np.ones(rr.shape, bool) if mask is None else np.asarray(mask, bool)[r0:r1, c0:c1]
    return list(zip(rr[keep].tolist(), cc[keep].tolist(), strict=True))


def pixel_trace_job(path: str, what: tuple, mask: np.ndarray | None,
                    source: tuple[float | None, float | None, tuple[int, int]],
                    photons: np.ndarray | None, progress=None, cancel=None) -> TraceData:
    """Counts per frame of one pixel (``what`` = ("pixel", r, c)) or of the valid pixels
    of a region (("roi", r0, r1, c0, c1); ``mask`` True = valid); ``source`` is the
    (bin time, frame time, detector shape) of ``path``; ``photons`` (the inspection's
    photons per frame), when known, makes the control: the other pixels."""
    from xpcsviewer.jobs.inspect import pixel_trace

    bin_time, frame_time, det_shape = source
    if what[0] == "pixel":
        pixels = [(int(what[1]), int(what[2]))]
        label = f"pixel ({what[1]}, {what[2]})"
    else:
        pixels = roi_pixels(*what[1:5], det_shape, mask)
        label = (f"ROI rows {what[1]}..{what[2] - 1}, cols {what[3]}..{what[4] - 1} "
                 f"({len(pixels)} pixels)")
    if not pixels:
        raise ValueError(f"{label}: no valid pixel in the region")
    trace = np.asarray(pixel_trace(path, pixels, bin_time=bin_time, shape=det_shape,
                                   progress=progress, cancel=cancel), dtype=np.float64)
    control = None
    if photons is not None and len(photons) == len(trace):
        control = np.asarray(photons, dtype=np.float64) - trace
    return _trace_data(label, what, trace, control, "the other pixels", frame_time, cancel)


def findings_mask(findings: list, shape: tuple[int, int]) -> np.ndarray:
    """(H, W) bool, True on the pixels of ``findings`` (those inside the detector)."""
    sel = np.zeros(shape, bool)
    for f in findings:
        for r, c in f.pixels:
            if 0 <= r < shape[0] and 0 <= c < shape[1]:
                sel[r, c] = True
    return sel


def merge_ranges(ranges) -> list[tuple[int, int]]:
    """Inclusive (first, last) frame ranges, sorted, overlapping and touching ones joined."""
    out: list[list[int]] = []
    for a, b in sorted((int(a), int(b)) for a, b in ranges):
        if out and a <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def exclusion_ranges(findings: list, n_frames: int) -> list[tuple[int, int]]:
    """The frames of ``findings`` that can be left out of a correlation: those of the
    findings that do not span the whole run (a hot pixel's frames are all of them)."""
    ranges = [tuple(f.frames) for f in findings
              if not (f.frames[0] <= 0 and f.frames[1] >= n_frames - 1)]
    return merge_ranges(ranges)


def save_findings_job(dest: str, inspection: Any, progress=None, cancel=None) -> str:
    """Write the findings as ``xpcsviewer inspect -o`` does (JSON or CSV, atomically)."""
    from xpcsviewer.jobs.inspect import write_findings

    write_findings(dest, inspection)
    return str(dest)
