"""SAXS-1D: I(q) of every target file, with phi lines, normalisations and background."""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
)

from xpcsviewer.gui.export_folder import ask_save_path
from xpcsviewer.gui.panels._sector_rois import SectorRoiCurves
from xpcsviewer.gui.panels.base import BasePanel
from xpcsviewer.gui.widgets import (
    curve_color,
    curve_pen,
    log_friendly_plot_widget,
    plain_axes,
)
from xpcsviewer.views.saxs import NORMALIZATIONS, normalization_label, saxs1d_curves

__all__ = ["Saxs1DPanel", "prepare_saxs1d"]

_NORM_TEXT = {"none": "I", "iq2": "I\u00b7q\u00b2", "iq4": "I\u00b7q\u2074",
              "i0": "I / I(q\u2080)"}


def prepare_saxs1d(results, options: dict, background_path: str | None = None, loader=None,
                   progress=None, cancel=None):
    """Worker job: curves for the SAXS-1D plot (see ``saxs1d_curves``)."""
    bkg = None
    if background_path:
        bkg = loader(background_path)
    if cancel is not None:
        cancel.raise_if_cancelled()
    return saxs1d_curves(results, background=bkg, **options), bkg


class Saxs1DPanel(BasePanel):
    """I(q) of all targets; log/lin axes, normalisation, q range, background, legend."""

    name = "saxs1d"
    title = "SAXS-1D"
    figure_kind = "saxs1d"

    def __init__(self, context, parent=None) -> None:
        super().__init__(context, parent)
        self.curves = []
        self.background = None  # the loaded background XpcsResult, if any
        lay = QVBoxLayout(self)
        grid = QGridLayout()
        self.logx = QCheckBox("log q", checked=True)
        self.logx.setToolTip("Logarithmic q axis (default on)")
        self.logy = QCheckBox("log I", checked=True)
        self.logy.setToolTip("Logarithmic intensity axis (default on)")
        self.norm_combo = QComboBox(toolTip="Normalisation; I/I(q\u2080) divides by I at the "
                                            "first q of each curve")
        for k in NORMALIZATIONS:
            self.norm_combo.addItem(_NORM_TEXT[k], k)
        self.phi_check = QCheckBox("phi lines", toolTip="Also draw each phi sector")
        self.qrange_check = QCheckBox("q range")
        self.qrange_check.setToolTip("Draw only q inside the range on the right "
                                     "(\u00c5\u207b\u00b9); off: the whole profile")
        self.qmin = QDoubleSpinBox(decimals=5, minimum=0, maximum=100, singleStep=0.001)
        self.qmin.setToolTip("Smallest q drawn (\u00c5\u207b\u00b9), with q range checked")
        self.qmax = QDoubleSpinBox(decimals=5, minimum=0, maximum=100, singleStep=0.001,
                                   value=1.0)
        self.qmax.setToolTip("Largest q drawn (\u00c5\u207b\u00b9), with q range checked")
        self.qmin.setSuffix(" \u00c5\u207b\u00b9")
        self.qmax.setSuffix(" \u00c5\u207b\u00b9")
        self.sampling = QSpinBox(minimum=1, maximum=100, value=1, toolTip="Every k-th q point")
        self.marker = QSpinBox(minimum=0, maximum=20, value=4, toolTip="Marker size (0: none)")
        self.legend_check = QCheckBox("legend", checked=True)
        self.legend_check.setToolTip("Show the legend of file names")
        self.bkg_check = QCheckBox("subtract background", toolTip="I \u2212 w\u00b7I_bkg")
        self.bkg_edit = QLineEdit(placeholderText="background result file")
        self.bkg_edit.setToolTip("Result file whose I(q) is subtracted (weight w), with "
                                 "subtract background checked")
        self.bkg_browse = QToolButton(text="\u2026", toolTip="Choose the background file")
        self.bkg_browse.clicked.connect(self._on_bkg_browse)
        self.bkg_weight = QDoubleSpinBox(decimals=4, minimum=0, maximum=1e3, value=1.0,
                                         singleStep=0.01, toolTip="Background weight w")
        self.apply_btn = QPushButton("Replot")
        self.apply_btn.setToolTip("Read the profiles again with these settings (background "
                                  "file, q range)")
        self.apply_btn.clicked.connect(self.refresh)
        self.export_btn = QPushButton("Export profiles\u2026",
                                      toolTip="Write the shown curves (q, I) to CSV")
        self.export_btn.clicked.connect(self._on_export_clicked)
        for spin in (self.qmin, self.qmax):
            spin.setMaximumWidth(120)
        self.bkg_edit.setMinimumWidth(120)
        row1 = [self.logx, self.logy, QLabel("norm"), self.norm_combo, self.phi_check,
                self.legend_check, QLabel("marker"), self.marker]
        row2 = [self.qrange_check, self.qmin, self.qmax, QLabel("sampling"), self.sampling,
                QLabel("max files"), self.max_files_box()]
        row3 = [self.bkg_check, self.bkg_edit, self.bkg_browse, QLabel("w"), self.bkg_weight,
                self.apply_btn, self.export_btn]
        for r, row in enumerate((row1, row2)):
            for i, w in enumerate(row):
                grid.addWidget(w, r, i)
        grid.setColumnStretch(9, 1)
        lay.addLayout(grid)
        bkg_row = QHBoxLayout()
        for w in row3:
            bkg_row.addWidget(w, 1 if w is self.bkg_edit else 0)
        lay.addLayout(bkg_row)
        self.status = QLabel(" ")
        lay.addWidget(self.status)
        self.pw = log_friendly_plot_widget()
        self.plot = plain_axes(self.pw.getPlotItem())
        self.plot.showGrid(x=True, y=True, alpha=0.3)
        self.legend = self.plot.addLegend(offset=(-10, 10), brush=pg.mkBrush(255, 255, 255, 200))
        lay.addWidget(self.pw, 1)
        for w in (self.norm_combo, ):
            w.currentIndexChanged.connect(lambda _i: self.refresh())
        for w in (self.phi_check, self.qrange_check, self.bkg_check):
            w.toggled.connect(lambda _b: self.refresh())
        for w in (self.qmin, self.qmax, self.bkg_weight):
            w.editingFinished.connect(self.refresh)
        self.sampling.valueChanged.connect(lambda _v: self.refresh())
        self.logx.toggled.connect(lambda _b: self._apply_axes())
        self.logy.toggled.connect(lambda _b: self._apply_axes())
        self.marker.valueChanged.connect(lambda _v: self._draw())
        self.legend_check.toggled.connect(lambda on: self.legend.setVisible(on))
        self.bkg_edit.editingFinished.connect(lambda: self.bkg_check.isChecked() and self.refresh())
        self._apply_axes()
        self.roi_curves = SectorRoiCurves(self)  # SAXS-2D's wedge / ring ROIs (issue 13)

    def options(self) -> dict:
        """The curve options as passed to ``saxs1d_curves`` (GUI-thread snapshot)."""
        use_q = self.qrange_check.isChecked()
        return {"phi_lines": self.phi_check.isChecked(),
                "norm": self.norm_combo.currentData(),
                "qmin": self.qmin.value() if use_q else None,
                "qmax": self.qmax.value() if use_q else None,
                "bkg_weight": self.bkg_weight.value(),
                "sampling": self.sampling.value()}

    def refresh(self) -> None:
        if not self.results:
            return
        opts = self.options()
        if opts["qmin"] is not None and opts["qmin"] >= opts["qmax"]:
            self.context.show_status("SAXS-1D: q min must be below q max")
            return
        bkg = self.bkg_edit.text().strip() if self.bkg_check.isChecked() else None
        self.submit("curves", prepare_saxs1d, self.shown_results(), opts, bkg or None,
                    self.context.load_result, on_result=self._on_curves,
                    description="SAXS-1D")

    def _on_curves(self, out) -> None:
        curves, self.background = out
        self.curves = list(curves)
        self._draw()

    def _draw(self) -> None:
        self.plot.clear()
        self.legend.clear()
        msize = self.marker.value()
        for c in self.curves:
            i = c.index
            if c.kind == "mean":
                pen = curve_pen(i, 2.0)
                sym = "o" if msize else None
            else:
                pen = curve_pen(i, 1.0, alpha=150, style=Qt.PenStyle.DashLine)
                sym = None
            item = pg.PlotDataItem(c.x, c.y, pen=pen, name=c.label, symbol=sym,
                                   symbolSize=msize, symbolBrush=curve_color(i),
                                   symbolPen=None, connect="finite")
            self.plot.addItem(item)
        norm = self.norm_combo.currentData()
        self.plot.setLabel("bottom", "q (\u00c5\u207b\u00b9)")
        self.plot.setLabel("left", normalization_label(norm))
        self.legend.setVisible(self.legend_check.isChecked())
        n = sum(c.kind == "mean" for c in self.curves)
        self.status.setText(f"{n} file(s); {len(self.curves)} curve(s){self.shown_note()}")
        self._apply_axes()
        self.sigUpdated.emit()

    def _apply_axes(self) -> None:
        self.plot.setLogMode(x=self.logx.isChecked(), y=self.logy.isChecked())

    def clear_plots(self) -> None:
        self.curves = []
        self.plot.clear()
        self.legend.clear()

    def _on_export_clicked(self) -> None:
        path = ask_save_path(self, self.context, "Export profiles", "saxs1d_profiles.csv",
                             "CSV (*.csv)")
        if path:
            self.export_data(path)

    def _on_bkg_browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Background file", "",
                                              "Result files (*.hdf *.h5 *.hdf5 *.nxs)")
        if path:
            self.bkg_edit.setText(path)
            self.bkg_check.setChecked(True)
            self.refresh()

    def figure_options(self) -> dict:
        opts = self.options()
        opts.update(log_x=self.logx.isChecked(), log_y=self.logy.isChecked(),
                    legend=self.legend_check.isChecked())
        if self.bkg_check.isChecked() and self.background is not None:
            opts["background"] = self.background
        return opts

    def data_columns(self):
        if not self.curves:
            return None
        cols = {}
        for c in self.curves:
            cols[f"q[{c.label}] (1/A)"] = c.x
            cols[f"I[{c.label}]"] = c.y
        norm = self.norm_combo.currentData()
        return cols, [f"SAXS-1D profiles, normalisation: {normalization_label(norm)}",
                      "background: "
                      f"{self.bkg_edit.text() if self.bkg_check.isChecked() else 'none'}"
                      f" weight {self.bkg_weight.value()}"]

    def get_settings(self) -> dict:
        return {"logx": self.logx.isChecked(), "logy": self.logy.isChecked(),
                "norm": self.norm_combo.currentData(), "phi_lines": self.phi_check.isChecked(),
                "use_qrange": self.qrange_check.isChecked(),
                "qmin": self.qmin.value(), "qmax": self.qmax.value(),
                "sampling": self.sampling.value(), "marker": self.marker.value(),
                "legend": self.legend_check.isChecked(),
                "background": self.bkg_edit.text(), "subtract": self.bkg_check.isChecked(),
                "weight": self.bkg_weight.value()}

    def set_settings(self, s: dict) -> None:
        def num(k):
            v = s.get(k)
            return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None

        for key, w in (("logx", self.logx), ("logy", self.logy), ("phi_lines", self.phi_check),
                       ("use_qrange", self.qrange_check), ("legend", self.legend_check),
                       ("subtract", self.bkg_check)):
            if isinstance(s.get(key), bool):
                w.setChecked(s[key])
        if s.get("norm") in NORMALIZATIONS:
            self.norm_combo.setCurrentIndex(list(NORMALIZATIONS).index(s["norm"]))
        for key, w in (("qmin", self.qmin), ("qmax", self.qmax), ("weight", self.bkg_weight)):
            v = num(key)
            if v is not None:
                w.setValue(v)
        for key, w in (("sampling", self.sampling), ("marker", self.marker)):
            v = num(key)
            if v is not None:
                w.setValue(int(v))
        if isinstance(s.get("background"), str):
            self.bkg_edit.setText(s["background"])


