"""g2 stability: the cumulative partial g2 snapshots of one file and a drift number.

The correlator snapshots the cumulative g2 every N/P frames
(``normalized_g2_partial``, labelled by frames accumulated). If the dynamics are
stationary every snapshot has the same shape; a sample that ages or is damaged by
the beam shows a drifting relaxation time. The drift number is the relative
change of the fitted tau (single exponential, batched least squares) between the
first and the last snapshot, as the median over the q-bins whose fits are well
determined.
The fits are :func:`xpcsviewer.fitting.stability.fit_partial_snapshots`, run by
:func:`xpcsviewer.jobs.figure_inputs.stability_fit` in a worker; the ``g2stability``
publication figure is handed the tab's fit (ADR-8: it fits nothing).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QVBoxLayout,
)

from xpcsviewer.fitting.stability import (
    StabilityFit,
    drift_flagged,
    fit_partial_snapshots,
)
from xpcsviewer.fitting.stability import drift_text as _drift_text
from xpcsviewer.gui.panels.base import BasePanel, Deferred
from xpcsviewer.gui.widgets import (
    BinSpinBox,
    FileSelector,
    log_friendly_plot_widget,
    plain_axes,
    side_legend,
)
from xpcsviewer.jobs.figure_inputs import stability_fit

__all__ = ["G2StabilityPanel", "StabilityFit", "fit_partial_snapshots"]


def _has_snapshots(res) -> bool:
    mt = res.multitau
    return mt is not None and mt.g2_partial is not None


class G2StabilityPanel(BasePanel):
    """Overlay of the partial g2 snapshots of one q-bin, coloured early -> late."""

    name = "g2stability"
    title = "g2 stability"
    figure_kind = "g2stability"
    uses_current = True

    def __init__(self, context, parent=None) -> None:
        super().__init__(context, parent)
        self.fit: StabilityFit | None = None
        self._fit_of = None  # the result self.fit was fitted from
        self._chosen = False  # the file was picked in this tab's selector
        lay = QVBoxLayout(self)
        bar = QHBoxLayout()
        self.file_selector = FileSelector()
        self.file_selector.sigIndexChosen.connect(self._on_file_chosen)
        self.bin_spin = BinSpinBox()
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
        # two fixed lines, clipped: a long verdict must not widen the tab past the window
        self.drift_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        lay.addWidget(self.drift_label)
        self.pw = log_friendly_plot_widget()  # minor log ticks not all labelled
        self.plot = plain_axes(self.pw.getPlotItem())  # no 'x0.001' axis scaling
        self.plot.setLogMode(x=True, y=False)
        self.plot.showGrid(x=True, y=True, alpha=0.3)
        self.plot.setLabel("bottom", "\u03c4 (s)")
        self.plot.setLabel("left", "g2")
        self.legend = side_legend(self.plot)
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

    def set_results(self, results) -> None:
        self._chosen = False  # a choice made among other targets
        super().set_results(results)

    def set_current(self, index: int) -> None:
        self._chosen = False  # the window's current target: may move to one with snapshots
        super().set_current(index)

    def refresh(self) -> None:
        """Fit the snapshots of the current file (GUI thread; work in a worker).

        The tab opens on a file that has snapshots: when the window's current target
        has none, the next one that has them (a file chosen in the selector is shown
        as it is). Files without are marked in the selector; when none has any, the
        window disables the tab and its tooltip says so (:meth:`applies_to`).
        """
        has = [_has_snapshots(r) for r in self.results]
        if self.results:
            i = min(self.current_index, len(self.results) - 1)
            if not has[i] and not self._chosen and any(has):
                order = list(range(i, len(has))) + list(range(i))
                self.current_index = next(k for k in order if has[k])
        self.file_selector.set_labels(
            [r.label if h else f"{r.label} \u2014 no snapshots"
             for r, h in zip(self.results, has, strict=True)],
            self.current_index,
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
            stability_fit,
            res,
            on_result=lambda fit, r=res: self._on_fit(r, fit),
            description=f"g2 stability {res.label}",
        )

    def _on_fit(self, res, fit: StabilityFit) -> None:
        self._fit_of = res
        self._on_result(fit)

    def _on_file_chosen(self, i: int) -> None:
        self.current_index = i
        self._chosen = True  # shown as chosen, snapshots or not
        self.refresh()

    def _on_result(self, fit: StabilityFit) -> None:
        self.fit = fit
        self.bin_spin.blockSignals(True)
        self.bin_spin.setMaximum(max(0, fit.partial.shape[2] - 1))
        self.bin_spin.blockSignals(False)
        self._draw()

    def drift_text(self) -> str:
        """The headline: drift of the fitted tau, first -> last snapshot."""
        if self.fit is None:
            return ""
        return _drift_text(self.fit, self.bin_spin.value())

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
        flagged = bool(drift_flagged(fit, self.threshold.value()))
        verdict = (
            "\u26a0 dynamics change during the measurement"
            if flagged
            else "\u2713 stationary within the threshold"
        )
        if not np.isfinite(fit.drift_median):
            verdict = ""
        self.drift_label.setText(
            f"{verdict}\n{self.drift_text()}" if verdict else self.drift_text()
        )
        self.drift_label.setStyleSheet(f"color: {'#c0392b' if flagged else '#1e8449'};")
        self.sigUpdated.emit()

    def clear_plots(self) -> None:
        self.fit = None
        self._fit_of = None
        self.plot.clear()
        self.legend.clear()
        self.drift_label.setText(" ")

    def figure_options(self) -> dict:
        """The current file, q-bin, drift threshold and the tab's fit of that file's
        snapshots (fitted in the export worker while the tab's own fit of it has not
        come back)."""
        fit = self.fit
        j = self.bin_spin.value()
        if fit is not None:
            j = min(j, fit.partial.shape[2] - 1)
        i = min(self.current_index, max(0, len(self.results) - 1))
        res = self.results[i] if self.results else None
        if res is not None and (fit is None or self._fit_of is not res):
            fit = Deferred(stability_fit, res)
        return {
            "file_index": i,
            "bin_index": int(j),
            "threshold": float(self.threshold.value()),
            "fit": fit,
        }

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
