"""DeviceManager: env parsing, fallback chain, singleton, routing, transfers."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import numpy as np
import pytest

from xpcsviewer import backends
from xpcsviewer.backends import (
    DEFAULT_DEVICE_THRESHOLD,
    DeviceKind,
    DeviceManager,
    ensure_numpy,
    get_backend,
    get_transfer_stats,
    parse_device,
    reset_transfer_stats,
)


@dataclass(frozen=True)
class FakeGpu:
    """Stands in for a jax.Device of an accelerator (CI has no GPU)."""

    id: int = 0
    platform: str = "gpu"


def dm(**env):
    """A manager that sees no accelerator, as on CI (also on a GPU machine: the tests
    of the no-GPU paths must not depend on where they run)."""
    return DeviceManager(env={k: str(v) for k, v in env.items()}, accelerators=[])


# --- env values ------------------------------------------------------------


def test_defaults_choose_jax_cpu_without_gpu():
    m = dm()
    assert m.choice.kind is DeviceKind.JAX_CPU
    assert m.backend_name == "jax"
    assert m.threshold == DEFAULT_DEVICE_THRESHOLD
    assert m.describe().startswith("JAX ") and m.describe().endswith(", CPU, float64")


@pytest.mark.parametrize("value", ["false", "0", "no", "off", "FALSE"])
def test_use_jax_false_gives_numpy(value):
    m = dm(XPCS_USE_JAX=value)
    assert m.choice.kind is DeviceKind.NUMPY
    assert m.describe().startswith("NumPy ")


def test_use_jax_true_without_jax_is_clear_import_error():
    with pytest.raises(ImportError, match=r"pip install 'jax\[cpu\]'"):
        DeviceManager(env={"XPCS_USE_JAX": "true"}, jax_available=False)


def test_auto_without_jax_degrades_to_numpy_and_logs(caplog):
    with caplog.at_level("WARNING"):
        m = DeviceManager(env={}, jax_available=False)
    assert m.choice.kind is DeviceKind.NUMPY
    assert any("jax-cpu -> numpy" in d for d in m.downgrades)
    assert "Downgrade jax-cpu -> numpy" in caplog.text


@pytest.mark.parametrize(
    ("env", "match"),
    [
        ({"XPCS_DEVICE": "tpu"}, "XPCS_DEVICE|not one of"),
        ({"XPCS_USE_JAX": "maybe"}, "XPCS_USE_JAX"),
        ({"XPCS_USE_GPU": "perhaps"}, "XPCS_USE_GPU"),
        ({"XPCS_GPU_FALLBACK": "sometimes"}, "XPCS_GPU_FALLBACK"),
        ({"XPCS_GPU_MEMORY_FRACTION": "1.5"}, "XPCS_GPU_MEMORY_FRACTION"),
        ({"XPCS_GPU_MEMORY_FRACTION": "lots"}, "XPCS_GPU_MEMORY_FRACTION"),
        ({"XPCS_DEVICE_THRESHOLD": "big"}, "XPCS_DEVICE_THRESHOLD"),
        ({"XPCS_DEVICE_THRESHOLD": "-5"}, "XPCS_DEVICE_THRESHOLD"),
    ],
)
def test_invalid_env_values_are_clear_errors(env, match):
    with pytest.raises(ValueError, match=match):
        DeviceManager(env=env)


def test_gpu_requested_without_gpu_falls_back_step_by_step():
    m = dm(XPCS_DEVICE="gpu", JAX_PLATFORMS="cpu")
    assert m.choice.kind is DeviceKind.JAX_CPU
    assert any("jax-gpu -> jax-cpu" in d and "JAX_PLATFORMS=cpu" in d for d in m.downgrades)


def test_use_gpu_legacy_flag_means_gpu_request():
    m = dm(XPCS_USE_GPU="true")
    assert m.settings.device == "gpu"
    assert m.choice.kind is DeviceKind.JAX_CPU  # no GPU here: fell back


def test_gpu_without_fallback_raises():
    with pytest.raises(RuntimeError, match="XPCS_GPU_FALLBACK=false"):
        dm(XPCS_DEVICE="gpu", XPCS_GPU_FALLBACK="false")


def test_gpu_and_no_jax_goes_to_numpy():
    m = dm(XPCS_DEVICE="gpu", XPCS_USE_JAX="false")
    assert m.choice.kind is DeviceKind.NUMPY
    assert any("numpy" in d for d in m.downgrades)


def test_threshold_override():
    assert dm(XPCS_DEVICE_THRESHOLD="1000").threshold == 1000
    assert dm(XPCS_DEVICE_THRESHOLD="1e6").threshold == 1_000_000


def test_parse_device():
    assert parse_device("AUTO") == "auto"
    assert parse_device("cuda") == "gpu"
    assert parse_device(None) is None
    g = FakeGpu()
    assert parse_device(g) is g
    with pytest.raises(ValueError):
        parse_device("npu")
    with pytest.raises(ValueError):
        parse_device(3)


# --- singleton ---------------------------------------------------------------


def test_singleton_under_many_threads(fresh_device_manager):
    seen = []
    barrier = threading.Barrier(16)

    def work():
        barrier.wait()
        seen.append(backends.get_device_manager())

    threads = [threading.Thread(target=work) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 16
    assert all(s is seen[0] for s in seen)
    DeviceManager.reset()
    assert backends.get_device_manager() is not seen[0]


def test_get_and_set_backend(fresh_device_manager, monkeypatch):
    assert get_backend().name == "jax"
    backends.set_backend("numpy")
    assert get_backend().name == "numpy"
    backends.set_backend(None)
    monkeypatch.setenv("XPCS_USE_JAX", "false")
    DeviceManager.reset()
    assert get_backend().name == "numpy"
    with pytest.raises(ValueError):
        backends.set_backend("torch")


# --- routing -------------------------------------------------------------------


def test_routing_without_accelerator_leaves_placement_alone():
    m = dm()
    assert m.resolve("auto", work=10**12) is None
    assert m.resolve(None) is None
    cpu = m.resolve("cpu")
    assert cpu.platform == "cpu"
    # gpu with fallback: the CPU, never an error
    assert m.resolve("gpu").platform == "cpu"


def test_routing_with_simulated_accelerator():
    gpu = FakeGpu()
    m = DeviceManager(env={"XPCS_DEVICE_THRESHOLD": "1000"}, accelerators=[gpu])
    assert m.choice.kind is DeviceKind.JAX_GPU
    assert m.resolve("auto", work=10).platform == "cpu"
    assert m.resolve("auto", work=999).platform == "cpu"
    assert m.resolve("auto", work=1000) is gpu
    assert m.resolve("auto", work=10**9) is gpu
    assert m.resolve("auto") is gpu  # unknown work: treated as large
    assert m.resolve("cpu", work=10**9).platform == "cpu"
    assert m.resolve("gpu", work=1) is gpu
    other = FakeGpu(id=1)
    assert m.resolve(other) is other
    assert m.describe().endswith("GPU, float64")
    assert m.info()["chosen_device"] == "gpu:0"


def test_routing_default_threshold_with_accelerator():
    gpu = FakeGpu()
    m = DeviceManager(env={}, accelerators=[gpu])
    assert m.resolve("auto", work=DEFAULT_DEVICE_THRESHOLD - 1).platform == "cpu"
    assert m.resolve("auto", work=DEFAULT_DEVICE_THRESHOLD) is gpu


def test_routing_is_noop_inside_jit():
    import jax
    import jax.numpy as jnp

    gpu = FakeGpu()
    m = DeviceManager(env={"XPCS_DEVICE_THRESHOLD": "0"}, accelerators=[gpu])
    seen = []

    @jax.jit
    def f(x):
        seen.append(m.resolve("auto", work=10**9))
        seen.append(m.resolve("gpu"))
        return x * 2

    f(jnp.ones(3))
    assert seen == [None, None]
    assert m.resolve("auto", work=10**9) is gpu  # outside: routes


def test_identity_fast_path_keeps_object_and_jit_cache():
    import jax
    import jax.numpy as jnp

    jb = get_backend("jax")
    cpu = jax.devices("cpu")[0]
    x = jax.device_put(jnp.arange(8.0), cpu)  # on a GPU machine the default is the GPU
    assert jb.asarray(x, device=cpu) is x
    assert jb.asarray(x) is x

    traces = []

    @jax.jit
    def f(v):
        traces.append(1)
        return v + 1

    for _ in range(5):
        f(jb.asarray(x, device=cpu))
    assert len(traces) == 1


def test_placement_untouched_for_tracers():
    import jax
    import jax.numpy as jnp

    jb = get_backend("jax")
    cpu = jax.devices("cpu")[0]

    @jax.jit
    def f(v):
        w = jb.asarray(v, device=cpu)
        assert w is v
        return w * 3

    np.testing.assert_allclose(ensure_numpy(f(jnp.ones(2))), [3.0, 3.0])


# --- ensure_numpy and transfer counters ---------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: [1.0, 2.0],
        lambda: 3.5,
        lambda: np.arange(4.0),
        lambda: np.frombuffer(np.arange(4.0).tobytes()),  # read-only
        lambda: __import__("jax.numpy").numpy.arange(4.0),
        lambda: np.float64(2.0),
    ],
    ids=["list", "scalar", "ndarray", "readonly", "jax", "npscalar"],
)
def test_ensure_numpy_gives_writable_ndarray(make):
    x = make()
    out = ensure_numpy(x)
    assert isinstance(out, np.ndarray)
    assert out.flags.writeable
    out[...] = 0  # must not raise, must not touch a read-only source


def test_ensure_numpy_keeps_writable_numpy_without_copy():
    a = np.arange(3.0)
    assert ensure_numpy(a) is a
    ro = np.arange(3.0)
    ro.setflags(write=False)
    out = ensure_numpy(ro)
    assert out is not ro and out.flags.writeable


def test_transfer_counters():
    import jax

    jb = get_backend("jax")
    cpu = jax.devices("cpu")[0]
    reset_transfer_stats()
    host = np.ones(1000)
    dev = jb.asarray(host, device=cpu)
    s = get_transfer_stats()
    assert (s.host_to_device_count, s.host_to_device_bytes) == (1, 8000)
    assert jb.asarray(dev, device=cpu) is dev  # identity: no new transfer
    assert get_transfer_stats().host_to_device_count == 1
    ensure_numpy(dev * 2)
    s = get_transfer_stats()
    assert (s.device_to_host_count, s.device_to_host_bytes) == (1, 8000)
    reset_transfer_stats()
    assert get_transfer_stats().host_to_device_count == 0


def test_info_fields():
    info = dm().info()
    for key in (
        "backend",
        "jax_version",
        "devices",
        "chosen_device",
        "routing_threshold",
        "x64",
        "cache_dir",
    ):
        assert key in info
    assert info["x64"] is True
    import jax

    assert info["devices"] == [f"{d.platform}:{d.id}" for d in jax.devices()]
    if jax.default_backend() == "cpu":
        # cpu:0 computes; the other XLA host devices are there for parallel NUTS chains
        assert info["devices"][0] == "cpu:0"
        assert all(d.startswith("cpu:") for d in info["devices"])
    assert info["chosen_device"] == "cpu"


@pytest.mark.gpu
def test_gpu_parity_and_choice():
    import jax

    m = DeviceManager(env={})
    assert m.choice.kind is DeviceKind.JAX_GPU
    jb = get_backend("jax")
    x = np.random.default_rng(0).normal(size=(256, 256))
    g = jb.asarray(x, device=m.resolve("gpu"))
    assert next(iter(g.devices())).platform == "gpu"
    np.testing.assert_allclose(ensure_numpy(jax.numpy.exp(g).sum()), np.exp(x).sum(), rtol=1e-10)


def test_host_devices_for_parallel_chains():
    """Several XLA CPU devices (XPCS_HOST_DEVICES, default max(4, cores)) so that
    NUTS chains run in parallel; single-device work still goes to cpu:0."""
    import subprocess
    import sys

    code = (
        "from xpcsviewer.backends import get_backend, resolve_device; get_backend('jax');"
        "import jax; print(jax.local_device_count(), resolve_device('cpu'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    auto = str(max(4, min(16, os.cpu_count() or 1)))
    for setting, expect in (("1", "1"), ("3", "3"), ("auto", auto)):
        out = subprocess.run(
            [sys.executable, "-c", code], env={**env, "XPCS_HOST_DEVICES": setting,
                                               "JAX_PLATFORMS": "cpu"},
            capture_output=True, text=True, check=True, timeout=120,
        ).stdout.split()
        assert out[0] == expect, setting
        assert out[1] in ("cpu:0", "TFRT_CPU_0", "CpuDevice(id=0)"), out


def test_job_kind_routes_by_estimated_job_cost(tmp_path, monkeypatch):
    """With a kind, "auto" compares whole-job estimates (the machine profile), not the
    kernel threshold: a fit stays on the CPU where the GPU's start-up would dominate."""
    from xpcsviewer.backends.routing import KINDS, DeviceCost, MachineProfile, save_profile

    gpu = FakeGpu()
    m = DeviceManager(env={"XPCS_DEVICE_THRESHOLD": "0"}, accelerators=[gpu])
    prof = MachineProfile({k: {"cpu": DeviceCost(per_unit_s=1e-6),
                               "gpu": DeviceCost(5.0, 0.0, 1e-8)} for k in KINDS}, "t")
    monkeypatch.setenv("XPCS_DEVICE_PROFILE", str(save_profile(prof, tmp_path / "p.json")))
    assert m.resolve("auto", work=1e5) is gpu  # the threshold alone: the GPU
    assert m.resolve("auto", work=1e5, kind="lsq").platform == "cpu"  # 0.1 s vs 5 s
    assert m.resolve("auto", work=1e8, kind="lsq") is gpu  # 100 s vs 6 s
    assert m.resolve("cpu", work=1e8, kind="lsq").platform == "cpu"
