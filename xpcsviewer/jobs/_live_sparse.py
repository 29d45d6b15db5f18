"""The photon side of the live job (:mod:`xpcsviewer.jobs.live`): the correlator of hits,
how many frames to read at once, and the count rules applied to hits.

A sparse live source (:mod:`xpcsviewer.io.raw.live`) hands out the hits of complete
frames; they go to :class:`~xpcsviewer.compute.multitau.photons.StreamingSparseMultitau`,
whose snapshots equal the dense correlator on the same frames. The count rules are the
dense live job's: a negative count is refused where the q-map uses the pixel and dropped
elsewhere (with a note); a NaN/Inf count at a used pixel is refused (``correlate`` masks
such a pixel for the whole run, which frames already correlated cannot follow), elsewhere
dropped. Without numba the photon correlator cannot run: the job then feeds the dense
correlator the source's dense frames, and says so.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as _wait
from typing import Any

import numpy as np

from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.raw.sparse import EVENTS_PER_BLOCK
from xpcsviewer.model.events import EventBlock

__all__ = ["ReadAhead", "checked_hits", "frames_per_read", "photon_stream", "warm_photons"]

#: frames of the first read of a sparse source (before a rate of hits is known)
FIRST_READ_FRAMES = 256


def warm_photons(dtype: Any = np.uint16) -> bool:
    """Load the photon correlator's kernels now; False when it cannot run (no numba)."""
    from xpcsviewer.compute.multitau.photons import StreamingSparseMultitau, available

    if not available():
        return False
    from xpcsviewer.compute.inputs import Partition

    one = np.ones((1, 2), dtype=np.int64)
    StreamingSparseMultitau(Partition(one, one)).warm(np.dtype(dtype or np.uint16))
    return True


def photon_stream(qmap: Any, spec: Any, expected: int | None) -> Any:
    """The photon correlator of ``qmap`` (``spec``: the live run's CorrelateSpec)."""
    from xpcsviewer.compute.multitau.photons import StreamingSparseMultitau

    return StreamingSparseMultitau(qmap, spec, expected_frames=expected)


def frames_per_read(hits: int, frames: int) -> int:
    """Frames whose hits make about one correlator block (``EVENTS_PER_BLOCK``), from the
    hits per frame read so far."""
    if frames <= 0:
        return FIRST_READ_FRAMES
    per_frame = max(hits / frames, 1e-9)
    return max(1, int(EVENTS_PER_BLOCK / per_frame))


def checked_hits(block: EventBlock, used: np.ndarray, src: Any) -> tuple[EventBlock, int]:
    """``(block, negatives dropped)`` after the count rules (module notes).

    ``used``: (H*W,) bool, the pixels the q-map uses.

    Raises
    ------
    XpcsFileError
        A negative or non-finite count at a used pixel, naming frame and pixel.
    """
    v = block.value
    if v.dtype.kind not in "if" or v.size == 0:
        return block, 0
    w = src.frame_shape[1]
    drop = None
    if v.dtype.kind == "f":
        nf = ~np.isfinite(v)
        if nf.any():
            bad = nf & used[block.pixel]
            if bad.any():
                i = int(np.argmax(bad))
                r, c = divmod(int(block.pixel[i]), w)
                raise XpcsFileError(
                    src.describe(), f"non-finite count in frame {int(block.frame[i])} at "
                    f"pixel ({r}, {c}), where the q-map uses the pixel", src.dataset,
                    "finite counts (or mask that pixel in the q-map)")
            drop = nf
    neg = v < 0
    n_neg = 0
    if neg.any():
        bad = neg & used[block.pixel]
        if bad.any():
            i = int(np.argmax(bad))
            r, c = divmod(int(block.pixel[i]), w)
            raise XpcsFileError(
                src.describe(), f"negative counts ({v[i].item()!r} in frame {int(block.frame[i])} "
                f"at pixel ({r}, {c})) where the q-map uses the pixel", src.dataset,
                "counts >= 0 (or mask those pixels in the q-map)")
        n_neg = int(neg.sum())
        drop = neg if drop is None else (drop | neg)
    if drop is None:
        return block, 0
    keep = ~drop
    return EventBlock(block.start, block.stop, block.frame[keep], block.pixel[keep],
                      v[keep]), n_neg


class ReadAhead:
    """The next block of hits read (decoded and checked, :func:`checked_hits`) in a thread
    of its own while the caller correlates the last one.

    One read at a time and at most one block waiting, never past the frames the caller
    asked for: the source is never read from two threads at once, and a poll, a release
    or a close of the source waits for no read (the caller drains first). The numba
    kernels and the reads (``pread``, NumPy's shifts and masks) release the GIL, so the
    read runs beside the correlation. A read's error (``XpcsFileError`` naming the file,
    ``SourceNotReady``) is raised where its block is taken.
    """

    def __init__(self, src: Any, used: np.ndarray) -> None:
        self.src = src
        self.used = used
        self._ex: ThreadPoolExecutor | None = None
        self._pending: tuple[int, int, Future] | None = None

    def _read(self, start: int, stop: int) -> tuple[EventBlock, int]:
        return checked_hits(self.src.read_events(start, stop), self.used, self.src)

    def submit(self, start: int, stop: int) -> None:
        """Start reading frames ``[start, stop)`` (after any read under way)."""
        self.drain()
        if self._ex is None:
            self._ex = ThreadPoolExecutor(1, thread_name_prefix="xpcs-live-read")
        self._pending = (int(start), int(stop), self._ex.submit(self._read, start, stop))

    def take(self, start: int, stop: int) -> tuple[EventBlock, int]:
        """``(block, negatives dropped)`` of frames ``[start, stop)``: the block read
        ahead when it is that one, else read now."""
        p, self._pending = self._pending, None
        if p is not None:
            if (p[0], p[1]) == (start, stop):
                return p[2].result()
            _wait([p[2]])
        return self._read(start, stop)

    @property
    def pending(self) -> bool:
        return self._pending is not None

    def drain(self) -> None:
        """Wait for a read under way; its block (or error) is dropped."""
        p, self._pending = self._pending, None
        if p is not None:
            _wait([p[2]])

    def close(self) -> None:
        self.drain()
        if self._ex is not None:
            self._ex.shutdown(wait=True)
            self._ex = None
