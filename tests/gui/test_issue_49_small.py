"""Issue 49 (9), the small points in a real window: the Live tab's fitted result is
fitted on the g2 tab too, and the Live tab never draws a no-photon delay at g2 = 0."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

pytestmark = pytest.mark.gui

_FAKE = Path(__file__).resolve().parents[1] / "export" / "fake_results.py"


def _fake():
    spec = importlib.util.spec_from_file_location("xpcs_test_fake_results_i49", _FAKE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_live_result_opens_fitted_on_the_g2_tab(window, qtbot, tmp_path, wait_idle):
    path = tmp_path / "live_results.hdf"
    _fake().make_result(path, seed=3, kind="multitau", beta=0.2)
    live = window.panels["live"]
    live.model_combo.setCurrentIndex(live.model_combo.findData("single"))
    sent = []
    window.context.sigFitWhenShown.connect(lambda p, m: sent.append((p, m)))
    # the end of a fitted run (what the worker hands back), without the drawing
    live._apply = lambda up: None
    live._on_final(SimpleNamespace(output=str(path), bins=[{"status": "converged"}]))
    assert sent == [([str(path)], "single")]
    g2 = window.panels["g2"]
    with qtbot.waitSignal(g2.sigFitsReady, timeout=60000):
        window.select_tab("g2")
    wait_idle(window, 60000)
    assert g2.fits is not None and g2.fits.model == "single"
    assert str(path) in {str(Path(k[0])) for k in g2.fits.curve_keys}
    assert g2.model_combo.currentData() == "single"


def test_live_unfitted_result_is_only_opened(window):
    live = window.panels["live"]
    live.fit_box.setChecked(False)
    sent = []
    window.context.sigFitWhenShown.connect(lambda p, m: sent.append((p, m)))
    live._apply = lambda up: None
    live._on_final(SimpleNamespace(output="/nonexistent/x_results.hdf", bins=[]))
    assert sent == []


def test_live_tab_leaves_no_photon_delays_out_and_says_so(window):
    from xpcsviewer.gui.panels._live_jobs import no_photon_note

    live = window.panels["live"]
    tau = np.geomspace(1e-3, 1.0, 8)
    g2 = np.column_stack([1 + 0.2 * np.exp(-tau / 0.1), 1 + 0.2 * np.exp(-tau / 0.1)])
    g2[5:, 0] = 0.0  # no photon pairs yet at the long delays of bin 1 (0 / 0)
    g2[:, 1] = 0.0  # and none at all in bin 2
    err = np.full_like(g2, 0.01)
    v = SimpleNamespace(tau=tau, g2=g2, g2_err=err, valid=np.ones_like(g2, bool),
                        q=np.array([0.001, 0.002]), fit_t=None, fit_curves={})
    while live._draw_curves(v):
        pass
    drawn = np.concatenate([it.yData for it in live.g2_items.values() if it.yData is not None])
    assert drawn.size == 5 and not np.any(drawn == 0)
    note = no_photon_note(v)
    assert note.startswith("11 points of 2 q-bins have no photons yet")
    up = SimpleNamespace(final=False, frames=100, expected=None, lag_s=0.0, frame_rate_hz=10.0,
                         writer_rate_hz=10.0, lag_frames=0, bins=[], fit_error=None, note="",
                         view=v, latency_s=None)
    assert "no photons yet" in live._status_text(up)


def test_real_window_rigaku_3m_opens_on_its_data_and_the_g2_start_is_marked(
        window, qtbot, demo_files, open_demo, wait_idle):
    """A user opens the Rigaku 3M demo file: SAXS-2D shows its q-bins, not the whole
    1676 x 2100 detector around a spot (View all gives it back); the colour bar spans the
    levels in the boxes; the g2 tab's contrast start is an italic estimate near 0.2."""
    from PySide6.QtCore import Qt

    open_demo(window, demo_files, names=["S02"])
    window.select_tab("saxs2d")
    wait_idle(window, 60000)
    p = window.panels["saxs2d"]
    qtbot.waitUntil(lambda: p.data is not None, timeout=60000)
    wait_idle(window, 60000)
    h, w = p.shown_result().qmap.shape
    (x0, x1), (y0, y1) = p.plot.getViewBox().viewRange()
    assert (x1 - x0) * (y1 - y0) < 0.05 * h * w
    bar = p.image_view.histogram.vb.viewRange()[1]
    assert bar == pytest.approx([p.vmin.value(), p.vmax.value()], abs=1e-3)
    qtbot.mouseClick(p.view_all_btn, Qt.MouseButton.LeftButton)
    (x0, x1), (y0, y1) = p.plot.getViewBox().viewRange()
    assert x1 - x0 >= w and y1 - y0 >= h
    window.select_tab("g2")
    g2 = window.panels["g2"]
    qtbot.waitUntil(lambda: g2.params.rowCount() > 0, timeout=60000)
    wait_idle(window, 60000)
    row = g2.params._names.index("contrast")
    cell = g2.params.item(row, 1)
    assert cell.font().italic() and 0.15 < float(cell.text()) < 0.35
