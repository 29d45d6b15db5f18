"""A small folder with one file of every kind the browser meets (issue 45): a result,
its per-pixel side file, a q-map, dense frames (HDF5 and ``.npy``), a Rigaku ``.bin``, a
Rigaku 3M set, an ESRF block series, an ImageD11 file, a Timepix list, and a text file.

Tests and the browser's screenshot use it; every file is a few kilobytes. The raw
sources are named as the demo names them (``NAME.bin``, ``NAME_sparse_frame_0_0000N.h5``,
``NAME_events.h5``) and the Rigaku ``.bin`` has its q-map ``NAME_qmap.h5`` beside it.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np

__all__ = ["EXAMPLE_SPEC", "write_raw_examples"]

EXAMPLE_SPEC = {
    "name": "example",
    "geometry": {"shape": (32, 40), "bcx": 20.5, "bcy": 16.0, "det_dist_m": 5.0},
    "partition": {"dq_num": 4, "sq_num": 12, "dp_num": 1, "sp_num": 1},
    "acquisition": {"frame_time": 1e-3, "n_frames": 100, "rate": 0.3},
    "sample": {"radius_m": 150e-9, "contrast": 0.2},
    "analysis": ("Multitau",),
}


def _hits(n_frames: int, n_pixels: int, per_frame: int, seed: int):
    rng = np.random.default_rng(seed)
    frame = np.repeat(np.arange(n_frames), per_frame)
    pixel = rng.integers(0, n_pixels, frame.size)
    count = rng.integers(1, 4, frame.size).astype(np.uint16)
    return frame, pixel, count


def write_raw_examples(folder: str | Path, seed: int = 0) -> dict[str, Path]:
    """Write the example files into ``folder`` (created); returns {role: path}.

    Roles: ``result``, ``side``, ``qmap`` (of the Rigaku ``.bin``), ``dense``
    (HDF5, 12 frames), ``npy`` (8 frames), ``rigaku`` (30 frames, 90 hits), ``rigaku_3m``
    (the first of its six module files; 20 frames), ``esrf`` (the first of 3 blocks of
    10 frames, 60 hits), ``id11`` (15 frames, 45 hits), ``timepix`` (500 events over
    1000 ticks of 1 ns), ``text`` (not a source).
    """
    from xpcsviewer.io.results.writer import write_qmap_file, write_result
    from xpcsviewer.synthetic.results import build_result
    from xpcsviewer.synthetic.sparse_files import (
        write_esrf_csr,
        write_id11_sparse,
        write_rigaku_3m,
        write_rigaku_bin,
        write_timepix,
    )

    d = Path(folder)
    d.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    res, extras = build_result(EXAMPLE_SPEC, seed=seed)
    out["result"] = d / "A01_example_results.hdf"
    write_result(out["result"], res, saxs_2d=extras["saxs_2d"])
    side = d / "A01_example_results_G2.hdf"
    with h5py.File(side, "w") as f:
        ds = f.create_dataset("G2IPIF", data=np.ones((2, 3, 4, 5), np.float32))
        ds.attrs["channels"] = np.array(["G2", "IP", "IF"], dtype=object)
    out["side"] = side
    rng = np.random.default_rng(seed)
    dense = d / "D01_dense.h5"
    with h5py.File(dense, "w") as f:
        f.create_dataset("/entry/data/data", data=rng.poisson(0.2, (12, 16, 20)).astype(np.uint16))
    out["dense"] = dense
    npy = d / "D02_dense.npy"
    np.save(npy, rng.poisson(0.2, (8, 16, 20)).astype(np.uint16))
    out["npy"] = npy
    out["rigaku"] = write_rigaku_bin(d / "S01_rigaku.bin", *_hits(30, 512 * 1024, 3, seed))
    out["qmap"] = write_qmap_file(d / "S01_rigaku_qmap.h5", res.qmap)
    w = 2100  # the 3M canvas: 1676 x 2100
    # a hit on every module each frame (a module without hits is no Rigaku file alone)
    f, p, c = _hits(20, 500, 6, seed + 1)
    row = 10 + np.tile([0, 0, 582, 582, 1164, 1164], 20)
    col = p % 500 + np.tile([0, 1076, 0, 1076, 0, 1076], 20)
    out["rigaku_3m"] = write_rigaku_3m(d / "S02_rigaku3m.bin", f, row * w + col, c)[0]
    f, p, c = _hits(30, 32 * 40, 2, seed + 2)
    out["esrf"] = write_esrf_csr(d / "S03_esrf_sparse_frame_0", f, p, c,
                                 frames_per_block=10, shape=(32, 40))[0]
    f, p, c = _hits(15, 32 * 40, 3, seed + 3)
    out["id11"] = write_id11_sparse(d / "S04_id11_sparse.h5", f, p, c, shape=(32, 40))
    toa = np.sort(rng.integers(0, 1000, 500))
    toa[0], toa[-1] = 0, 999
    out["timepix"] = write_timepix(d / "S05_timepix_events.h5", rng.integers(0, 40, 500),
                                   rng.integers(0, 32, 500), toa, 1e-9, (32, 40))
    text = d / "notes.txt"
    text.write_text("not a source\n")
    out["text"] = text
    return out
