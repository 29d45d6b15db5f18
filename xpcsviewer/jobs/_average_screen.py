"""Screening of the files to average: one pass over their small data (g2, intensity),
the checks that they can be averaged, the per-file statistics and the rejections with
their reasons (see :mod:`xpcsviewer.jobs.average`)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from xpcsviewer.compute.averaging import (
    ErrorMethod,
    baseline_value,
    robust_z,
)
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.model.result import XpcsResult
from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = [
    "AverageOptions",
    "AverageSummary",
    "FileStat",
    "IncompatibleFilesError",
    "NoFilesAcceptedError",
    "UnreadableFilesError",
    "screen_files",
]


@dataclass(frozen=True)
class AverageOptions:
    """Options of an averaging run (a plain snapshot; safe to pass to a worker).

    Attributes
    ----------
    error_method : ErrorMethod or str
        ``"weighted"`` (inverse-variance) or ``"sem"`` (standard error across files).
    baseline_q_index : int
        0-based g2 column (dynamic q-bin) whose baseline is checked.
    baseline_window : int
        Number of last delays averaged for the baseline.
    baseline_range : (float, float) or None
        Accepted ``[min, max]`` of the baseline; None: no baseline filter
        (the statistic is still computed for the plot).
    mad_threshold : float or None
        Robust z-score above which a file is rejected (g2 curve and mean
        intensity); None: no MAD filter.
    include_saxs_2d : bool
        Average the 2-D scattering image (else the output image is zeros).
    include_g2_stack : bool
        Average the per-pixel G2/IP/IF stack when every accepted file has one.
    overwrite : bool
        Replace an existing output file (never an input file).
    """

    error_method: ErrorMethod | str = ErrorMethod.WEIGHTED
    baseline_q_index: int = 0
    baseline_window: int = 10
    baseline_range: tuple[float, float] | None = None
    mad_threshold: float | None = None
    include_saxs_2d: bool = True
    include_g2_stack: bool = True
    overwrite: bool = False

    def method(self) -> ErrorMethod:
        """The error method as an enum (raises ValueError for unknown names)."""
        return ErrorMethod(self.error_method)


@dataclass
class FileStat:
    """Per-file statistics and the decision about one input file.

    Attributes
    ----------
    path : str
    label : str
    baseline : float
        Mean of the last delays of the chosen q-bin (NaN when unavailable).
    intensity : float
        Mean intensity (counts / pixel / frame) from intensity vs time, else SAXS 1-D.
    g2_deviation : float
        Mean |g2 - median g2 curve| over the valid points (NaN before screening).
    g2_z : float
        Robust z-score of ``g2_deviation`` across files (NaN if not computed).
    intensity_z : float
        Robust z-score of ``intensity`` across files (NaN if not computed).
    accepted : bool
    reason : str
        Why the file was rejected ("" when accepted).
    """

    path: str
    label: str
    baseline: float = float("nan")
    intensity: float = float("nan")
    g2_deviation: float = float("nan")
    g2_z: float = float("nan")
    intensity_z: float = float("nan")
    accepted: bool = True
    reason: str = ""


@dataclass
class AverageSummary:
    """What an averaging run did.

    Attributes
    ----------
    output : Path or None
        The written file (None for :func:`screen_files`).
    error_method : str
    stats : list of FileStat
        One per input file, in input order (for the live plot and the table).
    baseline_range : (float, float) or None
    mad_threshold : float or None
    fields : list of str
        The averaged quantities (e.g. ``"g2"``, ``"g2_partial"``, ``"saxs_2d"``).
    notes : list of str
        Things left out and why (e.g. the G2 stack missing in one file).
    """

    output: Path | None
    error_method: str
    stats: list[FileStat]
    baseline_range: tuple[float, float] | None = None
    mad_threshold: float | None = None
    fields: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def accepted(self) -> list[str]:
        """Paths of the averaged files."""
        return [s.path for s in self.stats if s.accepted]

    @property
    def rejected(self) -> list[tuple[str, str]]:
        """``(path, reason)`` of every rejected file."""
        return [(s.path, s.reason) for s in self.stats if not s.accepted]

    def text(self) -> str:
        """A human-readable summary (CLI output)."""
        lines = [
            f"accepted {len(self.accepted)} of {len(self.stats)} files "
            f"(errors: {self.error_method})"
        ]
        for path, reason in self.rejected:
            lines.append(f"  rejected {path}: {reason}")
        lines.extend(f"  note: {n}" for n in self.notes)
        if self.output is not None:
            lines.append(f"wrote {self.output}")
        return "\n".join(lines)


class UnreadableFilesError(Exception):
    """Some inputs could not be read; ``errors`` holds one XpcsFileError per file."""

    def __init__(self, errors: Sequence[XpcsFileError]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(e.one_line() for e in self.errors))


class IncompatibleFilesError(ValueError):
    """Files with different q-maps (or delays) cannot be averaged.

    ``reference`` is the first file; ``mismatches`` maps each other file to what
    differs.
    """

    def __init__(self, reference: str, mismatches: dict[str, str]) -> None:
        self.reference = reference
        self.mismatches = dict(mismatches)
        lines = [f"cannot average: {len(mismatches)} file(s) differ from {reference}:"]
        lines += [f"  {p}: {why}" for p, why in mismatches.items()]
        super().__init__("\n".join(lines))


class NoFilesAcceptedError(ValueError):
    """Every file was rejected; ``summary`` says why."""

    def __init__(self, summary: AverageSummary) -> None:
        self.summary = summary
        super().__init__("no file passed the filters:\n" + summary.text())


# ------------------------------------------------------------------- screening
def _mean_intensity(res: XpcsResult) -> float:
    if res.intensity_vs_time is not None and res.intensity_vs_time.shape[1] > 0:
        v = np.asarray(res.intensity_vs_time[1], dtype=np.float64)
    else:
        v = np.asarray(res.saxs_1d, dtype=np.float64)
    v = v[np.isfinite(v)]
    return float(v.mean()) if v.size else float("nan")


_QMAP_ARRAYS = (
    "dynamic_roi_map",
    "static_roi_map",
    "mask",
    "dynamic_index_mapping",
    "static_index_mapping",
    "dynamic_v_list_dim0",
    "dynamic_v_list_dim1",
    "static_v_list_dim0",
    "static_v_list_dim1",
)


def _difference(ref: XpcsResult, res: XpcsResult) -> str | None:
    """What makes ``res`` impossible to average with ``ref`` (None: compatible)."""
    a, b = ref.qmap, res.qmap
    if a.shape != b.shape:
        return f"detector shape {b.shape} != {a.shape}"
    if (a.n_dynamic, a.n_static) != (b.n_dynamic, b.n_static):
        return (
            f"q-map has {b.n_dynamic} dynamic / {b.n_static} static bins, "
            f"expected {a.n_dynamic} / {a.n_static}"
        )
    # Equal hashes are enough; different hash strings may still describe the same
    # partition (written by different tools), so compare the content then.
    if not (a.hash and a.hash == b.hash):
        for name in _QMAP_ARRAYS:
            x, y = np.asarray(getattr(a, name)), np.asarray(getattr(b, name))
            if x.shape != y.shape or not np.array_equal(x, y):
                return (
                    f"different q-map ({name} differs; "
                    f"hash {b.hash[:12]} vs {a.hash[:12]})"
                )
    ma, mb = ref.multitau, res.multitau
    if ma is not None and mb is not None:
        if not np.array_equal(ma.delay_frames, mb.delay_frames):
            n_b, n_a = len(mb.delay_frames), len(ma.delay_frames)
            return f"different delay list ({n_b} vs {n_a} delays)"
        if not np.isclose(ma.t0_eff, mb.t0_eff, rtol=1e-9, atol=0.0):
            return f"different effective frame time {mb.t0_eff:g} s vs {ma.t0_eff:g} s"
    return None


def screen_files(
    paths: Sequence[str | os.PathLike],
    options: AverageOptions | None = None,
    *,
    reader: Callable[[str | os.PathLike], XpcsResult] | None = None,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    _total: int | None = None,
) -> AverageSummary:
    """First pass: read each file's small data, check compatibility, decide rejections.

    Parameters
    ----------
    paths : sequence of path
        Result files (at least one).
    options : AverageOptions, optional
    reader : callable, optional
        ``read_result`` replacement (tests); defaults to
        :func:`xpcsviewer.io.read_result`.
    progress, cancel
        Progress ``(done, total, message)`` per file; cancel checked between files.

    Returns
    -------
    AverageSummary
        ``output`` is None; ``stats`` hold the statistics and decisions.

    Raises
    ------
    UnreadableFilesError
        Some files could not be read (all are listed).
    IncompatibleFilesError
        Files with a different q-map, delay list or frame time than the first one.
    ValueError
        No input, bad options (unknown error method, q index out of range).
    """
    if reader is None:
        from xpcsviewer.io import read_result as reader
    opts = options or AverageOptions()
    method = opts.method()
    if not paths:
        raise ValueError("no input files")
    total = _total if _total is not None else len(paths)
    stats: list[FileStat] = []
    curves: list[np.ndarray | None] = []
    errors: list[XpcsFileError] = []
    mismatches: dict[str, str] = {}
    ref: XpcsResult | None = None
    for i, p in enumerate(paths):
        report(progress, cancel, i, total, f"screening {Path(p).name}")
        try:
            res = reader(p)
        except XpcsFileError as exc:
            errors.append(exc)
            continue
        except OSError as exc:
            errors.append(XpcsFileError(p, f"cannot be read ({exc})"))
            continue
        st = FileStat(path=str(p), label=res.label, intensity=_mean_intensity(res))
        mt = res.multitau
        if mt is None:
            st.accepted, st.reason = False, "no multitau g2 to average"
            curves.append(None)
        elif not (np.asarray(mt.valid, bool) & np.isfinite(mt.g2)).any():
            # not a screening choice: such a file has nothing to add (--no-reject too)
            st.accepted, st.reason = False, "g2 has no valid point (all NaN, Inf or masked)"
            curves.append(None)
        else:
            st.baseline = baseline_value(
                mt.g2, mt.valid, opts.baseline_q_index, opts.baseline_window
            )
            curves.append(np.where(mt.valid, mt.g2, np.nan))
            if ref is None:
                ref = res
            else:
                why = _difference(ref, res)
                if why is not None:
                    mismatches[str(p)] = why
        stats.append(st)
        del res
    if errors:
        raise UnreadableFilesError(errors)
    if mismatches:
        raise IncompatibleFilesError(str(ref.path), mismatches)

    if opts.baseline_range is not None:
        lo, hi = (float(x) for x in opts.baseline_range)
        for st in stats:
            if not st.accepted:
                continue
            if not np.isfinite(st.baseline):
                st.accepted, st.reason = (
                    False,
                    "baseline: no valid g2 points in the window",
                )
            elif not lo <= st.baseline <= hi:
                st.accepted = False
                st.reason = (
                    f"baseline {st.baseline:.4f} outside [{lo:g}, {hi:g}] "
                    f"(q index {opts.baseline_q_index}, "
                    f"last {opts.baseline_window} delays)"
                )

    notes: list[str] = []
    # The deviation is measured for every readable file (for the plot), but the
    # median curve and the MAD come from the files still accepted.
    have = [i for i, c in enumerate(curves) if c is not None]
    pool = [i for i in have if stats[i].accepted]
    if len(pool) >= 1:
        with warnings.catch_warnings():
            # points missing in every file give an all-NaN median: they are skipped
            warnings.simplefilter("ignore", RuntimeWarning)
            median_curve = (
                np.nanmedian(np.stack([curves[i] for i in pool]), axis=0)
                if len(pool) > 1
                else curves[pool[0]]
            )
        for i in have:
            d = np.abs(curves[i] - median_curve)
            stats[i].g2_deviation = (
                float(np.nanmean(d)) if np.isfinite(d).any() else float("nan")
            )
    del curves
    if opts.mad_threshold is not None:
        k = float(opts.mad_threshold)
        if len(pool) < 3:
            notes.append(
                f"MAD filter skipped: needs at least 3 files, {len(pool)} left"
            )
        else:
            gz = robust_z(
                np.array([stats[i].g2_deviation for i in pool]), one_sided=True
            )
            iz = robust_z(np.array([stats[i].intensity for i in pool]))
            for j, i in enumerate(pool):
                st = stats[i]
                st.g2_z, st.intensity_z = float(gz[j]), float(iz[j])
                if np.isfinite(gz[j]) and gz[j] > k:
                    st.accepted = False
                    st.reason = (
                        f"g2 curve deviates: robust z {gz[j]:.1f} > {k:g} MADs "
                        f"(mean |g2 - median| = {st.g2_deviation:.3g})"
                    )
                elif np.isfinite(iz[j]) and iz[j] > k:
                    st.accepted = False
                    st.reason = (
                        f"mean intensity {st.intensity:.4g} deviates: robust z "
                        f"{iz[j]:.1f} > {k:g} MADs"
                    )
    report(progress, cancel, len(paths), total, "screened")
    return AverageSummary(
        output=None,
        error_method=method.value,
        stats=stats,
        baseline_range=opts.baseline_range,
        mad_threshold=opts.mad_threshold,
        notes=notes,
    )
