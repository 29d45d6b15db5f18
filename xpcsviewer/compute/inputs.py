"""What a correlator reads: the frames and the partition, each one value (issue 44).

Every correlator entry takes ``(frames, partition, spec, *, options, engine, device,
progress, cancel)`` or fewer: ``frames`` a :class:`FrameStream` (the job's frames, or
the photon path's event blocks, with their number) or an (N, H, W) array;
``partition`` a :class:`Partition` (or anything with its attributes, such as a
:class:`~xpcsviewer.model.result.QMap`); ``spec`` a
:class:`~xpcsviewer.compute.spec.CorrelateSpec`; ``options`` the correlator's own
knobs (:mod:`xpcsviewer.compute.options`). Nothing here reads a file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from xpcsviewer.compute._binning import PixelBins, select_pixels

__all__ = ["FrameStream", "Partition", "frame_chunks"]


@dataclass(frozen=True)
class FrameStream:
    """The processed frames of a job (after begin/end/stride/avg), read anew by each pass.

    Attributes
    ----------
    open : callable
        Returns an iterable of (n, H, W) frame chunks (or, on the photon path, of
        :class:`~xpcsviewer.io.raw.sparse.EventBlock`); called once per pass.
    n_frames : int
        Processed frames.
    frame_time : float
        Seconds between raw frames; the effective step is ``frame_time * stride * avg``.
    stride, avg : int
        The selection's stride and average (recorded, and in the step).
    """

    open: Callable[[], Iterable[Any]]
    n_frames: int
    frame_time: float = 1.0
    stride: int = 1
    avg: int = 1

    @property
    def t0(self) -> float:
        return float(self.frame_time) * int(self.stride) * int(self.avg)


def frame_chunks(frames: FrameStream | np.ndarray, chunk_size: int
                 ) -> tuple[Iterable[Any], int]:
    """(chunks, number of frames) of a correlator's ``frames``: a :class:`FrameStream`
    opened once, or an (N, H, W) array read ``chunk_size`` frames at a time.

    Raises
    ------
    ValueError
        An array that is not 3-D.
    TypeError
        Anything else (an iterable of chunks says its length in a FrameStream).
    """
    if isinstance(frames, FrameStream):
        return frames.open(), int(frames.n_frames)
    if hasattr(frames, "shape"):
        if frames.ndim != 3:
            raise ValueError(f"frames must be (N, H, W), got shape {frames.shape}")
        step = max(int(chunk_size), 1)
        return (frames[a : a + step] for a in range(0, frames.shape[0], step)), \
            int(frames.shape[0])
    raise TypeError("frames must be an (N, H, W) array or a FrameStream (an iterable of "
                    "chunks: FrameStream(lambda: chunks, n_frames))")


@dataclass(frozen=True, eq=False)
class Partition:
    """The static/dynamic partition a correlator bins the pixels by.

    Attributes
    ----------
    dynamic_roi_map, static_roi_map : (H, W) int
        1-based bins, 0 = excluded; each static bin must lie inside one dynamic bin.
    mask : (H, W) bool, optional
        Masked pixels are skipped even where a map labels them.
    n_dynamic, n_static : int
        Numbers of bins; when not given, the maps' maxima. Give them when the q-map says
        there are more bins than labelled pixels (a :class:`~xpcsviewer.model.result.QMap`
        does: :meth:`of`).
    """

    dynamic_roi_map: np.ndarray
    static_roi_map: np.ndarray
    mask: np.ndarray | None = None
    n_dynamic: int = None  # type: ignore[assignment]  # the map's maximum when None
    n_static: int = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        for name, roi in (("n_dynamic", self.dynamic_roi_map),
                          ("n_static", self.static_roi_map)):
            n = getattr(self, name)
            n = int(np.asarray(roi).max(initial=0)) if n is None else int(n)
            object.__setattr__(self, name, n)

    @classmethod
    def of(cls, partition: Any) -> Partition:
        """``partition`` itself, or the partition of an object with its attributes (a
        ``QMap``: its maps, mask and numbers of bins)."""
        if isinstance(partition, cls):
            return partition
        try:
            maps = (partition.dynamic_roi_map, partition.static_roi_map)
        except AttributeError:
            raise TypeError("a partition needs dynamic_roi_map and static_roi_map (a "
                            f"Partition or a QMap), got {type(partition).__name__}") from None
        return cls(*maps, getattr(partition, "mask", None),
                   getattr(partition, "n_dynamic", None), getattr(partition, "n_static", None))

    @property
    def shape(self) -> tuple[int, int]:
        """Detector shape (H, W)."""
        return tuple(np.shape(self.dynamic_roi_map))  # type: ignore[return-value]

    def pixels(self) -> PixelBins:
        """The correlated pixels and their 0-based bins (checked: see
        :func:`~xpcsviewer.compute._binning.select_pixels`)."""
        return select_pixels(self.dynamic_roi_map, self.static_roi_map, self.mask,
                             self.n_dynamic, self.n_static)
