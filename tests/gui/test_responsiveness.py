"""The GUI thread keeps ticking while a long fit and a large two-time read run in workers."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QTimer

from xpcsviewer.gui.context import AppContext
from xpcsviewer.gui.panels.g2 import G2Panel
from xpcsviewer.gui.panels.twotime import TwotimePanel

_FAKE = Path(__file__).resolve().parents[1] / "export" / "fake_results.py"
N_BIG = 4000  # frames of the large two-time map (64 MB as float32 on disk)


@pytest.fixture(scope="module")
def fake():
    spec = importlib.util.spec_from_file_location("xpcs_test_fake_results_resp", _FAKE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def big_files(tmp_path_factory, fake):
    """A "both" file with one N_BIG x N_BIG map and 240 g2 curves, via the real writer."""
    from xpcsviewer.io import read_result

    d = tmp_path_factory.mktemp("responsive")
    return read_result(
        fake.make_big_result(d / "big_results.hdf", reps=40, n_big=N_BIG)
    )


@pytest.mark.slow
def test_timer_keeps_ticking_during_fit_and_twotime_read(qtbot, big_files):
    ctx = AppContext()
    g2 = G2Panel(ctx)
    tt = TwotimePanel(ctx)
    for w in (g2, tt):
        qtbot.addWidget(w)
        w.resize(1000, 700)
    g2.max_bins.setValue(512)
    g2.max_panels.setValue(9)  # 240 curves fitted, the first 9 panels drawn
    g2.show()
    tt.max_size.setValue(1024)
    tt.show()
    with qtbot.waitSignal(g2.sigUpdated, timeout=30000):
        g2.set_results([big_files])
    n_curves = sum(b.n_bins for b in g2.blocks)
    assert n_curves >= 200

    from PySide6.QtWidgets import QApplication

    QApplication.processEvents()  # first paints: only the jobs' effects are measured
    ticks: list[float] = []
    timer = QTimer()
    timer.setInterval(50)
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start()
    t_start = time.monotonic()
    with qtbot.waitSignals([g2.sigFitsReady, tt.sigMapShown], timeout=180000):
        g2.run_fit()
        tt.set_results([big_files])
    t_end = time.monotonic()
    n_done = len(ticks)
    qtbot.waitUntil(lambda: len(ticks) >= n_done + 3, timeout=5000)  # paints after the results
    timer.stop()
    assert g2.fits.n_curves == n_curves
    assert tt.view.stride == 4 and tt.c2_img.image.shape == (1000, 1000)
    stamps = np.array([t_start] + [x for x in ticks if x <= t_end + 0.2])
    gaps = np.diff(stamps)
    print(
        f"\nwork took {t_end - t_start:.2f} s; {len(stamps) - 1} ticks; "
        f"largest gap {gaps.max():.3f} s"
    )
    assert len(stamps) > 3
    assert gaps.max() < 1.0
    ctx.runner.wait_for_done(10000)
