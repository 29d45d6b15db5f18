"""``ensure_numpy`` and the adapters used at every I/O boundary.

Data crosses host->device once when a job starts and device->host once when it
ends. The counters here let tests assert that policy.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "TransferStats",
    "count_host_to_device",
    "ensure_numpy",
    "get_transfer_stats",
    "is_jax_array",
    "reset_transfer_stats",
    "to_hdf5",
    "to_matplotlib",
    "to_pyqtgraph",
]


@dataclass(frozen=True)
class TransferStats:
    """Counts and bytes in each direction since the last reset."""

    host_to_device_count: int = 0
    host_to_device_bytes: int = 0
    device_to_host_count: int = 0
    device_to_host_bytes: int = 0


_lock = threading.Lock()
_stats = {"h2d_n": 0, "h2d_b": 0, "d2h_n": 0, "d2h_b": 0}


def get_transfer_stats() -> TransferStats:
    """Snapshot of the transfer counters."""
    with _lock:
        return TransferStats(_stats["h2d_n"], _stats["h2d_b"], _stats["d2h_n"], _stats["d2h_b"])


def reset_transfer_stats() -> None:
    """Zero the transfer counters."""
    with _lock:
        for k in _stats:
            _stats[k] = 0


def count_host_to_device(nbytes: int) -> None:
    """Record one host->device transfer (called by the JAX backend's placement)."""
    with _lock:
        _stats["h2d_n"] += 1
        _stats["h2d_b"] += int(nbytes)


def _count_device_to_host(nbytes: int) -> None:
    with _lock:
        _stats["d2h_n"] += 1
        _stats["d2h_b"] += int(nbytes)


def is_jax_array(x: Any) -> bool:
    """True for a concrete ``jax.Array`` (without importing JAX if it is not loaded)."""
    jax = sys.modules.get("jax")
    # While another thread is still importing JAX the module is half initialised (no
    # ``Array`` yet); no JAX array can exist before that import has finished.
    array_type = getattr(jax, "Array", None) if jax is not None else None
    return array_type is not None and isinstance(x, array_type)


def ensure_numpy(x: Any, dtype: Any = None) -> np.ndarray:
    """Return a writable NumPy array for any input.

    Parameters
    ----------
    x : array-like
        JAX array (waited for, copied to the host and counted), NumPy array
        (copied only when read-only or when ``dtype`` asks), list, or scalar.
    dtype : numpy dtype, optional
        Convert to this dtype.

    Returns
    -------
    numpy.ndarray
        Always writable; never a view of a read-only buffer.
    """
    if is_jax_array(x):
        x.block_until_ready()
        out = np.array(x, dtype=dtype, copy=True)
        _count_device_to_host(out.nbytes)
        return out
    if isinstance(x, np.ndarray):
        if dtype is not None and x.dtype != np.dtype(dtype):
            return x.astype(dtype)
        if not x.flags.writeable:
            return x.copy()
        return x
    out = np.array(x, dtype=dtype)
    if not out.flags.writeable:
        out = out.copy()
    return out


def to_hdf5(x: Any, dtype: Any = None) -> np.ndarray:
    """Array ready for ``h5py``: NumPy, C-contiguous."""
    return np.ascontiguousarray(ensure_numpy(x, dtype))


def to_pyqtgraph(x: Any) -> np.ndarray:
    """Array ready for pyqtgraph items (float64 for real data, contiguous)."""
    arr = ensure_numpy(x)
    if arr.dtype.kind in "biu":
        arr = arr.astype(np.float64)
    return np.ascontiguousarray(arr)


def to_matplotlib(*arrays: Any) -> tuple[np.ndarray, ...] | np.ndarray:
    """Arrays ready for matplotlib; one array in gives one array out."""
    out = tuple(ensure_numpy(a) for a in arrays)
    return out[0] if len(out) == 1 else out
