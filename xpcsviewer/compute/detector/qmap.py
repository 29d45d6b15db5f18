"""Per-pixel q and azimuth maps from the detector geometry (small angle, unrotated detector).

Conventions (verified against real APS-8IDI files, see the real-data README):
rows are y, columns are x, a pixel centre sits at its integer index, and the
beam centre is given in pixels as (column ``bcx``, row ``bcy``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["HC_KEV_ANGSTROM", "DetectorGeometry", "compute_qmap", "wavelength_angstrom"]

#: pixels per block of the per-pixel passes (the temporaries of a block stay in cache)
BLOCK_PIXELS = 1 << 16

#: h*c in keV*Angstrom (CODATA): lambda[Angstrom] = 12.3984 / E[keV]. The full value
#: reproduces the bin centres of real partition files to 1.5e-7 1/Angstrom.
HC_KEV_ANGSTROM = 12.398419843320026


@dataclass(frozen=True)
class DetectorGeometry:
    """Where the beam meets the detector, as a partition records it (a ``QMap`` has the
    same attributes).

    Attributes
    ----------
    beam_center_x, beam_center_y : float
        Beam centre in pixels: column (x) and row (y).
    detector_distance : float
        Sample-detector distance in metres.
    pixel_size : float
        Pixel size in metres (square pixels).
    energy_kev : float, optional
        Photon energy in keV (needed to compute q).
    """

    beam_center_x: float = 0.0
    beam_center_y: float = 0.0
    detector_distance: float = 1.0
    pixel_size: float = 75e-6
    energy_kev: float | None = None


def wavelength_angstrom(energy_kev: float) -> float:
    """X-ray wavelength in Angstrom for a photon energy in keV."""
    if not energy_kev > 0:
        raise ValueError(f"energy must be > 0 keV, got {energy_kev!r}")
    return HC_KEV_ANGSTROM / float(energy_kev)


def compute_qmap(
    shape: tuple[int, int],
    energy_kev: float,
    det_dist_m: float,
    pixel_size_m: float,
    bcx: float,
    bcy: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact momentum transfer and azimuth of every detector pixel.

    Parameters
    ----------
    shape : (H, W)
        Detector shape in pixels (rows, columns).
    energy_kev : float
        Photon energy in keV.
    det_dist_m : float
        Sample-detector distance in metres.
    pixel_size_m : float
        Pixel size in metres (square pixels).
    bcx, bcy : float
        Beam centre in pixels: column (x) and row (y).

    Returns
    -------
    q : (H, W) float64
        ``q = 4 pi / lambda * sin(atan(r / L) / 2)`` in 1/Angstrom, with ``r`` the
        pixel's distance from the beam centre in metres.
    phi : (H, W) float64
        Azimuth ``-atan2(row - bcy, col - bcx)`` in degrees, in (-180, 180]
        (the minus sign makes the y axis point up in the lab frame).
    """
    h, w = (int(shape[0]), int(shape[1]))
    if h <= 0 or w <= 0:
        raise ValueError(f"shape must be positive, got {shape!r}")
    if not det_dist_m > 0 or not pixel_size_m > 0:
        raise ValueError("detector distance and pixel size must be > 0 (metres)")
    lam = wavelength_angstrom(energy_kev)
    dy = (np.arange(h, dtype=np.float64) - float(bcy))[:, None]
    dx = (np.arange(w, dtype=np.float64) - float(bcx))[None, :]
    ax = (dx * (float(pixel_size_m) / float(det_dist_m))) ** 2  # (1, W)
    ay = (dy * (float(pixel_size_m) / float(det_dist_m))) ** 2  # (H, 1)
    q = np.empty((h, w))
    phi = np.empty((h, w))
    kq = 4.0 * np.pi / lam
    # row blocks of ~64 K pixels: the temporaries stay in the CPU caches, and the only
    # large arrays are the two results (fresh pages cost more than the arithmetic)
    rows = max(1, BLOCK_PIXELS // w)
    t_buf = np.empty(rows * w)
    for a in range(0, h, rows):
        b = min(h, a + rows)
        qb, pb = q[a:b], phi[a:b]
        t = t_buf[: (b - a) * w].reshape(b - a, w)
        # u^2; sin(atan(u) / 2) = u / sqrt(2 s (s + 1)) with s = sqrt(1 + u^2): no
        # arctan or sine per pixel and no cancellation at small angles, and
        # s (s + 1) = 1 + u^2 + s
        u2 = np.add(ay[a:b], ax, out=qb)
        np.add(u2, 1.0, out=t)
        np.sqrt(t, out=t)  # s
        t += u2
        t += 1.0
        t *= 2.0  # 2 s (s + 1)
        np.divide(u2, t, out=qb)
        np.sqrt(qb, out=qb)
        qb *= kq
        np.arctan2(np.broadcast_to(dy[a:b], (b - a, w)), dx, out=pb)
        pb *= -180.0 / np.pi
        # -atan2 gives [-180, 180); the single value -180 becomes +180: (-180, 180]
        pb[pb <= -180.0] += 360.0
    return q, phi
