"""Issue 11, items 1 and 9: no output over an input, no silent replacing, temp files.

Before the fix ``snapshot F -o F`` turned the result file into a PNG, ``correlate``
wrote over its raw or q-map input, ``fit`` wrote through a hard link of its input,
and every writer replaced an existing ``-o`` without being asked. A ``kill -9``
left ``.NAME.XXXX.tmp`` files forever, and export/snapshot files were private
(mode 0600 from ``mkstemp``).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from xpcsviewer.io.outputs import (
    OutputRefusedError,
    atomic_path,
    check_distinct_inputs,
    check_output,
    sweep_stale_temps,
)


@pytest.fixture
def inputs(corpus, tmp_path):
    """Copies of a result, a second result, a q-map and a raw file in one folder."""
    d = tmp_path / "in"
    d.mkdir()
    res = shutil.copyfile(corpus.good, d / "a_results.hdf")
    other = shutil.copyfile(corpus.good, d / "b_results.hdf")
    qm = shutil.copyfile(corpus.qmap_good, d / "qm.hdf")
    raw = shutil.copyfile(corpus.raw_good, d / "raw.h5")
    return Path(res), Path(other), Path(qm), Path(raw)


def test_every_writer_refuses_its_inputs_and_existing_files(inputs, tmp_path, issue11):
    res, other, qm, raw = inputs
    hard = tmp_path / "hard_link.json"
    os.link(res, hard)
    sym = tmp_path / "sym_link.hdf"
    sym.symlink_to(res)
    exists = {
        n: tmp_path / n
        for n in ("old.json", "old_qmap.hdf", "old_corr.hdf", "old.png", "old_avg.hdf")
    }
    for p in exists.values():
        p.write_bytes(b"keep me")
    figs = tmp_path / "figs"
    figs.mkdir()
    (figs / "a_saxs2d.png").write_bytes(b"keep me")
    geo = issue11.qmap_geometry
    corr = ["correlate", raw, "--qmap", qm, "--quiet", "--backend", "numpy"]
    refused = [
        ["snapshot", res, "--tab", "g2", "-o", res],
        [*corr, "-o", raw],
        [*corr, "-o", qm, "--overwrite"],
        ["qmap", *geo, "--mask", qm, "-o", qm, "--overwrite"],
        ["fit", res, "-o", hard, "--overwrite"],
        ["fit", res, "-o", sym, "--overwrite"],
        ["average", res, other, "-o", other, "--overwrite"],
        ["fit", res, "-o", exists["old.json"]],
        ["qmap", *geo, "-o", exists["old_qmap.hdf"]],
        [*corr, "-o", exists["old_corr.hdf"]],
        ["snapshot", res, "--tab", "g2", "-o", exists["old.png"]],
        ["average", res, other, "-o", exists["old_avg.hdf"]],
        ["export", res, "--plot", "saxs2d", "-o", figs, "--quiet"],
        ["average", res, res, "-o", tmp_path / "twice.hdf"],  # item 7: a file twice
        ["average", res, sym, "-o", tmp_path / "twice.hdf"],  # ... or through a link
    ]
    before = issue11.fingerprint(
        [res, other, qm, raw, *exists.values(), figs / "a_saxs2d.png"]
    )
    out = issue11.drive(refused, tmp_path)
    for args, r in zip(refused, out, strict=True):
        assert r["escaped"] is None, r["escaped"]
        assert r["rc"] == 2, (args, r["stderr"])
        lines = r["stderr"].strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"xpcsviewer {args[0]}"), lines
    assert (
        issue11.fingerprint(
            [res, other, qm, raw, *exists.values(), figs / "a_saxs2d.png"]
        )
        == before
    )
    assert not (tmp_path / "twice.hdf").exists()
    # Asked for: an existing output (not an input) is replaced.
    ok = issue11.drive(
        [
            ["fit", res, "-o", exists["old.json"], "--overwrite", "--quiet"],
            ["qmap", *geo, "-o", exists["old_qmap.hdf"], "--overwrite"],
        ],
        tmp_path,
    )
    assert [r["rc"] for r in ok] == [0, 0], ok
    assert exists["old.json"].read_bytes() != b"keep me"


def test_check_output_rules(tmp_path):
    src = tmp_path / "in.hdf"
    src.write_bytes(b"x")
    link = tmp_path / "link.hdf"
    link.symlink_to(src)
    hard = tmp_path / "hard.hdf"
    os.link(src, hard)
    for out in (src, link, hard):
        with pytest.raises(OutputRefusedError, match="one of the input files"):
            check_output(out, [src], overwrite=True)
    with pytest.raises(OutputRefusedError, match="--overwrite"):
        check_output(hard, [], overwrite=False)
    with pytest.raises(OutputRefusedError, match="folder"):
        check_output(tmp_path, [], overwrite=True)
    assert check_output(tmp_path / "new.json", [src]) == tmp_path / "new.json"
    assert check_output(hard, [], overwrite=True) == hard
    with pytest.raises(OutputRefusedError, match="same file"):
        check_distinct_inputs([src, tmp_path / "missing.hdf", link])


def test_atomic_path_mode_fsync_and_cleanup(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    old = os.umask(0o027)
    try:
        with atomic_path(tmp_path / "out.txt") as tmp:
            assert f"-{os.getpid()}-" in tmp.name and tmp.name.startswith(".out.txt.")
            tmp.write_text("data")
    finally:
        os.umask(old)
    assert (tmp_path / "out.txt").read_text() == "data"
    assert (tmp_path / "out.txt").stat().st_mode & 0o777 == 0o640  # not mkstemp's 0600
    assert len(synced) >= 2  # the file before the rename, then the folder
    with pytest.raises(KeyboardInterrupt), atomic_path(tmp_path / "out.txt") as tmp:
        tmp.write_text("half")
        raise KeyboardInterrupt
    assert (tmp_path / "out.txt").read_text() == "data"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temps_of_dead_writers_are_swept(tmp_path):
    import xpcsviewer.io.outputs as outputs

    host = outputs._HOST
    dead = tmp_path / f".a.hdf.xpcs-{host}-{_dead_pid()}-00ff.tmp"
    mine = tmp_path / f".b.hdf.xpcs-{host}-{os.getpid()}-00ff.tmp"
    elsewhere = tmp_path / f".c.hdf.xpcs-0badc0de-{_dead_pid()}-00ff.tmp"
    for p in (dead, mine, elsewhere):
        p.write_bytes(b"half")
    removed = sweep_stale_temps(tmp_path, force=True)
    assert removed == [dead]
    assert mine.exists() and elsewhere.exists()


def test_kill_9_leaves_a_temp_the_next_write_removes(tmp_path):
    code = textwrap.dedent(f"""
        import sys, time
        from xpcsviewer.io.outputs import atomic_path
        with atomic_path({str(tmp_path / "victim.json")!r}) as tmp:
            tmp.write_text("half")
            print("ready", flush=True)
            time.sleep(60)
    """)
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "ready"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    left = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert len(left) == 1 and not (tmp_path / "victim.json").exists()
    # The next write into the folder (a new run of any command) removes it.
    code = (
        "from xpcsviewer.export import write_json; "
        f"write_json({str(tmp_path / 'next.json')!r}, [1])"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["next.json"]
