"""``xpcsviewer info`` of XSVS files (issue 46): ``info NAME_xsvs.h5`` says what it holds
(source, layout, frame time, exposures, q-bins, per bin beta0 / tau / status and the g2
fit beside); ``info`` of a raw source or result file with an ``NAME_xsvs.h5`` beside it
names it in one line (JSON: ``"xsvs_beside"``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from xpcsviewer.io.errors import display_path

__all__ = ["is_xsvs_file", "print_xsvs", "xsvs_beside", "xsvs_beside_note", "xsvs_summary"]


def is_xsvs_file(path: str) -> bool:
    """Whether ``path`` is an HDF5 file with an ``/xsvs`` group (headers only)."""
    from xpcsviewer.io._h5 import open_h5

    try:
        with open_h5(path) as f:
            return "xsvs" in f and "meta" in f["xsvs"].attrs
    except Exception:  # not HDF5, unreadable: not one
        return False


def _num(v: Any) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def xsvs_summary(path: str, shown: str) -> dict[str, Any] | None:
    """The record of an XSVS file (``"kind": "xsvs"``), or None when ``path`` is not one.

    Raises
    ------
    XpcsFileError
        It has an ``/xsvs`` group that cannot be read.
    """
    if not is_xsvs_file(path):
        return None
    from xpcsviewer.jobs.xsvs import read_xsvs

    res = read_xsvs(path)
    ex = [_num(t) for t in res.exposure_s]
    bins = []
    for row in res.summary_rows():
        bins.append({k: (_num(v) if isinstance(v, float) else v) for k, v in row.items()})
    return {"path": display_path(shown), "kind": "xsvs", "source": display_path(res.source),
            "layout": res.layout, "detector_shape": list(res.detector_shape),
            "n_frames": int(res.n_frames), "frame_time": res.frame_time,
            "counter_cap": res.counter_cap, "windows": [int(w) for w in res.windows],
            "exposures_s": ex, "n_bins": len(res.bin_ids), "g2_source": res.g2_source,
            "bins": bins, "notes": list(res.notes), "warnings": [],
            "_table": _rows(res)}


def _rows(res: Any) -> list[list[str]]:
    from xpcsviewer.views.xsvs import TABLE_COLUMNS, table_rows

    return [list(TABLE_COLUMNS), *table_rows(res)]


def print_xsvs(rec: dict[str, Any]) -> None:
    """What an XSVS record holds, in lines."""
    from xpcsviewer.views.xsvs import seconds_text

    name = str(rec["path"]).rsplit("/", 1)[-1]
    ft = rec["frame_time"]
    ex = [t for t in rec["exposures_s"] if t is not None]
    w = rec["windows"]
    span = (f"{seconds_text(ex[0])} to {seconds_text(ex[-1])}" if ex and len(ex) == len(w)
            else f"{w[0]} to {w[-1]} frames" if w else "none")
    print(f"{name}: XSVS (speckle visibility by exposure) of {rec['source']}")
    print(f"  layout {rec['layout']}, {'x'.join(map(str, rec['detector_shape']))} pixels, "
          f"{rec['n_frames']:,} frames of " + (f"{ft:g} s" if ft else "unknown time"))
    print(f"  exposures: {len(w)}, {span}; q-bins: {rec['n_bins']}; counter cap: "
          + (str(rec["counter_cap"]) if rec["counter_cap"] else "none known"))
    if rec["g2_source"]:
        print(f"  g2 fit beside: {rec['g2_source']}")
    rows = rec["_table"]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  " + "  ".join(c.ljust(wd) for c, wd in zip(r, widths, strict=True)).rstrip())
    for n in rec["notes"]:
        print(f"note: {name}: {n}")


def xsvs_beside(path: str) -> str | None:
    """The ``NAME_xsvs.h5`` beside ``path`` (shown form), or None."""
    from xpcsviewer.jobs.xsvs import find_xsvs

    try:
        p = find_xsvs(path)
    except OSError:
        return None
    return None if p is None else display_path(p)


def xsvs_beside_note(rec: dict[str, Any]) -> str | None:
    """The one line naming a record's XSVS side file (None without one)."""
    x = rec.get("xsvs_beside")
    if not x:
        return None
    name = str(rec["path"]).rstrip("/").rsplit("/", 1)[-1]
    side = Path(x).name
    return (f"note: {name}: XSVS beside it: {side} (speckle visibility by exposure; "
            f"xpcsviewer info {side})")
