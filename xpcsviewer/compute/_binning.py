"""Shared helpers for static/dynamic-bin reductions: pixel selection and bin maps.

Everything here is host-side NumPy preparation done once per job (cheap, O(pixels));
the per-frame work happens in the backend kernels of ``saxs``, ``multitau`` and
``twotime``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["PixelBins", "kernel_cache", "segment_sum_rows", "select_pixels"]

# One dict of compiled kernels per (backend name, kernel name, static config): jax.jit
# caches by shape itself, but only if the *same* jitted function object is reused.
_KERNELS: dict[tuple, Any] = {}


def kernel_cache(backend: Any, key: tuple, build: Any) -> Any:
    """Return the kernel stored under ``(backend.name, *key)``, building it once.

    Parameters
    ----------
    backend : BackendProtocol
    key : tuple
        Hashable description of the kernel and its static configuration.
    build : callable
        ``build() -> callable``; its result is wrapped by ``backend.jit``.
    """
    full = (backend.name, *key)
    fn = _KERNELS.get(full)
    if fn is None:
        fn = build()
        _KERNELS[full] = fn
    return fn


def segment_sum_rows(backend: Any, data: Any, ids: Any, n: int) -> Any:
    """``backend.segment_sum(data, ids, n)`` for (P,) or (P, k) data, fast on NumPy too.

    NumPy's generic 2-D segment sum goes through ``np.add.at``, which is ~50x slower
    than ``np.bincount``; on the NumPy backend each column is therefore summed with
    ``bincount`` (same result: ids outside ``[0, n)`` are dropped). Traceable on JAX.
    """
    if backend.name != "numpy":
        return backend.segment_sum(data, ids, n)
    d = np.asarray(data)
    i = np.asarray(ids)
    if i.size and i.min() < 0:
        keep = i >= 0
        i, d = i[keep], d[keep]
    # ids >= n land beyond the first n counts and are sliced away below
    if d.ndim == 1:
        return np.bincount(i, weights=d, minlength=n)[:n].astype(np.float64, copy=False)
    flat = d.reshape(d.shape[0], -1)
    out = np.empty((n, flat.shape[1]))
    for j in range(flat.shape[1]):
        out[:, j] = np.bincount(i, weights=flat[:, j], minlength=n)[:n]
    return out.reshape(n, *d.shape[1:])


@dataclass(frozen=True)
class PixelBins:
    """The correlated pixels of a detector and their bins.

    Attributes
    ----------
    pixel_index : (P,) int64
        Flat detector indices of the valid pixels (mask > 0, static > 0, dynamic > 0),
        ascending.
    static_id : (P,) int64
        0-based static bin of each valid pixel.
    dynamic_id : (P,) int64
        0-based dynamic bin of each valid pixel.
    n_static, n_dynamic : int
        Number of static / dynamic bins (the maxima of the ROI maps).
    static_to_dynamic : (n_static,) int64
        0-based dynamic bin of each static bin; -1 for static bins without valid pixels.
    static_count : (n_static,) int64
        Valid pixels per static bin.
    dynamic_count : (n_dynamic,) int64
        Valid pixels per dynamic bin.
    shape : (int, int)
        Detector shape (H, W).
    """

    pixel_index: np.ndarray
    static_id: np.ndarray
    dynamic_id: np.ndarray
    n_static: int
    n_dynamic: int
    static_to_dynamic: np.ndarray
    static_count: np.ndarray
    dynamic_count: np.ndarray
    shape: tuple[int, int]

    @property
    def n_pixels(self) -> int:
        """Number of valid pixels P."""
        return int(self.pixel_index.size)


def select_pixels(
    dynamic_roi_map: np.ndarray,
    static_roi_map: np.ndarray,
    mask: np.ndarray | None = None,
    n_dynamic: int | None = None,
    n_static: int | None = None,
) -> PixelBins:
    """Valid pixels and their 0-based bins from 1-based ROI maps (0 = excluded).

    Parameters
    ----------
    dynamic_roi_map, static_roi_map : (H, W) int
        Compressed bin values 1..N, 0 for excluded pixels.
    mask : (H, W) bool or int, optional
        Valid pixels (> 0); masked pixels are skipped even if a ROI map labels them.
    n_dynamic, n_static : int, optional
        Number of bins (default: the maps' maxima). Give them when the q-map says
        there are more bins than labelled pixels.

    Returns
    -------
    PixelBins

    Raises
    ------
    ValueError
        Shapes differ, negative labels, or a static bin spans several dynamic bins
        (the static-bin smoothing would then mix dynamic bins).
    """
    dq = np.asarray(dynamic_roi_map)
    sq = np.asarray(static_roi_map)
    if dq.ndim != 2 or dq.shape != sq.shape:
        raise ValueError(
            f"dynamic and static ROI maps must be 2-D of one shape, got {dq.shape} and {sq.shape}"
        )
    if mask is not None:
        mask = np.asarray(mask)
        if mask.shape != dq.shape:
            raise ValueError(f"mask shape {mask.shape} differs from the ROI maps' {dq.shape}")
    dq = dq.astype(np.int64).ravel()
    sq = sq.astype(np.int64).ravel()
    if (dq < 0).any() or (sq < 0).any():
        raise ValueError("ROI maps must not contain negative bin values")
    valid = (dq > 0) & (sq > 0)
    if mask is not None:
        valid &= mask.ravel() > 0
    nd = int(dq.max(initial=0)) if n_dynamic is None else int(n_dynamic)
    ns = int(sq.max(initial=0)) if n_static is None else int(n_static)
    idx = np.flatnonzero(valid)
    d_id = dq[idx] - 1
    s_id = sq[idx] - 1
    if (d_id >= nd).any() or (s_id >= ns).any():
        raise ValueError("ROI map values exceed the stated number of bins")
    s_count = np.bincount(s_id, minlength=ns)[:ns]
    d_count = np.bincount(d_id, minlength=nd)[:nd]
    s2d = np.full(ns, -1, dtype=np.int64)
    s2d[s_id] = d_id
    # every pixel of a static bin must agree with the first one written above
    if idx.size and (s2d[s_id] != d_id).any():
        raise ValueError("a static bin spans several dynamic bins; the partition is inconsistent")
    return PixelBins(
        pixel_index=idx.astype(np.int64),
        static_id=s_id,
        dynamic_id=d_id,
        n_static=ns,
        n_dynamic=nd,
        static_to_dynamic=s2d,
        static_count=s_count.astype(np.int64),
        dynamic_count=d_count.astype(np.int64),
        shape=(int(dynamic_roi_map.shape[0]), int(dynamic_roi_map.shape[1])),
    )
