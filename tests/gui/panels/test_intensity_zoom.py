"""The Intensity zoom draws the region's own points (enveloped when too many)."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gui


def test_zoom_view_is_the_region():
    from xpcsviewer.gui.panels.intensity import zoom_view

    rng = np.random.default_rng(3)
    x = np.arange(100_000) * 1e-3
    y = rng.poisson(5.0, x.size).astype(float)
    y[52_345] = 99.0  # a spike inside the region must survive decimation
    a, b = 50.0, 55.0
    xs, ys = zoom_view(x, y, a, b, n_bins=1000)
    inside = (x >= a) & (x <= b)
    assert inside.sum() > 2000 and xs.size <= 2 * 1000 + 2
    assert xs[0] <= a and xs[-1] >= b and xs[0] >= a - 2e-3 and xs[-1] <= b + 2e-3
    assert ys.max() == 99.0 and ys.min() == y[inside].min()
    # a short region: the data itself, one point beyond each edge
    xs, ys = zoom_view(x, y, 10.0, 10.1)
    sel = slice(9_999, 10_102)
    np.testing.assert_array_equal(xs, x[sel])
    np.testing.assert_array_equal(ys, y[sel])


def test_panel_zoom_follows_region(qtbot, sync_context, demo_results):
    from xpcsviewer.gui.panels.intensity import IntensityPanel

    panel = IntensityPanel(sync_context)
    qtbot.addWidget(panel)
    panel.resize(1000, 700)
    panel.show()
    panel.set_results([demo_results["A01"], demo_results["D01"]])
    c = panel.data["traces"][0]
    a, b = float(c.x[10]), float(c.x[40])
    panel.region.setRegion((a, b))
    xs, ys = panel._zoom_items[0].getData()
    np.testing.assert_array_equal(xs, c.x[9:42])
    np.testing.assert_array_equal(ys, c.y[9:42])


def test_async_draw_is_one_paint_of_the_whole_picture(window, demo_files, open_demo, wait_idle,
                                                      qapp):
    """Drawn in slices with the view's updates off, then painted once: no paint of a
    half-drawn picture, and the view never left frozen (also when a newer update
    takes over in the middle of a draw)."""
    from PySide6.QtCore import QEvent, QObject

    from xpcsviewer.gui.panels.intensity import SCREEN_BINS

    open_demo(window, demo_files, names=["A01", "A02", "D01"])
    panel = window.panels["intensity"]
    paints = []

    class Count(QObject):
        def eventFilter(self, obj, ev):  # Qt override
            if ev.type() == QEvent.Type.Paint:
                full = [it.xData is not None and it.xData.size > 0
                        for it in (panel._full_items + panel._zoom_items) if it.isVisible()]
                paints.append((panel.data is not None, all(full) and bool(full)))
            return False

    counter = Count()
    panel.glw.viewport().installEventFilter(counter)
    window.select_tab("intensity")
    wait_idle(window, 60000)
    for _ in range(20):
        qapp.processEvents()
    assert panel.glw.updatesEnabled()
    with_data = [p for p in paints if p[0]]
    # every paint after the data came shows the whole picture (traces and zoom)
    assert with_data and all(complete for _, complete in with_data)
    n = len(panel.data["traces"])
    assert n == 3
    for item, c in zip(panel._full_items, panel.data["traces"], strict=False):
        xs, _ys = item.getData()
        assert 0 < xs.size <= max(c.x.size, 2 * SCREEN_BINS)
    # two updates in a row: the second wins, the view is live again
    paints.clear()
    panel.window.setValue(3)
    panel.refresh()
    panel.window.setValue(7)
    panel.refresh()
    wait_idle(window, 60000)
    for _ in range(20):
        qapp.processEvents()
    assert panel.glw.updatesEnabled() and panel._draw_gen is None
    assert panel.get_settings()["window"] == 7
    np.testing.assert_allclose(panel.data["traces"][0].y[:50],
                               _moving(panel.results[0].intensity_vs_time[1], 7)[:50])


def _moving(y, w):
    from xpcsviewer.views.intensity import moving_average

    return moving_average(np.asarray(y, dtype=float), w)
