"""Issue 50, items 1, 2 and the reader parts of 8: the photon-sparse readers check what
they derive (sums, frame numbers, times) exactly and against the file, refuse a run that
one stray hit stretches over invented empty frames, and say which file, dataset or word
is wrong, with exit 3, for what used to crash (exit -11), exit 1 or give g2 thousands of
times too large. The bad files come from ``bad_readers.py`` (small, made per session)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import h5py
import numpy as np
import pytest

from xpcsviewer.cli import main
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.raw import open_raw_source, raw_layout
from xpcsviewer.synthetic.sparse_files import rigaku_words, write_esrf_csr

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def _load():
    spec = importlib.util.spec_from_file_location("xpcs_issue50_bad_readers",
                                                  HERE / "bad_readers.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


br = _load()


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    d = tmp_path_factory.mktemp("issue50_readers")
    return {c.name: c for c in br.build_reader_cases(d / "cases")}


@pytest.fixture(scope="module")
def qmaps(tmp_path_factory):
    d = tmp_path_factory.mktemp("issue50_qmaps")
    out = {}
    for name, (h, w) in {"small": br.SMALL, "module": (512, 1024)}.items():
        out[name] = d / f"q_{name}.hdf"
        assert main(["qmap", "--shape", str(h), str(w), "--energy", "10", "--det-dist", "5",
                     "--pixel-size", "75e-6", "--bcx", str(w // 2), "--bcy", str(h // 2),
                     "--dq-num", "2", "--sq-num", "4", "-o", str(out[name]), "--quiet"]) == 0
    return out


def _cli(args, cwd):
    """``xpcsviewer ARGS`` in its own process (a crash must not take pytest down)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get(
        "PYTHONPATH", "")]), QT_QPA_PLATFORM="offscreen", JAX_PLATFORMS="cpu")
    t = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "xpcsviewer", *map(str, args)], cwd=cwd,
                       env=env, capture_output=True, text=True, timeout=120)
    return r.returncode, r.stderr + r.stdout, time.monotonic() - t


def _refused(case, **kw):
    """The error opening ``case`` raises; it holds the case's words."""
    with pytest.raises(XpcsFileError) as ei:
        with open_raw_source(case.path, **kw):
            pass
    msg = str(ei.value)
    for word in (os.fspath(case.path), *case.must):
        assert word in msg, (word, msg)
    return msg


# ------------------------------------------------------------------ item 1
def test_id11_nnz_summing_past_2_63_is_refused_not_a_segfault(cases, qmaps, tmp_path):
    c = cases["id11 nnz sum wraps 2^64"]
    _refused(c)
    for cmd in (["info", c.path], ["correlate", c.path, "--qmap", qmaps["small"], "-o",
                                   tmp_path / "o.hdf", "--quiet"]):
        rc, out, took = _cli(cmd, tmp_path)
        assert rc == 3 and "/1.1/nnz" in out and "frame 50" in out and took < 30, (rc, out)


def test_uint64_counts_and_pointers_are_read_as_stored(cases, tmp_path):
    # nnz = 2**64 - 1 was read as -1 ("negative hit count -1")
    _refused(cases["id11 nnz 2^64-1 (uint64)"])
    f = np.repeat(np.arange(6), 3)
    [blk] = write_esrf_csr(tmp_path / "e.h5", f, np.arange(f.size) % 20,
                           np.ones(f.size, np.uint16), shape=(4, 5))
    with h5py.File(blk, "a") as h:
        ptr = h[br.ESRF_PTR][()].astype(np.uint64)
        ptr[2] = np.uint64((1 << 64) - 2)
        del h[br.ESRF_PTR]
        h[br.ESRF_PTR] = ptr
    with pytest.raises(XpcsFileError, match="decreases at entry 3 "
                       r"\(18446744073709551614 -> 9\)"):
        open_raw_source(blk, shape=(4, 5))


def test_running_sum_is_exact_past_2_63(tmp_path):
    from xpcsviewer.io.raw.util import hit_offsets

    p = tmp_path / "n.h5"
    with h5py.File(p, "w") as h:
        h["nnz"] = np.array([1 << 62, 1 << 62, 1 << 62, 0], np.int64)
    with h5py.File(p, "r") as h, pytest.raises(XpcsFileError,
                                               match=r"frames 0\.\.1 add up to more"):
        # each count fits the (declared) hits, the int64 sum wraps at frame 1
        hit_offsets(p, h["nnz"], {"row": 3 << 61})


def test_offsets_far_larger_than_the_file_are_refused_before_reading(tmp_path):
    f, p, c = br.movie_hits(5, br.SMALL[0] * br.SMALL[1], 3)
    path = br.write_id11_sparse(tmp_path / "big_nnz.h5", f, p, c, br.SMALL)
    n = 1 << 28  # 2 GiB of int64 offsets from a file of a few MB
    with h5py.File(path, "a") as h:
        del h["1.1/nnz"]
        ds = h["1.1"].create_dataset("nnz", shape=(n,), dtype=np.int32, chunks=(1 << 20,),
                                     compression="gzip")
        zeros = np.zeros(1 << 20, np.int32)
        for k in range(n >> 20):  # every chunk written: zeros compress to nothing
            ds[k << 20: (k + 1) << 20] = zeros
    assert path.stat().st_size < 8 << 20
    # in its own process under a 1 GiB address-space limit (reading it whole would
    # take 5 GiB: the machine must never be asked for that)
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
            "from xpcsviewer.io.errors import XpcsFileError\n"
            "from xpcsviewer.io.raw import open_raw_source\n"
            "try:\n    open_raw_source(sys.argv[1])\nexcept XpcsFileError as e:\n"
            "    print(e)\n    sys.exit(3)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get(
        "PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", code, str(path)], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 3 and f"declares {n} frames" in r.stdout, r.stdout + r.stderr
    assert "/1.1/nnz" in r.stdout


# ------------------------------------------------------------------ item 2
@pytest.mark.parametrize("name", ["rigaku lone word at frame 2^24-1",
                                  "rigaku 3M lone word in all six modules",
                                  "timepix lone event 11.6 days late",
                                  "timepix time-tag, one event at 2^40 ticks",
                                  "timepix event at -5 s"])
def test_a_stray_word_or_event_is_refused_naming_it(cases, name):
    c = cases[name]
    kw = {"shape": br.SMALL} if "timepix" in name else {}
    _refused(c, **kw)


def test_a_stray_word_in_one_module_of_a_3m_is_named(cases, tmp_path):
    src = cases["rigaku 3M lone word in all six modules"].path
    for k in range(6):
        w = np.fromfile(src.with_name(f"{src.name[:-4]}.00{k}"), "<u8")
        (w if k == 3 else w[:-1]).tofile(tmp_path / f"one.bin.00{k}")
    with pytest.raises(XpcsFileError, match=r"one\.bin\.003: word \d+: frame 16777215 lies"):
        open_raw_source(tmp_path / "one.bin.000")


def test_stray_word_refused_by_info_and_correlate_not_g2_8400(cases, qmaps, tmp_path):
    c = cases["rigaku lone word at frame 2^24-1"]
    assert main(["info", str(c.path)]) == 3
    rc, out, took = _cli(["correlate", c.path, "--qmap", qmaps["module"], "-o",
                          tmp_path / "o.hdf", "--quiet"], tmp_path)
    assert rc == 3 and "word 12000" in out and "--end-frame 300" in out and took < 30, out
    assert not (tmp_path / "o.hdf").exists()


def test_the_frames_before_a_stray_word_are_read_when_selected(cases, tmp_path):
    good = br.good_rigaku(tmp_path / "good.bin")
    with open_raw_source(cases["rigaku lone word at frame 2^24-1"].path,
                         end=300) as src, open_raw_source(good) as ref:
        assert src.n_frames == ref.n_frames == 300
        np.testing.assert_array_equal(src.read(0, 300), ref.read(0, 300))


def test_a_lone_first_event_far_before_the_rest_is_refused(tmp_path):
    tp = np.arange(2000, dtype=np.int64) * 500 + 5_000_000_000
    p = br.timepix(tmp_path / "early.h5", np.concatenate([[0], tp]))
    with pytest.raises(XpcsFileError, match=r"/toa: entry 0 .*before the rest.*"
                       r"--begin-frame 5000000000"):
        open_raw_source(p)


def test_a_stray_event_of_an_unsorted_list_is_named_by_its_file_entry(tmp_path):
    tp = np.arange(2000, dtype=np.int64) * 500
    toa = np.concatenate([tp[:5], [10**15], tp[5:]])[::-1].copy()  # unsorted
    p = br.timepix(tmp_path / "unsorted_late.h5", toa)
    with pytest.raises(XpcsFileError, match=r"/toa: entry 1995 \(time of arrival 1e\+06 s"):
        open_raw_source(p)


def test_good_runs_are_not_refused(tmp_path):
    # a demo-like module, the same with a beam-off end at 9 x its length (a count-0 word
    # marks the last frame), a sparse run (0.2 hits a frame), a sparse event list
    good = br.good_rigaku(tmp_path / "good.bin")
    f, p, c = br.movie_hits(300, 512 * 1024, 40)
    quiet = br.write_rigaku_bin(tmp_path / "quiet_end.bin", f, p, c, n_frames=3000)
    rng = np.random.default_rng(4)
    fs = np.sort(rng.choice(5000, 1000, replace=False))
    sparse = br.write_rigaku_bin(tmp_path / "sparse.bin", fs, fs * 7, np.ones(fs.size, int))
    ticks = np.cumsum(rng.exponential(1e4, 3000)).astype(np.int64)
    events = br.timepix(tmp_path / "events.h5", ticks)
    for path, frames in ((good, 300), (quiet, 3000), (sparse, int(fs[-1]) + 1),
                         (events, int(ticks[-1] - ticks[0]) + 1)):
        with open_raw_source(path) as src:
            assert src.raw_frames == frames


# ------------------------------------------------------------------ item 8
@pytest.mark.parametrize("name", ["timepix tick_s = 1e-300", "timepix times -1 .. 2^63-1",
                                  "timepix time 2^64-1 (uint64)",
                                  "timepix time-tag, one event at 2^40 ticks",
                                  "timepix event at -5 s"])
def test_timepix_refusals_exit_3_naming_file_dataset_and_expected(cases, qmaps, tmp_path,
                                                                  name):
    c = cases[name]
    rc, out, took = _cli(["correlate", c.path, "--qmap", qmaps["small"], "-o",
                          tmp_path / "o.hdf", "--quiet", *c.args], tmp_path)
    assert rc == 3 and took < 30, (rc, out)
    for word in (c.path.name, "/toa", "expected", *c.must):
        assert word in out, (word, out)
    assert "OverflowError" not in out and "time segments" not in out


@pytest.mark.parametrize("name", ["rigaku first word damaged", "rigaku last word damaged"])
def test_a_damaged_edge_word_is_named_not_called_not_hdf5(cases, name, capsys):
    c = cases[name]
    assert raw_layout(c.path) == "rigaku"
    _refused(c)
    assert main(["info", str(c.path)]) == 3
    err = capsys.readouterr().err
    assert "not an HDF5 file" not in err and c.must[0] in err and "expected" in err


def test_a_file_of_zeros_is_no_rigaku_file(cases, qmaps, tmp_path, capsys):
    c = cases["1 MiB of zeros"]
    assert raw_layout(c.path) is None
    with pytest.raises(XpcsFileError, match=r"not a raw source.*word 0 is "
                       r"0x0000000000000000, not a Rigaku hit word"):
        open_raw_source(c.path)
    assert main(["info", str(c.path)]) == 3
    assert "word 0 is 0x0000000000000000" in capsys.readouterr().err
    assert main(["correlate", str(c.path), "--qmap", str(qmaps["module"]), "-o",
                 str(tmp_path / "o.hdf"), "--quiet"]) == 3
    # a lone zero word is no file of hits either; a zero first word before hits neither
    z = tmp_path / "z.bin"
    z.write_bytes(bytes(8) + rigaku_words([0, 1], [3, 4], [1, 1]).tobytes())
    with pytest.raises(XpcsFileError, match="word 0"):
        open_raw_source(z)


def test_refusals_allocate_little(cases):
    for name in ("rigaku lone word at frame 2^24-1", "timepix time-tag, one event at 2^40 ticks",
                 "id11 nnz sum wraps 2^64"):
        c = cases[name]
        tracemalloc.start()
        try:
            with pytest.raises(XpcsFileError):
                open_raw_source(c.path, shape=br.SMALL)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 4 * c.path.stat().st_size + (4 << 20), (name, peak)
