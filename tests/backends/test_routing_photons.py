"""Routing of photon jobs (issue 47): the photon rows of the job-cost model, and
``--path auto --engine auto`` on a photon source choosing the fastest of photons and
dense frames on the CPU and on a GPU, saying why; a job routed to the CPU never starts
the GPU (the fakes of test_routing.py: injected devices and a fake accelerator plugin)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pytest

from xpcsviewer.backends.routing import (
    DEFAULT_PROFILE,
    KINDS,
    PHOTON_UNIT_S,
    DeviceCost,
    MachineProfile,
    route,
)
from xpcsviewer.compute.spec import CorrelateSpec, PlanRequest
from xpcsviewer.jobs.correlate_plan import plan_correlate, plan_engine

needs_numba = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                 reason="the photon path needs numba")

CHEAP, DEAR = DeviceCost(per_unit_s=1e-15), DeviceCost(per_unit_s=1e-3)
CPU = DeviceCost(per_unit_s=1e-9)


class _QM:
    """A 64 x 64 q-map, every pixel in one of 4 bins."""

    shape = (64, 64)
    n_dynamic = n_static = 4

    def __init__(self) -> None:
        self.dynamic_roi_map = np.repeat(np.arange(1, 5), 64 * 16).reshape(64, 64)
        self.static_roi_map = self.dynamic_roi_map.copy()
        self.mask = np.ones(self.shape, bool)


class _Source:
    """What the plan reads of an opened photon source: 1000 frames at ``occupancy``."""

    sparse, time_tag, stride = True, False, 1
    n_frames, frame_shape = 1000, (64, 64)
    out_dtype = np.dtype(np.uint16)

    def __init__(self, occupancy: float = 0.01) -> None:
        self.n_events = int(occupancy * 64 * 64 * 1000)


def _prof(photons_cpu=CPU, photons_gpu=DEAR, dense_cpu=CPU, dense_gpu=DEAR,
          source="calibrated"):
    costs = {k: {"cpu": CPU, "gpu": DEAR} for k in KINDS}
    costs["sparse"] = {"cpu": photons_cpu, "gpu": photons_gpu}
    costs["multitau"] = {"cpu": dense_cpu, "gpu": dense_gpu}
    costs["twotime"] = {"cpu": dense_cpu, "gpu": dense_gpu}
    return MachineProfile(costs, source)


def _plan(prof, accelerators=True, spec=None, occupancy=0.01, **req):
    return plan_correlate(_Source(occupancy), _QM(), spec or CorrelateSpec(),
                          PlanRequest(**req), profile=prof, accelerators=accelerators)


# --- the cost rows ---------------------------------------------------------------------
def test_photon_rows_default_cpu_is_the_path_model_and_gpu_an_unmeasured_estimate():
    from xpcsviewer.commands.device import WORKLOADS
    from xpcsviewer.compute.pipeline_sparse import estimate_costs

    kind, work, nbytes, _ = WORKLOADS["W6 photons 256x256x200k 0.5%"]
    n, pix = 200_000, 256 * 256
    sec = estimate_costs(n_frames=n, detector_pixels=pix, correlated_pixels=pix,
                         hits=pix * n * 0.005, mode="multitau")[0]
    assert work == pytest.approx(sec / PHOTON_UNIT_S, rel=1e-4)
    r = route(kind, work=work, nbytes=nbytes, requested="auto", profile=DEFAULT_PROFILE,
              accelerators=True)
    assert r.estimates["cpu"] == pytest.approx(sec, rel=1e-4)
    # the default GPU row charges start-up and compilation: this job stays on the CPU
    assert r.device == "cpu" and r.estimates["gpu"] > r.estimates["cpu"]
    assert r.profile == "CPU: defaults, GPU: defaults, unmeasured estimate"
    assert "unmeasured estimate" in r.reason
    r = route("sparse", work=1e13, requested="auto", profile=DEFAULT_PROFILE,
              accelerators=True)
    assert r.device == "gpu"  # a huge photon job goes to the GPU by the defaults
    r = route("sparse", work=1e13, requested="auto", profile=DEFAULT_PROFILE,
              accelerators=False)
    assert (r.device, r.reason, r.estimates["gpu"]) == ("cpu", "no GPU present", None)


def test_calibrated_rows_override_and_missing_ones_say_defaults(tmp_path):
    from xpcsviewer.backends.routing import load_profile, save_profile

    cal = MachineProfile({"sparse": {"cpu": DeviceCost(per_unit_s=2e-9),
                                     "gpu": DeviceCost(1.0, 1.0, 1e-11)}}, "x")
    p = save_profile(cal, tmp_path / "p.json")
    back = load_profile(p)
    r = route("sparse", work=1e9, requested="auto", profile=back, accelerators=True)
    assert r.estimates["cpu"] == pytest.approx(2.0) and r.estimates["gpu"] == \
        pytest.approx(2.01)
    assert r.profile == str(p) and "unmeasured" not in r.reason
    # a calibration without photon rows (an older profile): the defaults, said
    old = MachineProfile({"multitau": {"cpu": DeviceCost(per_unit_s=1e-9)}}, str(p))
    r = route("sparse", work=1e9, requested="auto", profile=old, accelerators=True)
    assert r.estimates["cpu"] == pytest.approx(1.0)
    assert r.profile == "CPU: defaults, GPU: defaults, unmeasured estimate"
    assert route("multitau", work=1.0, requested="cpu", profile=old,
                 accelerators=False).profile == str(p)


# --- the four candidates -----------------------------------------------------------------
@needs_numba
@pytest.mark.parametrize(("winner", "occupancy", "path", "device", "engine"), [
    ("photons_cpu", 0.01, "sparse", "cpu", "compiled"),
    ("photons_gpu", 0.01, "sparse", "gpu", "xla"),
    ("dense_cpu", 0.5, "dense", "cpu", "compiled"),  # the path model takes frames
    ("dense_gpu", 0.01, "dense", "gpu", "xla"),
])
def test_each_of_the_four_can_win_and_the_plan_says_why(winner, occupancy, path, device,
                                                        engine):
    rows = {winner: CHEAP} if device == "gpu" else {}
    plan = _plan(_prof(**rows), occupancy=occupancy)
    assert (plan.path.path, plan.engine.device, plan.engine.engine.value) == \
        (path, device, engine)
    assert plan.backend == ("jax" if device == "gpu" else "numpy")
    said = winner.replace("_", " on the ").replace("cpu", "CPU").replace("gpu", "GPU")
    assert plan.job_reason.startswith(f"fastest job: {said}, est.")
    assert said in plan.describe()
    cfg = plan.as_config()
    assert cfg["job_route_reason"] == plan.job_reason
    assert {f"job_{c}_s_est" for c in ("photons_cpu", "photons_gpu", "dense_cpu",
                                        "dense_gpu")} <= set(cfg)
    assert min(plan.job_estimates, key=plan.job_estimates.get) == winner
    assert cfg["path"] == path
    if winner == "dense_gpu":  # the path model alone takes photons at 1 % occupancy
        assert cfg["path_reason"] == plan.job_reason
    assert plan.said == (device == "gpu")


@needs_numba
def test_ties_keep_the_cpu_then_the_path_models_path():
    # a GPU as fast as the CPU on both paths: the CPU, on the path model's path
    plan = _plan(_prof(photons_gpu=CPU, dense_gpu=CPU))
    est = plan.job_estimates
    assert est["photons_cpu"] == est["photons_gpu"] and est["dense_cpu"] == est["dense_gpu"]
    assert (plan.path.path, plan.engine.device, plan.backend) == ("sparse", "cpu", "numpy")
    # both paths free on the GPU (0 s each): the path model's path
    zero = DeviceCost(per_unit_s=0.0)
    plan = _plan(_prof(photons_gpu=zero, dense_gpu=zero))
    assert plan.job_estimates["photons_gpu"] == plan.job_estimates["dense_gpu"] == 0.0
    assert (plan.path.path, plan.engine.device, plan.engine.engine.value) == \
        ("sparse", "gpu", "xla")
    plan = _plan(_prof(photons_gpu=zero, dense_gpu=zero), occupancy=0.5)
    assert (plan.path.path, plan.engine.device) == ("dense", "gpu")


@needs_numba
def test_missing_calibration_falls_back_to_the_defaults_and_says_so():
    plan = _plan(DEFAULT_PROFILE)
    # a small job: the defaults keep it on the CPU, on photons as the path model says
    assert (plan.path.path, plan.engine.device, plan.backend) == ("sparse", "cpu", "numpy")
    assert "sparse: CPU: defaults, GPU: defaults, unmeasured estimate" in plan.job_reason
    assert "multitau: defaults" in plan.job_reason
    # a calibrated profile without photon rows: those rows say defaults, the rest it
    part = MachineProfile({"multitau": {"cpu": DeviceCost(per_unit_s=3e-9),
                                        "gpu": DeviceCost(1.0, 1.0, 1e-10)}}, "/p.json")
    plan = _plan(part)
    assert "multitau: /p.json" in plan.job_reason
    assert "sparse: CPU: defaults, GPU: defaults, unmeasured estimate" in plan.job_reason


@needs_numba
def test_without_a_gpu_or_with_a_request_the_path_model_decides_as_before():
    cheap_gpu = _prof(photons_gpu=CHEAP, dense_gpu=CHEAP)
    base = _plan(DEFAULT_PROFILE, accelerators=False)
    for plan in (_plan(cheap_gpu, accelerators=False),
                 _plan(cheap_gpu, device="cpu"),
                 _plan(cheap_gpu, engine="compiled")):
        assert plan.job_reason == "" and "job_route_reason" not in plan.as_config()
        assert (plan.path, plan.engine.device, plan.backend) == (base.path, "cpu", "numpy")
    # an explicit path: that path, on its cheaper device
    plan = _plan(_prof(dense_gpu=CHEAP, photons_gpu=CHEAP), path="sparse")
    assert (plan.path.path, plan.engine.device, plan.job_reason) == ("sparse", "gpu", "")


@needs_numba
def test_what_the_xla_photon_engine_lacks_keeps_photons_on_the_cpu():
    spec = CorrelateSpec(mode="both", dq="1")
    plan = _plan(_prof(photons_gpu=CHEAP), spec=spec)
    assert (plan.path.path, plan.engine.device, plan.engine.engine.value) == \
        ("sparse", "cpu", "compiled")
    assert "photons_gpu" not in plan.job_estimates
    p = plan_engine("auto", "auto", "multitau", _QM(), 100, 8192, None, photons=True,
                    profile=_prof(photons_gpu=CHEAP), accelerators=True, photon_units=1e9,
                    xla_lacks="--mode both (two-time on photons)")
    assert (p.engine.value, p.device) == ("compiled", "cpu")
    assert "does not do --mode both" in p.describe()


# --- a job routed to the CPU never starts the GPU ---------------------------------------
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
print("RESULT", rc, "jax" in sys.modules)
"""


@needs_numba
def test_cpu_routed_photon_job_imports_no_jax_and_no_plugin(tmp_path):
    sys.path.insert(0, str(Path(__file__).parents[1] / "cli"))
    try:
        from test_correlate_sparse import _qmap, write_esrf
    finally:
        sys.path.pop(0)
    _qm, qpath = _qmap(tmp_path, (24, 32), (-4.0, 12.0))
    rng = np.random.default_rng(0)
    movie = (rng.random((400, 24, 32)) < 0.01).astype(np.uint16)
    raw = write_esrf(tmp_path / "scan_sparse_frame_0_00000.h5", movie)
    plug = tmp_path / "plugins" / "jax_plugins" / "xpcs_fake_gpu"
    plug.mkdir(parents=True)
    (plug / "__init__.py").write_text(textwrap.dedent(_FAKE_PLUGIN))
    mark, out = tmp_path / "mark.txt", tmp_path / "out.hdf"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path / "plugins"), os.environ.get("PYTHONPATH", "")]),
        "FAKE_PLUGIN_MARK": str(mark), "XPCS_DEVICE_PROFILE": str(tmp_path / "none.json")}
    env.pop("JAX_PLATFORMS", None)
    got = subprocess.run([sys.executable, "-c", _RUN, "correlate", str(raw), "--qmap",
                          str(qpath), "-o", str(out), "--quiet"],
                         capture_output=True, text=True, env=env, timeout=300)
    line = [s for s in got.stdout.splitlines() if s.startswith("RESULT")]
    assert line == ["RESULT 0 False"], got.stdout + got.stderr
    assert not mark.exists()  # the accelerator plugin was never imported
    with h5py.File(out) as fh:
        cfg = fh["/xpcs/multitau/config"]
        assert cfg["device"][()] == b"cpu" and cfg["path"][()] == b"sparse"
        why = cfg["job_route_reason"][()].decode()
    assert why.startswith("fastest job: photons on the CPU") and "unmeasured" in why
