"""The Detector tab's partition editor: q, phi or q x phi bins with a live preview.

The settings are those of the standard partition tool (and of ``xpcsviewer qmap``,
which runs the same :func:`~xpcsviewer.compute.detector.partition.make_partition`): linear or
log q, dynamic (g2) and static (SAXS) bin counts, phi offset and n-fold symmetry.
Any change (or a new mask) re-partitions in a worker after a short pause; the
preview colours the bins and a bar plot shows the pixels per bin.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

__all__ = ["MODES", "PartitionEditor"]

MODES = (("q", "q rings"), ("phi", "\u03c6 sectors"), ("qphi", "q \u00d7 \u03c6"))


class PartitionEditor(QWidget):
    """Partition settings, preview choice, pixel counts and the partition's actions."""

    sigSettingsChanged = Signal()
    """A setting changed (the panel re-partitions after a pause): ()."""
    sigShowChanged = Signal(str)
    """Preview "dynamic", "static" or "none": (str)."""
    sigUse = Signal()
    """Offer this partition to the G2 tab's regrouping: ()."""
    sigSave = Signal()
    """Write it as a q-map file: ()."""
    sigFromFile = Signal()
    """Take the bin counts of the file's own partition: ()."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        box = QGroupBox("Bins")
        form = QFormLayout(box)
        self.mode_combo = QComboBox()
        self.mode_combo.setToolTip("Bins by q (rings), by \u03c6 (sectors) or both")
        for k, text in MODES:
            self.mode_combo.addItem(text, k)
        self.style_combo = QComboBox(toolTip="q bins of equal width or equal ratio")
        self.style_combo.addItem("linear", "linear")
        self.style_combo.addItem("log", "log")
        self.dq = QSpinBox(minimum=1, maximum=10000, value=10, toolTip="g2 bins along q")
        self.sq = QSpinBox(minimum=1, maximum=100000, value=40,
                           toolTip="SAXS bins along q (rounded up to a multiple of the dynamic)")
        self.dp = QSpinBox(minimum=1, maximum=3600, value=4, toolTip="g2 bins along \u03c6")
        self.sp = QSpinBox(minimum=1, maximum=36000, value=8, toolTip="SAXS bins along \u03c6")
        self.offset = QDoubleSpinBox(minimum=-180.0, maximum=180.0, decimals=1, suffix=" \u00b0",
                                     toolTip="\u03c6 offset: the sectors start at \u03c6 = offset")
        self.fold = QSpinBox(minimum=1, maximum=12, value=1,
                             toolTip="n-fold symmetry: sectors 360/n apart share a bin")
        form.addRow("mode", self.mode_combo)
        form.addRow("q style", self.style_combo)
        form.addRow("q bins (g2 / SAXS)", self._pair(self.dq, self.sq))
        form.addRow("\u03c6 bins (g2 / SAXS)", self._pair(self.dp, self.sp))
        form.addRow("\u03c6 offset", self.offset)
        form.addRow("symmetry fold", self.fold)
        lay.addWidget(box)
        row = QHBoxLayout()
        self.from_file_btn = QPushButton("From file", toolTip="The bin counts of the file's "
                                                              "own partition")
        self.show_combo = QComboBox(toolTip="Colour the bins on the image")
        for k in ("dynamic", "static", "none"):
            self.show_combo.addItem(f"show {k}" if k != "none" else "hide bins", k)
        row.addWidget(self.from_file_btn)
        row.addWidget(self.show_combo)
        lay.addLayout(row)
        self.counts_widget = pg.PlotWidget()
        self.counts_widget.setMinimumHeight(150)
        self.counts_plot = self.counts_widget.getPlotItem()
        self.counts_plot.setLabel("bottom", "dynamic bin")
        self.counts_plot.setLabel("left", "pixels")
        self.counts_bars = pg.BarGraphItem(x=[], height=[], width=0.8, brush="#0072B2")
        self.counts_plot.addItem(self.counts_bars)
        lay.addWidget(self.counts_widget, 1)
        self.summary = QLabel(" ")
        self.summary.setWordWrap(True)
        lay.addWidget(self.summary)
        act = QHBoxLayout()
        self.use_btn = QPushButton("Use for regrouping",
                                   toolTip="Offer this partition (and mask) to the G2 tab")
        self.save_btn = QPushButton("Save q-map\u2026",
                                    toolTip="Write a q-map file (the layout xpcsviewer qmap and "
                                            "pySimpleMask write)")
        act.addWidget(self.use_btn)
        act.addWidget(self.save_btn)
        lay.addLayout(act)
        for w in (self.mode_combo, self.style_combo):
            w.currentIndexChanged.connect(self._on_changed)
        for w in (self.dq, self.sq, self.dp, self.sp, self.fold, self.offset):
            w.valueChanged.connect(self._on_changed)
        self.show_combo.currentIndexChanged.connect(
            lambda _i: self.sigShowChanged.emit(self.show_combo.currentData()))
        self.use_btn.clicked.connect(self.sigUse)
        self.save_btn.clicked.connect(self.sigSave)
        self.from_file_btn.clicked.connect(self.sigFromFile)
        self._on_changed()

    @staticmethod
    def _pair(a: QWidget, b: QWidget) -> QWidget:
        w = QWidget()
        h = QHBoxLayout(w)
        h.setContentsMargins(0, 0, 0, 0)
        h.addWidget(a)
        h.addWidget(b)
        return w

    def _on_changed(self, *_a) -> None:
        mode = self.mode_combo.currentData()
        for w in (self.dq, self.sq, self.style_combo):
            w.setEnabled(mode != "phi")
        for w in (self.dp, self.sp, self.offset, self.fold):
            w.setEnabled(mode != "q")
        self.sigSettingsChanged.emit()

    def settings(self) -> dict:
        """The partition settings as ``make_partition`` takes them (GUI thread)."""
        mode = self.mode_combo.currentData()
        q_on, p_on = mode != "phi", mode != "q"
        return {"mode": mode,
                "dq_num": self.dq.value() if q_on else 1,
                "sq_num": self.sq.value() if q_on else 1,
                "dp_num": self.dp.value() if p_on else 1,
                "sp_num": self.sp.value() if p_on else 1,
                "q_style": self.style_combo.currentData() if q_on else "linear",
                "phi_offset": self.offset.value() if p_on else 0.0,
                "symmetry_fold": self.fold.value() if p_on else 1}

    def set_from_counts(self, dyn: tuple[int, int], sta: tuple[int, int]) -> None:
        """Bin counts of an existing partition (``*_num_pts``)."""
        for w in (self.mode_combo, self.dq, self.sq, self.dp, self.sp):
            w.blockSignals(True)
        mode = "qphi" if dyn[0] > 1 and dyn[1] > 1 else ("phi" if dyn[0] == 1 < dyn[1] else "q")
        self.mode_combo.setCurrentIndex([k for k, _t in MODES].index(mode))
        self.dq.setValue(int(dyn[0]))
        self.sq.setValue(int(sta[0]))
        self.dp.setValue(int(dyn[1]))
        self.sp.setValue(int(sta[1]))
        for w in (self.mode_combo, self.dq, self.sq, self.dp, self.sp):
            w.blockSignals(False)
        self._on_changed()

    def show_counts(self, counts: np.ndarray, qmap) -> None:
        """Pixels per dynamic bin and a one-line summary of the partition."""
        c = np.asarray(counts)
        self.counts_bars.setOpts(x=np.arange(1, c.size + 1), height=c, width=0.8)
        self.counts_plot.enableAutoRange()
        q = qmap.dynamic_q
        txt = (f"{qmap.n_dynamic} dynamic bins (q {q.min():.5f}\u2013{q.max():.5f} "
               f"\u00c5\u207b\u00b9), {qmap.n_static} static; pixels per dynamic bin "
               f"{int(c.min()) if c.size else 0}\u2013{int(c.max()) if c.size else 0}")
        self.summary.setText(txt)
