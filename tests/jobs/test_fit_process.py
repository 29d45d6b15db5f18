"""The fit process (issue 49 item 7): JAX's tracing out of the GUI's process.

One child per module (its start imports JAX, ~5 s): every check shares it, the crash
check starts the next one.
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from xpcsviewer.jobs.fit_process import (
    PRIORITY_FIT,
    PRIORITY_WARMUP_NUTS,
    FitProcess,
    FitProcessError,
    Yielded,
)
from xpcsviewer.progress import Cancelled, CancelToken

PROBE = "xpcsviewer.jobs.fit_process:probe"


@pytest.fixture(scope="module")
def proc():
    p = FitProcess()
    yield p
    p.shutdown()


def test_a_fit_through_the_process_equals_the_fit_in_this_thread(proc, tiny_demo_dir):
    from xpcsviewer.fitting.block_fits import fit_curves
    from xpcsviewer.fitting.blocks import g2_blocks
    from xpcsviewer.fitting.spec import FitSpec
    from xpcsviewer.io import read_result

    results = [read_result(p) for p in sorted(tiny_demo_dir.glob("T0*_results.hdf"))]
    blocks = g2_blocks(results)
    assert sum(b.n_bins for b in blocks) >= 4
    seen = []
    there = proc.call("xpcsviewer.fitting.block_fits:fit_curves", blocks, FitSpec("auto"),
                      progress=lambda d, t, m: seen.append((d, t)))
    here = fit_curves(blocks, FitSpec("auto"))
    assert proc.pid is not None and proc.pid != os.getpid()
    assert there.n_curves == here.n_curves
    assert list(there.status) == list(here.status)
    for n in here.params:
        np.testing.assert_allclose(there.params[n], here.params[n], rtol=1e-12, atol=0)
        np.testing.assert_allclose(there.errors[n], here.errors[n], rtol=1e-12, atol=0)
    assert seen  # progress came back over the pipe


def test_errors_come_back_and_progress_and_cancel_work(proc):
    with pytest.raises(RuntimeError, match="ValueError: bad input"):
        proc.call(PROBE, 0.0, "bad input")
    token = CancelToken()
    seen = []

    def progress(d, t, m):
        seen.append(d)
        if d >= 5:
            token.cancel()

    pid = proc.pid
    t0 = time.monotonic()
    with pytest.raises(Cancelled):
        proc.call(PROBE, 30.0, progress=progress, cancel=token)
    assert time.monotonic() - t0 < 5 and seen
    assert proc.call(PROBE) == pid  # the same child goes on


def test_a_killed_process_is_a_clear_error_and_the_next_call_starts_anew(proc):
    pid = proc.call(PROBE)
    starts = proc.starts
    threading.Timer(0.3, os.kill, (pid, 9)).start()
    with pytest.raises(FitProcessError, match=r"fitting process stopped.*next fit starts"):
        proc.call(PROBE, 30.0)
    new = proc.call(PROBE)
    assert new != pid and proc.starts == starts + 1


def test_a_fit_goes_first_and_the_sampler_warm_up_gives_way(proc):
    proc.call(PROBE)  # started
    out: dict = {}

    def warm():
        try:
            out["warm"] = proc.call(PROBE, 30.0, priority=PRIORITY_WARMUP_NUTS, yielding=True)
        except Yielded:
            out["warm"] = "yielded"

    t = threading.Thread(target=warm)
    t.start()
    time.sleep(0.5)
    t0 = time.monotonic()
    assert proc.call(PROBE, priority=PRIORITY_FIT) == proc.pid
    t.join(10)
    assert out["warm"] == "yielded" and time.monotonic() - t0 < 5
