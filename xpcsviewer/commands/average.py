"""``xpcsviewer average``: average repeat measurements into one new result file.

Exit codes: 0 written; 2 bad options (baseline q index out of range), a refused
output (an input, or an existing file without ``--overwrite``) or a file given
twice; 3 unreadable inputs (one line each) or files that cannot be averaged
together (different q-maps, delays or frame times; each file named); 1 every
file rejected, or anything else.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from xpcsviewer.jobs.average import (
    AverageOptions,
    IncompatibleFilesError,
    NoFilesAcceptedError,
    UnreadableFilesError,
    average_files,
)
from xpcsviewer.progress import TextProgressBar

PROG = "xpcsviewer average"


def options_from_args(args: argparse.Namespace) -> AverageOptions:
    """The :class:`AverageOptions` of the parsed command line."""
    rng = getattr(args, "baseline_range", None)
    mad = getattr(args, "mad_threshold", None)
    if getattr(args, "no_reject", False):
        rng = mad = None
    return AverageOptions(
        error_method=getattr(args, "error_method", "weighted"),
        baseline_q_index=int(getattr(args, "baseline_q_index", 0)),
        baseline_window=int(getattr(args, "baseline_window", 10)),
        baseline_range=None if rng is None else (float(rng[0]), float(rng[1])),
        mad_threshold=mad,
        overwrite=bool(getattr(args, "overwrite", False)),
    )


def screening_text(opts: AverageOptions) -> str:
    """One line saying which files will be rejected, so a reader of the log knows the rule."""
    rules = []
    if opts.baseline_range is not None:
        lo, hi = opts.baseline_range
        rules.append(
            f"baseline of q-bin {opts.baseline_q_index} (last {opts.baseline_window} delays) "
            f"outside [{lo:g}, {hi:g}]"
        )
    if opts.mad_threshold is not None:
        rules.append(f"g2 curve or mean intensity more than {opts.mad_threshold:g} MADs off")
    if not rules:
        return ("screening: off (--no-reject): every readable file with a valid g2 point "
                "is averaged")
    return "screening: reject a file whose " + "; or whose ".join(rules) + " (--no-reject: off)"


def read_for_screening(item: dict[str, Any]) -> Any:
    """A batch task: the file read on a worker, or why it cannot be (a tuple).

    Errors come back as values so the screening pass reports them exactly as
    when it reads the file itself.
    """
    from xpcsviewer.io import read_result
    from xpcsviewer.io.errors import XpcsFileError

    try:
        res = read_result(item["path"])
    except XpcsFileError as exc:
        return ("xpcs", exc.problem, exc.dataset, exc.expected)
    except OSError as exc:
        return ("os", str(exc))
    res.path = Path(item["shown"])
    return res


@contextlib.contextmanager
def _screen_reader(files: list[str], where: Any) -> Iterator[Any]:
    """A ``reader(path)`` fed by the files read on Dask, in order; None in-process."""
    if not where.distributed:
        yield None
        return
    from xpcsviewer.batch import Prefetcher, file_items
    from xpcsviewer.io.errors import XpcsFileError

    with Prefetcher(read_for_screening, file_items(files), where) as pre:

        def reader(path: Any) -> Any:
            out = pre.next()
            if not out.ok:  # a worker lost: say so for this file
                raise XpcsFileError(path, out.error.split(": ", 1)[-1])
            v = out.value
            if isinstance(v, tuple):
                if v[0] == "os":
                    raise OSError(v[1])
                raise XpcsFileError(path, v[1], v[2], v[3])
            return v

        yield reader


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer average``; returns the exit code.

    With ``--workers``/``--scheduler`` the screening pass reads the files on Dask
    (the reads are most of its time); the averaging pass runs here.
    """
    from xpcsviewer.batch import where_from_args

    try:
        where = where_from_args(args)
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    opts = options_from_args(args)
    if opts.baseline_window < 1:
        print(f"{PROG}: --baseline-window must be at least 1", file=sys.stderr)
        return 2
    if opts.mad_threshold is not None and not opts.mad_threshold > 0:
        print(f"{PROG}: --mad-threshold must be positive", file=sys.stderr)
        return 2
    if (
        opts.baseline_range is not None
        and opts.baseline_range[0] > opts.baseline_range[1]
    ):
        print(f"{PROG}: --baseline-range MIN must not exceed MAX", file=sys.stderr)
        return 2
    from xpcsviewer.commands._inputs import skip_side_files

    args.files = skip_side_files(args.files, PROG)
    if not args.files:
        return 3
    quiet = bool(getattr(args, "quiet", False))
    bar = TextProgressBar("average", enabled=not quiet)
    try:
        with bar, _screen_reader(list(args.files), where) as reader:
            summary = average_files(args.files, args.output, opts, progress=bar,
                                    screen_reader=reader)
    except UnreadableFilesError as exc:
        for err in exc.errors:
            print(f"{PROG}: {err.one_line()}", file=sys.stderr)
        return 3
    except IncompatibleFilesError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 3
    except NoFilesAcceptedError as exc:
        print(f"{PROG}: nothing written, every file was rejected", file=sys.stderr)
        print(screening_text(opts), file=sys.stderr)
        print(exc.summary.text(), file=sys.stderr)
        return 1
    except FileExistsError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    print(screening_text(opts))
    print(summary.text())
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``xpcsviewer average`` (called by :mod:`xpcsviewer.cli`)."""
    from xpcsviewer.commands._args import add_batch

    add_batch(p, skip_existing=False)
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-o", "--output", required=True, metavar="OUT.hdf")
    p.add_argument("--error-method", choices=("weighted", "sem"), default="weighted",
                   help="inverse-variance weighted mean, or standard error across files")
    p.add_argument("--baseline-q-index", type=int, default=0, metavar="N",
                   help="0-based q-bin whose g2 baseline is checked (default 0)")
    p.add_argument("--baseline-window", type=int, default=10, metavar="W",
                   help="number of last delays in the baseline (default 10)")
    p.add_argument("--baseline-range", nargs=2, type=float, metavar=("MIN", "MAX"),
                   default=(0.95, 1.05),
                   help="reject files whose baseline is outside [MIN, MAX] (default 0.95 1.05)")
    p.add_argument("--mad-threshold", type=float, metavar="K", default=5.0,
                   help="reject files more than K MADs off in g2 curve or mean intensity "
                        "(default 5; needs at least 3 files)")
    p.add_argument("--no-reject", action="store_true",
                   help="average every file: no baseline or MAD screening")
    p.add_argument("--overwrite", action="store_true", help="replace an existing OUT.hdf")
