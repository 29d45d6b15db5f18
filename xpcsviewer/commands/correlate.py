"""``xpcsviewer correlate RAW ... --qmap QMAP -o OUT``: raw frames to result files.

The options, the output rules and the batch (one task per raw file, in-process or on
Dask) live here; the file job itself (read, correlate with a progress bar on stderr,
write a complete result file atomically) is :mod:`xpcsviewer.jobs.correlate`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from xpcsviewer.io.outputs import OutputRefusedError, check_output
from xpcsviewer.jobs.correlate_batch import correlate_task, output_name

PROG = "xpcsviewer correlate"


def _say_stderr(text: str) -> None:
    print(text, file=sys.stderr)


def spec_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~xpcsviewer.compute.spec.CorrelateSpec` of the flags (checked: a
    bad value raises SpecError before any file is opened)."""
    from xpcsviewer.compute.spec import AGES_DEFAULT_POINTS, CorrelateSpec, FrameSelection

    return CorrelateSpec(
        mode=args.mode, dq=args.dq,
        frames=FrameSelection(args.begin_frame, args.end_frame, args.stride_frame,
                              args.avg_frame),
        frame_time=args.frame_time, bin_time=getattr(args, "bin_time", None),
        normalize_frame=bool(getattr(args, "normalize_frame", False)),
        num_partial_g2=int(getattr(args, "num_partial_g2", 0)),
        save_g2_pixel=bool(getattr(args, "save_g2_pixel", False)),
        ages=bool(getattr(args, "twotime_ages", False)),
        ages_points=int(getattr(args, "twotime_ages_points", AGES_DEFAULT_POINTS)),
        groups=int(getattr(args, "twotime_groups", 0) or 0),
        group_tile=int(getattr(args, "group_tile", 8)))


def request_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~xpcsviewer.compute.spec.PlanRequest` of the flags."""
    from xpcsviewer.compute.spec import PlanRequest

    return PlanRequest(path=getattr(args, "path", "auto"),
                       engine=getattr(args, "engine", "auto"),
                       device=getattr(args, "device", None),
                       verbose=bool(getattr(args, "verbose", False)))


def _one(args: argparse.Namespace, spec: Any, request: Any, quiet: bool) -> int:
    """One RAW to one result file, with a progress bar and the notes on stderr."""
    from xpcsviewer.jobs.correlate import CorrelateJob, MemoryRefused, correlate_file
    from xpcsviewer.progress import TextProgressBar

    job = CorrelateJob(Path(args.raw if isinstance(args.raw, (str, os.PathLike))
                            else args.raw[0]), Path(args.qmap), Path(args.output), spec,
                       request, bool(getattr(args, "overwrite", False)))
    inform = None if quiet else (lambda text: _say_stderr(f"{PROG}: {text}"))
    try:
        with TextProgressBar("correlate", enabled=not quiet) as bar:
            done = correlate_file(job, progress=bar, inform=inform)
    except MemoryRefused as exc:
        _say_stderr(f"{PROG}: {exc}")
        return 1
    for note in done.notes:
        _say_stderr(f"{PROG}: note: {note}")
    if not quiet:
        _say_stderr(f"wrote {done.output}: {done.summary}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer correlate``; returns the exit code."""
    from xpcsviewer.batch import BatchBar, print_failures, run_batch, where_from_args
    from xpcsviewer.compute.spec import SpecError
    from xpcsviewer.io.outputs import display_path

    raws = [args.raw] if isinstance(args.raw, (str, os.PathLike)) else list(args.raw)
    quiet = bool(getattr(args, "quiet", False))
    try:
        where = where_from_args(args)
    except ValueError as exc:
        print(f"xpcsviewer correlate: error: {exc}", file=sys.stderr)
        return 2
    try:  # every flag checked before any file is opened
        spec, request = spec_from_args(args), request_from_args(args)
    except SpecError as exc:
        _say_stderr(f"{PROG}: {exc}")
        return 2
    skip = bool(getattr(args, "skip_existing", False))
    if len(raws) == 1 and not where.distributed and not skip:
        try:
            return _one(args, spec, request, quiet)
        except SpecError as exc:
            _say_stderr(f"{PROG}: {exc}")
            return 2
    if len(raws) == 1:
        outputs = [Path(args.output)]
    else:
        folder = Path(args.output)
        if folder.exists() and not folder.is_dir():
            raise OutputRefusedError(f"{display_path(folder)}: is a file; with several RAW "
                                     "files -o names a folder")
        if not folder.exists() and folder.suffix.lower() in (".hdf", ".h5", ".hdf5",
                                                             ".nxs"):
            # a file name by mistake: a folder of that name would be made
            raise OutputRefusedError(
                f"{display_path(folder)}: with several RAW files -o names a folder "
                "(each RAW gets RAWNAME_results.hdf in it), not a result file")
        outputs = [folder / output_name(r) for r in raws]
        seen: dict[Path, str] = {}
        for r, o in zip(raws, outputs, strict=True):
            if o in seen:
                raise OutputRefusedError(f"{display_path(r)} and {display_path(seen[o])} "
                                         f"would both write {display_path(o)}")
            seen[o] = r
        folder.mkdir(parents=True, exist_ok=True)
    overwrite = bool(getattr(args, "overwrite", False))
    for o in outputs:
        check_output(o, [*raws, args.qmap], overwrite or (skip and o.exists()))
        if getattr(args, "save_g2_pixel", False) and not (skip and o.exists()):
            from xpcsviewer.io.g2stack import g2_side_path

            check_output(g2_side_path(o), [*raws, args.qmap], overwrite, replacing=[o])
    options = {"qmap": os.path.abspath(args.qmap), "spec": spec.as_dict(),
               "request": {"path": request.path, "engine": request.engine.value,
                           "device": request.device},
               "overwrite": overwrite, "skip_existing": skip}
    items = [{"path": os.path.abspath(r), "shown": os.fspath(r),
              "output": os.path.abspath(o), "shown_output": display_path(o)}
             for r, o in zip(raws, outputs, strict=True)]
    notes: dict[str, None] = {}
    written = skipped = 0

    def take(o: Any) -> None:
        nonlocal written, skipped
        if o.ok:
            skipped += o.value["skipped"]
            written += not o.value["skipped"]
            notes.update(dict.fromkeys(o.value["notes"]))

    from functools import partial

    with BatchBar("correlate", enabled=not quiet) as bar:
        summary = run_batch(partial(correlate_task, options), items, take, where=where,
                            progress=bar, chunk=1)
    _sweep({Path(o).parent for o in outputs})
    if not quiet:
        for n in notes:
            if not n.startswith("wrote "):
                print(n, file=sys.stderr)
    print_failures("xpcsviewer correlate", summary)
    if not quiet:
        where_to = display_path(args.output)
        extra = f", skipped {skipped} complete" if skipped else ""
        print(f"wrote {written} result file(s) to {where_to}{extra} "
              f"({where.describe()}, {summary.seconds:.1f} s)", file=sys.stderr)
    return summary.exit_code


def _sweep(folders: set[Path]) -> None:
    # A worker killed mid-write leaves its temporary behind (kill -9 cannot be
    # caught); its process is gone now, so the temporary goes.
    from xpcsviewer.io.outputs import sweep_stale_temps

    for f in folders:
        sweep_stale_temps(f, force=True)
