"""Chunked reader for raw detector frames: HDF5 ``/entry/data/data`` or ``.npy``.

Frames are (frames, rows, cols). The selection is ``begin:end:stride`` on the raw
frames, then groups of ``avg`` consecutive selected frames are averaged (a trailing
incomplete group is dropped), giving N processed frames. Files are opened read-only;
``.npy`` files are read with plain file reads (the header through a memory map), HDF5
files by hyperslabs, so only one chunk is in memory at a time; reading a mapped .npy
would leave every touched page of the file in the process's resident memory. Only
numpy and h5py are imported.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.io._h5 import MAX_PIXELS
from xpcsviewer.io.errors import XpcsFileError

__all__ = ["MIN_FRAMES", "RAW_DATASET", "RawFrames", "file_kind", "open_raw"]

RAW_DATASET = "/entry/data/data"
#: Fewest processed frames a correlation needs (one delay), multi-tau and two-time alike.
MIN_FRAMES = 2

_NPY_MAGIC = b"\x93NUMPY"
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def file_kind(path: str | Path) -> str:
    """``"npy"``, ``"hdf5"`` or ``"other"``, from the file's first bytes (its name
    may say otherwise: an HDF5 file named ``.npy`` is read as HDF5)."""
    try:
        with open(path, "rb") as fh:
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
    """

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
            from xpcsviewer.io._h5 import _dataset, check_declared, open_h5_file

            self._h5 = open_h5_file(self.path)
            try:
                if self._h5.get(dataset, getlink=True) is None:
                    raise XpcsFileError(
                        self.path, "raw frames not found", dataset,
                        "a (frames, rows, cols) dataset",
                    )
                self._data = _dataset(self._h5, dataset, "a (frames, rows, cols) dataset")
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
        b = int(begin)
        e = self.raw_frames if end is None or int(end) < 0 else min(int(end), self.raw_frames)
        self.begin, self.end, self.stride, self.avg = b, e, int(stride), int(avg)
        n_sel = len(range(b, e, self.stride))
        self.n_frames = n_sel // self.avg
        if self.n_frames < 1:
            self.close()
            raise XpcsFileError(
                self.path,
                f"frame selection begin={begin} end={end} stride={stride} avg={avg} "
                f"leaves no frame of {self.raw_frames}",
                self.dataset_path,
                "a non-empty frame range",
            )

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
