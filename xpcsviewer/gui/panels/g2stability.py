"""g2 stability: the cumulative partial g2 snapshots of one file and a drift number.

The correlator snapshots the cumulative g2 every N/P frames
(``normalized_g2_partial``, labelled by frames accumulated). If the dynamics are
stationary every snapshot has the same shape; a sample that ages or is damaged by
the beam shows a drifting relaxation time. The drift number is the relative
change of the fitted tau (single exponential, batched least squares) between the
first and the last snapshot, as the median over the q-bins whose fits converged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QDoubleSpinBox, QHBoxLayout, QLabel, QSpinBox, QVBoxLayout

from xpcsviewer.gui.panels.base import BasePanel
from xpcsviewer.gui.widgets import FileSelector

__all__ = ["G2StabilityPanel", "StabilityFit", "fit_partial_snapshots"]


@dataclass(frozen=True)
class StabilityFit:
    """Fits of every snapshot and q-bin of one file.

    Attributes
    ----------
    tau : (T,) s
    partial, partial_err : (P, T, Nd)
    labels : (P,) frames accumulated
    fit_tau : (P, Nd)
        Fitted relaxation time (s); NaN where the fit did not converge.
    grid : (G,) s
        Delays of the fitted curves.
    curves : (P, Nd, G)
        Fitted g2 on ``grid``; NaN where the fit did not converge.
    drift : (Nd,) float64
        ``tau_last / tau_first - 1`` per q-bin (NaN where either fit failed or
        its tau is poorly determined: relative error >= 30 % or outside the delays).
    drift_median : float
        Median of ``drift`` over the q-bins with both fits (NaN if none).
    bin_labels : list of str
    """

    tau: np.ndarray
    partial: np.ndarray
    partial_err: np.ndarray
    labels: np.ndarray
    fit_tau: np.ndarray
    grid: np.ndarray
    curves: np.ndarray
    drift: np.ndarray
    drift_median: float
    bin_labels: list


def fit_partial_snapshots(
    tau, partial, partial_err, labels, bin_labels, progress=None, cancel=None
) -> StabilityFit:
    """Worker job: single-exponential fit of every snapshot x q-bin, and the tau drift.

    Parameters
    ----------
    tau : (T,) s
    partial : (P, T, Nd) float64, NaN where missing
    partial_err : (P, T, Nd) or None
        Without errors the points are weighted equally.
    labels : (P,) frames accumulated, or None
    bin_labels : list of str
    """
    from xpcsviewer.fitting import fit_g2

    part = np.asarray(partial, dtype=np.float64)
    n_p, n_t, n_d = part.shape
    err = (
        np.ones_like(part)
        if partial_err is None
        else np.asarray(partial_err, dtype=np.float64)
    )
    valid = np.isfinite(part) & np.isfinite(err) & (err > 0) & (part != 0)
    # (P, T, Nd) -> (P * Nd, T): one batched solve for all curves
    y = part.transpose(0, 2, 1).reshape(n_p * n_d, n_t)
    e = err.transpose(0, 2, 1).reshape(n_p * n_d, n_t)
    v = valid.transpose(0, 2, 1).reshape(n_p * n_d, n_t)
    res = fit_g2(
        np.asarray(tau, dtype=np.float64),
        np.where(v, y, 0.0),
        np.where(v, e, 1.0),
        v,
        model="single",
        progress=progress,
        cancel=cancel,
    )
    ok = res.ok.reshape(n_p, n_d)

    def grid(name: str) -> np.ndarray:
        return np.where(ok, res.params[name].reshape(n_p, n_d), np.nan)

    ftau = grid("tau")
    tau = np.asarray(tau, dtype=np.float64)
    # Only well-determined taus count toward the drift: a noisy, nearly flat curve
    # can "converge" to any tau, and one such bin would dominate the ratio.
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.abs(res.errors["tau"].reshape(n_p, n_d)) / ftau
    determined = (
        np.isfinite(ftau) & np.isfinite(rel) & (rel < 0.3)
        & (ftau >= tau[0]) & (ftau <= tau[-1])
    )
    tgrid = np.geomspace(tau[0], tau[-1], 128)
    curves = res.curve(tgrid).reshape(n_p, n_d, -1)
    curves[~ok] = np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        drift = np.where(determined[-1] & determined[0], ftau[-1] / ftau[0] - 1.0, np.nan)
    finite = drift[np.isfinite(drift)]
    lab = np.arange(1, n_p + 1) if labels is None else np.asarray(labels).ravel()
    return StabilityFit(
        tau=tau,
        partial=part,
        partial_err=err,
        labels=lab,
        fit_tau=ftau,
        grid=tgrid,
        curves=curves,
        drift=drift,
        drift_median=float(np.median(finite)) if finite.size else float("nan"),
        bin_labels=list(bin_labels),
    )


class G2StabilityPanel(BasePanel):
    """Overlay of the partial g2 snapshots of one q-bin, coloured early -> late."""

    name = "g2stability"
    title = "g2 stability"
    figure_kind = None
    uses_current = True

    def __init__(self, context, parent=None) -> None:
        super().__init__(context, parent)
        self.fit: StabilityFit | None = None
        lay = QVBoxLayout(self)
        bar = QHBoxLayout()
        self.file_selector = FileSelector()
        self.file_selector.sigIndexChosen.connect(self._on_file_chosen)
        self.bin_spin = QSpinBox(
            minimum=0, maximum=0, toolTip="q-bin (g2 column, 0-based)"
        )
        self.bin_spin.valueChanged.connect(lambda _v: self._draw())
        self.threshold = QDoubleSpinBox(
            decimals=1,
            minimum=0.1,
            maximum=1000,
            value=10.0,
            suffix=" %",
            toolTip="Flag the file above this drift",
        )
        self.threshold.valueChanged.connect(lambda _v: self._draw())
        for w in (
            QLabel("File"),
            self.file_selector,
            QLabel("q-bin"),
            self.bin_spin,
            QLabel("flag drift above"),
            self.threshold,
        ):
            bar.addWidget(w)
        bar.addStretch(1)
        lay.addLayout(bar)
        self.drift_label = QLabel(" ")
        self.drift_label.setToolTip(
            "Relative change of the fitted tau (single exponential) between the "
            "first and the last partial g2 snapshot: median over the q-bins whose "
            "fits converged"
        )
        f = self.drift_label.font()
        f.setPointSizeF(f.pointSizeF() * 1.6)
        f.setBold(True)
        self.drift_label.setFont(f)
        lay.addWidget(self.drift_label)
        self.pw = pg.PlotWidget()
        self.plot = self.pw.getPlotItem()
        self.plot.setLogMode(x=True, y=False)
        self.plot.showGrid(x=True, y=True, alpha=0.3)
        self.plot.setLabel("bottom", "\u03c4 (s)")
        self.plot.setLabel("left", "g2")
        self.legend = self.plot.addLegend(offset=(-10, 10))
        lay.addWidget(self.pw, 1)
        self.context.sigSelectedBin.connect(self.select_dq_bin)

    def select_dq_bin(self, dq: int) -> None:
        """Show g2 column ``dq - 1`` (1-based dynamic bin, e.g. a q-map click)."""
        if int(dq) >= 1:
            self.bin_spin.setValue(int(dq) - 1)

    def applies_to(self, results):
        if not results:
            return "Select one or more result files first"
        if all(r.multitau is None or r.multitau.g2_partial is None for r in results):
            return (
                "No partial g2 snapshots (normalized_g2_partial) in these files; "
                "correlate with partial g2 enabled to judge stationarity"
            )
        return None

    def refresh(self) -> None:
        """Fit the snapshots of the current file (GUI thread; work in a worker)."""
        self.file_selector.set_labels(
            [r.label for r in self.results], self.current_index
        )
        res = self.current_result()
        if res is None:
            return
        mt = res.multitau
        if mt is None or mt.g2_partial is None:
            self.clear_plots()
            self.drift_label.setText(f"{res.label}: no partial g2 snapshots")
            self.drift_label.setStyleSheet("")
            return
        self.submit(
            "fit",
            fit_partial_snapshots,
            np.array(mt.tau),
            np.array(mt.g2_partial),
            None if mt.g2_partial_err is None else np.array(mt.g2_partial_err),
            None if mt.g2_partial_labels is None else np.array(mt.g2_partial_labels),
            res.qmap.dynamic_labels(),
            on_result=self._on_result,
            description=f"g2 stability {res.label}",
        )

    def _on_file_chosen(self, i: int) -> None:
        self.current_index = i
        self.refresh()

    def _on_result(self, fit: StabilityFit) -> None:
        self.fit = fit
        self.bin_spin.blockSignals(True)
        self.bin_spin.setMaximum(max(0, fit.partial.shape[2] - 1))
        self.bin_spin.blockSignals(False)
        self._draw()

    def drift_text(self) -> str:
        """The headline: drift of the fitted tau, first -> last snapshot."""
        fit = self.fit
        if fit is None:
            return ""
        j = min(self.bin_spin.value(), fit.partial.shape[2] - 1)
        n_ok = int(np.isfinite(fit.drift).sum())
        if not np.isfinite(fit.drift_median):
            return "\u03c4 drift: no converged fits of the first and last snapshot"
        sel = fit.drift[j]
        sel_txt = f"{100 * sel:+.1f} %" if np.isfinite(sel) else "no fit"
        return (
            f"\u03c4 drift first \u2192 last snapshot: {100 * fit.drift_median:+.1f} % "
            f"(median of {n_ok} q-bins); this bin {sel_txt}"
        )

    def _draw(self) -> None:
        self.plot.clear()
        self.legend.clear()
        fit = self.fit
        if fit is None:
            return
        j = min(self.bin_spin.value(), fit.partial.shape[2] - 1)
        n_p = fit.partial.shape[0]
        # blue (first snapshot) -> red (last), with no pale middle colour
        cmap = pg.ColorMap([0.0, 1.0], [(31, 119, 180), (214, 39, 40)])
        for p in range(n_p):
            col = cmap.map(p / max(1, n_p - 1), mode="qcolor")
            y = fit.partial[p, :, j]
            ok = np.isfinite(y) & (y != 0)
            self.plot.addItem(
                pg.PlotDataItem(
                    fit.tau[ok],
                    y[ok],
                    pen=None,
                    symbol="o",
                    symbolSize=5,
                    symbolBrush=col,
                    symbolPen=col,
                    name=f"frames={int(fit.labels[p])}",
                )
            )
            if np.isfinite(fit.fit_tau[p, j]):
                self.plot.addItem(
                    pg.PlotDataItem(
                        fit.grid, fit.curves[p, j], pen=pg.mkPen(col, width=1.2)
                    )
                )
        self.plot.setTitle(fit.bin_labels[j] if j < len(fit.bin_labels) else "")
        flagged = (
            np.isfinite(fit.drift_median)
            and abs(fit.drift_median) * 100 > self.threshold.value()
        )
        verdict = (
            "\u26a0 dynamics change during the measurement"
            if flagged
            else "\u2713 stationary within the threshold"
        )
        if not np.isfinite(fit.drift_median):
            verdict = ""
        self.drift_label.setText(
            f"{self.drift_text()} \u2014 {verdict}" if verdict else self.drift_text()
        )
        self.drift_label.setStyleSheet(f"color: {'#c0392b' if flagged else '#1e8449'};")
        self.sigUpdated.emit()

    def clear_plots(self) -> None:
        self.fit = None
        self.plot.clear()
        self.legend.clear()
        self.drift_label.setText(" ")

    def data_columns(self):
        fit = self.fit
        if fit is None:
            return None
        j = min(self.bin_spin.value(), fit.partial.shape[2] - 1)
        cols = {"tau_s": fit.tau}
        for p in range(fit.partial.shape[0]):
            cols[f"g2_frames_{int(fit.labels[p])}"] = fit.partial[p, :, j]
        return cols, [f"partial g2 of {fit.bin_labels[j]}", self.drift_text()]

    def get_settings(self) -> dict:
        return {
            "bin": int(self.bin_spin.value()),
            "threshold": float(self.threshold.value()),
        }

    def set_settings(self, settings: dict) -> None:
        try:
            self.threshold.setValue(float(settings.get("threshold", 10.0)))
            self.bin_spin.setValue(int(settings.get("bin", 0)))
        except (TypeError, ValueError):
            pass
