"""The built-in demo data set: result files made from simulated frames by our correlator.

Each file is described by a spec (see :func:`xpcsviewer.synthetic.results.build_result`
for the keys) with its geometry, partition, acquisition and sample truth. Photon-
counting speckle frames are simulated (:mod:`xpcsviewer.synthetic.speckle`) and run
through our own multi-tau / two-time correlator
(:func:`xpcsviewer.synthetic.simulated.simulate_result`); the truth is written under
``/entry/sample`` (D in Angstrom^2/s, radius, temperature, viscosity, contrast, model)
so that fits can be checked against it. Each file also records what it is under
``/xpcs/demo`` (demo version, name, seeds, hash of its spec): a complete file of the
same version, seed and spec is reused by the next run instead of simulated again.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py

from xpcsviewer.compute.multitau import delay_list
from xpcsviewer.io.errors import display_path
from xpcsviewer.io.g2stack import G2_SIDE_DATASET, g2_side_path
from xpcsviewer.io.outputs import OutputRefusedError
from xpcsviewer.io.writer import write_result, write_result_with_g2_stack
from xpcsviewer.progress import CancelToken, ProgressCallback, report
from xpcsviewer.synthetic.simulated import simulate_result

__all__ = [
    "DEMO_SPECS",
    "DEMO_VERSION",
    "DemoFiles",
    "DemoRefusedError",
    "check_demo_file",
    "write_demo",
]

#: Bump when the simulator or correlator changes what a demo file holds: files of
#: another version are then not reused (``xpcsviewer demo`` asks for --overwrite).
DEMO_VERSION = 1
#: Where each demo file records what it is (version, name, seeds, spec hash).
DEMO_RECORD = "/xpcs/demo"

# A small detector (128 x 128 pixels of 150 um, e.g. a 2x2-binned 75 um detector)
# 5 m from the sample at 10 keV: q from ~0.0006 to ~0.0137 1/Angstrom. Speckles
# are 2 x 2 pixels.
_GEOMETRY = {
    "shape": (128, 128),
    "energy_kev": 10.0,
    "det_dist_m": 5.0,
    "pixel_size_m": 150e-6,
    "bcx": 63.5,
    "bcy": 65.0,
}
_ACQ = {"frame_time": 1e-4, "n_frames": 1000, "rate": 1.0, "background": 0.05}
_BEAMSTOP = 8

DEMO_SPECS: list[dict[str, Any]] = [
    {
        "name": "A01_silica_R100nm_water",
        "description": "silica colloids, radius 100 nm, in water at 25 C (Brownian)",
        "geometry": _GEOMETRY,
        "beamstop_px": _BEAMSTOP,
        "partition": {"dq_num": 16, "sq_num": 64},
        "acquisition": {**_ACQ, "frame_time": 4e-5, "n_frames": 2000},
        "sample": {
            "model": "brownian",
            "radius_m": 100e-9,
            "temperature_k": 298.15,
            "contrast": 0.22,
        },
        "analysis": ("Multitau",),
    },
    {
        "name": "A02_silica_R250nm_water",
        "description": "silica colloids, radius 250 nm, in water at 25 C (Brownian)",
        "geometry": _GEOMETRY,
        "beamstop_px": _BEAMSTOP,
        "partition": {"dq_num": 16, "sq_num": 64},
        "acquisition": {**_ACQ, "frame_time": 1e-4, "n_frames": 2000},
        "sample": {
            "model": "brownian",
            "radius_m": 250e-9,
            "temperature_k": 298.15,
            "contrast": 0.22,
        },
        "analysis": ("Multitau",),
    },
    {
        "name": "A03_silica_R500nm_water",
        "description": "silica colloids, radius 500 nm, in water at 25 C (Brownian)",
        "geometry": _GEOMETRY,
        "beamstop_px": _BEAMSTOP,
        "partition": {"dq_num": 16, "sq_num": 64},
        "acquisition": {**_ACQ, "frame_time": 2e-4, "n_frames": 2000, "rate": 1.5},
        "sample": {
            "model": "brownian",
            "radius_m": 500e-9,
            "temperature_k": 298.15,
            "contrast": 0.22,
        },
        "analysis": ("Multitau",),
    },
    {
        "name": "B01_sheared_R100nm_qphi",
        "description": "silica R = 100 nm under shear: faster decay along the flow (phi = 0)",
        "geometry": _GEOMETRY,
        "beamstop_px": _BEAMSTOP,
        "partition": {"dq_num": 8, "sq_num": 32, "dp_num": 8, "sp_num": 16},
        "acquisition": {**_ACQ, "frame_time": 2e-5, "rate": 3.0},
        "sample": {
            "model": "sheared",
            "radius_m": 100e-9,
            "temperature_k": 298.15,
            "contrast": 0.2,
            "flow_rate": 1e6,
            "flow_angle_deg": 0.0,
        },
        "analysis": ("Multitau",),
    },
    {
        "name": "C01_ageing_gel_twotime",
        "description": "colloidal gel ageing: dynamics slow down with time (two-time)",
        "geometry": _GEOMETRY,
        "beamstop_px": _BEAMSTOP,
        "partition": {"dq_num": 8, "sq_num": 64},
        "acquisition": {**_ACQ, "frame_time": 0.02, "n_frames": 500, "rate": 3.0},
        "sample": {
            "model": "ageing",
            "radius_m": 100e-9,
            "temperature_k": 298.15,
            "viscosity_pa_s": 2.0,
            "contrast": 0.2,
            "ageing_time_s": 2.0,
        },
        "analysis": ("Twotime",),
        "twotime": {"n_frames": 500, "bins": [1, 2, 3, 4]},
    },
    {
        "name": "D01_silica_R250nm_both",
        "description": "silica R = 250 nm in water, multi-tau and two-time from the same run",
        "geometry": _GEOMETRY,
        "beamstop_px": _BEAMSTOP,
        "partition": {"dq_num": 8, "sq_num": 64},
        "acquisition": {**_ACQ, "frame_time": 1e-4, "n_frames": 500, "rate": 2.0},
        "sample": {
            "model": "brownian",
            "radius_m": 250e-9,
            "temperature_k": 298.15,
            "contrast": 0.2,
        },
        "analysis": ("Multitau", "Twotime"),
        "twotime": {"n_frames": 500, "bins": [1, 2, 3]},
    },
    {
        "name": "E01_beam_damage_R250nm",
        "description": "silica R = 250 nm degrading in the beam: intensity falls and dynamics "
                       "speed up",
        "geometry": _GEOMETRY,
        "beamstop_px": _BEAMSTOP,
        "partition": {"dq_num": 16, "sq_num": 64},
        "acquisition": {**_ACQ, "frame_time": 1e-4, "rate": 4.0},
        "sample": {
            "model": "damage",
            "radius_m": 250e-9,
            "temperature_k": 298.15,
            "contrast": 0.2,
            "damage_time_s": 0.05,
        },
        "analysis": ("Multitau",),
    },
    # Four repeats of one measurement for the Average tab; the fourth was taken on a
    # damaged spot (faster dynamics), so outlier rejection has something to find.
    *[
        {
            "name": f"F0{k}_repeat_R250nm",
            "description": (
                "silica R = 250 nm in water, repeat "
                f"{k} of 4{' (beam-damaged spot)' if k == 4 else ''}"
            ),
            "geometry": _GEOMETRY,
            "beamstop_px": _BEAMSTOP,
            "partition": {"dq_num": 16, "sq_num": 64},
            "acquisition": {**_ACQ, "frame_time": 1e-4, "n_frames": 600, "rate": 2.0},
            "sample": {
                "model": "damage" if k == 4 else "brownian",
                "radius_m": 250e-9,
                "temperature_k": 298.15,
                "contrast": 0.2,
                **({"damage_time_s": 0.02} if k == 4 else {}),
            },
            "analysis": ("Multitau",),
            "start_time": f"2026-01-01T00:{10 * k:02d}:00",
        }
        for k in range(1, 5)
    ],
    # The per-pixel G2 stack (side file), with a defect to find: a fan of static
    # parasitic scattering from the beam-stop edge spoils the low-q bins (baseline above
    # 1, tau too long) until it is masked and g2 regrouped (tests/compute/test_regroup.py).
    {
        "name": "G01_beamstop_fan_R250nm",
        "description": "silica R = 250 nm in water; parasitic scattering from the beam-stop "
                       "edge spoils the low-q bins",
        "geometry": _GEOMETRY,
        "beamstop_px": _BEAMSTOP,
        "partition": {"dq_num": 10, "sq_num": 40, "q_min": 0.002, "q_max": 0.011},
        "acquisition": {**_ACQ, "frame_time": 1.8e-5, "n_frames": 2500, "rate": 3.0},
        "sample": {
            "model": "brownian",
            "radius_m": 250e-9,
            "temperature_k": 298.15,
            "contrast": 0.2,
        },
        "defect": {
            "kind": "beamstop_fan",
            "description": "static parasitic scattering from the beam-stop edge",
            "angle_deg": -40.0,
            "half_width_deg": 30.0,
            "start_px": 8.0,
            "end_px": 45.0,
            "intensity": 1.5,
        },
        "save_g2_pixel": True,
        "analysis": ("Multitau",),
    },
]


def _spec_hash(spec: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()


def _record(spec: dict[str, Any], index: int, seed: int) -> dict[str, Any]:
    return {
        "version": DEMO_VERSION,
        "name": spec["name"],
        "seed": int(seed),
        "file_seed": int(seed) * 1000 + index,
        "spec_sha256": _spec_hash(spec),
    }


def _paths(out: Path, spec: dict[str, Any]) -> list[Path]:
    path = out / f"{spec['name']}_results.hdf"
    return [path, g2_side_path(path)] if spec.get("save_g2_pixel") else [path]


def _n_delays(spec: dict[str, Any]) -> int:
    return int(delay_list(int(spec["acquisition"]["n_frames"]))[0].size)


def check_demo_file(out_dir: str | Path, spec: dict[str, Any], index: int,
                    seed: int = 0) -> str | None:
    """Why the demo file of ``spec`` in ``out_dir`` is not complete, or None if it is.

    Judged by what the file records under :data:`DEMO_RECORD` (demo version, name,
    seeds, hash of the spec) and by the datasets it must hold; for a spec with a
    per-pixel G2 stack, the side file must be there with the stack's full shape.
    """
    path, *side = _paths(Path(out_dir), spec)
    if not path.is_file():
        return "missing" if not path.exists() else "not a regular file"
    try:
        f = h5py.File(path, "r", locking=False)
    except OSError as exc:
        return f"cannot be opened as HDF5 ({str(exc).splitlines()[0]})"
    with f:
        try:
            rec = f.get(DEMO_RECORD)
            if not isinstance(rec, h5py.Group):
                return (f"records no demo version ({DEMO_RECORD}): not a demo file, or one "
                        "written before demo files recorded it")
            got = {k: rec[k][()] for k in rec if isinstance(rec[k], h5py.Dataset)}
            got = {k: v.decode() if isinstance(v, bytes) else v for k, v in got.items()}
            want = _record(spec, index, seed)
            for key in ("version", "name", "seed", "file_seed", "spec_sha256"):
                if key not in got:
                    return f"its demo record has no {key}"
                if str(got[key]) != str(want[key]):
                    what = {"version": "demo version", "spec_sha256": "demo spec"}.get(key, key)
                    shown = str(got[key])[:12]
                    return f"made with another {what} ({shown}, expected {str(want[key])[:12]})"
            need = ["xpcs/qmap/dynamic_roi_map", "xpcs/temporal_mean/scattering_2d",
                    "entry/sample/D"]
            atype = tuple(spec.get("analysis", ("Multitau",)))
            if "Multitau" in atype:
                need += ["xpcs/multitau/delay_list", "xpcs/multitau/normalized_g2",
                         "xpcs/multitau/normalized_g2_err"]
            if "Twotime" in atype:
                need += ["xpcs/twotime/normalized_g2", "xpcs/twotime/processed_bins"]
            for name in need:
                if not isinstance(f.get(name), h5py.Dataset):
                    return f"dataset /{name} is missing"
            if "Multitau" in atype:
                g2 = f["xpcs/multitau/normalized_g2"][()]  # reads: a damaged chunk fails here
                if g2.shape[0] != _n_delays(spec):
                    return f"/xpcs/multitau/normalized_g2 has {g2.shape[0]} delays, " \
                           f"expected {_n_delays(spec)}"
            if "Twotime" in atype:
                n_bins = f["xpcs/twotime/processed_bins"].size
                cmap = f.get("xpcs/twotime/correlation_map")
                if not isinstance(cmap, h5py.Group) or len(cmap) != n_bins:
                    return "two-time correlation maps are missing"
        except (OSError, KeyError, ValueError, TypeError) as exc:
            return f"damaged ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
    for s in side:
        if not s.is_file():
            return f"its per-pixel G2 side file {s.name} is missing"
        try:
            with h5py.File(s, "r", locking=False) as g:
                ds = g.get(G2_SIDE_DATASET)
                shape = tuple(spec["geometry"]["shape"])
                if not isinstance(ds, h5py.Dataset) or ds.shape != (_n_delays(spec), 3, *shape):
                    return f"its side file {s.name} does not hold the full G2 stack"
        except OSError as exc:
            return f"its side file {s.name} cannot be opened ({str(exc).splitlines()[0]})"
    return None


class DemoRefusedError(OutputRefusedError):
    """Files of the demo set are present but not complete: replaced only with ``overwrite``.

    ``problems`` lists ``(path, why)`` for each.
    """

    def __init__(self, problems: list[tuple[Path, str]]) -> None:
        self.problems = problems
        p, why = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"{display_path(p)}: {why}; refusing to replace it{more} "
                         "(use --overwrite to simulate the demo set again)")


@dataclass
class DemoFiles:
    """What :func:`write_demo` did: every result file (spec order), reused or simulated."""

    paths: list[Path] = field(default_factory=list)
    reused: list[Path] = field(default_factory=list)
    simulated: list[Path] = field(default_factory=list)

    def __iter__(self):
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, k: int) -> Path:
        return self.paths[k]


def write_demo(
    out_dir: str | Path,
    seed: int = 0,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    overwrite: bool = False,
    names: Sequence[str] | None = None,
    workers: int | None = None,
) -> DemoFiles:
    """Make the demo result files in ``out_dir``: reuse the complete ones, simulate the rest.

    Parameters
    ----------
    out_dir : str or Path
        Created if needed.
    seed : int
        Same seed, same files (file i uses ``seed * 1000 + i``).
    progress, cancel :
        Reported per finished file; cancel is also checked between frame chunks.
    overwrite : bool
        Simulate every file again and replace what is there (atomically). Without
        it, complete files (:func:`check_demo_file`) are reused, missing ones are
        simulated, and any other file in the way is refused.
    names : sequence of str, optional
        Only the specs with these names (default: all).
    workers : int, optional
        Files simulated at once (default: up to 2, the simulator and correlator
        release the GIL in NumPy).

    Returns
    -------
    DemoFiles
        The result files in the order of :data:`DEMO_SPECS` (iterable like a list),
        with which were reused and which simulated.

    Raises
    ------
    DemoRefusedError
        Without ``overwrite``: a file of the set is present but incomplete, damaged,
        of another demo version, seed or spec, or not a demo file. Nothing is written.
    """
    out = Path(out_dir)
    todo = [
        (i, spec) for i, spec in enumerate(DEMO_SPECS) if names is None or spec["name"] in names
    ]
    if names is not None:
        unknown = set(names) - {s["name"] for _, s in todo}
        if unknown:
            raise ValueError(f"unknown demo file(s): {sorted(unknown)}")
    done = DemoFiles()
    if not overwrite and out.is_dir():
        keep, make, problems = [], [], []
        for i, spec in todo:
            why = check_demo_file(out, spec, i, seed)
            if why is None:
                keep.append(i)
                continue
            path, *side = _paths(out, spec)
            present = [p for p in (path, *side) if p.exists() or p.is_symlink()]
            if not present:
                make.append((i, spec))
            elif present[0] == path:
                problems.append((path, why))
            else:
                problems.append((present[0], f"a G2 side file without its result file {path.name}"))
        if problems:
            raise DemoRefusedError(problems)
        done.reused = [_paths(out, spec)[0] for i, spec in todo if i in keep]
        todo = make
    out.mkdir(parents=True, exist_ok=True)

    def one(item: tuple[int, dict[str, Any]]) -> Path:
        i, spec = item
        path = out / f"{spec['name']}_results.hdf"

        def produce(sink: Any = None) -> Any:
            made = simulate_result(copy.deepcopy(spec), seed=seed * 1000 + i, cancel=cancel,
                                   g2_pixel_sink=sink)
            made.result.path = path
            # what the file is, so that the next run can reuse it (check_demo_file)
            made.result.metadata.update(
                {f"{DEMO_RECORD.strip('/')}/{k}": v for k, v in _record(spec, i, seed).items()}
            )
            return made

        if spec.get("save_g2_pixel"):
            # as `xpcsviewer correlate --save-g2-pixel`: side file + ExternalLink
            return write_result_with_g2_stack(
                path, produce, _n_delays(spec), tuple(spec["geometry"]["shape"]),
                overwrite=overwrite,
            )[0]
        made = produce()
        return write_result(
            path, made.result, saxs_2d=made.saxs_2d, c2_maps=made.c2_maps, overwrite=overwrite
        )

    n = len(todo)
    if n:
        n_workers = max(1, min(workers or min(2, os.cpu_count() or 1), n))
        report(progress, cancel, 0, n, "simulating frames and correlating")
        with ThreadPoolExecutor(n_workers) as pool:
            for k, path in enumerate(pool.map(one, todo)):
                done.simulated.append(path)
                report(progress, cancel, k + 1, n, path.name)
    made = set(done.simulated) | set(done.reused)
    done.paths = [p for p in (_paths(out, spec)[0] for spec in DEMO_SPECS) if p in made]
    return done
