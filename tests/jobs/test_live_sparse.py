"""The live job on photon-sparse sources: a Rigaku ``.bin`` appended in pieces (words
split across writes), a growing ESRF CSR HDF5 file (SWMR and plain, written by another
process), a folder receiving ESRF sparse blocks; the final result and the partial
updates equal the dense correlator on the same frames (prefixes for the partials), and
every source refuses bad content by name (pixel outside, frames backwards) and finishes a
file cut short with its whole frames.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from xpcsviewer.compute.inputs import FrameStream, Partition
from xpcsviewer.compute.multitau.correlator import correlate_multitau
from xpcsviewer.compute.multitau.photons import available
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.results.reader import read_qmap
from xpcsviewer.jobs.live import LiveOptions, follow

pytestmark = pytest.mark.skipif(not available(), reason="the photon correlator needs numba")

MODULE = (512, 1024)
REGION = (100, 200, 32, 64)  # row0, col0, rows, cols: the pixels a Rigaku q-map uses
GROUP = "entry_0000/measurement/data"


# ------------------------------------------------------------------------ data
@pytest.fixture(scope="module")
def rigaku_qmap(tmp_path_factory) -> Path:
    """A 512 x 1024 partition using a 32 x 64 region (4 dynamic, 12 static bins)."""
    from xpcsviewer.cli import main

    d = tmp_path_factory.mktemp("rqmap")
    r0, c0, nr, nc = REGION
    mask = np.zeros(MODULE, np.uint8)
    mask[r0:r0 + nr, c0:c0 + nc] = 1
    np.save(d / "mask.npy", mask)
    out = d / "rigaku_qmap.hdf"
    assert main(["qmap", "--shape", "512", "1024", "--energy", "10", "--det-dist", "5",
                 "--pixel-size", "75e-6", "--bcx", str(c0 + nc // 2), "--bcy",
                 str(r0 + nr // 2), "--mask", str(d / "mask.npy"), "--dq-num", "4",
                 "--sq-num", "12", "-o", str(out), "--quiet"]) == 0
    return out


def _hits(n: int, shape: tuple[int, int], seed: int = 0, region: tuple | None = None,
          per_frame: float = 40, outside: int = 4) -> tuple[np.ndarray, ...]:
    """(frame, pixel, count) in frame order: ~per_frame hits per frame in ``region``
    (default: everywhere) plus a few anywhere; counts 1..3; one hit per pixel and frame."""
    rng = np.random.default_rng(seed)
    h, w = shape
    r0, c0, nr, nc = region or (0, 0, h, w)
    fr, px = [], []
    for f in range(n):
        loc = rng.integers(0, nr * nc, rng.poisson(per_frame))
        r, c = np.divmod(loc, nc)
        p = np.union1d((r + r0) * w + c + c0, rng.integers(0, h * w, outside))
        fr.append(np.full(p.size, f))
        px.append(p)
    f = np.concatenate(fr).astype(np.int64)
    return f, np.concatenate(px).astype(np.int64), rng.integers(1, 4, f.size).astype(np.uint16)


def _words(f, p, c) -> bytes:
    u = np.uint64
    return ((f.astype(u) << u(40)) | (p.astype(u) << u(16)) | c.astype(u)).astype("<u8").tobytes()


def _ref(hits, n: int, qm) -> np.ndarray:
    """g2 of ``correlate_multitau`` (dense, engine="backend") on the first ``n`` frames."""
    f, p, c = hits
    h, w = qm.shape

    def chunks():
        for a in range(0, n, 64):
            b = min(n, a + 64)
            k = (f >= a) & (f < b)
            x = np.zeros((b - a, h * w), np.float64)
            np.add.at(x, (f[k] - a, p[k]), c[k].astype(np.float64))
            yield x.reshape(b - a, h, w)

    r = correlate_multitau(FrameStream(lambda: chunks(), n),
                           Partition(qm.dynamic_roi_map, qm.static_roi_map, qm.mask,
                                     n_dynamic=qm.n_dynamic, n_static=qm.n_static),
                           engine="backend")
    # the file convention: a bin without photons 0, a delay with no g2 at all NaN
    g = np.nan_to_num(r.g2)
    g[np.isnan(r.g2).all(axis=1)] = np.nan
    return g


def _check(ups, final, hits, qm, n: int, n_partial: int = 2) -> None:
    """The final g2 equals the batch g2 of n frames, partials those of their prefixes."""
    assert final.final and final.frames == n
    np.testing.assert_allclose(final.view.g2, _ref(hits, n, qm), rtol=1e-12, atol=1e-14)
    partial = [u for u in ups if not u.final]
    assert partial and partial[0].frames < n, "no partial update while the writer wrote"
    for u in (partial[0], partial[-1])[:n_partial]:
        np.testing.assert_allclose(u.view.g2, _ref(hits, u.frames, qm), rtol=1e-12,
                                   atol=1e-14, err_msg=f"partial at {u.frames} frames")


def _config_path(out: Path) -> bytes:
    with h5py.File(out, "r") as f:
        assert not f["/xpcs/live/partial"][()]
        return f["/xpcs/multitau/config/path"][()]


# ------------------------------------------------------------------------ writers
def _cuts(n_bytes: int, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    return [*np.sort(rng.choice(np.arange(1, n_bytes), size=60, replace=False)).tolist(),
            n_bytes]


def _append_pieces(path: Path, data: bytes, seconds: float, seed: int = 0) -> None:
    """Append ``data`` in pieces over about ``seconds``; most pieces end mid-word, and
    now and then the writer pauses there (a half word on disk for several polls)."""
    cuts = _cuts(len(data), seed)
    t0 = time.monotonic()
    with open(path, "ab") as fh:
        pos = 0
        for i, cut in enumerate(cuts):
            fh.write(data[pos:cut])
            fh.flush()
            pos = cut
            pause = 0.12 if i % 15 == 7 and cut % 8 else 0.0
            time.sleep(max(pause, t0 + seconds * (i + 1) / len(cuts) - time.monotonic()))


BIN_WRITER = r"""
import sys, time
out, src, seconds, cuts = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
data = open(src, "rb").read()
cuts = [int(c) for c in cuts]
t0 = time.monotonic()
with open(out, "ab") as fh:
    pos = 0
    for i, cut in enumerate(cuts):
        fh.write(data[pos:cut])
        fh.flush()
        pos = cut
        pause = 0.12 if i % 15 == 7 and cut % 8 else 0.0
        time.sleep(max(pause, t0 + seconds * (i + 1) / len(cuts) - time.monotonic()))
"""


def _bin_writer(tmp_path: Path, out: Path, data: bytes, seconds: float,
                seed: int = 0) -> subprocess.Popen:
    """:func:`_append_pieces` in another process (no GIL shared with the follower, so
    the writer never pauses as long as the writer-closed grace time)."""
    src = tmp_path / "words.raw"
    src.write_bytes(data)
    return subprocess.Popen([sys.executable, "-c", BIN_WRITER, str(out), str(src),
                             str(seconds), *map(str, _cuts(len(data), seed))],
                            stderr=subprocess.PIPE, text=True)


CSR_WRITER = r"""
import sys, time, numpy as np, h5py
out, src, mode, rate, block = sys.argv[1:6]
rate, block = float(rate), int(block)
d = np.load(src)
ptr, idx, val = d["ptr"], d["index"], d["intensity"]
n = ptr.size - 1
f = h5py.File(out, "w", **({"libver": "latest"} if mode == "swmr" else {}))
g = f.create_group("entry_0000/measurement/data")
if d["shape"].size:
    g.attrs["shape"] = d["shape"]
P = g.create_dataset("frame_ptr", data=ptr[:1], maxshape=(None,), chunks=(64,))
I = g.create_dataset("index", (0,), idx.dtype, maxshape=(None,), chunks=(1024,))
V = g.create_dataset("intensity", (0,), val.dtype, maxshape=(None,), chunks=(1024,))
if mode == "swmr":
    f.swmr_mode = True
f.flush()
t0, k = time.monotonic(), 0
while k < n:
    e = min(n, k + block)
    a, b = int(ptr[k]), int(ptr[e])
    for ds, arr in ((I, idx), (V, val)):
        ds.resize((b,))
        ds[a:b] = arr[a:b]
    f.flush()
    P.resize((e + 1,))
    P[k + 1:e + 1] = ptr[k + 1:e + 1]
    f.flush()
    k = e
    time.sleep(max(0.0, t0 + k / rate - time.monotonic()))
f.close()
"""


def _csr_arrays(hits, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    f, p, c = hits
    ptr = np.searchsorted(f, np.arange(n + 1), side="left").astype(np.uint64)
    return ptr, p.astype(np.uint32), c


def _csr_writer(tmp_path: Path, out: Path, hits, n: int, mode: str, rate: float,
                shape: tuple | None) -> subprocess.Popen:
    ptr, idx, val = _csr_arrays(hits, n)
    src = tmp_path / "hits.npz"
    np.savez(src, ptr=ptr, index=idx, intensity=val,
             shape=np.asarray(shape if shape else [], np.int64))
    env = dict(os.environ)
    env.pop("HDF5_USE_FILE_LOCKING", None)  # the writer locks as HDF5 does by default
    return subprocess.Popen([sys.executable, "-c", CSR_WRITER, str(out), str(src), mode,
                             str(rate), "25"], env=env, stderr=subprocess.PIPE, text=True)


def _write_csr(path: Path, ptr, idx, val, shape=None) -> Path:
    with h5py.File(path, "w") as f:
        g = f.create_group(GROUP)
        g["frame_ptr"], g["index"], g["intensity"] = ptr, idx, val
        if shape is not None:
            g.attrs["shape"] = np.asarray(shape, np.int64)
    return path


# ------------------------------------------------------------------------ Rigaku
def test_rigaku_bin_appended_in_pieces_partials_and_final_equal_batch(rigaku_qmap, tmp_path):
    # follow starts before the file exists (ready: engine "auto"), the writer process on
    # "ready"
    n = 700
    hits = _hits(n, MODULE, region=REGION)
    raw, out = tmp_path / "scan.bin", tmp_path / "live.hdf"
    ready, ups, procs = [], [], []
    qm = read_qmap(rigaku_qmap)
    try:
        final = follow(raw, qm, out, LiveOptions(every=0.2, idle=5, poll=0.05, frames=n),
                       on_update=ups.append, with_view=True,
                       on_ready=lambda ev: (ready.append(ev), procs.append(
                           _bin_writer(tmp_path, raw, _words(*hits), 1.2))))
    finally:
        for w in procs:
            assert w.wait(30) == 0, w.stderr.read()
    assert ready[0]["engine"] == "auto"  # nothing to tell the layout by yet
    # a .bin states no end: the expected count is its end signal (a quiet file is a
    # pause, which only --idle ends, as partial: issue 50)
    assert final.end == "expected"
    assert final.hits == hits[0].size and final.to_json()["hits"] == hits[0].size
    _check(ups, final, hits, qm, n)  # the last frame counts at the end
    assert _config_path(out) == b"sparse"


def test_rigaku_bin_ends_at_the_expected_count(rigaku_qmap, tmp_path):
    n = 500
    hits = _hits(n, MODULE, seed=1, region=REGION)
    data = _words(*hits)
    raw, out = tmp_path / "scan.bin", tmp_path / "live.hdf"
    raw.write_bytes(data[:4003])  # there, with a half word at its end: a Rigaku file
    th = threading.Thread(target=_append_pieces, args=(raw, data[4003:], 0.8, 1))
    th.start()
    ready, ups = [], []
    qm = read_qmap(rigaku_qmap)
    try:
        final = follow(raw, qm, out, LiveOptions(every=0.2, idle=5, poll=0.05, frames=n),
                       on_update=ups.append, with_view=True, on_ready=ready.append)
    finally:
        th.join()
    assert ready[0]["engine"] == "sparse"
    assert final.end == "expected" and final.expected == n
    _check(ups, final, hits, qm, n, n_partial=1)


@pytest.mark.parametrize("trap", ["pixel", "backwards"])
def test_rigaku_bad_words_are_refused_by_name(rigaku_qmap, tmp_path, trap):
    f, p, c = _hits(120, MODULE, seed=2, region=REGION)
    words = np.frombuffer(_words(f, p, c), "<u8").copy()
    k = int(np.searchsorted(f, 50))
    if trap == "pixel":
        words[k] = (np.uint64(50) << np.uint64(40)) | (np.uint64(600_000) << np.uint64(16)) | 1
        match = rf"scan\.bin: pixel field: word {k} holds pixel index 600000, outside the 512"
    else:
        words[k] = (np.uint64(20) << np.uint64(40)) | np.uint64(1)  # frame 20 after frame 49
        match = rf"scan\.bin: word {k}: frame numbers go backwards: frame 20 after frame 49"
    raw = tmp_path / "scan.bin"
    raw.write_bytes(words.tobytes())
    with pytest.raises(XpcsFileError, match=match):
        follow(raw, read_qmap(rigaku_qmap), tmp_path / "o.hdf", LiveOptions(idle=0.3, poll=0.05))


def test_rigaku_bin_cut_mid_word_finishes_with_the_whole_words(rigaku_qmap, tmp_path):
    n = 150
    hits = _hits(n, MODULE, seed=3, region=REGION)
    raw, out = tmp_path / "scan.bin", tmp_path / "live.hdf"
    raw.write_bytes(_words(*hits) + b"\x01\x02\x03\x04\x05")  # the writer died mid-word
    ups = []
    qm = read_qmap(rigaku_qmap)
    final = follow(raw, qm, out, LiveOptions(idle=0.3, poll=0.05), on_update=ups.append,
                   with_view=True)
    assert final.frames == n and "5 bytes after the last whole word ignored" in final.note
    np.testing.assert_allclose(final.view.g2, _ref(hits, n, qm), rtol=1e-12, atol=1e-14)


def test_rigaku_bin_on_the_command_line_with_json_events(rigaku_qmap, tmp_path, capfd):
    from xpcsviewer.cli import main

    n = 500
    hits = _hits(n, MODULE, seed=4, region=REGION)
    data = _words(*hits)
    raw, out = tmp_path / "scan.bin", tmp_path / "live.hdf"
    raw.write_bytes(data[:8000])
    w = _bin_writer(tmp_path, raw, data[8000:], 1.0, 4)
    try:
        code = main(["live", str(raw), "--qmap", str(rigaku_qmap), "-o", str(out),
                     "--json-events", "--every", "0.2", "--poll", "0.05", "--idle", "5",
                     "--frames", str(n)])
    finally:
        assert w.wait(30) == 0, w.stderr.read()
    assert code == 0
    lines = [json.loads(x) for x in capfd.readouterr().out.splitlines() if x.strip()]
    assert lines[0]["event"] == "ready" and lines[0]["engine"] == "sparse"
    events = lines[1:]
    assert events[-1]["event"] == "final" and events[-1]["end"] == "expected"
    assert events[-1]["partial"] is False
    assert all(e["event"] == "update" and e["partial"] for e in events[:-1])
    assert len(events) >= 2 and events[0]["frames"] < n
    assert events[-1]["frames"] == n and events[-1]["hits"] == hits[0].size
    assert events[-1]["hit_rate_hz"] > 0 and events[-1]["latency_s"] >= 0
    assert _config_path(out) == b"sparse"


# ------------------------------------------------------------------------ CSR file
@pytest.mark.parametrize("mode", ["swmr", "plain"])
def test_growing_csr_file_written_by_another_process(small_qmap, tmp_path, mode):
    # SWMR: the shape stored in the file; plain: none, the q-map's
    n = 900
    hits = _hits(n, (32, 32), seed=5, per_frame=30, outside=0)
    raw, out = tmp_path / "sparse.h5", tmp_path / "live.hdf"
    w = _csr_writer(tmp_path, raw, hits, n, mode, 900, (32, 32) if mode == "swmr" else None)
    ups = []
    qm = read_qmap(small_qmap)
    try:
        final = follow(raw, qm, out, LiveOptions(every=0.2, idle=2, poll=0.05),
                       on_update=ups.append, with_view=True)
    finally:
        assert w.wait(30) == 0, w.stderr.read()
    assert final.end in (("closed",) if mode == "swmr" else ("closed", "idle"))
    _check(ups, final, hits, qm, n)
    assert _config_path(out) == b"sparse"


@pytest.mark.parametrize("trap", ["pixel", "backwards"])
def test_csr_file_bad_content_is_refused_by_name(small_qmap, tmp_path, trap):
    n = 60
    ptr, idx, val = _csr_arrays(_hits(n, (32, 32), seed=6, outside=0), n)
    if trap == "pixel":
        idx[int(ptr[30])] = 5000
        match = rf"index: pixel index 5000 of entry {int(ptr[30])} is outside the 32 x 32"
    else:
        ptr[31] = ptr[29] - 1
        match = r"frame_ptr: frame_ptr decreases at entry 31"
    raw = _write_csr(tmp_path / "sparse.h5", ptr, idx, val)
    with pytest.raises(XpcsFileError, match=match):
        follow(raw, read_qmap(small_qmap), tmp_path / "o.hdf", LiveOptions(idle=0.3, poll=0.05))


def test_csr_file_whose_pointer_runs_past_its_hits_finishes_with_the_whole_frames(
        small_qmap, tmp_path):
    # the writer stored frame_ptr for 80 frames but the hits of frames 70.. only in part
    n, whole = 80, 70
    hits = _hits(n, (32, 32), seed=7, outside=0)
    ptr, idx, val = _csr_arrays(hits, n)
    cut = int(ptr[whole]) + 5
    raw = _write_csr(tmp_path / "sparse.h5", ptr, idx[:cut], val[:cut], (32, 32))
    qm = read_qmap(small_qmap)
    final = follow(raw, qm, tmp_path / "o.hdf", LiveOptions(idle=0.3, poll=0.05),
                   with_view=True)
    assert final.frames == whole
    assert ("10 frame(s) at the end left out (10 whose frame_ptr points past "
            "index/intensity)") in final.note
    np.testing.assert_allclose(final.view.g2, _ref(hits, whole, qm), rtol=1e-12, atol=1e-14)


def test_csr_counts_negative_or_nan_at_unused_pixels_dropped_at_used_refused(
        rigaku_qmap, tmp_path):
    n = 40
    hits = _hits(n, MODULE, seed=8, region=REGION)
    ptr, idx, val = _csr_arrays(hits, n)
    val = val.astype(np.float32)
    r0, c0, _, _ = REGION
    used = (r0 + 3) * MODULE[1] + c0 + 3
    unused = [int(i) for i in np.flatnonzero(idx < r0 * MODULE[1])[:2]]
    val[unused[0]], val[unused[1]] = -2.0, np.nan
    qm = read_qmap(rigaku_qmap)
    raw = _write_csr(tmp_path / "ok.h5", ptr, idx, val)  # no shape stored: the q-map's
    final = follow(raw, qm, tmp_path / "o.hdf", LiveOptions(idle=0.3, poll=0.05),
                   with_view=True)
    assert final.frames == n and "1 negative counts at masked pixels were set to 0" in final.note
    keep = np.ones(val.size, bool)
    keep[unused] = False
    np.testing.assert_allclose(final.view.g2, _ref((hits[0][keep], hits[1][keep],
                                                    hits[2][keep]), n, qm), rtol=1e-12,
                               atol=1e-14)
    j = int(ptr[12])
    idx[j], val[j] = used, -1.0
    raw = _write_csr(tmp_path / "bad.h5", ptr, idx, val)
    with pytest.raises(XpcsFileError, match=r"negative counts \(-1\.0 in frame 12 at pixel "
                                            r"\(103, 203\)\) where the q-map uses the pixel"):
        follow(raw, qm, tmp_path / "o2.hdf", LiveOptions(idle=0.3, poll=0.05))


# ------------------------------------------------------------------------ CSR blocks
def _write_blocks(folder: Path, hits, n: int, per_block: int, seconds: float) -> None:
    """ESRF sparse blocks scan_00000.h5, ... written one after the other."""
    ptr, idx, val = _csr_arrays(hits, n)
    folder.mkdir(exist_ok=True)
    starts = list(range(0, n, per_block))
    for i, a in enumerate(starts):
        b = min(n, a + per_block)
        e0, e1 = int(ptr[a]), int(ptr[b])
        _write_csr(folder / f"scan_{i:05d}.h5", ptr[a:b + 1] - ptr[a], idx[e0:e1], val[e0:e1],
                   (32, 32))
        time.sleep(seconds / len(starts))


def test_folder_of_csr_blocks(small_qmap, tmp_path):
    n = 800
    hits = _hits(n, (32, 32), seed=9, outside=0)
    folder, out = tmp_path / "scan", tmp_path / "live.hdf"
    folder.mkdir()
    th = threading.Thread(target=_write_blocks, args=(folder, hits, n, 100, 1.0))
    ups, ready = [], []
    qm = read_qmap(small_qmap)
    th.start()
    try:
        final = follow(folder, qm, out, LiveOptions(every=0.2, idle=5, poll=0.05, frames=n),
                       on_update=ups.append, with_view=True, on_ready=ready.append)
    finally:
        th.join()
    assert final.end == "expected"
    _check(ups, final, hits, qm, n)
    assert _config_path(out) == b"sparse"


@pytest.mark.parametrize("trap", ["pixel", "backwards", "truncated"])
def test_folder_of_csr_blocks_traps(small_qmap, tmp_path, trap):
    n = 300
    hits = _hits(n, (32, 32), seed=10, outside=0)
    folder = tmp_path / "scan"
    _write_blocks(folder, hits, n, 100, 0.0)
    qm = read_qmap(small_qmap)
    opts = LiveOptions(idle=0.3, poll=0.05)
    if trap == "truncated":  # the writer died while writing the last block
        last = folder / "scan_00002.h5"
        last.write_bytes(last.read_bytes()[:1500])
        final = follow(folder, qm, tmp_path / "o.hdf", opts, with_view=True)
        assert final.frames == 200 and "scan_00002.h5" in final.note
        np.testing.assert_allclose(final.view.g2, _ref(hits, 200, qm), rtol=1e-12, atol=1e-14)
        return
    with h5py.File(folder / "scan_00001.h5", "r+") as f:
        if trap == "pixel":
            f[f"{GROUP}/index"][7] = 4096
            match = r"scan_00001\.h5: .*index: pixel index 4096 of entry 7 is outside"
        else:
            f[f"{GROUP}/frame_ptr"][41] = 3
            match = r"scan_00001\.h5: .*frame_ptr: frame_ptr decreases at entry 41"
    with pytest.raises(XpcsFileError, match=match):
        follow(folder, qm, tmp_path / "o.hdf", opts)


# ------------------------------------------------------------------------ choice
def test_open_live_source_chooses_by_content(tmp_path, small_qmap):
    from xpcsviewer.io.raw import live as ls

    f, p, c = _hits(10, (32, 32), seed=11, outside=0)
    ptr, idx, val = _csr_arrays((f, p, c), 10)
    csr = _write_csr(tmp_path / "a.h5", ptr, idx, val)
    binary = tmp_path / "b.h5"  # a Rigaku list whatever its name
    binary.write_bytes(_words(f, p, c))
    dense = tmp_path / "d.h5"
    with h5py.File(dense, "w") as h:
        h["/entry/data/data"] = np.zeros((4, 32, 32), np.uint16)
    blocks = tmp_path / "blocks"
    _write_blocks(blocks, (f, p, c), 10, 5, 0.0)
    frames = tmp_path / "frames"
    frames.mkdir()
    with h5py.File(frames / "run_data_000001.h5", "w") as h:
        h["/entry/data/data"] = np.zeros((4, 32, 32), np.uint16)
    short = tmp_path / "short.bin"
    short.write_bytes(b"\x00" * 5)
    expect = {csr: ls.GrowingCsrSource, binary: ls.GrowingRigakuSource,
              dense: ls.GrowingFileSource, blocks: ls.CsrBlockFolderSource,
              frames: ls.BlockFolderSource, tmp_path / "later.bin": ls.PendingSource,
              short: ls.PendingSource, tmp_path / "empty_dir": ls.PendingSource}
    (tmp_path / "empty_dir").mkdir()
    for path, cls in expect.items():
        src = ls.open_live_source(path, shape=(32, 32))
        assert type(src) is cls, path
        src.close()
    pending = ls.open_live_source(short)
    assert pending.sparse is None and not pending.poll().readable
    short.write_bytes(_words(f, p, c))
    assert pending.poll().readable and pending.sparse is True
    assert isinstance(pending.inner, ls.GrowingRigakuSource)
    pending.close()


# ------------------------------------------------------------------------ sources
def test_rigaku_source_reads_whole_words_and_holds_the_last_frame(tmp_path):
    from xpcsviewer.io.raw.live import GrowingRigakuSource

    f = np.array([0, 0, 1, 1, 2, 3])
    p = np.array([5, 9, 5, 7, 11, 2])
    data = _words(f, p, np.ones(6, np.uint16))
    raw = tmp_path / "scan.bin"
    raw.write_bytes(data[:5 * 8 + 3])  # frame 3's word only begun
    src = GrowingRigakuSource(raw)
    st = src.poll()
    assert (st.complete, st.extent, st.writer) == (2, 3, "open")  # frame 2 may get more
    blk = src.read_events(0, 2)
    assert blk.frame.tolist() == [0, 0, 1, 1] and blk.pixel.tolist() == [5, 9, 5, 7]
    with open(raw, "ab") as fh:
        fh.write(data[5 * 8 + 3:])
    assert src.poll().complete == 3
    assert src.read_events(2, 3).pixel.tolist() == [11]
    src.close_grace = 0.0
    assert src.poll().writer == "unknown"  # quiet: paused or stopped, never "closed"
    st = src.final()
    assert st.complete == 4 and st.note == ""
    assert src.read_events(3, 4).frame.tolist() == [3]
    src.close()


def test_csr_source_never_follows_a_pointer_not_written_or_past_the_hits(tmp_path):
    from xpcsviewer.io.raw.live import GrowingCsrSource

    raw = tmp_path / "s.h5"
    # extended by three frames, one written; the hits of frame 2 not all there
    _write_csr(raw, np.array([0, 4, 9, 13, 0, 0]), np.arange(11), np.ones(11, np.uint16))
    src = GrowingCsrSource(raw, shape=(4, 4))
    assert src.poll().complete == 2
    blk = src.read_events(0, 2)
    assert blk.frame.tolist() == [0] * 4 + [1] * 5 and blk.pixel.tolist() == list(range(9))
    st = src.final()
    assert st.complete == 2 and ("3 frame(s) at the end left out (1 whose frame_ptr points "
                                 "past index/intensity, 2 whose frame_ptr entry was not "
                                 "written)") in st.note
    src.close()
    # no hit yet: a pointer of 0 cannot be told from one not written, until the end
    _write_csr(raw, np.zeros(4, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint16))
    src = GrowingCsrSource(raw, shape=(4, 4))
    assert src.poll().complete == 0 and src.final().complete == 3
    src.close()


def test_the_start_wait_counts_from_ready(rigaku_qmap, tmp_path, monkeypatch):
    # a warm-up longer than the start wait (a loaded machine took over 120 s) is not the
    # writer's delay: the run waits start_wait from "ready" (it timed out before)
    import types

    import xpcsviewer.jobs.warmup as warmup

    monkeypatch.setattr(warmup, "precompile", lambda **kw: time.sleep(1.0))
    n = 60
    hits = _hits(n, MODULE, seed=5, region=REGION)
    raw, out = tmp_path / "scan.bin", tmp_path / "live.hdf"
    late = []

    def start(_ev):
        th = threading.Timer(0.3, lambda: raw.write_bytes(_words(*hits)))
        th.start()
        late.append(th)

    def fitter(paths, **kw):
        return [types.SimpleNamespace(ok=False, error="not fitted here")]

    final = follow(raw, read_qmap(rigaku_qmap), out,
                   LiveOptions(idle=1.0, poll=0.05, frames=n, start_wait=0.8, fit=True),
                   fitter=fitter, on_ready=start)
    late[0].join()
    assert final.final and final.frames == n and final.end == "expected"
