"""/xpcs/twotime/groups: written with a result, read back checked (io.results.twotime_groups)."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from xpcsviewer.compute.detector.partition import PartitionGrid, make_partition
from xpcsviewer.compute.detector.qmap import DetectorGeometry
from xpcsviewer.compute.pipeline import FrameStream, correlate_to_result
from xpcsviewer.compute.spec import CorrelateSpec
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.results.twotime_groups import has_twotime_groups, read_twotime_groups
from xpcsviewer.io.results.writer import write_result
from xpcsviewer.synthetic.speckle import Geometry, simulate_frames


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    shape, n = (20, 28), 40
    geo = Geometry(shape=shape, energy_kev=10.0, det_dist_m=5.0, pixel_size_m=75e-6,
                   bcx=3.0, bcy=2.0)
    q, phi = geo.qmap()
    qm = make_partition(q, phi, np.ones(shape, bool), PartitionGrid(3, 9),
                        DetectorGeometry(energy_kev=10.0, detector_distance=5.0, pixel_size=75e-6,
                                         beam_center_x=3.0, beam_center_y=2.0))
    movie = simulate_frames(q, n, 1e-3, D=5e6, beta=0.25, rate=2.0, seed=1)
    made = correlate_to_result(FrameStream(lambda: iter([movie]), n, 1e-3), qm,
                               CorrelateSpec(mode="twotime", dq="1-3", groups=5,
                                             group_tile=6))
    path = tmp_path_factory.mktemp("groups") / "r.hdf"
    write_result(path, made.result, saxs_2d=made.saxs_2d, c2_maps=made.c2_maps,
                 twotime_groups=made.twotime_groups)
    return path, made


def test_round_trip(written):
    path, made = written
    g = made.twotime_groups
    back = read_twotime_groups(path)
    with h5py.File(path, "r") as f:
        assert has_twotime_groups(f)
        grp = f["/xpcs/twotime/groups"]
        assert dict(grp.attrs) == {"n_groups": 5, "tile_px": 6, "seed": 0}
        assert grp["pixels"].dtype == np.int32 and grp["pixels"].shape == (5, 3)
        ds = grp[f"c2_{int(g.bins[1]):05d}"]
        assert ds.dtype == np.float32 and ds.shape == (5, 40, 40)
        assert ds.chunks[0] == 1 and ds.compression is not None
    assert back.bins.tolist() == g.bins.tolist() and back.n_groups == 5
    assert back.tile_px == 6 and back.seed == 0
    np.testing.assert_array_equal(back.pixels, g.pixels)
    for a, b in zip(back.maps, g.maps, strict=True):
        assert a.dtype == np.float64 and a.shape == b.shape
        up = np.triu(np.ones(a.shape[1:], bool))
        np.testing.assert_array_equal(a[:, up], b[:, up].astype(np.float64), strict=False)
        np.testing.assert_array_equal(a, np.swapaxes(a, 1, 2))  # full symmetric
    one = read_twotime_groups(path, bins=[int(g.bins[2])])
    assert one.bins.tolist() == [int(g.bins[2])] and len(one.maps) == 1
    np.testing.assert_array_equal(one.maps[0], back.maps[2])
    np.testing.assert_array_equal(one.pixels, back.pixels[:, 2:3])
    with pytest.raises(XpcsFileError, match="no group maps of bins"):
        read_twotime_groups(path, bins=[99])


def test_a_file_without_groups(tmp_path, written):
    _, made = written
    p = tmp_path / "plain.hdf"
    write_result(p, made.result, saxs_2d=made.saxs_2d, c2_maps=made.c2_maps)
    with h5py.File(p, "r") as f:
        assert not has_twotime_groups(f)
    with pytest.raises(XpcsFileError, match="no two-time group maps"):
        read_twotime_groups(p)


def _spoil(src, dst, edit):
    import shutil

    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        edit(f["/xpcs/twotime/groups"])
    return dst


@pytest.mark.parametrize("edit, dataset", [
    (lambda g: (g.__delitem__("pixels"), g.create_dataset("pixels", data=np.ones((4, 3))
                                                          .astype(np.int32))), "pixels"),
    (lambda g: (g.__delitem__("c2_00002"),
                g.create_dataset("c2_00002", data=np.zeros((5, 40, 39), np.float32))),
     "c2_00002"),
    (lambda g: (g.__delitem__("c2_00003"),
                g.create_dataset("c2_00003", data=np.zeros((5, 30, 30), np.float32))),
     "c2_00003"),
    (lambda g: (g.__delitem__("c2_00001"),
                g.create_dataset("c2_00001", data=np.zeros((5, 40, 40), np.int16))),
     "c2_00001"),
    (lambda g: g.__delitem__("c2_00002"), "c2_00002"),
    (lambda g: (g.__delitem__("bins"), g.create_dataset("bins", data=[1.0, 2.0, 3.0])), "bins"),
    (lambda g: g.attrs.__setitem__("n_groups", "five"), "groups"),
    (lambda g: g.attrs.__delitem__("tile_px"), "groups"),
])
def test_a_bad_groups_dataset_is_named(written, tmp_path, edit, dataset):
    path, made = written
    assert made.twotime_groups.bins.tolist() == [1, 2, 3]
    bad = _spoil(path, tmp_path / "bad.hdf", edit)
    with pytest.raises(XpcsFileError) as err:
        read_twotime_groups(bad)
    msg = str(err.value)
    assert "bad.hdf" in msg and "/xpcs/twotime/groups" in msg and dataset in msg


def test_writer_refuses_groups_without_twotime(written, tmp_path):
    _, made = written
    import dataclasses

    res = dataclasses.replace(made.result, twotime=None, analysis_type=("Multitau",))
    with pytest.raises(ValueError, match="need the two-time result"):
        write_result(tmp_path / "x.hdf", res, saxs_2d=made.saxs_2d,
                     twotime_groups=made.twotime_groups)
