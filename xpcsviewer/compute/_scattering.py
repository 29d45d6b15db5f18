"""Temporal and spatial means of a frame stream (result-file-format.md §6).

Shared by the multi-tau and two-time passes: the full-detector frame sum
(``scattering_2d``), the per-frame mean over the correlated pixels
(``intensity_vs_time``) and per-frame static-bin sums (``scattering_1d`` and its
time segments).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from xpcsviewer.backends import ensure_numpy, get_backend
from xpcsviewer.compute._binning import PixelBins, segment_sum_rows
from xpcsviewer.compute.multitau._cpu import available, frame_sums, worth_compiling

__all__ = ["ScatteringAccumulator", "iter_array_chunks"]


class ScatteringAccumulator:
    """Running temporal/spatial means over a frame stream (result-file-format.md §6).

    Collects the full-detector frame sum (``scattering_2d``), per-frame mean intensity
    over the correlated pixels (``intensity_vs_time``) and per-frame static-bin sums
    (for ``scattering_1d`` and its time segments). ``compiled``: one numba pass for the
    sums (NumPy backend); ``None`` decides by the job's size.
    """

    def __init__(self, pixels: PixelBins, n_frames: int, *, backend: Any = None, device: Any = None,
                 compiled: bool | None = None) -> None:
        self.backend = backend if backend is not None else get_backend()
        self.pixels = pixels
        self.n_frames = int(n_frames)
        h, w = pixels.shape
        self.sum_image = np.zeros(h * w)
        self.intensity = np.zeros(self.n_frames)
        self.static_sums = np.zeros((self.n_frames, pixels.n_static))
        self.device = device
        self._sid = self.backend.asarray(pixels.static_id, device=device)
        self._sid_full: np.ndarray | None = None
        # compiled sums on the NumPy backend, by default when the job is big enough
        work = float(self.n_frames) * h * w
        self._compiled = self.backend.name == "numpy" and (
            worth_compiling(work) if compiled is None else bool(compiled) and available()
        )
        self.count = 0

    def add(self, frames_flat: np.ndarray, block: Any) -> None:
        """Add (n, H*W) full frames and their (n, P) valid-pixel values (backend array)."""
        n = frames_flat.shape[0]
        a, b = self.count, self.count + n
        be = self.backend
        if self._compiled and self.pixels.n_pixels:
            # one compiled pass for the image sum and the per-frame static-bin sums
            if self._sid_full is None:
                sid = np.full(frames_flat.shape[1], self.pixels.n_static, dtype=np.int64)
                sid[self.pixels.pixel_index] = self.pixels.static_id
                self._sid_full = sid
            st = np.zeros((n, self.pixels.n_static + 1))
            frame_sums(np.ascontiguousarray(frames_flat), self._sid_full, st, self.sum_image)
            self.static_sums[a:b] = st[:, :-1]
            self.intensity[a:b] = st[:, :-1].sum(axis=1) / self.pixels.n_pixels
            self.count = b
            return
        self.sum_image += frames_flat.sum(axis=0, dtype=np.float64)
        if self.pixels.n_pixels:
            self.intensity[a:b] = ensure_numpy(block.sum(axis=1)) / self.pixels.n_pixels
            self.static_sums[a:b] = ensure_numpy(
                segment_sum_rows(be, block.T, self._sid, self.pixels.n_static)
            ).T
        self.count = b

    def mean_image(self) -> np.ndarray:
        """(H, W) mean counts per pixel per frame."""
        return (self.sum_image / max(self.count, 1)).reshape(self.pixels.shape)

    def saxs_1d(self) -> np.ndarray:
        """(Ns,) mean counts per pixel per frame in each static bin (NaN if empty)."""
        c = self.pixels.static_count.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.static_sums[: self.count].sum(axis=0) / (c * max(self.count, 1))

    def saxs_1d_segments(self, n_segments: int) -> np.ndarray:
        """(S, Ns) proper per-segment means (boundaries round(linspace(0, N, S+1)))."""
        n = self.count
        s = max(1, min(int(n_segments), n))
        bounds = np.linspace(0, n, s + 1).round().astype(np.int64)
        c = self.pixels.static_count.astype(np.float64)
        cs = np.concatenate([np.zeros((1, self.pixels.n_static)),
                             np.cumsum(self.static_sums[:n], axis=0)])
        seg = cs[bounds[1:]] - cs[bounds[:-1]]
        with np.errstate(invalid="ignore", divide="ignore"):
            return seg / (c[None, :] * (bounds[1:] - bounds[:-1])[:, None])

    def intensity_vs_time(self) -> np.ndarray:
        """(N,) mean counts per correlated pixel of each frame."""
        return self.intensity[: self.count].copy()


def iter_array_chunks(frames: np.ndarray, chunk_size: int) -> Iterable[np.ndarray]:
    """Yield (n, H, W) views of an in-memory (N, H, W) stack."""
    for a in range(0, frames.shape[0], chunk_size):
        yield frames[a : a + chunk_size]
