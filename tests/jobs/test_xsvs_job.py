"""``xsvs_source`` on every raw layout equals the plain reference on the same frames;
the files it writes read back; the command's CSV keeps the issue's columns."""

from __future__ import annotations

import csv

import h5py
import numpy as np
import pytest

from xpcsviewer.compute.xsvs.histogram import histograms_dense
from xpcsviewer.jobs.xsvs import exposure_windows, find_xsvs, read_xsvs, write_xsvs, xsvs_source
from xpcsviewer.model.result import QMap
from xpcsviewer.model.xsvs import CSV_COLUMNS
from xpcsviewer.synthetic import sparse_files as sf

N = 256
SMALL = (24, 36)
REGION = (slice(4, 20), slice(6, 30))


def _qmap(shape):
    dyn = np.zeros(shape, np.int64)
    rows = np.arange(REGION[0].start, REGION[0].stop)
    dyn[REGION] = (1 + (rows - rows[0]) // 4)[:, None]
    nb = int(dyn.max())
    return QMap(dynamic_roi_map=dyn, static_roi_map=(dyn > 0).astype(np.int64),
                mask=dyn > 0, dynamic_v_list_dim0=0.001 * (1 + np.arange(nb, dtype=float)),
                dynamic_v_list_dim1=np.zeros(1), static_v_list_dim0=np.zeros(1),
                static_v_list_dim1=np.zeros(1), dynamic_index_mapping=np.arange(nb),
                static_index_mapping=np.arange(1), dynamic_num_pts=(nb, 1),
                static_num_pts=(1, 1))


def _movie(seed=0, cap=None, mean=0.3):
    rng = np.random.default_rng(seed)
    x = np.zeros((N, *SMALL), np.int64)
    h, w = REGION[0].stop - REGION[0].start, REGION[1].stop - REGION[1].start
    x[(slice(None), *REGION)] = rng.poisson(rng.gamma(2.0, mean / 2.0, (N, h, w)))
    return np.minimum(x, cap) if cap else x


def _hits(x, width=SMALL[1]):
    flat = x.reshape(x.shape[0], -1)
    f, p = np.nonzero(flat)
    r, c = np.divmod(p, SMALL[1])
    return f, r * width + c, flat[f, p]


def _same(res, x, qm, cap):
    dyn = np.asarray(qm.dynamic_roi_map)[:SMALL[0], :SMALL[1]]
    ref = histograms_dense(x, dyn, res.windows, counter_cap=cap, kmax=res.kmax)
    np.testing.assert_array_equal(res.hist, ref.hist)
    np.testing.assert_array_equal(res.cens, ref.cens)
    np.testing.assert_array_equal(res.photons, ref.photons)
    assert res.bin_ids.tolist() == [1, 2, 3, 4]
    np.testing.assert_allclose(res.q, [0.001, 0.002, 0.003, 0.004])
    assert res.counter_cap == cap
    for k in ("beta", "status"):
        assert res.nb[k].shape == (4, res.windows.size)
    assert res.vis["beta0"].shape == (4,)


def test_dense_layouts(tmp_path):
    x = _movie(cap=12)
    qm = _qmap(SMALL)
    np.save(tmp_path / "raw.npy", x.astype(np.uint8))
    res = xsvs_source(tmp_path / "raw.npy", qmap=qm)
    _same(res, x, qm, 255)  # the dtype's largest value
    assert res.windows.tolist() == [1, 2, 4, 8, 16, 32]
    with h5py.File(tmp_path / "raw.h5", "w") as f:
        ds = f.create_dataset("/entry/data/data", data=x.astype(np.uint32))
        ds.attrs["saturation_value"] = 12
        f["/entry/instrument/detector_1/frame_time"] = 2e-3
    seen = []
    res = xsvs_source(tmp_path / "raw.h5", qmap=qm, exposures=[2e-3, 6e-3, 8e-3],
                      progress=lambda d, t, m="": seen.append(d))
    _same(res, x, qm, 12)
    assert res.windows.tolist() == [1, 3, 4] and seen[-1] == N
    np.testing.assert_allclose(res.exposure_s, [2e-3, 6e-3, 8e-3])


def test_sparse_layouts(tmp_path):
    x = _movie(seed=1, cap=3)
    qm = _qmap(SMALL)
    big = (512, 1024)
    f, p, c = _hits(x, big[1])
    sf.write_rigaku_bin(tmp_path / "scan.bin", f, p, c)
    qmb = _qmap(big)
    res = xsvs_source(tmp_path / "scan.bin", qmap=qmb)
    xb = np.zeros((N, *big), np.int64)
    xb[:, :SMALL[0], :SMALL[1]] = x
    dyn = np.asarray(qmb.dynamic_roi_map)
    ref = histograms_dense(xb[:, :SMALL[0], :SMALL[1]], dyn[:SMALL[0], :SMALL[1]],
                           res.windows, counter_cap=3, kmax=res.kmax)
    np.testing.assert_array_equal(res.hist, ref.hist)
    np.testing.assert_array_equal(res.cens, ref.cens)
    assert res.counter_cap == 3 and res.cens.sum() > 0  # the 2-bit mode: censored
    # one frame: fitted with the cap; several frames with capped ones: said, not fitted
    frac = res.cens.sum(axis=2) / (res.hist.sum(axis=2) + res.cens.sum(axis=2))
    st = res.nb["status"]
    assert not (st[:, 0] == "capped").any() and (frac[:, 0] > 1e-3).all()
    assert ((st[:, 1:] == "capped") == (frac[:, 1:] > 1e-3)).all() and (st == "capped").any()
    assert np.isnan(res.nb["beta"][st == "capped"]).all()
    f, p, c = _hits(x)
    csr = sf.write_esrf_csr(tmp_path / "run_sparse_frame_0_00000.h5", f, p, c, shape=SMALL,
                            n_frames=N)[0]
    _same(xsvs_source(csr, qmap=qm, counter_cap=3), x, qm, 3)
    id11 = sf.write_id11_sparse(tmp_path / "id11_sparse.h5", f, p, c, SMALL, n_frames=N)
    _same(xsvs_source(id11, qmap=qm, counter_cap=3), x, qm, 3)


def test_timepix_ticks_and_frames(tmp_path):
    """An event list: in frames of a bin time, and in its own ticks (a frame a tick)."""
    x = _movie(seed=3)
    qm = _qmap(SMALL)
    f, p, c = _hits(x)
    rng = np.random.default_rng(4)
    fe, pe = np.repeat(f, c), np.repeat(p, c)
    toa = fe * 640 + rng.integers(0, 640, fe.size)
    toa[np.argmin(toa)] = 0
    toa[np.argmax(toa)] = N * 640 - 1  # the ticks span whole frames
    tpx = sf.write_timepix(tmp_path / "tpx_events.h5", pe % SMALL[1], pe // SMALL[1], toa,
                           1.5625e-9, SMALL)
    res = xsvs_source(tpx, qmap=qm, bin_time=1e-6)
    _same(res, x, qm, None)
    # ticks: 640 ticks a frame; exposures of 640 * 2^k ticks are the frames' again
    ticks = xsvs_source(tpx, qmap=qm, exposures=1e-6 * (1 << np.arange(4)))
    assert ticks.time_tag and ticks.windows.tolist() == [640, 1280, 2560, 5120]
    np.testing.assert_array_equal(ticks.hist, res.hist[:, :4])
    assert xsvs_source(tpx, qmap=qm, levels=40).windows[-1] == 1 << 14  # 8+ windows


def test_files_round_trip_and_contract(tmp_path):
    x = _movie(seed=5, mean=0.8)
    qm = _qmap(SMALL)
    np.save(tmp_path / "raw.npy", x.astype(np.uint16))
    res = xsvs_source(tmp_path / "raw.npy", qmap=qm, frame_time=1e-3)
    h5 = write_xsvs(tmp_path / ("raw" + "_xsvs.h5"), res)
    assert find_xsvs(tmp_path / "raw.npy") == h5
    back = read_xsvs(h5)
    for k in ("windows", "bin_ids", "q", "hist", "cens", "photons"):
        np.testing.assert_array_equal(getattr(back, k), getattr(res, k))
    for k, v in res.nb.items():
        if v.dtype.kind in "fi":
            np.testing.assert_array_equal(back.nb[k], v)
        else:
            assert back.nb[k].astype(str).tolist() == v.astype(str).tolist()
    assert back.frame_time == 1e-3 and back.layout == "npy"
    out = write_xsvs(tmp_path / "t.csv", res)
    rows = list(csv.reader(open(out, encoding="utf-8")))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert len(rows) == 1 + 4 * res.windows.size
    assert rows[1][0] == "1" and float(rows[1][2]) == pytest.approx(1e-3)
    with pytest.raises(ValueError, match="csv"):
        write_xsvs(tmp_path / "t.txt", res)


def test_bad_input(tmp_path):
    qm = _qmap(SMALL)
    np.save(tmp_path / "f.npy", np.full((8, *SMALL), 0.5))
    with pytest.raises(ValueError, match="not whole numbers"):
        xsvs_source(tmp_path / "f.npy", qmap=qm)
    with pytest.raises(ValueError, match="q-map"):
        xsvs_source(tmp_path / "f.npy", qmap=None)
    with pytest.raises(ValueError, match="whole numbers of the frame time"):
        exposure_windows(100, 1e-3, [1.5e-3])
    with pytest.raises(ValueError, match="frame time"):
        exposure_windows(100, None, [1e-3])


def test_spread_of_pixel_means_corrected(tmp_path):
    """Pixel means rising across a q-bin (a steep I(q)): the pooled histogram's beta is
    beta (1 + s2) + s2; corrected from the static partition, beta is the truth."""
    rng = np.random.default_rng(11)
    n, shape = 4000, (16, 24)
    w = np.linspace(0.4, 1.6, shape[1])[None, :] * np.ones(shape)
    lam = rng.gamma(2.0, 0.5 * w / 2.0, (n, *shape))  # M = 2, independent frames
    np.save(tmp_path / "r.npy", rng.poisson(lam).astype(np.uint16))
    dyn = np.ones(shape, np.int64)
    qm = QMap(dynamic_roi_map=dyn, static_roi_map=np.broadcast_to(
        1 + np.arange(shape[1]) // 2, shape).copy(), mask=dyn > 0,
        dynamic_v_list_dim0=np.array([0.001]), dynamic_v_list_dim1=np.zeros(1),
        static_v_list_dim0=np.arange(12.0), static_v_list_dim1=np.zeros(1),
        dynamic_index_mapping=np.arange(1), static_index_mapping=np.arange(12),
        dynamic_num_pts=(1, 1), static_num_pts=(12, 1))
    res = xsvs_source(tmp_path / "r.npy", qmap=qm, exposures=None, levels=1)
    pooled = xsvs_source(tmp_path / "r.npy", qmap=qm, levels=1, spread_correction=False)
    s2 = float(res.mean_spread[0])
    assert 0.125 < s2 < 0.135  # pairs of columns of linspace(0.4, 1.6): 0.1298
    b, e = res.nb["beta"][0, 0], res.nb["beta_error"][0, 0]
    assert abs(b - 0.5) < 4 * e and e < 0.01
    bp = pooled.nb["beta"][0, 0]
    assert bp - 0.5 > 0.15 and abs(bp - (0.5 * (1 + s2) + s2)) < 4 * e
