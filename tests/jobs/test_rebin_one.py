"""One q-bin re-correlated from the raw data with an edited mask (issue 45 item 4):
equal to the whole correlate job run with that mask, for every bin, dense frames and
photons alike; the raw source found from the result's record or asked for."""

from __future__ import annotations

import dataclasses
import importlib.util
import shutil

import h5py
import numpy as np
import pytest

from xpcsviewer.compute.detector.partition import PartitionGrid, make_partition
from xpcsviewer.compute.detector.qmap import DetectorGeometry
from xpcsviewer.compute.spec import CorrelateSpec, FrameSelection
from xpcsviewer.io.results.reader import read_result
from xpcsviewer.io.results.writer import write_qmap_file
from xpcsviewer.jobs.correlate import CorrelateJob, correlate_file
from xpcsviewer.jobs.rebin_one import RawSourceMissing, recompute_bin
from xpcsviewer.synthetic.sparse_files import write_esrf_csr
from xpcsviewer.synthetic.speckle import Geometry, simulate_frames

SHAPE = (24, 32)
BC = (-4.0, 12.0)


def _qmap(mask):
    geo = Geometry(shape=SHAPE, energy_kev=10.0, det_dist_m=5.0, pixel_size_m=75e-6,
                   bcx=BC[0], bcy=BC[1])
    q, phi = geo.qmap()
    return make_partition(q, phi, mask, PartitionGrid(3, 6),
                          DetectorGeometry(energy_kev=10.0, detector_distance=5.0,
                                           pixel_size=75e-6, beam_center_x=BC[0],
                                           beam_center_y=BC[1]))


def _edited_mask(qm):
    """The q-map's mask with a few pixels of every bin and a block of rows removed."""
    m = np.asarray(qm.mask, bool).copy()
    rng = np.random.default_rng(5)
    m[rng.random(SHAPE) < 0.15] = False
    m[10:13, :] = False
    return m


@pytest.fixture(scope="module")
def raws(tmp_path_factory):
    d = tmp_path_factory.mktemp("rebin")
    base = np.ones(SHAPE, bool)
    base[:2, :3] = False
    qm = _qmap(base)
    qpath = write_qmap_file(d / "qmap.hdf", qm)
    edited = _edited_mask(qm)
    qpath_m = write_qmap_file(d / "qmap_masked.hdf", dataclasses.replace(qm, mask=edited))
    geo = Geometry(shape=SHAPE, energy_kev=10.0, det_dist_m=5.0, pixel_size_m=75e-6,
                   bcx=BC[0], bcy=BC[1])
    q, _ = geo.qmap()
    movie = simulate_frames(q, 300, 1e-3, D=5e6, beta=0.3, rate=0.08, seed=11)
    movie = movie.astype(np.uint16)
    dense = d / "dense.h5"
    with h5py.File(dense, "w") as f:
        f["/entry/data/data"] = movie
        f["/entry/instrument/detector_1/frame_time"] = 1e-3
    n, h, w = movie.shape
    fr, px = np.nonzero(movie.reshape(n, h * w))
    sparse = write_esrf_csr(d / "sparse.h5", fr, px, movie.reshape(n, h * w)[fr, px],
                            n_frames=n, shape=SHAPE)[0]
    return d, qm, qpath, qpath_m, edited, dense, sparse, movie


def _job(raw, qpath, out, **spec):
    sel = spec.pop("frames", FrameSelection())
    return correlate_file(CorrelateJob(raw, qpath, out, CorrelateSpec(frames=sel, **spec),
                                       overwrite=True))


CASES = [
    pytest.param("dense", {}, id="dense"),
    pytest.param("dense", {"normalize_frame": True}, id="dense-normalized"),
    pytest.param("dense", {"frames": FrameSelection(5, 290, 2, 2)}, id="dense-selection"),
    pytest.param("sparse", {}, id="photons"),
    pytest.param("sparse", {"normalize_frame": True}, id="photons-normalized"),
    pytest.param("sparse", {"frames": FrameSelection(3, -1, 1, 3)}, id="photons-avg"),
]


@pytest.mark.parametrize("kind, spec", CASES)
def test_one_bin_equals_the_whole_job_with_that_mask(raws, tmp_path, kind, spec):
    if kind == "sparse" and importlib.util.find_spec("numba") is None:
        pytest.skip("the photon path needs numba")
    _d, qm, qpath, qpath_m, edited, dense, sparse, _movie = raws
    raw = dense if kind == "dense" else sparse
    before = _job(raw, qpath, tmp_path / "before.hdf", **dict(spec))
    # the job's own float64 numbers (the file stores g2 as float32)
    whole = _job(raw, qpath_m, tmp_path / "whole.hdf", **dict(spec)).result
    shown = read_result(before.output)
    changed = 0
    for k in range(1, qm.n_dynamic + 1):
        out = recompute_bin(before.output, k, edited)
        assert out.path == kind
        ok = whole.multitau.valid[:, k - 1]
        np.testing.assert_array_equal(np.isfinite(out.g2), ok)
        # the bin alone equals the whole job to float64 round-off
        np.testing.assert_allclose(out.g2[ok], whole.multitau.g2[ok, k - 1], rtol=1e-12,
                                   atol=0)
        np.testing.assert_allclose(out.g2_err[ok], whole.multitau.g2_err[ok, k - 1],
                                   rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(out.tau, whole.multitau.tau)
        old_ok = shown.multitau.valid[:, k - 1]
        np.testing.assert_array_equal(out.old_g2[old_ok], shown.multitau.g2[old_ok, k - 1])
        in_bin = (qm.dynamic_roi_map == k) & (qm.static_roi_map > 0)
        assert out.n_pixels == int((in_bin & edited).sum())
        assert out.n_pixels_before == int((in_bin & qm.mask).sum())
        changed += not np.allclose(out.g2[ok], out.old_g2[ok], rtol=1e-9)
    assert changed >= qm.n_dynamic - 1  # the edit does change the curves


def _reference_delay(movie, pixels, static, x):
    """g2 of one bin at delay ``x`` (level 0) by its definition: per static bin the
    ratio of sums n_s sum G2 / (sum IP sum IF), then the mean over the static bins."""
    a = movie.reshape(movie.shape[0], -1)[:, pixels].astype(np.float64)
    g2p = (a[:-x] * a[x:]).mean(axis=0)
    ip, if_ = a[:-x].mean(axis=0), a[x:].mean(axis=0)
    vals = []
    for s in np.unique(static):
        j = static == s
        vals.append(j.sum() * g2p[j].sum() / (ip[j].sum() * if_[j].sum()))
    return float(np.mean(vals))


def test_first_delays_match_their_definition(raws, tmp_path):
    _d, qm, qpath, _qpath_m, edited, dense, _sparse, movie = raws
    res = _job(dense, qpath, tmp_path / "r.hdf")
    k = 2
    out = recompute_bin(res.output, k, edited)
    sel = (qm.dynamic_roi_map == k) & (qm.static_roi_map > 0) & edited
    pixels = np.flatnonzero(sel)
    static = qm.static_roi_map.ravel()[pixels]
    for i, x in enumerate(out.delay_frames[:4]):
        assert out.g2[i] == pytest.approx(_reference_delay(movie, pixels, static, int(x)),
                                          rel=1e-12)


def test_a_moved_raw_file_is_asked_for_by_its_recorded_path(raws, tmp_path):
    _d, _qm, qpath, _qpath_m, edited, dense, _sparse, _movie = raws
    moved = tmp_path / "raw_moved.h5"
    gone = tmp_path / "raw_gone.h5"
    shutil.copy(dense, gone)
    res = _job(gone, qpath, tmp_path / "r.hdf").output
    gone.rename(moved)
    with pytest.raises(RawSourceMissing) as e:
        recompute_bin(res, 1, edited)
    assert str(gone) in str(e.value) and "give its path" in str(e.value)
    assert e.value.recorded == str(gone)
    out = recompute_bin(res, 1, edited, raw=moved)
    assert out.raw == str(moved) and np.isfinite(out.g2[0])


def test_another_raw_file_and_bad_requests_are_refused(raws, tmp_path):
    _d, qm, qpath, _qpath_m, edited, dense, _sparse, movie = raws
    res = _job(dense, qpath, tmp_path / "r.hdf").output
    short = tmp_path / "short.h5"
    with h5py.File(short, "w") as f:
        f["/entry/data/data"] = movie[:100]
    with pytest.raises(Exception, match="correlated from 300"):
        recompute_bin(res, 1, edited, raw=short)
    with pytest.raises(ValueError, match="outside 1"):
        recompute_bin(res, qm.n_dynamic + 1, edited)
    with pytest.raises(ValueError, match="no pixel"):
        recompute_bin(res, 1, np.zeros(SHAPE, bool))
    with pytest.raises(ValueError, match="mask is"):
        recompute_bin(res, 1, np.ones((3, 3), bool))


@pytest.mark.parametrize("kind", ["dense", "sparse"], ids=["dense", "photons"])
@pytest.mark.parametrize("normalize", [False, True], ids=["plain", "normalized"])
def test_the_same_bin_again_is_correlated_from_its_kept_counts(raws, tmp_path, monkeypatch,
                                                              kind, normalize):
    """A bin's counts (dense) or hits (photons) are read once: the same bin with another
    mask (pixels of the bin masked and unmasked; for the normalisation the others as they
    were) reads nothing and equals the whole job with that mask; another bin is read."""
    import xpcsviewer.io.raw.dense as dense_mod
    import xpcsviewer.io.raw.sparse as sparse_mod
    from xpcsviewer.jobs import _rebin_streams

    if kind == "sparse" and importlib.util.find_spec("numba") is None:
        pytest.skip("the photon path needs numba")
    _d, qm, qpath, _qpath_m, edited, dense, sparse, _movie = raws
    raw = dense if kind == "dense" else sparse
    before = _job(raw, qpath, tmp_path / "before.hdf", normalize_frame=normalize)
    reads = []
    cls, name = ((dense_mod.RawFrames, "read_box") if kind == "dense"
                 else (sparse_mod.SparseSource, "iter_events"))
    real = getattr(cls, name)

    def counted(self, *a, **k):
        reads.append(a[:2])
        return real(self, *a, **k)

    monkeypatch.setattr(cls, name, counted)
    _rebin_streams._cache.clear()
    k = 2
    in_bin = (qm.dynamic_roi_map == k) & (qm.static_roi_map > 0)
    first = np.asarray(qm.mask, bool) & ~(in_bin & (np.arange(SHAPE[1]) % 3 == 0))
    recompute_bin(before.output, k, first)
    assert reads and len(_rebin_streams._cache) == 1
    n_reads = len(reads)
    second = np.asarray(qm.mask, bool) & ~(in_bin & (np.arange(SHAPE[1]) % 3 == 1))
    if not normalize:
        second &= edited | in_bin
    out = recompute_bin(before.output, k, second)
    assert len(reads) == n_reads  # from the kept counts
    whole = _job(raw, write_qmap_file(tmp_path / "q2.hdf",
                                      dataclasses.replace(qm, mask=second)),
                 tmp_path / "whole.hdf", normalize_frame=normalize).result
    ok = whole.multitau.valid[:, k - 1]
    assert out.path == kind
    np.testing.assert_allclose(out.g2[ok], whole.multitau.g2[ok, k - 1], rtol=1e-12, atol=0)
    np.testing.assert_allclose(out.g2_err[ok], whole.multitau.g2_err[ok, k - 1], rtol=1e-12,
                               atol=1e-15)
    assert out.n_pixels == int((in_bin & second).sum())
    recompute_bin(before.output, k + 1, second)  # another bin: read
    assert len(reads) > n_reads
