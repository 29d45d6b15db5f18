"""DeviceManager: which backend and device run the numerics, and routing per job.

The choice degrades one step at a time, ``jax-gpu -> jax-cpu -> numpy``, and every
downgrade is logged with its reason (the model is pyFAI's method registry).
All sources (CLI flag, env var, settings, GUI menu) go through :func:`parse_device`.
"""

from __future__ import annotations

import enum
import importlib.util
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_DEVICE_THRESHOLD",
    "DeviceChoice",
    "DeviceKind",
    "DeviceManager",
    "get_device_manager",
    "parse_bool_env",
    "parse_device",
    "resolve_device",
]

#: Work score (elements touched, e.g. pixels x frames or curves x points) above
#: which a job goes to the accelerator. Measured on an H200 with a 16-core host
#: (benchmarks/device_crossover.py, two runs): at every size from 4e6 up the GPU won
#: both kernels, below 1e6 the CPU often did (docs/device-routing.md).
DEFAULT_DEVICE_THRESHOLD = 4_000_000

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


class DeviceKind(enum.StrEnum):
    """Where the numerics run, best first."""

    JAX_GPU = "jax-gpu"
    JAX_CPU = "jax-cpu"
    NUMPY = "numpy"


@dataclass(frozen=True)
class DeviceChoice:
    """The active choice: backend kind, device platform, device index."""

    kind: DeviceKind
    platform: str = "cpu"
    index: int = 0


def parse_bool_env(name: str, value: str | None, default: bool) -> bool:
    """Parse a boolean environment value; an unknown word is a clear error."""
    if value is None or value.strip() == "":
        return default
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise ValueError(f"{name}={value!r} is not a boolean; use one of true/false/1/0/yes/no")


def parse_device(value: Any) -> Any:
    """Normalise a device request.

    Parameters
    ----------
    value : {"auto", "cpu", "gpu"}, jax.Device or None
        ``"cuda"`` is accepted as ``"gpu"``. ``None`` means "never touch placement".

    Returns
    -------
    str, jax.Device or None

    Raises
    ------
    ValueError
        For any other string or type.
    """
    if value is None:
        return None
    if isinstance(value, str):
        v = value.strip().lower()
        if v == "cuda":
            v = "gpu"
        if v in {"auto", "cpu", "gpu"}:
            return v
        raise ValueError(f"device {value!r} is not one of auto, cpu, gpu")
    if hasattr(value, "platform") and hasattr(value, "id"):
        return value
    raise ValueError(f"device must be 'auto', 'cpu', 'gpu', a jax.Device or None, not {value!r}")


def _in_traced_code() -> bool:
    try:
        from jax._src import core as jcore
    except ImportError:  # pragma: no cover - no JAX or a layout change
        return False
    try:
        return not jcore.trace_state_clean()
    except Exception:  # pragma: no cover
        return False


@dataclass
class _Settings:
    use_jax: str
    device: str
    gpu_fallback: bool
    memory_fraction: float
    threshold: int
    jax_platforms: str | None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> _Settings:
        use_jax = env.get("XPCS_USE_JAX", "auto").strip().lower() or "auto"
        if use_jax in _TRUE:
            use_jax = "true"
        elif use_jax in _FALSE:
            use_jax = "false"
        if use_jax not in {"auto", "true", "false"}:
            raise ValueError(f"XPCS_USE_JAX={env['XPCS_USE_JAX']!r}: use auto, true or false")
        dev = env.get("XPCS_DEVICE")
        if dev is not None and dev.strip():
            device = parse_device(dev)
        else:
            use_gpu = env.get("XPCS_USE_GPU")
            if use_gpu is not None and use_gpu.strip():
                device = "gpu" if parse_bool_env("XPCS_USE_GPU", use_gpu, False) else "cpu"
            else:
                device = "auto"
        fallback = parse_bool_env("XPCS_GPU_FALLBACK", env.get("XPCS_GPU_FALLBACK"), True)
        frac_s = env.get("XPCS_GPU_MEMORY_FRACTION", "0.9")
        try:
            frac = float(frac_s)
        except ValueError:
            raise ValueError(
                f"XPCS_GPU_MEMORY_FRACTION={frac_s!r} is not a number in (0, 1]"
            ) from None
        if not 0.0 < frac <= 1.0:
            raise ValueError(f"XPCS_GPU_MEMORY_FRACTION={frac_s!r} is not in (0, 1]")
        thr_s = env.get("XPCS_DEVICE_THRESHOLD")
        if thr_s is None or not thr_s.strip():
            thr = DEFAULT_DEVICE_THRESHOLD
        else:
            try:
                thr = int(float(thr_s))
            except ValueError:
                raise ValueError(
                    f"XPCS_DEVICE_THRESHOLD={thr_s!r} is not a non-negative work score"
                ) from None
            if thr < 0:
                raise ValueError(f"XPCS_DEVICE_THRESHOLD={thr_s!r} must be >= 0")
        return cls(use_jax, device, fallback, frac, thr, env.get("JAX_PLATFORMS"))


@dataclass
class DeviceManager:
    """Detects devices, picks the backend, and routes jobs.

    Build it through :func:`get_device_manager` (lazy, thread-safe singleton);
    tests may construct one directly with ``env=`` and injected ``accelerators=``.

    Parameters
    ----------
    env : mapping, optional
        Environment to read (default ``os.environ``).
    accelerators : sequence, optional
        Inject accelerator devices (tests simulate a GPU this way). ``None`` asks JAX.
    jax_available : bool, optional
        Override the JAX import check (tests of the fallback chain).
    """

    env: Mapping[str, str] | None = None
    accelerators: Sequence[Any] | None = None
    jax_available: bool | None = None
    choice: DeviceChoice = field(init=False)
    downgrades: list[str] = field(init=False, default_factory=list)
    settings: _Settings = field(init=False)

    _instance: ClassVar[DeviceManager | None] = None
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __post_init__(self) -> None:
        env = os.environ if self.env is None else self.env
        self.settings = _Settings.from_env(env)
        self._cpu: Any = None
        self._choose()

    # --- choosing -----------------------------------------------------------
    def _downgrade(self, frm: str, to: str, why: str) -> None:
        msg = f"Downgrade {frm} -> {to}: {why}"
        self.downgrades.append(msg)
        logger.warning(msg)

    def _jax_importable(self) -> tuple[bool, str]:
        if self.jax_available is not None:
            return self.jax_available, "JAX disabled for this DeviceManager"
        if importlib.util.find_spec("jax") is None:
            return False, "JAX is not installed"
        try:
            import xpcsviewer.backends.jax_backend  # noqa: F401
        except Exception as exc:  # broken installs must not stop the app
            return False, f"JAX failed to import ({exc})"
        return True, ""

    def _detect_accelerators(self) -> list:
        if self.accelerators is not None:
            return list(self.accelerators)
        from xpcsviewer.backends.routing import cpu_pinned, gpu_present

        # asking JAX for GPUs starts every accelerator plugin (CUDA start-up: seconds):
        # not where no GPU can be, nor in a process pinned to the CPU
        if cpu_pinned() or not gpu_present(self.env):
            return []
        import jax

        try:
            return list(jax.devices("gpu"))
        except RuntimeError:  # no GPU backend: jax raises rather than returning []
            return []

    def _choose(self) -> None:
        s = self.settings
        want_gpu = s.device == "gpu"
        if s.use_jax == "false":
            if want_gpu:
                self._downgrade("jax-gpu", "numpy", "XPCS_USE_JAX=false")
            self.choice = DeviceChoice(DeviceKind.NUMPY)
            self._accels: list = []
            return
        ok, why = self._jax_importable()
        if not ok:
            if s.use_jax == "true":
                raise ImportError(
                    f"XPCS_USE_JAX=true but {why}. Install it with "
                    "`pip install 'jax[cpu]'` (or `pip install 'xpcsviewer[gpu]'` for CUDA)"
                )
            self._downgrade("jax-cpu", "numpy", why)
            self.choice = DeviceChoice(DeviceKind.NUMPY)
            self._accels = []
            return
        self._accels = self._detect_accelerators()
        if s.device == "cpu":
            self.choice = DeviceChoice(DeviceKind.JAX_CPU)
        elif self._accels:
            self.choice = DeviceChoice(DeviceKind.JAX_GPU, self._accels[0].platform, 0)
        else:
            if want_gpu:
                reason = "no GPU visible to JAX"
                if s.jax_platforms:
                    reason += f" (JAX_PLATFORMS={s.jax_platforms})"
                if not s.gpu_fallback:
                    raise RuntimeError(f"GPU requested but {reason}, and XPCS_GPU_FALLBACK=false")
                self._downgrade("jax-gpu", "jax-cpu", reason)
            self.choice = DeviceChoice(DeviceKind.JAX_CPU)

    # --- singleton ---------------------------------------------------------
    @classmethod
    def get(cls) -> DeviceManager:
        """The process-wide instance, built on first use."""
        inst = cls._instance
        if inst is None:
            with cls._lock:
                inst = cls._instance
                if inst is None:
                    inst = cls()
                    cls._instance = inst
        return inst

    @classmethod
    def reset(cls) -> None:
        """Forget the singleton (tests, or after changing the environment)."""
        with cls._lock:
            cls._instance = None

    # --- facts ---------------------------------------------------------------
    @property
    def backend_name(self) -> str:
        """``"jax"`` or ``"numpy"``."""
        return "numpy" if self.choice.kind is DeviceKind.NUMPY else "jax"

    @property
    def threshold(self) -> int:
        """Work score above which jobs go to the accelerator."""
        return self.settings.threshold

    @property
    def has_accelerator(self) -> bool:
        """True when the choice is jax-gpu."""
        return self.choice.kind is DeviceKind.JAX_GPU

    def cpu_device(self) -> Any:
        """The JAX CPU device (``None`` on the NumPy backend)."""
        if self.backend_name == "numpy":
            return None
        if self._cpu is None:
            import jax

            self._cpu = jax.devices("cpu")[0]
        return self._cpu

    @property
    def visible_accelerators(self) -> list:
        """Every accelerator JAX sees (whatever the environment's default choice)."""
        return list(self._accels)

    def accelerator_devices(self) -> list:
        """The accelerators in use (empty unless the choice is jax-gpu)."""
        return list(self._accels) if self.has_accelerator else []

    def describe(self) -> str:
        """One line for the status bar, e.g. ``JAX 0.10.2, CPU, float64``."""
        if self.backend_name == "numpy":
            import numpy as np

            return f"NumPy {np.__version__}, CPU, float64"
        import jax

        plat = self.choice.platform.upper() if self.has_accelerator else "CPU"
        return f"JAX {jax.__version__}, {plat}, float64"

    # --- routing ---------------------------------------------------------------
    def resolve(self, device: Any = "auto", work: float | None = None,
                threshold: int | None = None, kind: str | None = None) -> Any:
        """Resolve a job's device once, at its entry.

        Parameters
        ----------
        device : {"auto", "cpu", "gpu"}, jax.Device or None
            The caller's request.
        work : float, optional
            The job's work score (elements touched). ``None``: unknown, treated as large.
        threshold : int, optional
            The job's routing threshold (its RunConfig's); default :attr:`threshold`.
        kind : str, optional
            A job kind of :mod:`xpcsviewer.backends.routing` ("lsq", "nuts", ...): "auto"
            then compares the job's estimated wall time on each device (start-up,
            compilation, work, transfers) instead of the threshold.

        Returns
        -------
        jax.Device or None
            ``None`` means "leave placement alone" (NumPy backend, no accelerator
            with ``"auto"``, a ``None`` request, or inside traced code).
        """
        device = parse_device(device)
        if device is None or self.backend_name == "numpy" or _in_traced_code():
            return None
        if not isinstance(device, str):
            return device
        if device == "cpu":
            return self.cpu_device()
        if device == "gpu":
            if self._accels and self.backend_name == "jax":
                return self._accels[0]
            if not self.settings.gpu_fallback:
                raise RuntimeError("device='gpu' requested but no GPU is visible to JAX")
            logger.info("device='gpu' requested but no GPU is visible; using the CPU")
            return self.cpu_device()
        # auto: by the work score wherever an accelerator is visible (the choice is
        # the job's, not the environment's at start-up)
        if not self._accels:
            return None
        if kind is not None and work is not None:
            from xpcsviewer.backends.routing import route

            r = route(kind, work=float(work), requested="auto", accelerators=True)
            return self._accels[0] if r.device == "gpu" else self.cpu_device()
        thr = self.threshold if threshold is None else int(threshold)
        if work is not None and work < thr:
            return self.cpu_device()
        return self._accels[0]

    def info(self, config: Any = None) -> dict:
        """Facts for ``xpcsviewer device --json``, for the job configuration ``config``
        (a RunConfig; default: the current one)."""
        from xpcsviewer.backends import get_backend
        from xpcsviewer.backends.cache import compilation_cache_dir
        from xpcsviewer.backends.config import current_config, use_config

        cfg = current_config() if config is None else config
        with use_config(cfg):
            backend = get_backend().name
        accels = self._accels if backend == "jax" else []
        on_gpu = bool(accels) and cfg.device != "cpu"
        if backend == "numpy":
            choice, description = DeviceKind.NUMPY, None
        else:
            choice = DeviceKind.JAX_GPU if on_gpu else DeviceKind.JAX_CPU
            description = None
        out: dict[str, Any] = {
            "backend": backend,
            "choice": choice.value,
            "description": description,
            "jax_version": None,
            "devices": [],
            "chosen_device": "cpu",
            "requested_device": cfg.device,
            "routing_threshold": cfg.routing_threshold(),
            "x64": None,
            "cache_dir": None,
            "jax_platforms": self.settings.jax_platforms,
            "downgrades": list(self.downgrades),
        }
        if cfg.device == "gpu" and not accels:
            out["downgrades"].append("device gpu requested: none visible, the CPU is used")
        if backend == "jax":
            import jax
            import jax.numpy as jnp

            out["jax_version"] = jax.__version__
            out["devices"] = [f"{d.platform}:{d.id}" for d in jax.devices()] + [
                f"{d.platform}:{d.id}" for d in accels if d not in jax.devices()
            ]
            out["x64"] = bool(jnp.zeros(0).dtype == jnp.float64)
            plat = "CPU"
            if on_gpu:
                a = accels[0]
                out["chosen_device"] = f"{a.platform}:{a.id}"
                plat = a.platform.upper()
            out["description"] = f"JAX {jax.__version__}, {plat}, float64"
            cache = compilation_cache_dir()
            out["cache_dir"] = str(cache) if cache is not None else None
        else:
            import numpy as np

            out["description"] = f"NumPy {np.__version__}, CPU, float64"
            out["x64"] = True  # NumPy computes in float64 by construction here
        return out


#: modules whose presence means JAX may see an accelerator (CUDA, ROCm, TPU, Metal)
_ACCEL_PLUGINS = (
    "jax_cuda12_plugin",
    "jax_cuda13_plugin",
    "jax_rocm60_plugin",
    "jax_rocm7_plugin",
    "libtpu",
    "jax_metal",
)


def accelerator_possible(env: Mapping[str, str] | None = None) -> bool:
    """Whether JAX could see an accelerator, decided without importing JAX.

    False when ``XPCS_USE_JAX`` or ``XPCS_DEVICE`` pin the CPU, when ``JAX_PLATFORMS``
    names no accelerator platform, or when no accelerator plugin is installed.
    """
    s = _Settings.from_env(os.environ if env is None else env)
    if s.use_jax == "false" or s.device == "cpu":
        return False
    if s.jax_platforms and not any(
        p.strip().lower() in ("cuda", "gpu", "rocm", "tpu", "metal")
        for p in s.jax_platforms.split(",")
    ):
        return False
    return any(importlib.util.find_spec(m) is not None for m in _ACCEL_PLUGINS)


def get_device_manager() -> DeviceManager:
    """The lazy process-wide :class:`DeviceManager`."""
    return DeviceManager.get()


def resolve_device(device: Any = "auto", work: float | None = None,
                   kind: str | None = None) -> Any:
    """The device of a job of ``work``: ``device`` as given, or for ``"auto"`` (and a
    :class:`~xpcsviewer.backends.config.RunConfig`) the choice and threshold of the
    job's run configuration (:func:`~xpcsviewer.backends.config.current_config`)."""
    from xpcsviewer.backends.config import RunConfig, current_config

    cfg = device if isinstance(device, RunConfig) else None
    if cfg is None and isinstance(device, str) and parse_device(device) == "auto":
        cfg = current_config()
    if cfg is None:
        return get_device_manager().resolve(device, work, kind=kind)
    return get_device_manager().resolve(cfg.device, work, threshold=cfg.threshold, kind=kind)


def default_placement(dev: Any) -> Any:
    """``dev``, or None where it is the device JAX would use anyway: the CPU of a process
    without accelerators. Arrays placed explicitly and arrays left alone are different
    keys of jit's cache, so a fit asked for on "cpu" (the command line's routing) would
    recompile every program the warm-up compiled for "auto" (the GUI's)."""
    if dev is None:
        return None
    mgr = get_device_manager()
    if mgr.backend_name != "jax" or mgr._accels:
        return dev
    return None if dev == mgr.cpu_device() else dev

