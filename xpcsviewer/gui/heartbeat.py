"""A heartbeat on the GUI thread: how long the event loop was blocked.

A 10 ms timer records when it fires; the largest gap between two beats inside a
time window is the longest the window could not repaint or react to input. Used by
``benchmarks/gui_stalls.py`` and the GUI tests; ``XPCS_HEARTBEAT_LOG=1`` makes the app
log stalls above 100 ms while it runs. ``StallTrace`` (opt-in) samples the GUI thread's
Python stack while a beat is late, so each stall comes with where the thread was.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import sys
import threading
import time
import traceback
from collections import Counter
from pathlib import Path

from PySide6.QtCore import QObject, QTimer

__all__ = ["Heartbeat", "StallTrace"]

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


def _stack_key(frame, depth: int) -> str:
    stack = traceback.extract_stack(frame)[-depth:]
    return " <- ".join(f"{Path(f.filename).name}:{f.lineno}:{f.name}" for f in reversed(stack))


class StallTrace:
    """Where the GUI thread is while ``beat`` is late (a heartbeat trace; opt-in).

    A daemon thread checks every ``sample_s``; while the last beat is more than ``late_s``
    old it records the owning thread's innermost ``depth`` Python frames, and the innermost
    frame of every other thread that is in Python (a worker holding the GIL shows there).
    Samples are grouped per stall (keyed by the beat that came before it).

    Make it on the thread that owns ``beat`` (the GUI thread).
    """

    def __init__(self, beat: Heartbeat, late_s: float = 0.05, sample_s: float = 0.01,
                 depth: int = 8) -> None:
        self.beat, self.late_s, self.sample_s, self.depth = beat, late_s, sample_s, depth
        self.gui_id = threading.get_ident()
        #: beat time before the stall -> (GUI stacks, other threads' frames)
        self.stalls: dict[float, tuple[Counter, Counter]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="stall-trace", daemon=True)

    def start(self) -> StallTrace:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        me = threading.get_ident()
        while not self._stop.wait(self.sample_s):
            beats = self.beat.beats
            if not beats:
                continue
            last = beats[-1]
            if time.monotonic() - last < self.late_s:
                continue
            frames = sys._current_frames()
            gui = frames.pop(self.gui_id, None)
            frames.pop(me, None)
            mine, others = self.stalls.setdefault(last, (Counter(), Counter()))
            mine[_stack_key(gui, self.depth) if gui is not None else "(no Python frame)"] += 1
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, f in frames.items():
                if f.f_code.co_name in ("wait", "_wait_for_tstate_lock", "select", "sleep"):
                    continue  # idle threads
                key = f"{names.get(ident, ident)}: {Path(f.f_code.co_filename).name}:" \
                      f"{f.f_lineno}:{f.f_code.co_name}"
                others[key] += 1

    def report(self, t0: float = 0.0, t1: float | None = None, above_s: float = 0.05,
               top: int = 3) -> list[str]:
        """Lines: each stall in [t0, t1] longer than ``above_s``, its top GUI stacks and
        the other threads seen in Python meanwhile (samples out of the stall's samples)."""
        t1 = time.monotonic() if t1 is None else t1
        beats = self.beat.beats
        lines = []
        for start in sorted(self.stalls):
            if not t0 <= start <= t1:
                continue
            i = bisect.bisect_right(beats, start)
            end = beats[i] if i < len(beats) else t1
            if end - start < above_s:
                continue
            mine, others = self.stalls[start]
            n = sum(mine.values())
            lines.append(f"stall {1000 * (end - start):.0f} ms ({n} samples)")
            lines += [f"  gui {c}/{n}: {k}" for k, c in mine.most_common(top)]
            lines += [f"  other {c}/{n}: {k}" for k, c in others.most_common(top)]
        return lines
