"""Two-time maps of independent pixel groups: their data type and place in a result file.

Made by :mod:`xpcsviewer.compute.twotime.groups` (``correlate --twotime-groups K``); the
spread of a number derived from a bin's map over its K groups is that number's error
(docs/ages.md). Layout (docs/file-format-notes.md)::

    /xpcs/twotime/groups                  attrs: n_groups, tile_px, seed
        bins                              (B,) int64, 1-based dynamic bins
        pixels                            (K, B) int32, pixels of each group in each bin
        c2_{bin:05d}                      (K, N, N) float32, the group maps of dynamic
                                          bin ``bin``: upper triangles (lower zero),
                                          NaN for a group without pixels in the bin

The type lives here, with the layout, because ``io`` imports nothing from ``compute``.
Written inside the atomic write of the whole result file (:mod:`xpcsviewer.io.results.writer`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from xpcsviewer.io._h5 import (
    _array,
    _dataset,
    _exists,
    _read_error,
    check_declared,
    group_node,
    int_attr,
)
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.outputs import check_h5_output
from xpcsviewer.model.groups import TwotimeGroups

__all__ = ["GROUPS_PATH", "GroupsHeader", "has_twotime_groups",
           "read_header", "read_twotime_groups", "read_twotime_groups_group",
           "read_twotime_groups_header", "write_twotime_groups_group"]

GROUPS_PATH = "/xpcs/twotime/groups"
#: largest N x N of a group map the reader accepts
MAX_FRAMES = 1 << 15


def _compression() -> dict[str, Any]:
    return {"compression": "lzf" if "lzf" in h5py.filters.decode else "gzip", "shuffle": True}


def write_twotime_groups_group(parent: h5py.Group, groups: TwotimeGroups) -> h5py.Group:
    """Write ``groups`` as ``parent["groups"]`` (``parent``: the file's /xpcs/twotime)."""
    bins = np.asarray(groups.bins, dtype=np.int64).ravel()
    pixels = np.asarray(groups.pixels)
    k = pixels.shape[0] if pixels.ndim == 2 else -1
    if pixels.shape != (k, bins.size) or len(groups.maps) != bins.size:
        raise ValueError(f"group pixels {pixels.shape} and {len(groups.maps)} maps for "
                         f"{bins.size} bins")
    if "groups" in parent:
        del parent["groups"]
    g = parent.create_group("groups")
    g.attrs["n_groups"] = int(k)
    g.attrs["tile_px"] = int(groups.tile_px)
    g.attrs["seed"] = int(groups.seed)
    g.create_dataset("bins", data=bins)
    g.create_dataset("pixels", data=pixels.astype(np.int32))
    for b, m in zip(bins, groups.maps, strict=True):
        check_h5_output(g)  # a full disk stops the write here
        m = np.asarray(m)
        if m.ndim != 3 or m.shape[0] != k or m.shape[1] != m.shape[2]:
            raise ValueError(f"group maps of bin {b} have shape {m.shape}, expected ({k}, N, N)")
        n = m.shape[1]
        rows = max(1, min(16, n, 32768 // max(n, 1)))  # whole rows, ~128 KB, one group
        ds = g.create_dataset(f"c2_{int(b):05d}", shape=m.shape, dtype=np.float32,
                              chunks=(1, rows, max(n, 1)) if n else None,
                              **(_compression() if n else {}))
        lower = np.tril(np.ones((n, n), dtype=bool), -1)
        for gi in range(k):
            blk = np.asarray(m[gi], dtype=np.float32).copy()
            blk[lower] = 0.0
            ds[gi] = blk
        check_h5_output(ds)
    return g


def has_twotime_groups(f: h5py.File) -> bool:
    """Whether an open result file holds two-time group maps."""
    return _exists(f, GROUPS_PATH)


@dataclass(frozen=True)
class GroupsHeader:
    """What a file's pixel-group maps hold, without the maps (either kind)."""

    n_groups: int
    tile_px: int
    seed: int
    bins: np.ndarray  #: (B,) 1-based dynamic bins
    pixels: np.ndarray  #: (K, B)
    bytes_per_bin: int  #: of the K maps of one bin, float64


def read_header(f: h5py.File, path: str, what: str) -> GroupsHeader:
    """The checked attributes, ``bins`` and ``pixels`` of the group maps at ``path``
    (``bytes_per_bin`` left 0 for the caller)."""
    group_node(f, path, what)
    k = int_attr(f, path, "n_groups", 1)
    tile_px, seed = int_attr(f, path, "tile_px", 1), int_attr(f, path, "seed", 0)
    stored = _array(f, f"{path}/bins", kinds="iu", ndim=1, expected="(B,) 1-based dynamic bins",
                    max_elements=1 << 20).astype(np.int64)
    if stored.size and (stored.min() < 1 or np.unique(stored).size != stored.size):
        raise XpcsFileError(f.filename, f"holds {stored.tolist()}", dataset=f"{path}/bins",
                            expected="distinct 1-based dynamic bins")
    nb = stored.size
    pixels = _array(f, f"{path}/pixels", kinds="iu", shape=(k, nb), ndim=2,
                    expected=f"(n_groups, n_bins) = ({k}, {nb}) pixel counts",
                    max_elements=max(1, k * nb)).astype(np.int64)
    if (pixels < 0).any():
        raise XpcsFileError(f.filename, "has negative pixel counts", dataset=f"{path}/pixels",
                            expected="pixel counts >= 0")
    empty = np.flatnonzero(pixels.sum(axis=0) == 0) if nb else np.empty(0, int)
    if empty.size:  # a bin's pixels are dealt to its groups: none is no bin at all
        raise XpcsFileError(f.filename, f"bin {int(stored[empty[0]])} has no pixel in any "
                            "group", dataset=f"{path}/pixels",
                            expected="the pixels of each bin dealt to its groups (> 0 in all)")
    return GroupsHeader(k, tile_px, seed, stored, pixels, 0)


def read_twotime_groups_header(f: h5py.File) -> GroupsHeader | None:
    """The header of an open file's full-map group maps (None without them)."""
    if not has_twotime_groups(f):
        return None
    h = read_header(f, GROUPS_PATH, "a group of two-time group maps")
    n = 0
    for b in h.bins[:1]:
        path = f"{GROUPS_PATH}/c2_{int(b):05d}"
        ds = _dataset(f, path, f"({h.n_groups}, N, N) floats")
        n = int(ds.shape[-1]) if ds.ndim == 3 else 0
    return replace(h, bytes_per_bin=8 * h.n_groups * n * n)


def _full(up: np.ndarray) -> np.ndarray:
    """(K, N, N) upper triangles -> float64 symmetric maps."""
    m = up.astype(np.float64)
    iu = np.triu_indices(m.shape[1], 1)
    for g in range(m.shape[0]):
        m[g][(iu[1], iu[0])] = m[g][iu]
    return m


def _check_map(f: h5py.File, path: str, up: np.ndarray, pixels: np.ndarray, b: int) -> None:
    """A group's map is finite where its group has pixels and NaN where it has none
    (issue 50: +inf, or a map for a group without pixels, changed the errors)."""
    iu = np.triu_indices(up.shape[1])
    for g in range(up.shape[0]):
        tri = up[g][iu]
        fin = np.isfinite(tri)
        if np.isinf(tri).any():
            raise XpcsFileError(f.filename, f"an infinite value in the map of group {g} of "
                                f"bin {b}", dataset=path,
                                expected="finite C (NaN for a group without pixels)")
        if pixels[g] > 0 and not fin.any():
            raise XpcsFileError(f.filename, f"the map of group {g} of bin {b} ({pixels[g]} "
                                "pixels) holds no value", dataset=path,
                                expected="a map for each group with pixels")
        if pixels[g] == 0 and fin.any():
            raise XpcsFileError(f.filename, f"group {g} of bin {b} has no pixel but a map",
                                dataset=path, expected="NaN for a group without pixels")


def read_twotime_groups_group(f: h5py.File, bins: Sequence[int] | None = None) -> TwotimeGroups:
    """The group maps of an open result file (checked; errors name the file and dataset).

    ``bins``: the 1-based dynamic bins to read, in that order (default all stored).
    """
    g = GROUPS_PATH
    if not has_twotime_groups(f):
        raise XpcsFileError(f.filename, "no two-time group maps", dataset=g,
                            expected="two-time group maps (correlate --twotime-groups K)")
    h = read_header(f, g, "a group of two-time group maps")
    k, tile_px, seed, stored, pixels = h.n_groups, h.tile_px, h.seed, h.bins, h.pixels
    nb = stored.size
    if bins is not None:
        missing = sorted({int(b) for b in bins} - set(stored.tolist()))
        if missing:
            raise XpcsFileError(f.filename, f"has no group maps of bins {missing}",
                                dataset=f"{g}/bins", expected=f"one of {stored.tolist()}")
        pick = [int(np.flatnonzero(stored == int(b))[0]) for b in bins]
    else:
        pick = list(range(nb))
    maps, n_all = [], None
    for j in pick:
        path = f"{g}/c2_{int(stored[j]):05d}"
        ds = _dataset(f, path, f"({k}, N, N) floats")
        n = ds.shape[1] if ds.ndim == 3 else -1
        expected = (f"({k}, N, N) floats, the group maps of bin {int(stored[j])}"
                    + ("" if n_all is None else f", N = {n_all} as the other bins"))
        if ds.dtype.kind != "f" or ds.ndim != 3 or n < 1 or n > MAX_FRAMES or \
                (n_all is not None and n != n_all):
            raise XpcsFileError(f.filename, f"has shape {ds.shape} and dtype {ds.dtype}",
                                dataset=path, expected=expected)
        check_declared(ds, shape=(k, n, n), expected=expected, max_elements=k * n * n)
        out = np.empty((k, n, n), dtype=np.float32)
        try:
            ds.read_direct(out)
        except (OSError, RuntimeError, ValueError, TypeError) as exc:
            raise _read_error(ds, exc) from None
        n_all = n
        _check_map(f, path, out, pixels[:, j], int(stored[j]))
        maps.append(_full(out))
    return TwotimeGroups(bins=stored[pick], pixels=pixels[:, pick], maps=maps,
                         tile_px=tile_px, seed=seed)


def read_twotime_groups(path: str | Path, bins: Sequence[int] | None = None) -> TwotimeGroups:
    """The two-time group maps of the result file ``path`` (read-only, unlocked);
    ``bins``: only these 1-based dynamic bins, in that order (default all).

    Raises
    ------
    XpcsFileError
        No group maps, or a dataset or attribute of the wrong kind or shape (the
        message names the file and the dataset).
    """
    from xpcsviewer.io._h5open import open_h5

    with open_h5(path) as f:
        return read_twotime_groups_group(f, bins)
