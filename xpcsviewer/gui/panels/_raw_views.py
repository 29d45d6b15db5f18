"""The Raw tab's views: the frame image with its overlays, the run's timelines, a
region's trace with its power spectrum, and P(k) of a q-bin.

They only draw what workers made (``_raw_jobs``) and say what the user picked
(a frame, a pixel, a region); the panel (``raw.py``) submits the work.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from xpcsviewer.gui.image_view import WorkerImageView, frame_image
from xpcsviewer.gui.panels._drawing import DrawViewBox, MaskOverlayItem
from xpcsviewer.gui.widgets import SparseLogAxis, colormap, curve_color, curve_pen, plain_axes

__all__ = ["PickViewBox", "PkPlot", "RawImageView", "TimelinePlots", "TracePlots",
           "bins_lut"]

#: What the image shows: (combo text, key); keys of frames are _raw_jobs.FRAME_HOWS,
#: those of the inspection's per-pixel maps _raw_jobs.MAP_KINDS.
SHOW_CHOICES = (("frame", "one"), ("sum of frames", "sum"), ("mean of frames", "mean"),
                ("max of frames", "max"), ("mean flux (ph/s/pixel)", "flux"),
                ("max count", "max_count"), ("frames at the cap", "cap"))
#: Display key -> MAP_KINDS entry.
MAP_OF = {"flux": "flux", "max_count": "max", "cap": "cap"}
OUTLINE_LUT = np.array([[0, 0, 0, 0], [255, 255, 255, 130]], dtype=np.uint8)
REQUEST_MS = 40  # slider moves coalesce into one frame read


def bins_lut(alpha: int = 80) -> np.ndarray:
    """(13, 4) uint8: transparent, then 12 translucent bin colours."""
    out = np.zeros((13, 4), np.uint8)
    for i in range(12):
        c = curve_color(i)
        out[i + 1] = (c.red(), c.green(), c.blue(), alpha)
    return out


class PickViewBox(DrawViewBox):
    """A view box that says where the left button clicked (not while drawing) and
    hands left drags to a drawing tool while :attr:`drawing` is on."""

    sigPicked = Signal(object)
    """A left click: (position QPointF in data coordinates)."""

    def mouseClickEvent(self, ev) -> None:  # Qt override
        if not self.drawing and ev.button() == Qt.MouseButton.LeftButton:
            ev.accept()
            self.sigPicked.emit(self.mapSceneToView(ev.scenePos()))
            return
        super().mouseClickEvent(ev)


class RawImageView(QWidget):
    """A frame, a frame range or a per-pixel map, with the q-map's bins, the mask, marked
    pixels and a drawn region over it.

    Signals
    -------
    sigRequest()
        What to show changed (the panel reads :meth:`request` and submits the read).
    sigPixelPicked(row, col)
    sigRegionDrawn(r0, r1, c0, c1)
        A rectangle was drawn: rows r0..r1-1, columns c0..c1-1.
    """

    sigRequest = Signal()
    sigPixelPicked = Signal(int, int)
    sigRegionDrawn = Signal(int, int, int, int)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        bar = QHBoxLayout()
        self.show_combo = QComboBox(toolTip="What the image shows: one frame, the sum, mean "
                                    "or max of frames first..last, or a per-pixel map of "
                                    "the inspection")
        for text, key in SHOW_CHOICES:
            self.show_combo.addItem(text, key)
        self.first_spin = QSpinBox(minimum=0, maximum=0, toolTip="Frame (first frame of a "
                                   "range), counted from 0")
        self.last_spin = QSpinBox(minimum=0, maximum=0, toolTip="Last frame of the range "
                                  "(inclusive)", enabled=False)
        self.log_check = QCheckBox("log", checked=True, toolTip="log10 colour scale "
                                   "(pixels without counts a decade below the lowest)")
        self.bins_combo = QComboBox(toolTip="Draw the q-map's dynamic bins over the image")
        for text, key in (("no bins", "none"), ("bin outlines", "outline"),
                          ("bin colours", "colour")):
            self.bins_combo.addItem(text, key)
        self.bins_combo.setCurrentIndex(1)
        self.mask_check = QCheckBox("mask", checked=True, toolTip="Grey: pixels the q-map "
                                    "masks; red: masked in the Detector tab")
        self.roi_btn = QPushButton("Draw ROI", checkable=True,
                                   toolTip="Drag a rectangle on the image: its photons "
                                   "against time, with their power spectrum")
        for w in (self.show_combo, QLabel("frame"), self.first_spin, QLabel("to"),
                  self.last_spin, self.log_check, self.bins_combo, self.mask_check,
                  self.roi_btn):
            bar.addWidget(w)
        bar.addStretch(1)
        lay.addLayout(bar)
        self.slider = QSlider(Qt.Orientation.Horizontal, minimum=0, maximum=0,
                              toolTip="Frame")
        lay.addWidget(self.slider)
        self.view = PickViewBox()
        self.view.invertY(True)
        self.view.setAspectLocked(True)
        self.plot = pg.PlotItem(viewBox=self.view)
        self.plot.setLabel("bottom", "column (pixel)")
        self.plot.setLabel("left", "row (pixel)")
        self.image = WorkerImageView(self.plot)
        self.image.set_colormap("viridis", colormap("viridis"))
        self.bins_item = pg.ImageItem()
        self.mask_item = MaskOverlayItem()
        for z, it in ((2, self.bins_item), (3, self.mask_item)):
            it.setZValue(z)
            self.view.addItem(it)
        self.marks = pg.ScatterPlotItem(symbol="o", size=14, pen=pg.mkPen("r", width=2),
                                        brush=None)
        self.marks.setZValue(20)
        self.view.addItem(self.marks)
        self.region = pg.PlotCurveItem(pen=pg.mkPen("#E69F00", width=2))
        self.region.setZValue(21)
        self.view.addItem(self.region)
        lay.addWidget(self.image, 1)
        self.readout = QLabel(" ")
        self.readout.setToolTip("Value, q-bin and pixel under the mouse")
        lay.addWidget(self.readout)
        self.data = None  # the ImageData shown
        self.qmap = None
        self._framed: tuple | None = None  # (shape, box) framed last
        self._box: tuple = ((0, 0), None)
        self._outline = self._colour = None
        self._timer = QTimer(self, singleShot=True, interval=REQUEST_MS)
        self._timer.timeout.connect(self.sigRequest.emit)
        self.show_combo.currentIndexChanged.connect(self._on_show_changed)
        self.first_spin.valueChanged.connect(self._on_first_changed)
        self.last_spin.valueChanged.connect(lambda _v: self._schedule())
        self.slider.valueChanged.connect(self.first_spin.setValue)
        self.log_check.toggled.connect(lambda _b: self._schedule())
        self.bins_combo.currentIndexChanged.connect(lambda _i: self._show_bins())
        self.mask_check.toggled.connect(self.mask_item.setVisible)
        self.roi_btn.toggled.connect(self._on_roi_toggled)
        self.view.sigPicked.connect(self._on_picked)
        self.view.sigDrawDrag.connect(self._on_drag)
        self._proxy = pg.SignalProxy(self.plot.scene().sigMouseMoved, rateLimit=30,
                                     slot=self._on_mouse_moved)

    # ------------------------------------------------------------- source
    def set_source(self, n_frames: int, shape: tuple[int, int], qmap,
                   outline: np.ndarray | None, colour: np.ndarray | None,
                   box: tuple[int, int, int, int] | None = None) -> None:
        """A new source: frame ranges, bins and mask; nothing shown until its image,
        which is framed on ``box`` (rows r0..r1-1, columns c0..c1-1: the q-map's bins)
        or whole."""
        for w in (self.first_spin, self.last_spin, self.slider):
            w.blockSignals(True)
            w.setMaximum(max(0, n_frames - 1))
            w.blockSignals(False)
        self.last_spin.blockSignals(True)
        self.last_spin.setValue(min(max(0, n_frames - 1), self.first_spin.value() + 99))
        self.last_spin.blockSignals(False)
        self.qmap = qmap
        self._outline, self._colour = outline, colour
        self.image.clear()
        self.data = None
        self.marks.setData([], [])
        self.region.setData([], [])
        self._show_bins()
        if self._framed != (tuple(shape), box):
            self._framed = None
        self._box = (tuple(shape), box)

    def set_mask(self, overlay: np.ndarray | None) -> None:
        """The mask overlay (uint8 for :data:`MASK_LUT`), or None: no mask drawn."""
        if overlay is None:
            self.mask_item.clear()
        else:
            self.mask_item.setImage(overlay, levels=(0, 2), autoLevels=False)

    def _show_bins(self) -> None:
        key = self.bins_combo.currentData()
        img = {"outline": self._outline, "colour": self._colour}.get(key)
        if img is None:
            self.bins_item.clear()
            return
        lut = OUTLINE_LUT if key == "outline" else bins_lut()
        # levels 0..n-1: uint8 indices straight into the table (None draws nothing)
        self.bins_item.setImage(img, levels=(0, len(lut) - 1), autoLevels=False, lut=lut)

    # ------------------------------------------------------------ request
    def request(self) -> tuple:
        """What to show now: ("one"|"sum"|"mean"|"max", first, last, log) or
        ("map", kind, log)."""
        key = self.show_combo.currentData()
        log = self.log_check.isChecked()
        if key in MAP_OF:
            return ("map", MAP_OF[key], log)
        first = self.first_spin.value()
        last = first if key == "one" else max(first, self.last_spin.value())
        return (key, first, last, log)

    def show_frame(self, frame: int) -> None:
        """Show frame ``frame`` (one frame; a map shown gives way to the frame)."""
        if self.show_combo.currentData() in MAP_OF:
            self.show_combo.setCurrentIndex(0)
        self.first_spin.setValue(int(frame))
        # a click asks for one frame: read it now (the timer gathers slider moves)
        self._timer.stop()
        self.sigRequest.emit()

    def _schedule(self) -> None:
        self._timer.start()

    def _on_show_changed(self, _i: int) -> None:
        key = self.show_combo.currentData()
        frames = key not in MAP_OF
        self.first_spin.setEnabled(frames)
        self.slider.setEnabled(frames)
        self.last_spin.setEnabled(frames and key != "one")
        self._schedule()

    def _on_first_changed(self, v: int) -> None:
        self.slider.blockSignals(True)
        self.slider.setValue(v)
        self.slider.blockSignals(False)
        if self.last_spin.value() < v:
            self.last_spin.blockSignals(True)
            self.last_spin.setValue(v)
            self.last_spin.blockSignals(False)
        self._schedule()

    # ------------------------------------------------------------ drawing
    def show_data(self, data) -> None:
        """Show an ``ImageData`` made by a worker."""
        self.data = data
        first = self._framed != self._box
        self.image.show_pixels(data.pixels, data.levels, data.histogram,
                               auto_range=first and self._box[1] is None, source=data.shown)
        if first and self._box[1] is not None:
            r0, r1, c0, c1 = self._box[1]
            self.view.setRange(xRange=(c0, c1), yRange=(r0, r1), padding=0.05)
        self._framed = self._box
        self.plot.setTitle(_title(data.what, data.log))

    def mark_pixels(self, pixels) -> None:
        """Circle ``pixels`` ((row, col) pairs)."""
        if not len(pixels):
            self.marks.setData([], [])
            return
        p = np.asarray(pixels, dtype=np.float64).reshape(-1, 2)
        self.marks.setData(p[:, 1] + 0.5, p[:, 0] + 0.5)

    def frame_all(self) -> None:
        frame_image(self.view, self.image.image_item)

    # -------------------------------------------------------------- mouse
    def _on_picked(self, pos) -> None:
        r, c = math.floor(pos.y()), math.floor(pos.x())
        if self.data is not None:
            h, w = self.data.pixels.shape
            if 0 <= r < h and 0 <= c < w:
                self.sigPixelPicked.emit(r, c)

    def _on_roi_toggled(self, on: bool) -> None:
        self.view.drawing = on

    def _on_drag(self, start, now, finished: bool) -> None:
        x0, x1 = sorted((start.x(), now.x()))
        y0, y1 = sorted((start.y(), now.y()))
        c0, c1 = math.floor(x0), math.ceil(x1)
        r0, r1 = math.floor(y0), math.ceil(y1)
        self.set_region(r0, r1, c0, c1)
        if finished:
            self.roi_btn.setChecked(False)
            if r1 > r0 and c1 > c0:
                self.sigRegionDrawn.emit(r0, r1, c0, c1)

    def set_region(self, r0: int, r1: int, c0: int, c1: int) -> None:
        """Outline rows r0..r1-1, columns c0..c1-1."""
        self.region.setData([c0, c1, c1, c0, c0], [r0, r0, r1, r1, r0])

    def _on_mouse_moved(self, evt) -> None:
        if self.data is None:
            return
        p = self.view.mapSceneToView(evt[0])
        r, c = math.floor(p.y()), math.floor(p.x())
        h, w = self.data.image.shape
        if not (0 <= r < h and 0 <= c < w):
            self.readout.setText(" ")
            return
        text = f"value {float(self.data.image[r, c]):.6g}  row {r} col {c}"
        if self.qmap is not None:
            b = int(self.qmap.dynamic_roi_map[r, c])
            text += f"  q-bin {b}" if b else "  (no q-bin)"
            if not bool(self.qmap.mask[r, c]):
                text += "  (masked)"
        self.readout.setText(text)


def _title(what: tuple, log: bool) -> str:
    scale = "log10 " if log else ""
    if what[0] == "map":
        names = {"flux": "mean flux (photons/s/pixel)", "max": "max count in one frame",
                 "cap": "frames at the counter cap"}
        return scale + names.get(what[1], what[1])
    how, first, last = what
    if how == "one":
        return f"{scale}counts, frame {first}"
    return f"{scale}{how} of frames {first}..{last}"


def _coloured(text: str, i: int) -> str:
    """``text`` in the colour of curve ``i`` (HTML for a plot title)."""
    return f'<span style="color:{curve_color(i).name()}">{text}</span>'


def _pick_box() -> PickViewBox:
    return PickViewBox()


def _long_curve(plot: pg.PlotItem, pen) -> pg.PlotDataItem:
    """A curve of up to millions of points (one a frame): drawn from the visible range,
    peak-downsampled to the plot's width, without antialiasing (a 1-px pen looks the
    same). The plot item's own settings are set too: its addItem applies them."""
    plot.setDownsampling(auto=True, mode="peak")
    plot.setClipToView(True)
    c = pg.PlotDataItem(pen=pen, antialias=False)
    plot.addItem(c)
    c.setDownsampling(auto=True, method="peak")
    c.setClipToView(True)
    return c


class TimelinePlots(pg.GraphicsLayoutWidget):
    """Photons per frame, occupancy and the fraction at the counter cap over the run,
    x-linked; a click picks a frame."""

    sigFramePicked = Signal(int)

    NAMES = (("photons", "photons / frame"), ("occupancy", "occupancy"),
             ("cap", "fraction at cap"))

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.plots: dict[str, pg.PlotItem] = {}
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.lines: list[pg.InfiniteLine] = []
        self.regions: list[pg.LinearRegionItem] = []
        first = None
        for row, (key, label) in enumerate(self.NAMES):
            box = _pick_box()
            p = plain_axes(self.addPlot(row=row, col=0, viewBox=box))
            p.setLabel("left", label)
            p.showGrid(x=True, y=True, alpha=0.3)
            p.setMenuEnabled(False)
            if first is None:
                first = p
            else:
                p.setXLink(first)
            c = _long_curve(p, curve_pen(row, 1.0))
            line = pg.InfiniteLine(angle=90, pen=pg.mkPen("#D55E00", width=1))
            line.setVisible(False)
            p.addItem(line)
            # edged: a one-frame finding is a line on a run of 10^5 frames
            reg = pg.LinearRegionItem(movable=False, brush=pg.mkBrush(230, 30, 30, 50),
                                      pen=pg.mkPen(230, 30, 30, 200))
            reg.setVisible(False)
            p.addItem(reg)
            box.sigPicked.connect(lambda pos: self._picked(pos.x()))
            self.plots[key], self.curves[key] = p, c
            self.lines.append(line)
            self.regions.append(reg)
        self.plots["cap"].setLabel("bottom", "frame")
        self.n_frames = 0

    def set_data(self, photons, occupancy, cap) -> None:
        """The three (N,) timelines (None: clear)."""
        if photons is None:
            for c in self.curves.values():
                c.setData([], [])
            self.n_frames = 0
            return
        x = np.arange(len(photons), dtype=np.float64)
        self.n_frames = len(photons)
        for key, y in (("photons", photons), ("occupancy", occupancy), ("cap", cap)):
            self.curves[key].setData(x, np.asarray(y, dtype=np.float64))
        self.plots["photons"].enableAutoRange()

    def set_frame(self, frame: int | None) -> None:
        for line in self.lines:
            line.setVisible(frame is not None)
            if frame is not None:
                line.setValue(frame)

    def set_highlight(self, ranges: list[tuple[int, int]]) -> None:
        """Shade frames first..last of the first range (a selected finding)."""
        for reg in self.regions:
            reg.setVisible(bool(ranges))
            if ranges:
                a, b = ranges[0]
                reg.setRegion((a - 0.5, b + 0.5))

    def _picked(self, x: float) -> None:
        if self.n_frames:
            self.sigFramePicked.emit(int(min(max(round(x), 0), self.n_frames - 1)))


class TracePlots(pg.GraphicsLayoutWidget):
    """A region's photons against time (with its control, scaled to the same mean) above
    both power spectra; a click on the trace picks a frame."""

    sigFramePicked = Signal(int)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        box = _pick_box()
        self.trace_plot = plain_axes(self.addPlot(row=0, col=0, viewBox=box))
        self.trace_plot.setLabel("left", "photons / frame")
        self.trace_plot.setMenuEnabled(False)
        self.spec_plot = plain_axes(self.addPlot(row=1, col=0,
                                                 axisItems={"left": SparseLogAxis("left")}))
        self.spec_plot.setLogMode(x=False, y=True)
        self.spec_plot.setLabel("left", "relative power")
        for p in (self.trace_plot, self.spec_plot):
            p.showGrid(x=True, y=True, alpha=0.3)
        self.control = _long_curve(self.trace_plot, curve_pen(7, 1.0))
        self.trace = _long_curve(self.trace_plot, curve_pen(0, 1.0))
        self.control_power = _long_curve(self.spec_plot, curve_pen(7, 1.0))
        self.power = _long_curve(self.spec_plot, curve_pen(0, 1.0))
        box.sigPicked.connect(lambda pos: self._picked(pos.x()))
        self.data = None
        self.frame_time: float | None = None

    def set_data(self, data, frame_time: float | None) -> None:
        """Draw a ``TraceData`` (None: clear). The titles name the curves in their
        colours (a legend box would hide the data of these short plots)."""
        self.data, self.frame_time = data, frame_time
        if data is None:
            for c in (self.control, self.trace, self.control_power, self.power):
                c.setData([], [])
            self.trace_plot.setTitle("")
            self.spec_plot.setTitle("")
            return
        n = len(data.trace)
        scale = frame_time if frame_time else 1.0
        t = np.arange(n, dtype=np.float64) * scale
        self.trace_plot.setLabel("bottom", "t (s)" if frame_time else "frame")
        self.spec_plot.setLabel("bottom", "frequency (Hz)" if frame_time
                                else "frequency (1/frame)")
        self.trace.setData(t, data.trace)
        ok = data.freq > 0
        self.power.setData(data.freq[ok], np.maximum(data.power[ok], 1e-300))
        # the x ranges from the data: auto-downsampling sizes its step to the view, and
        # a run of 200 us (Timepix frames of 31 ns) seen through the default 0..1 view
        # keeps no point for the auto-range to see
        if n > 1:
            self.trace_plot.setXRange(0.0, float(t[-1]), padding=0.02)
        if np.any(ok):
            f = data.freq[ok]
            self.spec_plot.setXRange(float(f[0]), float(f[-1]), padding=0.02)
        self.trace_plot.enableAutoRange(y=True)
        self.spec_plot.enableAutoRange(y=True)
        mine = _coloured(data.label, 0)
        if data.control is None:
            self.control.setData([], [])
            self.control_power.setData([], [])
            self.trace_plot.setTitle(mine, size="9pt")
            self.spec_plot.setTitle(f"power spectrum of {mine}", size="9pt")
            return
        mc, mt = float(np.mean(data.control)), float(np.mean(data.trace))
        k = mt / mc if mc > 0 else 1.0
        self.control.setData(t, data.control * k)
        self.control_power.setData(data.freq[ok], np.maximum(data.control_power[ok], 1e-300))
        other = _coloured(data.control_label, 7)
        self.trace_plot.setTitle(f"{mine} and {other} (\u00d7{k:.3g})", size="9pt")
        self.spec_plot.setTitle(f"relative power: {mine} and {other}", size="9pt")

    def _picked(self, x: float) -> None:
        if self.data is None:
            return
        f = x / self.frame_time if self.frame_time else x
        self.sigFramePicked.emit(int(min(max(round(f), 0), len(self.data.trace) - 1)))


class PkPlot(pg.PlotWidget):
    """P(k), the probability of k counts in a pixel of a q-bin per frame (log y)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent, axisItems={"left": SparseLogAxis("left")})
        self.plot = plain_axes(self.getPlotItem())
        self.plot.setLogMode(x=False, y=True)
        self.plot.setLabel("bottom", "k (counts per pixel per frame)")
        self.plot.setLabel("left", "P(k)")
        self.plot.showGrid(x=True, y=True, alpha=0.3)
        self.points = pg.PlotDataItem(pen=curve_pen(0, 1.0), symbol="o", symbolSize=6,
                                      symbolBrush=curve_color(0))
        self.tail = pg.PlotDataItem(pen=None, symbol="t", symbolSize=9,
                                    symbolBrush=curve_color(1))
        self.plot.addItem(self.points)
        self.plot.addItem(self.tail)
        self.k = np.zeros(0)
        self.p = np.zeros(0)

    def set_counts(self, counts: np.ndarray | None, q_bin: int | None) -> None:
        """Draw the counts of one q-bin's row of ``count_hist`` (last entry: k > kmax)."""
        if counts is None or q_bin is None or float(np.sum(counts)) <= 0:
            self.points.setData([], [])
            self.tail.setData([], [])
            self.plot.setTitle("P(k): needs a q-map and an inspection", size="9pt")
            return
        c = np.asarray(counts, dtype=np.float64)
        p = c / c.sum()
        k = np.arange(c.size, dtype=np.float64)
        ok = p[:-1] > 0
        self.k, self.p = k[:-1][ok], p[:-1][ok]
        self.points.setData(self.k, self.p)
        if p[-1] > 0:
            self.tail.setData([k[-1]], [p[-1]])
        else:
            self.tail.setData([], [])
        kmax = c.size - 2
        mean = float(np.sum(k[:-1] * c[:-1]) / c.sum())
        # short: a title wider than the page widens the plot past its edge
        self.plot.setTitle(f"q-bin {q_bin}: mean {mean:.4g} counts", size="9pt")
        self.setToolTip(f"P(k) of q-bin {q_bin} over all frames and valid pixels; a "
                        f"\u25b2 at {kmax + 1} stands for k > {kmax}")
