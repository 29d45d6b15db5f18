"""Cyclic garbage collection on the GUI thread only (:func:`gui_thread_gc`).

A collection that runs in a worker can free the last reference of a Qt wrapper
there; Qt objects must die on the thread that owns them. The task runner turns it on
before the first job runs.
"""

from __future__ import annotations

import gc
import logging
import time
import weakref

__all__ = ["gui_thread_gc"]

logger = logging.getLogger(__name__)

#: Every TaskRunner alive (a full pass waits while one of them runs a job).
LIVE_RUNNERS: weakref.WeakSet = weakref.WeakSet()


class _GuiThreadCollector:
    """Python's cyclic garbage collection, run from a GUI-thread timer only.

    A collection that runs in a worker can free the last reference of a Qt wrapper;
    its C++ destructor then takes Qt's connection lock and waits for the GIL, while
    the GUI thread holds the GIL and waits for that lock: the window hangs for good
    (seen in the Average tab's figure export). Automatic collection is therefore off
    and this timer collects with the interpreter's own generation thresholds. A full
    pass (whose cost grows with the heap and which holds the GIL) runs at most 2 % of
    the time: unlike CPython's own rule, an explicit ``gc.collect(2)`` ignores how
    much of the heap is new, so forcing it every tenth pass would pause the window.

    A full pass scans every unfrozen object (~40 ms of CPU for 30,000; at load 16 on
    2 cores that was 0.8-1.0 s of the window's time, the longest pauses of a Bayesian
    fit). While jobs run or ran in the last ``idle_full_s``, a due full pass is
    therefore a middle pass whose survivors are frozen; the full pass itself (unfreeze,
    collect, freeze) waits until the window has been idle that long, so cycles frozen
    while busy are freed then, not kept for good.
    """

    #: Seconds without a job before a full pass may scan the whole heap.
    idle_full_s = 20.0

    def __init__(self, app, interval_ms: int = 250) -> None:
        from PySide6.QtCore import QTimer

        self.app = app
        self.thresholds = gc.get_threshold()
        self._full_started = 0.0
        self._full_cost = 0.1
        self._full_end = self._last = time.monotonic()
        self.young_every_s = 1.0
        self._last_freeze = -1e9
        self._young_freed = 0  # by the young passes since the last middle pass
        self._busy_at = -1e9  # when a job was last seen running
        gc.callbacks.append(self._watch)
        gc.disable()
        self.timer = QTimer(app)
        self.timer.timeout.connect(self.check)
        self.timer.start(interval_ms)

    def _watch(self, phase: str, info: dict) -> None:
        gen = info.get("generation")
        if phase == "stop":
            self._last = time.monotonic()
            if gen == 0:
                self._young_freed += info.get("collected", 0)
            else:
                self._young_freed = 0
        if gen != 2:
            return
        if phase == "start":
            self._full_started = time.monotonic()
        else:
            self._full_end = time.monotonic()
            self._full_cost = max(self._full_end - self._full_started, 1e-3)

    def _busy(self) -> bool:
        now = time.monotonic()
        if any(getattr(r, "_jobs", None) for r in list(LIVE_RUNNERS)):
            self._busy_at = now
        return now - self._busy_at < self.idle_full_s

    def _full_due(self) -> bool:
        """A full pass at most 2 % of the time."""
        return time.monotonic() - self._full_end > 50.0 * self._full_cost

    def _full(self) -> None:
        """Idle: every object scanned (frozen ones too), the survivors frozen again.
        Busy: a middle pass, its survivors frozen (the next full pass then scans little)."""
        if self._busy():
            t = time.monotonic()
            gc.collect(1)
            gc.freeze()
            self._last_freeze = self._full_end = time.monotonic()
            self._full_cost = max(self._full_end - t, 1e-3)
            self._young_freed = 0
            return
        gc.unfreeze()
        gc.collect(2)
        gc.freeze()
        self._last_freeze = time.monotonic()
        self._young_freed = 0

    def _mostly_long_lived(self) -> bool:
        if time.monotonic() - self._last_freeze < 2.0:
            return False
        n1 = len(gc.get_objects(1))  # ~1 ms per 100,000: a list, no traversal
        return n1 > 30_000 and self._young_freed < 0.05 * n1

    def check(self) -> None:
        """Collect what the thresholds call for (GUI thread; cheap when nothing is due)."""
        c0, c1, c2 = gc.get_count()
        t0, t1, t2 = self.thresholds
        # The count is allocations minus deallocations: by the time the timer looks,
        # frees elsewhere can hide young cycles, so a young pass runs at least each second.
        if c0 <= t0 and time.monotonic() - self._last < self.young_every_s:
            return
        if c1 < t1:
            gc.collect(0)
        elif c2 >= t2 and self._full_due():
            self._full()
        elif self._mostly_long_lived():
            # The young passes since the last middle pass kept tens of thousands of
            # objects and freed under 5 % as many: long-lived objects (a JIT compile's
            # caches, an import) that a middle pass would scan in one ~0.1 s pause,
            # then keep. Moved out of the collector's way at once instead; frozen with
            # them is the rare cycle that died since its young pass (after five NUTS
            # compiles: 53 garbage objects among 709,000 frozen).
            gc.collect(0)
            gc.freeze()
            self._last_freeze = time.monotonic()
            self._young_freed = 0
        else:
            t = time.monotonic()
            gc.collect(1)
            if time.monotonic() - t > 0.05 and t - self._last_freeze > 60.0:
                # A slow middle pass scans what a big import (JAX, NumPyro in a worker)
                # just made: long-lived objects, moved out of the collector's way as the
                # warm-up does, so the next passes do not pause the window again.
                gc.freeze()
                self._last_freeze = t


_GUI_GC: _GuiThreadCollector | None = None


def gui_thread_gc() -> _GuiThreadCollector | None:
    """Switch cyclic garbage collection to the GUI thread (idempotent).

    Does nothing without an application or off its thread (a synchronous runner in a
    headless test): a timer there would never fire and nothing would be collected.
    """
    global _GUI_GC
    from PySide6.QtCore import QCoreApplication, QThread

    app = QCoreApplication.instance()
    if app is None or QThread.currentThread() is not app.thread():
        return _GUI_GC
    if _GUI_GC is None or _GUI_GC.app is not app:
        if _GUI_GC is not None:
            try:
                _GUI_GC.timer.stop()
            except RuntimeError:  # went with its application
                pass
        _GUI_GC = _GuiThreadCollector(app)
    return _GUI_GC
