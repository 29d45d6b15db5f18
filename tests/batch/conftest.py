"""Inputs and one shared Dask cluster for the batch tests.

The cluster (2 worker processes on 127.0.0.1, as ``--workers 2`` starts them)
is shared by a test module through its scheduler address: starting one costs
seconds on 2 cores. Closing it restores the environment the nanny changed.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import h5py
import numpy as np
import pytest

from xpcsviewer.compute.detector.partition import PartitionGrid, make_partition
from xpcsviewer.compute.detector.qmap import DetectorGeometry
from xpcsviewer.io import write_result
from xpcsviewer.io.results.writer import write_qmap_file
from xpcsviewer.synthetic.results import build_result
from xpcsviewer.synthetic.speckle import Geometry, simulate_frames


def _spec(seed: int) -> dict:
    return {
        "name": f"b{seed}",
        "geometry": {"shape": (40, 40), "bcx": 20.0, "bcy": 20.0},
        "partition": {"dq_num": 4, "sq_num": 12},
        "acquisition": {"frame_time": 1e-3, "n_frames": 2000},
        "analysis": ("Multitau",),
    }


@pytest.fixture(scope="session")
def result_files(tmp_path_factory) -> list[Path]:
    """Five small multi-tau result files (demo-sized physics, tiny detector)."""
    d = tmp_path_factory.mktemp("batch_results")
    out = []
    for i in range(5):
        res, extra = build_result(_spec(i), seed=i)
        res.path = d / f"s{i}_results.hdf"
        write_result(res.path, res, saxs_2d=extra["saxs_2d"])
        out.append(res.path)
    return out


@pytest.fixture(scope="session")
def corrupt_file(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("batch_bad") / "corrupt_results.hdf"
    p.write_bytes(b"\x89HDF\r\n\x1a\n" + b"truncated" * 10)
    return p


@pytest.fixture(scope="session")
def raw_set(tmp_path_factory) -> tuple[Path, list[Path]]:
    """A q-map and three raw frame files (HDF5) of one small detector."""
    d = tmp_path_factory.mktemp("batch_raw")
    geo = Geometry(shape=(24, 32), energy_kev=10.0, det_dist_m=5.0, pixel_size_m=75e-6,
                   bcx=-4.0, bcy=12.0)
    q, phi = geo.qmap()
    qm = make_partition(q, phi, np.ones(q.shape, bool), PartitionGrid(3, 9),
                        DetectorGeometry(energy_kev=10.0, detector_distance=5.0, pixel_size=75e-6,
                                         beam_center_x=-4.0, beam_center_y=12.0))
    qpath = write_qmap_file(d / "qmap.hdf", qm)
    raws = []
    for i in range(3):
        frames = simulate_frames(q, 200, 1e-3, D=5e6 * (i + 1), beta=0.25, rate=2.0, seed=i)
        raw = d / f"raw{i}.h5"
        with h5py.File(raw, "w") as f:
            f.create_dataset("/entry/data/data", data=frames, chunks=(16, 24, 32))
            f["/entry/instrument/detector_1/frame_time"] = 1e-3
        raws.append(raw)
    return qpath, raws


@pytest.fixture(scope="module")
def scheduler():
    """``tcp://127.0.0.1:PORT`` of a 2-worker LocalCluster started here."""
    import dask
    from distributed import LocalCluster

    from xpcsviewer.batch._cluster import worker_env

    saved = dict(os.environ)  # the nanny applies the workers' environment here too
    with dask.config.set({"distributed.nanny.pre-spawn-environ": worker_env(2)}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None,
                               silence_logs=logging.ERROR)
    try:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        yield cluster.scheduler_address
    finally:
        cluster.close()
        os.environ.clear()
        os.environ.update(saved)


WALL_CLOCK = ("entry/start_time",)  # when the correlation ran, not what it computed


def datasets(path: Path) -> dict[str, np.ndarray]:
    """Every dataset of an HDF5 file (path -> array) for byte-level comparison."""
    out: dict[str, np.ndarray] = {}

    def visit(name: str, obj) -> None:
        if isinstance(obj, h5py.Dataset) and name not in WALL_CLOCK:
            out[name] = obj[()]

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return out
