"""g2 map: g2 over (q-bin x delay) of one file as an image, and one bin's profile."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QSplitter,
    QVBoxLayout,
)

from xpcsviewer.gui.panels.base import BasePanel
from xpcsviewer.gui.widgets import BinSpinBox, FileSelector, SparseLogAxis
from xpcsviewer.views.g2 import delay_seconds

__all__ = ["G2Map", "G2MapPanel", "prepare_g2_map"]


@dataclass(frozen=True)
class G2Map:
    """The resampled image and the raw curves of one file.

    Attributes
    ----------
    image : (Nd, C) float64
        g2 on a uniform grid of log10(tau) columns (nearest measured delay);
        NaN where the point is invalid (masked).
    log_tau_range : (float, float)
        log10(tau / s) of the first and last column edges.
    tau : (T,) float64
        Delays (s).
    g2, g2_err : (T, Nd) float64
    valid : (T, Nd) bool
    labels : list of str
        One per q-bin (g2 column).
    """

    image: np.ndarray
    log_tau_range: tuple[float, float]
    tau: np.ndarray
    g2: np.ndarray
    g2_err: np.ndarray
    valid: np.ndarray
    labels: list


def prepare_g2_map(
    tau,
    g2,
    g2_err,
    valid,
    labels,
    normalize: bool = False,
    n_columns: int = 256,
    progress=None,
    cancel=None,
) -> G2Map:
    """Worker job: resample g2 (T, Nd) onto a log-delay grid for display.

    Multi-tau delays are uneven in log space (dense at level 0); each column of
    the uniform log10(tau) grid shows the delay whose log-interval contains it,
    so the image is a faithful step picture of the measured points.

    Parameters
    ----------
    tau : (T,) s, positive
    g2, g2_err : (T, Nd)
    valid : (T, Nd) bool
    labels : list of str
    normalize : bool
        Show ``g2 - g2[0] + mean(g2[0])`` per bin (compares shapes across q).
    n_columns : int
    """
    tau = np.asarray(tau, dtype=np.float64)
    g2 = np.asarray(g2, dtype=np.float64)
    valid = np.asarray(valid, bool) & np.isfinite(g2)
    lt = np.log10(tau)
    # Edges halfway (in log) between delays; the outer edges mirror the first/last step.
    mids = 0.5 * (lt[1:] + lt[:-1])
    first = lt[0] - (mids[0] - lt[0]) if len(lt) > 1 else lt[0] - 0.5
    last = lt[-1] + (lt[-1] - mids[-1]) if len(lt) > 1 else lt[-1] + 0.5
    edges = np.concatenate([[first], mids, [last]])
    centres = first + (np.arange(n_columns) + 0.5) * (last - first) / n_columns
    which = np.clip(np.searchsorted(edges, centres, side="right") - 1, 0, len(lt) - 1)
    shown = np.where(valid, g2, np.nan)
    if normalize:
        ok0 = np.isfinite(shown[0])
        if ok0.any():
            shown = shown - shown[0] + np.nanmean(shown[0][ok0])
    image = shown[which].T  # (Nd, C)
    return G2Map(
        image=image,
        log_tau_range=(float(first), float(last)),
        tau=tau,
        g2=g2,
        g2_err=np.asarray(g2_err, dtype=np.float64),
        valid=valid,
        labels=list(labels),
    )


class G2MapPanel(BasePanel):
    """Image of g2 over q-bin x log delay (invalid points transparent), bin profile."""

    name = "g2map"
    title = "g2 map"
    figure_kind = "g2map"
    uses_current = True

    def __init__(self, context, parent=None) -> None:
        super().__init__(context, parent)
        self.data: G2Map | None = None
        lay = QVBoxLayout(self)
        bar = QHBoxLayout()
        self.file_selector = FileSelector()
        self.file_selector.sigIndexChosen.connect(self._on_file_chosen)
        self.bin_spin = BinSpinBox()
        self.bin_spin.valueChanged.connect(lambda _v: self._draw_profile())
        self.normalize = QCheckBox("normalize by g2[0]")
        self.normalize.setToolTip(
            "Show g2 - g2[first delay] + mean(g2[first delay]) per bin"
        )
        self.normalize.toggled.connect(lambda _b: self.refresh())
        self.bin_label = QLabel(" ")
        for w in (
            QLabel("File"),
            self.file_selector,
            QLabel("q-bin"),
            self.bin_spin,
            self.bin_label,
            self.normalize,
        ):
            bar.addWidget(w)
        bar.addStretch(1)
        lay.addLayout(bar)
        split = QSplitter()
        self.img_pw = pg.PlotWidget(axisItems={"bottom": SparseLogAxis("bottom")})
        self.img_plot = self.img_pw.getPlotItem()
        self.img_plot.getAxis("bottom").setLogMode(
            True
        )  # data are log10(tau); labels 10^x
        self.img_plot.getAxis("bottom").enableAutoSIPrefix(False)
        self.img_plot.setLabel("bottom", "\u03c4 (s)")
        self.img_plot.setLabel("left", "q-bin")
        self.image = pg.ImageItem()
        self.image.setColorMap(pg.colormap.get("viridis"))
        self.img_plot.addItem(self.image)
        self.bin_line = pg.InfiniteLine(
            angle=0, movable=True, pen=pg.mkPen("r", width=1.5)
        )
        self.bin_line.sigPositionChangeFinished.connect(self._on_line_moved)
        self.img_plot.addItem(self.bin_line)
        self.hist = pg.HistogramLUTWidget(image=self.image)
        self.hist.item.gradient.setColorMap(pg.colormap.get("viridis"))
        self.prof_pw = pg.PlotWidget(axisItems={"bottom": SparseLogAxis("bottom")})
        self.prof = self.prof_pw.getPlotItem()
        self.prof.getAxis("bottom").setLogMode(True)
        self.prof.getAxis("bottom").enableAutoSIPrefix(False)
        self.prof.setLabel("bottom", "\u03c4 (s)")
        self.prof.setLabel("left", "g2")
        self.prof.showGrid(x=True, y=True, alpha=0.3)
        self.curve = pg.PlotDataItem(symbol="o", symbolSize=5, pen=pg.mkPen("#1f77b4"))
        self.errbars = pg.ErrorBarItem(pen=pg.mkPen("#1f77b4"))
        self.prof.addItem(self.errbars)
        self.prof.addItem(self.curve)
        split.addWidget(self.img_pw)
        split.addWidget(self.hist)
        split.addWidget(self.prof_pw)
        split.setSizes([500, 120, 500])
        lay.addWidget(split, 1)
        self.context.sigSelectedBin.connect(self.select_dq_bin)

    def select_dq_bin(self, dq: int) -> None:
        """Show g2 column ``dq - 1`` (1-based dynamic bin, e.g. a q-map click)."""
        if int(dq) >= 1:
            self.bin_spin.setValue(int(dq) - 1)

    def applies_to(self, results):
        if not results:
            return "Select one or more result files first"
        if all(r.multitau is None for r in results):
            return "No multitau g2 in these files"
        return None

    def refresh(self) -> None:
        """Recompute the map of the current file (GUI thread; work in a worker)."""
        self.file_selector.set_labels(
            [r.label for r in self.results], self.current_index
        )
        res = self.current_result()
        if res is None:
            return
        mt = res.multitau
        if mt is None:
            self.clear_plots()
            self.bin_label.setText(f"{res.label}: no multitau g2")
            return
        self.submit(
            "map",
            prepare_g2_map,
            np.array(mt.tau),
            np.array(mt.g2),
            np.array(mt.g2_err),
            np.array(mt.valid),
            res.qmap.dynamic_labels(),
            self.normalize.isChecked(),
            on_result=self._on_result,
            description=f"g2 map {res.label}",
        )

    def _on_file_chosen(self, i: int) -> None:
        self.current_index = i
        self.refresh()

    def _on_result(self, data: G2Map) -> None:
        self.data = data
        nd, _ = data.image.shape
        lo, hi = data.log_tau_range
        self.image.setImage(data.image.T, autoLevels=False)  # ImageItem is (x, y)
        finite = data.image[np.isfinite(data.image)]
        if finite.size:
            self.image.setLevels(
                (float(np.percentile(finite, 1)), float(np.percentile(finite, 99)))
            )
        self.image.setRect(QRectF(lo, 0.0, hi - lo, float(nd)))
        self.bin_spin.blockSignals(True)
        self.bin_spin.setMaximum(max(0, nd - 1))
        self.bin_spin.blockSignals(False)
        self.img_plot.setRange(xRange=(lo, hi), yRange=(0, nd), padding=0)
        self._draw_profile()

    def _on_line_moved(self, line) -> None:
        if self.data is None:
            return
        j = int(np.clip(np.floor(line.value()), 0, self.data.image.shape[0] - 1))
        self.bin_spin.setValue(j)
        self._draw_profile()

    def _draw_profile(self) -> None:
        d = self.data
        if d is None:
            return
        j = min(self.bin_spin.value(), d.g2.shape[1] - 1)
        self.bin_line.setValue(j + 0.5)
        ok = d.valid[:, j]
        x = np.log10(d.tau[ok])
        y = d.g2[ok, j]
        e = np.where(np.isfinite(d.g2_err[ok, j]), d.g2_err[ok, j], 0.0)
        self.curve.setData(x, y)
        self.errbars.setData(x=x, y=y, height=2 * e)
        self.bin_label.setText(
            f"{d.labels[j] if j < len(d.labels) else ''} "
            f"({int(ok.sum())} of {len(ok)} points valid)"
        )
        self.prof.setTitle(d.labels[j] if j < len(d.labels) else "")
        self.sigUpdated.emit()

    def clear_plots(self) -> None:
        self.data = None
        self.image.clear()
        self.curve.setData([], [])
        self.errbars.setData(x=np.zeros(0), y=np.zeros(0), height=np.zeros(0))
        self.bin_label.setText(" ")

    def figure_options(self) -> dict:
        """The current file, the profile's q-bin and the normalization shown."""
        res = self.current_result()
        j = self.bin_spin.value()
        if res is not None and res.multitau is not None:
            j = min(j, res.multitau.g2.shape[1] - 1)
        return {
            "file_index": min(self.current_index, max(0, len(self.results) - 1)),
            "bin_index": int(j),
            "normalize": self.normalize.isChecked(),
        }

    def data_columns(self):
        d = self.data
        if d is None:
            return None
        j = min(self.bin_spin.value(), d.g2.shape[1] - 1)
        ok = d.valid[:, j]
        return (
            {"tau_s": delay_seconds(d.tau[ok]), "g2": d.g2[ok, j],
             "g2_err": d.g2_err[ok, j]},
            [f"g2 profile of {d.labels[j]}"],
        )

    def get_settings(self) -> dict:
        return {
            "bin": int(self.bin_spin.value()),
            "normalize": self.normalize.isChecked(),
        }

    def set_settings(self, settings: dict) -> None:
        try:
            self.normalize.setChecked(bool(settings.get("normalize", False)))
            self.bin_spin.setValue(int(settings.get("bin", 0)))
        except (TypeError, ValueError):
            pass
