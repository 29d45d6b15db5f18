"""``xpcsviewer inspect RAW [--qmap Q] [--frame-time S] [--bin-time S] [--cap N]
[-o findings.json|.csv]``: a raw source's timelines and faults (issue 45).

One pass over the source (:func:`xpcsviewer.jobs.inspect.inspect_source`, the Raw tab's
job), with a progress bar on stderr; prints a summary of the timelines (frames, photons
per frame, occupancy, fraction at the counter cap, frame time) and the findings table;
``-o`` writes the findings as JSON (``{"findings": [...]}``) or CSV, atomically.
Exit codes: 0 done; 2 a bad option or refused output; 3 an unreadable source or q-map.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

PROG = "xpcsviewer inspect"


def summary_lines(ins) -> list[str]:
    """The timelines' summary, one fact a line."""
    n = ins.n_frames
    ph = np.asarray(ins.photons)
    occ = ins.occupancy
    ft = (f"{ins.frame_time:.6g} s" if ins.frame_time is not None
          else "unknown (no --frame-time, none in the file)")
    cap = ("none (float counts)" if ins.counter_cap is None else f"{ins.counter_cap} counts")
    lines = [
        f"{ins.path}: {ins.layout}, {ins.detector_shape[0]} x {ins.detector_shape[1]} "
        f"pixels ({ins.n_valid} valid), {n} frames",
        f"frame time: {ft}",
        f"photons/frame: mean {ph.mean():.6g}, min {ph.min():.6g}, max {ph.max():.6g}"
        if n else "photons/frame: no frame",
        f"occupancy: mean {occ.mean():.4g}, max {occ.max():.4g}" if n else "occupancy: -",
        f"counter cap: {cap}; hit pixels at the cap: mean {100 * ins.cap_fraction.mean():.3g} %"
        f", max {100 * ins.cap_fraction.max():.3g} %" if n else f"counter cap: {cap}",
    ]
    if ins.frame_time is not None and n:
        lines.append(f"flux: {ph.mean() / ins.frame_time / max(ins.n_valid, 1):.4g} "
                     "photons/s/pixel (valid pixels)")
    return lines


def findings_lines(ins, limit: int = 50) -> list[str]:
    """The findings table (the first ``limit``; all are written with -o)."""
    if not ins.findings:
        return ["findings: none"]
    out = [f"findings: {len(ins.findings)}",
           f"{'kind':<13} {'frames':<17} {'pixels':<24} detail"]
    for f in ins.findings[:limit]:
        frames = f"{f.frames[0]}..{f.frames[1]}" if f.frames[0] != f.frames[1] \
            else str(f.frames[0])
        px = " ".join(f"{r}:{c}" for r, c in f.pixels[:3])
        if len(f.pixels) > 3:
            px += f" +{len(f.pixels) - 3}"
        out.append(f"{f.kind:<13} {frames:<17} {px or '-':<24} {f.detail}")
    if len(ins.findings) > limit:
        out.append(f"... {len(ins.findings) - limit} more (all in -o FILE)")
    return out


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer inspect``; returns the exit code."""
    from xpcsviewer.io.outputs import check_output
    from xpcsviewer.jobs.inspect import inspect_source, write_findings
    from xpcsviewer.progress import TextProgressBar

    out = args.output
    if out is not None:
        if not str(out).lower().endswith((".json", ".csv")):
            print(f"{PROG}: error: -o must end in .json or .csv (got {out})", file=sys.stderr)
            return 2
        inputs = [args.raw] + ([args.qmap] if args.qmap else [])
        check_output(out, inputs, bool(args.overwrite))  # refuse before the pass
    quiet = bool(getattr(args, "quiet", False))
    try:
        with TextProgressBar("inspect", enabled=not quiet) as bar:
            ins = inspect_source(args.raw, qmap=args.qmap, frame_time=args.frame_time,
                                 bin_time=args.bin_time, counter_cap=args.cap, progress=bar)
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(summary_lines(ins) + findings_lines(ins)))
    if out is not None:
        write_findings(out, ins)
        if not quiet:
            print(f"wrote {out}", file=sys.stderr)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``xpcsviewer inspect`` (called by :mod:`xpcsviewer.cli`)."""
    p.add_argument("raw", metavar="RAW",
                   help="a raw source of any layout correlate reads (dense HDF5 or .npy, "
                        "Rigaku .bin or 3M, ESRF CSR, ImageD11, Timepix with --bin-time)")
    p.add_argument("--qmap", metavar="Q", default=None,
                   help="q-map (partition or result file): per-bin photons and P(k), its "
                        "mask for the valid pixels, hot/dead levels per bin")
    p.add_argument("--frame-time", type=float, default=None, metavar="S",
                   help="seconds per frame (default: the file's; else unknown: no Hz)")
    p.add_argument("--bin-time", type=float, default=None, metavar="S",
                   help="seconds per frame of an event list (Timepix)")
    p.add_argument("--cap", type=int, default=None, metavar="N",
                   help="counts at which a pixel saturates (default: the file's, the "
                        "dtype's, or a Rigaku mode's 3/15/255/4095 from the largest count)")
    p.add_argument("-o", "--output", default=None, metavar="FINDINGS.json|.csv",
                   help="write the findings (JSON: {\"findings\": [...]}; CSV: one a row)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output")
