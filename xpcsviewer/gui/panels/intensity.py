"""Intensity-Time: traces of all targets, moving average, FFT and a linked zoom region."""

from __future__ import annotations

import threading
import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QVBoxLayout,
)

from xpcsviewer.gui.panels.base import BasePanel
from xpcsviewer.gui.widgets import (
    SparseLogAxis,
    curve_pen,
    plain_axes,
    prepare_axes,
    side_legend,
)
from xpcsviewer.gui.workers import wait_for_event_job
from xpcsviewer.views.decimate import envelope
from xpcsviewer.views.intensity import intensity_fft, intensity_traces, sample_interval

__all__ = ["IntensityPanel", "prepare_intensity", "zoom_view"]


#: Points per curve drawn in the overview and spectrum plots (min/max envelope).
SCREEN_BINS = 800
#: Runs per curve in the zoom plot (the data itself when the region holds fewer points).
ZOOM_BINS = 500
#: GUI-thread time per drawing slice (with the one paint at the end, under 100 ms)
_SLICE_S = 0.025
_TURN = object()  # yielded by a drawing step: end this slice now
_EMPTY = np.zeros(0)


def zoom_view(x: np.ndarray, y: np.ndarray, a: float, b: float,
              n_bins: int = ZOOM_BINS) -> tuple[np.ndarray, np.ndarray]:
    """The points of a sorted trace inside [a, b] (one more each side), as a min/max
    envelope when there are more than the screen shows."""
    i0 = max(int(np.searchsorted(x, a, side="left")) - 1, 0)
    i1 = min(int(np.searchsorted(x, b, side="right")) + 1, x.size)
    if i1 - i0 <= 2 * n_bins:
        return x[i0:i1], y[i0:i1]
    xe, ye = envelope(x[i0 + 1:i1 - 1], y[i0 + 1:i1 - 1], n_bins)
    # the outer points too, so the curve reaches both edges of the view
    return (np.concatenate([x[i0:i0 + 1], xe, x[i1 - 1:i1]]),
            np.concatenate([y[i0:i0 + 1], ye, y[i1 - 1:i1]]))


def prepare_intensity(results, window: int, time_axis: bool, sampling: int, progress=None,
                      cancel=None) -> dict:
    """Worker job: traces (smoothed), their spectra, and screen-sized envelopes of both
    (the GUI thread then draws O(screen) points, not 11 x 100,000)."""
    traces = intensity_traces(results, window=window, time_axis=time_axis, sampling=sampling)
    spectra, env, env_fft = [], [], []
    for c in traces:
        if cancel is not None:
            cancel.raise_if_cancelled()
        res = results[c.index]
        raw = np.asarray(res.intensity_vs_time, dtype=np.float64)
        step = float(np.median(np.diff(raw[0]))) if raw.shape[1] > 1 else 1.0
        dt = step * (sample_interval(res) if time_axis else 1.0)
        f, mag = intensity_fft(raw[1], dt)
        spectra.append((f, mag))
        env.append(envelope(c.x, c.y, SCREEN_BINS))
        env_fft.append(envelope(f[1:], mag[1:], SCREEN_BINS) if f.size > 1 else (f, mag))
    return {"traces": traces, "spectra": spectra, "time_axis": time_axis,
            "envelopes": env, "fft_envelopes": env_fft}


class IntensityPanel(BasePanel):
    """Top: all traces with a draggable region; bottom-left: |FFT|; bottom-right: zoom."""

    name = "intensity"
    title = "Intensity"  # vs time: the short name keeps every tab in sight (issue 33)
    figure_kind = "intensity"

    def __init__(self, context, parent=None) -> None:
        super().__init__(context, parent)
        self.data = None
        self._staged: threading.Event | None = None
        self._draw_gen = None
        lay = QVBoxLayout(self)
        bar = QHBoxLayout()
        self.window = QSpinBox(minimum=1, maximum=9999, value=1,
                               toolTip="Moving-average window (samples)")
        self.sampling = QSpinBox(minimum=1, maximum=1000, value=1, toolTip="Every k-th point")
        self.xaxis = QComboBox(toolTip="x axis")
        self.xaxis.addItems(["time (s)", "frame index"])
        self.fft_log = QCheckBox("log FFT", checked=True)
        self.fft_log.setToolTip("Logarithmic power axis of the FFT plot (default on)")
        for w in (QLabel("moving average"), self.window, QLabel("sampling"), self.sampling,
                  QLabel("x"), self.xaxis, self.fft_log, QLabel("max files"),
                  self.max_files_box()):
            bar.addWidget(w)
        bar.addStretch(1)
        lay.addLayout(bar)
        self.glw = pg.GraphicsLayoutWidget()
        self.p_full = self.glw.addPlot(row=0, col=0, colspan=2)
        self.p_fft = self.glw.addPlot(row=1, col=0, axisItems={"left": SparseLogAxis("left")})
        self.p_zoom = self.glw.addPlot(row=1, col=1)
        for p in (self.p_full, self.p_fft, self.p_zoom):
            plain_axes(p)
            p.showGrid(x=True, y=True, alpha=0.3)
        self._full_items: list[pg.PlotDataItem] = []
        self._fft_items: list[pg.PlotDataItem] = []
        self._zoom_items: list[pg.PlotDataItem] = []
        self._legend_keys = None
        self.legend = side_legend(self.p_full)  # beside the traces, never over them
        self.p_full.setLabel("left", "I (photons/pixel/frame)")
        self.p_zoom.setLabel("left", "I (photons/pixel/frame)")
        self.p_fft.setLabel("bottom", "frequency (Hz)")
        self.p_fft.setLabel("left", "|FFT|")
        self.p_fft.setTitle("spectrum (mean removed)")
        self.p_zoom.setTitle("zoom (drag the region above)")
        self.region = pg.LinearRegionItem(brush=pg.mkBrush(0, 120, 255, 40))
        self.region.setZValue(10)
        self.region.sigRegionChanged.connect(self._on_region_changed)
        self.p_zoom.sigXRangeChanged.connect(self._on_zoom_range_changed)
        lay.addWidget(self.glw, 1)
        self.window.editingFinished.connect(self.refresh)
        self.sampling.editingFinished.connect(self.refresh)
        self.xaxis.currentIndexChanged.connect(lambda _i: self.refresh())
        self.fft_log.toggled.connect(lambda on: self.p_fft.setLogMode(x=False, y=on))
        self.p_fft.setLogMode(x=False, y=True)
        self._syncing = False

    def applies_to(self, results):
        if not results:
            return "Select one or more result files first"
        if all(r.intensity_vs_time is None for r in results):
            return "No intensity-vs-time data in these files"
        return None

    def refresh(self) -> None:
        if not self.results:
            return
        self.submit("traces", prepare_intensity, self.shown_results(), self.window.value(),
                    self.xaxis.currentIndex() == 0, self.sampling.value(),
                    on_result=self._on_data, description="Intensity-Time")

    def _on_data(self, data: dict) -> None:
        # Drawn in slices with the view's updates off, then painted once on a turn of
        # its own. Painting each stage, with the work pyqtgraph defers to a paint
        # (relayout after resized axes, auto ranges, tick labels, curve paths), chained
        # two or three full paints into one stall of 60-110 ms.
        steps = self._draw_steps(data)
        if getattr(self.context.runner, "synchronous", False):
            for _ in steps:
                pass
            return
        if self._staged is not None:
            self._staged.set()
        # a placeholder job keeps the runner busy until the picture is drawn, so
        # "wait until idle" (snapshot, tests) waits for the whole picture
        self._staged = threading.Event()
        self.submit("draw", wait_for_event_job, self._staged,
                    description="Intensity-Time: drawing")
        self._draw_gen = steps
        self.glw.setUpdatesEnabled(False)
        QTimer.singleShot(5, self._draw_step)

    def _draw_step(self) -> None:
        gen = self._draw_gen
        if gen is None:
            return
        t_end = time.monotonic() + _SLICE_S
        try:
            for step in gen:
                if gen is not self._draw_gen:
                    return  # a newer update took over
                if step is _TURN or time.monotonic() > t_end:
                    QTimer.singleShot(5, self._draw_step)
                    return
        except Exception:
            self._end_draw()  # never leave the view frozen
            raise
        if gen is self._draw_gen:
            self._draw_gen = None

    def _end_draw(self) -> None:
        self._draw_gen = None
        self.glw.setUpdatesEnabled(True)
        if self._staged is not None:
            self._staged.set()

    def _draw_steps(self, data: dict):
        """Generator: the picture of ``data``, in steps of a few ms each."""
        n = len(data["traces"])
        for items, plot in ((self._full_items, self.p_full), (self._fft_items, self.p_fft),
                            (self._zoom_items, self.p_zoom)):
            while len(items) < n:  # new curve items: ~1 ms each
                items.append(self._new_item(plot))
                if len(items) % 8 == 0:
                    yield
        self._show_data(data)
        yield
        self._show_spectra(data)
        yield
        self._on_region_changed()  # the zoom plot
        yield
        scene = self.glw.scene()
        plots = (self.p_full, self.p_fft, self.p_zoom)
        # What the paint would do, now: auto ranges and view transforms; tick labels
        # measured (they may resize an axis), so the layout settles before the paint.
        for _ in range(3):
            scene.prepareForPaint()
            for p in plots:
                prepare_axes(p)
            if not self._activate_layouts():
                break
            yield
        yield
        for items in (self._full_items, self._fft_items, self._zoom_items):
            for item in items:
                if item.isVisible():
                    item.curve.getPath()
                    item.boundingRect()
            yield
        yield _TURN  # the paint of the whole picture: a turn of its own
        self._end_draw()
        self.sigUpdated.emit()

    def _activate_layouts(self) -> bool:
        """Lay out now what a size change has invalidated; True when a size changed."""
        before = [p.vb.size() for p in (self.p_full, self.p_fft, self.p_zoom)]
        self.glw.ci.layout.activate()
        for p in (self.p_full, self.p_fft, self.p_zoom):
            p.layout.activate()
        return before != [p.vb.size() for p in (self.p_full, self.p_fft, self.p_zoom)]

    def _show_data(self, data: dict) -> None:
        if self.shown_note():
            self.context.show_status(f"Intensity-Time: {len(data['traces'])} trace(s)"
                                     f"{self.shown_note()}")
        first = self.data is None or self.data["time_axis"] != data["time_axis"]
        self.data = data
        xlabel = "time (s)" if data["time_axis"] else "frame index"
        self.p_full.setLabel("bottom", xlabel)
        self.p_zoom.setLabel("bottom", xlabel)
        n = len(data["traces"])
        # items are reused (setData): making and adding ~30 plot items costs more
        # than drawing them
        full = self._pool(self._full_items, self.p_full, n)
        fft = self._pool(self._fft_items, self.p_fft, n)
        zoom = self._pool(self._zoom_items, self.p_zoom, n)
        keys = tuple((c.index, c.label) for c in data["traces"])
        if keys != self._legend_keys:
            self.legend.clear()
            for item, c in zip(full, data["traces"], strict=True):
                self.legend.addItem(item, c.label)
            self._legend_keys = keys
        lo, hi, ylo, yhi = np.inf, -np.inf, np.inf, -np.inf
        for k, (c, (xe, ye), (_fe, _me)) in enumerate(zip(data["traces"], data["envelopes"],
                                                         data["fft_envelopes"], strict=True)):
            pen = curve_pen(c.index, 1.0)
            full[k].setData(xe, ye, pen=pen)
            zoom[k].setPen(pen)  # its data: _fill_zoom, for the region
            fft[k].setPen(pen)  # its data: _show_spectra, the next step
            if c.x.size:
                lo, hi = min(lo, float(c.x[0])), max(hi, float(c.x[-1]))
            if ye.size and np.isfinite(ye).any():
                ylo, yhi = min(ylo, float(np.nanmin(ye))), max(yhi, float(np.nanmax(ye)))
        if np.isfinite([lo, hi, ylo, yhi]).all() and hi > lo:
            # a fixed range: auto-range would scan every curve at every paint
            self.p_full.disableAutoRange()
            self.p_full.setRange(xRange=(lo, hi), yRange=(ylo, yhi if yhi > ylo else ylo + 1),
                                 padding=0.02)
        if self.region.scene() is None:
            self.p_full.addItem(self.region)
        if np.isfinite(lo) and hi > lo:
            reg = self.region.getRegion()
            self._syncing = True  # the zoom plot follows in its own step
            try:
                if first or not (lo <= reg[0] < reg[1] <= hi):
                    # Start at the golden-ratio point, 5 % wide, as users know it.
                    a = lo + 0.618 * (hi - lo)
                    self.region.setRegion((a, a + 0.05 * (hi - lo)))
                self.region.setBounds((lo, hi))
            finally:
                self._syncing = False

    def _show_spectra(self, data: dict) -> None:
        self.p_fft.setLabel("bottom", "frequency (Hz)" if data["time_axis"]
                            else "frequency (1/frame)")
        for item, (fe, me) in zip(self._fft_items, data["fft_envelopes"], strict=False):
            if fe.size > 1:
                item.setData(fe, me)
            else:
                item.setData(_EMPTY, _EMPTY)

    def _on_region_changed(self) -> None:
        if self._syncing:
            return
        self._syncing = True
        try:
            a, b = self.region.getRegion()
            self._fill_zoom(a, b)
            self.p_zoom.setXRange(a, b, padding=0)
        finally:
            self._syncing = False

    def _on_zoom_range_changed(self, _vb, rng) -> None:
        if self._syncing:
            return
        self._syncing = True
        try:
            self.region.setRegion(rng)
            self._fill_zoom(*rng)
        finally:
            self._syncing = False

    def _fill_zoom(self, a: float, b: float) -> None:
        if not self.data:
            return
        for item, c in zip(self._zoom_items, self.data["traces"], strict=False):
            item.setData(*zoom_view(c.x, c.y, a, b))

    @staticmethod
    def _new_item(plot) -> pg.PlotDataItem:
        # dense noisy traces: antialiasing costs ~3x the paint time and shows nothing
        item = pg.PlotDataItem(antialias=False)
        item.setVisible(False)
        plot.addItem(item)
        return item

    @staticmethod
    def _pool(items: list, plot, n: int) -> list:
        """``n`` visible curve items of ``plot`` (made once, then reused); the rest hidden."""
        while len(items) < n:
            items.append(IntensityPanel._new_item(plot))
        for k, item in enumerate(items):
            item.setVisible(k < n)
        return items[:n]

    def clear_plots(self) -> None:
        self._end_draw()
        self.data = None
        for items in (self._full_items, self._fft_items, self._zoom_items):
            for item in items:
                item.setData(_EMPTY, _EMPTY)
                item.setVisible(False)
        self.legend.clear()
        self._legend_keys = None

    def figure_options(self) -> dict:
        return {"window": self.window.value(), "time_axis": self.xaxis.currentIndex() == 0,
                "fft": True, "sampling": self.sampling.value()}

    def data_columns(self):
        if not self.data:
            return None
        cols = {}
        xname = "t (s)" if self.data["time_axis"] else "frame"
        for c in self.data["traces"]:
            cols[f"{xname}[{c.label}]"] = c.x
            cols[f"I[{c.label}]"] = c.y
        return cols, [f"Intensity vs time, moving average {self.window.value()} samples",
                      "I: mean photons/pixel/frame"]

    def get_settings(self) -> dict:
        return {"window": self.window.value(), "sampling": self.sampling.value(),
                "time_axis": self.xaxis.currentIndex() == 0, "fft_log": self.fft_log.isChecked()}

    def set_settings(self, s: dict) -> None:
        for key, w in (("window", self.window), ("sampling", self.sampling)):
            v = s.get(key)
            if isinstance(v, int) and not isinstance(v, bool) and v >= 1:
                w.setValue(v)
        if isinstance(s.get("time_axis"), bool):
            self.xaxis.setCurrentIndex(0 if s["time_axis"] else 1)
        if isinstance(s.get("fft_log"), bool):
            self.fft_log.setChecked(s["fft_log"])
