"""Diffusion tab: tau or Gamma vs q from the g2 fits, the diffusion verdict, D, radius.

The points come from ``context.shared["g2_fits"]`` (published by the g2 tab); only
converged fits enter (the others are counted). Per file the power law tau = A q^b is
fitted with b free first; D is reported only when the verdict is ``diffusive`` (>= 3
good bins, b consistent with -2: :func:`xpcsviewer.fitting.diffusion_verdict`), the
optional joint model (D and alpha fitted to the converged curves directly) likewise,
and the Stokes-Einstein radius only with a stated solvent: the file's own
``/entry/sample`` temperature and viscosity, water at a chosen temperature, or a
viscosity the user gives. All fitting runs in a worker.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTableWidget,
    QVBoxLayout,
)

from xpcsviewer.fitting.block_fits import fit_curves
from xpcsviewer.fitting.blocks import g2_blocks
from xpcsviewer.fitting.fit_table import G2Fits
from xpcsviewer.fitting.spec import FitSpec
from xpcsviewer.gui.panels._diffusion_jobs import DiffusionFile, diffusion_job
from xpcsviewer.gui.panels._diffusion_table import fill_results_table
from xpcsviewer.gui.panels.base import BasePanel, apply_settings
from xpcsviewer.gui.widgets import (
    curve_color,
    curve_pen,
    log_friendly_plot_widget,
    plain_axes,
    side_legend,
)

__all__ = ["DiffusionFile", "DiffusionPanel", "diffusion_job"]

_SYMBOLS = ["o", "s", "t", "d", "+", "x", "star", "p", "h", "t1", "t2", "t3"]
SOLVENTS = [
    ("file", "solvent from the file"),
    ("water", "water at T"),
    ("given", "given \u03b7"),
]


class DiffusionPanel(BasePanel):
    """tau(q) or Gamma(q) of every fitted file with power law, joint D and radius."""

    name = "diffusion"
    title = "Diffusion"
    figure_kind = "diffusion"

    sigComputed = Signal()
    """New diffusion results are shown: ()."""

    def __init__(self, context, parent=None) -> None:
        super().__init__(context, parent)
        self.fits: G2Fits | None = context.shared.get("g2_fits")
        self.files: list[DiffusionFile] = []
        lay = QVBoxLayout(self)
        grid = QVBoxLayout()
        self.quantity = QComboBox()
        self.quantity.setToolTip("Plot the relaxation time \u03c4 or the rate \u0393 = "
                                 "1/\u03c4 against q")
        self.quantity.addItem("\u03c4 vs q", "tau")
        self.quantity.addItem("\u0393 = 1/\u03c4 vs q", "gamma")
        self.logx = QCheckBox("log q", checked=True)
        self.logx.setToolTip("Logarithmic q axis (default on)")
        self.logy = QCheckBox("log y", checked=True)
        self.logy.setToolTip("Logarithmic \u03c4 or \u0393 axis (default on)")
        self.q_check = QCheckBox("q range")
        self.q_check.setToolTip("Fit the power law only to q inside the range on the right "
                                "(\u00c5\u207b\u00b9)")
        self.qmin = QDoubleSpinBox(decimals=5, minimum=0, maximum=10, singleStep=0.0005)
        self.qmin.setToolTip("Smallest q of the power-law fit (\u00c5\u207b\u00b9), with q "
                             "range checked")
        self.qmax = QDoubleSpinBox(
            decimals=5, minimum=0, maximum=10, singleStep=0.0005, value=1.0
        )
        self.qmax.setToolTip("Largest q of the power-law fit (\u00c5\u207b\u00b9), with q "
                             "range checked")
        for w in (self.qmin, self.qmax):
            w.setSuffix(" \u00c5\u207b\u00b9")
        self.fit_exp = QCheckBox("fit exponent b", checked=True)
        self.fit_exp.setToolTip(
            "Checked: draw the power law with b fitted. Unchecked: draw it with b fixed "
            "at the value given. D is reported only when b is consistent with -2 either way."
        )
        self.exp_value = QDoubleSpinBox(
            decimals=2, minimum=-6, maximum=0, singleStep=0.1, value=-2.0
        )
        self.exp_value.setToolTip("Fixed exponent b of \u03c4 \u221d q^b when fit exponent b "
                                  "is off (default \u22122: diffusion)")
        self.joint = QCheckBox("joint model", checked=True)
        self.joint.setToolTip(
            "Also fit D (and alpha) directly to all g2 curves of each file"
        )
        self.offset = QDoubleSpinBox(decimals=1, minimum=-2, maximum=2, singleStep=0.2)
        self.offset.setToolTip("Per-file vertical offset: factor 10^(offset\u00b7n)")
        self.temperature = QDoubleSpinBox(
            decimals=2, minimum=250.1, maximum=399.9, value=298.15
        )
        self.temperature.setToolTip("Sample temperature for Stokes-Einstein (K; default 298.15)")
        self.temperature.setSuffix(" K")
        self.solvent = QComboBox()
        for k, text in SOLVENTS:
            self.solvent.addItem(text, k)
        self.solvent.setToolTip(
            "Stokes-Einstein needs the solvent: the file's /entry/sample temperature and "
            "viscosity, water at T (Vogel equation), or a viscosity you give. No solvent "
            "is ever assumed."
        )
        self.viscosity = QDoubleSpinBox(
            decimals=4, minimum=1e-3, maximum=1e6, value=0.8900
        )
        self.viscosity.setToolTip("Solvent viscosity for Stokes-Einstein (mPa\u00b7s; water at "
                                  "25 \u00b0C: 0.89)")
        self.viscosity.setSuffix(" mPa\u00b7s")
        self.viscosity.setEnabled(False)
        self.temperature.setEnabled(False)
        self.fit_now = QPushButton("Fit g2 now")
        self.fit_now.setToolTip(
            "Fit every bin of the targets by least squares with the automatic model choice "
            "(as the g2 tab's Fit); the g2 tab shows the same fit"
        )
        # rows of their own (not one grid): a wide widget in one row must not widen a
        # column of the other, so the tab fits a 1280-px window
        rows = (
            [self.quantity, self.logx, self.logy, self.q_check, self.qmin, self.qmax],
            [self.fit_exp, self.exp_value, self.joint, QLabel("offset"), self.offset],
            [self.solvent, QLabel("T"), self.temperature, QLabel("\u03b7"), self.viscosity,
             self.fit_now],
        )
        for row in rows:
            line = QHBoxLayout()
            for w in row:
                line.addWidget(w)
            line.addStretch(1)
            grid.addLayout(line)
        lay.addLayout(grid)
        self.status = QLabel("no g2 fits yet: fit in the g2 tab")
        # one line, clipped, not word-wrapped: a wrapped label makes the scroll area size
        # the whole tab by preferred heights (height-for-width), pushing the table off-screen
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        lay.addWidget(self.status)
        split = QSplitter(Qt.Orientation.Vertical)
        self.pw = log_friendly_plot_widget()  # minor log ticks not all labelled
        self.plot = plain_axes(self.pw.getPlotItem())  # no 'x0.001' axis scaling
        self.plot.showGrid(x=True, y=True, alpha=0.3)
        self.legend = side_legend(self.plot)
        self.pw.setMinimumHeight(220)
        for ax in ("bottom", "left"):
            # Plain units: an SI prefix would turn "(s)" into "(s) (x0.001)".
            self.plot.getAxis(ax).enableAutoSIPrefix(False)
        split.addWidget(self.pw)
        self.table = QTableWidget(0, 0)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setMinimumHeight(150)  # a few rows stay visible on a 760-px screen
        split.addWidget(self.table)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setChildrenCollapsible(False)
        split.setSizes([520, 160])
        lay.addWidget(split, 1)

        self.context.sigSharedChanged.connect(self._on_shared)
        self.quantity.currentIndexChanged.connect(lambda _i: self.refresh())
        for w in (self.q_check, self.fit_exp, self.joint):
            w.toggled.connect(lambda _b: self.refresh())
        self.solvent.currentIndexChanged.connect(self._on_solvent)
        for w in (
            self.qmin,
            self.qmax,
            self.exp_value,
            self.temperature,
            self.viscosity,
        ):
            w.editingFinished.connect(self.refresh)
        self.offset.valueChanged.connect(lambda _v: self._draw())
        self.logx.toggled.connect(lambda _b: self._draw())
        self.logy.toggled.connect(lambda _b: self._draw())
        self.fit_now.clicked.connect(self.fit_g2_now)

    # ------------------------------------------------------------- inputs
    def applies_to(self, results: list) -> str | None:
        if not results:
            return "Select one or more result files first"
        if not any(getattr(r, "multitau", None) is not None for r in results):
            return "No multitau (g2) analysis in the selected files"
        return None

    def _on_shared(self, key: str) -> None:
        if key != "g2_fits":
            return
        self.fits = self.context.shared.get("g2_fits")
        if self.isVisible():
            self.refresh()
        else:
            self._dirty = True

    def _on_solvent(self, _i: int = 0) -> None:
        src = self.solvent.currentData()
        self.temperature.setEnabled(src in ("water", "given"))
        self.viscosity.setEnabled(src == "given")
        self.refresh()

    def options(self) -> dict:
        """Fit options (GUI-thread snapshot) for :func:`diffusion_job`."""
        use_q = self.q_check.isChecked()
        return {
            "quantity": self.quantity.currentData(),
            "qmin": self.qmin.value() if use_q else None,
            "qmax": self.qmax.value() if use_q else None,
            "exponent": None if self.fit_exp.isChecked() else self.exp_value.value(),
            "joint": self.joint.isChecked(),
            "solvent": self.solvent.currentData(),
            "temperature_K": self.temperature.value(),
            "viscosity_Pa_s": self.viscosity.value() * 1e-3,
        }

    def _target_fits(self) -> G2Fits | None:
        """The rows of the shared fits that belong to the targets (by file path; by
        label for fits that carry no paths), or None."""
        fits = self.fits
        if fits is None:
            return None
        if fits.curve_keys is None:
            labels = {r.label for r in self.results}
            rows = [i for i, lab in enumerate(fits.file_labels) if lab in labels]
        else:
            paths = {str(r.path) for r in self.results}
            rows = [i for i, src in enumerate(fits.sources) if src in paths]
        if not rows:
            return None
        return fits if len(rows) == fits.n_curves else fits.take(np.asarray(rows))

    def refresh(self) -> None:
        if self.solvent.currentData() == "water":
            from xpcsviewer.fitting import water_viscosity

            try:
                self.viscosity.setValue(water_viscosity(self.temperature.value()) * 1e3)
            except ValueError:
                pass
        fits = self._target_fits()
        if fits is None:
            self.files = []
            self._draw()
            self.status.setText(
                "no g2 fits for these files yet: fit in the g2 tab, or "
                "press \u201cFit g2 now\u201d"
            )
            return
        self.submit(
            "fit",
            diffusion_job,
            fits,
            list(self.results),
            self.options(),
            on_result=self._on_files,
            description="Diffusion fits",
        )

    def fit_g2_now(self) -> int | None:
        """Least-squares fit of every bin of the targets with the g2 tab's default
        (automatic) model choice (worker); the g2 tab shows the same fit."""
        if not self.results:
            return None

        def job(results, progress=None, cancel=None):
            return fit_curves(g2_blocks(results), FitSpec("auto"), progress=progress,
                              cancel=cancel)

        return self.submit(
            "g2fit",
            job,
            list(self.results),
            on_result=lambda f: self.context.set_shared("g2_fits", f),
            description="Diffusion: fitting g2",
        )

    def _on_files(self, files: list[DiffusionFile]) -> None:
        self.files = list(files)
        self._draw()
        self._fill_table()
        dropped = sum(f.points.n_dropped for f in self.files)
        n = sum(f.points.q.size for f in self.files)
        fits = self.fits
        n_diff = sum(1 for f in self.files if f.verdict is not None and f.verdict.diffusive)
        self.status.setText(
            f"{fits.method} {fits.model} fits: {n} converged bin(s) from {len(self.files)} "
            f"file(s), {dropped} other bin(s) left out; {n_diff} file(s) diffusive"
            + ("; at each bin's effective q (q_eff, from its pixels)"
               if any(f.points.q_centre is not None for f in self.files) else "")
        )
        # the whole definition, and where a file fell back to its bin centres
        self.status.setToolTip("\n".join(f"{f.label}: {f.points.q_note}"
                                          for f in self.files if f.points.q_note))
        self.sigComputed.emit()

    # --------------------------------------------------------------- draw
    def _draw(self) -> None:
        self.plot.clear()
        self.legend.clear()
        quantity = self.quantity.currentData()
        off = self.offset.value()
        for n, f in enumerate(self.files):
            p = f.points
            factor = 10.0 ** (off * n)
            color = curve_color(f.file_index)
            name = p.label + (f" ({p.n_dropped} not converged)" if p.n_dropped else "")
            self.plot.addItem(
                pg.PlotDataItem(
                    p.q,
                    p.y * factor,
                    pen=None,
                    symbol=_SYMBOLS[n % 12],
                    symbolSize=8,
                    symbolPen=pg.mkPen(color, width=1.3),
                    symbolBrush=None,
                    name=name,
                )
            )
            if p.q.size:
                x = np.log10(p.q) if self.logx.isChecked() else p.q
                y = p.y * factor
                if self.logy.isChecked():
                    # ErrorBarItem ignores log mode: asymmetric bars in log10 units.
                    lo = np.log10(np.clip(y - p.y_err * factor, y * 1e-3, None))
                    hi = np.log10(y + p.y_err * factor)
                    yl = np.log10(y)
                    self.plot.addItem(
                        pg.ErrorBarItem(
                            x=x,
                            y=yl,
                            top=hi - yl,
                            bottom=yl - lo,
                            beam=0,
                            pen=pg.mkPen(color, width=0.8),
                        )
                    )
                else:
                    self.plot.addItem(
                        pg.ErrorBarItem(
                            x=x,
                            y=y,
                            height=2 * p.y_err * factor,
                            beam=0,
                            pen=pg.mkPen(color, width=0.8),
                        )
                    )
            pw = f.power
            if pw is not None and math.isfinite(pw.prefactor) and p.q.size >= 2:
                sel = p.q[pw.used] if pw.used.any() else p.q
                grid = np.geomspace(sel.min() / 1.1, sel.max() * 1.1, 128)
                yfit = pw.curve(grid)
                if quantity == "gamma":
                    yfit = 1.0 / yfit
                self.plot.addItem(
                    pg.PlotDataItem(
                        grid,
                        yfit * factor,
                        pen=curve_pen(f.file_index, 1.5),
                        name=(f"b = {pw.exponent:g} (fixed)" if pw.exponent_fixed
                              else f"b = {pw.exponent:.2f} \u00b1 {pw.exponent_err:.2f}"),
                    )
                )
            if f.joint is not None and math.isfinite(f.joint.D) and p.q.size >= 2:
                grid = np.geomspace(p.q.min() / 1.1, p.q.max() * 1.1, 128)
                yj = f.joint.tau(grid)
                if quantity == "gamma":
                    yj = 1.0 / yj
                self.plot.addItem(
                    pg.PlotDataItem(
                        grid,
                        yj * factor,
                        pen=curve_pen(f.file_index, 1.0, style=Qt.PenStyle.DashLine),
                        name="joint",
                    )
                )
        self.plot.setLogMode(x=self.logx.isChecked(), y=self.logy.isChecked())
        eff = any(f.points.q_centre is not None for f in self.files)
        # issue 48: the points sit at each bin's effective q where the file gives it
        self.plot.setLabel("bottom", "q_eff (\u00c5\u207b\u00b9)" if eff
                           else "q (\u00c5\u207b\u00b9)")
        self.plot.setLabel(
            "left", "\u03c4 (s)" if quantity == "tau" else "\u0393 (s\u207b\u00b9)"
        )
        self._frame_empty()
        self.sigUpdated.emit()

    def empty_q_span(self) -> tuple[float, float] | None:
        """The targets' dynamic q span, what an empty plot frames (None: no targets)."""
        qs = [np.asarray(r.qmap.dynamic_q, float) for r in self.results
              if getattr(r, "qmap", None) is not None]
        qs = [q[np.isfinite(q) & (q > 0)] for q in qs]
        qs = [q for q in qs if q.size]
        if not qs:
            return None
        return float(min(q.min() for q in qs)), float(max(q.max() for q in qs))

    def _frame_empty(self) -> None:
        # An empty plot showed pyqtgraph's default 1-10 (q of "2 ... 9 1/A"): frame the
        # targets' q span instead, with no tau values to read (issue 33)
        has = any(f.points.q.size for f in self.files)
        left = self.plot.getAxis("left")
        left.setStyle(showValues=has)
        if has:
            return
        span = self.empty_q_span()
        if span is not None:
            lo, hi = span
            log = self.logx.isChecked()
            self.plot.setXRange(np.log10(lo) if log else lo, np.log10(hi) if log else hi,
                                padding=0.05)

    def _fill_table(self) -> None:
        fill_results_table(self.table, self.files)

    def clear_plots(self) -> None:
        self.files = []
        self.plot.clear()
        self.legend.clear()
        self.table.setRowCount(0)
        self._frame_empty()

    def readout(self) -> dict[str, dict[str, float]]:
        """Per file label: verdict, D, D_err (A^2/s; NaN unless diffusive), exponent,
        R, R_err (nm), joint D (tests and scripts)."""
        out = {}
        for f in self.files:
            fr = f.verdict.free if f.verdict is not None else None
            out[f.label] = {
                "verdict": f.verdict.verdict if f.verdict is not None else "",
                "D": f.D,
                "D_err": f.D_err,
                "exponent": fr.exponent if fr is not None else math.nan,
                "exponent_err": fr.exponent_err if fr is not None else math.nan,
                "R_nm": f.radius[0],
                "R_err_nm": f.radius[1],
                "radius_source": f.radius_source,
                "joint_D": f.joint.D if f.joint is not None else math.nan,
                "joint_D_err": f.joint.D_err if f.joint is not None else math.nan,
            }
        return out

    # ------------------------------------------------------------- export
    def figure_options(self) -> dict:
        from xpcsviewer.views.diffusion import diffusion_analysis

        o = self.options()
        return {
            "analysis": diffusion_analysis(self._target_fits(), o["quantity"], o["qmin"],
                                           o["qmax"], o["exponent"]),
            "log_x": self.logx.isChecked(),
            "log_y": self.logy.isChecked(),
            "offset": self.offset.value(),
        }

    def data_columns(self):
        if not self.files:
            return None
        q = self.quantity.currentData()
        unit = "s" if q == "tau" else "1/s"
        cols: dict[str, Any] = {}
        for f in self.files:
            p = f.points
            # q_invA stays the bin centre; q_eff_invA is the q D was fitted at (issue 48)
            cols[f"{f.label}:q_invA"] = p.q if p.q_centre is None else p.q_centre
            cols[f"{f.label}:{q}_{unit}"] = p.y
            cols[f"{f.label}:{q}_err_{unit}"] = p.y_err
            cols[f"{f.label}:q_eff_invA"] = p.q
        header = [
            f"{q} vs q from the converged {self.fits.method} {self.fits.model} g2 fits"
        ]
        for f in self.files:
            v = f.verdict
            if v is None:
                continue
            line = f"{f.label}: {v.verdict}: {v.message}"
            if math.isfinite(f.radius[0]):
                line += (f"; R = {f.radius[0]:.4g} \u00b1 {f.radius[1]:.3g} nm "
                         f"({f.radius_source})")
            header.append(line)
            if f.points.q_note:
                header.append(f"{f.label}: {f.points.q_note}")
        return cols, header

    # ----------------------------------------------------------- settings
    def get_settings(self) -> dict:
        return {
            "quantity": self.quantity.currentData(),
            "log_q": self.logx.isChecked(),
            "log_y": self.logy.isChecked(),
            "q_range": self.q_check.isChecked(),
            "qmin": self.qmin.value(),
            "qmax": self.qmax.value(),
            "fit_exponent": self.fit_exp.isChecked(),
            "exponent": self.exp_value.value(),
            "joint": self.joint.isChecked(),
            "offset": self.offset.value(),
            "temperature_K": self.temperature.value(),
            "solvent": self.solvent.currentData(),
            "viscosity_mPa_s": self.viscosity.value(),
        }

    def set_settings(self, s: dict) -> None:
        apply_settings(
            s,
            combos=(("quantity", self.quantity), ("solvent", self.solvent)),
            checks=(
                ("log_q", self.logx),
                ("log_y", self.logy),
                ("q_range", self.q_check),
                ("fit_exponent", self.fit_exp),
                ("joint", self.joint),
            ),
            spins=(
                ("qmin", self.qmin),
                ("qmax", self.qmax),
                ("exponent", self.exp_value),
                ("offset", self.offset),
                ("temperature_K", self.temperature),
                ("viscosity_mPa_s", self.viscosity),
            ),
        )
