"""Issue 33 (5): the Live tab's tau(q) axis had no labels when tau spans less than a
decade inside one mantissa step (0.47-0.49 s): the one number the tab is for."""

import numpy as np
import pytest


def _labels(qtbot, lo, hi, height=250):
    import pyqtgraph as pg

    from xpcsviewer.gui.widgets import SparseLogAxis

    w = pg.PlotWidget(axisItems={"left": SparseLogAxis("left"), "bottom": SparseLogAxis("bottom")})
    qtbot.addWidget(w)
    w.resize(400, height)
    w.show()
    p = w.getPlotItem()
    p.setLogMode(x=True, y=True)
    p.plot([0.001, 0.01], [lo, hi], pen=None, symbol="o")
    qtbot.wait(50)
    ax = p.getAxis("left")
    a, b = sorted(ax.range)
    out = []
    for sp, vals in ax.tickValues(a, b, ax.size().height()):
        vis = [v for v in vals if a <= v <= b]
        out += [float(s) for s in ax.tickStrings(vis, ax.scale, sp or 1) if s]
    return out


@pytest.mark.parametrize("lo, hi", [(0.47, 0.49), (0.0011, 0.0013), (0.21, 0.29), (2.2, 2.8),
                                    (0.45, 0.52)])
def test_narrow_log_range_is_labelled(qtbot, lo, hi):
    got = _labels(qtbot, lo, hi)
    assert len(got) >= 2
    assert all(lo * 0.9 <= v <= hi * 1.1 for v in got)


def test_wide_log_range_keeps_mantissa_labels(qtbot):
    got = _labels(qtbot, 0.02, 0.9)
    assert got and all(np.isclose(v / 10 ** np.floor(np.log10(v)), np.round(
        v / 10 ** np.floor(np.log10(v)))) for v in got)
