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
