"""XSVS of a raw source (issue 46): one streaming pass for the photon-count histograms
per q-bin and exposure, their negative-binomial fits, beta(T) per q-bin, and the g2
fit of a result file of the same run beside it. The job of ``xpcsviewer xsvs``,
``correlate --xsvs`` and the Raw tab's XSVS view.

Memory: per pixel of a q-bin one row of (1 + levels) int64 (rounded up to 64 bytes),
the (bins x levels x (KMAX + 2)) histograms twice, and one block of hits or one chunk of
dense frames (and the next, read ahead). Nothing the size of the run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.model.xsvs import NB_FIELDS, VIS_FIELDS, XsvsResult
from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = ["XSVS_SUFFIX", "exposure_windows", "find_xsvs", "fit_xsvs", "read_xsvs",
           "write_xsvs", "xsvs_source"]

#: the XSVS file written beside a raw source or a result file: NAME + this
XSVS_SUFFIX = "_xsvs.h5"
#: hits per block of the pass
XSVS_EVENTS = 1 << 21
#: above this fraction of censored samples, an exposure of several frames is not fitted:
#: a sum of frames of which one was capped is not censored at a known count, and the
#: censored likelihood's bias grows ~1.5x that fraction (benchmarks/xsvs_fit.py)
CAPPED_MAX = 1e-3
#: the HDF5 group and its format version
GROUP = "xsvs"
VERSION = 1


def exposure_windows(n_frames: int, frame_time: float | None,
                     exposures: Any = None, levels: int | None = None) -> np.ndarray:
    """Frames per exposure: ``exposures`` (seconds, each a whole number of frames) or
    1, 2, 4, ... frames (``levels`` of them at most, while >= 8 whole windows remain)."""
    from xpcsviewer.compute.xsvs.histogram import MIN_WINDOWS, default_windows

    if exposures is None:
        return default_windows(n_frames, 64 if levels is None else int(levels), MIN_WINDOWS)
    t = np.asarray(exposures, dtype=np.float64).reshape(-1)
    if frame_time is None:
        raise ValueError("exposures in seconds need a frame time (--frame-time S)")
    if t.size == 0 or not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise ValueError(f"exposures must be > 0 s (got {t.tolist()})")
    m = np.rint(t / frame_time)
    bad = (m < 1) | (np.abs(m * frame_time - t) > 1e-6 * t)
    if np.any(bad):
        raise ValueError(f"exposures {t[bad].tolist()} s are not whole numbers of the frame "
                         f"time {frame_time:.6g} s")
    w = np.unique(m.astype(np.int64))
    if np.any(w > n_frames):
        raise ValueError(f"exposures longer than the run ({n_frames} frames of "
                         f"{frame_time:.6g} s)")
    return w


def find_xsvs(path: str | os.PathLike) -> Path | None:
    """The ``NAME_xsvs.h5`` beside ``path`` (NAME: its name less its suffix), or None."""
    p = Path(path)
    name = p.name if p.is_dir() else p.stem
    cand = p.with_name(name + XSVS_SUFFIX)
    return cand if cand.is_file() and cand != p else None


# ----------------------------------------------------------------------------- the pass
def _counts(src: Any, qm: Any, windows: np.ndarray, cap: int | None, cap_known: bool,
            mask: np.ndarray | None, progress: ProgressCallback | None,
            cancel: CancelToken | None) -> Any:
    from xpcsviewer.compute.rawstats.accumulate import CAP_LEVELS, infer_cap
    from xpcsviewer.compute.xsvs.histogram import XsvsAccumulator
    from xpcsviewer.model.events import prefetched

    shape = tuple(int(s) for s in src.frame_shape)
    valid = np.asarray(qm.mask) > 0 if mask is None else np.asarray(mask, dtype=bool)
    n = int(src.n_frames)
    report(progress, cancel, 0, n, "reading")
    if getattr(src, "sparse", False):
        blocks = prefetched(src.iter_events(max_events=XSVS_EVENTS))
        acc = None
        try:
            for blk in blocks:
                if acc is None:
                    if not cap_known and np.dtype(blk.value.dtype).kind in "iu" \
                            and blk.value.size:
                        # a Rigaku file does not store its mode: the smallest mode that
                        # holds the first block's counts. Too small only censors more
                        # (still unbiased); counts above it are censored too.
                        cap = infer_cap(float(blk.value.max()), CAP_LEVELS)
                    acc = XsvsAccumulator(shape, n, qm.dynamic_roi_map, valid=valid,
                                          windows=windows, counter_cap=cap)
                acc.add_hits(blk.frame, blk.pixel, blk.value)
                report(progress, cancel, int(blk.stop), n, f"frame {blk.stop} of {n}")
        finally:
            blocks.close()
        if acc is None:
            acc = XsvsAccumulator(shape, n, qm.dynamic_roi_map, valid=valid,
                                  windows=windows, counter_cap=cap)
    else:
        from xpcsviewer.jobs.inspect import feed_chunks

        acc = XsvsAccumulator(shape, n, qm.dynamic_roi_map, valid=valid, windows=windows,
                              counter_cap=cap)
        feed_chunks(src, acc.add_frames, progress, cancel)
    try:
        return acc.finish()
    except ValueError as exc:
        raise ValueError(f"{src.path}: {exc}") from None


def xsvs_source(path: str | os.PathLike, *, qmap: Any, frame_time: float | None = None,
                bin_time: float | None = None, exposures: Any = None,
                levels: int | None = None, counter_cap: int | None = None,
                mask: np.ndarray | None = None, result: str | os.PathLike | None = None,
                model: str = "single", spread_correction: bool = True,
                progress: ProgressCallback | None = None,
                cancel: CancelToken | None = None) -> XsvsResult:
    """Photon-count histograms of the raw source at ``path`` per q-bin and exposure,
    fitted (see :func:`fit_xsvs`).

    Parameters
    ----------
    path : path
        Any raw source :func:`~xpcsviewer.io.raw.open_raw_source` reads; a Timepix list
        without ``bin_time`` in its ticks (exposures from one tick up).
    qmap : path or QMap
        Its dynamic q-bins are the pixel groups; its mask the valid pixels.
    frame_time : float, optional
        Seconds per frame (else the file's).
    exposures : sequence of float, optional
        Seconds, each a whole number of frames (default: 1, 2, 4, ... frames).
    levels : int, optional
        At most this many default exposures.
    counter_cap : int, optional
        Count at which a pixel saturates in one frame (else the file's, the dtype's, or
        for a sparse source the smallest Rigaku mode that holds its first block).
    result : path, optional
        A result file of the same run: its g2 fit (as ``xpcsviewer fit``) beside.
    model : "single" or "stretched"
        The g1 of the beta(T) fits.
    spread_correction : bool
        Correct beta for the spread of the pixels' mean intensity within each q-bin
        (from the q-map's static partition, :func:`~xpcsviewer.compute.xsvs.histogram.
        mean_spread`); False: the pooled histogram's beta.

    Raises
    ------
    XpcsFileError
        Unreadable source or q-map, a q-map of another shape.
    ValueError
        A bad option; counts that are not whole numbers.
    Cancelled
    """
    from xpcsviewer.io.raw import open_raw_source
    from xpcsviewer.jobs.inspect import _frame_time, _qmap_of, counter_caps

    if qmap is None:
        raise ValueError("XSVS needs a q-map (--qmap Q): its q-bins are the pixels whose "
                         "counts are pooled")
    qm = _qmap_of(qmap)
    with open_raw_source(path, shape=tuple(qm.shape), bin_time=bin_time) as src:
        shape = tuple(int(s) for s in src.frame_shape)
        if tuple(qm.shape) != shape:
            raise XpcsFileError(path, f"frames are {shape[0]}x{shape[1]} but the q-map is "
                                f"{qm.shape[0]}x{qm.shape[1]}", src.dataset_path,
                                "frames of the q-map's detector shape")
        ft = _frame_time(src, path, frame_time)
        time_tag = bool(getattr(src, "time_tag", False))
        caps, cap = counter_caps(src, counter_cap)
        # only a Rigaku file hides its counter's mode; other sparse layouts store sums
        # (ESRF, ImageD11) or single photons (Timepix): no cap unless one is given
        infer = cap is None and bool(caps) and str(src.layout).startswith("rigaku")
        n = int(src.n_frames)
        windows = exposure_windows(n, ft, exposures, levels)
        counts = _counts(src, qm, windows, cap, not infer, mask, progress, cancel)
        layout = str(src.layout)
    nbins = counts.hist.shape[0]
    qd = np.asarray(qm.dynamic_q, dtype=np.float64)
    ids = np.arange(1, nbins + 1, dtype=np.int64)
    q = np.where(ids - 1 < qd.size, qd[np.minimum(ids - 1, max(qd.size - 1, 0))], np.nan) \
        if qd.size else np.full(nbins, np.nan)
    keep = counts.n_pixels > 0
    spread = None
    if spread_correction:
        from xpcsviewer.compute.xsvs.histogram import mean_spread

        static = getattr(qm, "static_roi_map", None)
        spread = mean_spread(counts.pixel_photons, counts.pixels, qm.dynamic_roi_map,
                             static, nbins)[keep]
    res = XsvsResult(
        source=str(path), layout=layout, detector_shape=shape, n_frames=n, frame_time=ft,
        time_tag=time_tag, counter_cap=counts.counter_cap, windows=counts.windows,
        n_windows=counts.n_windows, bin_ids=ids[keep], q=q[keep],
        n_pixels=counts.n_pixels[keep], hist=counts.hist[keep], cens=counts.cens[keep],
        photons=counts.photons[keep], moments=counts.moments[keep], mean_spread=spread,
        qmap_source=str(qmap) if isinstance(qmap, (str, os.PathLike)) else None,
        config={"exposures": None if exposures is None else list(map(float, exposures)),
                "levels": levels, "bin_time": bin_time, "model": model,
                "counter_cap": counter_cap, "spread_correction": bool(spread_correction)})
    report(progress, cancel, n, n, "fitting")
    return fit_xsvs(res, result=result, model=model)


# ----------------------------------------------------------------------------- the fits
def fit_xsvs(res: XsvsResult, *, result: str | os.PathLike | None = None,
             model: str = "single") -> XsvsResult:
    """Fill ``res.nb`` (negative binomial per bin and exposure), ``res.vis`` (beta(T)
    per bin, over the exposures fitted into a number: ok or misfit) and, given a result
    file, ``res.g2``."""
    from xpcsviewer.fitting.xsvs import fit_nb_table, fit_visibility

    tab = fit_nb_table(res.hist, res.cens)
    res.nb = {k: np.asarray(getattr(tab, k)) for k in NB_FIELDS}
    _capped(res)
    _beta_t(res)
    _unspread(res)
    nb_ = res.bin_ids.size
    vis: dict[str, list[Any]] = {k: [] for k in VIS_FIELDS}
    ex = res.exposure_s if res.frame_time is not None else res.windows.astype(np.float64)
    for b in range(nb_):
        beta, err = res.nb["beta_T"][b], res.nb["beta_T_error"][b]
        v = fit_visibility(ex, beta, err, model=model)
        for k in VIS_FIELDS:
            vis[k].append(getattr(v, k))
    res.vis = {k: np.asarray(vals) for k, vals in vis.items()}
    if res.frame_time is None:
        res.notes = (*res.notes, "no frame time: exposures and tau in frames")
    if result is not None:
        res.g2, note = _g2_beside(res, result)
        res.g2_source = str(result)
        if note:
            res.notes = (*res.notes, note)
    return res


def _beta_t(res: XsvsResult) -> None:
    """``nb["beta_T"]``: the visibility the beta(T) law is fitted to. From the counts'
    moments where no sample is censored (exact for any integrated speckle: the negative
    binomial's shape is only close past ~tau/2, and its maximum-likelihood beta then
    drifts from the visibility integral by a few %); else the fit's, where it gave one.
    Exposures said ``few_photons``, ``no_data`` or ``capped`` give none."""
    from xpcsviewer.fitting.xsvs import beta_from_moments

    st = res.nb["status"]
    n = res.hist.sum(axis=2) + res.cens.sum(axis=2)
    mom = res.moments if res.moments is not None else None
    beta = np.full(st.shape, np.nan)
    err = np.full(st.shape, np.nan)
    exact = res.cens.sum(axis=2) == 0
    if mom is not None:
        bm, em = beta_from_moments(n, mom[..., 0], mom[..., 1], mom[..., 2], mom[..., 3])
        use = exact & np.isin(st, ("ok", "misfit", "poisson"))
        beta, err = np.where(use, bm, beta), np.where(use, em, err)
    fitted = ~np.isfinite(beta) & np.isin(st, ("ok", "misfit"))
    res.nb["beta_T"] = np.where(fitted, res.nb["beta"], beta)
    res.nb["beta_T_error"] = np.where(fitted, res.nb["beta_error"], err)


def _unspread(res: XsvsResult) -> None:
    """beta and M of one pixel from the pooled histograms' (see ``correct_spread``)."""
    from xpcsviewer.compute.xsvs.histogram import correct_spread

    if res.mean_spread is None or not np.any(res.mean_spread > 0):
        return
    s2 = np.asarray(res.mean_spread, dtype=np.float64)[:, None]
    res.nb["beta_T"], res.nb["beta_T_error"] = correct_spread(
        res.nb["beta_T"], res.nb["beta_T_error"], s2)
    fitted = np.isin(res.nb["status"], ("ok", "misfit"))
    beta, err = correct_spread(res.nb["beta"], res.nb["beta_error"], s2)
    res.nb["beta"] = np.where(fitted, beta, res.nb["beta"])
    res.nb["beta_error"] = np.where(fitted, err, res.nb["beta_error"])
    with np.errstate(divide="ignore", invalid="ignore"):
        res.nb["M"] = np.where(fitted, 1.0 / res.nb["beta"], res.nb["M"])
        res.nb["M_error"] = np.where(fitted, res.nb["beta_error"] / res.nb["beta"] ** 2,
                                     res.nb["M_error"])


def _capped(res: XsvsResult) -> None:
    """Exposures of several frames with more than :data:`CAPPED_MAX` censored samples:
    status ``capped``, not fitted into a number."""
    n = res.hist.sum(axis=2) + res.cens.sum(axis=2)
    frac = res.cens.sum(axis=2) / np.maximum(n, 1)
    bad = (frac > CAPPED_MAX) & (res.windows[None, :] > 1)
    if not bad.any():
        return
    status = res.nb["status"].astype(object)
    reason = res.nb["reason"].astype(object)
    for b, lev in zip(*np.nonzero(bad), strict=True):
        status[b, lev] = "capped"
        reason[b, lev] = (f"{100 * frac[b, lev]:.2g} % of the windows of {res.windows[lev]} "
                          f"frames hold a frame at the counter cap ({res.counter_cap}): "
                          "their sum is not censored at a known count (one-frame "
                          "exposures are fitted with the cap)")
        for k in ("mean", "mean_error", "M", "M_error", "beta", "beta_error"):
            res.nb[k][b, lev] = np.nan
    res.nb["status"] = status.astype(str)
    res.nb["reason"] = reason


def _g2_beside(res: XsvsResult, result: str | os.PathLike) -> tuple[dict[str, np.ndarray],
                                                                      str]:
    """The g2 fit (``xpcsviewer fit``'s, model auto) of ``result`` for ``res``'s bins."""
    from xpcsviewer.jobs.fitfile import fit_result_files, record_bins

    out = fit_result_files([str(result)], model="auto")[0]
    if not out.ok:
        return {}, f"{result}: no g2 fit ({out.error})"
    rows = {int(r["bin"]): r for r in record_bins(out.record)}
    nb_ = res.bin_ids.size
    g2 = {k: np.full(nb_, np.nan) for k in ("contrast", "contrast_error", "tau",
                                           "tau_error")}
    status = np.full(nb_, "", dtype=object)
    moved = 0
    for b, bid in enumerate(res.bin_ids):
        r = rows.get(int(bid))
        if r is None:
            status[b] = "no g2"
            continue
        if np.isfinite(res.q[b]) and r.get("q") is not None and \
                abs(float(r["q"]) - res.q[b]) > 1e-6 * max(abs(res.q[b]), 1e-12):
            moved += 1
            status[b] = "other q"
            continue
        for k, rk in (("contrast", "contrast"), ("contrast_error", "contrast_err"),
                      ("tau", "tau_s"), ("tau_error", "tau_err_s")):
            if r.get(rk) is not None:
                g2[k][b] = float(r[rk])
        status[b] = str(r.get("status", ""))
    g2["status"] = status.astype(str)
    note = (f"{moved} q-bins of {result} are at another q: not compared" if moved else "")
    return g2, note


# ----------------------------------------------------------------------------- files
def write_xsvs(path: str | os.PathLike, res: XsvsResult) -> Path:
    """``.csv`` (:data:`~xpcsviewer.model.xsvs.CSV_COLUMNS`, one row per q-bin and
    exposure) or ``.h5``/``.hdf``/``.hdf5`` (everything), written atomically."""
    import csv

    from xpcsviewer.io.outputs import atomic_path, open_h5_output

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as fh:
            csv.writer(fh).writerows(res.csv_rows())
        return path
    if suffix not in (".h5", ".hdf", ".hdf5"):
        raise ValueError(f"{path}: XSVS is written as .h5/.hdf (all) or .csv (the table)")
    with atomic_path(path) as tmp, open_h5_output(tmp) as f:
        g = f.create_group(GROUP)
        meta = {"version": VERSION, "source": res.source, "layout": res.layout,
                "detector_shape": list(res.detector_shape), "n_frames": res.n_frames,
                "frame_time": res.frame_time, "time_tag": res.time_tag,
                "counter_cap": res.counter_cap, "g2_source": res.g2_source,
                "qmap_source": res.qmap_source, "notes": list(res.notes),
                "config": res.config}
        g.attrs["meta"] = json.dumps(meta)
        g.attrs["description"] = ("XSVS photon-count histograms per q-bin and exposure "
                                  "(hist: exact counts, cens: at least k; last column > "
                                  "kmax) and their fits; written by xpcsviewer")
        for k in ("windows", "n_windows", "bin_ids", "q", "n_pixels", "photons"):
            g.create_dataset(k, data=np.asarray(getattr(res, k)))
        g.create_dataset("exposure_s", data=res.exposure_s)
        for k in ("hist", "cens"):
            g.create_dataset(k, data=getattr(res, k), compression="gzip", shuffle=True)
        if res.mean_spread is not None:
            g.create_dataset("mean_spread", data=np.asarray(res.mean_spread))
        if res.moments is not None:
            g.create_dataset("moments", data=np.asarray(res.moments))
        for name, d in (("fit", res.nb), ("visibility", res.vis), ("g2", res.g2)):
            sub = g.create_group(name)
            for k, v in d.items():
                a = np.asarray(v)
                if a.dtype.kind in "OU":
                    a = a.astype(str).astype("S")
                sub.create_dataset(k, data=a)
    return path


def read_xsvs(path: str | os.PathLike) -> XsvsResult:
    """An XSVS file written by :func:`write_xsvs` (``.h5``)."""
    from xpcsviewer.io._h5 import open_h5

    try:
        with open_h5(path) as f:
            g = f.get(GROUP)
            if g is None or "meta" not in g.attrs:
                raise XpcsFileError(path, "no XSVS group", "/" + GROUP,
                                    "a file written by xpcsviewer xsvs")
            meta = json.loads(g.attrs["meta"])

            def sub(name: str) -> dict[str, np.ndarray]:
                out = {}
                for k, ds in (g.get(name) or {}).items():
                    a = ds[()]
                    out[k] = a.astype(str) if a.dtype.kind == "S" else a
                return out

            return XsvsResult(
                source=meta["source"], layout=meta["layout"],
                detector_shape=tuple(meta["detector_shape"]), n_frames=meta["n_frames"],
                frame_time=meta["frame_time"], time_tag=meta["time_tag"],
                counter_cap=meta["counter_cap"], windows=g["windows"][()],
                n_windows=g["n_windows"][()], bin_ids=g["bin_ids"][()], q=g["q"][()],
                n_pixels=g["n_pixels"][()], hist=g["hist"][()], cens=g["cens"][()],
                photons=g["photons"][()],
                mean_spread=g["mean_spread"][()] if "mean_spread" in g else None,
                moments=g["moments"][()] if "moments" in g else None,
                nb=sub("fit"), vis=sub("visibility"),
                g2=sub("g2"), g2_source=meta.get("g2_source"),
                qmap_source=meta.get("qmap_source"), notes=tuple(meta.get("notes", ())),
                config=meta.get("config", {}))
    except (KeyError, ValueError, TypeError) as exc:
        raise XpcsFileError(path, f"not a readable XSVS file ({exc})", "/" + GROUP,
                            "a file written by xpcsviewer xsvs") from None
