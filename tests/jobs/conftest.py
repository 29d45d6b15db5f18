"""Fixtures of the live tests: a small q-map, a writer process, the batch reference."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
SHAPE = (32, 32)


@pytest.fixture(scope="session")
def small_qmap(tmp_path_factory) -> Path:
    """A 32 x 32 partition: 6 dynamic and 24 static rings."""
    from xpcsviewer.cli import main

    out = tmp_path_factory.mktemp("qmap") / "qmap.hdf"
    assert main(["qmap", "--shape", "32", "32", "--energy", "10", "--det-dist", "5",
                 "--pixel-size", "75e-6", "--bcx", "16", "--bcy", "16", "--dq-num", "6",
                 "--sq-num", "24", "-o", str(out)]) == 0
    return out


class Writer:
    """A writer process (``python -m xpcsviewer.synthetic.acquisition``)."""

    def __init__(self, out: Path, stats: Path, args: list[str]) -> None:
        env = {**os.environ,
               "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        env.pop("HDF5_USE_FILE_LOCKING", None)  # the writer locks as HDF5 does by default
        self.stats_path = stats
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "xpcsviewer.synthetic.acquisition", str(out), "--stats",
             str(stats), *args], env=env, stderr=subprocess.PIPE, text=True)

    def wait(self, timeout: float = 60) -> int:
        return self.proc.wait(timeout)

    @property
    def stats(self) -> dict:
        return json.loads(self.stats_path.read_text())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def writer(tmp_path):
    """``writer(out, *args)`` starts a writer process; killed at teardown if still running."""
    procs: list[Writer] = []

    def start(out: Path, *args: str) -> Writer:
        w = Writer(out, tmp_path / f"stats{len(procs)}.json",
                   ["--shape", *map(str, SHAPE), "--kind", "poisson", *args])
        procs.append(w)
        return w

    yield start
    for w in procs:
        w.stop()


def correlate_ref(raw: Path, qmap: Path, out: Path, *extra: str) -> Path:
    """``xpcsviewer correlate`` of a raw file (the batch reference)."""
    from xpcsviewer.cli import main

    assert main(["correlate", str(raw), "--qmap", str(qmap), "-o", str(out), "--quiet",
                 "--overwrite", *extra]) == 0
    return out


def datasets(path: Path) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset)
                     else None)
    return out


#: differ by nature: when it ran, and our live bookkeeping
SKIP = ("entry/start_time",)
#: how the batch job was run (its engine, device and route: docs/device-routing.md);
#: the live job streams with its own engine
HOW_RUN = ("engine", "device", "route_")


def _how_run(key: str) -> bool:
    parts = key.split("/")
    return len(parts) >= 2 and parts[-2] == "config" and parts[-1].startswith(HOW_RUN)


def assert_same_result(live: Path, batch: Path, skip: tuple[str, ...] = ()) -> None:
    """Every dataset of ``batch`` is in ``live`` with the same values (floats to float32
    storage round-off); ``live`` adds only ``/xpcs/live``."""
    a, b = datasets(live), datasets(batch)
    extra = {k for k in a if not k.startswith("xpcs/live/")} - set(b)
    assert not extra, extra
    for k, ref in b.items():
        if k in SKIP or k in skip or _how_run(k):
            continue
        assert k in a, k
        got = a[k]
        if isinstance(ref, np.ndarray) and ref.dtype.kind == "f":
            assert got.shape == ref.shape, k
            np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-9, err_msg=k)
        else:
            assert np.array_equal(np.asarray(got), np.asarray(ref)), (k, got, ref)


def write_raw(path: Path, frames: np.ndarray, frame_time: float) -> Path:
    """A complete raw file of ``frames`` (the reference for a folder or a cut run)."""
    with h5py.File(path, "w") as f:
        f.create_dataset("/entry/data/data", data=frames, chunks=(1, *frames.shape[1:]))
        f["/entry/instrument/detector_1/frame_time"] = frame_time
    return path


@pytest.fixture
def tools():
    """The helpers above, for the tests (conftest modules are not importable)."""
    from types import SimpleNamespace

    return SimpleNamespace(correlate_ref=correlate_ref, assert_same_result=assert_same_result,
                           datasets=datasets, write_raw=write_raw, shape=SHAPE)
