"""Header probes of :mod:`xpcsviewer.io.classify`: :class:`FileKind`, and what an HDF5
file is from the names at its root and the few objects that decide (never following a
link out of the file, never reading data beyond a dataset's shape, a few attributes
and, for an event list, its first and last time). Only numpy and h5py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import h5py
import numpy as np

__all__ = ["LAYOUT_NAMES", "TIMEPIX_DEFAULT_FRAMES", "FileKind", "default_bin_time", "hdf5_kind",
           "raw_kind"]

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


def raw_kind(path: Path, layout: str, **kw: Any) -> FileKind:
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
    from xpcsviewer.io.raw.timepix import DEFAULT_RESOLUTION_S, UNITS, toa_tick_units

    tick, units = toa_tick_units(toa, grp)

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
    return raw_kind(path, "timepix", frames=frames, events=n, detector_shape=shape,
                frame_time=bin_time, bin_time=bin_time)


def _keys(g: Any) -> set[str]:
    try:
        return set(g.keys())
    except (RuntimeError, OSError, KeyError, ValueError):
        return set()


def hdf5_kind(path: Path) -> FileKind:
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
        if "xsvs" in root and isinstance(_hard(f, "xsvs"), h5py.Group):
            src = _xsvs_source(path)  # issue 46: xpcsviewer xsvs -o NAME_xsvs.h5
            return FileKind("side", text="XSVS side file (/xsvs: photon statistics by "
                            "exposure) of " + (src.name if src else "no source beside it"))
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
            return raw_kind(path, "id11-sparse", frames=_len(g, "nnz"), events=_len(g, "row"),
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
    if nd is None and ns is None and _hard(q, "dynamic_roi_map") is None:
        # /qmap/mask alone: a mask file (io.masks, the correlate dialog's OUT_mask.hdf)
        where = " on {} x {}".format(*shape) if shape else ""
        return FileKind("side", text=f"mask{where} (1 = valid; correlate --mask)",
                        detector_shape=shape)
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
        return raw_kind(path, "hdf5", frames=int(data.shape[0]),
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
    return raw_kind(path, "hdf5", frames=frames)


def _esrf(path: Path, f: Any) -> FileKind | None:
    from xpcsviewer.io.raw.esrf_csr import CSR_GROUP, CSR_INDEX, CSR_PTR

    ptr = _len(f, CSR_PTR)
    if ptr is None:
        return None
    grp = _hard(f, CSR_GROUP)
    shape = _shape2(_attr(grp, "shape", "frame_shape"))
    if shape is None:
        shape = _shape2((_attr(grp, "nrows"), _attr(grp, "ncols")))
    return raw_kind(path, "esrf-csr", frames=max(ptr - 1, 0), events=_len(f, CSR_INDEX),
                detector_shape=shape)


def _xsvs_source(path: Path) -> Path | None:
    """The file ``NAME.*`` beside ``NAME_xsvs.h5`` (a raw source or result file)."""
    import glob

    if not path.stem.endswith("_xsvs"):
        return None
    stem = glob.escape(path.stem[:-5])
    try:
        return next((p for p in sorted(path.parent.glob(stem + ".*"))
                     if p != path and p.is_file()), None)
    except OSError:
        return None


def _side_result(path: Path) -> Path | None:
    if path.stem.endswith("_G2"):
        cand = path.with_name(path.stem[:-3] + path.suffix)
        return cand if cand.is_file() else None
    return None
