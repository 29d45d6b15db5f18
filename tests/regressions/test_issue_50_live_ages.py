"""Issue 50, items 3, 5, 7 (dense sums, ESRF series, Timepix times) and 8 (``ages -o``).

3. ``live`` never calls a cut acquisition complete: a Rigaku writer that pauses longer
   than a second goes on being followed (the run ended "closed" at the pause); a run
   that ends by the idle time without the source's own end signal, a writer that stopped
   inside a word, and an ESRF block folder whose block 1 never arrived are partial and
   say why (block 2 and 3 were joined to block 0 as if contiguous).
5. ``ages`` refuses inconsistent files (exit 3, naming file, dataset and what was
   expected) instead of returning changed numbers.
7. Dense frames formed from hits and frame averaging sum in a wide type (they wrapped at
   65,536); every file of an ESRF series is read or named; Timepix times are unsigned.
8. ``ages -o`` into a folder it cannot write is refused before the computation.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from xpcsviewer.compute.multitau_sparse import available
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.results.reader import read_qmap
from xpcsviewer.jobs.live import LiveOptions, follow
from xpcsviewer.synthetic.sparse_files import rigaku_words, write_esrf_csr

MODULE = (512, 1024)
REGION = (100, 200, 16, 32)  # row0, col0, rows, cols: the pixels the Rigaku q-map uses

needs_numba = pytest.mark.skipif(not available(), reason="the photon correlator needs numba")


# ------------------------------------------------------------------------ data
def _qmap(d: Path, shape: tuple[int, int], region: tuple[int, int, int, int] | None) -> Path:
    from xpcsviewer.cli import main

    out = d / "qmap.hdf"
    args = ["qmap", "--shape", str(shape[0]), str(shape[1]), "--energy", "10",
            "--det-dist", "5", "--pixel-size", "75e-6", "--dq-num", "3", "--sq-num", "6",
            "-o", str(out), "--quiet"]
    if region is None:
        args += ["--bcx", str(shape[1] // 2), "--bcy", str(shape[0] // 2)]
    else:
        r0, c0, nr, nc = region
        mask = np.zeros(shape, np.uint8)
        mask[r0:r0 + nr, c0:c0 + nc] = 1
        np.save(d / "mask.npy", mask)
        args += ["--bcx", str(c0 + nc // 2), "--bcy", str(r0 + nr // 2), "--mask",
                 str(d / "mask.npy")]
    assert main(args) == 0
    return out


@pytest.fixture(scope="module")
def rigaku_qmap(tmp_path_factory) -> Path:
    return _qmap(tmp_path_factory.mktemp("rq"), MODULE, REGION)


@pytest.fixture(scope="module")
def small_qmap(tmp_path_factory) -> Path:
    return _qmap(tmp_path_factory.mktemp("sq"), (32, 32), None)


def _hits(n: int, shape: tuple[int, int], region=None, per_frame: int = 12, seed: int = 0):
    """(frame, pixel, count) in frame order, one hit per pixel and frame at most."""
    rng = np.random.default_rng(seed)
    h, w = shape
    r0, c0, nr, nc = region or (0, 0, h, w)
    fr, px = [], []
    for f in range(n):
        loc = np.unique(rng.integers(0, nr * nc, per_frame))
        r, c = np.divmod(loc, nc)
        px.append((r + r0) * w + c + c0)
        fr.append(np.full(loc.size, f))
    f = np.concatenate(fr).astype(np.int64)
    return f, np.concatenate(px).astype(np.int64), rng.integers(1, 4, f.size).astype(np.uint16)


def _partial_flag(out: Path) -> tuple[bool, str]:
    with h5py.File(out, "r") as f:
        live = f["/xpcs/live"]
        prob = live["problem"][()].decode() if "problem" in live else ""
        return bool(live["partial"][()]), prob


# ------------------------------------------------------------------------ item 3: live
@needs_numba
def test_rigaku_writer_pausing_longer_than_a_second_is_followed_to_its_end(
        rigaku_qmap, tmp_path):
    n = 400
    words = rigaku_words(*_hits(n, MODULE, REGION)).tobytes()
    raw, out = tmp_path / "scan.bin", tmp_path / "live.hdf"
    half = (len(words) // 16) * 8
    raw.write_bytes(words[:half])

    def resume() -> None:
        time.sleep(1.6)  # a pause longer than the old fixed 1 s grace, shorter than --idle
        with open(raw, "ab") as fh:
            fh.write(words[half:])

    th = threading.Thread(target=resume)
    th.start()
    try:
        final = follow(raw, read_qmap(rigaku_qmap), out,
                       LiveOptions(every=5, idle=2.5, poll=0.05))
    finally:
        th.join()
    # was: end "closed" after ~1 s with about half the frames, partial = False; now the
    # pause is waited out (--idle), and the end, without --frames, is an idle one
    assert final.end == "idle" and final.frames == n
    assert final.partial and final.problem == "idle"


@needs_numba
def test_rigaku_run_without_an_end_signal_ends_idle_and_partial(rigaku_qmap, tmp_path):
    n = 120
    raw, out = tmp_path / "scan.bin", tmp_path / "live.hdf"
    raw.write_bytes(rigaku_words(*_hits(n, MODULE, REGION, seed=1)).tobytes())
    final = follow(raw, read_qmap(rigaku_qmap), out, LiveOptions(every=5, idle=0.4,
                                                                  poll=0.05))
    assert final.end == "idle" and final.frames == n  # was "closed", partial = False
    assert final.partial and final.problem == "idle" and "no end signal" in final.note
    assert _partial_flag(out) == (True, "idle")


@needs_numba
def test_rigaku_writer_stopped_inside_a_word_is_partial(rigaku_qmap, tmp_path):
    n = 120
    raw, out = tmp_path / "scan.bin", tmp_path / "live.hdf"
    raw.write_bytes(rigaku_words(*_hits(n, MODULE, REGION, seed=2)).tobytes() + b"\x01\x02\x03")
    final = follow(raw, read_qmap(rigaku_qmap), out,
                   LiveOptions(every=5, idle=0.4, poll=0.05, frames=n))
    assert final.frames == n and final.partial and final.problem == "partial_word"
    assert "3 bytes after the last whole word" in final.note and "inside word" in final.note
    assert _partial_flag(out) == (True, "partial_word")


@needs_numba
def test_esrf_block_folder_with_a_missing_block_is_partial_and_never_joined(
        small_qmap, tmp_path):
    n, per = 400, 100
    folder, out = tmp_path / "scan", tmp_path / "live.hdf"
    folder.mkdir()
    blocks = write_esrf_csr(folder / "scan", *_hits(n, (32, 32), seed=3), n_frames=n,
                            frames_per_block=per, shape=(32, 32))
    blocks[1].unlink()  # block 1 never arrives
    final = follow(folder, read_qmap(small_qmap), out, LiveOptions(every=5, idle=0.4,
                                                                    poll=0.05))
    # was: 300 frames, blocks 2 and 3 joined to block 0, partial = False
    assert final.frames == per and final.partial and final.problem == "missing_block"
    assert "scan_00001.h5 never arrived" in final.note and "scan_00002.h5" in final.note
    assert _partial_flag(out) == (True, "missing_block")
