"""Writers of the sparse raw layouts (synthetic.sparse_files) read back by the app's own
readers (``open_raw_source``), their atomic and no-overwrite rules, and the sparse
simulators (synthetic.sparse_speckle): hits of speckle frames, and photon arrivals whose
g2 is 1 + beta exp(-2 t / tau)."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from xpcsviewer.compute.inputs import FrameStream, Partition
from xpcsviewer.io.raw import open_raw_source
from xpcsviewer.synthetic import sparse_files as sf
from xpcsviewer.synthetic.sparse_speckle import (
    iter_arrivals,
    iter_speckle_hits,
    simulate_arrivals,
    speckle_hits,
)
from xpcsviewer.synthetic.speckle import simulate_frames


def _movie_hits(rng, n, shape, occ, allowed=None, last_empty=False):
    """Hits (frame, pixel, count) of a random sparse movie, frame-sorted."""
    h, w = shape
    pool = np.arange(h * w) if allowed is None else np.flatnonzero(allowed.ravel())
    fr, px, ct = [], [], []
    for f in range(n - 1 if last_empty else n):
        k = max(1, rng.binomial(pool.size, occ))
        p = np.sort(rng.choice(pool, k, replace=False))
        fr.append(np.full(k, f))
        px.append(p)
        ct.append(rng.integers(1, 6, k))
    return (np.concatenate(fr).astype(np.int64), np.concatenate(px).astype(np.int64),
            np.concatenate(ct).astype(np.uint16))


def _events(raw):
    """All hits of a source, sorted by (frame, pixel), counts summed per pixel (count-0
    words, which mark a Rigaku module's last frame, left out)."""
    parts = list(raw.iter_events())
    v = np.concatenate([b.value for b in parts]).astype(np.int64)
    f = np.concatenate([b.frame for b in parts])[v > 0]
    p = np.concatenate([b.pixel for b in parts])[v > 0]
    v = v[v > 0]
    key = f * raw.frame_shape[0] * raw.frame_shape[1] + p
    uk, inv = np.unique(key, return_inverse=True)
    return uk, np.bincount(inv, weights=v).astype(np.int64)


def _expected(f, p, c, npx):
    keep = np.asarray(c) > 0
    key = f[keep] * npx + p[keep]
    uk, inv = np.unique(key, return_inverse=True)
    return uk, np.bincount(inv, weights=c[keep].astype(np.int64)).astype(np.int64)


def _dense(f, p, c, n, shape):
    out = np.zeros((n, shape[0] * shape[1]), np.int64)
    np.add.at(out, (f, p), c.astype(np.int64))
    return out.reshape(n, *shape)


# ---------------------------------------------------------------------- round trips
@pytest.mark.parametrize("last_empty", [False, True])
def test_rigaku_bin_round_trip(tmp_path, rng, last_empty):
    n, shape = 12, sf.RIGAKU_MODULE_SHAPE
    f, p, c = _movie_hits(rng, n, shape, 2e-4, last_empty=last_empty)
    path = sf.write_rigaku_bin(tmp_path / "a.bin", f, p, c, n_frames=n)
    with open_raw_source(path) as raw:
        assert raw.layout == "rigaku" and raw.n_frames == n and raw.frame_shape == shape
        np.testing.assert_array_equal(raw.read(0, n), _dense(f, p, c, n, shape))
    words = np.fromfile(path, "<u8")  # the documented word layout
    assert words[0] == (int(f[0]) << 40) | (int(p[0]) << 16) | int(c[0])


def test_rigaku_3m_round_trip(tmp_path, rng):
    n, shape = 5, sf.RIGAKU_3M_SHAPE
    h, w = shape
    rows = np.arange(h) % (512 + 70) < 512
    cols = np.arange(w) % (1024 + 52) < 1024
    allowed = rows[:, None] & cols[None, :]
    f, p, c = _movie_hits(rng, n, shape, 2e-6, allowed=allowed)
    # one hit at the first pixel of every canvas position: module k's file is .00{P[k]}
    corners = [(k // 2 * 582) * w + k % 2 * 1076 for k in range(6)]
    f = np.concatenate([f, np.zeros(6, np.int64)])
    p = np.concatenate([p, corners])
    c = np.concatenate([c, np.arange(1, 7, dtype=np.uint16) * 100])
    order = np.argsort(f, kind="stable")
    f, p, c = f[order], p[order], c[order]
    files = sf.write_rigaku_3m(tmp_path / "det.bin", f, p, c, n_frames=n)
    assert [q.name for q in files] == [f"det.bin.00{k}" for k in range(6)]
    for k, suffix in enumerate((5, 0, 4, 1, 3, 2)):
        words = np.fromfile(files[suffix], "<u8").astype(np.int64)
        first = words[(words >> 40 == 0) & ((words >> 16) & 0x1FFFFF == 0)]
        assert first.tolist() == [100 * (k + 1)]  # frame 0, module pixel 0
    with open_raw_source(files[3]) as raw:
        assert raw.layout == "rigaku-3m" and raw.n_frames == n and raw.frame_shape == shape
        got = _events(raw)
        one = raw.read(2, 3)[0]
    want = _expected(f, p, c, h * w)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(one, _dense(f, p, c, n, shape)[2])
    gap = 512 * w  # row 512: the first gap row
    with pytest.raises(ValueError, match="gap"):
        sf.write_rigaku_3m(tmp_path / "gap.bin", [0], [gap], [1])


@pytest.mark.parametrize("blocks", [None, 7])
def test_esrf_csr_round_trip(tmp_path, rng, blocks):
    n, shape = 30, (20, 24)
    f, p, c = _movie_hits(rng, n, shape, 0.05, last_empty=True)
    target = tmp_path / ("scan_sparse_frame_0" if blocks else "one.h5")
    paths = sf.write_esrf_csr(target, f, p, c, n_frames=n, frames_per_block=blocks,
                              shape=shape if blocks else None)
    assert len(paths) == (1 if blocks is None else 5)
    if blocks:
        assert paths[1].name == "scan_sparse_frame_0_00001.h5"
    with open_raw_source(paths[-1], shape=None if blocks else shape) as raw:
        assert raw.layout == "esrf-csr" and raw.n_frames == n
        np.testing.assert_array_equal(raw.read(0, n), _dense(f, p, c, n, shape))
    with h5py.File(paths[0]) as h:
        g = h[sf.ESRF_GROUP]
        assert {"frame_ptr", "index", "intensity"} <= set(g)


def test_id11_round_trip(tmp_path, rng):
    n, shape = 25, (16, 30)
    f, p, c = _movie_hits(rng, n, shape, 0.05, last_empty=True)
    path = sf.write_id11_sparse(tmp_path / "id11.h5", f, p, c, shape, n_frames=n)
    with open_raw_source(path) as raw:
        assert raw.layout == "id11-sparse" and raw.n_frames == n
        assert raw.dataset_path == "/1.1" and raw.frame_shape == shape
        np.testing.assert_array_equal(raw.read(0, n), _dense(f, p, c, n, shape))


def test_timepix_round_trip_both_views(tmp_path, rng):
    shape = (12, 10)
    x = rng.integers(0, 10, 500)
    y = rng.integers(0, 12, 500)
    toa = np.sort(rng.integers(5, 10_000, 500))
    path = sf.write_timepix(tmp_path / "tpx.h5", x, y, toa, 1.5625e-9, shape,
                            tot=np.full(500, 7))
    with open_raw_source(path) as raw:  # time-tag: a frame per tick from the first event
        assert raw.layout == "timepix" and raw.time_tag and raw.frame_shape == shape
        assert raw.frame_time == pytest.approx(1.5625e-9)
        assert raw.n_frames == toa[-1] - toa[0] + 1
        got = _events(raw)
    want = _expected(toa - toa[0], y * 10 + x, np.ones(500, np.int64), 120)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    with open_raw_source(path, bin_time=100 * 1.5625e-9) as raw:  # frames of 100 ticks
        fr = (toa - toa[0]) // 100
        np.testing.assert_array_equal(raw.read(0, raw.n_frames),
                                      _dense(fr, y * 10 + x, np.ones(500), raw.n_frames, shape))


# ---------------------------------------------------------------------- atomic, no overwrite
def test_no_overwrite_atomic_and_refusals(tmp_path, monkeypatch):
    f, p, c = np.array([0, 0, 2]), np.array([3, 9, 4]), np.array([1, 2, 3])
    a = sf.write_rigaku_bin(tmp_path / "a.bin", f, p, c)
    before = a.read_bytes()
    with pytest.raises(FileExistsError):
        sf.write_rigaku_bin(a, [0], [1], [1])
    assert a.read_bytes() == before
    sf.write_rigaku_bin(a, [0], [1], [1], overwrite=True)
    assert a.read_bytes() != before and a.stat().st_size == 8
    # a set of files: one present refuses the whole set before anything is written
    (tmp_path / "m.bin.004").write_bytes(b"mine")
    with pytest.raises(FileExistsError, match=r"m\.bin\.004"):
        sf.write_rigaku_3m(tmp_path / "m.bin", [0], [0], [1])
    assert sorted(q.name for q in tmp_path.iterdir()) == ["a.bin", "m.bin.004"]
    # a block series: stale higher blocks would be read with it
    sf.write_esrf_csr(tmp_path / "s", [0, 5], [1, 2], [1, 1], frames_per_block=2,
                      shape=(4, 4))
    with pytest.raises(FileExistsError):
        sf.write_esrf_csr(tmp_path / "s", [0, 1], [1, 2], [1, 1], frames_per_block=2,
                          shape=(4, 4))
    sf.write_esrf_csr(tmp_path / "s", [0, 1], [1, 2], [1, 1], frames_per_block=2,
                      shape=(4, 4), overwrite=True)
    assert sorted(q.name for q in tmp_path.glob("s_*.h5")) == ["s_00000.h5"]
    with open_raw_source(tmp_path / "s_00000.h5") as raw:
        assert raw.n_frames == 2
    # a write that fails leaves neither the target nor a temporary
    sub = tmp_path / "fail"
    sub.mkdir()

    def boom(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(sf, "_dataset", boom)
    with pytest.raises(RuntimeError, match="disk on fire"):
        sf.write_id11_sparse(sub / "x.h5", [0], [1], [1], (4, 4))
    assert list(sub.iterdir()) == []
    # bad hits are refused before anything is written
    with pytest.raises(ValueError, match="outside"):
        sf.write_timepix(sub / "t.h5", [0, 2], [0, 0], [5, 3], 1e-9, (2, 2))
    with pytest.raises(ValueError, match="frame order"):
        sf.write_esrf_csr(sub / "e.h5", [1, 0], [0, 0], [1, 1], shape=(2, 2))
    with pytest.raises(ValueError, match=r"0\.\.4095"):
        sf.write_rigaku_bin(sub / "r.bin", [0], [0], [5000])
    assert list(sub.iterdir()) == []


# ---------------------------------------------------------------------- simulators
def test_speckle_hits_are_the_frames_on_the_detector(rng):
    q = np.full((12, 10), 0.002)
    kw = {"beta": 0.5, "rate": 0.05, "speckle_px": 2, "seed": 4}
    frames = simulate_frames(q, 70, 1e-3, D=1e5, chunk=32, **kw)
    f, p, c = speckle_hits(q, 70, 1e-3, 1e5, detector_shape=(40, 50), origin=(7, 30),
                           chunk=32, **kw)
    assert (np.diff(f) >= 0).all() and c.dtype == np.uint16
    big = np.zeros((70, 40, 50), np.uint16)
    big[:, 7:19, 30:40] = frames
    np.testing.assert_array_equal(_dense(f, p, c, 70, (40, 50)), big)
    with pytest.raises(ValueError, match="not inside"):
        next(iter_speckle_hits(q, 5, 1e-3, 1e5, detector_shape=(12, 10), origin=(1, 0)))


def test_arrivals_sorted_chunk_independent_and_g2():
    from xpcsviewer.compute.multitau.photons import correlate_multitau_events
    from xpcsviewer.fitting.models import averaging_factors
    from xpcsviewer.model.events import EventBlock

    tick, tau, beta, rate = 1.5625e-9, 200e-9, 0.5, 5e6
    shape = (16, 16)
    x, y, toa = simulate_arrivals(shape, rate, tau, beta, 1e-4, tick, seed=11)
    assert (np.diff(toa) >= 0).all() and x.max() < 16 and y.max() < 16
    n = round(1e-4 / tick)
    assert toa[-1] < n
    # the mean rate per pixel
    assert toa.size / (256 * 1e-4) == pytest.approx(rate, rel=0.03)
    small = list(iter_arrivals(shape, rate, tau, beta, 2e-6, tick, seed=11, max_samples=999))
    assert len(small) > 1
    first = np.concatenate([s[2] for s in small])
    np.testing.assert_array_equal(first, toa[: first.size])
    res = correlate_multitau_events(FrameStream(lambda: [EventBlock(0, n, toa, y * 16 + x,
                                                                    np.ones(toa.size, np.uint8))],
                                                n),
                                    Partition(np.ones(shape, int), np.ones(shape, int)))
    t = res.delay_frames * tick
    m = averaging_factors(res.delay_frames)
    # g2 - 1 of frames averaged over m ticks: beta exp(-2t/tau) (sinh(a m)/(m sinh a))^2
    a = tick / tau
    want = 1 + beta * np.exp(-2 * t / tau) * (np.sinh(a * m) / (m * np.sinh(a))) ** 2
    g, err = res.g2[:, 0], res.g2_err[:, 0]
    sel = t < 5 * tau
    z = (g[sel] - want[sel]) / err[sel]
    assert np.abs(z).max() < 4.5 and np.mean(z**2) < 2.0, z
    late = (t > 20 * tau) & np.isfinite(g)
    assert late.sum() > 10 and g[late].mean() == pytest.approx(1.0, abs=2e-3)
    assert g[:4].mean() == pytest.approx(1 + beta, abs=0.04)
