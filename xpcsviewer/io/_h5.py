"""Low-level HDF5 reading with checks: open, look up, check the declared size, read.

Every reader goes through :func:`open_h5` and :func:`read_array`:

* files are opened read-only **without** the HDF5 file lock (``locking=False``):
  our reads must never lock out a correlator that appends to the file;
* a file another program is writing (its superblock's consistency flags are
  set and it changes while watched) raises
  :class:`~xpcsviewer.io.errors.FileBeingWrittenError` ("retry") instead of
  being read half-written; a file whose writer was killed is read with a note,
  a truncated one is damaged (its superblock states the full size);
* a dataset's *declared* shape is checked against what the layout allows
  before anything is read (a 400 KB file can declare a 30000 x 30000 array),
  and so is the data actually stored (chunks never written read back as zeros);
* large datasets are read in bounded row blocks straight into the output array;
* damaged chunks, missing compression filters and dangling links name the dataset.
"""

from __future__ import annotations

import contextlib
import errno
import io
import math
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from xpcsviewer.io.errors import FileBeingWrittenError, XpcsFileError

__all__ = [
    "MAX_DELAYS",
    "MAX_ELEMENTS",
    "MAX_PIXELS",
    "NOT_CLOSED_NOTE",
    "RECENT_S",
    "Superblock",
    "check_declared",
    "not_closed_note",
    "open_h5",
    "open_h5_file",
    "read_array",
    "read_superblock",
    "writing_window_s",
]

#: Largest detector accepted (pixels): 4x the biggest photon-counting detectors
#: in use (Eiger2 16M, 4148 x 4362); a declared mask beyond this is not a detector.
MAX_PIXELS = 1 << 26
#: Longest delay list: multi-tau lists grow with log2(frames) (about 200 for 1e9
#: frames); a linear list of every delay of a long run still fits.
MAX_DELAYS = 1 << 20
#: Any one dataset read whole (elements): 1 GiB of float64.
MAX_ELEMENTS = 1 << 27
#: Rows per read are chosen so that one read moves at most this many bytes.
READ_BLOCK_BYTES = 32 << 20
#: Only a file modified this recently is watched for changes (a writer at work);
#: ``XPCSVIEWER_WRITING_WINDOW_S`` overrides it (0: never watch).
RECENT_S = 60.0
#: How long a recent file is watched for a change of size or modification time.
WATCH_S = 0.15

_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_UNDEFINED = (1 << 64) - 1
_WRITE, _SWMR_WRITE = 0b001, 0b100


# ----------------------------------------------------------------------- opening
@dataclass(frozen=True)
class Superblock:
    """What an HDF5 superblock says about the file (see :func:`read_superblock`)."""

    offset: int  #: where the signature sits (0, 512, 1024, ...)
    version: int
    flags: int  #: file consistency flags: bit 0 open for write, bit 2 SWMR write
    eof: int | None  #: the end of file it states (absolute), None if undefined
    size: int  #: the file's size on disk

    @property
    def open_for_write(self) -> bool:
        """A writer opened the file and has not closed it (or was killed)."""
        return bool(self.flags & (_WRITE | _SWMR_WRITE))

    @property
    def swmr(self) -> bool:
        """Opened by a single-writer/multiple-reader writer."""
        return bool(self.flags & _SWMR_WRITE)

    @property
    def truncated(self) -> bool:
        """The file is shorter than its superblock says."""
        return self.eof is not None and self.size < self.eof


def read_superblock(path: str | os.PathLike) -> Superblock | None:
    """Parse the HDF5 superblock (versions 0-3), or None when there is none.

    The consistency flags are set by HDF5 (1.10 and later) while a writer holds
    the file and cleared on a clean close; a killed writer leaves them set. The
    end-of-file address tells a truncated file from a complete one.
    """
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            for off in (0, 512, 1024, 2048, 4096, 8192):
                fh.seek(off)
                head = fh.read(96)
                if head[:8] != _HDF5_SIGNATURE:
                    continue
                if len(head) < 16:
                    return Superblock(off, -1, 0, None, size)
                version = head[8]
                if version >= 2:
                    o, flags, at = head[9], head[11], 12
                else:
                    o = head[13]
                    flags = int.from_bytes(head[20:24], "little")
                    at = 24 if version == 0 else 28
                if o not in (2, 4, 8) or len(head) < at + 3 * o:
                    return Superblock(off, version, flags, None, size)
                base = int.from_bytes(head[at:at + o], "little")
                eof = int.from_bytes(head[at + 2 * o:at + 3 * o], "little")
                undefined = (1 << (8 * o)) - 1
                stated = None if eof == undefined or base == undefined else base + eof
                return Superblock(off, version, flags, stated, size)
    except OSError:
        pass
    return None


def writing_window_s() -> float:
    """Seconds after its last change during which a file is watched for a writer."""
    try:
        return max(0.0, float(os.environ.get("XPCSVIEWER_WRITING_WINDOW_S", RECENT_S)))
    except ValueError:
        return RECENT_S


def _age_s(path: Path) -> float:
    """Seconds since the last change; negative for a modification time in the future."""
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return math.inf


def _recent(path: Path) -> bool:
    # A future modification time (a clock off) says nothing about a writer.
    return 0.0 <= _age_s(path) < writing_window_s()


def _changing(path: Path) -> bool:
    """The file grows or is modified while we watch it (only recent files are
    watched; a file untouched for the writing window has no writer at work)."""
    if not _recent(path):
        return False
    try:
        a = path.stat()
        time.sleep(WATCH_S)
        b = path.stat()
    except OSError:
        return False
    return (a.st_size, a.st_mtime_ns) != (b.st_size, b.st_mtime_ns)


def _being_written(
    path: Path, what: str, dataset: str | None = None
) -> FileBeingWrittenError:
    return FileBeingWrittenError(
        path,
        f"is being written by another program ({what}); retry when it is complete",
        dataset=dataset,
    )


def _truncated(p: Path, sb: Superblock) -> XpcsFileError:
    return XpcsFileError(
        p, f"damaged: truncated ({sb.size} of {sb.eof} bytes)",
        expected="a complete HDF5 file")


def _missing_reason(p: Path) -> str:
    """Why a path that does not exist as a file cannot be opened, in words."""
    if p.is_symlink():
        try:
            os.stat(p)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return "symbolic link loop (the link points back to itself)"
            target = os.readlink(p)
            return f"broken symbolic link (to {target}, which does not exist)"
    try:
        os.stat(p)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symbolic link loop in its path"
        if exc.errno == errno.ENOTDIR:
            return "not found (a part of its path is a file, not a folder)"
        if exc.errno in (errno.EACCES, errno.EPERM):
            return "permission denied (cannot reach it)"
    return "file not found"


def _open_error(p: Path, exc: OSError, sb: Superblock | None) -> XpcsFileError:
    text = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
    low = text.lower()
    if exc.errno == errno.EACCES or "permission denied" in low:
        return XpcsFileError(p, "permission denied (cannot open for reading)")
    if sb is None:
        try:
            with open(p, "rb") as fh:
                fh.read(1)
        except PermissionError:
            return XpcsFileError(p, "permission denied (cannot open for reading)")
        except OSError:
            pass
        return XpcsFileError(
            p, f"not an HDF5 file ({text})", expected="an HDF5 result file"
        )
    if _changing(p):
        return _being_written(p, f"it grew or changed while being read ({text})")
    if sb.truncated:
        return _truncated(p, sb)
    return XpcsFileError(
        p, f"truncated or damaged HDF5 file ({text})", expected="an HDF5 result file"
    )


class _FlagsCleared(io.RawIOBase):
    """The file read-only, its superblock shown with the consistency flags cleared
    (checksum updated): HDF5 refuses to open a file whose flags a killed writer
    left set, although every byte of it may be there."""

    def __init__(self, path: Path, sb: Superblock) -> None:
        super().__init__()
        self.name = os.fspath(path)
        with open(path, "rb") as fh:
            fh.seek(sb.offset)
            head = bytearray(fh.read(96))
        o = head[9]
        end = 12 + 4 * o  # v2/v3: the checksum follows the four addresses
        head[11] = 0
        head[end:end + 4] = _lookup3(bytes(head[:end])).to_bytes(4, "little")
        self._patch, self._at = bytes(head[:end + 4]), sb.offset
        self._fh = open(path, "rb", buffering=0)  # noqa: SIM115 - closed in close()

    def __repr__(self) -> str:  # h5py names the file by this
        return self.name

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, pos: int, whence: int = 0) -> int:
        return self._fh.seek(pos, whence)

    def tell(self) -> int:
        return self._fh.tell()

    def readinto(self, b: Any) -> int:
        pos = self._fh.tell()
        n = self._fh.readinto(b)
        lo, hi = max(pos, self._at), min(pos + n, self._at + len(self._patch))
        if lo < hi:
            memoryview(b).cast("B")[lo - pos:hi - pos] = self._patch[lo - self._at:hi - self._at]
        return n

    def close(self) -> None:
        self._fh.close()
        super().close()


def _lookup3(data: bytes, initval: int = 0) -> int:
    """Bob Jenkins' lookup3 hash (hashlittle), HDF5's metadata checksum."""
    m = 0xFFFFFFFF

    def rot(x: int, k: int) -> int:
        return ((x << k) | (x >> (32 - k))) & m

    n = len(data)
    a = b = c = (0xDEADBEEF + n + initval) & m
    i = 0
    while n > 12:
        a = (a + int.from_bytes(data[i:i + 4], "little")) & m
        b = (b + int.from_bytes(data[i + 4:i + 8], "little")) & m
        c = (c + int.from_bytes(data[i + 8:i + 12], "little")) & m
        a = (a - c) & m; a ^= rot(c, 4); c = (c + b) & m  # noqa: E702
        b = (b - a) & m; b ^= rot(a, 6); a = (a + c) & m  # noqa: E702
        c = (c - b) & m; c ^= rot(b, 8); b = (b + a) & m  # noqa: E702
        a = (a - c) & m; a ^= rot(c, 16); c = (c + b) & m  # noqa: E702
        b = (b - a) & m; b ^= rot(a, 19); a = (a + c) & m  # noqa: E702
        c = (c - b) & m; c ^= rot(b, 4); b = (b + a) & m  # noqa: E702
        n -= 12
        i += 12
    if n == 0:
        return c
    tail = data[i:i + n] + bytes(12 - n)
    a = (a + int.from_bytes(tail[0:4], "little")) & m
    b = (b + int.from_bytes(tail[4:8], "little")) & m
    c = (c + int.from_bytes(tail[8:12], "little")) & m
    c ^= b; c = (c - rot(b, 14)) & m  # noqa: E702
    a ^= c; a = (a - rot(c, 11)) & m  # noqa: E702
    b ^= a; b = (b - rot(a, 25)) & m  # noqa: E702
    c ^= b; c = (c - rot(b, 16)) & m  # noqa: E702
    a ^= c; a = (a - rot(c, 4)) & m  # noqa: E702
    b ^= a; b = (b - rot(a, 14)) & m  # noqa: E702
    c ^= b; c = (c - rot(b, 24)) & m  # noqa: E702
    return c


#: Note added to what is read from a file a writer did not close.
NOT_CLOSED_NOTE = ("the writer did not close the file cleanly (HDF5's open-for-write "
                   "flag is still set); every dataset read was complete")


def _writer_holds_lock(p: Path) -> bool:
    """Another process holds the HDF5 file lock (an exclusive ``flock``, taken by
    writers unless file locking is off). Probed with a shared lock released at
    once, and only for files whose flags say a writer opened them."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        return False
    try:
        fd = os.open(p, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:  # no locks on this file system: the flags alone cannot tell
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _open_left_open(p: Path, sb: Superblock) -> h5py.File:
    """A file whose consistency flags are set: read it when its writer is gone."""
    how = "SWMR writer" if sb.swmr else "writer"
    if _writer_holds_lock(p):
        raise _being_written(p, f"open by a {how} that holds the HDF5 file lock")
    if _changing(p):
        raise _being_written(p, f"open by a {how}; the file changes while read")
    if sb.swmr and _recent(p):
        raise _being_written(p, f"open by a SWMR writer, last change {_age_s(p):.0f} s ago")
    if sb.truncated:
        raise _truncated(p, sb)
    try:
        if sb.version >= 2:  # HDF5 refuses these flags: show them cleared
            f = h5py.File(_FlagsCleared(p, sb), "r")
        else:
            f = h5py.File(p, "r", locking=False)
    except (OSError, ValueError) as exc:
        raise XpcsFileError(
            p, f"damaged: its {how} stopped before closing it and it cannot be read "
               f"({_short(exc)})", expected="a complete HDF5 file") from None
    f._xpcs_not_closed = True  # see open_h5: a gap in it is damage, a note otherwise
    return f


def open_h5_file(path: str | os.PathLike) -> h5py.File:
    """Open an HDF5 file read-only without the file lock; the caller closes it.

    What is decided from the file itself (never from its age alone):

    * the superblock's consistency flags are set (a writer holds it, or was
      killed): "being written" when a writer holds the HDF5 file lock, the file
      changes while watched, or a SWMR writer changed it within the writing
      window; otherwise its writer is gone and it is read as it is, with
      :data:`NOT_CLOSED_NOTE`;
    * the superblock states a longer file than there is: "damaged: truncated
      (N of M bytes)", unless it grows while watched.

    Raises
    ------
    XpcsFileError
        Missing (broken link, link loop), a folder, unreadable (permission),
        empty, not HDF5, truncated or damaged.
    FileBeingWrittenError
        Another program is writing it (see above).
    """
    p = Path(path)
    if not p.exists():
        raise XpcsFileError(p, _missing_reason(p))
    if p.is_dir():
        raise XpcsFileError(p, "is a folder, not a result file")
    try:
        size = p.stat().st_size
    except OSError as exc:
        raise XpcsFileError(p, f"cannot stat ({exc.strerror})") from None
    if not os.access(p, os.R_OK):
        raise XpcsFileError(p, "permission denied (cannot open for reading)")
    if size == 0:
        if _changing(p):
            raise _being_written(p, "empty, just created")
        raise XpcsFileError(p, "empty file (0 bytes)", expected="an HDF5 file")
    sb = read_superblock(p)
    if sb is not None and sb.open_for_write:
        return _open_left_open(p, sb)
    try:
        return h5py.File(p, "r", locking=False)
    except OSError as exc:
        raise _open_error(p, exc, sb) from None


def not_closed_note(f: h5py.File) -> str | None:
    """:data:`NOT_CLOSED_NOTE` for a file opened although its writer did not close it."""
    return NOT_CLOSED_NOTE if getattr(f, "_xpcs_not_closed", False) else None


@contextlib.contextmanager
def open_h5(path: str | os.PathLike) -> Iterator[h5py.File]:
    """Open an HDF5 file read-only, without the file lock, with errors that say what is wrong.

    A structural gap met while reading (a missing dataset, data never written)
    is "being written" only when the file changes while watched; in a file whose
    writer did not close it, it is damage that says so.

    Raises
    ------
    XpcsFileError
        See :func:`open_h5_file`; also a damaged dataset inside a readable file.
    FileBeingWrittenError
        Open for writing by another program, or incomplete and changing.
    """
    p = Path(path)
    f = open_h5_file(p)
    try:
        yield f
    except FileBeingWrittenError:
        raise
    except XpcsFileError as exc:
        if exc.incomplete and _changing(p):
            raise _being_written(
                p, f"{exc.problem}; the file changes", exc.dataset
            ) from None
        if exc.incomplete and not_closed_note(f):
            raise XpcsFileError(
                exc.path, f"{exc.problem}: its writer stopped before finishing it "
                          "(HDF5's open-for-write flag is still set)",
                exc.dataset, exc.expected) from None
        raise
    except (OSError, RuntimeError, KeyError) as exc:
        # A damaged structure inside a readable file (e.g. a broken object header).
        raise XpcsFileError(p, f"cannot read ({_short(exc)})") from None
    finally:
        f.close()


# ---------------------------------------------------------------------- looking up
def _unmangle(s: str) -> str:
    """Undo UTF-8 text once decoded as cp1252/Latin-1 ("Ã…^2/s" -> "Å^2/s")."""
    if "\u00c3" not in s and "\u00c2" not in s:
        return s
    for enc in ("cp1252", "latin-1"):
        try:
            return s.encode(enc).decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            continue
    return s


def _decode(v: Any) -> Any:
    if isinstance(v, bytes):
        try:
            return _unmangle(v.decode("utf-8"))
        except UnicodeDecodeError:  # older writers stored Latin-1 bytes ("\xc5" for Å)
            return v.decode("latin-1")
    if isinstance(v, str):
        return _unmangle(v)
    if isinstance(v, np.ndarray):
        if v.dtype.kind in "OS":
            out = np.array([_decode(x) for x in v.ravel()], dtype=object).reshape(
                v.shape
            )
            return out.tolist() if out.ndim else out[()]
        if v.shape == (1, 1) or v.ndim == 0:  # (1,1) scalars from the old writers
            return _decode(v.reshape(())[()])
    if isinstance(v, np.float32):
        # float32 scalars (e.g. frame_time 2e-05) read back as their shortest decimal.
        return float(str(v))
    if isinstance(v, np.generic):
        return v.item()
    return v


def _exists(f: h5py.File, path: str) -> bool:
    try:
        return path in f
    except (KeyError, RuntimeError, OSError, ValueError):  # dangling links
        return False


def _link_problem(f: h5py.File, path: str) -> str | None:
    """Why ``path`` cannot be opened although a link of that name exists."""
    try:
        link = f.get(path, getlink=True)
    except (KeyError, RuntimeError, OSError, ValueError):
        return None
    if isinstance(link, h5py.SoftLink):
        return f"dangling soft link to {link.path}"
    if isinstance(link, h5py.ExternalLink):
        return f"external link to {link.filename}:{link.path} cannot be resolved"
    return None


def _missing(f: h5py.File, path: str, expected: str) -> XpcsFileError:
    why = _link_problem(f, path)
    if why is not None:
        return XpcsFileError(f.filename, why, dataset=path, expected=expected)
    err = XpcsFileError(
        f.filename, "missing required dataset", dataset=path, expected=expected
    )
    err.incomplete = True
    return err


def _dataset(f: h5py.File, path: str, expected: str) -> h5py.Dataset:
    if not _exists(f, path):
        raise _missing(f, path, expected)
    try:
        obj = f[path]
    except (KeyError, RuntimeError, OSError) as exc:
        why = _link_problem(f, path) or f"cannot be opened ({_short(exc)})"
        raise XpcsFileError(f.filename, why, dataset=path, expected=expected) from None
    if not isinstance(obj, h5py.Dataset):
        raise XpcsFileError(
            f.filename, "is a group, not a dataset", dataset=path, expected=expected
        )
    return obj


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:160]


# ---------------------------------------------------------------- sizes and reads
def _stored_fraction(ds: h5py.Dataset) -> tuple[int, int]:
    """(stored, declared) pieces of a dataset: chunks, or 0/1 for contiguous data
    whose storage was never allocated (it reads back as the fill value); (1, 1)
    where this cannot be told (compact, external, virtual storage)."""
    if ds.size == 0:
        return 1, 1
    try:
        if ds.chunks is None:
            dcpl = ds.id.get_create_plist()
            if (
                dcpl.get_layout() != h5py.h5d.CONTIGUOUS
                or dcpl.get_external_count()
                or ds.is_virtual
            ):
                return 1, 1
            return (1 if ds.id.get_storage_size() > 0 else 0), 1
        declared = 1
        for n, c in zip(ds.shape, ds.chunks, strict=True):
            declared *= -(-int(n) // int(c))
        return int(ds.id.get_num_chunks()), declared
    except (AttributeError, RuntimeError, OSError, ValueError):
        return 1, 1


def check_declared(
    ds: h5py.Dataset,
    *,
    shape: Sequence[int | None] | None = None,
    expected: str = "",
    max_elements: int = MAX_ELEMENTS,
) -> None:
    """Check a dataset's declared shape and stored data before reading it.

    Parameters
    ----------
    ds : h5py.Dataset
    shape : sequence of int or None, optional
        The shape the layout allows (None: any length on that axis).
    expected : str
        Words for the error message.
    max_elements : int
        Largest number of elements accepted.

    Raises
    ------
    XpcsFileError
        Wrong declared shape, too large, or declared but (partly) never written.
    """
    name = ds.name
    if shape is not None and (
        len(shape) != ds.ndim
        or any(
            s is not None and int(s) != int(n)
            for s, n in zip(shape, ds.shape, strict=False)
        )
    ):
        raise XpcsFileError(
            ds.file.filename, f"has shape {ds.shape}", dataset=name, expected=expected
        )
    if ds.size > max_elements:
        raise XpcsFileError(
            ds.file.filename,
            f"declares shape {ds.shape} ({ds.size:.3g} values), more than the "
            f"{max_elements:.3g} this dataset can hold",
            dataset=name,
            expected=expected or f"at most {max_elements} values",
        )
    stored, declared = _stored_fraction(ds)
    if stored < declared:
        what = f"only {stored} of {declared} chunks are" if ds.chunks else "no data is"
        err = XpcsFileError(
            ds.file.filename,
            f"declares shape {ds.shape} but {what} stored (never written)",
            dataset=name,
            expected=expected,
        )
        err.incomplete = True
        raise err


def _read_error(ds: h5py.Dataset, exc: BaseException) -> XpcsFileError:
    text = _short(exc)
    low = text.lower()
    if any(
        w in low
        for w in (
            "plugin",
            "can't open directory",
            "not registered",
            "required filter",
            "not available",
        )
    ):
        problem = f"compressed with an HDF5 filter that is not available ({text})"
    else:
        problem = f"damaged data, cannot be read ({text})"
    return XpcsFileError(ds.file.filename, problem, dataset=ds.name)


def read_array(ds: h5py.Dataset, dtype: Any = None) -> np.ndarray:
    """Read a whole dataset (already checked) in bounded row blocks.

    The output is allocated once with the final dtype and filled block by
    block, so a float32 dataset read as float64 is never held twice, and a
    damaged chunk or a missing filter is reported with the dataset's name.
    """
    dt = np.dtype(dtype) if dtype is not None else ds.dtype
    try:
        if (
            ds.ndim == 0
            or ds.size == 0
            or ds.nbytes <= READ_BLOCK_BYTES
            or ds.dtype.kind in "OSUV"
        ):
            a = ds[()]
            return np.asarray(a, dtype=dt) if dtype is not None else np.asarray(a)
        out = np.empty(ds.shape, dtype=dt)
        row_bytes = max(1, ds.nbytes // max(1, ds.shape[0]))
        step = max(1, READ_BLOCK_BYTES // row_bytes)
        from xpcsviewer.progress import check_interrupted

        for r0 in range(0, ds.shape[0], step):
            check_interrupted()
            r1 = min(ds.shape[0], r0 + step)
            ds.read_direct(out, np.s_[r0:r1], np.s_[r0:r1])
        return out
    except (OSError, RuntimeError, ValueError, TypeError) as exc:
        raise _read_error(ds, exc) from None


def _array(
    f: h5py.File,
    path: str,
    *,
    kinds: str = "biuf",
    ndim: int | tuple[int, ...] | None = None,
    expected: str = "an array",
    squeeze_leading: bool = False,
    shape: Sequence[int | None] | None = None,
    max_elements: int = MAX_ELEMENTS,
    dtype: Any = None,
) -> np.ndarray:
    """Check then read one numeric dataset (see :func:`check_declared`)."""
    ds = _dataset(f, path, expected)
    if ds.dtype.kind not in kinds:
        raise XpcsFileError(
            f.filename, f"has dtype {ds.dtype}", dataset=path, expected=expected
        )
    if shape is not None and squeeze_leading:
        lead = ds.ndim - len(shape)
        if lead < 0 or any(n != 1 for n in ds.shape[:lead]):
            raise XpcsFileError(
                f.filename, f"has shape {ds.shape}", dataset=path, expected=expected
            )
        shape = (*ds.shape[:lead], *shape)
    check_declared(ds, shape=shape, expected=expected, max_elements=max_elements)
    a = read_array(ds, dtype)
    if squeeze_leading:
        while (
            a.ndim > 1
            and a.shape[0] == 1
            and (ndim is None or a.ndim > min(np.atleast_1d(ndim)))
        ):
            a = a[0]
    if ndim is not None and a.ndim not in np.atleast_1d(ndim):
        raise XpcsFileError(
            f.filename, f"has shape {a.shape}", dataset=path, expected=expected
        )
    return a


def _scalar(
    f: h5py.File, path: str, *, required: bool = True, default: Any = None
) -> Any:
    if not _exists(f, path):
        if required:
            raise _missing(f, path, "a number")
        if _link_problem(f, path) is not None:
            raise _missing(f, path, "a number")
        return default
    ds = _dataset(f, path, "a number")
    if ds.size != 1:
        raise XpcsFileError(
            f.filename,
            f"has shape {ds.shape}",
            dataset=path,
            expected="a scalar (shape () or (1, 1))",
        )
    try:
        v = _decode(ds[()])
    except (OSError, RuntimeError, ValueError, TypeError) as exc:
        raise _read_error(ds, exc) from None
    if isinstance(v, np.ndarray):
        v = v.reshape(())[()]
    return v


def _number(
    f: h5py.File,
    path: str,
    *,
    required: bool = True,
    default: float | None = None,
    positive: bool = False,
) -> float | None:
    v = _scalar(f, path, required=required, default=default)
    if v is None:
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise XpcsFileError(
            f.filename,
            f"value {v!r} is not a number",
            dataset=path,
            expected="a number",
        ) from None
    if positive and not (x > 0 and math.isfinite(x)):
        raise XpcsFileError(
            f.filename, f"value {x!r}", dataset=path, expected="a positive number"
        )
    return x


def _count(f: h5py.File, path: str, value: Any, *, default: int = 1) -> int:
    """A positive whole number (frame stride, frames averaged) from a config value."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if not (math.isfinite(x) and x == int(x) and x >= 1):
        raise XpcsFileError(
            f.filename, f"value {value!r}", dataset=path, expected="a whole number >= 1"
        )
    return int(x)


def _strings(f: h5py.File, path: str, default: tuple[str, ...]) -> tuple[str, ...]:
    if not _exists(f, path):
        return default
    ds = _dataset(f, path, "names")
    check_declared(ds, expected="a few names", max_elements=64)
    try:
        v = _decode(ds[()])
    except (OSError, RuntimeError, ValueError, TypeError) as exc:
        raise _read_error(ds, exc) from None
    if isinstance(v, str):
        return (v,)
    return tuple(str(x) for x in np.ravel(v))


def _check_finite(res_warnings: list[str], name: str, a: np.ndarray) -> None:
    if a.dtype.kind == "f":
        bad = ~np.isfinite(a)
        if bad.any():
            res_warnings.append(
                f"{name}: {int(bad.sum())} of {a.size} values are NaN or Inf"
            )
