"""Issue 24: no data loss by any route, no crash on a full disk, bounded resources.

One test (or more) per item of the issue; each failed on the code before the fix.
The bad-file cases it adds to the corpus (a symbolic link loop, a newline in a
name, a killed writer's truncated file, an all-zero q-map mask, an all-zero mask
image) run in ``test_issue_11_corpus.py`` with every command.
"""

from __future__ import annotations

import argparse
import errno
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from xpcsviewer.io import read_result
from xpcsviewer.io.errors import FileBeingWrittenError, XpcsFileError

FIT_FAST = ["--quiet", "--backend", "numpy"]


def _one_line_naming(stderr: str, name: str) -> str:
    lines = [ln for ln in stderr.splitlines() if name in ln]
    assert len(lines) == 1, stderr[-2000:]
    return lines[0]


def _no_temps(folder: Path) -> None:
    left = [p.name for p in folder.rglob("*.tmp")]
    assert not left, left


def _result_with_side_file(folder: Path, name: str, spec: dict) -> tuple[Path, Path]:
    """A result whose per-pixel G2 stack is in ``<name>_G2.hdf`` (linked)."""
    from xpcsviewer.io.results.g2stack import g2_side_path, open_g2_stack_writer
    from xpcsviewer.io.results.writer import write_result
    from xpcsviewer.synthetic.results import build_result

    res, extras = build_result(spec, seed=7)
    p = folder / name
    side = g2_side_path(p)
    t = res.multitau.g2.shape[0]
    with open_g2_stack_writer(side, t, res.qmap.shape) as sink:
        for k in range(t):
            sink(k, np.ones((3, *res.qmap.shape)))
    write_result(p, res, saxs_2d=extras["saxs_2d"], c2_maps=extras["c2_maps"],
                 g2_stack_file=side.name)
    return p, side


@pytest.fixture(scope="module")
def side_pair(tmp_path_factory, issue11):
    """(result file, its side file) made by the correlator's own writer."""
    return _result_with_side_file(tmp_path_factory.mktemp("side"), "G01_x_results.hdf",
                                  issue11.corpus_module.SPEC)


# --------------------------------------------------------------------- item 1
def test_a_renamed_result_never_gets_the_side_file_it_reads_overwritten(
    side_pair, tmp_path, issue11
):
    src, side = side_pair
    d = tmp_path / "d"
    d.mkdir()
    renamed = shutil.copyfile(src, d / "G01.hdf")  # the name says nothing of the side file
    side_copy = shutil.copyfile(side, d / side.name)
    before = issue11.fingerprint([renamed, side_copy])
    runs = [  # (command line, exit code)
        (["regroup", renamed, "-o", side_copy, "--overwrite", "--quiet"], 2),
        (["fit", renamed, "-o", side_copy, "--overwrite", *FIT_FAST], 2),
        (["average", renamed, "-o", side_copy, "--overwrite", "--quiet"], 2),
        (["snapshot", renamed, "--tab", "g2", "-o", side_copy, "--overwrite"], 2),
        (["regroup", renamed, "-o", d / "new.hdf", "--quiet"], 0),  # a new name is fine
    ]
    out = issue11.drive([a for a, _ in runs], d)
    for (args, rc), r in zip(runs, out, strict=True):
        assert r["escaped"] is None, r["escaped"]
        assert r["rc"] == rc, (args[0], r)
        if rc == 2:
            line = _one_line_naming(r["stderr"], side.name)
            assert "is read by the input" in line and "G01.hdf" in line, line
    assert issue11.fingerprint([renamed, side_copy]) == before


# --------------------------------------------------------------------- item 2
def _full_disk_runs(corpus, side_pair, out: Path, geo: list[str],
                    inputs: Path | None = None) -> list[tuple[list, Path]]:
    """(command line, its output) for every writer, each replacing an old output."""
    a = shutil.copyfile(corpus.good, (inputs or out) / "in_a_results.hdf")
    b = shutil.copyfile(corpus.good, (inputs or out) / "in_b_results.hdf")
    corr = ["correlate", corpus.raw_good, "--qmap", corpus.qmap_good, "--quiet",
            "--backend", "numpy", "--overwrite"]
    figs = out / "figs"
    figs.mkdir()
    runs = [
        (["qmap", *geo, "-o", out / "q.hdf", "--overwrite"], out / "q.hdf"),
        (["average", a, b, "-o", out / "avg.hdf", "--overwrite", "--quiet"],
         out / "avg.hdf"),
        (["regroup", side_pair[0], "-o", out / "rg.hdf", "--overwrite", "--quiet"],
         out / "rg.hdf"),
        ([*corr, "-o", out / "c.hdf"], out / "c.hdf"),
        ([*corr, "-o", out / "cs.hdf", "--save-g2-pixel"], out / "cs_G2.hdf"),
        (["fit", a, "-o", out / "f.json", "--overwrite", *FIT_FAST], out / "f.json"),
        (["fit", a, "-o", out / "f.h5", "--overwrite", *FIT_FAST], out / "f.h5"),
        (["export", a, "--plot", "saxs2d", "-o", figs, "--overwrite", "--quiet"],
         figs / "in_a_saxs2d.png"),
        (["snapshot", a, "--tab", "saxs2d", "-o", out / "s.png", "--overwrite"],
         out / "s.png"),
    ]
    for _, o in runs:
        o.write_bytes(b"the old output")
    return runs


def _check_full_disk(runs, results) -> None:
    for (args, o), r in zip(runs, results, strict=True):
        assert r["escaped"] is None, r["escaped"]
        assert r["rc"] in (1, 3), (args[0], r)
        line = _one_line_naming(r["stderr"], o.name)
        assert "cannot write" in line, line
        assert ".tmp" not in r["stderr"] and "Traceback" not in r["stderr"], r["stderr"]
        assert o.read_bytes() == b"the old output", args[0]  # untouched
        _no_temps(o.parent)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX file size limit")
def test_a_full_disk_is_one_line_naming_the_output_never_a_crash(
    corpus, side_pair, tmp_path, issue11
):
    """Every write beyond 1 KB fails in the kernel (RLIMIT_FSIZE, EFBIG), as on a
    full disk, for HDF5's own writes too: before, HDF5 failed at close and the
    process died (SIGSEGV) leaving its temporary file."""
    out = tmp_path / "out"
    out.mkdir()
    runs = _full_disk_runs(corpus, side_pair, out, issue11.qmap_geometry)
    results = issue11.drive([r for r, _ in runs], out, file_size_limit=1024)
    _check_full_disk(runs, results)


def test_an_injected_enospc_is_raised_from_python_not_met_by_hdf5(
    corpus, tmp_path, monkeypatch
):
    """The HDF5 writers' sink records a failed write and HDF5 closes cleanly."""
    from xpcsviewer.io import outputs, read_qmap
    from xpcsviewer.io.results.writer import write_qmap_file

    qm = read_qmap(corpus.qmap_good)
    real = os.pwrite
    budget = [6000]

    def pwrite(fd, data, offset):
        if budget[0] <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        budget[0] -= len(data)
        return real(fd, data, offset)

    monkeypatch.setattr(outputs.os, "pwrite", pwrite)
    target = tmp_path / "q.hdf"
    target.write_bytes(b"the old output")
    with pytest.raises(outputs.OutputWriteError) as ei:
        write_qmap_file(target, qm, overwrite=True)
    assert ei.value.errno == errno.ENOSPC
    assert str(ei.value).startswith(f"{target}: cannot write: No space left on device")
    assert target.read_bytes() == b"the old output"
    _no_temps(tmp_path)


@pytest.fixture
def small_tmpfs(tmp_path):
    """A mounted 600 KB tmpfs; skipped where mounting is not possible."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(mnt)],
                          capture_output=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {proc.stderr.decode()[:200]}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _fill(folder: Path, leave: int) -> None:
    """Fill the file system of ``folder`` but ``leave`` bytes."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError:
            pass
    os.truncate(filler, max(0, filler.stat().st_size - leave))


def test_a_real_full_tmpfs_is_one_line_never_a_crash(corpus, side_pair, small_tmpfs, issue11):
    out = small_tmpfs / "out"
    out.mkdir()
    inputs = small_tmpfs.parent / "inputs"
    inputs.mkdir()
    runs = _full_disk_runs(corpus, side_pair, out, issue11.qmap_geometry, inputs)
    _fill(small_tmpfs, 12 * 1024)
    hdf5_writers = [r for r in runs if r[0][0] in ("qmap", "average", "regroup", "correlate")]
    results = issue11.drive([r for r, _ in hdf5_writers], inputs)
    _check_full_disk(hdf5_writers, results)


# --------------------------------------------------------------------- item 3
def test_more_workers_than_cores_are_capped_and_said(monkeypatch, capsys):
    from xpcsviewer.batch import where_from_args

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    where = where_from_args(argparse.Namespace(workers=64, scheduler=None, command="fit"))
    assert where.workers == 2
    err = capsys.readouterr().err
    assert "--workers 64" in err and "using 2 workers" in err and len(err.splitlines()) == 1


# --------------------------------------------------------------------- item 4
@pytest.mark.parametrize(("entry", "module"), [
    ("python -m", "xpcsviewer.cli"),
    ("python -m", "xpcsviewer.progress"),
    ("console script", "xpcsviewer.cli"),
])
def test_ctrl_c_while_the_command_line_is_imported_is_no_traceback(
    corpus, tmp_path, entry, module
):
    """The SIGINT lands exactly while ``module`` is being imported."""
    start = ("runpy.run_module('xpcsviewer', run_name='__main__', alter_sys=True)"
             if entry == "python -m" else
             "from xpcsviewer._entry import main; sys.exit(main())")
    code = textwrap.dedent(f"""
        import os, runpy, signal, sys

        class Interrupt:
            def find_spec(self, name, path=None, target=None):
                if name == {module!r}:
                    os.kill(os.getpid(), signal.SIGINT)
                return None

        sys.meta_path.insert(0, Interrupt())
        sys.argv = ["xpcsviewer", "info", {os.fspath(corpus.good)!r}]
        {start}
    """)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120, cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    assert proc.stderr.strip().endswith("interrupted")


DASK_SCRIPT = textwrap.dedent("""
    import argparse, logging, socket, sys
    from functools import partial

    taken = socket.socket()
    taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:  # the dashboard's default port is taken (by us or by anyone)
        taken.bind(("127.0.0.1", 8787))
        taken.listen()
    except OSError:
        pass
    logging.basicConfig(level=logging.WARNING)  # as the command line does
    from xpcsviewer.batch import run_batch, where_from_args

    where = where_from_args(argparse.Namespace(workers=2, scheduler=None, command="fit"))
    # what a worker or the scheduler logs when a worker goes away mid-batch
    task = partial(logging.Logger.error, logging.getLogger("distributed.worker"),
                   "CommClosedError (simulated on a worker) %s")
    seen = []

    def take(o):
        logging.getLogger("distributed.core").error("CommClosedError (simulated here)")
        seen.append(o.ok)

    run_batch(task, [1, 2, 3], take, where=where)
    print("outcomes", seen)
""")


@pytest.mark.skipif(
    len(getattr(os, "sched_getaffinity", lambda p: range(os.cpu_count() or 1))(0)) < 2,
    reason="needs 2 cores for a 2-worker cluster")
def test_dask_runs_without_dashboard_warnings_or_its_own_tracebacks(tmp_path):
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", DASK_SCRIPT], capture_output=True,
                          text=True, env=env, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "outcomes [True, True, True]" in proc.stdout
    assert "CommClosedError" not in proc.stderr, proc.stderr[-3000:]
    assert "8787" not in proc.stderr and "dashboard" not in proc.stderr.lower(), proc.stderr
    assert "Traceback" not in proc.stderr


# --------------------------------------------------------------------- item 5
def test_wrong_exits_and_unclear_messages(corpus, side_pair, tmp_path, issue11):
    d = tmp_path
    zero_mask = d / "zero_mask.hdf"
    with h5py.File(zero_mask, "w") as f:
        f["mask"] = np.zeros(read_result(corpus.good).qmap.shape, np.uint8)
    raw_npy = shutil.copyfile(corpus.raw_good, d / "frames.npy")  # HDF5 named .npy
    mask_npy = shutil.copyfile(zero_mask, d / "hdf_mask.npy")
    with h5py.File(mask_npy, "a") as f:
        f["mask"][...] = 1
    corr = ["correlate", "--qmap", corpus.qmap_good, "--quiet", "--backend", "numpy"]
    not_npy = next(c.path for c in corpus.masks if c.name == "not_npy")
    runs = {
        "regroup_zero_mask": (["regroup", corpus.stack_good, "--mask", zero_mask,
                               "-o", d / "rg.hdf", "--quiet"], 3),
        "q_range_empty": (["fit", corpus.good, "--q-range", "5", "6", *FIT_FAST], 2),
        "temperature_nan": (["fit", corpus.good, "--temperature", "nan", "--viscosity",
                             "1e-3", "-o", d / "t.json", *FIT_FAST], 2),
        "temperature_negative": (["fit", corpus.good, "--temperature", "-5",
                                  "--viscosity", "0", *FIT_FAST], 2),
        "fit_new_folder": (["fit", corpus.good, "-o", d / "nodir" / "x.json", *FIT_FAST], 0),
        "raw_hdf5_named_npy": ([*corr[:1], raw_npy, *corr[1:], "-o", d / "r.hdf"], 0),
        "mask_hdf5_named_npy": (["qmap", *issue11.qmap_geometry, "--mask", mask_npy,
                                 "-o", d / "qm.hdf"], 0),
        "mask_text_named_npy": (["qmap", *issue11.qmap_geometry, "--mask", not_npy,
                                 "-o", d / "qm2.hdf"], 3),
        "several_raws_file_name": ([*corr[:1], corpus.raw_good, raw_npy, *corr[1:],
                                    "-o", d / "o_c.hdf"], 2),
    }
    out = dict(zip(runs, issue11.drive([a for a, _ in runs.values()], d), strict=True))
    for name, (_, rc) in runs.items():
        r = out[name]
        assert r["escaped"] is None and "Traceback" not in r["stderr"], (name, r)
        assert r["rc"] == rc, (name, r)
    assert "zero_mask.hdf" in out["regroup_zero_mask"]["stderr"]
    assert "selects no q-bin" in out["q_range_empty"]["stderr"]
    assert "TypeError" not in out["q_range_empty"]["stderr"]
    for name in ("temperature_nan", "temperature_negative"):
        assert "positive finite" in out[name]["stderr"], out[name]
    assert not (d / "t.json").exists()
    assert (d / "nodir" / "x.json").is_file()
    assert read_result(d / "r.hdf").multitau is not None
    assert "pickle" not in out["mask_text_named_npy"]["stderr"]
    assert "no NumPy header" in out["mask_text_named_npy"]["stderr"]
    assert "names a folder" in out["several_raws_file_name"]["stderr"]
    assert not (d / "o_c.hdf").exists()


def test_an_unwritable_folder_names_the_output_not_the_temporary(corpus, tmp_path, issue11):
    ro = tmp_path / "ro"
    ro.mkdir()
    mounted = False
    if os.geteuid() != 0:
        ro.chmod(0o555)
    else:  # root writes anywhere: a read-only mount, where possible
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs",
                               str(ro)], capture_output=True)
        if proc.returncode != 0:
            pytest.skip("root, and no read-only mount possible")
        mounted = True
    try:
        runs = [["fit", corpus.good, "-o", ro / "x.json", *FIT_FAST],
                ["qmap", *issue11.qmap_geometry, "-o", ro / "q.hdf"]]
        for args, r in zip(runs, issue11.drive(runs, tmp_path), strict=True):
            assert r["rc"] == 1, r
            line = _one_line_naming(r["stderr"], str(args[-1] if args[0] == "qmap"
                                                     else ro / "x.json"))
            assert "cannot write" in line and ".tmp" not in line, line
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(ro)], capture_output=True)
        else:
            ro.chmod(0o755)


# --------------------------------------------------------------------- item 6
def test_raw_frames_nan_pixels_negative_begin_and_one_frame(corpus, tmp_path, issue11):
    frames = h5py.File(corpus.raw_good, "r")["/entry/data/data"][()].astype(np.float32)
    rng = np.random.default_rng(3)
    bad = rng.random(frames.shape[1:]) < 0.01
    frames[:, bad] = np.nan
    frames[5, 3, 4] = np.inf  # one frame only
    raw_nan = tmp_path / "raw_nan.h5"
    with h5py.File(raw_nan, "w") as f:
        f["/entry/data/data"] = frames
    base = ["--qmap", corpus.qmap_good, "--quiet", "--backend", "numpy"]
    runs = [
        ["correlate", raw_nan, *base, "-o", tmp_path / "nan.hdf"],
        ["correlate", corpus.raw_good, *base, "-o", tmp_path / "good.hdf"],
        ["correlate", corpus.raw_good, *base, "-o", tmp_path / "b.hdf", "--begin-frame",
         "-50"],
        ["correlate", corpus.raw_good, *base, "-o", tmp_path / "m1.hdf", "--begin-frame",
         "63"],
        ["correlate", corpus.raw_good, *base, "-o", tmp_path / "t1.hdf", "--begin-frame",
         "63", "--mode", "twotime"],
    ]
    nan, _good, begin, one_mt, one_tt = issue11.drive(runs, tmp_path)
    assert nan["rc"] == 0, nan
    from xpcsviewer.io import read_qmap

    qm = read_qmap(corpus.qmap_good)
    in_use = (np.asarray(qm.mask) > 0) & ((np.asarray(qm.dynamic_roi_map) > 0)
                                          | (np.asarray(qm.static_roi_map) > 0))
    bad_all = bad.copy()
    bad_all[3, 4] = True
    n_bad = int((bad_all & in_use).sum())
    assert f"{n_bad} pixel(s) with NaN or Inf counts were masked" in nan["stderr"]
    got, want = read_result(tmp_path / "nan.hdf"), read_result(tmp_path / "good.hdf")
    assert got.multitau.valid.sum() == want.multitau.valid.sum()  # no point lost
    assert not np.asarray(got.qmap.mask)[bad].any()
    assert begin["rc"] == 2 and "--begin-frame" in begin["stderr"]
    assert not (tmp_path / "b.hdf").exists()
    for r in (one_mt, one_tt):
        assert r["rc"] == 3 and "leaves 1 frame" in r["stderr"], r
    assert not (tmp_path / "t1.hdf").exists()


# --------------------------------------------------------------------- item 7
def _kill_writer(path: Path, libver: str) -> None:
    """Open ``path`` for writing in another process, flush, and die uncleanly."""
    code = textwrap.dedent(f"""
        import os, h5py
        f = h5py.File({os.fspath(path)!r}, "a", libver={libver!r})
        f.attrs["touched"] = 1
        f.flush()
        os._exit(0)
    """)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def _latest_copy(src: Path, dst: Path) -> Path:
    with h5py.File(src, "r") as a, h5py.File(dst, "w", libver="latest") as b:
        for k in a:
            a.copy(a[k], b, name=k)
    return dst


@pytest.mark.parametrize("libver", ["earliest", "latest"])
def test_a_killed_writers_complete_file_is_read_with_a_note(
    corpus, tmp_path, monkeypatch, libver, issue11
):
    monkeypatch.setenv("XPCSVIEWER_WRITING_WINDOW_S", "60")  # as in real use
    p = tmp_path / "killed_results.hdf"
    if libver == "latest":
        _latest_copy(corpus.good, p)
    else:
        shutil.copyfile(corpus.good, p)
    _kill_writer(p, libver)
    res = read_result(p)  # before: "open for writing" for 10 minutes
    assert res.multitau is not None
    from xpcsviewer.io._h5 import read_superblock

    assert read_superblock(p).open_for_write  # the flag is still there
    assert any("did not close the file cleanly" in w for w in res.warnings)
    proc = issue11.cli(["info", p], tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()


def test_a_damaged_recent_file_is_damaged_and_a_future_time_is_no_writer(
    corpus, tmp_path, monkeypatch
):
    monkeypatch.setenv("XPCSVIEWER_WRITING_WINDOW_S", "60")
    data = corpus.good.read_bytes()
    p = tmp_path / "cut_results.hdf"
    p.write_bytes(data[: len(data) // 2])  # made a moment ago
    with pytest.raises(XpcsFileError) as ei:
        read_result(p)
    assert not isinstance(ei.value, FileBeingWrittenError)
    assert f"damaged: truncated ({len(data) // 2} of {len(data)} bytes)" in str(ei.value)
    future = time.time() + 3600
    os.utime(p, (future, future))
    with pytest.raises(XpcsFileError) as ei:
        read_result(p)
    assert not ei.value.retry and "s ago" not in str(ei.value)
    # a killed writer's truncated file says the same, whatever its flags
    q = tmp_path / "killed_cut_results.hdf"
    _latest_copy(corpus.good, q)
    _kill_writer(q, "latest")
    q.write_bytes(q.read_bytes()[:-1000])
    with pytest.raises(XpcsFileError, match="damaged: truncated") as ei:
        read_result(q)
    assert not ei.value.retry


# --------------------------------------------------------------------- item 9
def test_average_no_reject_says_it_leaves_out_an_all_nan_member(corpus, tmp_path, issue11):
    nan = next(c.path for c in corpus.degenerate if c.name == "g2_all_nan")
    (r,) = issue11.drive([["average", corpus.good, nan, "-o", tmp_path / "a.hdf",
                           "--no-reject", "--quiet"]], tmp_path)
    assert r["rc"] == 0, r
    with h5py.File(tmp_path / "a.hdf", "r") as f:
        assert int(f["/entry/average/n_files"][()]) == 1
    cap = issue11.cli(["average", corpus.good, nan, "-o", tmp_path / "b.hdf",
                       "--no-reject"], tmp_path)
    text = cap.stdout.decode()
    assert "g2_all_nan_results.hdf: g2 has no valid point" in text, text


# ------------------------------------------------------- per-pixel G2 side files
def test_fit_export_average_skip_a_side_file_with_a_note(side_pair, tmp_path, issue11):
    res, side = side_pair
    runs = [
        ["fit", res, side, *FIT_FAST],
        ["export", res, side, "--plot", "saxs2d", "-o", tmp_path / "figs", "--quiet"],
        ["average", res, side, "-o", tmp_path / "a.hdf", "--quiet"],
        ["fit", side, *FIT_FAST],
    ]
    out = issue11.drive(runs, tmp_path)
    for r in out[:3]:
        assert r["rc"] == 0, r
        line = _one_line_naming(r["stderr"], side.name)
        assert "note: skipping" in line and "side file" in line, line
    assert out[3]["rc"] == 3 and "no result file among the inputs" in out[3]["stderr"]
