"""The window's correlate form as a job (issue 45), Qt-free.

The correlate dialog (:mod:`xpcsviewer.gui.correlate_dialog`) fills a frozen
:class:`CorrelateForm`; :meth:`CorrelateForm.job` makes the same
:class:`~xpcsviewer.jobs.correlate.CorrelateJob` that ``xpcsviewer correlate`` makes
from :meth:`CorrelateForm.command` (ADR-12: one spec, one plan, one job). What the
window holds in memory (the Detector tab's drawn partition and its mask) is written to
files beside the output first (``OUT_qmap.hdf``, ``OUT_mask.hdf``), so the result
records files a user can pass to the command line again.

:func:`preview_form` (the plan and a time estimate, before running; writes nothing) and
:func:`run_form` (side files, then :func:`~xpcsviewer.jobs.correlate.correlate_file`;
a cancelled or failed run leaves nothing behind) run in workers.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.compute.spec import (
    CorrelateSpec,
    FrameSelection,
    PlanRequest,
    frame_ranges_text,
)

__all__ = ["PATH_WORDS", "CorrelateForm", "FormOutcome", "FormPreview", "default_output",
           "estimate_seconds", "preview_form", "run_form"]

#: the dialog's path words -> ``--path``
PATH_WORDS = {"auto": "auto", "photons": "sparse", "frames": "dense"}


@dataclasses.dataclass(frozen=True, eq=False)
class CorrelateForm:
    """What the correlate dialog asks, as plain values.

    Attributes
    ----------
    raw, output : str
        The raw source and the result file.
    qmap : str or None
        A q-map file; ignored when ``drawn_qmap`` is given.
    drawn_qmap : QMap or None
        The Detector tab's partition: written to ``OUT_qmap.hdf`` and used as the q-map.
    mask : (H, W) bool array or None
        The Detector tab's mask (True = valid): written to ``OUT_mask.hdf`` and passed as
        ``--mask`` (ANDed with the q-map's mask).
    begin, end, stride, avg, exclude :
        The frame selection (``exclude``: ``"A-B,C"`` or (first, last) pairs).
    mode, dq, ages, ages_points, groups, group_tile :
        As the command's flags.
    path : {"auto", "photons", "frames"}
    frame_time, bin_time : float or None
        Seconds per frame (None: the file's); an event list's frame length.
    overwrite : bool
        Replace an existing output (and side files).
    """

    raw: str
    output: str
    qmap: str | None = None
    drawn_qmap: Any = None
    mask: np.ndarray | None = None
    begin: int = 0
    end: int = -1
    stride: int = 1
    avg: int = 1
    exclude: str | Sequence[Sequence[int]] = ()
    mode: str = "multitau"
    dq: str = "all"
    ages: bool = False
    ages_points: int = 8
    groups: int = 0
    group_tile: int = 8
    path: str = "auto"
    frame_time: float | None = None
    bin_time: float | None = None
    overwrite: bool = False

    # ------------------------------------------------------------------ values
    def spec(self) -> CorrelateSpec:
        """The checked spec (SpecError names the setting, as the flag)."""
        return CorrelateSpec(
            mode=self.mode, dq=self.dq,
            frames=FrameSelection(int(self.begin), int(self.end), int(self.stride),
                                  int(self.avg), self.exclude),
            frame_time=self.frame_time, bin_time=self.bin_time, ages=bool(self.ages),
            ages_points=int(self.ages_points), groups=int(self.groups),
            group_tile=int(self.group_tile))

    def request(self) -> PlanRequest:
        from xpcsviewer.compute.spec import SpecError

        if self.path not in PATH_WORDS:
            raise SpecError(f"path must be one of {', '.join(PATH_WORDS)}, got {self.path!r}")
        return PlanRequest(path=PATH_WORDS[self.path])

    def side_files(self) -> tuple[Path | None, Path | None]:
        """(q-map file, mask file) written beside the output; None where not needed."""
        out = Path(self.output)
        stem = out.with_suffix("") if out.suffix else out
        q = stem.with_name(stem.name + "_qmap.hdf") if self.drawn_qmap is not None else None
        m = stem.with_name(stem.name + "_mask.hdf") if self.mask is not None else None
        return q, m

    def qmap_path(self) -> Path:
        """The q-map file the job reads.

        Raises
        ------
        SpecError
            No q-map given.
        """
        from xpcsviewer.compute.spec import SpecError

        q = self.side_files()[0]
        if q is not None:
            return q
        if not self.qmap:
            raise SpecError("a q-map is needed: choose a q-map file, or make a partition "
                            "in the Detector tab")
        return Path(self.qmap)

    def job(self) -> Any:
        """The :class:`~xpcsviewer.jobs.correlate.CorrelateJob` of this form."""
        from xpcsviewer.jobs.correlate import CorrelateJob

        return CorrelateJob(Path(self.raw), self.qmap_path(), Path(self.output), self.spec(),
                            self.request(), bool(self.overwrite), mask=self.side_files()[1])

    def command(self) -> list[str]:
        """The ``xpcsviewer correlate`` command line of the same job (its side files
        as written by :func:`run_form`)."""
        spec, job = self.spec(), self.job()
        sel = spec.frames
        cmd = ["xpcsviewer", "correlate", str(job.raw), "--qmap", str(job.qmap),
               "-o", str(job.output)]
        if job.mask is not None:
            cmd += ["--mask", str(job.mask)]
        if spec.mode != "multitau":
            cmd += ["--mode", spec.mode]
        if spec.frame_time is not None:
            cmd += ["--frame-time", repr(float(spec.frame_time))]
        if spec.bin_time is not None:
            cmd += ["--bin-time", repr(float(spec.bin_time))]
        if job.request.path != "auto":
            cmd += ["--path", job.request.path]
        for flag, value, default in (("--begin-frame", sel.begin, 0),
                                     ("--end-frame", sel.end, -1),
                                     ("--stride-frame", sel.stride, 1),
                                     ("--avg-frame", sel.avg, 1)):
            if value != default:
                cmd += [flag, str(value)]
        if sel.exclude:
            cmd += ["--exclude-frames", frame_ranges_text(sel.exclude)]
        if spec.uses_bins and spec.dq is not None and str(self.dq).strip().lower() != "all":
            cmd += ["--dq", str(self.dq)]
        if spec.ages:
            cmd += ["--twotime-ages"]
            if spec.ages_points != 8:
                cmd += ["--twotime-ages-points", str(spec.ages_points)]
        if spec.groups:
            cmd += ["--twotime-groups", str(spec.groups), "--group-tile", str(spec.group_tile)]
        if self.overwrite:
            cmd += ["--overwrite"]
        return cmd


# ---------------------------------------------------------------------- preview
@dataclasses.dataclass(frozen=True)
class FormPreview:
    """What a form would run: the frames, the plan's words and its time estimate."""

    n_frames: int
    raw_frames: int
    plan_text: str
    path: str
    estimate_s: float | None
    notes: tuple[str, ...]

    def text(self) -> str:
        """Lines for the dialog."""
        lines = [f"{self.n_frames} of {self.raw_frames} frames; {self.path}",
                 self.plan_text]
        if self.estimate_s is not None:
            lines.append(f"estimated time: {_seconds(self.estimate_s)} (correlation passes)")
        return "\n".join([*lines, *self.notes])


def _seconds(s: float) -> str:
    if s < 1:
        return "under 1 s"
    if s < 120:
        return f"about {s:.0f} s"
    return f"about {s / 60:.0f} min"


def estimate_seconds(plan: Any) -> float | None:
    """The plan's estimate of the correlation passes (s): the chosen path's for a
    photon-sparse source, else the routes' on the chosen device; None when unknown."""
    if plan.sparse_source:
        s = plan.path.sparse_s if plan.photons else plan.path.dense_s
        return float(s) if np.isfinite(s) else None
    got = [r.estimates.get(plan.engine.device) for r in plan.engine.routes]
    if not got or any(v is None for v in got):
        return None
    return float(sum(got))


def _with_mask(qm: Any, mask: np.ndarray | None) -> Any:
    if mask is None:
        return qm
    m = np.asarray(mask, bool)
    if m.shape != tuple(qm.shape):
        from xpcsviewer.compute.spec import SpecError

        raise SpecError(f"the Detector tab's mask is {m.shape[0]}x{m.shape[1]} but the "
                        f"q-map is {qm.shape[0]}x{qm.shape[1]}")
    return dataclasses.replace(qm, mask=(np.asarray(qm.mask) > 0) & m, hash="")


def preview_form(form: CorrelateForm, progress: Any = None, cancel: Any = None) -> FormPreview:
    """The plan of ``form`` on its source (worker job; reads headers and the q-map,
    writes nothing).

    Raises
    ------
    SpecError, MemoryRefused, XpcsFileError
        As :func:`~xpcsviewer.jobs.correlate.correlate_file` would.
    """
    from xpcsviewer.backends import current_config
    from xpcsviewer.io.raw import open_raw_source
    from xpcsviewer.jobs._correlate_inputs import load_qmap
    from xpcsviewer.jobs.correlate_plan import plan_correlate

    spec, request = form.spec(), form.request()
    qm = form.drawn_qmap if form.drawn_qmap is not None else load_qmap(form.qmap_path())
    qm = _with_mask(qm, form.mask)
    sel = spec.frames
    try:
        raw = open_raw_source(form.raw, shape=qm.shape, bin_time=spec.bin_time,
                              begin=sel.begin, end=sel.end, stride=sel.stride, avg=sel.avg,
                              exclude=sel.exclude)
    except ValueError as exc:
        from xpcsviewer.compute.spec import SpecError

        if isinstance(exc, SpecError):
            raise
        raise SpecError(str(exc)) from None
    with raw:
        if raw.frame_shape != tuple(qm.shape):
            from xpcsviewer.compute.spec import SpecError

            raise SpecError(f"frames are {raw.frame_shape[0]}x{raw.frame_shape[1]} but the "
                            f"q-map is {qm.shape[0]}x{qm.shape[1]}")
        plan = plan_correlate(raw, qm, spec, request, device=current_config().device)
        notes = []
        if raw.kept is not None:
            n_ex = sum(b - a + 1 for a, b in raw.excluded)
            nb = len(raw.excluded)
            notes.append(f"{n_ex} frame{'s' * (n_ex != 1)} excluded in "
                         f"{nb} block{'s' * (nb != 1)}")
        path = ("on the photons" if plan.photons else "on dense frames")
        if plan.sparse_source:
            path += f" ({plan.path.reason})"
        return FormPreview(int(raw.n_frames), int(raw.raw_frames), plan.describe(), path,
                           estimate_seconds(plan), tuple(notes))


# -------------------------------------------------------------------------- run
@dataclasses.dataclass(frozen=True)
class FormOutcome:
    """A finished run: the job's outcome, the side files written, what it said."""

    outcome: Any
    side_files: tuple[Path, ...]
    informed: tuple[str, ...]

    @property
    def output(self) -> Path:
        return Path(self.outcome.output)


def _remove(paths: Sequence[Path | None]) -> None:
    for p in paths:
        if p is not None:
            Path(p).unlink(missing_ok=True)


def run_form(form: CorrelateForm, progress: Any = None, cancel: Any = None) -> FormOutcome:
    """Write the side files, then run the job (worker job).

    A failed or cancelled run removes what it wrote (the side files; the result and
    the per-pixel file are written atomically by the job, so none is left half
    written); an existing output is replaced only at the very end, with ``overwrite``.

    Raises
    ------
    Cancelled
        ``cancel`` was set (also when it was set as the job finished: its output goes).
    SpecError, MemoryRefused, OutputRefusedError, XpcsFileError
        As :func:`~xpcsviewer.jobs.correlate.correlate_file`.
    """
    from xpcsviewer.io.outputs import check_output
    from xpcsviewer.jobs.correlate import check_outputs, correlate_file
    from xpcsviewer.progress import Cancelled

    job = form.job()
    qmap_file, mask_file = form.side_files()
    sides = [p for p in (qmap_file, mask_file) if p is not None]
    # every output rule before anything is written
    check_outputs(job)
    for p in sides:
        check_output(p, [job.raw, *([form.qmap] if form.qmap else [])], form.overwrite,
                     replacing=[job.output])
    Path(job.output).parent.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    informed: list[str] = []
    done = None
    try:
        if qmap_file is not None:
            from xpcsviewer.io.results.writer import write_qmap_file

            written.append(qmap_file)
            write_qmap_file(qmap_file, form.drawn_qmap, source_file=str(form.raw),
                            overwrite=True)
        if mask_file is not None:
            from xpcsviewer.io.masks import write_mask_file

            written.append(mask_file)
            write_mask_file(mask_file, np.asarray(form.mask, bool), source=str(form.raw),
                            overwrite=True)
        done = correlate_file(dataclasses.replace(job, output_checked=True),
                              progress=progress, cancel=cancel, inform=informed.append)
        if cancel is not None and cancel.cancelled:
            raise Cancelled()
    except BaseException:
        if done is not None:  # cancelled as it finished: the result goes too
            _remove([done.output, job.side])
        _remove(written)
        raise
    return FormOutcome(done, tuple(written), tuple(informed))


# ------------------------------------------------------------------------ output
def _writable(folder: Path) -> bool:
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)


def default_output(raw: str | os.PathLike, folders: Sequence[str | os.PathLike | None] = (),
                   home: str | os.PathLike | None = None) -> Path:
    """Where a result of ``raw`` goes by default: ``RAWNAME_results.hdf`` in the first
    writable of ``folders`` (the user's results folder: where the window last wrote),
    else beside the raw file when that folder is writable, else in
    ``~/xpcs_results`` (a data folder is often read-only); a free name (``_2``, ...)
    when the file exists."""
    from xpcsviewer.jobs.correlate_batch import output_name

    name = output_name(raw)
    fallback = Path(home if home is not None else Path.home()) / "xpcs_results"
    candidates = [Path(f) for f in folders if f] + [Path(raw).resolve().parent]
    folder = next((f for f in candidates if _writable(f)), fallback)
    out = folder / name
    stem, k = out.with_suffix(""), 2
    while out.exists():
        out = stem.with_name(f"{stem.name}_{k}.hdf")
        k += 1
    return out
