"""What the sparse readers share besides :class:`~xpcsviewer.io.raw.sparse.SparseSource`:
the detector shape (stored, given, or an error that asks for a q-map), the search for the
group that holds a layout's datasets, the checked 1-D datasets and their range reads, and
the messages for hits outside the detector. Only numpy and h5py.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from xpcsviewer.io._h5 import MAX_PIXELS, _read_error, check_declared, local_dataset, read_array
from xpcsviewer.io.errors import XpcsFileError

__all__ = [
    "attr",
    "check_pixels",
    "checked_pointer",
    "detector_shape",
    "find_groups",
    "hit_offsets",
    "int_dataset",
    "natural_key",
    "num_dataset",
    "read_slice",
    "shape_value",
]

#: groups searched for a layout's datasets: the file root and this many levels below
GROUP_DEPTH = 2
#: per-frame offsets (8 bytes a frame) may take this many times the file's size in memory,
#: or OFFSETS_MIN_BYTES, whichever is more: a compressed list of a billion zeros in a
#: small file is refused before it is read
OFFSETS_FACTOR = 64
OFFSETS_MIN_BYTES = 64 << 20


def natural_key(name: str) -> list[Any]:
    """Sort key that orders ``"2.1"`` before ``"10.1"`` (digits compared as numbers)."""
    return [(0, int(t), t) if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", name)]


def _text(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    if isinstance(v, np.ndarray) and v.dtype.kind in "OS":
        return [_text(x) for x in v.ravel().tolist()]
    if isinstance(v, np.ndarray) and v.size == 1 and v.ndim <= 2:
        return v.reshape(())[()]
    return v


def attr(obj: h5py.HLObject, *names: str) -> Any:
    """The first of the attributes ``names`` that ``obj`` has (decoded), or None."""
    for n in names:
        try:
            if n in obj.attrs:
                return _text(obj.attrs[n])
        except (OSError, RuntimeError, KeyError, TypeError):  # unreadable attribute
            continue
    return None


def shape_value(path: str | Path, value: Any, where: str | None) -> tuple[int, int]:
    """A detector shape (rows, cols) from a file attribute or the caller, checked."""
    try:
        a = np.asarray(value).ravel()
        if a.size != 2 or a.dtype.kind not in "iuf":
            raise ValueError
        h, w = (float(x) for x in a)
        if not (h == int(h) and w == int(w) and h >= 1 and w >= 1):
            raise ValueError
    except (TypeError, ValueError):
        raise XpcsFileError(path, f"detector shape {value!r}", where,
                            "two positive whole numbers (rows, cols)") from None
    h, w = int(h), int(w)
    if h * w > MAX_PIXELS:
        raise XpcsFileError(path, f"detector shape {h} x {w}", where,
                            f"a detector of at most {MAX_PIXELS} pixels")
    return h, w


def detector_shape(path: str | Path, stored: Any, stored_where: str | None,
                   given: Any) -> tuple[int, int]:
    """The file's own shape when it stores one, else the caller's (from the q-map).

    Raises
    ------
    XpcsFileError
        Neither: the shape is unknown, and the message says to give a q-map.
    """
    if stored is not None:
        return shape_value(path, stored, stored_where)
    if given is not None:
        return shape_value(path, given, "detector shape given by the caller (q-map)")
    raise XpcsFileError(
        path, "the detector shape is unknown: the file stores none; give a q-map "
        "(--qmap QMAP) of this detector for its shape", stored_where,
        "a detector shape from the file or the q-map")


def find_groups(f: h5py.File, names: tuple[str, ...],
                depth: int = GROUP_DEPTH) -> list[str]:
    """Paths of the groups (the root and ``depth`` levels down) that hold every one of
    ``names`` as a dataset, in natural name order (the root first)."""
    found: list[str] = []

    def holds(g: h5py.Group) -> bool:
        for n in names:
            try:
                link = g.get(n, getlink=True)
                if link is None or not isinstance(g[n], h5py.Dataset):
                    return False
            except (KeyError, RuntimeError, OSError, ValueError):
                return False
        return True

    def walk(g: h5py.Group, level: int) -> None:
        if holds(g):
            found.append(g.name)
        if level >= depth:
            return
        try:
            keys = list(g.keys())
        except (RuntimeError, OSError):
            return
        for k in keys:
            try:
                if isinstance(g.get(k, getlink=True), h5py.HardLink) and isinstance(
                        g[k], h5py.Group):
                    walk(g[k], level + 1)
            except (KeyError, RuntimeError, OSError, ValueError):
                continue

    walk(f, 0)
    return sorted(found, key=lambda p: (p != "/", natural_key(p)))


def check_pixels(path: str | Path, values: np.ndarray, limit: int, first: int,
                 where: str, what: str, extent: str) -> None:
    """Raise when any of ``values`` (entries ``first``, ``first + 1``, ...) is outside
    ``[0, limit)``, naming the first such entry and its value."""
    if values.size == 0:
        return
    # two reductions, no temporary mask: the common case (all inside) is one pass each
    if values.max() < limit and (values.dtype.kind == "u" or values.min() >= 0):
        return
    bad = (values < 0) | (values >= limit)
    if bad.any():
        j = int(np.argmax(bad))
        raise XpcsFileError(
            path, f"{what} {int(values[j])} of entry {first + j} is outside the {extent}",
            where, f"each {what} in 0..{limit - 1}")


def _dataset_1d(f: h5py.File, path: str, expected: str, kinds: str) -> h5py.Dataset:
    ds = local_dataset(f, path, expected)
    if ds.ndim != 1:
        raise XpcsFileError(f.filename, f"has shape {ds.shape}", path, expected)
    if ds.dtype.kind not in kinds:
        raise XpcsFileError(f.filename, f"has dtype {ds.dtype}", path, expected)
    check_declared(ds, expected=expected, max_elements=1 << 62)
    return ds


def int_dataset(f: h5py.File, path: str, expected: str) -> h5py.Dataset:
    """The 1-D integer dataset ``path`` of ``f``, checked (``expected``: what the error
    says it should be)."""
    return _dataset_1d(f, path, expected, "iu")


def num_dataset(f: h5py.File, path: str, expected: str) -> h5py.Dataset:
    """The 1-D numeric (integer or float) dataset ``path`` of ``f``, checked."""
    return _dataset_1d(f, path, expected, "iuf")


def read_slice(ds: h5py.Dataset, a: int, b: int) -> np.ndarray:
    """``ds[a:b]``; a read that fails is an XpcsFileError naming the dataset."""
    try:
        return np.asarray(ds[a:b])
    except (OSError, RuntimeError, ValueError, TypeError) as exc:
        raise _read_error(ds, exc) from None


def _offsets_fit(path: str | Path, ds: h5py.Dataset, what: str) -> None:
    """Refuse per-frame numbers whose int64 offsets would take far more memory than the
    file holds (:data:`OFFSETS_FACTOR`)."""
    try:
        size = os.stat(ds.file.filename).st_size
    except (OSError, ValueError):
        size = 0
    need = 8 * (int(ds.shape[0]) + 1)
    if need > max(OFFSETS_MIN_BYTES, OFFSETS_FACTOR * size):
        raise XpcsFileError(
            path, f"declares {int(ds.shape[0])} frames ({need / 1e9:.3g} GB of offsets in "
            f"memory) in a file of {size} bytes", ds.name,
            f"{what}: at most {OFFSETS_FACTOR} x the file's size in offsets")


def hit_offsets(path: str | Path, nnz_ds: h5py.Dataset, lens: dict[str, int]) -> np.ndarray:
    """``[0, cumsum(nnz)]`` (int64) of a dataset of hits per frame, checked exactly.

    Each count is checked in its stored type (a uint64 is never read as a negative int64)
    and the running sum against the hits the arrays of ``lens`` (name: length) hold, the
    first frame whose sum passes them named: the sum is exact (it cannot wrap past 2**63
    back to a plausible total), so nothing is ever indexed past those arrays.

    Raises
    ------
    XpcsFileError
        A negative count, a running sum past the hits, or a total unequal to each length.
    """
    where = nnz_ds.name
    expected = "hits per frame >= 0 adding up to the entries of " + ", ".join(lens)
    _offsets_fit(path, nnz_ds, "hits per frame")
    nnz = read_array(nnz_ds)
    if nnz.dtype.kind == "i" and nnz.size and int(nnz.min()) < 0:
        k = int(np.argmax(nnz < 0))
        raise XpcsFileError(path, f"negative hit count {int(nnz[k])} for frame {k}", where,
                            "hits per frame >= 0")
    hits = max(lens.values())
    listed = ", ".join(f"{k} has {n}" for k, n in lens.items())
    over = np.flatnonzero(nnz > hits)
    if over.size:
        k = int(over[0])
        raise XpcsFileError(path, f"nnz sum mismatch: frame {k} alone holds {int(nnz[k])} "
                            f"hits, more than the {hits} hits stored ({listed})", where,
                            expected)
    # each count <= hits < 2**62: the int64 running sum is exact until it passes 2**63,
    # where it turns negative; the first entry past ``hits`` (or negative) is where the
    # exact sum first passes the hits
    ptr = np.zeros(nnz.size + 1, np.int64)
    np.cumsum(nnz, dtype=np.int64, out=ptr[1:])
    past = np.flatnonzero((ptr > hits) | (ptr < 0))
    if past.size:
        k = int(past[0]) - 1
        raise XpcsFileError(path, f"nnz sum mismatch: the hit counts of frames 0..{k} add up "
                            f"to more than the {hits} hits stored ({listed}; frame {k} holds "
                            f"{int(nnz[k])})", where, expected)
    total = int(ptr[-1])
    if any(n != total for n in lens.values()):
        raise XpcsFileError(path, f"nnz sum mismatch: sum(nnz) = {total} but {listed}", where,
                            expected)
    return ptr


def checked_pointer(path: str | Path, ptr_ds: h5py.Dataset, hits: int, where: str,
                    expected: str, mismatch: str) -> np.ndarray:
    """A CSR pointer (n_frames + 1 offsets) as int64, checked in its stored type: 0 first,
    non-decreasing, last = ``hits`` (so every offset is in ``0..hits``).

    Raises
    ------
    XpcsFileError
        ``mismatch`` (e.g. "CSR pointer does not match its arrays") and what is wrong.
    """
    _offsets_fit(path, ptr_ds, "offsets")
    ptr = read_array(ptr_ds)
    if ptr.size < 1:
        raise XpcsFileError(path, f"{mismatch}: frame_ptr is empty", where, expected)
    if ptr[0] != 0:
        raise XpcsFileError(path, f"{mismatch}: frame_ptr starts at {int(ptr[0])}", where,
                            expected)
    dec = np.flatnonzero(ptr[1:] < ptr[:-1])
    if dec.size:
        k = int(dec[0]) + 1
        raise XpcsFileError(path, f"{mismatch}: frame_ptr decreases at entry {k} "
                            f"({int(ptr[k - 1])} -> {int(ptr[k])})", where, expected)
    if int(ptr[-1]) != hits:
        raise XpcsFileError(path, f"{mismatch}: frame_ptr ends at {int(ptr[-1])}, "
                            f"{hits} hits stored", where, expected)
    return ptr.astype(np.int64)
