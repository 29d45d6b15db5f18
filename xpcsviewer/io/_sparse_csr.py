"""Compressed-sparse-row frames in HDF5: ESRF ID10 sparse blocks and ImageD11 (ID11).

ESRF ID10 (:class:`EsrfCsr`): the beamline writes the Eiger's photons as CSR, one file
per block of frames (``..._sparse_frame_0_00000.h5``, ``..._00001.h5``, ...), each with

- ``entry_0000/measurement/data/frame_ptr``: n_frames + 1 offsets (0 first, non-decreasing,
  last = number of hits);
- ``entry_0000/measurement/data/index``: flat pixel ``row * W + col`` of each hit;
- ``entry_0000/measurement/data/intensity``: its count (any numeric dtype).

A path to any block, or to a folder holding one series, stands for the whole series
(same prefix, numeric suffix, consecutive from the lowest); frames are concatenated.
The detector shape is an attribute ``shape``/``frame_shape`` or ``nrows``/``ncols`` of
the data group, else the caller's (from the q-map).

ImageD11 (:class:`Id11Sparse`): a group (the root or up to two levels down, e.g.
``1.1``) with 1-D ``nnz`` (hits per frame), ``row``, ``col``, ``intensity`` and the
attributes ``shape0``/``shape1`` (rows, cols) when present.

The offsets (``frame_ptr``, the cumulative ``nnz``) are read once at open; hits are read
by range with h5py slices. Only numpy and h5py.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from xpcsviewer.io._h5 import (
    _read_error,
    check_declared,
    local_dataset,
    open_h5_file,
    read_array,
)
from xpcsviewer.io._sparse_util import attr, check_pixels, detector_shape, find_groups
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.sparse import SparseSource

__all__ = [
    "ESRF_GROUP",
    "ID11_NAMES",
    "EsrfCsr",
    "Id11Sparse",
    "esrf_series",
    "esrf_series_in_folder",
]

ESRF_GROUP = "entry_0000/measurement/data"
ID11_NAMES = ("nnz", "row", "col", "intensity")
_H5_EXT = (".h5", ".hdf5", ".hdf", ".nxs")
#: a block of a series: NAME_ then a zero-padded number of 4 digits or more (ESRF writes
#: ``..._sparse_frame_0_00000.h5``); ``scan2.h5`` beside ``scan10.h5`` is not a series
_NUMBERED = re.compile(r"^(.*_)(\d{4,})(\.[^.]+)$")
#: block files kept open at once (a series can have hundreds)
_OPEN_FILES = 4


def _is_esrf_block(p: Path) -> bool:
    try:
        from xpcsviewer.io._h5links import may_exist, pointers_ok

        with h5py.File(p, "r", locking=False) as f:
            if not pointers_ok(f):  # a lookup could follow a link to a FIFO: the reader says
                return may_exist(f, f"{ESRF_GROUP}/frame_ptr")
            return isinstance(f.get(f"{ESRF_GROUP}/frame_ptr"), h5py.Dataset)
    except (OSError, RuntimeError, ValueError, KeyError):
        return False


def _series_of(path: Path) -> list[Path]:
    """The block files of ``path``'s series in order; a gap is an error."""
    m = _NUMBERED.match(path.name)
    if m is None:
        return [path]
    prefix, digits, ext = m.groups()
    width = r"(\d{" + str(len(digits)) + "})"
    pat = re.compile(re.escape(prefix) + width + re.escape(ext) + "$")
    numbers: dict[int, Path] = {}
    for q in path.parent.iterdir():
        mq = pat.match(q.name)
        if mq and q.is_file() and (q == path or _is_esrf_block(q)):
            numbers.setdefault(int(mq.group(1)), q)
    if int(digits) not in numbers:
        numbers[int(digits)] = path
    lo, hi = min(numbers), max(numbers)
    for n in range(lo, hi + 1):
        if n not in numbers:
            missing = path.with_name(f"{prefix}{n:0{len(digits)}d}{ext}")
            raise XpcsFileError(
                missing, f"block {n} of the series is missing (found {len(numbers)} files "
                f"numbered {lo}..{hi})", None, "consecutive block files from the lowest")
    return [numbers[n] for n in range(lo, hi + 1)]


def esrf_series_in_folder(folder: Path) -> list[Path] | None:
    """The block series an ESRF sparse folder holds, or None when it holds none.

    Raises
    ------
    XpcsFileError
        The folder holds several series (give one of their files).
    """
    groups: dict[tuple[str, str], list[Path]] = {}
    try:
        entries = sorted(folder.iterdir())
    except OSError as exc:
        raise XpcsFileError(folder, f"cannot be listed ({exc.strerror})") from None
    for q in entries:
        m = _NUMBERED.match(q.name)
        if m and m.group(3).lower() in _H5_EXT and q.is_file():
            groups.setdefault((m.group(1), m.group(3)), []).append(q)
    series = [(k, v) for k, v in sorted(groups.items()) if _is_esrf_block(v[0])]
    if not series:
        return None
    if len(series) > 1:
        names = ", ".join(f"{p}NNNNN{e}" for (p, e), _ in series)
        raise XpcsFileError(folder, f"holds {len(series)} sparse block series ({names})",
                            None, "one series; give one of its files")
    return _series_of(series[0][1][0])


def esrf_series(path: str | Path) -> list[Path]:
    """The block files ``path`` (a block, or a folder holding one series) stands for."""
    p = Path(path)
    if p.is_dir():
        files = esrf_series_in_folder(p)
        if files is None:
            raise XpcsFileError(p, "holds no ESRF sparse block files", f"{ESRF_GROUP}/frame_ptr",
                                "files NAME_00000.h5, NAME_00001.h5, ... with CSR frames")
        return files
    if not p.exists():
        from xpcsviewer.io._h5 import _missing_reason

        raise XpcsFileError(p, _missing_reason(p))
    return _series_of(p)


def _int_dataset(f: h5py.File, path: str, expected: str) -> h5py.Dataset:
    ds = local_dataset(f, path, expected)
    if ds.ndim != 1:
        raise XpcsFileError(f.filename, f"has shape {ds.shape}", path, expected)
    if ds.dtype.kind not in "iu":
        raise XpcsFileError(f.filename, f"has dtype {ds.dtype}", path, expected)
    check_declared(ds, expected=expected, max_elements=1 << 62)
    return ds


def _num_dataset(f: h5py.File, path: str, expected: str) -> h5py.Dataset:
    ds = local_dataset(f, path, expected)
    if ds.ndim != 1:
        raise XpcsFileError(f.filename, f"has shape {ds.shape}", path, expected)
    if ds.dtype.kind not in "iuf":
        raise XpcsFileError(f.filename, f"has dtype {ds.dtype}", path, expected)
    check_declared(ds, expected=expected, max_elements=1 << 62)
    return ds


def _slice(ds: h5py.Dataset, a: int, b: int) -> np.ndarray:
    try:
        return np.asarray(ds[a:b])
    except (OSError, RuntimeError, ValueError, TypeError) as exc:
        raise _read_error(ds, exc) from None


class _Block:
    """One ESRF block file: its offsets (read at open) and a lazily opened handle."""

    def __init__(self, path: Path, start: int, ptr: np.ndarray, dtype: np.dtype,
                 shape: Any) -> None:
        self.path = path
        self.start = start
        self.ptr = ptr
        self.n_frames = ptr.size - 1
        self.dtype = dtype
        self.shape = shape


class EsrfCsr(SparseSource):
    """An ESRF ID10 sparse block series (see the module notes).

    Parameters
    ----------
    path : str or Path
        Any block file of the series, or a folder holding one series.
    shape : (int, int), optional
        Detector (rows, cols) for files that store none (from the q-map).
    begin, end, stride, avg : int
        Frame selection, as :class:`~xpcsviewer.io.raw.RawFrames`.

    Raises
    ------
    XpcsFileError
        A missing block, a CSR pointer that does not match its arrays, blocks with
        different shapes, an unknown detector shape, a pixel outside the detector.
    """

    layout = "esrf-csr"

    def __init__(self, path: str | Path, *, shape: tuple[int, int] | None = None,
                 begin: int = 0, end: int | None = -1, stride: int = 1,
                 avg: int = 1) -> None:
        self.path = Path(path)
        self._handles: OrderedDict[Path, h5py.File] = OrderedDict()
        files = esrf_series(self.path)
        self.dataset_path = ESRF_GROUP
        blocks: list[_Block] = []
        start = 0
        total = 0
        for p in files:
            with open_h5_file(p) as f:
                blk = self._read_block(f, p, start)
            blocks.append(blk)
            start += blk.n_frames
            total += int(blk.ptr[-1])
        stored = [b.shape for b in blocks if b.shape is not None]
        if stored and any(np.asarray(s).ravel().tolist() != np.asarray(stored[0]).ravel()
                          .tolist() for s in stored):
            raise XpcsFileError(self.path, "block files state different detector shapes",
                                ESRF_GROUP, "one detector shape in every block")
        self.frame_shape = detector_shape(files[0], stored[0] if stored else None,
                                          ESRF_GROUP, shape)
        self._blocks = blocks
        self._starts = np.array([b.start for b in blocks], dtype=np.int64)
        # global CSR pointer over the series
        parts = [np.zeros(1, np.int64)]
        off = 0
        for b in blocks:
            parts.append(b.ptr[1:] + off)
            off += int(b.ptr[-1])
        self._ptr = np.concatenate(parts)
        self.files = tuple(files)
        self.raw_frames = start
        self.raw_events = total
        self.count_dtype = np.result_type(*[b.dtype for b in blocks])
        self.frame_time = None
        n = len(files)
        self.layout_text = ("ESRF ID10 sparse (CSR) HDF5 frames"
                            + (f", a series of {n} block files" if n > 1 else ""))
        if self.raw_frames < 1:
            raise XpcsFileError(self.path, "holds no frames", f"{ESRF_GROUP}/frame_ptr",
                                "at least one frame")
        self._select(begin, end, stride, avg)

    @staticmethod
    def _read_block(f: h5py.File, p: Path, start: int) -> _Block:
        g = ESRF_GROUP
        ptr_ds = _int_dataset(f, f"{g}/frame_ptr", "n_frames + 1 integer offsets")
        idx_ds = _int_dataset(f, f"{g}/index", "flat pixel indices (integers)")
        int_ds = _num_dataset(f, f"{g}/intensity", "numeric counts")
        ptr = read_array(ptr_ds).astype(np.int64)
        where = f"{g}/frame_ptr"
        expected = "frame_ptr[0] = 0, non-decreasing, last = len(index) = len(intensity)"
        if ptr.size < 1:
            raise XpcsFileError(p, "CSR pointer does not match its arrays: frame_ptr is "
                                "empty", where, expected)
        if ptr[0] != 0:
            raise XpcsFileError(p, f"CSR pointer does not match its arrays: frame_ptr "
                                f"starts at {int(ptr[0])}", where, expected)
        dec = np.flatnonzero(np.diff(ptr) < 0)
        if dec.size:
            k = int(dec[0]) + 1
            raise XpcsFileError(p, f"CSR pointer does not match its arrays: frame_ptr "
                                f"decreases at entry {k} ({int(ptr[k - 1])} -> "
                                f"{int(ptr[k])})", where, expected)
        n_idx, n_int = int(idx_ds.shape[0]), int(int_ds.shape[0])
        if int(ptr[-1]) != n_idx or n_idx != n_int:
            raise XpcsFileError(p, f"CSR pointer does not match its arrays: frame_ptr ends "
                                f"at {int(ptr[-1])}, index has {n_idx} entries, intensity "
                                f"{n_int}", where, expected)
        grp = f[g]
        shape = attr(grp, "shape", "frame_shape")
        if shape is None:
            nr, nc = attr(grp, "nrows"), attr(grp, "ncols")
            if nr is not None and nc is not None:
                shape = (nr, nc)
        return _Block(p, start, ptr, np.dtype(int_ds.dtype), shape)

    def _file(self, p: Path) -> h5py.File:
        f = self._handles.get(p)
        if f is not None:
            self._handles.move_to_end(p)
            return f
        f = open_h5_file(p)
        self._handles[p] = f
        while len(self._handles) > _OPEN_FILES:
            _, old = self._handles.popitem(last=False)
            old.close()
        return f

    def _raw_count(self, a: int, b: int) -> int:
        a, b = max(0, a), min(self.raw_frames, b)
        return int(self._ptr[b] - self._ptr[a]) if b > a else 0

    def _raw_range(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a, b = max(0, a), min(self.raw_frames, b)
        frames, pixels, counts = [], [], []
        h, w = self.frame_shape
        if b > a:
            k = int(np.searchsorted(self._starts, a, side="right")) - 1
            while k < len(self._blocks) and self._blocks[k].start < b:
                blk = self._blocks[k]
                la = max(a, blk.start) - blk.start
                lb = min(b, blk.start + blk.n_frames) - blk.start
                e0, e1 = int(blk.ptr[la]), int(blk.ptr[lb])
                k += 1
                if e1 <= e0:
                    continue
                f = self._file(blk.path)
                idx = _slice(f[f"{ESRF_GROUP}/index"], e0, e1)
                check_pixels(blk.path, idx, h * w, e0, f"{ESRF_GROUP}/index", "pixel index",
                             f"{h} x {w} detector")
                val = _slice(f[f"{ESRF_GROUP}/intensity"], e0, e1)
                frames.append(np.repeat(np.arange(la, lb, dtype=self._frame_dtype) + blk.start,
                                        np.diff(blk.ptr[la: lb + 1])))
                # the pixel index keeps its stored integer type (the consumers take any)
                pixels.append(idx if idx.dtype.kind in "iu" else idx.astype(np.int64))
                counts.append(val.astype(self.count_dtype, copy=False))
        if not frames:
            return (np.empty(0, np.int64), np.empty(0, np.int64),
                    np.empty(0, self.count_dtype))
        if len(frames) == 1:
            return frames[0], pixels[0], counts[0]
        return np.concatenate(frames), np.concatenate(pixels), np.concatenate(counts)

    def close(self) -> None:
        handles = getattr(self, "_handles", None)
        while handles:
            _, f = handles.popitem()
            f.close()


class Id11Sparse(SparseSource):
    """ImageD11 sparse frames (``nnz``, ``row``, ``col``, ``intensity``; module notes).

    Parameters
    ----------
    path : str or Path
        The HDF5 file.
    shape : (int, int), optional
        Detector (rows, cols) when the group has no ``shape0``/``shape1``.
    begin, end, stride, avg : int
        Frame selection, as :class:`~xpcsviewer.io.raw.RawFrames`.
    group : str, optional
        The group to read (default: the first holding the four datasets, in name order).

    Raises
    ------
    XpcsFileError
        No such group, ``sum(nnz)`` not the length of ``row``/``col``/``intensity``,
        negative ``nnz``, an unknown detector shape, a row or column outside the detector.
    """

    layout = "id11-sparse"

    def __init__(self, path: str | Path, *, shape: tuple[int, int] | None = None,
                 begin: int = 0, end: int | None = -1, stride: int = 1, avg: int = 1,
                 group: str | None = None) -> None:
        self.path = Path(path)
        self._h5 = None
        self._h5 = open_h5_file(self.path)
        try:
            self._open(shape, group)
        except XpcsFileError:
            self.close()
            raise
        self._select(begin, end, stride, avg)

    def _open(self, shape: Any, group: str | None) -> None:
        f = self._h5
        groups = find_groups(f, ID11_NAMES)
        if group is not None:
            g = group if group.startswith("/") else "/" + group
            if g not in groups:
                raise XpcsFileError(self.path, "no ImageD11 sparse frames here", g,
                                    "a group with nnz, row, col, intensity")
        elif not groups:
            raise XpcsFileError(self.path, "no ImageD11 sparse frames", "nnz/row/col/intensity",
                                "a group with 1-D nnz, row, col, intensity")
        else:
            g = groups[0]
        base = "" if g == "/" else g
        self.dataset_path = g
        nnz_ds = _int_dataset(f, f"{base}/nnz", "hits per frame (integers)")
        self._row = _int_dataset(f, f"{base}/row", "row of each hit (integers)")
        self._col = _int_dataset(f, f"{base}/col", "column of each hit (integers)")
        self._int = _num_dataset(f, f"{base}/intensity", "numeric counts")
        self._names = {k: f"{base}/{k}" for k in ID11_NAMES}
        nnz = read_array(nnz_ds).astype(np.int64)
        neg = np.flatnonzero(nnz < 0)
        if neg.size:
            k = int(neg[0])
            raise XpcsFileError(self.path, f"negative hit count {int(nnz[k])} for frame {k}",
                                self._names["nnz"], "hits per frame >= 0")
        self._ptr = np.concatenate([np.zeros(1, np.int64), np.cumsum(nnz)])
        total = int(self._ptr[-1])
        lens = {k: int(d.shape[0]) for k, d in
                (("row", self._row), ("col", self._col), ("intensity", self._int))}
        if any(n != total for n in lens.values()):
            listed = ", ".join(f"{k} has {n}" for k, n in lens.items())
            raise XpcsFileError(self.path, f"nnz sum mismatch: sum(nnz) = {total} but "
                                f"{listed}", self._names["nnz"],
                                "sum(nnz) entries in row, col and intensity")
        grp = f[g]
        s0, s1 = attr(grp, "shape0"), attr(grp, "shape1")
        stored = (s0, s1) if s0 is not None and s1 is not None else None
        self.frame_shape = detector_shape(self.path, stored, g, shape)
        self.raw_frames = int(nnz.size)
        if self.raw_frames < 1:
            raise XpcsFileError(self.path, "holds no frames", self._names["nnz"],
                                "at least one frame")
        self.raw_events = total
        self.count_dtype = np.dtype(self._int.dtype)
        self.frame_time = None
        self.files = (self.path,)
        self.layout_text = f"ESRF ID11 ImageD11 sparse frames (group {g})"
        if len(groups) > 1:
            others = [x for x in groups if x != g]
            self.layout_text += "; other groups not read: " + ", ".join(others)

    def _raw_count(self, a: int, b: int) -> int:
        a, b = max(0, a), min(self.raw_frames, b)
        return int(self._ptr[b] - self._ptr[a]) if b > a else 0

    def _raw_range(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a, b = max(0, a), min(self.raw_frames, b)
        if b <= a or self._ptr[b] == self._ptr[a]:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, self.count_dtype)
        e0, e1 = int(self._ptr[a]), int(self._ptr[b])
        h, w = self.frame_shape
        row = _slice(self._row, e0, e1)
        check_pixels(self.path, row, h, e0, self._names["row"], "row", f"{h} x {w} detector")
        col = _slice(self._col, e0, e1)
        check_pixels(self.path, col, w, e0, self._names["col"], "column",
                     f"{h} x {w} detector")
        val = _slice(self._int, e0, e1)
        frame = np.repeat(np.arange(a, b, dtype=self._frame_dtype), np.diff(self._ptr[a: b + 1]))
        pixel = row.astype(np.int64) * w + col.astype(np.int64)
        return frame, pixel, val

    def close(self) -> None:
        if getattr(self, "_h5", None) is not None:
            self._h5.close()
            self._h5 = None
