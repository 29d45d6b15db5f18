"""Averaging repeated measurements into one result file, with outlier rejection.

Many repeat measurements of the same sample (hundreds are normal) are averaged
into ONE new result file in the standard layout. The work streams over the
files: at any time at most one input file's big arrays (2-D image, one delay of
the per-pixel G2 stack) are in memory, plus the accumulators, so memory does
not grow with the number of files. Only small per-file summaries (the g2
curves, a few kB each) are kept for the robust statistics.

Two passes:

1. :func:`screen_files` reads each file's small data (g2, intensity), checks
   that all files share the same q-map, delays and frame time, computes the
   per-file statistics and decides which files to reject, with a reason:

   * **baseline**: mean of the last ``window`` valid g2 delays of q-bin
     ``q_index``; rejected outside ``[min, max]``;
   * **g2 MAD**: the mean absolute deviation of the file's g2 from the median g2
     curve of all files, turned into a robust z-score across files
     ``(d - median(d)) / (1.4826 MAD(d))``; rejected above ``mad_threshold``;
   * **intensity MAD**: the file's mean intensity, robust z-score
     ``|I - median(I)| / (1.4826 MAD(I))``; rejected above ``mad_threshold``.

2. :func:`average_files` accumulates the accepted files and writes the output
   atomically with :func:`xpcsviewer.io.write_result`.

Error propagation (``error_method``), per point (delay x q-bin):

* ``"weighted"``: inverse-variance weighted mean ``sum(g/s^2) / sum(1/s^2)``
  with error ``1 / sqrt(sum(1/s^2))``. Points whose error is zero or not finite
  carry no weight and are left out.
* ``"sem"``: unweighted mean with the standard error across files
  ``std(g, ddof=1) / sqrt(n)``. Where only one file has a valid point, its own
  error is kept (the spread of one value is undefined).

Invalid points (``valid`` False: g2 == 0 with err == 0, or non-finite) are left
out per point, never averaged as zeros; where no file has a valid point the
output holds g2 = 0, err = 0, which readers treat as missing. SAXS 1-D/2-D,
intensity vs time and the per-pixel G2/IP/IF stack (built one delay at a time)
are plain means over the accepted files.

Everything here is NumPy float64 and Qt-free; it may run off the main thread.
The accumulation is I/O bound, so it does not go through the array backends.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.model import XpcsResult
from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = [
    "MAD_SCALE",
    "AverageOptions",
    "AverageSummary",
    "ErrorMethod",
    "FileStat",
    "IncompatibleFilesError",
    "NoFilesAcceptedError",
    "PointAccumulator",
    "UnreadableFilesError",
    "average_files",
    "baseline_value",
    "robust_z",
    "screen_files",
]

#: 1.4826 * MAD estimates the standard deviation of normally distributed data.
MAD_SCALE = 1.4826


class ErrorMethod(enum.StrEnum):
    """How the errors of the averaged g2 are computed (see the module docstring)."""

    WEIGHTED = "weighted"
    SEM = "sem"


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


# ------------------------------------------------------------------ statistics
def baseline_value(
    g2: np.ndarray, valid: np.ndarray, q_index: int, window: int
) -> float:
    """Mean of the last ``window`` valid g2 values of column ``q_index``.

    Parameters
    ----------
    g2, valid : (T, Nd) float64 / bool
    q_index : int
        0-based column.
    window : int
        Number of last delays (clamped to T).

    Returns
    -------
    float
        NaN when no point in the window is valid.
    """
    g2 = np.asarray(g2, dtype=np.float64)
    if not 0 <= q_index < g2.shape[1]:
        raise ValueError(
            f"baseline q index {q_index} out of range 0..{g2.shape[1] - 1}"
        )
    w = max(1, min(int(window), g2.shape[0]))
    col = g2[-w:, q_index]
    ok = np.asarray(valid, bool)[-w:, q_index] & np.isfinite(col)
    return float(col[ok].mean()) if ok.any() else float("nan")


def robust_z(values: np.ndarray, *, one_sided: bool = False) -> np.ndarray:
    """Robust z-scores ``(v - median) / (1.4826 MAD)`` over the finite values.

    A zero MAD (e.g. identical files) is replaced by a tiny scale relative to the
    median, so that equal values score 0 and any real deviation scores huge.

    Parameters
    ----------
    values : (N,) float64
    one_sided : bool
        Return the signed score (large positive = worse) instead of ``|z|``.

    Returns
    -------
    (N,) float64
        NaN where the input is NaN.
    """
    v = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(v)
    out = np.full(v.shape, np.nan)
    if not ok.any():
        return out
    med = np.median(v[ok])
    mad = np.median(np.abs(v[ok] - med))
    scale = MAD_SCALE * mad
    floor = 1e-12 * max(abs(med), np.max(np.abs(v[ok])), np.finfo(float).tiny)
    scale = max(scale, floor)
    z = (v[ok] - med) / scale
    out[ok] = z if one_sided else np.abs(z)
    return out


class PointAccumulator:
    """Streaming per-point mean and error of arrays with per-point validity.

    Parameters
    ----------
    shape : tuple of int
        Shape of each added array.
    method : ErrorMethod or str

    Notes
    -----
    ``"weighted"`` keeps ``sum(w)`` and ``sum(w x)`` with ``w = 1/err^2``;
    ``"sem"`` uses Welford's update of the mean and of the sum of squared
    deviations (stable for many files with nearly equal values).
    """

    def __init__(self, shape: tuple[int, ...], method: ErrorMethod | str) -> None:
        self.method = ErrorMethod(method)
        self.shape = tuple(shape)
        self.n = np.zeros(shape, dtype=np.int64)
        self.a = np.zeros(shape)  # sum(w) | running mean
        self.b = np.zeros(shape)  # sum(w x) | sum of squared deviations
        self.single_err = np.zeros(shape)  # sem: error of the only file so far

    def add(
        self, x: np.ndarray, err: np.ndarray, valid: np.ndarray | None = None
    ) -> None:
        """Add one file's values ``x`` with errors ``err`` (invalid points skipped)."""
        x = np.asarray(x, dtype=np.float64)
        err = np.asarray(err, dtype=np.float64)
        if x.shape != self.shape or err.shape != self.shape:
            raise ValueError(f"shape {x.shape} / {err.shape}, expected {self.shape}")
        ok = (
            np.isfinite(x)
            if valid is None
            else (np.asarray(valid, bool) & np.isfinite(x))
        )
        if self.method is ErrorMethod.WEIGHTED:
            ok &= np.isfinite(err) & (err > 0)
            w = np.zeros(self.shape)
            w[ok] = 1.0 / err[ok] ** 2
            self.a += w
            self.b[ok] += w[ok] * x[ok]
            self.n += ok
        else:
            first = ok & (self.n == 0)
            self.single_err[first] = np.where(np.isfinite(err[first]), err[first], 0.0)
            self.n += ok
            delta = np.where(ok, x - self.a, 0.0)
            self.a[ok] += delta[ok] / self.n[ok]
            self.b[ok] += delta[ok] * (x[ok] - self.a[ok])

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(mean, err, n)``; mean = err = 0 where no file contributed."""
        has = self.n > 0
        mean = np.zeros(self.shape)
        err = np.zeros(self.shape)
        if self.method is ErrorMethod.WEIGHTED:
            mean[has] = self.b[has] / self.a[has]
            err[has] = 1.0 / np.sqrt(self.a[has])
        else:
            mean[has] = self.a[has]
            many = self.n > 1
            err[many] = np.sqrt(self.b[many] / (self.n[many] - 1)) / np.sqrt(
                self.n[many]
            )
            one = self.n == 1
            err[one] = self.single_err[one]
        return mean, err, self.n.copy()


class _MeanAccumulator:
    """Plain per-point mean over files, ignoring non-finite values."""

    def __init__(self) -> None:
        self.total: np.ndarray | None = None
        self.count: np.ndarray | None = None

    def add(self, x: np.ndarray) -> None:
        x = np.asarray(x, dtype=np.float64)
        if self.total is None:
            self.total = np.zeros(x.shape)
            self.count = np.zeros(x.shape, dtype=np.int64)
        elif x.shape != self.total.shape:
            raise ValueError(f"shape {x.shape}, expected {self.total.shape}")
        ok = np.isfinite(x)
        self.total[ok] += x[ok]
        self.count += ok

    def result(self) -> np.ndarray | None:
        if self.total is None:
            return None
        out = np.full(self.total.shape, np.nan)
        has = self.count > 0
        out[has] = self.total[has] / self.count[has]
        return out


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


# ------------------------------------------------------------------- averaging
def _clean_metadata(meta: dict[str, Any]) -> dict[str, Any]:
    # The reader stands in "<array ...>" for big datasets: never write those back.
    # /xpcs is rebuilt by the writer from the data model, so only /entry metadata
    # is carried over from the first file.
    return {
        k: v
        for k, v in meta.items()
        if k.startswith("entry/")
        and not (isinstance(v, str) and v.startswith(("<array", "<unreadable")))
    }


def average_files(
    paths: Sequence[str | os.PathLike],
    output: str | os.PathLike | Callable[[list[str]], str | os.PathLike],
    options: AverageOptions | None = None,
    *,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    screen_reader: Callable[[str | os.PathLike], XpcsResult] | None = None,
) -> AverageSummary:
    """Screen, then average the accepted files into a new result file.

    Parameters
    ----------
    paths : sequence of path
        Result files of repeat measurements (same q-map, delays and frame time).
    output : path, or callable
        The new file; must not be one of the inputs. Written atomically. A callable
        gets the accepted paths and returns the name (a name that states what was
        averaged, e.g. :func:`xpcsviewer.export.labels.average_output_name`); it is
        checked after the screening.
    options : AverageOptions, optional
    progress, cancel
        Progress per file (and per delay of the G2 stack); cancel checked
        between files and between stack delays. A cancelled run writes nothing.
    screen_reader : callable, optional
        The screening pass's reader (default ``read_result``): the batch layer's,
        which reads the files on Dask workers ahead of the screening.

    Returns
    -------
    AverageSummary
        With ``output`` set, the per-file statistics and the averaged fields.

    Raises
    ------
    UnreadableFilesError, IncompatibleFilesError
        See :func:`screen_files`.
    NoFilesAcceptedError
        Every file was rejected (nothing is written).
    OutputRefusedError
        ``output`` is one of the inputs, or exists and ``options.overwrite`` is
        False; or a file is given twice (a ValueError).
    ValueError
        Bad options.
    """
    from xpcsviewer.io import (
        read_g2_stack_delay,
        read_result,
        read_saxs_2d,
        write_result,
    )
    from xpcsviewer.io.outputs import atomic_path, check_distinct_inputs, check_output

    opts = options or AverageOptions()
    method = opts.method()
    if not callable(output):
        out = check_output(output, paths, opts.overwrite)
    check_distinct_inputs(paths)  # one file twice would shrink the errors by sqrt 2

    n_in = len(paths)
    summary = screen_files(
        paths,
        opts,
        reader=screen_reader or read_result,
        progress=progress,
        cancel=cancel,
        _total=2 * n_in,
    )
    accepted = summary.accepted
    if not accepted:
        raise NoFilesAcceptedError(summary)
    if callable(output):
        out = check_output(output(list(accepted)), paths, opts.overwrite)
    n_acc = len(accepted)
    # The G2 stack pass is counted up front; if it is dropped the bar jumps.
    total = n_in + n_acc * (2 if opts.include_g2_stack else 1)

    first = read_result(accepted[0])
    mt0 = first.multitau
    assert mt0 is not None  # screening rejects files without multitau
    t, nd = mt0.g2.shape
    g2_acc = PointAccumulator((t, nd), method)
    part_acc: PointAccumulator | None = None
    part_labels = mt0.g2_partial_labels
    if mt0.g2_partial is not None:
        part_acc = PointAccumulator(mt0.g2_partial.shape, method)
    saxs1d = _MeanAccumulator()
    seg = _MeanAccumulator() if first.saxs_1d_segments is not None else None
    int_t = _MeanAccumulator() if first.intensity_vs_time is not None else None
    img = _MeanAccumulator() if opts.include_saxs_2d else None
    notes = list(summary.notes)
    want_stack = opts.include_g2_stack and mt0.has_unnormalized_G2
    results_meta = []  # (has_stack) per accepted file, decided on the fly
    for j, p in enumerate(accepted):
        report(progress, cancel, n_in + j, total, f"averaging {Path(p).name}")
        res = first if j == 0 else read_result(p)
        mt = res.multitau
        g2_acc.add(mt.g2, mt.g2_err, mt.valid)
        if part_acc is not None:
            if mt.g2_partial is None or mt.g2_partial.shape != part_acc.shape:
                notes.append(
                    f"partial g2 not averaged: {p} has none or a different number "
                    "of snapshots"
                )
                part_acc = None
            else:
                perr = (
                    mt.g2_partial_err
                    if mt.g2_partial_err is not None
                    else np.full(part_acc.shape, np.nan)
                )
                if method is ErrorMethod.WEIGHTED and mt.g2_partial_err is None:
                    notes.append(
                        "partial g2 not averaged: weighted mean needs its errors, "
                        f"{p} has none"
                    )
                    part_acc = None
                else:
                    part_acc.add(mt.g2_partial, perr, np.isfinite(mt.g2_partial))
        saxs1d.add(res.saxs_1d)
        if seg is not None:
            sg = res.saxs_1d_segments
            if sg is None or (seg.total is not None and sg.shape != seg.total.shape):
                notes.append(
                    f"SAXS 1-D segments not averaged: {p} has none or a different shape"
                )
                seg = None
            else:
                seg.add(sg)
        if int_t is not None:
            iv = res.intensity_vs_time
            if iv is None or (
                int_t.total is not None and iv.shape != int_t.total.shape
            ):
                notes.append(
                    f"intensity vs time not averaged: {p} has a different length"
                )
                int_t = None
            else:
                int_t.add(iv)
        if img is not None:
            img.add(read_saxs_2d(p))
        results_meta.append(bool(mt.has_unnormalized_G2))
        if res is not first:
            del res
    if want_stack and not all(results_meta):
        missing = [p for p, has in zip(accepted, results_meta, strict=True) if not has]
        notes.append(
            f"G2/IP/IF stack not averaged: {len(missing)} file(s) lack it, "
            f"e.g. {missing[0]}"
        )
        want_stack = False

    g2, g2_err, n_g2 = g2_acc.result()
    fields = ["g2", "g2_err", "saxs_1d"]
    mt_out = dataclasses.replace(mt0, g2=g2, g2_err=g2_err, valid=n_g2 > 0)
    if part_acc is not None:
        pm, pe, _ = part_acc.result()
        mt_out.g2_partial, mt_out.g2_partial_err = pm, pe
        mt_out.g2_partial_labels = part_labels
        fields.append("g2_partial")
    else:
        mt_out.g2_partial = mt_out.g2_partial_err = mt_out.g2_partial_labels = None
    s1 = saxs1d.result()
    segs = seg.result() if seg is not None else None
    if segs is not None:
        fields.append("saxs_1d_segments")
    ivt = int_t.result() if int_t is not None else None
    if ivt is not None:
        ivt[0] = first.intensity_vs_time[0]  # the frame index is not averaged
        fields.append("intensity_vs_time")
    image = img.result() if img is not None else None
    if image is not None:
        image = np.nan_to_num(image, nan=0.0)
        fields.append("saxs_2d")

    if want_stack:
        fields.append("g2_stack")
    # The stack is added after the rest is written (see _append_mean_stack);
    # the writer must not see the flag now.
    mt_out.has_unnormalized_G2 = False

    meta = _clean_metadata(first.metadata)
    rejected = summary.rejected
    meta.update(
        {
            "entry/average/error_method": method.value,
            "entry/average/error_formula": (
                "inverse-variance weighted mean, err = 1/sqrt(sum(1/err_i^2))"
                if method is ErrorMethod.WEIGHTED
                else "unweighted mean, err = std(g2_i, ddof=1)/sqrt(n) "
                "(own err where n = 1)"
            ),
            "entry/average/n_files": len(accepted),
            "entry/average/source_files": [str(p) for p in accepted],
            "entry/average/baseline_q_index": int(opts.baseline_q_index),
            "entry/average/baseline_window": int(opts.baseline_window),
        }
    )
    if opts.baseline_range is not None:
        meta["entry/average/baseline_range"] = np.asarray(
            opts.baseline_range, dtype=np.float64
        )
    if opts.mad_threshold is not None:
        meta["entry/average/mad_threshold"] = float(opts.mad_threshold)
    if rejected:
        meta["entry/average/rejected_files"] = [p for p, _ in rejected]
        meta["entry/average/rejected_reasons"] = [r for _, r in rejected]
    result = dataclasses.replace(
        first,
        path=out,
        analysis_type=("Multitau",),
        saxs_1d=s1,
        saxs_1d_segments=segs,
        intensity_vs_time=ivt,
        multitau=mt_out,
        twotime=None,
        metadata=meta,
        warnings=[],
    )
    if cancel is not None:
        cancel.raise_if_cancelled()
    report(
        progress,
        cancel,
        total - 1 if not want_stack else n_in + n_acc,
        total,
        f"writing {out.name}",
    )
    h, w = first.qmap.shape
    out.parent.mkdir(parents=True, exist_ok=True)
    # Written under a temporary name, completed (file list, G2 stack), then
    # renamed: readers never see a half-written average.
    with atomic_path(out) as tmp:
        write_result(tmp, result, saxs_2d=image, overwrite=True)
        _complete_output(
            tmp,
            accepted,
            (t, h, w) if want_stack else None,
            read_g2_stack_delay,
            lambda k: report(
                progress,
                cancel,
                n_in + n_acc + int(n_acc * (k + 1) / t),
                total,
                f"G2 stack delay {k + 1}/{t}",
            ),
            cancel,
        )
        if out.exists() and not opts.overwrite:
            raise FileExistsError(f"{out} appeared while averaging; not replaced")
    report(progress, cancel, total, total, "done")
    summary.output = out
    summary.fields = fields
    summary.notes = notes
    return summary


def _complete_output(
    path: Path,
    inputs: Sequence[str],
    stack_shape: tuple[int, int, int] | None,
    read_delay: Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]],
    on_delay: Callable[[int], None],
    cancel: CancelToken | None,
) -> None:
    """Add ``/xpcs/average/file_list`` and, optionally, the mean G2 stack to ``path``.

    The file list is where the upstream averaging toolbox records its inputs.
    ``write_result`` takes the G2 stack as one array; a real stack (61 x 3 x 512
    x 1024) is 0.8 GB in float64, so here it is built delay by delay straight
    into the (not yet renamed) output: memory is one delay of one file plus one
    accumulator. The dataset layout follows the writer's (float32, one chunk per
    (delay, quantity) image, lzf or gzip).
    """
    # h5py only here: io has no streaming API for writing the stack
    import h5py

    from xpcsviewer.io.errors import display_path
    from xpcsviewer.io.outputs import check_h5_output, open_h5_output

    with open_h5_output(path, "r+") as f:
        f.require_group("xpcs/average").create_dataset(
            "file_list",
            data=np.array([display_path(p) for p in inputs], dtype=object),
            dtype=h5py.string_dtype(),
        )
        if stack_shape is None:
            return
        t, h, w = stack_shape
        comp = (
            {"compression": "lzf"}
            if "lzf" in h5py.filters.decode
            else {"compression": "gzip"}
        )
        grp = f["xpcs/multitau"]
        ds = grp.create_dataset(
            "unnormalized_G2",
            shape=(t, 3, h, w),
            dtype=np.float32,
            chunks=(1, 1, h, w),
            **comp,
        )
        for k in range(t):
            acc = np.zeros((3, h, w))
            for p in inputs:
                if cancel is not None:
                    cancel.raise_if_cancelled()
                g, ip, if_ = read_delay(p, k)
                acc[0] += g
                acc[1] += ip
                acc[2] += if_
            ds[k] = (acc / len(inputs)).astype(np.float32)
            check_h5_output(ds)
            on_delay(k)
