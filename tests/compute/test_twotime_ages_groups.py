"""Age x lag maps of pixel groups (issue 35, long runs): each (bin, group) pair's map is
the multi-tau two-time map of that group's pixels alone, normalised over its own pixels
(the correlator run on a q-map that holds only them: an independent reference); photon
hits give the same maps; the file keeps them; the reader refuses bad layouts."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from xpcsviewer.compute.inputs import FrameStream, Partition
from xpcsviewer.compute.options import AgesOptions
from xpcsviewer.compute.spec import CorrelateSpec


@pytest.fixture(scope="module")
def movie(small_movie, tmp_path_factory):
    qm, qpath, frames, npy = small_movie(tmp_path_factory.mktemp("alg"), 300, 0.5)
    return qm, qpath, frames, npy


def _alone(qm, frames, b, pixels_of_group):
    """The MT-2TC map of bin b over only the given pixels (a q-map holding them alone)."""
    from xpcsviewer.compute.ages.correlator import correlate_twotime_ages

    dyn = np.where(pixels_of_group, np.asarray(qm.dynamic_roi_map), 0)
    sta = np.where(pixels_of_group, np.asarray(qm.static_roi_map), 0)
    return correlate_twotime_ages(frames,
                                  Partition(dyn, sta, qm.mask, n_dynamic=qm.n_dynamic,
                                            n_static=qm.n_static),
                                  CorrelateSpec(dq=[b]), options=AgesOptions(frame_time=0.01))


def test_each_pair_is_the_groups_own_map(movie):
    from xpcsviewer.compute.ages.correlator_groups import age_lag_groups
    from xpcsviewer.compute.twotime.groups import tile_groups

    qm, _, frames, _ = movie
    k, bins = 4, [2, 3]
    got = age_lag_groups(frames, qm, CorrelateSpec(dq=bins, ages=True, groups=k, group_tile=4),
                         options=AgesOptions(frame_time=0.01))
    grp = tile_groups(qm.shape, k, 4)
    dyn = np.asarray(qm.dynamic_roi_map)
    valid = np.asarray(qm.mask, bool) & (np.asarray(qm.static_roi_map) > 0)
    checked = 0
    for j, b in enumerate(bins):
        for g in range(k):
            mine = (grp == g) & (dyn == b) & valid
            assert got.pixels[g, j] == mine.sum()
            gm = got.group_map(g, j)
            if not mine.any():
                assert gm is None
                continue
            ref = _alone(qm, frames, b, grp == g)
            assert gm.bins.tolist() == [b]
            assert len(gm.levels) == len(ref.levels)
            for a, r in zip(gm.levels, ref.levels, strict=True):
                np.testing.assert_array_equal(a.lag, r.lag)
                np.testing.assert_array_equal(a.weight, r.weight)
                np.testing.assert_allclose(a.c, r.c, rtol=1e-12, atol=1e-12, equal_nan=True)
            checked += 1
    assert checked >= 6


def test_photon_hits_give_the_same_maps(movie):
    from xpcsviewer.compute.ages.correlator_groups import age_lag_groups, age_lag_groups_events
    from xpcsviewer.model.events import EventBlock

    qm, _, frames, _ = movie
    n, (h, w) = frames.shape[0], qm.shape

    def blocks(step=64):
        for a in range(0, n, step):
            f = frames[a : a + step].reshape(-1, h * w)
            fr, px = np.nonzero(f)
            yield EventBlock(start=a, stop=min(n, a + step), frame=fr + a, pixel=px,
                             value=f[fr, px].astype(np.float64))

    spec = CorrelateSpec(dq=[1, 2, 3], ages=True, groups=3, group_tile=4)
    opts = AgesOptions(frame_time=0.01)
    dense = age_lag_groups(frames, qm, spec, options=opts)
    hits = age_lag_groups_events(FrameStream(blocks, n), qm, spec, options=opts)
    np.testing.assert_array_equal(dense.amap.bins, hits.amap.bins)
    for a, b in zip(dense.amap.levels, hits.amap.levels, strict=True):
        np.testing.assert_allclose(a.c, b.c, rtol=1e-12, atol=1e-13, equal_nan=True)


def test_file_round_trip_and_bad_layouts(movie, tmp_path):
    from xpcsviewer.compute.ages.correlator_groups import age_lag_groups
    from xpcsviewer.io.errors import XpcsFileError
    from xpcsviewer.io.results.age_lag_groups import (
        read_age_lag_groups,
        write_age_lag_groups_group,
    )

    qm, _, frames, _ = movie
    got = age_lag_groups(frames, qm, CorrelateSpec(dq=[1, 3], ages=True, groups=3, group_tile=4),
                         options=AgesOptions(frame_time=0.01))
    p = tmp_path / "g.h5"
    with h5py.File(p, "w") as f:
        write_age_lag_groups_group(f.require_group("xpcs/twotime"), got)
    back = read_age_lag_groups(p)
    np.testing.assert_array_equal(back.bins, got.bins)
    np.testing.assert_array_equal(back.pixels, got.pixels)
    for g in range(3):
        for j in range(2):
            a, b = got.group_map(g, j), back.group_map(g, j)
            assert (a is None) == (b is None)
            if a is not None:  # float32 in the file
                for la, lb in zip(a.levels, b.levels, strict=True):
                    np.testing.assert_allclose(la.c, lb.c, rtol=1e-6, equal_nan=True)
    # one bin read alone: renumbered to its position among those read
    only3 = read_age_lag_groups(p, [3])
    assert only3.bins.tolist() == [3]
    for g in range(3):
        a, b = got.group_map(g, 1), only3.group_map(g, 0)
        if a is not None:
            np.testing.assert_allclose(a.levels[0].c, b.levels[0].c, rtol=1e-6,
                                       equal_nan=True)
    with h5py.File(tmp_path / "none.h5", "w"):
        pass
    assert read_age_lag_groups(tmp_path / "none.h5") is None
    grp = "xpcs/twotime/age_lag_groups"

    def pixels_of_wrong_shape(f):
        del f[f"{grp}/pixels"]
        f[grp].create_dataset("pixels", data=np.ones((2, 2)))

    def no_groups(f):
        f[grp].attrs["n_groups"] = 0

    def pair_out_of_range(f):
        del f[f"{grp}/age_lag/bins"]
        f[f"{grp}/age_lag"].create_dataset("bins", data=np.array([99]))

    def groups_not_an_integer(f):
        f[grp].attrs["n_groups"] = 2.5

    def tile_a_bool(f):
        f[grp].attrs["tile_px"] = True

    def bins_repeated(f):
        del f[f"{grp}/bins"]
        f[grp].create_dataset("bins", data=np.array([1, 1]))

    def negative_pixels(f):
        px = f[f"{grp}/pixels"][()]
        px[0, 0] = -1
        f[f"{grp}/pixels"][...] = px

    def a_dataset_not_a_group(f):
        del f[grp]
        f["xpcs/twotime"].create_dataset("age_lag_groups", data=np.zeros(3))

    for change in (pixels_of_wrong_shape, no_groups, pair_out_of_range, groups_not_an_integer,
                   tile_a_bool, bins_repeated, negative_pixels, a_dataset_not_a_group):
        q = tmp_path / f"{change.__name__}.h5"
        q.write_bytes(p.read_bytes())
        with h5py.File(q, "r+") as f:
            change(f)
        with pytest.raises(XpcsFileError) as ei:
            read_age_lag_groups(q)
        assert q.name in str(ei.value) and "age_lag_groups" in str(ei.value), change
