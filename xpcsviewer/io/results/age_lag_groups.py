"""Age x lag maps of independent pixel groups: their data type and place in a result file.

The multi-tau two-time map (:mod:`xpcsviewer.io.results.age_lag`) of each of K pixel groups of
each bin, made by :mod:`xpcsviewer.compute.ages.correlator_groups` (``correlate
--twotime-ages --twotime-groups K``): what the full maps' groups
(:mod:`xpcsviewer.io.results.twotime_groups`) are for runs too long for a full map. The spread of
a number derived from a bin's cuts over its groups is that number's error (docs/ages.md).
Layout (docs/file-format-notes.md)::

    /xpcs/twotime/age_lag_groups          attrs: n_groups, tile_px, seed
        bins                              (B,) int64, 1-based dynamic bins
        pixels                            (K, B) int32, pixels of each group in each bin
        age_lag                           an age x lag map in the layout of
                                          /xpcs/twotime/age_lag whose "bins" are the
                                          (bin, group) pairs j * K + g + 1 (j: position
                                          in bins); a group without pixels is absent

The type lives here, with the layout, because ``io`` imports nothing from ``compute``.
Written inside the atomic write of the whole result file (:mod:`xpcsviewer.io.results.writer`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import h5py
import numpy as np

from xpcsviewer.io._h5 import _dataset, _exists, group_node
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.results.age_lag import (
    AGE_LAG_GROUP,
    AgeLagInfo,
    read_age_lag_group,
    read_age_lag_info,
    write_age_lag_group,
)
from xpcsviewer.io.results.twotime_groups import GroupsHeader, read_header
from xpcsviewer.model.age_lag import AgeLagMap
from xpcsviewer.model.groups import AgeLagGroups

__all__ = ["AGE_LAG_GROUPS_PATH", "has_age_lag_groups",
           "read_age_lag_groups", "read_age_lag_groups_group", "read_age_lag_groups_header",
           "write_age_lag_groups_group"]

AGE_LAG_GROUPS_PATH = "/xpcs/twotime/age_lag_groups"
_MAP = f"{AGE_LAG_GROUPS_PATH}/age_lag"


def write_age_lag_groups_group(parent: h5py.Group, groups: AgeLagGroups) -> h5py.Group:
    """Write ``groups`` as ``parent["age_lag_groups"]`` (``parent``: /xpcs/twotime)."""
    if "age_lag_groups" in parent:
        del parent["age_lag_groups"]
    g = parent.create_group("age_lag_groups")
    g.attrs["n_groups"] = int(groups.n_groups)
    g.attrs["tile_px"] = int(groups.tile_px)
    g.attrs["seed"] = int(groups.seed)
    g.create_dataset("bins", data=np.asarray(groups.bins, dtype=np.int64))
    g.create_dataset("pixels", data=np.asarray(groups.pixels, dtype=np.int32))
    write_age_lag_group(g, groups.amap, "age_lag")
    return g


def has_age_lag_groups(f: h5py.File) -> bool:
    """Whether an open result file holds age x lag maps of pixel groups."""
    return _exists(f, AGE_LAG_GROUPS_PATH)


def read_age_lag_groups_header(f: h5py.File) -> GroupsHeader | None:
    """The header of an open file's age x lag group maps (None without them);
    ``bytes_per_bin``: the K maps of one bin in float64."""
    if not has_age_lag_groups(f):
        return None
    h = read_header(f, AGE_LAG_GROUPS_PATH, "a group of age x lag group maps")
    group_node(f, _MAP, "the (bin, group) pairs' age x lag map")
    cells = 0
    for name in f[_MAP]:
        if name.startswith("level_"):
            ds = _dataset(f, f"{_MAP}/{name}/c", "(n_pairs, n_t, n_lag) floats")
            cells += int(np.prod(ds.shape[1:])) if ds.ndim == 3 else 0
    return replace(h, bytes_per_bin=8 * h.n_groups * cells)


def _check_against_map(f: h5py.File, h: GroupsHeader, held: set[int], info: AgeLagInfo
                       ) -> None:
    """The groups belong to the file's map (issue 50): the same bins, frames and frame
    time as /xpcs/twotime/age_lag, and a pair's map exactly where its group has pixels
    (a pair with pixels but no map was declared and never written; one without pixels
    cannot have a map)."""
    k, stored = h.n_groups, h.bins
    main = read_age_lag_info(f)
    if main is not None:
        if not np.array_equal(stored, main.bins):
            raise XpcsFileError(f.filename, f"holds bins {stored.tolist()[:8]}",
                                dataset=f"{AGE_LAG_GROUPS_PATH}/bins",
                                expected=f"the bins of {AGE_LAG_GROUP} "
                                f"({main.bins.tolist()[:8]})")
        if (info.n_frames, info.frame_time) != (main.n_frames, main.frame_time):
            raise XpcsFileError(f.filename, f"n_frames={info.n_frames}, frame_time="
                                f"{info.frame_time:g}", dataset=_MAP,
                                expected=f"those of {AGE_LAG_GROUP} (n_frames="
                                f"{main.n_frames}, frame_time={main.frame_time:g})")
    for j in range(stored.size):
        for g in range(k):
            pair, px = j * k + g + 1, int(h.pixels[g, j])
            if (pair in held) != (px > 0):
                what = (f"group {g} of bin {int(stored[j])} has {px} pixels but no map (pair "
                        f"{pair} is not in {_MAP}/bins)" if px else
                        f"group {g} of bin {int(stored[j])} has no pixel but a map (pair "
                        f"{pair})")
                raise XpcsFileError(f.filename, what,
                                    dataset=f"{AGE_LAG_GROUPS_PATH}/pixels",
                                    expected="a map for each group with pixels, none for a "
                                    "group without")


def read_age_lag_groups_group(f: h5py.File, bins: Sequence[int] | None = None) -> AgeLagGroups:
    """The group maps of an open result file, of ``bins`` (1-based, distinct; default
    all), checked: errors name the file and dataset."""
    h = read_age_lag_groups_header(f)
    if h is None:
        raise XpcsFileError(f.filename, "no age x lag group maps", dataset=AGE_LAG_GROUPS_PATH,
                            expected="age x lag group maps (correlate --twotime-ages "
                                     "--twotime-groups K)")
    k, stored = h.n_groups, h.bins
    info = read_age_lag_info(f, _MAP)
    if info is None:
        raise XpcsFileError(f.filename, "has no map", dataset=_MAP,
                            expected="the (bin, group) pairs' age x lag map")
    held = set(info.bins.tolist())
    bad = sorted(b for b in held if not 1 <= b <= k * stored.size)
    if bad:
        raise XpcsFileError(f.filename, f"holds pairs {bad[:5]}", dataset=f"{_MAP}/bins",
                            expected=f"pairs j * {k} + g + 1 within 1..{k * stored.size}")
    _check_against_map(f, h, held, info)
    if bins is None:
        pick = list(range(stored.size))
    else:
        want = [int(b) for b in bins]
        missing = sorted(set(want) - set(stored.tolist()))
        if missing or len(set(want)) != len(want):
            raise XpcsFileError(f.filename, f"has no group maps of bins {missing}" if missing
                                else f"asked for bins {want} (repeated)",
                                dataset=f"{AGE_LAG_GROUPS_PATH}/bins",
                                expected=f"distinct bins of {stored.tolist()}")
        pick = [int(np.flatnonzero(stored == b)[0]) for b in want]
    # renumber the pairs for the bins read (j is their position among those)
    old = [j * k + g + 1 for j in pick for g in range(k) if j * k + g + 1 in held]
    amap = read_age_lag_group(f, old, group=_MAP)
    new = np.array([pick.index((b - 1) // k) * k + (b - 1) % k + 1 for b in old],
                   dtype=np.int64)
    amap = AgeLagMap(bins=new, n_frames=amap.n_frames, frame_time=amap.frame_time,
                     levels=amap.levels, config=amap.config)
    return AgeLagGroups(bins=stored[pick], pixels=h.pixels[:, pick], amap=amap,
                        tile_px=h.tile_px, seed=h.seed)


def read_age_lag_groups(path: str | Path, bins: Sequence[int] | None = None
                        ) -> AgeLagGroups | None:
    """The age x lag group maps of the result file ``path`` (None without them).

    Raises
    ------
    XpcsFileError
        A dataset or attribute of the wrong kind or shape (the message names it).
    """
    from xpcsviewer.io._h5open import open_h5

    with open_h5(path) as f:
        if not has_age_lag_groups(f):
            return None
        return read_age_lag_groups_group(f, bins)
