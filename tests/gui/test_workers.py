"""TaskRunner / ComputeWorker: results, errors, cancel, stale results, throttling."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import pytest

from xpcsviewer.gui.workers import ComputeWorker, ErrorInfo, TaskRunner, to_numpy_tree
from xpcsviewer.progress import Cancelled

pytestmark = pytest.mark.gui


def double(x, progress=None, cancel=None):
    progress(1, 1, "done")
    return 2 * x


def fail(progress=None, cancel=None):
    raise ValueError("bad input: dataset /xpcs/foo")


def test_synchronous_runner_runs_inline(qapp):
    r = TaskRunner(synchronous=True)
    out, busy = [], []
    r.sigBusyChanged.connect(busy.append)
    rid = r.submit("k", double, 21, on_result=out.append)
    assert out == [42] and rid == 1 and busy == [True, False] and not r.is_busy


def test_async_result_arrives_on_gui_thread(qtbot):
    r = TaskRunner()
    out = []
    main = threading.current_thread()

    def on_result(v):
        out.append((v, threading.current_thread() is main))

    with qtbot.waitSignal(r.sigIdle, timeout=5000):
        r.submit("k", double, np.arange(3.0), on_result=on_result)
    np.testing.assert_array_equal(out[0][0], [0.0, 2.0, 4.0])
    assert out[0][1] is True


def test_error_goes_to_sink_with_traceback(qtbot):
    r = TaskRunner()
    with qtbot.waitSignal(r.sigError, timeout=5000) as blocker:
        rid = r.submit("k", fail)
    info = blocker.args[0]
    assert isinstance(info, ErrorInfo) and info.kind == "ValueError"
    assert "dataset /xpcs/foo" in info.message and "Traceback" in info.traceback_text
    assert info.request_id == rid
    assert r.wait_until_idle(5000)


def test_on_error_handler_replaces_sink(qapp):
    r = TaskRunner(synchronous=True)
    got, sink = [], []
    r.sigError.connect(sink.append)
    r.submit("k", fail, on_error=got.append)
    assert len(got) == 1 and sink == []


def test_cancel_stops_job_between_chunks(qtbot):
    r = TaskRunner()
    started = threading.Event()
    chunks = []

    def long_job(progress=None, cancel=None):
        for i in range(10_000):
            started.set()
            cancel.raise_if_cancelled()
            chunks.append(i)
            threading.Event().wait(0.001)
        return "finished"

    out = []
    r.submit("k", long_job, on_result=out.append)
    assert started.wait(5)
    r.cancel("k")
    assert r.wait_until_idle(5000)
    assert out == [] and len(chunks) < 10_000


def test_newer_submit_with_same_key_drops_the_older_result(qtbot):
    r = TaskRunner()
    gate = threading.Event()
    out = []

    def slow(v, progress=None, cancel=None):
        gate.wait(5)  # ignores the cancel flag on purpose: its result must still be dropped
        return v

    r.submit("k", slow, "old", on_result=out.append)
    r.submit("k", double, 5, on_result=out.append)
    gate.set()
    assert r.wait_until_idle(5000)
    assert out == [10]


def test_progress_is_throttled(qtbot):
    r = TaskRunner()
    seen = []
    r.sigProgress.connect(lambda key, d, t, m: seen.append(d))

    def chatty(progress=None, cancel=None):
        for i in range(20_000):
            progress(i, 20_000, "")
        progress(20_000, 20_000, "done")

    r.submit("k", chatty, description="chatty")
    assert r.wait_until_idle(5000)
    # 20,001 reports from the worker reach the GUI thread as a handful of updates,
    # in order, always including the final one
    assert len(seen) <= 30 and seen[-1] == 20_000  # seen[-1]: at least the final one
    assert seen == sorted(seen)


def test_phase_start_gets_through_the_throttle(qtbot):
    """A phase that starts right after another report ("compiling the sampler", then
    seconds of silence) must reach the status bar, not be throttled away."""
    r = TaskRunner()
    seen = []
    r.sigProgress.connect(lambda key, d, t, m: seen.append(m))
    gate = threading.Event()

    def phases(progress=None, cancel=None):
        progress(0, 1, "preparing")
        progress(0, 1, "compiling the sampler (first run only)")
        gate.wait(5)  # the compile
        progress(1, 1, "done")

    r.submit("k", phases, description="nuts")
    try:
        qtbot.waitUntil(lambda: any("compiling" in m for m in seen), timeout=3000)
    finally:
        gate.set()
        assert r.wait_until_idle(5000)


def test_worker_emits_exactly_one_outcome_then_finished(qapp):
    for fn, expect in ((double, "result"), (fail, "error")):
        w = ComputeWorker(fn, 1) if fn is double else ComputeWorker(fn)
        order = []
        s = w.signals
        s.sigResult.connect(lambda _v, order=order: order.append("result"))
        s.sigError.connect(lambda _v, order=order: order.append("error"))
        s.sigCancelled.connect(lambda order=order: order.append("cancelled"))
        s.sigFinished.connect(lambda order=order: order.append("finished"))
        w.run()
        assert order == [expect, "finished"]
    w = ComputeWorker(double, 1)
    order = []
    w.signals.sigCancelled.connect(lambda: order.append("cancelled"))
    w.signals.sigFinished.connect(lambda: order.append("finished"))
    w.cancel()
    w.run()
    assert order == ["cancelled", "finished"]


def test_jax_results_become_numpy(qapp):
    pytest.importorskip("jax")
    from xpcsviewer.backends import get_backend

    jnp = get_backend("jax").xp

    @dataclass
    class Res:
        a: object
        b: int

    out = to_numpy_tree({"x": jnp.arange(3.0), "r": Res(jnp.ones(2), 3), "t": (jnp.zeros(1),)})
    assert type(out["x"]) is np.ndarray and out["x"].dtype == np.float64
    assert type(out["r"].a) is np.ndarray and out["r"].b == 3
    assert type(out["t"][0]) is np.ndarray


def test_cancelled_exception_counts_as_cancel(qapp):
    def raises(progress=None, cancel=None):
        raise Cancelled()

    r = TaskRunner(synchronous=True)
    out, errs = [], []
    r.sigError.connect(errs.append)
    r.submit("k", raises, on_result=out.append)
    assert out == [] and errs == []
