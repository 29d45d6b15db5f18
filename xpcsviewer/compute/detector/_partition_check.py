"""The invariants of a partition (:func:`check_consistency`), checked in blocks of
``block`` pixels (``partition.BLOCK_PIXELS`` from the public entry point)."""

from __future__ import annotations

import numpy as np

from xpcsviewer.model.result import QMap

__all__ = ["check_consistency"]


def check_consistency(qmap: QMap, block: int = 1 << 14) -> list[str]:
    """Vectorised check of a partition's invariants.

    Checks ``mask > 0`` iff ``dynamic_roi_map > 0`` iff ``static_roi_map > 0``;
    ``len(*_index_mapping) == max(*_roi_map)`` with every value 1..N present;
    index mappings inside their ``num_pts`` grid; every static bin inside exactly
    one dynamic bin. The pixels are read in blocks of ``block`` (no full-size
    temporaries).

    Returns
    -------
    list of str
        One sentence per violated invariant; empty when the partition is consistent.
    """
    problems: list[str] = []
    d = np.asarray(qmap.dynamic_roi_map)
    s = np.asarray(qmap.static_roi_map)
    m = np.asarray(qmap.mask)
    if not (d.shape == s.shape == m.shape):
        return [
            f"map shapes differ: dynamic {d.shape}, static {s.shape}, mask {m.shape}"
        ]

    def labels(a: np.ndarray) -> np.ndarray:
        a = np.ascontiguousarray(a).reshape(-1)
        return a if a.dtype.kind in "ui" else a.astype(np.int64)  # floats truncated

    d, s = labels(d), labels(s)
    valid = np.ascontiguousarray(m).reshape(-1)
    blocks = [slice(a, a + block) for a in range(0, d.size, block)]
    for name, roi, mapping, npts in (
        ("dynamic", d, qmap.dynamic_index_mapping, qmap.dynamic_num_pts),
        ("static", s, qmap.static_index_mapping, qmap.static_num_pts),
    ):
        n = len(mapping)
        vmax = int(roi.max(initial=0))
        if vmax != n:
            problems.append(
                f"{name}: max(roi_map) = {vmax} but len(index_mapping) = {n}"
            )
        negative = int(roi.min(initial=0)) < 0
        if negative:
            problems.append(f"{name}: negative values in roi_map")
        counts = np.zeros(max(n, vmax) + 1, dtype=np.int64)  # [0]: excluded pixels
        disagree = 0
        for b in blocks:
            r = roi[b]
            pos = r > 0
            counts += np.bincount(r[pos] if negative else r, minlength=counts.size)
            disagree += int(np.count_nonzero(pos != (valid[b] > 0)))
        counts = counts[1 : n + 1]
        if (counts == 0).any():
            problems.append(f"{name}: {int((counts == 0).sum())} bins have no pixel")
        grid = int(npts[0]) * int(npts[1])
        mp = np.asarray(mapping, dtype=np.int64)
        if mp.size and (mp.min() < 0 or mp.max() >= grid):
            problems.append(
                f"{name}: index_mapping outside the {npts[0]}x{npts[1]} grid"
            )
        if mp.size > 1 and (np.diff(mp) <= 0).any():
            problems.append(f"{name}: index_mapping not strictly increasing")
        if disagree:
            problems.append(f"{name}: {disagree} pixels where mask>0 and roi>0 disagree")
    ns = int(s.max(initial=0))
    if ns > 0:
        # A static bin seen with two dynamic values (or with dynamic 0) breaks nesting:
        # some pixel then disagrees with the value the bin's last pixel wrote.
        # (entry 0, written by the excluded pixels, is never read)
        last = np.zeros(ns + 1, dtype=np.int64)
        nonneg = int(s.min(initial=0)) >= 0
        for b in blocks:
            if nonneg:
                last[s[b]] = d[b]
            else:
                sel = s[b] > 0
                last[s[b][sel]] = d[b][sel]
        split = np.zeros(ns + 1, dtype=bool)
        outside = False
        for b in blocks:
            sv, dv = s[b], d[b]
            inside = sv > 0
            off = dv != last[np.where(inside, sv, 0)]
            off &= inside
            split[sv[off]] = True
            outside = outside or bool(np.count_nonzero((dv == 0) & inside))
        if split.any():
            problems.append(f"{int(split.sum())} static bins span more than one dynamic bin")
        if outside:
            problems.append("some static-bin pixels are outside every dynamic bin")
    return problems
