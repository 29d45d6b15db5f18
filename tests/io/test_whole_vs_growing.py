"""The same bytes read whole (the batch reader) and growing (written in pieces, read by
the live reader as they arrive) give the same hits (frame, pixel, value), and those are
the hits the generator wrote: the two readers of a layout decode it alike (issue 44)."""

from __future__ import annotations

import shutil
from pathlib import Path

import h5py
import numpy as np

from xpcsviewer.io.raw.esrf_csr import EsrfCsr
from xpcsviewer.io.raw.live_csr import CsrBlockFolderSource, GrowingCsrSource
from xpcsviewer.io.raw.live_rigaku import GrowingRigakuSource
from xpcsviewer.io.raw.rigaku import RigakuBin
from xpcsviewer.synthetic.sparse_files import ESRF_GROUP, rigaku_words, write_esrf_csr

SHAPE = (16, 24)


def _whole(src) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every hit of a batch reader, read in several blocks."""
    with src:
        blocks = list(src.iter_events(max_events=97))
    assert len(blocks) > 1
    return _joined(blocks)


def _joined(blocks) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (np.concatenate([b.frame for b in blocks]).astype(np.int64),
            np.concatenate([b.pixel for b in blocks]).astype(np.int64),
            np.concatenate([b.value for b in blocks]))


def _follow(src, step) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Call ``step()`` until it returns False, reading the frames each poll completes;
    then the frames :meth:`final` adds."""
    blocks, done = [], 0
    more = True
    while more:
        more = step()
        st = src.poll()
        assert st.readable or not st.complete, st.note
        if st.complete > done:
            blocks.append(src.read_events(done, st.complete))
            done = st.complete
        src.release()
    st = src.final()
    if st.complete > done:
        blocks.append(src.read_events(done, st.complete))
    src.close()
    assert len(blocks) > 2  # hits arrived over several polls
    return _joined(blocks)


def _same(a, b) -> None:
    fa, pa, va = a
    fb, pb, vb = b
    assert np.array_equal(fa, fb)
    assert np.array_equal(pa, pb)
    assert va.dtype == vb.dtype and np.array_equal(va, vb)


def _in_order(f, p, c):
    """Hits sorted by frame, then pixel (the order within a frame is the reader's own)."""
    o = np.lexsort((p, f))
    return f[o], p[o], c[o]


# ---------------------------------------------------------------------------- Rigaku
def test_rigaku_bin_whole_and_growing_give_the_written_hits(tmp_path):
    rng = np.random.default_rng(44)
    n = 3000
    # every bit of each field: 24-bit frames (first and last frame included), pixels of
    # the whole module, 12-bit counts; some words carry the 8-ID-I offset of 2**20
    f = np.sort(np.concatenate([[0, (1 << 24) - 1], rng.integers(0, 1 << 24, n - 2)]))
    p = rng.integers(0, 512 * 1024, n)
    c = rng.integers(1, 1 << 12, n).astype(np.uint16)
    c[:2] = (1 << 12) - 1
    words = rigaku_words(f, p, c)
    words[rng.random(n) < 0.25] |= np.uint64(1 << 36)  # pixel field + 2**20
    data = words.tobytes()
    whole = tmp_path / "whole.bin"
    whole.write_bytes(data)

    grow = tmp_path / "grow.bin"
    grow.write_bytes(b"")
    cuts = [*sorted(rng.choice(np.arange(1, len(data)), 15, replace=False).tolist()), len(data)]
    at = [0]

    def append() -> bool:  # the next piece, cut anywhere (mid-word too)
        end = cuts.pop(0)
        with open(grow, "ab") as fh:
            fh.write(data[at[0]:end])
        at[0] = end
        return bool(cuts)

    batch = _whole(RigakuBin(whole))
    live = _follow(GrowingRigakuSource(grow), append)
    assert grow.read_bytes() == data
    _same(batch, live)
    _same(_in_order(*batch), (f, p, c))


# ---------------------------------------------------------------------------- ESRF CSR
def _csr_hits(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    per = rng.poisson(6, n)
    per[[0, 1, n // 2]] = 0  # frames without hits: first ones and one in the middle
    f = np.repeat(np.arange(n), per)
    p = np.concatenate([np.sort(rng.choice(SHAPE[0] * SHAPE[1], k, replace=False))
                        for k in per])
    c = rng.integers(1, 9, f.size).astype(np.uint16)
    return f, p.astype(np.int64), c


def test_esrf_csr_file_whole_and_growing_give_the_written_hits(tmp_path):
    n = 60
    f, p, c = _csr_hits(n, 7)
    whole = write_esrf_csr(tmp_path / "whole.h5", f, p, c, n_frames=n, shape=SHAPE,
                           compression=None)[0]
    with h5py.File(whole, "r") as h:  # the same arrays, written in pieces
        g = h[ESRF_GROUP]
        ptr, idx, val = g["frame_ptr"][()], g["index"][()], g["intensity"][()]

    grow = tmp_path / "grow.h5"
    with h5py.File(grow, "w") as h:
        g = h.create_group(ESRF_GROUP)
        g.attrs["shape"] = np.asarray(SHAPE, np.int64)
        g.create_dataset("frame_ptr", data=ptr[:1], maxshape=(None,), chunks=(16,))
        g.create_dataset("index", (0,), idx.dtype, maxshape=(None,), chunks=(64,))
        g.create_dataset("intensity", (0,), val.dtype, maxshape=(None,), chunks=(64,))
    steps = []
    for k in range(0, n, 7):
        e = min(n, k + 7)
        steps += [("hits", k, e), ("ptr", k, e)]  # the pointer is written last

    def write() -> bool:  # one writer session per step, closed before the next poll
        what, k, e = steps.pop(0)
        with h5py.File(grow, "a") as h:
            g = h[ESRF_GROUP]
            if what == "hits":
                a, b = int(ptr[k]), int(ptr[e])
                for name, arr in (("index", idx), ("intensity", val)):
                    g[name].resize((b,))
                    g[name][a:b] = arr[a:b]
            else:
                g["frame_ptr"].resize((e + 1,))
                g["frame_ptr"][k + 1:e + 1] = ptr[k + 1:e + 1]
        return bool(steps)

    batch = _whole(EsrfCsr(whole))
    live = _follow(GrowingCsrSource(grow), write)
    _same(batch, live)
    _same(batch, (f, p, c))


def test_esrf_csr_block_series_whole_and_arriving_give_the_written_hits(tmp_path):
    n = 50
    f, p, c = _csr_hits(n, 8)
    whole = tmp_path / "whole"
    whole.mkdir()
    blocks = write_esrf_csr(whole / "scan", f, p, c, n_frames=n, frames_per_block=6,
                            shape=SHAPE, compression=None)
    grow = tmp_path / "grow"
    grow.mkdir()
    todo = list(blocks)

    def arrive() -> bool:  # the next block file, the same bytes; looked at twice
        if todo and not (grow / todo[0].name).exists():
            shutil.copyfile(todo[0], grow / todo[0].name)
            return True
        if todo:
            todo.pop(0)
        return bool(todo)

    batch = _whole(EsrfCsr(whole))
    live = _follow(CsrBlockFolderSource(grow), arrive)
    assert sorted(q.name for q in grow.iterdir()) == [b.name for b in blocks]
    _same(batch, live)
    _same(batch, (f, p, c))


def test_the_growing_readers_take_the_layouts_names_and_decoding_from_its_module():
    from xpcsviewer.io.raw import esrf_csr, live_csr, live_rigaku, rigaku

    for name in ("frame_field", "pixel_field", "count_field", "fold_pixels", "WORD"):
        assert getattr(live_rigaku, name) is getattr(rigaku, name)
    for name in ("CSR_GROUP", "CSR_INDEX", "CSR_PTR", "CSR_VALUE", "stored_shape"):
        assert getattr(live_csr, name) is getattr(esrf_csr, name)
    assert Path(live_rigaku.__file__).parent == Path(rigaku.__file__).parent
