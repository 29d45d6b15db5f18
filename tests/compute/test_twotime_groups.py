"""Two-time maps of independent pixel groups (compute.twotime_groups, the pipeline)."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.compute.detector.partition import PartitionGrid, make_partition
from xpcsviewer.compute.detector.qmap import DetectorGeometry
from xpcsviewer.compute.inputs import Partition
from xpcsviewer.compute.options import TwotimeOptions
from xpcsviewer.compute.pipeline import FrameStream, correlate_to_result
from xpcsviewer.compute.spec import CorrelateSpec
from xpcsviewer.compute.twotime.correlator import correlate_twotime
from xpcsviewer.compute.twotime.groups import MAX_GROUP_FRAMES, group_maps, tile_groups
from xpcsviewer.synthetic.speckle import Geometry, simulate_frames


def test_tile_groups_deterministic_covering_and_dealt():
    g = tile_groups((37, 50), 16, tile_px=8, seed=3)
    assert g.shape == (37, 50) and g.dtype == np.int64
    np.testing.assert_array_equal(g, tile_groups((37, 50), 16, tile_px=8, seed=3))
    assert not np.array_equal(g, tile_groups((37, 50), 16, tile_px=8, seed=4))
    assert g.min() == 0 and g.max() == 15  # every pixel in a group, every group used
    tiles = g[::8, ::8]  # one value per tile, constant inside it
    np.testing.assert_array_equal(np.repeat(np.repeat(tiles, 8, 0), 8, 1)[:37, :50], g)
    counts = np.bincount(tiles.ravel(), minlength=16)  # 5 x 7 = 35 tiles over 16 groups
    assert counts.max() - counts.min() <= 1
    with pytest.raises(ValueError, match="n_groups"):
        tile_groups((8, 8), 0)
    with pytest.raises(ValueError, match="tile_px"):
        tile_groups((8, 8), 2, tile_px=0)


def _geometry(shape):
    return Geometry(shape=shape, energy_kev=10.0, det_dist_m=5.0, pixel_size_m=75e-6,
                    bcx=3.0, bcy=2.0)


def _partition(shape):
    q, phi = _geometry(shape).qmap()
    return make_partition(q, phi, np.ones(shape, bool), PartitionGrid(3, 12),
                          DetectorGeometry(energy_kev=10.0, detector_distance=5.0,
                                           pixel_size=75e-6, beam_center_x=3.0,
                                           beam_center_y=2.0))


def test_weighted_mean_of_the_groups_is_the_map_when_they_share_the_normalisation():
    """Each map is (1/P) sum_p I_p(t1) I_p(t2) / (m_s(t1) m_s(t2)) with m_s the frame mean
    of the pixels of static bin s. When every group's pixels of every static bin have the
    same frame means as the bin's (made so here), the pixel-weighted mean of the group
    maps is the bin's map exactly: float32 storage, so 1e-5 relative."""
    shape, n, k = (32, 40), 60, 6
    qm = _partition(shape)
    grp = tile_groups(shape, k, tile_px=4, seed=1)
    rng = np.random.default_rng(0)
    sta = np.asarray(qm.static_roi_map)
    frames = np.empty((n, *shape))
    f_s = rng.uniform(0.5, 2.0, size=(n, sta.max() + 1))
    for t in range(n):
        eps = rng.normal(0.0, 0.3, size=shape)
        for s in np.unique(sta):
            for g in range(k):
                cell = (sta == s) & (grp == g)
                if cell.any():
                    eps[cell] -= eps[cell].mean()  # each group's mean in each static bin: 0
        frames[t] = f_s[t, sta] * (1.0 + eps)
    whole = correlate_twotime(frames, Partition(qm.dynamic_roi_map, qm.static_roi_map, qm.mask),
                              CorrelateSpec(dq=[1, 2, 3]),
                              options=TwotimeOptions(c2_format="upper32"))
    out = group_maps(FrameStream(lambda: iter([frames[:25], frames[25:]]), n),
                     Partition(qm.dynamic_roi_map, qm.static_roi_map, qm.mask),
                     CorrelateSpec(mode="twotime", dq=whole.processed_bins, groups=k,
                                   group_tile=4, group_seed=1))
    assert out.bins.tolist() == whole.processed_bins.tolist()
    dyn = np.asarray(qm.dynamic_roi_map)
    for j, b in enumerate(out.bins):
        np.testing.assert_array_equal(
            out.pixels[:, j], [np.sum((dyn == b) & (grp == g)) for g in range(k)])
        w = out.pixels[:, j] / out.pixels[:, j].sum()
        have = out.pixels[:, j] > 0
        mean = np.einsum("g,gij->ij", w[have], out.maps[j][have].astype(np.float64))
        np.testing.assert_allclose(mean, whole.c2[j], rtol=1e-5, atol=1e-6)
        assert out.maps[j].dtype == np.float32 and out.maps[j].shape == (k, n, n)
        assert np.all(np.tril(out.maps[j][have], -1) == 0)  # upper triangles
        assert np.isnan(out.maps[j][~have]).all()  # no pixel: NaN


def test_pipeline_carries_the_group_maps_of_the_same_frames():
    shape, n = (24, 32), 80
    qm = _partition(shape)
    q, _ = _geometry(shape).qmap()
    movie = simulate_frames(q, n, 1e-3, D=5e6, beta=0.25, rate=5.0, seed=2)
    chunks = lambda: iter([movie[:30], movie[30:]])  # noqa: E731
    frames = FrameStream(chunks, n, 1e-3)
    plain = correlate_to_result(frames, qm, CorrelateSpec(mode="both", dq="1,3"))
    assert plain.twotime_groups is None
    out = correlate_to_result(frames, qm, CorrelateSpec(mode="both", dq="1,3", groups=4,
                                                        group_tile=6))
    g = out.twotime_groups
    assert g.bins.tolist() == [1, 3] and g.tile_px == 6 and g.seed == 0 and g.n_groups == 4
    ref = group_maps(FrameStream(lambda: iter([movie]), n),
                     Partition(qm.dynamic_roi_map, qm.static_roi_map, qm.mask),
                     CorrelateSpec(mode="twotime", dq=[1, 3], groups=4, group_tile=6))
    for a, b in zip(g.maps, ref.maps, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(g.pixels, ref.pixels)
    # the bins' own maps are unchanged by the option
    for a, b in zip(out.c2_maps, plain.c2_maps, strict=True):
        np.testing.assert_array_equal(a, b)
    # each group normalises by its own frame means, over few pixels (7-107 a group here,
    # a few per static bin): that biases C by about 1/pixels per static bin and group, so
    # the pixel-weighted mean of the group maps is the map's only to 10 per cent of C - 1
    # on average (seen: 1.4 and 5.8 per cent)
    for j in range(2):
        w = g.pixels[:, j] / g.pixels[:, j].sum()
        mean = np.einsum("g,gij->ij", w, g.maps[j].astype(np.float64))
        iu = np.triu_indices(n, 1)
        c = out.c2_maps[j].astype(np.float64)[iu]
        assert np.abs(np.mean(mean[iu] - c)) < 0.1 * np.mean(np.abs(c - 1)) + 1e-3
    with pytest.raises(ValueError, match=f"at most {MAX_GROUP_FRAMES} frames"):
        correlate_to_result(FrameStream(chunks, MAX_GROUP_FRAMES + 1, 1e-3), qm,
                            CorrelateSpec(mode="twotime", groups=4))
