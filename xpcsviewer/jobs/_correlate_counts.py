"""The count rules of the correlate job, for dense frames and for hits alike.

Negative counts are refused where the q-map uses the pixel and dropped elsewhere (with a
note: detectors mark dead pixels with negative values); NaN/Inf at a used pixel stop the
pass (:class:`NonFiniteCount`) so that the pixel can be masked for the whole run: one
NaN would make every g2 point missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from xpcsviewer.io.errors import XpcsFileError

__all__ = ["Masked", "NonFiniteCount", "checked_chunks", "checked_events",
           "nonfinite_event_pixels", "nonfinite_pixels"]


class NonFiniteCount(Exception):  # a signal between passes, not an error
    """NaN or Inf counts at a pixel the correlation uses (a frame or a hit): mask the
    pixel and start again."""


class Masked:
    """Pixels left out for non-finite counts; ``strict``: stop at a new one."""

    def __init__(self, shape: tuple[int, int]) -> None:
        self.pixels = np.zeros(shape, dtype=bool)
        self.strict = True


def checked_chunks(chunks: Any, used: np.ndarray, raw: Any, notes: list[str],
                   masked_px: Masked | None = None) -> Any:
    """Pass frames through, applying the count rules (see the module notes);
    ``used``: (H, W) bool, the pixels the q-map correlates."""
    masked = 0
    start = 0
    for chunk in chunks:
        if chunk.dtype.kind == "f":
            nf = ~np.isfinite(chunk)
            if nf.any():
                px = nf.any(axis=0)
                if (masked_px is not None and masked_px.strict
                        and (px & used & ~masked_px.pixels).any()):
                    raise NonFiniteCount
                chunk = np.where(nf, 0, chunk)
        if chunk.dtype.kind in "if":
            neg = chunk < 0
            if neg.any():
                bad = neg & used
                if bad.any():
                    k, r, c = (int(v[0]) for v in np.nonzero(bad))
                    raise XpcsFileError(
                        raw.path,
                        f"negative counts ({chunk[k, r, c]!r} in processed frame "
                        f"{start + k} at pixel ({r}, {c})) where the q-map uses the pixel",
                        raw.dataset_path,
                        "counts >= 0 (or mask those pixels in the q-map)",
                    )
                chunk = np.where(neg, 0, chunk)
                masked += int(neg.sum())
        start += chunk.shape[0]
        yield chunk
    if masked:
        notes.append(f"{masked} negative counts at masked pixels were set to 0")


def nonfinite_pixels(raw: Any, bar: Any) -> np.ndarray:
    """(H, W) bool: pixels with a NaN or Inf count in any selected frame (reads only)."""
    bad = np.zeros(raw.frame_shape, dtype=bool)
    done = 0
    for chunk in raw.iter_chunks(128, reuse=True):
        bad |= ~np.isfinite(chunk).all(axis=0)
        done += chunk.shape[0]
        if bar is not None:
            bar(done, raw.n_frames, "finding NaN/Inf pixels")
    return bad


def checked_events(blocks: Iterator[Any], used: np.ndarray, raw: Any, notes: list[str],
                   masked: Any = None) -> Iterator[Any]:
    """Pass event blocks through, applying the count rules (see the module notes).

    ``used``: (H*W,) bool, the pixels the q-map correlates; ``masked``: the job's
    :class:`Masked` record of pixels left out for non-finite counts (``strict``: stop at a
    new one).
    """
    from xpcsviewer.model.events import EventBlock

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
        if bar is not None:
            bar(b.stop, raw.n_frames, "finding NaN/Inf pixels")
    return bad.reshape(h, w)
