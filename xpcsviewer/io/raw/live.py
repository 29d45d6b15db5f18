"""Raw frames while a detector writes them: the live sources, and the one that a path
holds, chosen by content (:func:`open_live_source`).

A source is polled; each poll says how many frames are *complete* (safe to read) and
whether the writer still has the data open. Nothing here ever takes a file lock or
writes: files are opened read-only with ``locking=False`` (SWMR readers with
``swmr=True``), so a writer is never blocked by a reader. Only numpy and h5py.

Every live source keeps one contract: ``poll`` / ``final`` / ``release`` / ``close`` /
``describe`` / ``state``. Each layout's rules (docs/live.md states them for users) are in
its reader's module, which takes the layout's names and decoding from the layout's own
module, as the whole-file readers do:

- a growing dense HDF5 file: :class:`~xpcsviewer.io.raw.live_dense.GrowingFileSource`;
- a folder of dense block files: :class:`~xpcsviewer.io.raw.live_blocks.BlockFolderSource`;
- photon-sparse sources, which also hand out hits (``read_events``, ``sparse = True``): a
  Rigaku ``.bin`` being appended (:class:`~xpcsviewer.io.raw.live_rigaku.GrowingRigakuSource`),
  an ESRF ID10 CSR HDF5 file that grows and a folder of ESRF sparse blocks
  (:mod:`xpcsviewer.io.raw.live_csr`).

**Which class** (:func:`open_live_source`) is told by content, never by the name: an
HDF5 file with ``entry_0000/measurement/data/frame_ptr`` is a CSR file, one with the
frame dataset a dense growing file; a file of 8-byte words that decode as Rigaku hits is
a ``.bin``; a folder by its first numbered block that opens. Until the content tells
(nothing there yet, fewer than 8 bytes, an HDF5 file without either dataset yet) the
source is a :class:`PendingSource` that looks again at every poll and then becomes the
right one.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from xpcsviewer.io._h5 import NotRegularFile, open_regular, read_superblock
from xpcsviewer.io._h5open import _HDF5_SIGNATURE
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.raw.dense import RAW_DATASET
from xpcsviewer.io.raw.esrf_csr import CSR_PTR
from xpcsviewer.io.raw.live_blocks import BlockFolderSource, _numbered
from xpcsviewer.io.raw.live_common import (
    SourceNotReady,
    SourceState,
    _first_line,
    _open_shared,
    writer_state,
)
from xpcsviewer.io.raw.live_csr import CsrBlockFolderSource, GrowingCsrSource
from xpcsviewer.io.raw.live_dense import GrowingFileSource
from xpcsviewer.io.raw.live_rigaku import GrowingRigakuSource

__all__ = [
    "RAW_DATASET",
    "BlockFolderSource",
    "CsrBlockFolderSource",
    "GrowingCsrSource",
    "GrowingFileSource",
    "GrowingRigakuSource",
    "PendingSource",
    "SourceNotReady",
    "SourceState",
    "live_layout",
    "open_live_source",
    "writer_state",
]


def _hdf5_layout(p: Path, dataset: str) -> tuple[str | None, str]:
    """``("csr" | "dense" | None, why not)`` of an HDF5 file, opened without a lock."""
    sb = read_superblock(p)
    try:
        with _open_shared(p, bool((sb.flags if sb is not None else 0) & 0x4)) as f:
            if isinstance(f.get(CSR_PTR), h5py.Dataset):
                return "csr", ""
            if isinstance(f.get(dataset), h5py.Dataset):
                return "dense", ""
    except (SourceNotReady, OSError, RuntimeError, KeyError, ValueError) as exc:
        return None, f"{p.name}: {exc}"
    return None, f"{p.name}: no {dataset} or {CSR_PTR} yet"


def live_layout(source: str | os.PathLike, dataset: str = RAW_DATASET) -> tuple[str | None, str]:
    """What ``source`` holds, told by its content: ``("dense-file" | "dense-folder" |
    "csr-file" | "csr-folder" | "rigaku", "")``, or ``(None, why)`` when nothing tells yet.
    """
    from xpcsviewer.io.raw.rigaku import looks_like_rigaku

    p = Path(source)
    if p.is_dir() or (not p.exists() and any(ch in p.name for ch in "*?[")):
        folder, pattern = (p, None) if p.is_dir() else (p.parent, p.name)
        blocks = [q for v in _numbered(folder, pattern).values() for _, q in v]
        if not blocks:
            return None, "waiting for the first block"
        def mtime(q: Path) -> float:
            try:
                return q.stat().st_mtime
            except OSError:  # gone since it was listed
                return 0.0

        why = ""
        for q in sorted(blocks, key=mtime, reverse=True)[:4]:
            kind, why = _hdf5_layout(q, dataset)
            if kind is not None:
                return f"{kind}-folder", ""
        return None, why
    if not p.exists():
        return None, f"waiting for {p.name} to appear"
    try:
        with open_regular(p) as fh:
            head = fh.read(8)
    except NotRegularFile as exc:
        raise XpcsFileError(p, str(exc), None, "a growing raw file or a folder of blocks") \
            from None
    except OSError as exc:
        return None, f"{p.name}: cannot read it now ({_first_line(exc)})"
    if head == _HDF5_SIGNATURE:
        kind, why = _hdf5_layout(p, dataset)
        return (f"{kind}-file" if kind else None), why
    if len(head) < 8:
        return None, f"{p.name}: {len(head)} bytes, too few to tell its layout yet"
    if looks_like_rigaku(p):
        return "rigaku", ""
    return "dense-file", ""  # GrowingFileSource says what is wrong with it


def _make(layout: str, p: Path, dataset: str, expected: int | None,
          shape: tuple[int, int] | None) -> Any:
    if layout == "dense-folder":
        return BlockFolderSource(p, dataset, expected)
    if layout == "dense-file":
        return GrowingFileSource(p, dataset, expected)
    cls = {"csr-file": GrowingCsrSource, "csr-folder": CsrBlockFolderSource,
           "rigaku": GrowingRigakuSource}[layout]
    return cls(p, expected, shape)


class PendingSource:
    """A source whose layout nothing tells yet (see the module notes): every poll looks
    again; once the content tells, it is that source (``inner``) and hands everything on.

    ``sparse`` is None until then.
    """

    kind = "pending"

    def __init__(self, path: str | os.PathLike, dataset: str = RAW_DATASET,
                 expected: int | None = None, shape: tuple[int, int] | None = None) -> None:
        self.path = Path(path)
        self.dataset = dataset
        self.expected_arg = int(expected) if expected else None
        self.shape_arg = shape
        self.inner: Any = None
        self._state = SourceState(note=f"waiting for {self.path.name} to appear")

    def _resolve(self) -> Any:
        if self.inner is None:
            layout, why = live_layout(self.path, self.dataset)
            if layout is None:
                self._state = replace(self._state, readable=False, note=why)
                return None
            self.inner = _make(layout, self.path, self.dataset, self.expected_arg,
                               self.shape_arg)
        return self.inner

    @property
    def state(self) -> SourceState:
        return self.inner.state if self.inner is not None else self._state

    def poll(self) -> SourceState:
        src = self._resolve()
        return self._state if src is None else src.poll()

    def final(self) -> SourceState:
        src = self._resolve()
        return self._state if src is None else src.final()

    def read(self, start: int, stop: int) -> np.ndarray:
        return self.inner.read(start, stop)

    def read_events(self, start: int, stop: int) -> Any:
        return self.inner.read_events(start, stop)

    def release(self) -> None:
        if self.inner is not None:
            self.inner.release()

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()

    def describe(self) -> str:
        return self.inner.describe() if self.inner is not None else str(self.path)

    def _get(self, name: str, default: Any = None) -> Any:
        return getattr(self.inner, name, default) if self.inner is not None else default

    sparse = property(lambda self: self._get("sparse", False) if self.inner is not None
                      else None)
    frame_shape = property(lambda self: self._get("frame_shape"))
    dtype = property(lambda self: self._get("dtype"))
    frame_time = property(lambda self: self._get("frame_time"))
    count_time = property(lambda self: self._get("count_time"))
    layout = property(lambda self: self._get("layout", "pending"))


def open_live_source(source: str | os.PathLike, dataset: str = RAW_DATASET,
                     expected: int | None = None,
                     shape: tuple[int, int] | None = None) -> Any:
    """The live source ``source`` holds, chosen by content (see the module notes).

    Parameters
    ----------
    source : path
        A growing file (dense HDF5, ESRF CSR HDF5, Rigaku ``.bin``), a folder (or
        ``folder/PATTERN``) receiving dense or ESRF sparse block files.
    dataset : str
        Dense frames inside the file(s).
    expected : int, optional
        Frames the acquisition will have.
    shape : (int, int), optional
        Detector (rows, cols) for sparse files that store none (the q-map's).

    Returns
    -------
    GrowingFileSource, BlockFolderSource, GrowingCsrSource, CsrBlockFolderSource,
    GrowingRigakuSource, or PendingSource while nothing tells.
    """
    p = Path(source)
    layout, _ = live_layout(p, dataset)
    if layout is None:
        return PendingSource(p, dataset, expected, shape)
    return _make(layout, p, dataset, expected, shape)


def wait_interval(t_last: float, period: float) -> float:
    """Seconds left until ``t_last + period`` (0 when past)."""
    return max(0.0, t_last + period - time.monotonic())
