"""The age x lag map of a two-time analysis: its data type and its place in a result file.

The types :class:`AgeLagLevel` and :class:`AgeLagMap` live here, with the file layout,
because the reader returns them and ``io`` imports nothing from ``compute``;
:mod:`xpcsviewer.compute.ages.age_lag` re-exports them (import them from there in compute
code). Layout (docs/file-format-notes.md)::

    /xpcs/twotime/age_lag                  attrs: version, n_frames, frame_time (s),
                                                  n_levels, points_per_level, smooth,
                                                  entry ("mean of the full map's pairs"),
                                                  engine
        bins                               (n_bins,) int64, 1-based dynamic bins
        level_00 .. level_LL               attrs: width (frames per block)
            c                              (n_bins, n_t, n_lag) float32, NaN outside the run
            t1                             (n_t,) int64, first frame of each block
            lag                            (n_lag,) int64, lag in frames
            weight                         (n_t, n_lag) int64, frame pairs behind each entry

Written inside the atomic write of the whole result file (:mod:`xpcsviewer.io.results.writer`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from xpcsviewer.io._h5 import (
    _array,
    _dataset,
    _exists,
    _read_error,
    attr_value,
    check_declared,
)
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.outputs import check_h5_output
from xpcsviewer.model.age_lag import AgeLagLevel, AgeLagMap

__all__ = ["AGE_LAG_GROUP", "AgeLagInfo", "has_age_lag",
           "read_age_lag", "read_age_lag_group", "read_age_lag_info", "write_age_lag_group"]

AGE_LAG_GROUP = "/xpcs/twotime/age_lag"
VERSION = "xpcsviewer-age-lag-1"
#: ``AgeLagMap.config`` entries stored as text attributes of the group
_TEXT_KEYS = ("smooth", "entry", "engine")


def _compression() -> dict[str, Any]:
    return {"compression": "lzf" if "lzf" in h5py.filters.decode else "gzip", "shuffle": True}


def write_age_lag_group(parent: h5py.Group, amap: AgeLagMap, name: str = "age_lag"
                        ) -> h5py.Group:
    """Write ``amap`` as ``parent[name]`` (``parent``: the file's /xpcs/twotime, or the
    pixel groups' group, :mod:`xpcsviewer.io.results.age_lag_groups`)."""
    if name in parent:
        del parent[name]
    g = parent.create_group(name)
    cfg = dict(amap.config)
    g.attrs["version"] = VERSION
    g.attrs["n_frames"] = int(amap.n_frames)
    g.attrs["frame_time"] = float(amap.frame_time)
    g.attrs["n_levels"] = len(amap.levels)
    g.attrs["points_per_level"] = int(cfg.get("points_per_level", 0))
    for key in _TEXT_KEYS:
        g.attrs[key] = str(cfg.get(key, ""))
    g.create_dataset("bins", data=np.asarray(amap.bins, dtype=np.int64))
    for li, lv in enumerate(amap.levels):
        check_h5_output(g)  # a full disk stops the write here
        lg = g.create_group(f"level_{li:02d}")
        lg.attrs["width"] = int(lv.width)
        nb, nt, nl = lv.c.shape
        kw = _compression() if lv.c.size > 8192 else {}
        if kw:
            rows = max(1, min(nt, (1 << 15) // max(nl, 1)))
            kw["chunks"] = (1, rows, max(nl, 1))
        ds = lg.create_dataset("c", shape=(nb, nt, nl), dtype=np.float32, **kw)
        step = max(1, (4 << 20) // max(nl, 1))  # float32 copies of 16 MB, not of the level
        for b in range(nb):
            for r0 in range(0, nt, step):
                ds[b, r0 : r0 + step] = np.asarray(lv.c[b, r0 : r0 + step], dtype=np.float32)
            check_h5_output(ds)
        lg.create_dataset("t1", data=np.asarray(lv.t1, dtype=np.int64))
        lg.create_dataset("lag", data=np.asarray(lv.lag, dtype=np.int64))
        w = np.asarray(lv.weight, dtype=np.int64)
        lg.create_dataset("weight", data=w, **(_compression() if w.size > 8192 else {}))
    return g


def has_age_lag(f: h5py.File) -> bool:
    """Whether an open result file holds an age x lag map."""
    return _exists(f, AGE_LAG_GROUP)


@dataclass(frozen=True)
class AgeLagInfo:
    """What a result file's age x lag map covers, without its entries (read with the
    result: ``XpcsResult.age_lag``)."""

    bins: np.ndarray  #: (n_bins,) 1-based dynamic bins
    n_frames: int
    frame_time: float  #: s
    n_levels: int


def read_age_lag_info(f: h5py.File, group: str = AGE_LAG_GROUP) -> AgeLagInfo | None:
    """The bins, frames and frame time of an open file's age x lag map (at ``group``);
    None without one.

    Raises XpcsFileError for attributes of the wrong kind (the message names them).
    """
    if not _exists(f, group):
        return None
    g = group
    n_frames = _int_attr(f, g, "n_frames", "the number of frames")
    frame_time = _attr(f, g, "frame_time", float, "seconds per frame")
    n_levels = _int_attr(f, g, "n_levels", "the number of levels")
    if n_frames < 1 or not (frame_time > 0 and np.isfinite(frame_time)) or n_levels < 0:
        raise XpcsFileError(f.filename, f"n_frames={n_frames}, frame_time={frame_time}, "
                            f"n_levels={n_levels}", dataset=g,
                            expected="n_frames >= 1, frame_time > 0, n_levels >= 0")
    bins = _array(f, f"{g}/bins", kinds="iu", ndim=1, expected="(n_bins,) dynamic bins",
                  max_elements=1 << 20).astype(np.int64)
    if bins.size and (bins.min() < 1 or np.unique(bins).size != bins.size):
        raise XpcsFileError(f.filename, f"holds {bins.tolist()[:8]}", dataset=f"{g}/bins",
                            expected="distinct 1-based dynamic bins")
    return AgeLagInfo(bins, int(n_frames), float(frame_time), int(n_levels))


def _check_level(f: h5py.File, p: str, n_frames: int, width: int, t1: np.ndarray,
                 lag: np.ndarray, w: np.ndarray, first: bool, m: int) -> None:
    """Every value of a level the cuts rely on (issue 50): blocks inside the run, first
    frames and lags ascending, lags that stay inside the run, finite pair counts >= 0;
    the first level's blocks reach the run's end (``n_frames`` is the run's)."""
    nt = t1.size
    if width < 1 or (nt and (t1.min() < 0 or t1.max() + width > n_frames)):
        raise XpcsFileError(f.filename, f"width {width} with blocks starting at "
                            f"{t1.min() if nt else '-'}..{t1.max() if nt else '-'}",
                            dataset=p, expected=f"blocks inside 0..{n_frames - 1}")
    if nt > 1 and not (np.diff(t1) > 0).all():
        k = int(np.argmax(np.diff(t1) <= 0)) + 1
        raise XpcsFileError(f.filename, f"first frames not ascending at entry {k} "
                            f"({t1[k - 1]:.0f} then {t1[k]:.0f})", dataset=f"{p}/t1",
                            expected="ascending first frames of the blocks")
    # a level's lags are whole blocks; its first lag leaves a pair inside the run, and
    # no level reaches past twice the run (plus level 0's 2m lags of a short run)
    top = 2 * n_frames + 2 * max(0, m)
    if lag.size and (lag.min() < 0 or lag.min() >= n_frames or lag.max() >= top
                     or (lag.size > 1 and not (np.diff(lag) > 0).all())
                     or (lag % width != 0).any()):
        raise XpcsFileError(f.filename, f"lags {lag.min():.0f}..{lag.max():.0f} "
                            f"({lag.size} values)", dataset=f"{p}/lag",
                            expected=f"ascending lags in frames, multiples of the width "
                            f"{width}, the first below n_frames = {n_frames}, all below {top}")
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        i, j = (int(v[0]) for v in np.nonzero(bad))
        raise XpcsFileError(f.filename, f"pair count {w[i, j]:g} at entry ({i}, {j})",
                            dataset=f"{p}/weight", expected="finite frame-pair counts >= 0")
    if first and nt and n_frames - (t1.max() + width) >= width:
        raise XpcsFileError(f.filename, f"n_frames is {n_frames} but the blocks of "
                            f"{p.rsplit('/', 1)[-1]} end at frame {t1.max() + width:.0f}",
                            dataset=p.rsplit("/", 1)[0],
                            expected="n_frames of the run the map covers (its first level's "
                            "blocks reach the run's end)")


def _check_c(f: h5py.File, path: str, c: np.ndarray, bins: np.ndarray) -> None:
    """C entries are finite, or NaN outside the run (never infinite)."""
    inf = np.isinf(c)
    if inf.any():
        b, i, j = (int(v[0]) for v in np.nonzero(inf))
        raise XpcsFileError(f.filename, f"{c[b, i, j]:g} at entry ({i}, {j}) of bin "
                            f"{int(bins[b])}", dataset=path,
                            expected="finite C (NaN where a pair leaves the run)")


def _attr(f: h5py.File, path: str, name: str, kind: type, expected: str) -> Any:
    v = attr_value(f, path, name, expected)
    try:
        v = kind(np.asarray(v).reshape(()).item() if kind is not str else
                 (v.decode() if isinstance(v, bytes) else v))
    except (TypeError, ValueError):
        raise XpcsFileError(f.filename, f"attribute {name!r} is {v!r}", dataset=path,
                            expected=expected) from None
    return v


def _int_attr(f: h5py.File, path: str, name: str, expected: str) -> int:
    """An integer attribute stored as an integer (a float or text is refused: it was
    truncated silently)."""
    v = attr_value(f, path, name, expected)
    a = np.asarray(v)
    if a.dtype.kind not in "iu" or a.size != 1:
        raise XpcsFileError(f.filename, f"attribute {name!r} is {v!r}", dataset=path,
                            expected=f"{expected} (an integer)")
    return int(a.reshape(()).item())


def _read_c(f: h5py.File, path: str, shape: tuple[int, int, int], rows: list[int]) -> np.ndarray:
    """Bins ``rows`` of a level's (n_bins, n_t, n_lag) entries, as float64."""
    expected = f"(n_bins, n_t, n_lag) = {shape} floats"
    ds = _dataset(f, path, expected)
    if ds.dtype.kind != "f":
        raise XpcsFileError(f.filename, f"has dtype {ds.dtype}", dataset=path, expected=expected)
    check_declared(ds, shape=shape, expected=expected, max_elements=max(1, int(np.prod(shape))))
    out = np.empty((len(rows), *shape[1:]))
    try:
        for o, i in enumerate(rows):
            if out[o].size:
                ds.read_direct(out, np.s_[i], np.s_[o])
    except (OSError, RuntimeError, ValueError, TypeError) as exc:
        raise _read_error(ds, exc) from None
    return out


def read_age_lag_group(f: h5py.File, bins_wanted: Sequence[int] | None = None,
                       group: str = AGE_LAG_GROUP) -> AgeLagMap:
    """The age x lag map of an open result file (checked; errors name the dataset).

    ``bins_wanted``: the 1-based dynamic bins to read, in that order (default all the map
    holds), so that a long run's map need not be read whole. ``group``: where the map is.
    """
    g = group
    info = read_age_lag_info(f, g)
    if info is None:
        raise XpcsFileError(f.filename, "no age x lag map", dataset=g,
                            expected="a two-time age x lag map (correlate --twotime-ages)")
    n_frames, frame_time, n_levels = info.n_frames, info.frame_time, info.n_levels
    stored = info.bins
    if bins_wanted is not None:
        missing = sorted({int(b) for b in bins_wanted} - set(stored.tolist()))
        if missing:
            raise XpcsFileError(f.filename, f"has no age x lag map of bins {missing}",
                                dataset=f"{g}/bins", expected=f"one of {stored.tolist()}")
        pick = [int(np.flatnonzero(stored == int(b))[0]) for b in bins_wanted]
    else:
        pick = list(range(stored.size))
    nb = stored.size
    ppl = (_int_attr(f, g, "points_per_level", "points per level")
           if "points_per_level" in f[g].attrs else 0)
    levels = []
    for li in range(n_levels):
        p = f"{g}/level_{li:02d}"
        width = _int_attr(f, p, "width", "frames per block")
        t1 = _array(f, f"{p}/t1", kinds="iu", ndim=1, expected="(n_t,) first frames",
                    max_elements=n_frames).astype(np.float64)
        lag = _array(f, f"{p}/lag", kinds="iu", ndim=1, expected="(n_lag,) lags in frames",
                     max_elements=n_frames).astype(np.float64)
        nt, nl = t1.size, lag.size
        c = _read_c(f, f"{p}/c", (nb, nt, nl), pick)
        w = _array(f, f"{p}/weight", kinds="iuf", shape=(nt, nl),
                   expected=f"(n_t, n_lag) = ({nt}, {nl}) pair counts",
                   max_elements=max(1, nt * nl)).astype(np.float64)
        _check_level(f, p, n_frames, width, t1, lag, w, li == 0, ppl)
        _check_c(f, f"{p}/c", c, stored[pick])
        levels.append(AgeLagLevel(width=width, t1=t1, lag=lag, c=c, weight=w))
    cfg: dict[str, Any] = {"points_per_level": ppl}
    for key in _TEXT_KEYS:
        cfg[key] = _attr(f, g, key, str, "text") if key in f[g].attrs else ""
    return AgeLagMap(bins=stored[pick], n_frames=n_frames, frame_time=frame_time,
                     levels=tuple(levels), config=cfg)


def read_age_lag(path: str | Path, bins: Sequence[int] | None = None) -> AgeLagMap:
    """The age x lag map of the result file ``path`` (read-only, unlocked); ``bins``: only
    these 1-based dynamic bins, in that order (default all).

    Raises
    ------
    XpcsFileError
        No map, or a dataset of the wrong kind or shape (the message names it).
    """
    from xpcsviewer.io._h5open import open_h5

    with open_h5(path) as f:
        return read_age_lag_group(f, bins)
