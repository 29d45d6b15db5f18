"""Issue 11, items 6 and 9: degenerate files in ``export``; Ctrl-C and SIGTERM.

Before the fix one degenerate file stopped a whole export with exit 1 and a
matplotlib message naming neither file nor plot; Ctrl-C early printed a
KeyboardInterrupt traceback, could be swallowed during ``fit`` (exit 0), and was
ignored by ``snapshot``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest


# ------------------------------------------------------------------------ export
def test_degenerate_files_are_skipped_by_plot_and_the_rest_exported(
    corpus, tmp_path, issue11
):
    degenerate = [c.path for c in corpus.degenerate]
    out = tmp_path / "figs"
    proc = issue11.cli(
        [
            "export",
            corpus.good,
            *degenerate,
            "--plot",
            "g2",
            "--plot",
            "diffusion",
            "--plot",
            "saxs2d",
            "-o",
            out,
            "--quiet",
        ],
        tmp_path,
    )
    err = proc.stderr.decode()
    assert "Traceback" not in err
    assert proc.returncode in (0, 3), err
    names = {p.name for p in out.iterdir()}
    assert {"combined_g2.png", "combined_diffusion.png", "good_saxs2d.png"} <= names
    assert len([n for n in names if n.endswith("_saxs2d.png")]) == 1 + len(degenerate)
    # Alone, a file without a single valid g2 point cannot give a diffusion plot.
    nan = next(c.path for c in corpus.degenerate if c.name == "g2_all_nan")
    proc = issue11.cli(
        [
            "export",
            nan,
            "--plot",
            "diffusion",
            "--plot",
            "saxs2d",
            "-o",
            tmp_path / "one",
            "--quiet",
        ],
        tmp_path,
    )
    err = proc.stderr.decode()
    assert proc.returncode == 3 and "Traceback" not in err, err
    line = next(ln for ln in err.splitlines() if "cannot be drawn" in ln)
    assert str(nan) in line and "diffusion" in line
    assert (tmp_path / "one" / "g2_all_nan_saxs2d.png").is_file()


def test_one_failing_figure_does_not_stop_the_export(corpus, tmp_path, monkeypatch):
    import xpcsviewer.export as export_pkg
    from xpcsviewer.commands.export import export_figures

    real = export_pkg.make_figure
    bad = shutil.copyfile(corpus.good, tmp_path / "bad_results.hdf")

    def flaky(kind, results, **kw):
        if any(r.path.name == bad.name for r in results):
            raise ValueError("Axis limits cannot be NaN or Inf")
        return real(kind, results, **kw)

    monkeypatch.setattr(export_pkg, "make_figure", flaky)
    rep = export_figures([corpus.good, bad], ["g2", "saxs2d"], tmp_path / "o")
    assert rep.exit_code == 3
    assert {p.name for p in rep.written} == {"combined_g2.png", "good_saxs2d.png"}
    assert len(rep.undrawable) == 2
    assert all(str(bad) in n and "cannot be drawn" in n for n in rep.undrawable)
    assert {n.split(":")[0] for n in rep.undrawable} == {"g2", "saxs2d"}


# ----------------------------------------------------------------------- signals
def _spawn(args, cwd):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "JAX_PLATFORMS": "cpu"}
    return subprocess.Popen(
        [sys.executable, "-m", "xpcsviewer", *map(os.fspath, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
    )


def _collect(stream, buf: bytearray, seen: threading.Event, word: bytes):
    for chunk in iter(lambda: stream.read1(256), b""):
        buf.extend(chunk)
        if word in buf:
            seen.set()


def _interrupt_when(proc, word: bytes, sig=signal.SIGINT, delay: float = 0.0):
    err = bytearray()
    seen = threading.Event()
    t = threading.Thread(
        target=_collect, args=(proc.stderr, err, seen, word), daemon=True
    )
    t.start()
    if word:
        assert seen.wait(120), bytes(err)
    time.sleep(delay)
    proc.send_signal(sig)
    rc = proc.wait(120)
    t.join(10)
    return rc, bytes(err).decode("utf-8", "replace")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("when", "word", "delay"),
    [("start-up", b"", 0.5), ("fit", b" files", 0.0)],  # the batch bar: "0/8 files"
)
def test_ctrl_c_in_fit_exits_130_with_one_line(corpus, tmp_path, when, word, delay):
    files = [
        shutil.copyfile(corpus.good, tmp_path / f"r{i}_results.hdf") for i in range(8)
    ]
    out = tmp_path / "fits.json"
    proc = _spawn(["fit", *files, "-o", out], tmp_path)
    rc, err = _interrupt_when(proc, word, delay=delay)
    assert rc == 130, (when, err[-2000:])
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-2000:]
    assert err.rstrip().splitlines()[-1].endswith("interrupted"), err[-500:]
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.slow
def test_sigterm_exits_143(corpus, tmp_path):
    proc = _spawn(["fit", corpus.good, "-o", tmp_path / "f.json"], tmp_path)
    rc, err = _interrupt_when(proc, b"0/1 files", sig=signal.SIGTERM)
    assert rc == 143 and "Traceback" not in err, err[-2000:]


@pytest.mark.gui
def test_snapshot_stops_on_ctrl_c(qapp, corpus, tmp_path):
    """In-process: the interrupt arrives while Qt's event loop runs the window."""
    from PySide6.QtCore import QTimer

    from xpcsviewer.cli import main

    QTimer.singleShot(0, lambda: os.kill(os.getpid(), signal.SIGINT))
    out = tmp_path / "s.png"
    rc = main(["snapshot", str(corpus.good), "--tab", "g2", "-o", str(out), "--quiet"])
    assert rc == 130
    assert not out.exists() and list(tmp_path.iterdir()) == []
