"""The specs of the built-in demo set (what each file simulates, with its truth), and its
version; :mod:`xpcsviewer.synthetic.demo` makes the files from them."""

from __future__ import annotations

from typing import Any

from xpcsviewer.synthetic.demo_faults import FAULT_SPECS
from xpcsviewer.synthetic.demo_sparse import SPARSE_SPECS
from xpcsviewer.synthetic.demo_xsvs import XSVS_SPECS

__all__ = ["DEMO_RECORD", "DEMO_SPECS", "DEMO_VERSION"]

#: Bump when the simulator or correlator changes what a demo file holds: files of
#: another version are then not reused (``xpcsviewer demo`` asks for --overwrite).
DEMO_VERSION = 4  # 2: the two-time files state tau(t_w) (issue 35), C02 and H01 added;
#                  3: the raw folder's faulty acquisitions R01-R03 (issue 45);
#                  4: the XSVS acquisitions X01, X02 (issue 46)
#: Where each demo file records what it is (version, name, seeds, spec hash).
DEMO_RECORD = "/xpcs/demo"

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
        # pixel_groups: two-time maps of 16 groups of 8-px tiles (errors of the age cuts)
        "twotime": {"n_frames": 500, "bins": [1, 2, 3, 4], "pixel_groups": 16},
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
        "description": "silica R = 250 nm degrading in the beam: intensity falls and dynamics "
                       "speed up",
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
    # One photon-sparse acquisition per raw layout (Rigaku module and 3M, ESRF CSR blocks,
    # ImageD11, Timepix time tags): raw files in raw/, results correlated on photons.
    *SPARSE_SPECS,
    # Single detector pixels with the wrong statistics (issue 36; last, so that the
    # other files keep their seeds): two stuck-bright and two telegraph pixels inflate
    # their bins' g2 until the pixel audit finds them and they are masked and g2
    # regrouped (tests/compute/test_pixel_audit_demo.py).
    {
        "name": "H01_hot_pixels_R100nm",
        "description": "silica R = 100 nm in water-glycerol; four detector pixels with the "
                       "wrong statistics (two stuck bright, two telegraph)",
        "geometry": _GEOMETRY,
        "beamstop_px": _BEAMSTOP,
        # every bin decorrelates >= 50 times in the run (its g2 plateau is then
        # 1 + contrast to well under 1 %) and decays by < 10 % at the first delay
        "partition": {"dq_num": 10, "sq_num": 40, "q_min": 0.004, "q_max": 0.011},
        "acquisition": {**_ACQ, "frame_time": 1e-4, "n_frames": 4000, "rate": 10.0},
        "sample": {
            "model": "brownian",
            "radius_m": 100e-9,
            "temperature_k": 298.15,
            "viscosity_pa_s": 0.025,
            "contrast": 0.2,
        },
        "hot_pixels": {
            "description": "two stuck-bright pixels (steady Poisson counts) and two "
                           "telegraph pixels (counts switched on and off at random)",
            "pixels": [
                {"row": 40, "col": 80, "kind": "static", "rate": 4.0},
                {"row": 95, "col": 100, "kind": "static", "rate": 2.0},
                {"row": 70, "col": 30, "kind": "telegraph", "rate": 5.0, "dwell_s": 0.01},
                {"row": 20, "col": 50, "kind": "telegraph", "rate": 4.0, "dwell_s": 0.02},
            ],
        },
        "save_g2_pixel": True,
        "analysis": ("Multitau",),
    },
    # The null of the ageing gel (issue 35; last, so that the other files keep their
    # seeds): the same sample, geometry and frames without ageing, so g2 by age finds
    # no trend and the two ways of cutting the map agree.
    {
        "name": "C02_stationary_gel_twotime",
        "description": "the C01 gel without ageing: stationary dynamics (two-time null)",
        "geometry": _GEOMETRY,
        "beamstop_px": _BEAMSTOP,
        "partition": {"dq_num": 8, "sq_num": 64},
        "acquisition": {**_ACQ, "frame_time": 0.02, "n_frames": 500, "rate": 3.0},
        "sample": {
            "model": "brownian",
            "radius_m": 100e-9,
            "temperature_k": 298.15,
            "viscosity_pa_s": 2.0,
            "contrast": 0.2,
        },
        "analysis": ("Twotime",),
        # pixel_groups: two-time maps of 16 groups of 8-px tiles (errors of the age cuts)
        "twotime": {"n_frames": 500, "bins": [1, 2, 3, 4], "pixel_groups": 16},
    },
    # Raw acquisitions with planted faults and their truth (issue 45; last, so that the
    # other files keep their seeds): dense HDF5, Rigaku 2-bit, ESRF CSR, for the fault
    # finder of `xpcsviewer inspect` and the Raw tab.
    *FAULT_SPECS,
    # Speckle of known contrast (M = 2) and tau per q-bin for XSVS (issue 46; last, so
    # that the other files keep their seeds): a Rigaku 2-bit .bin (counts clipped at 3)
    # and a Timepix event list with tau from 10 us to 10 ms, truth per q-bin in
    # raw/truth.json.
    *XSVS_SPECS,
]
