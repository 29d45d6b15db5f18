"""Issue 34's rules for the age x lag group maps (/xpcs/twotime/age_lag_groups): a
FIFO, an external link or VDS leaving the input's folder, external storage, a
truncated file: each a clear error naming the file in bounded time (`ages` runs in a
subprocess with a timeout: a hang fails), never a read outside the input."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from xpcsviewer.cli import main

C = "/xpcs/twotime/age_lag_groups/age_lag/level_00/c"


@pytest.fixture(scope="module")
def good(tmp_path_factory, small_movie):
    d = tmp_path_factory.mktemp("algp")
    _qm, qpath, _movie, npy = small_movie(d, 200, 0.5)
    out = d / "good.hdf"
    assert main(["correlate", str(npy), "--qmap", str(qpath), "-o", str(out), "--mode",
                 "multitau", "--twotime-ages", "--twotime-groups", "4", "--group-tile", "4",
                 "--frame-time", "0.01", "--quiet"]) == 0
    return out


def _ages(path: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    return subprocess.run([sys.executable, "-m", "xpcsviewer", *extra, "ages", str(path),
                           "--windows", "2", "-o", str(path.with_suffix(".csv")), "--quiet"],
                          capture_output=True, text=True, timeout=90, env=env)


def _case(tmp_path, good, edit) -> Path:
    inside, outside = tmp_path / "in", tmp_path / "out"
    inside.mkdir(exist_ok=True)
    outside.mkdir(exist_ok=True)
    p = inside / "bad.hdf"
    shutil.copy(good, p)
    with h5py.File(p, "r+") as f:
        c = np.asarray(f[C][()])
        edit(f, c, inside, outside)
    return p


def _link(target_of):
    def edit(f, c, inside, outside):
        target = target_of(c, inside, outside)
        del f[C]
        f[C] = h5py.ExternalLink(str(target), "/c")
    return edit


def _vds(f, c, inside, outside):
    with h5py.File(outside / "src.h5", "w") as g:
        g["c"] = c
    del f[C]
    lay = h5py.VirtualLayout(shape=c.shape, dtype=c.dtype)
    lay[...] = h5py.VirtualSource(str(outside / "src.h5"), "/c", shape=c.shape)
    f.create_virtual_dataset(C, lay, fillvalue=0)


def _storage(f, c, inside, outside):
    (outside / "raw").write_bytes(np.asarray(c, np.float32).tobytes())
    del f[C]
    f.create_dataset(C, shape=c.shape, dtype=np.float32,
                     external=[(str(outside / "raw"), 0, c.size * 4)])


def _outside_file(c, inside, outside):
    with h5py.File(outside / "other.h5", "w") as g:
        g["c"] = c
    return outside / "other.h5"


def _fifo(c, inside, outside):
    fifo = inside / "pipe.h5"
    if not fifo.exists():
        os.mkfifo(fifo)
    return fifo


@pytest.mark.parametrize("name,edit", [
    ("external link outside the folder", _link(_outside_file)),
    ("external link to a FIFO", _link(_fifo)),
    ("VDS source outside the folder", _vds),
    ("external storage outside the folder", _storage),
])
def test_group_maps_never_read_from_elsewhere(tmp_path, good, name, edit):
    p = _case(tmp_path, good, edit)
    r = _ages(p)
    assert r.returncode != 0, (name, r.stdout, r.stderr)
    assert "bad.hdf" in r.stderr and "Traceback" not in r.stderr, (name, r.stderr)
    assert C in r.stderr and "not read" in r.stderr, (name, r.stderr)


def test_a_truncated_file_is_a_clear_error(tmp_path, good):
    p = tmp_path / "cut.hdf"
    p.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    r = _ages(p)
    assert r.returncode != 0 and "cut.hdf" in r.stderr and "Traceback" not in r.stderr


def test_the_good_file_still_reads(tmp_path, good):
    r = _ages(good)
    assert r.returncode == 0, r.stderr
