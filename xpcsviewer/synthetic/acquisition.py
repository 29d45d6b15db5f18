"""A detector writing an acquisition, for the live tests, the benchmark and demos.

:func:`write_growing` appends frames to ``/entry/data/data`` of one HDF5 file at a
stated rate, as a detector's file writer does: with SWMR (``mode="swmr"``: file format
v3, ``swmr_mode``), or a plain writer that extends the dataset, writes and flushes
(``mode="plain"``; ``reopen=True`` opens and closes the file for every block, taking
HDF5's file lock each time, so a reader that held a lock would make it fail).
``extend_first`` extends and flushes before writing each block (a reader then sees
frames that are not written yet); ``die_after`` kills the process mid-block after that
many frames (``os.kill(SIGKILL)``: the file is left as a crashed writer leaves it).
:func:`write_blocks` writes Eiger-style block files ``NAME_data_000001.h5``, ... into a
folder. Both record per-block write times (``stats``) so a test can check that no
reader ever held the writer up.

Run as ``python -m xpcsviewer.synthetic.acquisition OUT --frames N --rate HZ ...`` to
write from another process (the frames come from :func:`frame_source`).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["frame_source", "write_blocks", "write_growing"]

DATASET = "/entry/data/data"


def frame_source(shape: tuple[int, int], n_frames: int, *, kind: str = "poisson",
                 frame_time: float = 1e-3, seed: int = 0, pool: int = 0,
                 chunk: int = 256, tau_frames: float = 10.0,
                 speckle_px: int = 1) -> Iterator[np.ndarray]:
    """uint16 frames in chunks: ``"poisson"`` (mean 3 counts, no dynamics, cheap) or
    ``"speckle"`` (:mod:`~xpcsviewer.synthetic.speckle`, the W1 physics: a 10 keV,
    5 m geometry, contrast 0.2, 2 photons per pixel and frame, Brownian D chosen so that
    tau at the median q of the detector is ``tau_frames`` frames).

    ``pool`` > 0: simulate that many speckle frames once and go through them back and
    forth (:func:`pool_index`; a writer faster than the simulation). Pairs of frames near
    the turning points are the same frames (shot noise included), which bends g2 by
    ~1e-3: good for timing a reader, not for physics. ``speckle_px``: speckle size in
    pixels (2 is common at beamlines and 4x cheaper to simulate).
    """
    if kind == "poisson":
        rng = np.random.default_rng(seed)
        for a in range(0, n_frames, chunk):
            yield rng.poisson(3.0, (min(chunk, n_frames - a), *shape)).astype(np.uint16)
        return
    if kind != "speckle":
        raise ValueError(f"unknown frame kind {kind!r}")
    from xpcsviewer.synthetic.speckle import Geometry, iter_frames

    h, w = shape
    geo = Geometry(shape=(h, w), energy_kev=10.0, det_dist_m=5.0, pixel_size_m=75e-6,
                   bcx=w / 2, bcy=h / 2)
    q, _ = geo.qmap()
    qmid = float(np.median(q))
    d = 1.0 / (2 * tau_frames * frame_time * qmid**2)  # tau(q_mid) = 1/(2 D q^2)
    gen_n = pool if pool > 0 else n_frames
    it = iter_frames(q, gen_n, frame_time, d, beta=0.2, rate=2.0, seed=seed, chunk=chunk,
                     speckle_px=speckle_px)
    if pool <= 0:
        yield from it
        return
    frames = np.concatenate(list(it))
    for a in range(0, n_frames, chunk):
        yield frames[pool_index(a + np.arange(min(chunk, n_frames - a)), pool)]


def _frames_in_blocks(frames: Iterator[np.ndarray], block: int) -> Iterator[np.ndarray]:
    buf: list[np.ndarray] = []
    have = 0
    for ch in frames:
        buf.append(ch)
        have += ch.shape[0]
        while have >= block:
            allf = np.concatenate(buf)
            yield allf[:block]
            rest = allf[block:]
            buf, have = ([rest] if rest.shape[0] else []), rest.shape[0]
    if have:
        yield np.concatenate(buf)


def write_growing(path: str | os.PathLike, frames: Iterator[np.ndarray], *, rate: float,
                  shape: tuple[int, int], mode: str = "swmr", block: int = 50,
                  chunk_frames: int = 1, frame_time: float | None = None,
                  extend_first: bool = False, reopen: bool = False, counter: bool = False,
                  die_after: int | None = None, expected: int | None = None,
                  on_block: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Append ``frames`` to one HDF5 file at ``rate`` frames/s (blocks of ``block``).

    Returns ``stats``: ``frames``, ``block_s`` (seconds each block's write and flush
    took), ``last_frame_wall`` (``time.time()`` after the last frame was flushed),
    ``start_wall``.
    """
    import h5py

    if mode not in ("swmr", "plain"):
        raise ValueError(f"mode must be 'swmr' or 'plain', got {mode!r}")
    if reopen and mode == "swmr":
        raise ValueError("reopen is for the plain writer")
    h, w = shape
    kw = {"libver": "latest"} if mode == "swmr" else {}
    f = h5py.File(path, "w", **kw)
    maxn = expected if expected else None
    d = f.create_dataset(DATASET, shape=(0, h, w), maxshape=(maxn, h, w),
                         chunks=(chunk_frames, h, w), dtype=np.uint16)
    if frame_time is not None:
        f["/entry/instrument/detector_1/frame_time"] = float(frame_time)
    if counter:
        f.create_dataset("/entry/data/frames_written", data=np.int64(0))
    if mode == "swmr":
        f.swmr_mode = True
    f.flush()
    if reopen:
        f.close()
    stats: dict[str, Any] = {"frames": 0, "block_s": [], "start_wall": time.time()}
    t0 = time.monotonic()
    n = 0
    for blk in _frames_in_blocks(frames, block):
        k = blk.shape[0]
        due = t0 + (n + k) / rate
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        tb = time.monotonic()
        if reopen:
            f = h5py.File(path, "a")  # with HDF5's file lock: fails if a reader holds one
        d = f[DATASET]
        d.resize(n + k, axis=0)
        if extend_first or (die_after is not None and n + k > die_after):
            f.flush()
        if die_after is not None and n + k > die_after:
            half = max(1, (die_after - n))
            d[n : n + half] = blk[:half]
            f.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        d[n : n + k] = blk
        if counter:
            f["/entry/data/frames_written"][()] = n + k
        f.flush()
        if reopen:
            f.close()
        n += k
        stats["block_s"].append(time.monotonic() - tb)
        stats["frames"] = n
        stats["last_frame_wall"] = time.time()
        if on_block is not None:
            on_block(n)
    if not reopen:
        f.close()
    stats["closed_wall"] = time.time()
    return stats


def write_blocks(folder: str | os.PathLike, frames: Iterator[np.ndarray], *, rate: float,
                 shape: tuple[int, int], block: int = 100, name: str = "scan",
                 frame_time: float | None = None, master: int | None = None,
                 on_block: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Write ``NAME_data_000001.h5``, ... (``block`` frames each) into ``folder`` at
    ``rate`` frames/s; ``master``: also an Eiger-style ``NAME_master.h5`` stating that
    many frames (``nimages``)."""
    import h5py

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if master:
        with h5py.File(folder / f"{name}_master.h5", "w") as m:
            m["/entry/instrument/detector/detectorSpecific/nimages"] = np.int64(master)
            m["/entry/instrument/detector/detectorSpecific/ntrigger"] = np.int64(1)
            if frame_time is not None:
                m["/entry/instrument/detector/frame_time"] = float(frame_time)
    stats: dict[str, Any] = {"frames": 0, "block_s": [], "start_wall": time.time()}
    t0 = time.monotonic()
    n = 0
    for i, blk in enumerate(_frames_in_blocks(frames, block), start=1):
        k = blk.shape[0]
        wait = t0 + (n + k) / rate - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        tb = time.monotonic()
        with h5py.File(folder / f"{name}_data_{i:06d}.h5", "w") as f:
            f.create_dataset(DATASET, data=blk, chunks=(1, *shape))
            if frame_time is not None:
                f["/entry/instrument/detector_1/frame_time"] = float(frame_time)
        n += k
        stats["block_s"].append(time.monotonic() - tb)
        stats["frames"] = n
        stats["last_frame_wall"] = time.time()
        if on_block is not None:
            on_block(n)
    return stats


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m xpcsviewer.synthetic.acquisition",
                                description="write a simulated acquisition")
    p.add_argument("out", help="the HDF5 file (or folder with --blocks)")
    p.add_argument("--frames", type=int, required=True)
    p.add_argument("--rate", type=float, required=True, help="frames per second")
    p.add_argument("--shape", type=int, nargs=2, default=(256, 256))
    p.add_argument("--kind", choices=("poisson", "speckle"), default="speckle")
    p.add_argument("--pool", type=int, default=0, help="cycle a pool of simulated frames")
    p.add_argument("--pool-file", default=None,
                   help="cycle the (n, H, W) frames of this .npy instead of simulating")
    p.add_argument("--mode", choices=("swmr", "plain"), default="swmr")
    p.add_argument("--block", type=int, default=50)
    p.add_argument("--chunk-frames", type=int, default=1)
    p.add_argument("--frame-time", type=float, default=None)
    p.add_argument("--extend-first", action="store_true")
    p.add_argument("--reopen", action="store_true")
    p.add_argument("--counter", action="store_true")
    p.add_argument("--expected", action="store_true", help="fixed maximum length = --frames")
    p.add_argument("--die-after", type=int, default=None)
    p.add_argument("--blocks", action="store_true", help="write block files into OUT")
    p.add_argument("--master", action="store_true", help="with --blocks: an Eiger master file")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--stats", default=None, help="write the stats here (JSON)")
    p.add_argument("--ready", default=None, help="touch this file once frames are prepared")
    a = p.parse_args(argv)
    shape = tuple(a.shape)
    ft = a.frame_time if a.frame_time is not None else 1.0 / a.rate
    if a.pool_file:
        src = _cycle(np.load(a.pool_file, mmap_mode="r"), a.frames)
    else:
        src = frame_source(shape, a.frames, kind=a.kind, frame_time=ft, seed=a.seed, pool=a.pool)
    if a.pool and not a.pool_file:
        first = next(src)  # the pool is simulated before the clock starts
        src = _chain(first, src)
    if a.ready:
        Path(a.ready).touch()
    if a.blocks:
        stats = write_blocks(a.out, src, rate=a.rate, shape=shape, block=a.block,
                             frame_time=ft, master=a.frames if a.master else None)
    else:
        stats = write_growing(a.out, src, rate=a.rate, shape=shape, mode=a.mode,
                              block=a.block, chunk_frames=a.chunk_frames, frame_time=ft,
                              extend_first=a.extend_first, reopen=a.reopen, counter=a.counter,
                              die_after=a.die_after,
                              expected=a.frames if a.expected else None)
    if a.stats:
        Path(a.stats).write_text(json.dumps(stats))
    return 0


def pool_index(k: np.ndarray, n_pool: int) -> np.ndarray:
    """Frame ``k`` of a run cycled from a pool: forwards, then backwards, then forwards...

    Speckle dynamics are time-reversible, so the run stays stationary; a plain cycle
    would repeat every frame after ``n_pool`` frames (g2 back at 1 + beta at that delay
    for every pair), going back and forth only pairs near the turning points are close.
    """
    m = np.asarray(k) % (2 * n_pool)
    return np.where(m < n_pool, m, 2 * n_pool - 1 - m)


def _cycle(pool: np.ndarray, n: int, chunk: int = 256) -> Iterator[np.ndarray]:
    for a in range(0, n, chunk):
        yield pool[pool_index(a + np.arange(min(chunk, n - a)), pool.shape[0])]


def _chain(first: np.ndarray, rest: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
    yield first
    yield from rest


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
