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

The set ends with one photon-sparse acquisition per raw layout
(:mod:`xpcsviewer.synthetic.demo_sparse`): raw files and q-maps in ``raw/``, with
``raw/truth.json``, and their results correlated on photons. Their result files also
record the size and SHA-256 of each raw file, so a raw file changed since is not reused.
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

from xpcsviewer.compute.multitau.correlator import delay_list
from xpcsviewer.io.errors import display_path
from xpcsviewer.io.outputs import OutputRefusedError
from xpcsviewer.io.results.g2stack import G2_SIDE_DATASET, g2_side_path
from xpcsviewer.io.results.writer import write_result, write_result_with_g2_stack
from xpcsviewer.progress import CancelToken, ProgressCallback, report
from xpcsviewer.synthetic.demo_sparse import (
    RAW_DIR,
    TRUTH_FILE,
    TRUTH_MARK,
    file_digest,
    make_sparse,
    raw_paths,
    time_tag,
    truth_document,
)
from xpcsviewer.synthetic.demo_specs import DEMO_RECORD, DEMO_SPECS, DEMO_VERSION
from xpcsviewer.synthetic.raw_sim import DENSE_LAYOUTS
from xpcsviewer.synthetic.simulated import simulate_result

__all__ = [
    "DEMO_SPECS",
    "DEMO_VERSION",
    "DemoFiles",
    "DemoRefusedError",
    "check_demo_file",
    "write_demo",
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
    """The result file of a spec, then the files that belong to it (a G2 side file;
    the raw files and q-map of a sparse acquisition)."""
    path = out / f"{spec['name']}_results.hdf"
    if _sparse(spec):
        files, qmap = raw_paths(out, spec)
        return [path, *files, qmap]
    return [path, g2_side_path(path)] if spec.get("save_g2_pixel") else [path]


def _sparse(spec: dict[str, Any]) -> bool:
    """A photon-sparse acquisition of :mod:`~xpcsviewer.synthetic.demo_sparse`."""
    return "layout" in spec


def _n_delays(spec: dict[str, Any]) -> int:
    return int(delay_list(int(spec["acquisition"]["n_frames"]))[0].size)


def check_demo_file(out_dir: str | Path, spec: dict[str, Any], index: int,
                    seed: int = 0) -> str | None:
    """Why the demo file of ``spec`` in ``out_dir`` is not complete, or None if it is.

    Judged by what the file records under :data:`DEMO_RECORD` (demo version, name,
    seeds, hash of the spec) and by the datasets it must hold; for a spec with a
    per-pixel G2 stack, the side file must be there with the stack's full shape; for a
    sparse acquisition, its raw files and q-map must be there with the size and SHA-256
    the result file recorded when they were written.
    """
    if _sparse(spec):
        return _check_sparse(Path(out_dir), spec, index, seed)
    path, *side = _paths(Path(out_dir), spec)
    opened = _open_record(path, spec, index, seed)
    if isinstance(opened, str):
        return opened
    f = opened[0]
    with f:
        try:
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
                grp = f.get("xpcs/twotime/groups")
                if spec.get("twotime", {}).get("pixel_groups") and (
                        not isinstance(grp, h5py.Group)
                        or sum(k.startswith("c2_") for k in grp) != n_bins):
                    return "two-time pixel-group maps are missing"
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


def _open_record(path: Path, spec: dict[str, Any], index: int,
                 seed: int) -> tuple[h5py.File, dict[str, Any]] | str:
    """(h5py file, its demo record as a dict) or the reason it is not a complete demo
    file of this version, seed and spec (a str)."""
    if not path.is_file():
        return "missing" if not path.exists() else "not a regular file"
    try:
        f = h5py.File(path, "r", locking=False)
    except OSError as exc:
        return f"cannot be opened as HDF5 ({str(exc).splitlines()[0]})"
    try:
        rec = f.get(DEMO_RECORD)
        if not isinstance(rec, h5py.Group):
            f.close()
            return (f"records no demo version ({DEMO_RECORD}): not a demo file, or one "
                    "written before demo files recorded it")
        got = {k: rec[k][()] for k in rec if isinstance(rec[k], h5py.Dataset)}
    except (OSError, KeyError, ValueError, TypeError) as exc:
        f.close()
        return f"damaged ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
    got = {k: v.decode() if isinstance(v, bytes) else v for k, v in got.items()}
    want = _record(spec, index, seed)
    for key in ("version", "name", "seed", "file_seed", "spec_sha256"):
        if key not in got:
            f.close()
            return f"its demo record has no {key}"
        if str(got[key]) != str(want[key]):
            f.close()
            what = {"version": "demo version", "spec_sha256": "demo spec"}.get(key, key)
            shown = str(got[key])[:12]
            return f"made with another {what} ({shown}, expected {str(want[key])[:12]})"
    return f, got


def _check_sparse(out: Path, spec: dict[str, Any], index: int, seed: int) -> str | None:
    """:func:`check_demo_file` of a sparse acquisition: the result file, then its raw
    files and q-map against the sizes and SHA-256 it recorded."""
    path, *others = _paths(out, spec)
    opened = _open_record(path, spec, index, seed)
    if isinstance(opened, str):
        return opened
    f, got = opened
    with f:
        try:
            truth_key = "tau" if time_tag(spec) or "xsvs" in spec else "D"
            for name in ("xpcs/qmap/dynamic_roi_map", "xpcs/temporal_mean/scattering_2d",
                         f"entry/sample/{truth_key}", "xpcs/multitau/delay_list",
                         "xpcs/multitau/normalized_g2", "xpcs/multitau/normalized_g2_err",
                         "xpcs/multitau/config/path"):
                if not isinstance(f.get(name), h5py.Dataset):
                    return f"dataset /{name} is missing"
            corr = f["xpcs/multitau/config/path"][()]
            corr = corr.decode() if isinstance(corr, bytes) else str(corr)
            want = "dense" if spec["layout"] in DENSE_LAYOUTS else "sparse"
            if corr != want:
                return f"/xpcs/multitau/config/path is {corr!r}, expected {want!r}"
            g2 = f["xpcs/multitau/normalized_g2"][()]  # reads: a damaged chunk fails here
            if not time_tag(spec) and g2.shape[0] != _n_delays(spec):
                return f"/xpcs/multitau/normalized_g2 has {g2.shape[0]} delays, " \
                       f"expected {_n_delays(spec)}"
            for key in ("raw_files", "truth_json"):
                if key not in got:
                    return f"its demo record has no {key}"
            listed = json.loads(got["raw_files"])
            if not isinstance(json.loads(got["truth_json"]), dict):
                return "its demo record's truth_json is not an object"
        except (OSError, KeyError, ValueError, TypeError) as exc:
            return f"damaged ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
    names = [p.name for p in others]
    if not (isinstance(listed, list) and all(isinstance(e, list) and len(e) == 3 for e in listed)
            and [e[0] for e in listed] == names):
        return "its demo record does not list the raw files of this acquisition"
    for p, (_name, size, digest) in zip(others, listed, strict=True):
        shown = f"{RAW_DIR}/{p.name}"
        if not p.is_file():
            return f"its raw file {shown} is missing"
        try:
            have = file_digest(p)
        except OSError as exc:
            return f"its raw file {shown} cannot be read ({exc.strerror})"
        if have != (int(size), str(digest)):
            return (f"its raw file {shown} is not the one it was correlated from (size "
                    f"{have[0]}, recorded {size}, or different content)")
    return None


def _truth_path(out: Path) -> Path:
    return out / RAW_DIR / TRUTH_FILE


def _truth_problem(out: Path) -> str | None:
    """Why ``raw/truth.json`` is not a truth file of the demo (None: it is, or absent)."""
    p = _truth_path(out)
    if not (p.exists() or p.is_symlink()):
        return None
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return f"not a truth file of the demo ({type(exc).__name__})"
    if not isinstance(doc, dict) or doc.get("written_by") != TRUTH_MARK:
        return "not a truth file of the demo (it does not say it was written by it)"
    return None


def _write_truth(out: Path, seed: int) -> None:
    """``raw/truth.json``: the entries the sparse result files in ``out`` recorded, in
    spec order; rewritten only when its content changes."""
    from xpcsviewer.io.outputs import atomic_path

    entries = []
    for spec in DEMO_SPECS:
        if not _sparse(spec):
            continue
        path = _paths(out, spec)[0]
        try:
            with h5py.File(path, "r", locking=False) as f:
                text = f[f"{DEMO_RECORD}/truth_json"][()]
            entries.append(json.loads(text.decode() if isinstance(text, bytes) else text))
        except (OSError, KeyError, ValueError):
            continue
    if not entries:
        return
    text = json.dumps(truth_document(entries, seed, DEMO_VERSION), indent=2) + "\n"
    p = _truth_path(out)
    try:
        if p.read_text(encoding="utf-8") == text:
            return
    except (OSError, UnicodeDecodeError):
        pass
    with atomic_path(p) as tmp:
        tmp.write_text(text, encoding="utf-8")


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

    The sparse acquisitions (specs with a ``layout``) also write their raw files and
    q-maps into ``out_dir/raw``, and ``raw/truth.json`` lists them with their truth.

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
            elif _sparse(spec):
                problems.append((present[0], "a raw file of a demo acquisition without its "
                                             f"result file {path.name}"))
            else:
                problems.append((present[0], f"a G2 side file without its result file {path.name}"))
        if any(_sparse(spec) for _, spec in todo):
            why = _truth_problem(out)
            if why is not None:
                problems.append((_truth_path(out), why))
        if problems:
            raise DemoRefusedError(problems)
        done.reused = [_paths(out, spec)[0] for i, spec in todo if i in keep]
        todo = make
    out.mkdir(parents=True, exist_ok=True)

    def one(item: tuple[int, dict[str, Any]]) -> Path:
        i, spec = item
        path = out / f"{spec['name']}_results.hdf"
        if _sparse(spec):
            # raw files and q-map in raw/, the result correlated on photons
            return make_sparse(out, copy.deepcopy(spec), seed * 1000 + i,
                               _record(spec, i, seed), DEMO_RECORD, cancel=cancel,
                               overwrite=overwrite)

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
            path, made.result, saxs_2d=made.saxs_2d, c2_maps=made.c2_maps, overwrite=overwrite,
            twotime_groups=made.twotime_groups,
        )

    n = len(todo)
    if n:
        n_workers = max(1, min(workers or min(2, os.cpu_count() or 1), n))
        report(progress, cancel, 0, n, "simulating frames and correlating")
        with ThreadPoolExecutor(n_workers) as pool:
            for k, path in enumerate(pool.map(one, todo)):
                done.simulated.append(path)
                report(progress, cancel, k + 1, n, path.name)
    if any(_sparse(spec) for spec in DEMO_SPECS if names is None or spec["name"] in names):
        _write_truth(out, seed)
    made = set(done.simulated) | set(done.reused)
    done.paths = [p for p in (_paths(out, spec)[0] for spec in DEMO_SPECS) if p in made]
    return done
