"""``xpcsviewer regroup FILE [--qmap QMAP.hdf] [--mask MASK.hdf] -o OUT.hdf``.

Re-bins a file's per-pixel G2/IP/IF stack (written with ``correlate --save-g2-pixel``)
with another partition and/or mask into a new result file; the source is never
changed. The same code as the G2 tab (:mod:`xpcsviewer.jobs.regroup`).
Exit codes: 0 written; 2 a refused output; 3 unreadable inputs, no stack, or a
partition or mask of another detector shape.
"""

from __future__ import annotations

import argparse
import sys

from xpcsviewer.io.errors import XpcsFileError

PROG = "xpcsviewer regroup"


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer regroup``; returns the exit code."""
    from xpcsviewer.io import read_qmap
    from xpcsviewer.io.masks import read_mask
    from xpcsviewer.io.outputs import check_output
    from xpcsviewer.io.results.reader import read_result
    from xpcsviewer.jobs.regroup import regroup_file, write_regrouped
    from xpcsviewer.progress import TextProgressBar

    # The stack's side file is an input too: check_output follows the link the
    # file reads (a renamed result file still reads X_results_G2.hdf).
    inputs = [p for p in (args.file, args.qmap, args.mask) if p]
    overwrite = bool(getattr(args, "overwrite", False))
    check_output(args.output, inputs, overwrite)  # refuse before any work
    shape = read_result(args.file).qmap.shape
    qm = read_qmap(args.qmap) if args.qmap else None
    if qm is not None and qm.shape != shape:
        raise XpcsFileError(args.qmap, f"partition of a {qm.shape[0]}x{qm.shape[1]} detector",
                            dataset="/qmap/dynamic_roi_map",
                            expected=f"the file's detector shape {shape}")
    mask = read_mask(args.mask, shape) if args.mask else None
    quiet = bool(getattr(args, "quiet", False))
    with TextProgressBar("regroup", enabled=not quiet) as bar:
        try:
            result, img = regroup_file(args.file, qm, mask, progress=bar)
        except ValueError as exc:
            if "no pixel" not in str(exc):
                raise
            # the mask (or partition) is the input at fault: name it
            raise XpcsFileError(args.mask or args.qmap or args.file,
                                "leaves no pixel of the partition that the file correlated",
                                expected="nonzero (valid) pixels inside the file's q-bins"
                                ) from None
    out = write_regrouped(args.output, result, img, inputs, overwrite)
    if not quiet:
        mt = result.multitau
        print(f"wrote {out}: {mt.g2.shape[1]} bins x {mt.g2.shape[0]} delays "
              f"({result.multitau.config.get('regroup_note', '')})", file=sys.stderr)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``xpcsviewer regroup`` (called by :mod:`xpcsviewer.cli`)."""
    p.add_argument("file", metavar="FILE", help="result file with a per-pixel G2 stack")
    p.add_argument("--qmap", default=None, metavar="QMAP.hdf",
                   help="partition file (/qmap or a result's /xpcs/qmap; default: FILE's own)")
    p.add_argument("--mask", default=None, metavar="MASK.hdf",
                   help="mask image (hdf, npy or tiff; nonzero = valid pixel)")
    p.add_argument("-o", "--output", required=True, metavar="OUT.hdf")
    p.add_argument("--overwrite", action="store_true", help="replace an existing OUT.hdf")
