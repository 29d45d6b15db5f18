"""The age x lag form of a two-time map, shared by the multi-tau two-time correlator
(:mod:`xpcsviewer.compute.ages.correlator`) and the g2-by-age analysis
(:mod:`xpcsviewer.compute.ages.analysis`).

A level holds C between blocks of ``width`` frames: entry ``[b, i, j]`` is the
correlation of block ``i`` (frames ``t1[i] .. t1[i] + width - 1``) with the block
``lag[j]`` frames later. Level 0 of a full map has width 1 and every lag; a multi-tau
map has lags on a log grid and start times coarsened with the lag, so its size grows
as N log N. Two ways of cutting the map by time (Ragulskaya et al., J. Appl. Cryst.
2024) read the same entries: at constant age, the midpoint of the two blocks
(:func:`entry_ages`), or at constant first time (:func:`entry_t1`).

Note (issue 35, correlator helper): ``AgeLagLevel`` and ``AgeLagMap`` are defined in
:mod:`xpcsviewer.io.results.age_lag` (the reader returns them; ``io`` imports nothing from
``compute``) and re-exported here unchanged; ``AgeLagMap`` gained an optional
``config`` dict (points_per_level, smooth, entry). The file layout is there too:
``read_age_lag(path)`` reads ``/xpcs/twotime/age_lag`` back into an ``AgeLagMap``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xpcsviewer.model.age_lag import AgeLagLevel, AgeLagMap

__all__ = ["AgeLagLevel", "AgeLagMap", "entry_ages", "entry_t1", "from_full_maps"]


def entry_t1(level: AgeLagLevel) -> np.ndarray:
    """(n_t, n_lag) centre frame of the first block of each entry."""
    centre = level.t1 + 0.5 * (level.width - 1)
    return np.broadcast_to(centre[:, None], (level.t1.shape[0], level.lag.shape[0]))


def entry_ages(level: AgeLagLevel) -> np.ndarray:
    """(n_t, n_lag) age of each entry: the midpoint of its two blocks' centres (frames)."""
    return entry_t1(level) + 0.5 * level.lag[None, :]


def from_full_maps(c2: Sequence[np.ndarray], bins: Sequence[int], frame_time: float) -> AgeLagMap:
    """A full (N, N) map per bin as one level of width 1 and every lag 0 .. N-1.

    Only the upper triangle is read (a stored map's lower triangle is zero).
    """
    maps = [np.asarray(m, dtype=np.float64) for m in c2]
    if not maps:
        raise ValueError("no two-time maps")
    n = maps[0].shape[0]
    if any(m.shape != (n, n) for m in maps):
        raise ValueError(f"two-time maps must all be ({n}, {n})")
    i = np.arange(n)[:, None]
    j = i + np.arange(n)[None, :]
    inside = j < n
    jj = np.where(inside, j, 0)
    c = np.stack([np.where(inside, m[i, jj], np.nan) for m in maps])
    level = AgeLagLevel(width=1, t1=np.arange(n, dtype=np.float64),
                        lag=np.arange(n, dtype=np.float64), c=c,
                        weight=inside.astype(np.float64))
    return AgeLagMap(bins=np.asarray(bins, dtype=np.int64), n_frames=n,
                     frame_time=float(frame_time), levels=(level,))
