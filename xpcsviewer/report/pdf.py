"""The report as PDF: the HTML's text and figures laid out on A4 pages with matplotlib.

The text is the HTML's (:mod:`xpcsviewer.report.content`), set in TrueType fonts
(:data:`xpcsviewer.export._fig_common.FONT_RC`); the figures are the same PNGs. Each
file starts a page; :func:`plan_pages` decides the pages before anything is drawn.
"""

from __future__ import annotations

import struct
import textwrap
from pathlib import Path
from typing import Any

from xpcsviewer.report.content import (
    AGES_COLUMNS,
    BIN_COLUMNS,
    ages_rows,
    ages_text,
    bin_rows,
    provenance_rows,
    quality_rows,
    status_counts,
    summary_columns,
    summary_rows,
)

__all__ = ["plan_pages", "write_pdf"]

PAGE_W, PAGE_H = 8.27, 11.69  # A4 (in)
MARGIN = 0.55
LINE_IN = {"h1": 0.34, "h2": 0.28, "h3": 0.22, "p": 0.15, "mono": 0.13}
SIZE_PT = {"h1": 15, "h2": 12, "h3": 10, "p": 7.5, "mono": 6.2}
WRAP = {"h1": 60, "h2": 80, "h3": 100, "p": 115, "mono": 150}
IMG_W = 6.2  # in: figures a little narrower than the text block
IMG_H_MAX = (PAGE_H - 2 * MARGIN) / 2 - 0.25


def _png_size(png: bytes) -> tuple[int, int]:
    w, h = struct.unpack(">II", png[16:24])  # IHDR follows the 8-byte signature
    return int(w), int(h)


def _lines(style: str, text: str) -> list[tuple[str, Any]]:
    wrapped = textwrap.wrap(text, WRAP[style], subsequent_indent="    ",
                            break_long_words=True) or [""]
    return [(style, t) for t in wrapped]


def _table(header: tuple[str, ...], rows: list[list[str]], widths: list[int]) -> list[str]:
    def cell(s: str, w: int) -> str:
        s = str(s)
        return s if len(s) <= w else s[: w - 1] + "\u2026"

    out = ["  ".join(cell(h, w).ljust(w) for h, w in zip(header, widths, strict=True))]
    for r in rows:
        out.append("  ".join(cell(c, w).ljust(w) for c, w in zip(r, widths, strict=True)))
    return out


def _file_items(sec: dict[str, Any], k: int) -> list[tuple[str, Any]]:
    items: list[tuple[str, Any]] = [("page", None)]
    if "error" in sec:
        return items + _lines("h2", f"{k + 1}. {sec['path']}") + _lines(
            "p", f"not read: {sec['error']}")
    from xpcsviewer.report.xsvs_section import xsvs_items

    if sec.get("kind") == "raw":
        return (items + _lines("h2", f"{k + 1}. {sec['label']}") + _raw_items(sec["raw"])
                + xsvs_items(sec.get("xsvs"), sec["label"]))
    items += _lines("h2", f"{k + 1}. {sec['label']}") + _lines("h3", "Provenance")
    for name, v in provenance_rows(sec):
        items += _lines("p", f"{name}: {v}")
    for n in sec["notes"]:
        items += _lines("p", n)
    items += _lines("h3", "Stability and beam damage") + _lines("p", sec["stability"]["summary"])
    if sec["bins"]:  # no fitted bin: the note says why (no empty table, issue 49)
        items += _fit_items(sec)
    items += _ages_items(sec, ages_text(sec))
    return items + _quality_items(sec)


def _fit_items(sec: dict[str, Any]) -> list[tuple[str, Any]]:
    """The bin table with the reasons, and tau(q) with the exponent and D."""
    items = _lines("h3", "Fits: every q-bin with its model, status and reason")
    rows = [c for c, _ in bin_rows(sec)]
    body = _table(BIN_COLUMNS[1:6] + BIN_COLUMNS[7:],
                  [r[1:6] + r[7:] for r in rows], [4, 9, 7, 14, 10, 17, 20, 9])
    items += [("mono", t) for t in body]
    reasons = [f"bin {r[1]}: {r[5]}: {r[6]}" for r in rows if r[6]]
    if reasons:
        items += _lines("p", "Reasons:")
        for t in reasons:
            items += _lines("p", t)
    d = sec["diffusion"]
    items += _lines("h3", "\u03c4(q): the exponent and D") + _lines(
        "p", f"{d['message']} ({d['n_good']} converged bins entered)")
    if d.get("q_note"):
        items += _lines("p", d["q_note"])
    if d["verdict"] == "diffusive":
        from xpcsviewer.report.html import _radius

        items += _lines("p", f"radius {_radius(d)}")
    return items


def _ages_items(sec: dict[str, Any], text: str | None) -> list[tuple[str, Any]]:
    items: list[tuple[str, Any]] = []
    if text is not None:
        items += _lines("h3", "g\u2082 by sample age") + _lines("p", text)
        rows = ages_rows(sec)
        if rows:
            items += [("mono", t) for t in _table(AGES_COLUMNS, rows,
                                                  [3, 9, 12, 28, 7, 11, 13])]
    return items


def _quality_items(sec: dict[str, Any]) -> list[tuple[str, Any]]:
    """Data quality, raw data, XSVS and the figures."""
    from xpcsviewer.report.xsvs_section import xsvs_items

    items = _lines("h3", "Data quality")
    for name, v in quality_rows(sec):
        items += _lines("p", f"{name}: {v}")
    items += _raw_items(sec.get("raw"))
    items += xsvs_items(sec.get("xsvs"), sec["label"])
    items += _figure_items(sec["figures"], sec["label"])
    return items


def _raw_items(raw: dict[str, Any] | None) -> list[tuple[str, Any]]:
    """The Raw data part (see :func:`xpcsviewer.report.html._raw_html`)."""
    if raw is None:
        return []
    items = _lines("h3", "Raw data")
    if "summary" not in raw:
        return items + _lines("p", raw["note"])
    items += _lines("p", f"One pass over {raw['what']}: timelines and the fault finder.")
    for name, v in raw["summary"]:
        items += _lines("p", f"{name}: {v}")
    for r in raw["findings"][1:]:
        items += _lines("p", f"{r[0]}, frames {r[1]}, pixels {r[2]}"
                        + (f", {r[3]} Hz" if r[3] != "\u2013" else "")
                        + (f", q-bin {r[4]}" if r[4] != "\u2013" else "") + f": {r[5]}")
    if raw.get("note"):
        items += _lines("p", raw["note"])
    return items


def _figure_items(figs: list[dict[str, Any]], label: str) -> list[tuple[str, Any]]:
    items: list[tuple[str, Any]] = []
    for f in figs:
        if not f["pngs"]:
            items += _lines("p", f"{f['caption']}: {f['note']}")
        n = len(f["pngs"])
        for j, png in enumerate(f["pngs"]):
            cap = f"{label}: {f['caption']}" + (f" (page {j + 1} of {n})" if n > 1 else "")
            items.append(("image", (png, cap)))
    return items


def _items(report: dict[str, Any]) -> list[tuple[str, Any]]:
    secs = report["sections"]
    items = _lines("h1", report.get("title") or "XPCS report")
    sw = ", ".join(f"{k} {v}" for k, v in report["versions"].items())
    items += _lines("p", f"{len(secs)} file(s); made {report['created']} by {sw}; fits: "
                         f"{report['fit_text']}.")
    items += _lines("h2", "Summary")
    from xpcsviewer.report.html import _GUIDE

    guide = _GUIDE.replace("<b>", "").replace("</b>", "").replace("<code>", "")
    items += _lines("p", guide.replace("</code>", "").replace("&gt;", ">"))
    cols = summary_columns(secs)
    for r in summary_rows(secs):
        items += _lines("h3", r[0])
        for name, v in zip(cols[1:], r[1:], strict=True):
            items += _lines("p", f"{name}: {v}")
    counts = status_counts(secs)
    if counts:
        items += _lines("p", "Bins per status over all files: "
                        + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if report.get("set_figures") or report.get("set_notes"):
        items += [("page", None), *_lines("h2", "The set of files")]
        for n in report.get("set_notes", []):
            items += _lines("p", n)
        items += _figure_items(report.get("set_figures", []), "all files")
    for k, s in enumerate(secs):
        items += _file_items(s, k)
    return items


def plan_pages(report: dict[str, Any]) -> list[list[tuple[str, Any, float]]]:
    """Pages of (kind, content, height in inches): text lines and images, top down."""
    pages: list[list[tuple[str, Any, float]]] = [[]]
    room = PAGE_H - 2 * MARGIN
    used = 0.0
    for kind, content in _items(report):
        if kind == "page":
            if pages[-1]:
                pages.append([])
                used = 0.0
            continue
        if kind == "image":  # at most half a page: two figures a page
            w, h = _png_size(content[0])
            height = min(IMG_W * h / max(w, 1), IMG_H_MAX) + LINE_IN["p"]
        else:
            height = LINE_IN[kind]
        if used + height > room and pages[-1]:
            pages.append([])
            used = 0.0
        pages[-1].append((kind, content, height))
        used += height
    return pages


def _draw_page(page: list[tuple[str, Any, float]], number: int, total: int) -> Any:
    import io

    import numpy as np
    from matplotlib.figure import Figure
    from PIL import Image

    fig = Figure(figsize=(PAGE_W, PAGE_H))
    y = PAGE_H - MARGIN
    for kind, content, height in page:
        if kind == "image":
            png, cap = content
            img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
            h_img = height - LINE_IN["p"]
            w_img = min(IMG_W, h_img * img.shape[1] / img.shape[0])
            ax = fig.add_axes((MARGIN / PAGE_W, (y - h_img) / PAGE_H, w_img / PAGE_W,
                               h_img / PAGE_H))
            ax.imshow(img, interpolation="none")
            ax.set_axis_off()
            fig.text(MARGIN / PAGE_W, (y - height + 0.03) / PAGE_H, cap,
                     fontsize=SIZE_PT["p"], color="#555", parse_math=False)
        else:
            weight = "bold" if kind.startswith("h") else "normal"
            family = "DejaVu Sans Mono" if kind == "mono" else "DejaVu Sans"
            # file names and metadata as written (a "$" pair is not mathtext)
            fig.text(MARGIN / PAGE_W, (y - 0.75 * height) / PAGE_H, content,
                     fontsize=SIZE_PT[kind], weight=weight, family=family,
                     parse_math=False)
        y -= height
    fig.text(0.5, 0.3 / PAGE_H, f"{number} / {total}", ha="center", fontsize=7)
    return fig


def write_pdf(report: dict[str, Any], target: Path) -> int:
    """Write the PDF to ``target`` (a path the caller made atomic); returns the pages."""
    import matplotlib
    from matplotlib.backends.backend_pdf import PdfPages

    from xpcsviewer.export._fig_common import FONT_RC

    pages = plan_pages(report)
    with matplotlib.rc_context(FONT_RC), PdfPages(target) as pdf:
        info = pdf.infodict()
        info["Title"] = report.get("title") or "XPCS report"
        info["Creator"] = f"xpcsviewer {report['versions'].get('xpcsviewer', '')}"
        for k, page in enumerate(pages):
            fig = _draw_page(page, k + 1, len(pages))
            pdf.savefig(fig)
            fig.clear()
    return len(pages)
