"""Worker jobs of the Detector and G2 tabs (Qt-free; each takes ``progress``/``cancel``).

Everything detector-sized happens here, off the GUI thread: rasterizing drawn shapes
and thresholds into a new mask (and packing the old one for undo), partitioning a
detector and colouring the preview, per-pixel G2 planes, regrouping, writing files.
The GUI thread only swaps in the results.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.progress import report

__all__ = [
    "MaskStep",
    "PartitionPreview",
    "g2_plane_job",
    "mask_step_job",
    "partition_job",
    "regroup_job",
    "save_mask_job",
    "save_qmap_job",
    "save_regrouped_job",
    "temp_dir_path",
]

#: colours of the partition preview (tab20 without its reds: red is the user's mask),
#: one per bin modulo 18; alpha 150
_PALETTE = np.array([
    (31, 119, 180), (174, 199, 232), (255, 127, 14), (255, 187, 120), (44, 160, 44),
    (152, 223, 138), (148, 103, 189), (197, 176, 213),
    (140, 86, 75), (196, 156, 148), (227, 119, 194), (247, 182, 210), (127, 127, 127),
    (199, 199, 199), (188, 189, 34), (219, 219, 141), (23, 190, 207), (158, 218, 229)],
    dtype=np.uint8)


@dataclass
class MaskStep:
    """A new mask computed off the GUI thread, to be committed to a MaskHistory.

    ``packed_previous`` is the mask it replaces, packed for undo; ``version`` the
    history version it was computed from (a commit on another version is stale).
    """

    mask: np.ndarray
    packed_previous: bytes
    version: int
    changed: int
    what: str


def mask_step_job(current: np.ndarray, initial: np.ndarray, version: int, what: str,
                  shapes: list | None = None, include: bool = False,
                  image: np.ndarray | None = None, low: float | None = None,
                  high: float | None = None, progress=None, cancel=None) -> MaskStep:
    """Apply drawn shapes (mask, or give back with ``include``) and/or a threshold.

    ``current`` and ``initial`` are the (H, W) bool masks (True = valid): the eraser
    gives back only pixels the initial mask had.
    """
    from xpcsviewer.compute.detector.masking import rasterize, threshold

    cur = np.asarray(current, bool)
    new = cur.copy()
    if shapes:
        sel = rasterize(cur.shape, shapes, progress=progress, cancel=cancel)
        if include:
            new |= sel & np.asarray(initial, bool)
        else:
            new &= ~sel
    if image is not None and (low is not None or high is not None):
        report(progress, cancel, 0, 1, "thresholding")
        new &= ~threshold(image, low, high)
    changed = int((new != cur).sum())
    return MaskStep(new, np.packbits(cur, axis=None).tobytes(), int(version), changed, what)


@dataclass
class PartitionPreview:
    """A partition and its display: ROI maps coloured, pixels per bin."""

    qmap: Any
    rgba_dynamic: np.ndarray  # (H, W, 4) uint8, transparent where excluded
    rgba_static: np.ndarray
    counts_dynamic: np.ndarray  # (Nd,) pixels per dynamic bin
    counts_static: np.ndarray
    settings: dict


def _colour(roi: np.ndarray) -> np.ndarray:
    r = np.asarray(roi).astype(np.intp)
    out = np.zeros((*r.shape, 4), np.uint8)
    sel = r > 0
    out[sel, :3] = _PALETTE[(r[sel] - 1) % len(_PALETTE)]
    out[sel, 3] = 150
    return out


def partition_job(shape: tuple[int, int], geometry: dict, mask: np.ndarray | None,
                  settings: dict, progress=None, cancel=None) -> PartitionPreview:
    """Partition the detector (the CLI's ``make_partition``, cached by geometry, bins and
    mask) and colour the preview.

    ``geometry``: energy_kev, det_dist_m, pixel_size_m, bcx, bcy. ``settings``: dq_num,
    sq_num, dp_num, sp_num, q_style ("linear"/"log"), phi_offset, symmetry_fold.
    """
    from xpcsviewer.compute.detector.partition import (
        PartitionGrid,
        check_consistency,
        geometry_partition,
    )
    from xpcsviewer.compute.detector.qmap import DetectorGeometry

    report(progress, cancel, 0, 3, "partitioning")
    s = dict(settings)
    geo = DetectorGeometry(
        beam_center_x=geometry["bcx"], beam_center_y=geometry["bcy"],
        detector_distance=geometry["det_dist_m"], pixel_size=geometry["pixel_size_m"],
        energy_kev=geometry["energy_kev"])
    grid = PartitionGrid(int(s["dq_num"]), int(s["sq_num"]), int(s["dp_num"]),
                         int(s["sp_num"]), q_style=s.get("q_style", "linear"),
                         phi_offset=float(s.get("phi_offset", 0.0)),
                         symmetry_fold=int(s.get("symmetry_fold", 1)))
    qm = geometry_partition(tuple(shape), geo, mask, grid)
    problems = check_consistency(qm)
    if problems:  # a bug, never shown as a partition
        raise ValueError("inconsistent partition: " + "; ".join(problems))
    report(progress, cancel, 1, 3, "colouring the preview")
    rgba_d = _colour(qm.dynamic_roi_map)
    report(progress, cancel, 2, 3, "colouring the preview")
    rgba_s = _colour(qm.static_roi_map)
    cd = np.bincount(np.asarray(qm.dynamic_roi_map).ravel().astype(np.intp),
                     minlength=qm.n_dynamic + 1)[1:]
    cs = np.bincount(np.asarray(qm.static_roi_map).ravel().astype(np.intp),
                     minlength=qm.n_static + 1)[1:]
    report(progress, cancel, 3, 3, "partition ready")
    return PartitionPreview(qm, rgba_d, rgba_s, cd, cs, s)


def save_qmap_job(path: str, qmap: Any, inputs: list[str], overwrite: bool,
                  source_file: str = "", progress=None, cancel=None) -> str:
    """Write a q-map file as ``xpcsviewer qmap`` does (pySimpleMask's ``/qmap`` layout)."""
    from xpcsviewer.compute.detector.partition import check_consistency
    from xpcsviewer.io.outputs import check_output
    from xpcsviewer.io.results.writer import write_qmap_file

    check_output(path, inputs, overwrite)
    problems = check_consistency(qmap)
    if problems:
        raise ValueError("inconsistent partition: " + "; ".join(problems))
    return str(write_qmap_file(path, qmap, source_file=source_file, overwrite=True))


def save_mask_job(path: str, mask: np.ndarray, inputs: list[str], overwrite: bool,
                  source: str = "", progress=None, cancel=None) -> str:
    """Write a mask file (HDF5, ``/qmap/mask`` and ``/mask``, 1 = valid)."""
    from xpcsviewer.io.masks import write_mask_file
    from xpcsviewer.io.outputs import check_output

    check_output(path, inputs, overwrite)
    return str(write_mask_file(path, mask, source=source, overwrite=True))


def keep_mask_job(dest: str, mask: np.ndarray | None, source: str, progress=None,
                  cancel=None) -> str:
    """Keep the mask drawn on ``source`` in ``dest`` for the next session (None: nothing
    drawn, so no file)."""
    from xpcsviewer.io.masks import write_mask_file

    if mask is None:
        Path(dest).unlink(missing_ok=True)
    else:
        write_mask_file(dest, mask, source=source, overwrite=True)
    return dest


def read_kept_mask_job(path: str, shape: tuple[int, int], progress=None,
                       cancel=None) -> np.ndarray:
    """The mask kept by :func:`keep_mask_job` (of the detector ``shape``)."""
    from xpcsviewer.io.masks import read_mask

    return read_mask(path, shape)


# ----------------------------------------------------------------------- G2 tab
G2_TARGETS = ("g2", "G2", "IP", "IF")


def g2_plane_job(path: str, k: int, target: str, levels=None, progress=None,
                 cancel=None) -> dict:
    """One delay of the per-pixel stack: ``g2`` = G2 / (IP IF) (0 where IP IF = 0),
    or G2, IP, IF; with auto levels from the pixels that hold data, and the display
    pixels for ``levels`` (None: the auto levels; pixels without data transparent)."""
    from xpcsviewer.io import read_g2_stack_delay
    from xpcsviewer.views.display_image import (
        auto_levels,
        image_histogram,
        quantize_job,
    )

    report(progress, cancel, 0, 1, f"reading delay {k}")
    g2, ip, if_ = read_g2_stack_delay(path, int(k))
    den = ip * if_
    has = den > 0
    if target == "g2":
        img = np.zeros_like(g2)
        np.divide(g2, den, out=img, where=has)
    else:
        img = {"G2": g2, "IP": ip, "IF": if_}[target]
    auto = auto_levels(img, 1.0, 99.0, mask=has) if has.any() else (0.0, 1.0)
    display = np.where(has, img, np.float32(np.nan)).astype(np.float32, copy=False)
    out = {"image": img, "levels": auto, "k": int(k), "target": target, "path": str(path),
           "has_data": has, "display": display, "histogram": image_histogram(display)}
    out.update(quantize_job(display, auto if levels is None else levels))
    return out


def temp_dir_path() -> Path:
    """The per-user temporary folder of regrouped files (the window removes the
    files it made there when it closes)."""
    uid = os.getuid() if hasattr(os, "getuid") else 0  # one folder per user
    return Path(tempfile.gettempdir()) / f"xpcsviewer-regrouped-{uid}"


def _temp_dir() -> Path:
    d = temp_dir_path()
    d.mkdir(parents=True, exist_ok=True)
    return d


def regroup_job(path: str, qmap: Any | None, mask: np.ndarray | None, out_dir: str | None,
                tag: str, progress=None, cancel=None) -> dict:
    """Regroup a file's stack (:func:`xpcsviewer.jobs.regroup.regroup_file`) and write
    the result to a new file in ``out_dir`` (default: a per-user temporary folder),
    so that every tab can open it like any file. Never writes over anything."""
    from xpcsviewer.io.results.g2stack import g2_side_path
    from xpcsviewer.jobs.regroup import regroup_file, write_regrouped

    result, img = regroup_file(path, qmap, mask, progress=progress, cancel=cancel)
    folder = Path(out_dir) if out_dir else _temp_dir()
    stem = Path(path).name
    for suffix in ("_results.hdf", ".hdf", ".h5"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    i = 1
    while (out := folder / f"{stem}_regrouped_{tag}{i}_results.hdf").exists():
        i += 1
    written = write_regrouped(out, result, img, [path, g2_side_path(path)])
    return {"path": str(written), "result": result, "saxs_2d": img, "source": str(path)}


def save_regrouped_job(dest: str, result: Any, saxs_2d: np.ndarray, inputs: list[str],
                       overwrite: bool, progress=None, cancel=None) -> str:
    """"Save as": the regrouped result in a new file (never an input)."""
    from xpcsviewer.jobs.regroup import write_regrouped

    report(progress, cancel, 0, 1, f"writing {Path(dest).name}")
    return str(write_regrouped(dest, result, saxs_2d, inputs, overwrite))
