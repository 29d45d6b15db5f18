"""Which files of a series one line may join (issue 49; no Qt).

A line of the Series tab, its exported figure, the report's Series figure and the
``group`` column of ``xpcsviewer series`` joins the same q-bin of several files. That is a
trend only where the files are one sample measured on one q-partition: the bins of
unrelated files share a number, not a q. Files join a group when

- their sample is the same: every field of :data:`SAMPLE_KEYS` that either file states
  in ``/entry/sample`` is stated by both, equal (text exactly, numbers within 1e-6). The
  fields that a series varies (temperature, position, shear, age) and the free-text
  ``description`` (it narrates the measurement: "repeat 2 of 4") are not compared;
- their partition is the same: the bins they share by number agree in q within
  :data:`~xpcsviewer.views.g2.Q_TOL` (the g2 tab's tolerance) and in phi within
  :data:`~xpcsviewer.views.g2.PHI_TOL_DEG`, and they share at least one bin.

A file joins the first group (in the table's order) whose first file it matches, else
starts a group. Each group is labelled with its own q; :func:`not_joined_text` says
which files were not joined to the first group and why.

The table is a :class:`xpcsviewer.jobs.series.SeriesTable` (``files``, each with
``bins``, ``sample``, ``path`` and ``error``); ``jobs`` is a floor this package does
not import.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xpcsviewer.views.g2 import PHI_TOL_DEG, Q_TOL

__all__ = [
    "SAMPLE_KEYS",
    "SeriesGroup",
    "file_groups",
    "file_label",
    "join_reason",
    "not_joined_text",
    "sample_identity",
    "series_groups",
]

#: ``/entry/sample`` fields that say what the sample is: NeXus NXsample ``name`` and
#: ``chemical_formula``, a sample id, the APS 8-ID ``short_description`` and
#: ``full_description``, a particle ``radius`` (the demo files').
SAMPLE_KEYS = ("name", "sample_name", "sample_id", "short_description", "full_description",
               "chemical_formula", "radius")

#: Relative tolerance of a numeric sample field (a float32 copy of one value).
_NUM_TOL = 1e-6


def sample_identity(sample: Mapping[str, Any] | None) -> dict[str, float | str]:
    """The fields of :data:`SAMPLE_KEYS` a file states (text stripped, numbers float)."""
    out: dict[str, float | str] = {}
    for k in SAMPLE_KEYS:
        v = (sample or {}).get(k)
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        if isinstance(v, str):
            if v.strip():
                out[k] = v.strip()
        elif isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v):
            out[k] = float(v)
    return out


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= _NUM_TOL * max(abs(a), abs(b))
    return a == b


def _show(v: Any) -> str:
    if v is None:
        return "not stated"
    if isinstance(v, float):
        return f"{v:.4g}"
    return repr(v if len(v) <= 40 else v[:39] + "\u2026")


def file_label(path: str, width: int = 24) -> str:
    """A file's short name: its stem without ``_results``, cut to ``width`` characters."""
    stem = Path(str(path)).stem
    stem = stem[: -len("_results")] if stem.endswith("_results") else stem
    return stem if len(stem) <= width else stem[: width - 1] + "\u2026"


def _bins(f: Any) -> dict[int, tuple[float, float]]:
    out: dict[int, tuple[float, float]] = {}
    for b in f.bins:
        try:
            q, phi = float(b["q"]), float(b.get("phi") or 0.0)
        except (TypeError, ValueError):
            continue
        out.setdefault(int(b["bin"]), (q, phi))
    return out


def _sample_reason(ref: Any, f: Any) -> str | None:
    a, b = (sample_identity(getattr(x, "sample", None)) for x in (ref, f))
    for k in SAMPLE_KEYS:
        va, vb = a.get(k), b.get(k)
        if (va is None) != (vb is None) or (va is not None and not _same_value(va, vb)):
            return f"other sample: {k} {_show(vb)} vs {_show(va)}"
    return None


def _partition_reason(ref: Any, f: Any) -> str | None:
    ba, bb = _bins(ref), _bins(f)
    common = sorted(set(ba) & set(bb))
    if not common:
        return "other partition: no q-bin number in common"
    for k in common:
        (qa, pa), (qb, pb) = ba[k], bb[k]
        if not abs(qb - qa) <= Q_TOL * abs(qa):
            return (f"its bins' q differ by > {100 * Q_TOL:g} %: bin {k} q {qb:.4g} vs "
                    f"{qa:.4g} \u00c5\u207b\u00b9")
        if not abs(pb - pa) <= PHI_TOL_DEG:
            return (f"its bins' \u03c6 differ by > {PHI_TOL_DEG:g}\u00b0: bin {k} "
                    f"{pb:.3g}\u00b0 vs {pa:.3g}\u00b0")
    return None


def join_reason(ref: Any, f: Any) -> str | None:
    """None where file ``f`` may join the group of ``ref`` (both ``FileFit``-like), else
    why not: ``"other sample: radius 1e-07 vs 2.5e-07"``, ``"its bins' q differ by > 2 %:
    bin 1 q 0.004355 vs 0.001612 Å⁻¹"``, or both, joined by "; "."""
    why = [r for r in (_sample_reason(ref, f), _partition_reason(ref, f)) if r]
    return "; ".join(why) if why else None


@dataclass(frozen=True)
class SeriesGroup:
    """Files one line may join: their indices in the table's ``files`` (table order),
    the q (1/Angstrom) of each bin of its first file, and why the group is not joined to
    the first group ("" for the first)."""

    number: int
    files: tuple[int, ...]
    q: dict[int, float] = field(default_factory=dict)
    reason: str = ""
    label: str = ""


def series_groups(table: Any) -> list[SeriesGroup]:
    """The groups of the table's files that have fits (files that failed are in none),
    numbered from 1 in the order their first file appears."""
    files = list(getattr(table, "files", []))
    members: list[list[int]] = []
    for i, f in enumerate(files):
        if f.error is not None or not f.bins:
            continue
        for m in members:
            if join_reason(files[m[0]], f) is None:
                m.append(i)
                break
        else:
            members.append([i])
    out = []
    for n, m in enumerate(members, start=1):
        first = files[m[0]]
        reason = "" if n == 1 else (join_reason(files[members[0][0]], first) or "")
        label = file_label(first.path) + (f" +{len(m) - 1}" if len(m) > 1 else "")
        out.append(SeriesGroup(n, tuple(m), {k: v[0] for k, v in _bins(first).items()},
                               reason, label))
    return out


def file_groups(table: Any, groups: list[SeriesGroup] | None = None) -> list[int | None]:
    """Each file's group number (None: the file has no fit), for the CSV's ``group``."""
    groups = series_groups(table) if groups is None else groups
    out: list[int | None] = [None] * len(getattr(table, "files", []))
    for g in groups:
        for i in g.files:
            out[i] = g.number
    return out


def not_joined_text(table: Any, groups: list[SeriesGroup] | None = None) -> str:
    """``"not joined to A02_silica_R250nm_water (lines of their own): H01_hot_pixels_R100nm
    (other sample: radius 1e-07 vs 2.5e-07), S05_… (…)"``; "" for one group."""
    groups = series_groups(table) if groups is None else groups
    if len(groups) < 2:
        return ""
    files = table.files
    parts = []
    for g in groups[1:]:
        names = file_label(files[g.files[0]].path)
        if len(g.files) > 1:
            names += f" and {len(g.files) - 1} more"
        parts.append(f"{names} ({g.reason})")
    return f"not joined to {groups[0].label} (lines of their own): " + ", ".join(parts)
