"""Command line: ``xpcsviewer [PATH ...]`` and the subcommands of ARCHITECTURE.md §8.

This module only assembles the parser and runs a command: each subcommand lives in
``xpcsviewer/commands/<name>.py`` with its arguments (``add_arguments(parser)``, the
stable contract) and its handler (``run(args) -> int``); the module is imported only
when that subcommand is parsed, so ``--help``, ``info`` and ``device`` never load Qt
(shared parser pieces: :mod:`xpcsviewer.commands._args`). A subcommand whose module
does not exist yet exits 2 with "not available yet".

Exit codes: 0 success, 2 usage error (refused outputs included), 3 bad input
data (one line naming the file and dataset, no traceback), 130 interrupted
(Ctrl-C; 143 for SIGTERM), 1 anything else.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import signal
import sys
import warnings
from collections.abc import Sequence

from xpcsviewer import __version__
from xpcsviewer.commands import _args

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "build_parser",
    "main",
]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_BAD_INPUT = 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it

#: The subcommands in ``--help``'s order, each with its one-line help (also its
#: description). Their arguments are ``add_arguments`` of their modules; the help stays
#: here so that ``xpcsviewer --help`` imports none of them.
COMMANDS = {
    "gui": "open the GUI on a folder or files (the default command)",
    "demo": "write the built-in demo data set (reusing complete files), then open the GUI "
            "on it",
    "info": "summary of result files and raw sources (dense or photon-sparse)",
    "correlate": "multi-tau and/or two-time correlation of raw frames",
    "live": "correlate an acquisition while the detector writes it (docs/live.md)",
    "series": "relaxation time and contrast of a run of files against time, index or a "
              "metadata field",
    "ages": "g2 by sample age from two-time data, cut at constant age and at constant t1, "
            "fitted, with the ageing law tau(t_w) (docs/ages.md)",
    "qmap": "compute a q x phi partition file",
    "regroup": "re-bin a file's per-pixel G2 stack with another partition or mask",
    "inspect": "a raw source's timelines (photons, occupancy, counts at the cap) and "
               "faults (hot/dead pixels, cosmics, empty frames, modulations)",
    "xsvs": "speckle visibility from the photons: count histograms per q-bin and "
            "exposure, negative-binomial fits, beta(T) (docs/xsvs.md)",
    "audit": "rank the pixels of per-pixel G2 stacks by their leverage on g2, flag hot "
             "pixels, write the table as CSV",
    "fit": "fit g2 of result files (least squares, optionally Bayesian)",
    "export": "render figures of result files off-screen",
    "report": "one self-contained HTML report (and PDF) of result files: figures, fits "
              "with statuses and reasons, verdicts, provenance (docs/report.md)",
    "average": "average repeated measurements into one result file",
    "snapshot": "render a GUI tab offscreen to PNG",
    "device": "backend, devices, routing and the machine's job-cost profile",
}
SUBCOMMANDS = tuple(COMMANDS)


def _available(name: str) -> bool:
    return importlib.util.find_spec(f"xpcsviewer.commands.{name}") is not None


class _CommandParser(argparse.ArgumentParser):
    """A subcommand's parser. Its own arguments, ``add_arguments`` of its module, are
    added when it is first used: a command line imports the module of its command
    only (``build_parser(lazy=True)``)."""

    def __init__(self, *args, command: str | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._command = command

    def add_command_arguments(self) -> None:
        name, self._command = self._command, None
        if name is not None and _available(name):
            importlib.import_module(f"xpcsviewer.commands.{name}").add_arguments(self)

    def parse_known_args(self, args=None, namespace=None):
        self.add_command_arguments()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self.add_command_arguments()
        return super().format_usage()

    def format_help(self) -> str:
        self.add_command_arguments()
        return super().format_help()


def build_parser(lazy: bool = False) -> argparse.ArgumentParser:
    """The full parser (also used by the docs and the tests); lazy: each subcommand's
    arguments are added when that subcommand is parsed (:func:`main`)."""
    common = _args.common(top=False)
    parser = _args.top_parser(__version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND",
                                parser_class=_CommandParser)
    for name, help_ in COMMANDS.items():
        if not _available(name):
            help_ += " [not available yet]"
        p = sub.add_parser(name, help=help_, description=help_, parents=[common],
                           command=name)
        if not lazy:
            p.add_command_arguments()
    return parser


def _normalise_argv(argv: list[str]) -> list[str]:
    """``xpcsviewer PATH ...`` is ``xpcsviewer gui PATH ...``."""
    takes_value = {"--backend", "--device"}
    skip = False
    for i, a in enumerate(argv):
        if skip:
            skip = False
            continue
        if a in ("-h", "--help", "--version"):
            return argv
        if a.startswith("-"):
            skip = a in takes_value
            continue
        if a in SUBCOMMANDS:
            return argv
        return [*argv[:i], "gui", *argv[i:]]
    return [*argv, "gui"]


def _configure(args: argparse.Namespace) -> None:
    """Logging, and the run configuration (flags over environment defaults) as a value
    on ``args.config``: the command runs under it (``_main``), and hands it on."""
    from xpcsviewer.backends import RunConfig

    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    args.config = RunConfig.from_env(backend=args.backend, device=args.device)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``xpcsviewer`` console script."""
    from xpcsviewer.progress import interrupt_handlers, interrupted

    name = "xpcsviewer"
    with interrupt_handlers():
        try:
            if interrupted():  # Ctrl-C while Python imported the command line
                raise KeyboardInterrupt
            args_list = list(sys.argv[1:] if argv is None else argv)
            parser = build_parser(lazy=True)
            args = parser.parse_args(_normalise_argv(args_list))
            name = f"xpcsviewer {args.command}"
            code = _main(args)
        except KeyboardInterrupt:
            code = EXIT_INTERRUPTED
        # The signal handler only sets a flag (see xpcsviewer.progress): a command
        # that finished meanwhile is still reported as interrupted.
        sig = interrupted()
        if sig or code == EXIT_INTERRUPTED:
            print(f"{name}: interrupted", file=sys.stderr)
            code = 128 + (sig or signal.SIGINT)
        return code


def _main(args: argparse.Namespace) -> int:
    from xpcsviewer.backends import use_config

    try:
        _configure(args)
    except ValueError as exc:
        print(f"xpcsviewer: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.command != "gui":
        from xpcsviewer.backends.routing import set_one_shot

        set_one_shot()
    from xpcsviewer.io._h5links import allowing_external

    with warnings.catch_warnings(), use_config(args.config), \
            allowing_external(args.allow_external):
        if not args.verbose:
            # Numerical warnings (all-NaN slices, 0/0) are expected on bad
            # data; the commands report what they mean instead.
            warnings.simplefilter("ignore", RuntimeWarning)
        return _dispatch(args)


def _dispatch(args: argparse.Namespace) -> int:
    name = args.command
    if not _available(name):
        print(f"xpcsviewer {name}: not available yet", file=sys.stderr)
        return EXIT_USAGE
    from xpcsviewer.io.errors import XpcsFileError, one_line
    from xpcsviewer.io.outputs import OutputRefusedError, OutputWriteError, display_path
    from xpcsviewer.progress import Cancelled

    prog = f"xpcsviewer {name}"
    try:
        module = importlib.import_module(f"xpcsviewer.commands.{name}")
        return int(module.run(args) or 0)
    except XpcsFileError as exc:
        print(f"{prog}: {exc.one_line()}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OutputRefusedError as exc:
        print(f"{prog}: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except OutputWriteError as exc:  # names the output; the old one is unchanged
        print(f"{prog}: error: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except (Cancelled, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    except MemoryError:
        print(f"{prog}: error: not enough memory for this job", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:
        if args.verbose:
            raise
        msg = one_line(display_path(str(exc).splitlines()[0] if str(exc).strip()
                                    else type(exc).__name__))
        if not isinstance(exc, (ValueError, ImportError, RuntimeError, OSError)):
            msg = f"{type(exc).__name__}: {msg} (run with -v for the details)"
        print(f"{prog}: error: {msg}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
