"""The built-in demo data set: result files made from simulated frames by our correlator.

Each file is described by a spec (see :func:`xpcsviewer.synthetic.results.build_result`
for the keys) with its geometry, partition, acquisition and sample truth. Photon-
counting speckle frames are simulated (:mod:`xpcsviewer.synthetic.speckle`) and run
through our own multi-tau / two-time correlator
(:func:`xpcsviewer.synthetic.simulated.simulate_result`); the truth is written under
``/entry/sample`` (D in Angstrom^2/s, radius, temperature, viscosity, contrast, model)
so that fits can be checked against it.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from xpcsviewer.compute.multitau import delay_list
from xpcsviewer.io.g2stack import write_result_with_g2_stack
from xpcsviewer.io.writer import write_result
from xpcsviewer.progress import CancelToken, ProgressCallback, report
from xpcsviewer.synthetic.simulated import simulate_result

__all__ = ["DEMO_SPECS", "write_demo"]

# A small detector (128 x 128 pixels of 150 um, e.g. a 2x2-binned 75 um detector)
# 5 m from the sample at 10 keV: q from ~0.0006 to ~0.0137 1/Angstrom. Speckles
# are 2 x 2 pixels.
_GEOMETRY = {
    "shape": (128, 128),
    "energy_kev": 10.0,
    "det_dist_m": 5.0,
    "pixel_size_m": 150e-6,
    "bcx": 63.5,
    "bcy": 65.0,
}
_ACQ = {"frame_time": 1e-4, "n_frames": 1000, "rate": 1.0, "background": 0.05}
_BEAMSTOP = 8

DEMO_SPECS: list[dict[str, Any]] = [
    {
        "name": "A01_silica_R100nm_water",
        "description": "silica colloids, radius 100 nm, in water at 25 C (Brownian)",
        "geometry": _GEOMETRY,
        "beamstop_px": _BEAMSTOP,
        "partition": {"dq_num": 16, "sq_num": 64},
        "acquisition": {**_ACQ, "frame_time": 4e-5, "n_frames": 2000},
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
        "beamstop_px": _BEAMSTOP,
        "partition": {"dq_num": 16, "sq_num": 64},
        "acquisition": {**_ACQ, "frame_time": 1e-4, "n_frames": 2000},
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
        "beamstop_px": _BEAMSTOP,
        "partition": {"dq_num": 16, "sq_num": 64},
        "acquisition": {**_ACQ, "frame_time": 2e-4, "n_frames": 2000, "rate": 1.5},
        "sample": {
            "model": "brownian",
            "radius_m": 500e-9,
            "temperature_k": 298.15,
            "contrast": 0.22,
        },
        "analysis": ("Multitau",),
    },
    {
        "name": "B01_sheared_R100nm_qphi",
        "description": "silica R = 100 nm under shear: faster decay along the flow (phi = 0)",
        "geometry": _GEOMETRY,
        "beamstop_px": _BEAMSTOP,
        "partition": {"dq_num": 8, "sq_num": 32, "dp_num": 8, "sp_num": 16},
        "acquisition": {**_ACQ, "frame_time": 2e-5, "rate": 3.0},
        "sample": {
            "model": "sheared",
            "radius_m": 100e-9,
            "temperature_k": 298.15,
            "contrast": 0.2,
            "flow_rate": 1e6,
            "flow_angle_deg": 0.0,
        },
        "analysis": ("Multitau",),
    },
    {
        "name": "C01_ageing_gel_twotime",
        "description": "colloidal gel ageing: dynamics slow down with time (two-time)",
        "geometry": _GEOMETRY,
        "beamstop_px": _BEAMSTOP,
        "partition": {"dq_num": 8, "sq_num": 64},
        "acquisition": {**_ACQ, "frame_time": 0.02, "n_frames": 500, "rate": 3.0},
        "sample": {
            "model": "ageing",
            "radius_m": 100e-9,
            "temperature_k": 298.15,
            "viscosity_pa_s": 2.0,
            "contrast": 0.2,
            "ageing_time_s": 2.0,
        },
        "analysis": ("Twotime",),
        "twotime": {"n_frames": 500, "bins": [1, 2, 3, 4]},
    },
    {
        "name": "D01_silica_R250nm_both",
        "description": "silica R = 250 nm in water, multi-tau and two-time from the same run",
        "geometry": _GEOMETRY,
        "beamstop_px": _BEAMSTOP,
        "partition": {"dq_num": 8, "sq_num": 64},
        "acquisition": {**_ACQ, "frame_time": 1e-4, "n_frames": 500, "rate": 2.0},
        "sample": {
            "model": "brownian",
            "radius_m": 250e-9,
            "temperature_k": 298.15,
            "contrast": 0.2,
        },
        "analysis": ("Multitau", "Twotime"),
        "twotime": {"n_frames": 500, "bins": [1, 2, 3]},
    },
    {
        "name": "E01_beam_damage_R250nm",
        "description": "silica R = 250 nm degrading in the beam: intensity falls and dynamics speed up",
        "geometry": _GEOMETRY,
        "beamstop_px": _BEAMSTOP,
        "partition": {"dq_num": 16, "sq_num": 64},
        "acquisition": {**_ACQ, "frame_time": 1e-4, "rate": 4.0},
        "sample": {
            "model": "damage",
            "radius_m": 250e-9,
            "temperature_k": 298.15,
            "contrast": 0.2,
            "damage_time_s": 0.05,
        },
        "analysis": ("Multitau",),
    },
    # Four repeats of one measurement for the Average tab; the fourth was taken on a
    # damaged spot (faster dynamics), so outlier rejection has something to find.
    *[
        {
            "name": f"F0{k}_repeat_R250nm",
            "description": (
                "silica R = 250 nm in water, repeat "
                f"{k} of 4{' (beam-damaged spot)' if k == 4 else ''}"
            ),
            "geometry": _GEOMETRY,
            "beamstop_px": _BEAMSTOP,
            "partition": {"dq_num": 16, "sq_num": 64},
            "acquisition": {**_ACQ, "frame_time": 1e-4, "n_frames": 600, "rate": 2.0},
            "sample": {
                "model": "damage" if k == 4 else "brownian",
                "radius_m": 250e-9,
                "temperature_k": 298.15,
                "contrast": 0.2,
                **({"damage_time_s": 0.02} if k == 4 else {}),
            },
            "analysis": ("Multitau",),
            "start_time": f"2026-01-01T00:{10 * k:02d}:00",
        }
        for k in range(1, 5)
    ],
    # The per-pixel G2 stack (side file), with a defect to find: a fan of static
    # parasitic scattering from the beam-stop edge spoils the low-q bins (baseline above
    # 1, tau too long) until it is masked and g2 regrouped (tests/compute/test_regroup.py).
    {
        "name": "G01_beamstop_fan_R250nm",
        "description": "silica R = 250 nm in water; parasitic scattering from the beam-stop "
                       "edge spoils the low-q bins",
        "geometry": _GEOMETRY,
        "beamstop_px": _BEAMSTOP,
        "partition": {"dq_num": 10, "sq_num": 40, "q_min": 0.002, "q_max": 0.011},
        "acquisition": {**_ACQ, "frame_time": 1.8e-5, "n_frames": 2500, "rate": 3.0},
        "sample": {
            "model": "brownian",
            "radius_m": 250e-9,
            "temperature_k": 298.15,
            "contrast": 0.2,
        },
        "defect": {
            "kind": "beamstop_fan",
            "description": "static parasitic scattering from the beam-stop edge",
            "angle_deg": -40.0,
            "half_width_deg": 30.0,
            "start_px": 8.0,
            "end_px": 45.0,
            "intensity": 1.5,
        },
        "save_g2_pixel": True,
        "analysis": ("Multitau",),
    },
]


def write_demo(
    out_dir: str | Path,
    seed: int = 0,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    overwrite: bool = True,
    names: Sequence[str] | None = None,
    workers: int | None = None,
) -> list[Path]:
    """Simulate, correlate and write the demo result files into ``out_dir``.

    Parameters
    ----------
    out_dir : str or Path
        Created if needed.
    seed : int
        Same seed, same files (file i uses ``seed * 1000 + i``).
    progress, cancel :
        Reported per finished file; cancel is also checked between frame chunks.
    overwrite : bool
        Replace existing demo files of the same name.
    names : sequence of str, optional
        Only the specs with these names (default: all).
    workers : int, optional
        Files simulated at once (default: up to 2, the simulator and correlator
        release the GIL in NumPy).

    Returns
    -------
    list of Path
        The written files, in the order of :data:`DEMO_SPECS`.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    todo = [
        (i, spec) for i, spec in enumerate(DEMO_SPECS) if names is None or spec["name"] in names
    ]
    if names is not None:
        unknown = set(names) - {s["name"] for _, s in todo}
        if unknown:
            raise ValueError(f"unknown demo file(s): {sorted(unknown)}")

    def one(item: tuple[int, dict[str, Any]]) -> Path:
        i, spec = item
        path = out / f"{spec['name']}_results.hdf"

        def produce(sink: Any = None) -> Any:
            made = simulate_result(copy.deepcopy(spec), seed=seed * 1000 + i, cancel=cancel,
                                   g2_pixel_sink=sink)
            made.result.path = path
            return made

        if spec.get("save_g2_pixel"):
            # as `xpcsviewer correlate --save-g2-pixel`: side file + ExternalLink
            n_delays = delay_list(int(spec["acquisition"]["n_frames"]))[0].size
            return write_result_with_g2_stack(
                path, produce, n_delays, tuple(spec["geometry"]["shape"]), overwrite=overwrite
            )[0]
        made = produce()
        return write_result(
            path, made.result, saxs_2d=made.saxs_2d, c2_maps=made.c2_maps, overwrite=overwrite
        )

    n = len(todo)
    n_workers = max(1, min(workers or min(2, os.cpu_count() or 1), n))
    report(progress, cancel, 0, n, "simulating frames and correlating")
    paths: list[Path] = []
    with ThreadPoolExecutor(n_workers) as pool:
        for k, path in enumerate(pool.map(one, todo)):
            paths.append(path)
            report(progress, cancel, k + 1, n, path.name)
    return paths
