"""The reusable pyqtgraph items of the g2 tab's grid: one plot per panel, one *slot* of
items per curve (points, error bars, points left out of fits, fit line, band), the
legends and a canvas per layout kind (see :mod:`xpcsviewer.gui.panels._g2_draw`)."""

from __future__ import annotations

import functools
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from xpcsviewer.gui.widgets import SparseLogAxis

__all__ = ["LABEL_PX", "MAX_LEGEND", "_Canvas", "_CurveSlot", "_PanelView"]

#: Legend entries per panel (more are unreadable; the rest are counted).
MAX_LEGEND = 24
#: Longest legend label (px, 8 pt), above the grid / beside a panel; longer ones are
#: cut in the middle (file series differ near the end) with the full text as tooltip.
LABEL_PX = {"top": 220, "side": 140}
_EMPTY = np.zeros(0)


class _CurveSlot:
    """The items of one curve in one panel, created when first needed, then updated."""

    def __init__(self, plot: pg.PlotItem) -> None:
        self.plot = plot
        self.points = pg.PlotDataItem(pen=None, symbol="o")
        self.fit = pg.PlotDataItem()
        plot.addItem(self.points)
        plot.addItem(self.fit)
        self.errors: pg.ErrorBarItem | None = None
        self.left_out: pg.PlotDataItem | None = None
        self.band_lo = self.band_hi = self.band = None
        self.key: tuple | None = None

    def error_item(self) -> pg.ErrorBarItem:
        if self.errors is None:
            self.errors = pg.ErrorBarItem(x=_EMPTY, y=_EMPTY, height=_EMPTY, beam=0)
            self.plot.addItem(self.errors)
        return self.errors

    def left_out_item(self) -> pg.PlotDataItem:
        if self.left_out is None:
            self.left_out = pg.PlotDataItem(pen=None, symbol="x")
            self.left_out.excluded_points = True  # tells tests and exports apart from data
            self.plot.addItem(self.left_out)
        return self.left_out

    def band_items(self) -> tuple:
        if self.band is None:
            self.band_lo, self.band_hi = pg.PlotDataItem(), pg.PlotDataItem()
            self.band = pg.FillBetweenItem(self.band_lo, self.band_hi)
            for it in (self.band, self.band_lo, self.band_hi):
                self.plot.addItem(it)
        return self.band_lo, self.band_hi, self.band

    def hide(self) -> None:
        if self.key is None:
            return
        self.points.setData(_EMPTY, _EMPTY)
        if self.errors is not None:
            self.errors.setData(x=_EMPTY, y=_EMPTY, height=_EMPTY)
        if self.left_out is not None:
            self.left_out.setData(_EMPTY, _EMPTY)
        self.hide_fit()
        self.key = None

    def hide_fit(self) -> None:
        self.fit.setData(_EMPTY, _EMPTY)
        self.hide_band()

    def hide_band(self) -> None:
        # the fill keeps the path of its curves' last data when they are emptied
        # (pyqtgraph hides an empty curve without clearing its path): hide it too
        if self.band is not None:
            self.band_lo.setData(_EMPTY, _EMPTY)
            self.band_hi.setData(_EMPTY, _EMPTY)
            self.band.setVisible(False)


class _PanelView:
    """One plot of the grid with its curve slots and (optionally) its own legend."""

    def __init__(self) -> None:
        # one tick format on the tau axis (pyqtgraph wrote "10\u207b\u2075 0.0001")
        self.plot = pg.PlotItem(axisItems={"bottom": SparseLogAxis("bottom")})
        p = self.plot
        p.setLabel("bottom", "\u03c4 (s)")
        p.getAxis("bottom").enableAutoSIPrefix(False)
        p.setLabel("left", "g\u2082")
        # a fixed tick-label width: one measured at paint time re-lays the grid out and
        # paints it a second time
        p.getAxis("left").setWidth(46)
        p.showGrid(x=True, y=True, alpha=0.2)
        self.slots: list[_CurveSlot] = []
        self.legend: pg.LegendItem | None = None
        self.members: list = []
        self.note: pg.TextItem | None = None

    def set_note(self, text: str | None) -> None:
        """A line of text at the top left of the plot (why it is empty); None hides it."""
        if text is None:
            if self.note is not None:
                self.note.hide()
            return
        if self.note is None:
            # a child of the view box: placed in pixels, whatever the axes' ranges
            self.note = pg.TextItem(color=(90, 90, 90), anchor=(0, 0))
            self.note.setParentItem(self.plot.getViewBox())
            self.note.setPos(4, 4)
        self.note.setText(text)
        self.note.show()

    def slot(self, m: int) -> _CurveSlot:
        while len(self.slots) <= m:
            self.slots.append(_CurveSlot(self.plot))
        return self.slots[m]


@functools.cache
def _label_metrics():
    from PySide6.QtGui import QFont, QFontMetricsF

    font = QFont()
    font.setPointSizeF(8.0)  # the legends' labelTextSize
    return QFontMetricsF(font)


@functools.cache
def _title_metrics():
    from PySide6.QtGui import QFont, QFontMetricsF

    font = QFont()
    font.setPointSizeF(11.0)  # pyqtgraph's title size
    return QFontMetricsF(font)


def _title_pt(titles: list[str], col_px: float) -> float:
    """Title size (pt) of a grid: 11, or less (down to 7) so that the longest title
    fits its column (a title is a panel's minimum width: "q=0.0020059 \u00c5\u207b\u00b9,
    \u03c6=-157\u00b0" made three columns too wide for a 1400-px window)."""
    widest = max((_title_metrics().horizontalAdvance(t) for t in titles), default=0.0)
    room = col_px - 70  # the left axis and the margins
    return 11.0 if widest <= room else max(7.0, 11.0 * room / widest)


def _add_entry(legend: pg.LegendItem, item, text: str, max_px: float) -> float:
    """Add a legend entry cut to ``max_px`` (tooltip: the full text); its width (px)."""
    fm = _label_metrics()
    shown = fm.elidedText(text, Qt.TextElideMode.ElideMiddle, max_px)
    legend.addItem(item, shown)
    if shown != text:
        legend.items[-1][1].setToolTip(text)
    return fm.horizontalAdvance(shown)


def _legend_columns(label_px: float, n: int, width: float) -> int:
    """Columns of the legend above the grid that fit ``width`` px: an entry is its
    label (+8 margin), a 20-px sample and 10 px of gaps; the legend and the grid have
    margins of their own."""
    return max(1, min(n, 8, int((width - 40) // (label_px + 40))))


def _place_entries(legend: pg.LegendItem, cols: int) -> None:
    """Lay the entries out in ``cols`` columns, row by row. (pyqtgraph's setColumnCount
    places them from the grid's old column count, which a removal does not shrink:
    after a change the entries landed in scattered cells.)"""
    lay = legend.layout
    for i in range(lay.count() - 1, -1, -1):
        lay.removeAt(i)
    for k, (sample, label) in enumerate(legend.items):
        r, c = divmod(k, cols)
        lay.addItem(sample, r, 2 * c, alignment=Qt.AlignmentFlag.AlignVCenter)
        lay.addItem(label, r, 2 * c + 1)
    legend.columnCount = cols
    legend.rowCount = math.ceil(len(legend.items) / cols)
    legend.updateSize()
    legend.updateGeometry()


def _legend(columns: int = 1) -> pg.LegendItem:
    fg = pg.getConfigOption("foreground")
    bg = pg.getConfigOption("background")
    legend = pg.LegendItem(labelTextSize="8pt", labelTextColor=fg, verSpacing=-6,
                           brush=pg.mkBrush(bg), pen=None)
    legend.setColumnCount(columns)
    return legend


class _GridWidget(pg.GraphicsLayoutWidget):
    """The plot area; a new width re-fits the columns of the legend above the grid."""

    def __init__(self, canvas: _Canvas) -> None:
        super().__init__()
        self._canvas = canvas

    def resizeEvent(self, ev) -> None:  # Qt override
        super().resizeEvent(ev)
        canvas = getattr(self, "_canvas", None)  # None while the base class is built
        if canvas is not None:
            canvas.fit_top_legend()


class _Canvas:
    """The plots of one layout kind: its own scene, so switching kinds never removes
    (expensive) item trees from a scene."""

    def __init__(self) -> None:
        from PySide6.QtWidgets import QScrollArea

        self.glw = _GridWidget(self)
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setWidget(self.glw)
        self.views: list[_PanelView] = []
        self.n = 0
        self.nc = 0
        self.top_legend: pg.LegendItem | None = None
        self.top_label_px = 0.0  # its widest label

    def fit_top_legend(self) -> None:
        """As many legend columns as the width holds (a legend wider than the grid
        was cut at the right edge)."""
        leg = self.top_legend
        if leg is None or not leg.items:
            return
        cols = _legend_columns(self.top_label_px, len(leg.items), self.glw.width())
        if cols != leg.columnCount:
            _place_entries(leg, cols)
            # the layout does not shrink back by itself from a wider legend
            self.glw.ci.setGeometry(self.glw.range)
