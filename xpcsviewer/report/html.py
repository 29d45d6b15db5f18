"""The report as one self-contained HTML5 page: inline CSS, figures as data: URIs, no
script, no font or link outside the file (it opens with the network off)."""

from __future__ import annotations

import base64
from html import escape
from typing import Any

from xpcsviewer.report.content import (
    BIN_COLUMNS,
    bin_rows,
    provenance_rows,
    quality_rows,
    status_counts,
    summary_columns,
    summary_rows,
)

__all__ = ["render_html"]

_CSS = """
body{font-family:sans-serif;margin:1.5em auto;max-width:78em;color:#222;line-height:1.35}
h1{font-size:1.6em}h2{font-size:1.3em;border-bottom:1px solid #bbb;margin-top:2em}
h3{font-size:1.1em;margin-top:1.4em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
th,td{border:1px solid #ccc;padding:.2em .45em;vertical-align:top;text-align:left}
th{background:#eee}td.n{text-align:right;white-space:nowrap}
tr.converged td.s{color:#185}tr.bad td.s{color:#b30}tr.rough td.s{color:#a60}
figure{display:inline-block;margin:.4em;vertical-align:top}
figure img{max-width:100%;border:1px solid #ddd}figcaption{font-size:.85em;color:#555}
.note{color:#a60}.error{color:#b30}code{font-size:.9em}
nav li{display:inline;margin-right:1em}
table.summary td:nth-child(3){min-width:24em}table.summary td:nth-child(8){min-width:18em}
table.bins td:first-child,table.summary td:first-child{min-width:10em;max-width:16em;
overflow-wrap:anywhere;font-size:.85em}
table.bins td:nth-child(7){min-width:18em}
"""
_ROUGH = {"unresolved", "at_bound"}
_GOOD = {"converged"}


def _e(x: Any) -> str:
    return escape(str(x), quote=True)


def _kv_table(rows: list[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"


def _img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{data}">'


def _figures(figs: list[dict[str, Any]], label: str) -> str:
    out = []
    for f in figs:
        if not f["pngs"]:
            out.append(f'<p class="note">{_e(f["caption"])}: {_e(f["note"])}</p>')
            continue
        n = len(f["pngs"])
        for k, png in enumerate(f["pngs"]):
            cap = f["caption"] + (f" (page {k + 1} of {n})" if n > 1 else "")
            out.append(f"<figure>{_img(png, f'{label}: {cap}')}"
                       f"<figcaption>{_e(label)}: {_e(cap)}</figcaption></figure>")
    return "\n".join(out)


def _bin_table(sec: dict[str, Any], anchor: str) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in BIN_COLUMNS)
    rows = []
    for cells, b in bin_rows(sec):
        st = b["status"]
        cls = "converged" if st in _GOOD else ("rough" if st in _ROUGH else "bad")
        # full-precision values beside the printed ones: every number traceable
        data = " ".join(f'data-{k.replace("_", "-")}="{b[k]!r}"'
                        for k in ("q", "contrast", "contrast_err", "tau", "tau_err", "chi2_red"))
        tds = []
        for i, c in enumerate(cells):
            kls = ' class="s"' if BIN_COLUMNS[i] == "status" else (
                ' class="n"' if i in (1, 2, 3, 7, 8, 9) else "")
            tds.append(f"<td{kls}>{_e(c)}</td>")
        rows.append(f'<tr class="{cls}" id="{anchor}-bin{b["bin"]}" data-file="{_e(sec["path"])}" '
                    f'data-bin="{b["bin"]}" data-status="{_e(st)}" {data}>{"".join(tds)}</tr>')
    return f'<table class="bins"><tr>{head}</tr>{"".join(rows)}</table>'


def _raw_html(raw: dict[str, Any] | None) -> list[str]:
    """The Raw data part: the timelines' summary and the findings table (nothing when the
    result records no raw source)."""
    if raw is None:
        return []
    out = ["<h3>Raw data</h3>"]
    if "summary" not in raw:
        return [*out, f'<p class="note">{_e(raw["note"])}</p>']
    out += [f"<p>One pass over {_e(raw['what'])}: timelines and the fault finder "
            "(as <code>xpcsviewer inspect</code>).</p>", _kv_table(raw["summary"])]
    rows = raw["findings"]
    if len(rows) > 1:
        head = "".join(f"<th>{_e(c)}</th>" for c in rows[0])
        body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>"
                       for r in rows[1:])
        out.append(f'<table class="findings"><tr>{head}</tr>{body}</table>')
    if raw.get("note"):
        out.append(f'<p class="note">{_e(raw["note"])}</p>')
    return out


def _file_section(sec: dict[str, Any], k: int) -> str:
    anchor = f"file{k + 1}"
    if "error" in sec:
        return (f'<section id="{anchor}"><h2>{k + 1}. {_e(sec["path"])}</h2>'
                f'<p class="error">not read: {_e(sec["error"])}</p></section>')
    from xpcsviewer.report.xsvs_section import xsvs_html

    if sec.get("kind") == "raw":
        return "\n".join([f'<section id="{anchor}"><h2>{k + 1}. {_e(sec["label"])}</h2>',
                          *_raw_html(sec["raw"]), *xsvs_html(sec.get("xsvs"), sec["label"]),
                          "</section>"])
    d, st = sec["diffusion"], sec["stability"]
    parts = [f'<section id="{anchor}"><h2>{k + 1}. {_e(sec["label"])}</h2>',
             "<h3>Provenance</h3>", _kv_table(provenance_rows(sec))]
    parts += [f'<p class="note">{_e(n)}</p>' for n in sec["notes"]]
    parts += ["<h3>Stability and beam damage</h3>", f"<p>{_e(st['summary'])}</p>"]
    if sec["bins"]:  # no fitted bin: the note above says why; no empty table (issue 49)
        parts += ["<h3>Fits: every q-bin with its model, status and reason</h3>",
                  _bin_table(sec, anchor),
                  "<h3>\u03c4(q): the exponent and D</h3>",
                  f"<p>{_e(d['message'])} ({d['n_good']} converged bins entered)"
                  + (f"; radius {_e(_radius(d))}" if d["verdict"] == "diffusive" else "")
                  + "</p>",
                  *([f'<p class="note">{_e(d["q_note"])}</p>'] if d.get("q_note") else [])]
    parts += [*_ages_html(sec),
              "<h3>Data quality</h3>", _kv_table(quality_rows(sec)),
              *_raw_html(sec.get("raw")), *xsvs_html(sec.get("xsvs"), sec["label"])]
    if sec["figures"]:
        parts += ["<h3>Figures</h3>", _figures(sec["figures"], sec["label"])]
    return "\n".join([*parts, "</section>"])


def _ages_html(sec: dict[str, Any]) -> list[str]:
    """The g2-by-age part of a file with two-time data (nothing without)."""
    from xpcsviewer.report.content import AGES_COLUMNS, ages_rows, ages_text

    text = ages_text(sec)
    if text is None:
        return []
    head = "".join(f"<th>{_e(c)}</th>" for c in AGES_COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>"
                   for r in ages_rows(sec))
    table = f'<table class="ages"><tr>{head}</tr>{body}</table>' if body else ""
    return ["<h3>g\u2082 by sample age</h3>", f"<p>{_e(text)}</p>", table]


def _radius(d: dict[str, Any]) -> str:
    from xpcsviewer.report.content import fmt_pm

    if d.get("radius_nm") is not None:
        return f"{fmt_pm(d['radius_nm'], d.get('radius_err_nm'))} nm ({d['solvent']['source']})"
    return d.get("radius_note", "not given")


_GUIDE = (
    "How to read this: <b>contrast</b> is the g2 amplitude at short delays (the speckle "
    "visibility); <b>\u03c4</b> the relaxation time per q-bin, quoted only where the fit "
    "may be quoted (a limit such as \u201c\u03c4 &gt; 2 s\u201d where the decay leaves the "
    "window); <b>diffusive</b> means \u03c4(q) follows q\u207b\u00b2 within its error with "
    "at least 3 converged bins (only then are D and the radius given); <b>damaged</b> "
    "means I(q) drifted beyond 10 % during the measurement; <b>ageing</b> (two-time "
    "files) is each bin's law of \u03c4 against the sample age (its slope with the 95 % "
    "interval) and verdict, from its g\u2082-by-age table. A bin that is not "
    "<code>converged</code> says why: <code>no_decay</code> (flat g2), "
    "<code>errors_understated</code> (scatter many times the stated errors: no usable "
    "information), <code>unresolved"
    "</code> (the decay is outside the delay window), <code>misfit</code> / <code>poor_fit"
    "</code> (structured residuals), <code>at_bound</code>, <code>failed</code>.")


def render_html(report: dict[str, Any]) -> str:
    """The page of ``report`` (:func:`xpcsviewer.report.build.collect_report`'s dict)."""
    secs = report["sections"]
    title = report.get("title") or "XPCS report"
    counts = status_counts(secs)
    nav = "".join(f'<li><a href="#file{k + 1}">{_e(s.get("label", s["path"]))}</a></li>'
                  for k, s in enumerate(secs))
    head = "".join(f"<th>{_e(c)}</th>" for c in summary_columns(secs))
    srows = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>"
                    for r in summary_rows(secs))
    sw = ", ".join(f"{k} {v}" for k, v in report["versions"].items())
    parts = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f"<title>{_e(title)}</title>", f"<style>{_CSS}</style>", "</head>", "<body>",
        f"<h1>{_e(title)}</h1>",
        f"<p>{len(secs)} file(s); made {_e(report['created'])} by {_e(sw)}; fits: "
        f"{_e(report['fit_text'])}.</p>",
        '<section id="summary"><h2>Summary</h2>', f"<p>{_GUIDE}</p>",
        f'<table class="summary"><tr>{head}</tr>{srows}</table>',
        *(["<p>Bins per status over all files: "
           + _e(", ".join(f"{k} {v}" for k, v in sorted(counts.items()))) + "</p>"]
          if counts else []),
        f"<nav><ul>{nav}</ul></nav></section>",
    ]
    if report.get("set_figures") or report.get("set_notes"):
        parts += ['<section id="set"><h2>The set of files</h2>']
        parts += [f'<p class="note">{_e(n)}</p>' for n in report.get("set_notes", [])]
        parts += [_figures(report.get("set_figures", []), "all files"), "</section>"]
    parts += [_file_section(s, k) for k, s in enumerate(secs)]
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)
