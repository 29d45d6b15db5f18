"""SAXS-2D: the time-averaged scattering image of one file."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
)

from xpcsviewer.gui.image_view import (
    LevelBoxes,
    WorkerImageView,
    data_box,
    frame_image,
    frame_key,
)
from xpcsviewer.gui.panels._pixel_audit_box import AUDIT_KEY, flagged_overlay, show_flagged
from xpcsviewer.gui.panels._sector_rois import SectorRoiTools
from xpcsviewer.gui.panels.base import BasePanel
from xpcsviewer.gui.widgets import COLORMAPS, FileSelector, colormap
from xpcsviewer.views.display_image import (
    auto_levels,
    image_histogram,
    log_image,
    pixel_info,
    quantize_job,
)

__all__ = ["Saxs2DPanel", "prepare_saxs2d", "rescale_saxs2d"]


def prepare_saxs2d(path: str, scale: str = "log", levels=None, reader=None, progress=None,
                   cancel=None) -> dict:
    """Worker job: read the 2-D image of ``path`` and prepare it for display.

    Returns
    -------
    dict
        ``raw`` (H, W) float64 counts/pixel/frame and what :func:`rescale_saxs2d` returns.
    """
    if reader is None:
        from xpcsviewer.io import read_saxs_2d as reader
    if progress is not None:
        progress(0, 2, "reading image")
    raw = np.asarray(reader(path), dtype=np.float64)
    if cancel is not None:
        cancel.raise_if_cancelled()
    out = rescale_saxs2d(raw, scale, levels)
    out.update(raw=raw, path=str(path))
    return out


def rescale_saxs2d(raw: np.ndarray, scale: str, levels=None, progress=None,
                   cancel=None) -> dict:
    """Worker job: the display values, their auto levels, histogram and display pixels.

    ``levels`` (display units) are the user's; None means the auto levels. The log of
    a 4-Mpixel image, its percentiles and its quantization take ~0.3 s: never on the
    GUI thread.

    Returns
    -------
    dict
        ``image`` (H, W) float32 values shown (log10 or linear), ``levels`` their auto
        levels, ``scale``, and ``pixels`` / ``pixel_levels`` / ``histogram`` (see
        :func:`~xpcsviewer.views.display_image.quantize_job`).
    """
    img = np.asarray(log_image(raw) if scale == "log" else raw, dtype=np.float32)
    auto = image_levels(raw, img)
    out = {"image": img, "levels": auto, "scale": scale,
           "histogram": image_histogram(img)}
    out.update(quantize_job(img, auto if levels is None else levels))
    return out


def image_levels(raw: np.ndarray, img: np.ndarray) -> tuple[float, float]:
    """Auto levels from the pixels that saw photons (masked and empty pixels would
    otherwise pull the lower level down to the floor)."""
    return auto_levels(img, 1.0, 99.9, mask=np.isfinite(raw) & (raw > 0))


class Saxs2DPanel(BasePanel):
    """The scattering image with log/linear scale, colour maps, levels and hover readout."""

    name = "saxs2d"
    title = "SAXS-2D"
    figure_kind = "saxs2d"
    uses_current = True

    def __init__(self, context, parent=None) -> None:
        super().__init__(context, parent)
        self.data: dict | None = None
        self._frame: tuple | None = None  # frame_key of the image framed last
        lay = QVBoxLayout(self)
        bar = QHBoxLayout()
        self.file_selector = FileSelector()
        self.file_selector.sigIndexChosen.connect(self._on_file_chosen)
        self.scale_combo = QComboBox(toolTip="Intensity scale")
        self.scale_combo.addItems(["log", "linear"])
        self.scale_combo.currentTextChanged.connect(lambda _t: self._on_scale_changed())
        self.cmap_combo = QComboBox(toolTip="Colour map")
        self.cmap_combo.addItems(COLORMAPS)
        self.cmap_combo.currentTextChanged.connect(self._apply_cmap)
        self.level_boxes = LevelBoxes(
            "Levels from the 1-99.9 percentiles of the pixels that saw photons; the "
            "colour bar spans them; uncheck to set them",
            "Lower level (log10 units on a log scale)", "Upper level")
        self.auto_check = self.level_boxes.auto_check
        self.vmin, self.vmax = self.level_boxes.vmin, self.level_boxes.vmax
        self.auto_check.toggled.connect(self._on_auto_toggled)
        self.vmin.valueChanged.connect(lambda _v: self._apply_levels())
        self.vmax.valueChanged.connect(lambda _v: self._apply_levels())
        self.view_all_btn = QPushButton("View all")
        self.view_all_btn.setToolTip("Show the whole detector (a file opens zoomed to the "
                                     "region of its q-bins where that is small)")
        self.view_all_btn.clicked.connect(self.view_all)
        self.center_check = QCheckBox("beam centre", checked=True)
        self.center_check.setToolTip("Mark the beam centre with a red +")
        self.center_check.toggled.connect(lambda on: self.center_item.setVisible(on))
        self.file_selector.setMinimumContentsLength(12)
        for w in (QLabel("File"), self.file_selector, self.scale_combo, self.cmap_combo,
                  self.center_check, self.view_all_btn):
            bar.addWidget(w)
        bar.addStretch(1)
        lay.addLayout(bar)
        bar2 = QHBoxLayout()
        for w in self.level_boxes.widgets():
            bar2.addWidget(w)
        bar2.addStretch(1)
        lay.addLayout(bar2)
        self.plot = pg.PlotItem()
        self.plot.setLabel("bottom", "column (pixel)")
        self.plot.setLabel("left", "row (pixel)")
        self.image_view = WorkerImageView(self.plot)
        self.plot.invertY(True)
        self.plot.setAspectLocked(True)
        self.center_item = pg.ScatterPlotItem(symbol="+", size=18, pen=pg.mkPen("r", width=2),
                                              brush=None)
        self.center_item.setZValue(10)
        self.plot.addItem(self.center_item)
        self.flagged_item = flagged_overlay()  # pixels flagged by the G2 tab's audit
        self.plot.addItem(self.flagged_item)
        context.sigSharedChanged.connect(
            lambda key: self._show_flagged() if key == AUDIT_KEY else None)
        lay.addWidget(self.image_view, 1)
        self.readout = QLabel(" ")
        self.readout.setToolTip("Intensity, q, phi and pixel under the mouse")
        lay.addWidget(self.readout)
        self.image_view.sigLevelsDragged.connect(self._on_hist_levels)
        self._proxy = pg.SignalProxy(self.plot.scene().sigMouseMoved, rateLimit=30,
                                     slot=self._on_mouse_moved)
        self._apply_cmap(self.cmap_combo.currentText())
        self.rois = SectorRoiTools(self)  # wedge / ring ROIs (issue 13)

    # --------------------------------------------------------------- data
    def refresh(self) -> None:
        res = self.current_result()
        self.file_selector.set_labels([r.label for r in self.results], self.current_index)
        if res is None:
            return
        self.submit("image", prepare_saxs2d, str(res.path), self.scale_combo.currentText(),
                    self._manual_levels(), on_result=self._on_image,
                    description=f"SAXS-2D {res.label}")

    def _on_file_chosen(self, i: int) -> None:
        self.current_index = i
        self.refresh()

    def _on_scale_changed(self) -> None:
        if not self.auto_check.isChecked():
            self._convert_manual_levels(self.scale_combo.currentText())
        if self.data is None:
            self.refresh()
            return
        self.submit("image", rescale_saxs2d, self.data["raw"], self.scale_combo.currentText(),
                    self._manual_levels(), on_result=self._on_rescaled,
                    description="SAXS-2D scale")

    def _convert_manual_levels(self, scale: str) -> None:
        """Keep the user's levels meaning the same intensities on the new scale."""
        lo, hi = self.vmin.value(), self.vmax.value()
        if scale == "linear":
            lo, hi = 10.0 ** lo, 10.0 ** hi
        elif hi > 0:
            lo = math.log10(lo) if lo > 0 else math.log10(hi) - 3.0
            hi = math.log10(hi)
        else:
            return
        self.level_boxes.show(lo, hi)

    def _manual_levels(self) -> tuple[float, float] | None:
        if self.auto_check.isChecked():
            return None
        return self.level_boxes.values()

    def _levels_now(self) -> tuple[float, float]:
        # auto levels exactly: the spin boxes show them rounded to 4 decimals
        if self.auto_check.isChecked() and self.data is not None:
            lo, hi = self.data["levels"]
            return float(lo), float(hi)
        return self.level_boxes.values()

    def _on_rescaled(self, out: dict) -> None:
        if self.data is not None:
            self.data = dict(self.data, **out)
            self._show()

    def _on_image(self, data: dict) -> None:
        self.data = data
        self.readout.setText(" ")  # the readout spoke of the previous file
        self._show()

    def shown_result(self) -> Any | None:
        """The target whose image is shown (None before one arrives)."""
        if self.data is None:
            return None
        return next((r for r in self.results if str(r.path) == self.data["path"]), None)

    def _show(self) -> None:
        data = self.data
        res = self.shown_result()
        img = data["image"]
        self._apply_cmap(self.cmap_combo.currentText())
        self.image_view.show_pixels(data["pixels"], data["pixel_levels"], data["histogram"],
                                    source=img)
        # the same geometry keeps the user's zoom; another is framed whole (issue 22)
        key = frame_key(res.qmap) if res is not None else (img.shape,)
        if key != self._frame:  # opened on the region holding data; "View all": whole
            frame_image(self.plot.getViewBox(), self.image_view.image_item, limits=True,
                        box=data_box(res.qmap) if res is not None else None)
            self._frame = key
        if self.auto_check.isChecked():
            self.level_boxes.show(*data["levels"])
        self._apply_levels()
        if res is not None:
            qm = res.qmap
            self.center_item.setData([qm.beam_center_x + 0.5], [qm.beam_center_y + 0.5])
        self._show_flagged()
        unit = "log\u2081\u2080 I" if self.scale_combo.currentText() == "log" else "I"
        self.image_view.histogram.axis.setLabel(unit)
        self.sigUpdated.emit()

    def view_all(self) -> None:
        """Frame the whole detector (the zoom a file opens with may be its data region)."""
        frame_image(self.plot.getViewBox(), self.image_view.image_item)

    def _show_flagged(self) -> None:
        res = self.shown_result()
        show_flagged(self.flagged_item, self.context.shared.get(AUDIT_KEY),
                     None if res is None else str(res.path))

    def _apply_levels(self, frame_bar: bool = True) -> None:
        """Show the spin boxes' levels: the colour table at once, exact pixels from a
        worker; the colour bar spans them (not after a drag on it: it would jump under
        the mouse)."""
        if self.data is None:
            return
        self.image_view.set_levels(*self._levels_now())
        if frame_bar:
            self.image_view.frame_bar_to_levels()
        self.image_view.requantize(self.submit, "SAXS-2D levels")

    def _apply_cmap(self, name: str) -> None:
        self.image_view.set_colormap(name, colormap(name))

    def _on_auto_toggled(self, on: bool) -> None:
        if on and self.data is not None:
            self.level_boxes.show(*self.data["levels"])
            self._apply_levels()

    def _on_hist_levels(self, lo: float, hi: float) -> None:
        if self.data is None:
            return
        self.level_boxes.take_drag(lo, hi)
        self._apply_levels(frame_bar=False)

    def clear_plots(self) -> None:
        self.data = None
        self.image_view.clear()
        self.center_item.setData([], [])
        self.flagged_item.setData([], [])
        self.readout.setText(" ")

    # -------------------------------------------------------------- hover
    def readout_at(self, row: float, col: float) -> str:
        """The hover text for image pixel (row, col)."""
        res = self.shown_result()  # not the next file while its image loads
        if res is None:
            return ""
        info = pixel_info(res.qmap, row, col)
        if not info.inside:
            return ""
        return info.text(float(self.data["raw"][info.row, info.col]))

    def _on_mouse_moved(self, evt) -> None:
        pos = evt[0]
        if self.data is None or not self.plot.sceneBoundingRect().contains(pos):
            return
        p = self.plot.getViewBox().mapSceneToView(pos)
        self.readout.setText(self.readout_at(p.y(), p.x()) or " ")

    # ------------------------------------------------------------ export
    def figure_options(self) -> dict:
        opts: dict[str, Any] = {"file_index": self.current_index,
                                "log": self.scale_combo.currentText() == "log",
                                "cmap": self.cmap_combo.currentText(),
                                "beam_center": self.center_check.isChecked()}
        if self.data is not None and self.shown_result() is self.current_result():
            opts["image"] = self.data["raw"]  # already read: no second read for the export
        if not self.auto_check.isChecked():
            opts["levels"] = (self.vmin.value(), self.vmax.value())
        return opts

    def data_columns(self):
        res = self.shown_result()
        if res is None:
            return None
        raw = self.data["raw"]
        rows, cols = np.indices(raw.shape)
        return ({"row": rows.ravel(), "col": cols.ravel(), "intensity": raw.ravel()},
                [f"SAXS-2D of {res.label}",
                 "intensity: mean photons/pixel/frame"])

    # ---------------------------------------------------------- settings
    def get_settings(self) -> dict:
        return {"scale": self.scale_combo.currentText(), "cmap": self.cmap_combo.currentText(),
                "auto_levels": self.auto_check.isChecked(),
                "levels": [self.vmin.value(), self.vmax.value()],
                "beam_centre": self.center_check.isChecked()}

    def set_settings(self, s: dict) -> None:
        if s.get("scale") in ("log", "linear"):
            self.scale_combo.setCurrentText(s["scale"])
        if s.get("cmap") in COLORMAPS:
            self.cmap_combo.setCurrentText(s["cmap"])
        lv = s.get("levels")
        if isinstance(lv, list) and len(lv) == 2 and all(
                isinstance(v, (int, float)) and math.isfinite(v) for v in lv):
            self.vmin.setValue(lv[0])
            self.vmax.setValue(lv[1])
        if isinstance(s.get("auto_levels"), bool):
            self.auto_check.setChecked(s["auto_levels"])
        if isinstance(s.get("beam_centre"), bool):
            self.center_check.setChecked(s["beam_centre"])
