"""``correlate --twotime-ages``: the age x lag map in the result file, dense and photons."""

from __future__ import annotations

import importlib.util

import h5py
import numpy as np
import pytest

from xpcsviewer.cli import main
from xpcsviewer.compute.ages.correlator import correlate_twotime_ages
from xpcsviewer.compute.inputs import Partition
from xpcsviewer.compute.spec import CorrelateSpec
from xpcsviewer.io.results.age_lag import read_age_lag
from xpcsviewer.io.results.reader import read_c2, read_result

pytestmark = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                reason="the photon path needs numba")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, small_movie):
    d = tmp_path_factory.mktemp("ages")
    qm, qpath, movie, npy = small_movie(d, 300, 0.08)
    esrf = d / "scan_sparse_00000.h5"
    n, h, w = movie.shape
    f, p = np.nonzero(movie.reshape(n, h * w))
    with h5py.File(esrf, "w") as fh:
        g = fh.create_group("entry_0000/measurement/data")
        g.attrs["shape"] = (h, w)
        g["frame_ptr"] = np.concatenate([[0], np.cumsum(np.bincount(f, minlength=n))])
        g["index"] = p.astype(np.int32)
        g["intensity"] = movie.reshape(n, h * w)[f, p]
    return qm, qpath, movie, npy, esrf


def _run(*argv):
    return main(["correlate", *map(str, argv), "--quiet"])


def test_beside_the_full_map_and_equal_to_its_block_means(inputs, tmp_path):
    qm, qpath, movie, npy, _ = inputs
    out = tmp_path / "tt.hdf"
    assert _run(npy, "--qmap", qpath, "-o", out, "--mode", "twotime", "--dq", "1,3",
                "--twotime-ages", "--twotime-ages-points", "4", "--frame-time", "0.01") == 0
    res = read_result(out)
    amap = read_age_lag(out)
    assert amap.bins.tolist() == res.twotime.processed_bins.tolist() == [1, 3]
    assert amap.frame_time == pytest.approx(0.01) and amap.n_frames == 300
    assert amap.config["points_per_level"] == 4
    ref = correlate_twotime_ages(movie, Partition(qm.dynamic_roi_map, qm.static_roi_map, qm.mask),
                                 CorrelateSpec(dq=[1, 3], ages_points=4))
    for a, b in zip(ref.levels, amap.levels, strict=True):
        np.testing.assert_allclose(b.c, a.c, rtol=1e-6, equal_nan=True)  # stored float32
    # level 2 against the stored full map (float32) of bin 3
    c2 = read_c2(out, 1, max_size=300).c2.astype(np.float64)
    lv = amap.levels[2]
    i, k = 5, 2
    t1, lag = int(lv.t1[i]), int(lv.lag[k])
    blk = np.triu(c2) + np.triu(c2, 1).T
    assert lv.c[1, i, k] == pytest.approx(blk[t1:t1 + 4, t1 + lag:t1 + lag + 4].mean(),
                                          rel=1e-5)


@pytest.mark.parametrize("sel", [[], ["--begin-frame", "7", "--stride-frame", "2",
                                      "--avg-frame", "3"]])
def test_photons_and_dense_frames_write_the_same_map(inputs, tmp_path, sel):
    _qm, qpath, _movie, _npy, esrf = inputs
    maps = []
    for path in ("sparse", "dense"):
        out = tmp_path / f"{path}.hdf"
        assert _run(esrf, "--qmap", qpath, "-o", out, "--path", path, "--twotime-ages",
                    "--frame-time", "0.001", *sel) == 0
        res = read_result(out)
        assert res.multitau is not None and res.twotime is None  # --mode multitau
        maps.append(read_age_lag(out))
    a, b = maps
    assert a.frame_time == b.frame_time == pytest.approx(0.006 if sel else 0.001)
    for x, y in zip(a.levels, b.levels, strict=True):
        np.testing.assert_allclose(x.c, y.c, rtol=1e-6, equal_nan=True)


def test_bad_points_is_a_usage_error(inputs, tmp_path, capsys):
    _qm, qpath, _movie, npy, _ = inputs
    assert _run(npy, "--qmap", qpath, "-o", tmp_path / "x.hdf", "--twotime-ages",
                "--twotime-ages-points", "0") == 2
    assert "--twotime-ages-points" in capsys.readouterr().err
    assert not (tmp_path / "x.hdf").exists()


def test_skip_existing_redoes_a_result_without_the_map(inputs, tmp_path):
    _qm, qpath, _movie, npy, _ = inputs
    out = tmp_path / "r.hdf"
    assert _run(npy, "--qmap", qpath, "-o", out) == 0
    assert _run(npy, "--qmap", qpath, "-o", out, "--twotime-ages", "--skip-existing",
                "--overwrite") == 0
    assert read_age_lag(out).n_frames == 300  # not skipped as complete
    before = out.stat().st_mtime_ns
    assert _run(npy, "--qmap", qpath, "-o", out, "--twotime-ages", "--skip-existing") == 0
    assert out.stat().st_mtime_ns == before  # now complete: skipped


def test_an_event_list_needs_frames(inputs, tmp_path, capsys):
    """Time-tag mode has no frames: --twotime-ages asks for --bin-time, and gets it."""
    _qm, _qpath, _movie, _npy, _ = inputs
    shape = (24, 32)
    rng = np.random.default_rng(9)
    movie = (rng.random((200, *shape)) < 0.05).astype(np.uint8)
    f, p = np.nonzero(movie.reshape(200, -1))
    toa = f * 40 + rng.integers(0, 40, f.size)
    toa[0] = 0
    order = np.argsort(toa, kind="stable")
    raw = tmp_path / "tpx.h5"
    with h5py.File(raw, "w") as fh:
        g = fh.create_group("tpx3")
        g["x"] = (p % shape[1])[order].astype(np.uint16)
        g["y"] = (p // shape[1])[order].astype(np.uint16)
        g["toa"] = toa[order].astype(np.int64)
        g["toa"].attrs["tick_s"] = 25e-9
        g.attrs["detector_shape"] = shape
    out = tmp_path / "t.hdf"
    assert _run(raw, "--qmap", _qpath, "-o", out, "--twotime-ages") == 2
    assert "--bin-time" in capsys.readouterr().err and not out.exists()
    assert _run(raw, "--qmap", _qpath, "-o", out, "--twotime-ages", "--bin-time", "1e-6") == 0
    assert read_age_lag(out).n_frames >= 199
