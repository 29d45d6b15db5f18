"""The in-memory data model of one result file (NumPy arrays + metadata).

Everything here is plain NumPy, float64 for values, read by ``xpcsviewer.io.results.reader``
and written by ``xpcsviewer.io.results.writer``. Big datasets (two-time maps, the per-pixel
G2 stack, the 2-D scattering image) are NOT held here: the reader exposes lazy
functions for them that open the file for one read.

Units: q in 1/Angstrom, phi in degrees, times in seconds, lengths in metres,
energy in keV.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Multitau", "QMap", "Twotime", "XpcsResult"]


@dataclass
class QMap:
    """The q (x phi) partition of the detector (``/xpcs/qmap``).

    Bins are "compressed": value v = 1..N in a ROI map is column v-1 of g2;
    ``*_index_mapping[v-1]`` is its 0-based natural index ``i0 * n1 + i1`` in the
    ``n0 x n1`` grid of ``*_v_list_dim0`` x ``*_v_list_dim1``.
    """

    dynamic_roi_map: np.ndarray  # (H, W) int, 0 = excluded
    static_roi_map: np.ndarray  # (H, W) int, 0 = excluded
    mask: np.ndarray  # (H, W) bool, True = valid pixel
    dynamic_v_list_dim0: np.ndarray  # (n_d0,) float64, q centres for q-phi maps
    dynamic_v_list_dim1: np.ndarray  # (n_d1,) float64, phi centres (deg)
    static_v_list_dim0: np.ndarray  # (n_s0,)
    static_v_list_dim1: np.ndarray  # (n_s1,)
    dynamic_index_mapping: np.ndarray  # (Nd,) int
    static_index_mapping: np.ndarray  # (Ns,) int
    dynamic_num_pts: tuple[int, int]
    static_num_pts: tuple[int, int]
    map_names: tuple[str, str] = ("q", "phi")
    map_units: tuple[str, str] = ("\u00c5\u207b\u00b9", "deg")
    beam_center_x: float = 0.0  # column (pixel)
    beam_center_y: float = 0.0  # row (pixel)
    detector_distance: float = 1.0  # m
    pixel_size: float = 75e-6  # m
    energy_kev: float | None = None
    hash: str = ""

    @property
    def shape(self) -> tuple[int, int]:
        """Detector shape (H, W)."""
        return tuple(self.dynamic_roi_map.shape)  # type: ignore[return-value]

    @property
    def n_dynamic(self) -> int:
        """Number of compressed dynamic bins (g2 columns)."""
        return len(self.dynamic_index_mapping)

    @property
    def n_static(self) -> int:
        """Number of compressed static bins."""
        return len(self.static_index_mapping)

    def _grid_values(self, mapping: np.ndarray, v0: np.ndarray, v1: np.ndarray, n1: int):
        mapping = np.asarray(mapping, dtype=np.int64)
        return np.asarray(v0, float)[mapping // n1], np.asarray(v1, float)[mapping % n1]

    @property
    def dynamic_q(self) -> np.ndarray:
        """(Nd,) dim-0 value (q) of each compressed dynamic bin."""
        return self._grid_values(
            self.dynamic_index_mapping,
            self.dynamic_v_list_dim0,
            self.dynamic_v_list_dim1,
            int(self.dynamic_num_pts[1]),
        )[0]

    @property
    def dynamic_phi(self) -> np.ndarray:
        """(Nd,) dim-1 value (phi) of each compressed dynamic bin."""
        return self._grid_values(
            self.dynamic_index_mapping,
            self.dynamic_v_list_dim0,
            self.dynamic_v_list_dim1,
            int(self.dynamic_num_pts[1]),
        )[1]

    @property
    def static_q(self) -> np.ndarray:
        """(Ns,) dim-0 value of each compressed static bin."""
        return self._grid_values(
            self.static_index_mapping,
            self.static_v_list_dim0,
            self.static_v_list_dim1,
            int(self.static_num_pts[1]),
        )[0]

    @property
    def static_phi(self) -> np.ndarray:
        """(Ns,) dim-1 value of each compressed static bin."""
        return self._grid_values(
            self.static_index_mapping,
            self.static_v_list_dim0,
            self.static_v_list_dim1,
            int(self.static_num_pts[1]),
        )[1]

    # ------------------------------------------------------------------ helpers
    def _format_value(self, axis: int, value: float) -> str:
        name = str(self.map_names[axis])
        unit = str(self.map_units[axis])
        if name == "q":
            return f"q={value:.5f} {unit}"
        if name == "phi":
            return f"\u03c6={value:.1f} {unit}"
        if name in ("x", "y"):
            return f"{name}={value:.1f}"
        return f"{name}={value:.3f}"

    def dynamic_labels(self) -> list[str]:
        """One label per g2 column, e.g. ``"q=0.00512 Å⁻¹, φ=45.0 deg"``.

        Only the dim-0 part is shown when ``n_d1 == 1``.
        """
        qs, ps = self.dynamic_q, self.dynamic_phi
        one = int(self.dynamic_num_pts[1]) == 1
        out = []
        for q, p in zip(qs, ps, strict=True):
            lab = self._format_value(0, float(q))
            if not one:
                lab += ", " + self._format_value(1, float(p))
            out.append(lab)
        return out

    def static_labels(self) -> list[str]:
        """One label per static bin, formatted like :meth:`dynamic_labels`."""
        qs, ps = self.static_q, self.static_phi
        one = int(self.static_num_pts[1]) == 1
        return [
            self._format_value(0, float(q))
            + ("" if one else ", " + self._format_value(1, float(p)))
            for q, p in zip(qs, ps, strict=True)
        ]

    def qbins_in_range(self, qmin: float | None, qmax: float | None) -> np.ndarray:
        """g2 columns (0-based, ascending) whose dim-0 value lies in ``[qmin, qmax]``.

        ``self.dynamic_q[cols]`` and ``self.dynamic_phi[cols]`` are the values aligned
        with the returned columns (one per column, never more). ``None`` leaves a
        side open. Returns an empty array when no bin matches.
        """
        q = self.dynamic_q
        sel = np.ones(q.shape, bool)
        if qmin is not None:
            sel &= q >= qmin
        if qmax is not None:
            sel &= q <= qmax
        return np.flatnonzero(sel)

    def expand_static(self, values: np.ndarray) -> np.ndarray:
        """Compressed static values ``(..., Ns)`` -> NaN-filled grid ``(..., n_s0, n_s1)``."""
        v = np.asarray(values, dtype=np.float64)
        ns = self.n_static
        if v.shape[-1] != ns:
            raise ValueError(f"last axis has {v.shape[-1]} values, expected Ns = {ns}")
        n0, n1 = int(self.static_num_pts[0]), int(self.static_num_pts[1])
        out = np.full((*v.shape[:-1], n0 * n1), np.nan)
        out[..., np.asarray(self.static_index_mapping, dtype=np.int64)] = v
        return out.reshape(*v.shape[:-1], n0, n1)

    def static_to_dynamic(self) -> np.ndarray:
        """(Ns,) int: the 0-based g2 column holding each static bin (-1 if none).

        Taken from the ROI maps (a static bin lies in exactly one dynamic bin in a
        consistent partition; see ``compute.partition.check_consistency``).
        """
        s = np.asarray(self.static_roi_map).astype(np.int64).ravel()
        d = np.asarray(self.dynamic_roi_map).astype(np.int64).ravel()
        out = np.full(self.n_static, -1, dtype=np.int64)
        sel = (s > 0) & (d > 0)
        out[s[sel] - 1] = d[sel] - 1
        return out

    def content_hash(self) -> str:
        """sha256 hex over the sorted partition keys and values (as the partition tool does)."""
        import hashlib
        import json

        items = {
            "beam_center_x": float(self.beam_center_x),
            "beam_center_y": float(self.beam_center_y),
            "detector_distance": float(self.detector_distance),
            "pixel_size": float(self.pixel_size),
            "energy": None if self.energy_kev is None else float(self.energy_kev),
            "map_names": list(self.map_names),
            "map_units": list(self.map_units),
            "mask": np.asarray(self.mask),
            "dynamic_roi_map": np.asarray(self.dynamic_roi_map),
            "static_roi_map": np.asarray(self.static_roi_map),
            "dynamic_index_mapping": np.asarray(self.dynamic_index_mapping),
            "static_index_mapping": np.asarray(self.static_index_mapping),
            "dynamic_v_list_dim0": np.asarray(self.dynamic_v_list_dim0),
            "dynamic_v_list_dim1": np.asarray(self.dynamic_v_list_dim1),
            "static_v_list_dim0": np.asarray(self.static_v_list_dim0),
            "static_v_list_dim1": np.asarray(self.static_v_list_dim1),
            "dynamic_num_pts": [int(x) for x in self.dynamic_num_pts],
            "static_num_pts": [int(x) for x in self.static_num_pts],
        }
        h = hashlib.sha256()
        for key in sorted(items):
            h.update(key.encode())
            val = items[key]
            if isinstance(val, np.ndarray):
                # Canonical dtypes: the same partition hashes the same whatever
                # integer width or byte order a file stored it with.
                kind = val.dtype.kind
                a = np.ascontiguousarray(val, dtype=np.float64 if kind == "f" else np.int64)
                h.update(str(a.shape).encode())
                h.update(a.tobytes())
            else:
                h.update(json.dumps(val, ensure_ascii=False).encode())
        return h.hexdigest()


@dataclass
class Multitau:
    """``/xpcs/multitau``: g2 in the viewer's orientation (T, Nd).

    ``valid`` is False where a point is missing data (g2 == 0 with err == 0, i.e.
    no photons, or non-finite): such points are never plotted or fitted.
    ``err_suspect`` marks valid points whose stated error is implausibly small against
    their neighbours' (:mod:`xpcsviewer.io.results.g2_quality`): drawn, but left out of fits by
    default.
    """

    delay_frames: np.ndarray  # (T,) int
    tau: np.ndarray  # (T,) s = delay_frames * t0_eff
    g2: np.ndarray  # (T, Nd) float64
    g2_err: np.ndarray  # (T, Nd) float64
    valid: np.ndarray  # (T, Nd) bool
    t0_eff: float  # frame_time * stride_frame * avg_frame (s)
    stride_frame: int = 1
    avg_frame: int = 1
    g2_partial: np.ndarray | None = None  # (P, T, Nd)
    g2_partial_err: np.ndarray | None = None
    g2_partial_labels: np.ndarray | None = None  # (P,) frames accumulated
    config: dict[str, Any] = field(default_factory=dict)
    has_unnormalized_G2: bool = False  # the file's own name
    err_suspect: np.ndarray | None = None  # (T, Nd) bool

    @property
    def fit_mask(self) -> np.ndarray:
        """(T, Nd) bool: ``valid`` without the suspect-error points (the fits' default)."""
        if self.err_suspect is None:
            return self.valid
        return self.valid & ~self.err_suspect


@dataclass
class Twotime:
    """``/xpcs/twotime`` without the maps (read lazily, see the reader)."""

    processed_bins: np.ndarray  # (Np,) 1-based dynamic bin values, ascending
    map_names: list[str]  # dataset names in processed order, e.g. "c2_00001"
    n_frames: int  # N (size of each map)
    t0: float  # per-analysis time step: frame_time * stride * avg (s)
    g2_full: np.ndarray | None = None  # (Np, N) g2 from C2, delay k = 0..N-1
    g2_segments: np.ndarray | None = None  # (Np, 5, N // 5)
    stride_frame: int = 1
    avg_frame: int = 1
    config: dict[str, Any] = field(default_factory=dict)


@dataclass
class XpcsResult:
    """One result file, fully described except its big arrays."""

    path: Path
    analysis_type: tuple[str, ...]  # subset of ("Multitau", "Twotime") in that order
    layout: str  # "nexus" or "legacy"
    qmap: QMap
    frame_time: float  # s
    count_time: float | None
    start_time: str | None
    saxs_1d: np.ndarray  # (Ns,) mean counts / pixel / frame per static bin
    saxs_1d_segments: np.ndarray | None  # (S, Ns)
    intensity_vs_time: np.ndarray | None  # (2, N): frame index, mean intensity
    multitau: Multitau | None = None
    twotime: Twotime | None = None
    # /xpcs/twotime/age_lag without its entries (an io.results.age_lag.AgeLagInfo), or None
    age_lag: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)  # "path/key (units)" -> value
    sample: dict[str, Any] = field(default_factory=dict)  # /entry/sample (demo truth)
    sample_units: dict[str, str] = field(default_factory=dict)  # /entry/sample units attrs
    warnings: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """Short display name (file name without ``_results.hdf``), printable text."""
        return path_label(self.path)

    @property
    def detector_shape(self) -> tuple[int, int]:
        """(H, W)."""
        return self.qmap.shape


def path_label(path: str | os.PathLike) -> str:
    """:attr:`XpcsResult.label` of a file at ``path``, without reading it."""
    from xpcsviewer.model.text import display_path

    name = display_path(Path(path).name)
    for suffix in ("_results.hdf", "_results.h5", ".hdf", ".h5", ".hdf5", ".nxs"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name
