"""The age x lag pass of the correlate job (``correlate --twotime-ages``).

One more reading pass over the raw source, after the multi-tau and/or two-time passes,
through the multi-tau two-time correlator (:mod:`xpcsviewer.compute.twotime_ages`):
dense frames or photon hits, checked by the same count rules as the other passes. Its
memory grows as N log N, so it runs where the full map (N² per bin) cannot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

__all__ = ["AGES_DEFAULT_POINTS", "ages_problem", "run_age_lag"]

#: points per level of ``--twotime-ages`` (m: level 0 has lags 0..2m-1 frames)
AGES_DEFAULT_POINTS = 8


def ages_problem(raw: Any, points: int) -> str | None:
    """Why ``--twotime-ages`` cannot run on ``raw`` (None when it can)."""
    if int(points) < 1:
        return f"--twotime-ages-points must be >= 1 (got {points})"
    if getattr(raw, "time_tag", False):
        return ("--twotime-ages needs frames: give an event list --bin-time "
                "(time-tag mode is multi-tau only)")
    return None


def run_age_lag(qm: Any, n_frames: int, t0: float, bins: np.ndarray, points: int, *,
                photons: bool, chunks: Callable[[], Iterable[np.ndarray]],
                events: Callable[[], Iterable[Any]], progress: Any = None) -> Any:
    """The :class:`~xpcsviewer.io.age_lag.AgeLagMap` of the job's frames.

    ``qm``: the q-map of the run (non-finite pixels already masked); ``t0``: seconds per
    processed frame; ``chunks`` / ``events``: the checked frame or hit stream (one is
    used, by ``photons``).
    """
    from xpcsviewer.compute.twotime_ages import (
        correlate_twotime_ages,
        correlate_twotime_ages_events,
    )

    maps = (qm.dynamic_roi_map, qm.static_roi_map, qm.mask)
    kw = {"dq_bins": bins, "n_frames": int(n_frames), "n_dynamic": qm.n_dynamic,
          "n_static": qm.n_static, "points_per_level": int(points),
          "frame_time": float(t0), "progress": progress}
    if photons:
        return correlate_twotime_ages_events(events(), *maps, **kw)
    return correlate_twotime_ages(chunks(), *maps, **kw)
