"""The built-in demo data set: realistic result files with known true parameters.

Each file is described by a spec (see :func:`xpcsviewer.synthetic.results.build_result`)
with its geometry, partition, acquisition and sample truth; the truth is written
under ``/entry/sample`` (D in Angstrom^2/s, radius, temperature, viscosity,
contrast, model) so that fits can be checked against it. For now g2 and C2 come
from the analytic model plus realistic noise.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from xpcsviewer.io.writer import write_result
from xpcsviewer.progress import CancelToken, ProgressCallback, report
from xpcsviewer.synthetic.results import build_result

__all__ = ["DEMO_SPECS", "write_demo"]

# A small detector (256 x 256, 75 um pixels) 5 m from the sample at 10 keV:
# q from ~0.0004 to ~0.014 1/Angstrom.
_GEOMETRY = {
    "shape": (256, 256),
    "energy_kev": 10.0,
    "det_dist_m": 5.0,
    "pixel_size_m": 75e-6,
    "bcx": 127.5,
    "bcy": 131.0,
}
_FAST = {"frame_time": 1e-5, "n_frames": 100_000, "rate": 0.2}

DEMO_SPECS: list[dict[str, Any]] = [
    {
        "name": "A01_silica_R100nm_water",
        "description": "silica colloids, radius 100 nm, in water at 25 C (Brownian)",
        "geometry": _GEOMETRY,
        "beamstop_px": 6,
        "partition": {"dq_num": 16, "sq_num": 128},
        "acquisition": _FAST,
        "sample": {
            "model": "brownian",
            "radius_m": 100e-9,
            "temperature_k": 298.15,
            "contrast": 0.22,
        },
        "analysis": ("Multitau",),
    },
    {
        "name": "A02_silica_R250nm_water",
        "description": "silica colloids, radius 250 nm, in water at 25 C (Brownian)",
        "geometry": _GEOMETRY,
        "beamstop_px": 6,
        "partition": {"dq_num": 16, "sq_num": 128},
        "acquisition": _FAST,
        "sample": {
            "model": "brownian",
            "radius_m": 250e-9,
            "temperature_k": 298.15,
            "contrast": 0.22,
        },
        "analysis": ("Multitau",),
    },
    {
        "name": "A03_silica_R500nm_water",
        "description": "silica colloids, radius 500 nm, in water at 25 C (Brownian)",
        "geometry": _GEOMETRY,
        "beamstop_px": 6,
        "partition": {"dq_num": 16, "sq_num": 128},
        "acquisition": {**_FAST, "rate": 0.4},
        "sample": {
            "model": "brownian",
            "radius_m": 500e-9,
            "temperature_k": 298.15,
            "contrast": 0.22,
        },
        "analysis": ("Multitau",),
    },
    {
        "name": "B01_sheared_R250nm_qphi",
        "description": "silica R = 250 nm under shear: faster decay along the flow (phi = 0)",
        "geometry": _GEOMETRY,
        "beamstop_px": 6,
        "partition": {"dq_num": 8, "sq_num": 64, "dp_num": 8, "sp_num": 16},
        "acquisition": _FAST,
        "sample": {
            "model": "sheared",
            "radius_m": 250e-9,
            "temperature_k": 298.15,
            "contrast": 0.2,
            "flow_rate": 5e5,
            "flow_angle_deg": 0.0,
        },
        "analysis": ("Multitau",),
    },
    {
        "name": "C01_ageing_gel_twotime",
        "description": "colloidal gel ageing: dynamics slow down with time (two-time)",
        "geometry": _GEOMETRY,
        "beamstop_px": 6,
        "partition": {"dq_num": 8, "sq_num": 64},
        "acquisition": {"frame_time": 0.05, "n_frames": 500, "rate": 5.0},
        "sample": {
            "model": "ageing",
            "radius_m": 100e-9,
            "temperature_k": 298.15,
            "viscosity_pa_s": 1.0,
            "contrast": 0.18,
            "ageing_time_s": 5.0,
        },
        "analysis": ("Twotime",),
        "twotime": {"n_frames": 500, "bins": [2, 4, 6]},
    },
    {
        "name": "D01_silica_R250nm_both",
        "description": "silica R = 250 nm in water, multi-tau and two-time from the same run",
        "geometry": _GEOMETRY,
        "beamstop_px": 6,
        "partition": {"dq_num": 8, "sq_num": 64},
        "acquisition": {"frame_time": 1e-4, "n_frames": 600, "rate": 2.0},
        "sample": {
            "model": "brownian",
            "radius_m": 250e-9,
            "temperature_k": 298.15,
            "contrast": 0.2,
        },
        "analysis": ("Multitau", "Twotime"),
        "twotime": {"n_frames": 600, "bins": [2, 5]},
    },
    {
        "name": "E01_beam_damage_R250nm",
        "description": "silica R = 250 nm degrading in the beam: intensity falls and dynamics speed up",
        "geometry": _GEOMETRY,
        "beamstop_px": 6,
        "partition": {"dq_num": 16, "sq_num": 128},
        "acquisition": _FAST,
        "sample": {
            "model": "damage",
            "radius_m": 250e-9,
            "temperature_k": 298.15,
            "contrast": 0.2,
            "damage_time_s": 0.5,
        },
        "analysis": ("Multitau",),
    },
]


def write_demo(
    out_dir: str | Path,
    seed: int = 0,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    overwrite: bool = True,
) -> list[Path]:
    """Write the demo result files into ``out_dir`` (created if needed).

    Parameters
    ----------
    out_dir : str or Path
    seed : int
        Same seed, same numbers.
    progress, cancel :
        Reported / checked once per file.
    overwrite : bool
        Replace existing demo files of the same name.

    Returns
    -------
    list of Path
        The written files, in the order of :data:`DEMO_SPECS`.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    n = len(DEMO_SPECS)
    for i, spec in enumerate(DEMO_SPECS):
        report(progress, cancel, i, n, spec["name"])
        res, extras = build_result(copy.deepcopy(spec), seed=seed * 1000 + i)
        path = out / f"{spec['name']}_results.hdf"
        res.path = path
        write_result(
            path,
            res,
            saxs_2d=extras["saxs_2d"],
            c2_maps=extras["c2_maps"],
            overwrite=overwrite,
        )
        paths.append(path)
    report(progress, cancel, n, n, "done")
    return paths
