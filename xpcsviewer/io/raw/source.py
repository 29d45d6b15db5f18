"""Any raw source, opened by its content (never its name): :func:`open_raw_source` and,
cheaply, :func:`raw_layout`.

Dense frames (:mod:`~xpcsviewer.io.raw.dense`) or one of the photon-sparse and
event-mode layouts, each in its own module (see docs/sparse-formats.md): Rigaku ``.bin``
(:mod:`~xpcsviewer.io.raw.rigaku`), ESRF ID10 CSR (:mod:`~xpcsviewer.io.raw.esrf_csr`),
ImageD11 (:mod:`~xpcsviewer.io.raw.id11`), Timepix (:mod:`~xpcsviewer.io.raw.timepix`).
A layout's module is imported when a source of it is opened.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.raw.dense import RAW_DATASET, RawFrames, file_kind

__all__ = ["RAW_LAYOUTS", "open_raw_source", "raw_layout"]

#: the layouts :func:`open_raw_source` looks for (the words of its "unknown" error)
RAW_LAYOUTS = (
    "dense frames (.npy, or HDF5 /entry/data/data)",
    "APS Rigaku XSPA .bin (one module, or the six .000-.005 of a 3M)",
    "ESRF ID10 sparse HDF5 (entry_0000/measurement/data/frame_ptr, index, intensity; "
    "a file or a folder of blocks)",
    "ImageD11 sparse HDF5 (a group with nnz, row, col, intensity)",
    "Timepix event list HDF5 (a group with x, y, toa)",
)


def _hdf5_layout(f: Any, dataset: str) -> str | None:
    import h5py

    from xpcsviewer.io.raw.esrf_csr import CSR_PTR
    from xpcsviewer.io.raw.id11 import ID11_NAMES
    from xpcsviewer.io.raw.timepix import TIMEPIX_NAMES
    from xpcsviewer.io.raw.util import find_groups

    def is_dataset(name: str) -> bool:
        try:
            return isinstance(f.get(name), h5py.Dataset)
        except (KeyError, RuntimeError, OSError, ValueError):
            return False

    if is_dataset(dataset):
        return "hdf5"
    if is_dataset(CSR_PTR):
        return "esrf-csr"
    if find_groups(f, ID11_NAMES):
        return "id11-sparse"
    if find_groups(f, TIMEPIX_NAMES):
        return "timepix"
    return None


def raw_layout(path: str | Path, dataset: str = RAW_DATASET) -> str | None:
    """The raw layout of ``path`` from its content, cheaply; None when it is not a raw
    source (a result file, a q-map, anything else) or cannot be read.

    Names: ``"npy"``, ``"hdf5"`` (dense frames), ``"rigaku"``, ``"rigaku-3m"``,
    ``"esrf-csr"``, ``"id11-sparse"``, ``"timepix"``.
    """
    p = Path(path)
    try:
        if p.is_dir():
            from xpcsviewer.io.raw.esrf_csr import esrf_series_in_folder

            try:
                return "esrf-csr" if esrf_series_in_folder(p) is not None else None
            except XpcsFileError:  # several series: a raw folder that fails to open
                return "esrf-csr"
        if not p.is_file():
            from xpcsviewer.io.raw.rigaku import is_3m_stem

            return "rigaku-3m" if is_3m_stem(p) else None
        kind = file_kind(p)
        if kind == "npy":
            return "npy"
        if kind == "hdf5":
            import h5py

            from xpcsviewer.io._h5links import may_exist, pointers_ok

            try:
                with h5py.File(p, "r", locking=False) as f:
                    if not pointers_ok(f):  # looking inside could hang or read elsewhere
                        return "hdf5" if may_exist(f, dataset) else None
                    return _hdf5_layout(f, dataset)
            except (OSError, RuntimeError, ValueError, KeyError):
                return None
        from xpcsviewer.io.raw.rigaku import rigaku_layout

        return rigaku_layout(p)
    except OSError:
        return None


def open_raw_source(
    path: str | Path,
    *,
    shape: tuple[int, int] | None = None,
    bin_time: float | None = None,
    begin: int = 0,
    end: int | None = -1,
    stride: int = 1,
    avg: int = 1,
    dataset: str = RAW_DATASET,
    exclude: Any = (),
) -> Any:
    """The reader for the raw source at ``path``, chosen by its content (never its name).

    Parameters
    ----------
    path : str or Path
        A file, one module file of a Rigaku 3M (or their stem ``NAME.bin``), one block
        (or the folder) of an ESRF sparse series.
    shape : (int, int), optional
        Detector (rows, cols), from the q-map, for layouts that store none.
    bin_time : float, optional
        Seconds per frame of an event list (Timepix); None: its time-tag view. Only
        event lists take it.
    begin, end, stride, avg : int
        Frame selection, as :class:`RawFrames`.
    exclude : sequence of (int, int)
        Raw frame blocks (first, last; 0-based, inclusive, sorted, merged) dropped from
        the selection as if the file had never held them (``exclude_frames`` of the
        readers: dense frames are never read, a sparse source's hits are dropped).
    dataset : str
        Dense frames' HDF5 dataset.

    Returns
    -------
    RawFrames or SparseSource
        :class:`RawFrames` for dense frames; ``RigakuBin``, ``Rigaku3M``, ``EsrfCsr``,
        ``Id11Sparse`` or ``TimepixEvents`` for the sparse layouts.

    Raises
    ------
    XpcsFileError
        Missing or unreadable, a layout's own errors, or none of :data:`RAW_LAYOUTS`.
    ValueError
        ``bin_time`` for a source that is not an event list; a bad selection; excluded
        frames beyond the source's, or of an event list without frames (time-tag mode).
    """
    src = _open_selected(path, shape=shape, bin_time=bin_time, begin=begin, end=end,
                         stride=stride, avg=avg, dataset=dataset)
    if exclude:
        try:
            src.exclude_frames(exclude)
        except BaseException:
            src.close()
            raise
    return src


def _open_selected(path: str | Path, *, shape: tuple[int, int] | None,
                   bin_time: float | None, begin: int, end: int | None, stride: int,
                   avg: int, dataset: str) -> Any:
    """:func:`open_raw_source` without excluded frames."""
    p = Path(path)
    sel = {"begin": begin, "end": end, "stride": stride, "avg": avg}
    unknown = XpcsFileError(p, "not a raw source of a known layout", None,
                            "one of: " + "; ".join(RAW_LAYOUTS))
    from xpcsviewer.io.raw.rigaku import is_3m_stem, rigaku_layout

    if p.is_dir():
        from xpcsviewer.io.raw.esrf_csr import esrf_series_in_folder

        if esrf_series_in_folder(p) is None:
            raise unknown
        layout = "esrf-csr"
    elif is_3m_stem(p):
        layout = "rigaku-3m"
    elif not p.is_file():
        from xpcsviewer.io._h5 import _missing_reason

        raise XpcsFileError(p, _missing_reason(p))
    else:
        kind = file_kind(p)
        if kind == "npy":
            layout = "npy"
        elif kind == "hdf5":
            from xpcsviewer.io._h5 import open_h5_file

            with open_h5_file(p) as f:
                layout = _hdf5_layout(f, dataset)
            if layout is None:
                raise unknown
        else:
            try:
                size = p.stat().st_size
            except OSError as exc:
                raise XpcsFileError(p, f"cannot stat ({exc.strerror})") from None
            if size == 0:
                raise XpcsFileError(p, "empty file (0 bytes)", None, "raw frames or hits")
            layout = rigaku_layout(p)
            if layout is None:
                if p.suffix.lower() == ".npy":
                    layout = "npy"  # RawFrames says what is wrong with it
                elif p.suffix.lower() in (".h5", ".hdf5", ".hdf", ".nxs"):
                    layout = "hdf5"  # named HDF5 but is none: the HDF5 opener says so
                else:
                    from xpcsviewer.io.raw.rigaku import rigaku_verdict

                    why = rigaku_verdict(p)[1]
                    raise XpcsFileError(p, f"not a raw source of a known layout ({why})",
                                        unknown.dataset, unknown.expected)
    if bin_time is not None and layout != "timepix":
        raise ValueError(f"--bin-time applies to event lists (Timepix) only; {p} holds "
                         f"{layout} frames")
    if layout in ("npy", "hdf5"):
        return RawFrames(p, dataset=dataset, **sel)
    if layout == "rigaku":
        from xpcsviewer.io.raw.rigaku import RigakuBin

        return RigakuBin(p, shape=shape, **sel)
    if layout == "rigaku-3m":
        from xpcsviewer.io.raw.rigaku import Rigaku3M

        return Rigaku3M(p, shape=shape, **sel)
    if layout == "esrf-csr":
        from xpcsviewer.io.raw.esrf_csr import EsrfCsr

        return EsrfCsr(p, shape=shape, **sel)
    if layout == "id11-sparse":
        from xpcsviewer.io.raw.id11 import Id11Sparse

        return Id11Sparse(p, shape=shape, **sel)
    from xpcsviewer.io.raw.timepix import TimepixEvents

    return TimepixEvents(p, shape=shape, bin_time=bin_time, **sel)
