"""Issue 49 item 6, in a real window: Bayesian covers every bin of the targets (not
the page shown), says "bins k-l of n" and the time left, pages show the posterior
without a new fit, and Cancel keeps the bins finished. In this thread and in the
fit process."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytestmark = [pytest.mark.gui, pytest.mark.slow]

_FAKE = Path(__file__).resolve().parents[1] / "export" / "fake_results.py"


@pytest.fixture(scope="module")
def two_files(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("xpcs_test_fake_results_i49b", _FAKE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    d = tmp_path_factory.mktemp("bayes_all")
    paths = [d / "B001_results.hdf", d / "B002_results.hdf"]
    mod.make_result(paths[0], seed=1, kind="multitau", beta=0.2)
    mod.make_result(paths[1], seed=2, kind="multitau", beta=0.25)
    return [str(p) for p in paths]


def _open(window, qtbot, paths, wait_idle):
    window.select_tab("g2")
    window.open_paths(paths)
    g2 = window.panels["g2"]
    qtbot.waitUntil(lambda: bool(g2.blocks), timeout=60000)
    wait_idle(window, 60000)
    g2.model_combo.setCurrentIndex(g2.model_combo.findData("single"))
    g2.max_bins.setValue(2)  # three pages of two bins per file
    g2._on_bins_per_page()
    wait_idle(window, 60000)
    g2.warmup.setValue(60)
    g2.samples.setValue(40)
    g2.chains.setValue(1)
    return g2


def _run_every_bin(window, qtbot, g2, wait_idle, shots=None):
    messages = []

    def on_progress(key, done, total, msg):
        messages.append(msg)
        if shots is not None and "left" in msg and not (shots / "g2_bayes_running.png").exists():
            window.grab().save(str(shots / "g2_bayes_running.png"))  # the bar's words

    window.context.runner.sigProgress.connect(on_progress)
    assert g2.page.maximum() == 3 and sum(b.n_bins for b in g2.blocks) == 4
    with qtbot.waitSignal(g2.sigFitsReady, timeout=600000):
        g2.bayes_btn.click()
    wait_idle(window, 60000)
    fits = g2.fits
    # every bin of both files, not the four curves of the page shown
    assert fits.method == "bayes" and fits.n_curves == 12
    assert set(fits.file_index.tolist()) == {0, 1}
    assert np.sum(np.isfinite(fits.diagnostics["ess"])) >= 10
    said = " | ".join(messages)
    assert "bins 1-" in said and " of " in said and "left" in said, said
    first = fits.params["tau"].copy()
    for page in (2, 3):  # the other pages show the posterior: no new fit
        g2.page.setValue(page)
        wait_idle(window, 60000)
        qtbot.waitUntil(lambda: g2.shown_fits is not None, timeout=30000)
        assert g2.shown_fits.method == "bayes" and g2.shown_fits.n_curves == 4
        assert g2.fits is fits
        assert "bayes single, 4 curves" in g2.fit_status.text()
        if shots is not None:
            g2.window().grab().save(str(shots / f"g2_bayes_page{page}.png"))
    np.testing.assert_array_equal(g2.fits.params["tau"], first)
    return fits


def test_bayesian_fits_every_bin_and_pages_show_it(window, qtbot, two_files, wait_idle):
    shots = Path("/tmp/s57/shots/ui49")
    shots = shots if shots.parent.is_dir() else None
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
    g2 = _open(window, qtbot, two_files, wait_idle)
    _run_every_bin(window, qtbot, g2, wait_idle, shots)


def test_cancel_keeps_the_bins_finished(window, qtbot, two_files, wait_idle, monkeypatch):
    import threading

    from xpcsviewer.fitting import bayes_units
    from xpcsviewer.fitting.bayes_units import CANCELLED_DETAIL

    g2 = _open(window, qtbot, two_files, wait_idle)
    first_done, clicked, stopped = threading.Event(), threading.Event(), []
    real_place = bayes_units.place

    def place(out, rows, part):  # the worker holds on after the first unit's bins
        real_place(out, rows, part)
        if not first_done.is_set():
            first_done.set()
            clicked.wait(60)

    monkeypatch.setattr(bayes_units, "place", place)
    g2.bayes_btn.click()
    qtbot.waitUntil(first_done.is_set, timeout=600000)
    with qtbot.waitSignal(g2.sigFitsReady, timeout=600000):
        g2.cancel_btn.click()  # the user's Cancel while the first file's bins are done
        stopped.append(g2.fit_status.text())
        clicked.set()
    wait_idle(window, 60000)
    fits = g2.fits
    assert stopped and fits is not None and fits.n_curves == 12
    kept = fits.detail == CANCELLED_DETAIL
    sampled = np.isfinite(fits.diagnostics["ess"])
    assert 0 < kept.sum() < 12 and sampled.sum() >= 1 and not np.any(kept & sampled)
    assert "stopped:" in g2.fit_status.text() and "least-squares fit" in g2.fit_status.text()
    assert g2.bayes_btn.isEnabled() and not g2.cancel_btn.isEnabled()


@pytest.fixture
def proc_window(qtbot, monkeypatch):
    from xpcsviewer.gui.main_window import MainWindow
    from xpcsviewer.jobs import fit_process as fp

    monkeypatch.setenv("XPCS_FIT_PROCESS", "1")
    fp.shutdown_fit_process()
    win = MainWindow(restore_session=False, save_session_on_close=False)
    qtbot.addWidget(win)
    win.resize(1200, 800)
    win.show()
    yield win
    win.shutdown(10000)
    fp.shutdown_fit_process()


def test_every_bin_in_the_fit_process(proc_window, qtbot, two_files, wait_idle):
    from xpcsviewer.jobs import fit_process as fp

    g2 = _open(proc_window, qtbot, two_files, wait_idle)
    _run_every_bin(proc_window, qtbot, g2, wait_idle)
    assert fp.fit_process().pid is not None  # the fits ran there
