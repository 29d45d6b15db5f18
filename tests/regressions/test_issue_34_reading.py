"""Issue 34, items 2 and 3: no hang on a FIFO, no read outside the input.

A result file whose g2 HDF5 would take from a named pipe (an external link, a virtual
dataset source, external raw storage) made every command wait forever, Ctrl-C and
SIGTERM ignored; one whose g2 lies in a file outside its folder (absolute link, ``../``,
VDS source, external storage standing for /etc/passwd) was read with exit 0; a VDS
whose source is missing read as zeros with exit 0. Each test failed on the code
before the fix (a hang ends the run at the time-out: SIGKILL).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from xpcsviewer.io import read_result
from xpcsviewer.io.errors import XpcsFileError

HERE = Path(__file__).resolve().parent
PY = [sys.executable, "-m", "xpcsviewer"]
TIMEOUT = 60


def _corpus():
    spec = importlib.util.spec_from_file_location("xpcs_bc_34", HERE / "bad_corpus.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


bc = _corpus()


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    d = tmp_path_factory.mktemp("i34")
    good = bc.write_good(d / "good_results.hdf")
    always, outside = bc.build_pointer_cases(d / "p", good)
    return good, always, outside


def _run(args, cwd, timeout=TIMEOUT):
    """(rc, stderr, seconds); a run past the time-out is killed and fails the test."""
    t = time.monotonic()
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "JAX_PLATFORMS": "cpu",
           "XPCSVIEWER_WRITING_WINDOW_S": "0"}
    env.pop("XPCSVIEWER_ALLOW_EXTERNAL", None)
    try:
        p = subprocess.run([*PY, *map(os.fspath, args)], capture_output=True, text=True,
                           timeout=timeout, cwd=cwd, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung: xpcsviewer {' '.join(map(str, args))[:200]}")
    return p.returncode, p.stderr, time.monotonic() - t


def _line(err: str, path: Path) -> str:
    lines = [ln for ln in err.splitlines() if os.fspath(path) in ln]
    assert len(lines) == 1, err[-3000:]
    return lines[0]


COMMANDS = {
    "info": [],
    "fit": ["-o", "fit.json", "--quiet", "--backend", "numpy"],
    "average": ["-o", "avg.hdf", "--quiet"],
    "export": ["--plot", "g2", "-o", "figs", "--quiet"],
    "series": ["-o", "series.csv", "--quiet"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_refuses_pipes_and_outside_data_promptly(cases, tmp_path, command):
    good, always, outside = cases
    bad = always + outside
    rc, err, took = _run([command, good, *(c.path for c in bad), *COMMANDS[command]],
                         tmp_path)
    assert rc == 3 and "Traceback" not in err, err[-3000:]
    for c in bad:
        line = _line(err, c.path)
        assert c.dataset in line, (c.name, line)
        if c.name != "fifo_given":
            assert "/xpcs/multitau/normalized_g2" in line, line
    for c in outside:
        assert "outside the input's folder" in _line(err, c.path)
        assert "--allow-external" in _line(err, c.path)
    for c in always:
        assert "--allow-external" not in _line(err, c.path)
    assert took < TIMEOUT


def test_a_missing_virtual_source_is_named_not_read_as_zeros(cases):
    _, always, _ = cases
    c = next(c for c in always if c.name == "vds_source_missing")
    with pytest.raises(XpcsFileError, match=r"gone\.h5 does not exist"):
        read_result(c.path)


def test_allow_external_reads_outside_regular_files_only(cases, tmp_path):
    from xpcsviewer.io._h5links import allowing_external

    good, always, outside = cases
    g2 = read_result(good).multitau.g2
    with allowing_external(True):
        for c in outside:
            np.testing.assert_array_equal(read_result(c.path).multitau.g2, g2)
        for c in always:  # a pipe stays refused; a missing source stays an error
            with pytest.raises(XpcsFileError):
                read_result(c.path)
    rc, err, _ = _run(["info", *(c.path for c in outside), "--allow-external"], tmp_path)
    assert rc == 0, err
    rc, err, _ = _run(["fit", outside[0].path, "--allow-external", "-o", "f.json",
                       "--quiet", "--backend", "numpy"], tmp_path)
    assert rc == 0 and (tmp_path / "f.json").is_file(), err
    rc, err, took = _run(["info", *(c.path for c in always), "--allow-external"],
                         tmp_path)
    assert rc == 3 and err.count("named pipe") == 4 and took < TIMEOUT, err


def test_hdf5s_fallback_to_the_current_folder_is_not_followed(tmp_path):
    """A relative link whose file is not beside the input: HDF5 would look in the
    current folder next and read a file of that name there."""
    good = bc.write_good(tmp_path / "good_results.hdf")
    inside, cwd = tmp_path / "in", tmp_path / "elsewhere"
    inside.mkdir()
    cwd.mkdir()
    with h5py.File(good, "r") as f:
        g2 = f[bc.G2][()]
    with h5py.File(cwd / "other.h5", "w") as f:
        f["g2"] = g2

    def edit(f):
        del f[bc.G2]
        f[bc.G2] = h5py.ExternalLink("other.h5", "/g2")

    p = bc._variant(good, inside / "x_results.hdf", edit)
    rc, err, _ = _run(["info", p], cwd)
    assert rc == 3 and "outside the input's folder" in err, err


def test_links_and_sources_inside_the_folder_are_read(tmp_path):
    """The G2 side file (an external link beside the result) and a VDS whose source
    is beside the file keep working."""
    from xpcsviewer.io import read_g2_stack_delay
    from xpcsviewer.io.results.g2stack import g2_side_path, open_g2_stack_writer
    from xpcsviewer.io.results.writer import write_result
    from xpcsviewer.synthetic.results import build_result

    good = bc.write_good(tmp_path / "good_results.hdf")
    res, extras = build_result(bc.SPEC, seed=7)
    stack = tmp_path / "stack_results.hdf"
    side = g2_side_path(stack)
    with open_g2_stack_writer(side, res.multitau.g2.shape[0], res.qmap.shape) as sink:
        for k in range(res.multitau.g2.shape[0]):
            sink(k, np.full((3, *res.qmap.shape), 1.5))
    write_result(stack, res, saxs_2d=extras["saxs_2d"], c2_maps=extras["c2_maps"],
                 g2_stack_file=side.name)
    with h5py.File(stack, "r") as f:
        link = f["/xpcs/multitau"].get("unnormalized_G2", getlink=True)
    assert isinstance(link, h5py.ExternalLink)  # the side file, beside it
    g2p, _, _ = read_g2_stack_delay(stack, 0)
    assert g2p.shape == res.qmap.shape and np.all(g2p == 1.5)
    with h5py.File(good, "r") as f:
        g2 = f[bc.G2][()]
    with h5py.File(tmp_path / "src.h5", "w") as f:
        f["g2"] = g2 * 2

    def edit(f):
        del f[bc.G2]
        lay = h5py.VirtualLayout(shape=g2.shape, dtype=np.float64)
        lay[...] = h5py.VirtualSource("src.h5", "/g2", shape=g2.shape)
        f.create_virtual_dataset(bc.G2, lay, fillvalue=0)

    p = bc._variant(good, tmp_path / "v_results.hdf", edit)
    np.testing.assert_array_equal(read_result(p).multitau.g2, read_result(good).multitau.g2 * 2)
    rc, err, _ = _run(["info", stack, p], tmp_path)
    assert rc == 0, err


def test_raw_and_qmap_pointers_follow_the_same_policy(cases, tmp_path):
    """correlate: raw frames behind a link out of the folder (read with
    --allow-external) or to a FIFO, a q-map whose mask is a VDS of a missing file."""
    good, _, _ = cases
    raw_good, _ = bc.build_raw_cases(tmp_path / "raw", tuple(bc.SPEC["geometry"]["shape"]))
    qmap_good, _ = bc.build_qmap_cases(tmp_path / "qmap", good)
    inside = tmp_path / "in"
    inside.mkdir()
    os.mkfifo(inside / "frames_pipe.h5")
    for name, target in (("out", os.fspath(raw_good)), ("pipe", "frames_pipe.h5")):
        with h5py.File(inside / f"raw_{name}.h5", "w") as f:
            f[bc.RAW] = h5py.ExternalLink(target, bc.RAW)
            f["/entry/instrument/detector_1/frame_time"] = 1e-3
    with h5py.File(qmap_good, "r") as f:
        mask = f["/qmap/mask"][()]

    def edit(f):
        del f["/qmap/mask"]
        lay = h5py.VirtualLayout(shape=mask.shape, dtype=mask.dtype)
        lay[...] = h5py.VirtualSource("gone.h5", "/mask", shape=mask.shape)
        f.create_virtual_dataset("/qmap/mask", lay, fillvalue=1)

    qbad = bc._variant(qmap_good, tmp_path / "qmap" / "q_vds_missing.hdf", edit)
    base = ["--quiet", "--backend", "numpy"]
    rc, err, _ = _run(["correlate", inside / "raw_out.h5", "--qmap", qmap_good, "-o",
                       "a.hdf", *base], tmp_path)
    assert rc == 3 and "outside the input's folder" in err and "raw_out.h5" in err, err
    rc, err, _ = _run(["correlate", inside / "raw_out.h5", "--qmap", qmap_good, "-o",
                       "b.hdf", "--allow-external", *base], tmp_path)
    assert rc == 0 and (tmp_path / "b.hdf").is_file(), err
    for args in (["correlate", inside / "raw_pipe.h5", "--qmap", qmap_good, "-o", "c.hdf"],
                 ["info", inside / "raw_pipe.h5"]):
        rc, err, _ = _run([*args, *base[:1]] if args[0] == "info" else [*args, *base],
                          tmp_path)
        assert rc == 3 and "named pipe" in err and "frames_pipe.h5" in err, err
    rc, err, _ = _run(["correlate", raw_good, "--qmap", qbad, "-o", "d.hdf", *base],
                      tmp_path)
    assert rc == 3 and "gone.h5" in err and "/qmap/mask" in err, err


def test_the_series_tab_folder_watch_skips_pipes(cases, tmp_path):
    """The GUI's Series tab lists finished results of a folder: a FIFO there, or a
    result whose g2 is linked to one, is left out at once (it waited forever)."""
    good, always, _ = cases
    import shutil

    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copyfile(good, folder / "a_results.hdf")
    os.mkfifo(folder / "b_results.hdf")
    os.mkfifo(folder / "pipe.h5")
    link = next(c for c in always if c.name == "link_to_fifo")
    shutil.copyfile(link.path, folder / "c_results.hdf")
    old = time.time() - 3600
    for p in folder.iterdir():
        if p.is_file():
            os.utime(p, (old, old))
    code = ("import sys; from xpcsviewer.gui.panels._live_jobs import list_finished_job; "
            f"print(list_finished_job({os.fspath(folder)!r}, [], quiet_s=0.0))")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "JAX_PLATFORMS": "cpu"}
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("hung listing a folder with a FIFO")
    assert p.returncode == 0, p.stderr
    assert "a_results.hdf" in p.stdout and "b_results" not in p.stdout
    assert "c_results" not in p.stdout, p.stdout


def test_live_on_a_file_linking_to_a_pipe_ends_at_once(tmp_path):
    """``live`` looked the frame dataset up through the link and waited forever."""
    os.mkfifo(tmp_path / "pipe.h5")
    with h5py.File(tmp_path / "raw.h5", "w") as f:
        f[bc.RAW] = h5py.ExternalLink("pipe.h5", bc.RAW)
    rc, _, _ = _run(["qmap", "--shape", "8", "8", "--energy", "10", "--det-dist", "5",
                     "--pixel-size", "75e-6", "--bcx", "4", "--bcy", "4", "-o", "q.hdf",
                     "--quiet"], tmp_path)
    assert rc == 0
    rc, err, _ = _run(["live", "raw.h5", "--qmap", "q.hdf", "-o", "l.hdf", "--idle", "1",
                       "--start-wait", "3", "--quiet"], tmp_path)
    assert rc == 3 and "named pipe" in err and "pipe.h5" in err, err
    assert not (tmp_path / "l.hdf").exists()


def test_batch_chunks_carry_allow_external(cases, tmp_path):
    """A Dask worker runs a chunk under the client's --allow-external, not its own
    environment's (an existing cluster's workers were started without it)."""
    from xpcsviewer.batch import run_chunk
    from xpcsviewer.commands.info import summary_task

    _, _, outside = cases
    item = [(0, {"path": os.fspath(outside[1].path), "shown": os.fspath(outside[1].path)})]
    ok = run_chunk(summary_task, item, None, True)[0]
    assert ok.ok, ok.error
    refused = run_chunk(summary_task, item, None, False)[0]
    assert not refused.ok and "outside the input's folder" in refused.error
    rc, err, _ = _run(["info", outside[1].path, "--workers", "2", "--allow-external",
                       "--quiet"], tmp_path, timeout=180)
    assert rc == 0, err


@pytest.mark.parametrize("kind", ["link", "vds"])
@pytest.mark.parametrize("layout", ["beside", "cwd_only", "both", "absolute_missing",
                                    "absolute_there", "not_hdf5_beside"])
def test_the_search_the_check_follows_is_hdf5s(tmp_path, monkeypatch, kind, layout):
    """The reference is HDF5 itself: each candidate file holds a different marker, and
    the file the check says HDF5 opens is the one whose marker HDF5 reads."""
    from xpcsviewer.io._h5links import hdf5_target

    folder, cwd, far = tmp_path / "in", tmp_path / "cwd", tmp_path / "far"
    for d in (folder, cwd, far):
        d.mkdir()

    def put(path: Path, marker: float) -> None:
        with h5py.File(path, "w") as f:
            f["m"] = np.full(2, marker)

    name = "t.h5"
    if layout in ("beside", "both", "absolute_missing"):
        put(folder / "t.h5", 1.0)
    if layout in ("cwd_only", "both", "absolute_missing", "not_hdf5_beside"):
        put(cwd / "t.h5", 2.0)
    if layout == "absolute_there":
        put(far / "t.h5", 3.0)
        put(folder / "t.h5", 1.0)
    if layout.startswith("absolute"):
        name = os.fspath(far / "t.h5")
    if layout == "not_hdf5_beside":
        (folder / "t.h5").write_bytes(b"not hdf5 at all" * 10)
    with h5py.File(folder / "x.h5", "w") as f:
        if kind == "link":
            f["d"] = h5py.ExternalLink(name, "/m")
        else:
            lay = h5py.VirtualLayout(shape=(2,), dtype=np.float64)
            lay[...] = h5py.VirtualSource(name, "/m", shape=(2,))
            f.create_virtual_dataset("d", lay, fillvalue=-1)
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("HDF5_EXT_PREFIX", raising=False)
    monkeypatch.delenv("HDF5_VDS_PREFIX", raising=False)
    target = hdf5_target(name, folder, kind)
    with h5py.File(folder / "x.h5", "r") as f:
        if target is None:  # HDF5 stops at the file beside, which is not HDF5
            with pytest.raises((OSError, KeyError)):  # link: KeyError; VDS: OSError
                f["d"][0]
            return
        got = float(f["d"][0])
    with h5py.File(target, "r") as f:
        assert float(f["m"][0]) == got, (layout, target, got)


def test_regroup_and_snapshot_refuse_a_g2_stack_behind_a_pipe(cases, tmp_path):
    """The per-pixel G2 stack is read through its external link: to a FIFO it is
    refused at once by regroup (and the GUI's g2pixel tab through snapshot)."""
    good, _, _ = cases
    os.mkfifo(tmp_path / "x_results_G2.hdf")

    def edit(f):
        f["/xpcs/multitau/unnormalized_G2"] = h5py.ExternalLink("x_results_G2.hdf",
                                                                "/G2IPIF")

    p = bc._variant(good, tmp_path / "x_results.hdf", edit)
    for args in (["regroup", p, "-o", "r.hdf", "--quiet"],
                 ["snapshot", p, "--tab", "g2pixel", "-o", "s.png"]):
        rc, err, _ = _run(args, tmp_path)
        assert rc == 3 and "named pipe" in err and "x_results_G2.hdf" in err, (args, err)
    assert not (tmp_path / "r.hdf").exists() and not (tmp_path / "s.png").exists()
