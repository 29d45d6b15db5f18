"""The run configuration travels as a value: flags and menus make it, jobs run under it,
batch chunks carry it to their workers; nothing writes os.environ to choose a device."""

from __future__ import annotations

import ast
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from xpcsviewer.backends import (
    DeviceManager,
    RunConfig,
    current_config,
    get_backend,
    resolve_device,
    use_config,
)

PKG = Path(__file__).resolve().parents[2] / "xpcsviewer"


@dataclass(frozen=True)
class FakeGpu:
    id: int = 0
    platform: str = "gpu"


@pytest.fixture
def simulated_gpu(monkeypatch):
    """The process-wide manager sees one (fake) accelerator."""
    gpu = FakeGpu()
    monkeypatch.setattr(DeviceManager, "_instance", DeviceManager(env={}, accelerators=[gpu]))
    yield gpu
    DeviceManager.reset()


def test_flags_win_over_the_environment():
    env = {"XPCS_DEVICE": "gpu", "XPCS_USE_JAX": "false", "XPCS_DEVICE_THRESHOLD": "77"}
    assert RunConfig.from_env(env) == RunConfig("numpy", "gpu", 77)
    assert RunConfig.from_env(env, device="cpu", backend="jax") == RunConfig("jax", "cpu", 77)
    assert RunConfig.from_env({}) == RunConfig("auto", "auto", None)
    assert RunConfig(device="CUDA").device == "gpu"
    for bad in ({"device": "npu"}, {"backend": "torch"}, {"threshold": -1}):
        with pytest.raises(ValueError):
            RunConfig(**bad)


def test_auto_routes_by_the_jobs_config(simulated_gpu):
    cpu = DeviceManager.get().cpu_device()
    with use_config(RunConfig(device="auto", threshold=100)):
        assert resolve_device("auto", work=99) == cpu
        assert resolve_device("auto", work=100) is simulated_gpu
        assert resolve_device("cpu", work=10**9) == cpu  # an explicit request stands
    with use_config(RunConfig(device="cpu")):
        assert resolve_device("auto", work=10**12) == cpu
    with use_config(RunConfig(device="gpu")):
        assert resolve_device("auto", work=1) is simulated_gpu
    # a RunConfig given as the device is the same value
    assert resolve_device(RunConfig(device="cpu"), work=10**12) == cpu


def test_backend_follows_the_config():
    with use_config(RunConfig(backend="numpy")):
        assert get_backend().name == "numpy"
    with use_config(RunConfig(backend="jax")):
        assert get_backend().name == "jax"


def test_a_job_keeps_the_config_it_started_with():
    seen, started, go = [], threading.Event(), threading.Event()

    def job():
        with use_config(RunConfig(device="cpu")):
            started.set()
            go.wait(5)
            seen.append(current_config().device)

    t = threading.Thread(target=job)
    t.start()
    started.wait(5)
    with use_config(RunConfig(device="gpu")):  # another thread changes its own choice
        go.set()
        t.join(5)
    assert seen == ["cpu"]


def test_cli_flags_leave_environment_and_manager_alone(capsys, monkeypatch):
    from xpcsviewer.cli import main

    monkeypatch.delenv("XPCS_DEVICE", raising=False)
    monkeypatch.delenv("XPCS_USE_JAX", raising=False)
    before_env, before_dm = dict(os.environ), DeviceManager.get()
    assert main(["--device", "cpu", "--backend", "numpy", "device", "--json"]) == 0
    import json

    info = json.loads(capsys.readouterr().out)
    assert info["backend"] == "numpy" and info["requested_device"] == "cpu"
    assert dict(os.environ) == before_env
    assert DeviceManager.get() is before_dm


def test_batch_chunks_carry_the_config_to_their_workers():
    from xpcsviewer.batch import run_chunk
    from xpcsviewer.batch._engine import run_on_client

    def task(_item):
        return current_config()

    cfg = RunConfig(backend="numpy", device="cpu", threshold=5)
    outs = run_chunk(task, [(0, "a"), (1, "b")], cfg)
    assert [o.value for o in outs] == [cfg, cfg]

    submitted = []

    class Future:
        def __init__(self, value):
            self.value = value

        def result(self):
            return self.value

        def release(self):
            pass

    class Client:  # records what a Dask client would ship
        def nthreads(self):
            return {"w": 1}

        def submit(self, fn, *args, **kw):
            submitted.append(args)
            with use_config(RunConfig()):  # a worker's own defaults
                return Future(fn(*args))

        def cancel(self, _futs):
            pass

    import distributed

    def wait(futs, timeout=None, return_when=None):
        return set(futs), set()

    mp = pytest.MonkeyPatch()
    mp.setattr(distributed, "wait", wait)
    try:
        got = []
        with use_config(cfg):
            run_on_client(Client(), task, ["a", "b", "c"], got.append, lambda: None, 1)
    finally:
        mp.undo()
    assert all(args[2] == cfg for args in submitted)
    assert [o.value for o in got] == [cfg, cfg, cfg]


def test_no_module_writes_the_environment_to_choose_a_device():
    keys = {"XPCS_DEVICE", "XPCS_USE_JAX", "XPCS_USE_GPU", "XPCS_DEVICE_THRESHOLD"}
    bad = []
    for path in PKG.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for t in targets:
                if (isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant)
                        and t.slice.value in keys):
                    bad.append(f"{path.relative_to(PKG)}:{node.lineno}")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("reset", "putenv")
                    and getattr(node.func.value, "id", "") in ("DeviceManager", "os")):
                bad.append(f"{path.relative_to(PKG)}:{node.lineno}")
    assert bad == []
