"""What a file is, told cheaply from its headers: a result file, a raw source (and its
layout, frames and events), a q-map, a per-pixel G2 side file, or something else.

The browser lists a folder with :func:`list_sources` (a worker job): every candidate
file is opened once for its header (HDF5 object lookups and dataset shapes, the first
and last word of a Rigaku ``.bin``, a ``.npy`` header); no data pass, so a folder of
a thousand files lists in about a second. Files that make up one source are listed
once: the six module files of a Rigaku 3M (``NAME.bin.000`` ... ``.005``) and the
numbered blocks of an ESRF sparse series (``NAME_00000.h5``, ``NAME_00001.h5``, ...).

Results and q-maps are told apart by their HDF5 paths (docs/result-file-format.md):
a result holds ``/xpcs/qmap`` (NeXus) or ``/exchange`` + ``/xpcs/dqmap`` (legacy), a
q-map (partition file) ``/qmap``, a side file ``/G2IPIF``. Raw layouts are those of
:func:`~xpcsviewer.io.raw.raw_layout`, by content, never by name.

Only numpy and h5py.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.io._file_kinds import (
    LAYOUT_NAMES,
    TIMEPIX_DEFAULT_FRAMES,
    FileKind,
    default_bin_time,
    hdf5_kind,
    raw_kind,
)

__all__ = ["CANDIDATE_SUFFIXES", "LAYOUT_NAMES", "TIMEPIX_DEFAULT_FRAMES", "FileKind",
           "ListedSource", "classify_path", "default_bin_time", "list_sources", "qmap_beside",
           "source_name"]

#: file names the folder listing looks at (HDF5, NumPy, Rigaku words); others are skipped
CANDIDATE_SUFFIXES = (".hdf", ".h5", ".hdf5", ".nxs", ".npy", ".bin")
_RIGAKU_MODULE = re.compile(r"^(.*)\.00([0-5])$")
_NUMBERED = re.compile(r"^(.*_)(\d{4,})(\.[^.]+)$")
@dataclass(frozen=True)
class ListedSource:
    """One entry of a folder listing: shown name, path to open, newest mtime, kind."""

    name: str
    path: str
    mtime: float
    kind: FileKind


def _npy(path: Path) -> FileKind:
    try:
        with open(path, "rb") as fh:
            version = np.lib.format.read_magic(fh)
            read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                    else np.lib.format.read_array_header_2_0)
            shape, _, _ = read(fh)  # the header only
    except Exception as exc:  # any parse error: not an array file
        return FileKind("other", text=f"not a readable .npy array ({exc})")
    if len(shape) != 3:
        return FileKind("other", text=f".npy array of shape {shape}, not (frames, rows, cols)")
    return raw_kind(path, "npy", frames=int(shape[0]),
                detector_shape=(int(shape[1]), int(shape[2])))


def _rigaku_module(path: Path) -> tuple[int, int] | None:
    """(frames, hits) of one Rigaku module file from its last word and size."""
    from xpcsviewer.io.raw.rigaku import word_frame

    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            fh.seek((size // 8 - 1) * 8)
            last = int.from_bytes(fh.read(8), "little")
    except (OSError, ValueError):
        return None
    return word_frame(last) + 1, size // 8


def _rigaku(path: Path, layout: str) -> FileKind:
    from xpcsviewer.io.raw.rigaku import MODULE_SHAPE, RIGAKU_3M_SHAPE, rigaku_module_files

    if layout == "rigaku-3m":
        files = [f for f in (rigaku_module_files(path) or [path]) if f.is_file()]
        got = [_rigaku_module(f) for f in files]
        frames = max((g[0] for g in got if g), default=None)
        events = sum(g[1] for g in got if g) if all(got) else None
        fk = raw_kind(path, layout, frames=frames, events=events,
                  files=tuple(str(f) for f in files), detector_shape=RIGAKU_3M_SHAPE)
        if len(files) < 6:
            fk = replace(fk, text=fk.text + f" ({6 - len(files)} module file(s) missing)")
        return fk
    got = _rigaku_module(path)
    return raw_kind(path, layout, frames=got and got[0], events=got and got[1],
                detector_shape=MODULE_SHAPE)


def _classify_file(path: Path) -> FileKind:
    """One file on its own (a 3M module file counts the whole set; an ESRF block only
    itself)."""
    from xpcsviewer.io.raw.dense import file_kind
    from xpcsviewer.io.raw.rigaku import rigaku_layout

    if not path.is_file():
        return FileKind("other", text="not a regular file")
    kind = file_kind(path)
    if kind == "hdf5":
        return hdf5_kind(path)
    if kind == "npy":
        return _npy(path)
    layout = rigaku_layout(path)
    if layout is not None:
        return _rigaku(path, layout)
    return FileKind("other", text="neither HDF5, .npy nor Rigaku hit words")


def classify_path(path: str | os.PathLike) -> FileKind:
    """What ``path`` is (a file, the stem ``NAME.bin`` of a Rigaku 3M, or a folder
    holding an ESRF block series), from headers only; never raises for bad input
    (kind ``"other"`` says why).

    A block of an ESRF series stands for the whole series: frames and hits are summed
    over its blocks, :attr:`FileKind.files` lists them.
    """
    p = Path(path)
    try:
        if p.is_dir():
            from xpcsviewer.io.raw.esrf_csr import esrf_series_in_folder

            try:
                files = esrf_series_in_folder(p)
            except Exception as exc:  # several series
                return FileKind("other", text=str(exc))
            return (_series([(f, _classify_file(f)) for f in files]) if files
                    else FileKind("other", text="a folder without an ESRF block series"))
        if not p.exists():
            from xpcsviewer.io.raw.rigaku import is_3m_stem

            if is_3m_stem(p):
                return _rigaku(p.with_name(p.name + ".000"), "rigaku-3m")
            return FileKind("other", text="does not exist")
        fk = _classify_file(p)
        if fk.layout == "esrf-csr" and _NUMBERED.match(p.name):
            from xpcsviewer.io.raw.esrf_csr import esrf_series

            try:
                files = esrf_series(p)
            except Exception as exc:  # a gap in the series: the reader will say so
                return replace(fk, text=fk.text + f" (series: {exc})")
            if len(files) > 1:
                return _series([(f, fk if f == p else _classify_file(f)) for f in files])
        return fk
    except OSError as exc:
        return FileKind("other", text=f"cannot be read ({exc.strerror or exc})")


def _series(blocks: list[tuple[Path, FileKind]]) -> FileKind:
    """One ESRF source from its block files' kinds."""
    first = blocks[0][1]
    frames = [k.frames for _, k in blocks]
    events = [k.events for _, k in blocks]
    return raw_kind(blocks[0][0], "esrf-csr",
                frames=None if None in frames else sum(frames),
                events=None if None in events else sum(events),
                detector_shape=first.detector_shape,
                files=tuple(str(p) for p, _ in blocks))


def qmap_beside(path: str | os.PathLike) -> str | None:
    """The q-map the demo pairs with a raw source: ``NAME_qmap.h5`` beside it, NAME the
    source's name without its extension, module suffix (``.bin.000``), block number
    (``_00000``) or layout word (``_sparse``, ``_sparse_frame_0``, ``_events``, ``_raw``);
    None when no such file is there."""
    p = Path(path)
    name = p.name
    m = _RIGAKU_MODULE.match(name)
    if m:
        name = m.group(1)
    m = _NUMBERED.match(name)
    if m:
        name = m.group(1).rstrip("_")
    stem = name.split(".", 1)[0] if "." in name else name
    cands = [stem]
    for word in ("_sparse_frame_0", "_sparse_frame", "_sparse", "_events", "_raw", "_data"):
        if stem.endswith(word):
            cands.append(stem[: -len(word)])
    for c in cands:
        for ext in (".h5", ".hdf", ".hdf5"):
            q = p.with_name(f"{c}_qmap{ext}")
            if q.is_file():
                return str(q)
    return None


def source_name(kind: FileKind, path: str | os.PathLike) -> str:
    """The name a source is shown by: ``NAME.bin.000-005`` for a Rigaku 3M set,
    ``NAME_00000-00003.h5`` for an ESRF block series, else the file's name."""
    files = [Path(f) for f in kind.files] or [Path(path)]
    if kind.layout == "rigaku-3m":
        m = _RIGAKU_MODULE.match(files[0].name)
        if m and len(files) == 6:
            return f"{m.group(1)}.000-005"
        if m:
            return f"{m.group(1)}.00N ({len(files)} of 6)"
    if kind.layout == "esrf-csr" and len(files) > 1:
        first, last = _NUMBERED.match(files[0].name), _NUMBERED.match(files[-1].name)
        if first and last:
            return f"{first.group(1)}{first.group(2)}-{last.group(2)}{first.group(3)}"
    return Path(path).name if not kind.files else files[0].name


# -------------------------------------------------------------------- listing
def _candidate(name: str) -> bool:
    low = name.lower()
    return (not name.startswith(".")
            and (low.endswith(CANDIDATE_SUFFIXES) or _RIGAKU_MODULE.match(low) is not None))


def list_sources(folder: str | os.PathLike, progress: Any = None, cancel: Any = None,
                 others: bool = False) -> list[ListedSource]:
    """Every result, raw source, q-map and side file of ``folder`` (not recursive; no
    dot-files), each once: a Rigaku 3M set and an ESRF block series are one entry each
    (named ``NAME.bin.000-005``, ``NAME_00000-00003.h5``; opened by their first file).
    Files of other kinds are left out unless ``others`` (then listed with kind
    ``"other"`` and why). Worker job (``progress(done, total)``,
    ``cancel.raise_if_cancelled()``).

    Raises
    ------
    NotADirectoryError
        ``folder`` is not a folder.
    """
    folder_p = Path(folder)
    if not folder_p.is_dir():
        raise NotADirectoryError(f"{folder}: not a folder")
    found: list[tuple[str, str, float]] = []
    with os.scandir(folder_p) as it:
        for de in it:
            if not _candidate(de.name):
                continue
            try:
                if not de.is_file():
                    continue
                found.append((de.name, de.path, de.stat().st_mtime))
            except OSError:
                continue
    found.sort()
    out: list[ListedSource] = []
    modules: dict[str, list[tuple[str, str, float]]] = {}
    blocks: dict[tuple[str, str], list[tuple[str, str, float, FileKind]]] = {}
    for i, (name, path, mtime) in enumerate(found):
        if cancel is not None and i % 64 == 0:
            cancel.raise_if_cancelled()
        if progress is not None and i % 64 == 0:
            progress(i, len(found))
        m = _RIGAKU_MODULE.match(name)
        if m:  # the set is classified once, by its first module file
            modules.setdefault(m.group(1), []).append((name, path, mtime))
            continue
        fk = _classify_file(Path(path))
        mb = _NUMBERED.match(name)
        if fk.layout == "esrf-csr" and mb:
            blocks.setdefault((mb.group(1), mb.group(3)), []).append((name, path, mtime, fk))
            continue
        if fk.kind != "other" or others:
            out.append(ListedSource(name, path, mtime, fk))
    for files in modules.values():
        # the first module file whose words are hits stands for the set (a module
        # without hits holds only a count-0 word)
        fk = FileKind("other")
        for _, path, _ in files:
            fk = _classify_file(Path(path))
            if fk.kind != "other":
                break
        if fk.kind == "other":
            if others:
                out += [ListedSource(n, p, t, fk) for n, p, t in files]
            continue
        if fk.layout == "rigaku-3m":
            out.append(ListedSource(source_name(fk, files[0][1]), files[0][1],
                                    max(f[2] for f in files), fk))
        else:  # lone module-numbered files: each is its own source
            out += [ListedSource(n, p, t, _classify_file(Path(p))) for n, p, t in files]
    for got in blocks.values():
        got.sort(key=lambda g: int(_NUMBERED.match(g[0]).group(2)))
        if len(got) == 1:
            name, path, mtime, fk = got[0]
            out.append(ListedSource(name, path, mtime, fk))
            continue
        fk = _series([(Path(g[1]), g[3]) for g in got])
        out.append(ListedSource(source_name(fk, got[0][1]), got[0][1],
                                max(g[2] for g in got), fk))
    if progress is not None:
        progress(len(found), len(found))
    return out
