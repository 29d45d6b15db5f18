"""One simulated raw acquisition written in a raw layout, with its q-map and the truth of
its planted faults.

:func:`write_acquisition` is what the demo (:func:`~xpcsviewer.synthetic.demo_sparse.make_sparse`,
which then correlates it) and the fault finder's recall tests share: from a spec of
:mod:`~xpcsviewer.synthetic.demo_sparse` (name, layout, geometry, region, partition,
acquisition, sample, optional ``faults``) it simulates the photons, plants the faults
(:func:`~xpcsviewer.synthetic.faults.inject_faults`) and writes the raw files and the
q-map file into ``OUT/raw``. Layouts: ``rigaku``, ``rigaku-3m``, ``esrf-csr``,
``id11-sparse``, ``timepix`` (time-tag: ``tick_s`` and ``duration_s``; frames: also
``frame_time`` and ``n_frames``, each frame's photons spread over its ticks), and the
dense ``hdf5`` (``/entry/data/data``) and ``npy``. A spec with ``xsvs`` (the XSVS
acquisitions, :mod:`~xpcsviewer.synthetic.demo_xsvs`) has its own q-map and photons.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.progress import CancelToken
from xpcsviewer.synthetic.demo_sparse import (
    _detector,
    _gaps,
    _roi_slices,
    raw_paths,
    sparse_truth,
    time_tag,
)

__all__ = ["Acquisition", "write_acquisition"]

#: layouts that store dense frames
DENSE_LAYOUTS = ("hdf5", "npy")


@dataclass
class Acquisition:
    """What :func:`write_acquisition` wrote.

    Attributes
    ----------
    files : list of Path
        The raw files (a reader opens the first).
    qmap_path : Path
    qmap : QMap
    shape : (H, W)
    n_frames : int or None
        Frames written (None: a time-tag event list, whose frames are ticks).
    frame_time : float or None
        Seconds per frame (the tick of a time-tag list).
    bin_time : float or None
        The frame time to read an event list in frames with (None otherwise).
    time_tag : bool
    counter_cap : int or None
        The counter's cap the counts were clipped to (the faults' ``cap``).
    hits : int
        Hits (frame, pixel) written; photons for an event list.
    faults : list of dict
        The planted faults in the findings contract (see
        :mod:`~xpcsviewer.synthetic.faults`).
    """

    files: list[Path]
    qmap_path: Path
    qmap: Any
    shape: tuple[int, int]
    n_frames: int | None
    frame_time: float | None
    bin_time: float | None = None
    time_tag: bool = False
    counter_cap: int | None = None
    hits: int = 0
    faults: list[dict[str, Any]] = field(default_factory=list)


def _speckle(spec: dict[str, Any], q: np.ndarray, mask: np.ndarray, seed: int,
             cancel: CancelToken | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hits (frame, pixel, count) of a frame layout's speckle, plus its dark counts."""
    from xpcsviewer.synthetic.analytic import sphere_form_factor
    from xpcsviewer.synthetic.sparse_speckle import speckle_hits

    truth = sparse_truth(spec)
    acq = spec["acquisition"]
    rs, cs = _roi_slices(spec)
    q_roi = q[rs, cs]
    rate = float(acq["rate"]) * (sphere_form_factor(q_roi, truth["radius"][0])
                                 + float(acq.get("background", 0.1)))
    n = int(acq["n_frames"])
    f, p, c = speckle_hits(
        q_roi, n, float(acq["frame_time"]), truth["D"][0],
        detector_shape=q.shape, origin=(rs.start, cs.start),
        beta=1.0 / truth["speckle_modes"][0], rate=rate, mask=mask[rs, cs],
        speckle_px=int(acq.get("speckle_px", 2)), seed=seed, cancel=cancel)
    dark = float(acq.get("dark_per_frame", 0.0))
    if dark > 0:
        # a few single counts anywhere on the modules (hot pixels, cosmic rays)
        rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[2])
        k = rng.poisson(dark, n)
        df = np.repeat(np.arange(n, dtype=np.int64), k)
        free = np.flatnonzero(~_gaps(q.shape).ravel() & ~mask.ravel())
        dp = free[rng.integers(0, free.size, df.size)]
        f = np.concatenate([f, df])
        p = np.concatenate([p, dp])
        c = np.concatenate([c, np.ones(df.size, c.dtype)])
        order = np.lexsort((p, f))
        f, p, c = f[order], p[order], c[order]
    return f, p, c


def _write_raw(spec: dict[str, Any], files: list[Path], hits: Any, shape: tuple[int, int],
               n_frames: int | None, frame_time: float | None, cap: int | None) -> None:
    from xpcsviewer.synthetic import sparse_files as sf

    layout = spec["layout"]
    if layout == "timepix":
        x, y, toa = hits
        sf.write_timepix(files[0], x, y, toa, spec["acquisition"]["tick_s"], shape,
                         overwrite=True)
        return
    f, p, c = hits
    if layout == "rigaku":
        sf.write_rigaku_bin(files[0], f, p, c, n_frames=n_frames, overwrite=True)
    elif layout == "rigaku-3m":
        base = files[0].with_name(files[0].name[: -len(".000")])
        sf.write_rigaku_3m(base, f, p, c, n_frames=n_frames, overwrite=True)
    elif layout == "esrf-csr":
        prefix = files[0].with_name(files[0].name[: -len("_00000.h5")])
        sf.write_esrf_csr(prefix, f, p, c, n_frames=n_frames, shape=shape,
                          frames_per_block=int(spec["acquisition"]["frames_per_block"]),
                          dtype=spec["acquisition"].get("count_dtype"), overwrite=True)
    elif layout == "id11-sparse":
        sf.write_id11_sparse(files[0], f, p, c, shape, n_frames=n_frames, overwrite=True)
    elif layout in DENSE_LAYOUTS:
        sf.write_dense(files[0], f, p, c, shape, n_frames=n_frames, frame_time=frame_time,
                       saturation=cap, overwrite=True)
    else:  # pragma: no cover - raw_paths refused it
        raise ValueError(layout)


def write_acquisition(out: str | Path, spec: dict[str, Any], seed: int,
                      cancel: CancelToken | None = None) -> Acquisition:
    """Simulate one acquisition of ``spec``, plant its faults, write it into ``OUT/raw``.

    Writes the raw files and the q-map file ``NAME_qmap.h5`` (each atomically,
    replacing what is there). Same spec and seed, same files.

    Returns
    -------
    Acquisition
    """
    from xpcsviewer.io.results.writer import write_qmap_file
    from xpcsviewer.synthetic.faults import counts_to_events, inject_faults
    from xpcsviewer.synthetic.sparse_speckle import simulate_arrivals

    out = Path(out)
    files, qmap_path = raw_paths(out, spec)
    qm, q, _phi, mask = _detector(spec)
    shape = (int(q.shape[0]), int(q.shape[1]))
    acq = spec["acquisition"]
    faults = dict(spec.get("faults") or {})
    cap = faults.get("cap", acq.get("counter_cap"))
    tagged = time_tag(spec)
    planted: list[dict[str, Any]] = []
    if "xsvs" in spec:
        # per q-bin tau and rate, frames integrating the intensity (demo_xsvs)
        from xpcsviewer.synthetic.demo_xsvs import xsvs_hits

        hits = xsvs_hits(spec, qm, seed, cancel=cancel)
        n_hits = int(hits[0].size)
        if tagged:
            n_frames, frame_time = None, float(acq["tick_s"])
        else:
            n_frames, frame_time = int(acq["n_frames"]), float(acq["frame_time"])
    elif tagged:
        if faults:
            raise ValueError("faults are planted in frames: give the Timepix spec a "
                             "frame_time and n_frames")
        truth = sparse_truth(spec)
        rs, cs = _roi_slices(spec)
        x, y, toa = simulate_arrivals(
            (rs.stop - rs.start, cs.stop - cs.start), float(acq["rate_hz"]),
            truth["tau"][0], truth["contrast"][0], float(acq["duration_s"]),
            float(acq["tick_s"]), seed, cancel=cancel)
        hits: Any = (x + cs.start, y + rs.start, toa)
        n_frames, frame_time, n_hits = None, float(acq["tick_s"]), int(toa.size)
    else:
        n_frames, frame_time = int(acq["n_frames"]), float(acq["frame_time"])
        hits = _speckle(spec, q, mask, seed, cancel)
        if faults:
            hits, planted = inject_faults(hits, shape, n_frames, frame_time, faults,
                                          dynamic_map=np.asarray(qm.dynamic_roi_map),
                                          seed=seed)
        n_hits = int(hits[0].size)
        if spec["layout"] == "timepix":
            ticks = round(frame_time / float(acq["tick_s"]))
            hits = counts_to_events(*hits, shape, ticks, seed)
            n_hits = int(hits[0].size)
    files[0].parent.mkdir(parents=True, exist_ok=True)
    _write_raw(spec, files, hits, shape, n_frames, frame_time, cap)
    write_qmap_file(qmap_path, qm, source_file="xpcsviewer demo", overwrite=True)
    bin_time = frame_time if spec["layout"] == "timepix" and not tagged else None
    return Acquisition(files=files, qmap_path=qmap_path, qmap=qm, shape=shape,
                       n_frames=n_frames, frame_time=frame_time, bin_time=bin_time,
                       time_tag=tagged, counter_cap=None if cap is None else int(cap),
                       hits=n_hits, faults=planted)
