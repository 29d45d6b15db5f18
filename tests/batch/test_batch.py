"""The batch layer: serial vs Dask (LocalCluster, scheduler address), failures,
a dead worker, ``--skip-existing`` (issue 15)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import cloudpickle
import numpy as np
import pytest

import xpcsviewer.commands.correlate as correlate_cmd
import xpcsviewer.commands.fit as fit_cmd
import xpcsviewer.jobs.correlate as correlate_job
from xpcsviewer.cli import main
from xpcsviewer.fitting.results import FitJsonStream, write_fit_json
from xpcsviewer.io.results.writer import write_result
from xpcsviewer.synthetic.results import build_result

from .conftest import _spec, datasets

# Tasks defined here run on the cluster's workers: ship them by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

KILL_MARKER: str = ""
KILL_NAME: str = ""  # the file whose task kills its worker (once)


def _fit(files, out, *extra, quiet=True):
    return main(["fit", *map(str, files), "-o", str(out), *(["--quiet"] if quiet else []),
                 *extra])


def _correlate(qpath, raws, out, *extra):
    return main(["correlate", *map(str, raws), "--qmap", str(qpath), "-o", str(out),
                 "--quiet", *extra])


def _no_temps(folder: Path) -> None:
    assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


# ------------------------------------------------------------------- serial vs workers
@pytest.fixture(scope="module")
def serial_fit(result_files, tmp_path_factory) -> bytes:
    # A process of its own without the compilation cache, as a user runs it: a
    # cached executable would hide a worker compiled with other XLA options.
    out = tmp_path_factory.mktemp("fit_serial") / "fits.json"
    subprocess.run([sys.executable, "-m", "xpcsviewer", "fit", *map(str, result_files),
                    "-o", str(out), "--quiet"], check=True,
                   env={**os.environ, "XPCS_JAX_CACHE_DIR": "off"})
    return out.read_bytes()


@pytest.fixture(scope="module")
def serial_corr(raw_set, tmp_path_factory) -> Path:
    qpath, raws = raw_set
    out = tmp_path_factory.mktemp("corr_serial")
    assert _correlate(qpath, raws, out) == 0
    return out


def test_fit_workers2_same_json_bytes_as_serial(result_files, serial_fit, tmp_path, capsys,
                                                monkeypatch):
    monkeypatch.setenv("XPCS_JAX_CACHE_DIR", "off")  # the workers compile for themselves
    out = tmp_path / "fits.json"
    assert _fit(result_files, out, "--workers", "2", quiet=False) == 0
    assert "(LocalCluster of 2 worker processes" in capsys.readouterr().err
    assert out.read_bytes() == serial_fit
    doc = json.loads(serial_fit)
    assert [Path(r["path"]).name for r in doc["files"]] == [p.name for p in result_files]
    assert all(r["status"] for r in doc["files"])


def test_fit_of_a_file_does_not_depend_on_the_batch(result_files, serial_fit, tmp_path):
    out = tmp_path / "one.json"
    assert _fit(result_files[2:3], out) == 0
    assert json.loads(out.read_bytes())["files"][0] == json.loads(serial_fit)["files"][2]


def test_correlate_workers2_same_datasets_as_serial(raw_set, serial_corr, tmp_path):
    qpath, raws = raw_set
    assert _correlate(qpath, raws, tmp_path, "--workers", "2") == 0
    for raw in raws:
        name = f"{raw.stem}_results.hdf"
        ref, got = datasets(serial_corr / name), datasets(tmp_path / name)
        assert ref.keys() == got.keys() and "xpcs/multitau/normalized_g2" in ref
        for k in ref:
            np.testing.assert_array_equal(got[k], ref[k], err_msg=k)
    # the single-file form writes the same file
    one = tmp_path / "one_results.hdf"
    assert _correlate(qpath, raws[:1], one) == 0
    ref = datasets(serial_corr / f"{raws[0].stem}_results.hdf")
    for k, v in datasets(one).items():
        np.testing.assert_array_equal(v, ref[k], err_msg=k)
    _no_temps(tmp_path)


def test_export_workers2_same_figures_as_serial(result_files, tmp_path):
    args = ["--plot", "saxs2d", "--plot", "stability", "--plot", "g2", "--quiet"]
    a, b = tmp_path / "serial", tmp_path / "workers"
    assert main(["export", *map(str, result_files), "-o", str(a), *args]) == 0
    assert main(["export", *map(str, result_files), "-o", str(b), *args,
                 "--workers", "2"]) == 0
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir())
    assert len(names) == 2 * len(result_files) + 1  # per-file kinds + combined_g2
    for n in names:
        sa, sb = (a / n).stat().st_size, (b / n).stat().st_size
        assert abs(sa - sb) <= 0.02 * sa, n  # PNG compression noise at most


# ------------------------------------------------------------------- scheduler address
def test_fit_on_a_scheduler_address_and_env(result_files, serial_fit, scheduler, tmp_path,
                                            monkeypatch, capsys):
    out = tmp_path / "fits.json"
    capsys.readouterr()
    assert _fit(result_files, out, "--scheduler", scheduler, quiet=False) == 0
    assert f"(Dask scheduler {scheduler}," in capsys.readouterr().err
    assert out.read_bytes() == serial_fit
    monkeypatch.setenv("XPCS_SCHEDULER", scheduler)
    out2 = tmp_path / "fits_env.json"
    assert _fit(result_files, out2, quiet=False) == 0
    assert f"(Dask scheduler {scheduler}," in capsys.readouterr().err
    assert out2.read_bytes() == serial_fit


# ------------------------------------------------------------------- failures
def test_corrupt_file_named_others_complete_exit_3(result_files, corrupt_file, serial_fit,
                                                   scheduler, tmp_path, capsys):
    files = [*result_files[:2], corrupt_file, *result_files[2:]]
    out = tmp_path / "fits.json"
    capsys.readouterr()
    assert _fit(files, out, "--scheduler", scheduler) == 3
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 2, err
    assert err[0].startswith(f"xpcsviewer fit: {corrupt_file}:"), err
    assert err[1] == f"xpcsviewer fit: 1 of {len(files)} file(s) failed"
    doc = json.loads(out.read_bytes())
    assert doc["files"] == json.loads(serial_fit)["files"]
    assert [e["path"] for e in doc["errors"]] == [str(corrupt_file)]


def test_corrupt_raw_named_others_written(raw_set, serial_corr, corrupt_file, scheduler,
                                          tmp_path, capsys):
    qpath, raws = raw_set
    bad = tmp_path / "in" / "rawbad.h5"
    bad.parent.mkdir()
    bad.write_bytes(corrupt_file.read_bytes())
    out = tmp_path / "out"
    capsys.readouterr()
    assert _correlate(qpath, [raws[0], bad, raws[1]], out, "--scheduler", scheduler) == 3
    err = capsys.readouterr().err
    assert f"xpcsviewer correlate: {bad}:" in err and "1 of 3 file(s) failed" in err
    assert sorted(p.name for p in out.iterdir()) == ["raw0_results.hdf", "raw1_results.hdf"]


def _kill_once_then(task):
    def wrapped(options, item):
        # the task of KILL_NAME dies with its worker once, half-way through a write
        paths = [i["path"] for i in item] if isinstance(item, list) else [item["path"]]
        if not any(p.endswith(KILL_NAME) for p in paths):
            return task(options, item)
        try:
            fd = os.open(KILL_MARKER, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return task(options, item)
        os.close(fd)
        from xpcsviewer.io.outputs import atomic_path

        if isinstance(item, list):  # a fit task writes nothing: just die
            os.kill(os.getpid(), signal.SIGKILL)
        with atomic_path(item["output"]) as tmp:
            tmp.write_bytes(b"half a file")
            os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")

    return wrapped


def test_worker_killed_mid_write_batch_completes(raw_set, serial_corr, scheduler, tmp_path,
                                                 monkeypatch):
    global KILL_MARKER, KILL_NAME
    qpath, raws = raw_set
    KILL_MARKER = str(tmp_path / "killed")
    # the last file: its re-run lands on a worker that already wrote into the
    # folder, so only the client's closing sweep can remove the dead one's temporary
    KILL_NAME = raws[-1].name
    monkeypatch.setattr(correlate_cmd, "correlate_task",
                        _kill_once_then(correlate_cmd.correlate_task))
    out = tmp_path / "out"
    assert _correlate(qpath, raws, out, "--scheduler", scheduler) == 0
    assert Path(KILL_MARKER).exists()  # a worker did die
    assert sorted(p.name for p in out.iterdir()) == [f"{r.stem}_results.hdf" for r in raws]
    for p in out.iterdir():
        ref = datasets(serial_corr / p.name)
        for k, v in datasets(p).items():
            np.testing.assert_array_equal(v, ref[k], err_msg=k)
    _no_temps(out)  # the dead worker's temporary is gone


def test_worker_killed_during_fit_same_json(result_files, serial_fit, scheduler, tmp_path,
                                            monkeypatch):
    global KILL_MARKER, KILL_NAME
    KILL_MARKER = str(tmp_path / "killed")
    KILL_NAME = result_files[1].name
    monkeypatch.setattr(fit_cmd, "fit_files", _kill_once_then(fit_cmd.fit_files))
    out = tmp_path / "fits.json"
    assert _fit(result_files, out, "--scheduler", scheduler) == 0
    assert Path(KILL_MARKER).exists()
    assert out.read_bytes() == serial_fit
    _no_temps(tmp_path)


# ------------------------------------------------------------------- resume
def test_skip_existing_after_interrupt_does_only_the_missing(raw_set, serial_corr, tmp_path,
                                                             monkeypatch, capsys):
    qpath, raws = raw_set
    real = correlate_job.correlate_file
    done: list[str] = []

    def interrupted_at_third(job, **kw):
        if job.raw.name == raws[2].name:
            raise KeyboardInterrupt
        done.append(job.raw.name)
        return real(job, **kw)

    monkeypatch.setattr(correlate_job, "correlate_file", interrupted_at_third)
    out = tmp_path / "out"
    assert _correlate(qpath, raws, out) == 130
    assert sorted(p.name for p in out.iterdir()) == ["raw0_results.hdf", "raw1_results.hdf"]
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}

    done.clear()
    monkeypatch.setattr(correlate_job, "correlate_file",
                        lambda job, **kw: done.append(job.raw.name) or real(job, **kw))
    assert _correlate(qpath, raws, out) == 2  # existing outputs are refused...
    capsys.readouterr()
    assert _correlate(qpath, raws, out, "--skip-existing") == 0  # ...or skipped
    assert done == ["raw2.h5"]
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.name in before} == before
    ref = datasets(serial_corr / "raw2_results.hdf")
    for k, v in datasets(out / "raw2_results.hdf").items():
        np.testing.assert_array_equal(v, ref[k], err_msg=k)


def test_skip_existing_export_keeps_complete_figures(result_files, tmp_path):
    out = tmp_path / "figs"
    args = ["export", *map(str, result_files[:3]), "--plot", "saxs2d", "-o", str(out),
            "--quiet"]
    assert main(args) == 0
    (out / "s1_saxs2d.png").unlink()
    (out / "s2_saxs2d.png").write_bytes(b"\x89PNG truncated")  # not a whole figure
    kept = (out / "s0_saxs2d.png").stat().st_mtime_ns
    assert main([*args, "--skip-existing", "--overwrite"]) == 0
    assert (out / "s0_saxs2d.png").stat().st_mtime_ns == kept
    assert (out / "s1_saxs2d.png").stat().st_size > 1000
    assert (out / "s2_saxs2d.png").stat().st_size > 1000


# ------------------------------------------------------------------- plumbing
@pytest.mark.parametrize("n", [0, 1, 3])
def test_streamed_json_is_write_fit_json_bytes(tmp_path, n):
    recs = [{"path": f"f{i}", "tau": {"value": [1.0, None], "error": [0.1, None]},
             "status": ["converged", "failed"], "diffusion": {}} for i in range(n)]
    errs = [{"path": "bad", "error": "bad: not an HDF5 file"}] if n != 1 else []
    write_fit_json(tmp_path / "a.json", recs, errs)
    with FitJsonStream(tmp_path / "b.json") as s:
        for r in recs:
            s.add(r)
        s.set_errors(errs)
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_plain_commands_do_not_import_dask(result_files):
    code = ("import sys; from xpcsviewer.cli import main; "
            f"rc = main(['info', {str(result_files[0])!r}]); "
            "assert rc == 0; print('dask' in sys.modules, 'distributed' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "XPCS_SCHEDULER": ""})
    assert out.stdout.strip().splitlines()[-1] == "False False"


# ------------------------------------------------------------------- average screening
def test_average_screening_on_a_cluster_same_file_and_messages(result_files, corrupt_file,
                                                               scheduler, tmp_path, capsys):
    a, b = tmp_path / "serial.hdf", tmp_path / "dask.hdf"
    assert main(["average", *map(str, result_files), "-o", str(a), "--quiet"]) == 0
    assert main(["average", *map(str, result_files), "-o", str(b), "--quiet",
                 "--scheduler", scheduler]) == 0
    ref = datasets(a)
    for k, v in datasets(b).items():
        np.testing.assert_array_equal(v, ref[k], err_msg=k)
    files = [*map(str, result_files[:2]), str(corrupt_file)]
    capsys.readouterr()
    assert main(["average", *files, "-o", str(tmp_path / "x.hdf"), "--quiet"]) == 3
    serial_err = capsys.readouterr().err
    assert main(["average", *files, "-o", str(tmp_path / "x.hdf"), "--quiet",
                 "--scheduler", scheduler]) == 3
    assert capsys.readouterr().err == serial_err
    assert str(corrupt_file) in serial_err


def test_gui_fit_of_all_files_reports_files_done_and_failed(result_files):
    from xpcsviewer.fitting.block_fits import fit_g2_blocks
    from xpcsviewer.fitting.blocks import g2_blocks
    from xpcsviewer.io import read_result

    seen = []
    fit_g2_blocks(g2_blocks([read_result(p) for p in result_files[:3]]), "single",
                  progress=lambda d, t, m="": seen.append(m))
    assert seen[0] == "0/3 files: fitting 3" and seen[-1] == "3/3 files, 0 failed"


@pytest.mark.parametrize("bad", [["--workers", "0"], ["--workers", "2", "--scheduler",
                                                       "tcp://127.0.0.1:1"]])
def test_bad_batch_options_are_usage_errors(result_files, tmp_path, bad, capsys):
    assert _fit(result_files[:1], tmp_path / "f.json", *bad) == 2
    assert "--workers" in capsys.readouterr().err
    assert not (tmp_path / "f.json").exists()


def test_skip_existing_export_keeps_multi_page_figures(tmp_path):
    """A g2 figure of several pages is written as ``_p1``, ``_p2``, ... and never as
    the target name itself: --skip-existing must still find it whole."""
    res, extra = build_result({**_spec(7), "partition": {"dq_num": 8, "sq_num": 16}}, seed=7)
    res.path = tmp_path / "m_results.hdf"
    write_result(res.path, res, saxs_2d=extra["saxs_2d"])
    out = tmp_path / "figs"
    args = ["export", str(res.path), "--plot", "g2", "--format", "svg",
            "--size", "single", "-o", str(out), "--quiet"]
    assert main(args) == 0
    pages = sorted(out.glob("*g2_p*.svg"))
    assert len(pages) >= 2 and not list(out.glob("*g2.svg"))
    before = {p.name: p.stat().st_mtime_ns for p in pages}
    assert main([*args, "--skip-existing"]) == 0
    assert {p.name: p.stat().st_mtime_ns for p in pages} == before
    pages[-1].write_text("<svg cut")  # a set with a page cut short is drawn again
    assert main([*args, "--skip-existing", "--overwrite"]) == 0
    assert pages[-1].read_text().rstrip().endswith("</svg>")
    assert pages[0].stat().st_mtime_ns != before[pages[0].name]


def test_figure_pages_are_written_first_page_last(tmp_path, monkeypatch):
    """The first page is renamed into place last, so its presence means the set is whole."""
    import os

    import matplotlib.figure

    from xpcsviewer.export.files import complete_pages, save_figure

    order = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (order.append(os.path.basename(dst)),
                                                         real_replace(src, dst))[1])
    pages = [matplotlib.figure.Figure() for _ in range(3)]
    for k, f in enumerate(pages):
        f.add_subplot().set_title(f"page {k}")
    save_figure(pages, tmp_path / "a.svg")
    assert order == ["a_p3.svg", "a_p2.svg", "a_p1.svg"]
    def whole(p):
        return p.is_file() and p.stat().st_size > 0

    done = complete_pages(tmp_path / "a.svg", whole)
    assert [p.name for p in done] == ["a_p1.svg", "a_p2.svg", "a_p3.svg"]
    (tmp_path / "a_p1.svg").unlink()
    assert complete_pages(tmp_path / "a.svg", whole) is None
