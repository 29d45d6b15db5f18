"""Photon-sparse and event-mode raw readers: Rigaku .bin (module, 3M), ESRF ID10 CSR
blocks, ImageD11 sparse, Timepix event lists; ``open_raw_source`` and ``info``.

Every layout is written here from a known random sparse movie and must give exactly
the dense movie (``read``) and its hits (``iter_events``), with the frame selection
applied as ``RawFrames`` applies it to the same movie saved as ``.npy``.
"""

from __future__ import annotations

import itertools
import json
import os

import h5py
import numpy as np
import pytest

from xpcsviewer.cli import main
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.raw import RawFrames, open_raw_source, raw_layout
from xpcsviewer.io.raw.esrf_csr import EsrfCsr
from xpcsviewer.io.raw.id11 import Id11Sparse
from xpcsviewer.io.raw.rigaku import RIGAKU_3M_SHAPE, Rigaku3M, RigakuBin
from xpcsviewer.io.raw.sparse import SparseSource
from xpcsviewer.io.raw.timepix import TimepixEvents

N, H, W = 40, 16, 24
N_RIGAKU, H_RIGAKU, W_RIGAKU = 24, 512, 1024
SELECTIONS = [(0, -1, 1, 1), (3, 20, 2, 1), (1, -1, 3, 2), (2, -1, 1, 4)]
ESRF_DATA = "entry_0000/measurement/data"


# ---------------------------------------------------------------------- movies and writers
def make_movie(seed: int, n: int, h: int, w: int, occ: float) -> np.ndarray:
    """(n, h, w) uint16 counts 1-5 at about ``occ`` of the pixels; hits in the first and
    last frames (an event list starts at its first event, a Rigaku file ends at its last)."""
    rng = np.random.default_rng(seed)
    m = np.zeros((n, h * w), np.uint16)
    for f in range(n):
        px = np.unique(rng.integers(0, h * w, rng.binomial(h * w, occ)))
        m[f, px] = rng.integers(1, 6, px.size)
    m[0, 1] = 3
    m[-1, h * w - 2] = 2
    return m.reshape(n, h, w)


def hits(movie: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    flat = movie.reshape(movie.shape[0], -1)
    f, p = np.nonzero(flat)
    return f.astype(np.int64), p.astype(np.int64), flat[f, p]


def rigaku_words(frame, pixel, count) -> np.ndarray:
    u = np.uint64
    return ((np.asarray(frame).astype(u) << u(40)) | (np.asarray(pixel).astype(u) << u(16))
            | np.asarray(count).astype(u)).astype("<u8")


def write_rigaku(path, movie, seed=0, offset=False):
    """Words in frame order, pixels shuffled within each frame."""
    f, p, c = hits(movie)
    rng = np.random.default_rng(seed)
    order = np.lexsort((rng.random(f.size), f))
    p = p + (1 << 20) if offset else p
    rigaku_words(f[order], p[order], c[order]).tofile(path)
    return path


def write_esrf(folder, movie, blocks=(15, 15, 10), name="scan_0001_sparse_frame_0_",
               shape_attr=False):
    paths = []
    start = 0
    folder.mkdir(parents=True, exist_ok=True)
    for i, nb in enumerate(blocks):
        part = movie[start: start + nb].reshape(nb, -1)
        start += nb
        ptr = np.concatenate([[0], np.cumsum(np.count_nonzero(part, axis=1))])
        f, p = np.nonzero(part)
        path = folder / f"{name}{i:05d}.h5"
        with h5py.File(path, "w") as h:
            g = h.create_group(ESRF_DATA)
            g["frame_ptr"] = ptr.astype(np.uint64)
            g["index"] = p.astype(np.uint32)
            g["intensity"] = part[f, p].astype(np.float32)
            if shape_attr:
                g.attrs["shape"] = np.array(movie.shape[1:])
        paths.append(path)
    return paths


def write_id11(path, movie, group="1.1", extra=True, shape_attrs=True):
    n, h, w = movie.shape
    f, p, c = hits(movie)
    with h5py.File(path, "w") as hf:
        for name in [group, "2.1"] if extra else [group]:
            g = hf.require_group(name) if name != "/" else hf
            g["nnz"] = np.bincount(f, minlength=n).astype(np.int32)
            g["row"] = (p // w).astype(np.uint16)
            g["col"] = (p % w).astype(np.uint16)
            g["intensity"] = c.astype(np.uint16)
            if shape_attrs:
                g.attrs["shape0"], g.attrs["shape1"] = h, w
    return path


def timepix_events(movie, ticks_per_frame=1000, seed=0):
    """One event per photon: (tick, x, y) sorted by tick, the first event at tick 0."""
    f, p, c = hits(movie)
    w = movie.shape[2]
    rng = np.random.default_rng(seed)
    fe = np.repeat(f, c)
    pe = np.repeat(p, c)
    t = fe * ticks_per_frame + rng.integers(0, ticks_per_frame, fe.size)
    t[np.argmin(t)] = 0
    order = np.argsort(t, kind="stable")
    return t[order], (pe % w)[order], (pe // w)[order]


def write_timepix(path, movie, *, seconds=False, unsorted=False, group="tpx3",
                  tick_s=1e-6, units=None, int_no_units=False):
    t, x, y = timepix_events(movie)
    if unsorted:  # swap neighbours: a roughly sorted list
        idx = np.arange(1, t.size - 1, 7)
        t[idx], t[idx + 1] = t[idx + 1].copy(), t[idx].copy()
        x[idx], x[idx + 1] = x[idx + 1].copy(), x[idx].copy()
        y[idx], y[idx + 1] = y[idx + 1].copy(), y[idx].copy()
    with h5py.File(path, "w") as hf:
        g = hf.create_group(group)
        g["x"] = x.astype(np.uint16)
        g["y"] = y.astype(np.uint16)
        if seconds:
            g["toa"] = t * tick_s  # float seconds, no attribute
        else:
            g["toa"] = t.astype(np.uint64)
            if units is not None:
                g["toa"].attrs["units"] = units
            elif not int_no_units:
                g["toa"].attrs["tick_s"] = tick_s
        g["tot"] = np.full(t.size, 25, np.uint16)
        g.attrs["detector_shape"] = np.array(movie.shape[1:])
    return path


# ---------------------------------------------------------------------- the layouts
KINDS = ["rigaku", "rigaku-offset", "esrf-series", "id11", "timepix-ticks",
         "timepix-seconds", "timepix-unsorted"]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """kind -> (source path, open kwargs, movie .npy, movie); written once."""
    d = tmp_path_factory.mktemp("sparse")
    small = make_movie(1, N, H, W, 0.04)
    module = make_movie(2, N_RIGAKU, H_RIGAKU, W_RIGAKU, 0.001)
    np.save(d / "small.npy", small)
    np.save(d / "module.npy", module)
    out = {
        "rigaku": (write_rigaku(d / "m.bin", module), {}, d / "module.npy", module),
        "rigaku-offset": (write_rigaku(d / "off.bin", module, offset=True), {},
                          d / "module.npy", module),
        "esrf-series": (write_esrf(d / "esrf", small)[1], {"shape": (H, W)},
                        d / "small.npy", small),
        "id11": (write_id11(d / "id11.h5", small), {}, d / "small.npy", small),
        "timepix-ticks": (write_timepix(d / "tpx.h5", small), {"bin_time": 1e-3},
                          d / "small.npy", small),
        "timepix-seconds": (write_timepix(d / "tpxs.h5", small, seconds=True),
                            {"bin_time": 1e-3}, d / "small.npy", small),
        "timepix-unsorted": (write_timepix(d / "tpxu.h5", small, unsorted=True),
                             {"bin_time": 1e-3}, d / "small.npy", small),
    }
    return out


CLASSES = {"rigaku": RigakuBin, "rigaku-offset": RigakuBin, "esrf-series": EsrfCsr,
           "id11": Id11Sparse, "timepix-ticks": TimepixEvents,
           "timepix-seconds": TimepixEvents, "timepix-unsorted": TimepixEvents}


def events_dense(src: SparseSource, max_events: int) -> tuple[np.ndarray, int]:
    """The dense movie the event blocks add up to, and the number of blocks."""
    n, h, w = src.shape
    blocks = list(src.iter_events(max_events=max_events))
    assert blocks[0].start == 0 and blocks[-1].stop == n
    assert all(a.stop == b.start for a, b in itertools.pairwise(blocks))
    for b in blocks:
        assert b.frame.dtype.kind in "iu" and b.pixel.dtype.kind in "iu"
        assert np.all(np.diff(b.frame) >= 0)
        assert b.frame.size == 0 or (b.frame.min() >= b.start and b.frame.max() < b.stop)
    fr = np.concatenate([b.frame for b in blocks])
    px = np.concatenate([b.pixel for b in blocks])
    val = np.concatenate([b.value for b in blocks]).astype(np.float64)
    dense = np.bincount(fr * (h * w) + px, weights=val, minlength=n * h * w)
    return dense.reshape(n, h, w), len(blocks)


@pytest.mark.parametrize("sel", SELECTIONS, ids=lambda s: "-".join(map(str, s)))
@pytest.mark.parametrize("kind", KINDS)
def test_reader_matches_dense_movie(written, kind, sel):
    path, kw, npy, movie = written[kind]
    begin, end, stride, avg = sel
    with RawFrames(npy, begin, end, stride, avg) as ref, \
            open_raw_source(path, begin=begin, end=end, stride=stride, avg=avg, **kw) as src:
        assert type(src) is CLASSES[kind]
        assert src.shape == ref.shape and src.raw_frames == movie.shape[0]
        want = ref.read(0, ref.n_frames)
        got = src.read(0, src.n_frames)
        np.testing.assert_array_equal(got, want)
        if avg > 1:
            assert got.dtype == want.dtype == np.float64
        # a part read on its own is the same part
        np.testing.assert_array_equal(src.read(1, 3), want[1:3])
        max_events = max(40, src.n_events // 12)
        dense, n_blocks = events_dense(src, max_events)
        assert n_blocks >= 4
        np.testing.assert_array_equal(dense, want)


def test_whole_read_is_the_movie_and_hits(written):
    path, _, _, movie = written["rigaku"]
    with RigakuBin(path) as src:
        np.testing.assert_array_equal(src.read(0, src.n_frames), movie)
        assert src.read(0, 2).dtype == np.uint16 and src.frame_time is None
        f, p, c = hits(movie)
        blocks = list(src.iter_events(max_events=500))
        got = np.stack([np.concatenate([getattr(b, k) for b in blocks])
                        for k in ("frame", "pixel", "value")])
        order = np.lexsort((got[1], got[0]))
        np.testing.assert_array_equal(got[:, order], np.stack([f, p, c]))


@pytest.mark.parametrize("kind", KINDS)
def test_summary_numbers(written, kind):
    path, kw, npy, movie = written[kind]
    n, h, w = movie.shape
    f, _, c = hits(movie)
    with open_raw_source(path, **kw) as src:
        s = src.summary()
    event_list = kind.startswith("timepix")
    events = int(c.sum()) if event_list else f.size  # an event is one photon
    assert s["kind"] == "raw" and s["sparse"] is True and s["layout"] == src.layout
    assert s["detector_shape"] == [h, w] and s["n_frames"] == n
    assert s["events"] == events
    assert s["occupancy"] == pytest.approx(events / (n * h * w))
    assert s["photons_per_frame"] == pytest.approx(c.sum() / n)
    with RawFrames(npy) as dense:
        d = dense.summary()
        assert d["events"] is None and d["sparse"] is False and d["layout"] == "npy"
        assert d["occupancy"] == pytest.approx(f.size / (n * h * w))
        assert d["photons_per_frame"] == pytest.approx(s["photons_per_frame"])
        assert set(s) - {"time_tag", "tick_s", "tot"} == set(d)
        assert dense.sparse is False and dense.n_events is None and dense.frame_time is None


def test_rigaku_3m_canvas(tmp_path):
    rng = np.random.default_rng(5)
    n = 4
    expected = []  # (frame, canvas pixel, count)
    wr = RIGAKU_3M_SHAPE[1]
    for k, suffix in enumerate((5, 0, 4, 1, 3, 2)):
        r0, c0 = (k // 2) * (512 + 70), (k % 2) * (1024 + 52)
        f = np.sort(rng.integers(0, n, 30))
        f[-1] = n - 1
        r = rng.integers(0, 512, f.size)
        c = rng.integers(0, 1024, f.size)
        r[0], c[0] = 511, 1023  # the module's last pixel
        cnt = rng.integers(1, 6, f.size)
        px = r * 1024 + c + ((1 << 20) if suffix == 2 else 0)  # one module offset by 2**20
        rigaku_words(f, px, cnt).tofile(tmp_path / f"run.bin.00{suffix}")
        expected.append(np.stack([f, (r + r0) * wr + (c + c0), cnt]))
    exp = np.concatenate(expected, axis=1)
    exp = exp[:, np.lexsort((exp[1], exp[0]))]
    assert raw_layout(tmp_path / "run.bin.003") == "rigaku-3m"
    with open_raw_source(tmp_path / "run.bin.003") as src:
        assert isinstance(src, Rigaku3M)
        assert src.frame_shape == (1676, 2100) and src.raw_frames == n
        assert [x.name for x in src.files] == [f"run.bin.00{i}" for i in range(6)]
        blocks = list(src.iter_events(max_events=20))
        fr = np.concatenate([b.frame for b in blocks])
        assert np.all(np.diff(fr) >= 0)  # frame order across modules
        got = np.stack([fr, np.concatenate([b.pixel for b in blocks]),
                        np.concatenate([b.value for b in blocks])])
        got = got[:, np.lexsort((got[1], got[0]))]
        np.testing.assert_array_equal(got, exp)
        one = src.read(n - 1, n)[0]
        last = exp[:, exp[0] == n - 1]
        np.testing.assert_array_equal(one.ravel()[last[1]], last[2])
        assert one.sum() == last[2].sum()
    # the .NNN naming without ".bin" works too, from the stem
    for s in range(6):
        os.rename(tmp_path / f"run.bin.00{s}", tmp_path / f"run.00{s}")
    assert raw_layout(tmp_path / "run") == "rigaku-3m"
    with open_raw_source(tmp_path / "run") as src:
        assert isinstance(src, Rigaku3M) and src.raw_events == exp.shape[1]


def test_rigaku_3m_placement_corners(tmp_path):
    """Module file .00N's pixel (0, 0) lands at its canvas corner."""
    corner = {5: (0, 0), 0: (0, 1076), 4: (582, 0), 1: (582, 1076), 3: (1164, 0),
              2: (1164, 1076)}
    for s in range(6):
        rigaku_words([0, 1], [0, 5 * 1024 + 7], [s + 1, 1]).tofile(tmp_path / f"a.00{s}")
    with open_raw_source(tmp_path / "a.000") as src:
        img = src.read(0, 1)[0]
        for s, (r, c) in corner.items():
            assert img[r, c] == s + 1
        assert img.sum() == sum(range(1, 7))
        assert src.read(1, 2)[0][1164 + 5, 1076 + 7] == 1


def test_esrf_series_from_any_block_or_folder(written):
    path, _, _, movie = written["esrf-series"]
    folder = path.parent
    for p in (folder / "scan_0001_sparse_frame_0_00000.h5", path,
              folder / "scan_0001_sparse_frame_0_00002.h5", folder):
        assert raw_layout(p) == "esrf-csr"
        with open_raw_source(p, shape=(H, W)) as src:
            assert len(src.files) == 3 and src.raw_frames == N
            np.testing.assert_array_equal(src.read(13, 33), movie[13:33].astype(np.float32))


def test_esrf_shape_attribute_and_unknown_shape(tmp_path):
    movie = make_movie(3, 10, 8, 12, 0.1)
    [with_attr] = write_esrf(tmp_path / "a", movie, blocks=(10,), shape_attr=True)
    with EsrfCsr(with_attr) as src:  # the file's own shape
        assert src.frame_shape == (8, 12)
        np.testing.assert_array_equal(src.read(0, 10), movie)
    [bare] = write_esrf(tmp_path / "b", movie, blocks=(10,))
    with pytest.raises(XpcsFileError) as e:
        open_raw_source(bare)
    msg = str(e.value)
    assert str(bare) in msg and "detector shape is unknown" in msg and "q-map" in msg


def test_id11_groups_and_shape(tmp_path, written):
    path = written["id11"][0]
    with Id11Sparse(path) as src:
        assert src.dataset_path == "/1.1" and "/2.1" in src.layout_text
    movie = make_movie(4, 6, 5, 7, 0.2)
    root = write_id11(tmp_path / "root.h5", movie, group="/", extra=False, shape_attrs=False)
    assert raw_layout(root) == "id11-sparse"
    with pytest.raises(XpcsFileError, match="detector shape is unknown"):
        Id11Sparse(root)
    with open_raw_source(root, shape=(5, 7)) as src:
        np.testing.assert_array_equal(src.read(0, 6), movie)


def test_timepix_time_tag_view(tmp_path):
    toa = np.array([100, 100, 103, 103, 103, 110, 111, 120], np.int64)
    x = np.array([0, 1, 2, 2, 3, 0, 1, 3])
    y = np.array([0, 0, 1, 1, 2, 2, 0, 1])
    p = tmp_path / "tt.h5"
    with h5py.File(p, "w") as f:
        f["x"], f["y"], f["toa"] = x, y, toa
        f["toa"].attrs["units"] = "ns"
    with TimepixEvents(p, shape=(3, 4)) as src:
        assert src.time_tag and src.tick_s == 1e-9 and src.frame_time == 1e-9
        assert src.raw_frames == 21 and src.n_events == 8 and not src.has_tot
        [b] = list(src.iter_events())
        np.testing.assert_array_equal(b.frame, toa - 100)
        np.testing.assert_array_equal(b.pixel, y * 4 + x)
        assert b.value.dtype == np.uint8 and np.all(b.value == 1)
        img = src.read(3, 4)[0]
        assert img[1, 2] == 2 and img[2, 3] == 1 and img.sum() == 3
    with TimepixEvents(p, shape=(3, 4), begin=3, stride=7) as src:  # ticks 3, 10, 17
        assert src.n_frames == 3 and src.read(0, 3).sum(axis=(1, 2)).tolist() == [3, 1, 0]
    # a bin that is not a whole number of ticks: floor((toa - t0) / bin) in float
    with TimepixEvents(p, shape=(3, 4), bin_time=2.5e-9) as src:
        assert not src.time_tag and src.frame_time == 2.5e-9
        [b] = list(src.iter_events())
        np.testing.assert_array_equal(b.frame, np.floor((toa - 100) / 2.5).astype(int))
        assert src.raw_frames == 9


def test_timepix_unsorted_is_sorted_in_memory(written):
    path, kw, _, movie = written["timepix-unsorted"]
    with TimepixEvents(path, **kw) as src:
        assert src.sorted_in_memory and "sorted in memory" in src.layout_text
        np.testing.assert_array_equal(src.read(0, N), movie)
    with TimepixEvents(written["timepix-ticks"][0], **kw) as src:
        assert not src.sorted_in_memory and src.has_tot and "tot" in src.layout_text
        assert src.summary(count_photons=False)["tot"] is True


def test_content_not_name_decides(tmp_path, written):
    module = make_movie(6, 3, 512, 1024, 0.001)
    fake_h5 = write_rigaku(tmp_path / "rigaku.h5", module)
    assert raw_layout(fake_h5) == "rigaku"
    with open_raw_source(fake_h5) as src:
        assert isinstance(src, RigakuBin)
    movie = make_movie(7, 5, 6, 8, 0.2)
    [esrf] = write_esrf(tmp_path / "e", movie, blocks=(5,), shape_attr=True)
    csr_bin = esrf.rename(tmp_path / "frames.bin")
    assert raw_layout(csr_bin) == "esrf-csr"
    with open_raw_source(csr_bin) as src:
        assert isinstance(src, EsrfCsr)
        np.testing.assert_array_equal(src.read(0, 5), movie)
    dense = tmp_path / "dense.dat"
    with h5py.File(dense, "w") as f:
        f["/entry/data/data"] = movie
    assert raw_layout(dense) == "hdf5"
    with open_raw_source(dense) as src:
        assert isinstance(src, RawFrames) and src.layout == "hdf5"
    # neither: not raw, and the error lists the layouts looked for
    text = tmp_path / "notes.txt"
    text.write_text("hello, these are notes\n")
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["xpcs/something"] = np.arange(3)
    for p in (text, other):
        assert raw_layout(p) is None
        with pytest.raises(XpcsFileError, match=r"Rigaku.*ESRF.*ImageD11.*Timepix") as e:
            open_raw_source(p)
        assert str(p) in str(e.value)
    with pytest.raises(ValueError, match="bin-time"):
        open_raw_source(dense, bin_time=1e-3)


# ---------------------------------------------------------------------- traps
def raises(fn, *words):
    with pytest.raises(XpcsFileError) as e:
        src = fn()
        src.read(0, src.n_frames)
    msg = str(e.value)
    for w in words:
        assert str(w) in msg, (w, msg)
    return msg


def test_rigaku_traps(tmp_path):
    ok = [(0, 5, 1), (0, 9, 2), (1, 3, 1), (2, 4, 1)]
    f, p, c = (np.array(v) for v in zip(*ok, strict=True))
    # pixel outside the module (not in the 2**20 fold range)
    bad = tmp_path / "pix.bin"
    rigaku_words(f, np.where(np.arange(4) == 2, 512 * 1024 + 5, p), c).tofile(bad)
    raises(lambda: RigakuBin(bad), bad, "pixel field", "word 2", str(512 * 1024 + 5))
    # frames going backwards
    back = tmp_path / "back.bin"
    rigaku_words([0, 1, 3, 2, 4], [1, 2, 3, 4, 5], [1] * 5).tofile(back)
    raises(lambda: RigakuBin(back), back, "word 3", "backwards")
    rigaku_words([3, 1], [1, 2], [1, 1]).tofile(back)  # the last word before the first
    raises(lambda: open_raw_source(back), back, "word 1", "backwards")
    # truncated last word
    trunc = tmp_path / "trunc.bin"
    trunc.write_bytes(rigaku_words(f, p, c).tobytes() + b"\x01\x02\x03")
    raises(lambda: open_raw_source(trunc), trunc, "truncated last word: 3 bytes", "word 4")
    # empty
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    raises(lambda: RigakuBin(empty), empty, "empty")
    raises(lambda: open_raw_source(empty), empty, "empty")


def test_rigaku_3m_traps(tmp_path):
    for s in range(6):
        n = 3 if s != 4 else 2
        rigaku_words(range(n), [s] * n, [1] * n).tofile(tmp_path / f"x.bin.00{s}")
    msg = raises(lambda: Rigaku3M(tmp_path / "x.bin.000"), "different frame counts",
                 "x.bin.004: 2", "x.bin.000: 3", "x.bin.005: 3")
    assert str(tmp_path) in msg
    (tmp_path / "x.bin.003").unlink()
    raises(lambda: open_raw_source(tmp_path / "x.bin.000"), "x.bin.003", "missing")


def test_csr_traps(tmp_path):
    movie = make_movie(8, 6, 4, 5, 0.3)
    [good] = write_esrf(tmp_path / "e", movie, blocks=(6,), name="s_")

    def variant(name, **change):
        p = tmp_path / name
        with h5py.File(good, "r") as src, h5py.File(p, "w") as dst:
            g = dst.create_group(ESRF_DATA)
            for k in ("frame_ptr", "index", "intensity"):
                g[k] = change.get(k, src[f"{ESRF_DATA}/{k}"][()])
        return p

    ptr = h5py.File(good, "r")[f"{ESRF_DATA}/frame_ptr"][()].astype(np.int64)
    for name, new_ptr in (("end.h5", np.append(ptr[:-1], ptr[-1] - 1)),
                          ("start.h5", ptr + 1),
                          ("dec.h5", np.where(np.arange(ptr.size) == 2, ptr[3] + 1, ptr))):
        p = variant(name, frame_ptr=new_ptr)
        raises(lambda p=p: EsrfCsr(p, shape=(4, 5)), p, "CSR pointer does not match",
               "frame_ptr")
    idx = h5py.File(good, "r")[f"{ESRF_DATA}/index"][()]
    p = variant("len.h5", intensity=np.ones(idx.size + 1))
    raises(lambda: EsrfCsr(p, shape=(4, 5)), p, "CSR pointer does not match", "intensity")
    p = variant("pix.h5", index=np.where(np.arange(idx.size) == 3, 20, idx))
    raises(lambda: EsrfCsr(p, shape=(4, 5)), p, f"{ESRF_DATA}/index", "entry 3", "20",
           "outside")


def test_esrf_missing_block(tmp_path):
    paths = write_esrf(tmp_path / "s", make_movie(9, 12, 4, 5, 0.2), blocks=(4, 4, 4, 4))
    paths[2].unlink()
    for p in (paths[0], tmp_path / "s"):
        raises(lambda p=p: EsrfCsr(p, shape=(4, 5)), "scan_0001_sparse_frame_0_00002.h5",
               "block 2", "missing")


def test_id11_traps(tmp_path):
    movie = make_movie(10, 6, 4, 5, 0.3)
    base = write_id11(tmp_path / "ok.h5", movie, extra=False)

    def variant(name, **change):
        p = tmp_path / name
        with h5py.File(base, "r") as src, h5py.File(p, "w") as dst:
            g = dst.create_group("1.1")
            for k in ("nnz", "row", "col", "intensity"):
                g[k] = change.get(k, src[f"1.1/{k}"][()])
            g.attrs["shape0"], g.attrs["shape1"] = 4, 5
        return p

    src = h5py.File(base, "r")
    nnz, row, col = (src[f"1.1/{k}"][()] for k in ("nnz", "row", "col"))
    src.close()
    p = variant("sum.h5", nnz=nnz + np.eye(1, nnz.size, 2, dtype=nnz.dtype)[0])
    raises(lambda: Id11Sparse(p), p, "/1.1/nnz", "nnz sum mismatch")
    neg = nnz.copy()
    neg[1], neg[2] = -1, neg[2] + neg[1] + 1
    p = variant("neg.h5", nnz=neg)
    raises(lambda: Id11Sparse(p), p, "/1.1/nnz", "negative")
    p = variant("row.h5", row=np.where(np.arange(row.size) == 4, 4, row))
    raises(lambda: Id11Sparse(p), p, "/1.1/row", "entry 4", "outside")
    p = variant("col.h5", col=np.where(np.arange(col.size) == 1, 7, col))
    raises(lambda: Id11Sparse(p), p, "/1.1/col", "entry 1", "outside")


def test_timepix_traps(tmp_path, written):
    movie = make_movie(11, 5, 4, 6, 0.2)
    p = write_timepix(tmp_path / "nounits.h5", movie, int_no_units=True)
    raises(lambda: TimepixEvents(p, bin_time=1e-3), p, "/tpx3/toa", "without units",
           "tick_s")
    p = write_timepix(tmp_path / "us.h5", movie, units="us")
    with TimepixEvents(p, bin_time=1e-3) as src:  # units instead of tick_s
        assert src.tick_s == 1e-6
        np.testing.assert_array_equal(src.read(0, 5), movie)
    for unsorted in (False, True):
        p = tmp_path / f"x{unsorted}.h5"
        write_timepix(p, movie, unsorted=unsorted)
        with h5py.File(p, "a") as f:
            x = f["tpx3/x"][()]
            x[9] = 6
            del f["tpx3/x"]
            f["tpx3/x"] = x
        raises(lambda p=p: TimepixEvents(p, bin_time=1e-3), p, "/tpx3/x", "entry 9",
               "outside")


# ---------------------------------------------------------------------- info
def test_cli_info_rigaku_and_esrf_with_qmap(tmp_path, capsys):
    module = make_movie(12, 3, 512, 1024, 0.002)
    rig = write_rigaku(tmp_path / "run.bin", module)
    movie = make_movie(13, 10, H, W, 0.05)
    [esrf] = write_esrf(tmp_path / "esrf", movie, blocks=(10,))
    q = tmp_path / "qmap.hdf"
    assert main(["qmap", "--shape", str(H), str(W), "--energy", "10", "--det-dist", "5",
                 "--pixel-size", "75e-6", "--bcx", "12", "--bcy", "8", "--dq-num", "3",
                 "--sq-num", "6", "-o", str(q)]) == 0
    capsys.readouterr()
    assert main(["info", "--json", "--qmap", str(q), str(rig), str(esrf)]) == 0
    recs = json.loads(capsys.readouterr().out)["files"]
    assert [r["kind"] for r in recs] == ["raw", "raw"]
    r, e = recs
    f, _, c = hits(module)
    assert r["layout"] == "rigaku" and r["detector_shape"] == [512, 1024]
    assert r["n_frames"] == 3 and r["frame_time"] is None and r["events"] == f.size
    assert r["photons_per_frame"] == pytest.approx(c.sum() / 3)
    f, _, c = hits(movie)
    assert e["layout"] == "esrf-csr" and e["detector_shape"] == [H, W]
    assert e["events"] == f.size and e["occupancy"] == pytest.approx(f.size / (10 * H * W))
    assert e["path"] == str(esrf)
    assert main(["info", "--qmap", str(q), str(rig), str(esrf)]) == 0
    out = capsys.readouterr().out
    assert "rigaku" in out and "esrf-csr" in out and "512x1024" in out and "photons" in out
    # no q-map: the ESRF file stores no shape: exit 3, one line naming it, the other shown
    assert main(["info", str(rig), str(esrf)]) == 3
    out, err = capsys.readouterr()
    assert "rigaku" in out
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 2 and str(esrf) in lines[0] and "q-map" in lines[0]
    assert "Traceback" not in err


@pytest.mark.parametrize("kind", ["timepix-ticks", "timepix-unsorted", "timepix-seconds"])
def test_timepix_search_in_small_windows(written, kind, monkeypatch):
    """The binary search over toa (single elements, then a window) and the order pass in
    blocks, forced to work on a small list."""
    from xpcsviewer.io.raw import timepix

    monkeypatch.setattr(timepix, "_WINDOW", 3)
    monkeypatch.setattr(timepix, "_PASS", 50)
    path, _, npy, _ = written[kind]
    for bin_time, sel in ((1e-3, (3, 37, 2, 1)), (0.7e-3, (0, -1, 1, 1))):
        with TimepixEvents(path, bin_time=bin_time, begin=sel[0], end=sel[1],
                           stride=sel[2], avg=sel[3]) as src:
            assert src.sorted_in_memory == (kind == "timepix-unsorted")
            want = src.read(0, src.n_frames)
            if bin_time == 1e-3:
                with RawFrames(npy, *sel) as ref:
                    np.testing.assert_array_equal(want, ref.read(0, ref.n_frames))
            dense, n_blocks = events_dense(src, 30)
            assert n_blocks > 5
            np.testing.assert_array_equal(dense, want)
            assert sum(src._raw_count(a, a + 5) for a in range(0, src.raw_frames, 5)) == \
                src.raw_events


def test_numbered_names_are_not_a_series_unless_blocks(tmp_path):
    """``c2.h5`` beside ``c10.h5`` are two files, not a series with blocks 3..9 missing;
    only NAME_NNNN(N).h5 blocks of one width make a series, and every file named as one
    of its blocks is read or named (issue 50: a damaged last block was left out)."""
    movie = make_movie(5, 12, 6, 8, 0.2)
    for name in ("c2.h5", "c10.h5"):
        (p,) = write_esrf(tmp_path / name[:-3], movie, blocks=(12,), name="x_",
                          shape_attr=True)
        p.rename(tmp_path / name)
    for name in ("c2.h5", "c10.h5"):
        with open_raw_source(tmp_path / name) as src:
            assert src.raw_frames == 12
    write_esrf(tmp_path, movie, blocks=(6, 6), name="run_", shape_attr=True)
    with open_raw_source(tmp_path / "run_00000.h5") as src:
        assert src.raw_frames == 12
    (tmp_path / "run_00002.h5").write_bytes(b"not hdf5")  # named as a block: a damaged one
    with pytest.raises(XpcsFileError, match=r"run_00002\.h5: not an HDF5 file"):
        open_raw_source(tmp_path / "run_00000.h5")
