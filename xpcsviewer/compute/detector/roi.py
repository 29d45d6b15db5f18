"""Wedge and ring ROIs on the detector: I(q) of a sector, I(phi) of an annulus.

An ROI is an annular sector around the beam centre: radii ``r_min..r_max`` (pixels)
and azimuths ``phi_start .. phi_start + phi_span`` (degrees, the q-map's phi: 0 along
+x, counter-clockwise with y up, i.e. towards smaller rows). A *q-wedge* bins its
pixels in q (I(q) of that sector); a *phi-ring* bins them in phi (I(phi) of that
annulus). A pixel belongs to the ROI when its centre does, and to the valid pixels
of the mask. Bin values are means over the bin's pixels (the unit of the image,
e.g. photons per pixel per frame), as SAXS-1D's static bins are.
Pure NumPy; may run off the GUI thread.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from xpcsviewer.compute.detector.qmap import compute_qmap, wavelength_angstrom

__all__ = [
    "RoiProfile",
    "SectorRoi",
    "integrate_roi",
    "integrate_rois",
    "q_at_radius",
    "roi_pixels",
]

KINDS = ("wedge", "ring")


@dataclass(frozen=True)
class SectorRoi:
    """An annular sector: ``kind`` "wedge" (I(q)) or "ring" (I(phi)).

    Attributes
    ----------
    kind : {"wedge", "ring"}
    r_min, r_max : float
        Radii from the beam centre, pixels.
    phi_start : float
        First azimuth, degrees.
    phi_span : float
        Angular width in (0, 360] degrees, counter-clockwise from ``phi_start``.
    n_bins : int
        Bins along q (wedge) or phi (ring).
    name : str
    """

    kind: str
    r_min: float
    r_max: float
    phi_start: float = -180.0
    phi_span: float = 360.0
    n_bins: int = 50
    name: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"ROI kind must be one of {KINDS}, got {self.kind!r}")
        if not 0 <= self.r_min < self.r_max:
            raise ValueError(f"need 0 <= r_min < r_max, got {self.r_min}, {self.r_max}")
        if not 0 < self.phi_span <= 360:
            raise ValueError(f"phi_span must be in (0, 360], got {self.phi_span}")
        if int(self.n_bins) < 1:
            raise ValueError("n_bins must be >= 1")

    @property
    def label(self) -> str:
        """e.g. "q-wedge 1 (phi -20..20 deg)"."""
        what = "q-wedge" if self.kind == "wedge" else "\u03c6-ring"
        span = (f"\u03c6 {self.phi_start:.0f}..{self.phi_start + self.phi_span:.0f}\u00b0"
                if self.kind == "wedge" else f"r {self.r_min:.0f}..{self.r_max:.0f} px")
        return f"{self.name or what} ({span})"


@dataclass
class RoiProfile:
    """I(q) of a wedge or I(phi) of a ring.

    Attributes
    ----------
    roi : SectorRoi
    x : (n,) float64
        Bin centres: q in 1/Angstrom (wedge) or phi in degrees (ring).
    intensity : (n,) float64
        Mean of the image over each bin's pixels; NaN for an empty bin.
    counts : (n,) int64
        Pixels per bin.
    edges : (n + 1,) float64
    """

    roi: SectorRoi
    x: np.ndarray
    intensity: np.ndarray
    counts: np.ndarray
    edges: np.ndarray

    @property
    def x_label(self) -> str:
        """Axis label of x with its unit."""
        return "q (\u00c5\u207b\u00b9)" if self.roi.kind == "wedge" else "\u03c6 (deg)"


def q_at_radius(r_px: np.ndarray | float, energy_kev: float, det_dist_m: float,
                pixel_size_m: float) -> np.ndarray:
    """q (1/Angstrom) at a distance ``r_px`` pixels from the beam centre (exact, as
    :func:`~xpcsviewer.compute.detector.qmap.compute_qmap`)."""
    r = np.asarray(r_px, dtype=np.float64) * float(pixel_size_m)
    return 4.0 * np.pi / wavelength_angstrom(energy_kev) * np.sin(
        np.arctan(r / float(det_dist_m)) / 2.0)


def _angles(phi: np.ndarray, roi: SectorRoi) -> np.ndarray:
    """phi unwrapped to [phi_start, phi_start + 360)."""
    return roi.phi_start + np.mod(np.asarray(phi, dtype=np.float64) - roi.phi_start, 360.0)


def roi_pixels(roi: SectorRoi, shape: tuple[int, int], bcx: float, bcy: float,
               phi: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """(H, W) bool: valid pixels whose centres lie in the ROI.

    ``phi`` is the per-pixel azimuth (degrees) of the q-map; (bcx, bcy) the beam
    centre in pixels (column, row), pixel centres at integer indices.
    """
    rows, cols = np.indices(shape, dtype=np.float64)
    rho = np.hypot(cols - float(bcx), rows - float(bcy))
    sel = (rho >= roi.r_min) & (rho <= roi.r_max)
    if roi.phi_span < 360.0:
        sel &= _angles(phi, roi) <= roi.phi_start + roi.phi_span
    if mask is not None:
        sel &= np.asarray(mask) > 0
    return sel


def integrate_roi(image: np.ndarray, roi: SectorRoi, q: np.ndarray, phi: np.ndarray,
                  bcx: float, bcy: float, mask: np.ndarray | None = None,
                  q_range: tuple[float, float] | None = None) -> RoiProfile:
    """I(q) of a wedge or I(phi) of a ring.

    Parameters
    ----------
    image : (H, W) float
        E.g. the time-averaged scattering image.
    roi : SectorRoi
    q, phi : (H, W) float
        Per-pixel q (1/Angstrom) and phi (degrees) of the detector.
    bcx, bcy : float
        Beam centre (pixels).
    mask : (H, W) bool, optional
        Valid pixels.
    q_range : (q_lo, q_hi), optional
        Wedge bin range; default the q of ``r_min`` and ``r_max`` along the detector,
        i.e. the range of the selected pixels.

    Returns
    -------
    RoiProfile
    """
    img = np.asarray(image, dtype=np.float64)
    if img.shape != np.shape(q) or img.shape != np.shape(phi):
        raise ValueError(f"image {img.shape}, q {np.shape(q)} and phi {np.shape(phi)} differ")
    sel = roi_pixels(roi, img.shape, bcx, bcy, phi, mask) & np.isfinite(img)
    n = int(roi.n_bins)
    if roi.kind == "wedge":
        x = np.asarray(q, dtype=np.float64)[sel]
        if q_range is not None:
            lo, hi = (float(v) for v in q_range)
        elif x.size:
            lo, hi = float(x.min()), float(x.max())
        else:
            lo, hi = 0.0, 1.0
    else:
        x = _angles(np.asarray(phi)[sel], roi)
        lo, hi = roi.phi_start, roi.phi_start + roi.phi_span
    if not hi > lo:
        hi = lo + 1e-12
    edges = np.linspace(lo, hi, n + 1)
    b = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, n - 1)
    inside = (x >= lo) & (x <= hi)
    counts = np.bincount(b[inside], minlength=n)[:n]
    sums = np.bincount(b[inside], weights=img[sel][inside], minlength=n)[:n]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return RoiProfile(roi, 0.5 * (edges[:-1] + edges[1:]), mean, counts.astype(np.int64), edges)


@functools.lru_cache(maxsize=2)
def _qphi(shape: tuple[int, int], energy_kev: float, det_dist_m: float, pixel_size_m: float,
          bcx: float, bcy: float) -> tuple[np.ndarray, np.ndarray]:
    # one geometry per file (usually one for a whole folder): kept, read-only
    q, phi = compute_qmap(shape, energy_kev, det_dist_m, pixel_size_m, bcx, bcy)
    q.setflags(write=False)
    phi.setflags(write=False)
    return q, phi


def integrate_rois(image: np.ndarray, rois: Sequence[SectorRoi], qmap,
                   progress=None, cancel=None) -> list[RoiProfile]:
    """Profiles of several ROIs on one image, with the geometry and mask of a
    :class:`~xpcsviewer.model.result.QMap` (worker job; q and phi cached by geometry)."""
    img = np.asarray(image, dtype=np.float64)
    if qmap.energy_kev is None:
        raise ValueError("the file states no X-ray energy: q of the ROIs is unknown")
    q, phi = _qphi(tuple(img.shape), float(qmap.energy_kev),
                   float(qmap.detector_distance), float(qmap.pixel_size),
                   float(qmap.beam_center_x), float(qmap.beam_center_y))
    out = []
    for i, roi in enumerate(rois):
        if cancel is not None:
            cancel.raise_if_cancelled()
        if progress is not None:
            progress(i, len(rois), "integrating ROIs")
        out.append(integrate_roi(img, roi, q, phi, qmap.beam_center_x, qmap.beam_center_y,
                                 qmap.mask))
    return out
