"""Masking of g2 points that cannot be measurements (wild values of real files)."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.io import read_result
from xpcsviewer.io.results.reader import G2_MAX, g2_outliers


def test_range_and_isolated_spikes_masked_real_decays_kept():
    tau = np.geomspace(1e-5, 1.0, 60)
    rng = np.random.default_rng(0)
    clean = 1.0 + 0.9 * np.exp(-2 * tau / 3e-5)  # contrast 0.9, gone in a few delays
    noisy = 1.1 + rng.normal(0, 0.4, tau.size)  # photon-starved but honest
    spiky = 1.0 + 0.2 * np.exp(-2 * tau / 1e-3) + rng.normal(0, 0.01, tau.size)
    spiky[[0, 20, 41]] = [336.0, 2.6, -0.2]  # out of range, spike, impossible
    g2 = np.stack([clean, np.clip(noisy, 0.05, G2_MAX - 0.01), spiky], axis=1)
    valid = np.ones(g2.shape, bool)
    valid[5, 2] = False  # already missing: not reported again
    bad = g2_outliers(g2, valid)
    assert not bad[:, 0].any() and not bad[:, 1].any()
    assert set(np.flatnonzero(bad[:, 2])) == {0, 20, 41}
    assert not (bad & ~valid).any()


def test_reader_masks_and_reports(tmp_path):
    from xpcsviewer.io import write_result
    from xpcsviewer.synthetic.results import build_result

    spec = {
        "name": "spike",
        "geometry": {"shape": (48, 48), "bcx": 24.0, "bcy": 24.0, "det_dist_m": 5.0},
        "partition": {"dq_num": 4, "sq_num": 8},
        "acquisition": {"frame_time": 1e-4, "n_frames": 2000, "rate": 1.0},
        "sample": {"model": "brownian", "radius_m": 250e-9, "contrast": 0.2},
    }
    res, extras = build_result(spec, seed=1)
    res.multitau.g2[3, 1] = 250.0
    path = write_result(tmp_path / "spike_results.hdf", res, saxs_2d=extras["saxs_2d"])
    back = read_result(path)
    assert not back.multitau.valid[3, 1]
    assert back.multitau.g2[3, 1] == pytest.approx(250.0)  # the data are not changed
    assert back.multitau.valid.sum() == back.multitau.valid.size - 1
    assert any("1 points are outliers" in w for w in back.warnings)


def test_real_buffer_file_wild_points_masked(real_data_dir):
    f = next((real_data_dir / "aps8idi_llps_saxpcs").glob("*Buffer*.hdf"))
    mt = read_result(f).multitau
    assert mt.g2.max() > 300  # the file does hold the wild values...
    assert mt.g2[mt.valid].max() <= G2_MAX  # ...and none of them is valid


def test_neighbour_median_equals_numpy_nanmedian():
    import warnings

    from xpcsviewer.io.results._analysis import _nanmedian_rows

    rng = np.random.default_rng(3)
    a = rng.normal(size=(4, 500))
    a[rng.random(a.shape) < 0.35] = np.nan  # every count of values 0..4 occurs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = np.nanmedian(a, axis=0)
    assert set(np.isfinite(a).sum(axis=0)) == {0, 1, 2, 3, 4}
    np.testing.assert_array_equal(np.isnan(_nanmedian_rows(a)), np.isnan(ref))
    np.testing.assert_allclose(_nanmedian_rows(a), ref, rtol=0, atol=1e-15, equal_nan=True)
