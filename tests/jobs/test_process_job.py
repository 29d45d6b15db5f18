"""Jobs in a spawned worker process (xpcsviewer.jobs.process_job): the result, progress,
errors with their type, cancel that stops the child at once; and the figure export in a
process writing the very file the in-thread export writes."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from xpcsviewer.jobs.process_job import ProcessJobError, run_in_process
from xpcsviewer.progress import Cancelled, CancelToken

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _process_helpers as helpers


def test_result_and_progress_come_back_from_another_process():
    seen = []
    out = run_in_process(helpers.add, 2, 3, progress=lambda d, t, m="": seen.append((d, t, m)))
    assert out["sum"] == 5 and out["pid"] != os.getpid()
    assert seen == [(0, 3, "step 0"), (1, 3, "step 1"), (2, 3, "step 2")]


def test_an_error_keeps_its_type_and_message():
    with pytest.raises(KeyError, match="no such bin"):
        run_in_process(helpers.fails, "no such bin")


def test_a_nested_function_is_refused_clearly():
    def local(progress=None, cancel=None):
        return 1

    with pytest.raises(ValueError, match="not a module-level function"):
        run_in_process(local)


def test_cancel_kills_the_child(tmp_path):
    marker = tmp_path / "pid"
    token = CancelToken()
    box = {}

    def go():
        try:
            run_in_process(helpers.sleeps, 60, str(marker), cancel=token)
        except BaseException as exc:
            box["exc"] = exc

    th = threading.Thread(target=go)
    th.start()
    t_end = time.monotonic() + 120
    while not marker.exists() or not marker.read_text():
        assert time.monotonic() < t_end, "the child never started"
        time.sleep(0.05)
    pid = int(marker.read_text())
    t0 = time.monotonic()
    token.cancel()
    th.join(30)
    assert isinstance(box.get("exc"), Cancelled)
    assert time.monotonic() - t0 < 10
    with pytest.raises(ProcessLookupError):  # the child is gone (reaped)
        os.kill(pid, 0)


def test_a_child_that_dies_is_an_error(tmp_path):
    with pytest.raises(ProcessJobError, match="ended without a result"):
        run_in_process(helpers.dies, 3)


@pytest.mark.slow
def test_figure_export_in_a_process_writes_the_same_file(tmp_path, monkeypatch):
    import matplotlib.image as mpimg

    from xpcsviewer.gui.figure_job import export_figure_in_process, export_figure_job
    from xpcsviewer.io.results.reader import read_result
    from xpcsviewer.synthetic.demo import write_demo

    write_demo(tmp_path / "demo", seed=0, names=["A02_silica_R250nm_water"], workers=1)
    res = [read_result(next((tmp_path / "demo").glob("A02_*_results.hdf")))]
    here = export_figure_job("saxs1d", res, {}, str(tmp_path / "thread.png"),
                             "single")["written"][0]
    seen = []
    monkeypatch.setenv("XPCS_DRAW_IN_PROCESS", "1")
    there = export_figure_in_process("saxs1d", res, {}, str(tmp_path / "proc.png"), "single",
                                     progress=lambda d, t, m="": seen.append(m))["written"][0]
    assert Path(there).name == "proc.png"
    assert np.array_equal(mpimg.imread(here), mpimg.imread(there))
    assert seen[-1] == "done"
    # a bad kind: the child's error, with its message
    with pytest.raises(Exception, match="nonsense"):
        export_figure_in_process("nonsense", res, {}, str(tmp_path / "bad.png"))
    assert not (tmp_path / "bad.png").exists()
