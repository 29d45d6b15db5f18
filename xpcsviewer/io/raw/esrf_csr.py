"""ESRF ID10 sparse blocks: compressed-sparse-row frames in HDF5.

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

The offsets (``frame_ptr``) are read once at open and checked in their stored type
(:func:`~xpcsviewer.io.raw.util.checked_pointer`: 0 first, non-decreasing, last = the
number of hits; the series' totals are added as Python ints); hits are read by range with
h5py slices. Only numpy and h5py. The layout's names (the group, its three datasets, the
shape attributes, the numbered block files) are here once; the growing-file and
growing-folder readers (:mod:`xpcsviewer.io.raw.live_csr`) use them.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from xpcsviewer.io._h5 import open_h5_file
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.raw.sparse import SparseSource
from xpcsviewer.io.raw.util import (
    attr,
    check_pixels,
    checked_pointer,
    detector_shape,
    int_dataset,
    num_dataset,
    read_slice,
)

__all__ = [
    "CSR_GROUP",
    "CSR_INDEX",
    "CSR_PTR",
    "CSR_VALUE",
    "EsrfCsr",
    "esrf_series",
    "esrf_series_in_folder",
    "stored_shape",
]

#: the data group and its three datasets
CSR_GROUP = "entry_0000/measurement/data"
CSR_PTR = f"{CSR_GROUP}/frame_ptr"
CSR_INDEX = f"{CSR_GROUP}/index"
CSR_VALUE = f"{CSR_GROUP}/intensity"
_H5_EXT = (".h5", ".hdf5", ".hdf", ".nxs")
#: a block of a series: NAME_ then a zero-padded number of 4 digits or more (ESRF writes
#: ``..._sparse_frame_0_00000.h5``); ``scan2.h5`` beside ``scan10.h5`` is not a series
_NUMBERED = re.compile(r"^(.*_)(\d{4,})(\.[^.]+)$")
#: block files kept open at once (a series can have hundreds)
_OPEN_FILES = 4


def stored_shape(grp: h5py.Group) -> Any:
    """The detector shape the data group states (``shape``/``frame_shape``, else
    ``nrows`` and ``ncols``), unchecked, or None."""
    shape = attr(grp, "shape", "frame_shape")
    if shape is None:
        nr, nc = attr(grp, "nrows"), attr(grp, "ncols")
        if nr is not None and nc is not None:
            shape = (nr, nc)
    return shape


def _is_esrf_block(p: Path) -> bool:
    try:
        from xpcsviewer.io._h5links import may_exist, pointers_ok

        with h5py.File(p, "r", locking=False) as f:
            if not pointers_ok(f):  # a lookup could follow a link to a FIFO: the reader says
                return may_exist(f, CSR_PTR)
            return isinstance(f.get(CSR_PTR), h5py.Dataset)
    except (OSError, RuntimeError, ValueError, KeyError):
        return False


def _series_of(path: Path) -> list[Path]:
    """The block files of ``path``'s series in order; a gap is an error. Every file
    named as a block of the series is one (issue 50: a damaged block was left out
    silently, and named "missing" when others followed it): the reader opens each, and
    one that is not a readable ESRF block is an error naming it."""
    m = _NUMBERED.match(path.name)
    if m is None:
        return [path]
    prefix, digits, ext = m.groups()
    width = r"(\d{" + str(len(digits)) + "})"
    pat = re.compile(re.escape(prefix) + width + re.escape(ext) + "$")
    numbers: dict[int, Path] = {}
    for q in path.parent.iterdir():
        mq = pat.match(q.name)
        if mq and q.is_file():
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
            raise XpcsFileError(p, "holds no ESRF sparse block files", CSR_PTR,
                                "files NAME_00000.h5, NAME_00001.h5, ... with CSR frames")
        return files
    if not p.exists():
        from xpcsviewer.io._h5 import _missing_reason

        raise XpcsFileError(p, _missing_reason(p))
    return _series_of(p)


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
        self.dataset_path = CSR_GROUP
        blocks: list[_Block] = []
        start = 0
        total = 0
        for i, p in enumerate(files):
            with open_h5_file(p) as f:
                blk = self._read_block(f, p, start)
            if blk.n_frames == 0 and i < len(files) - 1:
                # the frames of the blocks after it would be shifted onto its own
                raise XpcsFileError(p, f"block {i} of the series holds no frames, and "
                                    f"{len(files) - 1 - i} block(s) follow it", CSR_PTR,
                                    "frames in every block but the last (a lost block "
                                    "would shift the frames after it)")
            blocks.append(blk)
            start += blk.n_frames
            total += int(blk.ptr[-1])
            if total >= 1 << 62:  # exact (Python ints); the global offsets are int64
                raise XpcsFileError(p, f"the series holds {total} hits up to this block",
                                    CSR_INDEX, "fewer than 2**62 hits in all")
        stored = [b.shape for b in blocks if b.shape is not None]
        if stored and any(np.asarray(s).ravel().tolist() != np.asarray(stored[0]).ravel()
                          .tolist() for s in stored):
            raise XpcsFileError(self.path, "block files state different detector shapes",
                                CSR_GROUP, "one detector shape in every block")
        self.frame_shape = detector_shape(files[0], stored[0] if stored else None,
                                          CSR_GROUP, shape)
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
            raise XpcsFileError(self.path, "holds no frames", CSR_PTR,
                                "at least one frame")
        self._select(begin, end, stride, avg)

    @staticmethod
    def _read_block(f: h5py.File, p: Path, start: int) -> _Block:
        ptr_ds = int_dataset(f, CSR_PTR, "n_frames + 1 integer offsets")
        idx_ds = int_dataset(f, CSR_INDEX, "flat pixel indices (integers)")
        int_ds = num_dataset(f, CSR_VALUE, "numeric counts")
        where = CSR_PTR
        expected = "frame_ptr[0] = 0, non-decreasing, last = len(index) = len(intensity)"
        n_idx, n_int = int(idx_ds.shape[0]), int(int_ds.shape[0])
        if n_idx != n_int:
            raise XpcsFileError(p, f"CSR pointer does not match its arrays: index has {n_idx} "
                                f"entries, intensity {n_int}", where, expected)
        ptr = checked_pointer(p, ptr_ds, n_idx, where, expected,
                              "CSR pointer does not match its arrays")
        return _Block(p, start, ptr, np.dtype(int_ds.dtype), stored_shape(f[CSR_GROUP]))

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
                idx = read_slice(f[CSR_INDEX], e0, e1)
                check_pixels(blk.path, idx, h * w, e0, CSR_INDEX, "pixel index",
                             f"{h} x {w} detector")
                val = read_slice(f[CSR_VALUE], e0, e1)
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
