"""The photon side of the correlate job: checked hits, the path choice of a source.

Used by :mod:`xpcsviewer.jobs.correlate` for photon-sparse and event sources
(:mod:`xpcsviewer.io.sparse`); the same rules as for dense frames: negative counts are
refused where the q-map uses the pixel and dropped elsewhere (with a note), NaN/Inf at a
used pixel stop the pass so that the pixel can be masked for the whole run.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from xpcsviewer.io.errors import XpcsFileError

__all__ = ["NonFiniteCount", "checked_events", "nonfinite_event_pixels", "plan_path",
           "scattering_group"]

#: a time-tag run keeps its per-frame means in at most this many rows
TRACE_ROWS = 100_000


class NonFiniteCount(Exception):  # a signal between passes, not an error
    """NaN or Inf counts at a pixel the correlation uses (a frame or a hit): mask the
    pixel and start again."""


def checked_events(blocks: Iterator[Any], used: np.ndarray, raw: Any, notes: list[str],
                   masked: Any = None) -> Iterator[Any]:
    """Pass event blocks through, applying the count rules (see the module notes).

    ``used``: (H*W,) bool, the pixels the q-map correlates; ``masked``: the job's
    ``_Masked`` record of pixels left out for non-finite counts (``strict``: stop at a
    new one).
    """
    from xpcsviewer.io.sparse import EventBlock

    dropped = 0
    for b in blocks:
        v = b.value
        if v.dtype.kind in "iuf":
            bad = None
            if v.dtype.kind == "f":
                nf = ~np.isfinite(v)
                if nf.any():
                    px = b.pixel[nf]
                    hit_used = used[px]
                    if masked is not None and masked.strict and (
                            hit_used & ~masked.pixels.ravel()[px]).any():
                        raise NonFiniteCount
                    bad = nf
            if v.dtype.kind != "u":
                neg = v < 0
                if neg.any():
                    on_used = neg & used[b.pixel]
                    if on_used.any():
                        i = int(np.flatnonzero(on_used)[0])
                        w = raw.frame_shape[1]
                        r, c = divmod(int(b.pixel[i]), w)
                        raise XpcsFileError(
                            raw.path, f"negative counts ({v[i]!r} in processed frame "
                            f"{int(b.frame[i])} at pixel ({r}, {c})) where the q-map uses "
                            "the pixel", raw.dataset_path,
                            "counts >= 0 (or mask those pixels in the q-map)")
                    bad = neg if bad is None else (bad | neg)
                    dropped += int(neg.sum())
            if bad is not None:
                keep = ~bad
                b = EventBlock(b.start, b.stop, b.frame[keep], b.pixel[keep], v[keep])
        yield b
    if dropped:
        notes.append(f"{dropped} negative counts at masked pixels were set to 0")


def nonfinite_event_pixels(raw: Any, bar: Any) -> np.ndarray:
    """(H, W) bool: pixels with a NaN or Inf count in any selected frame (reads only)."""
    h, w = raw.frame_shape
    bad = np.zeros(h * w, dtype=bool)
    for b in raw.iter_events():
        if b.value.dtype.kind == "f":
            nf = ~np.isfinite(b.value)
            bad[b.pixel[nf]] = True
        bar(b.stop, raw.n_frames, "finding NaN/Inf pixels")
    return bad.reshape(h, w)


def scattering_group(raw: Any) -> int:
    """Frames per row of the per-frame means: 1, or for a time-tag run enough detector
    ticks that the trace keeps at most ``TRACE_ROWS`` rows."""
    if not getattr(raw, "time_tag", False):
        return 1
    return max(1, math.ceil(raw.n_frames / TRACE_ROWS))


def plan_path(requested: str, raw: Any, qm: Any, mode: str, bins: Any) -> Any:
    """The :class:`~xpcsviewer.compute.pipeline_sparse.PathChoice` of a job on ``raw``.

    Raises ValueError for a path that cannot run (said to the user, exit 2).
    """
    from xpcsviewer.compute.pipeline_sparse import choose_path

    if not getattr(raw, "sparse", False):
        return choose_path(requested, sparse_source=False)
    time_tag = bool(getattr(raw, "time_tag", False))
    if time_tag and mode != "multitau":
        raise ValueError("time-tag mode (an event list without --bin-time) correlates "
                         "multi-tau only; give --bin-time for two-time")
    dyn = np.asarray(qm.dynamic_roi_map)
    used = (np.asarray(qm.mask) > 0) & (dyn > 0) & (np.asarray(qm.static_roi_map) > 0)
    counts = np.bincount(dyn[used].ravel(), minlength=qm.n_dynamic + 1)
    bin_pixels = [int(counts[b]) for b in (bins if bins is not None else [])]
    h, w = raw.frame_shape
    # hits of the processed frames: a stride keeps 1 / stride of the raw hits; averaging
    # merges frames (the occupancy per processed frame grows, the hits do not)
    hits = raw.n_events / max(raw.stride, 1)
    return choose_path(requested, sparse_source=True, time_tag=time_tag,
                       n_frames=raw.n_frames, detector_pixels=h * w,
                       correlated_pixels=int(used.sum()), hits=hits, mode=mode,
                       bin_pixels=bin_pixels)
