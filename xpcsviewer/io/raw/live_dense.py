"""One HDF5 file whose frame dataset grows, followed live (the contract every live source
keeps: :mod:`xpcsviewer.io.raw.live`). The dense layout's names (the frame dataset, the
frame counter, frame and count times) are :mod:`xpcsviewer.io.raw.dense`'s.

Rules (docs/live.md states them for users)
------------------------------------------
**Growing file** (``/entry/data/data``, (frames, rows, cols), extended along axis 0):

- SWMR files (the superblock says "open for SWMR write") stay open and the dataset is
  refreshed each poll; any other file is opened afresh for every poll and closed after
  the frames of that poll are read (a non-SWMR writer changes the metadata under an
  open reader's cache).
- A *frame counter* written by the writer wins: the attribute ``frames_written`` of the
  frame dataset, or the scalar dataset ``/entry/data/frames_written``. Complete frames
  are ``min(counter, length)``.
- Without a counter, a frame is complete when its chunk is stored in the file (HDF5's
  chunk index; a chunk never written reads back as fill values) **and** a later chunk row
  along the frame axis is stored too: the last stored chunk row is held back until the
  writer moves past it, because a writer that extends the dataset first and fills it
  afterwards (or fills a many-frame chunk in pieces) can leave it partly written.
- At the end (:meth:`GrowingFileSource.final`) the last stored chunk row is taken as
  well, except trailing frames of a many-frame chunk that hold nothing but the fill
  value (a chunk the writer had only begun). A contiguous (unchunked) dataset has no
  chunk index: without a counter its frames are taken only at the end.
- Writer state: the superblock's consistency flags (HDF5 >= 1.10 file format: set while
  a writer has the file open, cleared on a clean close; a killed SWMR writer leaves them
  set), else, for the old format, a write lock held on the file (``/proc/locks``; a
  writer that disables HDF5 file locking leaves no trace, then the state is unknown).
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import h5py
import numpy as np

from xpcsviewer.io._h5 import read_superblock
from xpcsviewer.io.raw.dense import (
    COUNT_TIME,
    COUNTER_ATTR,
    COUNTER_DATASET,
    FRAME_TIME,
    RAW_DATASET,
)
from xpcsviewer.io.raw.live_common import (
    CLOSE_GRACE_S,
    HeldHdf5,
    SourceNotReady,
    SourceProblem,
    SourceState,
    _check_frames,
    _first_line,
    _open_shared,
    _positive_number,
    _read_pieces,
)

__all__ = ["GrowingFileSource"]


class GrowingFileSource(HeldHdf5):
    """One HDF5 file whose frame dataset grows (SWMR or a plain appending writer).

    Parameters
    ----------
    path : str or Path
    dataset : str
        The frames, (frames, rows, cols).
    expected : int, optional
        Frames the acquisition will have (else from a fixed dataset length, if any).
    """

    kind = "file"
    sparse = False

    def __init__(self, path: str | os.PathLike, dataset: str = RAW_DATASET,
                 expected: int | None = None) -> None:
        self.path = Path(path)
        self.dataset = dataset
        self.expected_arg = int(expected) if expected else None
        self.frame_shape: tuple[int, int] | None = None
        self.dtype: np.dtype | None = None
        self.frame_time: float | None = None
        self.count_time: float | None = None
        self._fh: h5py.File | None = None
        self._swmr = False
        self._rows_ok = 0  # chunk rows (along the frame axis) known to be stored
        self._rows_last_poll = -1
        self._seen_open = False
        self._open_seen_at = 0.0
        self._changed_at = 0.0
        self._file_sig: tuple = ()
        #: seconds a write lock must stay away before an old-format file counts as closed
        self.close_grace = CLOSE_GRACE_S
        self._state = SourceState()
        self._ds_ident: tuple | None = None  # the frame dataset's identity

    # ------------------------------------------------------------ handles
    def _open(self) -> h5py.Dataset:
        """The frame dataset, current (raises SourceNotReady / XpcsFileError)."""
        if not self.path.exists():
            raise SourceNotReady(f"waiting for {self.path.name} to appear")
        if self._fh is None:
            sb = read_superblock(self.path)
            flags = sb.flags if sb is not None else 0
            self._swmr = bool(flags & 0x4)
            self._fh = _open_shared(self.path, self._swmr)
            self._check_handle()
        try:
            ds = self._fh.get(self.dataset)
            if ds is None:
                raise SourceNotReady(f"no {self.dataset} yet")
            if self._swmr:
                ds.refresh()
            self._check_dataset(ds)
            return ds
        except SourceNotReady:
            self.release()
            raise
        except (OSError, RuntimeError, KeyError, ValueError) as exc:
            self.release()
            raise SourceNotReady(f"metadata being updated ({_first_line(exc)})") from None

    @property
    def state(self) -> SourceState:
        """What the last poll saw."""
        return self._state

    # ----------------------------------------------------------- identity
    # Frames of two datasets must never be mixed: the frame dataset (object address,
    # dtype, frame shape, chunks) is checked at every open (the file: HeldHdf5).
    def _check_dataset(self, ds: h5py.Dataset) -> None:
        try:
            addr = h5py.h5o.get_info(ds.id).addr
        except (RuntimeError, ValueError, AttributeError):
            addr = None
        ident = (addr, ds.dtype.str, tuple(ds.shape[1:]), ds.chunks and ds.chunks[1:])
        was = self._ds_ident
        if was is None:
            self._ds_ident = ident
            return
        shrunk = int(ds.shape[0]) < self._state.complete if ds.ndim else True
        if ident != was or shrunk:
            what = []
            if ident[1] != was[1]:
                what.append(f"dtype {np.dtype(was[1])} -> {np.dtype(ident[1])}")
            if ident[2] != was[2]:
                what.append(f"frames {was[2]} -> {ident[2]}")
            if shrunk:
                what.append(f"{ds.shape[0]} frames where {self._state.complete} were complete")
            self.close()
            raise SourceProblem("recreated", f"{self.dataset} in {self.path.name} was deleted "
                                f"and created again ({', '.join(what) or 'a new dataset'})")

    # --------------------------------------------------------------- poll
    def _note_change(self) -> float:
        """The file's modification time; remembers when it last changed."""
        try:
            st = self.path.stat()
            sig = (st.st_mtime_ns, st.st_size)
        except OSError:
            return 0.0
        if sig != self._file_sig:
            self._file_sig = sig
            self._changed_at = time.monotonic()
        return sig[0] / 1e9

    def _first_look(self, ds: h5py.Dataset) -> None:
        if self.frame_shape is None:
            self.frame_shape, self.dtype = _check_frames(self.path, ds, self.dataset)
            f = ds.file
            self.frame_time = _positive_number(f, FRAME_TIME)
            self.count_time = _positive_number(f, COUNT_TIME)

    def _counter(self, ds: h5py.Dataset) -> int | None:
        v = ds.attrs.get(COUNTER_ATTR)
        if v is None:
            c = ds.file.get(COUNTER_DATASET)
            if isinstance(c, h5py.Dataset):
                if self._swmr:
                    c.refresh()
                v = c[()]
        if v is None:
            return None
        try:
            return max(0, int(np.asarray(v).ravel()[0]))
        except (TypeError, ValueError, IndexError):
            return None

    @staticmethod
    def _row_stored(ds: h5py.Dataset, start: int) -> bool:
        """Whether every chunk of the chunk row beginning at frame ``start`` is stored."""
        _, ch_r, ch_c = ds.chunks
        _, rows, cols = ds.shape
        for r in range(0, rows, ch_r):
            for c in range(0, cols, ch_c):
                if ds.id.get_chunk_info_by_coord((start, r, c)).byte_offset is None:
                    return False
        return True

    def _stored_rows(self, ds: h5py.Dataset, extent: int) -> int:
        """Chunk rows stored from the start without a gap.

        One query of a chunk costs ~0.5 ms (HDF5 walks its index), so rows are not
        checked one by one: the number of stored chunks gives the candidate count k
        for a writer that stores rows in order, confirmed by the first new row and
        row k - 1 being stored; otherwise (out-of-order chunks) at most 64 new rows
        are checked one by one per poll.
        """
        cf, ch_r, ch_c = ds.chunks
        _, rows_px, cols_px = ds.shape
        per_row = -(-rows_px // ch_r) * -(-cols_px // ch_c)
        have = self._rows_ok
        k = min(ds.id.get_num_chunks() // per_row, -(-extent // cf))
        if k > have and self._row_stored(ds, have * cf) and self._row_stored(ds, (k - 1) * cf):
            self._rows_ok = k
            return k
        rows = have
        while rows * cf < extent and rows < have + 64 and self._row_stored(ds, rows * cf):
            rows += 1
        self._rows_ok = rows
        return rows

    def _expected(self, ds: h5py.Dataset) -> int | None:
        if self.expected_arg:
            return self.expected_arg
        m = ds.maxshape[0] if ds.maxshape is not None else None
        return int(m) if m is not None and ds.chunks is not None else None

    def poll(self) -> SourceState:
        """Look at the file now; never raises for a file that is being written.

        Raises
        ------
        XpcsFileError
            The dataset is not a (frames, rows, cols) array of counts.
        """
        mtime = self._note_change()
        writer = self._writer()
        try:
            self._check_file()
            ds = self._open()
            self._first_look(ds)
            extent = int(ds.shape[0])
            counter = self._counter(ds)
            if counter is not None:
                complete = min(counter, extent)
            elif ds.chunks is None:
                complete = 0
            else:
                cf = ds.chunks[0]
                before = self._rows_ok
                rows = self._stored_rows(ds, extent)
                # the last stored row is held back until a later one is stored
                complete = min(extent, max(0, rows - 1) * cf)
                expected = self._expected(ds)
                if expected is not None and rows * cf >= expected and (
                        cf == 1 or rows == before == self._rows_last_poll):
                    # the expected frames are all stored (a many-frame last chunk:
                    # unchanged for one poll interval)
                    complete = min(extent, expected)
                self._rows_last_poll = rows
            expected = self._expected(ds)
        except SourceProblem as exc:
            self._state = replace(self._state, writer=writer, readable=False, note=str(exc),
                                  problem=exc.kind)
            return self._state
        except SourceNotReady as exc:
            self._state = replace(self._state, writer=writer, readable=False, note=str(exc))
            return self._state
        except (OSError, RuntimeError, KeyError, ValueError) as exc:
            # metadata read in the middle of a (non-SWMR) writer's update: a fresh
            # handle next time
            self.close()
            self._state = replace(self._state, writer=writer, readable=False,
                                  note=f"metadata being updated ({_first_line(exc)})")
            return self._state
        note = "" if counter is not None or ds.chunks is not None else \
            "contiguous dataset without a frame counter: frames are taken at the end"
        complete = max(complete, self._state.complete)  # never goes back
        self._state = SourceState(complete, extent, expected, writer, True, note, mtime)
        return self._state

    def final(self) -> SourceState:
        """The frames to finish with at the end (see the module notes); the file is
        opened afresh."""
        self.close()
        self._note_change()
        writer = self._writer()
        try:
            self._check_file(at_end=True)
            ds = self._open()
            self._first_look(ds)
            extent = int(ds.shape[0])
            counter = self._counter(ds)
            if counter is not None:
                complete = min(counter, extent)
            elif ds.chunks is None:
                complete = extent
            else:
                cf = ds.chunks[0]
                rows = self._stored_rows(ds, extent)
                complete = min(extent, rows * cf)
                last = max(0, (rows - 1) * cf)
                if cf > 1 and complete > last:
                    tail = np.asarray(ds[last:complete])
                    fill = ds.fillvalue if ds.fillvalue is not None else 0
                    blank = (tail.reshape(tail.shape[0], -1) == fill).all(axis=1)
                    n = complete
                    while n > last and blank[n - last - 1]:
                        n -= 1
                    complete = n
            expected = self._expected(ds)
        except SourceProblem as exc:
            self.close()
            self._state = replace(self._state, writer=writer, readable=False, note=str(exc),
                                  problem=exc.kind)
            return self._state
        except (SourceNotReady, OSError, RuntimeError, KeyError, ValueError) as exc:
            # unreadable at the end (a writer killed mid-update): what was complete
            self.close()
            self._state = replace(self._state, writer=writer, readable=False,
                                  note=f"unreadable at the end ({_first_line(exc)})")
            return self._state
        complete = max(complete, self._state.complete)
        try:
            mtime = self.path.stat().st_mtime
        except OSError:
            mtime = self._state.mtime
        self._state = SourceState(complete, extent, expected, writer, True, "", mtime)
        return self._state

    # --------------------------------------------------------------- read
    def read(self, start: int, stop: int) -> np.ndarray:
        """Frames ``[start, stop)`` (complete ones only: the caller asks within a poll's
        ``complete``). Raises SourceNotReady when the file cannot be read now."""
        a, b = int(start), int(stop)
        try:
            data = _read_pieces(self._open(), a, b)
            if not self._swmr:
                # Without SWMR nothing orders the writer's metadata updates against
                # our reads: a handle can mix old and new index nodes and read fill
                # values or a moved chunk. The frames count only when a fresh handle
                # reads the same bytes again.
                self.close()
                again = _read_pieces(self._open(), a, b)
                if data.tobytes() != again.tobytes():  # NaN counts equal themselves here
                    self.close()
                    raise SourceNotReady("frames changed while being read")
            return data
        except (OSError, RuntimeError, ValueError, KeyError) as exc:
            self.close()
            raise SourceNotReady(f"read failed ({_first_line(exc)})") from None

    def describe(self) -> str:
        return str(self.path)
