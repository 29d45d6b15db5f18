"""A heartbeat on the GUI thread: how long the event loop was blocked.

A 10 ms timer records when it fires; the largest gap between two beats inside a
time window is the longest the window could not repaint or react to input. Used by
``benchmarks/gui_stalls.py`` and the GUI tests; ``XPCS_HEARTBEAT_LOG=1`` makes the app
log stalls above 100 ms while it runs.
"""

from __future__ import annotations

import itertools
import logging
import time

from PySide6.QtCore import QObject, QTimer

__all__ = ["Heartbeat"]

logger = logging.getLogger(__name__)


class Heartbeat(QObject):
    """Beats every ``interval_ms`` on the thread that owns it (the GUI thread).

    Parameters
    ----------
    interval_ms : int
    log_above_s : float or None
        Log every gap longer than this (seconds) as it happens.
    """

    def __init__(self, interval_ms: int = 10, log_above_s: float | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.beats: list[float] = []
        self.log_above_s = log_above_s
        self._timer = QTimer(self)
        self._timer.setInterval(int(interval_ms))
        self._timer.timeout.connect(self._beat)

    def start(self) -> Heartbeat:
        """Start beating (and forget earlier beats)."""
        self.beats = [time.monotonic()]
        self._timer.start()
        return self

    def stop(self) -> None:
        """Stop beating."""
        self._timer.stop()

    def _beat(self) -> None:
        now = time.monotonic()
        if self.log_above_s is not None and self.beats and now - self.beats[-1] > self.log_above_s:
            logger.warning("GUI thread blocked for %.0f ms", 1000 * (now - self.beats[-1]))
        self.beats.append(now)
        if len(self.beats) > 200_000:  # a long session: keep the recent past only
            del self.beats[:100_000]

    def max_gap(self, t0: float, t1: float | None = None) -> float:
        """Longest time (s) without a beat in [t0, t1] (t1: now), edges included."""
        t1 = time.monotonic() if t1 is None else t1
        inside = [t for t in self.beats if t0 <= t <= t1]
        stamps = [t0, *inside, t1]
        return max(b - a for a, b in itertools.pairwise(stamps))
