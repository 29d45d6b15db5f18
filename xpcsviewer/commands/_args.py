"""Parser pieces shared by the subcommands' ``add_arguments`` and :mod:`xpcsviewer.cli`.

Light on purpose: every command line imports it before it knows its command, so
nothing here may import NumPy, JAX, h5py or Qt.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path


def model_choices() -> tuple[str, ...]:
    """``--model``'s choices from :mod:`xpcsviewer.fitting.vocabulary`, read without the
    fitting package's ``__init__`` (NumPy and the fit modules: ~80 ms on every --help)."""
    name = "xpcsviewer.fitting.vocabulary"
    mod = sys.modules.get(name)
    if mod is None:
        path = Path(__file__).parents[1] / "fitting" / "vocabulary.py"
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # one module object, whoever imports it later
        spec.loader.exec_module(mod)
    return mod.MODEL_CHOICES


def top_parser(version: str) -> argparse.ArgumentParser:
    """``xpcsviewer``'s own parser: the common options with their defaults, --version."""
    parser = argparse.ArgumentParser(
        prog="xpcsviewer",
        description="XPCS Viewer: view, fit and export XPCS result files.",
        parents=[common(top=True)],
    )
    parser.add_argument("--version", action="version", version=f"xpcsviewer {version}")
    return parser


def common(top: bool) -> argparse.ArgumentParser:
    """The options every command takes, before or after its name (a parent parser)."""
    # Subparsers must not overwrite values given before the subcommand: their
    # defaults are SUPPRESS, so they only set what is given after it.
    d = (lambda v: v) if top else (lambda v: argparse.SUPPRESS)
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("common options")
    g.add_argument(
        "--backend", choices=("jax", "numpy"), default=d(None), help="array backend (default: auto)"
    )
    g.add_argument(
        "--device", default=d(None), help="auto, cpu or gpu (default: XPCS_DEVICE or auto)"
    )
    g.add_argument("-v", "--verbose", action="count", default=d(0), help="more log output")
    g.add_argument("--quiet", action="store_true", default=d(False), help="no progress bars")
    g.add_argument("--allow-external", action="store_true", default=d(False),
                   help="read HDF5 external links, virtual-dataset sources and external "
                        "storage outside the input's folder (never a FIFO or device; "
                        "docs/reliability.md)")
    return p


def add_batch(p: argparse.ArgumentParser, skip_existing: bool) -> None:
    """The batch options (docs/batch.md); a command adds them before its own, so that
    they keep their place in its usage line."""
    g = p.add_argument_group("batch options (docs/batch.md)")
    g.add_argument("--workers", type=int, default=None, metavar="N",
                   help="run the files on a local Dask cluster of N worker processes, "
                        "at most one per usable core (default: in this process)")
    g.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                   help="run the files on an existing Dask cluster "
                        "(default: XPCS_SCHEDULER if set)")
    if skip_existing:
        g.add_argument("--skip-existing", action="store_true",
                       help="skip files whose outputs exist and are complete "
                            "(resume an interrupted batch)")


def add_ages(p: argparse.ArgumentParser, models: tuple[str, ...] | None) -> None:
    """The age windows and law of ``ages``; with ``models`` None only these (``fit
    --ages``), else also the ages, bins and fit of ``ages`` itself."""
    p.add_argument("--widths", default=None, metavar="W[,W...]",
                   help="window widths in s with --ages: one, or one per age (default: "
                        "the smallest spacing of the ages)")
    p.add_argument("--windows", type=int, default=None, metavar="N",
                   help="N windows tiling the run (default 5; equal widths, or with --log "
                        "each twice the previous)")
    p.add_argument("--log", action="store_true", help="log-spaced --windows")
    p.add_argument("--law", choices=("linear", "power"), default="linear",
                   help="the ageing law the verdict reads: tau0 + a t_w (default) or "
                        "tau0 t_w^mu (both are fitted)")
    if models is None:
        return
    p.add_argument("--ages", default=None, metavar="T[,T...]",
                   help="window centres (sample ages) in s")
    p.add_argument("--bins", default=None, metavar="B[,B...]",
                   help="1-based dynamic bins (default: every bin with two-time data)")
    p.add_argument("--model", choices=models, default="auto",
                   help="fit model, as `fit --model` (default auto: one chosen per cut by AICc)")
    p.add_argument("--t-range", **pair(float), help="fit only lags A <= lag <= B (s)")


def pair(kind: type) -> dict:
    """``add_argument`` keywords of an ``A B`` range."""
    return {"nargs": 2, "type": kind, "metavar": ("A", "B")}
