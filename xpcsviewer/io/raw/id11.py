"""ImageD11 (ESRF ID11) sparse frames in HDF5.

ImageD11 (:class:`Id11Sparse`): a group (the root or up to two levels down, e.g.
``1.1``) with 1-D ``nnz`` (hits per frame), ``row``, ``col``, ``intensity`` and the
attributes ``shape0``/``shape1`` (rows, cols) when present.

The offsets (the cumulative ``nnz``) are read once at open, added in exact integer
arithmetic and checked against the lengths of ``row``/``col``/``intensity`` before any
use (:func:`~xpcsviewer.io.raw.util.hit_offsets`: a sum past 2**63 never wraps back to
a plausible total); hits are read by range with h5py slices. Only numpy and h5py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.io._h5 import open_h5_file
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.raw.sparse import SparseSource
from xpcsviewer.io.raw.util import (
    attr,
    check_pixels,
    detector_shape,
    find_groups,
    hit_offsets,
    int_dataset,
    num_dataset,
    read_slice,
)

__all__ = ["ID11_NAMES", "Id11Sparse"]

#: the datasets of an ImageD11 sparse group
ID11_NAMES = ("nnz", "row", "col", "intensity")


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
        No such group, ``sum(nnz)`` (added exactly, :func:`~xpcsviewer.io.raw.util.hit_offsets`)
        not the length of ``row``/``col``/``intensity``, negative ``nnz``, more ``nnz``
        entries than the file can hold, an unknown detector shape, a row or column outside
        the detector.
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
        nnz_ds = int_dataset(f, f"{base}/nnz", "hits per frame (integers)")
        self._row = int_dataset(f, f"{base}/row", "row of each hit (integers)")
        self._col = int_dataset(f, f"{base}/col", "column of each hit (integers)")
        self._int = num_dataset(f, f"{base}/intensity", "numeric counts")
        self._names = {k: f"{base}/{k}" for k in ID11_NAMES}
        lens = {k: int(d.shape[0]) for k, d in
                (("row", self._row), ("col", self._col), ("intensity", self._int))}
        self._ptr = hit_offsets(self.path, nnz_ds, lens)
        total = int(self._ptr[-1])
        grp = f[g]
        s0, s1 = attr(grp, "shape0"), attr(grp, "shape1")
        stored = (s0, s1) if s0 is not None and s1 is not None else None
        self.frame_shape = detector_shape(self.path, stored, g, shape)
        self.raw_frames = int(self._ptr.size - 1)
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
        row = read_slice(self._row, e0, e1)
        check_pixels(self.path, row, h, e0, self._names["row"], "row", f"{h} x {w} detector")
        col = read_slice(self._col, e0, e1)
        check_pixels(self.path, col, w, e0, self._names["col"], "column",
                     f"{h} x {w} detector")
        val = read_slice(self._int, e0, e1)
        frame = np.repeat(np.arange(a, b, dtype=self._frame_dtype), np.diff(self._ptr[a: b + 1]))
        pixel = row.astype(np.int64) * w + col.astype(np.int64)
        return frame, pixel, val

    def close(self) -> None:
        if getattr(self, "_h5", None) is not None:
            self._h5.close()
            self._h5 = None
