"""``xpcsviewer correlate RAW --qmap QMAP -o OUT.hdf``: raw frames to a result file.

Reads the partition (a pySimpleMask ``/qmap`` file or a result file's ``/xpcs/qmap``),
streams the raw frames through the multi-tau and/or two-time correlators with a
progress bar on stderr, and writes a complete result file atomically (q-map copied,
metadata, temporal/spatial means, multitau and/or twotime groups). With
``--mode both`` the raw file is read twice (once per correlator), which keeps the
memory of the multi-tau pass independent of the number of frames.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.io.errors import XpcsFileError

RAW_FRAME_TIME = "/entry/instrument/detector_1/frame_time"
RAW_COUNT_TIME = "/entry/instrument/detector_1/count_time"


def load_qmap(path: str | Path) -> Any:
    """QMap from a partition file (``/qmap``) or a result file (``/xpcs/qmap``)."""
    from xpcsviewer.io.reader import read_qmap

    return read_qmap(path)


def _raw_times(path: Path) -> tuple[float | None, float | None]:
    """frame_time / count_time stored beside HDF5 raw frames, if any."""
    if path.suffix.lower() == ".npy":
        return None, None
    import h5py

    try:
        with h5py.File(path, "r") as f:
            ft = float(np.asarray(f[RAW_FRAME_TIME]).ravel()[0]) if RAW_FRAME_TIME in f else None
            ct = float(np.asarray(f[RAW_COUNT_TIME]).ravel()[0]) if RAW_COUNT_TIME in f else None
            return ft, ct
    except (OSError, KeyError, ValueError, IndexError):
        return None, None


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer correlate``; returns the exit code."""
    from xpcsviewer.backends import get_job_backend
    from xpcsviewer.compute.pipeline import correlate_to_result
    from xpcsviewer.compute.twotime import parse_bins
    from xpcsviewer.io.raw import RawFrames
    from xpcsviewer.io.writer import write_result
    from xpcsviewer.progress import TextProgressBar

    quiet = bool(getattr(args, "quiet", False))
    raw_path = Path(args.raw)
    qm = load_qmap(args.qmap)
    try:
        raw = RawFrames(raw_path, args.begin_frame, args.end_frame, args.stride_frame, args.avg_frame)
    except ValueError as exc:
        print(f"xpcsviewer correlate: {exc}", file=sys.stderr)
        return 2
    with raw:
        if raw.frame_shape != qm.shape:
            raise XpcsFileError(
                raw_path, f"frames are {raw.frame_shape[0]}x{raw.frame_shape[1]} but the q-map "
                f"{args.qmap} is {qm.shape[0]}x{qm.shape[1]}", raw.dataset_path,
                "frames of the q-map's detector shape",
            )
        ft_raw, ct_raw = _raw_times(raw_path)
        frame_time = args.frame_time if args.frame_time is not None else ft_raw
        if frame_time is None:
            frame_time = 1.0
            if not quiet:
                print("xpcsviewer correlate: no --frame-time and none in the raw file; "
                      "using 1 s per frame (delays in frames)", file=sys.stderr)
        if not frame_time > 0:
            print("xpcsviewer correlate: --frame-time must be positive", file=sys.stderr)
            return 2
        if getattr(args, "num_partial_g2", 0) < 0:
            print("xpcsviewer correlate: --num-partial-g2 must be >= 0", file=sys.stderr)
            return 2
        mode = args.mode
        try:
            bins = parse_bins(args.dq, qm.n_dynamic) if mode in ("twotime", "both") else None
        except ValueError as exc:
            print(f"xpcsviewer correlate: --dq: {exc}", file=sys.stderr)
            return 2
        be = get_job_backend()  # NumPy when no accelerator is possible: JAX never loads
        n = raw.n_frames
        # the raw file's realpath goes into each config group (as the standard
        # correlator's config/raw)
        common_cfg = {**raw.describe(), "raw": os.path.realpath(raw_path), "backend": be.name}
        with TextProgressBar("correlate", enabled=not quiet) as bar:
            out_res = correlate_to_result(
                lambda: raw.iter_chunks(256 if mode == "twotime" else 128, reuse=True),
                qm,
                n,
                float(frame_time),
                mode=mode,
                dq_bins=bins,
                stride_frame=raw.stride,
                avg_frame=raw.avg,
                normalize_frame=bool(getattr(args, "normalize_frame", False)),
                num_partial_g2=int(getattr(args, "num_partial_g2", 0)),
                count_time=ct_raw,
                config=common_cfg,
                path=Path(args.output),
                raw_path=os.path.realpath(raw_path),
                backend=be,
                progress=bar,
            )
        result = out_res.result
        out = write_result(
            args.output, result, saxs_2d=out_res.saxs_2d, c2_maps=out_res.c2_maps, overwrite=True,
        )
    if not quiet:
        mt, tt = result.multitau, result.twotime
        parts = []
        if mt is not None:
            parts.append(f"multi-tau {mt.g2.shape[0]} delays x {mt.g2.shape[1]} bins")
        if tt is not None:
            parts.append(f"two-time {len(tt.processed_bins)} bins of {n}x{n}")
        print(f"wrote {out}: {n} frames, " + ", ".join(parts), file=sys.stderr)
    return 0
