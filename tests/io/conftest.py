"""Fixtures for the io tests: small synthetic result files written by our writer."""

from __future__ import annotations

import pytest

from xpcsviewer.io.results.writer import write_result
from xpcsviewer.synthetic.results import build_result

SMALL_SPEC = {
    "name": "small",
    "geometry": {"shape": (64, 72), "bcx": 30.5, "bcy": 33.0, "det_dist_m": 5.0},
    "partition": {"dq_num": 6, "sq_num": 24, "dp_num": 2, "sp_num": 4},
    "acquisition": {"frame_time": 1e-3, "n_frames": 200, "rate": 0.3},
    "sample": {"radius_m": 150e-9, "contrast": 0.2},
    "analysis": ("Multitau", "Twotime"),
    "twotime": {"n_frames": 200, "bins": [1, 3, 5]},
}


@pytest.fixture
def small_built():
    """(XpcsResult, extras) of a small "both" file, built in memory."""
    return build_result(SMALL_SPEC, seed=3)


@pytest.fixture
def small_file(tmp_path, small_built):
    """Path of the small "both" file written by our writer."""
    res, extras = small_built
    path = tmp_path / "small_results.hdf"
    write_result(path, res, saxs_2d=extras["saxs_2d"], c2_maps=extras["c2_maps"])
    return path
