"""Output files: one rule for every writer, and one atomic write protocol.

Rule (:func:`check_output`): an output is never the same file as an input
(``os.path.samefile``: symlinks and hard links included), and an existing output
is replaced only when the user asked for it (``--overwrite``) and no other HDF5
file in its folder reads it through a link (a renamed result still reads its
``X_results_G2.hdf``: replacing that would make it unreadable). A refusal raises
:class:`OutputRefusedError`, which the command line reports as a usage error
(exit 2) in one line.

Protocol (:func:`atomic_path`): the output is written under a hidden temporary
name in the target folder, ``.NAME.xpcs-HOST-PID-RANDOM.tmp``, flushed to disk
(fsync) and renamed onto the target, so a reader or a crash never sees half a
file. The temporary name carries the writer's host and process id: temporaries
left behind by a killed writer (``kill -9`` cannot be caught) are removed at the
next write into that folder once their process is gone.

HDF5 outputs are written through :func:`open_h5_output`: HDF5 never sees a failed
write (a full disk), which it cannot recover from (h5py's "Can't decrement id ref
count ... No space left on device", then a segmentation fault at close); the
error is raised from Python instead, naming the output.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os
import re
import secrets
import socket
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from xpcsviewer.io._links import _is_hdf5, _links_of, _same_file, linked_files, linking_files
from xpcsviewer.io.errors import display_path
from xpcsviewer.progress import check_interrupted

__all__ = [
    "OutputRefusedError",
    "OutputWriteError",
    "atomic_path",
    "check_distinct_inputs",
    "check_h5_output",
    "check_output",
    "display_path",
    "linked_files",
    "open_h5_output",
    "sweep_stale_temps",
    "to_jsonable",
]


class OutputRefusedError(ValueError):
    """An output path that must not be written; the CLI exits 2 with this one line."""


class OutputWriteError(OSError):
    """Writing an output failed (disk full, read-only, no permission): one line naming
    the output, never the temporary file; the old output (if any) is unchanged."""

    def __str__(self) -> str:
        return str(self.strerror)


def check_output(
    output: str | os.PathLike,
    inputs: Iterable[str | os.PathLike] = (),
    overwrite: bool = False,
    replacing: Iterable[str | os.PathLike] = (),
) -> Path:
    """Refuse an output that is an input, or that exists without ``overwrite``.

    Parameters
    ----------
    output : path
        The file about to be written.
    inputs : iterable of path
        Every file the command reads; the files HDF5 inputs link to (their
        per-pixel G2 side files, say) are inputs too (:func:`linked_files`).
    overwrite : bool
        Replace an existing ``output`` (never an input, never a folder, never a
        file another HDF5 file in its folder reads through a link:
        :func:`~xpcsviewer.io._links.linking_files`).
    replacing : iterable of path
        Other outputs the same run replaces (a result file beside its side
        file): their links to ``output`` do not count.

    Returns
    -------
    Path
        ``output``.

    Raises
    ------
    OutputRefusedError
        Same file as an input, an existing folder, an existing file without
        ``overwrite``, or one another result reads (naming that result).
    """
    out = Path(output)
    shown = display_path(out)
    inputs = list(inputs)
    for p in inputs:
        if _same_file(out, Path(p)):
            raise OutputRefusedError(
                f"{shown}: is one of the input files ({display_path(p)}); "
                "refusing to write over an input (choose a new output name)"
            )
    if out.exists():  # only an existing file can be a linked input
        for p, origin in _links_of(inputs, 4):
            if _same_file(out, p):
                raise OutputRefusedError(
                    f"{shown}: is read by the input {display_path(origin)} (an HDF5 "
                    "link to it); refusing to write over an input (choose a new "
                    "output name)"
                )
    if out.is_dir():
        raise OutputRefusedError(f"{shown}: is a folder (expected a file name)")
    if out.exists() or out.is_symlink():
        if not overwrite:
            raise OutputRefusedError(
                f"{shown}: exists; refusing to replace it (use --overwrite)"
            )
        if _is_hdf5(out):  # only an HDF5 file is read through a link
            readers = linking_files(out, exclude=list(replacing))
            if readers:
                more = f" (and {len(readers) - 1} more)" if len(readers) > 1 else ""
                raise OutputRefusedError(
                    f"{shown}: is read by {display_path(readers[0])}{more} (an HDF5 "
                    "link to it); --overwrite replaces only a file no other result "
                    "reads (choose a new output name)"
                )
    return out


def check_distinct_inputs(inputs: Iterable[str | os.PathLike]) -> None:
    """Refuse the same file given twice (directly or through a link).

    Raises
    ------
    OutputRefusedError
        Two arguments name the same file.
    """
    seen: dict[tuple[int, int], str] = {}
    for p in inputs:
        try:
            st = os.stat(p)
        except OSError:
            continue  # the reader reports missing files with its own message
        key = (st.st_dev, st.st_ino)
        if key in seen:
            raise OutputRefusedError(
                f"{display_path(p)}: is the same file as {display_path(seen[key])}; "
                "each file may be given once"
            )
        seen[key] = os.fspath(p)


# --------------------------------------------------------------------- temp files
_HOST = hashlib.sha1(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]
_TEMP_RE = re.compile(r"^\..+\.xpcs-(?P<host>[0-9a-f]{8})-(?P<pid>\d+)-[0-9a-f]+\.tmp$")
_swept: set[str] = set()
_umask_lock = threading.Lock()


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # another user's process, or we cannot tell: keep the file
    return True


def sweep_stale_temps(folder: str | os.PathLike, *, force: bool = False) -> list[Path]:
    """Remove our temporaries in ``folder`` whose writer process (on this host) is gone.

    Runs once per folder and process unless ``force``. Temporaries of other hosts
    (a shared network folder) and of live processes are kept.

    Returns
    -------
    list of Path
        The removed files.
    """
    folder = Path(folder)
    key = os.fspath(folder.resolve()) if folder.exists() else os.fspath(folder)
    if key in _swept and not force:
        return []
    _swept.add(key)
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for de in entries:
        m = _TEMP_RE.match(de.name)
        if m is None or m["host"] != _HOST or _pid_alive(int(m["pid"])):
            continue
        with contextlib.suppress(OSError):
            os.unlink(de.path)
            removed.append(Path(de.path))
    return removed


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _umask_lock:  # os.umask can only be read by setting it
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


#: Write errors that can only be about the output's place (an input is only read).
_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}


def _fsync_path(path: Path, directory: bool = False) -> None:
    flags = os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        # Network and delayed-allocation file systems report a full disk here.
        if not directory and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
            raise
        # some file systems (and folders on some systems) cannot fsync
    finally:
        os.close(fd)


def _own_temp(path: Path) -> bool:
    """``path`` is a temporary of a write of this process (still running)."""
    m = _TEMP_RE.match(path.name)
    return m is not None and m["host"] == _HOST and int(m["pid"]) == os.getpid()


def _temp_name(path: Path) -> Path:
    stem = path.name
    if len(os.fsencode(stem)) > 180:  # keep the whole name under NAME_MAX
        stem = stem[:60]
    tag = f"xpcs-{_HOST}-{os.getpid()}-{secrets.token_hex(4)}"
    return path.parent / f".{stem}.{tag}.tmp"


def _write_error(path: Path, tmp: Path | None, exc: BaseException) -> OutputWriteError | None:
    """``exc`` as an error naming the output, when it is about writing ``path``."""
    text = str(exc)
    code = getattr(exc, "errno", None)
    about_tmp = tmp is not None and (
        os.fspath(tmp) in text or getattr(exc, "filename", None) == os.fspath(tmp))
    if isinstance(exc, OutputWriteError):  # from a nested write into our temporary
        if not about_tmp:
            return None
        return OutputWriteError(code, text.replace(display_path(tmp), display_path(path)))
    if not (about_tmp or code in _FULL_ERRNOS):
        return None
    if not isinstance(code, int):
        code = errno.ENOSPC if "no space left" in text.lower() else errno.EIO
    why = os.strerror(code)
    if code in (errno.ENOSPC, errno.EDQUOT):
        why += " (the disk or quota is full)"
    return OutputWriteError(code, f"{display_path(path)}: cannot write: {why}; "
                                  "nothing written")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it becomes ``path``.

    The caller writes the whole output to the yielded path (any writer: h5py,
    matplotlib, Qt). On leaving the block the file is fsynced, given the mode
    ``0o666 & ~umask``, and renamed onto ``path`` (then the folder is fsynced).
    On any exception (Ctrl-C included) the temporary is removed and ``path`` is
    untouched. Stale temporaries of dead writers in the folder are swept first.
    A missing output folder is created, as every writer does.

    Raises
    ------
    OutputWriteError
        The folder cannot be made or written, the disk is full, ...: one line
        naming ``path`` (never the temporary).
    """
    path = Path(path)
    if _own_temp(path):
        # Nested in another atomic write (average writes the result into its
        # temporary, then completes it): the outer write renames. A temporary of a
        # temporary (``..x.hdf.xpcs-A.tmp.xpcs-B.tmp``) was what kill -9 left.
        yield path
        return
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputWriteError(
            exc.errno or errno.EIO,
            f"{display_path(path)}: cannot make its folder "
            f"({exc.strerror or exc}); nothing written") from None
    if not folder.is_dir():
        raise OutputWriteError(errno.ENOTDIR, f"{display_path(path)}: "
                               f"{display_path(folder)} is not a folder; nothing written")
    sweep_stale_temps(folder)
    while True:
        tmp = _temp_name(path)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            break
        except FileExistsError:
            continue
        except OSError as exc:
            raise _write_error(path, tmp, exc) or exc from None
    os.close(fd)
    try:
        yield tmp
        check_interrupted()  # Ctrl-C during the write: keep the old target
        _fsync_path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, (OSError, RuntimeError)):
            err = _write_error(path, tmp, exc)
            if err is not None:
                raise err from None
        raise
    _fsync_path(folder, directory=True)


# ----------------------------------------------------------------- HDF5 outputs
#: Bytes of a failed file kept in memory after a write error, so that HDF5 can
#: finish (and close) a file that is then thrown away.
_OVERLAY_MAX = 64 << 20
_H5_SINKS: dict[str, _SafeSink] = {}


class _SafeSink(io.RawIOBase):
    """The file under an HDF5 output (h5py's file-object driver).

    A failed write (full disk, quota) is recorded and kept in memory instead of
    being returned to HDF5; the writer raises it from Python
    (:func:`check_h5_output`, and on closing :func:`open_h5_output`).
    """

    def __init__(self, path: Path, truncate: bool) -> None:
        super().__init__()
        flags = os.O_RDWR | (os.O_CREAT | os.O_TRUNC if truncate else 0)
        self._fd = os.open(path, flags, 0o600)
        self.name = os.fspath(path)
        self._pos = 0
        self.error: OSError | None = None
        self._overlay: list[tuple[int, bytes]] = []
        self._kept = 0

    def __repr__(self) -> str:  # h5py names the file by this: messages show the path
        return self.name

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def _end(self) -> int:
        end = os.fstat(self._fd).st_size
        for off, data in self._overlay:
            end = max(end, off + len(data))
        return end

    def seek(self, pos: int, whence: int = 0) -> int:
        if whence == 0:
            self._pos = pos
        elif whence == 1:
            self._pos += pos
        else:
            self._pos = self._end() + pos
        return self._pos

    def tell(self) -> int:
        return self._pos

    def readinto(self, b: Any) -> int:
        mv = memoryview(b).cast("B")
        n = os.preadv(self._fd, [mv], self._pos)
        for off, data in self._overlay:  # bytes the disk did not take
            lo, hi = max(off, self._pos), min(off + len(data), self._pos + len(mv))
            if lo < hi:
                if hi - self._pos > n:
                    mv[n:hi - self._pos] = bytes(hi - self._pos - n)
                    n = hi - self._pos
                mv[lo - self._pos:hi - self._pos] = data[lo - off:hi - off]
        self._pos += n
        return n

    def write(self, b: Any) -> int:
        mv = memoryview(b).cast("B")
        size = len(mv)
        done = 0
        if self.error is None:
            try:
                while done < size:
                    done += os.pwrite(self._fd, mv[done:], self._pos + done)
            except OSError as exc:
                self.error = exc
        if done < size and self._kept < _OVERLAY_MAX:
            self._overlay.append((self._pos + done, bytes(mv[done:])))
            self._kept += size - done
        self._pos += size
        return size

    def truncate(self, size: int | None = None) -> int:
        size = self._pos if size is None else size
        if self.error is None:
            try:
                os.ftruncate(self._fd, size)
            except OSError as exc:
                self.error = exc
        return size

    def flush(self) -> None:
        pass

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()


def check_h5_output(obj: Any) -> None:
    """Raise the write error of an HDF5 output opened by :func:`open_h5_output`
    (``obj``: the file or any group or dataset in it); call it between writes."""
    try:
        sink = _H5_SINKS.get(obj.file.filename)
    except (AttributeError, ValueError, RuntimeError):
        return
    if sink is not None and sink.error is not None:
        raise sink.error


@contextlib.contextmanager
def open_h5_output(path: str | os.PathLike, mode: str = "w") -> Iterator[Any]:
    """``h5py.File`` on ``path`` (a temporary of :func:`atomic_path`) that survives a
    full disk: the write error is raised from Python when the block ends (or at a
    :func:`check_h5_output`), never met by HDF5, so the file closes cleanly.

    ``mode``: ``"w"`` (create, truncate) or ``"r+"`` (complete a file just written).
    """
    import h5py

    if mode not in ("w", "r+"):
        raise ValueError(f"mode must be 'w' or 'r+', got {mode!r}")
    sink = _SafeSink(Path(path), truncate=(mode == "w"))
    _H5_SINKS[sink.name] = sink
    failure: BaseException | None = None
    try:
        f = h5py.File(sink, mode)
        try:
            yield f
        except BaseException as exc:  # re-raised below
            failure = exc
        finally:
            f.close()
    finally:
        _H5_SINKS.pop(sink.name, None)
        sink.close()
    if sink.error is not None:  # the first write that failed is the cause
        err = sink.error
        raise OSError(err.errno, f"{err.strerror}: {sink.name}", sink.name) from None
    if failure is not None:
        raise failure


def to_jsonable(x: Any, nonfinite: list[int] | None = None) -> Any:
    """``x`` with NumPy values converted and NaN/Inf as None (JSON has no NaN).

    ``nonfinite``, if given, is a one-element counter of the values replaced.
    """
    import numpy as np

    if isinstance(x, Mapping):
        return {str(k): to_jsonable(v, nonfinite) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v, nonfinite) for v in x]
    if isinstance(x, np.ndarray):
        return [to_jsonable(v, nonfinite) for v in x.tolist()]
    if isinstance(x, (np.floating, float)):
        f = float(x)
        if f == f and abs(f) != float("inf"):
            return f
        if nonfinite is not None:
            nonfinite[0] += 1
        return None
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.bool_,)):
        return bool(x)
    if isinstance(x, str):
        return display_path(x)
    if hasattr(x, "value") and isinstance(x.value, str):  # enums
        return x.value
    if isinstance(x, os.PathLike):
        return display_path(x)
    return x
