"""``xpcsviewer live SOURCE --qmap QMAP -o OUT.hdf``: correlate while the detector writes.

Follows a growing raw HDF5 file (SWMR or a plain appending writer) or a folder of
frame-block files, or a photon-sparse source (a Rigaku ``.bin`` being appended, a growing
ESRF CSR file or a folder of its blocks, correlated on photons; the detector shape of a
file that stores none is the q-map's), told apart by content
(:func:`xpcsviewer.jobs.live.follow`); every ``--every`` seconds the
partial result is written atomically to OUT.hdf (``/xpcs/live/partial`` true) and, with
``--fit``, fitted by the ``fit`` command's own entry point (OUT_fit.json). The final
file equals ``xpcsviewer correlate`` of the complete frames and is fitted.
``--json-events`` prints one JSON line per update on stdout (and a first ``ready`` line
once the kernels and fits are loaded). Ctrl-C finishes with the
frames read so far (the file keeps ``partial`` true; exit 130).
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path
from typing import Any

__all__ = ["run"]


def _status_line(up: Any) -> str:
    exp = f"/{up.expected}" if up.expected else ""
    text = (f"{'final' if up.final else 'partial'}: {up.frames}{exp} frames, "
            f"{up.frame_rate_hz:.0f} frames/s (writer {up.writer_rate_hz:.0f}/s), "
            f"lag {up.lag_frames} frames")
    if up.hits is not None:
        text += f", {up.hit_rate_hz or 0:.3g} hits/s"
    if up.bins:
        ok = sum(b["status"] == "converged" for b in up.bins)
        text += f", {ok}/{len(up.bins)} bins converged"
    if up.fit_error:
        text += f", fit failed: {up.fit_error}"
    if up.final and up.latency_s is not None:
        text += f"; {up.latency_s:.2f} s after the last frame"
    return text


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer live``; returns the exit code."""
    from xpcsviewer.compute.spec import CorrelateSpec
    from xpcsviewer.io.outputs import OutputWriteError, check_output
    from xpcsviewer.io.results.reader import read_qmap
    from xpcsviewer.jobs.fitfile import fit_result_files
    from xpcsviewer.jobs.live import LiveOptions, follow
    from xpcsviewer.progress import interrupted

    quiet = bool(getattr(args, "quiet", False))
    for name in ("every", "idle", "poll"):
        v = getattr(args, name)
        if not v > 0:
            print(f"xpcsviewer live: error: --{name} must be positive (got {v})", file=sys.stderr)
            return 2
    if args.frames is not None and args.frames < 2:
        print("xpcsviewer live: error: --frames must be at least 2", file=sys.stderr)
        return 2
    if args.frame_time is not None and not args.frame_time > 0:
        print("xpcsviewer live: error: --frame-time must be positive", file=sys.stderr)
        return 2
    check_output(args.output, [args.source, args.qmap], bool(getattr(args, "overwrite", False)))
    report_to = getattr(args, "report", None)
    if report_to is not None:  # refused now, not after the acquisition
        if Path(report_to).suffix.lower() not in (".html", ".htm", ".pdf"):
            print(f"xpcsviewer live: error: --report must end in .html or .pdf (got {report_to})",
                  file=sys.stderr)
            return 2
        check_output(report_to, [args.source, args.qmap, args.output],
                     bool(getattr(args, "overwrite", False)))
    qm = read_qmap(args.qmap)
    opts = LiveOptions(every=args.every, fit=bool(args.fit), model=args.model,
                       frames=args.frames, idle=args.idle, poll=args.poll,
                       start_wait=args.start_wait, dataset=args.dataset,
                       spec=CorrelateSpec(frame_time=args.frame_time,
                                          normalize_frame=bool(args.normalize_frame)))

    def on_update(up: Any) -> None:
        if args.json_events:
            print(json.dumps(up.to_json(), allow_nan=False), flush=True)
        elif not quiet:
            print(_status_line(up), file=sys.stderr, flush=True)

    def on_ready(ev: dict) -> None:
        if args.json_events:
            print(json.dumps(ev), flush=True)
        elif not quiet:
            print(f"ready: following {ev['source']}", file=sys.stderr, flush=True)

    try:
        final = follow(args.source, qm, args.output, opts,
                       fitter=partial(fit_result_files, model=args.model) if args.fit else None,
                       on_update=on_update, on_ready=on_ready, stop=lambda: bool(interrupted()))
    except OutputWriteError as exc:
        if args.json_events:  # what is left on disk (the CLI prints the message)
            print(json.dumps({"event": "error", "partial": True, "error": str(exc),
                              "left_on_disk": getattr(exc, "left", {})}), flush=True)
        raise
    if not quiet:
        how = {"expected": "reached the expected frame count",
               "closed": "the writer closed the file", "idle": "no new frames",
               "stopped": "interrupted", "truncated": "the source was truncated",
               "replaced": "the source was replaced",
               "recreated": "the frame dataset was re-created",
               "corrupt": "a block cannot be read",
               "not_closed": "the writer did not close the file",
               "missing_block": "a block never arrived",
               "partial_word": "the writer stopped inside a word",
               }.get(final.end or "", final.end)
        state = "partial result" if final.partial else "result"
        print(f"wrote {Path(args.output)}: {state} of {final.frames} frames ({how})"
              + (f"; {final.note}" if final.note else ""), file=sys.stderr)
    if report_to is not None and final.frames:
        from xpcsviewer.report import write_report

        pdf = Path(report_to).suffix.lower() == ".pdf"
        rep = write_report([args.output], None if pdf else report_to, report_to if pdf else None,
                           overwrite=bool(getattr(args, "overwrite", False)), workers=1)
        if not quiet:
            print(f"wrote the report {Path(report_to)} in {rep.seconds:.1f} s", file=sys.stderr)
    return 130 if final.end == "stopped" else 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``xpcsviewer live`` (called by :mod:`xpcsviewer.cli`)."""
    from xpcsviewer.commands._args import model_choices

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
    p.add_argument("--model", choices=model_choices(),
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
