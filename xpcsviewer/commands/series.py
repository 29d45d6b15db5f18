"""``xpcsviewer series FILES -o series.csv [--x start_time|index|FIELD]``.

Fits every file with the ``fit`` command's entry point (same statuses and model choice)
and writes one CSV row per file and q-bin: the abscissa (seconds since the first file's
start, the index, or a metadata field), tau and contrast with their errors and the
fit status (:mod:`xpcsviewer.jobs.series`). Where the files are not one sample on one
q-partition (:mod:`xpcsviewer.views.series_groups`) a last column ``group`` says which
rows belong together, and a note says why. Written atomically.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

__all__ = ["run", "write_series_csv"]


def write_series_csv(path: str | Path, rows: list[list]) -> Path:
    """Rows (header first) to CSV atomically; None becomes an empty cell."""
    from xpcsviewer.io.outputs import atomic_path

    with atomic_path(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        for r in rows:
            w.writerow(["" if v is None else v for v in r])
    return Path(path)


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer series``; 0, or 3 when some file could not be fitted."""
    from xpcsviewer.io.outputs import check_distinct_inputs, check_output
    from xpcsviewer.jobs.series import SeriesTable, fit_series_files
    from xpcsviewer.progress import TextProgressBar

    out = Path(args.output)
    if out.suffix.lower() != ".csv":
        print(f"xpcsviewer series: error: the output must end in .csv (got {out.name})",
              file=sys.stderr)
        return 2
    check_output(out, args.files, bool(getattr(args, "overwrite", False)))
    check_distinct_inputs(args.files)  # as average: one file twice is one measurement
    quiet = bool(getattr(args, "quiet", False))
    with TextProgressBar("series", enabled=not quiet) as bar:
        fits = fit_series_files(args.files, x=args.x, model=args.model,
                                q_range=tuple(args.q_range) if args.q_range else None,
                                progress=bar)
    table = SeriesTable(args.x, fits)
    if args.x not in ("index", "start_time"):
        missing = [f.path for f in fits if f.error is None and not isinstance(f.x, float)]
        if missing:
            print(f"xpcsviewer series: note: {len(missing)} file(s) have no numeric {args.x} "
                  f"(e.g. {missing[0]}); their x is empty", file=sys.stderr)
    from xpcsviewer.views.series_groups import file_groups, not_joined_text, series_groups

    groups = series_groups(table)
    # issue 49: rows of unrelated files (other sample or partition) say their group
    write_series_csv(out, table.rows(file_groups(table, groups) if len(groups) > 1 else None))
    if len(groups) > 1:
        print(f"xpcsviewer series: note: {not_joined_text(table, groups)} (column "
              f"'group')", file=sys.stderr)
    bad = [f for f in fits if f.error is not None]
    for f in bad:
        print(f"xpcsviewer series: {f.error}", file=sys.stderr)
    if not quiet:
        n_rows = sum(len(f.bins) for f in fits)
        print(f"wrote {out}: {len(fits) - len(bad)} file(s), {n_rows} rows "
              f"(x = {args.x})", file=sys.stderr)
    return 3 if bad else 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``xpcsviewer series`` (called by :mod:`xpcsviewer.cli`)."""
    from xpcsviewer.commands._args import model_choices, pair

    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-o", "--output", required=True, metavar="series.csv")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output")
    p.add_argument("--x", default="start_time", metavar="start_time|index|FIELD",
                   help="the abscissa: the file's start time (default; seconds since the "
                        "first file), its index, or a metadata field (an HDF5 path such as "
                        "/entry/sample/temperature, or a sample key)")
    p.add_argument("--model", choices=model_choices(),
                   default="auto",
                   help="fit model, as `fit --model` (default auto: one chosen per q-bin by AICc)")
    p.add_argument("--q-range", **pair(float),
                   help="only the q-bins with A <= q <= B, in 1/\u00c5 (default: all)")
