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

import math
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import h5py
import numpy as np

__all__ = ["CANDIDATE_SUFFIXES", "LAYOUT_NAMES", "FileKind", "ListedSource", "classify_path",
           "default_bin_time", "list_sources", "qmap_beside", "source_name"]

#: file names the folder listing looks at (HDF5, NumPy, Rigaku words); others are skipped
CANDIDATE_SUFFIXES = (".hdf", ".h5", ".hdf5", ".nxs", ".npy", ".bin")
_RIGAKU_MODULE = re.compile(r"^(.*)\.00([0-5])$")
_NUMBERED = re.compile(r"^(.*_)(\d{4,})(\.[^.]+)$")
#: frames a Timepix list is cut into by default (its bin time is a whole number of ticks)
TIMEPIX_DEFAULT_FRAMES = 10_000

#: short names of the raw layouts, as the browser shows them
LAYOUT_NAMES = {
    "hdf5": "dense HDF5",
    "npy": "dense .npy",
    "rigaku": "Rigaku .bin",
    "rigaku-3m": "Rigaku 3M",
    "esrf-csr": "ESRF CSR",
    "id11-sparse": "ImageD11 sparse",
    "timepix": "Timepix events",
}


@dataclass(frozen=True)
class FileKind:
    """What a file (or a multi-file source) is.

    Attributes
    ----------
    kind : str
        ``"result"``, ``"raw"``, ``"qmap"``, ``"side"`` or ``"other"``.
    layout : str or None
        Raw layout (:data:`LAYOUT_NAMES` keys), None for other kinds.
    frames : int or None
        Raw frames (for a Timepix list: in frames of :attr:`bin_time`); None: unknown.
    events : int or None
        Hits or events of a sparse source; None for dense frames and other kinds.
    text : str
        One line a user reads ("raw: Rigaku .bin, 2,500 frames, 793,440 hits").
    files : tuple of str
        The files of the source (the six modules of a 3M, the blocks of a series).
    detector_shape : (int, int) or None
        Rows and columns when the header states them.
    frame_time : float or None
        Seconds per frame when the header states it.
    bin_time : float or None
        Timepix only: the default frame length (s), a whole number of ticks cutting the
        run into about :data:`TIMEPIX_DEFAULT_FRAMES` frames (the file's own
        ``bin_time`` attribute when it has one).
    """

    kind: str
    layout: str | None = None
    frames: int | None = None
    events: int | None = None
    text: str = ""
    files: tuple[str, ...] = ()
    detector_shape: tuple[int, int] | None = None
    frame_time: float | None = None
    bin_time: float | None = None

    @property
    def is_raw(self) -> bool:
        return self.kind == "raw"


@dataclass(frozen=True)
class ListedSource:
    """One entry of a folder listing: shown name, path to open, newest mtime, kind."""

    name: str
    path: str
    mtime: float
    kind: FileKind


# --------------------------------------------------------------------- helpers
def _hard(f: Any, path: str) -> Any:
    """The object at ``path`` when every link on the way is a hard link (never follows a
    link out of the file: a FIFO or a slow share would hang the listing); ``"link"``
    when one is not; None when absent."""
    g = f
    for part in [q for q in path.split("/") if q]:
        try:
            link = g.get(part, getlink=True)
        except (KeyError, RuntimeError, OSError, ValueError, TypeError):
            return None
        if link is None:
            return None
        if not isinstance(link, h5py.HardLink):
            return "link"
        try:
            g = g[part]
        except (KeyError, RuntimeError, OSError, ValueError):
            return None
    return g


def _len(f: Any, path: str) -> int | None:
    ds = _hard(f, path)
    if isinstance(ds, h5py.Dataset) and ds.ndim >= 1:
        return int(ds.shape[0])
    return None


def _groups_with(f: Any, names: tuple[str, ...], depth: int = 2) -> list[Any]:
    """Groups (the root and ``depth`` levels of hard links down) holding all ``names``
    as datasets, in name order."""
    out: list[Any] = []

    def walk(g: Any, level: int) -> None:
        if all(isinstance(_hard(g, n), h5py.Dataset) for n in names):
            out.append(g)
        if level >= depth:
            return
        try:
            keys = sorted(g.keys())
        except (RuntimeError, OSError):
            return
        for k in keys:
            sub = _hard(g, k)
            if isinstance(sub, h5py.Group):
                walk(sub, level + 1)

    walk(f, 0)
    return out


def _attr(obj: Any, *names: str) -> Any:
    try:
        have = set(obj.attrs.keys())
    except (OSError, RuntimeError, KeyError, TypeError, AttributeError):
        return None
    for n in names:
        if n in have:
            try:
                v = obj.attrs[n]
            except (OSError, RuntimeError, KeyError, TypeError):
                continue
            return v.decode() if isinstance(v, bytes) else v
    return None


def _shape2(v: Any) -> tuple[int, int] | None:
    try:
        a = np.asarray(v).ravel()
        if a.size == 2 and all(int(x) > 0 for x in a):
            return int(a[0]), int(a[1])
    except (TypeError, ValueError):
        pass
    return None


def _n(v: int | None) -> str:
    return "?" if v is None else f"{v:,}"


def _seconds(v: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("\u00b5s", 1e-6), ("ns", 1e-9)):
        if abs(v) >= scale:
            return f"{v / scale:.3g} {unit}"
    return f"{v / 1e-12:.3g} ps"


def _raw_text(fk: FileKind) -> str:
    name = LAYOUT_NAMES.get(fk.layout or "", fk.layout or "raw")
    parts = [f"raw: {name}"]
    if fk.layout == "rigaku-3m":
        parts[0] += " (6 module files)"
    elif len(fk.files) > 1:
        parts[0] += f" ({len(fk.files)} block files)"
    if fk.layout == "timepix":
        parts.append(f"{_n(fk.events)} events")
        if fk.bin_time is not None:
            parts.append(f"{_n(fk.frames)} frames of {_seconds(fk.bin_time)}")
        return ", ".join(parts)
    parts.append(f"{_n(fk.frames)} frames")
    if fk.events is not None:
        parts.append(f"{_n(fk.events)} hits")
    if fk.detector_shape is not None:
        parts.append("{} x {}".format(*fk.detector_shape))
    return ", ".join(parts)


def _raw(path: Path, layout: str, **kw: Any) -> FileKind:
    fk = FileKind("raw", layout, files=kw.pop("files", (str(path),)), **kw)
    return replace(fk, text=_raw_text(fk))


# ----------------------------------------------------------------- per layout
def default_bin_time(tick_s: float, span_ticks: int,
                     frames: int = TIMEPIX_DEFAULT_FRAMES) -> float:
    """A frame length for an event list: a whole number of ticks (1, 2 or 5 times a
    power of ten) cutting ``span_ticks`` into at most about ``frames`` frames."""
    want = max(1.0, span_ticks / max(frames, 1))
    k = 10 ** math.floor(math.log10(want))
    m = next(m * k for m in (1, 2, 5, 10) if m * k >= want - 1e-9 * want)
    return float(m) * tick_s


def _timepix(path: Path, grp: Any) -> FileKind:
    toa = grp["toa"]
    n = int(toa.shape[0]) if toa.ndim == 1 else None
    shape = _shape2(_attr(grp, "detector_shape"))
    if shape is None:
        shape = _shape2(_attr(grp.file, "detector_shape"))
    tick = _attr(toa, "tick_s")
    if tick is None:
        tick = _attr(grp, "tick_s")
    units = _attr(toa, "units", "unit")
    if units is None:
        units = _attr(grp, "toa_units")
    from xpcsviewer.io.raw.timepix import DEFAULT_RESOLUTION_S, UNITS

    per_value: float | None  # seconds per stored value
    if tick is not None:
        per_value = tick_s = float(tick)
    elif units is not None and str(units).strip() in UNITS:
        per_value = tick_s = UNITS[str(units).strip()]
    elif toa.dtype.kind == "f":
        per_value = 1.0
        res = _attr(toa, "resolution_s")
        tick_s = float(res) if res is not None else DEFAULT_RESOLUTION_S
    else:  # integer times without units: the reader says what is missing
        per_value = tick_s = None
    bin_time = frames = None
    stated = _attr(grp, "bin_time", "frame_time")
    if n and per_value is not None and tick_s and tick_s > 0:
        try:
            first, last = float(toa[0]), float(toa[n - 1])
        except (OSError, RuntimeError, ValueError, TypeError):
            first = last = math.nan
        span_s = (last - first) * per_value
        if math.isfinite(span_s) and span_s >= 0:
            try:
                bin_time = float(stated) if stated is not None and float(stated) > 0 else None
            except (TypeError, ValueError):
                bin_time = None
            if bin_time is None:
                bin_time = default_bin_time(tick_s, round(span_s / tick_s))
            ticks, m = round(span_s / tick_s), round(bin_time / tick_s)
            if m >= 1 and abs(m * tick_s - bin_time) <= 1e-9 * bin_time:
                frames = ticks // m + 1  # exact in whole ticks, as the reader counts
            else:
                frames = math.floor(span_s / bin_time) + 1
    return _raw(path, "timepix", frames=frames, events=n, detector_shape=shape,
                frame_time=bin_time, bin_time=bin_time)


def _keys(g: Any) -> set[str]:
    try:
        return set(g.keys())
    except (RuntimeError, OSError, KeyError, ValueError):
        return set()


def _hdf5(path: Path) -> FileKind:
    """An HDF5 file's kind from the names at its root (one listing), then the few
    objects that decide; a thousand files list in about a second."""
    try:
        f = h5py.File(path, "r", locking=False)
    except (OSError, RuntimeError, ValueError) as exc:
        return FileKind("other", text=f"HDF5 that cannot be opened ({exc})")
    with f:
        root = _keys(f)
        if "xpcs" in root:
            xpcs = _hard(f, "xpcs")
            inside = _keys(xpcs) if isinstance(xpcs, h5py.Group) else set()
            if "qmap" in inside or ("exchange" in root and "dqmap" in inside):
                return FileKind("result", text="result: " + _analyses(f, root, inside))
        if "G2IPIF" in root:
            return FileKind("side", text="per-pixel G2 side file (/G2IPIF) of "
                            + (p.name if (p := _side_result(path)) else "no result beside it"))
        if "qmap" in root:
            q = _hard(f, "qmap")
            if isinstance(q, h5py.Group):
                return _qmap_kind(q)
        if "entry" in root:
            got = _dense(path, f)
            if got is not None:
                return got
        if "entry_0000" in root:
            got = _esrf(path, f)
            if got is not None:
                return got
        from xpcsviewer.io.raw.id11 import ID11_NAMES
        from xpcsviewer.io.raw.timepix import TIMEPIX_NAMES

        if set(TIMEPIX_NAMES) <= root:  # the usual event list: at the root
            return _timepix(path, f)
        groups = _groups_with(f, ID11_NAMES)
        if groups:
            g = groups[0]
            shape = _shape2((_attr(g, "shape0"), _attr(g, "shape1")))
            return _raw(path, "id11-sparse", frames=_len(g, "nnz"), events=_len(g, "row"),
                        detector_shape=shape)
        groups = _groups_with(f, TIMEPIX_NAMES)
        if groups:
            return _timepix(path, groups[0])
    return FileKind("other", text="HDF5, neither a result, a q-map nor a raw source")


def _analyses(f: Any, root: set[str], inside: set[str]) -> str:
    what = []
    if "multitau" in inside and _hard(f, "/xpcs/multitau/normalized_g2") is not None:
        what.append("multi-tau")
    if "twotime" in inside and _hard(f, "/xpcs/twotime/correlation_map") is not None:
        what.append("two-time")
    if "exchange" in root and not what:  # legacy
        ex = _keys(_hard(f, "exchange"))
        what += [n for n, k in (("multi-tau", "norm-0-g2"), ("two-time", "C2T_all")) if k in ex]
    return ", ".join(what) or "no analysis results"


def _qmap_kind(q: Any) -> FileKind:
    shape = None
    m = _hard(q, "mask")
    if isinstance(m, h5py.Dataset) and m.ndim == 2:
        shape = (int(m.shape[0]), int(m.shape[1]))
    nd, ns = _len(q, "dynamic_index_mapping"), _len(q, "static_index_mapping")
    text = f"q-map: {_n(nd)} dynamic / {_n(ns)} static bins"
    if shape:
        text += " on {} x {}".format(*shape)
    return FileKind("qmap", text=text, detector_shape=shape)


def _dense(path: Path, f: Any) -> FileKind | None:
    from xpcsviewer.io.raw.dense import EIGER_NIMAGES, EIGER_NTRIGGER, FRAME_TIME, RAW_DATASET

    data = _hard(f, RAW_DATASET)
    if isinstance(data, h5py.Dataset) and data.ndim == 3:
        ft = _hard(f, FRAME_TIME)
        frame_time = None
        if isinstance(ft, h5py.Dataset) and ft.shape == ():
            try:
                frame_time = float(ft[()])
            except (TypeError, ValueError, OSError):
                frame_time = None
        return _raw(path, "hdf5", frames=int(data.shape[0]),
                    detector_shape=(int(data.shape[1]), int(data.shape[2])),
                    frame_time=frame_time)
    if data is None:
        return None
    frames = None  # an Eiger master: the frames are in linked files
    try:
        ni, nt = _hard(f, EIGER_NIMAGES), _hard(f, EIGER_NTRIGGER)
        if isinstance(ni, h5py.Dataset):
            frames = int(ni[()]) * (int(nt[()]) if isinstance(nt, h5py.Dataset) else 1)
    except (TypeError, ValueError, OSError):
        frames = None
    return _raw(path, "hdf5", frames=frames)


def _esrf(path: Path, f: Any) -> FileKind | None:
    from xpcsviewer.io.raw.esrf_csr import CSR_GROUP, CSR_INDEX, CSR_PTR

    ptr = _len(f, CSR_PTR)
    if ptr is None:
        return None
    grp = _hard(f, CSR_GROUP)
    shape = _shape2(_attr(grp, "shape", "frame_shape"))
    if shape is None:
        shape = _shape2((_attr(grp, "nrows"), _attr(grp, "ncols")))
    return _raw(path, "esrf-csr", frames=max(ptr - 1, 0), events=_len(f, CSR_INDEX),
                detector_shape=shape)


def _side_result(path: Path) -> Path | None:
    if path.stem.endswith("_G2"):
        cand = path.with_name(path.stem[:-3] + path.suffix)
        return cand if cand.is_file() else None
    return None


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
    return _raw(path, "npy", frames=int(shape[0]),
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
        fk = _raw(path, layout, frames=frames, events=events,
                  files=tuple(str(f) for f in files), detector_shape=RIGAKU_3M_SHAPE)
        if len(files) < 6:
            fk = replace(fk, text=fk.text + f" ({6 - len(files)} module file(s) missing)")
        return fk
    got = _rigaku_module(path)
    return _raw(path, layout, frames=got and got[0], events=got and got[1],
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
        return _hdf5(path)
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
    return _raw(blocks[0][0], "esrf-csr",
                frames=None if None in frames else sum(frames),
                events=None if None in events else sum(events),
                detector_shape=first.detector_shape,
                files=tuple(str(p) for p, _ in blocks))


def qmap_beside(path: str | os.PathLike, files: tuple[str, ...] = ()) -> str | None:
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
