"""``xpcsviewer qmap``: compute a q x phi partition and write a standard ``/qmap`` file."""

from __future__ import annotations

import argparse
import sys

from xpcsviewer.compute.detector.partition import PartitionGrid, check_consistency, make_partition
from xpcsviewer.compute.detector.qmap import DetectorGeometry, compute_qmap
from xpcsviewer.io.masks import read_mask
from xpcsviewer.io.outputs import check_output
from xpcsviewer.io.results.writer import write_qmap_file


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer qmap``; returns the exit code."""
    check_output(args.output, [args.mask] if args.mask else [],
                 getattr(args, "overwrite", False))
    shape = (int(args.shape[0]), int(args.shape[1]))
    try:
        q, phi = compute_qmap(
            shape, args.energy, args.det_dist, args.pixel_size, args.bcx, args.bcy
        )
    except ValueError as exc:
        print(f"xpcsviewer qmap: {exc}", file=sys.stderr)
        return 2
    mask = read_mask(args.mask, shape) if args.mask else None
    if mask is not None and not mask.any():  # the file is at fault: name it
        from xpcsviewer.io.errors import XpcsFileError

        raise XpcsFileError(args.mask, "the mask marks no pixel valid (all zero)",
                            expected="nonzero values at the valid pixels")
    try:
        qm = make_partition(
            q,
            phi,
            mask,
            PartitionGrid(args.dq_num, args.sq_num, args.dp_num, args.sp_num),
            DetectorGeometry(beam_center_x=args.bcx, beam_center_y=args.bcy,
                             detector_distance=args.det_dist, pixel_size=args.pixel_size,
                             energy_kev=args.energy),
        )
    except ValueError as exc:
        print(f"xpcsviewer qmap: {exc}", file=sys.stderr)
        return 2
    problems = check_consistency(qm)
    if problems:  # a bug, not bad input: never write an inconsistent partition
        print(
            "xpcsviewer qmap: inconsistent partition: " + "; ".join(problems),
            file=sys.stderr,
        )
        return 1
    out = write_qmap_file(  # overwrite: check_output above applied the user's choice
        args.output, qm, source_file=str(args.mask or ""), overwrite=True
    )
    if not getattr(args, "quiet", False):
        print(
            f"wrote {out}: {qm.n_dynamic} dynamic and {qm.n_static} static bins, "
            f"q {qm.dynamic_q.min():.5f}-{qm.dynamic_q.max():.5f} 1/A"
        )
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``xpcsviewer qmap`` (called by :mod:`xpcsviewer.cli`)."""
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
