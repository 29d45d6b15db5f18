"""Drawing of the g2 tab: a grid of pyqtgraph panels whose items are reused.

A mixin of :class:`~xpcsviewer.gui.panels.g2.G2Panel` (it uses the panel's widgets,
``blocks`` and ``fits``); GUI thread only. Creating and removing pyqtgraph items is
what made redraws stall (a layout change cleared and rebuilt every panel: ~1 s;
clearing 24 panels alone took 1 s): plot items and, inside each, one *slot* of items
per curve (points, error bars, points left out of fits, fit line, band) are kept and
updated with ``setData``; unused slots are hidden. A new fit only updates the fit
items. Work left after a 40 ms slice continues on the next event-loop turn.

Panels follow :func:`xpcsviewer.export.g2_panels` (grouped by q value, never
by bin number). Legends sit outside the data: one for the files above the grid in
the per-q layout, one to the right of each panel otherwise.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor

from xpcsviewer.gui.panels._g2_canvas import (
    _EMPTY,
    LABEL_PX,
    MAX_LEGEND,
    _add_entry,
    _Canvas,
    _CurveSlot,
    _label_metrics,
    _legend,
    _legend_columns,
    _PanelView,
    _place_entries,
    _title_pt,
)
from xpcsviewer.gui.widgets import curve_color, curve_pen, prepare_axes
from xpcsviewer.gui.workers import wait_for_event_job
from xpcsviewer.views.g2 import G2Panel, g2_panels, g2_points, robust_ylim
from xpcsviewer.views.g2_fit import g2_fit_line

__all__ = ["G2DrawMixin"]

_SYMBOLS = ["o", "s", "t", "d", "+", "x", "star", "p", "h", "t1", "t2", "t3"]
#: Qt's pen style and width of a fit's look (views.g2_fit.FIT_LOOK).
_PEN_LINE = {"solid": Qt.PenStyle.SolidLine, "dotted": Qt.PenStyle.DotLine,
             "dashed": Qt.PenStyle.DashLine, "dashdot": Qt.PenStyle.DashDotLine}
_PEN_WIDTH = (1.5, 1.2, 1.0)
_SLICE_S = 0.025  # with one paint (~40-70 ms for a full grid) under 100 ms
#: Narrowest column of the grid (px): the default 3 columns fit beside the data dock
#: and the fit panel of a 1400-px window; panels with their legend beside need more.
MIN_COLUMN_PX = {"qbin": 180, "file": 240, "combined": 240}
_TURN = object()  # yielded by a drawing step: end this slice now


class G2DrawMixin:
    """Panel grid drawing for the g2 tab (see the module docstring)."""

    def _init_drawing(self) -> None:
        from PySide6.QtWidgets import QStackedWidget

        self.stack = QStackedWidget()
        self._canvases: dict[str, _Canvas] = {}
        self._plots: list[pg.PlotItem] = []
        self._draw_gen = None
        self._draw_done: threading.Event | None = None
        self.panel_specs: list[G2Panel] = []

    def _canvas(self, layout: str) -> _Canvas:
        c = self._canvases.get(layout)
        if c is None:
            c = _Canvas()
            self._canvases[layout] = c
            self.stack.addWidget(c.scroll)
        if self.stack.currentWidget() is not c.scroll:
            self.stack.setCurrentWidget(c.scroll)
        return c

    @property
    def glw(self) -> pg.GraphicsLayoutWidget:
        """The plot area of the current layout."""
        return self._canvas(self.layout_combo.currentData()).glw

    @property
    def _views(self) -> list[_PanelView]:
        return self._canvas(self.layout_combo.currentData()).views

    @property
    def _top_legend(self) -> pg.LegendItem | None:
        return self._canvas(self.layout_combo.currentData()).top_legend

    # ------------------------------------------------------------------ grid
    def _layout_grid(self, n: int, nc: int, layout: str) -> None:
        """Put ``n`` pooled plots in an ``nc``-column grid, at once."""
        for _ in self._layout_grid_steps(n, nc, layout):
            pass

    def _layout_grid_steps(self, n: int, nc: int, layout: str):
        """Put ``n`` pooled plots in an ``nc``-column grid; only the plots that change
        place are added or removed (creating and removing plots is what costs).
        A generator: yields after each plot made or placed."""
        c = self._canvas(layout)
        if (n, nc) == (c.n, c.nc):
            return
        ci = c.glw.ci
        top = 1 if layout == "qbin" else 0
        if layout == "qbin" and c.top_legend is None:
            c.top_legend = _legend(columns=6)
        keep = c.n if nc == c.nc else 0
        keep = min(keep, n)
        for k in range(keep, c.n):
            ci.removeItem(c.views[k].plot)
        if c.top_legend is not None and nc != c.nc:
            if c.top_legend in ci.items:
                ci.removeItem(c.top_legend)
            ci.addItem(c.top_legend, row=0, col=0, colspan=max(1, nc))
        c.n, c.nc = keep, nc  # c.n grows as plots are placed (a draw may stop midway)
        for k in range(keep, n):
            if k >= len(c.views):
                c.views.append(_PanelView())
                yield
            v = c.views[k]
            if layout != "qbin" and v.legend is None:
                v.legend = _legend()
                v.plot.layout.addItem(v.legend, 2, 3)  # right of the data, outside it
            ci.addItem(v.plot, row=top + k // nc, col=k % nc)
            c.n = k + 1
            yield
        c.n = n
        rows = math.ceil(n / nc) if n else 0
        c.glw.setMinimumHeight(max(300, 230 * rows + (40 if top else 0)))
        # columns share the width they get, down to a readable minimum (then the
        # scroll area scrolls sideways)
        c.glw.setMinimumWidth(nc * MIN_COLUMN_PX.get(layout, 240))

    # ------------------------------------------------------------------ draw
    def _draw(self) -> None:
        """Redraw the panels (reusing items), a slice per event-loop turn."""
        self._draw_gen = None
        if not self.blocks:
            self._layout_grid(0, 1, self.layout_combo.currentData())
            self._plots = []
            self.panel_specs = []
            self.status.setText("no g2 curves in the selected q/t range")
            self._finish_draw()
            return
        layout = self.layout_combo.currentData()
        labels = self.file_labels()
        specs, note = g2_panels(self.blocks, layout, labels)
        n_all = len(specs)
        specs = specs[: self.max_panels.value()]
        self.panel_specs = specs
        nc = max(1, min(self.ncols.value(), len(specs)))
        self.status.setText(self._status_text(len(specs), n_all, note))
        self._draw_gen = self._grid_then_curves(specs, nc, layout, labels)
        # One repaint at the end instead of one per slice (each repaints every panel).
        self.glw.setUpdatesEnabled(False)
        if self._start_slices():
            return
        # A placeholder job keeps the runner busy while drawing, so "wait until idle"
        # (snapshot, tests) waits for the finished picture.
        if self._draw_done is not None:
            self._draw_done.set()
        self._draw_done = threading.Event()
        self.submit("draw", wait_for_event_job, self._draw_done, description="g2: drawing")
        QTimer.singleShot(5, self._draw_step)

    def _grid_then_curves(self, specs, nc: int, layout: str, labels: dict[int, str]):
        # new plots are made a few per slice too: a first visit of a layout kind
        # creates up to max-panels plot items (~10-20 ms each)
        yield from self._layout_grid_steps(len(specs), nc, layout)
        self._plots = [v.plot for v in self._views[: len(specs)]]
        yield from self._fill_top_legend(layout, labels)
        yield
        yield from self._draw_steps(specs, layout)
        # Legends beside the panels can make the grid wider than its columns' minimum:
        # then it scrolls sideways (the last column was cut off without a scroll bar).
        need = self.glw.ci.layout.effectiveSizeHint(Qt.SizeHint.MinimumSize).width()
        self.glw.setMinimumWidth(max(nc * MIN_COLUMN_PX.get(layout, 240), math.ceil(need)))
        # What the first paint would do, now: measured tick labels can resize axes, and
        # new view transforms re-bound every item; in the paint both schedule a second
        # full paint right after it.
        for k, plot in enumerate(self._plots):
            prepare_axes(plot)  # ~1-2 ms per plot
            if k % 6 == 5:
                yield
        yield
        self.glw.scene().prepareForPaint()
        # bounds too (pyqtgraph drops them at each view change): ~0.1 ms per item
        for v in self._views[: len(specs)]:
            for k, slot in enumerate(v.slots):
                if slot.key is not None:
                    slot.points.scatter.boundingRect()
                    if slot.left_out is not None:
                        slot.left_out.scatter.boundingRect()
                if k % 16 == 15:
                    yield
        yield _TURN  # the full repaint that follows the end of a draw: a turn of its own

    def _start_slices(self) -> bool:
        """With a synchronous runner draw all now and return True; otherwise the
        slices start on the next event-loop turn (so the paint of a newly shown
        plot area and the first slice are two turns, not one stall)."""
        if getattr(self.context.runner, "synchronous", False):
            gen = self._draw_gen
            for _ in gen:
                pass
            if gen is self._draw_gen:
                self._draw_gen = None
                self._finish_draw()
            return True
        return False

    def _status_text(self, n_shown: int, n_all: int, note: str) -> str:
        n_curves = sum(b.n_bins for b in self.blocks)
        text = f"{len(self.blocks)} file(s), {n_curves} curve(s), {n_shown} panel(s)"
        if n_all > n_shown:
            text += f"; showing the first {n_shown} of {n_all} panels (raise max panels)"
        text += self.bins_note() + self.shown_note()
        if note:
            text += f"; {note}"
        return text

    def _fill_top_legend(self, layout: str, labels: dict[int, str]):
        """Generator: a legend entry costs ~5 ms (its label is measured), so a few per slice."""
        leg = self._top_legend
        if leg is None:
            return
        leg.clear()
        if layout != "qbin" or not self.legend_check.isChecked():
            leg.setVisible(False)
            return
        yield
        leg.setVisible(True)
        c = self._canvas(layout)
        fm = _label_metrics()
        texts = [labels.get(b.file_index, b.label) for b in self.blocks]
        # columns chosen before the entries go in: a legend wider than the grid is cut
        c.top_label_px = max((min(fm.horizontalAdvance(t), LABEL_PX["top"]) for t in texts),
                             default=0.0)
        leg.setColumnCount(_legend_columns(c.top_label_px, len(texts), c.glw.width()))
        for b, text in zip(self.blocks, texts, strict=True):
            sample = pg.PlotDataItem(pen=None, symbol=_SYMBOLS[b.file_index % 12],
                                     symbolPen=pg.mkPen(curve_color(b.file_index), width=1.2),
                                     symbolBrush=None)
            _add_entry(leg, sample, text, LABEL_PX["top"])
            yield
        _place_entries(leg, leg.columnCount)

    def _run_slice(self) -> bool:
        """Draw for one slice; True when the drawing is complete."""
        gen = self._draw_gen
        if gen is None:
            return True
        t_end = time.monotonic() + _SLICE_S
        for step in gen:
            if step is _TURN or time.monotonic() > t_end:
                return False
        if gen is self._draw_gen:
            self._draw_gen = None
            self._finish_draw()
        return True

    def _draw_step(self) -> None:
        if not self._run_slice():
            # A real (non-zero) timer: a chain of zero-timeouts would starve the
            # other timers of the GUI thread.
            QTimer.singleShot(5, self._draw_step)

    def _draw_steps(self, specs, layout):
        log_x = self.logx.isChecked()
        msize = self.marker.value()
        off = self.offset.value()
        show_legend = self.legend_check.isChecked()
        c = self._canvas(layout)
        pt = _title_pt([sp.title for sp in specs], c.scroll.viewport().width() / max(1, c.nc))
        for k, spec in enumerate(specs):
            v = self._views[k]
            v.plot.setTitle(spec.title, size=f"{pt:.1f}pt")
            v.plot.setLogMode(x=log_x, y=False)
            v.members = spec.members
            if v.legend is not None:
                v.legend.clear()
                v.legend.setColumnCount(2 if len(spec.members) > 12 else 1)
                v.legend.setVisible(layout != "qbin" and show_legend)
            # Ranges first, once, with auto-range off: every range change re-runs each
            # curve item's view-dependent update (~3 per panel cost 0.1 s on wide panels).
            shifted = []
            for m, (bi, j) in enumerate(spec.members):
                b = self.blocks[bi]
                shift = off * (b.file_index if layout == "qbin" else m)
                shifted.append(g2_points(b, j)[1] + shift)
            v.set_note(_empty_note([(self.blocks[bi], j) for bi, j in spec.members])
                       if spec.members and not any(x.size for x in shifted) else None)
            # Every panel scales its own y, robustly (isolated wild points stay off-scale).
            ylim = robust_ylim(shifted)
            taus = [self.blocks[bi].tau for bi, _j in spec.members]
            tall = np.concatenate(taus) if taus else _EMPTY
            tall = tall[np.isfinite(tall) & (tall > 0)]
            vb = v.plot.getViewBox()
            if vb.autoRangeEnabled()[0] or vb.autoRangeEnabled()[1]:
                vb.disableAutoRange()
            rng = {}
            if tall.size:
                lo_t, hi_t = float(tall.min()), float(tall.max())
                x0, x1 = (np.log10(lo_t), np.log10(hi_t)) if log_x else (0.0, hi_t)
                rng["xRange"] = (x0 - 0.03 * (x1 - x0), x1 + 0.03 * (x1 - x0))
            if ylim is not None:
                rng["yRange"] = ylim
            if rng:
                vb.setRange(padding=0, **rng)  # one range change for both axes
            if ylim is None:
                vb.enableAutoRange(y=True)
            yield
            for m, (bi, j) in enumerate(spec.members):
                b = self.blocks[bi]
                ci = b.file_index if layout == "qbin" else m
                shift = off * (b.file_index if layout == "qbin" else m)
                slot = v.slot(m)
                self._show_curve(slot, b, j, ci, shift, log_x, msize)
                if v.legend is not None and layout != "qbin" and m < MAX_LEGEND:
                    _add_entry(v.legend, slot.points, spec.labels[m], LABEL_PX["side"])
                if m % 4 == 3:
                    yield
            if v.legend is not None and layout != "qbin" and len(spec.members) > MAX_LEGEND:
                v.legend.addItem(pg.PlotDataItem(pen=None),
                                 f"\u2026 and {len(spec.members) - MAX_LEGEND} more")
            for slot in v.slots[len(spec.members):]:
                slot.hide()
            yield

    def _show_curve(self, slot: _CurveSlot, b, j: int, ci: int, shift: float,
                    log_x: bool, msize: int) -> None:
        t, y, e = g2_points(b, j)
        color = curve_color(ci)
        slot.points.setData(t, y + shift, symbol=_SYMBOLS[b.file_index % 12],
                            symbolSize=msize, symbolPen=pg.mkPen(color, width=1.2),
                            symbolBrush=None)
        if self.err_check.isChecked() and t.size:
            # ErrorBarItem does not follow the plot's log mode: give it log10(t).
            err = slot.error_item()
            err.setData(x=np.log10(t) if log_x else t, y=y + shift, height=2 * e,
                        pen=pg.mkPen(color, width=0.8))
            err.drawPath()  # its path, here rather than in the next paint
        elif slot.errors is not None:
            slot.errors.setData(x=_EMPTY, y=_EMPTY, height=_EMPTY)
        if b.excluded is not None and b.excluded[:, j].any():
            ex = b.excluded[:, j]
            slot.left_out_item().setData(b.tau[ex], b.g2[ex, j] + shift, symbol="x",
                                         symbolSize=msize + 2,
                                         symbolPen=pg.mkPen(150, 150, 150, width=1.2))
        elif slot.left_out is not None:
            slot.left_out.setData(_EMPTY, _EMPTY)
        slot.key = (b.file_index, j, ci, shift)
        self._show_fit(slot, b)
        # symbol pixmaps are made at the first paint otherwise: all at once, in one paint
        for it in (slot.points, slot.left_out):
            if it is not None:
                it.scatter.fragmentAtlas.pixmap  # noqa: B018 - builds the atlas now

    def _show_fit(self, slot: _CurveSlot, b) -> None:
        # only a fit made from exactly this curve (file, bin, points, model) is drawn
        fits = self.shown_fits
        if slot.key is None:
            return
        _file_index, j, ci, shift = slot.key
        if fits is None or not self.show_fit.isChecked():
            slot.hide_fit()
            return
        fit = g2_fit_line(fits, b, j, shift, self.show_band.isChecked())  # as the figure
        if fit is None:
            slot.hide_fit()
            return
        width, style = _PEN_WIDTH[fit.weight], _PEN_LINE[fit.line]
        pen = (pg.mkPen(150, 150, 150, width=width, style=style) if fit.grey
               else curve_pen(ci, width, style=style))
        slot.fit.setData(fit.grid, fit.curve, pen=pen)
        # its path and bounds now, not in the paint that follows the draw
        slot.fit.curve.getPath()
        slot.fit.curve.boundingRect()
        if fit.band is not None:
            lo, hi, fill = slot.band_items()
            lo.setData(fit.grid, fit.band[0], pen=curve_pen(ci, 0.5, alpha=80))
            hi.setData(fit.grid, fit.band[1], pen=curve_pen(ci, 0.5, alpha=80))
            c = QColor(curve_color(ci))
            c.setAlpha(60)
            fill.setBrush(pg.mkBrush(c))
            fill.setVisible(True)
        else:
            slot.hide_band()

    def _draw_fits(self) -> None:
        """New fits: update the fit items of the shown curves only."""
        if self._draw_gen is not None or not self.panel_specs:
            self._draw()
            return

        def steps():
            for k, spec in enumerate(self.panel_specs):
                v = self._views[k]
                for m, (bi, _j) in enumerate(spec.members):
                    self._show_fit(v.slot(m), self.blocks[bi])
                    if m % 8 == 7:
                        yield
                yield
            yield _TURN  # the repaint after the fits: a turn of its own

        self._draw_gen = steps()
        self.glw.setUpdatesEnabled(False)
        if self._start_slices():
            return
        if self._draw_done is not None:
            self._draw_done.set()
        self._draw_done = threading.Event()
        self.submit("draw", wait_for_event_job, self._draw_done, description="g2: drawing fits")
        QTimer.singleShot(5, self._draw_step)

    def _finish_draw(self) -> None:
        self.glw.setUpdatesEnabled(True)
        if self._draw_done is not None:
            self._draw_done.set()
            self._draw_done = None
        self.sigUpdated.emit()
        if self._pending_fits_signal is not None:
            fits, self._pending_fits_signal = self._pending_fits_signal, None
            self.sigFitsReady.emit(fits)

    def clear_plots(self) -> None:
        self.blocks = []
        self._draw_gen = None
        if self._draw_done is not None:
            self._draw_done.set()
            self._draw_done = None
        self.glw.setUpdatesEnabled(True)
        for v in self._views:
            for sl in v.slots:
                sl.hide()
        self._layout_grid(0, 1, self.layout_combo.currentData())
        self._plots = []
        self.panel_specs = []


def _empty_note(members) -> str:
    """Why a panel shows no point: its points are all out of the physical range (a hot
    pixel in the bin gives g2 of hundreds), or there are none."""
    from xpcsviewer.io.results.reader import G2_MAX

    vals = np.concatenate([np.asarray(b.g2[:, j], dtype=np.float64) for b, j in members])
    vals = vals[np.isfinite(vals)]
    if vals.size == 0:
        return "no point: g2 is not a number at any delay"
    # short lines: a panel of a 3-column grid is ~180 px wide
    return (f"no point drawn: all {vals.size}\nout of 0 \u2264 g\u2082 \u2264 {G2_MAX:g}\n"
            f"(median {np.median(vals):.3g}):\na hot pixel in the bin?\n(Raw tab)")
