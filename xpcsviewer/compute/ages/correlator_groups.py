"""Age x lag maps of independent pixel groups of each bin (errors of long runs' age cuts).

What :mod:`xpcsviewer.compute.twotime.groups` does for full maps (at most 2,048 frames),
for the multi-tau two-time map of any run length: the detector's tiles are dealt to K
groups (:func:`~xpcsviewer.compute.twotime.groups.tile_groups`, the same dealing), and
the age x lag map of every (bin, group) pair is made in one pass of the multi-tau
two-time correlator over a refined partition: dynamic bin j * K + g + 1 holds group g's
pixels of the j-th bin, and each static bin is split by group too, so a group is
normalised over its own pixels, as the full maps' groups are. The pixels each take part
once, so the pass costs about what the bins' own map costs; the map is K times larger
(:func:`group_age_lag_bytes`). Photon hits go through the same refined partition.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from xpcsviewer.compute.ages.correlator import (
    age_lag_bytes,
    correlate_twotime_ages,
    correlate_twotime_ages_events,
)
from xpcsviewer.compute.inputs import FrameStream, Partition
from xpcsviewer.compute.options import AgesOptions
from xpcsviewer.compute.spec import CorrelateSpec, parse_bins
from xpcsviewer.compute.twotime.groups import tile_groups
from xpcsviewer.model.groups import AgeLagGroups
from xpcsviewer.progress import CancelToken, ProgressCallback

__all__ = ["AgeLagGroups", "age_lag_groups", "age_lag_groups_events", "group_age_lag_bytes",
           "refined_partition"]


def group_age_lag_bytes(n_frames: int, points_per_level: int, n_bins: int,
                        n_groups: int) -> int:
    """Bytes of the (bin, group) pairs' map the correlator holds."""
    return age_lag_bytes(n_frames, points_per_level, int(n_bins) * int(n_groups))


def refined_partition(partition: Partition | Any, spec: CorrelateSpec
                      ) -> tuple[Partition, np.ndarray]:
    """The (bin, group) partition of the ``spec.dq`` bins and ``spec.groups`` groups
    (tiles ``spec.group_tile``, seed ``spec.group_seed``), and its pixels (K, B).

    Pixel of group g in the j-th of the bins (1-based): dynamic bin j * K + g + 1,
    static bin (s - 1) * K + g + 1 for its static bin s; every other pixel 0.
    """
    k = int(spec.groups)
    pix = Partition.of(partition).pixels()
    bins = parse_bins(spec.dq, pix.n_dynamic)
    grp = tile_groups(pix.shape, k, int(spec.group_tile), int(spec.group_seed)).ravel()
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
    refined = Partition(dyn.reshape(pix.shape), sta.reshape(pix.shape), None,
                        n_dynamic=bins.size * k, n_static=pix.n_static * k)
    return refined, counts


def age_lag_groups(
    frames: FrameStream | np.ndarray,
    partition: Partition | Any,
    spec: CorrelateSpec,
    *,
    options: AgesOptions | None = None,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> AgeLagGroups:
    """The age x lag maps of each pixel group of each bin, from one pass of dense frames.

    ``frames``: the same frames as the bins' own map; ``spec``: ``dq`` the bins (the
    map's own, as numbers), ``groups``, ``group_tile`` and ``group_seed`` the groups
    (:func:`~xpcsviewer.compute.twotime.groups.tile_groups`), ``ages_points`` and
    ``smooth`` as for
    :func:`~xpcsviewer.compute.ages.correlator.correlate_twotime_ages`, as are
    ``options``, ``progress`` and ``cancel``.
    """
    return _groups(correlate_twotime_ages, frames, partition, spec, options, progress,
                   cancel)


def age_lag_groups_events(
    frames: FrameStream,
    partition: Partition | Any,
    spec: CorrelateSpec,
    *,
    options: AgesOptions | None = None,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> AgeLagGroups:
    """:func:`age_lag_groups` from the sparse readers' event blocks (``frames.open()``),
    through :func:`~xpcsviewer.compute.ages.correlator.correlate_twotime_ages_events`."""
    return _groups(correlate_twotime_ages_events, frames, partition, spec, options,
                   progress, cancel)


def _groups(run: Any, frames: Any, partition: Any, spec: CorrelateSpec,
            options: AgesOptions | None, progress: Any, cancel: Any) -> AgeLagGroups:
    k = int(spec.groups)
    if k < 1:
        raise ValueError(f"n_groups must be at least 1, got {k}")
    part = Partition.of(partition)
    refined, counts = refined_partition(part, spec)
    pairs = [int(p) for p in np.flatnonzero(counts.T.ravel() > 0) + 1]  # j * K + g + 1
    if not pairs:
        raise ValueError("no pixels in the selected dynamic bins")
    amap = run(frames, refined, replace(spec, dq=tuple(pairs)), options=options,
               progress=progress, cancel=cancel)
    return AgeLagGroups(bins=parse_bins(spec.dq, part.n_dynamic), pixels=counts, amap=amap,
                        tile_px=int(spec.group_tile), seed=int(spec.group_seed))
