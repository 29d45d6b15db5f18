"""Opening HDF5 files for reading: never locking a writer out, telling a file being
written from a killed writer's complete file from a damaged one (decided from the file:
its superblock's flags and stated size, the writer's lock, whether it changes while
watched), and saying what was seen (see :mod:`xpcsviewer.io._h5`)."""

from __future__ import annotations

import contextlib
import errno
import io
import math
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py

from xpcsviewer.io.errors import FileBeingWrittenError, XpcsFileError

__all__ = [
    "NOT_CLOSED_NOTE",
    "RECENT_S",
    "Superblock",
    "checked",
    "not_closed_note",
    "open_h5",
    "open_h5_file",
    "read_superblock",
    "writing_window_s",
]

#: Only a file modified this recently is watched for changes (a writer at work);
#: ``XPCSVIEWER_WRITING_WINDOW_S`` overrides it (0: never watch).
RECENT_S = 60.0
#: How long a recent file is watched for a change of size or modification time.
WATCH_S = 0.15

_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_UNDEFINED = (1 << 64) - 1
_WRITE, _SWMR_WRITE = 0b001, 0b100


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:160]



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


class NotRegularFile(OSError):
    """The path is a named pipe, a device or a socket: never opened for reading (a read
    could wait forever, or read something that is not the user's data)."""


def not_regular_reason(path: str | os.PathLike) -> str | None:
    """Why ``path`` (symbolic links followed) is not a regular file, or None when it is
    one or does not exist."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    what = ("a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a socket"
            if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "not a regular file")
    return f"is {what}, not a regular file: not read"


def open_regular(path: str | os.PathLike, buffering: int = -1) -> io.BufferedReader | io.FileIO:
    """``open(path, "rb")`` for regular files only, without blocking on a FIFO: opened
    non-blocking, checked with ``fstat`` (no race with a swap of the path), then read as
    usual.

    Raises
    ------
    NotRegularFile
        A FIFO, device or socket (the reason in its message).
    OSError
        As ``open``.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(not_regular_reason(path) or "not a regular file: not read")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return open(fd, "rb", buffering=buffering)
    except BaseException:
        os.close(fd)
        raise


def read_superblock(path: str | os.PathLike) -> Superblock | None:
    """Parse the HDF5 superblock (versions 0-3), or None when there is none.

    The consistency flags are set by HDF5 (1.10 and later) while a writer holds
    the file and cleared on a clean close; a killed writer leaves them set. The
    end-of-file address tells a truncated file from a complete one.
    """
    try:
        with open_regular(path) as fh:
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
    """Why a path that does not exist as a regular file cannot be opened, in words."""
    odd = not_regular_reason(p)
    if odd is not None:
        return odd
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
            with open_regular(p) as fh:
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
        with open_regular(path) as fh:
            fh.seek(sb.offset)
            head = bytearray(fh.read(96))
        o = head[9]
        end = 12 + 4 * o  # v2/v3: the checksum follows the four addresses
        head[11] = 0
        head[end:end + 4] = _lookup3(bytes(head[:end])).to_bytes(4, "little")
        self._patch, self._at = bytes(head[:end + 4]), sb.offset
        self._fh = open_regular(path, buffering=0)  # closed in close()

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
        empty, not HDF5, truncated or damaged; or it points at data elsewhere
        against the policy of :mod:`xpcsviewer.io._h5links` (a FIFO, outside
        the input's folder, a missing virtual source).
    FileBeingWrittenError
        Another program is writing it (see above).
    """
    p = Path(path)
    if not p.exists():
        raise XpcsFileError(p, _missing_reason(p))
    if p.is_dir():
        raise XpcsFileError(p, "is a folder, not a result file")
    odd = not_regular_reason(p)
    if odd is not None:
        raise XpcsFileError(p, odd, expected="an HDF5 file")
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
        return checked(_open_left_open(p, sb))
    try:
        f = h5py.File(p, "r", locking=False)
    except OSError as exc:
        raise _open_error(p, exc, sb) from None
    return checked(f)


def checked(f: h5py.File) -> h5py.File:
    """``f`` once every file it points at passed :mod:`xpcsviewer.io._h5links`
    (before anything in it is read: HDF5 would open a FIFO and wait forever)."""
    from xpcsviewer.io._h5links import check_file_pointers

    try:
        check_file_pointers(f)
    except BaseException:
        f.close()
        raise
    return f


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
