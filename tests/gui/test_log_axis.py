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


def _strings(qtbot, widget, plot, side, x, y, log_x, log_y):
    qtbot.addWidget(widget)
    widget.resize(500, 300)
    widget.show()
    plot.setLogMode(x=log_x, y=log_y)
    plot.plot(x, y, pen=None, symbol="o")
    qtbot.wait(50)
    ax = plot.getAxis(side)
    a, b = sorted(ax.range)
    length = ax.size().height() if side == "left" else ax.size().width()
    out = []
    for sp, vals in ax.tickValues(a, b, length):
        vis = [v for v in vals if a <= v <= b]
        out += [s for s in ax.tickStrings(vis, ax.scale, sp or 1) if s]
    return out


def _one_format(strings):
    powers = ["10" in s and ("\u207b" in s or "\u00b7" in s) for s in strings]
    return len(strings) >= 2 and (all(powers) or not any(powers))


def test_every_log_axis_of_the_gui_keeps_one_format(qtbot):
    """Issue 49 (9): "1e-08 1e-07 1e-06 1e-05 0.0001" (the first four as powers of ten)
    on one g2 tau axis: pyqtgraph's own log axis writes 0.0001 plain, 1e-05 as a power."""
    import pyqtgraph as pg

    from xpcsviewer.gui.context import AppContext
    from xpcsviewer.gui.panels._g2_canvas import _PanelView
    from xpcsviewer.gui.panels._raw_views import PkPlot, TracePlots
    from xpcsviewer.gui.panels.g2map import G2MapPanel
    from xpcsviewer.gui.panels.intensity import IntensityPanel
    from xpcsviewer.gui.widgets import SparseLogAxis
    from xpcsviewer.gui.workers import TaskRunner

    tau = np.geomspace(2e-9, 3e-4, 30)
    view = _PanelView()
    w = pg.GraphicsLayoutWidget()
    w.addItem(view.plot)
    got = _strings(qtbot, w, view.plot, "bottom", tau, 1 + 0.2 * np.exp(-tau / 1e-6),
                   True, False)
    assert _one_format(got), got
    # the other plots that draw a log axis
    ctx = AppContext(runner=TaskRunner())
    inten, g2map = IntensityPanel(ctx), G2MapPanel(ctx)
    pk, trace = PkPlot(), TracePlots()
    for wid in (inten, g2map, pk, trace):
        qtbot.addWidget(wid)
    for ax in (inten.p_fft.getAxis("left"), g2map.img_plot.getAxis("bottom"),
               g2map.prof.getAxis("bottom"), pk.plot.getAxis("left"),
               trace.spec_plot.getAxis("left")):
        assert isinstance(ax, SparseLogAxis), ax
    got = _strings(qtbot, pk, pk.plot, "left", np.arange(6.0), np.geomspace(1e-7, 3e-4, 6),
                   False, True)
    assert _one_format(got), got
