"""Look at a raw source itself (issue 45): its timelines, per-pixel maps and count
distributions in one streaming pass, the faults found in them, and frames or pixel
traces on demand. The job of ``xpcsviewer inspect`` and of the Raw tab's workers.

Every layout :func:`~xpcsviewer.io.raw.open_raw_source` reads: dense HDF5 and ``.npy``
(chunks of frames), Rigaku ``.bin`` and 3M, ESRF CSR, ImageD11 and Timepix lists in frames
of a bin time (blocks of hits, read ahead in a thread while the last block is counted).

Memory of :func:`inspect_source`: a few (H, W) maps (the pass's per-pixel state, five
float64 and one int32 per candidate counter cap), one block of hits or a chunk of about
:data:`CHUNK_ELEMENTS` dense values (and the next, read ahead), and the O(N) timelines
(N x (8 bytes x (3 + caps)) plus N x q-bins x 4 bytes). Nothing the size of the run.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.model.raw_inspect import RawInspection
from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = ["CHUNK_ELEMENTS", "CSV_COLUMNS", "SATURATION_NAMES", "counter_caps",
           "feed_chunks", "frame_image", "inspect_source", "pixel_trace", "write_findings"]

#: values per chunk of dense frames (a few frames of a 1M-pixel detector): the chunk's
#: float64 temporaries stay near 64 MB
CHUNK_ELEMENTS = 4 << 20
#: the findings table's columns (``inspect -o findings.csv``)
CSV_COLUMNS = ("kind", "first_frame", "last_frame", "n_pixels", "pixels", "frequency_hz",
               "q_bin", "detail")
#: where a dense file states the count at which its pixels saturate: an attribute of the
#: frame dataset, or one of these datasets (NeXus NXdetector, Eiger's detectorSpecific)
SATURATION_NAMES = ("/entry/instrument/detector/saturation_value",
                    "/entry/instrument/detector_1/saturation_value",
                    "/entry/instrument/detector/detectorSpecific/saturation_value",
                    "/entry/instrument/detector/detectorSpecific/countrate_correction_count_cutoff")


# ----------------------------------------------------------------------------- opening
#: hits per block of the inspection's pass: smaller than the correlator's blocks (whose
#: per-block cost is larger), so that a block, its decoding and its candidate marks stay
#: a few tens of MB (the per-pixel maps are then most of the memory)
INSPECT_EVENTS = 1 << 20


def _qmap_of(qmap: Any) -> Any:
    if qmap is None or not isinstance(qmap, (str, os.PathLike)):
        return qmap
    from xpcsviewer.jobs._correlate_inputs import load_qmap

    return load_qmap(qmap)


def _open(path: str | os.PathLike, shape: tuple[int, int] | None,
          bin_time: float | None) -> Any:
    from xpcsviewer.io.raw import open_raw_source

    src = open_raw_source(path, shape=shape, bin_time=bin_time)
    if getattr(src, "time_tag", False):
        src.close()
        raise ValueError(f"{path}: an event list is inspected in frames of a bin time "
                         "(--bin-time S); one frame per detector tick would make "
                         "timelines of every tick")
    return src


def _saturation(src: Any) -> int | None:
    """The saturation count a dense HDF5 file states, or None."""
    if getattr(src, "dataset_path", None) is None or src.layout != "hdf5":
        return None
    from xpcsviewer.io._h5 import open_h5

    try:
        with open_h5(src.path) as f:
            ds = f.get(src.dataset_path)
            cands = [ds.attrs.get("saturation_value")] if ds is not None else []
            for name in SATURATION_NAMES:
                obj = f.get(name)
                if obj is not None and getattr(obj, "shape", None) in ((), (1,)):
                    cands.append(obj[()])
    except (OSError, XpcsFileError):
        return None
    for c in cands:
        try:
            v = float(np.asarray(c).reshape(-1)[0])
        except (TypeError, ValueError, IndexError):
            continue
        if np.isfinite(v) and v > 0:
            return int(v)
    return None


def counter_caps(src: Any, counter_cap: int | None) -> tuple[tuple[int, ...], int | None]:
    """(caps to count in the pass, the cap when known before it) of a source.

    ``counter_cap`` given: that one. Dense integer frames: the file's saturation value,
    else the dtype's largest value. Sparse integer counts: the Rigaku modes' caps (the
    cap is inferred after the pass). Float counts: none.
    """
    from xpcsviewer.compute.rawstats.accumulate import CAP_LEVELS

    if counter_cap is not None:
        if int(counter_cap) < 1:
            raise ValueError(f"--cap must be >= 1 (got {counter_cap})")
        return (int(counter_cap),), int(counter_cap)
    dt = np.dtype(getattr(src, "count_dtype", getattr(src, "dtype", np.float64)))
    if getattr(src, "avg", 1) != 1 or dt.kind not in "iu":
        return (), None
    if getattr(src, "sparse", False):
        return CAP_LEVELS, None
    sat = _saturation(src)
    cap = sat if sat is not None else int(np.iinfo(dt).max)
    return (cap,), cap


def _frame_time(src: Any, path: Any, frame_time: float | None) -> float | None:
    if frame_time is not None:
        if not (float(frame_time) > 0):
            raise ValueError(f"--frame-time must be > 0 (got {frame_time})")
        return float(frame_time)
    if getattr(src, "sparse", False):
        return src.frame_time
    from xpcsviewer.jobs._correlate_inputs import raw_times

    return raw_times(Path(path))[0]


def _valid(src: Any, qm: Any, mask: np.ndarray | None) -> np.ndarray | None:
    shape = tuple(src.frame_shape)
    if mask is not None:
        m = np.asarray(mask, dtype=bool)
        if m.shape != shape:
            raise ValueError(f"mask of {m.shape[0]}x{m.shape[1]} for frames of "
                             f"{shape[0]}x{shape[1]}")
        return m
    if qm is not None:
        return np.asarray(qm.mask) > 0
    if src.layout == "rigaku-3m":  # the gaps between modules never see a photon
        from xpcsviewer.io.raw.rigaku import GAP_COLS, GAP_ROWS, MODULE_SHAPE

        m = np.zeros(shape, dtype=bool)
        for k in range(6):
            r0 = (k // 2) * (MODULE_SHAPE[0] + GAP_ROWS)
            c0 = (k % 2) * (MODULE_SHAPE[1] + GAP_COLS)
            m[r0:r0 + MODULE_SHAPE[0], c0:c0 + MODULE_SHAPE[1]] = True
        return m
    return None


# ----------------------------------------------------------------------------- the pass
def feed_chunks(src: Any, add: Any, progress: ProgressCallback | None,
                cancel: CancelToken | None) -> None:
    """Dense frames of ``src`` to ``add(first frame, chunk)`` in chunks of about
    :data:`CHUNK_ELEMENTS` values, the next read ahead in a thread."""
    from xpcsviewer.model.events import prefetched

    h, w = src.frame_shape
    n = int(src.n_frames)
    chunks = prefetched(src.iter_chunks(max(1, CHUNK_ELEMENTS // max(1, h * w))))
    try:
        a = 0
        for chunk in chunks:
            add(a, chunk)
            a += chunk.shape[0]
            report(progress, cancel, a, n, f"frame {a} of {n}")
    finally:
        chunks.close()


def inspect_source(path: str | os.PathLike, *, qmap: Any = None,
                   frame_time: float | None = None, bin_time: float | None = None,
                   counter_cap: int | None = None, mask: np.ndarray | None = None,
                   progress: ProgressCallback | None = None,
                   cancel: CancelToken | None = None) -> RawInspection:
    """One streaming pass over the raw source at ``path``: timelines, per-pixel maps,
    P(k) per q-bin and the faults found in them.

    Parameters
    ----------
    path : path
        Any raw source :func:`~xpcsviewer.io.raw.open_raw_source` reads.
    qmap : path or QMap, optional
        Its q-bins give per-bin photons and P(k), and the hot/dead levels; its mask the
        valid pixels. None: every pixel valid (a Rigaku 3M's gaps excepted), pixel levels
        from each pixel's neighbourhood.
    frame_time : float, optional
        Seconds per frame (else the file's; None: unknown, no Hz nor flux).
    bin_time : float, optional
        Seconds per frame of an event list (required for Timepix).
    counter_cap : int, optional
        Counts at which a pixel saturates (else see :func:`counter_caps`).
    mask : (H, W) bool, optional
        Valid pixels (True), instead of the q-map's mask.
    progress, cancel
        ``progress(frames done, frames, message)``; ``cancel`` checked between blocks.

    Raises
    ------
    XpcsFileError
        Unreadable source or q-map, or a q-map of another detector shape.
    ValueError
        A bad option (a bin time for dense frames, a Timepix list without one, ...).
    Cancelled
        Through ``cancel``.
    """
    from xpcsviewer.compute.rawstats.accumulate import RawStatsAccumulator, infer_cap
    from xpcsviewer.compute.rawstats.faults import find_faults
    from xpcsviewer.model.events import prefetched

    qm = _qmap_of(qmap)
    src = _open(path, None if qm is None else tuple(qm.shape), bin_time)
    with src:
        shape = tuple(int(s) for s in src.frame_shape)
        if qm is not None and tuple(qm.shape) != shape:
            raise XpcsFileError(path, f"frames are {shape[0]}x{shape[1]} but the q-map is "
                                f"{qm.shape[0]}x{qm.shape[1]}", src.dataset_path,
                                "frames of the q-map's detector shape")
        ft = _frame_time(src, path, frame_time)
        caps, cap = counter_caps(src, counter_cap)
        n = int(src.n_frames)
        acc = RawStatsAccumulator(shape, n, valid=_valid(src, qm, mask),
                                  bins=None if qm is None else qm.dynamic_roi_map, caps=caps)
        report(progress, cancel, 0, n, "reading")
        if getattr(src, "sparse", False):
            blocks = prefetched(src.iter_events(max_events=INSPECT_EVENTS))
            try:
                for blk in blocks:
                    acc.add_hits(blk.frame, blk.pixel, blk.value)
                    report(progress, cancel, int(blk.stop), n, f"frame {blk.stop} of {n}")
            finally:
                blocks.close()
            if cap is None and caps:
                cap = infer_cap(acc.max_count, caps)
        else:
            feed_chunks(src, acc.add_frames, progress, cancel)
        report(progress, cancel, n, n, "looking for faults")
        stats = acc.finish(cap)
        findings = find_faults(stats, ft)
        return RawInspection(
            path=str(path), layout=str(src.layout), detector_shape=shape, n_frames=n,
            frame_time=ft, counter_cap=cap, photons=stats.photons,
            hit_pixels=stats.hit_pixels, at_cap=stats.at_cap, n_valid=stats.n_valid,
            bin_photons=stats.bin_photons, pixel_sum=stats.pixel_sum,
            pixel_max=stats.pixel_max, pixel_cap_frames=stats.pixel_cap_frames,
            count_hist=stats.count_hist, findings=findings)


# ----------------------------------------------------------------------------- on demand
def _source(source_or_path: Any, bin_time: float | None,
            shape: tuple[int, int] | None) -> tuple[Any, bool]:
    if isinstance(source_or_path, (str, os.PathLike)):
        return _open(source_or_path, shape, bin_time), True
    return source_or_path, False


def frame_image(source_or_path: Any, first: int, last: int | None = None,
                how: str = "one", *, bin_time: float | None = None,
                shape: tuple[int, int] | None = None,
                progress: ProgressCallback | None = None,
                cancel: CancelToken | None = None) -> np.ndarray:
    """(H, W) float64: frame ``first`` (``how="one"``), or the ``"sum"``, ``"mean"`` or
    ``"max"`` of frames ``[first, last]``. A sparse source reads only the hits of those
    frames (its frame index is searched); a dense one only those frames, a chunk at a
    time. ``shape``: the detector shape, for a path of a layout that stores none."""
    if how not in ("one", "sum", "mean", "max"):
        raise ValueError(f"how must be one, sum, mean or max (got {how!r})")
    src, owned = _source(source_or_path, bin_time, shape)
    try:
        n = int(src.n_frames)
        a = int(first)
        b = a if how == "one" or last is None else int(last)
        if not (0 <= a <= b < n):
            raise ValueError(f"frames {a}..{b} are not within the source's 0..{n - 1}")
        h, w = src.frame_shape
        out = np.zeros((h, w), dtype=np.float64)
        if how == "max":
            out[:] = -np.inf
        step = max(1, CHUNK_ELEMENTS // max(1, h * w))
        for s in range(a, b + 1, step):
            e = min(b + 1, s + step)
            x = src.read(s, e)
            if how == "max":
                np.maximum(out, x.max(axis=0), out=out)
            else:
                out += x.sum(axis=0, dtype=np.float64)
            report(progress, cancel, e - a, b + 1 - a, f"frame {e - 1}")
        if how == "mean":
            out /= b + 1 - a
        return out
    finally:
        if owned:
            src.close()


def pixel_trace(source_or_path: Any, pixels: Any, *, bin_time: float | None = None,
                shape: tuple[int, int] | None = None,
                progress: ProgressCallback | None = None,
                cancel: CancelToken | None = None) -> np.ndarray:
    """(N,) float64: the summed counts per frame of the (row, col) ``pixels`` (one pair,
    or a list of them: an ROI), in one pass (hits of other pixels are dropped as each
    block passes)."""
    from xpcsviewer.model.events import prefetched

    rc = np.asarray(pixels, dtype=np.int64).reshape(-1, 2)
    src, owned = _source(source_or_path, bin_time, shape)
    try:
        h, w = src.frame_shape
        if rc.size == 0 or np.any((rc[:, 0] < 0) | (rc[:, 0] >= h) | (rc[:, 1] < 0)
                                  | (rc[:, 1] >= w)):
            raise ValueError(f"pixels must be (row, col) within {h}x{w}")
        flat = np.unique(rc[:, 0] * w + rc[:, 1])
        n = int(src.n_frames)
        out = np.zeros(n, dtype=np.float64)
        if getattr(src, "sparse", False):
            blocks = prefetched(src.iter_events())
            try:
                for blk in blocks:
                    p = np.asarray(blk.pixel, dtype=np.int64)
                    at = np.searchsorted(flat, p)
                    hit = (at < flat.size) & (flat[np.minimum(at, flat.size - 1)] == p)
                    np.add.at(out, np.asarray(blk.frame, dtype=np.int64)[hit],
                              np.asarray(blk.value, dtype=np.float64)[hit])
                    report(progress, cancel, int(blk.stop), n, f"frame {blk.stop}")
            finally:
                blocks.close()
        else:
            r, c = np.divmod(flat, w)
            step = max(1, CHUNK_ELEMENTS // max(1, h * w))
            a = 0
            for chunk in src.iter_chunks(step):
                out[a:a + chunk.shape[0]] = chunk[:, r, c].sum(axis=1, dtype=np.float64)
                a += chunk.shape[0]
                report(progress, cancel, a, n, f"frame {a}")
        return out
    finally:
        if owned:
            src.close()


# ----------------------------------------------------------------------------- output
def _csv_rows(inspection: RawInspection) -> list[list[Any]]:
    rows: list[list[Any]] = [list(CSV_COLUMNS)]
    for f in inspection.findings:
        d = f.as_dict()
        rows.append([d["kind"], d["frames"][0], d["frames"][1], len(d["pixels"]),
                     ";".join(f"{r}:{c}" for r, c in d["pixels"]),
                     "" if d["frequency_hz"] is None else f"{d['frequency_hz']:.9g}",
                     "" if d["q_bin"] is None else d["q_bin"], d["detail"]])
    return rows


def write_findings(path: str | os.PathLike, inspection: RawInspection) -> Path:
    """The findings as ``.json`` (``{"findings": [...]}``, the contract of
    :meth:`RawInspection.findings_json`) or ``.csv`` (:data:`CSV_COLUMNS`; pixels as
    ``r:c;r:c``), written atomically (a temporary file, then renamed)."""
    from xpcsviewer.io.outputs import atomic_path

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".json", ".csv"):
        raise ValueError(f"{path}: findings are written as .json or .csv")
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as fh:
        if suffix == ".json":
            json.dump(inspection.findings_json(), fh, indent=1)
            fh.write("\n")
        else:
            csv.writer(fh).writerows(_csv_rows(inspection))
    return path
