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
import datetime as _dt
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
    from xpcsviewer.io import reader

    public = getattr(reader, "read_qmap", None)
    if public is not None:
        return public(path)
    warnings: list[str] = []
    with reader._open(path) as f:
        for base in ("/qmap", "/xpcs/qmap"):
            if base in f:
                return reader._read_qmap_nexus(f, base, warnings)
    raise XpcsFileError(path, "no partition found", "/qmap", "a /qmap or /xpcs/qmap group")


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


def _multitau_segments(n: int) -> int:
    # The standard correlator keeps one row per level-L buffer entry with the smallest
    # L such that N >> L <= 16; we write proper means for the same number of segments.
    level = 0
    while (n >> level) > 16:
        level += 1
    return max(1, n >> level)


def run(args: argparse.Namespace) -> int:
    """Handler of ``xpcsviewer correlate``; returns the exit code."""
    from xpcsviewer.backends import get_backend
    from xpcsviewer.compute.multitau import correlate_multitau
    from xpcsviewer.compute.twotime import correlate_twotime, parse_bins
    from xpcsviewer.io.model import Multitau, Twotime, XpcsResult
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
        mode = args.mode
        try:
            bins = parse_bins(args.dq, qm.n_dynamic) if mode in ("twotime", "both") else None
        except ValueError as exc:
            print(f"xpcsviewer correlate: --dq: {exc}", file=sys.stderr)
            return 2
        be = get_backend()
        n = raw.n_frames
        t0 = frame_time * raw.stride * raw.avg
        # the raw file's realpath goes into each config group (as the standard
        # correlator's config/raw); /xpcs/rawdata_path cannot be passed through
        # write_result's metadata today (it creates /xpcs before the writer does)
        common_cfg = {**raw.describe(), "raw": os.path.realpath(raw_path), "backend": be.name}
        mt = tt = None
        scat = None
        kw = dict(n_frames=n, n_dynamic=qm.n_dynamic, n_static=qm.n_static, backend=be)
        if mode in ("multitau", "both"):
            with TextProgressBar("multi-tau", enabled=not quiet) as bar:
                run_mt = correlate_multitau(
                    raw.iter_chunks(128), qm.dynamic_roi_map, qm.static_roi_map, qm.mask,
                    progress=bar, with_scattering=True, **kw,
                )
            r, scat = run_mt.multitau, run_mt.scattering
            cfg = {**common_cfg, **r.config, "analysis_type": "multitau"}
            g2 = np.nan_to_num(r.g2, nan=0.0)
            err = np.nan_to_num(r.g2_err, nan=0.0)
            mt = Multitau(
                delay_frames=r.delay_frames, tau=r.delay_frames * t0, g2=g2, g2_err=err,
                valid=np.isfinite(r.g2), t0_eff=t0, stride_frame=raw.stride, avg_frame=raw.avg,
                config=cfg,
            )
        if mode in ("twotime", "both"):
            with TextProgressBar("two-time", enabled=not quiet) as bar:
                run_tt = correlate_twotime(
                    raw.iter_chunks(256), qm.dynamic_roi_map, qm.static_roi_map, qm.mask,
                    dq_bins=bins, progress=bar, with_scattering=scat is None, **kw,
                )
            if scat is None:
                r2, scat = run_tt.twotime, run_tt.scattering
                segments = scat.saxs_1d_segments(10)
            else:
                r2 = run_tt
            tt_res = r2
            tt = Twotime(
                processed_bins=tt_res.processed_bins,
                map_names=[f"c2_{i + 1:05d}" for i in range(len(tt_res.processed_bins))],
                n_frames=n, t0=t0, g2_full=tt_res.g2_full.T,
                g2_segments=tt_res.g2_segments.transpose(2, 1, 0),
                stride_frame=raw.stride, avg_frame=raw.avg,
                config={**common_cfg, **tt_res.config, "analysis_type": "twotime"},
            )
        if mode != "twotime":
            segments = scat.saxs_1d_segments(_multitau_segments(scat.count))
        itime = scat.intensity_vs_time()
        result = XpcsResult(
            path=Path(args.output),
            analysis_type=tuple(a for a, x in (("Multitau", mt), ("Twotime", tt)) if x is not None),
            layout="nexus",
            qmap=qm,
            frame_time=float(frame_time),
            count_time=ct_raw,
            start_time=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            saxs_1d=np.nan_to_num(scat.saxs_1d(), nan=0.0),
            saxs_1d_segments=np.nan_to_num(segments, nan=0.0),
            intensity_vs_time=np.vstack([np.arange(itime.size, dtype=np.float64), itime]),
            multitau=mt,
            twotime=tt,
        )
        out = write_result(
            args.output, result, saxs_2d=scat.mean_image(),
            c2_maps=tt_res.c2 if tt is not None else None, overwrite=True,
        )
    if not quiet:
        parts = []
        if mt is not None:
            parts.append(f"multi-tau {mt.g2.shape[0]} delays x {mt.g2.shape[1]} bins")
        if tt is not None:
            parts.append(f"two-time {len(tt.processed_bins)} bins of {n}x{n}")
        print(f"wrote {out}: {n} frames, " + ", ".join(parts), file=sys.stderr)
    return 0
