"""The age x lag pass of the correlate job (``correlate --twotime-ages``).

One more reading pass over the raw source, after the multi-tau and/or two-time passes,
through the multi-tau two-time correlator (:mod:`xpcsviewer.compute.ages.correlator`):
dense frames or photon hits, checked by the same count rules as the other passes. Its
memory grows as N log N, so it runs where the full map (N² per bin) cannot.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

__all__ = ["run_age_lag"]


def run_age_lag(qm: Any, n_frames: int, t0: float, bins: np.ndarray, points: int, *,
                photons: bool, chunks: Callable[[], Iterable[np.ndarray]],
                events: Callable[[], Iterable[Any]], progress: Any = None,
                cancel: Any = None, n_groups: int = 0,
                group_tile: int = 8) -> tuple[Any, Any]:
    """The :class:`~xpcsviewer.io.results.age_lag.AgeLagMap` of the job's frames, and with
    ``n_groups`` the :class:`~xpcsviewer.io.results.age_lag_groups.AgeLagGroups` of its pixel
    groups (another pass over the same frames; else None).

    ``qm``: the q-map of the run (non-finite pixels already masked); ``t0``: seconds per
    processed frame; ``chunks`` / ``events``: the checked frame or hit stream (one is
    used, by ``photons``; called once per pass).
    """
    from xpcsviewer.compute.ages.correlator import (
        correlate_twotime_ages,
        correlate_twotime_ages_events,
    )
    from xpcsviewer.compute.inputs import FrameStream
    from xpcsviewer.compute.spec import CorrelateSpec

    # the default normalisation (sqmap) and seed (0), as this pass has always used
    spec = CorrelateSpec(dq=None if bins is None else tuple(bins), ages=True,
                         ages_points=int(points), groups=int(n_groups),
                         group_tile=int(group_tile))
    stream = FrameStream(events if photons else chunks, int(n_frames), float(t0))
    run = correlate_twotime_ages_events if photons else correlate_twotime_ages
    amap = run(stream, qm, spec, progress=progress, cancel=cancel)
    if not n_groups:
        return amap, None
    from xpcsviewer.compute.ages.correlator_groups import age_lag_groups, age_lag_groups_events

    by_groups = age_lag_groups_events if photons else age_lag_groups
    groups = by_groups(stream, qm, dataclasses.replace(spec, dq=tuple(amap.bins)),
                       progress=progress, cancel=cancel)
    return amap, groups
