"""The streams of one q-bin for :func:`xpcsviewer.jobs.rebin_one.recompute_bin`: read
from the raw source (dense frames cut to the bin's box, a sparse source's hits of the bin,
frames formed from hits without numba) or from the bin's counts or hits kept from the last
recompute of that bin (:data:`CACHE_BYTES`, one bin), with the same count rules and the same
normalisation either way."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import numpy as np

from xpcsviewer.compute.inputs import FrameStream, Partition

#: frames per dense read (the correlate job's multi-tau chunk)
CHUNK_FRAMES = 128
#: the bin's hits handed to the photon correlator at a time (blocks merged up to this)
MERGED_HITS = 2 << 20
#: a bin's counts (dense) or hits (photons) kept in memory for the next recompute of the
#: same bin (a mask edited again and again): the first recompute reads them, the next
#: ones only correlate
CACHE_BYTES = 1 << 30
_cache: dict[tuple, _BinValues | _BinHits] = {}  # one entry: the last bin read


def _bin_partition(qm: Any, q_bin: int, valid: np.ndarray,
                   box: tuple[slice, slice] | None = None) -> Partition:
    """The partition of bin ``q_bin`` alone (the q-map's bin numbers kept), cut to
    ``box``."""
    dyn = np.asarray(qm.dynamic_roi_map)
    sta = np.asarray(qm.static_roi_map)
    inside = dyn == q_bin
    d = np.where(inside, dyn, 0)
    s = np.where(inside, sta, 0)
    m = np.asarray(valid, bool)
    if box is not None:
        d, s, m = d[box], s[box], m[box]
    return Partition(d, s, m, qm.n_dynamic, qm.n_static)


def _box(pixels: np.ndarray) -> tuple[slice, slice]:
    r = np.flatnonzero(pixels.any(axis=1))
    c = np.flatnonzero(pixels.any(axis=0))
    return slice(int(r[0]), int(r[-1]) + 1), slice(int(c[0]), int(c[-1]) + 1)


def _frame_scale(values: np.ndarray) -> np.ndarray:
    """1 / (per-frame mean over the correlated pixels), as the correlators take it."""
    mean = values.mean(axis=1, dtype=np.float64)
    return 1.0 / np.where(mean > 0, mean, 1.0)


@dataclasses.dataclass
class _BinValues:
    """The counts of one dense bin's pixels in every frame, as read (``values`` (n,
    n_pixels), the stored integer dtype), and for a normalised job the per-frame sums
    of the other correlated pixels (``outside``, ``n_outside`` of them)."""

    values: np.ndarray
    outside: np.ndarray | None
    n_outside: int


def _cache_key(source: Any, qm: Any, q_bin: int, valid: np.ndarray,
               normalize: bool) -> tuple | None:
    path = getattr(source, "path", None)
    try:
        st = os.stat(path)
    except (OSError, TypeError):
        return None
    dyn, sta = np.asarray(qm.dynamic_roi_map), np.asarray(qm.static_roi_map)
    in_bin = (dyn == q_bin) & (sta > 0)
    # the other pixels' sums depend on which of them are valid; the bin's own pixels
    # may be masked and unmasked at will (they are all kept)
    outside = (valid & (dyn > 0) & (sta > 0) & ~in_bin).tobytes() if normalize else b""
    return (os.fspath(path), st.st_mtime_ns, st.st_size, int(source.n_frames),
            getattr(source, "stride", 1), getattr(source, "avg", 1), q_bin,
            in_bin.tobytes(), sta[in_bin].tobytes(), hash(outside), normalize)


def _read_bin(source: Any, qm: Any, q_bin: int, valid: np.ndarray, normalize: bool,
              progress: Any, cancel: Any) -> _BinValues | None:
    """Every frame's counts at the bin's pixels (all of them, masked or not), read once;
    None for float frames (NaN counts have their own rules) or above CACHE_BYTES."""
    from xpcsviewer.progress import report

    dyn, sta = np.asarray(qm.dynamic_roi_map), np.asarray(qm.static_roi_map)
    in_bin = (dyn == q_bin) & (sta > 0)
    other = valid & (dyn > 0) & (sta > 0) & ~in_bin
    box = _box(in_bin | other) if normalize else _box(in_bin)
    idx_in = np.flatnonzero(in_bin[box])
    idx_out = np.flatnonzero(other[box])
    n = int(source.n_frames)
    values = outside = None
    for a in range(0, n, CHUNK_FRAMES):
        report(progress, cancel, a, n, f"reading the bin: frame {a} of {n}")
        chunk = np.asarray(source.read_box(a, a + CHUNK_FRAMES, *box))
        if values is None:
            if chunk.dtype.kind not in "ui" or n * idx_in.size * chunk.itemsize > CACHE_BYTES:
                return None
            values = np.empty((n, idx_in.size), dtype=chunk.dtype)
            outside = np.zeros(n) if normalize else None
        flat = chunk.reshape(chunk.shape[0], -1)
        values[a:a + flat.shape[0]] = flat[:, idx_in]
        if outside is not None:
            outside[a:a + flat.shape[0]] = flat[:, idx_out].sum(axis=1, dtype=np.float64)
    if values is None:
        return None
    return _BinValues(values, outside, int(idx_out.size))


@dataclasses.dataclass
class _BinHits:
    """The hits of one bin's pixels (all of them, masked or not; integer counts), as
    blocks ``(start, stop, frame, pixel, value)``, and for a normalised job the per-frame
    sums of the other correlated pixels' hits (``outside``)."""

    blocks: list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]]
    outside: np.ndarray | None


def _read_bin_hits(source: Any, qm: Any, q_bin: int, valid: np.ndarray, normalize: bool,
                   progress: Any, cancel: Any) -> _BinHits | None:
    """The bin's hits, streamed once from the source; None for float counts or above
    CACHE_BYTES."""
    from xpcsviewer.progress import report

    dyn, sta = np.asarray(qm.dynamic_roi_map), np.asarray(qm.static_roi_map)
    in_bin = ((dyn == q_bin) & (sta > 0)).ravel()
    other = (valid & (dyn > 0) & (sta > 0)).ravel() & ~in_bin
    n = int(source.n_frames)
    outside = np.zeros(n) if normalize else None
    blocks, held = [], 0
    for b in source.iter_events():
        report(progress, cancel, int(b.start), n, f"reading the bin: frame {b.start} of {n}")
        if b.value.dtype.kind not in "ui":
            return None
        keep = in_bin[b.pixel]
        f, p, v = b.frame[keep], b.pixel[keep], b.value[keep]
        held += f.nbytes + p.nbytes + v.nbytes
        if held > CACHE_BYTES:
            return None
        blocks.append((int(b.start), int(b.stop), f, p, v))
        if outside is not None:
            ok = other[b.pixel]
            outside[b.start:b.stop] += np.bincount(
                b.frame[ok] - b.start, weights=np.asarray(b.value, np.float64)[ok],
                minlength=b.stop - b.start)[: b.stop - b.start]
    return _BinHits(blocks, outside)


def _cached_hits_stream(data: _BinHits, source: Any, qm: Any, q_bin: int, valid: np.ndarray,
                        normalize: bool, notes: list[str], masked: Any
                        ) -> tuple[FrameStream, Partition]:
    """The bin's hits from the kept ones, with the mask as it is now (see
    :func:`_event_stream`: the same normalisation, its sums split in two)."""
    from xpcsviewer.jobs._correlate_counts import checked_events
    from xpcsviewer.model.events import EventBlock

    dyn, sta = np.asarray(qm.dynamic_roi_map), np.asarray(qm.static_roi_map)
    every = (valid & (dyn > 0) & (sta > 0)).ravel()
    bin_px = every & (dyn == q_bin).ravel()
    n_every = max(int(every.sum()), 1)
    n = int(source.n_frames)

    def kept():
        raw = (EventBlock(a, z, f, p, v) for a, z, f, p, v in data.blocks)
        for b in checked_events(raw, bin_px, source, notes, masked):
            keep = bin_px[b.pixel]
            f, p, v = b.frame[keep], b.pixel[keep], b.value[keep]
            if normalize:
                sums = data.outside[b.start:b.stop] + np.bincount(
                    f - b.start, weights=np.asarray(v, np.float64),
                    minlength=b.stop - b.start)[: b.stop - b.start]
                mean = sums / n_every
                sc = 1.0 / np.where(mean > 0, mean, 1.0)
                v = np.asarray(v, np.float64) * sc[f - b.start]
            yield EventBlock(b.start, b.stop, f, p, v)

    return FrameStream(lambda: _merged_blocks(kept()), n, 1.0, source.stride, source.avg), \
        _bin_partition(qm, q_bin, valid)


def _cached_stream(data: _BinValues, source: Any, qm: Any, q_bin: int, valid: np.ndarray,
                   normalize: bool, notes: list[str], masked: Any
                   ) -> tuple[FrameStream, Partition]:
    """The bin's frames from its kept counts: one row of its pixels (a bin's g2 does not
    depend on where they lie), with the mask as it is now."""
    from xpcsviewer.jobs._correlate_counts import checked_chunks

    dyn, sta = np.asarray(qm.dynamic_roi_map), np.asarray(qm.static_roi_map)
    in_bin = (dyn == q_bin) & (sta > 0)
    m = np.asarray(valid, bool)[in_bin]
    n_px = int(m.size)
    n = int(source.n_frames)
    n_used = data.n_outside + int(m.sum())

    def chunks():
        raw_chunks = (data.values[a:a + CHUNK_FRAMES].reshape(-1, 1, n_px)
                      for a in range(0, n, CHUNK_FRAMES))
        a = 0
        for chunk in checked_chunks(raw_chunks, m[None, :], source, notes, masked):
            k = chunk.shape[0]
            if normalize:
                inside = chunk.reshape(k, n_px)[:, m].sum(axis=1, dtype=np.float64)
                mean = (data.outside[a:a + k] + inside) / max(n_used, 1)
                chunk = chunk * (1.0 / np.where(mean > 0, mean, 1.0))[:, None, None]
            a += k
            yield chunk

    part = Partition(np.full((1, n_px), q_bin, dtype=dyn.dtype), sta[in_bin][None, :],
                     m[None, :], qm.n_dynamic, qm.n_static)
    return FrameStream(chunks, n, 1.0, source.stride, source.avg), part


def _dense_stream(source: Any, qm: Any, q_bin: int, valid: np.ndarray, normalize: bool,
                  notes: list[str], masked: Any, progress: Any, cancel: Any
                  ) -> tuple[FrameStream, Partition]:
    from xpcsviewer.jobs._correlate_counts import checked_chunks

    bin_px = valid & (np.asarray(qm.dynamic_roi_map) == q_bin) \
        & (np.asarray(qm.static_roi_map) > 0)
    every = valid & (np.asarray(qm.dynamic_roi_map) > 0) & (np.asarray(qm.static_roi_map) > 0)
    box = _box(bin_px)
    read_box = _box(every) if normalize else box  # the mean needs every correlated pixel
    sub = (slice(box[0].start - read_box[0].start, box[0].stop - read_box[0].start),
           slice(box[1].start - read_box[1].start, box[1].stop - read_box[1].start))
    checked = (every if normalize else bin_px)[read_box]
    idx_all = np.flatnonzero(every[read_box])
    n = int(source.n_frames)

    def chunks():
        raw_chunks = (source.read_box(a, a + CHUNK_FRAMES, *read_box)
                      for a in range(0, n, CHUNK_FRAMES))
        for chunk in checked_chunks(raw_chunks, checked, source, notes, masked):
            if normalize:
                sc = _frame_scale(np.take(chunk.reshape(chunk.shape[0], -1), idx_all, axis=1))
                yield chunk[(slice(None), *sub)] * sc[:, None, None]
            else:
                yield chunk[(slice(None), *sub)]

    stream = FrameStream(chunks, n, 1.0, source.stride, source.avg)
    return stream, _bin_partition(qm, q_bin, valid, box)


def _event_stream(source: Any, qm: Any, q_bin: int, valid: np.ndarray, normalize: bool,
                  notes: list[str], masked: Any, progress: Any, cancel: Any
                  ) -> tuple[FrameStream, Partition]:
    from xpcsviewer.jobs._correlate_counts import checked_events
    from xpcsviewer.model.events import EventBlock

    dyn, sta = np.asarray(qm.dynamic_roi_map), np.asarray(qm.static_roi_map)
    every = (valid & (dyn > 0) & (sta > 0)).ravel()
    bin_px = every & (dyn == q_bin).ravel()
    n_every = max(int(every.sum()), 1)
    checked = every if normalize else bin_px
    n = int(source.n_frames)

    def kept():
        for b in checked_events(source.iter_events(), checked, source, notes, masked):
            keep = bin_px[b.pixel]
            f, p, v = b.frame[keep], b.pixel[keep], b.value[keep]
            if normalize:
                ok = every[b.pixel]
                sums = np.bincount(b.frame[ok] - b.start,
                                   weights=np.asarray(b.value, np.float64)[ok],
                                   minlength=b.stop - b.start)[: b.stop - b.start]
                mean = sums / n_every
                sc = 1.0 / np.where(mean > 0, mean, 1.0)
                v = np.asarray(v, np.float64) * sc[f - b.start]
            yield EventBlock(b.start, b.stop, f, p, v)


    stream = FrameStream(lambda: _merged_blocks(kept()), n, 1.0, source.stride, source.avg)
    return stream, _bin_partition(qm, q_bin, valid)


def _merged_blocks(blocks: Any) -> Any:
    """A bin's event blocks merged up to MERGED_HITS hits: the bin keeps few of each source
    block's hits, and the correlator's fixed work per block is then paid a few times, not
    once per source block."""
    parts: list[Any] = []
    held = 0
    for b in blocks:
        parts.append(b)
        held += b.frame.size
        if held >= MERGED_HITS:
            yield _merged(parts)
            parts, held = [], 0
    if parts:
        yield _merged(parts)


def _merged(parts: list[Any]) -> Any:
    """Consecutive event blocks as one."""
    from xpcsviewer.model.events import EventBlock

    if len(parts) == 1:
        return parts[0]
    cat = np.concatenate
    return EventBlock(parts[0].start, parts[-1].stop, cat([b.frame for b in parts]),
                      cat([b.pixel for b in parts]), cat([b.value for b in parts]))


def _formed_stream(source: Any, qm: Any, q_bin: int, valid: np.ndarray, normalize: bool,
                   notes: list[str], masked: Any, progress: Any, cancel: Any
                   ) -> tuple[FrameStream, Partition]:
    """Dense frames of a sparse source without the photon correlator (no numba): the
    frames formed from the hits, cut to the bin's box."""
    from xpcsviewer.jobs._correlate_counts import checked_chunks

    dyn, sta = np.asarray(qm.dynamic_roi_map), np.asarray(qm.static_roi_map)
    every = valid & (dyn > 0) & (sta > 0)
    bin_px = every & (dyn == q_bin)
    box = _box(bin_px)
    idx_all = np.flatnonzero(every)
    n = int(source.n_frames)

    def chunks():
        for chunk in checked_chunks(source.iter_chunks(CHUNK_FRAMES),
                                    every if normalize else bin_px, source, notes, masked):
            part = chunk[(slice(None), *box)]
            if normalize:
                sc = _frame_scale(np.take(chunk.reshape(chunk.shape[0], -1), idx_all, axis=1))
                part = part * sc[:, None, None]
            yield part

    return FrameStream(chunks, n, 1.0, source.stride, source.avg), \
        _bin_partition(qm, q_bin, valid, box)


def bin_stream(source: Any, qm: Any, q_bin: int, valid: np.ndarray, normalize: bool,
               photons: bool, notes: list[str], masked: Any, progress: Any, cancel: Any
               ) -> tuple[FrameStream, Partition]:
    """The stream of bin ``q_bin`` under ``valid`` and its partition: from the counts or
    hits kept from the last recompute of this bin, else read (and kept when they fit)."""
    make = _event_stream if photons else _dense_stream
    if not photons and not hasattr(source, "read_box"):
        make = _formed_stream
    cached = None
    if make in (_dense_stream, _event_stream) and not masked.pixels.any():
        key = _cache_key(source, qm, q_bin, valid, normalize)
        cached = _cache.get(key) if key is not None else None
        if cached is None and key is not None:
            read = _read_bin if make is _dense_stream else _read_bin_hits
            cached = read(source, qm, q_bin, valid, normalize, progress, cancel)
            _cache.clear()
            if cached is not None:
                _cache[key] = cached
    if isinstance(cached, _BinHits):
        return _cached_hits_stream(cached, source, qm, q_bin, valid, normalize, notes, masked)
    if cached is not None:
        return _cached_stream(cached, source, qm, q_bin, valid, normalize, notes, masked)
    return make(source, qm, q_bin, valid, normalize, notes, masked, progress, cancel)
