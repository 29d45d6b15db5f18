"""Issue 32: the g2 tab and the exported g2 figure draw one fit curve and band per row,
from the one function of views/g2_fit.py."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from xpcsviewer.gui.context import AppContext
from xpcsviewer.gui.panels.g2 import G2Panel
from xpcsviewer.gui.workers import TaskRunner

_FAKE = Path(__file__).resolve().parents[2] / "export" / "fake_results.py"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("xpcs_test_fake_results_g2fit", _FAKE)
    fake = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fake)
    d = tmp_path_factory.mktemp("g2fitline")
    return [
        fake.make_result(d / "B001_results.hdf", seed=1, kind="multitau"),
        fake.make_result(d / "B002_results.hdf", seed=2, kind="multitau", beta=0.2),
    ]


def _band(self, rows, grid):  # a posterior band that follows the curve
    c = self.curve(rows, grid)
    return np.stack([c - 0.01, c, c + 0.02], axis=1)


def _key(y) -> tuple:
    return tuple(np.round(np.asarray(y, dtype=np.float64), 12))


def test_screen_and_figure_draw_the_same_fit_and_band(qtbot, results, monkeypatch):
    from matplotlib.collections import PolyCollection
    from matplotlib.lines import Line2D

    from xpcsviewer.export import make_figure
    from xpcsviewer.fitting.block_fits import fit_g2_blocks
    from xpcsviewer.fitting.fit_table import G2Fits
    from xpcsviewer.views.g2_fit import g2_fit_line

    ctx = AppContext(runner=TaskRunner())
    panel = G2Panel(ctx)
    qtbot.addWidget(panel)
    panel.resize(1200, 800)
    panel.show()
    try:
        with qtbot.waitSignal(panel.sigUpdated, timeout=10000):
            panel.set_results(results)
        panel.offset.setValue(0.05)  # a shift: both add it the same way
        panel.show_band.setChecked(True)
        fits = fit_g2_blocks(panel.blocks, panel.model())
        monkeypatch.setattr(G2Fits, "band", _band)
        with qtbot.waitSignal(panel.sigFitsReady, timeout=10000):
            panel._on_fits(fits)
        qtbot.waitUntil(lambda: panel._draw_gen is None, timeout=10000)

        screen_curves, screen_bands = set(), set()
        for v in panel._views[: len(panel.panel_specs)]:
            for slot in v.slots:
                if slot.key is None or slot.fit.yData is None or not slot.fit.yData.size:
                    continue
                fi, j, _ci, shift = slot.key
                b = next(b for b in panel.blocks if b.file_index == fi)
                want = g2_fit_line(panel.shown_fits, b, j, shift)
                np.testing.assert_array_equal(slot.fit.xData, want.grid)
                np.testing.assert_array_equal(slot.fit.yData, want.curve)
                np.testing.assert_array_equal(slot.band_lo.yData, want.band[0])
                np.testing.assert_array_equal(slot.band_hi.yData, want.band[1])
                screen_curves.add(_key(slot.fit.yData))
                screen_bands.add(_key(np.concatenate([slot.band_lo.yData,
                                                      slot.band_hi.yData])))
        assert len(screen_curves) == 12

        fig = make_figure("g2", panel.shown_results(), **panel.figure_options())
        paper_curves, paper_bands = set(), set()
        for ax in fig.axes:
            for ln in ax.get_children():
                if isinstance(ln, Line2D) and ln.get_linestyle() not in ("None", ""):
                    paper_curves.add(_key(ln.get_ydata()))
                elif isinstance(ln, PolyCollection):
                    verts = ln.get_paths()[0].vertices[:, 1]
                    n = (verts.size - 3) // 2  # lo forward, hi back, closing points
                    lo = verts[1 : n + 1]
                    hi = verts[n + 2 : 2 * n + 2][::-1]
                    paper_bands.add(_key(np.concatenate([lo, hi])))
        assert paper_curves == screen_curves
        assert paper_bands == screen_bands
    finally:
        panel.cancel_jobs()
        ctx.runner.wait_for_done(10000)


def test_both_draw_through_the_one_function():
    import xpcsviewer.export._fig_g2 as paper
    import xpcsviewer.gui.panels._g2_draw as screen
    from xpcsviewer.views import g2_fit

    assert paper.g2_fit_line is g2_fit.g2_fit_line
    assert screen.g2_fit_line is g2_fit.g2_fit_line
    for mod in (paper, screen):  # neither computes a fit curve of its own
        src = Path(mod.__file__).read_text()
        assert ".curve([" not in src and ".band([" not in src and "g2_tau_grid" not in src
