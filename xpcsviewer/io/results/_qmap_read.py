"""Readers of the q (x phi) partition: the NeXus ``/xpcs/qmap`` (or ``/qmap``) group and
the legacy ``/xpcs/{dqmap, sqmap, ...}`` datasets.

Sizes are checked before reading: the mask defines the detector (at most
:data:`~xpcsviewer.io._h5.MAX_PIXELS` pixels), every map must have its shape,
bin lists must have the lengths ``num_pts`` declares.
"""

from __future__ import annotations

import math
from typing import Any

import h5py
import numpy as np

from xpcsviewer.io._h5 import (
    MAX_PIXELS,
    _array,
    _dataset,
    _decode,
    _exists,
    _number,
    _strings,
)
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.results._schema import ENERGY, ENTRY_DIST
from xpcsviewer.model.result import QMap


def _roi(f: h5py.File, path: str, shape: tuple[int, ...] | None) -> np.ndarray:
    exp = "an integer (H, W) map" + (
        "" if shape is None else f" of the detector shape {shape}"
    )
    return _array(
        f, path, kinds="iu", ndim=2, expected=exp, shape=shape, max_elements=MAX_PIXELS
    )


def _num_pts(f: h5py.File, path: str) -> tuple[int, int]:
    a = _array(
        f, path, kinds="iuf", expected="2 integers [n0, n1]", max_elements=4
    ).ravel()
    if a.size == 1:  # tolerate a bare count: one axis only
        a = np.array([a[0], 1])
    if a.size != 2 or not np.isfinite(a).all() or (a < 1).any():
        raise XpcsFileError(
            f.filename,
            f"value {a.tolist()}",
            dataset=path,
            expected="2 positive integers [n0, n1]",
        )
    if float(a[0]) * float(a[1]) > MAX_PIXELS:
        raise XpcsFileError(
            f.filename,
            f"value {a.tolist()}: more bins than a detector has pixels",
            dataset=path,
            expected=f"n0 x n1 <= {MAX_PIXELS}",
        )
    return int(a[0]), int(a[1])


def _centres(f: h5py.File, path: str, n: int, what: str) -> np.ndarray:
    """Bin centres: exactly ``n`` finite numbers (the size is checked before reading)."""
    exp = f"{n} finite bin centres ({what}), as num_pts says"
    ds = _dataset(f, path, exp)
    if ds.size != n:
        num_pts = path.replace("_v_list_dim0", "_num_pts").replace(
            "_v_list_dim1", "_num_pts"
        )
        raise XpcsFileError(
            f.filename,
            f"bin lists do not match: {path.rsplit('/', 1)[-1]} has {ds.size} values "
            f"for {n} bins",
            dataset=num_pts,
            expected="len(v_list_dim0), len(v_list_dim1) == num_pts",
        )
    v = _array(f, path, kinds="iuf", expected=exp, max_elements=n).ravel()
    bad = ~np.isfinite(v)
    if bad.any():
        raise XpcsFileError(
            f.filename,
            f"{int(bad.sum())} of {v.size} bin centres are NaN or Inf",
            dataset=path,
            expected=exp,
        )
    return v.astype(np.float64)


def _bin_lists(
    f: h5py.File, base: str, kind: str
) -> tuple[int, int, np.ndarray, np.ndarray]:
    """``n0, n1`` and the bin centres of both axes of the ``kind`` partition."""
    n0, n1 = _num_pts(f, f"{base}/{kind}_num_pts")
    v0 = _centres(f, f"{base}/{kind}_v_list_dim0", n0, "dim 0")
    v1 = (
        _centres(f, f"{base}/{kind}_v_list_dim1", n1, "dim 1")
        if _exists(f, f"{base}/{kind}_v_list_dim1")
        else np.zeros(1)
    )
    return n0, n1, v0, v1


def _mask(f: h5py.File, path: str) -> np.ndarray:
    """The (H, W) mask, which also fixes the detector shape for every other map."""
    return (
        _array(
            f,
            path,
            kinds="biuf",
            ndim=2,
            expected="a (H, W) mask of a detector",
            max_elements=MAX_PIXELS,
        )
        > 0
    )


def _assemble(maps: dict[str, Any], mask: np.ndarray, **geometry: Any) -> QMap:
    """A QMap from per-kind ``(roi, mapping, v0, v1, (n0, n1))`` and the geometry."""
    d, s = maps["dynamic"], maps["static"]
    return QMap(
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
        **geometry,
    )


def _read_qmap_nexus(f: h5py.File, base: str, warnings: list[str]) -> QMap:
    mask = _mask(f, f"{base}/mask")
    shape = mask.shape
    maps: dict[str, Any] = {}
    for kind in ("dynamic", "static"):
        roi = _roi(f, f"{base}/{kind}_roi_map", shape)
        mapping = _array(
            f,
            f"{base}/{kind}_index_mapping",
            kinds="iu",
            ndim=(0, 1, 2),
            expected="integers (N,), one per bin",
            max_elements=max(1, roi.size),
        ).ravel()
        n0, n1, v0, v1 = _bin_lists(f, base, kind)
        if len(v1) != n1:
            raise XpcsFileError(
                f.filename,
                f"bin lists have {len(v0)} x {len(v1)} values but num_pts is "
                f"[{n0}, {n1}]",
                dataset=f"{base}/{kind}_num_pts",
                expected="len(v_list_dim0), len(v_list_dim1) == num_pts",
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
        if kind == "dynamic" and not len(mapping):
            raise XpcsFileError(
                f.filename,
                "the q-map has no dynamic bins (every pixel is excluded)",
                dataset=f"{base}/dynamic_roi_map",
                expected="at least one dynamic q-bin",
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
            v0,
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
    qm = _assemble(
        maps,
        mask,
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
    mask = _mask(f, f"{x}/mask")
    out: dict[str, Any] = {}
    for kind, prefix in (("dynamic", "d"), ("static", "s")):
        roi_nat = _roi(f, f"{x}/{prefix}qmap", mask.shape)
        nq = int(_number(f, f"{x}/{prefix}noq", required=False) or 0)
        nphi = int(_number(f, f"{x}/{prefix}nophi", required=False) or 1)
        qlist = _array(
            f,
            f"{x}/{prefix}qlist",
            kinds="iuf",
            expected="q centres",
            max_elements=max(1, roi_nat.size),
        ).ravel()
        philist = (
            _array(
                f,
                f"{x}/{prefix}philist",
                kinds="iuf",
                expected="phi centres",
                max_elements=max(1, roi_nat.size),
            ).ravel()
            if _exists(f, f"{x}/{prefix}philist")
            else np.zeros(1)
        )
        for name, v in (("qlist", qlist), ("philist", philist)):
            if not np.isfinite(v).all():
                raise XpcsFileError(
                    f.filename,
                    "bin centres are NaN or Inf",
                    dataset=f"{x}/{prefix}{name}",
                    expected="finite bin centres",
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
        if kind == "dynamic" and not len(mapping):
            raise XpcsFileError(
                f.filename,
                "the q-map has no dynamic bins (every pixel is excluded)",
                dataset=f"{x}/dqmap",
                expected="at least one dynamic q-bin",
            )
        out[kind] = (
            roi,
            mapping,
            qlist.astype(float),
            philist.astype(float),
            (nq, nphi),
        )
    m = "/measurement/instrument"
    qm = _assemble(
        out,
        mask,
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


def _dynamic_labels(f: h5py.File, base: str = "/xpcs/qmap") -> list[str]:
    """Labels of the dynamic bins from the small q-map datasets only (no maps read)."""
    mapping = (
        _array(
            f,
            f"{base}/dynamic_index_mapping",
            kinds="iu",
            expected="integers (Nd,)",
            max_elements=MAX_PIXELS,
        )
        .ravel()
        .astype(np.int64)
    )
    n0, n1, v0, v1 = _bin_lists(f, base, "dynamic")
    if mapping.size and (int(mapping.max()) >= v0.size * v1.size or mapping.min() < 0):
        raise XpcsFileError(
            f.filename,
            "index_mapping points outside the bin grid",
            dataset=f"{base}/dynamic_index_mapping",
            expected=f"values in 0..{v0.size * v1.size - 1}",
        )
    names = _strings(f, f"{base}/map_names", ("q", "phi"))
    units = _strings(f, f"{base}/map_units", ("\u00c5\u207b\u00b9", "deg"))
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
    return tmp.dynamic_labels()
