"""The photon-sparse reader cases of issue 50 (items 1, 2 and the reader parts of 8),
made small with the demo-like writers of :mod:`xpcsviewer.synthetic.sparse_files` (never
committed).

Each :class:`ReaderCase` is one raw source and the words its refusal must hold: the file,
the dataset or word, and what was expected. ``qmap`` says which q-map ``correlate`` takes
("module": a 512 x 1024 Rigaku module, "small": the 32 x 40 detector of the event and
ImageD11 files, None: ``info`` only).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from xpcsviewer.synthetic.sparse_files import (
    rigaku_words,
    write_id11_sparse,
    write_rigaku_3m,
    write_rigaku_bin,
    write_timepix,
)

#: the detector of the small event and ImageD11 files (the issue-11 corpus's)
SMALL = (32, 40)
#: a Rigaku frame number of 24 bits, the largest
FRAME_MAX = (1 << 24) - 1
#: the CSR pointer of an ESRF block
ESRF_PTR = "entry_0000/measurement/data/frame_ptr"


@dataclass
class ReaderCase:
    """One bad raw source; ``must``: words its error line holds."""

    name: str
    path: Path
    must: tuple[str, ...]
    qmap: str | None = None
    args: tuple[str, ...] = ()


def movie_hits(n_frames: int, n_pixels: int, per_frame: int, seed: int = 0):
    """(frame, pixel, count) of a demo-like sparse run: ``per_frame`` hits a frame at
    distinct random pixels, counts 1-3, in frame order."""
    rng = np.random.default_rng(seed)
    frame = np.repeat(np.arange(n_frames), per_frame)
    pixel = np.concatenate([np.sort(rng.choice(n_pixels, per_frame, replace=False))
                            for _ in range(n_frames)])
    count = rng.integers(1, 4, frame.size).astype(np.uint16)
    return frame, pixel, count


def good_rigaku(path: Path, n_frames: int = 300, per_frame: int = 40) -> Path:
    f, p, c = movie_hits(n_frames, 512 * 1024, per_frame)
    return write_rigaku_bin(path, f, p, c, overwrite=True)


def append_words(path: Path, words: np.ndarray) -> None:
    with open(path, "ab") as fh:
        fh.write(np.asarray(words, "<u8").tobytes())


def set_word(path: Path, index: int, value: int) -> None:
    w = np.fromfile(path, "<u8")
    w[index] = np.uint64(value)
    w.tofile(path)


def timepix(path: Path, toa, *, tick_s: float = 1e-9, dtype=np.int64, seed: int = 1,
            attrs: dict | None = None) -> Path:
    """A Timepix list on the small detector with ``toa`` (ticks of ``tick_s``, written
    as ``dtype``: the writer's uint64 cannot hold the bad values)."""
    toa = np.asarray(toa)
    rng = np.random.default_rng(seed)
    h, w = SMALL
    write_timepix(path, rng.integers(0, w, toa.size), rng.integers(0, h, toa.size),
                  np.zeros(toa.size, np.uint64), 1.0, SMALL, overwrite=True)
    with h5py.File(path, "a") as f:
        del f["toa"]
        f.create_dataset("toa", data=toa.astype(dtype))
        f["toa"].attrs["tick_s"] = tick_s
        for k, v in (attrs or {}).items():
            f["toa"].attrs[k] = v
    return path


def build_reader_cases(d: Path) -> list[ReaderCase]:
    """The bad sources of issue 50 items 1, 2 and 8 (readers) in folder ``d``."""
    d.mkdir(parents=True, exist_ok=True)
    cases: list[ReaderCase] = []
    add = cases.append

    # item 1: ImageD11 nnz whose sum wraps int64 back to len(row)
    f, p, c = movie_hits(50, SMALL[0] * SMALL[1], 20)
    ok = write_id11_sparse(d / "id11_good.h5", f, p, c, SMALL, overwrite=True)
    wrap = d / "id11_nnz_wraps.h5"
    wrap.write_bytes(ok.read_bytes())
    with h5py.File(wrap, "a") as h:
        nnz = h["1.1/nnz"][()].astype(np.int64)
        del h["1.1/nnz"]
        h["1.1/nnz"] = np.concatenate([nnz, np.full(4, 1 << 62, np.int64)])
    add(ReaderCase("id11 nnz sum wraps 2^64", wrap, ("/1.1/nnz", "frame 50", "1000 hits"),
                   "small"))
    big = d / "id11_nnz_uint64.h5"
    big.write_bytes(ok.read_bytes())
    with h5py.File(big, "a") as h:
        nnz = h["1.1/nnz"][()].astype(np.uint64)
        nnz[3] = np.uint64((1 << 64) - 1)
        del h["1.1/nnz"]
        h["1.1/nnz"] = nnz
    add(ReaderCase("id11 nnz 2^64-1 (uint64)", big, ("/1.1/nnz", "18446744073709551615"),
                   "small"))

    # item 2: one word or event far outside the run
    lone = good_rigaku(d / "S01_lone_end.bin")
    append_words(lone, rigaku_words([FRAME_MAX], [7], [1]))
    add(ReaderCase("rigaku lone word at frame 2^24-1", lone,
                   ("word 12000", "frame 16777215", "frames 0..299"), "module"))
    lone3 = d / "S02_lone_end.bin"
    f, p, c = movie_hits(120, 6 * 512 * 1024, 30, seed=2)
    k, r, col = p // (512 * 1024), p // 1024 % 512, p % 1024
    canvas = ((k // 2) * (512 + 70) + r) * 2100 + (k % 2) * (1024 + 52) + col
    files = write_rigaku_3m(lone3, f, canvas, c, overwrite=True)
    for m in files:
        append_words(m, rigaku_words([FRAME_MAX], [7], [1]))
    add(ReaderCase("rigaku 3M lone word in all six modules", files[0],
                   ("frame 16777215", "frames 0..119")))
    tp = np.arange(2000, dtype=np.int64) * 500
    neg = timepix(d / "tpx_negative_time.h5", np.concatenate([[-5_000_000_000], tp]))
    add(ReaderCase("timepix event at -5 s", neg, ("/toa", "entry 0", "-5", ">= 0"),
                   "small"))
    late = timepix(d / "tpx_lone_late.h5", np.concatenate([tp, [10**15]]))
    add(ReaderCase("timepix lone event 11.6 days late", late,
                   ("/toa", "entry 2000", "1e+06 s"), "small", ("--bin-time", "1e-6")))

    # item 8: exit codes and messages
    tiny = timepix(d / "tpx_tick_1e-300.h5", tp, tick_s=1e-300)
    add(ReaderCase("timepix tick_s = 1e-300", tiny, ("/toa", "tick_s", "1e-300"), "small",
                   ("--bin-time", "1e-6")))
    huge = timepix(d / "tpx_huge_times.h5",
                   np.concatenate([[-1], tp, [(1 << 63) - 1]]))
    add(ReaderCase("timepix times -1 .. 2^63-1", huge, ("/toa", "entry 0", ">= 0"), "small"))
    u64 = timepix(d / "tpx_time_2^64-1.h5",
                  np.append(tp.astype(np.uint64), np.uint64((1 << 64) - 1)), dtype=np.uint64)
    add(ReaderCase("timepix time 2^64-1 (uint64)", u64,
                   ("/toa", "entry 2000", "18446744073709551615"), "small"))
    tt = timepix(d / "tpx_timetag_bad_event.h5", np.concatenate([tp, [1 << 40]]))
    add(ReaderCase("timepix time-tag, one event at 2^40 ticks", tt,
                   ("/toa", "entry 2000"), "small"))
    first = good_rigaku(d / "S01_first_word_damaged.bin")
    set_word(first, 0, int(rigaku_words([0], [5], [1])[0]) | (1 << 13))
    add(ReaderCase("rigaku first word damaged", first, ("word 0", "reserved bits"),
                   "module"))
    last = good_rigaku(d / "S01_last_word_damaged.bin")
    set_word(last, -1, int(rigaku_words([299], [5], [1])[0]) | (1 << 38))
    add(ReaderCase("rigaku last word damaged", last, ("word 11999", "reserved bits"),
                   "module"))
    zeros = d / "zeros_1MiB.bin"
    zeros.write_bytes(bytes(1 << 20))
    add(ReaderCase("1 MiB of zeros", zeros, ("zeros_1MiB.bin", "word 0"), "module"))
    return cases


def reader_runs(d: Path, small_qmap: Path) -> list[tuple[list, tuple[str, ...]]]:
    """(command line, words its refusal holds) over :func:`build_reader_cases`: ``info``
    of each, ``correlate`` of each that has a q-map (``small_qmap``: a 32 x 40 one; the
    module's is made here)."""
    from xpcsviewer.cli import main

    cases = build_reader_cases(d / "cases")
    module_q = d / "q_module.hdf"
    assert main(["qmap", "--shape", "512", "1024", "--energy", "10", "--det-dist", "5",
                 "--pixel-size", "75e-6", "--bcx", "512", "--bcy", "256", "--dq-num", "2",
                 "--sq-num", "4", "-o", str(module_q), "--quiet"]) == 0
    out: list[tuple[list, tuple[str, ...]]] = []
    for c in cases:
        words = (c.path.name, *c.must)
        out.append((["info", c.path], words))
        if c.qmap:
            q = small_qmap if c.qmap == "small" else module_q
            out.append((["correlate", c.path, "--qmap", q, "-o", d / f"{c.path.name}.hdf",
                         "--quiet", *c.args], words))
    return out
