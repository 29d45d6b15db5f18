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

from xpcsviewer.compute.multitau.photons import available
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


# ------------------------------------------------------------------------ item 5: ages
AL = "/xpcs/twotime/age_lag"
ALG = "/xpcs/twotime/age_lag_groups"
TG = "/xpcs/twotime/groups"


@pytest.fixture(scope="module")
def two_time_files(tmp_path_factory, small_movie) -> dict[str, Path]:
    """A result with an age x lag map and its group maps, one with full maps and their
    groups: 120 frames of a small simulated movie (read-only for the tests)."""
    from xpcsviewer.cli import main

    d = tmp_path_factory.mktemp("ages50")
    _qm, qpath, _movie, npy = small_movie(d, 120, 0.5)
    out = {"ages": d / "ages.hdf", "full": d / "full.hdf"}
    common = [str(npy), "--qmap", str(qpath), "--twotime-groups", "4", "--group-tile", "4",
              "--frame-time", "0.01", "--quiet"]
    assert main(["correlate", *common, "-o", str(out["ages"]), "--mode", "multitau",
                 "--twotime-ages"]) == 0
    assert main(["correlate", *common, "-o", str(out["full"]), "--mode", "twotime"]) == 0
    return out


C2 = "/xpcs/twotime/correlation_map"


def _replace(f: h5py.File, path: str, fn) -> None:
    a = fn(np.asarray(f[path][()]).copy())
    del f[path]
    f[path] = a


def _inf(a: np.ndarray) -> np.ndarray:
    a = a.astype(np.float64)
    a.flat[a.size // 3] = np.inf
    return a


def _inf_upper(a: np.ndarray) -> np.ndarray:
    """+inf in group 1's upper triangle (the lower one is not read: the maps are
    symmetric)."""
    a = a.astype(np.float64)
    a[1, 3, 9] = np.inf
    return a


def _neg_lag(a: np.ndarray) -> np.ndarray:
    a[1] = -a[1]
    return a


def _neg_weight(a: np.ndarray) -> np.ndarray:
    a.flat[5] = -7
    return a


def _drop_pair(f: h5py.File) -> None:
    """Pair 2 (group 1 of the first bin, which has pixels) left out of the group map."""
    g = f[f"{ALG}/age_lag"]
    keep = np.flatnonzero(g["bins"][()] != 2)
    _replace(f, f"{ALG}/age_lag/bins", lambda a: a[keep])
    for name in [n for n in g if n.startswith("level_")]:
        _replace(f, f"{ALG}/age_lag/{name}/c", lambda a: a[keep])


AGES_CASES = {
    # name: (file, edit, dataset the message names, words of the message)
    "n_frames 2**62": ("ages", lambda f: f[AL].attrs.__setitem__("n_frames", np.int64(2**62)),
                       AL, "n_frames is 4611686018427387904"),
    "lags x 1e15": ("ages", lambda f: _replace(f, f"{AL}/level_01/lag", lambda a: a * 10**15),
                    f"{AL}/level_01/lag", "ascending lags"),
    "a negative lag": ("ages", lambda f: _replace(f, f"{AL}/level_00/lag", _neg_lag),
                       f"{AL}/level_00/lag", "lags -1.."),
    "t1 reversed": ("ages", lambda f: _replace(f, f"{AL}/level_00/t1", lambda a: a[::-1]),
                    f"{AL}/level_00/t1", "not ascending"),
    "a negative weight": ("ages", lambda f: _replace(f, f"{AL}/level_00/weight", _neg_weight),
                          f"{AL}/level_00/weight", "pair count -7"),
    "+inf in a weight": ("ages", lambda f: _replace(f, f"{AL}/level_00/weight", _inf),
                         f"{AL}/level_00/weight", "pair count inf"),
    "+inf in the map": ("ages", lambda f: _replace(f, f"{AL}/level_00/c", _inf),
                        f"{AL}/level_00/c", "inf at entry"),
    "+inf in a group map": ("ages", lambda f: _replace(f, f"{ALG}/age_lag/level_00/c", _inf),
                            f"{ALG}/age_lag/level_00/c", "inf at entry"),
    "group bins not the map's": ("ages", lambda f: _replace(f, f"{ALG}/bins", lambda a: a[::-1]),
                                 f"{ALG}/bins", "the bins of /xpcs/twotime/age_lag"),
    "all-zero group pixels": ("ages", lambda f: _replace(f, f"{ALG}/pixels", np.zeros_like),
                              f"{ALG}/pixels", "has no pixel in any group"),
    "a group map declared, never written": ("ages", _drop_pair, f"{ALG}/pixels",
                                            "pixels but no map"),
    "+inf in a full group map": ("full", lambda f: _replace(f, f"{TG}/c2_00001", _inf_upper),
                                 f"{TG}/c2_00001", "an infinite value"),
    "all-zero full group pixels": ("full", lambda f: _replace(f, f"{TG}/pixels", np.zeros_like),
                                   f"{TG}/pixels", "has no pixel in any group"),
    "an integer full map (x1000)": ("full", lambda f: _replace(
        f, f"{C2}/c2_00001", lambda a: (a * 1000).astype(np.int32)), f"{C2}/c2_00001",
        "dtype int32"),
}


@pytest.mark.parametrize("case", list(AGES_CASES))
def test_ages_refuses_an_inconsistent_file_naming_it(two_time_files, tmp_path, capsys, case):
    import shutil

    from xpcsviewer.cli import main

    src, edit, dataset, words = AGES_CASES[case]
    bad = tmp_path / "bad.hdf"
    shutil.copy(two_time_files[src], bad)
    with h5py.File(bad, "r+") as f:
        edit(f)
    capsys.readouterr()
    code = main(["ages", str(bad), "--windows", "2", "-o", str(tmp_path / "a.csv"),
                 "--quiet"])
    err = capsys.readouterr().err
    # was: exit 0 with changed numbers
    assert code == 3, err
    assert "bad.hdf" in err and dataset in err and words in err and "expected" in err, err
    assert not (tmp_path / "a.csv").exists()


def test_ages_reads_the_good_files(two_time_files, tmp_path):
    from xpcsviewer.cli import main

    for name, p in two_time_files.items():
        assert main(["ages", str(p), "--windows", "2", "-o", str(tmp_path / f"{name}.csv"),
                     "--quiet"]) == 0


# ------------------------------------------------------------------------ item 8: ages -o
def test_ages_output_in_a_folder_it_cannot_write_is_refused_before_the_analysis(
        two_time_files, tmp_path, capsys, monkeypatch):
    import os

    import xpcsviewer.jobs.ages as job
    from xpcsviewer.cli import main

    calls = []
    real = job.ages_file
    monkeypatch.setattr(job, "ages_file", lambda *a, **k: calls.append(a) or real(*a, **k))
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    outs = [blocker / "ages.csv"]  # a file where its folder should be
    if os.geteuid() != 0:  # root writes into a read-only folder
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        outs.append(ro / "ages.csv")
    for out in outs:
        capsys.readouterr()
        code = main(["ages", str(two_time_files["ages"]), "--windows", "2", "-o", str(out),
                     "--quiet"])
        err = capsys.readouterr().err
        assert code == 1 and "ages.csv" in err and "nothing written" in err, err
    assert calls == []  # was: the whole analysis, then the refusal
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


# ------------------------------------------------------------------------ item 7
def test_dense_frames_of_hits_never_wrap(tmp_path):
    from xpcsviewer.io.raw import open_raw_source
    from xpcsviewer.synthetic.sparse_files import write_rigaku_bin

    # 100 words of 4095 at one pixel of frame 0 (409,500: wrapped to 16,604 in uint16)
    f = np.r_[np.zeros(100, np.int64), np.arange(1, 6)]
    p = np.r_[np.full(100, 5000), np.full(5, 7000)]
    c = np.r_[np.full(100, 4095), np.ones(5, np.int64)].astype(np.uint16)
    raw = tmp_path / "hot.bin"
    raw.write_bytes(rigaku_words(f, p, c).tobytes())
    src = open_raw_source(raw)
    try:
        frames = src.read(0, 6)
        assert frames[0].ravel()[5000] == 409_500 and frames[1].ravel()[7000] == 1
        assert frames.sum() == 409_505
    finally:
        src.close()
    del write_rigaku_bin  # the words are written directly: the writer takes one per pixel


def test_dense_frames_keep_their_dtype_when_the_sums_fit():
    from xpcsviewer.io.raw.sparse import dense_frames

    out = dense_frames(0, 2, np.array([0, 0, 1]), np.array([1, 1, 2]),
                       np.array([3, 4, 5], np.uint16), (2, 2), np.uint16)
    assert out.dtype == np.uint16 and out[0, 0, 1] == 7 and out[1, 1, 0] == 5


def _esrf_series(folder: Path, n_blocks: int = 5, per: int = 20) -> list[Path]:
    n = n_blocks * per
    return write_esrf_csr(folder / "scan", *_hits(n, (32, 32), seed=5), n_frames=n,
                          frames_per_block=per, shape=(32, 32))


@pytest.mark.parametrize("damage", ["last", "middle"])
def test_esrf_series_with_a_damaged_block_names_it(tmp_path, damage):
    from xpcsviewer.io.raw import open_raw_source

    blocks = _esrf_series(tmp_path)
    bad = blocks[4] if damage == "last" else blocks[2]
    bad.write_bytes(b"\0" * 2048)  # damaged: not an HDF5 file any more
    # was: the last block left out without a word (80 frames), a middle one "missing"
    with pytest.raises(XpcsFileError, match=bad.name) as ei:
        open_raw_source(blocks[0], shape=(32, 32)).close()
    assert "missing" not in str(ei.value)


def test_esrf_series_with_an_empty_block_is_refused_not_shifted(tmp_path):
    from xpcsviewer.io.raw import open_raw_source

    blocks = _esrf_series(tmp_path)
    g = "entry_0000/measurement/data"
    with h5py.File(blocks[1], "r+") as f:  # a block that holds no frames
        for name, data in (("frame_ptr", np.zeros(1, np.int64)),
                           ("index", np.zeros(0, np.int64)),
                           ("intensity", np.zeros(0, np.uint16))):
            del f[f"{g}/{name}"]
            f[f"{g}/{name}"] = data
    # was: 80 frames, those of blocks 2-4 moved 20 frames earlier
    with pytest.raises(XpcsFileError, match=r"scan_00001\.h5: .*holds no frames"):
        open_raw_source(blocks[0], shape=(32, 32)).close()
