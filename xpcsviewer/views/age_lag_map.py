"""The age x lag map of one bin as an image, for a file that holds no full two-time map
(no Qt; the Two-Time tab and the exported figures draw it, issue 35).

A multi-tau two-time map (``/xpcs/twotime/age_lag``) keeps C(t1, t1 + lag) in levels of
blocks that widen with the lag (:mod:`xpcsviewer.compute.ages.age_lag`). Drawn here against
the age of each entry (the midpoint of its two blocks, s, linear) and its lag (s, log):
one image row per display row, each row the nearest stored lag (in log lag), each
column the weighted mean of the entries whose age falls in it, or, where the blocks are
wider than a column, the entry whose block covers it. Outside the run (age < lag / 2 or
beyond the end less lag / 2) the image is NaN. The age windows are drawn on it as bands
(:func:`age_lag_bands`): at constant age a strip, at constant t1 a strip sheared by
lag / 2. ``g2`` is the mean of each stored lag over every age (weighted by the pairs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xpcsviewer.views._age_bands import WAYS
from xpcsviewer.views.ages import BAND_CHOICES, MapBand

__all__ = ["AgeLagImage", "age_lag_bands", "age_lag_image", "age_lag_only", "age_lag_text",
           "bins_text", "has_twotime", "map_bins", "map_extent", "read_age_lag_image"]


def age_lag_only(res) -> bool:
    """The result file holds an age x lag map and no full two-time map."""
    return (res is not None and getattr(res, "twotime", None) is None
            and getattr(res, "age_lag", None) is not None)


def has_twotime(res) -> bool:
    """The result file holds a full two-time map or an age x lag map."""
    return getattr(res, "twotime", None) is not None or age_lag_only(res)


def map_bins(res) -> np.ndarray:
    """1-based dynamic bins of the file's two-time maps (the full maps' where it has them)."""
    if res.twotime is not None:
        return np.asarray(res.twotime.processed_bins, dtype=np.int64)
    return np.asarray(res.age_lag.bins, dtype=np.int64)


def map_extent(res) -> tuple[int, float]:
    """(frames, s per frame) of the file's two-time analysis."""
    if res.twotime is not None:
        return int(res.twotime.n_frames), float(res.twotime.t0)
    return int(res.age_lag.n_frames), float(res.age_lag.frame_time)


def bins_text(bins) -> str:
    """1-based bins as runs: ``[1, 2, 3, 7, 9, 10]`` -> ``"1-3, 7, 9-10"``."""
    b = sorted({int(v) for v in np.asarray(bins).ravel()})
    runs: list[list[int]] = []
    for v in b:
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return ", ".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in runs)


def age_lag_text(info, times: str = "\u00d7") -> str:
    """What a file's age x lag map (an ``io.results.age_lag.AgeLagInfo``) covers, in words:
    "age x lag map (multi-tau two-time) of 3 bins (1-3): 300 frames of 0.01 s, 6 levels"
    (``times``: the sign between age and lag; ``info`` and the report share this)."""
    n = int(np.asarray(info.bins).size)
    return (f"age {times} lag map (multi-tau two-time) of {n} bin{'s' * (n != 1)} "
            f"({bins_text(info.bins) or 'none'}): {int(info.n_frames)} frames of "
            f"{float(info.frame_time):.4g} s, {int(info.n_levels)} "
            f"level{'s' * (int(info.n_levels) != 1)}")


@dataclass(frozen=True)
class AgeLagImage:
    """C(age, lag) of one bin on a grid: ``c[row, col]``, rows from the shortest lag up.

    ``age_edges`` (n_cols + 1,) s, linear; ``lag_edges`` (n_rows + 1,) s, log-spaced;
    ``lags`` (L,) s the stored lags > 0 and ``g2`` (L,) their mean over all ages.
    """

    c: np.ndarray
    age_edges: np.ndarray
    lag_edges: np.ndarray
    lags: np.ndarray
    g2: np.ndarray
    dq: int
    n_frames: int
    frame_time: float
    n_levels: int
    label: str = ""

    @property
    def t_end(self) -> float:
        """Age (s) of the last frame's centre, the end of the run as the bands see it."""
        return (self.n_frames - 1) * self.frame_time

    def title(self) -> str:
        """"age x lag map, bin 3 (q=0.0012 1/A)"."""
        return f"age \u00d7 lag map, bin {self.dq}" + (f" ({self.label})" if self.label
                                                        else "")


def _row(ages: np.ndarray, c: np.ndarray, w: np.ndarray, half: np.ndarray,
         edges: np.ndarray) -> np.ndarray:
    """One image row: weighted column means, empty columns from the covering entry."""
    n_cols = edges.size - 1
    out = np.full(n_cols, np.nan)
    if ages.size == 0:
        return out
    col = np.clip(np.searchsorted(edges, ages, side="right") - 1, 0, n_cols - 1)
    sw = np.bincount(col, weights=w, minlength=n_cols)
    swc = np.bincount(col, weights=w * c, minlength=n_cols)
    filled = sw > 0
    out[filled] = swc[filled] / sw[filled]
    empty = np.flatnonzero(~filled)
    if empty.size:
        order = np.argsort(ages)
        a, v, h = ages[order], c[order], half[order]
        x = 0.5 * (edges[empty] + edges[empty + 1])
        k = np.clip(np.searchsorted(a, x), 1, a.size - 1) if a.size > 1 else np.zeros(
            x.size, np.int64)
        if a.size > 1:
            k = np.where(np.abs(a[k - 1] - x) <= np.abs(a[k] - x), k - 1, k)
        near = np.abs(a[k] - x) <= h[k]
        out[empty[near]] = v[k[near]]
    return out


def age_lag_image(amap, bin_pos: int = 0, n_cols: int = 480, n_rows: int = 240,
                  label: str = "") -> AgeLagImage:
    """The image of bin ``bin_pos`` (its position in ``amap.bins``) of an ``AgeLagMap``."""
    ft = float(amap.frame_time)
    n = int(amap.n_frames)
    # per stored lag (frames): the entries of every level with that lag
    parts: dict[float, list[tuple[np.ndarray, ...]]] = {}
    for lv in amap.levels:
        centre = np.asarray(lv.t1, np.float64) + 0.5 * (lv.width - 1)
        for j, lag in enumerate(np.asarray(lv.lag, np.float64)):
            if lag <= 0:
                continue
            c = np.asarray(lv.c[bin_pos, :, j], np.float64)
            w = np.asarray(lv.weight[:, j], np.float64)
            ok = np.isfinite(c) & (w > 0)
            if ok.any():
                parts.setdefault(float(lag), []).append(
                    ((centre[ok] + 0.5 * lag) * ft, c[ok], w[ok],
                     np.full(int(ok.sum()), 0.5 * lv.width * ft)))
    lags = np.array(sorted(parts), dtype=np.float64)
    age_edges = np.linspace(-0.5 * ft, (n - 0.5) * ft, max(1, int(n_cols)) + 1)
    if lags.size == 0:
        lag_edges = np.array([ft, 2 * ft])
        return AgeLagImage(np.full((1, age_edges.size - 1), np.nan), age_edges, lag_edges,
                           np.zeros(0), np.zeros(0), int(amap.bins[bin_pos]), n, ft,
                           len(amap.levels), label)
    rows = np.empty((lags.size, age_edges.size - 1))
    g2 = np.empty(lags.size)
    for i, lag in enumerate(lags):
        a, c, w, h = (np.concatenate(x) for x in zip(*parts[lag], strict=True))
        rows[i] = _row(a, c, w, h, age_edges)
        g2[i] = float(np.sum(w * c) / np.sum(w))
    lg = np.log10(lags * ft)
    gap_lo = lg[1] - lg[0] if lg.size > 1 else 0.3
    gap_hi = lg[-1] - lg[-2] if lg.size > 1 else 0.3
    lo, hi = lg[0] - 0.5 * gap_lo, lg[-1] + 0.5 * gap_hi
    nr = max(int(n_rows), lags.size)
    edges = np.linspace(lo, hi, nr + 1)
    centres = 0.5 * (edges[:-1] + edges[1:])
    mids = 0.5 * (lg[:-1] + lg[1:])
    pick = np.searchsorted(mids, centres)  # the nearest stored lag in log lag
    return AgeLagImage(rows[pick], age_edges, 10.0**edges, lags * ft, g2,
                       int(amap.bins[bin_pos]), n, ft, len(amap.levels), label)


def read_age_lag_image(path: str, dq: int, label: str = "", progress=None,
                       cancel=None) -> tuple[AgeLagImage, tuple[float, float]]:
    """Worker job: the image of dynamic bin ``dq`` of the file's age x lag map and its
    0.5-99.5 percentile levels (reads that bin only)."""
    from xpcsviewer.io.results.age_lag import read_age_lag
    from xpcsviewer.views.display_image import auto_levels

    if cancel is not None:
        cancel.raise_if_cancelled()
    amap = read_age_lag(path, [int(dq)])
    if cancel is not None:
        cancel.raise_if_cancelled()
    img = age_lag_image(amap, 0, label=label)
    return img, auto_levels(img.c)


def _strip(lo: float, hi: float, t_end: float, way: str, lags: np.ndarray) -> np.ndarray:
    """Corners (age s, lag s) of window [lo, hi] read ``way`` over ``lags``, inside the
    run (lag / 2 <= age <= t_end - lag / 2); (0, 2) when it is not on the map."""
    shift = 0.5 * lags if way == "t1" else 0.0
    left = np.maximum(lo + shift, 0.5 * lags)
    right = np.minimum(hi + shift, t_end - 0.5 * lags)
    ok = left < right
    if not ok.any():
        return np.zeros((0, 2))
    y = lags[ok]
    return np.concatenate([np.stack([left[ok], y], 1), np.stack([right[ok], y], 1)[::-1]])


def age_lag_bands(lo: np.ndarray, hi: np.ndarray, t_end: float, lag_lo: float,
                  lag_hi: float, shown: str = "age", flagged: np.ndarray | None = None,
                  n: int = 64) -> list[MapBand]:
    """Bands of windows ``[lo, hi]`` (s) on the age x lag map from ``lag_lo`` to
    ``lag_hi`` (s): ``polygon`` x = age (s), y = lag (s). ``shown`` as in
    :func:`xpcsviewer.views.ages.map_bands` (``"both"``: both ways, constant t1 marked
    ``mirrored``)."""
    if shown not in BAND_CHOICES:
        raise ValueError(f"shown must be one of {BAND_CHOICES}, got {shown!r}")
    ways = list(WAYS) if shown == "both" else [shown]
    lags = np.geomspace(lag_lo, lag_hi, int(n))
    flags = np.zeros(len(lo), bool) if flagged is None else np.asarray(flagged, bool)
    out = []
    for k, (a, b) in enumerate(zip(lo, hi, strict=True)):
        for way in ways:
            poly = _strip(float(a), float(b), float(t_end), way, lags)
            if poly.shape[0]:
                out.append(MapBand(k, way, poly, shown == "both" and way == "t1",
                                   bool(flags[k])))
    return out
