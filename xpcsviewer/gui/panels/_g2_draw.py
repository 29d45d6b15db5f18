"""Drawing of the g2 tab: a grid of pyqtgraph panels, a few per event-loop turn.

A mixin of :class:`~xpcsviewer.gui.panels.g2.G2Panel` (it uses the panel's
widgets and ``blocks``); GUI thread only.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor

from xpcsviewer.export import g2_data
from xpcsviewer.gui.panels._g2_jobs import wait_for_event_job
from xpcsviewer.gui.widgets import curve_color, curve_pen

__all__ = ["FIT_PEN_STYLE", "G2DrawMixin"]

_SYMBOLS = ["o", "s", "t", "d", "+", "x", "star", "p", "h", "t1", "t2", "t3"]
#: Fit curves by status: (pen style, width, grey).
FIT_PEN_STYLE = {
    "converged": (Qt.PenStyle.SolidLine, 1.5, False),
    "unresolved": (Qt.PenStyle.DotLine, 1.5, False),
    "at_bound": (Qt.PenStyle.DotLine, 1.5, False),
    "poor_fit": (Qt.PenStyle.DashLine, 1.2, False),
    "no_decay": (Qt.PenStyle.DashLine, 1.0, True),
    "failed": (Qt.PenStyle.DashDotLine, 1.0, True),  # e.g. NUTS that failed its gates
}


class G2DrawMixin:
    """Panel grid drawing for the g2 tab (see the module docstring)."""

    def _panels(self) -> list[tuple[str, list[tuple[g2_data.G2Block, int]]]]:
        layout = self.layout_combo.currentData()
        if layout == "qbin":
            cols = sorted({int(c) for b in self.blocks for c in b.columns})
            out = []
            for c in cols:
                members = [
                    (b, int(np.flatnonzero(b.columns == c)[0]))
                    for b in self.blocks
                    if c in b.columns
                ]
                b0, j0 = members[0]
                out.append((b0.bin_labels[j0], members))
            return out
        if layout == "file":
            return [(b.label, [(b, j) for j in range(b.n_bins)]) for b in self.blocks]
        return [("all files", [(b, j) for b in self.blocks for j in range(b.n_bins)])]

    def _draw(self) -> None:
        """Redraw every panel, a few per event-loop turn so the GUI never stalls.

        PlotItems are pooled and reused while the grid shape stays the same (creating
        and laying out a PlotItem costs tens of ms); at most ``max panels`` are drawn.
        """
        self._draw_gen = None
        if not self.blocks:
            self.glw.clear()
            self._pool = []
            self._plots = []
            self.status.setText("no g2 curves in the selected q/t range")
            self._finish_draw()
            return
        panels = self._panels()
        n_all = len(panels)
        panels = panels[: self.max_panels.value()]
        nc = max(1, min(self.ncols.value(), len(panels)))
        shape = (len(panels), nc)
        if shape != self._pool_shape:
            self.glw.clear()
            self._pool = []
            self._pool_shape = shape
        self._plots = []
        rows = math.ceil(len(panels) / nc)
        self.glw.setMinimumHeight(max(300, 230 * rows))
        n_curves = sum(b.n_bins for b in self.blocks)
        more = (
            (
                f"; showing the first {len(panels)} of {n_all} panels (narrow the q range or "
                f"raise max panels)"
            )
            if n_all > len(panels)
            else ""
        )
        more += self.shown_note()
        self.status.setText(
            f"{len(self.blocks)} file(s), {n_curves} curve(s), "
            f"{len(panels)} panel(s){more}"
        )
        self._draw_gen = self._draw_steps(panels, nc)
        n_drawn = sum(len(m) for _t, m in panels)
        if (
            len(panels) <= len(self._pool)
            or (len(panels) <= 12 and n_drawn <= 60)
            or getattr(self.context.runner, "synchronous", False)
        ):
            # Small or reused: draw now (cheap), so a grab right after shows everything.
            for _ in self._draw_gen:
                pass
            self._draw_gen = None
            self._finish_draw()
            return
        # One repaint at the end instead of one per chunk (each repaints every panel).
        self.glw.setUpdatesEnabled(False)
        # A placeholder job keeps the runner busy while drawing, so "wait until idle"
        # (snapshot, tests) waits for the finished picture.
        if self._draw_done is not None:
            self._draw_done.set()
        self._draw_done = threading.Event()
        self.submit(
            "draw", wait_for_event_job, self._draw_done, description="g2: drawing"
        )
        self._draw_step()

    def _draw_steps(self, panels, nc):
        layout = self.layout_combo.currentData()
        log_x = self.logx.isChecked()
        msize = self.marker.value()
        off = self.offset.value()
        for k, (title, members) in enumerate(panels):
            if k < len(self._pool):
                p = self._pool[k]
                p.clear()
                p.setTitle(title)
            else:
                p = self.glw.addPlot(row=k // nc, col=k % nc, title=title)
                p.setLabel("bottom", "\u03c4 (s)")
                p.getAxis("bottom").enableAutoSIPrefix(False)
                p.setLabel("left", "g\u2082")
                p.showGrid(x=True, y=True, alpha=0.2)
                p.addLegend(
                    offset=(-5, 5),
                    brush=pg.mkBrush(255, 255, 255, 180),
                    labelTextSize="8pt",
                    verSpacing=-6,
                )
                self._pool.append(p)
            p.setLogMode(x=log_x, y=False)
            if p.legend is not None:
                # Per q-bin panels all list the same files: one legend (first panel) is enough.
                show = (
                    self.legend_check.isChecked()
                    and len(members) <= 12
                    and (layout != "qbin" or k == 0)
                )
                p.legend.setVisible(show)
            for m, (b, j) in enumerate(members):
                if layout == "qbin":
                    ci, shift, name = b.file_index, off * b.file_index, b.label
                elif layout == "file":
                    ci, shift, name = m, off * m, b.bin_labels[j]
                else:
                    ci, shift, name = m, off * m, f"{b.label} {b.bin_labels[j]}"
                self._draw_curve(p, b, j, ci, shift, name, log_x, msize)
            # Every panel scales its own y, robustly (isolated wild points stay off-scale).
            ylim = g2_data.robust_ylim(
                [
                    g2_data.g2_points(b, j)[1]
                    + (off * (b.file_index if layout == "qbin" else m))
                    for m, (b, j) in enumerate(members)
                ]
            )
            if ylim is not None:
                p.setYRange(*ylim, padding=0)
            else:
                p.enableAutoRange(y=True)
            self._plots.append(p)
            yield

    def _draw_step(self) -> None:
        gen = self._draw_gen
        if gen is None:
            return
        t_end = time.monotonic() + 0.05
        for _ in gen:
            if time.monotonic() > t_end:
                # Let the event loop breathe. A real (non-zero) timer: a chain of
                # zero-timeouts would starve the other timers of the GUI thread.
                QTimer.singleShot(5, self._draw_step)
                return
        if gen is self._draw_gen:
            self._draw_gen = None
            self._finish_draw()

    def _finish_draw(self) -> None:
        self.glw.setUpdatesEnabled(True)
        if self._draw_done is not None:
            self._draw_done.set()
            self._draw_done = None
        self.sigUpdated.emit()
        if self._pending_fits_signal is not None:
            fits, self._pending_fits_signal = self._pending_fits_signal, None
            self.sigFitsReady.emit(fits)

    def _draw_curve(
        self,
        p: pg.PlotItem,
        b: g2_data.G2Block,
        j: int,
        ci: int,
        shift: float,
        name: str,
        log_x: bool,
        msize: int,
    ) -> None:
        t, y, e = g2_data.g2_points(b, j)
        color = curve_color(ci)
        item = pg.PlotDataItem(
            t,
            y + shift,
            pen=None,
            symbol=_SYMBOLS[b.file_index % 12],
            symbolSize=msize,
            symbolPen=pg.mkPen(color, width=1.2),
            symbolBrush=None,
            name=name,
        )
        p.addItem(item)
        if self.err_check.isChecked() and t.size:
            # ErrorBarItem does not follow the plot's log mode: give it log10(t).
            x = np.log10(t) if log_x else t
            p.addItem(
                pg.ErrorBarItem(
                    x=x,
                    y=y + shift,
                    height=2 * e,
                    beam=0,
                    pen=pg.mkPen(color, width=0.8),
                )
            )
        if b.excluded is not None and b.excluded[:, j].any():
            ex = b.excluded[:, j]
            marks = pg.PlotDataItem(
                b.tau[ex], b.g2[ex, j] + shift, pen=None, symbol="x",
                symbolSize=msize + 2, symbolPen=pg.mkPen(150, 150, 150, width=1.2),
            )
            marks.excluded_points = True  # tells tests and exports apart from data
            p.addItem(marks)
        fits = self.fits
        if fits is None or not self.show_fit.isChecked():
            return
        row = fits.find(b.file_index, int(b.columns[j]))
        if row is None or not np.isfinite(fits.params[fits.param_names[0]][row]):
            return
        pen_style, width, grey = FIT_PEN_STYLE.get(str(fits.status[row]), FIT_PEN_STYLE["failed"])
        grid = g2_data.g2_tau_grid(b.tau)
        yc = fits.curve([row], grid)[0] + shift
        pen = (pg.mkPen(150, 150, 150, width=width, style=pen_style) if grey
               else curve_pen(ci, width, style=pen_style))
        p.addItem(pg.PlotDataItem(grid, yc, pen=pen))
        if self.show_band.isChecked() and str(fits.status[row]) != "no_decay":
            band = fits.band([row], grid)
            if band is not None and np.isfinite(band[0]).any():
                lo = pg.PlotDataItem(
                    grid, band[0, 0] + shift, pen=curve_pen(ci, 0.5, alpha=80)
                )
                hi = pg.PlotDataItem(
                    grid, band[0, 2] + shift, pen=curve_pen(ci, 0.5, alpha=80)
                )
                p.addItem(lo)
                p.addItem(hi)
                c = QColor(color)
                c.setAlpha(60)
                p.addItem(pg.FillBetweenItem(lo, hi, brush=pg.mkBrush(c)))

    def clear_plots(self) -> None:
        self.blocks = []
        self._draw_gen = None
        if self._draw_done is not None:
            self._draw_done.set()
            self._draw_done = None
        self.glw.setUpdatesEnabled(True)
        self.glw.clear()
        self._plots = []
        self._pool = []
        self._pool_shape = ()
