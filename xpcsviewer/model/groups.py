"""The maps of K independent pixel groups of each bin (the errors of the age cuts).

Made by :mod:`xpcsviewer.compute.twotime.groups` and
:mod:`xpcsviewer.compute.ages.correlator_groups`; written and read by
:mod:`xpcsviewer.io.results.twotime_groups` and :mod:`xpcsviewer.io.results.age_lag_groups`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xpcsviewer.model.age_lag import AgeLagLevel, AgeLagMap

__all__ = ["AgeLagGroups", "TwotimeGroups"]


@dataclass(frozen=True)
class TwotimeGroups:
    """Two-time maps of K pixel groups of each of B bins.

    ``maps[j]`` is (K, N, N) for bin ``bins[j]``: as the correlator makes them, float32
    upper triangles (lower zero); as :func:`read_twotime_groups` returns them, float64
    full symmetric maps. NaN for a group with no pixel in the bin.
    """

    bins: np.ndarray  #: (B,) 1-based dynamic bins
    pixels: np.ndarray  #: (K, B) pixels of each group in each bin
    maps: list[np.ndarray]  #: per bin, (K, N, N)
    tile_px: int  #: side of the square tiles dealt to the groups
    seed: int  #: seed of the dealing (compute.twotime_groups.tile_groups)

    @property
    def n_groups(self) -> int:
        return int(self.pixels.shape[0])


@dataclass(frozen=True)
class AgeLagGroups:
    """The age x lag maps of K pixel groups of each of B bins, as one map of (bin, group)
    pairs: ``amap.bins`` holds ``j * K + g + 1`` for group g of bin ``bins[j]`` (pairs
    without pixels are left out)."""

    bins: np.ndarray  #: (B,) 1-based dynamic bins
    pixels: np.ndarray  #: (K, B) pixels of each group in each bin
    amap: AgeLagMap
    tile_px: int
    seed: int

    @property
    def n_groups(self) -> int:
        return int(self.pixels.shape[0])

    def group_map(self, g: int, j: int) -> AgeLagMap | None:
        """Group ``g``'s map of bin ``bins[j]`` (an AgeLagMap of that one bin), or None
        when the group has no pixel there."""
        key = int(j) * self.n_groups + int(g) + 1
        at = np.flatnonzero(np.asarray(self.amap.bins) == key)
        if at.size == 0:
            return None
        i = int(at[0])
        levels = tuple(AgeLagLevel(width=lv.width, t1=lv.t1, lag=lv.lag, c=lv.c[i : i + 1],
                                   weight=lv.weight) for lv in self.amap.levels)
        return AgeLagMap(bins=np.array([int(self.bins[j])]), n_frames=self.amap.n_frames,
                         frame_time=self.amap.frame_time, levels=levels,
                         config=dict(self.amap.config))
