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


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``xpcsviewer correlate`` (called by :mod:`xpcsviewer.cli`)."""
    from xpcsviewer.commands._args import add_batch

    add_batch(p, skip_existing=True)
    p.add_argument("raw", metavar="RAW", nargs="+",
                   help="a raw source, recognised by content: dense frames (HDF5 "
                        "/entry/data/data, .npy), Rigaku .bin (a 3M: one of its .000-.005 "
                        "module files), ESRF sparse HDF5 (a block or its folder), ImageD11 "
                        "sparse, Timepix event list (docs/sparse-formats.md); several: -o "
                        "is a folder")
    p.add_argument("--qmap", required=True, help="partition file (/qmap or /xpcs/qmap)")
    p.add_argument("--mask", default=None, metavar="FILE",
                   help="a mask file (.npy, .tif, HDF5 /qmap/mask or /mask; nonzero = valid) "
                        "of the q-map's detector shape, combined with the q-map's mask: a "
                        "pixel is used where both say valid; the result's config records "
                        "the file and the pixels it removed")
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
                        "compiled on the CPU, XLA on a GPU. Photon path: compiled (auto), "
                        "or xla (multi-tau g2 on --device; refused for two-time, "
                        "--twotime-ages and time-tag mode)")
    p.add_argument("--bin-time", type=float, default=None, metavar="SECONDS",
                   help="event lists (Timepix): frames of this length; without it the "
                        "time-tag mode correlates the arrival times (multi-tau only)")
    p.add_argument("--begin-frame", type=int, default=0)
    p.add_argument("--end-frame", type=int, default=-1)
    p.add_argument("--stride-frame", type=int, default=1)
    p.add_argument("--avg-frame", type=int, default=1)
    p.add_argument("--exclude-frames", default=None, metavar="A-B[,C-D...]",
                   help="raw frames (0-based, inclusive) dropped from the frame stream as "
                        "if never recorded (bad frames: a beam dump, a cosmic shower); "
                        "the delays across a dropped block are shifted by its length, "
                        "which the notes and the result's config say")
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
    p.add_argument("--xsvs", action="store_true",
                   help="also write the speckle visibility (XSVS) of the photons beside "
                        "the result, as OUTNAME_xsvs.h5, compared with its g2 fit "
                        "(xpcsviewer xsvs; one RAW only)")
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



def _say_stderr(text: str) -> None:
    print(text, file=sys.stderr)


def spec_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~xpcsviewer.compute.spec.CorrelateSpec` of the flags (checked: a
    bad value raises SpecError before any file is opened)."""
    from xpcsviewer.compute.spec import AGES_DEFAULT_POINTS, CorrelateSpec, FrameSelection

    return CorrelateSpec(
        mode=args.mode, dq=args.dq,
        frames=FrameSelection(args.begin_frame, args.end_frame, args.stride_frame,
                              args.avg_frame, getattr(args, "exclude_frames", None)),
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


def _mask_arg(args: argparse.Namespace) -> Path | None:
    mask = getattr(args, "mask", None)
    return None if mask is None else Path(mask)


def _one(args: argparse.Namespace, spec: Any, request: Any, quiet: bool) -> int:
    """One RAW to one result file, with a progress bar and the notes on stderr."""
    from xpcsviewer.jobs.correlate import CorrelateJob, MemoryRefused, correlate_file
    from xpcsviewer.progress import TextProgressBar

    job = CorrelateJob(Path(args.raw if isinstance(args.raw, (str, os.PathLike))
                            else args.raw[0]), Path(args.qmap), Path(args.output), spec,
                       request, bool(getattr(args, "overwrite", False)),
                       mask=_mask_arg(args))
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
    if getattr(args, "xsvs", False):
        return _xsvs_beside(args, Path(done.output), quiet)
    return 0


def _xsvs_beside(args: argparse.Namespace, output: Path, quiet: bool) -> int:
    """``--xsvs``: the photons' XSVS of the same RAW, q-map and frame time, with the
    result's g2 fit beside, written as OUTNAME_xsvs.h5."""
    from xpcsviewer.jobs.xsvs import XSVS_SUFFIX, write_xsvs, xsvs_source
    from xpcsviewer.progress import TextProgressBar

    raw = args.raw if isinstance(args.raw, (str, os.PathLike)) else args.raw[0]
    target = output.with_name(output.stem + XSVS_SUFFIX)
    check_output(target, [raw, args.qmap, output], bool(getattr(args, "overwrite", False)))
    try:
        with TextProgressBar("xsvs", enabled=not quiet) as bar:
            res = xsvs_source(raw, qmap=args.qmap, frame_time=args.frame_time,
                              bin_time=getattr(args, "bin_time", None), result=output,
                              progress=bar)
    except ValueError as exc:
        _say_stderr(f"{PROG}: --xsvs: {exc}")
        return 2
    write_xsvs(target, res)
    if not quiet:
        ok = sum(str(s) == "ok" for s in res.vis["status"])
        _say_stderr(f"wrote {target}: XSVS of {res.bin_ids.size} q-bins x "
                    f"{res.windows.size} exposures, beta(T) fitted in {ok}")
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
    if getattr(args, "xsvs", False) and (len(raws) != 1 or where.distributed or skip):
        _say_stderr(f"{PROG}: --xsvs takes one RAW (run xpcsviewer xsvs on each)")
        return 2
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
    mask = _mask_arg(args)
    inputs = [*raws, args.qmap, *([mask] if mask is not None else [])]
    for o in outputs:
        check_output(o, inputs, overwrite or (skip and o.exists()))
        if getattr(args, "save_g2_pixel", False) and not (skip and o.exists()):
            from xpcsviewer.io.results.g2stack import g2_side_path

            check_output(g2_side_path(o), inputs, overwrite, replacing=[o])
    options = {"qmap": os.path.abspath(args.qmap), "spec": spec.as_dict(),
               "mask": None if mask is None else os.path.abspath(mask),
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
