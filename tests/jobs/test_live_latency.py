"""Issue 33 (5): a partial fit runs beside the reader and never delays the final update."""

from __future__ import annotations

import json
import threading
import time

import h5py
import numpy as np

from xpcsviewer.io.results.reader import read_qmap
from xpcsviewer.jobs.fitfile import fit_result_files
from xpcsviewer.jobs.live import LiveOptions, follow

SLOW = 3.0  # s, a partial fit's sleep


def test_a_slow_partial_fit_neither_delays_nor_changes_the_final(small_qmap, writer, tmp_path,
                                                                  tools):
    raw, out = tmp_path / "raw.h5", tmp_path / "live.hdf"
    slow: list[tuple[float, int]] = []  # (start, frames) of the slowed partial fit
    final_fit_at: list[float] = []
    lock = threading.Lock()

    def fitter(paths, **kw):
        with h5py.File(paths[0], "r") as f:
            partial = bool(f["/xpcs/live/partial"][()])
            frames = int(f["/xpcs/live/frames"][()])
        if not partial:
            final_fit_at.append(time.monotonic())
        with lock:
            # the first partial fit sleeps past the end of the acquisition (0.6 s)
            me = partial and not slow
            if me:
                slow.append((time.monotonic(), frames))
        if me:
            time.sleep(SLOW)
        return fit_result_files(paths, **kw)

    ups, ws = [], []

    def start(_event):  # the detector starts once the fits are compiled, as at a beamline
        ws.append(writer(raw, "--frames", "600", "--rate", "1000", "--mode", "swmr",
                         "--block", "20", "--frame-time", "1e-3"))

    final_wall = []

    def on_update(up):
        ups.append((time.monotonic(), up))
        if up.final:
            final_wall.append(time.time())

    final = follow(raw, read_qmap(small_qmap), out, LiveOptions(every=0.2, idle=5, fit=True),
                   fitter=fitter, on_update=on_update,
                   on_ready=start)
    t_return = time.monotonic()
    assert ws[0].wait() == 0
    assert final.final and final.frames == 600 and final.end == "closed"
    assert slow, "no partial fit"
    assert slow[0][1] < 600
    t_slow, n_slow = slow[0]
    t_final = next(t for t, up in ups if up.final)
    # the final fit started and the final came before the slow partial fit ended: a fit
    # in series would have held the reader and the final for all of its 3 s
    assert final_fit_at and final_fit_at[0] < t_slow + SLOW - 1.0, final.stages
    assert t_final < t_slow + SLOW, (t_final - t_slow, final.stages)
    assert final_wall[0] - ws[0].stats["last_frame_wall"] < SLOW, final.stages
    # the slowed partial's result is dropped: nothing is reported after the final
    assert ups[-1][1].final and all(up.frames != n_slow for _, up in ups)
    assert t_return >= t_slow + SLOW - 0.1  # follow() returns with no fit left running
    assert set(final.stages) >= {"end", "read", "result", "write", "fit"}
    # the final result is unchanged: batch correlate of the same frames, and its fit
    batch = tools.correlate_ref(raw, small_qmap, tmp_path / "batch.hdf")
    tools.assert_same_result(out, batch)
    with h5py.File(out, "r") as f:
        assert not f["/xpcs/live/partial"][()]
    rec = json.loads((tmp_path / "live_fit.json").read_text())["files"][0]
    ref = fit_result_files([str(batch)])[0].record
    assert rec["status"] == ref["status"]
    for key in ("tau", "contrast"):
        if key in ref:
            np.testing.assert_allclose(np.asarray(rec[key]["value"], float),
                                       np.asarray(ref[key]["value"], float), rtol=1e-6)
    assert [b["status"] for b in final.bins] == ref["status"]
