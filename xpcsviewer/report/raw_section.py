"""The report's "Raw data" part (issue 45): the timelines' summary and the findings of the
raw data's fault finder, for a result whose raw source is reachable (its config's ``raw``,
or beside it: :func:`~xpcsviewer.jobs.raw_findings.result_raw_path`) or for a raw source
given itself. One pass over the raw data, in the report's per-file worker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["is_raw_source", "raw_part", "raw_source_section"]

#: findings listed per file (by the finders' score)
RAW_TOP = 30


def _why(exc: BaseException) -> str:
    text = exc.one_line() if hasattr(exc, "one_line") else str(exc)
    return (text.splitlines() or [type(exc).__name__])[0]


def _content(ins: Any, what: str) -> dict[str, Any]:
    from xpcsviewer.jobs.raw_findings import finding_rows, timeline_summary

    rows = finding_rows(ins, top=RAW_TOP)
    more = len(ins.findings) - (len(rows) - 1)
    return {"what": what, "summary": timeline_summary(ins), "findings": rows,
            "note": f"{more} more findings not listed (xpcsviewer inspect lists them all)"
                    if more > 0 else ""}


def raw_part(res: Any) -> dict[str, Any] | None:
    """The Raw data part of a result's section: ``{"what", "summary", "findings",
    "note"}``, ``{"note"}`` alone when its raw source cannot be inspected, None when the
    result records none."""
    from xpcsviewer.jobs.raw_findings import inspect_for_result, result_raw_path

    path, why = result_raw_path(res)
    if path is None:
        return None if why == "the result records no raw source" else {"note": why}
    try:
        ins, what = inspect_for_result(res, path)
    except Exception as exc:  # an unreadable raw source: say so, report the rest
        return {"note": f"its raw source {path} was not inspected: {_why(exc)}"}
    return _content(ins, what)


def is_raw_source(path: str | Path) -> bool:
    """Whether ``path`` is a raw source (not a result file)."""
    from xpcsviewer.io.raw import raw_layout

    try:
        return raw_layout(path) is not None
    except Exception:  # unreadable: its section says why
        return False


def raw_source_section(path: str | Path) -> dict[str, Any]:
    """The section of a raw source given itself: ``kind`` ``raw`` and its Raw data part
    (``error`` when it cannot be inspected)."""
    from xpcsviewer.io.classify import qmap_beside
    from xpcsviewer.jobs.inspect import inspect_source

    p = Path(path)
    qmap = qmap_beside(p)  # NAME_qmap.h5, as the window pairs them: bins, mask, q-bin levels
    try:
        ins = inspect_source(p, qmap=qmap)
    except Exception as exc:  # one line in the report, the rest is reported
        return {"path": str(p), "error": _why(exc)}
    from xpcsviewer.report.xsvs_section import xsvs_part

    return {"path": str(p), "kind": "raw", "label": p.name,
            "raw": _content(ins, f"{p} ({ins.layout}, {ins.n_frames} frames"
                            + (f"; q-map {Path(qmap).name})" if qmap else ")")),
            "xsvs": xsvs_part(p)}  # NAME_xsvs.h5 beside it (issue 46)
