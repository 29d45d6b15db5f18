"""Low-level HDF5 reading with checks: open, look up, check the declared size, read.

Every reader goes through :func:`open_h5` and :func:`read_array`:

* files are opened read-only **without** the HDF5 file lock (``locking=False``):
  our reads must never lock out a correlator that appends to the file;
* a file another program is writing (its superblock's consistency flags are
  set and it changes while watched) raises
  :class:`~xpcsviewer.io.errors.FileBeingWrittenError` ("retry") instead of
  being read half-written; a file whose writer was killed is read with a note,
  a truncated one is damaged (its superblock states the full size);
* a dataset's *declared* shape is checked against what the layout allows
  before anything is read (a 400 KB file can declare a 30000 x 30000 array),
  and so is the data actually stored (chunks never written read back as zeros);
* large datasets are read in bounded row blocks straight into the output array;
* damaged chunks, missing compression filters and dangling links name the dataset.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import h5py
import numpy as np

from xpcsviewer.io._h5open import (  # noqa: F401 - the readers' one import place
    NOT_CLOSED_NOTE,
    RECENT_S,
    NotRegularFile,
    Superblock,
    _missing_reason,
    _short,
    not_closed_note,
    not_regular_reason,
    open_h5,
    open_h5_file,
    open_regular,
    read_superblock,
    writing_window_s,
)
from xpcsviewer.io.errors import XpcsFileError

__all__ = [
    "MAX_DELAYS",
    "MAX_ELEMENTS",
    "MAX_PIXELS",
    "NOT_CLOSED_NOTE",
    "RECENT_S",
    "Superblock",
    "check_declared",
    "not_closed_note",
    "open_h5",
    "open_h5_file",
    "read_array",
    "read_superblock",
    "writing_window_s",
]

#: Largest detector accepted (pixels): 4x the biggest photon-counting detectors
#: in use (Eiger2 16M, 4148 x 4362); a declared mask beyond this is not a detector.
MAX_PIXELS = 1 << 26
#: Longest delay list: multi-tau lists grow with log2(frames) (about 200 for 1e9
#: frames); a linear list of every delay of a long run still fits.
MAX_DELAYS = 1 << 20
#: Any one dataset read whole (elements): 1 GiB of float64.
MAX_ELEMENTS = 1 << 27
#: Rows per read are chosen so that one read moves at most this many bytes.
READ_BLOCK_BYTES = 32 << 20


# ---------------------------------------------------------------------- looking up
def _unmangle(s: str) -> str:
    """Undo UTF-8 text once decoded as cp1252/Latin-1 ("Ã…^2/s" -> "Å^2/s")."""
    if "\u00c3" not in s and "\u00c2" not in s:
        return s
    for enc in ("cp1252", "latin-1"):
        try:
            return s.encode(enc).decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            continue
    return s


def _decode(v: Any) -> Any:
    if isinstance(v, bytes):
        try:
            return _unmangle(v.decode("utf-8"))
        except UnicodeDecodeError:  # older writers stored Latin-1 bytes ("\xc5" for Å)
            return v.decode("latin-1")
    if isinstance(v, str):
        return _unmangle(v)
    if isinstance(v, np.ndarray):
        if v.dtype.kind in "OS":
            out = np.array([_decode(x) for x in v.ravel()], dtype=object).reshape(
                v.shape
            )
            return out.tolist() if out.ndim else out[()]
        if v.shape == (1, 1) or v.ndim == 0:  # (1,1) scalars from the old writers
            return _decode(v.reshape(())[()])
    if isinstance(v, np.float32):
        # float32 scalars (e.g. frame_time 2e-05) read back as their shortest decimal.
        return float(str(v))
    if isinstance(v, np.generic):
        return v.item()
    return v


def _exists(f: h5py.File, path: str) -> bool:
    try:
        return path in f
    except (KeyError, RuntimeError, OSError, ValueError):  # dangling links
        return False


def attr_value(f: h5py.File, path: str, name: str, expected: str) -> Any:
    """The raw attribute ``name`` of the object at ``path``; missing raises XpcsFileError
    naming the file, the object, the attribute and what was ``expected``."""
    obj = f[path]
    if name not in obj.attrs:
        raise XpcsFileError(f.filename, f"attribute {name!r} missing", dataset=path,
                            expected=expected)
    return obj.attrs[name]


def int_attr(f: h5py.File, path: str, name: str, low: int) -> int:
    """The integer attribute ``name`` of the object at ``path``, at least ``low``: a bool,
    float or text raises XpcsFileError naming the file, the object and the attribute."""
    expected = f"an integer >= {low}"
    v = attr_value(f, path, name, expected)
    try:
        a = np.asarray(v)
        if a.dtype.kind not in "iu" or a.size != 1:
            raise TypeError
        out = int(a.reshape(()).item())
    except (TypeError, ValueError):
        raise XpcsFileError(f.filename, f"attribute {name!r} is {v!r}", dataset=path,
                            expected=expected) from None
    if out < low:
        raise XpcsFileError(f.filename, f"attribute {name!r} is {out}", dataset=path,
                            expected=expected)
    return out


def _node(f: h5py.File, path: str, expected: str) -> Any:
    """The object at ``path`` (XpcsFileError when it is missing, or a dangling or
    unresolvable link)."""
    if not _exists(f, path):
        raise _missing(f, path, expected)
    try:
        return f[path]
    except (KeyError, RuntimeError, OSError) as exc:
        why = _link_problem(f, path) or f"cannot be opened ({_short(exc)})"
        raise XpcsFileError(f.filename, why, dataset=path, expected=expected) from None


def group_node(f: h5py.File, path: str, expected: str) -> h5py.Group:
    """The HDF5 group at ``path`` (XpcsFileError as :func:`_node`, or when not a group)."""
    obj = _node(f, path, expected)
    if not isinstance(obj, h5py.Group):
        raise XpcsFileError(f.filename, "is not a group", dataset=path, expected=expected)
    return obj


def _link_problem(f: h5py.File, path: str) -> str | None:
    """Why ``path`` cannot be opened although a link of that name exists."""
    try:
        link = f.get(path, getlink=True)
    except (KeyError, RuntimeError, OSError, ValueError):
        return None
    if isinstance(link, h5py.SoftLink):
        return f"dangling soft link to {link.path}"
    if isinstance(link, h5py.ExternalLink):
        return f"external link to {link.filename}:{link.path} cannot be resolved"
    return None


def _missing(f: h5py.File, path: str, expected: str) -> XpcsFileError:
    why = _link_problem(f, path)
    if why is not None:
        return XpcsFileError(f.filename, why, dataset=path, expected=expected)
    err = XpcsFileError(
        f.filename, "missing required dataset", dataset=path, expected=expected
    )
    err.incomplete = True
    return err


def _dataset(f: h5py.File, path: str, expected: str) -> h5py.Dataset:
    obj = _node(f, path, expected)
    if not isinstance(obj, h5py.Dataset):
        raise XpcsFileError(
            f.filename, "is a group, not a dataset", dataset=path, expected=expected
        )
    return obj



def outside_problem(f: h5py.File, path: str, ds: h5py.Dataset) -> str | None:
    """Why the data of ``path`` are not read (None: they may be), by the policy of
    :mod:`xpcsviewer.io._h5links`: no FIFO or device ever, nothing outside the input's
    folder unless allowed, no missing virtual source or external storage file."""
    from xpcsviewer.io._h5links import dataset_problem

    return dataset_problem(f, path)


def local_dataset(f: h5py.File, path: str, expected: str) -> h5py.Dataset:
    """:func:`_dataset`, refusing data that lie outside the input (see
    :func:`outside_problem`)."""
    ds = _dataset(f, path, expected)
    why = outside_problem(f, path, ds)
    if why is not None:
        raise XpcsFileError(f.filename, why, dataset=path, expected=f"{expected} in the file")
    return ds


# ---------------------------------------------------------------- sizes and reads
def _stored_fraction(ds: h5py.Dataset) -> tuple[int, int]:
    """(stored, declared) pieces of a dataset: chunks, or 0/1 for contiguous data
    whose storage was never allocated (it reads back as the fill value); (1, 1)
    where this cannot be told (compact, external, virtual storage)."""
    if ds.size == 0:
        return 1, 1
    try:
        if ds.chunks is None:
            dcpl = ds.id.get_create_plist()
            if (
                dcpl.get_layout() != h5py.h5d.CONTIGUOUS
                or dcpl.get_external_count()
                or ds.is_virtual
            ):
                return 1, 1
            return (1 if ds.id.get_storage_size() > 0 else 0), 1
        declared = 1
        for n, c in zip(ds.shape, ds.chunks, strict=True):
            declared *= -(-int(n) // int(c))
        return int(ds.id.get_num_chunks()), declared
    except (AttributeError, RuntimeError, OSError, ValueError):
        return 1, 1


def check_declared(
    ds: h5py.Dataset,
    *,
    shape: Sequence[int | None] | None = None,
    expected: str = "",
    max_elements: int = MAX_ELEMENTS,
) -> None:
    """Check a dataset's declared shape and stored data before reading it.

    Parameters
    ----------
    ds : h5py.Dataset
    shape : sequence of int or None, optional
        The shape the layout allows (None: any length on that axis).
    expected : str
        Words for the error message.
    max_elements : int
        Largest number of elements accepted.

    Raises
    ------
    XpcsFileError
        Wrong declared shape, too large, or declared but (partly) never written.
    """
    name = ds.name
    if shape is not None and (
        len(shape) != ds.ndim
        or any(
            s is not None and int(s) != int(n)
            for s, n in zip(shape, ds.shape, strict=False)
        )
    ):
        raise XpcsFileError(
            ds.file.filename, f"has shape {ds.shape}", dataset=name, expected=expected
        )
    if ds.size > max_elements:
        raise XpcsFileError(
            ds.file.filename,
            f"declares shape {ds.shape} ({ds.size:.3g} values), more than the "
            f"{max_elements:.3g} this dataset can hold",
            dataset=name,
            expected=expected or f"at most {max_elements} values",
        )
    stored, declared = _stored_fraction(ds)
    if stored < declared:
        what = f"only {stored} of {declared} chunks are" if ds.chunks else "no data is"
        err = XpcsFileError(
            ds.file.filename,
            f"declares shape {ds.shape} but {what} stored (never written)",
            dataset=name,
            expected=expected,
        )
        err.incomplete = True
        raise err


def _read_error(ds: h5py.Dataset, exc: BaseException) -> XpcsFileError:
    text = _short(exc)
    low = text.lower()
    if any(
        w in low
        for w in (
            "plugin",
            "can't open directory",
            "not registered",
            "required filter",
            "not available",
        )
    ):
        problem = f"compressed with an HDF5 filter that is not available ({text})"
    else:
        problem = f"damaged data, cannot be read ({text})"
    return XpcsFileError(ds.file.filename, problem, dataset=ds.name)


def read_array(ds: h5py.Dataset, dtype: Any = None) -> np.ndarray:
    """Read a whole dataset (already checked) in bounded row blocks.

    The output is allocated once with the final dtype and filled block by
    block, so a float32 dataset read as float64 is never held twice, and a
    damaged chunk or a missing filter is reported with the dataset's name.
    """
    dt = np.dtype(dtype) if dtype is not None else ds.dtype
    try:
        if (
            ds.ndim == 0
            or ds.size == 0
            or ds.nbytes <= READ_BLOCK_BYTES
            or ds.dtype.kind in "OSUV"
        ):
            a = ds[()]
            return np.asarray(a, dtype=dt) if dtype is not None else np.asarray(a)
        out = np.empty(ds.shape, dtype=dt)
        row_bytes = max(1, ds.nbytes // max(1, ds.shape[0]))
        step = max(1, READ_BLOCK_BYTES // row_bytes)
        from xpcsviewer.progress import check_interrupted

        for r0 in range(0, ds.shape[0], step):
            check_interrupted()
            r1 = min(ds.shape[0], r0 + step)
            ds.read_direct(out, np.s_[r0:r1], np.s_[r0:r1])
        return out
    except (OSError, RuntimeError, ValueError, TypeError) as exc:
        raise _read_error(ds, exc) from None


def _array(
    f: h5py.File,
    path: str,
    *,
    kinds: str = "biuf",
    ndim: int | tuple[int, ...] | None = None,
    expected: str = "an array",
    squeeze_leading: bool = False,
    shape: Sequence[int | None] | None = None,
    max_elements: int = MAX_ELEMENTS,
    dtype: Any = None,
) -> np.ndarray:
    """Check then read one numeric dataset (see :func:`check_declared`)."""
    ds = _dataset(f, path, expected)
    if ds.dtype.kind not in kinds:
        raise XpcsFileError(
            f.filename, f"has dtype {ds.dtype}", dataset=path, expected=expected
        )
    if shape is not None and squeeze_leading:
        lead = ds.ndim - len(shape)
        if lead < 0 or any(n != 1 for n in ds.shape[:lead]):
            raise XpcsFileError(
                f.filename, f"has shape {ds.shape}", dataset=path, expected=expected
            )
        shape = (*ds.shape[:lead], *shape)
    check_declared(ds, shape=shape, expected=expected, max_elements=max_elements)
    a = read_array(ds, dtype)
    if squeeze_leading:
        while (
            a.ndim > 1
            and a.shape[0] == 1
            and (ndim is None or a.ndim > min(np.atleast_1d(ndim)))
        ):
            a = a[0]
    if ndim is not None and a.ndim not in np.atleast_1d(ndim):
        raise XpcsFileError(
            f.filename, f"has shape {a.shape}", dataset=path, expected=expected
        )
    return a


def _scalar(
    f: h5py.File, path: str, *, required: bool = True, default: Any = None
) -> Any:
    if not _exists(f, path):
        if required:
            raise _missing(f, path, "a number")
        if _link_problem(f, path) is not None:
            raise _missing(f, path, "a number")
        return default
    ds = _dataset(f, path, "a number")
    if ds.size != 1:
        raise XpcsFileError(
            f.filename,
            f"has shape {ds.shape}",
            dataset=path,
            expected="a scalar (shape () or (1, 1))",
        )
    try:
        v = _decode(ds[()])
    except (OSError, RuntimeError, ValueError, TypeError) as exc:
        raise _read_error(ds, exc) from None
    if isinstance(v, np.ndarray):
        v = v.reshape(())[()]
    return v


def _number(
    f: h5py.File,
    path: str,
    *,
    required: bool = True,
    default: float | None = None,
    positive: bool = False,
) -> float | None:
    v = _scalar(f, path, required=required, default=default)
    if v is None:
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise XpcsFileError(
            f.filename,
            f"value {v!r} is not a number",
            dataset=path,
            expected="a number",
        ) from None
    if positive and not (x > 0 and math.isfinite(x)):
        raise XpcsFileError(
            f.filename, f"value {x!r}", dataset=path, expected="a positive number"
        )
    return x


def _count(f: h5py.File, path: str, value: Any, *, default: int = 1) -> int:
    """A positive whole number (frame stride, frames averaged) from a config value."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if not (math.isfinite(x) and x == int(x) and x >= 1):
        raise XpcsFileError(
            f.filename, f"value {value!r}", dataset=path, expected="a whole number >= 1"
        )
    return int(x)


def _strings(f: h5py.File, path: str, default: tuple[str, ...]) -> tuple[str, ...]:
    if not _exists(f, path):
        return default
    ds = _dataset(f, path, "names")
    check_declared(ds, expected="a few names", max_elements=64)
    try:
        v = _decode(ds[()])
    except (OSError, RuntimeError, ValueError, TypeError) as exc:
        raise _read_error(ds, exc) from None
    if isinstance(v, str):
        return (v,)
    return tuple(str(x) for x in np.ravel(v))


def _check_finite(res_warnings: list[str], name: str, a: np.ndarray) -> None:
    if a.dtype.kind == "f":
        bad = ~np.isfinite(a)
        if bad.any():
            res_warnings.append(
                f"{name}: {int(bad.sum())} of {a.size} values are NaN or Inf"
            )
