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


def test_data_box_frames_the_q_bins_with_a_margin():
    from types import SimpleNamespace

    from xpcsviewer.gui.image_view import data_box

    mask = np.ones((1000, 1200), bool)
    roi = np.zeros((1000, 1200), np.int32)
    roi[400:500, 600:650] = 3
    box = data_box(SimpleNamespace(mask=mask, dynamic_roi_map=roi))
    x0, x1, y0, y1 = box
    assert x0 < 600 and x1 > 650 and y0 < 400 and y1 > 500
    assert (x1 - x0) < 100 and (y1 - y0) < 150
    roi[:, :] = 1  # bins over the whole detector: framed whole
    assert data_box(SimpleNamespace(mask=mask, dynamic_roi_map=roi)) is None
    assert data_box(None) is None
