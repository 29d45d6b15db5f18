"""Averaging repeated measurements into one result file, with outlier rejection (a job:
files in, a file out; the statistics are :mod:`xpcsviewer.compute.averaging`).

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
output holds g2 = 0, err = 0, which readers treat as missing, and NaN where no file
has a valid point at that delay in any bin (a lone frame pair: no measurement). SAXS 1-D/2-D,
intensity vs time and the per-pixel G2/IP/IF stack (built one delay at a time)
are plain means over the accepted files.

Everything here is NumPy float64 and Qt-free; it may run off the main thread.
The accumulation is I/O bound, so it does not go through the array backends.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.compute.averaging import (
    ErrorMethod,
    MeanAccumulator,
    PointAccumulator,
)
from xpcsviewer.jobs._average_screen import (
    AverageOptions,
    AverageSummary,
    FileStat,
    IncompatibleFilesError,
    NoFilesAcceptedError,
    UnreadableFilesError,
    screen_files,
)
from xpcsviewer.model.result import XpcsResult
from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = [
    "AverageOptions",
    "AverageSummary",
    "FileStat",
    "IncompatibleFilesError",
    "NoFilesAcceptedError",
    "UnreadableFilesError",
    "average_files",
    "screen_files",
]


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
        averaged, e.g. :func:`xpcsviewer.views.labels.average_output_name`); it is
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
    saxs1d = MeanAccumulator()
    seg = MeanAccumulator() if first.saxs_1d_segments is not None else None
    int_t = MeanAccumulator() if first.intensity_vs_time is not None else None
    img = MeanAccumulator() if opts.include_saxs_2d else None
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
    # a delay no file measured in any bin (a lone frame pair) stays NaN, never a 0
    # that reads as g2 = 0 (issue 48); a single missing bin keeps the files' 0
    none = ~(np.asarray(n_g2) > 0).any(axis=tuple(range(1, np.ndim(n_g2))))
    if none.any():
        g2, g2_err = np.array(g2, float), np.array(g2_err, float)
        g2[none], g2_err[none] = np.nan, np.nan
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
