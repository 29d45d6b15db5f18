"""``xpcsviewer report FILES... -o report.html [--pdf report.pdf]``: the report a user takes home.

One self-contained HTML page (and the same as PDF) with, per file, the provenance
(checksum, software, q-map, mask), the figures ``export`` draws, every q-bin's fit with
its status and reason, the D(q) and stability verdicts and the data quality; for a run
of files the series; a summary on top (:mod:`xpcsviewer.report`). Files that cannot be
read are reported in it and on stderr (exit 3); the rest are reported.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["run"]

PROG = "xpcsviewer report"


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer report``; returns the exit code."""
    from xpcsviewer.commands._inputs import skip_side_files
    from xpcsviewer.io.outputs import display_path
    from xpcsviewer.progress import TextProgressBar
    from xpcsviewer.report import write_report

    quiet = bool(getattr(args, "quiet", False))
    if args.output is None and args.pdf is None:
        print(f"{PROG}: error: give -o REPORT.html and/or --pdf REPORT.pdf", file=sys.stderr)
        return 2
    if args.output is not None and Path(args.output).suffix.lower() not in (".html", ".htm"):
        print(f"{PROG}: error: -o must end in .html (got {args.output})", file=sys.stderr)
        return 2
    if args.pdf is not None and Path(args.pdf).suffix.lower() != ".pdf":
        print(f"{PROG}: error: --pdf must end in .pdf (got {args.pdf})", file=sys.stderr)
        return 2
    if args.workers is not None and args.workers < 1:
        print(f"{PROG}: error: --workers must be at least 1", file=sys.stderr)
        return 2
    files = skip_side_files(args.files, PROG)
    if not files:
        return 3
    with TextProgressBar("report", enabled=not quiet) as bar:
        out = write_report(files, args.output, args.pdf, overwrite=bool(args.overwrite),
                           title=args.title, workers=args.workers, progress=bar)
    for line in out.errors:
        print(f"{PROG}: {line}", file=sys.stderr)
    if not quiet:
        what = []
        if out.html is not None:
            what.append(f"{display_path(out.html)} ({out.html_bytes / 1e6:.2f} MB)")
        if out.pdf is not None:
            what.append(f"{display_path(out.pdf)} ({out.pdf_pages} pages)")
        print(f"wrote {' and '.join(what)}: {len(files)} file(s) in {out.seconds:.1f} s")
    return out.exit_code


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``xpcsviewer report`` (called by :mod:`xpcsviewer.cli`)."""
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-o", "--output", default=None, metavar="REPORT.html")
    p.add_argument("--pdf", default=None, metavar="REPORT.pdf", help="the same report as PDF")
    p.add_argument("--title", default=None, help="the report's title (default: XPCS report)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="processes for the per-file work (default: one per CPU core, up to 8)")
    p.add_argument("--overwrite", action="store_true", help="replace existing report files")
