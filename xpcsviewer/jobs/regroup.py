"""Regroup a result file's per-pixel G2 stack with another partition or mask, and write
the result (the job of ``xpcsviewer regroup`` and the G2 tab; the binning is
:mod:`xpcsviewer.compute.detector.regroup`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from xpcsviewer.compute.detector.partition import restrict_partition
from xpcsviewer.compute.detector.regroup import correlated_pixels, regroup_g2, regrouped_result
from xpcsviewer.model.result import QMap, XpcsResult
from xpcsviewer.progress import CancelToken, ProgressCallback

__all__ = ["regroup_file", "write_regrouped"]


def regroup_file(
    path: str | Path,
    qmap: QMap | None = None,
    mask: np.ndarray | None = None,
    *,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> tuple[XpcsResult, np.ndarray]:
    """Regroup a result file's per-pixel stack: the CLI's and the G2 tab's one entry.

    Parameters
    ----------
    path : path
        A multi-tau result file with ``unnormalized_G2`` (in-file or side file).
    qmap : QMap, optional
        The partition (default: the file's own).
    mask : (H, W) bool, optional
        Extra valid-pixel mask (True = keep), applied to the partition's bins.

    Returns
    -------
    result : XpcsResult
        Ready for :func:`xpcsviewer.io.results.writer.write_result`.
    saxs_2d : (H, W) float64
        The source image, for the writer.
    """
    from xpcsviewer.io import read_result, read_saxs_2d
    from xpcsviewer.jobs._g2_stack import checked_stack_reader

    src = read_result(path)
    if src.multitau is None or not src.multitau.has_unnormalized_G2:
        from xpcsviewer.io.errors import XpcsFileError

        raise XpcsFileError(path, "no per-pixel G2 stack to regroup",
                            dataset="/xpcs/multitau/unnormalized_G2",
                            expected="a file written with --save-g2-pixel")
    qm = src.qmap if qmap is None else qmap
    if qm.shape != src.qmap.shape:
        raise ValueError(f"partition of shape {qm.shape} for a {src.qmap.shape} detector")
    used = correlated_pixels(src.qmap)
    read = checked_stack_reader(path, src.qmap.shape, used)
    notes = ["own partition" if qmap is None else "another partition"]
    if mask is not None:
        qm = restrict_partition(qm, mask)
        notes.append(f"mask excludes {int((~np.asarray(mask, bool)).sum())} pixels")
    reg = regroup_g2(read, src.multitau.delay_frames.size, qm, used, progress=progress,
                     cancel=cancel)
    img = read_saxs_2d(path)
    return regrouped_result(src, reg, img, "; ".join(notes)), img


def write_regrouped(out: str | Path, result: XpcsResult, saxs_2d: np.ndarray,
                    inputs: list[str | Path], overwrite: bool = False) -> Path:
    """Write a regrouped result under the one output rule (never an input; no
    replacing without ``overwrite``), atomically. Returns the written path."""
    from xpcsviewer.io.outputs import check_output
    from xpcsviewer.io.results.writer import write_result

    check_output(out, inputs, overwrite)
    res = dataclasses.replace(result, path=Path(out))
    return write_result(out, res, saxs_2d=saxs_2d, overwrite=True)
