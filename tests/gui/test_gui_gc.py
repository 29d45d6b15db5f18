"""Cyclic garbage is collected on the GUI thread only (gui.workers.gui_thread_gc).

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
