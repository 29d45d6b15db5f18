"""Collect the report of a set of files (in worker processes) and write it as HTML and PDF.

The per-file work (read, fit, judge, draw: :func:`xpcsviewer.report.sections.file_part`)
is independent per file and falls in two halves (the fits with their figures; the
other figures), so a process pool (spawned: JAX and matplotlib are not fork-safe)
spreads even one file over two cores; ``workers=1`` runs everything in this process.
The set's figures (I(q) of all files, the series) are drawn here afterwards.
"""

from __future__ import annotations

import base64
import datetime as _dt
import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from xpcsviewer.progress import CancelToken, ProgressCallback
from xpcsviewer.progress import report as tell

__all__ = ["MAX_HTML_BYTES", "ReportOutcome", "collect_report", "write_report"]

#: The HTML stays below this: figures are shrunk until it does.
MAX_HTML_BYTES = 9_500_000
FIT_TEXT = ("least squares, every model with one chosen per bin by AICc (as "
            "`xpcsviewer fit`); \u03c4 quoted only where the fit status allows")


class ReportOutcome:
    """What :func:`write_report` wrote: paths, sizes, pages and the files not read."""

    def __init__(self) -> None:
        self.html: Path | None = None
        self.pdf: Path | None = None
        self.html_bytes = 0
        self.pdf_pages = 0
        self.errors: list[str] = []
        self.seconds = 0.0

    @property
    def exit_code(self) -> int:
        return 3 if self.errors else 0


def _dpi_for(n_files: int) -> float:
    # about 0.2 MB of figures per file at 100 dpi: keep a large set near the size cap
    return 100.0 if n_files <= 20 else 70.0


def _default_workers(n_files: int) -> int:
    return max(1, min(2 * n_files, os.cpu_count() or 1, 8))


def _part_task(path: str, part: str, dpi: float, saxs1d: bool,
               qmap_as: str | None) -> dict[str, Any]:
    import warnings

    warnings.filterwarnings("ignore")  # a worker's warnings would interleave with the bar
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    from xpcsviewer.report.sections import file_part

    return file_part(path, part, dpi, saxs1d=saxs1d, qmap_as=qmap_as)


PARTS = ("fits", "images")


def _shared_qmaps(files: list[str]) -> list[str | None]:
    """Per file: the name of an earlier file with the same q-map (by its hash), whose
    q-map figure stands for both; None: draw it (a new q-map, or no hash)."""
    first: dict[str, str] = {}
    return [_qmap_as(p, first) for p in files]


def _qmap_as(path: str, first: dict[str, str]) -> str | None:
    """:func:`_shared_qmaps` of one file, ``first`` the q-maps met so far (updated)."""
    from xpcsviewer.io import read_result

    try:
        h = read_result(path).qmap.hash
    except Exception:  # unreadable: its own section says why
        h = ""
    out = first.get(h) if h else None
    if h:
        first.setdefault(h, Path(path).name)
    return out


def _longest_first(files: list[str]) -> list[int]:
    """Indices of ``files``, largest file first (a two-time file is the largest and the
    longest work); stable for equal sizes, unreadable ones last."""
    def size(i: int) -> int:
        try:
            return os.stat(files[i]).st_size
        except OSError:
            return -1

    return sorted(range(len(files)), key=lambda i: -size(i))


def _sections(files: list[str], dpi: float, workers: int, progress: ProgressCallback | None,
              cancel: CancelToken | None) -> list[dict[str, Any]]:
    """Each file in two independent parts (fits and their figures; the other figures):
    a process pool of ``workers`` spreads even one file over two cores."""
    from xpcsviewer.report.sections import file_part, merge_parts

    n = len(files)
    saxs1d = n == 1  # a set draws I(q) of all files in one figure
    if workers <= 1:
        qmap_as = _shared_qmaps(files)
        out = []
        for i, p in enumerate(files):
            tell(progress, cancel, i, n + 1, f"{Path(p).name}: read, fit, draw")
            out.append(merge_parts(p, file_part(p, "fits", dpi),
                                   file_part(p, "images", dpi, saxs1d=saxs1d,
                                             qmap_as=qmap_as[i])))
        return out
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    parts: dict[tuple[int, str], dict[str, Any]] = {}
    tell(progress, cancel, 0, n + 1, f"{n} files in {workers} processes")
    order = _longest_first(files)
    with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
        # file by file, so that files complete (and the bar moves) as the run goes, the
        # largest first (issue 49: a two-time file, 3-5 times a multi-tau file's work,
        # started last left one worker idle at the end); the q-map hashes (in report
        # order: the first file of a q-map draws it) are read while the workers start on
        # the first files (all hashes before the pool kept the workers idle for seconds)
        futs = {}
        head = order[:workers]
        for i in head:
            futs[pool.submit(_part_task, files[i], "fits", dpi, saxs1d, None)] = (i, "fits")
        qmap_as = _shared_qmaps(files)
        for i in order:
            if i not in head:
                futs[pool.submit(_part_task, files[i], "fits", dpi, saxs1d, None)] = (i, "fits")
            futs[pool.submit(_part_task, files[i], "images", dpi, saxs1d,
                             qmap_as[i])] = (i, "images")
        pending = set(futs)
        try:
            while pending:
                finished, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for f in finished:
                    i, part = futs[f]
                    try:
                        parts[i, part] = f.result()
                    except Exception:  # a worker died (killed; a caller without a
                        pass  # __main__ guard): done below, in this process
                done = sum(all((i, q) in parts for q in PARTS) for i in range(n))
                tell(progress, cancel, done, n + 1, f"{done}/{n} files")
        except BaseException:
            for f in pending:
                f.cancel()
            raise
    for i, p in enumerate(files):
        for part in PARTS:
            if (i, part) not in parts:
                tell(progress, cancel, i, n + 1, f"{Path(p).name}: {part} (in this process)")
                parts[i, part] = file_part(p, part, dpi, saxs1d=saxs1d, qmap_as=qmap_as[i])
    return [merge_parts(p, parts[i, "fits"], parts[i, "images"]) for i, p in enumerate(files)]


def _combined_saxs1d(sections: list[dict[str, Any]], dpi: float) -> list[dict[str, Any]]:
    """I(q) of every file read, in one figure (export's ``saxs1d`` of several files)."""
    from xpcsviewer.io import read_result
    from xpcsviewer.report.sections import figure_pngs

    caption = "I(q) of every file"
    try:
        results = [read_result(s["path"]) for s in sections
                   if "error" not in s and s.get("kind") != "raw"]
        if not results:
            return []
        pngs = figure_pngs("saxs1d", results, dpi)
    except Exception as exc:  # the data cannot give the plot: say so
        return [{"kind": "saxs1d", "caption": caption, "pngs": [], "note": f"not drawn: {exc}"}]
    return [{"kind": "saxs1d", "caption": caption, "pngs": pngs, "note": ""}]


def _series(sections: list[dict[str, Any]], dpi: float) -> tuple[list[dict], list[str]]:
    """The set's figures: I(q) of every file, and the Series figure of the fitted ones
    (export's), with a note where one cannot be drawn."""
    from xpcsviewer.jobs.series import FileFit, SeriesTable, parse_time
    from xpcsviewer.report.sections import png_bytes

    if len(sections) < 2:
        return [], []
    head = _combined_saxs1d(sections, dpi)
    ok = [s for s in sections if s.get("series_bins")]
    if len(ok) < 2:
        return head, ["no series: fewer than two files with fitted g2"]
    starts = [s["provenance"]["start_time"] for s in ok]
    times = [parse_time(t) for t in starts]
    # start times that are all known and all different, else the file index
    x = "start_time" if None not in times and len(set(times)) == len(times) else "index"
    table = SeriesTable(x, [FileFit(s["path"], None, t, s["series_bins"],
                                    [b["chi2_red"] for b in s["bins"]],
                                    sample=dict(s.get("sample", {})))
                            for s, t in zip(ok, starts, strict=True)])
    caption = ("series: \u03c4 and contrast per q-bin against "
               + ("the start time" if x == "start_time" else "the file index"))
    from xpcsviewer.views.series_groups import not_joined_text

    joined = not_joined_text(table)  # issue 49: a line joins one sample on one partition
    if joined:
        caption += "; " + joined
    try:
        from xpcsviewer.export.series import series_figure

        fig = series_figure(table)
        try:
            pngs = [png_bytes(fig, dpi, laid_out=False)]  # not from make_figures
        finally:
            fig.clear()
    except Exception as exc:  # e.g. no fitted bin in any file
        return [*head, {"kind": "series", "caption": caption, "pngs": [],
                        "note": f"not drawn: {exc}"}], []
    return [*head, {"kind": "series", "caption": caption, "pngs": pngs, "note": ""}], []


def collect_report(files: Sequence[str | Path], *, title: str | None = None,
                   workers: int | None = None, progress: ProgressCallback | None = None,
                   cancel: CancelToken | None = None) -> dict[str, Any]:
    """The report's content: versions, one section per file (in order), the set's figures."""
    from xpcsviewer.report.content import software_versions

    paths = [str(p) for p in files]
    dpi = _dpi_for(len(paths))
    nw = _default_workers(len(paths)) if workers is None else max(1, int(workers))
    sections = _sections(paths, dpi, nw, progress, cancel)
    set_figs, set_notes = _series(sections, dpi)
    tell(progress, cancel, len(paths) + 1, len(paths) + 1, "writing")
    return {"title": title or "XPCS report", "created": _dt.datetime.now(_dt.UTC).strftime(
        "%Y-%m-%d %H:%M UTC"), "versions": software_versions(), "fit_text": FIT_TEXT,
        "sections": sections, "set_figures": set_figs, "set_notes": set_notes, "dpi": dpi}


def _shrink(report: dict[str, Any], factor: float) -> None:
    """Scale every figure by ``factor`` (the HTML was too large)."""
    from PIL import Image

    def scale(png: bytes) -> bytes:
        im = Image.open(io.BytesIO(png))
        w, h = im.size
        im = im.convert("RGB").resize((max(1, int(w * factor)), max(1, int(h * factor))),
                                      Image.Resampling.LANCZOS)
        out = io.BytesIO()
        im.quantize(256, method=Image.Quantize.FASTOCTREE).save(out, "PNG", optimize=True)
        return out.getvalue()

    from xpcsviewer.report.xsvs_section import xsvs_figures

    figs = [f for s in report["sections"] for f in s.get("figures", []) + xsvs_figures(s)]
    for f in figs + report.get("set_figures", []):
        f["pngs"] = [scale(p) for p in f["pngs"]]


def html_within_limit(report: dict[str, Any]) -> str:
    """The HTML, its figures shrunk until the page is under :data:`MAX_HTML_BYTES`."""
    from xpcsviewer.report.html import render_html

    text = render_html(report)
    for _ in range(10):
        size = len(text.encode("utf-8"))
        if size <= MAX_HTML_BYTES:
            break
        from xpcsviewer.report.xsvs_section import xsvs_figures

        figs = sum(len(base64.b64encode(p)) for s in report["sections"]
                   for f in s.get("figures", []) + xsvs_figures(s) for p in f["pngs"])
        room = MAX_HTML_BYTES - (size - figs)
        # PNG bytes fall slower than the area: scale the sides by the byte ratio
        _shrink(report, max(0.3, min(0.85, max(room, 1) / max(figs, 1))))
        text = render_html(report)
    return text


def write_report(files: Sequence[str | Path], html: str | Path | None,
                 pdf: str | Path | None = None, *, overwrite: bool = False,
                 title: str | None = None, workers: int | None = None,
                 progress: ProgressCallback | None = None,
                 cancel: CancelToken | None = None) -> ReportOutcome:
    """Write the report of ``files`` to ``html`` and/or ``pdf`` (atomically).

    Raises
    ------
    OutputRefusedError
        An output is an input, or exists without ``overwrite`` (checked before any work).
    """
    import time

    from xpcsviewer.io.outputs import atomic_path, check_output, linked_files
    from xpcsviewer.report.pdf import write_pdf

    t0 = time.perf_counter()
    inputs = [str(p) for p in files] + [str(p) for p in linked_files(files)]
    for target in (html, pdf):
        if target is not None:
            check_output(target, inputs, overwrite)
    rep = collect_report(files, title=title, workers=workers, progress=progress, cancel=cancel)
    out = ReportOutcome()
    out.errors = [s["error"] for s in rep["sections"] if "error" in s]
    if html is not None:
        text = html_within_limit(rep)
        with atomic_path(html) as tmp:
            tmp.write_text(text, encoding="utf-8")
        out.html, out.html_bytes = Path(html), len(text.encode("utf-8"))
    if pdf is not None:
        with atomic_path(pdf) as tmp:
            out.pdf_pages = write_pdf(rep, tmp)
        out.pdf = Path(pdf)
    out.seconds = time.perf_counter() - t0
    return out
