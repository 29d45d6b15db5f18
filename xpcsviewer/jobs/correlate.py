"""Correlate one raw-frame file into a result file (read -> correlate -> write, atomic).

The file job behind ``xpcsviewer correlate`` (one file, or one batch task per file
through :mod:`xpcsviewer.batch`): reads the partition (a pySimpleMask ``/qmap`` file or
a result file's ``/xpcs/qmap``), streams the raw frames through the multi-tau and/or
two-time correlators and writes a complete result file atomically. With ``--mode both``
the raw file is read twice (once per correlator), which keeps the memory of the
multi-tau pass independent of the number of frames.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.outputs import OutputRefusedError, check_output
from xpcsviewer.jobs._correlate_ages import AGES_DEFAULT_POINTS, ages_problem, run_age_lag
from xpcsviewer.jobs._correlate_route import plan_engine
from xpcsviewer.jobs._correlate_sparse import (
    NonFiniteCount,
    checked_events,
    nonfinite_event_pixels,
    plan_path,
    scattering_group,
)

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
    from xpcsviewer.io.raw import file_kind

    if file_kind(path) != "hdf5":
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


class _Masked:
    """Pixels left out for non-finite counts; ``strict``: stop at a new one."""

    def __init__(self, shape: tuple[int, int]) -> None:
        self.pixels = np.zeros(shape, dtype=bool)
        self.strict = True


def _checked_chunks(chunks: Any, used: np.ndarray, raw: Any, notes: list[str],
                    masked_px: _Masked | None = None) -> Any:
    """Pass frames through, refusing negative counts at pixels the q-map uses.

    Photon counts cannot be negative. Detectors mark dead pixels with negative
    values; where the q-map masks those pixels the values are set to 0 (with a
    note), elsewhere the frames are refused. NaN and Inf are set to 0; at a pixel
    the correlation uses (``used``) they first stop the pass (:class:`NonFiniteCount`)
    so that the pixel can be masked: one NaN would make every g2 point missing.
    """
    masked = 0
    start = 0
    for chunk in chunks:
        if chunk.dtype.kind == "f":
            nf = ~np.isfinite(chunk)
            if nf.any():
                px = nf.any(axis=0)
                if (masked_px is not None and masked_px.strict
                        and (px & used & ~masked_px.pixels).any()):
                    raise NonFiniteCount
                chunk = np.where(nf, 0, chunk)
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


def _nonfinite_pixels(raw: Any, bar: Any) -> np.ndarray:
    """(H, W) bool: pixels with a NaN or Inf count in any selected frame (reads only)."""
    bad = np.zeros(raw.frame_shape, dtype=bool)
    done = 0
    for chunk in raw.iter_chunks(128, reuse=True):
        bad |= ~np.isfinite(chunk).all(axis=0)
        done += chunk.shape[0]
        bar(done, raw.n_frames, "finding NaN/Inf pixels")
    return bad


def _qmap_mask_dataset(path: str | Path) -> str:
    """The mask dataset of a partition file (``/qmap``) or result file (``/xpcs/qmap``)."""
    import h5py

    try:
        from xpcsviewer.io._h5links import pointers_ok

        with h5py.File(path, "r", locking=False) as f:  # a link to a FIFO: no lookup
            if pointers_ok(f) and "qmap" not in f and "xpcs/qmap" in f:
                return "/xpcs/qmap/mask"
    except (OSError, ValueError):
        pass
    return "/qmap/mask"


def _correlated(qm: Any) -> np.ndarray:
    """(H, W) bool: the pixels a correlation with this partition uses."""
    return ((np.asarray(qm.mask) > 0) & (np.asarray(qm.dynamic_roi_map) > 0)
            & (np.asarray(qm.static_roi_map) > 0))


def _g2_side(args: argparse.Namespace, raw: str, output: str, check: bool = True) -> Path | None:
    """The per-pixel G2 side file of ``--save-g2-pixel`` (checked like the output)."""
    if not getattr(args, "save_g2_pixel", False):
        return None
    from xpcsviewer.io.g2stack import g2_side_path

    if args.mode == "twotime":
        raise OutputRefusedError("--save-g2-pixel needs --mode multitau or both "
                                 "(the stack comes from the multi-tau pass)")
    side = g2_side_path(output)
    if check:
        # the old result beside it is replaced too: its link to the side file does
        # not count; any other result's does (issue 34)
        check_output(side, [raw, args.qmap], getattr(args, "overwrite", False),
                     replacing=[output])
    return side


def _stack_writer(side: Path | None, n_frames: int, shape: tuple[int, int]) -> Any:
    """The side file's writer (atomic), or a no-op context without one."""
    if side is None:
        return contextlib.nullcontext(None)
    from xpcsviewer.compute.multitau import delay_list
    from xpcsviewer.io.g2stack import open_g2_stack_writer

    return open_g2_stack_writer(side, delay_list(n_frames)[0].size, shape, overwrite=True)


def correlate_one(
    args: argparse.Namespace, raw_arg: str, output: str, *, quiet: bool,
    say: Any, progress: bool = True, checked: bool = False,
) -> int:
    """Correlate one RAW into ``output`` (atomic); messages go to ``say(text)``.

    ``checked``: the output rule was already applied by the caller (a batch).
    Returns 0, or 1/2 after saying why; bad input data raises XpcsFileError.
    """
    from xpcsviewer.backends import current_config, get_backend
    from xpcsviewer.compute.pipeline import correlate_to_result
    from xpcsviewer.compute.pipeline_sparse import correlate_events_to_result
    from xpcsviewer.compute.twotime import parse_bins
    from xpcsviewer.io.raw import MIN_FRAMES, open_raw_source
    from xpcsviewer.io.writer import write_result
    from xpcsviewer.progress import TextProgressBar

    raw_path = Path(raw_arg)
    if not checked:
        check_output(output, [raw_arg, args.qmap], getattr(args, "overwrite", False))
    side = _g2_side(args, raw_arg, output, check=not checked)
    qm = load_qmap(args.qmap)
    if not _correlated(qm).any():  # all-zero mask, or no pixel in both kinds of bins
        raise XpcsFileError(args.qmap, "the mask leaves no pixel inside the q-bins",
                            _qmap_mask_dataset(args.qmap),
                            "nonzero (valid) mask values where the bins are")
    bin_time = getattr(args, "bin_time", None)
    if bin_time is not None and not (bin_time > 0 and math.isfinite(bin_time)):
        say(f"xpcsviewer correlate: --bin-time must be a positive finite number (got {bin_time})")
        return 2
    try:
        raw = open_raw_source(raw_path, shape=qm.shape, bin_time=bin_time,
                              begin=args.begin_frame, end=args.end_frame,
                              stride=args.stride_frame, avg=args.avg_frame)
    except ValueError as exc:
        say(f"xpcsviewer correlate: {exc}")
        return 2
    with raw:
        if raw.n_frames < MIN_FRAMES:  # multi-tau and two-time alike: no delay
            raise XpcsFileError(
                raw_path, f"frame selection begin={args.begin_frame} end={args.end_frame} "
                f"stride={args.stride_frame} avg={args.avg_frame} leaves {raw.n_frames} "
                f"frame of {raw.raw_frames}", raw.dataset_path,
                f"at least {MIN_FRAMES} frames to correlate")
        if raw.frame_shape != qm.shape:
            raise XpcsFileError(
                raw_path, f"frames are {raw.frame_shape[0]}x{raw.frame_shape[1]} but the q-map "
                f"{args.qmap} is {qm.shape[0]}x{qm.shape[1]}", raw.dataset_path,
                "frames of the q-map's detector shape",
            )
        if args.frame_time is not None and not (
            args.frame_time > 0 and math.isfinite(args.frame_time)
        ):
            say("xpcsviewer correlate: --frame-time must be a positive finite number "
                f"(got {args.frame_time})")
            return 2
        sparse = bool(getattr(raw, "sparse", False))
        ft_raw, ct_raw = (raw.frame_time, raw.count_time) if sparse else _raw_times(raw_path)
        frame_time = args.frame_time if args.frame_time is not None else ft_raw
        if frame_time is None:
            frame_time = 1.0
            if not quiet:
                say("xpcsviewer correlate: no --frame-time and none in the raw file; "
                    "using 1 s per frame (delays in frames)")
        if getattr(args, "num_partial_g2", 0) < 0:
            say("xpcsviewer correlate: --num-partial-g2 must be >= 0")
            return 2
        mode = args.mode
        try:
            bins = parse_bins(args.dq, qm.n_dynamic) if mode in ("twotime", "both") else None
        except ValueError as exc:
            say(f"xpcsviewer correlate: --dq: {exc}")
            return 2
        ages = bool(getattr(args, "twotime_ages", False))
        ages_points = int(getattr(args, "twotime_ages_points", AGES_DEFAULT_POINTS))
        if ages:
            problem = ages_problem(raw, ages_points)
            if problem:
                say(f"xpcsviewer correlate: {problem}")
                return 2
            ages_bins = parse_bins(args.dq, qm.n_dynamic)
        n = raw.n_frames
        try:
            choice = plan_path(getattr(args, "path", "auto"), raw, qm, mode, bins)
        except ValueError as exc:
            say(f"xpcsviewer correlate: {exc}")
            return 2
        group = scattering_group(raw)
        need, have = _memory_needed(-(-n // group), qm, mode, 0 if bins is None else len(bins)), \
            _memory_available()
        if ages:
            from xpcsviewer.compute.twotime_ages import age_lag_bytes

            need += age_lag_bytes(n, ages_points, len(ages_bins))
        if have is not None and need > have:
            say(f"xpcsviewer correlate: {n} frames need about {need / 2**30:.1f} GiB, "
                f"{have / 2**30:.1f} GiB are available; correlate fewer frames "
                "(--end-frame, --stride-frame, --avg-frame)")
            return 1
        # The device by the job's estimated cost, decided before JAX loads: a job on
        # the CPU runs the compiled kernels on the NumPy backend (no JAX, no GPU
        # started for nothing); the photon path is a CPU engine.
        itemsize = np.dtype(getattr(raw, "out_dtype", np.dtype(np.uint16))).itemsize
        plan = plan_engine(getattr(args, "engine", "auto"), current_config().device, mode,
                           qm, n, itemsize * qm.shape[0] * qm.shape[1], bins,
                           photons=choice.path == "sparse")
        be = get_backend("jax") if plan.needs_jax else get_backend("numpy")
        if verbose_route(args, quiet):
            say(f"xpcsviewer correlate: {plan.describe()}")
        used = (np.asarray(qm.dynamic_roi_map) > 0) | (np.asarray(qm.static_roi_map) > 0)
        notes: list[str] = []
        # the raw file's realpath goes into each config group (as the standard
        # correlator's config/raw)
        common_cfg = {**raw.describe(), "raw": os.path.realpath(raw_path), "backend": be.name,
                      **plan.as_config()}
        if sparse:
            common_cfg.update(choice.as_config())
            common_cfg["raw_events"] = int(raw.n_events)
            if getattr(raw, "time_tag", False):
                common_cfg.update(time_tag=True, tick_s=float(raw.tick_s))
        photons = choice.path == "sparse"
        n_groups, group_tile, problem = groups_options(args, mode, photons, n)
        if problem:
            say(f"xpcsviewer correlate: {problem}")
            return 2
        full_groups = n_groups if mode in ("twotime", "both") else 0
        if n_groups and have is not None:
            from xpcsviewer.compute.twotime_ages_groups import group_age_lag_bytes
            from xpcsviewer.compute.twotime_groups import group_maps_bytes

            more = group_maps_bytes(n, full_groups, len(bins)) if full_groups else 0
            if ages:
                more += group_age_lag_bytes(n, ages_points, len(ages_bins), n_groups)
            if need + more > have:
                say(f"xpcsviewer correlate: {n} frames with {n_groups} pixel groups need about "
                    f"{(need + more) / 2**30:.1f} GiB, {have / 2**30:.1f} GiB are available; "
                    "fewer frames, bins (--dq) or groups")
                return 1
        nonfinite = _Masked(qm.shape)
        in_use = used & (np.asarray(qm.mask) > 0)  # the pixels a NaN would spoil
        with TextProgressBar("correlate", enabled=progress and not quiet) as bar:
            while True:
                qm_run = qm
                if nonfinite.pixels.any():
                    qm_run = dataclasses.replace(
                        qm, mask=np.asarray(qm.mask, bool) & ~nonfinite.pixels, hash="")
                use = used & (np.asarray(qm_run.mask) > 0)
                try:
                    with _stack_writer(side, n, qm.shape) as sink:
                        if photons:
                            out_res = correlate_events_to_result(
                                lambda use=use: checked_events(
                                    raw.iter_events(), use.ravel(), raw, notes, nonfinite),
                                qm_run, n, float(frame_time), mode=mode, dq_bins=bins,
                                stride_frame=raw.stride, avg_frame=raw.avg,
                                normalize_frame=bool(getattr(args, "normalize_frame", False)),
                                num_partial_g2=int(getattr(args, "num_partial_g2", 0)),
                                count_time=ct_raw, config=common_cfg, path=Path(output),
                                raw_path=os.path.realpath(raw_path), progress=bar,
                                g2_pixel_sink=sink, scattering_group=group)
                            break
                        out_res = correlate_to_result(
                            lambda use=use: _checked_chunks(
                                raw.iter_chunks(256 if mode == "twotime" else 128,
                                                reuse=True), use, raw, notes, nonfinite,
                            ),
                            qm_run,
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
                            path=Path(output),
                            raw_path=os.path.realpath(raw_path),
                            backend=be,
                            device=plan.device,
                            engine=plan.engine,
                            progress=bar,
                            g2_pixel_sink=sink,
                            twotime_groups=full_groups,
                            twotime_group_tile=group_tile,
                        )
                    break
                except NonFiniteCount:
                    # Find every such pixel (a read-only pass), then correlate without them.
                    found = nonfinite_event_pixels(raw, bar) if photons else \
                        _nonfinite_pixels(raw, bar)
                    nonfinite.pixels |= found & in_use
                    nonfinite.strict = False
                    left = _correlated(qm) & ~nonfinite.pixels
                    if not left.any():
                        raise XpcsFileError(
                            raw_path, "NaN or Inf counts at every pixel the q-map uses",
                            raw.dataset_path, "finite counts") from None
        age_lag = None
        if ages:
            use = used & (np.asarray(qm_run.mask) > 0)
            age_lag = run_age_lag(
                qm_run, n, float(frame_time) * raw.stride * raw.avg, ages_bins, ages_points,
                photons=photons, progress=bar,
                chunks=lambda: _checked_chunks(raw.iter_chunks(256, reuse=True), use, raw,
                                               notes, nonfinite),
                events=lambda: checked_events(raw.iter_events(), use.ravel(), raw, notes,
                                              nonfinite),
                n_groups=n_groups, group_tile=group_tile)
        if nonfinite.pixels.any():
            k = int(nonfinite.pixels.sum())
            notes.append(f"{k} pixel(s) with NaN or Inf counts were masked "
                         f"(of {int(in_use.sum())} the q-map uses)")
        result = out_res.result
        # overwrite: check_output above already applied the user's choice
        try:
            out = write_result(
                output, result, saxs_2d=out_res.saxs_2d, c2_maps=out_res.c2_maps,
                overwrite=True, g2_stack_file=None if side is None else side.name,
                age_lag=None if age_lag is None else age_lag[0],
                twotime_groups=getattr(out_res, "twotime_groups", None),
                age_lag_groups=None if age_lag is None else age_lag[1],
            )
        except BaseException:
            if side is not None:  # no side file without its result
                side.unlink(missing_ok=True)
            raise
    for note in dict.fromkeys(notes):
        say(f"xpcsviewer correlate: note: {note}")
    if not quiet:
        mt, tt = result.multitau, result.twotime
        parts = []
        if mt is not None:
            parts.append(f"multi-tau {mt.g2.shape[0]} delays x {mt.g2.shape[1]} bins")
        if tt is not None:
            parts.append(f"two-time {len(tt.processed_bins)} bins of {n}x{n}")
        if age_lag is not None:
            parts.append(f"age x lag map {len(age_lag[0].bins)} bins, "
                         f"{len(age_lag[0].levels)} levels"
                         + (f", {n_groups} pixel groups" if age_lag[1] is not None else ""))
        if sparse:
            parts.append(f"{choice.path} path ({choice.reason})")
        say(f"wrote {out}: {n} frames, " + ", ".join(parts))
    return 0


def groups_options(args: argparse.Namespace, mode: str, photons: bool,
                   n_frames: int) -> tuple[int, int, str | None]:
    """``--twotime-groups K`` and ``--group-tile PX`` checked: (K, PX, None), K = 0 for
    none, or (0, PX, why they cannot be used). K applies to the full maps (``--mode
    twotime`` or ``both``: dense frames, at most MAX_GROUP_FRAMES) and to the age x lag
    map (``--twotime-ages``: any length, dense or photons)."""
    from xpcsviewer.compute.twotime_groups import MAX_GROUP_FRAMES

    k = int(getattr(args, "twotime_groups", 0) or 0)
    tile = int(getattr(args, "group_tile", 8) or 8)
    full = mode in ("twotime", "both")
    problem = None
    if k < 0 or tile < 1:
        problem = f"--twotime-groups {k} --group-tile {tile}: need K >= 0 and PX >= 1"
    elif k and not full and not getattr(args, "twotime_ages", False):
        problem = "--twotime-groups needs --mode twotime or both, or --twotime-ages"
    elif k and full and photons:
        problem = ("--twotime-groups: full maps not on the photon-sparse path (use --path "
                   "dense, or --mode multitau --twotime-ages)")
    elif k and full and n_frames > MAX_GROUP_FRAMES:
        problem = (f"--twotime-groups: full maps of at most {MAX_GROUP_FRAMES} frames, got "
                   f"{n_frames} (--end-frame, --stride-frame, --avg-frame; or --mode "
                   "multitau --twotime-ages: age x lag group maps of any length)")
    return (0, tile, problem) if problem else (k, tile, None)


def verbose_route(args: argparse.Namespace, quiet: bool) -> bool:
    """Say the route when asked for (-v) or when a GPU or the XLA engine is involved."""
    return not quiet and (bool(getattr(args, "verbose", False))
                          or getattr(args, "engine", "auto") != "auto"
                          or getattr(args, "device", None) not in (None, "auto"))


def output_name(raw: str | Path) -> str:
    """``RAWNAME_results.hdf``: the output of one RAW in a batch's folder."""
    name = Path(raw).name
    if re.search(r"\.00[0-5]$", name):  # a Rigaku 3M module file stands for the set
        name = name[:-4]
    for suffix in (".h5", ".hdf5", ".hdf", ".nxs", ".npy", ".bin"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    return f"{name}_results.hdf"


def output_complete(output: str | Path, mode: str, side: Path | None = None,
                    ages: bool = False) -> bool:
    """True when ``output`` is a readable result with what ``mode`` writes (and, with
    ``ages``, an age x lag map).

    Outputs are written atomically, so one at its final name is complete unless
    something else wrote it; this checks that it reads as a result of the mode.
    """
    from xpcsviewer.io.reader import read_result

    if not Path(output).is_file() or (side is not None and not side.is_file()):
        return False
    try:
        res = read_result(output)
    except (XpcsFileError, OSError):
        return False
    if mode in ("multitau", "both") and res.multitau is None:
        return False
    if ages:
        from xpcsviewer.io._h5 import open_h5
        from xpcsviewer.io.age_lag import has_age_lag

        try:
            with open_h5(output) as f:
                if not has_age_lag(f):
                    return False
        except (XpcsFileError, OSError):
            return False
    return not (mode in ("twotime", "both") and res.twotime is None)


def correlate_task(options: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    """One RAW of a batch (any worker): ``{"output", "bytes", "notes", "skipped"}``.

    Raises
    ------
    XpcsFileError
        Bad raw frames; ValueError for options this file cannot take.
    """
    args = argparse.Namespace(**options)
    out = item["output"]
    side = _g2_side(args, item["path"], out, check=False)
    if options.get("skip_existing") and Path(out).exists():
        if output_complete(out, args.mode, side, bool(getattr(args, "twotime_ages", False))):
            return {"output": out, "bytes": os.path.getsize(out), "notes": [],
                    "skipped": True}
        if not options.get("overwrite"):
            raise OutputRefusedError(
                f"{item['shown_output']}: exists but is not a complete result of this "
                "mode; refusing to replace it (use --overwrite)")
    notes: list[str] = []
    code = correlate_one(args, item["path"], out, quiet=True, say=notes.append,
                         progress=False, checked=True)
    if code:
        raise ValueError("; ".join(n.removeprefix("xpcsviewer correlate: ") for n in notes))
    return {"output": out, "bytes": os.path.getsize(out), "notes": notes, "skipped": False}
