"""Which pixels make a bin's g2 wrong: drop-one leverage and hot-pixel scores.

From a per-pixel G2/IP/IF stack (the ``X_results_G2.hdf`` side file) and a partition,
for every pixel of every dynamic bin:

- **leverage**: the change of the bin's g2 at each delay when that one pixel is
  dropped, computed exactly from the bin sums minus the pixel's own terms, for all
  pixels at once. The bin g2 is the correlator's (:func:`combine_bin_sums`): per
  static bin ``g2_s = n_s ΣG2 / (ΣIP ΣIF)``, dynamic g2 = mean of its static bins'
  ``g2_s``. ``delta = g2(with) - g2(without)`` (positive: the pixel raises g2); the
  scalar ``leverage`` is ``max_k |delta_k| / sigma_k`` (sigma the bin's stated error,
  floored at its plateau value beyond the plateau delays).
- **hot pixels**: robust (median/MAD) z-scores of the pixel's mean intensity and of
  its own plateau contrast ``G2/(IP IF) - 1`` against the other pixels of its
  static (intensity) or dynamic (contrast) bin; across repeats of a run, the
  pixel's relative intensity against the same pixel in the other files
  (:func:`with_repeats`).

One pass over the delays, one plane in memory at a time (plus a few (P,) vectors):
a 3-megapixel stack streams through in bounded memory. Pure NumPy float64.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from xpcsviewer.compute._binning import PixelBins, select_pixels
from xpcsviewer.compute.multitau.pixels import ZERO_DENOMINATOR
from xpcsviewer.model.result import QMap
from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = [
    "TABLE_HEADER",
    "AuditOptions",
    "PixelAudit",
    "audit_pixels",
    "audit_summary",
    "audit_table_rows",
    "drop_one_delta",
    "group_median_mad",
    "ranked",
    "with_repeats",
]

PlaneReader = Callable[[int], tuple[np.ndarray, np.ndarray, np.ndarray]]

#: robust z above which a pixel is called hot
HOT_Z = 6.0
#: leverage (|delta g2| / error of the bin) above which a pixel is flagged
LEVERAGE_FLAG = 1.0
#: delays averaged for the plateau (the first ones: multi-tau level 0)
N_PLATEAU = 3
#: keep the per-delay deltas of all pixels up to this many numbers (64 MB)
MAX_CURVE_VALUES = 8_000_000
MAD_TO_SIGMA = 1.4826

TABLE_HEADER = ["file", "bin", "row", "col", "q", "leverage", "z", "reason"]


@dataclass(frozen=True)
class AuditOptions:
    """Thresholds and keeping of :func:`audit_pixels`.

    Attributes
    ----------
    n_plateau : int
        First delays averaged for ``delta_plateau`` and the pixel contrast.
    hot_z, leverage_flag : float
        Thresholds for ``hot`` and ``flagged``.
    keep_curves : bool, optional
        Keep ``delta`` (T, P); default: when T·P <= MAX_CURVE_VALUES.
    label : str
        The audit's name (its file's, in tables).
    """

    n_plateau: int = N_PLATEAU
    hot_z: float = HOT_Z
    leverage_flag: float = LEVERAGE_FLAG
    keep_curves: bool | None = None
    label: str = ""


@dataclass
class PixelAudit:
    """Output of :func:`audit_pixels` (per-pixel vectors are over the P audited pixels).

    Attributes
    ----------
    shape : (H, W)
    pixel_index : (P,) flat detector index of each audited pixel
    dynamic_id, static_id : (P,) 0-based bins
    q : (Nd,) q of each dynamic bin
    g2, g2_err : (T, Nd) the bins' g2 and error (as the correlator computes them)
    delta : (T, P) float64 or None
        g2(with) - g2(without the pixel) per delay; None above MAX_CURVE_VALUES.
    leverage : (P,) max over delays of |delta| / g2_err (after the plateau delays
        the error is floored at the plateau's); NaN where dropping the pixel empties
        its bin
    worst_delay : (P,) delay index of that maximum
    delta_plateau : (P,) mean delta over the plateau delays
    intensity : (P,) mean intensity (IP + IF) / 2 of the first delay
    contrast : (P,) the pixel's own plateau g2 - 1
    z_intensity, z_contrast : (P,) robust z within its static / dynamic bin
    z_repeat : (P,) robust z against repeats (NaN without repeats)
    hot, flagged : (P,) bool; hot = some z > hot_z; flagged = hot or leverage >
        leverage_flag
    hot_z, leverage_flag : the thresholds used
    label : str, the file the stack came from (for tables)
    """

    shape: tuple[int, int]
    pixel_index: np.ndarray
    dynamic_id: np.ndarray
    static_id: np.ndarray
    q: np.ndarray
    g2: np.ndarray
    g2_err: np.ndarray
    delta: np.ndarray | None
    leverage: np.ndarray
    worst_delay: np.ndarray
    delta_plateau: np.ndarray
    intensity: np.ndarray
    contrast: np.ndarray
    z_intensity: np.ndarray
    z_contrast: np.ndarray
    z_repeat: np.ndarray
    hot: np.ndarray
    flagged: np.ndarray
    hot_z: float = HOT_Z
    leverage_flag: float = LEVERAGE_FLAG
    label: str = ""

    @property
    def rows(self) -> np.ndarray:
        """(P,) detector row of each pixel."""
        return self.pixel_index // self.shape[1]

    @property
    def cols(self) -> np.ndarray:
        """(P,) detector column of each pixel."""
        return self.pixel_index % self.shape[1]

    def to_map(self, values: np.ndarray, fill: float = np.nan) -> np.ndarray:
        """(H, W) float64 image of a per-pixel vector (``fill`` elsewhere)."""
        out = np.full(self.shape[0] * self.shape[1], fill, dtype=np.float64)
        out[self.pixel_index] = values
        return out.reshape(self.shape)

    def flagged_mask(self, top: int | None = None) -> np.ndarray:
        """(H, W) bool: the flagged pixels (or the ``top`` ranked ones when given)."""
        out = np.zeros(self.shape[0] * self.shape[1], dtype=bool)
        sel = ranked(self, top) if top is not None else np.flatnonzero(self.flagged)
        out[self.pixel_index[sel]] = True
        return out.reshape(self.shape)

    def relative_intensity(self) -> np.ndarray:
        """(H, W) intensity / median of its static bin (NaN outside): for repeats."""
        med, _ = group_median_mad(self.intensity, self.static_id, int(self.static_id.max(
            initial=-1)) + 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            rel = self.intensity / med[self.static_id]
        return self.to_map(rel)


def drop_one_delta(terms: tuple[np.ndarray, np.ndarray, np.ndarray], pixels: PixelBins,
                   out: np.ndarray | None = None, work: tuple[np.ndarray, np.ndarray] | None
                   = None) -> tuple[np.ndarray, np.ndarray]:
    """Bin g2 and the exact change of it when each pixel alone is dropped, one delay.

    Parameters
    ----------
    terms : (g, a, b), each (P,) float64
        Per-pixel G2, IP, IF.
    pixels : PixelBins
        The pixels' 0-based static and dynamic bins, the pixels per static bin and the
        number of dynamic bins.
    out, work : (P,) float64, optional
        Buffers for ``delta`` and two temporaries (a 3-Mpixel plane then allocates
        nothing per pixel).

    Returns
    -------
    g2 : (Nd,) bin g2 (NaN for bins without pixels)
    delta : (P,) g2(with) - g2(without pixel); NaN where the pixel is its bin's only one
    """
    g, a, b = terms
    sid, did = pixels.static_id, pixels.dynamic_id
    static_count, n_dynamic = pixels.static_count, pixels.n_dynamic
    ns = static_count.size
    n_s = static_count.astype(np.float64)
    sg = np.bincount(sid, weights=g, minlength=ns)
    sa = np.bincount(sid, weights=a, minlength=ns)
    sb = np.bincount(sid, weights=b, minlength=ns)
    den = sa * sb
    den[den == 0] = ZERO_DENOMINATOR
    gs = n_s * sg / den
    s_ok = static_count > 0
    s2d = np.full(ns, n_dynamic, dtype=np.int64)
    s2d[sid] = did
    m = np.bincount(s2d[s_ok], minlength=n_dynamic + 1)[:n_dynamic].astype(np.float64)
    gsum = np.bincount(s2d[s_ok], weights=gs[s_ok], minlength=n_dynamic + 1)[:n_dynamic]
    with np.errstate(invalid="ignore", divide="ignore"):
        g2 = gsum / m
        # per static bin (small tables, gathered per pixel): the pixel leaves its static
        # bin's ratio of sums, which enters the dynamic mean with weight 1/m
        m_s = np.append(m, np.nan)[s2d]
        gs_m = gs / m_s
        c_m = (n_s - 1.0) / m_s
    delta = np.empty(g.size) if out is None else out
    t1, t2 = (np.empty(g.size), np.empty(g.size)) if work is None else work
    # mode="clip": the ids are valid, and take with out= buffers everything otherwise
    np.take(sa, sid, out=t1, mode="clip")
    t1 -= a
    np.take(sb, sid, out=t2, mode="clip")
    t2 -= b
    t1 *= t2  # the static bin's denominator without the pixel
    t1[t1 == 0] = ZERO_DENOMINATOR
    np.take(sg, sid, out=delta, mode="clip")
    delta -= g
    np.take(c_m, sid, out=t2, mode="clip")
    delta *= t2
    delta /= t1
    np.take(gs_m, sid, out=t2, mode="clip")
    np.subtract(t2, delta, out=delta)
    lone = static_count == 1
    if lone.any():
        # a pixel alone in its static bin takes the bin out of the dynamic mean (NaN
        # when it is the dynamic bin's only pixel too)
        with np.errstate(invalid="ignore", divide="ignore"):
            d_lone = g2[np.minimum(s2d, n_dynamic - 1)] - (
                gsum[np.minimum(s2d, n_dynamic - 1)] - gs) / (m_s - 1.0)
        d_lone[m_s == 1] = np.nan
        sel = lone[sid]
        delta[sel] = d_lone[sid[sel]]
    return g2, delta


def group_median_mad(values: np.ndarray, groups: np.ndarray, n_groups: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Median and MAD of ``values`` per group (NaN values ignored).

    Returns (n_groups,) arrays, NaN for groups without finite values.
    """
    v = np.asarray(values, dtype=np.float64)
    gr = np.asarray(groups, dtype=np.int64)
    ok = np.isfinite(v)
    v, gr = v[ok], gr[ok]
    # one stable sort by group (radix on small ints), then a median per group's
    # segment: the loop is over bins (hundreds), never over pixels
    gdt = np.int16 if n_groups < 2**15 else np.int64
    xs = v[np.argsort(gr.astype(gdt), kind="stable")]
    ends = np.cumsum(np.bincount(gr, minlength=n_groups)[:n_groups])
    med = np.full(n_groups, np.nan)
    mad = np.full(n_groups, np.nan)
    start = 0
    for j, end in enumerate(ends):
        if end > start:
            seg = xs[start:end]
            med[j] = np.median(seg)
            mad[j] = np.median(np.abs(seg - med[j]))
        start = end
    return med, mad


def _robust_z(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    m, mad = group_median_mad(values, groups, n_groups)
    # a floor: identical pixels (MAD 0) must not turn rounding into huge z
    scale = np.maximum(MAD_TO_SIGMA * mad, 1e-6 * np.abs(m) + 1e-300)
    return (values - m[groups]) / scale[groups]


def audit_pixels(
    stack: np.ndarray | PlaneReader,
    qmap: QMap,
    n_delays: int | None = None,
    correlated: np.ndarray | None = None,
    *,
    options: AuditOptions | None = None,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> PixelAudit:
    """Leverage and hot-pixel scores of every pixel of a per-pixel G2 stack.

    Parameters
    ----------
    stack : (T, 3, H, W) array or callable ``k -> (G2, IP, IF)``
        The side file's ``/G2IPIF`` (channels G2, IP, IF), or a reader of one delay
        (each (H, W)), called once per delay in order (bounded memory).
    qmap : QMap
        The partition and mask (the file's own, or the one to regroup with).
    n_delays : int
        T (required with a reader).
    correlated : (H, W) bool, optional
        Pixels that hold data (e.g. :func:`~xpcsviewer.compute.detector.regroup.correlated_pixels`).
    options : AuditOptions, optional
        Thresholds, plateau, kept curves and the label.
    progress, cancel :
        Reported / checked once per delay.

    Raises
    ------
    ValueError
        Shapes that do not match, no pixel in any bin, or a non-finite value in the
        stack (naming the delay).
    """
    opt = options if options is not None else AuditOptions()
    hot_z, leverage_flag, keep_curves = opt.hot_z, opt.leverage_flag, opt.keep_curves
    if callable(stack):
        if n_delays is None:
            raise ValueError("n_delays is required with a plane reader")
        read = stack
        t = int(n_delays)
    else:
        arr = np.asarray(stack)
        if arr.ndim != 4 or arr.shape[1] != 3:
            raise ValueError(f"per-pixel stack of shape {arr.shape}, expected (T, 3, H, W)")
        t = arr.shape[0]
        read = lambda k: (arr[k, 0], arr[k, 1], arr[k, 2])  # noqa: E731
    mask = np.asarray(qmap.mask) > 0
    if correlated is not None:
        mask = mask & np.asarray(correlated, dtype=bool)
    pb = select_pixels(qmap.dynamic_roi_map, qmap.static_roi_map, mask,
                       qmap.n_dynamic, qmap.n_static)
    if pb.n_pixels == 0:
        raise ValueError("no pixel of the partition to audit (mask and q-bins exclude all)")
    idx, sid, did, nd = pb.pixel_index, pb.static_id, pb.dynamic_id, pb.n_dynamic
    p = idx.size
    keep = (t * p <= MAX_CURVE_VALUES) if keep_curves is None else bool(keep_curves)
    delta_all = np.zeros((t, p)) if keep else None
    g2 = np.full((t, nd), np.nan)
    err = np.full((t, nd), np.nan)
    lev = np.zeros(p)
    worst = np.zeros(p, dtype=np.int64)
    plateau = np.zeros(p)
    contrast = np.zeros(p)
    intensity = np.zeros(p)
    d_count = pb.dynamic_count.astype(np.float64)
    n_plat = max(1, min(int(opt.n_plateau), t))
    floor = np.full(nd, np.inf)  # the bins' smallest error over the plateau delays
    full = p == pb.shape[0] * pb.shape[1]  # every pixel: no gather
    lone_px = np.flatnonzero(pb.dynamic_count[did] == 1)  # dropping it empties its bin
    gk, ak, bk, pix, dk, t1, t2 = (np.empty(p) for _ in range(7))  # reused per delay

    def pixels(x: np.ndarray, buf: np.ndarray) -> np.ndarray:
        flat = np.asarray(x).reshape(-1)
        np.copyto(buf, flat if full else flat.take(idx))
        return buf

    for k in range(t):
        report(progress, cancel, k, t, "auditing pixels")
        for x, buf in zip(read(k), (gk, ak, bk), strict=True):
            pixels(x, buf)
        if not np.isfinite(gk.sum() + ak.sum() + bk.sum()):  # one cheap test, then which
            for name, x in (("G2", gk), ("IP", ak), ("IF", bk)):
                if not np.isfinite(x).all():
                    raise ValueError(f"non-finite {name} at delay index {k}")
        g2k, _ = drop_one_delta((gk, ak, bk), pb, out=dk, work=(t1, t2))
        np.multiply(ak, bk, out=pix)
        pix[pix == 0] = ZERO_DENOMINATOR
        np.divide(gk, pix, out=pix)  # the per-pixel g2
        dsum = np.bincount(did, weights=pix, minlength=nd)[:nd]
        with np.errstate(invalid="ignore", divide="ignore"):
            dmean = dsum / d_count
            np.take(dmean, did, out=t1, mode="clip")
            np.subtract(pix, t1, out=t1)
            t1 *= t1
            dss = np.bincount(did, weights=t1, minlength=nd)[:nd]
            errk = np.sqrt(dss / d_count) / np.sqrt(d_count)
        g2[k], err[k] = g2k, errk
        dk[lone_px] = 0.0
        if keep:
            delta_all[k] = dk
        if k < n_plat:
            floor = np.fmin(floor, np.where(errk > 0, errk, np.inf))
            sig = errk
        else:
            # the last delays' stated errors shrink (few frame pairs): floored at the
            # plateau's, they cannot turn noise into leverage
            sig = np.fmax(errk, np.where(np.isfinite(floor), floor, 0.0))
        with np.errstate(invalid="ignore", divide="ignore"):
            inv = np.where(sig > 0, 1.0 / sig, 0.0)  # per bin
        score = np.abs(dk, out=t1)
        score *= np.take(inv, did, out=t2, mode="clip")
        worst[score > lev] = k
        np.maximum(lev, score, out=lev)
        if k < n_plat:
            plateau += dk / n_plat
            contrast += (pix - 1.0) / n_plat
        if k == 0:
            intensity = 0.5 * (ak + bk)  # a new array: ak is reused
    report(progress, cancel, t, t, "auditing pixels")
    lev[lone_px] = np.nan
    z_int = _robust_z(intensity, sid, pb.n_static)
    z_con = _robust_z(contrast, did, nd)
    hot = (z_int > hot_z) | (z_con > hot_z)
    flagged = hot | (np.nan_to_num(lev, nan=0.0) > leverage_flag)
    return PixelAudit(
        shape=pb.shape, pixel_index=idx, dynamic_id=did, static_id=sid,
        q=np.asarray(qmap.dynamic_q, dtype=np.float64)[:nd], g2=g2, g2_err=err,
        delta=delta_all, leverage=lev, worst_delay=worst, delta_plateau=plateau,
        intensity=intensity, contrast=contrast, z_intensity=z_int, z_contrast=z_con,
        z_repeat=np.full(p, np.nan), hot=hot, flagged=flagged, hot_z=float(hot_z),
        leverage_flag=float(leverage_flag), label=opt.label)


def with_repeats(audits: Sequence[PixelAudit]) -> list[PixelAudit]:
    """The audits of repeats of one run, each with ``z_repeat`` against the others.

    A pixel's relative intensity (its intensity over its static bin's median) is
    compared with the median of the same pixel over all the files; the deviations
    are scaled by their MAD over the file's pixels. A pixel hot in one repeat only
    (a transient) shows here even when its neighbourhood is hot too. Needs at least
    3 audits of one detector shape; otherwise they are returned unchanged.
    """
    if len(audits) < 3 or len({a.shape for a in audits}) != 1:
        return list(audits)
    rel = np.stack([a.relative_intensity() for a in audits])  # (F, H, W)
    with warnings.catch_warnings():  # pixels outside every bin are NaN in all files
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = np.nanmedian(rel, axis=0)
    out = []
    for a, r in zip(audits, rel, strict=True):
        dev = (r - ref).reshape(-1)[a.pixel_index]
        ok = np.isfinite(dev)
        if ok.sum() < 2:
            out.append(a)
            continue
        mad = np.median(np.abs(dev[ok] - np.median(dev[ok])))
        scale = max(MAD_TO_SIGMA * mad, 1e-6)
        z = np.where(ok, (dev - np.median(dev[ok])) / scale, np.nan)
        hot = a.hot | (np.nan_to_num(z, nan=0.0) > a.hot_z)
        flagged = a.flagged | hot
        out.append(dataclasses.replace(a, z_repeat=z, hot=hot, flagged=flagged))
    return out


def ranked(audit: PixelAudit, top: int | None = None) -> np.ndarray:
    """Pixel positions (into the P vectors) by leverage, largest first (NaN last)."""
    lev = np.nan_to_num(audit.leverage, nan=-1.0)
    order = np.argsort(-lev, kind="stable")
    return order if top is None else order[: max(int(top), 0)]


def _reasons(audit: PixelAudit, i: int) -> str:
    r = []
    if not np.isfinite(audit.leverage[i]):
        r.append("only pixel of its bin")
    elif audit.leverage[i] > audit.leverage_flag:
        r.append(f"leverage {audit.leverage[i]:.3g} error bars at delay index "
                 f"{int(audit.worst_delay[i])}")
    if audit.z_intensity[i] > audit.hot_z:
        r.append("intensity above its q-bin")
    if audit.z_contrast[i] > audit.hot_z:
        r.append("own contrast above its q-bin")
    if np.isfinite(audit.z_repeat[i]) and audit.z_repeat[i] > audit.hot_z:
        r.append("intensity above its repeats")
    return "; ".join(r)


def audit_table_rows(audit: PixelAudit, top: int | None = None,
                     flagged_only: bool = False) -> list[list[Any]]:
    """Rows of the ranked table (header :data:`TABLE_HEADER` first), by leverage.

    ``z`` is the largest of the pixel's z-scores; ``bin`` the q-bin number (1-based, as
    the tabs, the fit JSON's ``bins`` and the report number them); ``reason`` says why a
    row is flagged (empty otherwise).
    """
    order = ranked(audit)
    if flagged_only:
        order = order[audit.flagged[order]]
    if top is not None:
        order = order[: max(int(top), 0)]
    zs = np.fmax(np.fmax(audit.z_intensity, audit.z_contrast),
                 np.nan_to_num(audit.z_repeat, nan=-np.inf))
    rows: list[list[Any]] = [list(TABLE_HEADER)]
    rr, cc = audit.rows, audit.cols
    for i in order:
        lev = audit.leverage[i]
        rows.append([audit.label, int(audit.dynamic_id[i]) + 1, int(rr[i]), int(cc[i]),
                     float(audit.q[audit.dynamic_id[i]]),
                     None if not np.isfinite(lev) else float(lev), float(zs[i]),
                     _reasons(audit, i)])
    return rows


def audit_summary(audit: PixelAudit, top: int = 10) -> dict[str, Any]:
    """A few numbers for a report's data-quality section.

    ``file``, ``pixels`` audited, ``flagged`` and ``hot`` counts, ``max_leverage``
    (error bars; None without a finite one), ``bins_flagged`` (sorted 1-based q-bin numbers
    holding a flagged pixel), the thresholds, and ``rows``: the table rows (header
    first) of the flagged pixels, at most ``top``.
    """
    lev = audit.leverage[np.isfinite(audit.leverage)]
    return {
        "file": audit.label,
        "pixels": int(audit.pixel_index.size),
        "flagged": int(audit.flagged.sum()),
        "hot": int(audit.hot.sum()),
        "max_leverage": float(lev.max()) if lev.size else None,
        "bins_flagged": sorted({int(b) + 1 for b in audit.dynamic_id[audit.flagged]}),
        "hot_z": audit.hot_z,
        "leverage_flag": audit.leverage_flag,
        "rows": audit_table_rows(audit, top=top, flagged_only=True),
    }
