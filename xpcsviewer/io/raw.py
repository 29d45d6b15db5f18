"""Chunked reader for raw detector frames: HDF5 ``/entry/data/data`` or ``.npy``.

Frames are (frames, rows, cols). The selection is ``begin:end:stride`` on the raw
frames, then groups of ``avg`` consecutive selected frames are averaged (a trailing
incomplete group is dropped), giving N processed frames. Files are opened read-only;
``.npy`` files are read with plain file reads (the header through a memory map), HDF5
files by hyperslabs, so only one chunk is in memory at a time; reading a mapped .npy
would leave every touched page of the file in the process's resident memory. Only
numpy and h5py are imported.

:func:`open_raw_source` opens any raw source by its content: dense frames here, or the
photon-sparse and event-mode layouts (Rigaku ``.bin``, ESRF CSR, ImageD11, Timepix; see
docs/sparse-formats.md); :func:`raw_layout` names the layout cheaply.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.io._h5 import MAX_PIXELS, open_regular
from xpcsviewer.io.errors import XpcsFileError

__all__ = [
    "MIN_FRAMES",
    "RAW_DATASET",
    "RAW_LAYOUTS",
    "RawFrames",
    "file_kind",
    "open_raw",
    "open_raw_source",
    "raw_layout",
]

RAW_DATASET = "/entry/data/data"
#: Fewest processed frames a correlation needs (one delay), multi-tau and two-time alike.
MIN_FRAMES = 2

_NPY_MAGIC = b"\x93NUMPY"
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def file_kind(path: str | Path) -> str:
    """``"npy"``, ``"hdf5"`` or ``"other"``, from the file's first bytes (its name
    may say otherwise: an HDF5 file named ``.npy`` is read as HDF5)."""
    try:
        with open_regular(path) as fh:
            head = fh.read(8)
            if head.startswith(_NPY_MAGIC):
                return "npy"
            for off in (0, 512, 1024, 2048, 4096):
                fh.seek(off)
                if fh.read(8) == _HDF5_SIGNATURE:
                    return "hdf5"
    except OSError:
        pass
    return "other"


class RawFrames:
    """A raw-frame file with a frame selection.

    Parameters
    ----------
    path : str or Path
        ``.npy`` or an HDF5 file with ``/entry/data/data`` (frames, rows, cols).
    begin, end : int
        Raw frame range ``[begin, end)``; ``end = -1`` (or None) means the last frame.
    stride : int
        Take every ``stride``-th raw frame.
    avg : int
        Average groups of ``avg`` selected frames.
    dataset : str
        HDF5 dataset path.

    Raises
    ------
    XpcsFileError
        Missing or unreadable file, missing dataset, wrong rank or dtype, or an empty
        frame selection.

    Besides the frames, it answers what ``info`` asks of any raw source (as the sparse
    readers of :mod:`xpcsviewer.io.sparse` do): ``sparse`` (False), ``layout``
    (``"hdf5"`` or ``"npy"``), ``layout_text``, ``files``, ``frame_time`` (None: the
    file's own is not read here), ``n_events`` (None) and :meth:`summary`.
    """

    sparse = False
    frame_time: float | None = None
    n_events: int | None = None

    def __init__(
        self,
        path: str | Path,
        begin: int = 0,
        end: int | None = -1,
        stride: int = 1,
        avg: int = 1,
        dataset: str = RAW_DATASET,
    ) -> None:
        self.path = Path(path)
        self.dataset_path = dataset
        self._h5 = None
        if not self.path.is_file():
            from xpcsviewer.io._h5 import _missing_reason

            raise XpcsFileError(self.path, "is a folder, not a file" if self.path.is_dir()
                                else _missing_reason(self.path))
        if stride < 1 or avg < 1:
            raise ValueError(f"stride and avg must be >= 1, got stride={stride}, avg={avg}")
        if int(begin) < 0:
            raise ValueError(f"--begin-frame must be >= 0 (got {begin}); frames count "
                             "from the first")
        if end is not None and int(end) < -1:
            raise ValueError(f"--end-frame must be >= 0, or -1 for the last frame (got {end})")
        kind = file_kind(self.path)  # the content decides: HDF5 named .npy is HDF5
        self.files = (self.path,)
        self.layout = "npy" if kind == "npy" else "hdf5"
        self.layout_text = ("dense frames, NumPy .npy" if kind == "npy"
                            else f"dense frames, HDF5 {dataset}")
        if kind == "npy":
            self.dataset_path = None
            try:
                self._data = np.load(self.path, mmap_mode="r", allow_pickle=False)
            except Exception as exc:  # any parse error is bad input
                raise XpcsFileError(self.path, f"not a readable .npy array ({exc})") from None
        elif kind == "other" and self.path.suffix.lower() == ".npy":
            # numpy's own message here is advice to unpickle the file
            raise XpcsFileError(self.path, "not a .npy array (no NumPy header)",
                                expected="raw frames as .npy or HDF5 /entry/data/data")
        else:
            from xpcsviewer.io._h5 import check_declared, local_dataset, open_h5_file

            self._h5 = open_h5_file(self.path)
            try:
                if self._h5.get(dataset, getlink=True) is None:
                    raise XpcsFileError(
                        self.path, "raw frames not found", dataset,
                        "a (frames, rows, cols) dataset",
                    )
                self._data = local_dataset(self._h5, dataset, "a (frames, rows, cols) dataset")
                # A file can declare 1e9 frames and store none: check the chunks
                # actually written before anything is sized by the frame count.
                check_declared(
                    self._data, expected="(frames, rows, cols) raw frames",
                    max_elements=sys.maxsize,
                )
            except XpcsFileError:
                self.close()
                raise
        shape = tuple(self._data.shape)
        dt = np.dtype(self._data.dtype)
        if len(shape) != 3:
            self.close()
            raise XpcsFileError(
                self.path, f"raw frames have shape {shape}", self.dataset_path,
                "(frames, rows, cols)",
            )
        if not (np.issubdtype(dt, np.integer) or np.issubdtype(dt, np.floating)) or dt == np.bool_:
            self.close()
            raise XpcsFileError(
                self.path, f"raw frames have dtype {dt}", self.dataset_path,
                "integer or float counts",
            )
        if shape[1] * shape[2] > MAX_PIXELS:
            self.close()
            raise XpcsFileError(
                self.path, f"raw frames of {shape[1]} x {shape[2]} pixels", self.dataset_path,
                f"a detector of at most {MAX_PIXELS} pixels",
            )
        self.raw_frames = int(shape[0])
        self.frame_shape = (int(shape[1]), int(shape[2]))
        self.dtype = dt
        self.count_dtype = dt
        from xpcsviewer.io.sparse import select_frames

        self.begin, self.end, self.stride, self.avg, self.n_frames = select_frames(
            self, begin, end, stride, avg)

    # --- context management -------------------------------------------------
    def close(self) -> None:
        """Release the file handle (idempotent)."""
        if self._h5 is not None:
            self._h5.close()
            self._h5 = None

    def __enter__(self) -> RawFrames:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass

    # --- reading ------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int, int]:
        """(N, rows, cols) of the processed frames."""
        return (self.n_frames, *self.frame_shape)

    @property
    def out_dtype(self) -> np.dtype:
        """dtype of yielded frames: the raw dtype, or float64 when averaging."""
        return self.dtype if self.avg == 1 else np.dtype(np.float64)

    def _read_npy(self, a: int, n_sel: int, out: np.ndarray | None) -> np.ndarray | None:
        """Frames a, a+stride, ... of a C-ordered .npy by file reads, or None (use the map)."""
        mm = self._data
        if not isinstance(mm, np.memmap) or not mm.flags.c_contiguous:
            return None
        shape = (n_sel, *self.frame_shape)
        if out is None or out.shape != shape or out.dtype != self.dtype:
            out = np.empty(shape, dtype=self.dtype)
        frame_bytes = out[0].nbytes
        with open(self.path, "rb", buffering=0) as f:
            if self.stride == 1:
                f.seek(mm.offset + a * frame_bytes)
                got = f.readinto(memoryview(out).cast("B"))
                if got != out.nbytes:
                    raise OSError(f"short read ({got} of {out.nbytes} bytes)")
            else:
                for i in range(n_sel):
                    f.seek(mm.offset + (a + i * self.stride) * frame_bytes)
                    if f.readinto(memoryview(out[i]).cast("B")) != frame_bytes:
                        raise OSError("short read")
        return out

    def _read_raw(self, first_sel: int, n_sel: int, out: np.ndarray | None = None) -> np.ndarray:
        a = self.begin + first_sel * self.stride
        b = a + (n_sel - 1) * self.stride + 1
        try:
            if self.dataset_path is None:
                got = self._read_npy(a, n_sel, out)
                if got is not None:
                    return got
            return np.asarray(self._data[a:b : self.stride])
        except Exception as exc:  # h5py raises many kinds on corrupt data
            text = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            what = (
                "compressed with an HDF5 filter that is not available"
                if any(w in text.lower() for w in ("plugin", "can't open directory",
                                                   "not registered", "required filter"))
                else "damaged data"
            )
            raise XpcsFileError(
                self.path, f"{what}: could not read frames {a}..{b - 1} ({text})",
                self.dataset_path,
            ) from None

    def read(self, start: int, stop: int, out: np.ndarray | None = None) -> np.ndarray:
        """Processed frames ``[start, stop)`` as (n, rows, cols).

        ``out``: a buffer from an earlier call that a .npy read may fill again instead
        of allocating (fresh pages cost more than the read on our machines).
        """
        start = max(0, int(start))
        stop = min(self.n_frames, int(stop))
        if stop <= start:
            return np.empty((0, *self.frame_shape), dtype=self.out_dtype)
        raw = self._read_raw(start * self.avg, (stop - start) * self.avg, out)
        if self.avg == 1:
            return raw
        n = stop - start
        return raw.reshape(n, self.avg, *self.frame_shape).mean(axis=1, dtype=np.float64)

    def iter_chunks(self, chunk_size: int = 128, reuse: bool = False) -> Iterator[np.ndarray]:
        """Yield consecutive (n <= chunk_size, rows, cols) processed frames.

        ``reuse=True``: a chunk may be overwritten by the next one (a consumer that
        is done with each chunk before asking for the next, as the correlators are).
        """
        if chunk_size < 1:
            raise ValueError("chunk_size must be >= 1")
        buf = None
        for a in range(0, self.n_frames, chunk_size):
            chunk = self.read(a, a + chunk_size, buf if reuse else None)
            buf = chunk if self.avg == 1 else None
            yield chunk

    def _read_plain(self, a: int, b: int) -> np.ndarray:
        """Raw frames ``[a, b)`` (no selection), by file reads for a C-ordered .npy."""
        mm = self._data
        if self.dataset_path is None and isinstance(mm, np.memmap) and mm.flags.c_contiguous:
            out = np.empty((b - a, *self.frame_shape), dtype=self.dtype)
            with open(self.path, "rb", buffering=0) as f:
                f.seek(mm.offset + a * out[0].nbytes)
                if f.readinto(memoryview(out).cast("B")) != out.nbytes:
                    raise XpcsFileError(self.path, f"short read of frames {a}..{b - 1}")
            return out
        try:
            return np.asarray(self._data[a:b])
        except Exception as exc:  # h5py raises many kinds on corrupt data
            text = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            raise XpcsFileError(self.path, f"could not read frames {a}..{b - 1} ({text})",
                                self.dataset_path) from None

    def summary(self, count_photons: bool = True) -> dict[str, Any]:
        """What ``info`` says of the file (the keys of ``SparseSource.summary``).

        ``events`` is None (dense frames store no hits); ``occupancy`` (the fraction of
        nonzero pixel values) and ``photons_per_frame`` come from one pass over all raw
        frames in blocks of about 32 MiB, made only when ``count_photons``.
        """
        h, w = self.frame_shape
        out: dict[str, Any] = {
            "path": str(self.path),
            "kind": "raw",
            "layout": self.layout,
            "layout_text": self.layout_text,
            "sparse": False,
            "detector_shape": [int(h), int(w)],
            "n_frames": int(self.raw_frames),
            "frame_time": self.frame_time,
            "events": None,
            "occupancy": None,
            "count_dtype": str(self.dtype),
            "files": [str(p) for p in self.files],
        }
        if count_photons:
            frame_bytes = max(1, h * w * self.dtype.itemsize)
            step = max(1, (32 << 20) // frame_bytes)
            total, nonzero = 0.0, 0
            for a in range(0, self.raw_frames, step):
                block = self._read_plain(a, min(self.raw_frames, a + step))
                total += float(np.sum(block, dtype=np.float64))
                nonzero += int(np.count_nonzero(block))
            out["occupancy"] = nonzero / max(1.0, float(self.raw_frames) * h * w)
            out["photons"] = total
            out["photons_per_frame"] = total / max(self.raw_frames, 1)
        return out

    def describe(self) -> dict[str, Any]:
        """Selection summary for the result file's config group."""
        return {
            "raw": str(self.path),
            "begin_frame": self.begin,
            "end_frame": self.end,
            "stride_frame": self.stride,
            "avg_frame": self.avg,
            "raw_frames": self.raw_frames,
            "n_frames": self.n_frames,
        }


def open_raw(path: str | Path, **kwargs: Any) -> RawFrames:
    """Shortcut for :class:`RawFrames` (use as a context manager)."""
    return RawFrames(path, **kwargs)


# ---------------------------------------------------------------------- any raw source
#: the layouts :func:`open_raw_source` looks for (the words of its "unknown" error)
RAW_LAYOUTS = (
    "dense frames (.npy, or HDF5 /entry/data/data)",
    "APS Rigaku XSPA .bin (one module, or the six .000-.005 of a 3M)",
    "ESRF ID10 sparse HDF5 (entry_0000/measurement/data/frame_ptr, index, intensity; "
    "a file or a folder of blocks)",
    "ImageD11 sparse HDF5 (a group with nnz, row, col, intensity)",
    "Timepix event list HDF5 (a group with x, y, toa)",
)


def _hdf5_layout(f: Any, dataset: str) -> str | None:
    import h5py

    from xpcsviewer.io._sparse_csr import ESRF_GROUP, ID11_NAMES
    from xpcsviewer.io._sparse_timepix import TIMEPIX_NAMES
    from xpcsviewer.io._sparse_util import find_groups

    def is_dataset(name: str) -> bool:
        try:
            return isinstance(f.get(name), h5py.Dataset)
        except (KeyError, RuntimeError, OSError, ValueError):
            return False

    if is_dataset(dataset):
        return "hdf5"
    if is_dataset(f"{ESRF_GROUP}/frame_ptr"):
        return "esrf-csr"
    if find_groups(f, ID11_NAMES):
        return "id11-sparse"
    if find_groups(f, TIMEPIX_NAMES):
        return "timepix"
    return None


def _rigaku_layout(p: Path) -> str | None:
    from xpcsviewer.io._sparse_rigaku import looks_like_rigaku, rigaku_module_files

    if not looks_like_rigaku(p):
        return None
    return "rigaku-3m" if rigaku_module_files(p) is not None and re.search(
        r"\.00[0-5]$", p.name) else "rigaku"


def _rigaku_stem(p: Path) -> bool:
    """``p`` is the common stem of Rigaku 3M module files (``NAME.bin`` for
    ``NAME.bin.000`` ...), which does not exist itself."""
    return not p.exists() and p.with_name(p.name + ".000").is_file()


def raw_layout(path: str | Path, dataset: str = RAW_DATASET) -> str | None:
    """The raw layout of ``path`` from its content, cheaply; None when it is not a raw
    source (a result file, a q-map, anything else) or cannot be read.

    Names: ``"npy"``, ``"hdf5"`` (dense frames), ``"rigaku"``, ``"rigaku-3m"``,
    ``"esrf-csr"``, ``"id11-sparse"``, ``"timepix"``.
    """
    p = Path(path)
    try:
        if p.is_dir():
            from xpcsviewer.io._sparse_csr import esrf_series_in_folder

            try:
                return "esrf-csr" if esrf_series_in_folder(p) is not None else None
            except XpcsFileError:  # several series: a raw folder that fails to open
                return "esrf-csr"
        if not p.is_file():
            return "rigaku-3m" if _rigaku_stem(p) else None
        kind = file_kind(p)
        if kind == "npy":
            return "npy"
        if kind == "hdf5":
            import h5py

            from xpcsviewer.io._h5links import may_exist, pointers_ok

            try:
                with h5py.File(p, "r", locking=False) as f:
                    if not pointers_ok(f):  # looking inside could hang or read elsewhere
                        return "hdf5" if may_exist(f, dataset) else None
                    return _hdf5_layout(f, dataset)
            except (OSError, RuntimeError, ValueError, KeyError):
                return None
        return _rigaku_layout(p)
    except OSError:
        return None


def open_raw_source(
    path: str | Path,
    *,
    shape: tuple[int, int] | None = None,
    bin_time: float | None = None,
    begin: int = 0,
    end: int | None = -1,
    stride: int = 1,
    avg: int = 1,
    dataset: str = RAW_DATASET,
) -> Any:
    """The reader for the raw source at ``path``, chosen by its content (never its name).

    Parameters
    ----------
    path : str or Path
        A file, one module file of a Rigaku 3M (or their stem ``NAME.bin``), one block
        (or the folder) of an ESRF sparse series.
    shape : (int, int), optional
        Detector (rows, cols), from the q-map, for layouts that store none.
    bin_time : float, optional
        Seconds per frame of an event list (Timepix); None: its time-tag view. Only
        event lists take it.
    begin, end, stride, avg : int
        Frame selection, as :class:`RawFrames`.
    dataset : str
        Dense frames' HDF5 dataset.

    Returns
    -------
    RawFrames or SparseSource
        :class:`RawFrames` for dense frames; ``RigakuBin``, ``Rigaku3M``, ``EsrfCsr``,
        ``Id11Sparse`` or ``TimepixEvents`` for the sparse layouts.

    Raises
    ------
    XpcsFileError
        Missing or unreadable, a layout's own errors, or none of :data:`RAW_LAYOUTS`.
    ValueError
        ``bin_time`` for a source that is not an event list; a bad selection.
    """
    p = Path(path)
    sel = {"begin": begin, "end": end, "stride": stride, "avg": avg}
    unknown = XpcsFileError(p, "not a raw source of a known layout", None,
                            "one of: " + "; ".join(RAW_LAYOUTS))
    if p.is_dir():
        from xpcsviewer.io._sparse_csr import esrf_series_in_folder

        if esrf_series_in_folder(p) is None:
            raise unknown
        layout = "esrf-csr"
    elif _rigaku_stem(p):
        layout = "rigaku-3m"
    elif not p.is_file():
        from xpcsviewer.io._h5 import _missing_reason

        raise XpcsFileError(p, _missing_reason(p))
    else:
        kind = file_kind(p)
        if kind == "npy":
            layout = "npy"
        elif kind == "hdf5":
            from xpcsviewer.io._h5 import open_h5_file

            with open_h5_file(p) as f:
                layout = _hdf5_layout(f, dataset)
            if layout is None:
                raise unknown
        else:
            try:
                size = p.stat().st_size
            except OSError as exc:
                raise XpcsFileError(p, f"cannot stat ({exc.strerror})") from None
            if size == 0:
                raise XpcsFileError(p, "empty file (0 bytes)", None, "raw frames or hits")
            layout = _rigaku_layout(p)
            if layout is None:
                if p.suffix.lower() == ".npy":
                    layout = "npy"  # RawFrames says what is wrong with it
                elif p.suffix.lower() in (".h5", ".hdf5", ".hdf", ".nxs"):
                    layout = "hdf5"  # named HDF5 but is none: the HDF5 opener says so
                else:
                    raise unknown
    if bin_time is not None and layout != "timepix":
        raise ValueError(f"--bin-time applies to event lists (Timepix) only; {p} holds "
                         f"{layout} frames")
    if layout in ("npy", "hdf5"):
        return RawFrames(p, dataset=dataset, **sel)
    if layout == "rigaku":
        from xpcsviewer.io._sparse_rigaku import RigakuBin

        return RigakuBin(p, shape=shape, **sel)
    if layout == "rigaku-3m":
        from xpcsviewer.io._sparse_rigaku import Rigaku3M

        return Rigaku3M(p, shape=shape, **sel)
    if layout == "esrf-csr":
        from xpcsviewer.io._sparse_csr import EsrfCsr

        return EsrfCsr(p, shape=shape, **sel)
    if layout == "id11-sparse":
        from xpcsviewer.io._sparse_csr import Id11Sparse

        return Id11Sparse(p, shape=shape, **sel)
    from xpcsviewer.io._sparse_timepix import TimepixEvents

    return TimepixEvents(p, shape=shape, bin_time=bin_time, **sel)
