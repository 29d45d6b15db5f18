"""The correlators' own knobs: how a pass runs and what else it hands back (issue 44).

What a correlation computes is the user's :class:`~xpcsviewer.compute.spec.CorrelateSpec`
(normalisation, partial g2, smoothing, bins, ages' points, pixel groups). These frozen
values hold the rest, one per correlator family, each field with the default the
correlator always had, so ``options=None`` runs as before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["AgesOptions", "MultitauOptions", "TwotimeOptions"]


@dataclass(frozen=True)
class MultitauOptions:
    """Knobs of the multi-tau correlators (dense, photons, streaming).

    Attributes
    ----------
    delays_per_level : int
        m: level 0 has delays 1..2m, level L >= 1 (m+1..2m) * 2^L
        (:func:`~xpcsviewer.compute.multitau.correlator.delay_list`).
    chunk_size : int
        Frames per device transfer (dense; re-chunked internally) or per update
        (streaming).
    backend : BackendProtocol, optional
        The array backend of the ``array`` engine (default: the run configuration's).
    with_scattering : bool
        Also return the temporal/spatial means of the same pass (a ``MultitauRun``).
    scattering_group : int
        Photons: frames per row of the per-frame means (a time-tag run: many ticks).
    pixel_sink : callable ``(k, plane)``, optional
        Receives the per-pixel G2, IP, IF of every delay k as one (3, H, W) float32 plane
        once all frames are correlated (the ``unnormalized_G2`` stack), one plane at a
        time so that the stack is never held whole.
    """

    delays_per_level: int = 4
    chunk_size: int = 128
    backend: Any = None
    with_scattering: bool = False
    scattering_group: int = 1
    pixel_sink: Callable[[int, np.ndarray], None] | None = None


@dataclass(frozen=True)
class TwotimeOptions:
    """Knobs of the two-time correlators (dense and photons).

    Attributes
    ----------
    chunk_size, block_rows : int
        Dense: frames per read of an array; rows per matrix-product block.
    backend : BackendProtocol, optional
        Dense: the backend of the ``array`` engine and of the device kernels.
    with_scattering : bool
        Also return the temporal/spatial means of the same pass (a ``TwotimeRun``).
    c2_format : {"full", "upper32"}
        ``"full"``: symmetric float64 maps. ``"upper32"``: float32 upper triangles (lower
        triangle zero), exactly what a result file stores, at a quarter of the memory;
        g2 is computed from the float64 map before the cast either way.
    """

    chunk_size: int = 256
    block_rows: int = 1024
    backend: Any = None
    with_scattering: bool = False
    c2_format: str = "full"


@dataclass(frozen=True)
class AgesOptions:
    """Knobs of the multi-tau two-time (age x lag) correlators.

    Attributes
    ----------
    frame_time : float, optional
        Seconds per correlated frame, recorded in the map; None: the stream's step
        (``FrameStream.t0``), 1 s for an array.
    max_levels : int, optional
        At most this many levels (default: while a level has an entry).
    chunk_size : int
        Frames per read of an array; photons: frames made dense per step.
    batch : int
        First blocks per kernel call.
    """

    frame_time: float | None = None
    max_levels: int | None = None
    chunk_size: int = 256
    batch: int = 32
