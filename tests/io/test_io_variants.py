"""Every layout variant of result-file-format.md §13 (and the legacy layout) reads the same."""

from __future__ import annotations

import shutil

import h5py
import numpy as np
import pytest

from xpcsviewer.io import (
    read_c2,
    read_result,
    read_saxs_2d,
    scan_folder,
)
from xpcsviewer.io.results.reader import _g2_valid, g2_outliers


def _copy(src, tmp_path, name="v_results.hdf"):
    dst = tmp_path / name
    shutil.copy(src, dst)
    return dst


def _replace(f, path, value):
    del f[path]
    f[path] = value


@pytest.mark.parametrize("stem", ["normalized_g2_partial", "normalized_g2_segments"])
def test_partial_g2_either_key(tmp_path, small_file, stem):
    p = _copy(small_file, tmp_path)
    base = read_result(small_file).multitau
    t, nd = base.g2.shape
    part = np.random.default_rng(1).random((3, t, nd)).astype(np.float32)
    part[0, 0, 0] = 0.0
    with h5py.File(p, "a") as f:
        f[f"/xpcs/multitau/{stem}"] = part
        f[f"/xpcs/multitau/{stem}_err"] = part * 0.1
        f[f"/xpcs/multitau/{stem}_labels"] = np.array([10, 20, 30])
    mt = read_result(p).multitau
    assert np.isnan(mt.g2_partial[0, 0, 0])  # zeros are snapshots without photons
    np.testing.assert_allclose(mt.g2_partial[1:], part[1:], rtol=1e-7)
    np.testing.assert_array_equal(mt.g2_partial_labels, [10, 20, 30])
    assert mt.g2_partial_err.shape == (3, t, nd)


def test_saxs2d_two_dims_scalars_11_bytes_and_no_hash(tmp_path, small_file):
    p = _copy(small_file, tmp_path)
    ref = read_result(small_file)
    img = read_saxs_2d(small_file)
    with h5py.File(p, "a") as f:
        _replace(
            f, "/xpcs/temporal_mean/scattering_2d", img.astype(np.float32)
        )  # (H, W)
        _replace(
            f, "/entry/instrument/detector_1/frame_time", np.array([[1e-3]], np.float32)
        )
        _replace(f, "/xpcs/qmap/beam_center_x", np.array([[30.5]]))
        _replace(
            f, "/xpcs/qmap/map_names", np.array([b"q", b"phi"])
        )  # fixed-length bytes
        _replace(
            f,
            "/xpcs/qmap/map_units",
            np.array(["\u00c5\u207b\u00b9".encode(), b"deg"], dtype=object),
        )
        _replace(f, "/xpcs/multitau/config/stride_frame", np.array([[1]], np.uint64))
        _replace(
            f, "/entry/start_time", "2026-01-01T00:00:00"
        )  # vlen str instead of bytes
        del f["/xpcs/qmap"].attrs["hash"]
    r = read_result(p)
    np.testing.assert_allclose(read_saxs_2d(p), img, rtol=1e-6)
    assert r.frame_time == 1e-3 and r.qmap.beam_center_x == 30.5
    assert (
        r.qmap.map_names == ("q", "phi") and r.qmap.map_units[0] == "\u00c5\u207b\u00b9"
    )
    assert r.multitau.stride_frame == 1
    assert r.qmap.hash == ref.qmap.hash  # computed from the content when absent
    assert r.qmap.dynamic_labels() == ref.qmap.dynamic_labels()


def test_energy_fallback_and_disagreement_warning(tmp_path, small_file):
    p = _copy(small_file, tmp_path)
    with h5py.File(p, "a") as f:
        _replace(f, "/entry/instrument/incident_beam/incident_energy", 12.0)
        _replace(f, "/entry/instrument/detector_1/distance", 9.0)
    r = read_result(p)
    assert r.qmap.energy_kev == 10.0 and r.qmap.detector_distance == 5.0
    assert any("energy" in w for w in r.warnings) and any(
        "distance" in w for w in r.warnings
    )
    with h5py.File(p, "a") as f:
        del f["/xpcs/qmap/energy"]
    assert read_result(p).qmap.energy_kev == 12.0


def test_missing_points_and_nonfinite_masked_and_reported(tmp_path, small_file):
    p = _copy(small_file, tmp_path)
    with h5py.File(p, "a") as f:
        g = f["/xpcs/multitau/normalized_g2"][()]
        e = f["/xpcs/multitau/normalized_g2_err"][()]
        g[0, 0], e[0, 0] = 0.0, 0.0  # no photons
        g[1, 1] = np.nan
        e[2, 2] = np.inf
        g[3, 3] = 0.0  # a genuine zero with an error is data, not missing
        _replace(f, "/xpcs/multitau/normalized_g2", g)
        _replace(f, "/xpcs/multitau/normalized_g2_err", e)
    r = read_result(p)
    v = r.multitau.valid
    assert not v[0, 0] and not v[1, 1] and not v[2, 2]
    assert any("NaN or Inf" in w and "normalized_g2" in w for w in r.warnings)
    assert any("3 of" in w and "missing data" in w for w in r.warnings)
    # the rest is valid except the points that cannot be measurements
    missing = np.zeros(g.shape, bool)
    missing[[0, 1, 2], [0, 1, 2]] = True
    np.testing.assert_array_equal(v, ~missing & ~g2_outliers(g, ~missing))
    # only the (0, 0) pair is the no-photon sentinel: a zero with an error is data
    assert _g2_valid(np.array([0.0, 0.0]), np.array([0.0, 0.1])).tolist() == [False, True]


def test_stride_and_avg_scale_delays(tmp_path, small_file):
    p = _copy(small_file, tmp_path)
    with h5py.File(p, "a") as f:
        _replace(f, "/xpcs/multitau/config/stride_frame", 2)
        _replace(f, "/xpcs/multitau/config/avg_frame", 3)
        _replace(f, "/xpcs/twotime/config/stride_frame", 5)
    r = read_result(p)
    assert r.multitau.t0_eff == pytest.approx(6e-3)
    np.testing.assert_allclose(r.multitau.tau, r.multitau.delay_frames * 6e-3)
    assert r.twotime.t0 == pytest.approx(5e-3)  # the two-time analysis's own step
    assert read_c2(p, 0, max_size=100).t0 == pytest.approx(5e-3 * 2)


def _write_legacy(path, rng):
    """A legacy (/exchange) file as the 2023 correlator wrote it (§10), built by hand."""
    h, w, nq, nphi = 20, 24, 4, 2
    yy, xx = np.mgrid[0:h, 0:w]
    r = np.hypot(yy - 10, xx - 12)
    ang = np.arctan2(-(yy - 10), xx - 12)
    mask = r > 1.5
    qbin = np.clip((r / r.max() * nq).astype(int), 0, nq - 1)
    pbin = (ang > 0).astype(int)
    dq = np.where(mask, qbin * nphi + pbin + 1, 0)
    t = 12
    with h5py.File(path, "w") as f:
        f["/xpcs/Version"] = "1.0"
        f["/xpcs/analysis_type"] = "Multitau"
        f["/xpcs/dqmap"] = dq.astype(np.uint16)
        f["/xpcs/sqmap"] = dq.astype(np.uint16)
        f["/xpcs/mask"] = mask.astype(np.uint8)
        f["/xpcs/dqlist"] = np.linspace(0.001, 0.004, nq)[
            None, :
        ]  # (1, N) from the old writer
        f["/xpcs/sqlist"] = np.linspace(0.001, 0.004, nq)[None, :]
        f["/xpcs/dphilist"] = np.array([[-90.0, 90.0]])
        f["/xpcs/sphilist"] = np.array([[-90.0, 90.0]])
        for k in ("dnoq", "snoq"):
            f[f"/xpcs/{k}"] = np.array([[nq]], np.uint64)
        for k in ("dnophi", "snophi"):
            f[f"/xpcs/{k}"] = np.array([[nphi]], np.uint64)
        f["/xpcs/stride_frames"] = np.array([[1]], np.uint64)
        f["/xpcs/avg_frames"] = np.array([[2]], np.uint64)
        m = "/measurement/instrument"
        f[f"{m}/detector/exposure_period"] = np.array([[0.01]])
        f[f"{m}/detector/exposure_time"] = np.array([[0.009]])
        f[f"{m}/detector/distance"] = np.array([[4.0]])
        f[f"{m}/detector/x_pixel_size"] = np.array([[75e-6]])
        f[f"{m}/acquisition/beam_center_x"] = np.array([[12.0]])
        f[f"{m}/acquisition/beam_center_y"] = np.array([[10.0]])
        f[f"{m}/source_begin/energy"] = np.array([[8.0]])
        n = nq * nphi
        g2 = 1 + 0.2 * rng.random((t, n))
        f["/exchange/tau"] = np.arange(1, t + 1, dtype=float)[None, :]
        f["/exchange/norm-0-g2"] = g2
        f["/exchange/norm-0-stderr"] = 0.01 * np.ones((t, n))
        f["/exchange/partition-mean-total"] = rng.random((1, n))
        f["/exchange/partition-mean-partial"] = rng.random((10, n))
        f["/exchange/pixelSum"] = rng.random((h, w))
        f["/exchange/frameSum"] = np.vstack([np.arange(50.0), rng.random(50)])
    return g2, mask


def test_legacy_layout(tmp_path, rng):
    p = tmp_path / "old_0001.hdf"
    g2, mask = _write_legacy(p, rng)
    r = read_result(p)
    assert r.layout == "legacy" and r.analysis_type == ("Multitau",)
    assert (
        r.frame_time == 0.01
        and r.qmap.energy_kev == 8.0
        and r.qmap.detector_distance == 4.0
    )
    assert r.qmap.n_dynamic == 8 and r.qmap.dynamic_num_pts == (4, 2)
    np.testing.assert_allclose(r.multitau.g2, g2)
    np.testing.assert_allclose(
        r.multitau.tau, np.arange(1, 13) * 0.02
    )  # avg_frames = 2
    np.testing.assert_array_equal(r.qmap.mask, mask)
    assert r.qmap.dynamic_labels()[1] == "q=0.00100 \u00c5\u207b\u00b9, \u03c6=90.0 deg"
    assert read_saxs_2d(p).shape == (20, 24)
    assert scan_folder(tmp_path)[0].n_dynamic == 8
    assert r.metadata["measurement/instrument/detector/distance"] == 4.0


def test_c2_single_chunk_as_the_standard_correlator_writes(
    tmp_path, small_file, small_built
):
    p = _copy(small_file, tmp_path)
    full = small_built[1]["c2_maps"][0]
    with h5py.File(p, "a") as f:
        g = f["/xpcs/twotime/correlation_map"]
        c = g["c2_00001"][()]
        del g["c2_00001"]
        g.create_dataset("c2_00001", data=c, chunks=c.shape, compression="lzf")
    v = read_c2(p, 0, max_size=70)
    assert v.stride == 3
    np.testing.assert_allclose(v.c2, full[::3, ::3], rtol=1e-6)
