"""A run of result files as a series: tau(q) and contrast against time, index or a field.

An ageing or temperature series is many result files of one sample. Each file is fitted
with the ``fit`` command's entry point (:func:`xpcsviewer.jobs.fitfile.fit_result_files`:
the same statuses and model choice as ``xpcsviewer fit``); the abscissa of a file is

- ``start_time``: ``/entry/start_time``, as seconds after the earliest file of the
  series (the table also keeps the timestamp itself);
- ``index``: its position in the list (0-based);
- any other word: a metadata field, an HDF5 path (``/entry/sample/temperature``) or
  a name under ``/entry/sample``.

:class:`SeriesTable` is the result: one row per file and q-bin, written as CSV by
``xpcsviewer series`` and drawn by the GUI's Series tab, which appends files as they
are finished (:meth:`SeriesTable.extend`). Each file keeps its ``/entry/sample`` fields,
so that :func:`xpcsviewer.views.series.series_groups` joins only files of one sample and
one q-partition (issue 49).
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["COLUMNS", "GROUP_COLUMN", "FileFit", "SeriesTable", "file_info", "file_x",
           "fit_series_files", "parse_time"]

#: CSV columns of a series table, in order (``x`` is written ``x:<name>``: ``x:start_time``
#: is seconds since the first file, ``x:index`` the position, ``x:FIELD`` the field)
COLUMNS = ("file", "index", "x", "start_time", "elapsed_s", "bin", "q_1/A", "phi_deg", "model",
           "status", "tau_s", "tau_err_s", "tau_lower_limit_s", "tau_upper_limit_s",
           "contrast", "contrast_err", "chi2_red")

#: The column appended after :data:`COLUMNS` where the files fall into several groups
#: (:func:`xpcsviewer.views.series.series_groups`): the group a row belongs to, 1-based.
GROUP_COLUMN = "group"


def parse_time(text: Any) -> _dt.datetime | None:
    """A start time as written by the correlators (ISO 8601, with ``T`` or a space;
    naive times are taken as UTC), or None."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        t = _dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=_dt.UTC)


def _scalar(v: Any) -> float | str | None:
    a = np.asarray(v)
    if a.dtype.kind in "SUO":
        x = a.ravel()[0] if a.size else None
        if isinstance(x, bytes):
            return x.decode("utf-8", "replace")
        return None if x is None else str(x)
    if a.size != 1 or a.dtype.kind not in "fiub":
        return None
    return float(a.ravel()[0])


def _sample_fields(f: Any) -> dict[str, float | str]:
    """The scalar fields of ``/entry/sample`` (numbers and text), by name."""
    out: dict[str, float | str] = {}
    g = f.get("/entry/sample")
    if g is None or not hasattr(g, "items"):
        return out
    for k, ds in g.items():
        if hasattr(ds, "shape") and int(np.prod(ds.shape)) <= 1:
            try:
                v = _scalar(ds[()])
            except (OSError, TypeError, ValueError):
                continue  # an unreadable note: the field stays unknown
            if v is not None:
                out[str(k)] = v
    return out


def file_info(path: str | Path, x: str) -> tuple[float | str | None, str | None,
                                                  dict[str, float | str]]:
    """(the field ``x`` of the file, its start time text, its ``/entry/sample`` scalars);
    ``x`` is not ``index``.

    ``start_time`` gives the start time text for both; a missing field gives None.
    """
    from xpcsviewer.io._h5 import open_h5

    with open_h5(path) as f:
        sample = _sample_fields(f)
        st = f.get("/entry/start_time")
        start = _scalar(st[()]) if st is not None and hasattr(st, "shape") else None
        start_text = start if isinstance(start, str) else None
        if x == "start_time":
            return start, start_text, sample
        for p in ((x,) if x.startswith("/") else (f"/entry/sample/{x}", f"/entry/{x}", x)):
            try:
                ds = f.get(p)
            except (KeyError, ValueError):
                ds = None
            if ds is not None and hasattr(ds, "shape"):
                return _scalar(ds[()]), start_text, sample
    return None, start_text, sample


def file_x(path: str | Path, x: str) -> tuple[float | str | None, str | None]:
    """(the field ``x`` of the file, its start time text): :func:`file_info` without the
    sample."""
    xv, start, _ = file_info(path, x)
    return xv, start


@dataclass
class FileFit:
    """One file of the series: its abscissa, start time, per-bin fits and its
    ``/entry/sample`` fields (what sample it is: the series joins one sample's files)."""

    path: str
    x: float | str | None
    start_time: str | None
    bins: list[dict[str, Any]] = field(default_factory=list)
    chi2: list[Any] = field(default_factory=list)
    error: str | None = None
    mtime: float = 0.0
    sample: dict[str, Any] = field(default_factory=dict)


@dataclass
class SeriesTable:
    """Fits of a series of files; rows are (file, q-bin)."""

    x_name: str
    files: list[FileFit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def extend(self, more: Sequence[FileFit]) -> None:
        """Append files (a file already in the table is replaced: rewritten on disk)."""
        for f in more:
            self.files = [g for g in self.files if g.path != f.path]
            self.files.append(f)

    def t0(self) -> _dt.datetime | None:
        times = [t for t in (parse_time(f.start_time) for f in self.files) if t is not None]
        return min(times) if times else None

    def x_values(self) -> np.ndarray:
        """The abscissa of each file (NaN when missing or not a number)."""
        out = np.full(len(self.files), np.nan)
        t0 = self.t0() if self.x_name == "start_time" else None
        for i, f in enumerate(self.files):
            if self.x_name == "index":
                out[i] = i
            elif self.x_name == "start_time":
                t = parse_time(f.start_time)
                out[i] = (t - t0).total_seconds() if t is not None and t0 is not None else np.nan
            elif isinstance(f.x, float):
                out[i] = f.x
        return out

    def x_label(self) -> str:
        return {"start_time": "time since the first file (s)", "index": "file index"}.get(
            self.x_name, self.x_name)

    def bin_numbers(self) -> list[int]:
        """The q-bins present in any file, ascending."""
        return sorted({int(b["bin"]) for f in self.files for b in f.bins})

    def default_bins(self, k: int = 4) -> list[int]:
        """A first choice of ``k`` bins: those with the most converged fits (ties: spread
        over q), in q order."""
        bins = self.bin_numbers()
        if len(bins) <= k:
            return bins
        conv = dict.fromkeys(bins, 0)
        for f in self.files:
            for b in f.bins:
                conv[int(b["bin"])] += b["status"] == "converged"
        spread = {b: i for i, b in enumerate(bins)}
        # most converged first; among equals, every other bin so the q range is covered
        order = sorted(bins, key=lambda b: (-conv[b], spread[b] % 2, spread[b]))
        return sorted(order[:k])

    def bin_q(self) -> dict[int, float]:
        out: dict[int, float] = {}
        for f in self.files:
            for b in f.bins:
                out.setdefault(int(b["bin"]), float(b["q"]))
        return out

    def curve(self, bin_no: int, name: str, only: Sequence[int] | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """(x, value, error, status) of ``name`` (``tau_s`` or ``contrast``) for one bin;
        NaN where the file has no value for it. ``only``: the indices (in ``files``) of
        the files to read (one group of the series), default all."""
        xs = self.x_values()
        v = np.full(len(self.files), np.nan)
        e = np.full(len(self.files), np.nan)
        st = [""] * len(self.files)
        err_key = "tau_err_s" if name == "tau_s" else f"{name}_err"
        for i, f in enumerate(self.files):
            for b in f.bins:
                if int(b["bin"]) == bin_no:
                    v[i] = np.nan if b.get(name) is None else b[name]
                    e[i] = np.nan if b.get(err_key) is None else b[err_key]
                    st[i] = b.get("status", "")
        keep = np.arange(len(self.files)) if only is None else np.asarray(list(only), int)
        order = keep[np.argsort(xs[keep], kind="stable")]
        return xs[order], v[order], e[order], [st[k] for k in order]

    def rows(self, groups: Sequence[int | None] | None = None) -> list[list[Any]]:
        """CSV rows (header first; None for missing numbers). ``groups``: each file's
        group number, written in a last column :data:`GROUP_COLUMN` (None: no column)."""
        xs = self.x_values()
        t0 = self.t0()
        out: list[list[Any]] = [list(COLUMNS) + ([GROUP_COLUMN] if groups is not None else [])]
        out[0][2] = f"x:{self.x_name}"
        for i, f in enumerate(self.files):
            t = parse_time(f.start_time)
            el = (t - t0).total_seconds() if t is not None and t0 is not None else None
            xv: Any = f.x if self.x_name not in ("index", "start_time") else (
                None if not math.isfinite(xs[i]) else float(xs[i]))
            if self.x_name == "index":
                xv = i
            tail = [] if groups is None else [groups[i]]
            if f.error is not None:
                out.append([f.path, i, xv, f.start_time, el, None, None, None, None,
                            f"error: {f.error}", *([None] * 7), *tail])
                continue
            for j, b in enumerate(f.bins):
                out.append([f.path, i, xv, f.start_time, el, b["bin"], b["q"], b["phi"],
                            b.get("model"), b["status"], b["tau_s"], b["tau_err_s"],
                            b["tau_lower_limit_s"], b["tau_upper_limit_s"], b["contrast"],
                            b["contrast_err"], f.chi2[j] if j < len(f.chi2) else None, *tail])
        return out


def fit_series_files(paths: Sequence[str], x: str = "start_time", model: str = "auto",
                     q_range: tuple[float, float] | None = None,
                     fitter: Callable[..., list[Any]] | None = None,
                     progress: Any = None, cancel: Any = None) -> list[FileFit]:
    """Fit ``paths`` and read their abscissa; one :class:`FileFit` per path, in order.

    ``fitter``: default :func:`~xpcsviewer.jobs.fitfile.fit_result_files` (the ``fit``
    command's entry point). Files are fitted in chunks of 32 (one batched solve each),
    with progress and cancel between chunks.
    """
    import os

    from xpcsviewer.io.errors import XpcsFileError
    from xpcsviewer.jobs.fitfile import fit_result_files, record_bins
    from xpcsviewer.progress import report

    fit = fitter or fit_result_files
    out: list[FileFit] = []
    n = len(paths)
    for a in range(0, n, 32):
        report(progress, cancel, a, n, f"fitting {a}/{n} files")
        chunk = [str(p) for p in paths[a : a + 32]]
        outs = fit(chunk, model=model, q_range=q_range)
        for p, o in zip(chunk, outs, strict=True):
            try:
                xv, start, sample = file_info(p, x if x != "index" else "start_time")
                mtime = os.stat(p).st_mtime
            except (XpcsFileError, OSError) as exc:
                out.append(FileFit(p, None, None, error=str(exc)))
                continue
            if not o.ok:
                out.append(FileFit(p, xv, start, error=o.error, mtime=mtime, sample=sample))
                continue
            out.append(FileFit(p, xv if x != "index" else None, start, record_bins(o.record),
                               list(o.record.get("chi2_red", [])), mtime=mtime,
                               sample=sample))
    report(progress, cancel, n, n, "fitted")
    return out
