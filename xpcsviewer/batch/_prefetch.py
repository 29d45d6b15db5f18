"""Tasks run ahead of a sequential consumer (the screening pass of ``average``).

The consumer asks for outcomes one at a time, in input order; a thread runs the
batch and hands them over through a bounded queue, so at most ``depth``
finished results wait in memory.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

from xpcsviewer.batch._cluster import Where
from xpcsviewer.batch._engine import ItemOutcome, run_batch
from xpcsviewer.progress import CancelToken, check_interrupted

__all__ = ["Prefetcher"]


class Prefetcher:
    """``next()`` gives the :class:`ItemOutcome` of each item in turn; a context manager."""

    def __init__(self, task: Callable[[Any], Any], items: Sequence[Any], where: Where,
                 depth: int = 16) -> None:
        self._q: queue.Queue = queue.Queue(maxsize=depth)
        self._cancel = CancelToken()
        self._thread = threading.Thread(
            target=self._produce, args=(task, items, where), daemon=True,
            name="xpcs-batch-prefetch")

    def _produce(self, task: Callable[[Any], Any], items: Sequence[Any], where: Where) -> None:
        try:
            run_batch(task, items, self._put, where=where, cancel=self._cancel)
        except BaseException as exc:  # handed to the consumer
            self._put(exc)

    def _put(self, x: Any) -> None:
        while True:
            try:
                self._q.put(x, timeout=0.25)
                return
            except queue.Full:
                self._cancel.raise_if_cancelled()

    def next(self) -> ItemOutcome:
        """The next outcome in input order (raises what the batch raised)."""
        while True:
            check_interrupted()
            try:
                x = self._q.get(timeout=0.25)
            except queue.Empty:
                continue
            if isinstance(x, BaseException):
                raise x
            return x

    def __enter__(self) -> Prefetcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._cancel.cancel()  # a consumer that stopped early stops the batch
        self._thread.join()
