"""Where NUTS chains run (issue 31): host CPU devices by default, the GPU only on request.

The placement is decided by :func:`xpcsviewer.fitting.bayes_run.nuts_devices` from the
devices it is given, so a GPU machine is imitated here with fake device lists: no test
needs a GPU.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass

import numpy as np
import pytest

pytest.importorskip("numpyro")

from xpcsviewer.fitting import bayes_run
from xpcsviewer.fitting.bayes_run import chain_method_of, nuts_devices
from xpcsviewer.fitting.spec import SamplerSpec


@dataclass(frozen=True)
class _Dev:
    platform: str
    id: int


def _machine(n_cpu: int = 4, n_gpu: int = 1):
    devs = {"cpu": [_Dev("cpu", i) for i in range(n_cpu)],
            "gpu": [_Dev("gpu", i) for i in range(n_gpu)]}
    return lambda platform: devs.get(platform, [])


def _no_router(monkeypatch):
    # decide as without a whole-job router, whatever is installed
    monkeypatch.setitem(sys.modules, "xpcsviewer.backends.routing", None)


def test_chains_go_to_cpu_devices_even_with_a_gpu(monkeypatch):
    _no_router(monkeypatch)
    gpu_machine = _machine(n_cpu=16, n_gpu=1)
    devs = nuts_devices(4, "auto", available=gpu_machine)
    assert [d.platform for d in devs] == ["cpu"] * 4
    assert len(set(devs)) == 4 and chain_method_of(devs) == "parallel"
    assert [d.platform for d in nuts_devices(4, "cpu", available=gpu_machine)] == ["cpu"] * 4


def test_too_few_cpu_devices_vectorise_on_one():
    devs = nuts_devices(4, "cpu", available=_machine(n_cpu=2))
    assert devs == [_Dev("cpu", 0)] and chain_method_of(devs) == "vectorized"
    assert nuts_devices(1, "cpu", available=_machine()) == [_Dev("cpu", 0)]
    assert nuts_devices(4, "cpu", chain_method="vectorized", available=_machine()) == [
        _Dev("cpu", 0)]
    with pytest.raises(ValueError, match="a device per chain"):
        nuts_devices(4, "cpu", chain_method="parallel", available=_machine(n_cpu=2))


def test_the_gpu_only_when_asked_for():
    machine = _machine(n_cpu=16, n_gpu=1)
    assert nuts_devices(4, "gpu", available=machine) == [_Dev("gpu", 0)]  # vectorised
    assert nuts_devices(2, "gpu", available=_machine(n_gpu=2)) == [_Dev("gpu", 0),
                                                                     _Dev("gpu", 1)]
    with pytest.raises(ValueError, match="no GPU"):
        nuts_devices(4, "gpu", available=_machine(n_gpu=0))
    with pytest.raises(ValueError, match="device must be"):
        nuts_devices(4, "tpu", available=machine)


def test_auto_asks_the_router_with_the_work(monkeypatch):
    seen = []

    def route(kind, *, work, **_):
        seen.append((kind, work))
        return types.SimpleNamespace(device=answer[0])

    answer = ["gpu"]
    monkeypatch.setitem(sys.modules, "xpcsviewer.backends.routing",
                        types.SimpleNamespace(route=route))
    assert nuts_devices(4, "auto", work=1e9, available=_machine()) == [_Dev("gpu", 0)]
    assert seen == [("nuts", 1e9)]
    # a GPU the router picks but this process does not have: the CPU
    assert [d.platform for d in nuts_devices(4, "auto", available=_machine(n_gpu=0))] == [
        "cpu"] * 4
    answer[0] = "cpu"
    assert [d.platform for d in nuts_devices(4, "auto", available=_machine())] == ["cpu"] * 4


def test_fits_pass_their_work_and_device_to_the_placement(monkeypatch):
    # fit_g2_bayes asks nuts_devices once per call with its work, and runs the chains
    # on the devices it gets (here the real CPU devices of this process)
    from xpcsviewer.fitting import bayes

    asked = []
    real = bayes.nuts_devices

    def spy(num_chains, device="auto", **kw):
        asked.append((num_chains, device, kw.get("work")))
        return real(num_chains, "cpu", chain_method=kw.get("chain_method", "auto"))

    monkeypatch.setattr(bayes, "nuts_devices", spy)
    placed = []
    build = bayes_run._PerBinSampler.__init__

    def sampler(self, *a):
        placed.append(a[-1])  # the devices its programs run on
        build(self, *a)

    monkeypatch.setattr(bayes_run._PerBinSampler, "__init__", sampler)
    bayes_run._per_bin_programs.cache_clear()
    rng = np.random.default_rng(0)
    tau = np.geomspace(1e-5, 1.0, 24)
    g2 = 1 + 0.3 * np.exp(-2 * tau / 1e-3)[None, :] + 0.005 * rng.standard_normal((2, 24))
    nuts = SamplerSpec(num_warmup=20, num_samples=20, num_chains=2, block_size=20,
                       extend=False, device="gpu")
    res = bayes.fit_g2_bayes(tau, g2, np.full_like(g2, 0.005), sampler=nuts)
    assert asked == [(2, "gpu", 2 * 24 * 40 * 2)]
    assert placed == [tuple(real(2, "cpu"))]
    assert res.chain_method == chain_method_of(real(2, "cpu"))  # "parallel" on >= 2 devices


def test_key_data_is_the_prng_key():
    import jax

    for seed in (0, 1, 7919, 2**32 + 5, 2**40):
        np.testing.assert_array_equal(bayes_run._key_data(seed),
                                      np.asarray(jax.random.PRNGKey(seed)))
