"""Issue 34, items 4, 6, 8, 9 and 10: a hostile session file, ``--overwrite`` of a
file another result links to, ``snapshot`` under load, a non-Dask service at the
scheduler address, the same file twice and doubled temporary names.

Each test failed (or hung) on the code before the fix.
"""

from __future__ import annotations

import contextlib
import json
import os
import socketserver
import threading
from pathlib import Path

import h5py
import numpy as np
import pytest


# ------------------------------------------------------------ item 4: session file
def _hostile_sessions(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    cases = {
        "nested": "[" * 200_000 + "]" * 200_000,
        "digits": '{"current_target": ' + "9" * 5000 + "}",
        "wrong_types": json.dumps({
            "recent_folders": 5, "geometry": 7, "window_state": "\u00e9\u00e9",
            "theme": "dark", "browser": [1], "panels": {"g2": 3, "saxs2d": [1]},
            "folder": 12, "targets": [], "current_target": 10**300,
            "active_tab": "metadata"}),
    }
    out = {}
    for name, text in cases.items():
        p = folder / f"{name}.json"
        p.write_text(text)
        out[name] = p
    (folder / "a_folder.json").mkdir()
    out["a_folder"] = folder / "a_folder.json"
    return out


def _load_in_thread(path: Path, timeout: float = 10.0):
    """``load_session(path)`` in a thread: a FIFO blocked the old code for ever."""
    from xpcsviewer.gui.session import load_session

    box: dict = {}

    def go() -> None:
        try:
            box["out"] = load_session(path)
        except BaseException as exc:  # the test reports it
            box["exc"] = exc

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive() and path.exists():  # release the blocked reader
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        t.join(5)
    assert "out" in box, f"load_session({path.name}) raised or blocked: {box.get('exc')!r}"
    return box["out"]


def test_a_session_file_that_is_not_a_regular_file_is_left_alone_at_close(tmp_path):
    """Saving over a FIFO blocked the window's close for ever (the export guard opened
    it to look for an HDF5 signature); a folder there gave a traceback."""
    from xpcsviewer.gui.session import save_session

    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "dir.json").mkdir()
    for name in ("fifo.json", "dir.json"):
        box = {}

        def save(name=name, box=box):
            try:
                save_session({"theme": "dark"}, tmp_path / name)
            except Exception as exc:
                box["exc"] = exc

        t = threading.Thread(target=save, daemon=True)
        t.start()
        t.join(10)
        assert not t.is_alive(), f"saving over {name} blocked"
        assert "not a regular file" in str(box.get("exc")), box
    assert (tmp_path / "dir.json").is_dir()


def test_hostile_session_files_are_ignored_naming_the_file(tmp_path):
    cases = _hostile_sessions(tmp_path / "s")
    fifo = tmp_path / "s" / "fifo.json"
    os.mkfifo(fifo)
    cases["fifo"] = fifo
    for name, path in cases.items():
        data, warn = _load_in_thread(path)
        if name == "wrong_types":  # valid JSON: the entries of the right type are kept
            assert data == {"window_state": "\u00e9\u00e9", "theme": "dark", "targets": [],
                            "current_target": 10**300, "active_tab": "metadata",
                            "panels": {"g2": 3, "saxs2d": [1]}}
            assert str(path) in warn
            for key in ("recent_folders", "geometry", "browser", "folder"):
                assert key in warn
            continue
        assert data == {}, name
        assert warn is not None and str(path) in warn, (name, warn)


@pytest.mark.gui
@pytest.mark.parametrize("case", ["nested", "digits", "wrong_types", "a_folder"])
def test_hostile_session_never_stops_the_window(qtbot, tmp_path, monkeypatch, case):
    from xpcsviewer.gui.main_window import MainWindow

    cfg = tmp_path / "config"
    path = _hostile_sessions(tmp_path / "s")[case]
    cfg.mkdir()
    os.replace(path, cfg / "session.json")
    monkeypatch.setenv("XPCSVIEWER_CONFIG_DIR", str(cfg))
    monkeypatch.setenv("XPCSVIEWER_CATCH_ERRORS", "0")
    win = MainWindow(restore_session=True, save_session_on_close=False)
    qtbot.addWidget(win)
    win.show()
    assert win.results == []
    if case == "wrong_types":  # each bad value ignored alone, the rest restored
        assert win.theme == "dark" and win.current_panel().name == "metadata"
    if case in ("nested", "digits", "a_folder", "wrong_types"):
        # the status bar says which file was ignored
        assert any(str(cfg / "session.json") in e.message for e in win.errors), \
            [e.message for e in win.errors]
    win.shutdown(5000)


# ------------------------------------------------------ item 6: --overwrite and links
FIT_FAST = ["--quiet", "--backend", "numpy"]


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
def linked_set(tmp_path_factory, issue11):
    """A folder: X_results.hdf + X_results_G2.hdf (linked), G01.hdf (an older
    X_results.hdf renamed: it reads X_results_G2.hdf), a raw file and a q-map."""
    from xpcsviewer.io import read_result
    from xpcsviewer.io.results.writer import write_qmap_file

    bc = issue11.corpus_module
    d = tmp_path_factory.mktemp("linked")
    x, side = _result_with_side_file(d, "X_results.hdf", bc.SPEC)
    g01 = d / "G01.hdf"
    g01.write_bytes(x.read_bytes())  # a copy under a name that says nothing
    other, _ = _result_with_side_file(d, "O_results.hdf", bc.SPEC)
    src = tmp_path_factory.mktemp("inputs")
    shape = tuple(bc.SPEC["geometry"]["shape"])
    raw = src / "raw.h5"
    with h5py.File(raw, "w") as f:
        frames = np.random.default_rng(0).poisson(0.5, (64, *shape)).astype(np.int32)
        f.create_dataset(bc.RAW, data=frames, chunks=(16, *shape))
        f["/entry/instrument/detector_1/frame_time"] = 1e-3
    qmap = write_qmap_file(src / "q.hdf", read_result(x).qmap)
    return {"dir": d, "x": x, "side": side, "g01": g01, "other": other, "raw": raw,
            "qmap": qmap}


def test_overwrite_never_replaces_a_file_another_result_reads(linked_set, issue11):
    s = linked_set
    d, side = s["dir"], s["side"]
    watched = [s["x"], side, s["g01"]]
    before = issue11.fingerprint(watched)
    corr = ["correlate", s["raw"], "--qmap", s["qmap"], "--quiet", "--backend", "numpy",
            "--overwrite"]
    runs = [  # each would replace X_results_G2.hdf, which G01.hdf (and X) read
        [*corr, "--save-g2-pixel", "-o", s["x"]],
        [*corr, "-o", side],
        ["regroup", s["other"], "-o", side, "--overwrite", "--quiet"],
        ["qmap", *issue11.qmap_geometry, "-o", side, "--overwrite"],
        ["live", s["raw"], "--qmap", s["qmap"], "-o", side, "--overwrite", "--quiet"],
    ]
    out = issue11.drive(runs, d)
    for args, r in zip(runs, out, strict=True):
        assert r["escaped"] is None, r["escaped"]
        assert r["rc"] == 2, (args[0], r)
        line = [ln for ln in r["stderr"].splitlines() if side.name in ln]
        assert len(line) == 1 and "is read by" in line[0], r["stderr"][-2000:]
        # the linking result is named: G01.hdf for the correlate's side file (X is
        # replaced by the same run), the first reader by name otherwise
        assert "G01.hdf" in line[0], line[0]
    assert issue11.fingerprint(watched) == before


def test_the_output_replaced_with_its_side_file_does_not_count(linked_set, tmp_path):
    from xpcsviewer.io.outputs import OutputRefusedError, check_output

    s = linked_set
    d = tmp_path / "solo"
    d.mkdir()
    x = d / "X_results.hdf"
    side = d / "X_results_G2.hdf"
    x.write_bytes(s["x"].read_bytes())
    side.write_bytes(s["side"].read_bytes())
    # only X reads the side file, and X is replaced by the same run: allowed
    assert check_output(side, [], overwrite=True, replacing=[x]) == side
    with pytest.raises(OutputRefusedError, match=r"X_results\.hdf"):
        check_output(side, [], overwrite=True)
    # a file nobody reads is replaced as before
    assert check_output(x, [], overwrite=True) == x


# ------------------------------------------- item 10: one file twice, doubled temps
def test_fit_and_series_refuse_the_same_file_twice(linked_set, tmp_path, issue11):
    x = linked_set["other"]
    alias = tmp_path / "alias.hdf"
    alias.symlink_to(x)  # the same file under another name
    runs = [
        ["fit", x, x, *FIT_FAST],
        ["fit", x, alias, "-o", tmp_path / "f.json", *FIT_FAST],
        ["series", x, alias, "-o", tmp_path / "s.csv", "--quiet"],
        ["average", x, x, "-o", tmp_path / "a.hdf", "--quiet"],  # the rule reused
    ]
    out = issue11.drive(runs, tmp_path)
    for args, r in zip(runs, out, strict=True):
        assert r["escaped"] is None, r["escaped"]
        assert r["rc"] == 2, (args[0], r)
        assert "is the same file as" in r["stderr"], r["stderr"][-1000:]
    assert not (tmp_path / "f.json").exists() and not (tmp_path / "s.csv").exists()


def test_a_nested_atomic_write_makes_no_temporary_of_a_temporary(tmp_path):
    from xpcsviewer.io.outputs import atomic_path

    out = tmp_path / "avg.hdf"
    with atomic_path(out) as tmp, atomic_path(tmp) as inner:  # as average does
        inner.write_bytes(b"x")
        names = os.listdir(tmp_path)
    assert all(n.count(".xpcs-") <= 1 for n in names), names
    assert out.read_bytes() == b"x" and os.listdir(tmp_path) == ["avg.hdf"]


def test_a_killed_average_leaves_one_temporary_that_the_next_run_removes(tmp_path):
    import subprocess
    import sys

    from xpcsviewer.io.outputs import sweep_stale_temps

    code = ("import os, sys; from xpcsviewer.io.outputs import atomic_path\n"
            "with atomic_path(sys.argv[1]) as t, atomic_path(t) as inner:\n"
            "    inner.write_bytes(b'half'); os._exit(9)  # as kill -9 mid-write\n")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "avg.hdf")], check=False,
                   timeout=120)
    left = os.listdir(tmp_path)
    assert len(left) == 1 and left[0].count(".xpcs-") == 1, left
    assert [p.name for p in sweep_stale_temps(tmp_path, force=True)] == left
    assert os.listdir(tmp_path) == []


# --------------------------------------------- item 9: not a Dask scheduler answers
class _NotDask(socketserver.BaseRequestHandler):
    def handle(self) -> None:  # a web server's greeting: read as a 3 EiB frame size
        self.request.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\nnot dask\n")
        with contextlib.suppress(OSError):
            self.request.recv(1 << 16)


def test_a_service_that_is_not_dask_at_the_scheduler_address(linked_set, tmp_path, capsys):
    from xpcsviewer.cli import main

    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _NotDask)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    address = f"tcp://127.0.0.1:{srv.server_address[1]}"
    try:
        capsys.readouterr()
        rc = main(["fit", str(linked_set["other"]), "--scheduler", address, *FIT_FAST])
    finally:
        srv.shutdown()
        srv.server_close()
    err = capsys.readouterr().err
    assert rc == 1, err
    assert f"{address} is not a Dask scheduler" in err, err
    assert "memory" not in err and len(err.strip().splitlines()) == 1, err


def test_the_probe_tells_unreachable_from_not_dask():
    import socket

    from xpcsviewer.batch._cluster import probe_scheduler

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert probe_scheduler(f"tcp://127.0.0.1:{port}", timeout=1).startswith("cannot connect")
    assert probe_scheduler("tls://127.0.0.1:1") is None  # not probed: TLS speaks first


# ------------------------------------------------------------ item 8: snapshot
@pytest.mark.gui
def test_a_job_outliving_its_signals_object_ends_quietly(qapp):
    """At exit Qt deletes the signals while the warm-up still compiles; it then
    ended with ``Cancelled`` and ``RuntimeError: Signal source has been deleted``."""
    import shiboken6

    from xpcsviewer.gui.workers import ComputeWorker
    from xpcsviewer.progress import Cancelled

    def job(progress=None, cancel=None):
        shiboken6.delete(worker.signals)  # what QApplication's teardown does
        progress(1, 3, "compiling")
        raise Cancelled()

    worker = ComputeWorker(job)
    worker.run()  # inline: any emit that raises would escape here


@pytest.mark.gui
def test_snapshot_waits_without_a_fixed_limit_and_says_what_runs(qapp):
    import time

    from xpcsviewer.gui.snapshot import WAIT_MS, _wait
    from xpcsviewer.gui.workers import TaskRunner

    assert WAIT_MS is None  # the 120 s limit failed the command on a loaded machine

    def slow(progress=None, cancel=None):
        for k in range(6):
            progress(k, 6, "compiling the fits")
            time.sleep(0.15)
        return 1

    from PySide6.QtCore import QCoreApplication, QEvent

    # windows of earlier tests are deleted by the event loop (seconds of C++): not
    # inside the waits measured here
    for _ in range(3):
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        QCoreApplication.processEvents()
    runner = TaskRunner()
    said: list[str] = []
    errors = []
    runner.submit("warmup", slow, description="warm-up", on_error=errors.append)
    _wait(runner, WAIT_MS, "opening the files", said.append, report_s=0.3)
    assert not runner.is_busy and not errors, errors
    assert said and all(s.startswith("snapshot: opening the files: ") for s in said), said
    assert any("warm-up (compiling the fits" in s for s in said), said
