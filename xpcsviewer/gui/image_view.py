"""An image plot with a levels bar whose pixels come ready-made from a worker.

``pg.ImageView`` keeps the float image in its ``ImageItem`` and rescales all of it at
each render and histogram update (O(data) on the GUI thread). Here the worker sends
uint8 colour indices (:func:`xpcsviewer.views.display_image.quantize_image`) and a
histogram; the GUI thread only swaps a 256-entry colour table, for a new colour map
or while the user drags the levels, until the re-quantized pixels arrive.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSignalBlocker, Qt, Signal
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QWidget

from xpcsviewer.views.display_image import N_COLOURS, quantize_job, remap_table

__all__ = ["LevelBoxes", "WorkerImageView", "colour_table", "frame_image", "frame_key",
           "shape_text"]

_BAR_STOPS = 16  # the levels bar's gradient: a 256-stop map would make 256 tick items


def frame_key(qmap) -> tuple:
    """What decides an image's framing: the detector shape and the beam centre. Files
    alike in these keep the user's zoom; another one is framed whole."""
    return (tuple(qmap.shape), round(float(qmap.beam_center_x), 3),
            round(float(qmap.beam_center_y), 3))


def shape_text(shape) -> str:
    """``"512x1024"`` (rows x columns)."""
    return "x".join(str(int(n)) for n in shape)


def frame_image(view: pg.ViewBox, item: pg.ImageItem, limits: bool = False,
                box: tuple[float, float, float, float] | None = None) -> None:
    """Frame ``item`` whole, or the region ``box`` (x0, x1, y0, y1) of it (see
    :func:`data_box`). Overlays (the last file's mask, ROIs, the beam-centre mark)
    are left out of the bounds; with ``limits`` the zoom-out floor (a quarter of the
    image) is set first, since limits left from a smaller image would clip the range."""
    h, w = item.height() or 0, item.width() or 0
    if not (h and w):
        return
    if limits:
        view.setLimits(xMin=-w, xMax=2 * w, yMin=-h, yMax=2 * h, minXRange=4, minYRange=4)
    if box is not None:
        view.setRange(xRange=box[:2], yRange=box[2:], padding=0.0)
        return
    view.autoRange(items=[item])


def data_box(qmap, margin: float = 0.15, min_margin: float = 8.0,
             most: float = 0.5) -> tuple[float, float, float, float] | None:
    """(x0, x1, y0, y1), pixel edges: the pixels of the q-map's valid dynamic bins with a
    margin (``margin`` of their extent, at least ``min_margin`` pixels), where data can
    be; None without a q-map or where they cover more than ``most`` of the detector
    (framed whole). A 1676x2100 Rigaku 3M with its bins in ~120 pixels was shown whole
    around a spot (issue 49)."""
    if qmap is None:
        return None
    valid = np.asarray(qmap.mask, bool)
    roi = getattr(qmap, "dynamic_roi_map", None)
    if roi is not None and np.shape(roi) == valid.shape:
        valid = valid & (np.asarray(roi) > 0)
    rows, cols = np.flatnonzero(valid.any(axis=1)), np.flatnonzero(valid.any(axis=0))
    if rows.size == 0:
        return None
    h, w = valid.shape
    y0, y1, x0, x1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
    if (y1 - y0) * (x1 - x0) > most * h * w:
        return None
    my, mx = max(min_margin, margin * (y1 - y0)), max(min_margin, margin * (x1 - x0))
    return (float(max(0, x0 - mx)), float(min(w, x1 + mx)),
            float(max(0, y0 - my)), float(min(h, y1 + my)))


def map_colours(cmap: pg.ColorMap) -> np.ndarray:
    """The (255, 4) uint8 RGBA colours of indices 0..254."""
    return cmap.getLookupTable(0.0, 1.0, N_COLOURS, alpha=True).astype(np.uint8)


def colour_table(cmap: pg.ColorMap) -> np.ndarray:
    """The 256-entry table for pixels from ``quantize_image`` shown at their own levels."""
    return remap_table(map_colours(cmap), (0.0, 1.0), (0.0, 1.0))


class WorkerImageView(QWidget):
    """``plot`` showing quantized pixels, with a histogram / levels bar beside it.

    Signals
    -------
    sigLevelsDragged(lo, hi)
        The user finished dragging the levels on the bar.
    """

    sigLevelsDragged = Signal(float, float)

    def __init__(self, plot: pg.PlotItem, parent=None) -> None:
        super().__init__(parent)
        self.plot = plot
        self.graphics_view = pg.GraphicsView()
        self.graphics_view.setCentralItem(plot)
        self.image_item = pg.ImageItem()
        plot.addItem(self.image_item)
        self.bar = pg.HistogramLUTWidget(gradientPosition="right")
        self.histogram = self.bar.item
        self.histogram.axis.enableAutoSIPrefix(False)  # values as they are, no "(x0.001)"
        grad = self.histogram.gradient
        grad.showTicks(False)
        grad.setAcceptedMouseButtons(Qt.MouseButton.NoButton)  # maps come from the combo
        self.histogram.sigLevelsChanged.connect(self._on_region_moving)
        self.histogram.sigLevelChangeFinished.connect(self._on_region_done)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.graphics_view, 1)
        lay.addWidget(self.bar)
        self._colours = np.zeros((N_COLOURS, 4), dtype=np.uint8)
        self._cmap_name: str | None = None
        self._quant_levels: tuple[float, float] | None = None
        self._source: np.ndarray | None = None  # the values the pixels were made from
        self._levels = (0.0, 1.0)
        self._setting = False

    # ---------------------------------------------------------------- state
    def set_colormap(self, name: str, cmap: pg.ColorMap) -> None:
        """Colour the pixels with ``cmap`` (no pass over the image)."""
        if name == self._cmap_name:
            return
        self._cmap_name = name
        self._colours = map_colours(cmap)
        stops = np.linspace(0.0, 1.0, _BAR_STOPS)
        self.histogram.gradient.setColorMap(pg.ColorMap(stops, cmap.map(stops)))
        self.histogram.gradient.showTicks(False)  # new ticks are made visible
        self._update_table()

    def show_pixels(self, pixels: np.ndarray, quant_levels: tuple[float, float],
                    histogram: tuple[np.ndarray, np.ndarray] | None = None,
                    auto_range: bool = False, source: np.ndarray | None = None) -> None:
        """Show uint8 colour indices quantized for ``quant_levels`` (data units) from
        the values ``source`` (kept for :meth:`requantize`; None keeps the current)."""
        if source is not None:
            self._source = source
        self._quant_levels = (float(quant_levels[0]), float(quant_levels[1]))
        self.image_item.setImage(pixels, autoLevels=False, levels=None)
        if histogram is not None:
            x, y = histogram
            self.histogram.plot.setData(x, y)
            if len(x):
                self.histogram.setHistogramRange(min(float(x[0]), self._quant_levels[0]),
                                                 max(float(x[-1]), self._quant_levels[1]))
        self.set_levels(*self._quant_levels)
        if auto_range:
            frame_image(self.plot.getViewBox(), self.image_item)

    def set_levels(self, lo: float, hi: float) -> None:
        """Display levels in data units; until pixels quantized for them arrive the
        colour table stands in (within one of 255 steps of the old levels)."""
        self._levels = (float(lo), float(hi))
        self._setting = True
        try:
            self.histogram.setLevels(lo, hi)
        finally:
            self._setting = False
        self._update_table()

    def levels(self) -> tuple[float, float]:
        return self._levels

    def frame_bar_to_levels(self) -> None:
        """Make the colour bar's scale span exactly the levels, so the values read at
        its ends are those of the min / max boxes (its default frame, the whole
        histogram plus padding, read as other levels: issue 49)."""
        lo, hi = self._levels
        if hi > lo:
            self.histogram.setHistogramRange(lo, hi, padding=0.0)

    def pixels_current(self) -> bool:
        """Whether the shown pixels were quantized for the levels now set."""
        return self._quant_levels == self._levels

    def requantize(self, submit, description: str) -> None:
        """Have a worker make exact pixels for the levels now set (the colour table
        stands in until then); ``submit`` is the panel's job submit."""
        if self._source is None or self.pixels_current():
            return
        img, levels = self._source, self._levels
        submit("levels", quantize_job, img, levels,
               on_result=lambda out: self._on_requantized(out, img),
               description=description)

    def _on_requantized(self, out: dict, img: np.ndarray) -> None:
        if img is not self._source or out["pixel_levels"] != self._levels:
            return  # another image or other levels since: a newer job is on its way
        self.show_pixels(out["pixels"], out["pixel_levels"])

    def clear(self) -> None:
        self.image_item.clear()
        self.histogram.plot.setData([], [])
        self._quant_levels = self._source = None

    # -------------------------------------------------------------- private
    def _update_table(self) -> None:
        if self._quant_levels is None:
            return
        self.image_item.setLookupTable(remap_table(self._colours, self._quant_levels,
                                                   self._levels))

    def _on_region_moving(self, *_a) -> None:
        if self._setting:
            return
        self._levels = tuple(float(v) for v in self.histogram.getLevels())
        self._update_table()

    def _on_region_done(self, *_a) -> None:
        if self._setting:
            return
        lo, hi = (float(v) for v in self.histogram.getLevels())
        self._levels = (lo, hi)
        self._update_table()
        self.sigLevelsDragged.emit(lo, hi)


class LevelBoxes:
    """An image tab's "auto levels" box and its min / max level boxes.

    The boxes show 4 significant digits, not 4 decimals (linear intensities and IP/IF
    are often ~1e-5-1e-3), and are editable only with auto levels off. ``min_span``
    keeps the upper level above the lower one.
    """

    def __init__(self, auto_tip: str, min_tip: str, max_tip: str, upper: float = 1.0,
                 min_span: float = 1e-6) -> None:
        self.auto_check = QCheckBox("auto levels", checked=True)
        self.auto_check.setToolTip(auto_tip)
        self.vmin = pg.SpinBox(value=0.0, decimals=4, dec=True, step=0.1, compactHeight=False)
        self.vmax = pg.SpinBox(value=upper, decimals=4, dec=True, step=0.1, compactHeight=False)
        for spin, tip in ((self.vmin, min_tip), (self.vmax, max_tip)):
            spin.setToolTip(tip)
            spin.setEnabled(False)
            spin.setMaximumWidth(110)
        self.min_span = min_span
        self.auto_check.toggled.connect(self._enable_boxes)

    def widgets(self) -> list[QWidget]:
        """For a tool bar: the box, then the labelled level boxes."""
        return [self.auto_check, QLabel("min"), self.vmin, QLabel("max"), self.vmax]

    def values(self) -> tuple[float, float]:
        lo, hi = float(self.vmin.value()), float(self.vmax.value())
        return lo, (hi if hi > lo else lo + self.min_span)

    def show(self, lo: float, hi: float) -> None:
        """Show levels without emitting (auto levels, or levels converted by the tab)."""
        with QSignalBlocker(self.vmin), QSignalBlocker(self.vmax):
            self.vmin.setValue(lo)
            self.vmax.setValue(hi)

    def take_drag(self, lo: float, hi: float) -> None:
        """A drag on the levels bar is a manual choice: show it, auto levels off."""
        self.show(lo, hi)
        if self.auto_check.isChecked():
            with QSignalBlocker(self.auto_check):
                self.auto_check.setChecked(False)
            self._enable_boxes(False)

    def _enable_boxes(self, auto: bool) -> None:
        self.vmin.setEnabled(not auto)
        self.vmax.setEnabled(not auto)
