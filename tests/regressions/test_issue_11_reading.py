"""Issue 11, items 2, 4, 5 and 8: reading without locks, files being written, sizes.

Before the fix our reads took the HDF5 file lock (a writer re-opening the file
in append mode failed with "unable to lock file"), a half-written file was
read as if complete, declared shapes were trusted (a 400 KB file declaring a
30000 x 30000 g2 drove every reader past 9 GB) and ``info --json`` printed NaN.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time

import h5py
import numpy as np
import pytest

from xpcsviewer.io import XpcsFileError, _h5, read_result
from xpcsviewer.io.errors import FileBeingWrittenError

WRITER = textwrap.dedent("""
    import sys, time, h5py
    path, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "hold":  # keep the file open for writing until stdin closes
        kw = {"libver": "latest"} if sys.argv[4] == "latest" else {}
        f = h5py.File(path, "a", **kw)
        f.flush()
        print("ready", flush=True)
        sys.stdin.read()
        f.close()
    else:  # re-open in append mode n times, as a correlator adding results does
        failed = 0
        print("ready", flush=True)
        for i in range(n):
            try:
                with h5py.File(path, "a") as f:
                    f.attrs["n"] = i
            except OSError:
                failed += 1
            time.sleep(0.005)
        print(failed, flush=True)
""")


def _writer(path, *args):
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), *map(str, args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_our_reads_never_lock_out_a_writer(corpus, tmp_path):
    p = shutil.copyfile(corpus.good, tmp_path / "busy_results.hdf")
    proc = _writer(p, "append", 150, "-")
    reads = 0
    while proc.poll() is None:
        try:
            read_result(p)  # holds the file open for a few ms each time
            reads += 1
        except FileBeingWrittenError:
            pass  # caught the writer mid-append (issue 24 item 7): a correct refusal
    failed = int(proc.stdout.read().split()[-1])
    assert reads > 10
    assert failed == 0, f"the writer was locked out {failed} times in 150"


@pytest.mark.parametrize("libver", ["earliest", "latest"])
def test_a_file_open_for_writing_is_being_written(
    corpus, tmp_path, monkeypatch, libver, issue11
):
    monkeypatch.setenv("XPCSVIEWER_WRITING_WINDOW_S", "60")
    p = shutil.copyfile(corpus.good, tmp_path / "open_results.hdf")
    proc = _writer(p, "hold", 0, libver)
    try:
        with pytest.raises(FileBeingWrittenError, match=r"being written.*retry") as ei:
            read_result(p)
        assert ei.value.retry and "truncated" not in str(ei.value)
        env_cli = issue11.cli(["info", p], tmp_path)
        assert env_cli.returncode == 3
        err = env_cli.stderr.decode()
        assert "being written" in err and "Traceback" not in err
    finally:
        proc.stdin.close()
        proc.wait()
    assert read_result(p).multitau is not None  # complete once the writer closed it


def test_incomplete_file_is_being_written_only_while_it_changes(
    corpus, tmp_path, monkeypatch
):
    """Issue 24 item 7 (was: recent = being written): a gap in a file is damage
    unless the file changes while it is read; its age alone decides nothing."""
    monkeypatch.setenv("XPCSVIEWER_WRITING_WINDOW_S", "60")
    p = shutil.copyfile(corpus.good, tmp_path / "half_results.hdf")
    with h5py.File(p, "a") as f:  # results not there yet; the g2 declared, not written
        del f["/xpcs/twotime"]
        g = f["/xpcs/multitau/normalized_g2"]
        shape = g.shape
        del f["/xpcs/multitau/normalized_g2"]
        f.create_dataset(
            "/xpcs/multitau/normalized_g2",
            shape=shape,
            dtype="f4",
            chunks=(4, shape[1]),
        )
    with pytest.raises(XpcsFileError, match="never written") as ei:  # seconds old
        read_result(p)
    assert not ei.value.retry and ei.value.dataset == "/xpcs/multitau/normalized_g2"
    stop = threading.Event()

    def writer() -> None:  # another program at work on the file
        while not stop.is_set():
            os.utime(p)
            time.sleep(0.01)

    t = threading.Thread(target=writer)
    t.start()
    try:
        with pytest.raises(FileBeingWrittenError, match=r"never written.*retry"):
            read_result(p)
    finally:
        stop.set()
        t.join()


def test_permission_denied_is_not_called_not_hdf5(corpus, tmp_path, monkeypatch):
    p = shutil.copyfile(corpus.good, tmp_path / "private_results.hdf")
    if os.geteuid() != 0:
        p.chmod(0)
    else:  # root reads anything: make the access check fail as it would for a user
        real = os.access
        monkeypatch.setattr(
            os, "access", lambda q, m: False if str(q) == str(p) else real(q, m)
        )
    with pytest.raises(XpcsFileError, match="permission denied") as ei:
        read_result(p)
    assert "not an HDF5" not in str(ei.value)


def test_declared_sizes_are_checked_before_reading(tmp_path, monkeypatch):
    """A declared 1e6 x 1e6 mask or a never-written (30000, Nd) g2: refused, nothing read."""
    reads = []
    real = _h5.read_array
    monkeypatch.setattr(
        _h5, "read_array", lambda ds, dt=None: (reads.append(ds.name), real(ds, dt))[1]
    )
    p = tmp_path / "huge.h5"
    with h5py.File(p, "w") as f:
        f.create_dataset("big", shape=(10**6, 10**6), dtype="f8", chunks=(64, 64))
        f.create_dataset("g2", shape=(30000, 4), dtype="f4", chunks=(256, 4))
    with _h5.open_h5(p) as f:
        with pytest.raises(XpcsFileError, match=r"declares shape \(1000000, 1000000\)"):
            _h5._array(f, "/big")
        with pytest.raises(XpcsFileError, match="never written"):
            _h5._array(f, "/g2", shape=(30000, 4))
        with pytest.raises(XpcsFileError, match=r"has shape \(30000, 4\)"):
            _h5._array(f, "/g2", shape=(29, 4))
    assert reads == []


def test_large_datasets_are_read_in_bounded_pieces(tmp_path, monkeypatch):
    a = np.arange(200 * 300, dtype=np.float32).reshape(200, 300)
    p = tmp_path / "a.h5"
    with h5py.File(p, "w") as f:
        f["a"] = a
    monkeypatch.setattr(_h5, "READ_BLOCK_BYTES", 300 * 4 * 16)  # 16 rows per read
    calls = []
    real = h5py.Dataset.read_direct
    monkeypatch.setattr(
        h5py.Dataset,
        "read_direct",
        lambda self, out, src, dst: (calls.append(src), real(self, out, src, dst))[1],
    )
    with _h5.open_h5(p) as f:
        out = _h5._array(f, "/a", dtype=np.float64)
    assert out.dtype == np.float64 and np.array_equal(out, a)
    assert len(calls) == 13  # ceil(200 / 16) pieces straight into the output


def test_info_json_is_json(corpus, tmp_path, issue11):
    """Item 8: NaN in a file (here a sample value) is null, with a note."""
    p = shutil.copyfile(corpus.good, tmp_path / "nan_results.hdf")
    with h5py.File(p, "a") as f:
        del f["/entry/sample/temperature"]
        f["/entry/sample/temperature"] = np.nan
    proc = issue11.cli(["info", "--json", p], tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode()

    def refuse(c):
        raise ValueError(c)

    rec = json.loads(text, parse_constant=refuse)["files"][0]
    assert rec["sample"]["temperature"] is None
    assert any("null" in w for w in rec["warnings"])
