"""What an HDF5 file may make us read besides itself (issue 34).

An HDF5 file can name other files: external links, virtual-dataset (VDS) sources and
external raw storage (``h5py`` ``external=``). HDF5 opens them on its own when a link
is followed or a dataset read, and an ``open`` of a named pipe waits for a writer
forever (Ctrl-C included). So every file is checked when it is opened
(:func:`check_file_pointers`, called by :func:`~xpcsviewer.io._h5open.open_h5_file`),
before anything in it is read. The policy, in order:

1. a file HDF5 would open that is not a regular file (a FIFO, a device, a socket) is
   refused, always;
2. a file outside the input's folder (an absolute path elsewhere, ``..``, a symbolic
   link out) is refused unless external data are allowed (``--allow-external``,
   ``XPCSVIEWER_ALLOW_EXTERNAL=1``); inside the folder (the per-pixel G2 side file
   ``X_results_G2.hdf`` linked from ``X_results.hdf``) it is read;
3. a VDS source or an external storage file that does not exist is an error naming it
   (HDF5 would read the fill value: all zeros, no error); a dangling external link is
   left to the reader, which names it when the data behind it are needed.

"The file HDF5 would open" follows HDF5's own search: for links and VDS sources the
absolute name, then ``HDF5_EXT_PREFIX`` / ``HDF5_VDS_PREFIX``, the linking file's
folder, then the current folder, up to the first name that exists; external
raw storage is found through ``HDF5_EXTFILE_PREFIX`` or else the current folder.
Every candidate met on the way is checked, so a fallback cannot read outside either.
Linked files are checked in turn (to a depth of :data:`MAX_DEPTH`).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h5py

from xpcsviewer.io.errors import XpcsFileError

__all__ = [
    "ALLOW_ENV",
    "ExternalDataRefused",
    "allowing_external",
    "check_file_pointers",
    "dataset_problem",
    "external_allowed",
    "may_exist",
    "pointers_ok",
]

#: Environment variable that allows external data (``1``/``true``/``yes``); the CLI's
#: ``--allow-external`` sets it for the run, so Dask worker processes inherit it.
ALLOW_ENV = "XPCSVIEWER_ALLOW_EXTERNAL"
#: Files linked from linked files are checked to this depth; deeper is refused.
MAX_DEPTH = 8
HINT = "run with --allow-external to read it"

_allow: bool | None = None
#: Identities (device, inode, size, mtime, ctime) of files found to point nowhere.
_NO_POINTERS: set[tuple[int, ...]] = set()


def external_allowed() -> bool:
    """Whether files outside the input's folder may be read (never non-regular ones)."""
    if _allow is not None:
        return _allow
    return os.environ.get(ALLOW_ENV, "").strip().lower() in ("1", "true", "yes", "on")


@contextlib.contextmanager
def allowing_external(allow: bool) -> Iterator[None]:
    """Allow (or not) external data for the duration, in this process and in the
    processes it starts (through :data:`ALLOW_ENV`); restored afterwards."""
    global _allow
    saved, saved_env = _allow, os.environ.get(ALLOW_ENV)
    _allow = bool(allow)
    os.environ[ALLOW_ENV] = "1" if allow else "0"
    try:
        yield
    finally:
        _allow = saved
        if saved_env is None:
            os.environ.pop(ALLOW_ENV, None)
        else:
            os.environ[ALLOW_ENV] = saved_env


class ExternalDataRefused(XpcsFileError):
    """A file points at data HDF5 would read from elsewhere, against the policy."""


def _kind_of(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def _inside(path: Path, folder: Path) -> bool:
    try:
        Path(os.path.realpath(path)).relative_to(os.path.realpath(folder))
    except ValueError:
        return False
    return True


def _prefixes(env: str, origin: Path) -> list[Path]:
    out = []
    for p in os.environ.get(env, "").split(os.pathsep):
        if p:
            out.append(Path(p.replace("${ORIGIN}", os.fspath(origin))))
    return out


def _search(name: str, holder: Path, env: str) -> list[Path]:
    """The files HDF5 tries, in order, for an external link or VDS source ``name``
    written in a file of folder ``holder`` (HDF5's ``H5F_prefix_open_file``)."""
    p = Path(name)
    cands = []
    rel = name
    if p.is_absolute():
        cands.append(p)
        rel = p.name  # HDF5 then looks for the last component only
    cands += [q / rel for q in _prefixes(env, holder)]
    cands.append(holder / rel)
    try:
        cands.append(Path.cwd() / rel)
    except OSError:  # the current folder was deleted: HDF5 finds nothing there either
        pass
    return cands


def hdf5_target(name: str, holder: Path, kind: str = "link") -> Path | None:
    """The file HDF5 opens for an external link (``kind="link"``) or VDS source
    (``"vds"``) named ``name`` in a file of folder ``holder``: the first candidate of
    its search that is an HDF5 file, or None (used by the check; tested against HDF5)."""
    env = "HDF5_EXT_PREFIX" if kind == "link" else "HDF5_VDS_PREFIX"
    for c in _search(name, holder, env):
        try:
            mode = os.stat(c).st_mode
        except OSError:
            continue
        return c if stat.S_ISREG(mode) and _is_hdf5(c) else None
    return None


def _efile(name: str, holder: Path) -> Path:
    """The file HDF5 reads for external raw storage ``name`` (its efile prefix, else
    the current folder: not the file's folder)."""
    pre = _prefixes("HDF5_EXTFILE_PREFIX", holder)
    p = Path(name)
    if p.is_absolute():
        return p
    try:
        return (pre[0] if pre else Path.cwd()) / p
    except OSError:  # no current folder
        return holder / p


def _is_hdf5(path: Path) -> bool:
    from xpcsviewer.io._h5open import read_superblock

    return read_superblock(path) is not None


class _Checker:
    def __init__(self, input_path: Path, allow: bool) -> None:
        self.input = input_path
        self.folder = Path(os.path.abspath(input_path)).parent
        self.allow = allow
        self.seen: set[str] = set()
        self.pointers = 0  #: links, VDS sources and external files met

    def refuse(self, where: str, what: str, name: str, target: Path | None,
               problem: str, expected: str, hint: bool = False) -> ExternalDataRefused:
        t = None if target is None else os.path.normpath(target)
        shown = name if t is None or t == name else f"{name} ({t})"
        msg = f"{what} {shown} {problem}"
        if hint:
            msg += f"; {HINT}"
        return ExternalDataRefused(self.input, msg, dataset=where, expected=expected)

    def verdict(self, where: str, what: str, name: str, c: Path) -> str | None:
        """Raise when candidate ``c`` may not be opened; 'missing' when it does not
        exist, None when it may be read."""
        try:
            mode = os.stat(c).st_mode
        except OSError:
            return "missing"
        odd = _kind_of(mode)
        if odd is not None:
            raise self.refuse(where, what, name, c, f"is {odd}, not a regular file: "
                              "not read", "a regular file")
        if not self.allow and not _inside(c, self.folder):
            raise self.refuse(where, what, name, c, "lies outside the input's folder "
                              f"({self.folder}): not read",
                              "data inside the input's folder", hint=True)
        return None

    def linked(self, where: str, what: str, name: str, holder: Path, env: str,
               depth: int, required: bool) -> None:
        for c in _search(name, holder, env):
            if self.verdict(where, what, name, c) == "missing":
                continue
            # HDF5 stops at the first file that exists (not HDF5: an error, no fallback)
            if _is_hdf5(c):
                self.scan_file(c, depth + 1)
                return
            break
        if required:
            raise self.refuse(where, what, name, None, "does not exist (it would read "
                              "as fill values)", "an existing source file")

    def scan_file(self, path: Path, depth: int) -> None:
        key = os.path.realpath(path)
        if key in self.seen:
            return
        self.seen.add(key)
        if depth > MAX_DEPTH:
            raise ExternalDataRefused(self.input, f"files link to files more than "
                                      f"{MAX_DEPTH} deep (at {path}): not read")
        try:
            f = h5py.File(path, "r", locking=False)
        except (OSError, ValueError):
            return  # HDF5 will not read it either; the reader names what is missing
        with f:
            self.scan(f, Path(os.path.abspath(path)).parent, depth)

    def scan(self, f: h5py.File, holder: Path, depth: int) -> None:
        # Low-level visits (metadata only, hard links only): a result file in ~1 ms.
        fid = f.id
        ext: list[bytes] = []
        dsets: list[bytes] = []

        def on_link(name: bytes, info: Any) -> None:
            if info.type == h5py.h5l.TYPE_EXTERNAL:
                ext.append(name)

        def on_object(name: bytes, info: Any) -> None:
            if info.type == h5py.h5o.TYPE_DATASET:
                dsets.append(name)

        fid.links.visit(on_link, info=True)
        h5py.h5o.visit(fid, on_object, info=True)
        self.pointers += len(ext)
        for n in ext:
            try:
                target = fid.links.get_val(n)[0]
            except (KeyError, RuntimeError, OSError, ValueError):
                continue
            self.linked("/" + os.fsdecode(n), "an external link to", os.fsdecode(target),
                        holder, "HDF5_EXT_PREFIX", depth, required=False)
        for n in dsets:
            self.dataset(fid, n, "/" + os.fsdecode(n), holder, depth)

    def dataset(self, fid: Any, name: bytes, where: str, holder: Path,
                depth: int) -> None:
        try:
            dcpl = h5py.h5d.open(fid, name).get_create_plist()
            sources = ([os.fsdecode(dcpl.get_virtual_filename(i))
                        for i in range(dcpl.get_virtual_count())]
                       if dcpl.get_layout() == h5py.h5d.VIRTUAL else [])
            ext = [dcpl.get_external(i)[0] for i in range(dcpl.get_external_count())]
        except (KeyError, RuntimeError, OSError, ValueError):
            return  # a damaged object: its reader says so
        self.pointers += len(sources) + len(ext)
        for src in dict.fromkeys(sources):
            if src not in (".", ""):
                self.linked(where, "a virtual dataset whose source is", src, holder,
                            "HDF5_VDS_PREFIX", depth, required=True)
        for raw in dict.fromkeys(ext):
            nm = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
            c = _efile(nm, holder)
            what = "stored in the external raw file"
            beside = Path(os.path.normpath(holder / nm))
            if not self.allow and not _inside(beside, self.folder):  # "../x", "/etc/x"
                raise self.refuse(where, what, nm, beside, "lies outside the input's "
                                  f"folder ({self.folder}): not read",
                                  "data inside the input's folder", hint=True)
            if self.verdict(where, what, nm, c) == "missing":
                raise self.refuse(where, what, nm, c, "which does not exist: not read",
                                  "an existing storage file")


def check_file_pointers(f: h5py.File, *, allow: bool | None = None) -> None:
    """Check every external link, VDS source and external storage file of ``f`` (and
    of the HDF5 files it links to) against the policy of this module.

    Raises
    ------
    ExternalDataRefused
        Naming the input, the dataset or link, the target, what was expected and, for
        a target outside the input's folder, how to allow it.
    """
    p = Path(f.filename)
    try:
        st = os.stat(p)
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    except OSError:
        key = None
    if key is not None and key in _NO_POINTERS:
        return
    ck = _Checker(p, external_allowed() if allow is None else allow)
    ck.seen.add(os.path.realpath(p))
    ck.scan(f, ck.folder, 0)
    if key is not None and ck.pointers == 0:
        # Nothing points elsewhere: true until the file changes (its stat would).
        if len(_NO_POINTERS) >= 4096:
            _NO_POINTERS.clear()
        _NO_POINTERS.add(key)


def dataset_problem(f: h5py.File, path: str) -> str | None:
    """Why the data of ``path`` in ``f`` may not be read under the policy (the links on
    the way, the dataset's VDS sources and external storage), or None."""
    ck = _Checker(Path(f.filename), external_allowed())
    ck.seen.add(os.path.realpath(f.filename))
    parts = [q for q in path.split("/") if q]
    try:
        for k in range(len(parts)):
            sub = "/".join(parts[: k + 1])
            try:
                link = f.get(sub, getlink=True)
            except (KeyError, RuntimeError, OSError, ValueError):
                return None  # the caller's lookup says what is wrong
            if isinstance(link, h5py.ExternalLink):
                ck.linked("/" + sub, "an external link to", link.filename, ck.folder,
                          "HDF5_EXT_PREFIX", 0, required=False)
        ck.dataset(f.id, "/".join(parts).encode(), "/" + "/".join(parts), ck.folder, 0)
    except ExternalDataRefused as exc:
        return exc.problem
    return None


def pointers_ok(f: h5py.File) -> bool:
    """:func:`check_file_pointers` as a yes/no, for probes that look inside a file
    before choosing its reader (the reader then says what is wrong)."""
    try:
        check_file_pointers(f)
    except XpcsFileError:
        return False
    return True


def may_exist(f: h5py.File, path: str) -> bool:
    """Whether ``path`` names something in ``f``, found without following an external
    or soft link (one on the way counts as yes: the reader then checks it)."""
    g: Any = f
    for part in [q for q in path.split("/") if q]:
        try:
            link = g.get(part, getlink=True)
        except (KeyError, RuntimeError, OSError, ValueError):
            return False
        if link is None:
            return False
        if not isinstance(link, h5py.HardLink):
            return True
        g = g[part]
    return True
