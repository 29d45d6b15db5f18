"""What the photon live sources share (the rules of each layout:
:mod:`~xpcsviewer.io.raw.live_rigaku`, :mod:`~xpcsviewer.io.raw.live_csr`): the hits of
complete frames handed out as EventBlocks, dense frames formed from them, checked pixel
indices, bounded 1-D reads. Only numpy and h5py."""

from __future__ import annotations

import abc
import os
import time
from pathlib import Path

import h5py
import numpy as np

from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.raw.live_common import (
    CLOSE_GRACE_S,
    READ_PIECE_BYTES,
    SourceState,
)
from xpcsviewer.io.raw.sparse import dense_frames
from xpcsviewer.model.events import EventBlock

__all__ = ["_LiveHits"]

_EMPTY = (np.empty(0, np.int64), np.empty(0, np.int64))


class _LiveHits(abc.ABC):
    """What the sparse live sources share: state, change watch, dense frames."""

    sparse = True
    kind = "sparse"
    layout = "sparse"
    #: the field errors name (the counts' dataset), or None
    dataset: str | None = None
    count_time: float | None = None

    def __init__(self, path: str | os.PathLike, expected: int | None,
                 shape: tuple[int, int] | None) -> None:
        self.path = Path(path)
        self.expected_arg = int(expected) if expected else None
        self.shape_arg = tuple(shape) if shape is not None else None
        self.frame_shape: tuple[int, int] | None = None
        self.dtype: np.dtype | None = None
        self.frame_time: float | None = None
        #: seconds without a change (or a writer's lock) before the writer counts as closed
        self.close_grace = CLOSE_GRACE_S
        self._sig: tuple = ()
        self._changed_at = 0.0
        self._state = SourceState()

    @property
    def state(self) -> SourceState:
        """What the last poll saw."""
        return self._state

    def _note_change(self, path: Path | None = None) -> tuple[float, bool]:
        """(modification time, changed since the previous look) of ``path``."""
        try:
            st = (path or self.path).stat()
        except OSError:
            return 0.0, False
        sig = (st.st_mtime_ns, st.st_size)
        changed = sig != self._sig
        if changed:
            self._sig = sig
            self._changed_at = time.monotonic()
        return sig[0] / 1e9, changed

    def _empty_block(self, start: int, stop: int) -> EventBlock:
        return EventBlock(start, stop, *_EMPTY, np.empty(0, self.dtype or np.uint16))

    @abc.abstractmethod
    def read_events(self, start: int, stop: int) -> EventBlock:
        """The hits of complete frames ``[start, stop)`` (raises SourceNotReady when the
        source cannot be read now)."""

    def read(self, start: int, stop: int) -> np.ndarray:
        """Dense frames ``[start, stop)`` of the hits (for a frame-based consumer)."""
        blk = self.read_events(start, stop)
        return dense_frames(start, stop, blk.frame, blk.pixel, blk.value,
                            self.frame_shape or (0, 0), self.dtype or np.uint16)

    @abc.abstractmethod
    def release(self) -> None:
        """Let go of what need not be held between polls."""

    @abc.abstractmethod
    def close(self) -> None:
        """Close what is open (idempotent)."""

    def describe(self) -> str:
        return str(self.path)


def _check_index(path: Path, idx: np.ndarray, n_pixels: int, first: int,
                 shape: tuple[int, int], where: str) -> None:
    bad = (idx >= n_pixels) if idx.dtype.kind == "u" else ((idx < 0) | (idx >= n_pixels))
    if bad.any():
        j = int(np.argmax(bad))
        raise XpcsFileError(path, f"pixel index {int(idx[j])} of entry {first + j} is outside "
                            f"the {shape[0]} x {shape[1]} detector", where,
                            f"pixel indices in 0..{n_pixels - 1}")


def _read_1d(ds: h5py.Dataset, a: int, b: int) -> np.ndarray:
    """``ds[a:b]`` read ``READ_PIECE_BYTES`` at a time (h5py holds the GIL per call)."""
    step = max(1, READ_PIECE_BYTES // max(1, ds.dtype.itemsize))
    if b - a <= step:
        return np.asarray(ds[a:b])
    out = np.empty(b - a, dtype=ds.dtype)
    for s in range(a, b, step):
        e = min(b, s + step)
        ds.read_direct(out, np.s_[s:e], np.s_[s - a: e - a])
    return out

