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
import contextlib
import math
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.outputs import OutputRefusedError, check_output

RAW_FRAME_TIME = "/entry/instrument/detector_1/frame_time"
RAW_COUNT_TIME = "/entry/instrument/detector_1/count_time"


def load_qmap(path: str | Path) -> Any:
    """QMap from a partition file (``/qmap``) or a result file (``/xpcs/qmap``)."""
    from xpcsviewer.io.reader import read_qmap

    return read_qmap(path)


def _raw_times(path: Path) -> tuple[float | None, float | None]:
    """frame_time / count_time stored beside HDF5 raw frames, if any.

    Raises
    ------
    XpcsFileError
        A stored time that is not a positive finite number (names the dataset).
    """
    if path.suffix.lower() == ".npy":
        return None, None
    from xpcsviewer.io._h5 import _number, open_h5

    with open_h5(path) as f:
        return (
            _number(f, RAW_FRAME_TIME, required=False, positive=True),
            _number(f, RAW_COUNT_TIME, required=False, positive=True),
        )


def _memory_needed(n: int, qm: Any, mode: str, n_bins: int) -> int:
    """Bytes the correlators hold that grow with the number of frames (an estimate)."""
    need = 0
    if mode in ("multitau", "both"):
        need += n * (qm.n_static + 2) * 8  # per-frame static sums and intensity
    if mode in ("twotime", "both"):
        need += 2 * n * n * 8 + n * max(n_bins, 1) * 8  # one map and its accumulator
    return need


def _memory_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _checked_chunks(chunks: Any, used: np.ndarray, raw: Any, notes: list[str]) -> Any:
    """Pass frames through, refusing negative counts at pixels the q-map uses.

    Photon counts cannot be negative. Detectors mark dead pixels with negative
    values; where the q-map masks those pixels the values are set to 0 (with a
    note), elsewhere the frames are refused.
    """
    masked = 0
    start = 0
    for chunk in chunks:
        if chunk.dtype.kind in "if":
            neg = chunk < 0
            if neg.any():
                bad = neg & used
                if bad.any():
                    k, r, c = (int(v[0]) for v in np.nonzero(bad))
                    raise XpcsFileError(
                        raw.path,
                        f"negative counts ({chunk[k, r, c]!r} in processed frame "
                        f"{start + k} at pixel ({r}, {c})) where the q-map uses the pixel",
                        raw.dataset_path,
                        "counts >= 0 (or mask those pixels in the q-map)",
                    )
                chunk = np.where(neg, 0, chunk)
                masked += int(neg.sum())
        start += chunk.shape[0]
        yield chunk
    if masked:
        notes.append(f"{masked} negative counts at masked pixels were set to 0")


def _g2_side(args: argparse.Namespace) -> Path | None:
    """The per-pixel G2 side file of ``--save-g2-pixel`` (checked like the output)."""
    if not getattr(args, "save_g2_pixel", False):
        return None
    from xpcsviewer.io.g2stack import g2_side_path

    if args.mode == "twotime":
        raise OutputRefusedError("--save-g2-pixel needs --mode multitau or both "
                                 "(the stack comes from the multi-tau pass)")
    side = g2_side_path(args.output)
    check_output(side, [args.raw, args.qmap], getattr(args, "overwrite", False))
    return side


def _stack_writer(side: Path | None, n_frames: int, shape: tuple[int, int]) -> Any:
    """The side file's writer (atomic), or a no-op context without one."""
    if side is None:
        return contextlib.nullcontext(None)
    from xpcsviewer.compute.multitau import delay_list
    from xpcsviewer.io.g2stack import open_g2_stack_writer

    return open_g2_stack_writer(side, delay_list(n_frames)[0].size, shape, overwrite=True)


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
    check_output(args.output, [args.raw, args.qmap], getattr(args, "overwrite", False))
    side = _g2_side(args)
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
        if args.frame_time is not None and not (
            args.frame_time > 0 and math.isfinite(args.frame_time)
        ):
            print("xpcsviewer correlate: --frame-time must be a positive finite number "
                  f"(got {args.frame_time})", file=sys.stderr)
            return 2
        ft_raw, ct_raw = _raw_times(raw_path)
        frame_time = args.frame_time if args.frame_time is not None else ft_raw
        if frame_time is None:
            frame_time = 1.0
            if not quiet:
                print("xpcsviewer correlate: no --frame-time and none in the raw file; "
                      "using 1 s per frame (delays in frames)", file=sys.stderr)
        if getattr(args, "num_partial_g2", 0) < 0:
            print("xpcsviewer correlate: --num-partial-g2 must be >= 0", file=sys.stderr)
            return 2
        mode = args.mode
        try:
            bins = parse_bins(args.dq, qm.n_dynamic) if mode in ("twotime", "both") else None
        except ValueError as exc:
            print(f"xpcsviewer correlate: --dq: {exc}", file=sys.stderr)
            return 2
        n = raw.n_frames
        need, have = _memory_needed(n, qm, mode, 0 if bins is None else len(bins)), \
            _memory_available()
        if have is not None and need > have:
            print(f"xpcsviewer correlate: {n} frames need about {need / 2**30:.1f} GiB, "
                  f"{have / 2**30:.1f} GiB are available; correlate fewer frames "
                  "(--end-frame, --stride-frame, --avg-frame)", file=sys.stderr)
            return 1
        be = get_job_backend()  # NumPy when no accelerator is possible: JAX never loads
        used = (np.asarray(qm.dynamic_roi_map) > 0) | (np.asarray(qm.static_roi_map) > 0)
        notes: list[str] = []
        # the raw file's realpath goes into each config group (as the standard
        # correlator's config/raw)
        common_cfg = {**raw.describe(), "raw": os.path.realpath(raw_path), "backend": be.name}
        with TextProgressBar("correlate", enabled=not quiet) as bar, _stack_writer(
            side, n, qm.shape
        ) as sink:
            out_res = correlate_to_result(
                lambda: _checked_chunks(
                    raw.iter_chunks(256 if mode == "twotime" else 128, reuse=True), used,
                    raw, notes,
                ),
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
                g2_pixel_sink=sink,
            )
        result = out_res.result
        # overwrite: check_output above already applied the user's choice
        try:
            out = write_result(
                args.output, result, saxs_2d=out_res.saxs_2d, c2_maps=out_res.c2_maps,
                overwrite=True, g2_stack_file=None if side is None else side.name,
            )
        except BaseException:
            if side is not None:  # no side file without its result
                side.unlink(missing_ok=True)
            raise
    for note in dict.fromkeys(notes):
        print(f"xpcsviewer correlate: note: {note}", file=sys.stderr)
    if not quiet:
        mt, tt = result.multitau, result.twotime
        parts = []
        if mt is not None:
            parts.append(f"multi-tau {mt.g2.shape[0]} delays x {mt.g2.shape[1]} bins")
        if tt is not None:
            parts.append(f"two-time {len(tt.processed_bins)} bins of {n}x{n}")
        print(f"wrote {out}: {n} frames, " + ", ".join(parts), file=sys.stderr)
    return 0
