"""Photon-sparse and event-mode raw sources: what every layout shares.

A sparse source stores only the pixels that saw photons: per hit, the raw frame, the
flat detector pixel (``row * W + col``) and the count. Each layout (Rigaku ``.bin``,
ESRF CSR HDF5, ID11 ``nnz/row/col/intensity``, Timepix event lists) is a subclass that
answers two questions about raw frames, cheaply and in frame order:

- :meth:`SparseSource._raw_count` ``(a, b)``: how many stored hits raw frames ``[a, b)`` hold;
- :meth:`SparseSource._raw_range` ``(a, b)``: those hits as (frame, pixel, count) arrays.

Everything else is here and the same for every layout: the frame selection
(``begin:end:stride``, then groups of ``avg`` frames averaged, exactly as
:class:`~xpcsviewer.io.raw.RawFrames` does for dense frames), the event blocks the photon
correlators read (:meth:`SparseSource.iter_events`), dense frames for everything that
wants frames (:meth:`SparseSource.read`, :meth:`SparseSource.iter_chunks`: a sparse source
works wherever a dense one does) and the description ``info`` prints. Only numpy (and
h5py in the HDF5 layouts).
"""

from __future__ import annotations

import abc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.model.events import EventBlock

__all__ = ["EDGE_FACTOR", "EDGE_HITS", "EDGE_MIN_HITS", "EVENTS_PER_BLOCK", "SparseSource",
           "check_edges", "dense_frames", "exclude_frames", "excluded_config",
           "select_frames"]

#: events per block handed to the correlators: the correlator's fixed work per pixel and
#: level is paid once per block, so blocks are large; but each array of a block stays
#: under glibc's largest heap allocation (32 MB), so that freed blocks are reused instead
#: of being mapped afresh (first-touch page faults cost ~0.1 s per 100 MB on our VMs)
EVENTS_PER_BLOCK = 6 << 20

#: stray hits at a run's edges (docs/sparse-formats.md, "Stray hits at the edges"): of the
#: first and of the last EDGE_HITS + 1 hits, the widest stretch of empty frames is looked at;
#: the source is refused when that stretch is more than EDGE_FACTOR times the frames
#: holding the rest of the hits and the rest's hits per frame would have put at least
#: EDGE_MIN_HITS hits into it (so sparse runs, whose hits are far apart, are not refused)
EDGE_HITS = 16
EDGE_FACTOR = 10
EDGE_MIN_HITS = 1000


def dense_frames(start: int, stop: int, frame: np.ndarray, pixel: np.ndarray,
                 value: np.ndarray, shape: tuple[int, int], dtype: Any) -> np.ndarray:
    """Frames ``[start, stop)`` as dense (n, rows, cols) counts from their hits (hits of
    one pixel and frame add), of ``dtype``, or of int64 when an integer ``dtype`` cannot
    hold a pixel's sum (issue 50: 100 hits of 4095 at one pixel wrapped at 65,536 in
    uint16)."""
    h, w = shape
    n = int(stop) - int(start)
    key = (np.asarray(frame, dtype=np.int64) - int(start)) * (h * w) + np.asarray(pixel,
                                                                                 np.int64)
    dense = np.bincount(key, weights=value, minlength=n * h * w)[: n * h * w]
    dt = np.dtype(dtype)
    if dt.kind in "iu" and dense.size and np.asarray(value).size:
        lim = np.iinfo(dt)
        if dense.max() > lim.max or dense.min() < lim.min:
            dt = np.dtype(np.int64)  # the float64 sums are exact up to 2**53
    return dense.astype(dt, copy=False).reshape(n, h, w)


def select_frames(src: Any, begin: int, end: int | None, stride: int,
                  avg: int) -> tuple[int, int, int, int, int]:
    """(begin, end, stride, avg, processed frames) of a selection of ``src.raw_frames``
    raw frames: ``begin:end:stride``, then groups of ``avg`` (a trailing partial group is
    dropped); dense and sparse readers alike.

    Raises
    ------
    ValueError
        A stride, average or bound that makes no sense.
    XpcsFileError
        A selection that leaves no frame (``src`` is closed first).
    """
    if stride < 1 or avg < 1:
        raise ValueError(f"stride and avg must be >= 1, got stride={stride}, avg={avg}")
    if int(begin) < 0:
        raise ValueError(f"--begin-frame must be >= 0 (got {begin}); frames count from the "
                         "first")
    if end is not None and int(end) < -1:
        raise ValueError(f"--end-frame must be >= 0, or -1 for the last frame (got {end})")
    raw = int(src.raw_frames)
    b = int(begin)
    e = raw if end is None or int(end) < 0 else min(int(end), raw)
    n = len(range(b, e, int(stride))) // int(avg)
    if n < 1:
        src.close()
        raise XpcsFileError(
            src.path, f"frame selection begin={begin} end={end} stride={stride} avg={avg} "
            f"leaves no frame of {raw}", src.dataset_path, "a non-empty frame range")
    return b, e, int(stride), int(avg), n


def exclude_frames(src: Any, blocks: Any) -> None:
    """Drop the raw frame ``blocks`` ((first, last), 0-based, inclusive, sorted and
    merged: :func:`~xpcsviewer.compute.spec.parse_frame_ranges`) from ``src``'s
    selection, dense and sparse readers alike: the frames ``begin:end`` less the blocks,
    then every ``stride``-th, then groups of ``avg``, as if the file had never held them.

    Sets ``src.kept`` (the raw frame of each selected frame, int64, sorted; None without
    blocks), ``src.excluded`` (the blocks clipped to ``begin:end``, those that drop a
    frame) and ``src.n_frames``.

    Raises
    ------
    ValueError
        A block beyond the source's frames, or a source without frames (an event list in
        time-tag mode).
    XpcsFileError
        Exclusions that leave no frame (``src`` is closed first).
    """
    blocks = tuple((int(a), int(b)) for a, b in blocks)
    if not blocks:
        return
    if getattr(src, "time_tag", False):
        raise ValueError("--exclude-frames needs frames: an event list read in time-tag "
                         "mode has none (give --bin-time)")
    raw = int(src.raw_frames)
    beyond = [(a, b) for a, b in blocks if b >= raw]
    if beyond:
        a, b = beyond[0]
        raise ValueError(f"--exclude-frames {a}-{b}: {src.path} holds {raw} frames "
                         f"(0..{raw - 1})")
    b0, e0 = int(src.begin), int(src.end)
    drop = np.zeros(max(e0 - b0, 0), dtype=bool)
    excluded = []
    for a, b in blocks:
        lo, hi = max(a, b0), min(b + 1, e0)
        if hi > lo:
            drop[lo - b0:hi - b0] = True
            excluded.append((lo, hi - 1))
    kept = (np.flatnonzero(~drop) + b0)[:: int(src.stride)]
    n = kept.size // int(src.avg)
    if n < 1:
        src.close()
        raise XpcsFileError(
            src.path, f"excluding frames {', '.join(f'{a}-{b}' for a, b in blocks)} from "
            f"frames {b0}..{e0 - 1} (stride {src.stride}, avg {src.avg}) leaves no frame",
            src.dataset_path, "frames left to correlate")
    src.kept = kept[: n * int(src.avg)].astype(np.int64)
    src.excluded = tuple(excluded)
    src.n_frames = n


def excluded_config(src: Any) -> dict[str, Any]:
    """The config keys of a source's excluded frames (none without exclusions)."""
    if getattr(src, "kept", None) is None:
        return {}
    blocks = src.excluded
    return {"excluded_frames": ",".join(str(a) if a == b else f"{a}-{b}" for a, b in blocks),
            "excluded_frame_count": int(sum(b - a + 1 for a, b in blocks)),
            "excluded_blocks": len(blocks)}


def _edge_error(src: Any, problem: str, where: str, expected: str) -> XpcsFileError:
    src.close()
    return XpcsFileError(src.path, problem, where, expected)


def check_edges(src: Any, b: int, e: int) -> None:
    """Refuse raw frames ``[b, e)`` of ``src`` when a few hits at their start or end lie
    implausibly far from the rest (the rule of :data:`EDGE_FACTOR`): the frames between
    would be invented empty frames, and g2 over them wrong by their number. The error
    names the hit (file, word or entry, frame or time) and the selection that leaves it
    out. ``src._edge_hits(b, e, k)`` gives the hits: see :meth:`SparseSource._edge_hits`.
    """
    got = src._edge_hits(b, e, EDGE_HITS)
    if got is None:
        return
    n, head, tail = got
    if n < 2 or not head or not tail:
        return
    # end: the widest jump among the last hits; p: the last frame of the rest
    j = max(range(1, len(tail)), key=lambda i: tail[i][0] - tail[i - 1][0], default=0)
    if j:
        p, (f, where, what) = tail[j - 1][0], tail[j]
        gap, rest, rest_hits = f - p - 1, p - b + 1, n - (len(tail) - j)
        if gap > EDGE_FACTOR * rest and gap * rest_hits >= EDGE_MIN_HITS * rest:
            more = len(tail) - j - 1
            raise _edge_error(
                src, f"{what} lies {gap} empty frames after the rest of the run ({rest_hits} "
                f"hits in frames {b}..{p})" + (f", with {more} more hit(s) after it" if more
                                                else "") + f": a run of {e - b} frames where the "
                f"hits fill {rest}", where,
                f"hits spread over the run (an empty stretch at its start or end at most "
                f"{EDGE_FACTOR} x the frames of the other hits); frames {b}..{p} are read "
                f"with --end-frame {p + 1}")
    # start: the widest jump among the first hits, frame b - 1 before them
    frames = [b - 1] + [h[0] for h in head]
    j = max(range(1, len(frames)), key=lambda i: frames[i] - frames[i - 1])
    q = frames[j]
    gap, rest, rest_hits = q - frames[j - 1] - 1, e - q, n - (j - 1)
    if gap > EDGE_FACTOR * rest and gap * rest_hits >= EDGE_MIN_HITS * rest:
        _, where, what = head[j - 2] if j > 1 else head[0]
        if j > 1:
            problem = (f"{what} lies {gap} empty frames before the rest of the run "
                       f"({rest_hits} hits in frames {q}..{e - 1})")
        else:
            problem = (f"the first hit, {what}, comes after {gap} empty frames (the "
                       f"{rest_hits} hits are in frames {q}..{e - 1})")
        raise _edge_error(
            src, problem + f": a run of {e - b} frames where the hits fill {rest}", where,
            f"hits spread over the run (an empty stretch at its start or end at most "
            f"{EDGE_FACTOR} x the frames of the other hits); frames {q}.. are read with "
            f"--begin-frame {q}")


class SparseSource(abc.ABC):
    """Base of the sparse layouts (see the module notes).

    Subclasses set, in ``__init__`` before calling :meth:`_select`:
    ``path`` (Path), ``layout`` (short name), ``layout_text`` (what it is, for ``info``),
    ``dataset_path`` (the field errors name, or None), ``raw_frames`` (int),
    ``frame_shape`` ((H, W)), ``count_dtype`` (numpy dtype of the stored counts),
    ``raw_events`` (stored hits in all raw frames), ``frame_time`` (s, or None when the
    file has none); and implement :meth:`_raw_count`, :meth:`_raw_range`, :meth:`close`.
    """

    sparse = True
    layout = "sparse"
    layout_text = "photon-sparse frames"
    dataset_path: str | None = None
    frame_time: float | None = None
    count_time: float | None = None
    #: a list of files (module files, blocks) the source reads, for ``info``
    files: tuple[Path, ...] = ()
    #: the raw frame of each selected frame when frames are excluded (:func:`exclude_frames`)
    kept: np.ndarray | None = None
    excluded: tuple[tuple[int, int], ...] = ()

    # ------------------------------------------------------------ subclass API
    @abc.abstractmethod
    def _raw_count(self, a: int, b: int) -> int:
        """Stored hits in raw frames ``[a, b)`` (from an index: never a pass over them)."""

    @abc.abstractmethod
    def _raw_range(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(frame, pixel, count) of the hits of raw frames ``[a, b)``, in frame order,
        read with bounded memory (only that range)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release file handles (idempotent)."""

    def _edge_hits(self, b: int, e: int,
                   k: int) -> tuple[int, list[tuple[int, str, str]],
                                    list[tuple[int, str, str]]] | None:
        """(hits in raw frames ``[b, e)``, their first ``k + 1`` and their last ``k + 1``
        hits in frame order), each hit ``(raw frame, where, what)``: where it is stored
        (a word, an entry; the error's dataset) and what it holds (its frame or time), for
        :func:`check_edges`. None (the default): the layout stores its frame count, so no
        hit stretches the run."""
        return None

    @property
    def _frame_dtype(self) -> type:
        """Frame numbers in 4 bytes when they fit (half the memory traffic of int64)."""
        return np.int32 if self.raw_frames < (1 << 31) else np.int64

    # ------------------------------------------------------------ selection
    def _select(self, begin: int = 0, end: int | None = -1, stride: int = 1,
                avg: int = 1) -> None:
        """Apply the frame selection (same rules and messages as ``RawFrames``); refuse
        stray hits at the edges of the selected frames (:func:`check_edges`)."""
        self.begin, self.end, self.stride, self.avg, self.n_frames = select_frames(
            self, begin, end, stride, avg)
        a, b = self._raw_span(0, self.n_frames)
        check_edges(self, a, b)

    def exclude_frames(self, blocks: Any) -> None:
        """Drop raw frame blocks from the selection (see :func:`exclude_frames`); stray
        hits at the edges of what is left are refused as in :meth:`_select`."""
        exclude_frames(self, blocks)
        if self.kept is not None:
            a, b = self._raw_span(0, self.n_frames)
            check_edges(self, a, b)

    def _raw_span(self, start: int, stop: int) -> tuple[int, int]:
        """Raw frames ``[a, b)`` holding processed frames ``[start, stop)``."""
        if self.kept is not None:
            return int(self.kept[start * self.avg]), int(self.kept[stop * self.avg - 1]) + 1
        step = self.stride * self.avg
        a = self.begin + start * step
        b = self.begin + (stop - 1) * step + (self.avg - 1) * self.stride + 1
        return a, b

    def _processed(self, frame: np.ndarray, pixel: np.ndarray, count: np.ndarray,
                   start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Raw hits -> hits of processed frames ``[start, stop)`` (selection applied)."""
        if self.kept is not None:
            # excluded frames: a hit's processed frame is its raw frame's place among
            # the kept ones; the hits of dropped frames go
            fr = np.asarray(frame, dtype=np.int64)
            pos = np.searchsorted(self.kept, fr)
            inside = pos < self.kept.size
            hit = np.zeros(fr.size, dtype=bool)
            hit[inside] = self.kept[pos[inside]] == fr[inside]
            pf = pos // self.avg
            keep = hit & (pf >= start) & (pf < stop)
        elif self.stride == 1 and self.avg == 1:
            # _raw_span maps [start, stop) to exactly these raw frames: nothing to drop
            pf = frame - self.begin if self.begin else frame
            return pf, np.asarray(pixel), count
        else:
            rel = np.asarray(frame, dtype=np.int64) - self.begin
            sel, off = np.divmod(rel, self.stride)
            pf = sel // self.avg
            keep = (off == 0) & (rel >= 0) & (pf >= start) & (pf < stop)
        pf = pf[keep]
        px = np.asarray(pixel, dtype=np.int64)[keep]
        c = count[keep]
        if self.avg == 1:
            return pf, px, c
        # the mean of avg frames: integer counts summed first, then divided (as the
        # dense reader's mean), so both give the same float64 values
        npx = self.frame_shape[0] * self.frame_shape[1]
        key = pf * npx + px
        uk, inv = np.unique(key, return_inverse=True)
        sums = np.bincount(inv, weights=c.astype(np.float64), minlength=uk.size)
        return uk // npx, uk % npx, sums / self.avg

    # ------------------------------------------------------------ events
    @property
    def n_events(self) -> int:
        """Stored hits in the raw frames the selection spans (less excluded frames')."""
        a, b = self._raw_span(0, self.n_frames)
        dropped = sum(self._raw_count(max(x, a), min(y + 1, b)) for x, y in self.excluded
                      if min(y + 1, b) > max(x, a))
        return self._raw_count(a, b) - dropped

    def iter_events(self, max_events: int = EVENTS_PER_BLOCK, start: int = 0,
                    stop: int | None = None) -> Iterator[EventBlock]:
        """Hits of processed frames ``[start, stop)`` in blocks of about ``max_events``.

        Blocks never split a processed frame (so an averaged frame is whole).
        """
        stop = self.n_frames if stop is None else min(int(stop), self.n_frames)
        f = max(0, int(start))
        per_frame = max(self.n_events / max(self.n_frames, 1), 1e-9)
        step = max(1, int(max_events / per_frame))
        while f < stop:
            g = min(stop, f + step)
            a, b = self._raw_span(f, g)
            n = self._raw_count(a, b)
            while n > 2 * max_events and g - f > 1:
                g = f + max(1, (g - f) // 2)
                a, b = self._raw_span(f, g)
                n = self._raw_count(a, b)
            fr, px, c = self._raw_range(a, b)
            pf, pp, pv = self._processed(fr, px, c, f, g)
            yield EventBlock(f, g, pf, pp, pv)
            f = g

    # ------------------------------------------------------------ dense view
    @property
    def shape(self) -> tuple[int, int, int]:
        """(N, rows, cols) of the processed frames."""
        return (self.n_frames, *self.frame_shape)

    @property
    def out_dtype(self) -> np.dtype:
        """dtype of dense frames: the stored counts', or float64 when averaging."""
        return np.dtype(self.count_dtype) if self.avg == 1 else np.dtype(np.float64)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.count_dtype)

    def read(self, start: int, stop: int, out: np.ndarray | None = None) -> np.ndarray:
        """Processed frames ``[start, stop)`` as dense (n, rows, cols) counts."""
        start = max(0, int(start))
        stop = min(self.n_frames, int(stop))
        h, w = self.frame_shape
        if stop <= start:
            return np.empty((0, h, w), dtype=self.out_dtype)
        a, b = self._raw_span(start, stop)
        fr, px, c = self._raw_range(a, b)
        pf, pp, pv = self._processed(fr, px, c, start, stop)
        return dense_frames(start, stop, pf, pp, pv, (h, w), self.out_dtype)

    def iter_chunks(self, chunk_size: int = 128, reuse: bool = False) -> Iterator[np.ndarray]:
        """Dense (n <= chunk_size, rows, cols) processed frames, in order."""
        if chunk_size < 1:
            raise ValueError("chunk_size must be >= 1")
        for a in range(0, self.n_frames, chunk_size):
            yield self.read(a, a + chunk_size)

    # ------------------------------------------------------------ description
    def describe(self) -> dict[str, Any]:
        """Selection summary for the result file's config group."""
        return {
            "raw": str(self.path),
            "raw_layout": self.layout,
            "begin_frame": self.begin,
            "end_frame": self.end,
            "stride_frame": self.stride,
            "avg_frame": self.avg,
            "raw_frames": self.raw_frames,
            "n_frames": self.n_frames,
            **excluded_config(self),
        }

    def summary(self, count_photons: bool = True) -> dict[str, Any]:
        """What ``info`` says of the source: layout, frames, events, occupancy,
        photons per frame (a pass over the counts when ``count_photons``)."""
        h, w = self.frame_shape
        events = self._raw_count(0, self.raw_frames)
        out: dict[str, Any] = {
            "path": str(self.path),
            "kind": "raw",
            "layout": self.layout,
            "layout_text": self.layout_text,
            "sparse": True,
            "detector_shape": [int(h), int(w)],
            "n_frames": int(self.raw_frames),
            "frame_time": self.frame_time,
            "events": int(events),
            "occupancy": events / max(1.0, float(self.raw_frames) * h * w),
            "count_dtype": str(np.dtype(self.count_dtype)),
            "files": [str(p) for p in self.files] or [str(self.path)],
        }
        if count_photons:
            total = 0.0
            step = max(1, int(EVENTS_PER_BLOCK / max(events / max(self.raw_frames, 1), 1e-9)))
            for a in range(0, self.raw_frames, step):
                _, _, c = self._raw_range(a, min(self.raw_frames, a + step))
                total += float(np.sum(c, dtype=np.float64))
            out["photons"] = total
            out["photons_per_frame"] = total / max(self.raw_frames, 1)
        return out

    # ------------------------------------------------------------ context
    def __enter__(self) -> SparseSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass
