"""Readers of the analysis groups: multi-tau g2, two-time results and the metadata.

Values that cannot be measurements are masked with a note in
``XpcsResult.warnings`` (missing points, outliers, negative errors); layouts
that cannot be read (delays that are not positive and increasing, g2 of the
wrong shape, a config value that is not a count) raise ``XpcsFileError``
naming the dataset.
"""

from __future__ import annotations

import contextlib
from typing import Any

import h5py
import numpy as np

from xpcsviewer.io._h5 import (
    MAX_DELAYS,
    _array,
    _check_finite,
    _count,
    _decode,
    _exists,
    _number,
)
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.results._schema import _META_MAX_ELEMENTS, C2_GROUP, G2_STACK_NAMES, MT, TT
from xpcsviewer.io.results.g2_quality import SUSPECT_ERROR_RATIO, suspect_errors
from xpcsviewer.model.result import Multitau, QMap, Twotime

# --------------------------------------------------------------------------- metadata
#: Units the APS 8-ID-I result format fixes for fields its files write without a
#: ``units`` attribute (../shared/docs/result-file-format.md); a stated one wins.
KNOWN_UNITS = {
    "instrument/detector_1/distance": "m",
    "instrument/detector_1/x_pixel_size": "m",
    "instrument/detector_1/y_pixel_size": "m",
    "instrument/detector_1/beam_center_x": "pixel",
    "instrument/detector_1/beam_center_y": "pixel",
    "instrument/detector_1/count_time": "s",
    "instrument/detector_1/frame_time": "s",
    "instrument/detector_1/rotation_x": "deg",
    "instrument/detector_1/rotation_y": "deg",
    "instrument/detector_1/rotation_z": "deg",
    "instrument/detector_1/flightpath_swing": "deg",
    "instrument/detector_1/flightpath_swing_vertical": "deg",
    "instrument/incident_beam/incident_energy": "keV",
    "multitau/config/bin_time_s": "s",
    "twotime/config/bin_time_s": "s",
}


def _known_unit(key: str) -> str | None:
    for tail, unit in KNOWN_UNITS.items():
        if key.endswith("/" + tail):
            return unit
    return None


def _flatten(group: h5py.Group, prefix: str, out: dict[str, Any]) -> None:
    def visit(name: str, obj: Any) -> None:
        if not isinstance(obj, h5py.Dataset):
            return
        key = f"{prefix}/{name}"
        units = obj.attrs.get("units", obj.attrs.get("unit"))
        if units is None:
            units = _known_unit(key)
        if units is not None:
            key += f" ({_decode(units)})"
        try:
            if obj.size <= _META_MAX_ELEMENTS:
                val = _decode(obj[()])
                if isinstance(val, np.ndarray):
                    val = val.tolist()
            else:
                val = f"<array {obj.shape} {obj.dtype}>"
        except (OSError, TypeError, ValueError):
            val = "<unreadable>"
        out[key] = val

    with contextlib.suppress(KeyError, RuntimeError):
        group.visititems(visit)


def _metadata(f: h5py.File, layout: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    groups = (
        ["/entry", f"{MT}/config", f"{TT}/config"]
        if layout == "nexus"
        else ["/measurement", "/xpcs"]
    )
    for g in groups:
        if _exists(f, g) and isinstance(f[g], h5py.Group):
            _flatten(f[g], g.lstrip("/"), out)
    if layout == "legacy":
        out = {
            k: v
            for k, v in out.items()
            if not (isinstance(v, str) and v.startswith("<array"))
        }
    return out


def _sample(f: h5py.File) -> tuple[dict[str, Any], dict[str, str]]:
    values: dict[str, Any] = {}
    units: dict[str, str] = {}
    if not (_exists(f, "/entry/sample") and isinstance(f["/entry/sample"], h5py.Group)):
        return values, units

    def visit(name: str, obj: Any) -> None:
        if isinstance(obj, h5py.Dataset) and obj.size <= _META_MAX_ELEMENTS:
            try:
                v = _decode(obj[()])
            except (OSError, TypeError, ValueError):
                return  # sample notes are optional: an unreadable one is left out
            values[name] = v.tolist() if isinstance(v, np.ndarray) else v
            u = obj.attrs.get("units")
            if u is not None:
                units[name] = str(_decode(u))

    with contextlib.suppress(KeyError, RuntimeError):
        f["/entry/sample"].visititems(visit)
    return values, units


def _config(f: h5py.File, path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if _exists(f, path) and isinstance(f[path], h5py.Group):
        for k in f[path]:
            try:
                ds = f[path][k]
                if isinstance(ds, h5py.Dataset) and ds.size <= _META_MAX_ELEMENTS:
                    v = _decode(ds[()])
                    out[k] = v.tolist() if isinstance(v, np.ndarray) else v
            except (KeyError, OSError, RuntimeError, TypeError, ValueError):
                continue  # a dangling link or damaged entry: the value stays unknown
    return out


def _frame_counts(f: h5py.File, group: str, config: dict[str, Any]) -> tuple[int, int]:
    """stride_frame and avg_frame of a config group: whole numbers >= 1."""
    return (
        _count(f, f"{group}/stride_frame", config.get("stride_frame")),
        _count(f, f"{group}/avg_frame", config.get("avg_frame")),
    )


def _delays(f: h5py.File, path: str) -> tuple[np.ndarray, np.ndarray]:
    """(raw dataset values, flattened) of a delay list: 1..MAX_DELAYS finite,
    positive, strictly increasing delays."""
    exp = "delays (T,): finite, positive, strictly increasing"
    raw = _array(
        f, path, kinds="iuf", ndim=(1, 2), expected=exp, max_elements=MAX_DELAYS
    )
    tau = np.asarray(raw, dtype=np.float64).ravel()
    problem = None
    if tau.size == 0:
        problem = "no delays (empty list)"
    elif not np.isfinite(tau).all():
        problem = f"{int((~np.isfinite(tau)).sum())} delays are NaN or Inf"
    elif (tau <= 0).any():
        problem = (
            f"{int((tau <= 0).sum())} delays are zero or negative (first {tau.min():g})"
        )
    elif (np.diff(tau) <= 0).any():
        i = int(np.flatnonzero(np.diff(tau) <= 0)[0])
        what = "repeats" if tau[i + 1] == tau[i] else "decreases"
        problem = (
            f"the delay list {what} at index {i + 1} ({tau[i]:g} then {tau[i + 1]:g})"
        )
    if problem:
        raise XpcsFileError(f.filename, problem, dataset=path, expected=exp)
    return raw, tau


# --------------------------------------------------------------------------- result
def _g2_valid(g2: np.ndarray, err: np.ndarray) -> np.ndarray:
    """False where a point is missing: no photons (g2 == 0 and err == 0) or non-finite."""
    return np.isfinite(g2) & np.isfinite(err) & ~((g2 == 0) & (err == 0))


#: g2 - 1 of a normalised intensity correlation is at most the contrast (<= 1);
#: beyond twice that a point is not a measurement (boost_corr's empty static bins
#: give values up to ~300).
G2_MAX = 3.0
#: An isolated spike: farther than max(SPIKE_FLOOR, SPIKE_K x the curve's noise)
#: from the median of its valid neighbours (two on each side).
SPIKE_FLOOR = 1.0
SPIKE_K = 6.0


def _nanmedian_rows(a: np.ndarray) -> np.ndarray:
    """``np.nanmedian(a, axis=0)`` for a few rows (NaN where a column has no value):
    numpy's small-array path goes through masked arrays, ~0.3 ms per call."""
    s = np.sort(a, axis=0)  # NaN last
    k = np.isfinite(a).sum(axis=0)
    lo = np.take_along_axis(s, np.maximum((k - 1) // 2, 0)[None], axis=0)[0]
    hi = np.take_along_axis(s, (k // 2)[None].clip(max=a.shape[0] - 1), axis=0)[0]
    return 0.5 * (lo + hi)


def g2_outliers(g2: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Points of (T, N) g2 curves that cannot be measurements, among ``valid`` ones.

    Out of the physical range (g2 < 0 or g2 > :data:`G2_MAX`), or isolated spikes:
    more than ``max(SPIKE_FLOOR, SPIKE_K * s)`` from the median of the two valid
    neighbours on each side, where ``s`` is the curve's robust point-to-point noise
    (1.4826 x median |first difference| / sqrt 2). The floor of 1 keeps real decays
    (contrast <= 1) and ordinary noise of photon-starved curves.
    """
    g2 = np.asarray(g2, dtype=np.float64)
    bad = valid & ((g2 < 0) | (g2 > G2_MAX))
    keep = valid & ~bad
    for j in range(g2.shape[1]):
        idx = np.flatnonzero(keep[:, j])
        if idx.size < 5:
            continue
        y = g2[idx, j]
        s = 1.4826 * float(np.median(np.abs(np.diff(y)))) / np.sqrt(2.0)
        thr = max(SPIKE_FLOOR, SPIKE_K * s)
        # neighbours at offsets -2, -1, +1, +2 (edge-padded; NaN where absent)
        pad = np.concatenate([[np.nan, np.nan], y, [np.nan, np.nan]])
        nb = np.stack([pad[k : k + y.size] for k in (0, 1, 3, 4)])
        with np.errstate(invalid="ignore"):
            bad[idx[np.abs(y - _nanmedian_rows(nb)) > thr], j] = True
    return bad


def _read_multitau(
    f: h5py.File, layout: str, frame_time: float, nd: int, warnings: list[str]
) -> Multitau:
    if layout == "nexus":
        p_tau, p_g2, p_err = (
            f"{MT}/delay_list",
            f"{MT}/normalized_g2",
            f"{MT}/normalized_g2_err",
        )
        config = _config(f, f"{MT}/config")
        stride, avg = _frame_counts(f, f"{MT}/config", config)
    else:
        p_tau, p_g2, p_err = (
            "/exchange/tau",
            "/exchange/norm-0-g2",
            "/exchange/norm-0-stderr",
        )
        config = {}
        stride, avg = _legacy_counts(f)
    tau_raw, tau_frames = _delays(f, p_tau)
    t = len(tau_frames)
    exp = f"float (T, Nd) = ({t}, {nd}): T from the delay list, Nd from the q-map"
    g2 = _array(
        f, p_g2, kinds="iuf", ndim=2, expected=exp, shape=(t, nd), dtype=np.float64
    )
    if _exists(f, p_err):
        err = _array(
            f, p_err, kinds="iuf", ndim=2, expected=exp, shape=(t, nd), dtype=np.float64
        )
    else:
        warnings.append(f"{p_err} missing: errors set to NaN")
        err = np.full_like(g2, np.nan)
    _check_finite(warnings, p_g2, g2)
    _check_finite(warnings, p_err, err)
    negative = err < 0
    if negative.any():
        # An error bar cannot be negative: the point's uncertainty is unknown.
        err[negative] = np.nan
        warnings.append(
            f"{p_err}: {int(negative.sum())} negative errors are impossible; "
            "those points are masked"
        )
    valid = _g2_valid(g2, err)
    missing = int((~valid).sum())
    if missing:
        warnings.append(
            f"g2: {missing} of {g2.size} points are missing data (no photons or "
            "non-finite) and are masked"
        )
    wild = g2_outliers(g2, valid)
    if wild.any():
        valid &= ~wild
        warnings.append(
            f"g2: {int(wild.sum())} points are outliers (g2 < 0, g2 > {G2_MAX:g}, or "
            "isolated spikes) and are masked"
        )
    suspect = suspect_errors(err, valid)
    if suspect.any():
        warnings.append(
            f"g2_err: {int(suspect.sum())} points have an error below "
            f"{SUSPECT_ERROR_RATIO:g}x their neighbours' (e.g. the last delay); they are "
            "left out of fits by default"
        )
    if (
        layout == "legacy"
        and tau_raw.dtype.kind == "f"
        and np.any(tau_frames != np.round(tau_frames))
    ):
        # Old files sometimes stored delays in seconds.
        delay_frames = np.round(tau_frames / frame_time).astype(np.int64)
        if (np.diff(delay_frames) <= 0).any() or delay_frames[0] < 1:
            raise XpcsFileError(
                f.filename,
                "delays in seconds do not give distinct frame delays",
                dataset=p_tau,
                expected="delays of at least one frame time, increasing",
            )
    else:
        delay_frames = tau_frames.astype(np.int64)
    t0_eff = frame_time * stride * avg
    mt = Multitau(
        delay_frames=delay_frames,
        tau=delay_frames * t0_eff,
        g2=g2,
        g2_err=err,
        valid=valid,
        t0_eff=t0_eff,
        stride_frame=stride,
        avg_frame=avg,
        config=config,
        err_suspect=suspect,
    )
    if layout == "nexus":
        for stem in ("normalized_g2_partial", "normalized_g2_segments"):
            if _exists(f, f"{MT}/{stem}"):
                part = _array(
                    f,
                    f"{MT}/{stem}",
                    kinds="iuf",
                    ndim=3,
                    expected=f"(P, {t}, {nd})",
                    shape=(None, t, nd),
                    dtype=np.float64,
                )
                part[part == 0] = np.nan  # zeros are snapshots without photons
                mt.g2_partial = part
                np_ = part.shape[0]
                if _exists(f, f"{MT}/{stem}_err"):
                    mt.g2_partial_err = _array(
                        f,
                        f"{MT}/{stem}_err",
                        ndim=3,
                        expected=f"({np_}, {t}, {nd})",
                        shape=part.shape,
                        dtype=np.float64,
                    )
                if _exists(f, f"{MT}/{stem}_labels"):
                    mt.g2_partial_labels = _array(
                        f,
                        f"{MT}/{stem}_labels",
                        expected=f"({np_},)",
                        max_elements=np_,
                    ).ravel()
                break
        mt.has_unnormalized_G2 = any(_exists(f, f"{MT}/{n}") for n in G2_STACK_NAMES)
    else:
        mt.has_unnormalized_G2 = _exists(f, "/exchange/G2") or _exists(
            f, "/exchange/G2IPIF"
        )
    return mt


def _legacy_counts(f: h5py.File) -> tuple[int, int]:
    return tuple(
        _count(f, p, _number(f, p, required=False, default=1))
        for p in ("/xpcs/stride_frames", "/xpcs/avg_frames")
    )


def _c2_names(f: h5py.File, layout: str) -> tuple[str, list[str]]:
    group = C2_GROUP if layout == "nexus" else "/exchange/C2T_all"
    prefix = "c2_" if layout == "nexus" else "g2_"
    names = sorted(
        n for n in f[group] if n.startswith(prefix) and n[len(prefix) :].isdigit()
    )
    return group, names


def _read_twotime(
    f: h5py.File, layout: str, frame_time: float, qm: QMap, warnings: list[str]
) -> Twotime:
    group, names = _c2_names(f, layout)
    if not names:
        raise XpcsFileError(
            f.filename, "no c2 maps", dataset=group, expected="datasets c2_00001, ..."
        )
    shape0 = f[f"{group}/{names[0]}"].shape
    if len(shape0) != 2 or shape0[0] != shape0[1]:
        raise XpcsFileError(
            f.filename,
            f"has shape {shape0}",
            dataset=f"{group}/{names[0]}",
            expected="a square (N, N) map",
        )
    n = int(shape0[0])
    if layout == "nexus":
        config = _config(f, f"{TT}/config")
        stride, avg = _frame_counts(f, f"{TT}/config", config)
        if _exists(f, f"{TT}/processed_bins"):
            bins = _array(
                f,
                f"{TT}/processed_bins",
                kinds="iuf",
                expected=f"({len(names)},) bin values, one per c2 map",
                max_elements=len(names),
            ).ravel()
            bins = bins.astype(np.int64)
        else:
            warnings.append(
                f"{TT}/processed_bins missing: taking the map numbers as bins"
            )
            bins = np.array([int(x.split("_")[-1]) for x in names], dtype=np.int64)
    else:
        config = {}
        stride, avg = _legacy_counts(f)
        bins = np.array([int(x.split("_")[-1]) for x in names], dtype=np.int64)
    if len(bins) != len(names):
        raise XpcsFileError(
            f.filename,
            f"{len(bins)} processed bins but {len(names)} c2 maps",
            dataset=f"{TT}/processed_bins",
            expected="one bin per c2 map",
        )
    if bins.size and (bins.min() < 1 or bins.max() > qm.n_dynamic):
        raise XpcsFileError(
            f.filename,
            f"bins {bins.min()}..{bins.max()}",
            dataset=f"{TT}/processed_bins",
            expected=f"dynamic bin values 1..{qm.n_dynamic}",
        )
    tt = Twotime(
        processed_bins=bins,
        map_names=names,
        n_frames=n,
        t0=frame_time * stride * avg,
        stride_frame=stride,
        avg_frame=avg,
        config=config,
    )
    p_full = f"{TT}/normalized_g2" if layout == "nexus" else "/exchange/g2full"
    p_seg = (
        f"{TT}/normalized_g2_segments" if layout == "nexus" else "/exchange/g2partials"
    )
    npb = len(bins)
    if _exists(f, p_full):
        g = _array(
            f,
            p_full,
            kinds="iuf",
            ndim=(1, 2),
            expected=f"(N, Np) = ({n}, {npb})",
            max_elements=max(1, n * npb),
        )
        g = g.reshape(-1, 1) if g.ndim == 1 else g
        if g.shape != (n, npb):
            raise XpcsFileError(
                f.filename,
                f"has shape {g.shape}",
                dataset=p_full,
                expected=f"(N, Np) = ({n}, {npb})",
            )
        tt.g2_full = g.T.astype(np.float64)
        _check_finite(warnings, p_full, tt.g2_full)
    if _exists(f, p_seg):
        s = _array(
            f,
            p_seg,
            kinds="iuf",
            ndim=(2, 3),
            expected=f"(N//5, 5, Np) = ({n // 5}, 5, {npb})",
            max_elements=max(1, (n // 5 + 1) * 5 * npb),
        )
        s = s[..., None] if s.ndim == 2 else s
        if s.shape[1:] != (5, npb):
            raise XpcsFileError(
                f.filename,
                f"has shape {s.shape}",
                dataset=p_seg,
                expected=f"(N//5, 5, Np) = ({n // 5}, 5, {npb})",
            )
        tt.g2_segments = s.transpose(2, 1, 0).astype(np.float64)
    return tt
