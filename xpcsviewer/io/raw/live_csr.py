"""An ESRF ID10 sparse (CSR) HDF5 file that grows, and a folder receiving its blocks,
followed live (the contract every live source keeps: :mod:`xpcsviewer.io.raw.live`).
The layout's names and its stored detector shape are :mod:`xpcsviewer.io.raw.esrf_csr`'s,
as for a whole file.

Rules (docs/live.md states them for users)
------------------------------------------
**ESRF ID10 CSR HDF5 file** (:class:`GrowingCsrSource`; ``entry_0000/measurement/data``
with ``frame_ptr`` (frames + 1), ``index``, ``intensity``, extended along axis 0):

- frame k is complete when ``frame_ptr[k + 1]`` is stored and ``<=`` the stored length of
  both ``index`` and ``intensity`` (a writer extends ``frame_ptr`` last; a pointer beyond
  the arrays is never followed);
- an entry equal to the dataset's fill value below its predecessor is an entry not
  written yet (a writer that extends before it writes): frames stop there; any other
  decrease is an error. While no frame has a hit yet (every pointer 0, the fill value),
  the frames are held until a hit arrives or the end: a 0 cannot be told from an entry
  not written yet;
- SWMR files stay open and are refreshed; any other file is opened afresh for every poll
  and its hits count only when a second fresh handle reads the same bytes (the care of
  :class:`~xpcsviewer.io.raw.live_dense.GrowingFileSource`);
- writer state: the superblock's flags, else a write lock, as for a dense growing file.

**Folder of ESRF sparse blocks** (:class:`CsrBlockFolderSource`; ``NAME_00000.h5``,
``NAME_00001.h5``, ...): block k is complete when block k + 1 exists; the newest when
nothing has it open for writing, its size and modification time did not change since
the previous poll and its pointer matches its arrays; at the end, the frames of it that
are whole when it opens.

The detector shape of a CSR file is its ``shape``/``frame_shape`` (or ``nrows`` /
``ncols``) attribute of the data group, else the caller's (the q-map's).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from xpcsviewer.io._h5 import outside_problem, read_superblock
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.raw.esrf_csr import CSR_GROUP, CSR_INDEX, CSR_PTR, CSR_VALUE, stored_shape
from xpcsviewer.io.raw.live_blocks import _numbered, gap_note, until_gap
from xpcsviewer.io.raw.live_common import (
    HeldHdf5,
    SourceNotReady,
    SourceProblem,
    SourceState,
    _first_line,
    _open_shared,
    writer_state,
)
from xpcsviewer.io.raw.live_hits import _check_index, _LiveHits, _read_1d
from xpcsviewer.io.raw.util import detector_shape
from xpcsviewer.model.events import EventBlock

__all__ = ["CsrBlockFolderSource", "GrowingCsrSource"]

_PTR_EXPECTED = "frame_ptr[0] = 0, non-decreasing offsets (frames in order)"


def _csr_datasets(f: h5py.File, name: str) -> tuple[h5py.Dataset, h5py.Dataset, h5py.Dataset]:
    """(frame_ptr, index, intensity) of an ESRF sparse file (raises SourceNotReady while
    one is missing, XpcsFileError when one is not a 1-D array of the right kind)."""
    out = []
    for path, kinds, what in ((CSR_PTR, "iu", "n_frames + 1 integer offsets"),
                              (CSR_INDEX, "iu", "flat pixel indices (integers)"),
                              (CSR_VALUE, "iuf", "numeric counts")):
        ds = f.get(path)
        if not isinstance(ds, h5py.Dataset):
            raise SourceNotReady(f"{name}: no {path} yet")
        why = outside_problem(f, path, ds)
        if why is not None:
            raise XpcsFileError(f.filename, why, path, f"1-D {what} in the file")
        if ds.ndim != 1 or ds.dtype.kind not in kinds:
            raise XpcsFileError(f.filename, f"has shape {ds.shape} and dtype {ds.dtype}", path,
                                f"1-D {what}")
        out.append(ds)
    return out[0], out[1], out[2]


def _csr_shape(f: h5py.File, path: Path, given: Any) -> tuple[int, int]:
    return detector_shape(path, stored_shape(f[CSR_GROUP]), CSR_GROUP, given)


def _ptr_prefix(path: Path, vals: np.ndarray, first: int, fill: Any) -> np.ndarray:
    """The written, ordered prefix of pointer entries ``first, first + 1, ...``: cut at an
    entry equal to the fill value below its predecessor (not written yet); any other
    decrease is an error."""
    if first == 0 and vals.size and vals[0] != 0:
        raise XpcsFileError(path, f"frame_ptr starts at {int(vals[0])}", CSR_PTR, _PTR_EXPECTED)
    dec = np.flatnonzero(vals[1:] < vals[:-1])
    if not dec.size:
        return vals
    k = int(dec[0]) + 1
    if fill is not None and vals[k] == fill:
        return vals[:k]
    raise XpcsFileError(path, f"frame_ptr decreases at entry {first + k} "
                        f"({int(vals[k - 1])} -> {int(vals[k])})", CSR_PTR, _PTR_EXPECTED)


def _fill(ds: h5py.Dataset) -> Any:
    try:
        return ds.fillvalue
    except (OSError, RuntimeError, ValueError):
        return 0


class GrowingCsrSource(HeldHdf5, _LiveHits):
    """One ESRF ID10 sparse (CSR) HDF5 file that grows (see the module notes).

    Parameters
    ----------
    path : str or Path
    expected : int, optional
        Frames the acquisition will have (else a fixed ``frame_ptr`` length, if any).
    shape : (int, int), optional
        Detector (rows, cols) when the file stores none (the q-map's).
    """

    kind = "csr"
    layout = "esrf-csr"
    dataset = CSR_VALUE

    def __init__(self, path: str | os.PathLike, expected: int | None = None,
                 shape: tuple[int, int] | None = None) -> None:
        super().__init__(path, expected, shape)
        self._fh: h5py.File | None = None
        self._swmr = False
        self._ptr = np.zeros(1, np.int64)  # frame_ptr entries 0..complete
        self._seen_open = False
        self._open_seen_at = 0.0

    # ------------------------------------------------------------ handles
    def _open(self) -> tuple[h5py.Dataset, h5py.Dataset, h5py.Dataset]:
        if not self.path.exists():
            raise SourceNotReady(f"waiting for {self.path.name} to appear")
        if self._fh is None:
            sb = read_superblock(self.path)
            self._swmr = bool((sb.flags if sb is not None else 0) & 0x4)
            self._fh = _open_shared(self.path, self._swmr)
            self._check_handle()
        try:
            ptr, idx, val = _csr_datasets(self._fh, self.path.name)
            if self._swmr:
                for ds in (ptr, idx, val):  # the pointer first: arrays at least that long
                    ds.refresh()
            if self.frame_shape is None:
                self.frame_shape = _csr_shape(self._fh, self.path, self.shape_arg)
                self.dtype = np.dtype(val.dtype)
            return ptr, idx, val
        except SourceNotReady:
            self.release()
            raise
        except XpcsFileError:
            self.close()
            raise
        except (OSError, RuntimeError, KeyError, ValueError) as exc:
            self.close()
            raise SourceNotReady(f"metadata being updated ({_first_line(exc)})") from None

    # ------------------------------------------------------------ scan
    def _scan(self, at_end: bool) -> tuple[int, int, int | None, str]:
        """(complete, extent, expected, note) from the pointer as stored now."""
        ptr, idx, val = self._open()
        n_ptr = int(ptr.shape[0])
        n_arr = min(int(idx.shape[0]), int(val.shape[0]))
        c = self._ptr.size - 1
        note = ""
        if n_ptr > c + 1:
            vals = np.asarray(ptr[c:n_ptr]).astype(np.int64)
            if c and vals[0] != self._ptr[-1]:
                raise SourceNotReady("frame_ptr changed while being read")
            vals = _ptr_prefix(self.path, vals, c, _fill(ptr))
            written = c + vals.size - 1  # frames whose pointer end is written
            if not at_end and vals[-1] == 0:
                vals = vals[:1]  # no hit yet: a 0 cannot be told from an entry not written
            k = int(np.searchsorted(vals, n_arr, side="right")) - 1
            self._ptr = np.concatenate([self._ptr, vals[1: k + 1]])
            if at_end and n_ptr - 1 > self._ptr.size - 1:
                left = n_ptr - 1 - (self._ptr.size - 1)
                past, unwritten = written - (c + k), n_ptr - 1 - written
                why = ", ".join(x for x in (
                    f"{past} whose frame_ptr points past index/intensity" if past else "",
                    f"{unwritten} whose frame_ptr entry was not written" if unwritten else "")
                    if x)
                note = f"{left} frame(s) at the end left out ({why}): the writer stopped"
        expected = self.expected_arg
        if expected is None and ptr.chunks is not None and ptr.maxshape is not None \
                and ptr.maxshape[0] is not None:
            expected = int(ptr.maxshape[0]) - 1
        return self._ptr.size - 1, max(0, n_ptr - 1), expected, note

    def poll(self) -> SourceState:
        """Look at the file now; never raises for a file that is being written.

        Raises
        ------
        XpcsFileError
            Not an ESRF sparse layout, a pointer that decreases, an unknown shape.
        """
        mtime, _ = self._note_change()
        writer = self._writer()
        try:
            # (a truncated file: the frames whose hits survive, with a note)
            self._check_file(truncation=False)
            complete, extent, expected, note = self._scan(at_end=False)
        except SourceProblem as exc:
            self._state = replace(self._state, writer=writer, readable=False, note=str(exc),
                                  problem=exc.kind)
            return self._state
        except SourceNotReady as exc:
            self._state = replace(self._state, writer=writer, readable=False, note=str(exc))
            return self._state
        except (OSError, RuntimeError, KeyError, ValueError) as exc:
            self.close()
            self._state = replace(self._state, writer=writer, readable=False,
                                  note=f"metadata being updated ({_first_line(exc)})")
            return self._state
        self._state = SourceState(complete, extent, expected, writer, True, note, mtime)
        return self._state

    def final(self) -> SourceState:
        """The frames to finish with (the file opened afresh): every frame whose hits are
        all in the file, the leading frames without hits included."""
        self.close()
        mtime, _ = self._note_change()
        writer = self._writer()
        try:
            self._check_file(at_end=True, truncation=False)
            complete, extent, expected, note = self._scan(at_end=True)
        except SourceProblem as exc:
            self.close()
            self._state = replace(self._state, writer=writer, readable=False, note=str(exc),
                                  problem=exc.kind)
            return self._state
        except (SourceNotReady, OSError, RuntimeError, KeyError, ValueError) as exc:
            self.close()
            self._state = replace(self._state, writer=writer, readable=False,
                                  note=f"unreadable at the end ({_first_line(exc)})")
            return self._state
        self._state = SourceState(complete, extent, expected, writer, True, note, mtime)
        return self._state

    # ------------------------------------------------------------ read
    def _read_once(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ptr, idx, val = self._open()
        p = np.asarray(ptr[a: b + 1]).astype(np.int64)
        n_arr = min(int(idx.shape[0]), int(val.shape[0]))
        if p.size != b - a + 1 or p[-1] > n_arr or (p[1:] < p[:-1]).any():
            raise SourceNotReady("frame_ptr being updated")
        return p, _read_1d(idx, int(p[0]), int(p[-1])), _read_1d(val, int(p[0]), int(p[-1]))

    def read_events(self, start: int, stop: int) -> EventBlock:
        """The hits of frames ``[start, stop)`` (within a poll's ``complete``). Raises
        SourceNotReady when the file cannot be read now, XpcsFileError for a pixel outside
        the detector."""
        a, b = int(start), int(stop)
        if b <= a:
            return self._empty_block(a, max(a, b))
        try:
            p, idx, val = self._read_once(a, b)
            if not self._swmr:
                # as GrowingFileSource.read: the hits count only when a fresh handle reads
                # the same bytes again (nothing orders a plain writer's updates and ours)
                self.close()
                again = self._read_once(a, b)
                if any(x.tobytes() != y.tobytes() for x, y in zip((p, idx, val), again,
                                                                  strict=True)):
                    self.close()
                    raise SourceNotReady("hits changed while being read")
        except (OSError, RuntimeError, ValueError, KeyError) as exc:
            self.close()
            raise SourceNotReady(f"read failed ({_first_line(exc)})") from None
        if b < self._ptr.size:
            self._ptr[a: b + 1] = p  # read twice: what the file holds
        h, w = self.frame_shape
        _check_index(self.path, idx, h * w, int(p[0]), (h, w), CSR_INDEX)
        frame = np.repeat(np.arange(a, b, dtype=np.int64), np.diff(p))
        return EventBlock(a, b, frame, idx.astype(np.int64, copy=False), val)


# ---------------------------------------------------------------------------- blocks
class _CsrBlock:
    def __init__(self, path: Path, start: int, ptr: np.ndarray) -> None:
        self.path = path
        self.start = start
        self.ptr = ptr
        self.n_frames = ptr.size - 1


class CsrBlockFolderSource(_LiveHits):
    """A folder receiving ESRF sparse block files (see the module notes).

    Parameters
    ----------
    folder : str or Path
        The folder, or ``folder/PATTERN`` when it holds several series.
    expected : int, optional
    shape : (int, int), optional
        Detector (rows, cols) when the blocks store none (the q-map's).
    """

    kind = "csr-folder"
    layout = "esrf-csr"
    dataset = CSR_VALUE

    def __init__(self, folder: str | os.PathLike, expected: int | None = None,
                 shape: tuple[int, int] | None = None) -> None:
        folder = Path(folder)
        self.pattern: str | None = None
        if not folder.is_dir() and any(ch in folder.name for ch in "*?["):
            self.pattern, folder = folder.name, folder.parent
        super().__init__(folder, expected, shape)
        self.blocks: list[_CsrBlock] = []
        self._starts = [0]
        self._prefix: str | None = None
        self._last_sig: dict[Path, tuple[int, float]] = {}
        self._handle: tuple[Path, h5py.File] | None = None
        self._state = SourceState(note="waiting for the first block")
        self.note = ""
        self._gap: tuple[int, list[Path]] | None = None  # a missing block, the ones after

    def _series(self) -> list[Path]:
        groups = _numbered(self.path, self.pattern)
        if not groups:
            return []
        if self._prefix is None:
            if len(groups) > 1:
                newest = max(groups, key=lambda k: max(p.stat().st_mtime for _, p in groups[k]))
                self.note = (f"{len(groups)} numbered series in the folder; following "
                             f"{newest}* (give folder/PATTERN to choose)")
                self._prefix = newest
            else:
                self._prefix = next(iter(groups))
        files, self._gap = until_gap(groups.get(self._prefix, []))
        return files

    def _block_ptr(self, p: Path, at_end: bool) -> tuple[np.ndarray, str]:
        """The pointer of block ``p`` (raises SourceNotReady / XpcsFileError)."""
        try:
            fh = _open_shared(p)
        except SourceNotReady as exc:
            raise SourceNotReady(f"{p.name}: {exc}") from None
        try:
            with fh as f:
                ptr, idx, val = _csr_datasets(f, p.name)
                shape = _csr_shape(f, p, self.shape_arg)
                if self.frame_shape is None:
                    self.frame_shape, self.dtype = shape, np.dtype(val.dtype)
                elif shape != self.frame_shape:
                    raise XpcsFileError(p, f"frames are {shape[0]}x{shape[1]}, earlier blocks "
                                        f"{self.frame_shape[0]}x{self.frame_shape[1]}",
                                        CSR_GROUP, "one detector shape for the whole series")
                vals = np.asarray(ptr[()]).astype(np.int64)
                n_arr = min(int(idx.shape[0]), int(val.shape[0]))
        except (OSError, RuntimeError, KeyError, ValueError) as exc:
            raise SourceNotReady(f"{p.name}: cannot read it now ({_first_line(exc)})") from None
        if vals.size == 0:
            raise SourceNotReady(f"{p.name}: empty frame_ptr")
        vals = _ptr_prefix(p, vals, 0, None)
        if vals[-1] <= n_arr:
            return vals, ""
        if not at_end:
            raise SourceNotReady(f"{p.name}: frame_ptr points past its hits")
        k = int(np.searchsorted(vals, n_arr, side="right")) - 1
        return vals[: k + 1], (f"{p.name}: {vals.size - 1 - k} frame(s) left out, their hits "
                               "are not all in the file (the writer stopped)")

    def _accept(self, p: Path, last: bool, at_end: bool) -> tuple[bool, str]:
        try:
            st = p.stat()
        except OSError:
            return False, ""
        sig = (st.st_size, st.st_mtime)
        if last and not at_end:
            before = self._last_sig.get(p)
            self._last_sig[p] = sig
            if before != sig or writer_state(p) == "open":
                return False, ""
        try:
            ptr, note = self._block_ptr(p, at_end)
        except SourceNotReady as exc:
            return False, f"left out at the end: {exc}" if at_end else ""
        self.blocks.append(_CsrBlock(p, self._starts[-1], ptr))
        self._starts.append(self._starts[-1] + ptr.size - 1)
        return True, note

    def _scan(self, at_end: bool) -> SourceState:
        files = self._series()
        notes, pending = [], ""
        for i in range(len(self.blocks), len(files)):
            ok, note = self._accept(files[i], i == len(files) - 1, at_end)
            if note:
                notes.append(note)
            if not ok:
                pending = f"{files[i].name} not complete yet"
                if at_end and len(files) > i + 1:
                    notes.append(f"blocks from {files[i].name} on are not read")
                break
        problem = ""
        if self._gap is not None and len(self.blocks) == len(files):
            # never joined to the blocks before it as if contiguous (issue 50)
            pending = gap_note(self._gap, at_end)
            notes.append(pending)
            problem = "missing_block" if at_end else ""
        complete = self._starts[-1]
        per_block = self.blocks[-1].n_frames if self.blocks else 0
        extent = complete + (len(files) - len(self.blocks)) * per_block
        writer = "open" if files and len(self.blocks) < len(files) else "unknown"
        mtime = max((b.path.stat().st_mtime for b in self.blocks[-1:]), default=0.0)
        if at_end:
            note = "; ".join(x for x in (self.note, *notes) if x)
        else:
            note = "; ".join(x for x in (self.note, pending) if x) or (
                "" if files else "waiting for the first block")
        self._state = SourceState(complete, extent, self.expected_arg, writer, bool(files),
                                  note, mtime, problem)
        return self._state

    def poll(self) -> SourceState:
        """Look at the folder now (never raises for a block being written)."""
        if not self.path.is_dir():
            self._state = replace(self._state, readable=False,
                                  note=f"waiting for {self.path} to appear")
            return self._state
        return self._scan(at_end=False)

    def final(self) -> SourceState:
        """The frames to finish with: every block that opens, the whole frames of the
        newest included."""
        return self._scan(at_end=True)

    def read_events(self, start: int, stop: int) -> EventBlock:
        """The hits of frames ``[start, stop)`` across blocks."""
        a0, b = int(start), int(stop)
        frames, pixels, values = [], [], []
        a = a0
        while a < b:
            k = int(np.searchsorted(self._starts, a, side="right")) - 1
            blk = self.blocks[k]
            e = min(b, blk.start + blk.n_frames)
            la, lb = a - blk.start, e - blk.start
            e0, e1 = int(blk.ptr[la]), int(blk.ptr[lb])
            if e1 > e0:
                if self._handle is None or self._handle[0] != blk.path:
                    self.release()
                    self._handle = (blk.path, _open_shared(blk.path))
                f = self._handle[1]
                try:
                    idx = _read_1d(f[CSR_INDEX], e0, e1)
                    val = _read_1d(f[CSR_VALUE], e0, e1)
                except (OSError, RuntimeError, KeyError, ValueError) as exc:
                    self.release()
                    raise SourceNotReady(f"{blk.path.name}: read failed "
                                         f"({_first_line(exc)})") from None
                h, w = self.frame_shape
                _check_index(blk.path, idx, h * w, e0, (h, w), CSR_INDEX)
                frames.append(np.repeat(np.arange(a, e, dtype=np.int64),
                                        np.diff(blk.ptr[la: lb + 1])))
                pixels.append(idx.astype(np.int64, copy=False))
                values.append(val)
            a = e
        if not frames:
            return self._empty_block(a0, max(a0, b))
        if len(frames) == 1:
            return EventBlock(a0, b, frames[0], pixels[0], values[0])
        return EventBlock(a0, b, np.concatenate(frames), np.concatenate(pixels),
                          np.concatenate(values))

    def release(self) -> None:
        """Close the open block."""
        if self._handle is not None:
            try:
                self._handle[1].close()
            except Exception:
                pass
            self._handle = None

    close = release

    def describe(self) -> str:
        return str(self.path / self.pattern) if self.pattern else str(self.path)

