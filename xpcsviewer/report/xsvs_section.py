"""The report's "Speckle visibility (XSVS)" part (issue 46): for a raw source, or a result
file, with an ``NAME_xsvs.h5`` beside it (:func:`~xpcsviewer.jobs.xsvs.find_xsvs`; for a
result file also beside its raw source), the beta(T) figure and the per-bin table (beta0,
tau with its status, the g2 fit's contrast and tau beside, beta0 / contrast).

Plain data (strings, numbers, PNG bytes), made in the report's per-file worker; the HTML
and the PDF set it (:func:`xsvs_html`, :func:`xsvs_items`).
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

__all__ = ["xsvs_figures", "xsvs_html", "xsvs_items", "xsvs_part", "xsvs_part_of_result"]

CAPTION = ("\u03b2(T): the visibility 1/M of the negative-binomial P(k) fits per q-bin "
           "against the exposure, the fitted law \u03b2\u2080 V(T; \u03c4) and the g2 fit's "
           "contrast (\u25c7) at the left edge")


def _why(exc: BaseException) -> str:
    text = exc.one_line() if hasattr(exc, "one_line") else str(exc)
    return (text.splitlines() or [type(exc).__name__])[0][:200]


def _summary(res: Any, path: Path) -> list[tuple[str, str]]:
    from xpcsviewer.views.xsvs import seconds_text

    ex = res.exposure_s
    ft = f"{res.frame_time:g} s" if res.frame_time else "unknown (exposures in frames)"
    rng = (f"{seconds_text(ex[0])} to {seconds_text(ex[-1])}" if ex.size and res.frame_time
           else f"{int(res.windows[0])} to {int(res.windows[-1])} frames")
    rows = [("file", str(path)), ("source", f"{res.source} ({res.layout}, "
                                            f"{res.n_frames:,} frames)"),
            ("frame time", ft), ("exposures", f"{res.windows.size}: {rng}"),
            ("q-bins", str(len(res.bin_ids))),
            ("counter cap", str(res.counter_cap) if res.counter_cap else "none known")]
    if res.g2_source:
        rows.append(("g2 fit of", str(res.g2_source)))
    return rows


def xsvs_part(path: str | Path | None, dpi: float = 100.0,
              figures: bool = True) -> dict[str, Any] | None:
    """The XSVS part of the file at ``path`` (a raw source or a result file): None when
    no ``NAME_xsvs.h5`` lies beside it; ``{"note"}`` when that file cannot be read."""
    from xpcsviewer.jobs.xsvs import find_xsvs, read_xsvs

    if path is None:
        return None
    found = Path(path) if str(path).endswith("_xsvs.h5") else find_xsvs(path)
    if found is None:
        return None
    try:
        res = read_xsvs(found)
    except Exception as exc:  # an unreadable side file: say so, report the rest
        return {"note": f"{found.name} was not read: {_why(exc)}"}
    return xsvs_content(res, found, dpi, figures)


def xsvs_part_of_result(res: Any, path: str | Path, dpi: float = 100.0,
                        figures: bool = True) -> dict[str, Any] | None:
    """The XSVS part of a result file: the ``NAME_xsvs.h5`` beside it, else beside the
    raw source it records (None: neither)."""
    part = xsvs_part(path, dpi, figures)
    if part is not None:
        return part
    from xpcsviewer.jobs.raw_findings import result_raw_path

    try:
        raw, _ = result_raw_path(res)
    except Exception:  # no raw source to look beside
        return None
    return xsvs_part(raw, dpi, figures) if raw is not None else None


def xsvs_content(res: Any, path: Path, dpi: float = 100.0,
                 figures: bool = True) -> dict[str, Any]:
    """``{"what", "text", "summary", "columns", "rows", "figures"}`` of ``res``."""
    from xpcsviewer.views.xsvs import TABLE_COLUMNS, XSVS_TEXT, table_rows

    figs: list[dict[str, Any]] = []
    if figures:
        figs.append(_figure(res, dpi))
    return {"what": path.name, "text": XSVS_TEXT, "summary": _summary(res, path),
            "columns": list(TABLE_COLUMNS), "rows": table_rows(res), "figures": figs}


def _figure(res: Any, dpi: float) -> dict[str, Any]:
    from xpcsviewer.export.xsvs import xsvs_figure
    from xpcsviewer.report.sections import png_bytes

    try:
        fig = xsvs_figure(res, panels=("beta",), size="double")
    except Exception as exc:  # the file's data cannot give the plot: say so
        return {"kind": "xsvs", "caption": CAPTION, "pngs": [], "note": f"not drawn: {_why(exc)}"}
    try:
        return {"kind": "xsvs", "caption": CAPTION, "pngs": [png_bytes(fig, dpi, False)],
                "note": ""}
    finally:
        fig.clear()


def xsvs_figures(sec: dict[str, Any]) -> list[dict[str, Any]]:
    """The figures of a section's XSVS part (none without)."""
    part = sec.get("xsvs") or {}
    return list(part.get("figures", []))


def xsvs_html(part: dict[str, Any] | None, label: str) -> list[str]:
    """The part as HTML (nothing without one)."""
    if part is None:
        return []
    out = ["<h3>Speckle visibility (XSVS)</h3>"]
    if "rows" not in part:
        return [*out, f'<p class="note">{escape(part["note"])}</p>']
    from xpcsviewer.report.html import _figures, _kv_table

    out += [f"<p>{escape(part['text'])}</p>", _kv_table(part["summary"])]
    head = "".join(f"<th>{escape(c)}</th>" for c in part["columns"])
    body = "".join(f'<tr data-q-bin="{escape(r[0])}">' + "".join(
        f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in part["rows"])
    out.append(f'<table class="xsvs"><tr>{head}</tr>{body}</table>')
    out.append(_figures(part["figures"], label))
    return out


def xsvs_items(part: dict[str, Any] | None, label: str) -> list[tuple[str, Any]]:
    """The part as PDF items (see :func:`xpcsviewer.report.pdf._file_items`)."""
    if part is None:
        return []
    from xpcsviewer.report.pdf import _figure_items, _lines, _table

    items = _lines("h3", "Speckle visibility (XSVS)")
    if "rows" not in part:
        return items + _lines("p", part["note"])
    items += _lines("p", part["text"])
    for name, v in part["summary"]:
        items += _lines("p", f"{name}: {v}")
    items += [("mono", t) for t in _table(tuple(part["columns"]), part["rows"],
                                          [5, 9, 16, 20, 14, 16, 18, 14])]
    return items + _figure_items(part["figures"], label)
