"""Static-bin reductions of detector images: I(q) (with phi lines), I(q) per time
segment, intensity versus time and the time-averaged image.

All bin averages are segment sums through the backend (no Python loop over bins).
Functions take ``backend`` (default :func:`get_backend`) and ``device="auto"``,
resolve the device once, place the inputs once and return NumPy float64 arrays.
They are pure and may run off the GUI thread.

For repeated reductions with one partition (a GUI slider, a folder of files) build a
:class:`StaticBinner` once: it keeps the bin ids and pixel counts on the device and a
compiled kernel, so each further 4-Mpixel image costs one transfer plus one scatter-add.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from xpcsviewer.backends import ensure_numpy, get_backend, resolve_device
from xpcsviewer.compute._binning import kernel_cache, segment_sum_rows
from xpcsviewer.compute.spec import Engine

__all__ = [
    "Saxs1D",
    "StaticBinner",
    "binner_for",
    "intensity_vs_time",
    "partition_key",
    "saxs_1d",
    "saxs_1d_segments",
    "static_bin_mean",
    "time_averaged_image",
]


def _sum_kernel(backend: Any) -> Any:
    def build() -> Any:
        def f(values: Any, ids: Any, n_bins: int) -> Any:
            # values (n_pix, k): k images reduced at once
            return segment_sum_rows(backend, values, ids, n_bins)

        return backend.jit(f, static_argnames="n_bins")

    return kernel_cache(backend, ("static_sum",), build)


class StaticBinner:
    """Mean of images over static bins, prepared once for one partition.

    Parameters
    ----------
    roi_map : (H, W) int
        1-based bin value per pixel, 0 = excluded.
    n_bins : int, optional
        Number of bins (default ``roi_map.max()``).
    mask : (H, W) bool, optional
        Pixels with ``mask <= 0`` are excluded too.
    backend : BackendProtocol, optional
    device : str or jax.Device, optional
        ``"auto"`` routes by image size.
    engine : Engine or its word, auto or array (alias "backend")
        ``"auto"``: NumPy ``bincount`` whenever the job stays on the CPU (faster than
        a jitted scatter-add there), the backend's kernel on an accelerator;
        ``"backend"``: always the backend's kernel.
    """

    def __init__(
        self,
        roi_map: np.ndarray,
        n_bins: int | None = None,
        mask: np.ndarray | None = None,
        *,
        backend: Any = None,
        device: Any = "auto",
        engine: str = "auto",
    ) -> None:
        self.backend = backend if backend is not None else get_backend()
        roi = np.asarray(roi_map)
        if roi.ndim != 2:
            raise ValueError(f"roi_map must be 2-D (H, W), got shape {roi.shape}")
        self.shape = roi.shape
        self.n_bins = int(roi.max(initial=0)) if n_bins is None else int(n_bins)
        ids = roi.astype(np.intp).ravel()
        ids -= 1
        if mask is not None:
            m = np.asarray(mask)
            if m.shape != roi.shape:
                raise ValueError(f"mask shape {m.shape} differs from roi_map shape {roi.shape}")
            ids[m.ravel() <= 0] = -1
        # excluded pixels get an out-of-range id, which segment_sum drops
        ids[ids < 0] = self.n_bins
        self.count = np.bincount(ids, minlength=self.n_bins + 1)[: self.n_bins].astype(np.float64)
        self.device = (None if self.backend.name == "numpy"
                       else resolve_device(device, work=float(roi.size)))
        # On the CPU a bincount beats a jitted scatter-add (benchmarks/saxs_reduction.py):
        # JAX jobs that stay on the CPU bin with NumPy, accelerators with the kernel.
        engine = Engine.parse(engine)
        if engine not in (Engine.AUTO, Engine.ARRAY):
            raise ValueError(f"engine must be auto or array (backend), got {engine.value!r}")
        self._numpy = self.backend.name == "numpy" or (
            engine is Engine.AUTO
            and (self.device is None or getattr(self.device, "platform", "cpu") == "cpu")
        )
        if self._numpy:
            self._ids = ids.astype(np.intp, copy=False)
        else:
            self._ids = self.backend.asarray(ids.astype(np.int32), device=self.device)
            self._kernel = _sum_kernel(self.backend)

    def sums(self, images: np.ndarray) -> np.ndarray:
        """Per-bin sums of one image (H, W) -> (n_bins,) or a stack (k, H, W) -> (k, n_bins)."""
        imgs = np.asarray(images)
        single = imgs.ndim == 2
        if imgs.shape[-2:] != self.shape:
            raise ValueError(f"image shape {imgs.shape[-2:]} differs from roi_map {self.shape}")
        flat = imgs.reshape(-1, self.shape[0] * self.shape[1])
        if self._numpy:
            nb = self.n_bins + 1
            out = np.stack([np.bincount(self._ids, weights=row, minlength=nb)[: self.n_bins]
                            for row in flat])
        else:
            x = self.backend.asarray(flat.T, dtype=np.float64, device=self.device)
            out = ensure_numpy(self._kernel(x, self._ids, n_bins=self.n_bins)).T
        return out[0] if single else out

    def mean(self, images: np.ndarray) -> np.ndarray:
        """Per-bin means; NaN for bins without pixels. Shapes as :meth:`sums`."""
        s = self.sums(images)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.count > 0, s / np.where(self.count > 0, self.count, 1), np.nan)


def static_bin_mean(
    image: np.ndarray,
    roi_map: np.ndarray,
    n_bins: int | None = None,
    mask: np.ndarray | None = None,
    *,
    backend: Any = None,
    device: Any = "auto",
) -> np.ndarray:
    """Mean of ``image`` over each bin of ``roi_map``.

    Parameters
    ----------
    image : (H, W) float
        Counts per pixel (any unit; the mean keeps it).
    roi_map : (H, W) int
        1-based bins, 0 = excluded.
    n_bins, mask, backend, device
        See :class:`StaticBinner`.

    Returns
    -------
    (n_bins,) float64
        Bin means; NaN where a bin has no valid pixel.
    """
    return StaticBinner(roi_map, n_bins, mask, backend=backend, device=device).mean(image)


_BINNERS: OrderedDict[tuple, StaticBinner] = OrderedDict()
_BINNERS_MAX = 4
_BINNERS_LOCK = threading.Lock()


def partition_key(qmap: Any) -> str:
    """Content key of a q-map's static binning: its ``hash`` when it has one, else a
    sha256 of the static ROI map and the mask (a few ms for 4 Mpixels)."""
    if getattr(qmap, "hash", ""):
        return str(qmap.hash)
    h = hashlib.sha256()
    for a in (qmap.static_roi_map, qmap.mask):
        a = np.ascontiguousarray(a)
        h.update(f"{a.shape}{a.dtype.str}".encode())
        h.update(a.data)
    return h.hexdigest()


def binner_for(
    qmap: Any, *, use_mask: bool = True, backend: Any = None, device: Any = "auto"
) -> StaticBinner:
    """The :class:`StaticBinner` of a q-map's static bins, cached by content.

    A second file (or image) with the same partition pays nothing for the set-up:
    the binner is looked up by :func:`partition_key`. A few recent partitions are
    kept (each holds one index per pixel).
    """
    be = backend if backend is not None else get_backend()
    key = (partition_key(qmap), bool(use_mask), be.name, str(device))
    with _BINNERS_LOCK:
        b = _BINNERS.get(key)
        if b is not None:
            _BINNERS.move_to_end(key)
            return b
    b = StaticBinner(qmap.static_roi_map, qmap.n_static, qmap.mask if use_mask else None,
                     backend=be, device=device)
    with _BINNERS_LOCK:
        _BINNERS[key] = b
        while len(_BINNERS) > _BINNERS_MAX:
            _BINNERS.popitem(last=False)
    return b


@dataclass(frozen=True)
class Saxs1D:
    """I(q) of one image on a q x phi static partition.

    Attributes
    ----------
    q : (n_s0,) float64
        Static axis-0 centres (Å⁻¹ for q-phi maps).
    intensity : (n_s0,) float64
        Mean over the phi lines (NaN where no line has pixels).
    phi : (n_s1,) float64
        Static axis-1 centres (deg).
    phi_lines : (n_s1, n_s0) float64
        I(q) of each phi sector, NaN for empty (compressed-away) bins.
    compressed : (Ns,) float64
        The per-bin means in compressed order (``scattering_1d`` of a result file).
    """

    q: np.ndarray
    intensity: np.ndarray
    phi: np.ndarray
    phi_lines: np.ndarray
    compressed: np.ndarray


def expand_compressed(
    compressed: np.ndarray, index_mapping: np.ndarray, num_pts: tuple[int, int]
) -> np.ndarray:
    """Scatter compressed per-bin values (..., Ns) into a NaN grid (..., n0, n1)."""
    c = np.asarray(compressed, dtype=np.float64)
    n0, n1 = int(num_pts[0]), int(num_pts[1])
    grid = np.full((*c.shape[:-1], n0 * n1), np.nan)
    grid[..., np.asarray(index_mapping, dtype=np.int64)] = c
    return grid.reshape(*c.shape[:-1], n0, n1)


def saxs_1d(
    image: np.ndarray,
    qmap: Any,
    *,
    use_mask: bool = True,
    backend: Any = None,
    device: Any = "auto",
) -> Saxs1D:
    """I(q) and its phi lines of one image on the q-map's static partition.

    Parameters
    ----------
    image : (H, W) float
        E.g. the time-averaged image (mean counts / pixel / frame).
    qmap : xpcsviewer.model.result.QMap
        Static ROI map, index mapping, bin centres and mask.
    use_mask : bool
        Exclude ``qmap.mask == 0`` pixels (the ROI maps usually exclude them already).

    Returns
    -------
    Saxs1D
    """
    mean = binner_for(qmap, use_mask=use_mask, backend=backend, device=device).mean(image)
    grid = expand_compressed(mean, qmap.static_index_mapping, qmap.static_num_pts)
    with np.errstate(invalid="ignore"), _quiet_nanmean():
        iq = np.nanmean(grid, axis=1)
    return Saxs1D(
        q=np.asarray(qmap.static_v_list_dim0, dtype=np.float64),
        intensity=iq,
        phi=np.asarray(qmap.static_v_list_dim1, dtype=np.float64),
        phi_lines=grid.T.copy(),
        compressed=mean,
    )


class _quiet_nanmean:  # used as a context manager
    """Silence 'Mean of empty slice' for all-NaN columns (empty q rings)."""

    def __enter__(self) -> None:
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc: object) -> None:
        self._ctx.__exit__(*exc)


def _segment_bounds(n_frames: int, n_segments: int) -> np.ndarray:
    if n_segments < 1 or n_segments > n_frames:
        raise ValueError(f"need 1 <= n_segments <= n_frames, got {n_segments} for {n_frames}")
    return np.linspace(0, n_frames, n_segments + 1).round().astype(np.int64)


def saxs_1d_segments(
    frames: np.ndarray,
    roi_map: np.ndarray,
    n_segments: int,
    n_bins: int | None = None,
    mask: np.ndarray | None = None,
    *,
    backend: Any = None,
    device: Any = "auto",
) -> np.ndarray:
    """I per static bin in ``n_segments`` consecutive time segments (stability).

    Parameters
    ----------
    frames : (N, H, W)
        Frames in time order.
    roi_map : (H, W) int
        1-based static bins, 0 = excluded.
    n_segments : int
        Segments of (nearly) equal length; boundaries ``round(linspace(0, N, S+1))``.

    Returns
    -------
    (n_segments, n_bins) float64
        Mean counts per pixel per frame in each segment and bin (NaN for empty bins),
        i.e. proper means, comparable with ``scattering_1d``.
    """
    f = np.asarray(frames)
    if f.ndim != 3:
        raise ValueError(f"frames must be (N, H, W), got shape {f.shape}")
    bounds = _segment_bounds(f.shape[0], n_segments)
    seg_images = np.stack(
        [f[a:b].mean(axis=0, dtype=np.float64) for a, b in itertools.pairwise(bounds)]
    )
    binner = StaticBinner(roi_map, n_bins, mask, backend=backend, device=device)
    return binner.mean(seg_images)


def intensity_vs_time(
    frames: np.ndarray,
    mask: np.ndarray | None = None,
    *,
    backend: Any = None,
    device: Any = "auto",
) -> np.ndarray:
    """Mean counts per valid pixel of each frame.

    Parameters
    ----------
    frames : (N, H, W)
    mask : (H, W) bool, optional
        Pixels to average over (default: all).

    Returns
    -------
    (N,) float64
    """
    be = backend if backend is not None else get_backend()
    f = np.asarray(frames)
    if f.ndim != 3:
        raise ValueError(f"frames must be (N, H, W), got shape {f.shape}")
    dev = resolve_device(device, work=float(f.size))
    w = np.ones(f.shape[1:]) if mask is None else (np.asarray(mask) > 0).astype(np.float64)
    n = w.sum()
    if n == 0:
        raise ValueError("the mask excludes every pixel")
    x = be.asarray(f.reshape(f.shape[0], -1), dtype=np.float64, device=dev)
    wd = be.asarray(w.ravel(), device=dev)
    return ensure_numpy(x @ wd) / n


def time_averaged_image(
    frames: np.ndarray, *, backend: Any = None, device: Any = "auto"
) -> np.ndarray:
    """Mean over frames (H, W) float64 (``scattering_2d`` before the blemish map)."""
    be = backend if backend is not None else get_backend()
    f = np.asarray(frames)
    if f.ndim != 3:
        raise ValueError(f"frames must be (N, H, W), got shape {f.shape}")
    dev = resolve_device(device, work=float(f.size))
    x = be.asarray(f, dtype=np.float64, device=dev)
    return ensure_numpy(be.xp.mean(x, axis=0))
