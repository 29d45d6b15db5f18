"""Output files: one rule for every writer, and one atomic write protocol.

Rule (:func:`check_output`): an output is never the same file as an input
(``os.path.samefile``: symlinks and hard links included), and an existing output
is replaced only when the user asked for it (``--overwrite``). A refusal raises
:class:`OutputRefusedError`, which the command line reports as a usage error
(exit 2) in one line.

Protocol (:func:`atomic_path`): the output is written under a hidden temporary
name in the target folder, ``.NAME.xpcs-HOST-PID-RANDOM.tmp``, flushed to disk
(fsync) and renamed onto the target, so a reader or a crash never sees half a
file. The temporary name carries the writer's host and process id: temporaries
left behind by a killed writer (``kill -9`` cannot be caught) are removed at the
next write into that folder once their process is gone.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import socket
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from xpcsviewer.io.errors import display_path
from xpcsviewer.progress import check_interrupted

__all__ = [
    "OutputRefusedError",
    "atomic_path",
    "check_distinct_inputs",
    "check_output",
    "display_path",
    "sweep_stale_temps",
    "to_jsonable",
]


class OutputRefusedError(ValueError):
    """An output path that must not be written; the CLI exits 2 with this one line."""


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def check_output(
    output: str | os.PathLike,
    inputs: Iterable[str | os.PathLike] = (),
    overwrite: bool = False,
) -> Path:
    """Refuse an output that is an input, or that exists without ``overwrite``.

    Parameters
    ----------
    output : path
        The file about to be written.
    inputs : iterable of path
        Every file the command reads.
    overwrite : bool
        Replace an existing ``output`` (never an input, never a folder).

    Returns
    -------
    Path
        ``output``.

    Raises
    ------
    OutputRefusedError
        Same file as an input, an existing folder, or an existing file without
        ``overwrite``.
    """
    out = Path(output)
    shown = display_path(out)
    for p in inputs:
        if _same_file(out, Path(p)):
            raise OutputRefusedError(
                f"{shown}: is one of the input files ({display_path(p)}); "
                "refusing to write over an input (choose a new output name)"
            )
    if out.is_dir():
        raise OutputRefusedError(f"{shown}: is a folder (expected a file name)")
    if out.exists() or out.is_symlink():
        if not overwrite:
            raise OutputRefusedError(
                f"{shown}: exists; refusing to replace it (use --overwrite)"
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


def _fsync_path(path: Path, directory: bool = False) -> None:
    flags = os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems (and folders on some systems) cannot fsync
    finally:
        os.close(fd)


def _temp_name(path: Path) -> Path:
    stem = path.name
    if len(os.fsencode(stem)) > 180:  # keep the whole name under NAME_MAX
        stem = stem[:60]
    tag = f"xpcs-{_HOST}-{os.getpid()}-{secrets.token_hex(4)}"
    return path.parent / f".{stem}.{tag}.tmp"


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it becomes ``path``.

    The caller writes the whole output to the yielded path (any writer: h5py,
    matplotlib, Qt). On leaving the block the file is fsynced, given the mode
    ``0o666 & ~umask``, and renamed onto ``path`` (then the folder is fsynced).
    On any exception (Ctrl-C included) the temporary is removed and ``path`` is
    untouched. Stale temporaries of dead writers in the folder are swept first.

    Raises
    ------
    FileNotFoundError
        The target folder does not exist.
    """
    path = Path(path)
    folder = path.parent
    if not folder.is_dir():
        raise FileNotFoundError(f"{display_path(folder)}: output folder does not exist")
    sweep_stale_temps(folder)
    while True:
        tmp = _temp_name(path)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            break
        except FileExistsError:
            continue
    os.close(fd)
    try:
        yield tmp
        check_interrupted()  # Ctrl-C during the write: keep the old target
        _fsync_path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_path(folder, directory=True)


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
