"""``xpcsviewer correlate``: raw frames + q-map -> a complete result file."""

from __future__ import annotations

import os

import h5py
import numpy as np
import pytest

from xpcsviewer.backends import get_backend
from xpcsviewer.cli import main
from xpcsviewer.compute.detector.partition import PartitionGrid, make_partition
from xpcsviewer.compute.detector.qmap import DetectorGeometry
from xpcsviewer.compute.inputs import Partition
from xpcsviewer.compute.multitau.correlator import correlate_multitau
from xpcsviewer.compute.options import MultitauOptions, TwotimeOptions
from xpcsviewer.compute.spec import CorrelateSpec
from xpcsviewer.compute.twotime.correlator import correlate_twotime
from xpcsviewer.io.results.reader import read_result
from xpcsviewer.io.results.writer import write_qmap_file
from xpcsviewer.synthetic.speckle import Geometry, simulate_frames


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("corr")
    geo = Geometry(shape=(24, 32), energy_kev=10.0, det_dist_m=5.0, pixel_size_m=75e-6,
                   bcx=-4.0, bcy=12.0)
    q, phi = geo.qmap()
    mask = np.ones(q.shape, bool)
    mask[:2, :3] = False
    qm = make_partition(q, phi, mask, PartitionGrid(3, 9),
                        DetectorGeometry(energy_kev=10.0, detector_distance=5.0, pixel_size=75e-6,
                                         beam_center_x=-4.0, beam_center_y=12.0))
    qpath = write_qmap_file(d / "qmap.hdf", qm)
    frames = simulate_frames(q, 130, 1e-3, D=5e6, beta=0.25, rate=2.0, seed=1)
    raw = d / "raw.h5"
    with h5py.File(raw, "w") as f:
        f.create_dataset("/entry/data/data", data=frames, chunks=(16, 24, 32))
        f["/entry/instrument/detector_1/frame_time"] = 1e-3
    np.save(d / "raw.npy", frames)
    return d, qm, qpath, raw, frames


def _same_g2(mt, ref):
    # float32 on disk; delays without a measurement are written as g2 = err = 0 (the
    # format's "no data") and read back as invalid
    reported = np.isfinite(ref.g2)
    np.testing.assert_array_equal(mt.valid, reported)
    np.testing.assert_allclose(mt.g2[reported], ref.g2[reported], rtol=1e-6)
    np.testing.assert_allclose(mt.g2_err[reported], ref.g2_err[reported], rtol=1e-5)


def test_both_mode_writes_a_complete_result(inputs, tmp_path):
    _d, qm, qpath, raw, frames = inputs
    out = tmp_path / "out_results.hdf"
    rc = main(["correlate", str(raw), "--qmap", str(qpath), "-o", str(out), "--mode", "both",
               "--dq", "1-2", "--quiet", "--backend", "numpy"])
    assert rc == 0
    res = read_result(out)
    assert set(res.analysis_type) == {"Multitau", "Twotime"}
    assert res.frame_time == pytest.approx(1e-3)
    np.testing.assert_array_equal(res.qmap.dynamic_roi_map, qm.dynamic_roi_map)
    ref = correlate_multitau(frames, Partition(qm.dynamic_roi_map, qm.static_roi_map, qm.mask),
                             options=MultitauOptions(backend=get_backend("numpy")))
    np.testing.assert_array_equal(res.multitau.delay_frames, ref.delay_frames)
    _same_g2(res.multitau, ref)
    tt = correlate_twotime(frames, Partition(qm.dynamic_roi_map, qm.static_roi_map, qm.mask),
                           CorrelateSpec(dq="1-2"),
                           options=TwotimeOptions(backend=get_backend("numpy")))
    assert res.twotime.processed_bins.tolist() == [1, 2]
    with h5py.File(out, "r") as f:
        c2 = f["/xpcs/twotime/correlation_map/c2_00002"][()]
        np.testing.assert_allclose(c2, np.triu(tt.c2[1]), rtol=1e-6)
        assert f["/xpcs/twotime/normalized_g2"].shape == (130, 2)
        assert f["/xpcs/twotime/normalized_g2_segments"].shape == (26, 5, 2)
        s2d = f["/xpcs/temporal_mean/scattering_2d"][()]
        np.testing.assert_allclose(s2d[0], frames.mean(axis=0), rtol=1e-6)
        itime = f["/xpcs/spatial_mean/intensity_vs_time"][()]
        sel = (qm.dynamic_roi_map > 0) & (qm.static_roi_map > 0) & qm.mask
        np.testing.assert_allclose(itime[1], frames[:, sel].mean(axis=1), rtol=1e-6)
        assert f["/xpcs/multitau/config/stride_frame"][()] == 1
        assert f["/xpcs/rawdata_path"][()].decode() == os.path.realpath(raw)
        s1 = f["/xpcs/temporal_mean/scattering_1d"][()]
        mean = frames.mean(0)
        want = [mean[(qm.static_roi_map == s + 1) & qm.mask].mean() for s in range(qm.n_static)]
        np.testing.assert_allclose(s1[0], want, rtol=1e-6)


def test_frame_selection_and_npy(inputs, tmp_path):
    d, qm, qpath, _raw, frames = inputs
    out = tmp_path / "sel.hdf"
    rc = main(["correlate", str(d / "raw.npy"), "--qmap", str(qpath), "-o", str(out), "--quiet",
               "--begin-frame", "10", "--end-frame", "110", "--stride-frame", "2",
               "--avg-frame", "2",
               "--frame-time", "0.5", "--backend", "numpy"])
    assert rc == 0
    res = read_result(out)
    sel = frames[10:110:2].astype(float)
    sel = sel.reshape(25, 2, *sel.shape[1:]).mean(axis=1)
    ref = correlate_multitau(sel, Partition(qm.dynamic_roi_map, qm.static_roi_map, qm.mask),
                             options=MultitauOptions(backend=get_backend("numpy")))
    _same_g2(res.multitau, ref)
    assert res.multitau.t0_eff == pytest.approx(0.5 * 2 * 2)
    assert res.intensity_vs_time.shape == (2, 25)


def test_bad_input_exits_3(inputs, tmp_path, capsys):
    _d, _qm, qpath, raw, _frames = inputs
    out = tmp_path / "x.hdf"
    assert main(["correlate", str(tmp_path / "none.h5"), "--qmap", str(qpath), "-o", str(out),
                 "--quiet"]) == 3
    assert "file not found" in capsys.readouterr().err
    np.save(tmp_path / "small.npy", np.zeros((5, 4, 4)))
    assert main(["correlate", str(tmp_path / "small.npy"), "--qmap", str(qpath), "-o", str(out),
                 "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "q-map" in err and err.count("\n") == 1
    bad_q = tmp_path / "q.hdf"
    bad_q.write_bytes(b"nope")
    assert main(["correlate", str(raw), "--qmap", str(bad_q), "-o", str(out), "--quiet"]) == 3
    assert not out.exists()


def test_twotime_only_mode(inputs, tmp_path):
    _d, qm, qpath, raw, _frames = inputs
    out = tmp_path / "tt.hdf"
    assert main(["correlate", str(raw), "--qmap", str(qpath), "-o", str(out), "--mode", "twotime",
                 "--dq", "3", "--quiet", "--backend", "numpy"]) == 0
    res = read_result(out)
    assert res.analysis_type == ("Twotime",)
    assert res.twotime.processed_bins.tolist() == [3]
    assert res.saxs_1d_segments.shape == (10, qm.n_static)
    assert main(["correlate", str(raw), "--qmap", str(qpath), "-o", str(out), "--mode", "twotime",
                 "--dq", "9", "--quiet"]) == 2  # no such bin: a usage error


@pytest.mark.realdata
def test_qmap_from_a_production_result_file(real_data_dir, tmp_path):
    src = sorted((real_data_dir / "aps8idi_llps_saxpcs").glob("*_results.hdf"))[0]
    with h5py.File(src, "r") as f:
        h, w = f["/xpcs/qmap/dynamic_roi_map"].shape
        nd = int(f["/xpcs/qmap/dynamic_roi_map"][()].max())
    frames = np.random.default_rng(0).poisson(0.5, (40, h, w)).astype(np.uint8)
    np.save(tmp_path / "raw.npy", frames)
    out = tmp_path / "o.hdf"
    assert main(["correlate", str(tmp_path / "raw.npy"), "--qmap", str(src), "-o", str(out),
                 "--quiet", "--backend", "numpy"]) == 0
    res = read_result(out)
    assert res.multitau.g2.shape == (len(res.multitau.delay_frames), nd)
    # uncorrelated Poisson frames: g2 = 1 within noise in every bin
    assert np.all(np.abs(res.multitau.g2[0] - 1) < 10 * res.multitau.g2_err[0] + 1e-3)


def test_partial_g2_and_frame_normalisation_options(inputs, tmp_path):
    _d, qm, qpath, raw, frames = inputs
    out = tmp_path / "p_results.hdf"
    rc = main(["correlate", str(raw), "--qmap", str(qpath), "-o", str(out), "--quiet",
               "--backend", "numpy", "--num-partial-g2", "4", "--normalize-frame"])
    assert rc == 0
    res = read_result(out)
    ref = correlate_multitau(frames, Partition(qm.dynamic_roi_map, qm.static_roi_map, qm.mask),
                             CorrelateSpec(num_partial_g2=4, normalize_frame=True),
                             options=MultitauOptions(backend=get_backend("numpy")))
    _same_g2(res.multitau, ref)
    np.testing.assert_array_equal(res.multitau.g2_partial_labels, ref.g2_partial_labels)
    # NaN: not reached yet
    np.testing.assert_allclose(res.multitau.g2_partial, ref.g2_partial, rtol=1e-6)
    assert res.multitau.config["normalize_frame"] in (True, 1)
    assert main(["correlate", str(raw), "--qmap", str(qpath), "-o", str(out), "--quiet",
                 "--num-partial-g2", "-1"]) == 2
