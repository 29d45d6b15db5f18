"""Issue 49 (9): masked pixels were barely visible at the default zoom (the screen's
scaling averaged a lone masked pixel of a large detector away)."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gui


def _red_pixels(widget) -> int:
    img = widget.grab().toImage()
    arr = np.array(img.convertToFormat(img.Format.Format_RGBA8888).constBits(), np.uint8)
    arr = arr.reshape(img.height(), img.bytesPerLine() // 4, 4)[:, : img.width()]
    r, g, b = (arr[..., k].astype(int) for k in range(3))
    return int(np.count_nonzero((r > 200) & (g < 80) & (b < 80)))


def test_pool_overlay_keeps_lone_pixels_and_user_over_file():
    from xpcsviewer.gui.panels._drawing import pool_overlay

    ov = np.zeros((9, 10), np.uint8)
    ov[0, 0] = 1
    ov[0, 1] = 2
    ov[8, 9] = 2  # a corner beyond whole blocks
    out = pool_overlay(ov, 4)
    assert out.shape == (3, 3)
    assert out[0, 0] == 2 and out[2, 2] == 2 and out.sum() == 4


def test_lone_masked_pixels_stay_visible_when_zoomed_out(qtbot):
    import pyqtgraph as pg

    from xpcsviewer.gui.panels._drawing import MaskOverlayItem

    n = 2000
    ov = np.zeros((n, n), np.uint8)
    spots = [(150, 200), (700, 1300), (1200, 450), (1600, 1700), (1900, 90)]
    for y, x in spots:
        ov[y, x] = 2  # masked by the user: red
    w = pg.PlotWidget()
    qtbot.addWidget(w)
    w.resize(420, 420)
    item = MaskOverlayItem()
    w.addItem(item)
    item.setImage(ov, levels=(0, 2))
    w.getPlotItem().getViewBox().setAspectLocked(True)
    w.show()
    w.getPlotItem().getViewBox().autoRange(padding=0)
    qtbot.waitExposed(w)
    qtbot.wait(100)
    assert item.shown_factor() >= 4  # ~5 image pixels per screen pixel
    assert _red_pixels(w) >= len(spots)  # every lone pixel drawn in full red
    # zoomed in to the pixels: the exact overlay
    w.getPlotItem().getViewBox().setRange(xRange=(190, 210), yRange=(140, 160), padding=0)
    qtbot.wait(100)
    assert item.shown_factor() == 1
    assert item.image.shape == (n, n)
    item.clear()
    assert item.image is None
