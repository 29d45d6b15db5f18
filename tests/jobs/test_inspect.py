"""``inspect_source`` and its companions (jobs.inspect) on small files of every raw layout:
the statistics equal a plain dense NumPy reference, the injected faults are found, frames
and pixel traces are read on demand, the findings are written as JSON and CSV."""

import csv
import json

import h5py
import numpy as np
import pytest

from xpcsviewer.jobs.inspect import (
    CSV_COLUMNS,
    frame_image,
    inspect_source,
    pixel_trace,
    write_findings,
)
from xpcsviewer.model.result import QMap
from xpcsviewer.progress import Cancelled, CancelToken
from xpcsviewer.synthetic import sparse_files as sf

N = 400
REGION = (slice(4, 20), slice(6, 30))  # where the photons fall (16 x 24 pixels)


def _qmap(shape, region=REGION):
    dyn = np.zeros(shape, np.int64)
    rows = np.arange(region[0].start, region[0].stop)
    dyn[region] = 1 + (rows[:, None] - rows[0]) // 4 + 0 * np.arange(
        region[1].start, region[1].stop)[None, :]
    nb = int(dyn.max())
    return QMap(dynamic_roi_map=dyn, static_roi_map=(dyn > 0).astype(np.int64),
                mask=dyn > 0, dynamic_v_list_dim0=np.arange(nb, dtype=float),
                dynamic_v_list_dim1=np.zeros(1), static_v_list_dim0=np.zeros(1),
                static_v_list_dim1=np.zeros(1), dynamic_index_mapping=np.arange(nb),
                static_index_mapping=np.arange(1), dynamic_num_pts=(nb, 1),
                static_num_pts=(1, 1))


SMALL = (24, 36)  # the corner of the detector that holds the region


def _movie(seed=0, region=REGION):
    """(N, 24, 36) counts in the region with a hot pixel, empty frames and a cluster."""
    rng = np.random.default_rng(seed)
    x = np.zeros((N, *SMALL), np.int64)
    h, w = region[0].stop - region[0].start, region[1].stop - region[1].start
    x[(slice(None), *region)] = rng.poisson(0.08, (N, h, w))
    r0, c0 = region[0].start, region[1].start
    x[:, r0 + 3, c0 + 5] = rng.poisson(3.0, N)  # hot pixel
    x[150:160] = 0  # empty frames
    x[250, r0 + 9:r0 + 11, c0 + 10:c0 + 12] = 9  # a cosmic cluster
    return x


def _hits(x, width=SMALL[1]):
    """Hits of the corner movie on a detector ``width`` columns wide."""
    flat = x.reshape(x.shape[0], -1)
    f, p = np.nonzero(flat)
    r, c = np.divmod(p, SMALL[1])
    return f, r * width + c, flat[f, p]


def _corner(img):
    """The corner of a full-detector map (the rest must be zero)."""
    img = np.asarray(img)
    rest = img.copy()
    rest[..., :SMALL[0], :SMALL[1]] = 0
    assert not rest.any()
    return img[..., :SMALL[0], :SMALL[1]]


def _check(ins, x, qm):
    valid = np.asarray(qm.mask)
    assert not valid[SMALL[0]:].any() and not valid[:, SMALL[1]:].any()
    valid = valid[:SMALL[0], :SMALL[1]]
    n = x.shape[0]
    xf = x.astype(np.float64)
    np.testing.assert_array_equal(ins.photons, xf[:, valid].sum(axis=1))
    np.testing.assert_array_equal(ins.hit_pixels, (xf[:, valid] > 0).sum(axis=1))
    np.testing.assert_array_equal(_corner(ins.pixel_sum), xf.sum(axis=0))
    np.testing.assert_array_equal(_corner(ins.pixel_max), xf.max(axis=0))
    dyn = np.asarray(qm.dynamic_roi_map)[:SMALL[0], :SMALL[1]]
    for b in range(1, int(dyn.max()) + 1):
        np.testing.assert_array_equal(ins.bin_photons[:, b - 1],
                                      xf[:, (dyn == b) & valid].sum(axis=1))
        assert ins.count_hist[b - 1].sum() == n * np.count_nonzero((dyn == b) & valid)
    assert ins.n_frames == n and ins.n_valid == valid.sum()
    assert ins.detector_shape == tuple(qm.shape)
    kinds = {f.kind for f in ins.findings}
    assert {"hot_pixel", "empty_frames", "cosmic"} <= kinds, ins.findings
    r0, c0 = REGION[0].start, REGION[1].start
    hot = [f for f in ins.findings if f.kind == "hot_pixel"]
    assert [f.pixels for f in hot] == [((r0 + 3, c0 + 5),)]
    assert [f.frames for f in ins.findings if f.kind == "empty_frames"] == [(150, 159)]
    assert [f.frames for f in ins.findings if f.kind == "cosmic"] == [(250, 250)]


def test_dense_npy_and_hdf5(tmp_path):
    shape = SMALL
    x = _movie()
    qm = _qmap(shape)
    np.save(tmp_path / "raw.npy", x.astype(np.uint16))
    ins = inspect_source(tmp_path / "raw.npy", qmap=qm)
    _check(ins, x, qm)
    assert ins.layout == "npy" and ins.counter_cap == 65535 and ins.frame_time is None
    with h5py.File(tmp_path / "raw.h5", "w") as f:
        ds = f.create_dataset("/entry/data/data", data=x.astype(np.uint32))
        ds.attrs["saturation_value"] = 12
        f["/entry/instrument/detector_1/frame_time"] = 2e-3
    seen = []
    ins = inspect_source(tmp_path / "raw.h5", qmap=qm, progress=lambda d, t, m="": seen.append(d))
    _check(ins, x, qm)
    assert ins.counter_cap == 12 and ins.frame_time == 2e-3 and seen[-1] == N
    assert ins.flux is not None
    np.testing.assert_array_equal(ins.pixel_cap_frames, (x == 12).sum(axis=0))


def test_rigaku_bin_and_3m(tmp_path):
    shape = (512, 1024)
    x = _movie(seed=1)
    f, p, c = _hits(x, shape[1])
    sf.write_rigaku_bin(tmp_path / "scan.bin", f, p, c)
    qm = _qmap(shape)
    ins = inspect_source(tmp_path / "scan.bin", qmap=qm)
    _check(ins, x, qm)
    assert ins.layout == "rigaku" and ins.counter_cap == 15  # max 9 or so: the 4-bit mode
    # the 3M: module 0 is canvas position 1 (rows 0.., columns 1076..)
    reg = (slice(4, 20), slice(1080, 1104))
    shape3 = sf.RIGAKU_3M_SHAPE
    qm3 = _qmap(shape3, reg)
    rng = np.random.default_rng(2)
    f3 = np.repeat(np.arange(N), 30)
    rr = rng.integers(reg[0].start, reg[0].stop, f3.size)
    cc = rng.integers(reg[1].start, reg[1].stop, f3.size)
    key = np.unique(f3 * shape3[0] * shape3[1] + rr * shape3[1] + cc)
    f3, p3 = key // (shape3[0] * shape3[1]), key % (shape3[0] * shape3[1])
    sf.write_rigaku_3m(tmp_path / "big.bin", f3, p3, np.ones(f3.size, int), n_frames=N)
    ins3 = inspect_source(tmp_path / "big.bin", qmap=qm3)
    assert ins3.layout == "rigaku-3m" and ins3.detector_shape == shape3
    np.testing.assert_array_equal(ins3.photons, np.bincount(f3, minlength=N))
    assert ins3.pixel_sum.sum() == f3.size and ins3.pixel_sum.reshape(-1)[p3].min() >= 1
    assert ins3.counter_cap == 3


def test_esrf_id11_timepix(tmp_path):
    shape = SMALL
    x = _movie(seed=3)
    f, p, c = _hits(x)
    qm = _qmap(shape)
    csr = sf.write_esrf_csr(tmp_path / "run_sparse_frame_0_00000.h5", f, p, c, shape=shape,
                            n_frames=N)[0]
    _check(inspect_source(csr, qmap=qm), x, qm)
    id11 = sf.write_id11_sparse(tmp_path / "id11_sparse.h5", f, p, c, shape, n_frames=N)
    ins = inspect_source(id11, qmap=qm)
    _check(ins, x, qm)
    assert ins.layout == "id11-sparse"
    # Timepix: one event per photon, in frames of 1 us = 640 ticks, unsorted within frames
    rng = np.random.default_rng(4)
    fe, pe = np.repeat(f, c), np.repeat(p, c)
    toa = fe * 640 + rng.integers(0, 640, fe.size)
    toa[0] = 0  # frames count from the first event's tick
    tpx = sf.write_timepix(tmp_path / "tpx_events.h5", pe % shape[1], pe // shape[1], toa,
                           1.5625e-9, shape)
    ins = inspect_source(tpx, qmap=qm, bin_time=1e-6)
    # the event list's frames start at the first event's tick: frame 0 holds hits here
    _check(ins, x, qm)
    assert ins.frame_time == pytest.approx(1e-6)
    with pytest.raises(ValueError, match="bin time"):
        inspect_source(tpx, qmap=qm)


def test_frame_image_and_pixel_trace(tmp_path):
    x = _movie(seed=5)
    f, p, c = _hits(x, 1024)
    sf.write_rigaku_bin(tmp_path / "scan.bin", f, p, c)
    np.save(tmp_path / "raw.npy", x.astype(np.uint16))
    for path in (tmp_path / "scan.bin", tmp_path / "raw.npy"):
        xs = x
        img = frame_image(path, 250)
        assert img.shape == ((512, 1024) if path.suffix == ".bin" else SMALL)
        np.testing.assert_array_equal(_corner(img), xs[250])
        np.testing.assert_array_equal(_corner(frame_image(path, 10, 30, "sum")),
                                      xs[10:31].sum(0))
        np.testing.assert_allclose(_corner(frame_image(path, 10, 30, "mean")),
                                   xs[10:31].mean(0))
        np.testing.assert_array_equal(_corner(frame_image(path, 10, 30, "max")),
                                      xs[10:31].max(0))
        pix = [(7, 11), (13, 19), (7, 11)]
        np.testing.assert_array_equal(pixel_trace(path, pix),
                                      xs[:, 7, 11] + xs[:, 13, 19])
        np.testing.assert_array_equal(pixel_trace(path, (7, 11)), xs[:, 7, 11])
    with pytest.raises(ValueError, match="within"):
        frame_image(tmp_path / "raw.npy", 5, N, "sum")


def test_sparse_frame_image_reads_only_those_frames(tmp_path, monkeypatch):
    from xpcsviewer.io.raw.rigaku import RigakuBin

    x = _movie(seed=6)
    f, p, c = _hits(x, 1024)
    sf.write_rigaku_bin(tmp_path / "scan.bin", f, p, c)
    asked = []
    real = RigakuBin._raw_range

    def spy(self, a, b):
        asked.append((a, b))
        return real(self, a, b)

    monkeypatch.setattr(RigakuBin, "_raw_range", spy)
    frame_image(tmp_path / "scan.bin", 100, 104, "sum")
    assert asked == [(100, 105)]


def test_write_findings_and_cancel(tmp_path):
    shape = SMALL
    x = _movie(seed=7)
    np.save(tmp_path / "raw.npy", x.astype(np.uint16))
    ins = inspect_source(tmp_path / "raw.npy", qmap=_qmap(shape), frame_time=1e-3)
    out = write_findings(tmp_path / "f.json", ins)
    doc = json.loads(out.read_text())
    assert list(doc) == ["findings"] and doc["findings"]
    for item in doc["findings"]:
        assert set(item) == {"kind", "frames", "pixels", "frequency_hz", "detail", "q_bin"}
    rows = list(csv.reader(open(write_findings(tmp_path / "f.csv", ins), encoding="utf-8")))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert len(rows) == len(ins.findings) + 1
    hot = next(r for r in rows if r[0] == "hot_pixel")
    assert hot[4] == "7:11" and hot[3] == "1"
    with pytest.raises(ValueError, match=r"\.json or \.csv"):
        write_findings(tmp_path / "f.txt", ins)
    tok = CancelToken()
    tok.cancel()
    with pytest.raises(Cancelled):
        inspect_source(tmp_path / "raw.npy", cancel=tok)
    bad = _qmap((10, 10), (slice(0, 5), slice(0, 5)))
    from xpcsviewer.io.errors import XpcsFileError

    with pytest.raises(XpcsFileError, match="q-map"):
        inspect_source(tmp_path / "raw.npy", qmap=bad)
