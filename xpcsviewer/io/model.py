"""The in-memory data model of one result file (NumPy arrays + metadata).

Everything here is plain NumPy, float64 for values, read by ``xpcsviewer.io.reader``
and written by ``xpcsviewer.io.writer``. Big datasets (two-time maps, the per-pixel
G2 stack, the 2-D scattering image) are NOT held here: the reader exposes lazy
functions for them that open the file for one read.

Units: q in 1/Angstrom, phi in degrees, times in seconds, lengths in metres,
energy in keV.
"""

from __future__ import annotations

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
        return int(len(self.dynamic_index_mapping))

    @property
    def n_static(self) -> int:
        """Number of compressed static bins."""
        return int(len(self.static_index_mapping))

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


@dataclass
class Multitau:
    """``/xpcs/multitau``: g2 in the viewer's orientation (T, Nd).

    ``valid`` is False where a point is missing data (g2 == 0 with err == 0, i.e.
    no photons, or non-finite): such points are never plotted or fitted.
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
    has_unnormalized_G2: bool = False  # noqa: N815 - the file's own name


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
    metadata: dict[str, Any] = field(default_factory=dict)  # "path/key (units)" -> value
    sample: dict[str, Any] = field(default_factory=dict)  # /entry/sample (demo truth)
    warnings: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """Short display name (file name without ``_results.hdf``)."""
        name = self.path.name
        for suffix in ("_results.hdf", "_results.h5", ".hdf", ".h5", ".hdf5", ".nxs"):
            if name.endswith(suffix):
                return name[: -len(suffix)]
        return name

    @property
    def detector_shape(self) -> tuple[int, int]:
        """(H, W)."""
        return self.qmap.shape
