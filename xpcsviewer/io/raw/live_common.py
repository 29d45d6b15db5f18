"""What the live sources share: the state of a poll, opening a file without its lock,
reading frames in pieces, whether a writer holds a file (see
:mod:`xpcsviewer.io.raw.live`). The layouts' names are their own modules'
(:mod:`~xpcsviewer.io.raw.dense`, :mod:`~xpcsviewer.io.raw.esrf_csr`,
:mod:`~xpcsviewer.io.raw.rigaku`)."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from xpcsviewer.io._h5 import MAX_PIXELS, open_regular, read_superblock
from xpcsviewer.io._h5open import _HDF5_SIGNATURE
from xpcsviewer.io.errors import XpcsFileError

__all__ = [
    "CLOSE_GRACE_S",
    "HeldHdf5",
    "SourceNotReady",
    "SourceProblem",
    "SourceState",
    "writer_state",
]


#: see GrowingFileSource.close_grace
CLOSE_GRACE_S = 1.0
_BLOCK_RE = re.compile(r"^(?P<prefix>.*?)(?P<num>\d+)\.(h5|hdf5|hdf|nxs)$", re.IGNORECASE)


class SourceNotReady(Exception):
    """The source cannot be read at this moment (being created, metadata mid-update);
    poll again later."""


class SourceProblem(SourceNotReady):
    """The source can no longer be trusted (``kind``: ``"truncated"``, ``"replaced"``,
    ``"recreated"``, ``"corrupt"``); the message says what happened."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class SourceState:
    """What a poll saw.

    Attributes
    ----------
    complete : int
        Frames that are safe to read now.
    extent : int
        Frames the source declares (dataset length, or frames of the blocks seen);
        may include frames not written yet.
    expected : int or None
        Frames the acquisition will have (``--frames``, a fixed dataset length, an
        Eiger master file), if known.
    writer : str
        ``"open"`` (a writer has the data open), ``"closed"`` (it closed it),
        ``"unknown"``.
    readable : bool
        The last poll could read the source.
    note : str
        Why not, or what is awaited.
    mtime : float
        Modification time (s since the epoch) of the newest data seen.
    problem : str
        ``""``, or what makes the source untrustworthy from now on (``note`` says it):
        ``"truncated"``, ``"replaced"`` (another file at the path, or none),
        ``"recreated"`` (the frame dataset deleted and made again), ``"corrupt"`` (a
        block that never opens); the frames read before it stay valid.
    """

    complete: int = 0
    extent: int = 0
    expected: int | None = None
    writer: str = "unknown"
    readable: bool = False
    note: str = "waiting for the source to appear"
    mtime: float = 0.0
    problem: str = ""


def _write_locked(path: Path) -> bool | None:
    """Whether some process holds a write lock on ``path`` (Linux ``/proc/locks``).

    Reading ``/proc/locks`` takes no lock. None when it cannot be told (no such file).
    """
    try:
        st = path.stat()
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino} "
    return any("WRITE" in line and key in line for line in text.splitlines())


def writer_state(path: str | os.PathLike) -> str:
    """``"open"`` / ``"closed"`` / ``"none"`` for an HDF5 file (see the module notes).

    ``"none"``: an old-format file with no write lock held (closed, or a writer that
    does not lock); the caller decides what that means.
    """
    p = Path(path)
    try:
        with open_regular(p) as fh:
            head = fh.read(9)
    except OSError:
        return "none"
    if len(head) == 9 and head[:8] == _HDF5_SIGNATURE and head[8] >= 2:
        sb = read_superblock(p)
        return "open" if sb is not None and sb.flags & 0x1 else "closed"
    # HDF5 >= 1.10 writers set the open-for-write flag in version 0/1 superblocks too
    # (a 1.8 writer leaves it 0: then only its lock tells)
    if _flags_open(p) or _write_locked(p):
        return "open"
    return "none"


def _flags_open(p: Path) -> bool:
    sb = read_superblock(p)
    return sb is not None and bool(sb.flags & 0x1)


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
    return text


def _positive_number(f: h5py.File, path: str) -> float | None:
    try:
        v = np.asarray(f[path][()], dtype=np.float64).ravel()
    except (KeyError, TypeError, ValueError, OSError):
        return None
    if v.size != 1 or not np.isfinite(v[0]) or v[0] <= 0:
        return None
    return float(v[0])


#: metadata read attempts of a SWMR reader. HDF5's default (100, backing off
#: exponentially towards an hour in all) turns a checksum that never matches (a file
#: truncated or damaged after its writer died) into a wait of about 40 minutes inside
#: one call, with Ctrl-C ignored (issue 34). 20 attempts back off about 1 ms in all,
#: which still rides out a writer's torn metadata update; a read that fails is tried
#: again at the next poll.
SWMR_READ_ATTEMPTS = 20


@functools.cache
def _set_read_attempts() -> object | None:
    """``H5Pset_metadata_read_attempts`` of the HDF5 library h5py runs on, or None.

    h5py does not wrap it; the library is found among the loaded objects (Linux), in
    h5py's bundled libraries, or by name, and used only when its version is h5py's.
    """
    cands: list[str] = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                name = line.rsplit(None, 1)[-1]
                base = os.path.basename(name)
                if base.startswith("libhdf5") and not base.startswith("libhdf5_hl"):
                    cands.append(name)
    except OSError:
        pass
    pkg = Path(h5py.__file__).resolve().parent
    for folder in (pkg.parent / "h5py.libs", pkg / ".dylibs", pkg):
        cands += sorted(str(q) for q in folder.glob("libhdf5*")
                        if not q.name.startswith("libhdf5_hl"))
    found = ctypes.util.find_library("hdf5")
    if found:
        cands.append(found)
    want = tuple(h5py.version.hdf5_version_tuple[:3])
    for name in dict.fromkeys(cands):
        try:
            lib = ctypes.CDLL(name)
            v = [ctypes.c_uint() for _ in range(3)]
            if lib.H5get_libversion(*(ctypes.byref(x) for x in v)) < 0:
                continue
            if tuple(x.value for x in v) != want:
                continue
            fn = lib.H5Pset_metadata_read_attempts
        except (OSError, AttributeError):
            continue
        fn.argtypes = [ctypes.c_int64, ctypes.c_uint]
        fn.restype = ctypes.c_int
        return fn
    return None


def _open_swmr_bounded(path: Path, locking: bool) -> h5py.File | None:
    """A SWMR reader whose metadata reads give up after ``SWMR_READ_ATTEMPTS``, or None
    where the library's setter cannot be reached."""
    fn = _set_read_attempts()
    if fn is None:
        return None
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    if not locking:
        fapl.set_file_locking(False, False)
    if fn(fapl.id, SWMR_READ_ATTEMPTS) < 0:
        return None
    fid = h5py.h5f.open(os.fsencode(path), h5py.h5f.ACC_RDONLY | h5py.h5f.ACC_SWMR_READ,
                        fapl=fapl)
    return h5py.File(fid)


def _open_shared(path: Path, swmr: bool = False) -> h5py.File:
    """:func:`_open_shared_file`, once the files it points at passed the checks of
    :mod:`xpcsviewer.io._h5links` (a link to a FIFO would hang the first lookup)."""
    from xpcsviewer.io._h5open import checked

    return checked(_open_shared_file(path, swmr))


def _open_shared_file(path: Path, swmr: bool = False) -> h5py.File:
    """Open read-only without taking the file lock (raises SourceNotReady).

    A writer in this same process (a thread) holds the file through the same HDF5
    library, which refuses a second open with other locking flags; the file is then
    shared with it (no lock is taken: the library already has the file open). A SWMR
    file is opened with bounded metadata read attempts (``SWMR_READ_ATTEMPTS``).
    """
    for locking in (False, None):
        try:
            if swmr:
                f = _open_swmr_bounded(path, bool(locking is None))
                if f is not None:
                    return f
            if locking is None:
                return h5py.File(path, "r", swmr=swmr)
            return h5py.File(path, "r", locking=False, swmr=swmr)
        except OSError as exc:
            if locking is None or "locking flag" not in str(exc):
                raise SourceNotReady(f"cannot open it now ({_first_line(exc)})") from None
    raise AssertionError("unreachable")


#: bytes per HDF5 read call: h5py holds the GIL for a whole call, so a GUI thread
#: waits at most about one piece's read (a few ms) for a frame read in a worker
READ_PIECE_BYTES = 4 << 20


def _read_pieces(ds: h5py.Dataset, a: int, b: int) -> np.ndarray:
    """Frames ``[a, b)`` of ``ds`` read ``READ_PIECE_BYTES`` at a time into one array."""
    frame_bytes = max(1, int(np.prod(ds.shape[1:])) * ds.dtype.itemsize)
    step = max(1, READ_PIECE_BYTES // frame_bytes)
    if b - a <= step:
        return np.asarray(ds[a:b])
    out = np.empty((b - a, *ds.shape[1:]), dtype=ds.dtype)
    for s in range(a, b, step):
        e = min(b, s + step)
        ds.read_direct(out, np.s_[s:e], np.s_[s - a : e - a])
    return out


def _check_frames(path: Path, ds: h5py.Dataset, dataset: str) -> tuple[tuple[int, int], np.dtype]:
    shape = tuple(ds.shape)
    dt = np.dtype(ds.dtype)
    if len(shape) != 3:
        raise XpcsFileError(path, f"raw frames have shape {shape}", dataset, "(frames, rows, cols)")
    if not (np.issubdtype(dt, np.integer) or np.issubdtype(dt, np.floating)) or dt == np.bool_:
        raise XpcsFileError(path, f"raw frames have dtype {dt}", dataset, "integer or float counts")
    if shape[1] * shape[2] > MAX_PIXELS:
        raise XpcsFileError(path, f"raw frames of {shape[1]} x {shape[2]} pixels", dataset,
                            f"a detector of at most {MAX_PIXELS} pixels")
    return (int(shape[1]), int(shape[2])), dt


class HeldHdf5:
    """The handle and writer-state rules a growing HDF5 source keeps (dense frames or
    CSR hits): a SWMR file stays open between polls, any other is opened afresh for every
    poll; the writer is open while HDF5's flags or a write lock say so, and counts as
    closed once a lock seen before has gone and the file has stayed unchanged for the
    grace time (a writer that opens the file anew for every block holds its lock only now
    and then, but keeps changing the file).

    Uses ``path``, ``_fh``, ``_swmr``, ``_seen_open``, ``_open_seen_at``, ``_changed_at``
    and ``close_grace`` of the source.

    Frames of two files must never be mixed (issue 34): the file read first (device,
    inode) is checked at every open and every poll, and a file that got shorter is
    told before HDF5 reads its chunk index.
    """

    _ident: tuple[int, int] | None = None  # (st_dev, st_ino) of the file read
    _size_max = 0
    _short: tuple[int, int] | None = None  # (size, stated EOF) seen short once
    _seen_lock = False
    _dead_sig: tuple | None = None

    def _check_handle(self) -> None:
        fh = self._fh
        try:
            st = os.fstat(fh.id.get_vfd_handle())
        except (OSError, TypeError, ValueError, RuntimeError):
            return  # a driver without a descriptor: the path is checked at each poll
        ident = (st.st_dev, st.st_ino)
        if self._ident is None:
            self._ident = ident
        elif ident != self._ident:
            self.close()
            raise SourceProblem("replaced", f"{self.path.name} was replaced by another file")

    def _check_file(self, at_end: bool = False, truncation: bool = True) -> None:
        """Raise SourceProblem when the file was replaced, removed or truncated; a file
        shorter than its superblock states counts once seen at two polls (a writer's
        flush states the new end of file just before the file reaches it), at once at
        the end."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            if self._ident is not None:
                raise SourceProblem("replaced", f"{self.path.name} was removed") from None
            return
        except OSError:
            return
        if self._ident is not None and (st.st_dev, st.st_ino) != self._ident:
            self.close()
            raise SourceProblem("replaced", f"{self.path.name} was replaced by another file")
        if not truncation:
            return
        sb = read_superblock(self.path)
        eof = sb.eof if sb is not None and sb.eof is not None else 0
        short = st.st_size < self._size_max or st.st_size < eof
        self._size_max = max(self._size_max, st.st_size)
        if not short:
            self._short = None
            return
        seen = (st.st_size, eof)
        if self._short == seen or at_end:
            self.close()
            raise SourceProblem(
                "truncated", f"{self.path.name} was truncated to {st.st_size:,} bytes "
                f"(HDF5 says {max(eof, self._size_max):,})")
        self._short = seen
        # the chunk index is not read past the end of the file (HDF5 can wait long there)
        raise SourceNotReady(f"{self.path.name} is shorter than HDF5 says; looking again")


    def release(self) -> None:
        """Close the handle of a non-SWMR file (it is opened afresh next poll)."""
        if self._fh is not None and not self._swmr:
            self.close()

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._fh is not None:
            try:
                self._fh.close()
            except Exception:  # closing a file a writer damaged
                pass
            self._fh = None

    def _writer(self) -> str:
        """``"open"``, ``"closed"``, ``"unknown"``, or ``"died"``: the writer's lock was
        seen and has gone while HDF5 still marks the file open for writing (a writer
        that closes clears the mark before it drops the lock; a SWMR writer holds no
        lock, so it is never told dead this way)."""
        w = writer_state(self.path)
        locked = _write_locked(self.path)
        now = time.monotonic()
        if locked:
            self._seen_lock = True
            self._dead_sig = None
        elif w == "open" and self._seen_lock:
            # marked open, then no lock: killed, or closed (and perhaps reopened) in
            # between. Dead once seen so at two polls with the file unchanged between
            # them (a writer that reopens the file writes to it).
            sb = read_superblock(self.path)
            try:
                st = self.path.stat()
                sig = (st.st_size, st.st_mtime_ns, st.st_ino)
            except OSError:
                sig = None
            if sb is not None and sb.flags & 0x1 and not sb.flags & 0x4 and sig:
                if self._dead_sig == sig and not _write_locked(self.path):
                    return "died"
                self._dead_sig = sig
            else:
                self._dead_sig = None
        if w == "open":
            self._seen_open, self._open_seen_at = True, now
            return "open"
        if w == "closed":
            return "closed"
        if self._seen_open:
            quiet = now - max(self._open_seen_at, self._changed_at)
            return "closed" if quiet >= self.close_grace else "open"
        return "unknown"
