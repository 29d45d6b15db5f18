"""``xpcsviewer ages FILE ... [--ages 1,3,5 --widths 1 | --windows N [--log]] -o ages.csv
[--json ages.json]``: g2 by sample age from two-time data (docs/ages.md).

Reads each file's age x lag map, or its full two-time maps, cuts the age windows both
ways (constant age, constant t1), fits every cut as ``fit`` does, fits the ageing law
per bin and writes one CSV row per (file, bin, window, way) and, with ``--json``, the
full record (curves, chi4, both laws). Outputs are written atomically.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["ages_options", "parse_floats", "run"]


def parse_floats(text: str, what: str) -> list[float]:
    """"1,3,5" -> [1.0, 3.0, 5.0]; ValueError naming the option otherwise."""
    try:
        vals = [float(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"{what} takes numbers separated by commas (got {text!r})") from None
    if not vals or not all(v == v and abs(v) != float("inf") for v in vals):
        raise ValueError(f"{what} takes finite numbers separated by commas (got {text!r})")
    return vals


def ages_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keywords of :func:`xpcsviewer.jobs.ages.analyse_ages` from the options
    shared by ``ages`` and ``fit --ages`` (ValueError for a usage error)."""
    ages = getattr(args, "ages", None)
    if ages is True:  # ``fit --ages`` without a list: the default windows
        ages = None
    widths = getattr(args, "widths", None)
    n = getattr(args, "windows", None)
    if ages is not None and n is not None:
        raise ValueError("give --ages (with --widths) or --windows, not both")
    if widths is not None and ages is None:
        raise ValueError("--widths goes with --ages")
    kw: dict[str, Any] = {"log": bool(getattr(args, "log", False)),
                          "law": getattr(args, "law", None) or "linear"}
    if ages is not None:
        kw["ages"] = parse_floats(ages, "--ages")
        if widths is not None:
            w = parse_floats(widths, "--widths")
            if len(w) not in (1, len(kw["ages"])):
                raise ValueError(f"--widths takes one width or one per age "
                                 f"({len(kw['ages'])}), got {len(w)}")
            if min(w) <= 0:
                raise ValueError("--widths must be > 0")
            kw["widths"] = w[0] if len(w) == 1 else w
    elif n is not None:
        if n < 1:
            raise ValueError("--windows must be >= 1")
        kw["n_windows"] = int(n)
    bins = getattr(args, "bins", None)
    if bins:
        b = parse_floats(bins, "--bins")
        if any(x != int(x) or x < 1 for x in b):
            raise ValueError(f"--bins takes 1-based bin numbers (got {bins!r})")
        kw["bins"] = [int(x) for x in b]
    return kw


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer ages``: 0, 2 for usage errors, 3 when a file could not
    be analysed (the others are still written)."""
    from xpcsviewer.commands.series import write_series_csv
    from xpcsviewer.fitting.spec import FitSpec
    from xpcsviewer.io.errors import XpcsFileError, display_path
    from xpcsviewer.io.outputs import atomic_path, check_distinct_inputs, check_output
    from xpcsviewer.jobs.ages import ages_file, csv_rows, json_record
    from xpcsviewer.progress import TextProgressBar

    out = Path(args.output)
    js = Path(args.json) if args.json else None
    if out.suffix.lower() != ".csv":
        print(f"xpcsviewer ages: error: the output must end in .csv (got {out.name})",
              file=sys.stderr)
        return 2
    if js is not None and js.suffix.lower() != ".json":
        print(f"xpcsviewer ages: error: --json must end in .json (got {js.name})",
              file=sys.stderr)
        return 2
    try:
        kw = ages_options(args)
    except ValueError as exc:
        print(f"xpcsviewer ages: error: {exc}", file=sys.stderr)
        return 2
    overwrite = bool(getattr(args, "overwrite", False))
    check_output(out, args.files, overwrite)
    if js is not None:
        check_output(js, args.files, overwrite)
    check_distinct_inputs(args.files)
    for o in (out, js):  # before the analysis, not after it (issue 50)
        if o is not None:
            _check_writable(o)
    fit = FitSpec(model=args.model or "auto",
                  t_range=tuple(args.t_range) if args.t_range else None)
    quiet = bool(getattr(args, "quiet", False))
    rows: list[list] = []
    records: list[dict[str, Any]] = []
    bad: list[str] = []
    with TextProgressBar("ages", enabled=not quiet) as bar:
        n = len(args.files)
        for k, path in enumerate(args.files):
            def prog(d: int, t: int, m: str = "", k: int = k, path: str = path) -> None:
                bar(k * 1000 + int(1000 * d / max(t, 1)), n * 1000,
                    f"{Path(path).name}: {m}")
            try:
                res = ages_file(path, fit=fit, progress=prog, **kw)
            except (OSError, ValueError, KeyError) as exc:
                msg = exc.one_line() if isinstance(exc, XpcsFileError) else str(exc)
                if display_path(path) not in msg and str(path) not in msg:
                    msg = f"{display_path(path)}: {msg}"
                bad.append(msg)
                continue
            res.path = display_path(path)
            rows.extend(csv_rows(res, header=not rows))
            rec = json_record(res)
            rec["path"] = res.path
            records.append(rec)
    if rows:
        write_series_csv(out, rows)
        if js is not None:
            import json

            with atomic_path(js) as tmp:
                tmp.write_text(json.dumps({"files": records}, allow_nan=False) + "\n",
                               encoding="utf-8")
    for msg in bad:
        print(f"xpcsviewer ages: {msg}", file=sys.stderr)
    if not quiet and records:
        verdicts = [f"{r['path']}: " + ", ".join(f"bin {b} {v}" for b, v in
                                                 zip(r["bins"], r["verdict"], strict=True))
                    for r in records]
        print("\n".join(verdicts), file=sys.stderr)
        print(f"wrote {out}" + (f" and {js}" if js else "") + f": {len(records)} file(s), "
              f"{len(rows) - 1} rows", file=sys.stderr)
    return 3 if bad else 0


def _check_writable(path: Path) -> None:
    """Refuse now an output whose folder cannot be written (read-only, no permission,
    a file in the way), with the message the write would give, by creating and removing
    a temporary file in the nearest existing folder; nothing is left behind.

    Raises
    ------
    OutputWriteError
    """
    import errno
    import os
    import tempfile

    from xpcsviewer.io.outputs import OutputWriteError, display_path

    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # atomic_path makes the missing folders
    if not folder.is_dir():
        raise OutputWriteError(errno.ENOTDIR, f"{display_path(path)}: "
                               f"{display_path(folder)} is not a folder; nothing written")
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name[:60]}.", suffix=".probe.tmp",
                                    dir=folder)
    except OSError as exc:
        code = exc.errno or errno.EACCES
        raise OutputWriteError(code, f"{display_path(path)}: cannot write: "
                               f"{os.strerror(code)}; nothing written") from None
    os.close(fd)
    os.unlink(name)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``xpcsviewer ages`` (called by :mod:`xpcsviewer.cli`)."""
    from xpcsviewer.commands._args import add_ages, model_choices

    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-o", "--output", required=True, metavar="ages.csv")
    p.add_argument("--json", default=None, metavar="ages.json",
                   help="also the full record: curves, chi4, both laws")
    p.add_argument("--overwrite", action="store_true", help="replace existing outputs")
    add_ages(p, model_choices())
