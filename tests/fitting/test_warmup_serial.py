"""Issue 33 (6): the warm-up's compiles trace in one thread (JAX's tracing holds the
GIL; every tracing thread is one more the GUI thread waits for), and a serial solve
gives the same fit as the threaded one."""

from __future__ import annotations

import threading

import numpy as np

from xpcsviewer.fitting import lsq_core
from xpcsviewer.fitting.lsq_core import in_parallel, one_at_a_time


def _threads_used(jobs: int) -> set[str]:
    names: set[str] = set()
    in_parallel([lambda: names.add(threading.current_thread().name)] * jobs)
    return names


def test_one_at_a_time_runs_solves_in_the_calling_thread(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    assert any(n.startswith("xpcs-fit") for n in _threads_used(4))
    with one_at_a_time():
        assert _threads_used(4) == {threading.current_thread().name}
    assert any(n.startswith("xpcs-fit") for n in _threads_used(4))


def test_warmup_traces_in_one_thread(monkeypatch):
    from xpcsviewer.jobs import warmup

    seen = []
    real = lsq_core.in_parallel

    def spy(jobs, done=None):
        seen.append(lsq_core._SERIAL.get())
        return real(jobs, done)

    monkeypatch.setattr(lsq_core, "in_parallel", spy)
    monkeypatch.setattr("xpcsviewer.fitting.lsq.in_parallel", spy)
    warmup.precompile(nuts=False)
    assert seen and all(seen)


def test_serial_fit_equals_threaded_fit():
    from xpcsviewer.fitting import fit_g2

    rng = np.random.default_rng(1)
    tau = np.geomspace(1e-5, 1e-1, 40)
    taus = np.array([1e-3, 3e-3, 1e-2])
    y = 1 + 0.2 * np.exp(-2 * tau / taus[:, None]) + 0.003 * rng.standard_normal((3, 40))
    err = np.full_like(y, 0.003)
    a = fit_g2(tau, y, err, model="auto")
    with one_at_a_time():
        b = fit_g2(tau, y, err, model="auto")
    for name, v in a.params.items():
        np.testing.assert_array_equal(v, b.params[name], err_msg=name)
    assert list(a.status) == list(b.status)
