"""Reader of XPCS result files (APS-8IDI NeXus layout and the legacy ``/exchange`` layout).

Every function opens the file read-only, reads what it needs and closes it again
(no handle pool: a correlator may still be writing the folder). Small data go
into :class:`~xpcsviewer.io.model.XpcsResult`; big data (the 2-D image, two-time
maps, the per-pixel G2 stack) have their own lazy functions. Bad input raises
:class:`~xpcsviewer.io.errors.XpcsFileError` naming the file, the dataset and
what was expected; NaN/Inf values are reported in ``XpcsResult.warnings``.
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings as warnings_mod
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.g2_quality import SUSPECT_ERROR_RATIO, suspect_errors
from xpcsviewer.io.model import Multitau, QMap, Twotime, XpcsResult

__all__ = [
    "RESULT_SUFFIXES",
    "C2View",
    "FileSummary",
    "get_analysis_type",
    "read_c2",
    "read_g2_stack_delay",
    "read_qmap",
    "read_result",
    "read_saxs_2d",
    "scan_folder",
]

RESULT_SUFFIXES = (".hdf", ".h5", ".hdf5", ".nxs")

# NeXus paths (result-file-format.md §3)
QMAP = "/xpcs/qmap"
MT = "/xpcs/multitau"
TT = "/xpcs/twotime"
C2_GROUP = "/xpcs/twotime/correlation_map"
FRAME_TIME = "/entry/instrument/detector_1/frame_time"
COUNT_TIME = "/entry/instrument/detector_1/count_time"
ENERGY = "/entry/instrument/incident_beam/incident_energy"
ENTRY_DIST = "/entry/instrument/detector_1/distance"
G2_STACK_NAMES = ("unnormalized_G2", "unnormalized_g2")
# Metadata arrays larger than this are summarised instead of copied.
_META_MAX_ELEMENTS = 64


# --------------------------------------------------------------------------- low level
@contextlib.contextmanager
def _open(path: str | Path) -> Iterator[h5py.File]:
    """Open read-only with errors that say what is wrong with the file."""
    p = Path(path)
    if not p.exists():
        raise XpcsFileError(p, "file not found")
    if p.is_dir():
        raise XpcsFileError(p, "is a folder, not a result file")
    try:
        size = p.stat().st_size
    except OSError as exc:
        raise XpcsFileError(p, f"cannot stat ({exc.strerror})") from None
    if size == 0:
        raise XpcsFileError(p, "empty file (0 bytes)", expected="an HDF5 result file")
    try:
        f = h5py.File(p, "r")
    except OSError as exc:
        try:
            with open(p, "rb") as fh:
                head = fh.read(8)
        except OSError:
            head = b""
        if head == b"\x89HDF\r\n\x1a\n":
            problem = "truncated or damaged HDF5 file"
        else:
            problem = "not an HDF5 file"
        raise XpcsFileError(
            p,
            f"{problem} ({str(exc).splitlines()[0][:120]})",
            expected="an HDF5 result file",
        ) from None
    try:
        yield f
    except XpcsFileError:
        raise
    except (OSError, RuntimeError, KeyError) as exc:
        # A damaged dataset inside a readable file (e.g. a truncated chunk).
        raise XpcsFileError(
            p, f"cannot read ({str(exc).splitlines()[0][:160]})"
        ) from None
    finally:
        f.close()


def _decode(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    if isinstance(v, np.ndarray):
        if v.dtype.kind in "OS":
            out = np.array([_decode(x) for x in v.ravel()], dtype=object).reshape(
                v.shape
            )
            return out.tolist() if out.ndim else out[()]
        if v.shape == (1, 1) or v.ndim == 0:  # (1,1) scalars from the old writers
            return _decode(v.reshape(())[()])
    if isinstance(v, np.float32):
        # float32 scalars (e.g. frame_time 2e-05) read back as their shortest decimal.
        return float(str(v))
    if isinstance(v, np.generic):
        return v.item()
    return v


def _exists(f: h5py.File, path: str) -> bool:
    try:
        return path in f
    except (KeyError, RuntimeError, OSError):  # dangling links
        return False


def _dataset(f: h5py.File, path: str, expected: str) -> h5py.Dataset:
    if not _exists(f, path):
        raise XpcsFileError(
            f.filename, "missing required dataset", dataset=path, expected=expected
        )
    obj = f[path]
    if not isinstance(obj, h5py.Dataset):
        raise XpcsFileError(
            f.filename, "is a group, not a dataset", dataset=path, expected=expected
        )
    return obj


def _scalar(
    f: h5py.File, path: str, *, required: bool = True, default: float | None = None
) -> Any:
    if not _exists(f, path):
        if required:
            raise XpcsFileError(
                f.filename,
                "missing required dataset",
                dataset=path,
                expected="a number",
            )
        return default
    ds = _dataset(f, path, "a number")
    if ds.size != 1:
        raise XpcsFileError(
            f.filename,
            f"has shape {ds.shape}",
            dataset=path,
            expected="a scalar (shape () or (1, 1))",
        )
    v = _decode(ds[()])
    if isinstance(v, np.ndarray):
        v = v.reshape(())[()]
    return v


def _number(
    f: h5py.File,
    path: str,
    *,
    required: bool = True,
    default: float | None = None,
    positive: bool = False,
) -> float | None:
    v = _scalar(f, path, required=required, default=default)
    if v is None:
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise XpcsFileError(
            f.filename,
            f"value {v!r} is not a number",
            dataset=path,
            expected="a number",
        ) from None
    if positive and not (x > 0 and math.isfinite(x)):
        raise XpcsFileError(
            f.filename, f"value {x!r}", dataset=path, expected="a positive number"
        )
    return x


def _array(
    f: h5py.File,
    path: str,
    *,
    kinds: str = "biuf",
    ndim: int | tuple[int, ...] | None = None,
    expected: str = "an array",
    squeeze_leading: bool = False,
) -> np.ndarray:
    ds = _dataset(f, path, expected)
    if ds.dtype.kind not in kinds:
        raise XpcsFileError(
            f.filename, f"has dtype {ds.dtype}", dataset=path, expected=expected
        )
    a = np.asarray(ds[()])
    if squeeze_leading:
        while (
            a.ndim > 1
            and a.shape[0] == 1
            and (ndim is None or a.ndim > min(np.atleast_1d(ndim)))
        ):
            a = a[0]
    if ndim is not None and a.ndim not in np.atleast_1d(ndim):
        raise XpcsFileError(
            f.filename, f"has shape {a.shape}", dataset=path, expected=expected
        )
    return a


def _strings(f: h5py.File, path: str, default: tuple[str, str]) -> tuple[str, ...]:
    if not _exists(f, path):
        return default
    v = _decode(f[path][()])
    if isinstance(v, str):
        return (v,)
    return tuple(str(x) for x in np.ravel(v))


def _check_finite(res_warnings: list[str], name: str, a: np.ndarray) -> None:
    if a.dtype.kind == "f":
        bad = ~np.isfinite(a)
        if bad.any():
            res_warnings.append(
                f"{name}: {int(bad.sum())} of {a.size} values are NaN or Inf"
            )


# --------------------------------------------------------------------------- layout
def _layout(f: h5py.File) -> str:
    if _exists(f, QMAP):
        return "nexus"
    if _exists(f, "/exchange") and _exists(f, "/xpcs/dqmap"):
        return "legacy"
    if _exists(f, "/qmap"):
        raise XpcsFileError(
            f.filename,
            "is a partition (/qmap) file, not a result file",
            expected="an XPCS result file with /xpcs/qmap and results",
        )
    raise XpcsFileError(
        f.filename,
        "unknown layout: neither /xpcs/qmap (NeXus) nor /exchange + /xpcs/dqmap (legacy)",
        expected="an XPCS result file",
    )


def _analysis_type(f: h5py.File, layout: str) -> tuple[str, ...]:
    out = []
    if layout == "nexus":
        if _exists(f, C2_GROUP):
            out.append("Twotime")
        if _exists(f, MT + "/normalized_g2"):
            out.append("Multitau")
    else:
        if _exists(f, "/exchange/C2T_all"):
            out.append("Twotime")
        if _exists(f, "/exchange/norm-0-g2"):
            out.append("Multitau")
    if not out:
        raise XpcsFileError(
            f.filename,
            "no analysis results",
            dataset=f"{C2_GROUP} or {MT}/normalized_g2"
            if layout == "nexus"
            else "/exchange/norm-0-g2",
            expected="a multi-tau or two-time result",
        )
    return tuple(out)


def get_analysis_type(path: str | Path) -> tuple[str, ...]:
    """Analysis types of a result file, a subset of ``("Twotime", "Multitau")`` in that order.

    Raises
    ------
    XpcsFileError
        If the file is unreadable, of unknown layout or holds no results.
    """
    with _open(path) as f:
        return _analysis_type(f, _layout(f))


# --------------------------------------------------------------------------- q-map
def _roi(f: h5py.File, path: str, shape: tuple[int, ...] | None) -> np.ndarray:
    a = _array(f, path, kinds="iu", ndim=2, expected="an integer (H, W) map")
    if shape is not None and a.shape != shape:
        raise XpcsFileError(
            f.filename,
            f"has shape {a.shape}",
            dataset=path,
            expected=f"the detector shape {shape}",
        )
    return a


def _num_pts(f: h5py.File, path: str) -> tuple[int, int]:
    a = _array(f, path, kinds="iuf", expected="2 integers [n0, n1]").ravel()
    if a.size == 1:  # tolerate a bare count: one axis only
        a = np.array([a[0], 1])
    if a.size != 2 or (a < 1).any():
        raise XpcsFileError(
            f.filename,
            f"value {a.tolist()}",
            dataset=path,
            expected="2 positive integers [n0, n1]",
        )
    return int(a[0]), int(a[1])


def _read_qmap_nexus(f: h5py.File, base: str, warnings: list[str]) -> QMap:
    mask = _array(f, f"{base}/mask", kinds="biuf", ndim=2, expected="a (H, W) mask") > 0
    shape = mask.shape
    maps: dict[str, Any] = {}
    for kind in ("dynamic", "static"):
        roi = _roi(f, f"{base}/{kind}_roi_map", shape)
        mapping = _array(
            f,
            f"{base}/{kind}_index_mapping",
            kinds="iu",
            ndim=(0, 1, 2),
            expected="integers (N,)",
        ).ravel()
        n0, n1 = _num_pts(f, f"{base}/{kind}_num_pts")
        v0 = _array(
            f, f"{base}/{kind}_v_list_dim0", kinds="iuf", expected="bin centres (n0,)"
        ).ravel()
        v1 = (
            _array(
                f,
                f"{base}/{kind}_v_list_dim1",
                kinds="iuf",
                expected="bin centres (n1,)",
            ).ravel()
            if _exists(f, f"{base}/{kind}_v_list_dim1")
            else np.zeros(1)
        )
        vmax = int(roi.max(initial=0))
        if len(mapping) != vmax:
            raise XpcsFileError(
                f.filename,
                f"inconsistent q-map: len(index_mapping) = {len(mapping)} but "
                f"max(roi_map) = {vmax}",
                dataset=f"{base}/{kind}_index_mapping",
                expected=f"{vmax} entries (one per compressed bin)",
            )
        if len(v0) != n0 or len(v1) != n1:
            raise XpcsFileError(
                f.filename,
                f"bin lists have {len(v0)} x {len(v1)} values but num_pts is "
                f"[{n0}, {n1}]",
                dataset=f"{base}/{kind}_num_pts",
                expected="len(v_list_dim0), len(v_list_dim1) == num_pts",
            )
        if mapping.size and (int(mapping.max()) >= n0 * n1 or int(mapping.min()) < 0):
            raise XpcsFileError(
                f.filename,
                "index_mapping points outside the bin grid",
                dataset=f"{base}/{kind}_index_mapping",
                expected=f"values in 0..{n0 * n1 - 1}",
            )
        maps[kind] = (
            roi,
            mapping.astype(np.int64),
            v0.astype(np.float64),
            v1.astype(np.float64),
            (n0, n1),
        )
    names = _strings(f, f"{base}/map_names", ("q", "phi"))
    units = _strings(f, f"{base}/map_units", ("\u00c5\u207b\u00b9", "deg"))
    if len(names) < 2:
        names = (*names, "phi")
    if len(units) < 2:
        units = (*units, "deg")
    energy = _number(f, f"{base}/energy", required=False)
    entry_energy = _number(f, ENERGY, required=False)
    if energy is None:
        energy = entry_energy
    elif entry_energy is not None and not math.isclose(
        energy, entry_energy, rel_tol=1e-3
    ):
        warnings.append(
            f"energy: q-map says {energy:g} keV, /entry metadata says "
            f"{entry_energy:g} keV; using the q-map value"
        )
    dist = _number(f, f"{base}/detector_distance", positive=True)
    entry_dist = _number(f, ENTRY_DIST, required=False)
    if entry_dist is not None and not math.isclose(dist, entry_dist, rel_tol=1e-3):
        warnings.append(
            f"detector distance: q-map says {dist:g} m, /entry metadata says "
            f"{entry_dist:g} m; using the q-map value"
        )
    d, s = maps["dynamic"], maps["static"]
    qm = QMap(
        dynamic_roi_map=d[0],
        static_roi_map=s[0],
        mask=mask,
        dynamic_v_list_dim0=d[2],
        dynamic_v_list_dim1=d[3],
        static_v_list_dim0=s[2],
        static_v_list_dim1=s[3],
        dynamic_index_mapping=d[1],
        static_index_mapping=s[1],
        dynamic_num_pts=d[4],
        static_num_pts=s[4],
        map_names=(names[0], names[1]),
        map_units=(units[0], units[1]),
        beam_center_x=float(_number(f, f"{base}/beam_center_x")),
        beam_center_y=float(_number(f, f"{base}/beam_center_y")),
        detector_distance=float(dist),
        pixel_size=float(_number(f, f"{base}/pixel_size", positive=True)),
        energy_kev=energy,
    )
    h = f[base].attrs.get("hash")
    qm.hash = _decode(h) if h is not None else qm.content_hash()
    return qm


def _compress_natural(natural: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    natural = natural.astype(np.int64)
    uniq, inv = np.unique(natural, return_inverse=True)
    inv = inv.reshape(natural.shape)
    if uniq[0] == 0:
        return inv, uniq[1:] - 1
    return inv + 1, uniq - 1


def _read_qmap_legacy(f: h5py.File, warnings: list[str]) -> QMap:
    """The old ``/xpcs/{dqmap, sqmap, dqlist, ...}`` q-map: natural bin values 1..n_q*n_phi."""
    x = "/xpcs"
    mask = _array(f, f"{x}/mask", kinds="biuf", ndim=2, expected="a (H, W) mask") > 0
    out: dict[str, Any] = {}
    for kind, prefix in (("dynamic", "d"), ("static", "s")):
        roi_nat = _roi(f, f"{x}/{prefix}qmap", mask.shape)
        nq = int(_number(f, f"{x}/{prefix}noq", required=False) or 0)
        nphi = int(_number(f, f"{x}/{prefix}nophi", required=False) or 1)
        qlist = _array(
            f, f"{x}/{prefix}qlist", kinds="iuf", expected="q centres"
        ).ravel()
        philist = (
            _array(
                f, f"{x}/{prefix}philist", kinds="iuf", expected="phi centres"
            ).ravel()
            if _exists(f, f"{x}/{prefix}philist")
            else np.zeros(1)
        )
        if nq <= 0:
            nq = (
                len(qlist)
                if len(qlist) != int(roi_nat.max()) or nphi == 1
                else len(qlist) // nphi
            )
        # Old files store either one value per q ring or one per (q, phi) bin.
        if len(qlist) == nq * nphi and nphi > 1:
            qlist = qlist.reshape(nq, nphi)[:, 0]
        if len(philist) == nq * nphi and nphi > 1:
            philist = philist.reshape(nq, nphi)[0, :]
        if len(qlist) != nq or len(philist) != nphi:
            raise XpcsFileError(
                f.filename,
                f"{len(qlist)} q and {len(philist)} phi values for {nq} x {nphi} bins",
                dataset=f"{x}/{prefix}qlist",
                expected="one centre per q ring and per phi sector",
            )
        if int(roi_nat.max()) > nq * nphi:
            raise XpcsFileError(
                f.filename,
                f"bin values up to {int(roi_nat.max())} for {nq} x {nphi} bins",
                dataset=f"{x}/{prefix}qmap",
                expected=f"values in 0..{nq * nphi}",
            )
        roi, mapping = _compress_natural(np.where(mask, roi_nat, 0))
        out[kind] = (
            roi,
            mapping,
            qlist.astype(float),
            philist.astype(float),
            (nq, nphi),
        )
    d, s = out["dynamic"], out["static"]
    m = "/measurement/instrument"
    qm = QMap(
        dynamic_roi_map=d[0],
        static_roi_map=s[0],
        mask=mask,
        dynamic_v_list_dim0=d[2],
        dynamic_v_list_dim1=d[3],
        static_v_list_dim0=s[2],
        static_v_list_dim1=s[3],
        dynamic_index_mapping=d[1],
        static_index_mapping=s[1],
        dynamic_num_pts=d[4],
        static_num_pts=s[4],
        beam_center_x=float(
            _number(f, f"{m}/acquisition/beam_center_x", required=False, default=0.0)
        ),
        beam_center_y=float(
            _number(f, f"{m}/acquisition/beam_center_y", required=False, default=0.0)
        ),
        detector_distance=float(
            _number(f, f"{m}/detector/distance", required=False, default=1.0)
        ),
        pixel_size=float(
            _number(f, f"{m}/detector/x_pixel_size", required=False, default=75e-6)
        ),
        energy_kev=_number(f, f"{m}/source_begin/energy", required=False),
    )
    qm.hash = qm.content_hash()
    return qm


# --------------------------------------------------------------------------- metadata
def _flatten(group: h5py.Group, prefix: str, out: dict[str, Any]) -> None:
    def visit(name: str, obj: Any) -> None:
        if not isinstance(obj, h5py.Dataset):
            return
        key = f"{prefix}/{name}"
        units = obj.attrs.get("units", obj.attrs.get("unit"))
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
            v = _decode(obj[()])
            values[name] = v.tolist() if isinstance(v, np.ndarray) else v
            u = obj.attrs.get("units")
            if u is not None:
                units[name] = str(_decode(u))

    f["/entry/sample"].visititems(visit)
    return values, units


def _config(f: h5py.File, path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if _exists(f, path) and isinstance(f[path], h5py.Group):
        for k, ds in f[path].items():
            if isinstance(ds, h5py.Dataset) and ds.size <= _META_MAX_ELEMENTS:
                v = _decode(ds[()])
                out[k] = v.tolist() if isinstance(v, np.ndarray) else v
    return out


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
        with np.errstate(invalid="ignore"), warnings_mod.catch_warnings():
            warnings_mod.simplefilter("ignore", RuntimeWarning)
            med = np.nanmedian(nb, axis=0)
        bad[idx[np.abs(y - med) > thr], j] = True
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
        stride = int(config.get("stride_frame", 1) or 1)
        avg = int(config.get("avg_frame", 1) or 1)
    else:
        p_tau, p_g2, p_err = (
            "/exchange/tau",
            "/exchange/norm-0-g2",
            "/exchange/norm-0-stderr",
        )
        config = {}
        stride = int(_number(f, "/xpcs/stride_frames", required=False, default=1) or 1)
        avg = int(_number(f, "/xpcs/avg_frames", required=False, default=1) or 1)
    tau_raw = _array(f, p_tau, kinds="iuf", ndim=(1, 2), expected="delays (T,)")
    tau_frames = np.asarray(tau_raw).ravel()
    t = len(tau_frames)
    exp = f"float (T, Nd) = ({t}, {nd})"
    g2 = _array(f, p_g2, kinds="iuf", ndim=2, expected=exp).astype(np.float64)
    if g2.shape != (t, nd):
        raise XpcsFileError(
            f.filename, f"has shape {g2.shape}", dataset=p_g2, expected=exp
        )
    if _exists(f, p_err):
        err = _array(f, p_err, kinds="iuf", ndim=2, expected=exp).astype(np.float64)
        if err.shape != g2.shape:
            raise XpcsFileError(
                f.filename, f"has shape {err.shape}", dataset=p_err, expected=exp
            )
    else:
        warnings.append(f"{p_err} missing: errors set to NaN")
        err = np.full_like(g2, np.nan)
    _check_finite(warnings, p_g2, g2)
    _check_finite(warnings, p_err, err)
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
                    f, f"{MT}/{stem}", kinds="iuf", ndim=3, expected=f"(P, {t}, {nd})"
                ).astype(np.float64)
                if part.shape[1:] != (t, nd):
                    raise XpcsFileError(
                        f.filename,
                        f"has shape {part.shape}",
                        dataset=f"{MT}/{stem}",
                        expected=f"(P, {t}, {nd})",
                    )
                part[part == 0] = np.nan  # zeros are snapshots without photons
                mt.g2_partial = part
                if _exists(f, f"{MT}/{stem}_err"):
                    mt.g2_partial_err = _array(
                        f, f"{MT}/{stem}_err", ndim=3, expected="(P, T, Nd)"
                    ).astype(np.float64)
                if _exists(f, f"{MT}/{stem}_labels"):
                    mt.g2_partial_labels = _array(
                        f, f"{MT}/{stem}_labels", expected="(P,)"
                    ).ravel()
                break
        mt.has_unnormalized_G2 = any(_exists(f, f"{MT}/{n}") for n in G2_STACK_NAMES)
    else:
        mt.has_unnormalized_G2 = _exists(f, "/exchange/G2") or _exists(
            f, "/exchange/G2IPIF"
        )
    return mt


def _c2_names(f: h5py.File, layout: str) -> tuple[str, list[str]]:
    group = C2_GROUP if layout == "nexus" else "/exchange/C2T_all"
    prefix = "c2_" if layout == "nexus" else "g2_"
    names = sorted(n for n in f[group] if n.startswith(prefix))
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
        stride = int(config.get("stride_frame", 1) or 1)
        avg = int(config.get("avg_frame", 1) or 1)
        if _exists(f, f"{TT}/processed_bins"):
            bins = _array(
                f, f"{TT}/processed_bins", kinds="iuf", expected="(Np,) bin values"
            ).ravel()
            bins = bins.astype(np.int64)
        else:
            warnings.append(
                f"{TT}/processed_bins missing: taking the map numbers as bins"
            )
            bins = np.array([int(x.split("_")[-1]) for x in names], dtype=np.int64)
    else:
        config = {}
        stride = int(_number(f, "/xpcs/stride_frames", required=False, default=1) or 1)
        avg = int(_number(f, "/xpcs/avg_frames", required=False, default=1) or 1)
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
            f, p_full, kinds="iuf", ndim=(1, 2), expected=f"(N, Np) = ({n}, {npb})"
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


def read_result(path: str | Path) -> XpcsResult:
    """Read everything of a result file except its big arrays.

    Parameters
    ----------
    path : str or Path
        A NeXus (``/xpcs/...``, ``/entry/...``) or legacy (``/exchange``) result file.

    Returns
    -------
    XpcsResult
        g2 as (T, Nd) float64 with ``valid`` False at missing points (g2 == 0 with
        err == 0, or non-finite); delays in seconds (delay_list x frame_time x
        stride x avg); q-map geometry and energy from ``/xpcs/qmap``
        (disagreements with ``/entry`` metadata are warnings); metadata flattened
        to ``"group/key (units)" -> value``; ``/entry/sample`` in ``sample``.

    Raises
    ------
    XpcsFileError
        Not HDF5, truncated, empty, unknown layout, missing required dataset,
        wrong shape/dtype, or an inconsistent q-map.
    """
    p = Path(path)
    warnings: list[str] = []
    with _open(p) as f:
        layout = _layout(f)
        atype = _analysis_type(f, layout)
        if layout == "nexus":
            qm = _read_qmap_nexus(f, QMAP, warnings)
            frame_time = _number(f, FRAME_TIME, positive=True)
            count_time = _number(f, COUNT_TIME, required=False)
            start = _scalar(f, "/entry/start_time", required=False)
            p1d, pseg, pint = (
                "/xpcs/temporal_mean/scattering_1d",
                "/xpcs/temporal_mean/scattering_1d_segments",
                "/xpcs/spatial_mean/intensity_vs_time",
            )
        else:
            qm = _read_qmap_legacy(f, warnings)
            frame_time = _number(
                f, "/measurement/instrument/detector/exposure_period", positive=True
            )
            count_time = _number(
                f, "/measurement/instrument/detector/exposure_time", required=False
            )
            start = _scalar(
                f, "/measurement/instrument/source_begin/datetime", required=False
            )
            p1d, pseg, pint = (
                "/exchange/partition-mean-total",
                "/exchange/partition-mean-partial",
                "/exchange/frameSum",
            )
        ns = qm.n_static
        if _exists(f, p1d):
            saxs_1d = _array(
                f, p1d, kinds="iuf", ndim=(1, 2), expected=f"(1, Ns) = (1, {ns})"
            )
            if saxs_1d.size != ns:
                raise XpcsFileError(
                    f.filename,
                    f"has shape {saxs_1d.shape}",
                    dataset=p1d,
                    expected=f"(1, Ns) = (1, {ns}) with Ns = len(static_index_mapping)",
                )
            saxs_1d = saxs_1d.ravel().astype(np.float64)
        else:
            warnings.append(f"{p1d} missing")
            saxs_1d = np.full(ns, np.nan)
        segs = None
        if _exists(f, pseg):
            segs = _array(
                f, pseg, kinds="iuf", ndim=(1, 2), expected=f"(S, Ns) with Ns = {ns}"
            )
            segs = segs.reshape(1, -1) if segs.ndim == 1 else segs
            if segs.shape[1] != ns:
                raise XpcsFileError(
                    f.filename,
                    f"has shape {segs.shape}",
                    dataset=pseg,
                    expected=f"(S, Ns) with Ns = {ns}",
                )
            segs = segs.astype(np.float64)
        int_t = None
        if _exists(f, pint):
            int_t = _array(f, pint, kinds="iuf", ndim=2, expected="(2, N)").astype(
                np.float64
            )
            if int_t.shape[0] != 2:
                raise XpcsFileError(
                    f.filename,
                    f"has shape {int_t.shape}",
                    dataset=pint,
                    expected="(2, N): frame index, mean intensity",
                )
        _check_finite(warnings, p1d, saxs_1d)
        mt = (
            _read_multitau(f, layout, frame_time, qm.n_dynamic, warnings)
            if "Multitau" in atype
            else None
        )
        tt = (
            _read_twotime(f, layout, frame_time, qm, warnings)
            if "Twotime" in atype
            else None
        )
        metadata = _metadata(f, layout)
        sample, sample_units = _sample(f)
    res = XpcsResult(
        path=p,
        analysis_type=atype,
        layout=layout,
        qmap=qm,
        frame_time=float(frame_time),
        count_time=count_time,
        start_time=None if start is None else str(start),
        saxs_1d=saxs_1d,
        saxs_1d_segments=segs,
        intensity_vs_time=int_t,
        multitau=mt,
        twotime=tt,
        metadata=metadata,
        sample=sample,
        warnings=warnings,
    )
    res.sample_units = sample_units
    return res


def read_qmap(path: str | Path) -> QMap:
    """The partition of a partition file (``/qmap``) or of a result file (``/xpcs/qmap``).

    Raises
    ------
    XpcsFileError
        Unreadable file, no partition group, or an inconsistent partition.
    """
    with _open(path) as f:
        for base in ("/qmap", QMAP):
            if _exists(f, base):
                return _read_qmap_nexus(f, base, [])
        if _exists(f, "/xpcs/dqmap"):
            return _read_qmap_legacy(f, [])
        raise XpcsFileError(
            f.filename,
            "no partition found",
            dataset="/qmap",
            expected="a /qmap (partition file) or /xpcs/qmap (result file) group",
        )


# --------------------------------------------------------------------------- big data
def read_saxs_2d(path: str | Path) -> np.ndarray:
    """The time-averaged detector image (H, W) float64 (mean counts per pixel per frame)."""
    with _open(path) as f:
        layout = _layout(f)
        p = (
            "/xpcs/temporal_mean/scattering_2d"
            if layout == "nexus"
            else "/exchange/pixelSum"
        )
        img = _array(
            f,
            p,
            kinds="iuf",
            ndim=2,
            expected="(1, H, W) or (H, W)",
            squeeze_leading=True,
        )
        mask_p = f"{QMAP}/mask" if layout == "nexus" else "/xpcs/mask"
        if _exists(f, mask_p) and f[mask_p].shape != img.shape:
            raise XpcsFileError(
                f.filename,
                f"has shape {img.shape}",
                dataset=p,
                expected=f"the detector shape {f[mask_p].shape}",
            )
        return img.astype(np.float64)


@dataclass
class C2View:
    """A (possibly decimated) two-time map ready for display.

    Attributes
    ----------
    c2 : (M, M) float64
        Full symmetric C(t1, t2) built from the stored upper triangle (the
        diagonal appears once: the viewer's ``half + half.T`` with the diagonal halved).
    stride : int
        Decimation: view pixel i is frame ``i * stride``.
    t0 : float
        Seconds per view pixel: frame_time x stride_frame x avg_frame of the
        two-time analysis, times ``stride``.
    dq_bin : int
        1-based dynamic bin value (g2 column ``dq_bin - 1``).
    label : str
        The bin's label, e.g. ``"q=0.00512 Å⁻¹"``.
    n_frames : int
        N, the size of the stored map.
    """

    c2: np.ndarray
    stride: int
    t0: float
    dq_bin: int
    label: str
    n_frames: int = 0
    index: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def _bin_label(f: h5py.File, layout: str, dq_bin: int) -> str:
    if layout != "nexus":
        return f"qbin={dq_bin}"
    mapping = f[f"{QMAP}/dynamic_index_mapping"][()].ravel().astype(np.int64)
    v0 = f[f"{QMAP}/dynamic_v_list_dim0"][()].ravel()
    v1 = (
        f[f"{QMAP}/dynamic_v_list_dim1"][()].ravel()
        if _exists(f, f"{QMAP}/dynamic_v_list_dim1")
        else np.zeros(1)
    )
    n0, n1 = _num_pts(f, f"{QMAP}/dynamic_num_pts")
    names = _strings(f, f"{QMAP}/map_names", ("q", "phi"))
    units = _strings(f, f"{QMAP}/map_units", ("\u00c5\u207b\u00b9", "deg"))
    tmp = QMap(
        np.zeros((1, 1), np.uint8),
        np.zeros((1, 1), np.uint8),
        np.zeros((1, 1), bool),
        v0,
        v1,
        v0,
        v1,
        mapping[dq_bin - 1 : dq_bin],
        mapping[:0],
        (n0, n1),
        (n0, n1),
        map_names=(names[0], names[-1]),
        map_units=(units[0], units[-1]),
    )
    return tmp.dynamic_labels()[0]


def _correct_diagonal(c: np.ndarray) -> None:
    """Replace each diagonal value by the mean of its off-diagonal neighbours (in place)."""
    m = c.shape[0]
    if m < 2:
        return
    up = np.diagonal(c, 1)  # C[i, i+1]
    diag = np.empty(m)
    diag[0] = up[0]
    diag[-1] = up[-1]
    diag[1:-1] = 0.5 * (up[1:] + up[:-1])  # C[i, i+1] and C[i-1, i]
    np.fill_diagonal(c, diag)


def read_c2(
    path: str | Path, index: int, max_size: int = 1024, correct_diagonal: bool = False
) -> C2View:
    """Read one two-time map, decimated by strided hyperslabs to at most ``max_size`` pixels.

    Only the strided rows and columns are read (in row blocks), into one
    preallocated (M, M) float64 array that is then mirrored in place: memory is
    bounded by the view, never by N x N, and the map is never held twice.

    Parameters
    ----------
    path : str or Path
    index : int
        0-based position in processed order (``XpcsResult.twotime.map_names``).
    max_size : int
        Largest view size M; stride = ceil(N / max_size).
    correct_diagonal : bool
        Replace the diagonal (shot-noise spike at t1 = t2) by its neighbours' mean.
    """
    if max_size < 1:
        raise ValueError("max_size must be >= 1")
    with _open(path) as f:
        layout = _layout(f)
        if "Twotime" not in _analysis_type(f, layout):
            raise XpcsFileError(
                f.filename,
                "no two-time result",
                dataset=C2_GROUP,
                expected="a two-time result file",
            )
        group, names = _c2_names(f, layout)
        if not 0 <= index < len(names):
            raise IndexError(
                f"two-time map index {index} out of range 0..{len(names) - 1}"
            )
        ds = f[f"{group}/{names[index]}"]
        if ds.ndim != 2 or ds.shape[0] != ds.shape[1] or ds.dtype.kind not in "iuf":
            raise XpcsFileError(
                f.filename,
                f"has shape {ds.shape} and dtype {ds.dtype}",
                dataset=ds.name,
                expected="a square (N, N) float map",
            )
        n = int(ds.shape[0])
        stride = max(1, -(-n // int(max_size)))
        m = -(-n // stride)
        c = np.empty((m, m), dtype=np.float64)
        # Small row blocks (~64 k elements): HDF5 builds per-element offset lists for
        # strided selections, so a whole-view read would cost several times the view.
        block = max(1, 65536 // max(m, 1))
        if ds.chunks is not None and ds.compression is not None:
            # Tall compressed chunks (the standard correlator writes one N x N chunk)
            # are decompressed once per read call: read a whole band of chunk rows
            # at a time so that no chunk is decompressed twice.
            block = max(block, -(-int(ds.chunks[0]) // stride))
        for r0 in range(0, m, block):
            r1 = min(m, r0 + block)
            c[r0:r1] = ds[r0 * stride : (r1 - 1) * stride + 1 : stride, ::stride]
        frame_time = _number(
            f,
            FRAME_TIME
            if layout == "nexus"
            else "/measurement/instrument/detector/exposure_period",
            positive=True,
        )
        if layout == "nexus":
            cfg = _config(f, f"{TT}/config")
            t_step = (
                frame_time
                * int(cfg.get("stride_frame", 1) or 1)
                * int(cfg.get("avg_frame", 1) or 1)
            )
            bins = (
                f[f"{TT}/processed_bins"][()].ravel().astype(np.int64)
                if _exists(f, f"{TT}/processed_bins")
                else np.array([int(x.split("_")[-1]) for x in names])
            )
        else:
            t_step = (
                frame_time
                * int(_number(f, "/xpcs/stride_frames", required=False, default=1))
                * int(_number(f, "/xpcs/avg_frames", required=False, default=1))
            )
            bins = np.array([int(x.split("_")[-1]) for x in names])
        dq_bin = int(bins[index])
        label = _bin_label(f, layout, dq_bin)
    # Mirror the upper triangle (diagonal included) onto the lower one, row by row
    # so that no temporary as large as the map is made.
    for i in range(1, m):
        c[i, :i] = c[:i, i]
    if correct_diagonal:
        _correct_diagonal(c)
    return C2View(
        c2=c,
        stride=stride,
        t0=t_step * stride,
        dq_bin=dq_bin,
        label=label,
        n_frames=n,
        index=index,
    )


def read_g2_stack_delay(
    path: str | Path, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-pixel G2, IP and IF (each (H, W) float64) at delay index ``k`` only.

    Accepts ``/xpcs/multitau/unnormalized_G2`` and ``unnormalized_g2`` (either may
    be an ExternalLink to a side file, resolved next to the result file) and the
    legacy ``/exchange/G2IPIF`` or ``/exchange/{G2, IP, IF}``.
    """
    p = Path(path)
    with _open(p) as f:
        layout = _layout(f)
        cands = (
            [f"{MT}/{n}" for n in G2_STACK_NAMES]
            if layout == "nexus"
            else ["/exchange/G2IPIF"]
        )
        for c in cands:
            link = f.get(c, getlink=True)
            if link is None:
                continue
            if isinstance(link, h5py.ExternalLink):
                side = (
                    (p.parent / link.filename)
                    if not os.path.isabs(link.filename)
                    else Path(link.filename)
                )
                if not side.is_file():
                    raise XpcsFileError(
                        p,
                        f"external link to missing file {link.filename}",
                        dataset=c,
                        expected="the G2 side file next to the result",
                    )
                with _open(side) as fs:
                    return _g2_slice(fs, link.path, k)
            return _g2_slice(f, c, k)
        if layout == "legacy" and all(
            _exists(f, f"/exchange/{n}") for n in ("G2", "IP", "IF")
        ):
            out = []
            for n in ("G2", "IP", "IF"):
                ds = f[f"/exchange/{n}"]
                if not 0 <= k < ds.shape[0]:
                    raise IndexError(
                        f"delay index {k} out of range 0..{ds.shape[0] - 1}"
                    )
                out.append(np.asarray(ds[k], dtype=np.float64))
            return out[0], out[1], out[2]
        raise XpcsFileError(
            p,
            "no per-pixel G2 stack",
            dataset=cands[0],
            expected="the G2/IP/IF stack (T, 3, H, W)",
        )


def _g2_slice(
    f: h5py.File, path: str, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ds = f[path]
    if ds.ndim != 4 or ds.shape[1] != 3:
        raise XpcsFileError(
            f.filename,
            f"has shape {ds.shape}",
            dataset=path,
            expected="(T, 3, H, W): G2, IP, IF per delay",
        )
    if not 0 <= k < ds.shape[0]:
        raise IndexError(f"delay index {k} out of range 0..{ds.shape[0] - 1}")
    a = np.asarray(ds[k], dtype=np.float64)
    return a[0], a[1], a[2]


# --------------------------------------------------------------------------- folders
@dataclass
class FileSummary:
    """What a folder scan learns about one file from its small datasets only."""

    path: Path
    analysis_type: tuple[str, ...] = ()
    n_dynamic: int = 0
    labels: list[str] = field(default_factory=list)
    mtime: float = 0.0
    size_bytes: int = 0
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the file could be read."""
        return self.error is None


def _summary(p: Path) -> FileSummary:
    st = p.stat()
    s = FileSummary(path=p, mtime=st.st_mtime, size_bytes=st.st_size)
    try:
        with _open(p) as f:
            layout = _layout(f)
            s.analysis_type = _analysis_type(f, layout)
            if layout == "nexus":
                mapping = (
                    _array(
                        f,
                        f"{QMAP}/dynamic_index_mapping",
                        kinds="iu",
                        expected="integers (Nd,)",
                    )
                    .ravel()
                    .astype(np.int64)
                )
                s.n_dynamic = int(mapping.size)
                v0 = _array(f, f"{QMAP}/dynamic_v_list_dim0", expected="(n0,)").ravel()
                v1 = (
                    _array(f, f"{QMAP}/dynamic_v_list_dim1", expected="(n1,)").ravel()
                    if _exists(f, f"{QMAP}/dynamic_v_list_dim1")
                    else np.zeros(1)
                )
                n0, n1 = _num_pts(f, f"{QMAP}/dynamic_num_pts")
                names = _strings(f, f"{QMAP}/map_names", ("q", "phi"))
                units = _strings(f, f"{QMAP}/map_units", ("\u00c5\u207b\u00b9", "deg"))
                if mapping.size and int(mapping.max()) >= len(v0) * len(v1):
                    raise XpcsFileError(
                        p,
                        "index_mapping points outside the bin grid",
                        dataset=f"{QMAP}/dynamic_index_mapping",
                    )
                tmp = QMap(
                    np.zeros((1, 1), np.uint8),
                    np.zeros((1, 1), np.uint8),
                    np.zeros((1, 1), bool),
                    v0,
                    v1,
                    v0,
                    v1,
                    mapping,
                    mapping[:0],
                    (n0, n1),
                    (n0, n1),
                    map_names=(names[0], names[-1]),
                    map_units=(units[0], units[-1]),
                )
                s.labels = tmp.dynamic_labels()
            else:
                res = read_result(p)  # legacy files are rare: the full reader is fine
                s.n_dynamic = res.qmap.n_dynamic
                s.labels = res.qmap.dynamic_labels()
    except XpcsFileError as exc:
        s.error = exc.one_line()
    except (OSError, ValueError, IndexError) as exc:
        s.error = f"{p}: {exc}"
    return s


def scan_folder(folder: str | Path) -> list[FileSummary]:
    """Summaries of every result file in ``folder`` (not recursive), sorted by name.

    Reads only small datasets (analysis-type paths, dynamic bin lists); an
    unreadable file gets a summary with ``error`` set instead of raising.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise NotADirectoryError(str(folder))
    files = sorted(
        p
        for p in folder.iterdir()
        if p.is_file()
        and p.suffix.lower() in RESULT_SUFFIXES
        and not p.name.startswith(".")
    )
    return [_summary(p) for p in files]
