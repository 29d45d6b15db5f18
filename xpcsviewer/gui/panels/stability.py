"""Stability: I(q) per time segment of one file, on the SAXS-1D scale, and its drift."""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QStackedWidget,
    QVBoxLayout,
)

from xpcsviewer.gui.panels.base import BasePanel
from xpcsviewer.gui.widgets import FileSelector, log_friendly_plot_widget, plain_axes
from xpcsviewer.views.saxs import NORMALIZATIONS, apply_normalization
from xpcsviewer.views.stability import (
    stability_analysis,
    stability_axis_label,
    stability_scale_note,
    stability_summary,
    stability_tooltip,
)

__all__ = ["StabilityPanel", "prepare_stability"]


def prepare_stability(segments, qmap, threshold: float, saxs_1d=None, progress=None,
                      cancel=None):
    """Worker job: ``stability_analysis`` of one file's segments (on its SAXS-1D scale)."""
    return stability_analysis(segments, qmap, threshold=threshold, saxs_1d=saxs_1d)


class StabilityPanel(BasePanel):
    """Segment I(q) curves coloured from early (blue) to late (red), with the change number."""

    name = "stability"
    title = "Stability"
    figure_kind = "stability"
    uses_current = True

    def __init__(self, context, parent=None) -> None:
        super().__init__(context, parent)
        self.result = None
        lay = QVBoxLayout(self)
        bar = QHBoxLayout()
        self.file_selector = FileSelector()
        self.file_selector.sigIndexChosen.connect(self._on_file_chosen)
        self.logx = QCheckBox("log q", checked=True)
        self.logx.setToolTip("Logarithmic q axis (default on)")
        self.logy = QCheckBox("log I", checked=True)
        self.logy.setToolTip("Logarithmic intensity axis (default on)")
        self.norm_combo = QComboBox()
        self.norm_combo.setToolTip("Normalisation of the I(q) curves: I, I\u00b7q\u00b2, "
                                   "I\u00b7q\u2074 or I / I(q\u2080)")
        for k in NORMALIZATIONS:
            self.norm_combo.addItem(k if k != "none" else "I", k)
        self.threshold = QDoubleSpinBox(decimals=1, minimum=0.1, maximum=100, value=10.0,
                                        suffix=" %", toolTip="Flag the file above this change")
        for w in (QLabel("File"), self.file_selector, self.logx, self.logy, QLabel("norm"),
                  self.norm_combo, QLabel("flag above"), self.threshold):
            bar.addWidget(w)
        bar.addStretch(1)
        lay.addLayout(bar)
        self.metric_label = QLabel(" ")
        self.metric_label.setToolTip(stability_tooltip())
        self.metric_label.setWordWrap(True)
        f = self.metric_label.font()
        f.setPointSizeF(f.pointSizeF() * 1.6)
        f.setBold(True)
        self.metric_label.setFont(f)
        lay.addWidget(self.metric_label)
        self.scale_label = QLabel(" ", wordWrap=True)
        lay.addWidget(self.scale_label)
        self.pw = log_friendly_plot_widget()
        self.plot = plain_axes(self.pw.getPlotItem())
        self.plot.showGrid(x=True, y=True, alpha=0.3)
        self.legend = self.plot.addLegend(offset=(-10, 10), brush=pg.mkBrush(255, 255, 255, 200))
        # While the worker computes (seconds when the pool is busy, e.g. compiling the
        # fits at start-up) a line of text stands in for the plot, not empty axes.
        self.placeholder = QLabel(" ", alignment=Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setWordWrap(True)
        self.plot_stack = QStackedWidget()
        self.plot_stack.addWidget(self.placeholder)
        self.plot_stack.addWidget(self.pw)
        lay.addWidget(self.plot_stack, 1)
        self._drawn_label: str | None = None  # the file whose curves the plot holds
        self.logx.toggled.connect(lambda _b: self._apply_axes())
        self.logy.toggled.connect(lambda _b: self._apply_axes())
        self.norm_combo.currentIndexChanged.connect(lambda _i: self._draw())
        self.threshold.editingFinished.connect(self.refresh)
        self._apply_axes()

    def applies_to(self, results):
        if not results:
            return "Select one or more result files first"
        if all(r.saxs_1d_segments is None for r in results):
            return "No time-segment I(q) (scattering_1d_segments) in these files"
        return None

    def refresh(self) -> None:
        self.file_selector.set_labels([r.label for r in self.results], self.current_index)
        res = self.current_result()
        if res is None:
            return
        if res.saxs_1d_segments is None:
            self.clear_plots()
            self.metric_label.setText(f"{res.label}: no segment data")
            self._show_text(f"{res.label} has no time-segment I(q)")
            return
        if self._drawn_label != res.label:  # the curves shown are of another file
            self._show_text(f"computing I(q) per time segment of {res.label}\u2026")
        self.submit("segments", prepare_stability, res.saxs_1d_segments, res.qmap,
                    self.threshold.value() / 100.0, res.saxs_1d, on_result=self._on_result,
                    on_error=self._on_error, description=f"Stability {res.label}")

    def _show_text(self, text: str) -> None:
        self.placeholder.setText(text)
        self.plot_stack.setCurrentWidget(self.placeholder)

    def _on_error(self, info) -> None:
        self._show_text("no segment I(q): the computation failed (Details\u2026 in the "
                        "status bar)")
        self._drawn_label = None
        self.context.report_error(info)

    def _on_file_chosen(self, i: int) -> None:
        self.current_index = i
        self.refresh()

    def _on_result(self, result) -> None:
        self.result = result
        res = self.current_result()
        self._drawn_label = res.label if res is not None else None
        self._draw()
        self.plot_stack.setCurrentWidget(self.pw)

    def _draw(self) -> None:
        self.plot.clear()
        self.legend.clear()
        r = self.result
        if r is None:
            return
        norm = self.norm_combo.currentData()
        prof = apply_normalization(r.q, r.profiles, norm)
        n = prof.shape[0]
        cmap = pg.colormap.get("CET-D1")
        for s in range(n):
            col = cmap.map(s / max(1, n - 1), mode="qcolor")
            # width 1: Qt strokes a wider antialiased pen along these noisy curves
            # ~25x slower (400 ms per paint of 12 x 270 points; issue 33)
            self.plot.addItem(pg.PlotDataItem(r.q, prof[s], pen=pg.mkPen(col, width=1),
                                              name=f"segment {s + 1}", connect="finite"))
        if r.mean_profile is not None:
            self.plot.addItem(pg.PlotDataItem(
                r.q, apply_normalization(r.q, r.mean_profile, norm), connect="finite",
                pen=pg.mkPen("k", width=2, style=Qt.PenStyle.DashLine),
                name="time mean (SAXS-1D)"))
        self.plot.setLabel("bottom", "q (\u00c5\u207b\u00b9)")
        self.plot.setLabel("left", stability_axis_label(r, norm))
        res = self.current_result()
        colour = "#c0392b" if r.flagged else "#1e8449"
        self.metric_label.setText(stability_summary(r, res.label if res else ""))
        self.metric_label.setToolTip(stability_tooltip(r))
        self.metric_label.setStyleSheet(f"color: {colour};")
        self.scale_label.setText(stability_scale_note(r) or " ")
        self._apply_axes()
        self.sigUpdated.emit()

    def _apply_axes(self) -> None:
        self.plot.setLogMode(x=self.logx.isChecked(), y=self.logy.isChecked())

    def clear_plots(self) -> None:
        self.result = None
        self._drawn_label = None
        self.plot.clear()
        self.legend.clear()
        self.metric_label.setText(" ")
        self.scale_label.setText(" ")
        self._show_text(" ")

    def figure_options(self) -> dict:
        return {"file_index": self.current_index, "log_x": self.logx.isChecked(),
                "log_y": self.logy.isChecked(), "threshold": self.threshold.value() / 100.0}

    def data_columns(self):
        r = self.result
        if r is None:
            return None
        cols = {"q (1/A)": r.q}
        for s in range(r.profiles.shape[0]):
            cols[f"I_segment_{s + 1}"] = r.profiles[s]
        if r.mean_profile is not None:
            cols["I_time_mean"] = r.mean_profile
        cols["rel_change"] = r.rel_change
        drifts = ", ".join(f"q {a:.4g}-{b:.4g}: {100 * d:+.2f}+-{100 * e:.2f} %"
                           for (a, b), d, e in zip(r.q_groups, r.drift, r.drift_err,
                                                   strict=True))
        return cols, [stability_summary(r, self.current_result().label),
                      f"segments divided by {r.scale:.6g} (onto the SAXS-1D scale)",
                      f"drift per q group: {drifts}",
                      "rel_change: each segment against the first, in the group shown"]

    def get_settings(self) -> dict:
        return {"logx": self.logx.isChecked(), "logy": self.logy.isChecked(),
                "norm": self.norm_combo.currentData(), "threshold": self.threshold.value()}

    def set_settings(self, s: dict) -> None:
        for key, w in (("logx", self.logx), ("logy", self.logy)):
            if isinstance(s.get(key), bool):
                w.setChecked(s[key])
        if s.get("norm") in NORMALIZATIONS:
            self.norm_combo.setCurrentIndex(list(NORMALIZATIONS).index(s["norm"]))
        v = s.get("threshold")
        if isinstance(v, (int, float)) and math.isfinite(v):
            self.threshold.setValue(float(v))


