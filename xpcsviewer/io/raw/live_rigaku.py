"""A Rigaku ``.bin`` being appended, followed live (the contract every live source
keeps: :mod:`xpcsviewer.io.raw.live`). The hit word is decoded by
:mod:`xpcsviewer.io.raw.rigaku`, as for a whole file.

Rules (docs/live.md states them for users)
------------------------------------------
**Rigaku ``.bin``** (:class:`GrowingRigakuSource`; one little-endian uint64 word per hit:
frame = bits 40-63, pixel = bits 16-36 into 512 x 1024, count = bits 0-11):

- complete frames are those before the frame of the last whole word written so far (the
  last frame may still be receiving words; a partial trailing word is ignored until it is
  whole); at the end (:meth:`~GrowingRigakuSource.final`) the last frame counts too;
- with an expected count N, frame N - 1 counts once it is the last frame seen and the
  file did not change between two polls;
- the file stores no writer flags and no end: the writer counts as open while the
  file's size or modification time changed within ``close_grace`` seconds, and is never
  told closed (a quiet file is a paused or dead writer, which the idle time ends; only
  the expected count ends a run as complete, issue 50);
- a partial word left at the end (:meth:`~GrowingRigakuSource.final`) proves the writer
  stopped inside a word: the state's ``problem`` is ``"partial_word"`` (``correlate``
  refuses such a file);
- frames going backwards, a pixel outside the module (after folding the 8-ID-I offset of
  2**20, as the static reader does), a file that shrinks or is replaced: XpcsFileError
  naming the file and the word.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace

import numpy as np

from xpcsviewer.io._h5 import NotRegularFile, open_regular
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.raw.live_common import (
    SourceNotReady,
    SourceState,
    _first_line,
)
from xpcsviewer.io.raw.live_hits import _LiveHits
from xpcsviewer.io.raw.rigaku import (
    MODULE_SHAPE,
    WORD,
    check_frame_order,
    count_field,
    first_word_of_frame,
    fold_pixels,
    frame_field,
    pixel_field,
    word_frame,
)
from xpcsviewer.model.events import EventBlock

__all__ = ["GrowingRigakuSource"]


class GrowingRigakuSource(_LiveHits):
    """A Rigaku XSPA ``.bin`` photon list being appended (see the module notes).

    Parameters
    ----------
    path : str or Path
    expected : int, optional
        Frames the acquisition will have.
    shape : (int, int), optional
        Ignored: a module is 512 x 1024.
    """

    kind = "rigaku"
    layout = "rigaku"

    def __init__(self, path: str | os.PathLike, expected: int | None = None,
                 shape: tuple[int, int] | None = None) -> None:
        super().__init__(path, expected, shape)
        self.frame_shape = MODULE_SHAPE
        self.dtype = np.dtype(np.uint16)
        self._fd: int | None = None
        self._ino = 0
        self._size = 0  # bytes at the last look
        self._words = 0  # whole words at the last look
        self._last = -1  # frame of the last whole word at the last look
        self._cursor = (0, 0)  # (frame f, index of its first word): where the next read starts

    # ---------------------------------------------------------------- words
    def _word(self, i: int) -> int:
        b = os.pread(self._fd, 8, 8 * i)
        if len(b) != 8:
            raise XpcsFileError(self.path, "shorter than before (truncated while being "
                                "followed)", f"word {i}", "a file that only grows")
        return int.from_bytes(b, "little")

    def _words_at(self, i0: int, i1: int) -> np.ndarray:
        out = np.empty(i1 - i0, dtype=WORD)
        view = memoryview(out).cast("B")
        got = 0
        while got < out.nbytes:  # pread may return less than asked
            n = os.preadv(self._fd, [view[got:]], 8 * i0 + got)
            if n <= 0:
                raise XpcsFileError(self.path, "shorter than before (truncated while being "
                                    "followed)", f"word {i0 + got // 8}",
                                    "a file that only grows")
            got += n
        return out

    def _lower_bound(self, frame: int, lo: int, hi: int) -> int:
        """First word in ``[lo, hi)`` whose frame is >= ``frame`` (binary search)."""
        return first_word_of_frame(lambda i: word_frame(self._word(i)), frame, lo, hi)

    def _look(self) -> tuple[float, bool]:
        """Size, last whole word and its frame now (raises SourceNotReady / XpcsFileError)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise SourceNotReady(f"waiting for {self.path.name} to appear") from None
        except OSError as exc:
            raise SourceNotReady(f"cannot look at it now ({_first_line(exc)})") from None
        if self._fd is None:
            try:
                fh = open_regular(self.path, buffering=0)  # a FIFO would block os.open
            except NotRegularFile as exc:
                raise XpcsFileError(self.path, str(exc), None, "a growing .bin file") from None
            except OSError as exc:
                raise SourceNotReady(f"cannot open it now ({_first_line(exc)})") from None
            self._fd = os.dup(fh.fileno())
            fh.close()
            self._ino = os.fstat(self._fd).st_ino
        elif st.st_ino != self._ino:
            raise XpcsFileError(self.path, "was replaced by another file while being followed",
                                None, "one file that only grows")
        if st.st_size < self._size:
            raise XpcsFileError(self.path, f"shorter than before ({st.st_size} bytes after "
                                f"{self._size}): truncated or rewritten while being followed",
                                f"word {st.st_size // 8}", "a file that only grows")
        mtime, changed = self._note_change()
        self._size = st.st_size
        words = st.st_size // 8
        if words > self._words:
            i = words - 1
            last = word_frame(self._word(i))
            if last < self._last:
                raise XpcsFileError(self.path, f"frame numbers go backwards: frame {last} "
                                    f"after frame {self._last}", f"word {i}",
                                    "hit words in frame order")
            self._words, self._last = words, last
        return mtime, changed

    def _writer(self) -> str:
        """``"open"`` while the file changed within the grace time, else ``"unknown"``:
        a quiet ``.bin`` is a paused or dead writer, never a closed one (the file states
        no end; the expected count or the idle time ends the run)."""
        if time.monotonic() - self._changed_at < self.close_grace:
            return "open"
        return "unknown"

    def _tail_note(self) -> str:
        extra = self._size % 8
        return (f"{extra} bytes after the last whole word ignored (a partial word: the "
                f"writer stopped inside word {self._size // 8}; correlate refuses such a "
                "file)" if extra else "")

    # ---------------------------------------------------------------- poll
    def poll(self) -> SourceState:
        """Look at the file now; never raises for a file that is being written.

        Raises
        ------
        XpcsFileError
            Frames going backwards, a file that shrinks or is replaced.
        """
        try:
            mtime, changed = self._look()
        except SourceNotReady as exc:
            self._state = replace(self._state, readable=False, note=str(exc))
            return self._state
        writer = self._writer()
        complete = max(0, self._last)
        exp = self.expected_arg
        if exp and self._last == exp - 1 and not changed:
            complete = exp  # the last expected frame, unchanged for a poll interval
        note = "" if self._words else f"{self.path.name}: no whole hit word yet"
        complete = max(complete, self._state.complete)
        self._state = SourceState(complete, self._last + 1, exp, writer, self._words > 0,
                                  note, mtime)
        return self._state

    def final(self) -> SourceState:
        """The frames to finish with: the last frame seen counts too."""
        try:
            mtime, _ = self._look()
        except SourceNotReady as exc:
            self._state = replace(self._state, readable=False,
                                  note=f"unreadable at the end ({exc})")
            return self._state
        complete = max(self._last + 1, self._state.complete)
        tail = self._tail_note()
        self._state = SourceState(complete, self._last + 1, self.expected_arg, self._writer(),
                                  self._words > 0, tail, mtime,
                                  "partial_word" if tail else "")
        return self._state

    # ---------------------------------------------------------------- read
    def read_events(self, start: int, stop: int) -> EventBlock:
        """The hits of frames ``[start, stop)`` (complete ones: within a poll's ``complete``).

        Raises
        ------
        XpcsFileError
            Frames going backwards or a pixel outside the module, naming the word.
        """
        a, b = int(start), int(stop)
        if b <= a or self._words == 0:
            return self._empty_block(a, max(a, b))
        n = self._words
        i0 = self._cursor[1] if self._cursor[0] == a else self._lower_bound(a, 0, n)
        i1 = self._lower_bound(b, i0, n)
        j0 = max(0, i0 - 1)  # one word before: the order is checked across reads
        words = self._words_at(j0, i1)
        frame = frame_field(words).view(np.int64)  # 24 bits: no copy needed
        check_frame_order(self.path, frame, j0)
        words, frame = words[i0 - j0:], frame[i0 - j0:]
        pixel = pixel_field(words).view(np.int64)
        fold_pixels(self.path, pixel, i0)  # the 8-ID-I offset of module pixel indices
        count = count_field(words)
        self._cursor = (b, i1)
        return EventBlock(a, b, frame, pixel, count)

    def release(self) -> None:
        """The file stays open between polls: replacing it is then seen (its inode)."""

    def close(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None

