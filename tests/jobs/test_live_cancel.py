"""Issue 33 (5): the final update cancels a partial fit still running, so the partial
fit stops taking the CPU the final fit needs (it ran on to its end before)."""

from __future__ import annotations

import threading
import time

import h5py

from xpcsviewer.io.results.reader import read_qmap
from xpcsviewer.jobs.fitfile import fit_result_files
from xpcsviewer.jobs.live import LiveOptions, follow
from xpcsviewer.progress import Cancelled

LONG = 30.0  # s, how long the slowed partial fit would run if nobody stopped it


def test_the_final_update_cancels_a_running_partial_fit(small_qmap, writer, tmp_path):
    raw, out = tmp_path / "raw.h5", tmp_path / "live.hdf"
    seen: dict[str, float] = {}
    lock = threading.Lock()

    def fitter(paths, cancel=None, **kw):
        with h5py.File(paths[0], "r") as f:
            partial = bool(f["/xpcs/live/partial"][()])
        with lock:
            me = partial and "slow_start" not in seen
            if me:
                seen["slow_start"] = time.monotonic()
        if me:  # a solve that checks its token, as the LM loop does
            assert cancel is not None
            while time.monotonic() - seen["slow_start"] < LONG:
                if cancel.cancelled:
                    seen["cancelled"] = time.monotonic()
                    raise Cancelled()
                time.sleep(0.01)
            seen["ran_out"] = time.monotonic()
        return fit_result_files(paths, cancel=cancel, **kw)

    ws = []

    def start(_event):
        ws.append(writer(raw, "--frames", "600", "--rate", "1000", "--mode", "swmr",
                         "--block", "20", "--frame-time", "1e-3"))

    t0 = time.monotonic()
    final = follow(raw, read_qmap(small_qmap), out, LiveOptions(every=0.2, idle=5, fit=True),
                   fitter=fitter, on_ready=start)
    took = time.monotonic() - t0
    assert ws[0].wait() == 0
    assert final.final and final.frames == 600 and final.bins
    assert "slow_start" in seen, "no partial fit"
    assert "cancelled" in seen and "ran_out" not in seen
    assert took < LONG  # follow() waited for no partial fit to run out
