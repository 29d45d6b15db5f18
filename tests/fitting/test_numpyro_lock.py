"""Issue 22: NumPyro's handler stack is process-global; two traces must never interleave."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from xpcsviewer.fitting import numpyro_lock
from xpcsviewer.fitting.spec import SamplerSpec
from xpcsviewer.progress import Cancelled, CancelToken


def _in_thread(fn):
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:  # handed to the test
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def test_a_foreground_fit_waits_for_the_warm_up_step_and_says_so():
    release = threading.Event()
    inside = threading.Event()

    def warm_up():
        with numpyro_lock.background("the sampler warm-up"), numpyro_lock.hold():
            inside.set()
            release.wait(10)

    t, out = _in_thread(warm_up)
    assert inside.wait(10)
    said = []
    got = []

    def user_fit():
        with numpyro_lock.hold(lambda d, n, msg="": said.append(msg)):
            got.append(numpyro_lock.holder())

    u, _ = _in_thread(user_fit)
    time.sleep(0.3)
    assert not got  # the warm-up's step is running
    assert said == ["waiting for the sampler warm-up\u2026"]
    release.set()
    u.join(10)
    t.join(10)
    assert got == ["another Bayesian fit"] and "error" not in out


def test_background_work_yields_while_a_user_fit_runs():
    inside, release = threading.Event(), threading.Event()

    def user_fit():
        with numpyro_lock.hold():
            inside.set()
            release.wait(10)

    u, _ = _in_thread(user_fit)
    assert inside.wait(10)

    def warm_up():
        with numpyro_lock.background(), numpyro_lock.hold():
            pass

    t, out = _in_thread(warm_up)
    t.join(5)
    release.set()
    u.join(10)
    assert isinstance(out.get("error"), numpyro_lock.Yielded)


def test_a_waiting_fit_can_be_cancelled():
    inside, release = threading.Event(), threading.Event()

    def other():
        with numpyro_lock.hold():
            inside.set()
            release.wait(10)

    o, _ = _in_thread(other)
    assert inside.wait(10)
    token = CancelToken()

    def waiting():
        with numpyro_lock.hold(cancel=token):
            pass

    w, out = _in_thread(waiting)
    time.sleep(0.2)
    token.cancel()
    w.join(5)
    release.set()
    o.join(10)
    assert not w.is_alive() and isinstance(out.get("error"), Cancelled)


def test_a_fit_stepping_in_a_loop_does_not_starve_a_waiting_one():
    # first come, first served: the looping thread re-queues behind the waiter
    order = []
    started = threading.Event()

    def loop():
        for k in range(40):
            with numpyro_lock.hold():
                if k == 0:
                    started.set()
                order.append("loop")
                time.sleep(0.01)

    a, _ = _in_thread(loop)
    assert started.wait(10)

    def once():
        with numpyro_lock.hold():
            order.append("once")

    b, _ = _in_thread(once)
    a.join(20)
    b.join(20)
    assert "once" in order and order.index("once") < len(order) - 5


def test_reentrant_in_one_thread():
    with numpyro_lock.hold():
        with numpyro_lock.hold():
            assert numpyro_lock.is_held()
        assert numpyro_lock.is_held()
    assert not numpyro_lock.is_held() and numpyro_lock.holder() == ""


# ---------------------------------------------------------------- with NumPyro

def _data(n_b=3, n_t=24, seed=0, tau0=1e-3):
    rng = np.random.default_rng(seed)
    tau = np.geomspace(1e-5, 1.0, n_t)
    taus = tau0 * np.geomspace(1, 10, n_b)
    err = np.full((n_b, n_t), 0.003)
    y = 1 + 0.2 * np.exp(-2 * tau[None, :] / taus[:, None]) + err * rng.standard_normal(err.shape)
    return tau, y, err


_KW = {"num_warmup": 30, "num_samples": 30, "num_chains": 1, "block_size": 30}
_NUTS = SamplerSpec(**_KW)


@pytest.mark.slow
def test_two_concurrent_fits_do_not_share_the_handler_stack(monkeypatch):
    # Issue 22: the warm-up and a user's fit traced at once collided ("all sites must
    # have unique names but got `contrast` duplicated"). A barrier inside the model
    # makes the two traces overlap for certain wherever nothing serialises them.
    from xpcsviewer.fitting import bayes, bayes_run

    data = [_data(seed=1, tau0=1e-3), _data(seed=2, tau0=3e-2)]
    ref = [bayes.fit_g2_bayes(*d, sampler=_NUTS.with_(seed=5)) for d in data]
    bayes_run._per_bin_programs.cache_clear()  # both threads trace afresh

    barrier = threading.Barrier(2, timeout=3.0)
    seen: set[int] = set()
    real = bayes_run.g2_model

    def model(*a, **k):
        me = threading.get_ident()
        if me not in seen:
            seen.add(me)
            try:
                barrier.wait()
            except threading.BrokenBarrierError:
                pass  # serialised: the other thread cannot be inside a trace now
        return real(*a, **k)

    monkeypatch.setattr(bayes_run, "g2_model", model)  # what the samplers call
    runs = [_in_thread(lambda d=d: bayes.fit_g2_bayes(*d, sampler=_NUTS.with_(seed=5)))
            for d in data]
    for t, _ in runs:
        t.join(600)
    for (_, out), r in zip(runs, ref, strict=True):
        assert "error" not in out, repr(out.get("error"))
        np.testing.assert_array_equal(out["value"].samples["tau"], r.samples["tau"])


@pytest.mark.slow
def test_every_numpyro_trace_holds_the_lock(monkeypatch):
    # The root of issue 22: every entry into a NumPyro handler (model tracing by the
    # sampler, its initialisation and post-processing) of all our samplers.
    from numpyro.primitives import Messenger

    from xpcsviewer.fitting import bayes, bayes_run
    from xpcsviewer.fitting.bayes_diffusion import fit_diffusion_joint_bayes

    held: list[bool] = []
    enter = Messenger.__enter__

    def spy(self):
        held.append(numpyro_lock.is_held())
        return enter(self)

    monkeypatch.setattr(Messenger, "__enter__", spy)
    bayes_run._per_bin_programs.cache_clear()
    tau, y, err = _data(n_t=20)
    bayes.fit_g2_bayes(tau, y, err, sampler=_NUTS)
    n_per_bin = len(held)
    bayes.fit_g2_bayes(tau, y, err, sampler=_NUTS.with_(sampler="joint"))
    n_joint = len(held) - n_per_bin
    q = np.array([0.004, 0.006, 0.008])
    g2 = 1 + 0.2 * np.exp(-2 * tau[None, :] * 1e5 * q[:, None] ** 2)
    fit_diffusion_joint_bayes(q, tau, g2, np.full_like(g2, 0.003), alpha=2.0, **_KW)
    n_diff = len(held) - n_per_bin - n_joint
    assert min(n_per_bin, n_joint, n_diff) > 0
    assert all(held)


def test_the_warm_up_gives_way_to_a_running_user_fit():
    from xpcsviewer.jobs.warmup import precompile

    inside, release = threading.Event(), threading.Event()

    def user_fit():
        with numpyro_lock.hold():
            inside.set()
            release.wait(120)

    u, _ = _in_thread(user_fit)
    assert inside.wait(10)
    try:
        t, out = _in_thread(lambda: precompile(nuts=True))
        t.join(300)
    finally:
        release.set()
        u.join(10)
    assert "error" not in out, repr(out.get("error"))
    assert out["value"].get("nuts_yielded") is True
