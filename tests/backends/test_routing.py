"""Routing by whole-job cost (issue 31): every decision with injected costs and devices,
the machine profile, the correlate job's engine plan, and that a job routed to the CPU
never starts a GPU (nor imports an accelerator plugin)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from xpcsviewer.backends.routing import (
    DEFAULT_PROFILE,
    KINDS,
    DeviceCost,
    MachineProfile,
    load_profile,
    route,
    save_profile,
)


def _profile(cpu: DeviceCost, gpu: DeviceCost) -> MachineProfile:
    return MachineProfile({k: {"cpu": cpu, "gpu": gpu} for k in KINDS}, "test")


def test_estimate_is_startup_compile_work_transfer_and_steps():
    c = DeviceCost(startup_s=2.0, compile_s=1.0, per_unit_s=1e-6, bytes_per_s=1e9,
                   per_step_s=0.01)
    assert c.seconds(1e6, nbytes=2e9, steps=10) == pytest.approx(2 + 1 + 1 + 2 + 0.1)
    assert DeviceCost(per_unit_s=None).seconds(1.0) is None


@pytest.mark.parametrize("kind", KINDS)
def test_no_gpu_means_cpu_for_every_kind(kind):
    r = route(kind, work=1e15, requested="auto", profile=DEFAULT_PROFILE, accelerators=False)
    assert (r.device, r.reason) == ("cpu", "no GPU present")
    assert r.estimates["gpu"] is None and r.estimates["cpu"] > 0


def test_crossover_follows_the_injected_costs():
    # GPU: 5 s fixed, 10x cheaper per unit: it wins from 5 / (1e-6 - 1e-7) units on
    prof = _profile(DeviceCost(per_unit_s=1e-6), DeviceCost(4.0, 1.0, 1e-7))
    x = 5.0 / (1e-6 - 1e-7)
    for kind in ("multitau", "twotime", "lsq", "nuts"):
        assert route(kind, work=0.9 * x, requested="auto", profile=prof,
                     accelerators=True).device == "cpu"
        r = route(kind, work=1.1 * x, requested="auto", profile=prof, accelerators=True)
        assert r.device == "gpu" and "GPU est." in r.reason
        assert r.estimates["gpu"] < r.estimates["cpu"]


def test_transfers_count_against_the_gpu():
    prof = _profile(DeviceCost(per_unit_s=1e-6), DeviceCost(0.0, 0.0, 1e-7, 1e9))
    assert route("multitau", work=1e7, nbytes=0, requested="auto", profile=prof,
                 accelerators=True).device == "gpu"
    # 10 GB to move at 1 GB/s: 10 s more than the 9 s saved
    assert route("multitau", work=1e7, nbytes=1e10, requested="auto", profile=prof,
                 accelerators=True).device == "cpu"


def test_requests_win_and_say_why():
    prof = _profile(DeviceCost(per_unit_s=1.0), DeviceCost(per_unit_s=1e-9))
    assert route("lsq", work=1e6, requested="cpu", profile=prof,
                 accelerators=True).reason == "CPU requested"
    assert route("lsq", work=1.0, requested="gpu", profile=prof,
                 accelerators=True).device == "gpu"
    r = route("lsq", work=1.0, requested="gpu", profile=prof, accelerators=False)
    assert (r.device, r.reason) == ("cpu", "GPU requested but none is present")


def test_a_kind_without_a_gpu_engine_stays_on_the_cpu():
    # photons have one since issue 47 (tests/backends/test_routing_photons.py); a profile
    # may still say a kind has none
    prof = MachineProfile({"sparse": {"gpu": DeviceCost(per_unit_s=None)}}, "p")
    for req in ("auto", "gpu"):
        r = route("sparse", work=1e12, requested=req, profile=prof, accelerators=True)
        assert r.device == "cpu" and "no GPU engine" in r.reason


@pytest.mark.parametrize("kind", ["multitau", "twotime", "lsq", "nuts"])
def test_defaults_are_conservative(kind):
    """Without a profile, small jobs stay on the CPU even with a GPU; the issue's W4
    (fit of 100 files) and W5 (NUTS of one file) stay there too."""
    small = route(kind, work=1e3, requested="auto", profile=DEFAULT_PROFILE,
                  accelerators=True)
    assert small.device == "cpu"
    assert route("lsq", work=100 * 36 * 60, requested="auto", profile=DEFAULT_PROFILE,
                 accelerators=True).device == "cpu"
    assert route("nuts", work=36 * 60 * 1500 * 2, requested="auto", profile=DEFAULT_PROFILE,
                 accelerators=True).device == "cpu"
    huge = route(kind, work=1e15, requested="auto", profile=DEFAULT_PROFILE,
                 accelerators=True)
    assert huge.device == ("cpu" if kind == "nuts" else "gpu")


def test_unknown_kind_is_an_error():
    with pytest.raises(ValueError, match="unknown job kind"):
        route("fft", work=1.0, requested="auto")


def test_profile_round_trip_and_bad_files(tmp_path, caplog):
    prof = _profile(DeviceCost(compile_s=0.5, per_unit_s=2e-9),
                    DeviceCost(3.0, 1.0, 1e-10, 2e10, 0.0))
    p = save_profile(prof, tmp_path / "sub" / "profile.json")
    back = load_profile(p)
    assert back.source == str(p)
    assert back.cost("twotime", "gpu") == prof.cost("twotime", "gpu")
    assert not list(p.parent.glob(".*.tmp"))  # atomic: no temporary left
    p.write_text("{not json")
    assert load_profile(p) is DEFAULT_PROFILE
    assert "Ignored the device profile" in caplog.text and str(p) in caplog.text
    p.write_text(json.dumps({"version": 99, "costs": {}}))
    assert load_profile(p) is DEFAULT_PROFILE
    assert load_profile(tmp_path / "missing.json") is DEFAULT_PROFILE
    # a profile without a kind falls back to the defaults for it
    part = MachineProfile({"lsq": {"cpu": DeviceCost(per_unit_s=1.0)}}, "part")
    assert part.cost("multitau", "cpu") == DEFAULT_PROFILE.cost("multitau", "cpu")


def test_profile_path_from_environment(tmp_path):
    from xpcsviewer.backends.routing import profile_path

    assert profile_path({"XPCS_DEVICE_PROFILE": str(tmp_path / "p.json")}) == tmp_path / "p.json"
    assert profile_path({"XDG_CACHE_HOME": str(tmp_path)}) == \
        tmp_path / "xpcsviewer" / "device-profile.json"


# --- the correlate job's plan ------------------------------------------------------------
class _QM:
    def __init__(self) -> None:
        self.dynamic_roi_map = np.repeat(np.arange(1, 5), 25).reshape(10, 10)
        self.static_roi_map = self.dynamic_roi_map.copy()
        self.mask = np.ones((10, 10), bool)
        self.n_dynamic = 4


def test_engine_plan_follows_the_routes():
    from xpcsviewer.jobs.correlate_plan import dense_work, plan_engine

    qm = _QM()
    assert dense_work("both", qm, 100, [1, 2]) == {"multitau": 100 * 100.0,
                                                    "twotime": 50 * 100 * 100 / 2}
    cheap_gpu = _profile(DeviceCost(per_unit_s=1.0), DeviceCost(per_unit_s=1e-9))
    dear_gpu = _profile(DeviceCost(per_unit_s=1e-9), DeviceCost(per_unit_s=1.0))
    kw = {"qm": qm, "n_frames": 100, "frame_bytes": 200, "bins": [1, 2]}
    p = plan_engine("auto", "auto", "multitau", profile=cheap_gpu, accelerators=True, **kw)
    assert (p.engine, p.device, p.needs_jax) == ("xla", "gpu", True)
    p = plan_engine("auto", "auto", "multitau", profile=dear_gpu, accelerators=True, **kw)
    assert (p.engine, p.device, p.needs_jax) == ("compiled", "cpu", False)
    p = plan_engine("xla", "auto", "twotime", profile=dear_gpu, accelerators=True, **kw)
    assert (p.engine, p.device) == ("xla", "cpu")  # the XLA program on the CPU device
    p = plan_engine("compiled", "gpu", "both", profile=cheap_gpu, accelerators=True, **kw)
    assert (p.engine, p.device) == ("compiled", "cpu")
    p = plan_engine("auto", "auto", "both", profile=cheap_gpu, accelerators=True, **kw)
    assert (p.engine, p.device) == ("xla", "gpu")
    assert set(p.as_config()) >= {"engine", "device", "multitau_route_device",
                                  "twotime_route_device"}
    # photons (issue 47): the compiled engine on the CPU, the XLA engine on a GPU
    p = plan_engine("auto", "gpu", "multitau", photons=True, profile=cheap_gpu,
                    accelerators=True, **kw)
    assert (p.engine, p.device) == ("xla", "gpu") and "GPU requested" in p.describe()
    p = plan_engine("auto", "auto", "multitau", photons=True, profile=dear_gpu,
                    accelerators=True, photon_units=1e6, **kw)
    assert (p.engine, p.device, p.needs_jax) == ("compiled", "cpu", False)
    p = plan_engine("compiled", "gpu", "multitau", photons=True, profile=cheap_gpu,
                    accelerators=True, photon_units=1e6, **kw)
    assert (p.engine, p.device) == ("compiled", "cpu")
    # the XLA photon engine when asked for: on the routed device
    p = plan_engine("xla", "auto", "multitau", photons=True, profile=cheap_gpu,
                    accelerators=True, photon_units=1e6, **kw)
    assert (p.engine, p.device) == ("xla", "gpu")
    p = plan_engine("xla", "auto", "multitau", photons=True, profile=cheap_gpu,
                    accelerators=False, **kw)
    assert (p.engine, p.device) == ("xla", "cpu") and "no GPU present" in p.describe()
    p = plan_engine("xla", "cpu", "multitau", photons=True, profile=cheap_gpu,
                    accelerators=True, **kw)
    assert (p.engine, p.device) == ("xla", "cpu")
    p = plan_engine("auto", "auto", "multitau", profile=cheap_gpu, accelerators=False, **kw)
    assert (p.engine, p.device) == ("compiled", "cpu")


# --- a CPU job never starts a GPU ----------------------------------------------------------
_FAKE_PLUGIN = """
import os
open(os.environ["FAKE_PLUGIN_MARK"], "a").write("imported\\n")

def initialize():
    open(os.environ["FAKE_PLUGIN_MARK"], "a").write("initialized\\n")
"""

_RUN = """
import sys
import xpcsviewer.backends.routing as r
r.gpu_present = lambda env=None: True   # as on a GPU machine
from xpcsviewer.cli import main
rc = main(sys.argv[1:])
import jax
print("RESULT", rc, r.cpu_pinned(), jax.config.jax_platforms or "all")
"""


def _run_fit(tmp_path: Path, demo: Path, *extra: str) -> tuple[str, str]:
    plug = tmp_path / "plugins"
    (plug / "jax_plugins" / "xpcs_fake_gpu").mkdir(parents=True, exist_ok=True)
    (plug / "jax_plugins" / "xpcs_fake_gpu" / "__init__.py").write_text(
        textwrap.dedent(_FAKE_PLUGIN))
    mark = tmp_path / f"mark{len(extra)}.txt"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(plug), os.environ.get("PYTHONPATH", "")]), "FAKE_PLUGIN_MARK": str(mark),
        "XPCS_DEVICE_PROFILE": str(tmp_path / "none.json")}
    env.pop("JAX_PLATFORMS", None)  # the test suite's own pin would hide the point
    out = subprocess.run(
        [sys.executable, "-c", _RUN, "fit", str(demo), "-o", str(tmp_path / f"f{len(extra)}.json"),
         "--quiet", *extra], capture_output=True, text=True, env=env, timeout=300)
    line = [s for s in out.stdout.splitlines() if s.startswith("RESULT")]
    assert line, out.stdout + out.stderr
    return line[0], mark.read_text() if mark.exists() else ""


def test_cpu_routed_fit_starts_no_gpu_and_imports_no_plugin(tmp_path, tiny_demo_dir):
    demo = sorted(tiny_demo_dir.glob("T01*.hdf"))[0]
    line, mark = _run_fit(tmp_path, demo)
    assert line.split()[1:] == ["0", "True", "cpu"], line
    assert mark == ""  # the accelerator plugin was never imported
    # the control: a job asking for the GPU lets JAX discover (and import) the plugin
    line, mark = _run_fit(tmp_path, demo, "--device", "gpu")
    assert line.split()[2:] == ["False", "all"], line
    assert "imported" in mark and "initialized" in mark


def test_nuts_route_counts_sequential_steps():
    # issue 32's H200 session: a 36-curve fit --bayes (4 chains x 1500 draws) took 49.7 s
    # on the GPU and 15.4 s on the CPU; the per-step latency decides, not the bins
    from xpcsviewer.commands.device import WORKLOADS

    kind, work, nbytes, steps = WORKLOADS["W5 NUTS 36 curves"]
    r = route(kind, work=work, nbytes=nbytes, steps=steps, requested="auto",
              profile=DEFAULT_PROFILE, accelerators=True)
    assert r.device == "cpu"
    assert r.estimates["gpu"] > 40 > 20 > r.estimates["cpu"]
    # with a calibrated GPU whose bins are nearly free, thousands of curves and few
    # draws go there, and the same curves with many draws do not
    prof = _profile(DeviceCost(compile_s=6.0, per_unit_s=1.1e-6, per_step_s=1e-4),
                    DeviceCost(0.6, 4.0, 1e-9, 8e9, 0.03))
    many = 3000 * 60 * 4.0
    assert route("nuts", work=many * 200, steps=200, requested="auto", profile=prof,
                 accelerators=True).device == "gpu"
    assert route("nuts", work=36 * 60 * 4.0 * 1500, steps=1500, requested="auto",
                 profile=prof, accelerators=True).device == "cpu"
