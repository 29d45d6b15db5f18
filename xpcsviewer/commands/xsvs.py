"""``xpcsviewer xsvs RAW --qmap Q [--frame-time S] [--exposures S,S,...] [--result R]
[-o xsvs.h5|.csv]``: speckle visibility from the photons (issue 46, docs/xsvs.md).

One pass over the raw source (:func:`xpcsviewer.jobs.xsvs.xsvs_source`, the Raw tab's
job too) with a progress bar on stderr; prints per q-bin the visibility law's beta0 and
tau (and the g2 fit's contrast and tau with ``--result``); ``-o`` writes the table
(``.csv``: one row per q-bin and exposure, the columns of
:data:`xpcsviewer.model.xsvs.CSV_COLUMNS`) or everything (``.h5``), atomically.
Exit codes: 0 done; 2 a bad option or refused output; 3 an unreadable source or q-map.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

PROG = "xpcsviewer xsvs"


def _fmt(v: float, err: float | None = None) -> str:
    if v is None or not np.isfinite(v):
        return "-"
    if err is None or not np.isfinite(err):
        return f"{v:.4g}"
    return f"{v:.4g} ± {err:.2g}"


def tau_text(vis: dict, b: int) -> str:
    """tau of row ``b`` of a beta(T) fit as a user may quote it: a value, or a limit."""
    st = str(vis["status"][b])
    if st == "tau_below":
        return f"< {vis['limit'][b]:.3g}"
    if st == "tau_above":
        return f"> {vis['limit'][b]:.3g}"
    if st in ("ok", "misfit"):
        return _fmt(float(vis["tau"][b]), float(vis["tau_error"][b]))
    return "-"


def table_lines(res) -> list[str]:
    """The per-bin table of a result (beta(T) fits, g2 beside when known)."""
    unit = "s" if res.frame_time is not None else "frames"
    ex = res.exposure_s if res.frame_time is not None else res.windows
    cap = "none" if res.counter_cap is None else f"{res.counter_cap} counts (censored)"
    lines = [f"{res.source}: {res.layout}, {res.n_frames} frames, {res.bin_ids.size} q-bins, "
             f"{res.windows.size} exposures {ex[0]:.4g}..{ex[-1]:.4g} {unit}; "
             f"counter cap: {cap}"]
    has_g2 = bool(res.g2)
    head = (f"{'bin':>4} {'q':>10} {'spread':>7} {'beta0':>16} {'tau (' + unit + ')':>20} "
            f"{'status':<11}")
    if has_g2:
        head += f" {'g2 contrast':>16} {'g2 tau':>18}"
    lines.append(head)
    for b, bid in enumerate(res.bin_ids):
        st = str(res.vis["status"][b])
        beta0 = _fmt(float(res.vis["beta0"][b]), float(res.vis["beta0_error"][b])) \
            if st not in ("few_points",) else "-"
        sp = "-" if res.mean_spread is None else f"{res.mean_spread[b]:.3g}"
        row = (f"{int(bid):>4} {res.q[b]:>10.4g} {sp:>7} {beta0:>16} "
               f"{tau_text(res.vis, b):>20} {st:<11}")
        if has_g2:
            row += (f" {_fmt(res.g2['contrast'][b], res.g2['contrast_error'][b]):>16}"
                    f" {_fmt(res.g2['tau'][b], res.g2['tau_error'][b]):>18}")
        lines.append(row)
    counts = {}
    for s in np.asarray(res.nb["status"]).ravel():
        counts[str(s)] = counts.get(str(s), 0) + 1
    lines.append("per bin and exposure: " + ", ".join(f"{v} {k}" for k, v in
                                                      sorted(counts.items())))
    if res.mean_spread is not None:
        lines.append("spread: relative variance of the pixels' mean intensity in a bin; beta "
                     "corrected for it (--pooled: not)")
    lines += [f"note: {n}" for n in res.notes]
    return lines


def _floats(text: str | None) -> list[float] | None:
    if text is None:
        return None
    try:
        return [float(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise ValueError(f"--exposures takes seconds separated by commas (got {text!r})") \
            from None


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer xsvs``; returns the exit code."""
    from xpcsviewer.io.outputs import check_output
    from xpcsviewer.jobs.xsvs import write_xsvs, xsvs_source
    from xpcsviewer.progress import TextProgressBar

    out = args.output
    try:
        exposures = _floats(args.exposures)
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    if out is not None:
        if not str(out).lower().endswith((".csv", ".h5", ".hdf", ".hdf5")):
            print(f"{PROG}: error: -o must end in .csv, .h5 or .hdf (got {out})",
                  file=sys.stderr)
            return 2
        inputs = [args.raw, args.qmap] + ([args.result] if args.result else [])
        check_output(out, inputs, bool(args.overwrite))  # refuse before the pass
    quiet = bool(getattr(args, "quiet", False))
    try:
        with TextProgressBar("xsvs", enabled=not quiet) as bar:
            res = xsvs_source(args.raw, qmap=args.qmap, frame_time=args.frame_time,
                              bin_time=args.bin_time, exposures=exposures,
                              levels=args.levels, counter_cap=args.cap,
                              result=args.result, model=args.g1,
                              spread_correction=not args.pooled, progress=bar)
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(table_lines(res)))
    if out is not None:
        write_xsvs(out, res)
        if not quiet:
            print(f"wrote {out}", file=sys.stderr)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``xpcsviewer xsvs`` (called by :mod:`xpcsviewer.cli`)."""
    p.add_argument("raw", metavar="RAW",
                   help="a raw source of any layout correlate reads (dense HDF5 or .npy, "
                        "Rigaku .bin or 3M, ESRF CSR, ImageD11, Timepix: in its ticks, "
                        "or in frames with --bin-time)")
    p.add_argument("--qmap", metavar="Q", required=True,
                   help="q-map (partition or result file): its dynamic q-bins pool the "
                        "pixels' counts, its mask the valid pixels")
    p.add_argument("--frame-time", type=float, default=None, metavar="S",
                   help="seconds per frame (default: the file's)")
    p.add_argument("--bin-time", type=float, default=None, metavar="S",
                   help="seconds per frame of an event list (default: its ticks)")
    p.add_argument("--exposures", default=None, metavar="S,S,...",
                   help="exposures in seconds, whole numbers of frames (default 1, 2, 4, "
                        "... frames while 8 whole windows remain)")
    p.add_argument("--levels", type=int, default=None, metavar="N",
                   help="at most N default exposures")
    p.add_argument("--cap", type=int, default=None, metavar="N",
                   help="counts at which a pixel saturates in one frame: windows with such "
                        "a frame are censored (default: the file's, the dtype's, or the "
                        "Rigaku mode of the counts)")
    p.add_argument("--result", default=None, metavar="R",
                   help="a result file of the same run: its g2 fit's contrast and tau "
                        "beside beta0 and tau")
    p.add_argument("--g1", choices=("single", "stretched"), default="single",
                   help="g1 of the beta(T) law: a single or a stretched exponential "
                        "(default single)")
    p.add_argument("--pooled", action="store_true",
                   help="the pooled histograms' beta, not corrected for the spread of the "
                        "pixels' mean intensity within a q-bin (docs/xsvs.md)")
    p.add_argument("-o", "--output", default=None, metavar="XSVS.h5|.csv",
                   help="write the table (.csv) or everything (.h5/.hdf)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output")
