"""Command line: ``xpcsviewer [PATH ...]`` and the subcommands of ARCHITECTURE.md §8.

Argument parsing for every subcommand lives here (the stable contract); each
handler lives in ``xpcsviewer/commands/<name>.py`` as ``run(args) -> int`` and is
imported only when that subcommand runs, so ``--help``, ``info`` and ``device``
never load Qt. A subcommand whose module does not exist yet exits 2 with
"not available yet".

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
from pathlib import Path

from xpcsviewer import __version__

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

SUBCOMMANDS = (
    "gui",
    "demo",
    "info",
    "correlate",
    "live",
    "series",
    "ages",
    "qmap",
    "regroup",
    "audit",
    "fit",
    "export",
    "report",
    "average",
    "snapshot",
    "device",
)

PLOTS = (
    "saxs2d",
    "saxs1d",
    "stability",
    "intensity",
    "g2",
    "diffusion",
    "twotime",
    "ages",
    "qmap",
    "g2map",
    "g2stability",
)
TABS = (
    "saxs2d",
    "saxs1d",
    "stability",
    "intensity",
    "g2",
    "diffusion",
    "twotime",
    "g2stability",
    "g2map",
    "g2pixel",
    "average",
    "qmap",
    "detector",
    "metadata",
    "live",
    "series",
)


def _model_choices() -> tuple[str, ...]:
    """``--model``'s choices from :mod:`xpcsviewer.fitting.vocabulary`, read without the
    fitting package's ``__init__`` (NumPy and the fit modules: ~80 ms on every --help)."""
    name = "xpcsviewer.fitting.vocabulary"
    mod = sys.modules.get(name)
    if mod is None:
        path = Path(__file__).with_name("fitting") / "vocabulary.py"
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # one module object, whoever imports it later
        spec.loader.exec_module(mod)
    return mod.MODEL_CHOICES


def _available(name: str) -> bool:
    return importlib.util.find_spec(f"xpcsviewer.commands.{name}") is not None


def _common(top: bool) -> argparse.ArgumentParser:
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


def _batch(skip_existing: bool) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
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
    return p


def _ages_args(p: argparse.ArgumentParser, models: tuple[str, ...] | None) -> None:
    # the age windows and law of ``ages`` (``fit --ages`` takes the windows and law)
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
    p.add_argument("--t-range", **_pair(float), help="fit only lags A <= lag <= B (s)")


def _pair(kind: type) -> dict:
    return {"nargs": 2, "type": kind, "metavar": ("A", "B")}


def build_parser() -> argparse.ArgumentParser:
    """The full parser (also used by the docs and the tests)."""
    common = _common(top=False)
    models = _model_choices()
    parser = argparse.ArgumentParser(
        prog="xpcsviewer",
        description="XPCS Viewer: view, fit and export XPCS result files.",
        parents=[_common(top=True)],
    )
    parser.add_argument("--version", action="version", version=f"xpcsviewer {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, help_: str, *extra: argparse.ArgumentParser) -> argparse.ArgumentParser:
        if not _available(name):
            help_ += " [not available yet]"
        return sub.add_parser(name, help=help_, description=help_, parents=[common, *extra])

    p = add("gui", "open the GUI on a folder or files (the default command)")
    p.add_argument("paths", nargs="*", metavar="PATH")

    p = add("demo", "write the built-in demo data set (reusing complete files), then open "
                    "the GUI on it")
    p.add_argument("--out", default="demo_data", help="output folder (default: ./demo_data)")
    p.add_argument("--no-gui", action="store_true", help="only write the files")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--overwrite", action="store_true",
                   help="simulate the whole set again, replacing the files in --out "
                        "(default: reuse complete demo files, simulate only missing ones, "
                        "refuse to replace any other file)")

    p = add("info", "summary of result files and raw sources (dense or photon-sparse)",
            _batch(False))
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--qmap", default=None, metavar="QMAP",
                   help="partition file giving the detector shape of raw layouts that "
                        "store none (ESRF sparse, ImageD11, Timepix; docs/sparse-formats.md)")

    p = add("correlate", "multi-tau and/or two-time correlation of raw frames", _batch(True))
    p.add_argument("raw", metavar="RAW", nargs="+",
                   help="a raw source, recognised by content: dense frames (HDF5 "
                        "/entry/data/data, .npy), Rigaku .bin (a 3M: one of its .000-.005 "
                        "module files), ESRF sparse HDF5 (a block or its folder), ImageD11 "
                        "sparse, Timepix event list (docs/sparse-formats.md); several: -o "
                        "is a folder")
    p.add_argument("--qmap", required=True, help="partition file (/qmap or /xpcs/qmap)")
    p.add_argument("-o", "--output", required=True, metavar="OUT.hdf|DIR",
                   help="the result file; with several RAW a folder that gets "
                        "RAWNAME_results.hdf for each")
    p.add_argument("--overwrite", action="store_true", help="replace existing outputs")
    p.add_argument("--mode", choices=("multitau", "twotime", "both"), default="multitau")
    p.add_argument("--frame-time", type=float, default=None,
                   help="seconds per frame (default: from the file; 1 s when it has none)")
    p.add_argument("--path", choices=("auto", "sparse", "dense"), default="auto",
                   help="correlate on photons (sparse) or on dense frames; auto (default) "
                        "takes the cheaper by a measured cost of the whole job and says which")
    p.add_argument("--engine", choices=("auto", "compiled", "xla"), default="auto",
                   help="dense correlators: compiled CPU kernels (numba/BLAS), or one XLA "
                        "program per job on the routed device (--device); auto (default): "
                        "the device by the job's estimated cost (device --calibrate), "
                        "compiled on the CPU, XLA on a GPU")
    p.add_argument("--bin-time", type=float, default=None, metavar="SECONDS",
                   help="event lists (Timepix): frames of this length; without it the "
                        "time-tag mode correlates the arrival times (multi-tau only)")
    p.add_argument("--begin-frame", type=int, default=0)
    p.add_argument("--end-frame", type=int, default=-1)
    p.add_argument("--stride-frame", type=int, default=1)
    p.add_argument("--avg-frame", type=int, default=1)
    p.add_argument("--dq", default="all", help="dynamic bins for two-time, e.g. 1-5,8")
    p.add_argument(
        "--normalize-frame", action="store_true", help="normalise each frame by its mean intensity"
    )
    p.add_argument(
        "--num-partial-g2", type=int, default=0, metavar="P",
        help="also store P cumulative g2 snapshots (g2 stability)",
    )
    p.add_argument(
        "--save-g2-pixel", action="store_true",
        help="also store the per-pixel G2/IP/IF stack in OUT_G2.hdf (linked from OUT.hdf)",
    )
    p.add_argument("--twotime-ages", action="store_true",
                   help="also write the multi-tau two-time (age x lag) map of the --dq bins "
                        "to /xpcs/twotime/age_lag: N log N, so for any number of frames, "
                        "with any --mode (docs/correlators.md)")
    p.add_argument("--twotime-ages-points", type=int, default=8, metavar="M",
                   help="points per level of the age x lag map: lags 0..2M-1 frames, then "
                        "M per octave (default 8)")
    p.add_argument("--twotime-groups", type=int, default=0, metavar="K",
                   help="also write the two-time maps of K independent pixel groups of each "
                        "--dq bin (errors of the age cuts, docs/ages.md): full maps with "
                        "--mode twotime/both (/xpcs/twotime/groups, at most 2048 frames), "
                        "age x lag maps with --twotime-ages (/xpcs/twotime/age_lag_groups, "
                        "any length); default 0: none")
    p.add_argument("--group-tile", type=int, default=8, metavar="PX",
                   help="side of the square detector tiles dealt at random to the groups "
                        "(larger than a speckle; default 8)")

    p = add("live", "correlate an acquisition while the detector writes it (docs/live.md)")
    p.add_argument("source", metavar="SOURCE",
                   help="recognised by content: a raw HDF5 file being written (SWMR or "
                        "appended and flushed), a folder receiving frame-block files, or "
                        "FOLDER/PATTERN; photon-sparse: a Rigaku .bin being appended, a "
                        "growing ESRF ID10 sparse (CSR) HDF5 file, or a folder receiving "
                        "its NAME_00000.h5 blocks (the detector shape: from the file, else "
                        "the q-map)")
    p.add_argument("--qmap", required=True, help="partition file (/qmap or /xpcs/qmap)")
    p.add_argument("-o", "--output", required=True, metavar="OUT.hdf",
                   help="the result file, rewritten atomically at every update")
    p.add_argument("--overwrite", action="store_true", help="replace an existing OUT.hdf")
    p.add_argument("--fit", action="store_true",
                   help="fit every update as `fit` does (fits in OUT_fit.json)")
    p.add_argument("--model", choices=models,
                   default="auto",
                   help="fit model, as `fit --model` (default auto: one chosen per q-bin by AICc)")
    p.add_argument("--every", type=float, default=2.0, metavar="SECONDS",
                   help="seconds between partial results (default 2)")
    p.add_argument("--frames", type=int, default=None, metavar="N",
                   help="expected frames: the end (default: from the source, if it says)")
    p.add_argument("--idle", type=float, default=10.0, metavar="SECONDS",
                   help="end after this long without a new frame (default 10)")
    p.add_argument("--start-wait", type=float, default=120.0, metavar="SECONDS",
                   help="give up when no frame arrives within this time (default 120)")
    p.add_argument("--poll", type=float, default=0.2, metavar="SECONDS",
                   help="seconds between looks at the source (default 0.2)")
    p.add_argument("--frame-time", type=float, default=None, help="seconds per frame")
    p.add_argument("--dataset", default="/entry/data/data", help="frames inside the raw file(s)")
    p.add_argument("--normalize-frame", action="store_true",
                   help="normalise each frame by its mean intensity (as correlate)")
    p.add_argument("--json-events", action="store_true",
                   help="print one JSON line per update on stdout")
    p.add_argument("--report", default=None, metavar="REPORT.html|.pdf",
                   help="at the end, the report of OUT.hdf (as `xpcsviewer report`)")

    p = add("series", "relaxation time and contrast of a run of files against time, index "
                      "or a metadata field")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-o", "--output", required=True, metavar="series.csv")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output")
    p.add_argument("--x", default="start_time", metavar="start_time|index|FIELD",
                   help="the abscissa: the file's start time (default; seconds since the "
                        "first file), its index, or a metadata field (an HDF5 path such as "
                        "/entry/sample/temperature, or a sample key)")
    p.add_argument("--model", choices=models,
                   default="auto",
                   help="fit model, as `fit --model` (default auto: one chosen per q-bin by AICc)")
    p.add_argument("--q-range", **_pair(float),
                   help="only the q-bins with A <= q <= B, in 1/\u00c5 (default: all)")

    p = add("ages", "g2 by sample age from two-time data, cut at constant age and at "
                    "constant t1, fitted, with the ageing law tau(t_w) (docs/ages.md)")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-o", "--output", required=True, metavar="ages.csv")
    p.add_argument("--json", default=None, metavar="ages.json",
                   help="also the full record: curves, chi4, both laws")
    p.add_argument("--overwrite", action="store_true", help="replace existing outputs")
    _ages_args(p, models)

    p = add("qmap", "compute a q x phi partition file")
    p.add_argument("--shape", nargs=2, type=int, metavar=("H", "W"), required=True)
    p.add_argument("--energy", type=float, required=True, metavar="KEV")
    p.add_argument("--det-dist", type=float, required=True, metavar="M")
    p.add_argument("--pixel-size", type=float, required=True, metavar="M")
    p.add_argument("--bcx", type=float, required=True, metavar="PX")
    p.add_argument("--bcy", type=float, required=True, metavar="PX")
    p.add_argument("--mask", default=None, help="mask image (npy, tiff or hdf)")
    p.add_argument("--dq-num", type=int, default=36)
    p.add_argument("--sq-num", type=int, default=360)
    p.add_argument("--dp-num", type=int, default=1)
    p.add_argument("--sp-num", type=int, default=1)
    p.add_argument("-o", "--output", required=True, metavar="QMAP.hdf")
    p.add_argument("--overwrite", action="store_true", help="replace an existing QMAP.hdf")

    p = add("regroup", "re-bin a file's per-pixel G2 stack with another partition or mask")
    p.add_argument("file", metavar="FILE", help="result file with a per-pixel G2 stack")
    p.add_argument("--qmap", default=None, metavar="QMAP.hdf",
                   help="partition file (/qmap or a result's /xpcs/qmap; default: FILE's own)")
    p.add_argument("--mask", default=None, metavar="MASK.hdf",
                   help="mask image (hdf, npy or tiff; nonzero = valid pixel)")
    p.add_argument("-o", "--output", required=True, metavar="OUT.hdf")
    p.add_argument("--overwrite", action="store_true", help="replace an existing OUT.hdf")

    p = add("audit", "rank the pixels of per-pixel G2 stacks by their leverage on g2, "
                     "flag hot pixels, write the table as CSV")
    from xpcsviewer.commands.audit import add_arguments as audit_arguments

    audit_arguments(p)

    p = add("fit", "fit g2 of result files (least squares, optionally Bayesian)", _batch(False))
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--model", choices=models,
                   default=None,
                   help="g2 model; default auto: every candidate is fitted and one chosen "
                        "per q-bin by AICc (--bayes samples each bin's choice); single: g2 = "
                        "baseline + contrast exp(-2 t/tau); stretched: exp(-2 (t/tau)^stretch); "
                        "double: two decays; single_avgcorr: single with the multi-tau "
                        "frame-averaging correction")
    p.add_argument("--q-range", **_pair(float),
                   help="fit only the q-bins with A <= q <= B, in 1/\u00c5 (default: all)")
    p.add_argument("--t-range", **_pair(float),
                   help="fit only the delays with A <= tau <= B, in s (default: all)")
    p.add_argument("--bayes", action="store_true",
                   help="also run NumPyro NUTS (4 chains x 1500 draws per q-bin that least "
                        "squares finds decaying; the others keep its status)")
    p.add_argument("--include-suspect-errors", action="store_true",
                   help="also fit delay points whose stated error is below half their "
                        "neighbours' (left out by default; see `xpcsviewer info`)")
    p.add_argument("--temperature", type=float, metavar="K",
                   help="sample temperature for the Stokes-Einstein radius (with --viscosity)")
    p.add_argument("--viscosity", type=float, metavar="PA_S",
                   help="solvent viscosity in Pa s for the Stokes-Einstein radius")
    p.add_argument("-o", "--output", default=None, metavar="OUT.json|.csv|.h5",
                   help="write the fits to a file (default: print a table)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    p.add_argument("--ages", nargs="?", const=True, default=None, metavar="T[,T...]",
                   help="also g2 by sample age of files with two-time data, as `ages` "
                        "(JSON output: an 'ages' object per file); optional window centres "
                        "in s (default: --windows)")
    _ages_args(p, None)

    p = add("export", "render figures of result files off-screen", _batch(True))
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--plot", choices=PLOTS, required=True, action="append")
    p.add_argument("--format", choices=("png", "svg", "pdf"), default="png")
    p.add_argument("--size", choices=("single", "double", "slide"), default="double",
                   help="page: journal single column (3.4 in wide, 8 pt text), double "
                        "column (7 in, 9 pt; default) or slide (10 x 5.6 in, 14 pt); g2 "
                        "panels beyond a page go on more pages (PDF) or files _p1, _p2 ...")
    p.add_argument("-o", "--output", required=True, metavar="DIR")
    p.add_argument("--overwrite", action="store_true",
                   help="replace existing figures of the same names in DIR")

    p = add("report", "one self-contained HTML report (and PDF) of result files: figures, "
                      "fits with statuses and reasons, verdicts, provenance (docs/report.md)")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-o", "--output", default=None, metavar="REPORT.html")
    p.add_argument("--pdf", default=None, metavar="REPORT.pdf", help="the same report as PDF")
    p.add_argument("--title", default=None, help="the report's title (default: XPCS report)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="processes for the per-file work (default: one per CPU core, up to 8)")
    p.add_argument("--overwrite", action="store_true", help="replace existing report files")

    p = add("average", "average repeated measurements into one result file", _batch(False))
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

    p = add("snapshot", "render a GUI tab offscreen to PNG")
    p.add_argument("files", nargs="*", metavar="FILE")
    p.add_argument("--tab", choices=TABS, required=True)
    p.add_argument("-o", "--output", required=True, metavar="OUT.png")
    p.add_argument("--overwrite", action="store_true", help="replace an existing OUT.png")
    p.add_argument("--size", nargs=2, type=int, default=(1400, 900), metavar=("W", "H"),
                   help="window size in pixels, each 200..8192 (default 1400 900)")

    p = add("device", "backend, devices, routing and the machine's job-cost profile")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--calibrate", action="store_true",
                   help="measure this machine's job costs per kind and device (about a "
                        "minute on the CPU) and write the profile that routes jobs")
    p.add_argument("--no-nuts", action="store_true",
                   help="with --calibrate: skip the Bayesian (NUTS) rows")
    p.add_argument("--profile", default=None, metavar="PATH",
                   help="profile file (default: XPCS_DEVICE_PROFILE or "
                        "~/.cache/xpcsviewer/device-profile.json)")
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
            parser = build_parser()
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
