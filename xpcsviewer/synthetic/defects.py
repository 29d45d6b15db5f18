"""Detector defects planted in simulated data, each with its physics.

``beamstop_fan``: parasitic scattering from the beam-stop edge, a fan of diffuse
intensity running outward from the beam stop. The beam stop does not move, so the
fan is a *static* field, coherent with the sample's speckle. Pixels it covers see
heterodyne mixing (``g2 - 1`` gains a term in ``g1`` besides ``|g1|^2``, i.e. a decay
at Gamma instead of 2 Gamma) and the static bins it crosses become inhomogeneous in
intensity, which raises their g2 baseline. The q-bins it crosses therefore fit a tau
that is too long (x1.4-2 in the demo) on a baseline above 1, until the fan is masked.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["beamstop_fan", "defect_field"]


def beamstop_fan(shape: tuple[int, int], bcx: float, bcy: float, angle_deg: float,
                 half_width_deg: float, start_px: float, end_px: float,
                 intensity: float) -> np.ndarray:
    """Static intensity (photons/pixel/frame) of a fan from the beam stop outward.

    The fan covers azimuths ``angle_deg +- half_width_deg`` (the q-map's phi: 0 along
    +x, 90 towards smaller rows) between ``start_px`` and ``end_px`` from the beam
    centre; its intensity falls as 1/distance from ``intensity`` at ``start_px``.

    Returns
    -------
    (H, W) float64, 0 outside the fan
    """
    rows, cols = np.indices(shape, dtype=np.float64)
    dx, dy = cols - bcx, rows - bcy
    rho = np.hypot(dx, dy)
    phi = -np.degrees(np.arctan2(dy, dx))
    off = (phi - angle_deg + 180.0) % 360.0 - 180.0
    inside = (np.abs(off) <= half_width_deg) & (rho >= start_px) & (rho <= end_px)
    return np.where(inside, intensity * start_px / np.maximum(rho, start_px), 0.0)


def defect_field(spec: dict[str, Any], shape: tuple[int, int]) -> np.ndarray | None:
    """The static intensity of a spec's ``defect`` entry (None without one)."""
    d = spec.get("defect")
    if not d:
        return None
    if d.get("kind") != "beamstop_fan":
        raise ValueError(f"unknown defect kind {d.get('kind')!r}")
    geo = spec["geometry"]
    return beamstop_fan(shape, geo["bcx"], geo["bcy"], d["angle_deg"], d["half_width_deg"],
                        d["start_px"], d["end_px"], d["intensity"])
