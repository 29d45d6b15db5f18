"""Cyclic garbage is collected on the GUI thread only (gui.gui_gc.gui_thread_gc).

A collection in a worker thread could destroy a Qt wrapper there and deadlock against
the GUI thread (seen: the Average tab's figure export hung the test run for good).
"""

from __future__ import annotations

import gc
import threading

import pytest

pytest.importorskip("pytestqt")


class _Cycle:
    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def collections():
    """Names of the threads in which a collection started during the test."""
    seen: list[str] = []

    def watch(phase: str, info: dict) -> None:
        if phase == "start":
            seen.append(threading.current_thread().name)

    gc.callbacks.append(watch)
    yield seen
    gc.callbacks.remove(watch)


def test_runner_switches_collection_to_the_gui_thread(qtbot, collections):
    from xpcsviewer.gui.workers import TaskRunner

    TaskRunner()
    assert not gc.isenabled()  # no automatic pass can start inside a worker
    for _ in range(2 * gc.get_threshold()[0]):  # cyclic garbage past the gen-0 threshold
        _Cycle()
    qtbot.waitUntil(lambda: len(collections) > 0, timeout=3000)  # the timer collects
    assert set(collections) == {threading.main_thread().name}


def test_worker_allocations_do_not_trigger_a_collection(qtbot, collections):
    from xpcsviewer.gui.workers import TaskRunner

    runner = TaskRunner()
    n = 20 * gc.get_threshold()[0]

    def job(progress=None, cancel=None) -> int:
        junk = [_Cycle() for _ in range(n)]
        return len(junk)

    done: list[int] = []
    with qtbot.waitSignal(runner.sigIdle, timeout=10000):
        runner.submit("junk", job, on_result=done.append)
    assert done == [n]
    assert set(collections) <= {threading.main_thread().name}


def _to_middle_pass_due(collector) -> None:
    """Young passes until a middle pass is due, and the collector's timer is due."""
    for _ in range(gc.get_threshold()[1]):
        gc.collect(0)
    collector._last = 0.0


def test_long_lived_young_objects_are_frozen_not_scanned(qtbot):
    """Tens of thousands of objects that survive the young passes (a JIT compile's
    caches) go out of the collector's way without a middle pass (~0.1 s with the GIL)."""
    from xpcsviewer.gui.workers import TaskRunner, gui_thread_gc

    TaskRunner()
    collector = gui_thread_gc()
    gc.collect()
    middle: list[int] = []

    def watch(phase: str, info: dict) -> None:
        if phase == "start" and info["generation"] >= 1:
            middle.append(info["generation"])

    keep = [[i] for i in range(60_000)]  # tracked containers, alive
    _to_middle_pass_due(collector)
    collector._last_freeze = -1e9
    frozen = gc.get_freeze_count()
    gc.callbacks.append(watch)
    try:
        collector.check()
    finally:
        gc.callbacks.remove(watch)
    assert middle == []
    assert gc.get_freeze_count() >= frozen + len(keep)


def test_young_garbage_still_gets_a_middle_pass(qtbot):
    """When the young passes free many objects, garbage is being made: no freezing."""
    from xpcsviewer.gui.workers import TaskRunner, gui_thread_gc

    TaskRunner()
    collector = gui_thread_gc()
    gc.collect()
    keep = [[i] for i in range(60_000)]
    gc.collect(0)
    for _ in range(20_000):  # cycles found by a young pass: counted as freed
        _Cycle()
    _to_middle_pass_due(collector)
    collector._last_freeze = -1e9
    frozen = gc.get_freeze_count()
    middle: list[int] = []

    def watch(phase: str, info: dict) -> None:
        if phase == "start" and info["generation"] >= 1:
            middle.append(info["generation"])

    gc.callbacks.append(watch)
    try:
        collector.check()
    finally:
        gc.callbacks.remove(watch)
    assert middle and gc.get_freeze_count() == frozen
    assert len(keep) == 60_000


def _to_full_pass_due(collector) -> None:
    """Young and middle passes until a full pass is due by the thresholds and the 2 % rule."""
    _t0, t1, t2 = gc.get_threshold()
    for _ in range(t2 + 1):
        gc.collect(1)
    for _ in range(t1):
        gc.collect(0)
    collector._last = 0.0
    collector._full_end = -1e9


class _Ref:
    def __init__(self) -> None:
        self.me = self


def _generations_started(collector) -> list[int]:
    seen: list[int] = []

    def watch(phase: str, info: dict) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(watch)
    try:
        collector.check()
    finally:
        gc.callbacks.remove(watch)
    return seen


def test_no_full_pass_while_busy_and_frozen_cycles_freed_when_idle(qtbot):
    """Issue 49 item 7: a full pass (0.8-1.0 s of the window at load 16) never runs
    while jobs run; a middle pass freezes its survivors instead, and the idle full pass
    unfreezes, so a cycle that died while frozen is still freed."""
    import weakref

    from xpcsviewer.gui.workers import TaskRunner, gui_thread_gc

    TaskRunner()
    collector = gui_thread_gc()
    gc.collect()
    obj = _Ref()
    dead = weakref.ref(obj)
    _to_full_pass_due(collector)
    collector._busy_at = __import__("time").monotonic()  # a job ran just now
    frozen = gc.get_freeze_count()
    assert _generations_started(collector) == [1]
    assert gc.get_freeze_count() > frozen  # the cycle and the rest: frozen, not scanned
    del obj
    assert dead() is not None  # frozen garbage: not freed by a young or middle pass
    _to_full_pass_due(collector)
    collector._busy_at = -1e9  # idle for long
    assert _generations_started(collector) == [2]
    assert dead() is None
    assert gc.get_freeze_count() > 0  # the survivors frozen again
