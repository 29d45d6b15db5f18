"""Which files an HDF5 file reads through links, and which files read a given one.

Both directions read link tables only (external links, virtual dataset sources,
external raw storage): no link is followed, no data are read, and only regular
files are opened (a FIFO would block HDF5's open). :mod:`xpcsviewer.io.outputs`
uses them for its rule: an output is never a file an input reads, and
``--overwrite`` never replaces a file another result reads (issue 34, item 6).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable
from pathlib import Path

from xpcsviewer.io._h5open import _HDF5_SIGNATURE, open_regular

__all__ = ["MAX_SCANNED_FILES", "linked_files", "linking_files"]

#: (path, device, inode, size, mtime) -> files an HDF5 input links to
_LINK_CACHE: dict[tuple, tuple[Path, ...]] = {}
#: The folder scan of :func:`linking_files` reads at most this many files, in
#: at most ``SCAN_BUDGET_S`` seconds (a result's link table: about 1 ms).
MAX_SCANNED_FILES = 5000
SCAN_BUDGET_S = 30.0
_H5_SUFFIXES = (".hdf", ".h5", ".hdf5", ".nxs", ".nx5", ".he5")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _is_hdf5(path: Path) -> bool:
    try:
        with open_regular(path) as fh:
            for off in (0, 512, 1024, 2048, 4096):
                fh.seek(off)
                if fh.read(8) == _HDF5_SIGNATURE:
                    return True
    except (OSError, ValueError):
        pass
    return False


def _link_targets(parent: Path, name: str) -> list[Path]:
    """Where HDF5 may find the file of an external link (or a virtual dataset)."""
    if name in ("", "."):
        return []
    target = Path(name)
    dirs = [parent.parent, Path.cwd()]
    for var in ("HDF5_EXT_PREFIX", "HDF5_VDS_PREFIX", "HDF5_EXTFILE_PREFIX"):
        dirs += [Path(d) for d in os.environ.get(var, "").split(":") if d]
    out = [target] if target.is_absolute() else []
    out += [d / target for d in dirs] if not target.is_absolute() else []
    out += [d / target.name for d in dirs]  # HDF5 also tries the bare name there
    return out


def _link_file_names(path: Path) -> list[str]:
    """File names in ``path``'s external links, virtual dataset sources and external
    storage. Low-level h5py: a result's tables in about 1.5 ms (the high-level
    visit, a Python object per link and an open per dataset, took 12 ms)."""
    import h5py
    from h5py import h5d, h5l, h5o

    names: list[str] = []
    ext: list[bytes] = []
    dsets: list[bytes] = []

    def on_link(name: bytes, info: object) -> None:
        if info.type == h5l.TYPE_EXTERNAL:
            ext.append(name)

    def on_object(name: bytes, info: object) -> None:
        if info.type == h5o.TYPE_DATASET:
            dsets.append(name)

    with h5py.File(path, "r", locking=False) as f:
        fid = f.id
        fid.links.visit(on_link, info=True)
        for n in ext:
            names.append(os.fsdecode(fid.links.get_val(n)[0]))
        h5o.visit(fid, on_object, info=True)
        for n in dsets:
            with contextlib.suppress(Exception):
                pl = h5d.open(fid, n).get_create_plist()
                if pl.get_layout() == h5d.VIRTUAL:
                    names += [os.fsdecode(pl.get_virtual_filename(i))
                              for i in range(pl.get_virtual_count())]
                names += [os.fsdecode(pl.get_external(i)[0])
                          for i in range(pl.get_external_count())]
    return names


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _direct_links(path: Path, st: os.stat_result | None = None) -> tuple[Path, ...]:
    if st is None:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return ()
    key = (os.fspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    if key in _LINK_CACHE:
        return _LINK_CACHE[key]
    found: list[Path] = []
    if _is_hdf5(path):
        with contextlib.suppress(Exception):  # unreadable: the reader says why
            found = [t for name in _link_file_names(path) for t in _link_targets(path, name)]
    out = tuple(dict.fromkeys(found))
    if len(_LINK_CACHE) > 4096:
        _LINK_CACHE.clear()
    _LINK_CACHE[key] = out
    return out


def _links_of(inputs: Iterable[str | os.PathLike], depth: int) -> list[tuple[Path, Path]]:
    """(linked file, the input that reads it) pairs, ``depth`` links deep."""
    seen: set[str] = set()
    out: list[tuple[Path, Path]] = []
    todo = [(Path(p), Path(p)) for p in inputs]
    for _ in range(depth):
        nxt = []
        for p, origin in todo:
            for q in _direct_links(p):
                k = os.fspath(q)
                if k not in seen:
                    seen.add(k)
                    out.append((q, origin))
                    if q.is_file():
                        nxt.append((q, origin))
        todo = nxt
        if not todo:
            break
    return out


def linked_files(inputs: Iterable[str | os.PathLike], depth: int = 4) -> list[Path]:
    """Every file the HDF5 ``inputs`` read through external links and virtual
    datasets (a result's per-pixel G2 side file, a raw master's data files), as the
    paths HDF5 may resolve them to, followed ``depth`` links deep.

    The side file is found from the link the file reads, not from its name:
    a renamed result file still reads ``X_results_G2.hdf``.
    """
    return [q for q, _ in _links_of(inputs, depth)]


def linking_files(target: str | os.PathLike,
                  exclude: Iterable[str | os.PathLike] = ()) -> list[Path]:
    """The HDF5 files in ``target``'s folder that read ``target`` through a link
    (external link, virtual dataset source, external storage).

    Only ``*.hdf``/``*.h5``-like regular files are opened, their link tables read
    (never followed); at most :data:`MAX_SCANNED_FILES` files and
    :data:`SCAN_BUDGET_S` seconds, newest first (a result just renamed keeps its
    time, so the scan ends with the oldest). ``exclude``: files that do not count
    (the output itself, or other outputs replaced by the same run).

    Returns
    -------
    list of Path
        The linking files, by name.
    """
    target = Path(target)
    tid = _file_id(target)
    if tid is None:
        return []
    skip = {tid} | {i for i in map(_file_id, map(Path, exclude)) if i is not None}
    try:
        entries = [de for de in os.scandir(target.parent or ".")
                   if de.name.lower().endswith(_H5_SUFFIXES)
                   and de.is_file(follow_symlinks=False)]
    except OSError:
        return []
    stats = {}
    for de in entries:
        with contextlib.suppress(OSError):
            stats[de.path] = de.stat(follow_symlinks=False)
    entries = sorted((de for de in entries if de.path in stats),
                     key=lambda de: stats[de.path].st_mtime_ns, reverse=True)
    out = []
    seen: dict[str, tuple[int, int] | None] = {}  # link target -> its file id
    deadline = time.monotonic() + SCAN_BUDGET_S
    for de in entries[:MAX_SCANNED_FILES]:
        st = stats[de.path]
        if (st.st_dev, st.st_ino) in skip:
            continue
        for q in _direct_links(Path(de.path), st):
            k = os.fspath(q)
            if k not in seen:
                seen[k] = _file_id(q)
            if seen[k] == tid:
                out.append(Path(de.path))
                break
        if time.monotonic() > deadline:
            break
    return sorted(out)
