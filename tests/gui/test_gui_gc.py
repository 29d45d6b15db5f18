"""Cyclic garbage is collected on the GUI thread only (gui.workers.gui_thread_gc).

A collection in a worker thread could destroy a Qt wrapper there and deadlock against
the GUI thread (seen: the Average tab's figure export hung the test run for good).
"""

from __future__ import annotations

import gc
import threading
import weakref

import pytest

pytest.importorskip("pytestqt")


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_runner_switches_collection_to_the_gui_thread(qtbot):
    from xpcsviewer.gui.workers import TaskRunner

    TaskRunner()
    assert not gc.isenabled()  # no automatic pass can start inside a worker

    collected_in: list[str] = []

    def watch(phase: str, info: dict) -> None:
        if phase == "start":
            collected_in.append(threading.current_thread().name)

    obj = _Cycle()
    ref = weakref.ref(obj)
    del obj
    gc.callbacks.append(watch)
    try:
        # enough allocations to pass the generation-0 threshold
        junk = [_Cycle() for _ in range(gc.get_threshold()[0] + 100)]
        del junk
        qtbot.waitUntil(lambda: ref() is None, timeout=3000)
    finally:
        gc.callbacks.remove(watch)
    assert collected_in and set(collected_in) == {threading.main_thread().name}


def test_worker_allocations_do_not_trigger_a_collection(qtbot):
    from xpcsviewer.gui.workers import TaskRunner

    runner = TaskRunner()
    threads: list[str] = []

    def watch(phase: str, info: dict) -> None:
        if phase == "start":
            threads.append(threading.current_thread().name)

    def job(progress=None, cancel=None) -> int:
        junk = [_Cycle() for _ in range(20 * gc.get_threshold()[0])]
        return len(junk)

    done: list[int] = []
    gc.callbacks.append(watch)
    try:
        with qtbot.waitSignal(runner.sigIdle, timeout=10000):
            runner.submit("junk", job, on_result=done.append)
    finally:
        gc.callbacks.remove(watch)
    assert done == [20 * gc.get_threshold()[0]]
    assert set(threads) <= {threading.main_thread().name}
