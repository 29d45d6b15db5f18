"""Static-bin reductions vs explicit loops, backend parity."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.backends import get_backend
from xpcsviewer.compute.detector.partition import PartitionGrid
from xpcsviewer.compute.detector.qmap import DetectorGeometry
from xpcsviewer.compute.detector.saxs import (
    StaticBinner,
    intensity_vs_time,
    saxs_1d,
    saxs_1d_segments,
    static_bin_mean,
    time_averaged_image,
)
from xpcsviewer.model.result import QMap

BACKENDS = ["numpy", "jax"]


def _roi(rng, h=9, w=11, n=7):
    roi = rng.integers(0, n + 1, (h, w))
    roi[roi == 3] = 0  # bin 3 left empty on purpose
    return roi


@pytest.mark.parametrize("backend", BACKENDS)
def test_static_bin_mean_matches_loop(backend, rng):
    roi = _roi(rng)
    mask = rng.random(roi.shape) > 0.2
    img = rng.random(roi.shape) * 100
    got = static_bin_mean(img, roi, 7, mask, backend=get_backend(backend))
    for b in range(1, 8):
        sel = (roi == b) & mask
        if sel.any():
            assert got[b - 1] == pytest.approx(img[sel].mean(), rel=1e-12)
        else:
            assert np.isnan(got[b - 1])


def test_binner_stack_and_parity(rng):
    roi = _roi(rng)
    imgs = rng.random((4, *roi.shape))
    a = StaticBinner(roi, backend=get_backend("numpy")).mean(imgs)
    b = StaticBinner(roi, backend=get_backend("jax")).mean(imgs)
    k = StaticBinner(roi, backend=get_backend("jax"), engine="backend").mean(imgs)  # jitted
    np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(a, k, rtol=1e-12)
    assert a.shape == (4, 7)
    np.testing.assert_allclose(a[2], StaticBinner(roi, backend=get_backend("numpy")).mean(imgs[2]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_saxs_1d_phi_lines(backend, rng):
    # 3 q x 2 phi grid, compressed bins skip natural index 4 (q=2, phi=0)
    h, w = 6, 6
    natural = rng.integers(0, 6, (h, w))
    natural[natural == 4] = 5
    mapping = np.array([0, 1, 2, 3, 5])
    comp = np.searchsorted(mapping, natural) + 1
    qm = QMap(
        dynamic_roi_map=np.ones((h, w), int), static_roi_map=comp, mask=np.ones((h, w), bool),
        dynamic_v_list_dim0=np.array([0.1]), dynamic_v_list_dim1=np.array([0.0]),
        static_v_list_dim0=np.array([0.01, 0.02, 0.03]), static_v_list_dim1=np.array([-90.0, 90.0]),
        dynamic_index_mapping=np.array([0]), static_index_mapping=mapping,
        dynamic_num_pts=(1, 1), static_num_pts=(3, 2),
    )
    img = rng.random((h, w))
    res = saxs_1d(img, qm, backend=get_backend(backend))
    for iq in range(3):
        for ip in range(2):
            sel = natural == iq * 2 + ip
            want = img[sel].mean() if sel.any() else np.nan
            np.testing.assert_allclose(res.phi_lines[ip, iq], want, rtol=1e-12)
    np.testing.assert_allclose(res.intensity[:2], res.phi_lines[:, :2].mean(axis=0), rtol=1e-12)
    assert res.intensity[2] == pytest.approx(res.phi_lines[1, 2])  # one phi line only


@pytest.mark.parametrize("backend", BACKENDS)
def test_segments_intensity_and_mean_image(backend, rng):
    roi = _roi(rng)
    frames = rng.poisson(3.0, (10, *roi.shape)).astype(float)
    be = get_backend(backend)
    seg = saxs_1d_segments(frames, roi, 3, 7, backend=be)
    bounds = [0, 3, 7, 10]
    for s in range(3):
        m = frames[bounds[s] : bounds[s + 1]].mean(axis=0)
        np.testing.assert_allclose(seg[s, 0], m[roi == 1].mean(), rtol=1e-12)
    mask = roi > 0
    it = intensity_vs_time(frames, mask, backend=be)
    np.testing.assert_allclose(it, [f[mask].mean() for f in frames], rtol=1e-12)
    np.testing.assert_allclose(time_averaged_image(frames, backend=be), frames.mean(0), rtol=1e-12)


def test_binner_is_cached_by_partition_content(rng):
    from dataclasses import replace

    from xpcsviewer.compute.detector.partition import make_partition
    from xpcsviewer.compute.detector.qmap import compute_qmap
    from xpcsviewer.compute.detector.saxs import binner_for, partition_key

    q, phi = compute_qmap((40, 50), 10.0, 5.0, 75e-6, 20.5, 18.0)
    mask = rng.random(q.shape) > 0.1
    qm = make_partition(q, phi, mask, PartitionGrid(2, 20), content_hash=False)
    be = get_backend("numpy")
    b1 = binner_for(qm, backend=be)
    # a second, separately built q-map of the same geometry reuses the binner
    qm2 = make_partition(q, phi, mask, PartitionGrid(2, 20), content_hash=False)
    assert binner_for(qm2, backend=be) is b1
    assert partition_key(qm) == partition_key(qm2)
    with_hash = make_partition(q, phi, mask, PartitionGrid(2, 20))
    assert partition_key(with_hash) == with_hash.hash
    other = replace(qm, mask=mask & (rng.random(q.shape) > 0.5))
    assert binner_for(other, backend=be) is not b1
    img = rng.random(q.shape)
    ref = static_bin_mean(img, qm.static_roi_map, qm.n_static, qm.mask, backend=be)
    np.testing.assert_allclose(saxs_1d(img, qm2, backend=be).compressed, ref, rtol=1e-12)


def test_geometry_partition_is_cached_and_equals_make_partition(rng):
    from xpcsviewer.compute.detector.partition import geometry_partition, make_partition
    from xpcsviewer.compute.detector.qmap import compute_qmap

    geo = ((30, 41), 10.0, 4.0, 75e-6, 12.5, 9.0)
    det = DetectorGeometry(beam_center_x=12.5, beam_center_y=9.0, detector_distance=4.0,
                           pixel_size=75e-6, energy_kev=10.0)
    mask = rng.random(geo[0]) > 0.1
    grid = PartitionGrid(3, 30)
    a = geometry_partition(geo[0], det, mask, grid)
    assert geometry_partition(geo[0], det, mask.copy(), grid) is a
    assert geometry_partition(geo[0], det, ~mask, grid) is not a
    q, phi = compute_qmap(*geo)
    ref = make_partition(q, phi, mask, grid, det)
    np.testing.assert_array_equal(a.static_roi_map, ref.static_roi_map)
    np.testing.assert_array_equal(a.dynamic_roi_map, ref.dynamic_roi_map)
    assert a.content_hash() == ref.hash
