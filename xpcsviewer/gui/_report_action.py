"""File > Report of the Targets: the report of the selected files (``xpcsviewer report``)
written in a worker with progress and cancel; the window only asks where."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["report_job", "report_job_in_process", "report_targets"]


def report_job(paths: list[str], target: str, progress: Any = None, cancel: Any = None) -> str:
    """Worker job: the report of ``paths`` as HTML or PDF (by the suffix); one status line."""
    from xpcsviewer.report import write_report

    pdf = Path(target).suffix.lower() == ".pdf"
    # the save dialog already asked before replacing a file
    out = write_report(paths, None if pdf else target, target if pdf else None,
                       overwrite=True, progress=progress, cancel=cancel)
    what = f"{out.pdf_pages} pages" if pdf else f"{out.html_bytes / 1e6:.2f} MB"
    bad = f"; {len(out.errors)} file(s) not read" if out.errors else ""
    return f"Wrote {Path(target).name} ({what}, {len(paths)} files, {out.seconds:.1f} s){bad}"


def report_job_in_process(paths: list[str], target: str, progress: Any = None,
                          cancel: Any = None) -> str:
    """:func:`report_job` in a spawned worker process (its drawing holds the GIL for
    seconds; docs/gui-stalls.md); ``XPCS_DRAW_IN_PROCESS=0``: in the calling thread."""
    from xpcsviewer.gui.figure_job import in_process

    return in_process(report_job, paths, target, progress=progress, cancel=cancel)


def report_targets(window: Any, target: str | None = None) -> int | None:
    """Ask where (unless ``target``), then submit :func:`report_job`; the request id."""
    paths = list(window.browser.target_paths())
    if not paths:
        window.context.report_error("Report: select the files to report in the browser first")
        return None
    if target is None:
        from PySide6.QtWidgets import QFileDialog

        base = window.context.export_folder.propose("report.html")
        target, _ = QFileDialog.getSaveFileName(window, "Report of the targets", base,
                                                "HTML (*.html);;PDF (*.pdf)")
        if not target:
            return None
        window.context.export_folder.remember(target)
    if Path(target).suffix.lower() not in (".html", ".htm", ".pdf"):
        target = str(Path(target).with_suffix(".html"))
    return window.context.runner.submit(
        "window:report", report_job_in_process, paths, str(target),
        on_result=window.context.show_status,
        description=f"Report of {len(paths)} file(s)")
