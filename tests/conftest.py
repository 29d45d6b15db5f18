"""Test set-up: JAX on CPU in float64, Qt offscreen, markers, shared real data."""

from __future__ import annotations

import os
from pathlib import Path

# Before anything imports JAX or Qt.
if not os.environ.get("XPCS_TEST_GPU"):
    os.environ["JAX_PLATFORMS"] = "cpu"
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault(
    "XPCS_JAX_CACHE_DIR", str(Path(__file__).resolve().parents[1] / ".pytest_cache" / "jax-cache")
)
# Files made by a test are read at once: do not take them for files still being
# written (tests of that detection set their own window).
os.environ.setdefault("XPCSVIEWER_WRITING_WINDOW_S", "0")
# The GUI's start-up compilation of the fits is tested on its own (tests/gui/test_warmup.py).
os.environ.setdefault("XPCS_GUI_WARMUP", "0")
# Figures and reports drawn in the test's process (a spawned process per export would add
# seconds to each GUI test); the process path is tested on its own
# (tests/jobs/test_process_job.py, tests/gui/test_report_action.py).
os.environ.setdefault("XPCS_DRAW_IN_PROCESS", "0")
# The GUI's fits run in the caller's thread (tests patch the fit code); the fit process
# is tested on its own (tests/jobs/test_fit_process.py, tests/gui/test_fit_process_gui.py).
os.environ.setdefault("XPCS_FIT_PROCESS", "0")
# Sessions and settings of the GUI must never touch the user's real config.
# One folder per pytest-xdist worker: two workers must never share a session file.
os.environ.setdefault(
    "XPCSVIEWER_CONFIG_DIR",
    str(Path(__file__).resolve().parents[1] / ".pytest_cache"
        / f"config-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"),
)

import numpy as np
import pytest

from xpcsviewer.compute.detector.partition import PartitionGrid
from xpcsviewer.compute.detector.qmap import DetectorGeometry

REPO = Path(__file__).resolve().parents[1]
#: the real production files: ../shared/data/real beside the checkout, or wherever
#: XPCS_REAL_DATA points (a clone elsewhere skipped 17 tests with no hint, issue 33)
SHARED_REAL = Path(os.environ.get("XPCS_REAL_DATA") or REPO.parent / "shared" / "data" / "real")


def _has_gpu() -> bool:
    try:
        import jax

        return jax.default_backend() == "gpu"
    except Exception:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any("gpu" in item.keywords for item in items):
        return
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a JAX GPU (set XPCS_TEST_GPU=1 on a GPU machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator per test."""
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def real_data_dir() -> Path:
    """``../shared/data/real``; the test is skipped when it is absent."""
    if not SHARED_REAL.is_dir():
        pytest.skip(f"real data not found at {SHARED_REAL}: set XPCS_REAL_DATA to the folder "
                    "holding aps8idi_llps_saxpcs/")
    return SHARED_REAL


@pytest.fixture
def fresh_device_manager():
    """Reset the DeviceManager singleton and backend override around a test."""
    from xpcsviewer import backends

    backends.DeviceManager.reset()
    backends.set_backend(None)
    yield
    backends.DeviceManager.reset()
    backends.set_backend(None)


@pytest.fixture(scope="session")
def demo_set_dir(tmp_path_factory) -> Path:
    """The built-in demo set (seed 0), simulated once per test session; read-only for tests."""
    from xpcsviewer.synthetic.demo import write_demo

    out = tmp_path_factory.mktemp("demo_set")
    write_demo(out, seed=0)
    return out


# A three-file stand-in for the demo's DEMO_SPECS (24 x 24 pixels, 64 frames: well
# under a second): multi-tau, both analyses, and one with a per-pixel G2 side file.
_TINY_GEO = {"shape": (24, 24), "energy_kev": 10.0, "det_dist_m": 5.0,
             "pixel_size_m": 150e-6, "bcx": 11.5, "bcy": 12.0}
_TINY_BASE = {
    "geometry": _TINY_GEO, "beamstop_px": 2, "partition": {"dq_num": 2, "sq_num": 4},
    "acquisition": {"frame_time": 1e-4, "n_frames": 64, "rate": 1.0, "background": 0.05},
    "sample": {"model": "brownian", "radius_m": 250e-9, "temperature_k": 298.15,
               "contrast": 0.2},
    "analysis": ("Multitau",), "description": "tiny",
}


def _tiny_specs() -> list[dict]:
    import copy

    return [
        {**copy.deepcopy(_TINY_BASE), "name": "T01_tiny"},
        {**copy.deepcopy(_TINY_BASE), "name": "T02_tiny_both",
         "analysis": ("Multitau", "Twotime"), "twotime": {"n_frames": 64, "bins": [1]}},
        {**copy.deepcopy(_TINY_BASE), "name": "T03_tiny_g2", "save_g2_pixel": True},
    ]


@pytest.fixture
def tiny_demo_specs() -> list[dict]:
    """Specs of a tiny demo set (a fresh copy per test), to stand in for DEMO_SPECS."""
    return _tiny_specs()


@pytest.fixture(scope="session")
def tiny_demo_dir(tmp_path_factory) -> Path:
    """The tiny demo set written once (with T03's per-pixel G2 side file); read-only."""
    from unittest import mock

    from xpcsviewer.synthetic import demo as demo_mod

    out = tmp_path_factory.mktemp("tiny_demo")
    with mock.patch.object(demo_mod, "DEMO_SPECS", _tiny_specs()):
        demo_mod.write_demo(out, seed=0)
    return out


def _small_movie(d: Path, n_frames: int, rate: float) -> tuple:
    """A 24 x 32 detector partitioned into 3 dynamic bins, its q-map file and a simulated
    speckle movie of ``n_frames`` (D = 5e6 A^2/s, frames 1 ms apart) saved as .npy, in d:
    (qmap, qmap path, movie, movie path)."""
    from xpcsviewer.compute.detector.partition import make_partition
    from xpcsviewer.io.results.writer import write_qmap_file
    from xpcsviewer.synthetic.speckle import Geometry, simulate_frames

    shape, bc = (24, 32), (-4.0, 12.0)
    geo = Geometry(shape=shape, energy_kev=10.0, det_dist_m=5.0, pixel_size_m=75e-6,
                   bcx=bc[0], bcy=bc[1])
    q, phi = geo.qmap()
    qm = make_partition(q, phi, np.ones(shape, bool), PartitionGrid(3, 9),
                        DetectorGeometry(energy_kev=10.0, detector_distance=5.0, pixel_size=75e-6,
                                         beam_center_x=bc[0], beam_center_y=bc[1]))
    qpath = write_qmap_file(d / "qmap.hdf", qm)
    movie = simulate_frames(q, n_frames, 1e-3, D=5e6, beta=0.25, rate=rate, seed=3)
    npy = d / "movie.npy"
    np.save(npy, movie)
    return qm, qpath, movie, npy


@pytest.fixture(scope="session")
def small_movie():
    """:func:`_small_movie` for module fixtures: ``small_movie(folder, n_frames, rate)``."""
    return _small_movie


@pytest.fixture(scope="session")
def age_lag_only_file(tmp_path_factory) -> Path:
    """A result file with a multi-tau two-time age x lag map and no full map (issue 35):
    300 simulated frames (24 x 32 pixels, 3 dynamic bins) correlated by the command line
    with ``--twotime-ages`` (multi-tau g2 and the map); bins 2 and 3 decay within the
    run. Written once per session; read-only for tests."""
    from xpcsviewer.cli import main

    d = tmp_path_factory.mktemp("agelag")
    _qm, qpath, _movie, npy = _small_movie(d, 300, 0.5)
    out = d / "A001_results.hdf"
    assert main(["correlate", str(npy), "--qmap", str(qpath), "-o", str(out),
                 "--twotime-ages", "--frame-time", "0.01", "--quiet"]) == 0
    return out


def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Collect on the main thread between tests once the GUI has switched automatic
    collection off (gui.gui_gc.gui_thread_gc): tests without an event loop would
    otherwise never collect their reference cycles."""
    import sys

    workers = sys.modules.get("xpcsviewer.gui.workers")
    gc_timer = getattr(workers, "_GUI_GC", None) if workers else None
    if gc_timer is not None:
        gc_timer.check()
