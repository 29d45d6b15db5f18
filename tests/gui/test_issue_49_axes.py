"""Issue 49 item 9 (rest): one number format per log axis. The Two-Time tab's g2 plot
(and its map's log lag axis) use the g2 tab's SparseLogAxis in the real window; the
exported ages figure labels a narrow tau axis in one format (no "5e-05" beside
"0.0001")."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytestqt")

C01 = "C01_ageing_gel_twotime"


@pytest.fixture(scope="module")
def c01(tmp_path_factory):
    from xpcsviewer.synthetic.demo import write_demo

    out = tmp_path_factory.mktemp("c01_axes")
    write_demo(out, seed=0, names=[C01])
    return next(out.glob("C01_*_results.hdf"))


def _formats(labels: list[str]) -> set[str]:
    """"sci" for a power of ten, "plain" for a decimal, per non-empty label."""
    return {("sci" if re.search(r"10[\u207b\u2070-\u2079\u00b9\u00b2\u00b3]|\^|e[-+]", s)
             else "plain") for s in labels if s.strip()}


@pytest.mark.gui
def test_twotime_g2_axis_has_one_format(qtbot, c01):
    from xpcsviewer.gui.main_window import MainWindow
    from xpcsviewer.gui.widgets import SparseLogAxis

    win = MainWindow(restore_session=False, save_session_on_close=False)
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    try:
        win.open_paths([str(c01)])
        assert win.context.runner.wait_until_idle(120000)
        win.select_tab("twotime")
        panel = win.panels["twotime"]
        qtbot.waitUntil(lambda: bool(panel.g2_plot.listDataItems()), timeout=300000)
        axis = panel.g2_plot.getAxis("bottom")
        assert isinstance(axis, SparseLogAxis)
        assert isinstance(panel.c2_plot.getAxis("left"), SparseLogAxis)
        qtbot.wait(200)
        lo, hi = axis.range
        size = axis.size().width()
        levels = axis.tickValues(lo, hi, size)
        labels = [s for sp, vals in levels for s in axis.tickStrings(vals, 1.0, sp)]
        assert len([s for s in labels if s.strip()]) >= 2, labels
        assert len(_formats(labels)) == 1, labels
        shots = Path("/tmp/s57/shots/ui49")
        if shots.is_dir():
            win.grab().save(str(shots / "twotime_g2_axis.png"))
    finally:
        win.context.runner.cancel_all()  # the ages survey need not finish
        win.shutdown(30000)


@pytest.mark.parametrize("lim", [(3e-5, 2.4e-4), (2e-3, 9e-3), (4e-7, 3e-6)])
def test_ages_figure_narrow_tau_axis_has_one_format(lim):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import LogLocator

    from xpcsviewer.export._ticks import label_values, one_format

    fig, ax = plt.subplots()
    ax.set_yscale("log")
    ax.plot([1, 2], lim)
    ax.set_ylim(*lim)
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    one_format(ax.yaxis)
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels()
              if lim[0] <= t.get_position()[1] <= lim[1]]
    plt.close(fig)
    assert len(labels) >= 2 and len(_formats(labels)) == 1, labels
    # the rule: plain decimals only while every label is in [1e-4, 1e4)
    assert label_values([5e-5, 1e-4, 2e-4]) == [r"$5\times10^{-5}$", "$10^{-4}$",
                                                r"$2\times10^{-4}$"]
    assert label_values([0.002, 0.005]) == ["0.002", "0.005"]
    assert np.all([s.startswith("$") for s in label_values([4e-7, 1e-6])])
