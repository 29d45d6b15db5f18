"""The demo's faulty acquisitions: every fault the raw-data fault finder looks for, on
known answers.

Three acquisitions of slow Brownian speckle (silica in glycerol, 10 s long so that a
periodic modulation is resolved to 0.1 Hz), each with hot and dead pixels, cosmic-ray
clusters, a block of empty frames, a 37 Hz modulation of one q-bin's intensity and a
bright spot at the counter's cap (:mod:`xpcsviewer.synthetic.faults`):

- ``R01``: dense frames, HDF5 ``/entry/data/data`` (128 x 128, lzf), 8-bit counter
  (cap 255, written as the detector's ``saturation_value``);
- ``R02``: a Rigaku XSPA ``.bin`` in its 2-bit mode (counts 0..3, cap 3);
- ``R03``: ESRF ID10 sparse (CSR) HDF5 in two blocks, a 16-bit counter (cap 65535).

They are written like the photon-sparse acquisitions of
:mod:`~xpcsviewer.synthetic.demo_sparse` (raw files and q-map in ``raw/``, a result
correlated from them, so the faults' effect on g2 can be seen) and
``raw/truth.json`` lists their planted faults under ``faults`` in the findings contract
of ``xpcsviewer inspect``, with the command that finds them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FAULT_SPECS"]

# slow dynamics for millisecond frames: D = kT / (6 pi eta R) ~ 2e5 Angstrom^2/s
_GLYCEROL = {"model": "brownian", "temperature_k": 298.15, "viscosity_pa_s": 1.0,
             "radius_m": 100e-9, "contrast": 0.25}
_MOD = {"frequency_hz": 37.0, "amplitude": 0.5}

FAULT_SPECS: list[dict[str, Any]] = [
    {
        "name": "R01_dense_faults",
        "description": "dense HDF5 frames (128 x 128, 8-bit counter) with planted faults: "
                       "3 hot and 3 dead pixels, 3 cosmic-ray clusters, 40 empty frames, a "
                       "37 Hz modulation of q-bin 2, a bright spot at the cap",
        "layout": "hdf5",
        "geometry": {"shape": (128, 128), "energy_kev": 10.0, "det_dist_m": 5.0,
                     "pixel_size_m": 75e-6, "bcx": 64.0, "bcy": 64.0},
        "roi": {"row": 0, "col": 0, "rows": 128, "cols": 128},
        "beamstop_px": 6,
        "partition": {"dq_num": 4, "sq_num": 16, "r_max_px": 60},
        "acquisition": {"frame_time": 5e-3, "n_frames": 2000, "rate": 0.04,
                        "background": 0.3, "speckle_px": 2},
        "sample": _GLYCEROL,
        "analysis": ("Multitau",),
        "faults": {
            "cap": 255,
            "hot_pixels": [{"row": 40, "col": 90, "rate": 2.0},
                           {"row": 100, "col": 70, "rate": 1.0},
                           {"row": 64, "col": 114, "rate": 3.0}],
            "dead_pixels": [[64, 76], [52, 64], [75, 55]],
            "cosmics": [{"frame": 317, "pixels": [[30, 30], [30, 31], [31, 31], [32, 31]],
                         "counts": 60},
                        {"frame": 1101, "pixels": [[90, 40], [91, 41], [92, 42]],
                         "counts": 45},
                        {"frame": 1733, "pixels": [[100, 90], [100, 91], [100, 92],
                                                   [101, 90], [101, 91], [101, 92]],
                         "counts": 80}],
            "empty_frames": [[900, 939]],
            "modulation": {"q_bin": 2, **_MOD},
            "at_cap": [{"pixels": [[20, 100], [20, 101], [21, 100], [21, 101]],
                        "frames": [1200, 1599], "rate": 400.0}],
        },
    },
    {
        "name": "R02_rigaku_2bit_faults",
        "description": "APS Rigaku XSPA .bin in 2-bit mode (counts 0-3) with planted "
                       "faults: 2 hot and 2 dead pixels, 2 cosmic-ray clusters, 50 empty "
                       "frames, a 37 Hz modulation of q-bin 2, a bright spot at the cap",
        "layout": "rigaku",
        "geometry": {"shape": (512, 1024), "energy_kev": 10.0, "det_dist_m": 5.0,
                     "pixel_size_m": 76e-6, "bcx": 512.0, "bcy": 256.0},
        "roi": {"row": 224, "col": 480, "rows": 64, "cols": 64},
        "beamstop_px": 5,
        "partition": {"dq_num": 4, "sq_num": 16, "r_max_px": 31},
        "acquisition": {"frame_time": 2.5e-3, "n_frames": 4000, "rate": 0.03,
                        "background": 0.3, "speckle_px": 2},
        "sample": _GLYCEROL,
        "analysis": ("Multitau",),
        "faults": {
            "cap": 3,
            "hot_pixels": [{"row": 240, "col": 500, "rate": 0.6},
                           {"row": 276, "col": 530, "rate": 0.8}],
            "dead_pixels": [[256, 520], [248, 507]],
            # 2-bit counts: a cluster is told from a coherent speckle from ~5 pixels on
            "cosmics": [{"frame": 777, "pixels": [[235, 525], [235, 526], [236, 526],
                                                  [236, 527], [237, 527]], "counts": 3},
                        {"frame": 3210, "pixels": [[280, 495], [281, 495], [281, 496],
                                                   [282, 496], [282, 497]],
                         "counts": 3}],
            "empty_frames": [[2000, 2049]],
            "modulation": {"q_bin": 2, **_MOD},
            "at_cap": [{"pixels": [[230, 500], [230, 501], [231, 501]],
                        "frames": [500, 1499], "rate": 8.0}],
        },
    },
    {
        "name": "R03_esrf_csr_faults",
        "description": "ESRF ID10 sparse (CSR) HDF5, 2 block files, 16-bit counter, with "
                       "planted faults: 2 hot and 2 dead pixels, 2 cosmic-ray clusters, 30 "
                       "empty frames, a 37 Hz modulation of q-bin 2, a bright spot at the cap",
        "layout": "esrf-csr",
        "geometry": {"shape": (256, 256), "energy_kev": 10.0, "det_dist_m": 5.0,
                     "pixel_size_m": 75e-6, "bcx": 128.0, "bcy": 128.0},
        "roi": {"row": 96, "col": 96, "rows": 64, "cols": 64},
        "beamstop_px": 5,
        "partition": {"dq_num": 4, "sq_num": 16, "r_max_px": 31},
        "acquisition": {"frame_time": 2.5e-3, "n_frames": 4000, "rate": 0.03,
                        "background": 0.3, "speckle_px": 2, "frames_per_block": 2000,
                        "count_dtype": "uint16"},
        "sample": _GLYCEROL,
        "analysis": ("Multitau",),
        "faults": {
            "cap": 65535,
            "hot_pixels": [{"row": 110, "col": 140, "rate": 1.5},
                           {"row": 150, "col": 120, "rate": 0.7}],
            "dead_pixels": [[128, 136], [121, 128]],
            "cosmics": [{"frame": 1500, "pixels": [[105, 115], [105, 116], [106, 115],
                                                   [106, 116]], "counts": 50},
                        {"frame": 2600, "pixels": [[150, 140], [151, 141], [152, 141]],
                         "counts": 35}],
            "empty_frames": [[3100, 3129]],
            "modulation": {"q_bin": 2, **_MOD},
            "at_cap": [{"pixels": [[100, 128], [100, 129]], "frames": [0, 2999],
                        "rate": 1e5}],
        },
    },
]
