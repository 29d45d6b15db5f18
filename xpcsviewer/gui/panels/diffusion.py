"""Diffusion tab: tau or Gamma vs q from the g2 fits, power law, joint D, radius.

The points come from ``context.shared["g2_fits"]`` (published by the g2 tab); fits that
did not converge are dropped and counted. Per file: a weighted power-law fit
tau = A q^b (b fitted, or fixed at -2 for Brownian motion: D = 1/A), optionally the
joint model (D and alpha fitted directly to all g2 curves of the file), and the
Stokes-Einstein hydrodynamic radius for the given temperature and viscosity. All
fitting runs in a worker.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from xpcsviewer.export import g2_data
from xpcsviewer.gui.panels.base import BasePanel, apply_settings
from xpcsviewer.gui.widgets import curve_color, curve_pen

__all__ = ["DiffusionFile", "DiffusionPanel", "diffusion_job"]

_SYMBOLS = ["o", "s", "t", "d", "+", "x", "star", "p", "h", "t1", "t2", "t3"]


@dataclass
class DiffusionFile:
    """Everything the tab shows for one file."""

    file_index: int
    label: str
    points: g2_data.DiffusionPoints
    power: Any  # DiffusionResult or None
    joint: Any  # JointDiffusionResult or None
    radius: tuple[float, float]  # nm
    radius_source: str


def diffusion_job(
    fits: g2_data.G2Fits, results: list, opts: dict, progress=None, cancel=None
):
    """Worker job: points, power laws, joint fits and radii per file.

    ``opts``: quantity, qmin, qmax, exponent (None = fitted), joint (bool),
    temperature_K, viscosity_Pa_s (None = water at T).
    """
    from xpcsviewer.fitting import (
        fit_diffusion,
        fit_diffusion_joint,
        hydrodynamic_radius,
    )
    from xpcsviewer.progress import report

    quantity = opts.get("quantity", "tau")
    qmin, qmax = opts.get("qmin"), opts.get("qmax")
    q_range = (
        None
        if qmin is None and qmax is None
        else (qmin if qmin is not None else 0.0, qmax if qmax is not None else math.inf)
    )
    exponent = opts.get("exponent")
    pts_all = g2_data.diffusion_points(fits, quantity)
    by_label = {r.label: r for r in results}
    out = []
    for k, pts in enumerate(pts_all):
        report(progress, cancel, k, len(pts_all), f"diffusion fit {pts.label}")
        # The power law is always fitted to tau (s), whatever is shown.
        tau = pts.y if quantity == "tau" else 1.0 / pts.y
        tau_err = pts.y_err if quantity == "tau" else pts.y_err * tau**2
        power = (
            fit_diffusion(pts.q, tau, tau_err, q_range, exponent)
            if pts.q.size >= 2
            else None
        )
        joint = None
        # The fits may come from another target list: find the file by its label.
        res = by_label.get(pts.label)
        if opts.get("joint") and res is not None:
            blocks = g2_data.g2_blocks([res], qmin, qmax)
            if blocks:
                b = blocks[0]
                alpha = None if exponent is None else -float(exponent)
                joint = fit_diffusion_joint(
                    b.q,
                    b.tau,
                    b.g2.T,
                    b.g2_err.T,
                    b.valid.T,
                    q_range=q_range,
                    t_range=fits.t_range,
                    alpha=alpha,
                )
        d, de, src = math.nan, math.nan, ""
        if power is not None and math.isfinite(power.D):
            d, de, src = power.D, power.D_err, "power law"
        elif (
            joint is not None
            and math.isfinite(joint.D)
            and abs(joint.alpha - 2.0) < 1e-9
        ):
            d, de, src = joint.D, joint.D_err, "joint"
        radius = (math.nan, math.nan)
        if math.isfinite(d) and d > 0:
            radius = hydrodynamic_radius(
                d,
                temperature_K=opts.get("temperature_K", 298.15),
                viscosity_Pa_s=opts.get("viscosity_Pa_s"),
                D_err=de if math.isfinite(de) else 0.0,
            )
        out.append(
            DiffusionFile(pts.file_index, pts.label, pts, power, joint, radius, src)
        )
    report(progress, cancel, len(pts_all), len(pts_all), "done")
    return out


def _pm(v: float, e: float, fmt: str = ".4g") -> str:
    if v is None or not math.isfinite(v):
        return "\u2014"
    if e is not None and math.isfinite(e) and e > 0:
        return f"{v:{fmt}} \u00b1 {e:.2g}"
    return f"{v:{fmt}}"


class DiffusionPanel(BasePanel):
    """tau(q) or Gamma(q) of every fitted file with power law, joint D and radius."""

    name = "diffusion"
    title = "Diffusion"
    figure_kind = "diffusion"

    sigComputed = Signal()
    """New diffusion results are shown: ()."""

    def __init__(self, context, parent=None) -> None:
        super().__init__(context, parent)
        self.fits: g2_data.G2Fits | None = context.shared.get("g2_fits")
        self.files: list[DiffusionFile] = []
        lay = QVBoxLayout(self)
        grid = QGridLayout()
        self.quantity = QComboBox()
        self.quantity.addItem("\u03c4 vs q", "tau")
        self.quantity.addItem("\u0393 = 1/\u03c4 vs q", "gamma")
        self.logx = QCheckBox("log q", checked=True)
        self.logy = QCheckBox("log y", checked=True)
        self.q_check = QCheckBox("q range")
        self.qmin = QDoubleSpinBox(decimals=5, minimum=0, maximum=10, singleStep=0.0005)
        self.qmax = QDoubleSpinBox(
            decimals=5, minimum=0, maximum=10, singleStep=0.0005, value=1.0
        )
        for w in (self.qmin, self.qmax):
            w.setSuffix(" \u00c5\u207b\u00b9")
        self.fit_exp = QCheckBox("fit exponent b")
        self.fit_exp.setToolTip(
            "Unchecked: b fixed at the value given (-2: Brownian, D = 1/A)"
        )
        self.exp_value = QDoubleSpinBox(
            decimals=2, minimum=-6, maximum=0, singleStep=0.1, value=-2.0
        )
        self.joint = QCheckBox("joint model", checked=True)
        self.joint.setToolTip(
            "Also fit D (and alpha) directly to all g2 curves of each file"
        )
        self.offset = QDoubleSpinBox(decimals=1, minimum=-2, maximum=2, singleStep=0.2)
        self.offset.setToolTip("Per-file vertical offset: factor 10^(offset\u00b7n)")
        self.temperature = QDoubleSpinBox(
            decimals=2, minimum=250.1, maximum=399.9, value=298.15
        )
        self.temperature.setSuffix(" K")
        self.water = QCheckBox("water", checked=True)
        self.water.setToolTip("Viscosity of water at the temperature (Vogel equation)")
        self.viscosity = QDoubleSpinBox(
            decimals=4, minimum=1e-3, maximum=1e6, value=0.8900
        )
        self.viscosity.setSuffix(" mPa\u00b7s")
        self.viscosity.setEnabled(False)
        self.fit_now = QPushButton("Fit g2 now")
        self.fit_now.setToolTip(
            "No fits yet: fit every bin of the targets (single exponential)"
        )
        widgets0 = [
            self.quantity,
            self.logx,
            self.logy,
            self.q_check,
            self.qmin,
            self.qmax,
            self.fit_exp,
            self.exp_value,
            self.joint,
        ]
        widgets1 = [
            QLabel("offset"),
            self.offset,
            QLabel("T"),
            self.temperature,
            self.water,
            QLabel("\u03b7"),
            self.viscosity,
            self.fit_now,
        ]
        for i, w in enumerate(widgets0):
            grid.addWidget(w, 0, i)
        for i, w in enumerate(widgets1):
            grid.addWidget(w, 1, i)
        lay.addLayout(grid)
        self.status = QLabel("no g2 fits yet: fit in the g2 tab")
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        split = QSplitter(Qt.Orientation.Vertical)
        self.pw = pg.PlotWidget()
        self.plot = self.pw.getPlotItem()
        self.plot.showGrid(x=True, y=True, alpha=0.3)
        self.legend = self.plot.addLegend(offset=(-10, 10))
        for ax in ("bottom", "left"):
            # Plain units: an SI prefix would turn "(s)" into "(s) (x0.001)".
            self.plot.getAxis(ax).enableAutoSIPrefix(False)
        split.addWidget(self.pw)
        self.table = QTableWidget(0, 0)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        split.addWidget(self.table)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        split.setSizes([520, 160])
        lay.addWidget(split, 1)

        self.context.sigSharedChanged.connect(self._on_shared)
        self.quantity.currentIndexChanged.connect(lambda _i: self.refresh())
        for w in (self.q_check, self.fit_exp, self.joint, self.water):
            w.toggled.connect(lambda _b: self.refresh())
        for w in (
            self.qmin,
            self.qmax,
            self.exp_value,
            self.temperature,
            self.viscosity,
        ):
            w.editingFinished.connect(self.refresh)
        self.water.toggled.connect(lambda on: self.viscosity.setEnabled(not on))
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

    def options(self) -> dict:
        """Fit options (GUI-thread snapshot) for :func:`diffusion_job`."""
        use_q = self.q_check.isChecked()
        water = self.water.isChecked()
        return {
            "quantity": self.quantity.currentData(),
            "qmin": self.qmin.value() if use_q else None,
            "qmax": self.qmax.value() if use_q else None,
            "exponent": None if self.fit_exp.isChecked() else self.exp_value.value(),
            "joint": self.joint.isChecked(),
            "temperature_K": self.temperature.value(),
            "viscosity_Pa_s": None if water else self.viscosity.value() * 1e-3,
        }

    def _fits_match_targets(self) -> bool:
        if self.fits is None:
            return False
        labels = {r.label for r in self.results}
        return bool(set(self.fits.file_labels) & labels)

    def refresh(self) -> None:
        if self.water.isChecked():
            from xpcsviewer.fitting import water_viscosity

            try:
                self.viscosity.setValue(water_viscosity(self.temperature.value()) * 1e3)
            except ValueError:
                pass
        if not self._fits_match_targets():
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
            self.fits,
            list(self.results),
            self.options(),
            on_result=self._on_files,
            description="Diffusion fits",
        )

    def fit_g2_now(self) -> int | None:
        """Least-squares single-exponential fit of every bin of the targets (worker)."""
        if not self.results:
            return None

        def job(results, progress=None, cancel=None):
            blocks = g2_data.g2_blocks(results)
            return g2_data.fit_g2_blocks(
                blocks, "single", progress=progress, cancel=cancel
            )

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
        self.status.setText(
            f"{fits.method} {fits.model} fits: {n} point(s) from {len(self.files)} file(s); "
            f"{dropped} failed fit(s) dropped"
        )
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
            name = p.label + (f" ({p.n_dropped} dropped)" if p.n_dropped else "")
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
                        name=f"b = {pw.exponent:.3f}",
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
        self.plot.setLabel("bottom", "q (\u00c5\u207b\u00b9)")
        self.plot.setLabel(
            "left", "\u03c4 (s)" if quantity == "tau" else "\u0393 (s\u207b\u00b9)"
        )
        self.sigUpdated.emit()

    def _fill_table(self) -> None:
        head = [
            "file",
            "points",
            "dropped",
            "exponent b",
            "A",
            "D (\u00c5\u00b2/s)",
            "joint D (\u00c5\u1d45/s)",
            "joint \u03b1",
            "R\u2095 (nm)",
            "status",
        ]
        t = self.table
        t.setColumnCount(len(head))
        t.setHorizontalHeaderLabels(head)
        t.setRowCount(len(self.files))
        for r, f in enumerate(self.files):
            pw, jt = f.power, f.joint
            cells = [
                f.label,
                str(f.points.q.size),
                str(f.points.n_dropped),
                _pm(pw.exponent, pw.exponent_err, ".3f") if pw else "\u2014",
                _pm(pw.prefactor, pw.prefactor_err) if pw else "\u2014",
                _pm(pw.D, pw.D_err) if pw else "\u2014",
                _pm(jt.D, jt.D_err) if jt else "\u2014",
                _pm(jt.alpha, jt.alpha_err, ".3f") if jt else "\u2014",
                _pm(*f.radius, ".4g")
                + (f" ({f.radius_source})" if f.radius_source else ""),
                (jt.status.value if jt is not None else "") or "ok",
            ]
            for c, text in enumerate(cells):
                t.setItem(r, c, QTableWidgetItem(text))
        t.horizontalHeader().setSectionResizeMode(
            QHeaderView.ResizeMode.ResizeToContents
        )

    def clear_plots(self) -> None:
        self.files = []
        self.plot.clear()
        self.legend.clear()
        self.table.setRowCount(0)

    def readout(self) -> dict[str, dict[str, float]]:
        """Per file label: D, D_err (A^2/s), R, R_err (nm), joint D (tests and scripts)."""
        out = {}
        for f in self.files:
            pw = f.power
            out[f.label] = {
                "D": pw.D if pw else math.nan,
                "D_err": pw.D_err if pw else math.nan,
                "exponent": pw.exponent if pw else math.nan,
                "R_nm": f.radius[0],
                "R_err_nm": f.radius[1],
                "joint_D": f.joint.D if f.joint is not None else math.nan,
                "joint_D_err": f.joint.D_err if f.joint is not None else math.nan,
            }
        return out

    # ------------------------------------------------------------- export
    def figure_options(self) -> dict:
        o = self.options()
        return {
            "fits": self.fits,
            "quantity": o["quantity"],
            "log_x": self.logx.isChecked(),
            "log_y": self.logy.isChecked(),
            "qmin": o["qmin"],
            "qmax": o["qmax"],
            "exponent": o["exponent"],
            "offset": self.offset.value(),
        }

    def data_columns(self):
        if not self.files:
            return None
        q = self.quantity.currentData()
        unit = "s" if q == "tau" else "1/s"
        cols: dict[str, Any] = {}
        for f in self.files:
            cols[f"{f.label}:q_invA"] = f.points.q
            cols[f"{f.label}:{q}_{unit}"] = f.points.y
            cols[f"{f.label}:{q}_err_{unit}"] = f.points.y_err
        header = [
            f"{q} vs q from {self.fits.method} {self.fits.model} g2 fits; failed fits dropped"
        ]
        for f in self.files:
            pw = f.power
            if pw is not None:
                header.append(
                    f"{f.label}: tau = A q^b, A = {pw.prefactor:.6g} +- "
                    f"{pw.prefactor_err:.3g}, b = {pw.exponent:.4f} +- "
                    f"{pw.exponent_err:.3g}, D = {pw.D:.6g} +- {pw.D_err:.3g} A^2/s, "
                    f"R = {f.radius[0]:.4g} +- {f.radius[1]:.3g} nm"
                )
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
            "water": self.water.isChecked(),
            "viscosity_mPa_s": self.viscosity.value(),
        }

    def set_settings(self, s: dict) -> None:
        apply_settings(
            s,
            combos=(("quantity", self.quantity),),
            checks=(
                ("log_q", self.logx),
                ("log_y", self.logy),
                ("q_range", self.q_check),
                ("fit_exponent", self.fit_exp),
                ("joint", self.joint),
                ("water", self.water),
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
