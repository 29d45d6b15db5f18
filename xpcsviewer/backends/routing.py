"""Routing by whole-job cost: which device a job runs on (issue 31).

A kernel-level crossover (``docs/device-routing.md``) does not hold for whole jobs: on a
GPU machine every job was slower with the GPU because start-up, compilation, transfers
and the host loop were not counted. Here a job's estimated wall time on each candidate
device is

    startup + compile + work * per_unit + bytes / bandwidth + steps * per_step

with per-kind, per-device constants from a machine profile written by
``xpcsviewer device --calibrate`` (conservative defaults without one: the CPU unless
the job is large). ``route`` is called once at a job's entry, decided without importing
JAX: a job routed to the CPU runs the CPU engines (numba/BLAS/NumPy) or JAX pinned to
the CPU platform, so no GPU is initialised for it.

Work units per kind:

========== =========================================== =========================
kind       work                                        bytes
========== =========================================== =========================
multitau   pixels x frames                             frames as stored
twotime    pixels x frames**2 / 2 (multiply-adds)      frames as stored
sparse     photon units (below)                        hits x 16 (event bytes)
lsq        curves x points                             curves x points x 24
nuts       curves x points x (warmup+samples) x chains curves x points x 24
========== =========================================== =========================

A photon unit is one nanosecond of the numba photon engine by the path model of
:mod:`xpcsviewer.compute.pipeline_sparse` (hits read, hits of every level, partners
sought, pixel levels), so the default CPU row reproduces that model's estimate; the GPU
row is the XLA photon engine (issue 47). Its default rate is an unmeasured estimate
(:data:`UNMEASURED_DEFAULTS`) until ``device --calibrate`` measures it on a GPU machine.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_PROFILE",
    "KINDS",
    "PHOTON_UNIT_S",
    "UNMEASURED_DEFAULTS",
    "DeviceCost",
    "MachineProfile",
    "Route",
    "cpu_pinned",
    "estimate",
    "gpu_present",
    "load_profile",
    "pin_cpu",
    "profile_path",
    "route",
    "route_and_pin",
    "save_profile",
    "set_one_shot",
]

KINDS = ("multitau", "twotime", "sparse", "lsq", "nuts")
#: kinds whose engine runs on the CPU only (none since the XLA photon engine, issue 47)
CPU_ONLY: frozenset[str] = frozenset()
#: seconds of one photon unit on the numba engine by the path model (the sparse CPU
#: row's default rate): a job's photon units are its path-model estimate / this
PHOTON_UNIT_S = 1e-9
#: default rows that were never measured: a route using one says so
UNMEASURED_DEFAULTS = frozenset({("sparse", "gpu")})
DEVICES = ("cpu", "gpu")
PROFILE_VERSION = 1


@dataclass(frozen=True)
class DeviceCost:
    """Cost constants of one job kind on one device (seconds, bytes/s).

    ``per_unit_s`` is None where the kind has no engine on that device.
    """

    startup_s: float = 0.0
    compile_s: float = 0.0
    per_unit_s: float | None = 0.0
    bytes_per_s: float = float("inf")
    per_step_s: float = 0.0

    def seconds(self, work: float, nbytes: float = 0.0, steps: float = 0.0) -> float | None:
        """Estimated wall time of a job, or None when the device cannot run it."""
        if self.per_unit_s is None:
            return None
        move = 0.0 if self.bytes_per_s == float("inf") else nbytes / self.bytes_per_s
        return (self.startup_s + self.compile_s + work * self.per_unit_s + move
                + steps * self.per_step_s)


def _defaults() -> dict[str, dict[str, DeviceCost]]:
    # CPU: measured on the 2-core development machine (numba/BLAS engines, warm kernels;
    # docs/device-routing.md). GPU: pessimistic start-up and compile figures from the
    # H200 measurements of issue 26 (CUDA initialisation 2-3 s, XLA compiles) so that
    # without a calibrated profile only large jobs leave the CPU.
    gpu_start = 4.0
    return {
        "multitau": {"cpu": DeviceCost(per_unit_s=3.0e-9),
                     "gpu": DeviceCost(gpu_start, 3.0, 2.0e-10, 1.0e10, 0.0)},
        "twotime": {"cpu": DeviceCost(per_unit_s=6.0e-11),
                    "gpu": DeviceCost(gpu_start, 4.0, 2.0e-12, 1.0e10, 0.0)},
        # photons: the CPU row is the path model (PHOTON_UNIT_S per unit); the XLA photon
        # engine's GPU rate is an estimate, 1/20 of it (issue 47's goal, >= 3e8 hits/s on
        # a GPU against 1.28e7 on 2 cores); on the CPU that engine took 8-18x numba's
        # time here, so it has no row: auto never runs it on a CPU
        "sparse": {"cpu": DeviceCost(per_unit_s=PHOTON_UNIT_S),
                   "gpu": DeviceCost(gpu_start, 3.0, PHOTON_UNIT_S / 20, 1.0e10, 0.0)},
        "lsq": {"cpu": DeviceCost(compile_s=1.0, per_unit_s=2.0e-6),
                "gpu": DeviceCost(gpu_start, 2.0, 2.0e-7, 1.0e10, 0.0)},
        # per step (draw, warm-up included): an H200 took 49.7 s for 36 curves x 1500
        # draws x 4 chains, ~0.03 s a step whatever the bins (issue 32's session); the
        # per-unit cost stays conservative until a calibration measures it
        "nuts": {"cpu": DeviceCost(compile_s=6.0, per_unit_s=4.0e-7, per_step_s=1.0e-4),
                 "gpu": DeviceCost(gpu_start, 8.0, 2.0e-6, 1.0e10, 0.03)},
    }


@dataclass(frozen=True)
class MachineProfile:
    """Per-kind, per-device cost constants of one machine."""

    costs: Mapping[str, Mapping[str, DeviceCost]]
    source: str = "defaults"
    machine: Mapping[str, Any] = field(default_factory=dict)

    def cost(self, kind: str, device: str) -> DeviceCost:
        _check_kind(kind)
        by_dev = self.costs.get(kind) or {}
        got = by_dev.get(device)
        return got if got is not None else DEFAULT_PROFILE.costs[kind][device]

    def row_source(self, kind: str, device: str) -> str:
        """Where the row of ``kind`` on ``device`` comes from: this profile's source, or
        "defaults" (with "unmeasured estimate" where the default was never measured)."""
        if self is not DEFAULT_PROFILE and (self.costs.get(kind) or {}).get(device) is not None:
            return self.source
        if (kind, device) in UNMEASURED_DEFAULTS:
            return "defaults, unmeasured estimate"
        return "defaults"

    def sources(self, kind: str, devices: Sequence[str] = DEVICES) -> str:
        """The rows' sources of a route, said once: "defaults", or per device where
        they differ (a calibrated profile without the kind falls back to the defaults)."""
        got = {d: self.row_source(kind, d) for d in devices}
        if len(set(got.values())) == 1:
            return next(iter(got.values()))
        return ", ".join(f"{d.upper()}: {v}" for d, v in got.items())

    def to_json(self) -> dict:
        return {"version": PROFILE_VERSION, "source": self.source, "machine": dict(self.machine),
                "costs": {k: {d: asdict(c) for d, c in v.items()} for k, v in self.costs.items()}}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], source: str) -> MachineProfile:
        if obj.get("version") != PROFILE_VERSION:
            raise ValueError(f"profile version {obj.get('version')!r}, expected {PROFILE_VERSION}")
        costs: dict[str, dict[str, DeviceCost]] = {}
        for kind, by_dev in dict(obj.get("costs", {})).items():
            _check_kind(kind)
            costs[kind] = {}
            for dev, c in dict(by_dev).items():
                if dev not in DEVICES:
                    raise ValueError(f"unknown device {dev!r} in profile (use cpu, gpu)")
                costs[kind][dev] = DeviceCost(**{k: _cost_value(kind, dev, k, v)
                                                 for k, v in dict(c).items()})
        return cls(costs, source, dict(obj.get("machine", {})))


DEFAULT_PROFILE = MachineProfile(_defaults())


def _cost_value(kind: str, dev: str, key: str, v: Any) -> float | None:
    """A profile's cost checked: finite and >= 0 seconds, a positive rate (infinite:
    no copy), ``per_unit_s`` null where the device has no engine."""
    if key not in DeviceCost.__dataclass_fields__:
        raise ValueError(f"unknown cost {key!r} of {kind} on {dev}")
    if v is None and key == "per_unit_s":
        return None
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ValueError(f"{kind}.{dev}.{key} is {v!r}, expected a number")
    x = float(v)
    if key == "bytes_per_s":
        if not x > 0:  # NaN too
            raise ValueError(f"{kind}.{dev}.{key} is {v!r}, expected a positive rate")
        return x
    if not (math.isfinite(x) and x >= 0):
        raise ValueError(f"{kind}.{dev}.{key} is {v!r}, expected finite seconds >= 0")
    return x


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown job kind {kind!r}; use one of {', '.join(KINDS)}")


def profile_path(env: Mapping[str, str] | None = None) -> Path:
    """``XPCS_DEVICE_PROFILE`` or ``~/.cache/xpcsviewer/device-profile.json``."""
    env = os.environ if env is None else env
    raw = env.get("XPCS_DEVICE_PROFILE", "").strip()
    if raw:
        return Path(raw).expanduser()
    base = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "xpcsviewer" / "device-profile.json"


def load_profile(path: Path | None = None) -> MachineProfile:
    """The machine's calibrated profile, or the defaults (with a logged reason) when
    there is none or it cannot be read."""
    from xpcsviewer.backends.json_file import read_json_object

    p = profile_path() if path is None else Path(path)
    obj, _why = read_json_object(p, "device profile")  # warned there
    if obj is None:
        return DEFAULT_PROFILE
    try:
        return MachineProfile.from_json(obj, str(p))
    except (ValueError, TypeError, AttributeError) as exc:
        logger.warning("device profile %s not used (%s); using the defaults", p, exc)
        return DEFAULT_PROFILE


def save_profile(profile: MachineProfile, path: Path | None = None) -> Path:
    """Write ``profile`` atomically (temporary file, then rename)."""
    p = profile_path() if path is None else Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(profile.to_json(), indent=2))
    os.replace(tmp, p)
    return p


def gpu_present(env: Mapping[str, str] | None = None) -> bool:
    """Whether a GPU can be used, decided without importing JAX or initialising CUDA:
    an accelerator plugin is installed and not pinned away, and the driver lists a GPU."""
    from xpcsviewer.backends.device import accelerator_possible

    if not accelerator_possible(env):
        return False
    nv = Path("/proc/driver/nvidia/gpus")
    if nv.is_dir() and any(nv.iterdir()):
        return True
    return Path("/dev/nvidia0").exists() or Path("/dev/kfd").exists()


@dataclass(frozen=True)
class Route:
    """A job's device and why: ``device`` is "cpu" or "gpu"."""

    kind: str
    device: str
    reason: str
    estimates: Mapping[str, float | None]
    profile: str

    def as_config(self) -> dict[str, Any]:
        """Entries for a result file's config / a log line."""
        out: dict[str, Any] = {"route_device": self.device, "route_reason": self.reason,
                               "route_profile": self.profile}
        for d, s in self.estimates.items():
            if s is not None:
                out[f"route_{d}_s_est"] = round(float(s), 4)
        return out


def estimate(kind: str, device: str, work: float, nbytes: float = 0.0, steps: float = 0.0,
             profile: MachineProfile | None = None) -> float | None:
    """Estimated seconds of a ``kind`` job on ``device`` (None: no engine there)."""
    prof = load_profile() if profile is None else profile
    return prof.cost(kind, device).seconds(float(work), float(nbytes), float(steps))


def route(kind: str, *, work: float, nbytes: float = 0.0, steps: float = 0.0,
          requested: str | None = None, profile: MachineProfile | None = None,
          accelerators: Sequence[str] | bool | None = None) -> Route:
    """Choose the device of one job.

    Parameters
    ----------
    kind : {"multitau", "twotime", "sparse", "lsq", "nuts"}
    work, nbytes, steps : float
        The job's work units (see the module table), bytes it would move to a device,
        and host-loop steps.
    requested : {"auto", "cpu", "gpu"}, optional
        The job's request; default the current RunConfig's device. An explicit device
        wins (a GPU request without a GPU, or without a GPU engine for the kind, gives
        the CPU with the reason).
    profile : MachineProfile, optional
        Default: :func:`load_profile`.
    accelerators : bool or sequence, optional
        Whether a GPU is present (tests inject it); default :func:`gpu_present`.

    Returns
    -------
    Route
    """
    _check_kind(kind)
    if requested is None:
        from xpcsviewer.backends.config import current_config

        requested = current_config().device
    prof = load_profile() if profile is None else profile
    has_gpu = gpu_present() if accelerators is None else bool(accelerators)
    est = {d: prof.cost(kind, d).seconds(float(work), float(nbytes), float(steps))
           for d in DEVICES}
    if not has_gpu or kind in CPU_ONLY:
        est["gpu"] = None
    src = prof.sources(kind, [d for d in DEVICES if est[d] is not None])
    if requested == "cpu":
        return Route(kind, "cpu", "CPU requested", est, src)
    if requested == "gpu":
        if kind in CPU_ONLY:
            return Route(kind, "cpu", f"no GPU engine for {kind} jobs", est, src)
        if not has_gpu:
            return Route(kind, "cpu", "GPU requested but none is present", est, src)
        if est["gpu"] is None:
            return Route(kind, "cpu", f"no GPU engine for {kind} jobs", est, src)
        return Route(kind, "gpu", "GPU requested", est, src)
    if kind in CPU_ONLY:
        return Route(kind, "cpu", f"no GPU engine for {kind} jobs", est, src)
    if not has_gpu:
        return Route(kind, "cpu", "no GPU present", est, src)
    if est["gpu"] is None:
        return Route(kind, "cpu", f"no GPU engine for {kind} jobs", est, src)
    cpu, gpu = est["cpu"], est["gpu"]
    assert cpu is not None
    if gpu < cpu:
        why = f"GPU est. {gpu:.2f} s < CPU est. {cpu:.2f} s ({src})"
        return Route(kind, "gpu", why, est, src)
    return Route(kind, "cpu", f"CPU est. {cpu:.2f} s <= GPU est. {gpu:.2f} s ({src})", est, src)


def timed(fn: Any) -> float:
    """Wall seconds of ``fn()`` (for calibration)."""
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


# --- one-shot processes: a job routed to the CPU never starts a GPU --------------------
_STATE = {"one_shot": False, "pinned": False, "pin_pending": False}


def set_one_shot(flag: bool = True) -> None:
    """Mark this process as running one command (the command line, not the window):
    a job routed to the CPU may then start JAX on the CPU platform only."""
    _STATE["one_shot"] = bool(flag)


def cpu_pinned() -> bool:
    """Whether :func:`pin_cpu` took effect in this process."""
    return _STATE["pinned"]


def _jax_started() -> bool:
    if "jax" not in sys.modules:
        return False
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):  # unknown JAX internals: assume started
        return True


def pin_cpu() -> bool:
    """Start JAX on the CPU platform only, if it has not started and this is a one-shot
    process: no GPU client is created and no accelerator plugin is imported (measured
    on an H200: CUDA start-up made a CPU-routed fit of 100 files 6.1 s instead of 4.1 s).

    Returns whether the pin is in force. In the window (not one-shot) nothing changes:
    a later job there may want the GPU.
    """
    if _STATE["pinned"]:
        return True
    if not _STATE["one_shot"] or _jax_started() \
            or "xpcsviewer.backends.jax_backend" in sys.modules:
        return False
    _STATE["pin_pending"] = True
    from xpcsviewer.backends import get_backend

    try:
        get_backend("jax")  # its import applies the pin before JAX's backends start
    except ImportError:  # no JAX: nothing can start a GPU
        return False
    finally:
        _STATE["pin_pending"] = False
    return _STATE["pinned"]


def _apply_pending_pin(jax: Any) -> None:
    """Called by the JAX backend's import between ``import jax`` and its first array."""
    if not _STATE.get("pin_pending"):
        return
    jax.config.update("jax_platforms", "cpu")
    try:
        # JAX imports every installed accelerator plugin before it reads
        # jax_platforms; marking discovery done keeps the CUDA plugin out of the process.
        from jax._src import xla_bridge

        if hasattr(xla_bridge, "_plugins_registered"):
            xla_bridge._plugins_registered = True
    except ImportError:  # pragma: no cover - JAX internals moved: the platform pin stays
        pass
    _STATE["pinned"] = True
    logger.info("JAX pinned to the CPU for this process (job routed to the CPU)")


def route_and_pin(kind: str, **kw: Any) -> Route:
    """:func:`route`, then :func:`pin_cpu` when the job goes to the CPU."""
    r = route(kind, **kw)
    if r.device == "cpu":
        pin_cpu()
    return r
