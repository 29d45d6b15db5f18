"""Age x lag maps of independent pixel groups of each bin (errors of long runs' age cuts).

What :mod:`xpcsviewer.compute.twotime_groups` does for full maps (at most 2,048 frames),
for the multi-tau two-time map of any run length: the detector's tiles are dealt to K
groups (:func:`~xpcsviewer.compute.twotime_groups.tile_groups`, the same dealing), and
the age x lag map of every (bin, group) pair is made in one pass of the multi-tau
two-time correlator over a refined partition: dynamic bin j * K + g + 1 holds group g's
pixels of the j-th bin, and each static bin is split by group too, so a group is
normalised over its own pixels, as the full maps' groups are. The pixels each take part
once, so the pass costs about what the bins' own map costs; the map is K times larger
(:func:`group_age_lag_bytes`). Photon hits go through the same refined partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from xpcsviewer.compute._binning import select_pixels
from xpcsviewer.compute.twotime_ages import (
    age_lag_bytes,
    correlate_twotime_ages,
    correlate_twotime_ages_events,
)
from xpcsviewer.compute.twotime_groups import tile_groups
from xpcsviewer.io.results.age_lag_groups import AgeLagGroups
from xpcsviewer.progress import CancelToken, ProgressCallback

__all__ = ["AgeLagGroups", "age_lag_groups", "group_age_lag_bytes", "refined_partition"]


def group_age_lag_bytes(n_frames: int, points_per_level: int, n_bins: int,
                        n_groups: int) -> int:
    """Bytes of the (bin, group) pairs' map the correlator holds."""
    return age_lag_bytes(n_frames, points_per_level, int(n_bins) * int(n_groups))


def refined_partition(dynamic_roi_map: np.ndarray, static_roi_map: np.ndarray,
                      mask: np.ndarray | None, bins: Sequence[int], *, n_groups: int,
                      tile_px: int = 8, seed: int = 0, n_dynamic: int | None = None,
                      n_static: int | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The (bin, group) partition: (dynamic map, static map, pixels (K, B), number of
    static bins of the refined map).

    Pixel of group g in the j-th of ``bins`` (1-based): dynamic bin j * K + g + 1,
    static bin (s - 1) * K + g + 1 for its static bin s; every other pixel 0.
    """
    bins = np.asarray(bins, dtype=np.int64).ravel()
    k = int(n_groups)
    pix = select_pixels(dynamic_roi_map, static_roi_map, mask, n_dynamic, n_static)
    grp = tile_groups(pix.shape, k, tile_px, seed).ravel()
    pos = np.full(pix.n_dynamic + 1, -1, dtype=np.int64)
    pos[bins - 1] = np.arange(bins.size)
    j = pos[pix.dynamic_id]
    keep = j >= 0
    flat = pix.pixel_index[keep]
    g = grp[flat]
    dyn = np.zeros(pix.shape[0] * pix.shape[1], dtype=np.int64)
    sta = np.zeros_like(dyn)
    dyn[flat] = j[keep] * k + g + 1
    sta[flat] = pix.static_id[keep] * k + g + 1
    counts = np.zeros((k, bins.size), dtype=np.int64)
    np.add.at(counts, (g, j[keep]), 1)
    return dyn.reshape(pix.shape), sta.reshape(pix.shape), counts, pix.n_static * k


def age_lag_groups(
    source: Iterable[Any],
    dynamic_roi_map: np.ndarray,
    static_roi_map: np.ndarray,
    mask: np.ndarray | None,
    bins: Sequence[int],
    n_frames: int,
    *,
    n_groups: int = 16,
    tile_px: int = 8,
    seed: int = 0,
    photons: bool = False,
    n_dynamic: int | None = None,
    n_static: int | None = None,
    points_per_level: int = 8,
    frame_time: float = 1.0,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> AgeLagGroups:
    """The age x lag maps of each pixel group of each bin, from one pass.

    ``source``: (n, H, W) frame chunks, or the sparse readers' event blocks when
    ``photons``; the same frames as the bins' own map. Other arguments as for
    :func:`~xpcsviewer.compute.twotime_ages.correlate_twotime_ages` and
    :func:`~xpcsviewer.compute.twotime_groups.tile_groups`.
    """
    bins = np.asarray(bins, dtype=np.int64).ravel()
    k = int(n_groups)
    if k < 1:
        raise ValueError(f"n_groups must be at least 1, got {n_groups}")
    dyn, sta, counts, n_sta = refined_partition(dynamic_roi_map, static_roi_map, mask, bins,
                                         n_groups=k, tile_px=tile_px, seed=seed,
                                         n_dynamic=n_dynamic, n_static=n_static)
    pairs = [int(p) for p in np.flatnonzero(counts.T.ravel() > 0) + 1]  # j * K + g + 1
    if not pairs:
        raise ValueError("no pixels in the selected dynamic bins")
    kw = {"dq_bins": pairs, "n_frames": int(n_frames), "n_dynamic": bins.size * k,
          "n_static": n_sta, "points_per_level": int(points_per_level),
          "frame_time": float(frame_time), "progress": progress, "cancel": cancel}
    run = correlate_twotime_ages_events if photons else correlate_twotime_ages
    amap = run(source, dyn, sta, None, **kw)
    return AgeLagGroups(bins=bins, pixels=counts, amap=amap, tile_px=int(tile_px),
                        seed=int(seed))
