"""``xpcsviewer audit FILE... -o pixels.csv [--top N] [--raw RAW]``: which pixels make g2 wrong.

Reads each file's per-pixel G2/IP/IF stack (``correlate --save-g2-pixel``) one delay
at a time and ranks its pixels by their leverage on their bin's g2 (the exact change
when the pixel alone is dropped) with hot-pixel scores against their q-bin and, for
3 or more files of one detector, against the other files (repeats of a run). Writes
the ranked table as CSV (atomically; never over an input) and prints the flagged
pixels. Where a file's raw source is reachable (its config's ``raw``, or ``--raw RAW`` for
one file), the raw data's fault finder (``xpcsviewer inspect``) adds its hot, dead and
at-the-cap pixels as rows with their kind (``raw hot_pixel: ...``). The same code as the
G2 pixel tab (:mod:`xpcsviewer.jobs.pixel_audit`).
Exit codes: 0 written; 2 a refused output; 3 unreadable inputs or no stack.
"""

from __future__ import annotations

import argparse
import sys

PROG = "xpcsviewer audit"


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer audit``; returns the exit code."""
    from xpcsviewer.io.outputs import check_output
    from xpcsviewer.jobs.pixel_audit import audit_files, write_audit_csv
    from xpcsviewer.progress import TextProgressBar

    overwrite = bool(getattr(args, "overwrite", False))
    if not str(args.output).lower().endswith(".csv"):
        print(f"{PROG}: error: output must end in .csv (got {args.output})", file=sys.stderr)
        return 2
    check_output(args.output, list(args.files), overwrite)  # refuse before any work
    quiet = bool(getattr(args, "quiet", False))
    opts = {"hot_z": args.hot_z, "leverage_flag": args.leverage}
    raw_arg = getattr(args, "raw", None)
    if raw_arg is not None and len(args.files) != 1:
        print(f"{PROG}: error: --raw RAW is the raw source of one FILE (got "
              f"{len(args.files)} files; without --raw each file's own is used)",
              file=sys.stderr)
        return 2
    with TextProgressBar("audit", enabled=not quiet) as bar:
        audits = audit_files(list(args.files), progress=bar, **opts)
    raws = []
    if not getattr(args, "no_raw", False):
        from xpcsviewer.jobs.raw_findings import inspect_for_result

        for f in args.files:
            with TextProgressBar("inspect", enabled=not quiet) as bar:
                ins, what = inspect_for_result(f, raw_arg, progress=bar)
            raws.append(ins)
            if not quiet:
                print(f"{f}: raw data " + (f"inspected: {what}: " + ", ".join(
                    f"{k} {n}" for k, n in _pixel_counts(ins).items()) if ins is not None
                    else f"not inspected: {what}"), file=sys.stderr)
    out = write_audit_csv(args.output, audits, top=args.top, raw=raws or None)
    if not quiet:
        for a in audits:
            n = int(a.flagged.sum())
            print(f"{a.label}: {a.pixel_index.size} pixels, {n} flagged "
                  f"(leverage > {a.leverage_flag:g} error bars or z > {a.hot_z:g})",
                  file=sys.stderr)
        print(f"wrote {out}", file=sys.stderr)
    return 0


def _pixel_counts(ins) -> dict[str, int]:
    from xpcsviewer.jobs.raw_findings import pixel_findings

    counts = {"hot_pixel": 0, "dead_pixel": 0, "at_cap": 0}
    for _r, _c, kind, _d in pixel_findings(ins):
        counts[kind] += 1
    return counts


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``xpcsviewer audit`` (called by :mod:`xpcsviewer.cli`)."""
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="result files with a per-pixel G2 stack (3 or more of one run are "
                        "also compared with each other)")
    p.add_argument("-o", "--output", required=True, metavar="PIXELS.csv",
                   help="the ranked table: file, bin, row, col, q, leverage, z, reason")
    p.add_argument("--top", type=int, default=100, metavar="N",
                   help="rows per file, by leverage (default 100; 0: none, flagged "
                        "pixels are still printed)")
    p.add_argument("--hot-z", type=float, default=6.0, metavar="Z",
                   help="robust z-score above which a pixel is hot (default 6)")
    p.add_argument("--leverage", type=float, default=1.0, metavar="L",
                   help="flag pixels that move their bin's g2 by more than L error bars "
                        "(default 1)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing PIXELS.csv")
    p.add_argument("--raw", default=None, metavar="RAW",
                   help="the raw source of the (one) FILE, when the one it records is not "
                        "reachable: its fault finder's hot, dead and at-cap pixels are added")
    p.add_argument("--no-raw", action="store_true",
                   help="do not inspect the raw sources (a pass over the raw data)")
