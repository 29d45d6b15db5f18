"""Correlate one raw source into a result file (read -> correlate -> write, atomic).

The one correlation job (issue 44): :func:`correlate_file` takes a frozen
:class:`CorrelateJob` (raw, q-map, output, :class:`~xpcsviewer.compute.spec.CorrelateSpec`,
:class:`~xpcsviewer.compute.spec.PlanRequest`, overwrite) and returns a
:class:`CorrelateOutcome`; it raises typed errors and prints nothing. ``xpcsviewer
correlate`` builds the job from its flags, the batch from its task, the window from its
form; all get the same plan (:mod:`xpcsviewer.jobs.correlate_plan`) and the same file.
With ``--mode both`` the raw file is read twice (once per correlator), which keeps the
memory of the multi-tau pass independent of the number of frames.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.compute.spec import CorrelateSpec, PlanRequest, SpecError
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.outputs import check_output
from xpcsviewer.jobs._correlate_ages import run_age_lag
from xpcsviewer.jobs._correlate_counts import (
    Masked,
    NonFiniteCount,
    checked_chunks,
    checked_events,
    nonfinite_event_pixels,
    nonfinite_pixels,
)
from xpcsviewer.jobs._correlate_inputs import correlated, load_qmap, qmap_mask_dataset, raw_times
from xpcsviewer.jobs.correlate_plan import CorrelatePlan, MemoryRefused, plan_correlate

__all__ = ["CorrelateJob", "CorrelateOutcome", "MemoryRefused", "SpecError", "check_outputs",
           "correlate_file", "load_qmap"]

@dataclasses.dataclass(frozen=True)
class CorrelateJob:
    """One correlation: what to read, what to compute, where to write.

    ``output_checked``: the output rule was already applied (a batch checks every output
    before it starts). ``mask``: a mask file (:func:`~xpcsviewer.io.masks.read_mask`,
    nonzero = valid) combined with the q-map's mask by AND; None: the q-map's alone.
    """

    raw: Path
    qmap: Path
    output: Path
    spec: CorrelateSpec = dataclasses.field(default_factory=CorrelateSpec)
    request: PlanRequest = dataclasses.field(default_factory=PlanRequest)
    overwrite: bool = False
    output_checked: bool = False
    mask: Path | None = None

    def __post_init__(self) -> None:
        for name in ("raw", "qmap", "output"):
            object.__setattr__(self, name, Path(getattr(self, name)))
        if self.mask is not None:
            object.__setattr__(self, "mask", Path(self.mask))

    @property
    def side(self) -> Path | None:
        """The per-pixel G2 side file (``save_g2_pixel``), else None."""
        if not self.spec.save_g2_pixel:
            return None
        from xpcsviewer.io.results.g2stack import g2_side_path

        return g2_side_path(self.output)


@dataclasses.dataclass(frozen=True)
class CorrelateOutcome:
    """What a job did: the file written, the plan it ran, the frames, the notes (one
    line each, without a prefix) and a summary line of what the file holds."""

    output: Path
    plan: CorrelatePlan
    n_frames: int
    notes: tuple[str, ...]
    summary: str
    result: Any = None


def _stack_writer(side: Path | None, n_frames: int, shape: tuple[int, int]) -> Any:
    """The side file's writer (atomic), or a no-op context without one."""
    if side is None:
        return contextlib.nullcontext(None)
    from xpcsviewer.compute.multitau.correlator import delay_list
    from xpcsviewer.io.results.g2stack import open_g2_stack_writer

    return open_g2_stack_writer(side, delay_list(n_frames)[0].size, shape, overwrite=True)


def check_outputs(job: CorrelateJob) -> None:
    """The output rule for the result and its side file (before anything is read).

    Raises
    ------
    OutputRefusedError
    """
    inputs = [job.raw, job.qmap, *([job.mask] if job.mask is not None else [])]
    check_output(job.output, inputs, job.overwrite)
    if job.side is not None:
        # the old result beside it is replaced too: its link to the side file does
        # not count; any other result's does (issue 34)
        check_output(job.side, inputs, job.overwrite, replacing=[job.output])


def correlate_file(job: CorrelateJob, *, progress: Any = None, cancel: Any = None,
                   inform: Callable[[str], None] | None = None) -> CorrelateOutcome:
    """Correlate ``job.raw`` into ``job.output`` (atomic).

    ``progress(done, total, message)`` and ``cancel`` go to every pass; ``inform(text)``
    receives what the user should know before the run (the plan when it is worth saying,
    an assumed frame time).

    Raises
    ------
    SpecError
        A setting this source or q-map cannot take (exit 2).
    MemoryRefused
        More memory needed than is free (exit 1).
    OutputRefusedError
        The output rule (exit 2).
    XpcsFileError
        Bad input data, naming the file and dataset (exit 3).
    """
    from xpcsviewer.backends import current_config
    from xpcsviewer.io.raw import MIN_FRAMES, open_raw_source

    spec = job.spec
    if not job.output_checked:
        check_outputs(job)
    qm = load_qmap(job.qmap)
    if not correlated(qm).any():  # all-zero mask, or no pixel in both kinds of bins
        raise XpcsFileError(job.qmap, "the mask leaves no pixel inside the q-bins",
                            qmap_mask_dataset(job.qmap),
                            "nonzero (valid) mask values where the bins are")
    qm, mask_config = _with_mask_file(job, qm)
    sel = spec.frames
    try:
        raw = open_raw_source(job.raw, shape=qm.shape, bin_time=spec.bin_time,
                              begin=sel.begin, end=sel.end, stride=sel.stride, avg=sel.avg,
                              exclude=sel.exclude)
    except SpecError:
        raise
    except ValueError as exc:
        raise SpecError(str(exc)) from None
    with raw:
        if raw.n_frames < MIN_FRAMES:  # multi-tau and two-time alike: no delay
            raise XpcsFileError(
                job.raw, f"frame selection {sel.describe()} leaves {raw.n_frames} "
                f"frame of {raw.raw_frames}", raw.dataset_path,
                f"at least {MIN_FRAMES} frames to correlate")
        if raw.frame_shape != qm.shape:
            raise XpcsFileError(
                job.raw, f"frames are {raw.frame_shape[0]}x{raw.frame_shape[1]} but the "
                f"q-map {job.qmap} is {qm.shape[0]}x{qm.shape[1]}", raw.dataset_path,
                "frames of the q-map's detector shape",
            )
        plan = plan_correlate(raw, qm, spec, job.request, device=current_config().device)
        return _run(job, raw, qm, plan, progress, cancel, inform, mask_config)


def _with_mask_file(job: CorrelateJob, qm: Any) -> tuple[Any, dict[str, Any]]:
    """The q-map with ``job.mask`` ANDed into its mask, and the config keys that say so
    (the file and the pixels it removed from the q-map's own mask).

    Raises
    ------
    XpcsFileError
        An unreadable mask, one not of the q-map's detector shape, or one that leaves no
        pixel inside the q-bins (naming the mask file).
    """
    if job.mask is None:
        return qm, {}
    from xpcsviewer.io.masks import read_mask

    try:
        user = read_mask(job.mask, shape=qm.shape)
    except XpcsFileError as exc:
        if exc.expected and "detector shape" in exc.expected:
            raise XpcsFileError(job.mask, exc.problem, exc.dataset,
                                f"the detector shape of the q-map {job.qmap.name}, "
                                f"{qm.shape[0]}x{qm.shape[1]}") from None
        raise
    own = np.asarray(qm.mask) > 0
    removed = int((own & ~user).sum())
    qm = dataclasses.replace(qm, mask=own & user, hash="")
    if not correlated(qm).any():
        raise XpcsFileError(job.mask, f"the mask leaves no pixel inside the q-bins of "
                            f"{job.qmap.name}", None,
                            "valid (nonzero) pixels where the q-map's bins are")
    return qm, {"mask_file": os.path.realpath(job.mask), "mask_removed_pixels": removed}


def _frame_time(job: CorrelateJob, raw: Any, inform: Any) -> tuple[float, float | None]:
    """(seconds per raw frame, count time): the spec's, else the raw file's, else 1 s."""
    sparse = bool(getattr(raw, "sparse", False))
    ft_raw, ct_raw = (raw.frame_time, raw.count_time) if sparse else raw_times(job.raw)
    frame_time = job.spec.frame_time if job.spec.frame_time is not None else ft_raw
    if frame_time is None:
        frame_time = 1.0
        if inform is not None:
            inform("no --frame-time and none in the raw file; using 1 s per frame "
                   "(delays in frames)")
    return float(frame_time), ct_raw


def _run(job: CorrelateJob, raw: Any, qm: Any, plan: CorrelatePlan, progress: Any,
         cancel: Any, inform: Any, mask_config: dict[str, Any]) -> CorrelateOutcome:
    """The passes and the write of a planned job on an opened source."""
    from xpcsviewer.compute.pipeline import FrameStream, ResultRecord, correlate_to_result
    from xpcsviewer.compute.pipeline_sparse import correlate_events_to_result
    from xpcsviewer.io.results.writer import write_result

    spec, side, n = job.spec, job.side, raw.n_frames
    frame_time, count_time = _frame_time(job, raw, inform)
    if plan.said and inform is not None:
        inform(plan.describe())
    used = (np.asarray(qm.dynamic_roi_map) > 0) | (np.asarray(qm.static_roi_map) > 0)
    notes: list[str] = []
    # the raw file's realpath goes into each config group (as the standard
    # correlator's config/raw)
    raw_real = os.path.realpath(job.raw)
    config = {**raw.describe(), "raw": raw_real, **plan.as_config(), **mask_config}
    if raw.kept is not None:
        k = len(raw.excluded)
        notes.append(f"{sum(b - a + 1 for a, b in raw.excluded)} frames excluded in {k} "
                     f"block{'s' if k != 1 else ''} ({config['excluded_frames']}); the "
                     "delays across them are shifted by their length")
    if plan.sparse_source:
        config["raw_events"] = int(raw.n_events)
        if getattr(raw, "time_tag", False):
            config.update(time_tag=True, tick_s=float(raw.tick_s))
    run_spec = dataclasses.replace(spec, groups=plan.full_groups)
    nonfinite = Masked(qm.shape)
    in_use = used & (np.asarray(qm.mask) > 0)  # the pixels a NaN would spoil
    qm_run = qm
    while True:
        if nonfinite.pixels.any():
            qm_run = dataclasses.replace(
                qm, mask=np.asarray(qm.mask, bool) & ~nonfinite.pixels, hash="")
        use = used & (np.asarray(qm_run.mask) > 0)
        try:
            with _stack_writer(side, n, qm.shape) as sink:
                record = ResultRecord(path=job.output, raw_path=raw_real, config=config,
                                      count_time=count_time, pixel_sink=sink)
                if plan.photons:
                    stream = FrameStream(
                        lambda use=use: checked_events(raw.iter_events(), use.ravel(), raw,
                                                       notes, nonfinite),
                        n, frame_time, raw.stride, raw.avg)
                    out_res = correlate_events_to_result(
                        stream, qm_run, run_spec, record, progress=progress, cancel=cancel,
                        scattering_group=plan.scattering_group,
                        engine=(str(plan.engine.engine), plan.engine.device))
                else:
                    stream = FrameStream(
                        lambda use=use, size=256 if spec.mode == "twotime" else 128:
                        checked_chunks(raw.iter_chunks(size, reuse=True),
                                                       use, raw, notes, nonfinite),
                        n, frame_time, raw.stride, raw.avg)
                    out_res = correlate_to_result(
                        stream, qm_run, run_spec, record, engine=plan.engine.engine,
                        device=plan.engine.device, progress=progress, cancel=cancel)
            break
        except NonFiniteCount:
            # Find every such pixel (a read-only pass), then correlate without them.
            found = nonfinite_event_pixels(raw, progress) if plan.photons else \
                nonfinite_pixels(raw, progress)
            nonfinite.pixels |= found & in_use
            nonfinite.strict = False
            if not (correlated(qm) & ~nonfinite.pixels).any():
                raise XpcsFileError(
                    job.raw, "NaN or Inf counts at every pixel the q-map uses",
                    raw.dataset_path, "finite counts") from None
    age_lag = None
    if spec.ages:
        use = used & (np.asarray(qm_run.mask) > 0)
        age_lag = run_age_lag(
            qm_run, n, frame_time * raw.stride * raw.avg, plan.ages_bins, spec.ages_points,
            photons=plan.photons, progress=progress, cancel=cancel,
            chunks=lambda: checked_chunks(raw.iter_chunks(256, reuse=True), use, raw,
                                          notes, nonfinite),
            events=lambda: checked_events(raw.iter_events(), use.ravel(), raw, notes,
                                          nonfinite),
            n_groups=plan.groups, group_tile=spec.group_tile)
    if nonfinite.pixels.any():
        k = int(nonfinite.pixels.sum())
        notes.append(f"{k} pixel(s) with NaN or Inf counts were masked "
                     f"(of {int(in_use.sum())} the q-map uses)")
    result = out_res.result
    # overwrite: the output rule above already applied the user's choice
    try:
        out = write_result(
            job.output, result, saxs_2d=out_res.saxs_2d, c2_maps=out_res.c2_maps,
            overwrite=True, g2_stack_file=None if side is None else side.name,
            age_lag=None if age_lag is None else age_lag[0],
            twotime_groups=getattr(out_res, "twotime_groups", None),
            age_lag_groups=None if age_lag is None else age_lag[1],
        )
    except BaseException:
        if side is not None:  # no side file without its result
            side.unlink(missing_ok=True)
        raise
    return CorrelateOutcome(Path(out), plan, n, tuple(dict.fromkeys(notes)),
                            _summary(result, n, age_lag, plan), result)


def _summary(result: Any, n: int, age_lag: Any, plan: CorrelatePlan) -> str:
    """What the file holds, in one line."""
    mt, tt = result.multitau, result.twotime
    parts = []
    if mt is not None:
        parts.append(f"multi-tau {mt.g2.shape[0]} delays x {mt.g2.shape[1]} bins")
    if tt is not None:
        parts.append(f"two-time {len(tt.processed_bins)} bins of {n}x{n}")
    if age_lag is not None:
        parts.append(f"age x lag map {len(age_lag[0].bins)} bins, "
                     f"{len(age_lag[0].levels)} levels"
                     + (f", {plan.groups} pixel groups" if age_lag[1] is not None else ""))
    if plan.sparse_source:
        parts.append(f"{plan.path.path} path ({plan.path.reason})")
    return f"{n} frames, " + ", ".join(parts)
