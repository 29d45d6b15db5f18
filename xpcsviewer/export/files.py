"""Atomic writers for figures, CSV tables and JSON (no Qt, no JAX).

Every writer builds the whole output in a temporary file in the destination folder and
then renames it (:func:`xpcsviewer.io.outputs.atomic_path`), so a failed or cancelled
export never leaves a half-written file, and an existing file is only ever replaced as
a whole. Writers refuse to write
onto an HDF5 result file (export must never touch input files).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.io.outputs import atomic_path, to_jsonable

__all__ = [
    "FIGURE_FORMATS",
    "atomic_write",
    "figure_files",
    "page_paths",
    "save_figure",
    "save_figure_pages",
    "write_csv",
    "write_json",
    "write_table_csv",
]

FIGURE_FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
_INPUT_SUFFIXES = {".hdf", ".h5", ".hdf5", ".nxs"}
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def _refuse_input_file(path: Path) -> None:
    # An export must never overwrite a result file, even by a typo in the name.
    if path.suffix.lower() in _INPUT_SUFFIXES:
        raise ValueError(f"{path}: refusing to export onto an HDF5/NeXus file name")
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # nothing there yet
    if not stat.S_ISREG(mode):  # opening a FIFO to look inside would block
        raise ValueError(f"{path}: refusing to write over something that is not a regular "
                         "file (a folder, a named pipe or a device)")
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError:
        return
    if head == _HDF5_SIGNATURE:
        raise ValueError(f"{path}: refusing to overwrite an HDF5 file with an export")


def atomic_write(
    path: str | os.PathLike, write: Callable[[Any], None], binary: bool = True
) -> Path:
    """Call ``write(fh)`` on a temporary file next to ``path``, then rename it over ``path``.

    Parameters
    ----------
    path : path
        Destination; its folder must exist. Whether it may be replaced is the
        caller's decision (:func:`xpcsviewer.io.outputs.check_output`).
    write : callable
        Receives an open file object (binary or text).
    binary : bool
        Open the temporary file in binary mode (else UTF-8 text, ``newline=""``).

    Returns
    -------
    Path
        The destination.
    """
    path = Path(path)
    _refuse_input_file(path)
    with atomic_path(path) as tmp:
        if binary:
            with open(tmp, "wb") as fh:
                write(fh)
        else:
            # errors="replace": file names may hold bytes that are not UTF-8
            with open(tmp, "w", encoding="utf-8", errors="replace", newline="") as fh:
                write(fh)
    return path


def page_paths(path: str | os.PathLike, n_pages: int) -> list[Path]:
    """Where :func:`save_figure` writes ``n_pages`` pages: ``path`` itself for one page
    or a PDF, else ``<stem>_p1<suffix>``, ``<stem>_p2<suffix>``, ..."""
    path = Path(path)
    if n_pages <= 1 or path.suffix.lower() == ".pdf":
        return [path]
    return [path.with_name(f"{path.stem}_p{k}{path.suffix}") for k in range(1, n_pages + 1)]


def complete_pages(path: str | os.PathLike,
                   complete: Callable[[Path], bool]) -> list[Path] | None:
    """The files of a figure saved at ``path`` (one file, or pages ``_p1``, ``_p2``, ...)
    when all are whole by ``complete``, else None.

    :func:`save_figure` writes the first page last, so a whole ``_p1`` means its run
    wrote every page; the set is the unbroken run ``_p1``, ``_p2``, ... on disk.
    """
    path = Path(path)
    if complete(path):
        return [path]
    pages: list[Path] = []
    while True:
        p = path.with_name(f"{path.stem}_p{len(pages) + 1}{path.suffix}")
        if not p.exists():
            break
        if not complete(p):
            return None
        pages.append(p)
    return pages or None


def figure_files(path: str | os.PathLike) -> list[Path]:
    """Every file on disk of a figure saved at ``path``: ``path`` itself and each page
    ``<stem>_p<k><suffix>`` (any k, gaps included), in page order.

    These are the files an export under this name replaces or removes, so a page set
    on disk is never a mix of two exports.
    """
    path = Path(path)
    found: list[tuple[int, Path]] = []
    if path.is_file():
        found.append((0, path))
    pat = re.compile(re.escape(path.stem) + r"_p([1-9][0-9]*)" + re.escape(path.suffix) + "$")
    try:
        names = os.listdir(path.parent if str(path.parent) else ".")
    except OSError:
        names = []
    for name in names:
        m = pat.match(name)
        if m is not None and (path.parent / name).is_file():
            found.append((int(m.group(1)), path.parent / name))
    return [p for _k, p in sorted(found)]


def save_figure(fig: Any, path: str | os.PathLike, dpi: int = 200) -> Path:
    """Save a matplotlib ``Figure`` (or a list of pages); the first file written.

    See :func:`save_figure_pages`, which returns every file.
    """
    return save_figure_pages(fig, path, dpi)[0]


def save_figure_pages(fig: Any, path: str | os.PathLike, dpi: int = 200) -> list[Path]:
    """Save a matplotlib ``Figure`` (or a list of pages) atomically, as one set; the
    format comes from the suffix.

    Every page is rendered to a temporary file first; only when all are whole are they
    renamed into place (the first page last), so an error leaves the files on disk as
    they were. Then the files of an earlier export under this name that the new set
    does not hold (a stale ``_p3`` after a 2-page export, ``NAME.png`` after a paged
    one: :func:`figure_files`) are removed, so pages of two exports never look like one
    figure. Whether they may be replaced is the caller's question, asked before.

    Fonts are embedded as TrueType in PDF (never Type 3) and SVG text stays text
    (:data:`xpcsviewer.export._fig_common.FONT_RC`), as journals ask.

    Parameters
    ----------
    fig : matplotlib.figure.Figure or list of them
        Several pages go into one multi-page PDF, or numbered PNG/SVG files
        (:func:`page_paths`).
    path : path ending in ``.png``, ``.svg`` or ``.pdf``
    dpi : int
        Raster resolution (PNG only matters).

    Returns
    -------
    list of Path
        The files written, in page order.

    Raises
    ------
    ValueError
        Unsupported suffix.
    """
    import contextlib

    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from xpcsviewer.export._fig_common import FONT_RC

    path = Path(path)
    fmt = FIGURE_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise ValueError(
            f"{path}: figure format must be one of {sorted(FIGURE_FORMATS)}"
        )
    pages = list(fig) if isinstance(fig, (list, tuple)) else [fig]
    if not pages:
        raise ValueError("no figure to save")
    for f in pages:
        if f.canvas is None or not hasattr(f.canvas, "print_figure"):
            FigureCanvasAgg(f)
    # Metadata without a date keeps SVG/PDF output reproducible.
    meta = {"Creator": "xpcsviewer"} if fmt in ("pdf",) else None
    if fmt == "svg":
        meta = {"Date": None}
    with matplotlib.rc_context(FONT_RC):  # read when the file is written
        if fmt == "pdf" and len(pages) > 1:
            from matplotlib.backends.backend_pdf import PdfPages

            def write_pdf(fh: Any) -> None:
                with PdfPages(fh, metadata=meta) as pdf:
                    for f in pages:
                        pdf.savefig(f)

            targets = [atomic_write(path, write_pdf)]
        else:
            targets = page_paths(path, len(pages))
            for t in targets:
                _refuse_input_file(t)
            # All temporaries first; leaving the stack renames them last to first
            # (the first page last: its presence says the whole set was written, see
            # :func:`complete_pages`); an error removes every temporary.
            with contextlib.ExitStack() as stack:
                for f, target in zip(pages, targets, strict=True):
                    tmp = stack.enter_context(atomic_path(target))
                    with open(tmp, "wb") as fh:
                        f.savefig(fh, format=fmt, dpi=dpi, metadata=meta)
    keep = set(targets)
    for old in figure_files(path):
        if old not in keep:
            with contextlib.suppress(FileNotFoundError):
                old.unlink()
    return targets


def _cell(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return repr(f) if math.isfinite(f) else ("nan" if math.isnan(f) else repr(f))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return str(v)


def write_csv(
    path: str | os.PathLike,
    columns: Mapping[str, Any],
    header_comment: str | list[str] | None = None,
) -> Path:
    """Write named columns to CSV atomically.

    Parameters
    ----------
    path : path
    columns : mapping name -> (n_i,) array-like
        Columns may differ in length; short columns leave empty cells. Floats are
        written with full precision (``repr``), NaN as ``nan``.
    header_comment : str or list of str, optional
        Lines written first, each prefixed with ``# `` (units, source files).

    Returns
    -------
    Path
    """
    from xpcsviewer.backends import ensure_numpy

    cols = {str(k): np.asarray(ensure_numpy(v)).reshape(-1) for k, v in columns.items()}
    n = max((c.size for c in cols.values()), default=0)
    if isinstance(header_comment, str):
        header_comment = header_comment.splitlines()
    buf = io.StringIO()
    for line in header_comment or []:
        buf.write(f"# {line}\n")
    wr = csv.writer(buf, lineterminator="\n")
    wr.writerow(list(cols))
    for i in range(n):
        wr.writerow([_cell(c[i]) if i < c.size else "" for c in cols.values()])
    text = buf.getvalue()
    return atomic_write(path, lambda fh: fh.write(text), binary=False)


def write_json(path: str | os.PathLike, data: Any) -> Path:
    """Write ``data`` as indented JSON atomically (NumPy values converted, NaN -> null)."""
    text = (
        json.dumps(to_jsonable(data), indent=2, ensure_ascii=False, allow_nan=False)
        + "\n"
    )
    return atomic_write(path, lambda fh: fh.write(text), binary=False)


def write_table_csv(path: str | os.PathLike, columns: dict[str, Any],
                    header: list[str] | None = None) -> Path:
    """Write named columns to a CSV file atomically.

    Parameters
    ----------
    path : path
        Output file; written to a temporary file in the same folder, then renamed.
    columns : dict of name -> (n_i,) array
        Columns may differ in length; short ones leave empty cells.
    header : list of str, optional
        Comment lines written first, each prefixed with ``# ``.

    Returns
    -------
    Path
    """
    path = Path(path)
    cols = {str(k): np.asarray(v).reshape(-1) for k, v in columns.items()}
    n = max((c.size for c in cols.values()), default=0)
    buf = io.StringIO()
    for line in header or []:
        buf.write(f"# {line}\n")
    wr = csv.writer(buf, lineterminator="\n")
    wr.writerow(list(cols))
    for i in range(n):
        row = []
        for c in cols.values():
            if i < c.size:
                v = c[i]
                row.append(repr(float(v)) if isinstance(v, (float, np.floating)) else str(v))
            else:
                row.append("")
        wr.writerow(row)
    return atomic_write(path, lambda fh: fh.write(buf.getvalue()), binary=False)
