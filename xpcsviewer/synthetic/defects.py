"""Detector defects planted in simulated data, each with its physics.

``beamstop_fan``: parasitic scattering from the beam-stop edge, a fan of diffuse
intensity running outward from the beam stop. The beam stop does not move, so the
fan is a *static* field, coherent with the sample's speckle. Pixels it covers see
heterodyne mixing (``g2 - 1`` gains a term in ``g1`` besides ``|g1|^2``, i.e. a decay
at Gamma instead of 2 Gamma) and the static bins it crosses become inhomogeneous in
intensity, which raises their g2 baseline. The q-bins it crosses therefore fit a tau
that is too long (x1.4-2 in the demo) on a baseline above 1, until the fan is masked.

``hot_pixels``: single detector pixels with the wrong statistics, counts added to the
sample's: ``static`` (a steady Poisson rate, e.g. a hot or stuck pixel: its bin's
ratio of sums then has one pixel far brighter than the rest, which raises the bin's
g2 at every delay) and ``telegraph`` (a rate switched on and off at random, mean
dwell ``dwell_s``: a correlated fluctuation of its own, which adds a decay to g2).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["add_hot_pixels", "beamstop_fan", "defect_field", "hot_pixel_truth"]


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


def hot_pixel_truth(spec: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    """The injected pixels of a spec's ``hot_pixels`` entry as truth entries ({} without)."""
    hp = spec.get("hot_pixels")
    if not hp:
        return {}
    px = hp["pixels"]
    return {
        "hot_pixels": (str(hp.get("description", "pixels with the wrong statistics")), ""),
        "hot_pixel_rows": (np.array([p["row"] for p in px], dtype=np.int64), "pixel"),
        "hot_pixel_cols": (np.array([p["col"] for p in px], dtype=np.int64), "pixel"),
        "hot_pixel_kinds": (",".join(p["kind"] for p in px), ""),
        "hot_pixel_rates": (np.array([p["rate"] for p in px], dtype=np.float64),
                            "photons/frame"),
        "hot_pixel_dwell": (np.array([p.get("dwell_s", 0.0) for p in px], dtype=np.float64),
                            "s"),
    }


def add_hot_pixels(chunks: Iterator[np.ndarray], spec: dict[str, Any], frame_time: float,
                   seed: int) -> Iterator[np.ndarray]:
    """Frame chunks (n, H, W) with the counts of a spec's ``hot_pixels`` added.

    Each entry of ``spec["hot_pixels"]["pixels"]`` has ``row``, ``col``, ``kind``
    (``static`` or ``telegraph``), ``rate`` (photons/frame while on) and for a
    telegraph pixel ``dwell_s`` (mean time in each state). Same seed, same counts.
    """
    hp = spec.get("hot_pixels")
    if not hp:
        yield from chunks
        return
    px = hp["pixels"]
    for p in px:
        if p["kind"] not in ("static", "telegraph"):
            raise ValueError(f"unknown hot pixel kind {p['kind']!r}")
    rng = np.random.default_rng([int(seed), 36])
    state = np.ones(len(px), dtype=np.int64)
    for block in chunks:
        out = np.array(block, copy=True)
        n = out.shape[0]
        for j, p in enumerate(px):
            on = np.ones(n)
            if p["kind"] == "telegraph":
                flips = rng.random(n) < min(1.0, frame_time / float(p["dwell_s"]))
                st = (state[j] + np.cumsum(flips)) % 2
                state[j] = st[-1]
                on = st.astype(np.float64)
            counts = rng.poisson(float(p["rate"]) * on)
            cell = out[:, p["row"], p["col"]].astype(np.int64) + counts
            out[:, p["row"], p["col"]] = np.minimum(cell, np.iinfo(out.dtype).max
                                                    if out.dtype.kind in "iu" else cell)
        yield out
