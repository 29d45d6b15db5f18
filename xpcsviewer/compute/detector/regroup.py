"""Regroup g2 from a file's per-pixel G2/IP/IF stack with another partition or mask.

The stack (``/xpcs/multitau/unnormalized_G2``, read one delay at a time) holds, per
pixel and delay, the unnormalised G2 and the past/future means IP, IF. Binning it
with a partition is exactly the correlator's own reduction
(:mod:`xpcsviewer.compute.multitau.pixels`: static smoothing by a ratio of sums,
dynamic g2 = mean of the static g2 inside it, error = spread of the per-pixel
``G2/(IP IF)`` / √n), so regrouping a file with its own partition gives back its
g2 and errors (to the float32 precision of the stored stack).

Only pixels the file correlated can be regrouped: a new partition is restricted to
them (:func:`~xpcsviewer.compute.detector.partition.restrict_partition`), and bins left
without such pixels are dropped. Pure functions over NumPy float64; the file-level job
shared by ``xpcsviewer regroup`` and the G2 tab is :mod:`xpcsviewer.jobs.regroup`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from xpcsviewer.backends import get_backend
from xpcsviewer.compute.detector.partition import check_consistency, restrict_partition
from xpcsviewer.compute.inputs import Partition
from xpcsviewer.compute.multitau.pixels import combine_bin_sums, reduce_pixel_terms
from xpcsviewer.model.result import Multitau, QMap, XpcsResult
from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = [
    "Regrouped",
    "correlated_pixels",
    "regroup_g2",
    "regrouped_result",
]

PlaneReader = Callable[[int], tuple[np.ndarray, np.ndarray, np.ndarray]]


@dataclass
class Regrouped:
    """Output of :func:`regroup_g2`.

    Attributes
    ----------
    qmap : QMap
        The partition actually used (restricted to the correlated pixels).
    g2, g2_err : (T, Nd) float64
        NaN where a bin has no pixel (cannot happen after the restriction) .
    g2_static : (T, Ns) float64
        Static-bin g2 (the smoothing step).
    n_pixels : (Nd,) int
        Pixels per dynamic bin.
    """

    qmap: QMap
    g2: np.ndarray
    g2_err: np.ndarray
    g2_static: np.ndarray
    n_pixels: np.ndarray


def correlated_pixels(qmap: QMap) -> np.ndarray:
    """(H, W) bool: the pixels a correlator with this partition correlated."""
    return ((np.asarray(qmap.mask) > 0) & (np.asarray(qmap.dynamic_roi_map) > 0)
            & (np.asarray(qmap.static_roi_map) > 0))


def regroup_g2(
    read_plane: PlaneReader,
    n_delays: int,
    qmap: QMap,
    correlated: np.ndarray | None = None,
    *,
    backend: Any = None,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> Regrouped:
    """g2 and its error for every delay of a per-pixel stack, binned with ``qmap``.

    Parameters
    ----------
    read_plane : callable ``k -> (G2, IP, IF)``
        Each (H, W) float; called once per delay, in order.
    n_delays : int
        T.
    qmap : QMap
        The partition (its mask applies).
    correlated : (H, W) bool, optional
        Pixels that hold data (default: all); the partition is restricted to them.
    backend : BackendProtocol, optional
        For the bin reductions (default NumPy: one plane at a time is I/O-bound).
    progress, cancel :
        Reported / checked once per delay.

    Returns
    -------
    Regrouped
    """
    be = backend if backend is not None else get_backend("numpy")
    qm = qmap if correlated is None else restrict_partition(qmap, correlated)
    problems = check_consistency(qm)
    if problems:
        raise ValueError("inconsistent partition: " + "; ".join(problems))
    pb = Partition.of(qm).pixels()
    nd, ns = pb.n_dynamic, pb.n_static
    sid, did = be.asarray(pb.static_id), be.asarray(pb.dynamic_id)
    d_count = be.asarray(pb.dynamic_count.astype(np.float64))
    g2 = np.full((n_delays, nd), np.nan)
    err = np.full((n_delays, nd), np.nan)
    g2s = np.full((n_delays, ns), np.nan)
    idx = pb.pixel_index
    for k in range(int(n_delays)):
        report(progress, cancel, k, n_delays, "regrouping g2")
        planes = read_plane(k)
        terms = [be.asarray(np.asarray(a, dtype=np.float64).reshape(-1)[idx][None, :])
                 for a in planes]
        out = reduce_pixel_terms(be, tuple(terms), sid, did, d_count, ns, nd)
        s_g2, s_ip, s_if, _dsum, dss = (np.asarray(be.to_numpy(o)) for o in out)
        g2[k:k + 1], err[k:k + 1], g2s[k:k + 1] = combine_bin_sums(
            s_g2, s_ip, s_if, dss, pb.static_count, pb.dynamic_count,
            pb.static_to_dynamic, nd)
    report(progress, cancel, n_delays, n_delays, "regrouping g2")
    return Regrouped(qm, g2, err, g2s, pb.dynamic_count.copy())


def regrouped_result(source: XpcsResult, reg: Regrouped, saxs_2d: np.ndarray,
                     note: str = "") -> XpcsResult:
    """A multi-tau result like ``source`` with the regrouped g2 and partition.

    SAXS-1D is the static-bin mean of ``saxs_2d`` with the new partition (as the
    correlator defines it); its time segments cannot be re-binned (the old ones are
    per old static bin), so the file holds one segment, the whole run (the viewers
    require the dataset). Partial g2 and two-time results belong to the old bins and
    are left out. The config records where it came from.
    """
    from xpcsviewer.compute.detector.saxs import static_bin_mean

    mt0 = source.multitau
    if mt0 is None:
        raise ValueError(f"{source.label}: no multi-tau result to regroup")
    qm = reg.qmap
    cfg = dict(mt0.config)
    cfg.update(regrouped_from=str(source.path), regroup_note=note or "regrouped g2")
    mt = Multitau(
        delay_frames=mt0.delay_frames.copy(), tau=mt0.tau.copy(),
        g2=np.nan_to_num(reg.g2, nan=0.0), g2_err=np.nan_to_num(reg.g2_err, nan=0.0),
        valid=np.isfinite(reg.g2) & ~((reg.g2 == 0) & (reg.g2_err == 0)),
        t0_eff=mt0.t0_eff, stride_frame=mt0.stride_frame, avg_frame=mt0.avg_frame,
        config=cfg,
    )
    saxs = static_bin_mean(np.asarray(saxs_2d, dtype=np.float64), qm.static_roi_map,
                           qm.n_static, qm.mask, backend=get_backend("numpy"))
    meta = {k: v for k, v in source.metadata.items() if not k.startswith("xpcs/")}
    saxs = np.nan_to_num(saxs, nan=0.0)
    return dataclasses.replace(
        source, analysis_type=("Multitau",), layout="nexus", qmap=qm,
        saxs_1d=saxs, saxs_1d_segments=saxs[None, :], multitau=mt,
        twotime=None, metadata=meta, warnings=[])
