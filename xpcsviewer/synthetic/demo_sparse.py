"""The demo's photon-sparse acquisitions: one per raw layout, with its truth.

Each spec of :data:`SPARSE_SPECS` is one small acquisition in one layout, written into
``OUT/raw/`` (:mod:`xpcsviewer.synthetic.sparse_files`) with the q-map file of its
detector (``NAME_qmap.h5``, as ``xpcsviewer qmap`` writes it), then correlated on
photons (:func:`~xpcsviewer.compute.pipeline_sparse.correlate_events_to_result`, what
``xpcsviewer correlate`` runs on sparse sources) into ``OUT/NAME_results.hdf`` with the
truth under ``/entry/sample``:

- frame layouts (Rigaku module, Rigaku 3M, ESRF CSR blocks, ImageD11): Brownian speckle
  of silica spheres in water on a small region near the beam, at a few hundredths of a
  photon per pixel per frame (:func:`~xpcsviewer.synthetic.sparse_speckle.iter_speckle_hits`);
- Timepix: photon arrival times of a field with correlation time ``tau``
  (:func:`~xpcsviewer.synthetic.sparse_speckle.iter_arrivals`), correlated in
  time-tag mode (a frame per detector tick).

The XSVS acquisitions (:mod:`~xpcsviewer.synthetic.demo_xsvs`, specs with ``xsvs``) go
the same way, their entries also stating the truth per q-bin under ``xsvs``.

``OUT/raw/truth.json`` lists each raw file with its layout, frames, hits, frame time,
q-map, result and truth. :mod:`xpcsviewer.synthetic.demo` decides what is reused.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.progress import CancelToken

__all__ = [
    "RAW_DIR",
    "SPARSE_SPECS",
    "TRUTH_FILE",
    "TRUTH_MARK",
    "file_digest",
    "make_sparse",
    "raw_paths",
    "sparse_truth",
    "time_tag",
    "truth_document",
]

#: the raw files' folder in the demo folder
RAW_DIR = "raw"
TRUTH_FILE = "truth.json"
#: what truth.json says it is (a file without it is not the demo's)
TRUTH_MARK = "xpcsviewer demo: sparse raw acquisitions and their truth"

_SILICA = {"model": "brownian", "temperature_k": 298.15}

SPARSE_SPECS: list[dict[str, Any]] = [
    {
        "name": "S01_rigaku_R100nm_water",
        "description": "APS Rigaku XSPA .bin (one 512 x 1024 module): silica R = 100 nm in "
                       "water, photon-sparse Brownian speckle on 128 x 128 pixels at the beam",
        "layout": "rigaku",
        "geometry": {"shape": (512, 1024), "energy_kev": 10.0, "det_dist_m": 5.0,
                     "pixel_size_m": 76e-6, "bcx": 512.0, "bcy": 256.0},
        "roi": {"row": 192, "col": 448, "rows": 128, "cols": 128},
        "beamstop_px": 8,
        "partition": {"dq_num": 8, "sq_num": 32, "r_max_px": 62},
        "acquisition": {"frame_time": 2.5e-5, "n_frames": 2500, "rate": 0.1,
                        "background": 0.1, "speckle_px": 4},
        "sample": {**_SILICA, "radius_m": 100e-9, "contrast": 0.25},
        "analysis": ("Multitau",),
    },
    {
        "name": "S02_rigaku3m_R100nm_water",
        "description": "APS Rigaku 3M (six .bin module files on a 1676 x 2100 canvas): "
                       "silica R = 100 nm in water, 1000 frames around the beam between "
                       "two modules, a few dark counts on every module",
        "layout": "rigaku-3m",
        "geometry": {"shape": (1676, 2100), "energy_kev": 10.0, "det_dist_m": 5.0,
                     "pixel_size_m": 76e-6, "bcx": 1050.0, "bcy": 838.0},
        "roi": {"row": 774, "col": 960, "rows": 128, "cols": 180},
        "beamstop_px": 30,
        "partition": {"dq_num": 4, "sq_num": 16, "r_max_px": 63},
        "acquisition": {"frame_time": 1e-5, "n_frames": 1000, "rate": 0.08,
                        "background": 0.3, "speckle_px": 4, "dark_per_frame": 1.0},
        "sample": {**_SILICA, "radius_m": 100e-9, "contrast": 0.25},
        "analysis": ("Multitau",),
    },
    {
        "name": "S03_esrf_csr_R150nm_water",
        "description": "ESRF ID10 sparse (CSR) HDF5, a series of 4 block files (Eiger "
                       "514 x 1030): silica R = 150 nm in water",
        "layout": "esrf-csr",
        "geometry": {"shape": (514, 1030), "energy_kev": 10.0, "det_dist_m": 5.0,
                     "pixel_size_m": 75e-6, "bcx": 515.0, "bcy": 257.0},
        "roi": {"row": 225, "col": 483, "rows": 64, "cols": 64},
        "beamstop_px": 6,
        "partition": {"dq_num": 4, "sq_num": 16, "r_max_px": 31},
        "acquisition": {"frame_time": 2e-4, "n_frames": 2000, "rate": 0.08,
                        "background": 0.3, "speckle_px": 2, "frames_per_block": 500},
        "sample": {**_SILICA, "radius_m": 150e-9, "contrast": 0.25},
        "analysis": ("Multitau",),
    },
    {
        "name": "S04_id11_sparse_R500nm_water",
        "description": "ESRF ID11 ImageD11 sparse frames (512 x 512 detector, scan 1.1): "
                       "silica R = 500 nm in water",
        "layout": "id11-sparse",
        "geometry": {"shape": (512, 512), "energy_kev": 10.0, "det_dist_m": 5.0,
                     "pixel_size_m": 75e-6, "bcx": 256.0, "bcy": 256.0},
        "roi": {"row": 224, "col": 224, "rows": 64, "cols": 64},
        "beamstop_px": 6,
        "partition": {"dq_num": 4, "sq_num": 16, "r_max_px": 31},
        "acquisition": {"frame_time": 5e-4, "n_frames": 2000, "rate": 0.08,
                        "background": 0.3, "speckle_px": 2},
        "sample": {**_SILICA, "radius_m": 500e-9, "contrast": 0.25},
        "analysis": ("Multitau",),
    },
    {
        "name": "S05_timepix_timetag_tau200ns",
        "description": "Timepix3 event list (256 x 256, tick 1.5625 ns) correlated in "
                       "time-tag mode: field correlation time 200 ns on 24 x 24 pixels "
                       "(5 MHz per pixel, far above a real Timepix, for a precise g2 in "
                       "0.2 ms)",
        "layout": "timepix",
        "geometry": {"shape": (256, 256), "energy_kev": 10.0, "det_dist_m": 5.0,
                     "pixel_size_m": 55e-6, "bcx": 128.0, "bcy": 128.0},
        "roi": {"row": 148, "col": 116, "rows": 24, "cols": 24},
        "beamstop_px": 0,
        "partition": {"dq_num": 2, "sq_num": 4},
        "acquisition": {"tick_s": 1.5625e-9, "duration_s": 2e-4, "rate_hz": 5e6},
        "sample": {"model": "exponential", "tau_s": 200e-9, "contrast": 0.5},
        "analysis": ("Multitau",),
    },
]


# ---------------------------------------------------------------------- names
def _raw_names(spec: dict[str, Any]) -> list[str]:
    """The raw files of a spec, relative to the raw folder (a reader opens the first)."""
    name, layout = spec["name"], spec["layout"]
    if layout == "rigaku":
        return [f"{name}.bin"]
    if layout == "rigaku-3m":
        return [f"{name}.bin.00{k}" for k in range(6)]
    if layout == "esrf-csr":
        acq = spec["acquisition"]
        n_blocks = -(-int(acq["n_frames"]) // int(acq["frames_per_block"]))
        return [f"{name}_sparse_frame_0_{i:05d}.h5" for i in range(n_blocks)]
    if layout == "id11-sparse":
        return [f"{name}_sparse.h5"]
    if layout == "timepix":
        return [f"{name}_events.h5"]
    if layout == "hdf5":
        return [f"{name}.h5"]
    if layout == "npy":
        return [f"{name}.npy"]
    raise ValueError(f"unknown sparse layout {layout!r}")


def raw_paths(out: str | Path, spec: dict[str, Any]) -> tuple[list[Path], Path]:
    """(raw files, q-map file) of a spec in the demo folder ``out``."""
    raw = Path(out) / RAW_DIR
    return [raw / n for n in _raw_names(spec)], raw / f"{spec['name']}_qmap.h5"


def file_digest(path: Path) -> tuple[int, str]:
    """(size, sha256) of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return path.stat().st_size, h.hexdigest()


# ---------------------------------------------------------------------- geometry
def _detector(spec: dict[str, Any]) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
    """(partition, q, phi, roi mask) of the spec's whole detector."""
    if "xsvs" in spec:
        from xpcsviewer.synthetic.demo_xsvs import xsvs_detector

        return xsvs_detector(spec)
    from xpcsviewer.compute.detector.partition import PartitionGrid, make_partition
    from xpcsviewer.compute.detector.qmap import DetectorGeometry
    from xpcsviewer.synthetic.speckle import Geometry

    geo = Geometry(**spec["geometry"])
    q, phi = geo.qmap()
    h, w = geo.shape
    roi = spec["roi"]
    rows, cols = np.ogrid[:h, :w]
    r = np.hypot(rows - geo.bcy, cols - geo.bcx)
    part = spec.get("partition", {})
    mask = ((rows >= roi["row"]) & (rows < roi["row"] + roi["rows"])
            & (cols >= roi["col"]) & (cols < roi["col"] + roi["cols"]))
    mask = mask & (r > spec.get("beamstop_px", 0))
    if part.get("r_max_px"):
        mask &= r <= part["r_max_px"]
    if spec["layout"] == "rigaku-3m":
        mask &= ~_gaps((h, w))
    grid = PartitionGrid(part.get("dq_num", 4), part.get("sq_num", 16),
                         part.get("dp_num", 1), part.get("sp_num", 1))
    qm = make_partition(q, phi, mask, grid, DetectorGeometry(
        beam_center_x=geo.bcx, beam_center_y=geo.bcy, detector_distance=geo.det_dist_m,
        pixel_size=geo.pixel_size_m, energy_kev=geo.energy_kev))
    return qm, q, phi, mask


def _gaps(shape: tuple[int, int]) -> np.ndarray:
    """(H, W) bool: the gaps between the modules of a Rigaku 3M canvas."""
    from xpcsviewer.synthetic.sparse_files import RIGAKU_GAP, RIGAKU_MODULE_SHAPE

    h, w = shape
    mh, mw = RIGAKU_MODULE_SHAPE
    rr = np.arange(h) % (mh + RIGAKU_GAP[0]) >= mh
    cc = np.arange(w) % (mw + RIGAKU_GAP[1]) >= mw
    return rr[:, None] | cc[None, :]


def _roi_slices(spec: dict[str, Any]) -> tuple[slice, slice]:
    roi = spec["roi"]
    return (slice(roi["row"], roi["row"] + roi["rows"]),
            slice(roi["col"], roi["col"] + roi["cols"]))


# ---------------------------------------------------------------------- truth
def time_tag(spec: dict[str, Any]) -> bool:
    """A Timepix spec of photon arrival times correlated per tick (no ``frame_time``; a
    Timepix spec with one is simulated in frames and read with that bin time)."""
    return spec["layout"] == "timepix" and "frame_time" not in spec["acquisition"]


def sparse_truth(spec: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    """The truth of a spec as ``{key: (value, unit)}`` (D in Angstrom^2/s for the
    Brownian ones; tau and contrast for the time-tag one)."""
    from xpcsviewer.synthetic.simulated import sample_truth

    if "xsvs" in spec:
        from xpcsviewer.synthetic.demo_xsvs import xsvs_sample_truth

        return xsvs_sample_truth(spec)
    if not time_tag(spec):
        return sample_truth(spec)
    smp = spec["sample"]
    m = max(1, round(1.0 / float(smp["contrast"])))
    acq = spec["acquisition"]
    return {
        "model": (smp.get("model", "exponential"), ""),
        "tau": (float(smp["tau_s"]), "s"),
        "contrast": (1.0 / m, ""),
        "speckle_modes": (m, ""),
        "rate": (float(acq["rate_hz"]), "photons/s/pixel"),
        "description": (spec.get("description", ""), ""),
    }


def truth_document(entries: list[dict[str, Any]], seed: int, version: int) -> dict[str, Any]:
    """The content of ``raw/truth.json`` for these entries (spec order)."""
    return {"written_by": TRUTH_MARK, "demo_version": int(version), "seed": int(seed),
            "acquisitions": entries}


# ---------------------------------------------------------------------- simulation
def make_sparse(out: str | Path, spec: dict[str, Any], seed: int, record: dict[str, Any],
                record_group: str, cancel: CancelToken | None = None,
                overwrite: bool = False) -> Path:
    """Simulate, write and correlate one raw acquisition of the demo.

    Writes the raw files and the q-map into ``OUT/raw``
    (:func:`~xpcsviewer.synthetic.raw_sim.write_acquisition`, faults planted) and the
    result ``OUT/NAME_results.hdf`` (each atomically), correlated on photons (dense
    frames: on frames), the result recording ``record`` plus ``raw_files`` (name, size,
    sha256 of each) and ``truth_json`` (its truth.json entry) under ``record_group``.
    Returns the result's path.
    """
    from xpcsviewer.compute.pipeline import (
        FrameStream,
        ResultRecord,
        correlate_to_result,
    )
    from xpcsviewer.compute.pipeline_sparse import choose_path, correlate_events_to_result
    from xpcsviewer.compute.spec import CorrelateSpec
    from xpcsviewer.io.raw import open_raw_source
    from xpcsviewer.io.results.writer import write_result
    from xpcsviewer.synthetic.raw_sim import write_acquisition

    out = Path(out)
    result_path = out / f"{spec['name']}_results.hdf"
    acq = write_acquisition(out, spec, seed, cancel=cancel)
    files, qmap_path, qm, shape = acq.files, acq.qmap_path, acq.qmap, acq.shape
    truth = sparse_truth(spec)
    time_tag = acq.time_tag
    with open_raw_source(files[0], shape=shape, bin_time=acq.bin_time) as raw:
        n = raw.n_frames
        frame_time = float(raw.frame_time) if time_tag else float(acq.frame_time)
        used = ((np.asarray(qm.mask) > 0) & (np.asarray(qm.dynamic_roi_map) > 0)
                & (np.asarray(qm.static_roi_map) > 0))
        photons = bool(raw.sparse)
        # what the reader counts (a Rigaku file's count-0 word that marks its last frame
        # included), as `xpcsviewer correlate` records it
        hits = int(raw.n_events) if photons else acq.hits
        choice = choose_path("sparse" if photons else "auto", sparse_source=photons,
                             time_tag=time_tag, n_frames=n,
                             detector_pixels=shape[0] * shape[1],
                             correlated_pixels=int(used.sum()), hits=hits,
                             mode="multitau")
        config = {**raw.describe(), "raw": os.path.realpath(files[0]), "backend": "numpy",
                  **choice.as_config(), "raw_events": hits,
                  "source": ("xpcsviewer demo: simulated photon-sparse acquisition"
                             if photons else "xpcsviewer demo: simulated dense acquisition"),
                  "seed": int(seed)}
        if time_tag:
            config.update(time_tag=True, tick_s=float(raw.tick_s))
        record_of = ResultRecord(path=result_path, raw_path=os.path.realpath(files[0]),
                                 config=config, count_time=frame_time,
                                 start_time="2026-01-01T00:00:00")
        if photons:
            # rows of the per-frame means: a power of two of ticks (kept so that the
            # demo files stay as they are)
            group = (1 << max(0, math.ceil(math.log2(n / 100_000)))) if time_tag else 1
            made = correlate_events_to_result(
                FrameStream(lambda: raw.iter_events(), n, frame_time, raw.stride, raw.avg),
                qm, CorrelateSpec(mode="multitau"), record_of, cancel=cancel,
                scattering_group=group)
        else:
            made = correlate_to_result(
                FrameStream(lambda: raw.iter_chunks(256, reuse=True), n, frame_time), qm,
                CorrelateSpec(mode="multitau"), record_of, cancel=cancel)
        raw_frames = int(raw.raw_frames)
        raw_hits = int(raw.raw_events) if photons else acq.hits
    entry = {
        "name": spec["name"],
        "layout": spec["layout"],
        "description": spec.get("description", ""),
        "files": [f"{RAW_DIR}/{p.name}" for p in files],
        "open": f"{RAW_DIR}/{files[0].name}",
        "qmap": f"{RAW_DIR}/{qmap_path.name}",
        "result": result_path.name,
        "detector_shape": list(shape),
        "frames": raw_frames,
        "hits": raw_hits,
        "frame_time_s": frame_time,
        "time_tag": time_tag,
        "truth": {k: v[0] for k, v in truth.items() if k != "description"},
        "truth_units": {k: v[1] for k, v in truth.items() if v[1]},
        "correlate": (f"xpcsviewer correlate {RAW_DIR}/{files[0].name} --qmap "
                      f"{RAW_DIR}/{qmap_path.name} -o OUT.hdf"
                      + _time_options(acq, frame_time)),
    }
    if "faults" in spec:
        entry.update(
            counter_cap=acq.counter_cap,
            faults=acq.faults,
            inspect=(f"xpcsviewer inspect {RAW_DIR}/{files[0].name} --qmap "
                     f"{RAW_DIR}/{qmap_path.name}" + _time_options(acq, frame_time)
                     + (f" --cap {acq.counter_cap}" if acq.counter_cap is not None else "")
                     + " -o findings.json"))
    if "xsvs" in spec:
        from xpcsviewer.synthetic.demo_xsvs import xsvs_truth

        entry.update(counter_cap=acq.counter_cap, xsvs=xsvs_truth(spec, qm),
                     xsvs_command=(f"xpcsviewer xsvs {RAW_DIR}/{files[0].name} --qmap "
                                   f"{RAW_DIR}/{qmap_path.name}"
                                   + _time_options(acq, frame_time)
                                   + (f" --cap {acq.counter_cap}"
                                      if acq.counter_cap is not None else "")
                                   + f" --result {result_path.name} -o xsvs.csv"))
    res = made.result
    res.path = result_path
    res.sample = {k: v[0] for k, v in truth.items()}
    res.sample_units = {k: v[1] for k, v in truth.items() if v[1]}
    digests = [[p.name, *file_digest(p)] for p in (*files, qmap_path)]
    full = {**record, "raw_files": json.dumps(digests), "truth_json": json.dumps(entry)}
    res.metadata.update({f"{record_group.strip('/')}/{k}": v for k, v in full.items()})
    return write_result(result_path, res, saxs_2d=made.saxs_2d, overwrite=overwrite)


def _time_options(acq: Any, frame_time: float) -> str:
    """The command-line options that give a raw file its frames' clock."""
    if acq.time_tag:
        return ""
    if acq.bin_time is not None:
        return f" --bin-time {acq.bin_time:g}"
    return f" --frame-time {frame_time:g}"
