"""``device --calibrate`` measures photon jobs (issue 47): the synthetic event job, the
fitted row, and the row in the written profile."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from xpcsviewer.jobs import calibrate


def test_synthetic_event_job_has_the_occupancy_and_covers_every_frame():
    frames, hits = calibrate._events(1000, 16, 0.05, seed=1)
    blocks = list(frames.open())
    assert frames.n_frames == 1000 and [b.start for b in blocks] == [0, 512]
    assert blocks[-1].stop == 1000 and sum(b.n_events for b in blocks) == hits
    assert hits == pytest.approx(0.05 * 1000 * 256, rel=0.05)
    for b in blocks:
        assert np.all(np.diff(b.frame) >= 0) and b.frame.min() >= b.start
        assert b.frame.max() < b.stop and b.value.min() >= 1


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="needs numba")
def test_photon_row_is_measured_on_the_cpu():
    got = calibrate._sparse("cpu", 1)
    assert set(got) == {"per_unit_s", "compile_s"}
    assert 0 < got["per_unit_s"] < 1e-5 and got["compile_s"] >= 0


def test_calibrate_writes_the_photon_row(monkeypatch):
    from xpcsviewer.jobs import precompile

    monkeypatch.setattr(precompile, "ensure_kernels", lambda *a, **k: None)
    row = {"per_unit_s": 1e-9, "compile_s": 0.1}
    for name in ("_multitau", "_twotime", "_lsq"):
        monkeypatch.setattr(calibrate, name, lambda *a: dict(row))
    monkeypatch.setattr(calibrate, "_sparse", lambda d, r: {"per_unit_s": 2e-9,
                                                             "compile_s": 0.5})
    said: list[str] = []
    prof = calibrate.calibrate(nuts=False, say=said.append, devices=("cpu",))
    assert prof.cost("sparse", "cpu").per_unit_s == 2e-9
    assert prof.row_source("sparse", "cpu") == "calibrated"
    assert prof.row_source("sparse", "gpu") == "defaults, unmeasured estimate"
    assert any(s.startswith("sparse    cpu: 2e-09 s per unit") for s in said)
