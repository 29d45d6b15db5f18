"""Writers of the raw layouts (photon-sparse, event and dense frames), from hits.

Each writer takes the hits of a sparse movie, in frame order: ``frame`` (non-decreasing
frame numbers from 0), ``pixel`` (flat detector index ``row * W + col``) and ``count``
(photons), and writes them in one layout exactly as the readers of
:mod:`xpcsviewer.io` read it (docs/sparse-formats.md):

- :func:`write_rigaku_bin`: APS Rigaku XSPA ``.bin`` (one 512 x 1024 module);
- :func:`write_rigaku_3m`: the six module files ``NAME.000`` ... ``NAME.005`` of a 3M;
- :func:`write_esrf_csr`: ESRF ID10 CSR HDF5, one file or a block series;
- :func:`write_id11_sparse`: ImageD11 sparse frames (``nnz``, ``row``, ``col``,
  ``intensity``);
- :func:`write_timepix`: a Timepix event list (``x``, ``y``, ``toa`` in integer ticks);
- :func:`write_dense`: dense frames, HDF5 ``/entry/data/data`` (compressed, with the frame
  time and the detector's saturation value) or ``.npy``, formed a chunk of frames at a time.

Every file is written under a temporary name beside the target and renamed onto it
(:func:`xpcsviewer.io.outputs.atomic_path`), and an existing file is never replaced
unless ``overwrite=True`` (``FileExistsError``; for a set of files, before any is
written). Only numpy and h5py.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from xpcsviewer.io.outputs import atomic_path
from xpcsviewer.io.raw.dense import FRAME_TIME
from xpcsviewer.io.results.writer import atomic_h5

__all__ = [
    "ESRF_GROUP",
    "RIGAKU_3M_SHAPE",
    "RIGAKU_MODULE_SHAPE",
    "rigaku_words",
    "write_dense",
    "write_esrf_csr",
    "write_id11_sparse",
    "write_rigaku_3m",
    "write_rigaku_bin",
    "write_timepix",
]

#: one Rigaku XSPA module, (rows, cols)
RIGAKU_MODULE_SHAPE = (512, 1024)
#: rows and columns between the modules of the 3M
RIGAKU_GAP = (70, 52)
#: the 3M canvas: 3 x 2 modules with gaps
RIGAKU_3M_SHAPE = (3 * 512 + 2 * 70, 2 * 1024 + 52)
#: module file suffix ``.00N`` at canvas position k (row k // 2, column k % 2)
RIGAKU_3M_PLACEMENT = (5, 0, 4, 1, 3, 2)
ESRF_GROUP = "entry_0000/measurement/data"

_MAX_FRAME = (1 << 24) - 1
_MAX_COUNT = 0xFFF


# ---------------------------------------------------------------------- shared checks
def _hits(frame: Any, pixel: Any, count: Any, n_pixels: int,
          n_frames: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Checked (frame, pixel, count) arrays and the number of frames."""
    f = np.asarray(frame, dtype=np.int64).ravel()
    p = np.asarray(pixel, dtype=np.int64).ravel()
    c = np.asarray(count).ravel()
    if not f.size == p.size == c.size:
        raise ValueError(f"frame, pixel and count differ in length ({f.size}, {p.size}, "
                         f"{c.size})")
    if f.size:
        if f[0] < 0:
            raise ValueError(f"frame numbers must be >= 0 (got {int(f[0])})")
        if (np.diff(f) < 0).any():
            raise ValueError("hits must be in frame order (frame non-decreasing)")
        if p.min() < 0 or p.max() >= n_pixels:
            bad = int(p[(p < 0) | (p >= n_pixels)][0])
            raise ValueError(f"pixel index {bad} outside the detector of {n_pixels} pixels")
        if c.dtype.kind not in "iuf":
            raise ValueError(f"counts must be numbers, got dtype {c.dtype}")
        if c.dtype.kind in "if" and (c < 0).any():
            raise ValueError("counts must be >= 0")
    last = int(f[-1]) + 1 if f.size else 0
    n = last if n_frames is None else int(n_frames)
    if n < max(last, 1):
        raise ValueError(f"n_frames={n_frames} but the hits reach frame {last - 1}")
    return f, p, c, n


def _refuse_existing(paths: Sequence[Path], overwrite: bool) -> None:
    if overwrite:
        return
    for p in paths:
        if p.exists() or p.is_symlink():
            raise FileExistsError(f"{p} exists (use overwrite=True)")


def _compression(compression: str | None) -> dict[str, Any]:
    if compression is None:
        return {}
    if compression == "lzf" and "lzf" not in h5py.filters.decode:
        compression = "gzip"
    return {"compression": compression, "shuffle": True}


def _dataset(g: h5py.Group, name: str, data: np.ndarray, compression: str | None) -> None:
    kw = _compression(compression) if data.size > 1024 else {}
    if kw:
        kw["chunks"] = (min(data.size, 1 << 18),)
    g.create_dataset(name, data=data, **kw)


def _write_h5(path: Path, fill: Any) -> Path:
    # atomic, and a full disk is an error naming the file (HDF5 never sees it);
    # the caller has applied the overwrite rule
    with atomic_h5(path, overwrite=True) as f:
        fill(f)
    return path


# ---------------------------------------------------------------------- Rigaku
def rigaku_words(frame: Any, pixel: Any, count: Any) -> np.ndarray:
    """Little-endian uint64 words ``frame << 40 | pixel << 16 | count``.

    Raises
    ------
    ValueError
        A frame over 24 bits, a pixel outside the module, a count over 12 bits.
    """
    f = np.asarray(frame, dtype=np.int64)
    p = np.asarray(pixel, dtype=np.int64)
    c = np.asarray(count)
    if f.size and (f.min() < 0 or f.max() > _MAX_FRAME):
        raise ValueError(f"Rigaku frame numbers are 24 bits (0..{_MAX_FRAME})")
    npx = RIGAKU_MODULE_SHAPE[0] * RIGAKU_MODULE_SHAPE[1]
    if p.size and (p.min() < 0 or p.max() >= npx):
        raise ValueError(f"Rigaku module pixels are 0..{npx - 1}")
    if c.size and (c.dtype.kind not in "iu" or c.min() < 0 or c.max() > _MAX_COUNT):
        raise ValueError(f"Rigaku counts are whole numbers 0..{_MAX_COUNT}")
    u = np.uint64
    return ((f.astype(u) << u(40)) | (p.astype(u) << u(16)) | c.astype(u)).astype("<u8")


def _module_words(f: np.ndarray, p: np.ndarray, c: np.ndarray, n_frames: int) -> np.ndarray:
    """The words of one module; a count-0 word at (last frame, pixel 0) marks the number
    of frames when the last frame has no hit (the reader counts frames up to the last
    word; a count of 0 adds nothing)."""
    if not f.size or int(f[-1]) < n_frames - 1:
        f = np.append(f, n_frames - 1)
        p = np.append(p, 0)
        c = np.append(c, 0).astype(c.dtype if c.size else np.uint16)
    return rigaku_words(f, p, c)


def _write_words(path: Path, words: np.ndarray) -> Path:
    with atomic_path(path) as tmp:
        words.tofile(tmp)
    return path


def write_rigaku_bin(path: str | Path, frame: Any, pixel: Any, count: Any, *,
                     n_frames: int | None = None, overwrite: bool = False) -> Path:
    """One Rigaku XSPA module file (512 x 1024 pixels, see the module notes).

    Parameters
    ----------
    path : str or Path
    frame, pixel, count : (n,) arrays
        Hits in frame order; ``pixel`` is ``row * 1024 + col``; counts 0..4095.
    n_frames : int, optional
        Frames of the acquisition (default: the last hit's frame + 1). When the last
        frame has no hit, a count-0 word marks it (the format counts frames up to the
        last word).
    overwrite : bool

    Returns
    -------
    Path
    """
    path = Path(path)
    _refuse_existing([path], overwrite)
    npx = RIGAKU_MODULE_SHAPE[0] * RIGAKU_MODULE_SHAPE[1]
    f, p, c, n = _hits(frame, pixel, count, npx, n_frames)
    return _write_words(path, _module_words(f, p, c, n))


def rigaku_3m_files(base_path: str | Path) -> list[Path]:
    """The six module files ``BASE.000`` ... ``BASE.005`` of ``base_path``."""
    base = Path(base_path)
    return [base.with_name(f"{base.name}.00{k}") for k in range(6)]


def write_rigaku_3m(base_path: str | Path, frame: Any, pixel: Any, count: Any, *,
                    n_frames: int | None = None, overwrite: bool = False) -> list[Path]:
    """The six module files of a Rigaku 3M from hits on its 1676 x 2100 canvas.

    Canvas position ``k`` (row ``k // 2``, column ``k % 2``; rows from
    ``k // 2 * (512 + 70)``, columns from ``k % 2 * (1024 + 52)``) is the module file
    ``BASE.00{(5, 0, 4, 1, 3, 2)[k]}``.

    Parameters
    ----------
    base_path : str or Path
        ``NAME.bin``: the files are ``NAME.bin.000`` ... ``NAME.bin.005``.
    frame, pixel, count : (n,) arrays
        Hits in frame order; ``pixel`` is ``row * 2100 + col`` on the canvas (not in a
        gap).
    n_frames : int, optional
        Frames (default: the last hit's frame + 1). Every module gets the same number
        of frames (a count-0 word where its last frame has no hit).
    overwrite : bool

    Returns
    -------
    list of Path
        The module files ``.000`` ... ``.005``.

    Raises
    ------
    ValueError
        A hit in a gap between modules, or any error of :func:`write_rigaku_bin`.
    FileExistsError
        One of the six exists (nothing is written).
    """
    files = rigaku_3m_files(base_path)
    _refuse_existing(files, overwrite)
    h, w = RIGAKU_3M_SHAPE
    f, p, c, n = _hits(frame, pixel, count, h * w, n_frames)
    mh, mw = RIGAKU_MODULE_SHAPE
    row, col = np.divmod(p, w)
    k_row = row // (mh + RIGAKU_GAP[0])
    k_col = col // (mw + RIGAKU_GAP[1])
    r_in = row - k_row * (mh + RIGAKU_GAP[0])
    c_in = col - k_col * (mw + RIGAKU_GAP[1])
    gap = (r_in >= mh) | (c_in >= mw)
    if gap.any():
        j = int(np.argmax(gap))
        raise ValueError(f"hit {j} at canvas pixel ({int(row[j])}, {int(col[j])}) is in a "
                         "gap between modules")
    k = k_row * 2 + k_col
    local = r_in * mw + c_in
    words = []
    for pos, suffix in enumerate(RIGAKU_3M_PLACEMENT):
        sel = k == pos
        words.append((suffix, _module_words(f[sel], local[sel], c[sel], n)))
    for suffix, wds in sorted(words):
        _write_words(files[suffix], wds)
    return files


# ---------------------------------------------------------------------- ESRF CSR
def _frame_ptr(f: np.ndarray, a: int, b: int) -> np.ndarray:
    """CSR offsets of frames ``[a, b)`` into hits sorted by frame (from 0)."""
    edges = np.searchsorted(f, np.arange(a, b + 1), side="left")
    return (edges - edges[0]).astype(np.uint64)


def esrf_block_paths(prefix: str | Path, n_blocks: int) -> list[Path]:
    """``PREFIX_00000.h5`` ... of a block series (a trailing ``.h5`` of ``prefix`` is
    dropped)."""
    pre = str(prefix)
    if pre.lower().endswith(".h5"):
        pre = pre[:-3]
    return [Path(f"{pre}_{i:05d}.h5") for i in range(n_blocks)]


def write_esrf_csr(path_or_prefix: str | Path, frame: Any, pixel: Any, count: Any, *,
                   n_frames: int | None = None, frames_per_block: int | None = None,
                   shape: tuple[int, int] | None = None, dtype: Any = None,
                   compression: str | None = "lzf",
                   overwrite: bool = False) -> list[Path]:
    """ESRF ID10 sparse (CSR) HDF5: ``entry_0000/measurement/data/{frame_ptr, index,
    intensity}``, one file or a series of blocks.

    Parameters
    ----------
    path_or_prefix : str or Path
        Without ``frames_per_block``: the file. With it: the prefix of the series
        ``PREFIX_00000.h5``, ``PREFIX_00001.h5``, ...
    frame, pixel, count : (n,) arrays
        Hits in frame order, ``pixel`` the flat index ``row * W + col``.
    n_frames : int, optional
        Frames (default: the last hit's frame + 1; trailing empty frames are kept).
    frames_per_block : int, optional
        Frames per block file (the last may hold fewer).
    shape : (rows, cols), optional
        Stored as the data group's ``shape`` attribute (otherwise the reader needs the
        q-map's shape); pixels are checked against it.
    dtype : optional
        dtype of ``intensity`` (default: the counts' own).
    compression : str or None
        HDF5 filter of ``index`` and ``intensity`` (``"lzf"``, ``"gzip"``, None).
    overwrite : bool
        Replace existing files; with a series, blocks of the same prefix numbered after
        the new last block are removed (the reader would take them as part of it).

    Returns
    -------
    list of Path
        The file, or the blocks in order.
    """
    limit = int(shape[0]) * int(shape[1]) if shape is not None else 1 << 62
    f, p, c, n = _hits(frame, pixel, count, limit, n_frames)
    if dtype is not None:
        c = c.astype(dtype)
    if frames_per_block is None:
        paths = [Path(path_or_prefix)]
        spans = [(0, n)]
    else:
        fpb = int(frames_per_block)
        if fpb < 1:
            raise ValueError(f"frames_per_block must be >= 1, got {frames_per_block}")
        spans = [(a, min(n, a + fpb)) for a in range(0, n, fpb)]
        paths = esrf_block_paths(path_or_prefix, len(spans))
    _refuse_existing(paths, overwrite)
    stale: list[Path] = []
    if frames_per_block is not None:
        nxt = esrf_block_paths(path_or_prefix, len(spans) + 1)[-1]
        pat = re.compile(re.escape(nxt.name[: -len("00000.h5")]) + r"(\d{5})\.h5$")
        for q in nxt.parent.glob("*.h5") if nxt.parent.is_dir() else ():
            m = pat.match(q.name)
            if m and int(m.group(1)) >= len(spans):
                stale.append(q)
        if stale and not overwrite:
            raise FileExistsError(f"{stale[0]} exists: it would be read as a block of the "
                                  "new series (use overwrite=True)")
    for path, (a, b) in zip(paths, spans, strict=True):
        ptr = _frame_ptr(f, a, b)
        e0 = int(np.searchsorted(f, a, side="left"))
        e1 = e0 + int(ptr[-1])

        def fill(h: h5py.File, ptr=ptr, e0=e0, e1=e1) -> None:
            g = h.create_group(ESRF_GROUP)
            g.create_dataset("frame_ptr", data=ptr)
            idx = p[e0:e1]
            itype = np.uint32 if not p.size or int(p.max()) < 1 << 32 else np.int64
            _dataset(g, "index", idx.astype(itype), compression)
            _dataset(g, "intensity", c[e0:e1], compression)
            if shape is not None:
                g.attrs["shape"] = np.asarray(shape, dtype=np.int64)

        _write_h5(path, fill)
    for q in stale:
        q.unlink(missing_ok=True)
    return paths


# ---------------------------------------------------------------------- ImageD11
def write_id11_sparse(path: str | Path, frame: Any, pixel: Any, count: Any,
                      shape: tuple[int, int], *, n_frames: int | None = None,
                      group: str = "1.1", dtype: Any = None, store_shape: bool = True,
                      compression: str | None = "lzf", overwrite: bool = False) -> Path:
    """ImageD11 sparse frames: a group with ``nnz``, ``row``, ``col``, ``intensity`` and
    the attributes ``shape0``, ``shape1``.

    Parameters
    ----------
    path : str or Path
    frame, pixel, count : (n,) arrays
        Hits in frame order, ``pixel`` the flat index ``row * W + col``.
    shape : (rows, cols)
        The detector.
    n_frames : int, optional
        Frames (default: the last hit's frame + 1; trailing empty frames are kept).
    group : str
        The scan group (``"/"``: the file root).
    dtype : optional
        dtype of ``intensity`` (default: the counts' own).
    store_shape : bool
        Write ``shape0``/``shape1`` (False: the reader needs the q-map's shape).
    compression, overwrite :
        As :func:`write_esrf_csr`.
    """
    path = Path(path)
    _refuse_existing([path], overwrite)
    h, w = int(shape[0]), int(shape[1])
    f, p, c, n = _hits(frame, pixel, count, h * w, n_frames)
    if dtype is not None:
        c = c.astype(dtype)
    rtype = np.uint16 if max(h, w) <= 1 << 16 else np.uint32

    def fill(hf: h5py.File) -> None:
        g = hf if group in ("", "/") else hf.require_group(group)
        g.create_dataset("nnz", data=np.bincount(f, minlength=n).astype(np.int32))
        _dataset(g, "row", (p // w).astype(rtype), compression)
        _dataset(g, "col", (p % w).astype(rtype), compression)
        _dataset(g, "intensity", c, compression)
        if store_shape:
            g.attrs["shape0"], g.attrs["shape1"] = h, w

    return _write_h5(path, fill)


# ---------------------------------------------------------------------- Timepix
def write_timepix(path: str | Path, x: Any, y: Any, toa_ticks: Any, tick_s: float,
                  shape: tuple[int, int], tot: Any = None, *, group: str = "/",
                  compression: str | None = "lzf", overwrite: bool = False) -> Path:
    """A Timepix event list: datasets ``x`` (column), ``y`` (row), ``toa`` (integer
    ticks, attribute ``tick_s``), optional ``tot``, attribute ``detector_shape``.

    Parameters
    ----------
    path : str or Path
    x, y : (n,) int
        Column and row of each event (one photon each).
    toa_ticks : (n,) int
        Time of arrival in ticks of ``tick_s`` seconds (need not be sorted; the reader
        sorts an unsorted list in memory).
    tick_s : float
        Seconds per tick.
    shape : (rows, cols)
        Stored as ``detector_shape`` (on the group).
    tot : (n,), optional
        Time over threshold (stored; the reader does not use it).
    group : str
        Where the datasets go (``"/"``: the file root).
    compression, overwrite :
        As :func:`write_esrf_csr`.
    """
    path = Path(path)
    _refuse_existing([path], overwrite)
    xs = np.asarray(x, dtype=np.int64).ravel()
    ys = np.asarray(y, dtype=np.int64).ravel()
    t = np.asarray(toa_ticks).ravel()
    h, w = int(shape[0]), int(shape[1])
    if not xs.size == ys.size == t.size:
        raise ValueError(f"x, y and toa differ in length ({xs.size}, {ys.size}, {t.size})")
    if xs.size == 0:
        raise ValueError("an event list needs at least one event")
    if t.dtype.kind not in "iu":
        raise ValueError(f"toa must be integer ticks, got dtype {t.dtype}")
    if t.min() < 0:
        raise ValueError("toa ticks must be >= 0")
    if xs.min() < 0 or xs.max() >= w or ys.min() < 0 or ys.max() >= h:
        raise ValueError(f"events outside the {h} x {w} detector")
    if not tick_s > 0:
        raise ValueError(f"tick_s must be positive, got {tick_s}")
    ctype = np.uint16 if max(h, w) <= 1 << 16 else np.uint32
    tots = None if tot is None else np.asarray(tot).ravel()
    if tots is not None and tots.size != xs.size:
        raise ValueError("tot must have one value per event")

    def fill(hf: h5py.File) -> None:
        g = hf if group in ("", "/") else hf.require_group(group)
        _dataset(g, "x", xs.astype(ctype), compression)
        _dataset(g, "y", ys.astype(ctype), compression)
        _dataset(g, "toa", t.astype(np.uint64), compression)
        g["toa"].attrs["tick_s"] = float(tick_s)
        if tots is not None:
            _dataset(g, "tot", tots, compression)
        g.attrs["detector_shape"] = np.array([h, w], dtype=np.int64)

    return _write_h5(path, fill)


# ---------------------------------------------------------------------- dense frames
#: where the dense writer states the counter's saturation value (the NeXus NXdetector
#: field, beside the frame time the reader takes)
DENSE_SATURATION = "/entry/instrument/detector_1/saturation_value"


def _dense_chunks(f: np.ndarray, p: np.ndarray, c: np.ndarray, n: int, shape: tuple[int, int],
                  dtype: np.dtype, chunk: int):
    """(first frame, (k, H, W) frames) from the hits, ``chunk`` frames at a time."""
    h, w = shape
    edges = np.searchsorted(f, np.arange(0, n + chunk, chunk).clip(max=n), side="left")
    for j, a in enumerate(range(0, n, chunk)):
        b = min(n, a + chunk)
        e0, e1 = edges[j], edges[j + 1]
        block = np.zeros((b - a) * h * w, dtype=dtype)
        np.add.at(block, (f[e0:e1] - a) * (h * w) + p[e0:e1], c[e0:e1].astype(dtype))
        yield a, block.reshape(b - a, h, w)


def write_dense(path: str | Path, frame: Any, pixel: Any, count: Any,
                shape: tuple[int, int], *, n_frames: int | None = None,
                frame_time: float | None = None, saturation: int | None = None,
                dtype: Any = np.uint16, compression: str | None = "lzf",
                chunk: int = 64, overwrite: bool = False) -> Path:
    """Dense frames (frames, rows, cols) from hits: HDF5 ``/entry/data/data`` or ``.npy``.

    Parameters
    ----------
    path : str or Path
        ``.npy``: a NumPy array file (no frame time); otherwise HDF5.
    frame, pixel, count : (n,) arrays
        Hits in frame order, ``pixel = row * W + col``.
    shape : (rows, cols)
    n_frames : int, optional
        Frames (default: the last hit's frame + 1).
    frame_time : float, optional
        Seconds per frame, written to ``/entry/instrument/detector_1/frame_time``.
    saturation : int, optional
        The counter's saturation value (``.../saturation_value``).
    dtype :
        Counts' dtype (a count above its maximum is an error).
    compression : str or None
        HDF5 filter of the frames, chunked one frame at a time.
    chunk : int
        Frames formed at once (memory: ``chunk`` frames).
    overwrite : bool
    """
    path = Path(path)
    _refuse_existing([path], overwrite)
    h, w = int(shape[0]), int(shape[1])
    f, p, c, n = _hits(frame, pixel, count, h * w, n_frames)
    dt = np.dtype(dtype)
    if c.size and dt.kind in "iu" and int(c.max()) > np.iinfo(dt).max:
        raise ValueError(f"a count of {int(c.max())} does not fit {dt}")
    if path.suffix.lower() == ".npy":
        with atomic_path(path) as tmp:
            out = np.lib.format.open_memmap(tmp, mode="w+", dtype=dt, shape=(n, h, w))
            for a, block in _dense_chunks(f, p, c, n, (h, w), dt, chunk):
                out[a:a + block.shape[0]] = block
            out.flush()
            del out
        return path

    def fill(hf: h5py.File) -> None:
        kw = _compression(compression)
        ds = hf.create_dataset("/entry/data/data", shape=(n, h, w), dtype=dt,
                               chunks=(1, h, w), **kw)
        for a, block in _dense_chunks(f, p, c, n, (h, w), dt, chunk):
            ds[a:a + block.shape[0]] = block
        if frame_time is not None:
            hf[FRAME_TIME] = float(frame_time)
        if saturation is not None:
            hf[DENSE_SATURATION] = int(saturation)

    return _write_h5(path, fill)
