"""q x phi partitions of the detector: bins, compression, index mappings, consistency.

Semantics follow the standard partition tool (result-file-format.md §4):

- bin edges run from the minimum to the maximum value over the valid pixels,
  linear or logarithmic (q only); values and edges are rounded to 12 decimals
  before ``digitize`` so that pixels on an edge land reproducibly; the
  maximum-value pixels go to the last bin;
- the combined q x phi index is ``(b0 - 1) * n1 + (b1 - 1) + 1`` (axis 0 major),
  then compressed with ``unique`` so that only non-empty bins get values 1..N,
  and ``index_mapping[k]`` is the 0-based natural index of compressed bin k;
- the static (fine) partition refines the dynamic (coarse) one: its edges are the
  dynamic edges subdivided, so every static bin lies in exactly one dynamic bin.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections import OrderedDict
from typing import Any, Literal

import numpy as np

from xpcsviewer.compute.detector._partition_check import check_consistency as _check_consistency
from xpcsviewer.model.result import QMap

__all__ = [
    "PartitionGrid",
    "axis_edges",
    "check_consistency",
    "digitize_values",
    "fold_phi",
    "geometry_partition",
    "make_partition",
    "restrict_partition",
]


def fold_phi(
    phi: np.ndarray, phi_offset: float = 0.0, symmetry_fold: int = 1
) -> np.ndarray:
    """Azimuth after an offset and an n-fold symmetry fold, in degrees.

    Parameters
    ----------
    phi : array, degrees
    phi_offset : float
        Subtracted from ``phi``; the result is wrapped into (-180, 180].
    symmetry_fold : int
        With n > 1 every angle is mapped into the first sector
        ``[-180, -180 + 360 / n)`` so that equivalent sectors share a bin.
    """
    if symmetry_fold < 1:
        raise ValueError(f"symmetry_fold must be >= 1, got {symmetry_fold}")
    p = np.asarray(phi, dtype=np.float64) - float(phi_offset)
    p = 180.0 - np.mod(180.0 - p, 360.0)  # wrap into (-180, 180]
    if symmetry_fold > 1:
        p = np.mod(p + 180.0, 360.0 / symmetry_fold) - 180.0
    return p


def axis_edges(
    vmin: float, vmax: float, n: int, style: str = "linear", refine: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Edges (n*refine + 1,) and centres (n*refine,) of one partition axis.

    ``refine`` subdivides each of the ``n`` coarse bins into ``refine`` fine ones,
    keeping the coarse edges exactly (so fine bins nest in coarse bins). Log bins
    (``style="log"``) are spaced geometrically and centred on the geometric mean.
    """
    if n < 1 or refine < 1:
        raise ValueError("number of bins must be >= 1")
    if style == "log":
        if not vmin > 0:
            raise ValueError("log bins need a positive minimum value")
        coarse = np.geomspace(vmin, vmax, n + 1)
        sub = [
            np.geomspace(coarse[i], coarse[i + 1], refine + 1)[:-1] for i in range(n)
        ]
    elif style == "linear":
        coarse = np.linspace(vmin, vmax, n + 1)
        sub = [np.linspace(coarse[i], coarse[i + 1], refine + 1)[:-1] for i in range(n)]
    else:
        raise ValueError(f"unknown bin style {style!r} (expected 'linear' or 'log')")
    edges = np.concatenate([*sub, coarse[-1:]])
    edges[::refine] = coarse  # exactly the coarse edges, not a re-computed copy
    if style == "log":
        centres = np.sqrt(edges[:-1] * edges[1:])
    else:
        centres = 0.5 * (edges[:-1] + edges[1:])
    return edges, centres


def digitize_values(
    values: np.ndarray, edges: np.ndarray, valid: np.ndarray
) -> np.ndarray:
    """1-based bin of each valid value (0 outside ``valid``), rounding to 12 decimals.

    Values at or above the last edge go to the last bin and values below the
    first edge to bin 1, as in the standard tool.
    """
    n = len(edges) - 1
    b = np.digitize(np.round(values, 12), np.round(edges, 12))
    b = np.clip(b, 1, n)
    return np.where(valid, b, 0).astype(np.int64)


def _scratch(k: int, dtypes: tuple[Any, ...]) -> list[np.ndarray]:
    """Scratch arrays of ``k`` items, carved from one buffer at staggered offsets.

    Separately allocated large buffers start on page boundaries, so element i of two of
    them shares its address modulo 4 KiB, and an elementwise pass reading one while
    writing the other stalls on every element (4K aliasing: with 64 K-pixel blocks in
    separate buffers _digitize_fast took 65 ms instead of 18 ms for 4.5 Mpixels, every
    call). Offsets of 4 KiB * j + 1088 B keep them apart.
    """
    sizes = [k * np.dtype(dt).itemsize for dt in dtypes]
    step = [-(-sz // 4096) * 4096 + 1088 for sz in sizes]
    raw = np.empty(sum(step) + 64, dtype=np.uint8)
    base = (-raw.ctypes.data) % 64  # 64-byte aligned start
    out, at = [], base
    for dt, sz, st in zip(dtypes, sizes, step, strict=True):
        out.append(raw[at : at + sz].view(dt))
        at += st
    return out


def _digitize_fast(
    values: np.ndarray, edges: np.ndarray, valid: np.ndarray, style: str
) -> np.ndarray:
    """:func:`digitize_values` (as intp) without a binary search, for even edges.

    The bin is read off the linear (or log) position. Wherever a value lies within
    ``EDGE_TOL`` of its bin's edges, or the guess is wrong, the rounded-value
    ``digitize`` of the reference is applied to those few pixels, so the result is
    identical; elsewhere rounding to 12 decimals cannot change the bin. The pixels are
    taken in blocks of ``BLOCK_PIXELS``: the positions and masks of a block stay in the
    CPU caches and the only large array made is the result.
    """
    n = len(edges) - 1
    er = np.round(np.asarray(edges, dtype=np.float64), 12)
    lo, hi = er[0], er[-1]
    v = np.asarray(values, dtype=np.float64)
    if not hi > lo:
        return digitize_values(values, edges, valid).astype(np.intp)
    width = (hi - lo) / n
    even = style != "log" and np.abs(er - (lo + width * np.arange(n + 1))).max() < EDGE_TOL / 4
    # error of a float32 position: the cast of v and lo plus the product, in bins
    pos_tol = 8 * float(np.finfo(np.float32).eps) * (max(abs(lo), abs(hi)) / (hi - lo) + 1) * n
    f32 = even and pos_tol < 0.05
    log = style == "log" and lo > 0
    tol = max(EDGE_TOL / width, pos_tol if f32 else 64 * float(np.finfo(float).eps) * n)
    lo_e = np.concatenate([[-np.inf], er[1:-1], [np.inf]])  # bins 1 and n are open-ended
    vf = np.ascontiguousarray(v).reshape(-1)
    ok = np.ascontiguousarray(np.asarray(valid, dtype=bool)).reshape(-1)
    out = np.empty(vf.size, dtype=np.intp)  # bincount and lookups take intp, uncopied
    k = min(BLOCK_PIXELS, vf.size)
    ft = np.float32 if f32 else np.float64
    pos_buf, frac_buf, bad_buf, tmp_buf = _scratch(k, (ft, ft, bool, bool))
    near_parts = []
    for a in range(0, vf.size, BLOCK_PIXELS):
        x, m, b = vf[a : a + BLOCK_PIXELS], ok[a : a + BLOCK_PIXELS], out[a : a + BLOCK_PIXELS]
        pos, bad, tmp = pos_buf[: x.size], bad_buf[: x.size], tmp_buf[: x.size]
        with np.errstate(invalid="ignore", divide="ignore"):
            if log:
                np.maximum(x, lo, out=pos)
                pos /= lo
                np.log(pos, out=pos)
                pos *= n / np.log(hi / lo)
            elif f32:
                # float32 positions: only the bin and "near an edge" are read off them,
                # and every value within their error of an edge is settled exactly below
                np.subtract(x, lo, out=pos, dtype=np.float32, casting="same_kind")
                pos *= np.float32(n / (hi - lo))
            else:
                np.subtract(x, lo, out=pos)
                pos *= n / (hi - lo)
        np.logical_not(m, out=bad)
        np.copyto(pos, 0.0, where=bad)  # NaN / excluded values: any bin, zeroed below
        np.clip(pos, 0, n - 1, out=pos)
        np.copyto(b, pos, casting="unsafe")  # truncation: the 0-based bin
        if even:
            # even edges: a value is near an edge when its position's fraction is
            frac = np.subtract(pos, b, out=frac_buf[: x.size], casting="unsafe")
            np.less(frac, tol, out=tmp)
            tmp |= frac > 1 - tol
        else:
            with np.errstate(invalid="ignore"):
                np.less_equal(x - lo_e[b], EDGE_TOL, out=tmp)
                tmp |= lo_e[b + 1] - x <= EDGE_TOL
        tmp &= m
        idx = np.flatnonzero(tmp)
        if idx.size:
            near_parts.append(idx + a)
        b += 1
        b[bad] = 0
    if near_parts:
        near = np.concatenate(near_parts)
        out[near] = np.clip(np.digitize(np.round(vf[near], 12), er), 1, n)
    return out.reshape(v.shape)


#: values farther than this from a bin edge keep their bin when rounded to 12 decimals
EDGE_TOL = 2e-12
#: pixels per block of the per-pixel passes (a block's temporaries stay in the caches;
#: with 64 K the first pass of a process ran 3-5x slower on our VMs, 16 K did not)
BLOCK_PIXELS = 1 << 14



def _compress(b0: np.ndarray, b1: np.ndarray | None, n1: int) -> tuple[np.ndarray, np.ndarray]:
    # combined natural index + 1 (0 = excluded), compressed through a lookup table
    # of the non-empty bins: the same as np.unique's inverse, in O(N); b1 is not read
    # when n1 == 1
    if n1 == 1:
        combined = b0  # (b0 - 1) * 1 + 1, and 0 where excluded already
    else:
        combined = b0.astype(np.intp)
        combined -= 1
        combined *= n1
        combined += b1
        combined[b0 <= 0] = 0
    counts = np.bincount(combined.ravel())
    present = np.flatnonzero(counts[1:]) + 1
    lut = np.zeros(counts.size, dtype=_uint_dtype(present.size))
    lut[present] = np.arange(1, present.size + 1)
    return lut[combined], present - 1


def _uint_dtype(n_max: int) -> type:
    for dt in (np.uint8, np.uint16, np.uint32):
        if n_max <= np.iinfo(dt).max:
            return dt
    return np.uint64


def _smallest_uint(values: np.ndarray, n_max: int) -> np.ndarray:
    return values.astype(_uint_dtype(n_max), copy=False)


def _valid_and_ranges(
    q: np.ndarray, phi: np.ndarray, mask: np.ndarray | None, positive: bool
) -> tuple[np.ndarray, tuple[float, float], tuple[float, float]]:
    """Valid pixels (mask > 0, finite q and phi, and q > 0 if ``positive``) and the
    ranges of q and phi over them, in one blockwise pass (no full-size temporaries).

    Returns
    -------
    valid (H, W) bool, (qmin, qmax), (phimin, phimax); the minima are +inf and the
    maxima -inf when no pixel is valid.
    """
    qf = np.ascontiguousarray(q).reshape(-1)
    pf = np.ascontiguousarray(phi).reshape(-1)
    mf = None if mask is None else np.ascontiguousarray(mask).reshape(-1)
    valid = np.empty(qf.size, dtype=bool)
    tmp = np.empty(min(BLOCK_PIXELS, qf.size), dtype=bool)
    qlo = plo = np.inf
    qhi = phi_hi = -np.inf
    for a in range(0, qf.size, BLOCK_PIXELS):
        x, p, v = qf[a : a + BLOCK_PIXELS], pf[a : a + BLOCK_PIXELS], valid[a : a + BLOCK_PIXELS]
        t = tmp[: x.size]
        np.isfinite(x, out=v)
        v &= np.isfinite(p, out=t)
        if mf is not None:
            v &= np.greater(mf[a : a + BLOCK_PIXELS], 0, out=t)
        if positive:
            with np.errstate(invalid="ignore"):
                v &= np.greater(x, 0, out=t)
        qlo = min(qlo, float(np.min(x, where=v, initial=np.inf)))
        qhi = max(qhi, float(np.max(x, where=v, initial=-np.inf)))
        plo = min(plo, float(np.min(p, where=v, initial=np.inf)))
        phi_hi = max(phi_hi, float(np.max(p, where=v, initial=-np.inf)))
    return valid.reshape(q.shape), (qlo, qhi), (plo, phi_hi)


def _phi_range(
    phi: np.ndarray, pf: np.ndarray | None, valid: np.ndarray, offset: float, fold: int,
    raw: tuple[float, float] | None = None,
) -> tuple[float, float]:
    """Min and max of the folded azimuth over the valid pixels.

    Without a folded map (one phi bin), the raw range (``raw`` when known) is folded
    instead when that is exact: with no offset and no symmetry fold, folding is
    monotonic on (-180, 180].
    """
    if pf is None:
        if raw is not None:
            lo, hi = raw
        else:
            lo = float(np.min(phi, where=valid, initial=np.inf))
            hi = float(np.max(phi, where=valid, initial=-np.inf))
        if offset == 0 and fold == 1 and lo > -180.0 and hi <= 180.0:
            f = fold_phi(np.array([lo, hi]))
            return float(f[0]), float(f[1])
        pf = fold_phi(phi, offset, fold)
    return (float(np.min(pf, where=valid, initial=np.inf)),
            float(np.max(pf, where=valid, initial=-np.inf)))


def _first_fold_centres(phi: np.ndarray, bins: np.ndarray, fallback: np.ndarray,
                        offset: float, fold: int) -> np.ndarray:
    """Folded phi bins labelled by the mean azimuth of their pixels in the first fold.

    The standard tool's convention (result-file-format.md §4): the first fold is
    ``0 <= phi - offset < 360 / n``; the label is the mean of the pixels' own phi
    there. A bin without pixels in the first fold keeps its folded-axis centre
    moved into the first fold.
    """
    n = len(fallback)
    p = fold_phi(phi, offset)
    unit = (p >= 0) & (p < 360.0 / fold) & (bins > 0)
    ids = np.where(unit, bins, 0).ravel()
    s = np.bincount(ids, weights=np.asarray(phi, dtype=np.float64).ravel(), minlength=n + 1)
    c = np.bincount(ids, minlength=n + 1)
    moved = fold_phi(np.mod(np.asarray(fallback) + 180.0, 360.0 / fold) + offset)
    return np.where(c[1:] > 0, s[1:] / np.maximum(c[1:], 1), moved)


@dataclasses.dataclass(frozen=True)
class PartitionGrid:
    """The q x phi bins of a partition (the standard partition tool's settings).

    Attributes
    ----------
    dq_num, dp_num : int
        Dynamic (coarse, g2) bins along q and phi.
    sq_num, sp_num : int
        Static (fine, SAXS) bins along q and phi; rounded up to a multiple of the
        dynamic count so that static bins nest in dynamic bins.
    q_style : "linear" or "log"
    phi_offset, symmetry_fold :
        See :func:`fold_phi`. With n > 1 the phi bins hold every n-th sector together
        and are labelled by the mean azimuth of their pixels in the first fold
        (``0 <= phi - offset < 360 / n``), as the standard tool does.
    """

    dq_num: int
    sq_num: int
    dp_num: int = 1
    sp_num: int = 1
    q_style: Literal["linear", "log"] = "linear"
    phi_offset: float = 0.0
    symmetry_fold: int = 1


def make_partition(
    q: np.ndarray,
    phi: np.ndarray,
    mask: np.ndarray | None,
    grid: PartitionGrid,
    geometry: Any = None,
    *,
    content_hash: bool = True,
) -> QMap:
    """Dynamic and static q x phi partitions of a detector.

    Parameters
    ----------
    q, phi : (H, W) float
        Per-pixel q (1/Angstrom) and azimuth (deg), e.g. from ``compute_qmap``.
    mask : (H, W) bool or None
        True (or > 0) for valid pixels; None means all pixels are valid. Pixels
        with a non-finite q or phi are excluded.
    grid : PartitionGrid
        The bins along q and phi, their style, offset and fold.
    geometry : DetectorGeometry, optional
        Recorded in the returned QMap (beam centre in pixels, distance and pixel size in
        metres, energy in keV; anything with those attributes, such as a QMap; default
        :class:`~xpcsviewer.compute.detector.qmap.DetectorGeometry` ()).
    content_hash : bool
        Compute ``QMap.hash`` now (sha256 over the maps: ~0.2 s for 4.5 Mpixels).
        False leaves it empty; the writer computes it when the partition is saved.

    Returns
    -------
    QMap
        With compressed ROI maps (smallest unsigned dtype), index mappings,
        bin-centre lists, ``num_pts`` and the content hash.
    """
    from xpcsviewer.compute.detector.qmap import DetectorGeometry

    geo = geometry if geometry is not None else DetectorGeometry()
    dq_num, sq_num, dp_num, sp_num = grid.dq_num, grid.sq_num, grid.dp_num, grid.sp_num
    q_style, phi_offset, symmetry_fold = grid.q_style, grid.phi_offset, grid.symmetry_fold
    q = np.asarray(q, dtype=np.float64)
    phi = np.asarray(phi, dtype=np.float64)
    if q.shape != phi.shape or q.ndim != 2:
        raise ValueError(
            f"q and phi must be 2-D of the same shape, got {q.shape} and {phi.shape}"
        )
    if mask is not None and np.shape(mask) != q.shape:
        raise ValueError(
            f"mask shape {np.shape(mask)} does not match the detector {q.shape}"
        )
    for name, n in (
        ("dq_num", dq_num),
        ("sq_num", sq_num),
        ("dp_num", dp_num),
        ("sp_num", sp_num),
    ):
        if int(n) < 1:
            raise ValueError(f"{name} must be >= 1, got {n}")
    rq = -(-int(sq_num) // int(dq_num))  # static bins per dynamic bin, rounded up
    rp = -(-int(sp_num) // int(dp_num))
    # one phi bin needs only the folded range, not the folded map
    one_phi = rp * int(dp_num) == 1
    # the log axis has no place for the beam-centre pixel (q = 0)
    valid, (qmin, qmax), phi_raw = _valid_and_ranges(q, phi, mask, q_style == "log")
    if not qmin <= qmax:
        raise ValueError("the mask leaves no valid pixel")
    pf = None if one_phi else fold_phi(phi, phi_offset, symmetry_fold)

    q_edges_s, q_cent_s = axis_edges(qmin, qmax, int(dq_num), q_style, rq)
    p_edges_s, p_cent_s = axis_edges(*_phi_range(phi, pf, valid, phi_offset, symmetry_fold,
                                                 raw=phi_raw),
                                     int(dp_num), "linear", rp)
    q_edges_d, q_cent_d = q_edges_s[::rq], None
    p_edges_d = p_edges_s[::rp]
    if q_style == "log":
        q_cent_d = np.sqrt(q_edges_d[:-1] * q_edges_d[1:])
    else:
        q_cent_d = 0.5 * (q_edges_d[:-1] + q_edges_d[1:])
    p_cent_d = 0.5 * (p_edges_d[:-1] + p_edges_d[1:])

    bq_s = _digitize_fast(q, q_edges_s, valid, q_style)
    # one phi bin: the combined index is the q bin alone (``_compress`` with n1 = 1)
    bp_s = None if one_phi else _digitize_fast(pf, p_edges_s, valid, "linear")
    if symmetry_fold > 1 and not one_phi:
        p_cent_s = _first_fold_centres(phi, bp_s, p_cent_s, phi_offset, symmetry_fold)
        p_cent_d = _first_fold_centres(phi, (bp_s - 1) // rp + 1, p_cent_d, phi_offset,
                                       symmetry_fold)
    n_s0, n_s1 = len(q_cent_s), len(p_cent_s)
    n_d0, n_d1 = len(q_cent_d), len(p_cent_d)
    s_roi, s_map = _compress(bq_s, bp_s, n_s1)
    # Dynamic bins derived from the static ones (nesting exact by construction), per
    # static bin through a small table and then one lookup per pixel
    s_nat = np.asarray(s_map, dtype=np.int64)
    d_nat = (s_nat // n_s1 // rq) * n_d1 + (s_nat % n_s1) // rp
    d_map, s_to_d = np.unique(d_nat, return_inverse=True)
    lut = np.zeros(len(s_map) + 1, dtype=_uint_dtype(len(d_map)))
    lut[1:] = s_to_d.ravel() + 1
    d_roi = lut[s_roi]
    qm = QMap(
        dynamic_roi_map=_smallest_uint(d_roi, len(d_map)),
        static_roi_map=_smallest_uint(s_roi, len(s_map)),
        mask=valid,
        dynamic_v_list_dim0=q_cent_d,
        dynamic_v_list_dim1=p_cent_d,
        static_v_list_dim0=q_cent_s,
        static_v_list_dim1=p_cent_s,
        dynamic_index_mapping=_smallest_uint(d_map, int(d_map.max(initial=0))),
        static_index_mapping=_smallest_uint(s_map, int(s_map.max(initial=0))),
        dynamic_num_pts=(n_d0, n_d1),
        static_num_pts=(n_s0, n_s1),
        beam_center_x=float(geo.beam_center_x),
        beam_center_y=float(geo.beam_center_y),
        detector_distance=float(geo.detector_distance),
        pixel_size=float(geo.pixel_size),
        energy_kev=None if geo.energy_kev is None else float(geo.energy_kev),
    )
    if content_hash:
        qm.hash = qm.content_hash()
    return qm


def _recompress(roi: np.ndarray, keep: np.ndarray, mapping: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    # compressed values 1..N of the pixels kept, renumbered over the bins still present
    r = np.where(keep, np.asarray(roi).astype(np.intp), 0)
    counts = np.bincount(r.ravel(), minlength=len(mapping) + 1)
    present = np.flatnonzero(counts[1:]) + 1
    lut = np.zeros(counts.size, dtype=_uint_dtype(present.size))
    lut[present] = np.arange(1, present.size + 1)
    new_map = np.asarray(mapping)[present - 1]
    return lut[r], _smallest_uint(new_map, int(new_map.max(initial=0)))


def restrict_partition(qmap: QMap, keep: np.ndarray) -> QMap:
    """The same bins over fewer pixels: ``qmap`` with every pixel outside ``keep`` excluded.

    Bin edges, centres and grids stay as they are (so bins keep their q and phi);
    bins left without pixels are dropped and the rest renumbered 1..N in natural
    order, with index mappings to match, as the standard tool's compression does.

    Parameters
    ----------
    qmap : QMap
    keep : (H, W) bool
        Pixels that may stay (e.g. a new mask, or the pixels a file correlated).

    Returns
    -------
    QMap
        A new partition (hash recomputed); ``qmap`` is not changed.

    Raises
    ------
    ValueError
        Shapes differ, or no pixel is left.
    """
    keep = np.asarray(keep) > 0
    if keep.shape != qmap.shape:
        raise ValueError(f"mask shape {keep.shape} does not match the partition {qmap.shape}")
    keep = keep & (np.asarray(qmap.mask) > 0)
    d_roi, d_map = _recompress(qmap.dynamic_roi_map, keep, qmap.dynamic_index_mapping)
    s_roi, s_map = _recompress(qmap.static_roi_map, keep, qmap.static_index_mapping)
    keep &= (d_roi > 0) & (s_roi > 0)
    if not keep.any():
        raise ValueError("the mask leaves no pixel of the partition")
    d_roi = np.where(keep, d_roi, 0).astype(d_roi.dtype)
    s_roi = np.where(keep, s_roi, 0).astype(s_roi.dtype)
    qm = dataclasses.replace(
        qmap, dynamic_roi_map=d_roi, static_roi_map=s_roi, mask=keep,
        dynamic_index_mapping=d_map, static_index_mapping=s_map, hash="")
    qm.hash = qm.content_hash()
    return qm


_PARTITIONS: OrderedDict[str, QMap] = OrderedDict()
_PARTITIONS_MAX = 4
_PARTITIONS_LOCK = threading.Lock()


def geometry_partition(
    shape: tuple[int, int],
    geometry: Any,
    mask: np.ndarray | None = None,
    grid: PartitionGrid | None = None,
) -> QMap:
    """q-map and partition of a detector geometry, cached by the content of the inputs.

    ``geometry``: a :class:`~xpcsviewer.compute.detector.qmap.DetectorGeometry` with its energy;
    ``grid``: the bins (default: one dynamic bin, 500 static q bins). The key is a
    sha256 over the geometry, the bins and the mask's bytes, so a second image (or file)
    with the same geometry gets the same :class:`QMap` object back at the cost of hashing
    its mask (a few ms for 4 Mpixels); the static binner of
    :func:`xpcsviewer.compute.detector.saxs.binner_for` is then reused too.
    """
    from xpcsviewer.compute.detector.qmap import compute_qmap

    grid = grid if grid is not None else PartitionGrid(1, 500)
    g = geometry
    h = hashlib.sha256(json.dumps(
        [list(map(int, shape)), float(g.energy_kev), float(g.detector_distance),
         float(g.pixel_size), float(g.beam_center_x), float(g.beam_center_y),
         sorted((k, repr(v)) for k, v in dataclasses.asdict(grid).items())]).encode())
    if mask is not None:
        m = np.ascontiguousarray(np.asarray(mask) > 0)
        h.update(m.data)
    key = h.hexdigest()
    with _PARTITIONS_LOCK:
        qm = _PARTITIONS.get(key)
        if qm is not None:
            _PARTITIONS.move_to_end(key)
            return qm
    q, phi = compute_qmap(shape, g.energy_kev, g.detector_distance, g.pixel_size,
                          g.beam_center_x, g.beam_center_y)
    qm = make_partition(q, phi, mask, grid, geometry, content_hash=False)
    with _PARTITIONS_LOCK:
        _PARTITIONS[key] = qm
        while len(_PARTITIONS) > _PARTITIONS_MAX:
            _PARTITIONS.popitem(last=False)
    return qm


def check_consistency(qmap: QMap) -> list[str]:
    """The partition's invariants that fail, as sentences (none: consistent); see
    :func:`xpcsviewer.compute.detector._partition_check.check_consistency`."""
    return _check_consistency(qmap, BLOCK_PIXELS)
