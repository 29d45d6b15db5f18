"""Chunked reader for raw detector frames: HDF5 ``/entry/data/data`` or ``.npy``.

Frames are (frames, rows, cols). The selection is ``begin:end:stride`` on the raw
frames, then groups of ``avg`` consecutive selected frames are averaged (a trailing
incomplete group is dropped), giving N processed frames. Files are opened read-only;
``.npy`` files are read with plain file reads (the header through a memory map), HDF5
files by hyperslabs, so only one chunk is in memory at a time; reading a mapped .npy
would leave every touched page of the file in the process's resident memory. Only
numpy and h5py are imported.

The dense layout's names are here once: the frame dataset, the frame counter a writer
may keep, the frame and count times, and the Eiger master file's ``nimages`` x
``ntrigger`` (read by the live readers, :mod:`xpcsviewer.io.raw.live_dense` and
:mod:`xpcsviewer.io.raw.live_blocks`). :func:`~xpcsviewer.io.raw.source.open_raw_source`
opens any raw source by its content (these frames or a photon-sparse layout).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.io._h5 import MAX_PIXELS, open_regular
from xpcsviewer.io._h5open import _HDF5_SIGNATURE
from xpcsviewer.io.errors import XpcsFileError

__all__ = [
    "COUNTER_ATTR",
    "COUNTER_DATASET",
    "COUNT_TIME",
    "EIGER_FRAME_TIME",
    "EIGER_NIMAGES",
    "EIGER_NTRIGGER",
    "FRAME_TIME",
    "MIN_FRAMES",
    "RAW_DATASET",
    "RawFrames",
    "file_kind",
    "open_raw",
]

RAW_DATASET = "/entry/data/data"
#: a writer's count of the frames written: an attribute of the frame dataset, or a dataset
COUNTER_ATTR = "frames_written"
COUNTER_DATASET = "/entry/data/frames_written"
FRAME_TIME = "/entry/instrument/detector_1/frame_time"
COUNT_TIME = "/entry/instrument/detector_1/count_time"
#: an Eiger master file beside its data files: frame time, frames = nimages x ntrigger
EIGER_FRAME_TIME = "/entry/instrument/detector/frame_time"
EIGER_NIMAGES = "/entry/instrument/detector/detectorSpecific/nimages"
EIGER_NTRIGGER = "/entry/instrument/detector/detectorSpecific/ntrigger"
#: Fewest processed frames a correlation needs (one delay), multi-tau and two-time alike.
MIN_FRAMES = 2

_NPY_MAGIC = b"\x93NUMPY"


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
    readers of :mod:`xpcsviewer.io.raw.sparse` do): ``sparse`` (False), ``layout``
    (``"hdf5"`` or ``"npy"``), ``layout_text``, ``files``, ``frame_time`` (None: the
    file's own is not read here), ``n_events`` (None) and :meth:`summary`.
    """

    sparse = False
    frame_time: float | None = None
    n_events: int | None = None
    #: the raw frame of each selected frame when frames are excluded (:meth:`exclude_frames`)
    kept: np.ndarray | None = None
    excluded: tuple[tuple[int, int], ...] = ()

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
        from xpcsviewer.io.raw.sparse import select_frames

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

    def exclude_frames(self, blocks: Any) -> None:
        """Drop raw frame blocks from the selection: they are never read (see
        :func:`~xpcsviewer.io.raw.sparse.exclude_frames`)."""
        from xpcsviewer.io.raw.sparse import exclude_frames

        exclude_frames(self, blocks)

    def _read_raw(self, first_sel: int, n_sel: int, out: np.ndarray | None = None) -> np.ndarray:
        if self.kept is None:
            return self._read_run(self.begin + first_sel * self.stride, n_sel, out)
        # excluded frames: read the runs of kept frames between them, one at a time
        idx = self.kept[first_sel:first_sel + n_sel]
        cuts = np.flatnonzero(np.diff(idx) != self.stride) + 1
        if not cuts.size:
            return self._read_run(int(idx[0]), n_sel, out)
        shape = (n_sel, *self.frame_shape)
        if out is None or out.shape != shape or out.dtype != self.dtype:
            out = np.empty(shape, dtype=self.dtype)
        for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), n_sel], strict=True):
            out[lo:hi] = self._read_run(int(idx[lo]), hi - lo, None)
        return out

    def _read_run(self, a: int, n_sel: int, out: np.ndarray | None = None) -> np.ndarray:
        """Raw frames ``a, a + stride, ...`` (``n_sel`` of them)."""
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

    def read_box(self, start: int, stop: int, rows: slice, cols: slice) -> np.ndarray:
        """Processed frames ``[start, stop)`` cut to ``[rows, cols]``: only that window
        is read (an HDF5 hyperslab, the touched pages of a .npy), averaged as
        :meth:`read` averages (so each pixel's values equal ``read``'s)."""
        start = max(0, int(start))
        stop = min(self.n_frames, int(stop))
        h = len(range(*rows.indices(self.frame_shape[0])))
        w = len(range(*cols.indices(self.frame_shape[1])))
        if stop <= start:
            return np.empty((0, h, w), dtype=self.out_dtype)
        n_sel = (stop - start) * self.avg
        a = self.begin + start * self.avg * self.stride
        b = a + (n_sel - 1) * self.stride + 1
        try:
            raw = np.asarray(self._data[a:b:self.stride, rows, cols])
        except Exception as exc:  # h5py raises many kinds on corrupt data
            text = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            raise XpcsFileError(self.path, f"could not read frames {a}..{b - 1} ({text})",
                                self.dataset_path) from None
        if self.avg == 1:
            return raw
        return raw.reshape(stop - start, self.avg, h, w).mean(axis=1, dtype=np.float64)

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
        from xpcsviewer.io.raw.sparse import excluded_config

        return {
            "raw": str(self.path),
            "begin_frame": self.begin,
            "end_frame": self.end,
            "stride_frame": self.stride,
            "avg_frame": self.avg,
            "raw_frames": self.raw_frames,
            "n_frames": self.n_frames,
            **excluded_config(self),
        }


def open_raw(path: str | Path, **kwargs: Any) -> RawFrames:
    """Shortcut for :class:`RawFrames` (use as a context manager)."""
    return RawFrames(path, **kwargs)
