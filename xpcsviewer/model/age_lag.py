"""An age x lag map: a two-time map as levels of (start time, lag) entries.

Made by :mod:`xpcsviewer.compute.ages.correlator`, written and read by
:mod:`xpcsviewer.io.results.age_lag`, cut by :mod:`xpcsviewer.compute.ages.age_lag`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["AgeLagLevel", "AgeLagMap"]


@dataclass(frozen=True)
class AgeLagLevel:
    """One level of an age x lag map (float64 arrays)."""

    width: int  #: frames per block
    t1: np.ndarray  #: (n_t,) first frame of each block
    lag: np.ndarray  #: (n_lag,) lag in frames between the two blocks' first frames
    c: np.ndarray  #: (n_bins, n_t, n_lag) normalised C; NaN where the pair leaves the run
    weight: np.ndarray  #: (n_t, n_lag) frame pairs behind each entry; 0 where c is NaN

    def __post_init__(self) -> None:
        n_t, n_lag = self.t1.shape[0], self.lag.shape[0]
        if self.c.ndim != 3 or self.c.shape[1:] != (n_t, n_lag):
            raise ValueError(f"c has shape {self.c.shape}, expected (n_bins, {n_t}, {n_lag})")
        if self.weight.shape != (n_t, n_lag):
            raise ValueError(f"weight has shape {self.weight.shape}, expected ({n_t}, {n_lag})")


@dataclass(frozen=True)
class AgeLagMap:
    """A two-time map as levels of (start time, lag) entries.

    ``config`` (added for the multi-tau correlator; defaults to empty) records how the
    map was made: ``points_per_level``, ``smooth``, ``entry``, ``engine``.
    """

    bins: np.ndarray  #: (n_bins,) 1-based dynamic bins
    n_frames: int
    frame_time: float  #: seconds between frames (the analysis' t0)
    levels: tuple[AgeLagLevel, ...]
    config: dict[str, Any] = field(default_factory=dict)
