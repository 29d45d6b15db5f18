"""The ages part of the Two-Time tab: age windows on the map, the cuts both ways and
tau against age (issue 35).

What is drawn comes from :mod:`xpcsviewer.views.ages`, which the exported figure
draws too. The analysis (read the age x lag map, cut, fit, the ageing law) runs in a
worker (:func:`xpcsviewer.jobs.ages_bin.run_ages`) with progress and cancel; a
result for another file, bin or setting than the one asked last is dropped, and the
plots are cleared as soon as the file or bin changes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor, QPen, QPolygonF
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGraphicsPolygonItem,
    QHBoxLayout,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from xpcsviewer.fitting.vocabulary import MODEL_MENU
from xpcsviewer.gui.panels import _twotime_age_lag as al
from xpcsviewer.gui.panels._twotime_keys import (
    LAW_COLOR,
    error_source,
    tau_color,
    tau_key,
    window_key,
    wrapping_label,
)
from xpcsviewer.gui.panels._twotime_survey import BinSurvey
from xpcsviewer.gui.widgets import SparseLogAxis, plain_axes
from xpcsviewer.jobs.ages_bin import AgesRequest, bin_request, parse_seconds, run_ages
from xpcsviewer.views import ages as av
from xpcsviewer.views.g2_fit import FIT_LOOK

__all__ = ["TAB_MAX_FULL_FRAMES", "TAU_COLORS", "AgesView"]

#: Largest full map (frames) the tab cuts by age when the file has no age x lag map:
#: the tab analyses every two-time file shown, so its work stays at seconds (2048
#: frames: ~0.1 GB of entries and weights while cut; `xpcsviewer ages` reads 8192).
TAB_MAX_FULL_FRAMES = 2048
#: Colours of the two ways in the tau(t_w) plot.
TAU_COLORS = av.TAU_COLORS
#: pyqtgraph symbols of the marker kinds (the Series tab's).
_SYMBOLS = {"filled": "o", "open": "o", "limit_up": "t1", "limit_down": "t"}
_LINES = {"solid": Qt.PenStyle.SolidLine, "dotted": Qt.PenStyle.DotLine,
          "dashed": Qt.PenStyle.DashLine, "dashdot": Qt.PenStyle.DashDotLine}
_MODEL_SHORT = {"auto": "model: auto (AICc)", "single": "model: single exp",
                "stretched": "model: stretched", "double": "model: double exp",
                "single_avgcorr": "model: single, avg-corrected"}
_WAY_SHORT = {"age": "age", "t1": "t\u2081"}


_SHORT_TITLES = {"age": "constant age", "t1": "constant t\u2081"}
_KIND_SHORT = {"filled": "", "open": " open", "limit_up": " \u25b2 limit",
               "limit_down": " \u25bc limit"}


def _set_title(plot: pg.PlotItem, text: str) -> None:
    """A plot title that does not set the plot's smallest width (a long one would push
    the next plot out of a narrow window; it is cut instead)."""
    plot.setTitle(text, size="9pt")
    plot.titleLabel.setMinimumWidth(20)
    plot.titleLabel.setMaximumWidth(2000)


def _cut_plot(layout: pg.GraphicsLayoutWidget, col: int, title: str) -> pg.PlotItem:
    p = plain_axes(layout.addPlot(row=0, col=col, axisItems={"bottom": SparseLogAxis("bottom")}))
    p.setLogMode(x=True, y=False)
    p.setLabel("bottom", "lag \u03c4 (s)")
    p.setLabel("left", "g\u2082")
    _set_title(p, title)
    p.showGrid(x=True, y=True, alpha=0.2)
    return p


class AgesView(QWidget):
    """Controls and plots of g2 by age, drawn for the panel's file and bin.

    ``panel`` is the :class:`~xpcsviewer.gui.panels.twotime.TwotimePanel` (its runner,
    its map plot for the bands, its current file and bin).
    """

    sigAgesShown = Signal()
    """The ages of a new request are on screen: ()."""

    def __init__(self, panel: Any) -> None:
        super().__init__(panel)
        self.panel = panel
        self.outcome: Any = None
        self._request: AgesRequest | None = None
        self.survey = BinSurvey()  # every bin of the file: the verdict line, the opening bin
        self._band_items: list[QGraphicsPolygonItem] = []
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.ages_check = QCheckBox("ages", checked=True)
        self.ages_check.setToolTip("Cut the map by sample age: g2 of each age window read "
                                   "two ways, their fits and \u03c4 against age")
        self.spacing = QComboBox()
        self.spacing.setToolTip("Age windows: N equal windows over the run (linear), N "
                                "windows each twice as long as the one before (log), or "
                                "the ages and widths typed in")
        for text, key in (("N windows, linear", "linear"), ("N windows, log", "log"),
                          ("ages and widths", "list")):
            self.spacing.addItem(text, key)
        self.n_spin = QSpinBox(minimum=1, maximum=20, value=5)
        self.n_spin.setToolTip("Number of age windows (default 5)")
        self.ages_edit = QLineEdit()
        self.ages_edit.setPlaceholderText("ages: 1, 3, 5")
        self.ages_edit.setToolTip("Centres of the age windows in s, e.g. \"1, 3, 5\" "
                                  "(with \u201cages and widths\u201d)")
        self.widths_edit = QLineEdit()
        self.widths_edit.setPlaceholderText("widths: 1")
        self.widths_edit.setToolTip("Width of the windows in s: one for all or one per age "
                                    "(empty: the smallest spacing of the ages)")
        for e in (self.ages_edit, self.widths_edit):
            e.setMinimumWidth(90)
            e.setMaximumWidth(120)
        self.bands = QComboBox()
        self.bands.setToolTip("Windows drawn on the map: at constant age (strips across "
                              "the diagonal), at constant t\u2081 (rows from the "
                              "diagonal), or both (constant t\u2081 mirrored above the "
                              "diagonal)")
        for text, key in (("bands: constant age", "age"), ("bands: constant t\u2081", "t1"),
                          ("bands: both", "both")):
            self.bands.addItem(text, key)
        self.model_combo = QComboBox()
        self.model_combo.setToolTip("g2 model of every cut, as in the g2 tab (automatic: "
                                    "one per cut by AICc)")
        for key, text in MODEL_MENU.items():
            self.model_combo.addItem(_MODEL_SHORT.get(key, key), key)
            self.model_combo.setItemData(self.model_combo.count() - 1, text,
                                         Qt.ItemDataRole.ToolTipRole)
        self.law_combo = QComboBox()
        self.law_combo.setToolTip("Ageing law fitted to the converged \u03c4 of the "
                                  "constant-age cuts, with its 95 % interval and verdict")
        self.law_combo.addItem("\u03c4 = \u03c4\u2080 + a\u00b7t_w", "linear")
        self.law_combo.addItem("\u03c4 = \u03c4\u2080\u00b7t_w^\u03bc", "power")
        self.quantity = QComboBox()
        self.quantity.setToolTip("Against age: \u03c4 with the ageing law, or the contrast "
                                 "or stretching exponent of the converged cuts")
        for key, text in av.QUANTITIES.items():
            self.quantity.addItem(f"against age: {text}", key)
        self.cancel_btn = QPushButton("Cancel")
        self.cancel_btn.setToolTip("Stop the age analysis")
        self.cancel_btn.setEnabled(False)
        self.progress = QProgressBar(maximum=1000, textVisible=False)
        self.progress.setMaximumWidth(80)
        self.progress.setToolTip("Progress of the age analysis")
        # controls in a column left of the plots (a row would widen the window)
        side = QVBoxLayout()
        side.setSpacing(3)
        for w in (self.ages_check, self.spacing, self.n_spin, self.ages_edit,
                  self.widths_edit, self.bands, self.model_combo, self.law_combo,
                  self.quantity):
            w.setMaximumWidth(190)
            side.addWidget(w)
        busy = QHBoxLayout()
        busy.addWidget(self.cancel_btn)
        busy.addWidget(self.progress)
        side.addLayout(busy)
        side.addStretch(1)
        self.status = wrapping_label()
        self.verdicts = wrapping_label()
        self.verdicts.setToolTip("The ageing law of every q-bin of the file, from the same "
                                 "analysis as the plots; pick a bin in the q-bin list")
        self.plots = pg.GraphicsLayoutWidget()
        self.cut_plots = {way: _cut_plot(self.plots, k, _SHORT_TITLES[way])
                          for k, way in enumerate(av.WAYS)}
        self.cut_plots["t1"].setYLink(self.cut_plots["age"])
        self.cut_plots["t1"].setXLink(self.cut_plots["age"])
        # the windows' key is a line below the plots (a legend inside would cover points)
        self.tau_plot = plain_axes(self.plots.addPlot(
            row=0, col=2, axisItems={"left": SparseLogAxis("left")}))
        self.tau_plot.setLogMode(x=False, y=True)
        self.tau_plot.setLabel("bottom", "age t_w (s)")
        self.tau_plot.setLabel("left", "\u03c4 (s)")
        self.tau_plot.showGrid(x=True, y=True, alpha=0.2)
        # no legend (inside it covers a tau at one age or another, beside it a narrow
        # window has no room): the key leads the law's line below the plots
        right = QVBoxLayout()
        self.law_label = wrapping_label()
        right.addWidget(self.verdicts)
        right.addWidget(self.status)
        right.addWidget(self.plots, 1)
        right.addWidget(self.law_label)
        body = QHBoxLayout()
        body.addLayout(side)
        body.addLayout(right, 1)
        lay.addLayout(body, 1)
        self._timer = QTimer(self, singleShot=True, interval=300)  # typing settles
        self._timer.timeout.connect(self.start)
        self.ages_check.toggled.connect(self._on_toggled)
        self.spacing.currentIndexChanged.connect(self._on_spacing)
        self.n_spin.valueChanged.connect(lambda _v: self._timer.start())
        self.ages_edit.editingFinished.connect(self.start)
        self.widths_edit.editingFinished.connect(self.start)
        self.model_combo.currentIndexChanged.connect(lambda _i: self.start())
        self.law_combo.currentIndexChanged.connect(lambda _i: self.redraw())
        self.quantity.currentIndexChanged.connect(lambda _i: self.redraw())
        self.bands.currentIndexChanged.connect(lambda _i: self.draw_bands())
        self.cancel_btn.clicked.connect(self.cancel)
        self._on_spacing()

    # ----------------------------------------------------------- requests
    def enabled(self) -> bool:
        return self.ages_check.isChecked()

    def _on_toggled(self, on: bool) -> None:
        self.plots.setVisible(on)
        self.status.setVisible(on)
        self.verdicts.setVisible(on)
        self.law_label.setVisible(on)
        if on:
            self.start()
        else:
            self.cancel()
            self.clear()

    def _on_spacing(self) -> None:
        typed = self.spacing.currentData() == "list"
        self.n_spin.setEnabled(not typed)
        self.ages_edit.setEnabled(typed)
        self.widths_edit.setEnabled(typed)
        if self.panel.current() is not None:  # also after a refused entry
            self.start()

    def build_request(self, index: int | None = None) -> AgesRequest | None:
        """The request for the panel's file and bin (or the bin at ``index``; GUI
        thread); None without one.

        Raises ValueError for ages or widths that are not times in seconds.
        """
        p = self.panel
        res = p.current()
        if res is None or p.bin_combo.count() == 0:
            return None
        spacing = str(self.spacing.currentData())
        ages = widths = ()
        if spacing == "list":
            ages = parse_seconds(self.ages_edit.text(), "ages")
            if self.widths_edit.text().strip():
                widths = parse_seconds(self.widths_edit.text(), "widths")
        return bin_request(res, int(p._bin_index if index is None else index), spacing,
                           int(self.n_spin.value()),
                           ages, widths, str(self.model_combo.currentData()),
                           str(self.law_combo.currentData()))

    def follow(self) -> int | None:
        """Start unless the panel's file, bin and settings are those shown or running
        (a new colour level or map size does not change the ages)."""
        if not self.enabled():
            return None
        try:
            req = self.build_request()
        except ValueError:
            return self.start()
        running = self.panel.job_key("ages") in self.panel.context.runner.running_keys()
        if req is not None and req == self._request and (self.outcome is not None or running):
            return None
        return self.start()

    def start(self) -> int | None:
        """Clear the shown ages and analyse the panel's file and bin in a worker."""
        self._timer.stop()
        self.clear()
        if not self.enabled():
            return None
        try:
            req = self.build_request()
        except ValueError as exc:
            self._request = None
            self._say(str(exc), error=True)
            return None
        self._request = req
        if req is None:
            self.survey.reset([])
            self._show_verdicts()
            return None
        self.survey.reset([self.build_request(i) for i in range(self.panel.bin_combo.count())])
        self.survey.arm(req)
        self._show_verdicts()
        kept = self.survey.outcomes.get(req)
        if kept is not None:  # analysed by the survey with these settings: drawn at once
            self._show(kept)
            return self._survey_next()
        self._say("analysing ages\u2026")
        return self._submit(req)

    def _submit(self, req: AgesRequest) -> int:
        self.cancel_btn.setEnabled(True)
        self.progress.setValue(0)
        return self.panel.submit("ages", run_ages, req, TAB_MAX_FULL_FRAMES,
                                 on_result=self._on_result,
                                 on_error=lambda info, r=req: self._on_error(info, r),
                                 on_progress=self._on_progress,
                                 description=f"Two-Time: g2 by age, q-bin {req.dq}")

    def _survey_next(self) -> int | None:
        """Open on a bin with a law once known; else analyse the next bin not done."""
        pick = self.survey.pick(str(self.law_combo.currentData()))
        if pick is not None:
            self.panel.set_bin_index(pick)
            return None
        nxt = self.survey.next_request()
        return None if nxt is None else self._submit(nxt)

    def _show_verdicts(self) -> None:
        text = self.survey.verdict_line(str(self.law_combo.currentData()))
        self.verdicts.setText(text)

    def cancel(self) -> None:
        self.panel.context.runner.cancel(self.panel.job_key("ages"))
        self.survey.cancel_rest()
        self._show_verdicts()
        self.cancel_btn.setEnabled(False)
        if self.outcome is None and self._request is not None:
            self._say("age analysis cancelled")

    def _on_progress(self, done: int, total: int, msg: str) -> None:
        if total > 0:
            self.progress.setValue(int(1000 * done / total))
        if self.outcome is None:  # the survey of other bins leaves the shown status
            self._say(f"ages: {msg}")

    def _on_error(self, info: Any, req: AgesRequest | None = None) -> None:
        self.cancel_btn.setEnabled(False)
        if req is not None and req != self._request:  # another bin of the survey
            self.survey.fail(req, info.message)
            self._show_verdicts()
            self._survey_next()
            return
        self._say(f"ages: {info.message}", error=True)
        if req is not None:
            self.survey.fail(req, "see the status line")
        self.survey.cancel_rest("the shown bin failed")  # the others would fail alike
        self._show_verdicts()
        if getattr(info, "kind", "") != "XpcsFileError":  # what the file lacks: said here
            self.panel.context.report_error(info)

    def _on_result(self, outcome: Any) -> None:
        self.cancel_btn.setEnabled(False)
        self.survey.store(outcome)
        self._show_verdicts()
        if outcome.request == self._request:  # not one asked for another file or setting
            self._show(outcome)
        if outcome.request in self.survey.requests:
            self._survey_next()

    def _show(self, outcome: Any) -> None:
        self.outcome = outcome
        self.progress.setValue(1000)
        self.redraw()
        self.sigAgesShown.emit()

    def _say(self, text: str, error: bool = False) -> None:
        self.status.setText(text)
        self.status.setToolTip(text)  # the line is cut at the panel's width
        self.status.setStyleSheet("color: #c0392b;" if error else "")

    # ------------------------------------------------------------ drawing
    def clear(self) -> None:
        """Nothing of an earlier file, bin or setting stays on screen."""
        self.outcome = None
        for p in (*self.cut_plots.values(), self.tau_plot):
            p.clear()
        self.tau_plot.setTitle("")
        self.law_label.setText(" ")
        self._clear_bands()

    def _clear_bands(self) -> None:
        for it in self._band_items:
            self.panel.c2_plot.removeItem(it)
        self._band_items = []

    def draw_bands(self) -> None:
        """The windows on the map, read the chosen way (GUI thread)."""
        self._clear_bands()
        o = self.outcome
        if o is None:
            return
        # on the full map, or on the age x lag map where the file has only that
        for band in al.map_bands(self.panel, o, str(self.bands.currentData())):
            color = QColor(av.FLAG_COLOR if band.flagged else av.window_color(band.window))
            pen = QPen(color, 2.0 if band.flagged else 1.2)
            pen.setCosmetic(True)
            if band.flagged:
                pen.setStyle(Qt.PenStyle.DashLine)
            fill = QColor(av.window_color(band.window))
            fill.setAlpha(70)
            item = QGraphicsPolygonItem(QPolygonF([QPointF(x, y) for x, y in band.polygon]))
            item.setPen(pen)
            item.setBrush(QBrush(fill))
            item.setZValue(10)
            self.panel.c2_plot.addItem(item)
            self._band_items.append(item)

    def redraw(self) -> None:
        """Bands, cuts and tau(t_w) of the shown outcome (GUI thread)."""
        o = self.outcome
        for p in (*self.cut_plots.values(), self.tau_plot):
            p.clear()
        self._show_verdicts()  # the law chosen may have changed
        if o is None:
            return
        self.draw_bands()
        for way in av.WAYS:
            self._draw_cuts(way, av.cut_curves(o.cuts, way, 0, o.fits))
        if self.quantity.currentData() == "tau":
            self._draw_tau(o)
        else:
            self._draw_param(o, str(self.quantity.currentData()))
        src = f"from the {o.source}"
        self._say(f"{o.request.label}, q-bin {o.request.dq}: {o.cuts.windows.n} age windows "
                  f"{src}; {av.disagree_text(o.cuts, 0, o.fits)}",
                  error=bool(av.flags(o.cuts, o.fits).any()))

    def _draw_cuts(self, way: str, curves: list) -> None:
        plot = self.cut_plots[way]
        for c in curves:
            color = QColor(c.color)
            plot.addItem(pg.PlotDataItem(c.x, c.y, pen=None, symbol="o", symbolSize=4,
                                         symbolBrush=color, symbolPen=color))
            bars = np.isfinite(c.lo) & np.isfinite(c.hi)
            if bars.any():
                plot.addItem(pg.ErrorBarItem(x=np.log10(c.x[bars]), y=c.y[bars],
                                             top=c.hi[bars] - c.y[bars],
                                             bottom=c.y[bars] - c.lo[bars],
                                             pen=pg.mkPen(color, width=0.8)))
            if c.fit is not None:
                grid, curve, status = c.fit
                line, weight, grey = FIT_LOOK.get(status, FIT_LOOK["failed"])
                pen = pg.mkPen("#808080" if grey else color, width=2.0 - 0.5 * weight)
                pen.setStyle(_LINES[line])
                plot.addItem(pg.PlotDataItem(grid, curve, pen=pen))
        flagged = [c for c in curves if c.flagged]
        title = _SHORT_TITLES[way]
        if flagged:
            title += f"  <span style='color:{av.FLAG_COLOR}'>\u26a0 ways disagree</span>"
        _set_title(plot, title)

    def _draw_param(self, o: Any, name: str) -> None:
        """Contrast or stretching exponent of the converged cuts against age."""
        plot = self.tau_plot
        plot.setLogMode(x=False, y=False)
        plot.setLabel("left", av.QUANTITIES[name])
        for way in av.WAYS:
            p = av.param_points(o.fits, way, 0, name)
            color = tau_color(way)
            if p.x.size:
                plot.addItem(pg.PlotDataItem(p.x, p.y, pen=None, symbol="o", symbolSize=8,
                                             symbolBrush=color, symbolPen=color))
            m = p.has_bars
            if m.any():
                plot.addItem(pg.ErrorBarItem(x=p.x[m], y=p.y[m], top=p.hi[m] - p.y[m],
                                             bottom=p.y[m] - p.lo[m],
                                             pen=pg.mkPen(color, width=1.0)))
        plot.enableAutoRange()
        self.law_label.setText(window_key(o.cuts, o.fits) + "<br>" + tau_key().split(" (")[0]
                               + f": {av.QUANTITIES[name]} of the converged cuts")
        _set_title(plot, f"{av.QUANTITIES[name]} against age")

    def _draw_tau(self, o: Any) -> None:
        from xpcsviewer.views.series import not_drawn_text

        plot = self.tau_plot
        plot.setLogMode(x=False, y=True)
        plot.setLabel("left", "\u03c4 (s)")
        line = av.law_line(o.fits, 0, str(self.law_combo.currentData()))
        if line is not None:
            fin = np.isfinite(line.lo) & np.isfinite(line.hi) & (line.hi > 0) & (line.tau > 0)
            if fin.any():
                lo = np.where(line.lo > 0, line.lo, line.tau * 1e-3)
                # curve items in log10 y: a fill between data items ignores the log mode
                edge = pg.mkPen((0, 0, 0, 0))
                a = pg.PlotCurveItem(line.t[fin], np.log10(lo[fin]), pen=edge)
                b = pg.PlotCurveItem(line.t[fin], np.log10(line.hi[fin]), pen=edge)
                fill = QColor(LAW_COLOR)
                fill.setAlpha(50)
                band = pg.FillBetweenItem(a, b, brush=QBrush(fill))
                band.setToolTip("95 % band of the law")
                for it in (a, b, band):
                    plot.addItem(it)
            ok = line.tau > 0
            plot.addItem(pg.PlotDataItem(line.t[ok], line.tau[ok],
                                         pen=pg.mkPen(LAW_COLOR, width=1.5), name="law"))
        drawings = []
        for way in av.WAYS:
            d = av.tau_drawing(o.fits, way, 0)
            drawings.append(d)
            color = tau_color(way)
            for kind, sym in _SYMBOLS.items():
                p = d.tau[kind]
                if not p.x.size:
                    continue
                plot.addItem(pg.PlotDataItem(
                    p.x, p.y, pen=None, symbol=sym, symbolSize=8,
                    symbolBrush=color if kind == "filled" else None, symbolPen=color,
                    name=f"{_WAY_SHORT[way]}{_KIND_SHORT[kind]}"))
            f = d.tau["filled"]
            m = f.has_bars & (f.lo > 0)
            if m.any():
                y = np.log10(f.y[m])
                plot.addItem(pg.ErrorBarItem(x=f.x[m], y=y, top=np.log10(f.hi[m]) - y,
                                             bottom=y - np.log10(f.lo[m]),
                                             pen=pg.mkPen(color, width=1.0)))
        lim = av.tau_ylim(drawings, line)
        if lim is not None:
            plot.setYRange(np.log10(lim[0]), np.log10(lim[1]), padding=0)
        law = str(self.law_combo.currentData())
        text = line.text if line is not None else av.law_verdict(o.fits, 0, law)
        # the law in a wrapping label: as the plot's title its longest line would set
        # the plot's smallest width and push it out of a narrow window
        self.law_label.setText(
            window_key(o.cuts, o.fits) + "<br>" + f"{tau_key()} ageing law "
            + text.replace("\n", "; ") + f"; \u03c4: {not_drawn_text(drawings)}"
            + error_source(o.fits))
        # the law's result, not only its verdict word (issue 49)
        _set_title(plot, "\u03c4 against age: " + (line.short if line is not None
                                                   else "no law (undetermined)"))

    def drawn_points(self) -> dict[str, list[tuple[float, float]]]:
        """(x, y) of the drawn markers by plot and kind (tests compare the figure)."""
        out: dict[str, list[tuple[float, float]]] = {}
        for key, plot in (("age", self.cut_plots["age"]), ("t1", self.cut_plots["t1"]),
                          ("tau", self.tau_plot)):
            for it in plot.listDataItems():
                sym = it.opts.get("symbol")
                if sym is None or it.xData is None or not it.xData.size:
                    continue
                x, y = it.xData, it.yData
                out.setdefault(key, []).extend(zip(map(float, x), map(float, y), strict=True))
        return out

    # ----------------------------------------------------- export, settings
    def figure_options(self) -> dict:
        return {"ages": self.outcome, "bands": str(self.bands.currentData()),
                "law": str(self.law_combo.currentData()),
                "quantity": str(self.quantity.currentData())}

    def get_settings(self) -> dict:
        return {"ages": self.ages_check.isChecked(), "spacing": self.spacing.currentData(),
                "n_windows": self.n_spin.value(), "ages_s": self.ages_edit.text(),
                "widths_s": self.widths_edit.text(), "bands": self.bands.currentData(),
                "model": self.model_combo.currentData(), "law": self.law_combo.currentData(),
                "quantity": self.quantity.currentData()}

    def set_settings(self, s: dict) -> None:
        from xpcsviewer.gui.panels.base import apply_settings

        widgets = (self.ages_check, self.spacing, self.n_spin, self.ages_edit,
                   self.widths_edit, self.bands, self.model_combo, self.law_combo,
                   self.quantity)
        for w in widgets:
            w.blockSignals(True)
        try:
            apply_settings(s, combos=(("spacing", self.spacing), ("bands", self.bands),
                                      ("model", self.model_combo), ("law", self.law_combo),
                                      ("quantity", self.quantity)),
                           checks=(("ages", self.ages_check),),
                           spins=(("n_windows", self.n_spin),),
                           edits=(("ages_s", self.ages_edit), ("widths_s", self.widths_edit)))
        finally:
            for w in widgets:
                w.blockSignals(False)
        typed = self.spacing.currentData() == "list"
        self.n_spin.setEnabled(not typed)
        self.ages_edit.setEnabled(typed)
        self.widths_edit.setEnabled(typed)
        for w in (self.plots, self.status, self.verdicts, self.law_label):
            w.setVisible(self.ages_check.isChecked())
