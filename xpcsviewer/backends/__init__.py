"""Array backends (NumPy reference, JAX default), device routing and I/O adapters.

Compute code receives a backend (``get_backend()``) and never imports JAX itself.
Importing this package does not import JAX: the JAX backend is loaded on first use.
"""

from __future__ import annotations

import threading
from typing import Any

from xpcsviewer.backends._protocol import BackendProtocol
from xpcsviewer.backends.config import RunConfig, current_config, use_config
from xpcsviewer.backends.conversions import (
    TransferStats,
    ensure_numpy,
    get_transfer_stats,
    is_jax_array,
    reset_transfer_stats,
    to_hdf5,
    to_matplotlib,
    to_pyqtgraph,
)
from xpcsviewer.backends.device import (
    DEFAULT_DEVICE_THRESHOLD,
    DeviceChoice,
    DeviceKind,
    DeviceManager,
    accelerator_possible,
    get_device_manager,
    parse_device,
    resolve_device,
)
from xpcsviewer.backends.numpy_backend import NumpyBackend

__all__ = [
    "DEFAULT_DEVICE_THRESHOLD",
    "BackendProtocol",
    "DeviceChoice",
    "DeviceKind",
    "DeviceManager",
    "NumpyBackend",
    "RunConfig",
    "TransferStats",
    "accelerator_possible",
    "current_config",
    "ensure_numpy",
    "get_backend",
    "get_device_manager",
    "get_job_backend",
    "get_transfer_stats",
    "is_jax_array",
    "parse_device",
    "reset_transfer_stats",
    "resolve_device",
    "set_backend",
    "to_hdf5",
    "to_matplotlib",
    "to_pyqtgraph",
    "use_config",
]

_lock = threading.Lock()
_override: str | None = None
_instances: dict[str, Any] = {}


def _make(name: str) -> Any:
    inst = _instances.get(name)
    if inst is None:
        if name == "numpy":
            inst = NumpyBackend()
        elif name == "jax":
            from xpcsviewer.backends.jax_backend import JaxBackend

            inst = JaxBackend()
        else:
            raise ValueError(f"unknown backend {name!r}; use 'jax' or 'numpy'")
        _instances[name] = inst
    return inst


def get_backend(name: str | None = None) -> Any:
    """The active backend, or the one named.

    Parameters
    ----------
    name : {"jax", "numpy"}, optional
        Ask for a specific backend (parity tests use both).

    Returns
    -------
    BackendProtocol
        ``set_backend`` wins; then the job's RunConfig (``current_config()``);
        for "auto" the DeviceManager's choice (JAX when importable, else NumPy).
    """
    if name is None and _override is None:
        want = current_config().backend
        name = None if want == "auto" else want
    with _lock:
        if name is not None:
            return _make(name)
        chosen = _override or get_device_manager().backend_name
        return _make(chosen)


def get_job_backend() -> Any:
    """The backend for a batch job (``correlate``): ``get_backend()``, except NumPy
    when the choice is automatic and no accelerator is possible.

    A CPU job runs the NumPy/BLAS kernels on either backend (engine routing), so
    importing JAX would only add its start-up time and memory.
    """
    cfg = current_config()
    with _lock:
        auto = _override is None and cfg.backend == "auto"
    if auto and (cfg.device == "cpu" or not accelerator_possible()):
        return get_backend("numpy")
    return get_backend()


def set_backend(name: str | None) -> Any:
    """Force ``"jax"`` or ``"numpy"`` for this process; ``None`` returns to automatic."""
    global _override
    with _lock:
        if name is None:
            _override = None
            return None
        if name == "jax" and get_device_manager().backend_name == "numpy":
            # Respect an explicit request even when auto chose NumPy; fail clearly if absent.
            try:
                _make("jax")
            except ImportError as exc:
                raise ImportError(
                    f"JAX backend requested but JAX is not importable ({exc}); "
                    "install it with `pip install 'jax[cpu]'`"
                ) from exc
        backend = _make(name)
        _override = name
        return backend
