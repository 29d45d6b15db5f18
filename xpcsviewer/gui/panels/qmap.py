"""Q-Map: the dynamic and static ROI maps and the scattering image, with bin labels."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout

from xpcsviewer.gui.image_view import WorkerImageView
from xpcsviewer.gui.panels.base import BasePanel
from xpcsviewer.gui.widgets import COLORMAPS, FileSelector, colormap
from xpcsviewer.views.display_image import (
    auto_levels,
    image_histogram,
    log_image,
    pixel_info,
    quantize_image,
)

__all__ = ["QMapPanel", "prepare_qmap_image"]

TARGETS = ("dynamic", "static", "scattering")


def prepare_qmap_image(target: str, qmap, path: str, reader=None, progress=None,
                       cancel=None) -> dict:
    """Worker job: the image to show for ``target``, its levels, histogram and display
    pixels (uint8 colour indices, see :func:`quantize_image`).

    ``dynamic``/``static``: the ROI map (0 = excluded shown as NaN, transparent);
    ``scattering``: log10 of the 2-D image (read from the file).
    """
    if target == "scattering":
        if reader is None:
            from xpcsviewer.io import read_saxs_2d as reader
        raw = np.asarray(reader(path), dtype=np.float64)
        img = log_image(raw)
        levels = auto_levels(img, 2, 98)
    else:
        raw = None
        roi = np.asarray(qmap.dynamic_roi_map if target == "dynamic" else qmap.static_roi_map)
        img = np.where(roi > 0, roi.astype(np.float64), np.nan)
        n = int(roi.max()) if roi.size else 0
        levels = (0.5, max(1.0, n + 0.5))
    return {"target": target, "image": img, "raw": raw, "levels": levels,
            "pixels": quantize_image(img, *levels), "histogram": image_histogram(img)}


class QMapPanel(BasePanel):
    """ROI maps / scattering image of one file; hover shows q, phi and bin labels."""

    name = "qmap"
    title = "Q-Map"
    figure_kind = "qmap"
    uses_current = True

    def __init__(self, context, parent=None) -> None:
        super().__init__(context, parent)
        self.data = None
        lay = QVBoxLayout(self)
        bar = QHBoxLayout()
        self.file_selector = FileSelector()
        self.file_selector.sigIndexChosen.connect(self._on_file_chosen)
        self.target_combo = QComboBox(toolTip="What to show")
        self.target_combo.addItems(TARGETS)
        self.target_combo.currentTextChanged.connect(lambda _t: self.refresh())
        self.cmap_combo = QComboBox(toolTip="Colour map")
        self.cmap_combo.addItems(("tab20b", *COLORMAPS))
        self.cmap_combo.currentTextChanged.connect(lambda _t: self._apply_cmap())
        for w in (QLabel("File"), self.file_selector, QLabel("show"), self.target_combo,
                  self.cmap_combo):
            bar.addWidget(w)
        bar.addStretch(1)
        lay.addLayout(bar)
        self.plot = pg.PlotItem()
        self.plot.setLabel("bottom", "column (pixel)")
        self.plot.setLabel("left", "row (pixel)")
        self.image_view = WorkerImageView(self.plot)
        # a drag: the colour table stands in at once, exact pixels follow from a worker
        self.image_view.sigLevelsDragged.connect(
            lambda _lo, _hi: self.image_view.requantize(self.submit, "Q-Map levels"))
        self.plot.invertY(True)
        self.plot.setAspectLocked(True)
        lay.addWidget(self.image_view, 1)
        self.readout = QLabel(" ")
        lay.addWidget(self.readout)
        self._proxy = pg.SignalProxy(self.plot.scene().sigMouseMoved, rateLimit=30,
                                     slot=self._on_mouse_moved)
        self.plot.scene().sigMouseClicked.connect(self._on_mouse_clicked)

    def refresh(self) -> None:
        self.file_selector.set_labels([r.label for r in self.results], self.current_index)
        res = self.current_result()
        if res is None:
            return
        self.submit("image", prepare_qmap_image, self.target_combo.currentText(), res.qmap,
                    str(res.path), on_result=self._on_image, description=f"Q-Map {res.label}")

    def _on_file_chosen(self, i: int) -> None:
        self.current_index = i
        self.refresh()

    def _on_image(self, data: dict) -> None:
        same = self.data is not None and self.data["image"].shape == data["image"].shape
        self.data = data
        self._apply_cmap()
        self.image_view.show_pixels(data["pixels"], data["levels"], data["histogram"],
                                    auto_range=not same, source=data["image"])
        label = {"dynamic": "dynamic bin", "static": "static bin",
                 "scattering": "log\u2081\u2080 I"}[data["target"]]
        self.image_view.histogram.axis.setLabel(label)
        self.sigUpdated.emit()

    def _apply_cmap(self) -> None:
        name = self.cmap_combo.currentText()
        self.image_view.set_colormap(name, colormap(name))

    def label_at(self, row: float, col: float) -> str:
        """Hover text: bins with their q and phi, plus the pixel's own q and phi."""
        res = self.current_result()
        if res is None:
            return ""
        info = pixel_info(res.qmap, row, col)
        if not info.inside:
            return ""
        parts = [f"x={info.col} y={info.row}"]
        if info.dynamic_bin:
            parts.append(f"dynamic bin {info.dynamic_bin}: "
                         f"q={info.dynamic_q:.5f} \u00c5\u207b\u00b9"
                         f", \u03c6={info.dynamic_phi:.1f}\u00b0")
        else:
            parts.append("not in a dynamic bin")
        if info.static_bin:
            parts.append(f"static bin {info.static_bin}: q={info.static_q:.5f}, "
                         f"\u03c6={info.static_phi:.1f}\u00b0")
        if np.isfinite(info.q):
            parts.append(f"pixel q={info.q:.5f} \u00c5\u207b\u00b9 \u03c6={info.phi:.1f}\u00b0")
        if self.data is not None and self.data.get("raw") is not None:
            parts.append(f"I={self.data['raw'][info.row, info.col]:.4g}")
        return "   ".join(parts)

    def _on_mouse_moved(self, evt) -> None:
        pos = evt[0]
        if self.data is None or not self.plot.sceneBoundingRect().contains(pos):
            return
        p = self.plot.getViewBox().mapSceneToView(pos)
        self.readout.setText(self.label_at(p.y(), p.x()) or " ")

    def pick_bin(self, row: float, col: float) -> int:
        """Publish the dynamic bin at (row, col) to the other tabs (0 if none)."""
        res = self.current_result()
        if res is None:
            return 0
        info = pixel_info(res.qmap, row, col)
        if info.inside and info.dynamic_bin:
            self.context.sigSelectedBin.emit(info.dynamic_bin)
            self.context.show_status(
                f"Selected dynamic bin {info.dynamic_bin} (q={info.dynamic_q:.5f} "
                f"\u00c5\u207b\u00b9, \u03c6={info.dynamic_phi:.1f}\u00b0)")
            return info.dynamic_bin
        return 0

    def _on_mouse_clicked(self, ev) -> None:
        if self.data is None or ev.double():
            return
        pos = ev.scenePos()
        if not self.plot.sceneBoundingRect().contains(pos):
            return
        p = self.plot.getViewBox().mapSceneToView(pos)
        self.pick_bin(p.y(), p.x())

    def clear_plots(self) -> None:
        self.data = None
        self.image_view.clear()
        self.readout.setText(" ")

    def figure_options(self) -> dict:
        which = self.target_combo.currentText()
        return {"file_index": self.current_index,
                "which": which if which in ("dynamic", "static") else "both"}

    def data_columns(self):
        res = self.current_result()
        if res is None:
            return None
        qm = res.qmap
        return ({"dynamic_bin": np.arange(1, qm.n_dynamic + 1), "dynamic_q (1/A)": qm.dynamic_q,
                 "dynamic_phi (deg)": qm.dynamic_phi,
                 "static_bin": np.arange(1, qm.n_static + 1), "static_q (1/A)": qm.static_q,
                 "static_phi (deg)": qm.static_phi},
                [f"Q-map bins of {res.label}"])

    def get_settings(self) -> dict:
        return {"target": self.target_combo.currentText(), "cmap": self.cmap_combo.currentText()}

    def set_settings(self, s: dict) -> None:
        if s.get("target") in TARGETS:
            self.target_combo.setCurrentText(s["target"])
        if s.get("cmap") in [self.cmap_combo.itemText(i) for i in range(self.cmap_combo.count())]:
            self.cmap_combo.setCurrentText(s["cmap"])
