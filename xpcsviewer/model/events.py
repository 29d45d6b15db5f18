"""Hits of processed frames, as the photon correlators take them, and a stream of them
read ahead (made by the readers of :mod:`xpcsviewer.io.raw`, taken by
:mod:`xpcsviewer.compute.multitau.photons` and the other photon correlators)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["EventBlock", "prefetched"]


@dataclass(frozen=True)
class EventBlock:
    """The hits of processed frames ``[start, stop)``, in frame order.

    Attributes
    ----------
    start, stop : int
        Processed frames covered: every hit of these frames is here (empty frames too).
    frame : (n,) integer
        Processed frame of each hit, non-decreasing (int32 when frames fit, else int64).
    pixel : (n,) integer
        Flat detector index ``row * W + col`` (int64, or the stored integer type).
    value : (n,)
        Counts: the stored integer dtype, or float64 means when frames are averaged.
        A pixel may appear more than once in a frame (event lists): values add.
    """

    start: int
    stop: int
    frame: np.ndarray
    pixel: np.ndarray
    value: np.ndarray

    @property
    def n_events(self) -> int:
        return int(self.frame.size)


def prefetched(blocks: Iterator[Any], depth: int = 1) -> Iterator[Any]:
    """``blocks``, read ``depth`` ahead in a thread: the next block is read (file reads
    and decoding) while the correlator works on this one (its kernels release the GIL).
    An error of the reader is raised here, in order; closing the generator stops it."""
    import queue
    import threading

    q: queue.Queue = queue.Queue(maxsize=max(1, int(depth)))
    stop = threading.Event()
    done = object()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        try:
            for b in blocks:
                if not put(("ok", b)):
                    return
            put(("ok", done))
        except BaseException as exc:  # handed to the consumer
            put(("err", exc))

    th = threading.Thread(target=run, name="xpcs-sparse-prefetch", daemon=True)
    th.start()
    try:
        while True:
            kind, item = q.get()
            if kind == "err":
                raise item
            if item is done:
                return
            yield item
    finally:
        stop.set()
        th.join(timeout=5)
