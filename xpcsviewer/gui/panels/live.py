"""Live: follow an acquisition while the detector writes it (docs/live.md).

Choose a source (a raw file being written: HDF5 frames, ESRF sparse HDF5 or a Rigaku
``.bin``; or a folder receiving block files) and a
q-map (found beside the source when there is one), press Start. A worker runs
:func:`xpcsviewer.jobs.live.follow`; every update (frames seen and rate, the partial g2
per q-bin with its fits, tau(q), contrast(q) and the intensity trace) goes into a sink
that a 250 ms timer on the GUI thread reads, drawing only the newest into plot items that
are updated in place: the GUI thread never waits for the worker. Stop finishes with the
frames read so far; when the acquisition ends the result file is opened as a target.
"""

from __future__ import annotations

import math
import threading
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QDoubleValidator
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
)

from xpcsviewer.compute.spec import CorrelateSpec
from xpcsviewer.fitting.vocabulary import ROUGH_STATUSES
from xpcsviewer.gui.panels._live_jobs import (
    UpdateSink,
    drawn_points,
    live_job,
    no_photon_note,
    qmap_beside_job,
)
from xpcsviewer.gui.panels.base import BasePanel, apply_settings
from xpcsviewer.gui.widgets import SparseLogAxis, curve_color, curve_pen, plain_axes

__all__ = ["LivePanel"]

#: g2 curves drawn at most (bins spread over the q range)
MAX_CURVES = 8
#: How a run that ended on a problem with its source says so (``LiveUpdate.problem``).
PROBLEM_WORDS = {"truncated": "the source was truncated", "replaced": "the source file was "
                 "replaced", "recreated": "the frame dataset was re-created",
                 "corrupt": "a block file is corrupt",
                 "not_closed": "the writer did not close the file",
                 "missing_block": "a block never arrived",
                 "partial_word": "the writer stopped inside a word",
                 "idle": "no new frames and no end signal from the source"}
#: Plot items made per turn of the event loop (see ``LivePanel._draw_curves``).
NEW_ITEMS_PER_TURN = 3
POLL_MS = 250


def _shown_bins(n: int, k: int = MAX_CURVES) -> list[int]:
    """0-based columns of at most ``k`` bins spread over ``n``."""
    if n <= k:
        return list(range(n))
    return sorted({round(x) for x in np.linspace(0, n - 1, k)})


def _log_err(v: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Error-bar lengths (up, down) in log10 units for values ``v`` +- ``e``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        top = np.log10(v + e) - np.log10(v)
        low = np.clip(v - e, v * 1e-3, None)
        bottom = np.log10(v) - np.log10(low)
    return np.nan_to_num(top), np.nan_to_num(bottom)


def _log_axes() -> dict:
    return {"left": SparseLogAxis("left"), "bottom": SparseLogAxis("bottom")}


class LivePanel(BasePanel):
    """Follow an acquisition: frames, partial g2 with fits, tau(q), contrast, intensity."""

    name = "live"
    title = "Live"

    def __init__(self, context, parent=None) -> None:
        super().__init__(context, parent)
        self.sink: UpdateSink | None = None
        self.stop_event: threading.Event | None = None
        self.running = False
        self.last_update = None
        self.final = None
        self.updates_drawn = 0
        lay = QVBoxLayout(self)
        grid = QGridLayout()
        self.source_edit = QLineEdit(placeholderText="raw file being written (HDF5 frames, "
                                     "ESRF sparse HDF5, Rigaku .bin), or a folder of blocks")
        self.source_edit.setToolTip("Raw file or folder being written: HDF5 frames, ESRF "
                                    "sparse HDF5, Rigaku .bin")
        self.source_edit.editingFinished.connect(self._on_source_edited)
        file_btn = QPushButton("File\u2026")
        file_btn.setToolTip("Choose a raw file")
        file_btn.clicked.connect(self._browse_file)
        folder_btn = QPushButton("Folder\u2026")
        folder_btn.setToolTip("Choose a folder of frame blocks")
        folder_btn.clicked.connect(self._browse_folder)
        self.qmap_edit = QLineEdit(placeholderText="q-map (partition) file; found beside "
                                                   "the source when there is one")
        self.qmap_edit.setToolTip("q-map (partition) file; empty: the one found beside the source")
        qmap_btn = QPushButton("\u2026")
        qmap_btn.setToolTip("Choose the q-map file")
        qmap_btn.clicked.connect(self._browse_qmap)
        self.output_edit = QLineEdit(placeholderText="result file (default: beside the source)")
        self.output_edit.setToolTip("Result file written at each update; empty: beside the source")
        out_btn = QPushButton("\u2026")
        out_btn.setToolTip("Choose the result file")
        out_btn.clicked.connect(self._browse_output)
        grid.addWidget(QLabel("Source"), 0, 0)
        grid.addWidget(self.source_edit, 0, 1)
        grid.addWidget(file_btn, 0, 2)
        grid.addWidget(folder_btn, 0, 3)
        grid.addWidget(QLabel("Q-map"), 1, 0)
        grid.addWidget(self.qmap_edit, 1, 1)
        grid.addWidget(qmap_btn, 1, 2)
        grid.addWidget(QLabel("Output"), 2, 0)
        grid.addWidget(self.output_edit, 2, 1)
        grid.addWidget(out_btn, 2, 2)
        lay.addLayout(grid)
        bar = QHBoxLayout()
        self.fit_box = QCheckBox("Fit", checked=True,
                                 toolTip="Fit every update as `xpcsviewer fit` does")
        self.model_combo = QComboBox()
        self.model_combo.setToolTip("g2 model fitted at each update; automatic picks by AICc "
                                    "(default)")
        for m, text in (("auto", "automatic (AICc)"), ("single", "single"),
                        ("stretched", "stretched"), ("double", "double")):
            self.model_combo.addItem(text, m)
        self.every = QDoubleSpinBox(decimals=1, minimum=0.2, maximum=600, value=2.0,
                                    suffix=" s", toolTip="Seconds between partial results")
        self.idle = QDoubleSpinBox(decimals=1, minimum=0.5, maximum=3600, value=10.0,
                                   suffix=" s", toolTip="End after this long without a new "
                                                        "frame (a writer that stopped)")
        # a raw file without a frame time was drawn in "seconds" that were frames
        self.frame_time_edit = QLineEdit(placeholderText="from the raw file")
        self.frame_time_edit.setValidator(QDoubleValidator(1e-12, 1e6, 12))
        self.frame_time_edit.setMaximumWidth(130)
        self.frame_time_edit.setToolTip(
            "Seconds per frame, e.g. 2e-5. Empty: the raw file's frame time; where it has "
            "none, delays are drawn in frames")
        self.start_btn = QPushButton("Start")
        self.start_btn.setToolTip("Start correlating the frames as they are written")
        self.start_btn.clicked.connect(self.start)
        self.stop_btn = QPushButton("Stop", enabled=False,
                                    toolTip="Finish now with the frames read so far")
        self.stop_btn.clicked.connect(self.stop)
        for w in (self.fit_box, QLabel("model"), self.model_combo, QLabel("every"),
                  self.every, QLabel("idle end"), self.idle, QLabel("frame time"),
                  self.frame_time_edit, QLabel("s")):
            bar.addWidget(w)
        bar.addStretch(1)
        bar.addWidget(self.start_btn)
        bar.addWidget(self.stop_btn)
        lay.addLayout(bar)
        self.status = QLabel("Choose a source and a q-map, then Start.")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        f = self.status.font()
        f.setPointSizeF(f.pointSizeF() * 1.25)
        f.setBold(True)
        self.status.setFont(f)
        self.status.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        # a fixed height: a longer or shorter text must not re-lay out the plots below;
        # a long end note (why a run is partial) scrolls instead of being cut off
        box = QScrollArea()
        box.setWidget(self.status)
        box.setWidgetResizable(True)
        box.setFrameShape(QFrame.Shape.NoFrame)
        box.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        box.setFixedHeight(self.status.fontMetrics().lineSpacing() * 3 + 8)
        self.status_box = box
        lay.addWidget(box)
        plots = pg.GraphicsLayoutWidget()
        self.plots = plots
        self.g2_plot = plain_axes(plots.addPlot(row=0, col=0, title="partial g2",
                                               axisItems=_log_axes()))
        self.g2_plot.setLogMode(x=True, y=False)
        self.g2_plot.setLabel("bottom", "\u03c4 (s)")
        self.g2_plot.setLabel("left", "g2")
        self.g2_legend = self.g2_plot.addLegend(offset=(-10, 10),
                                                brush=pg.mkBrush(255, 255, 255, 200))
        self.tau_plot = plain_axes(plots.addPlot(row=0, col=1, title="\u03c4(q)",
                                               axisItems=_log_axes()))
        self.tau_plot.setLogMode(x=True, y=True)
        self.tau_plot.setLabel("bottom", "q (\u00c5\u207b\u00b9)")
        self.tau_plot.setLabel("left", "\u03c4 (s)")
        self.contrast_plot = plain_axes(plots.addPlot(row=1, col=1, title="contrast",
                                               axisItems=_log_axes()))
        self.contrast_plot.setLogMode(x=True, y=False)
        self.contrast_plot.setLabel("bottom", "q (\u00c5\u207b\u00b9)")
        self.contrast_plot.setLabel("left", "contrast")
        self.trace_plot = plain_axes(plots.addPlot(row=1, col=0, title="intensity"))
        self.trace_plot.setLabel("bottom", "t (s)")
        self.trace_plot.setLabel("left", "mean counts / pixel")
        for p in (self.g2_plot, self.tau_plot, self.contrast_plot, self.trace_plot):
            p.showGrid(x=True, y=True, alpha=0.3)
        lay.addWidget(plots, 1)
        # plot items, made once and updated in place
        self.g2_items: dict[int, pg.PlotDataItem] = {}
        self.fit_items: dict[int, pg.PlotDataItem] = {}
        self.tau_item = pg.PlotDataItem(pen=None, symbol="o", symbolSize=7,
                                        symbolBrush=curve_color(0))
        self.tau_open = pg.PlotDataItem(pen=None, symbol="o", symbolSize=7,
                                        symbolBrush=None, symbolPen=curve_pen(1))
        self.tau_err = pg.ErrorBarItem(pen=curve_pen(0, 1.0))
        for it in (self.tau_err, self.tau_item, self.tau_open):
            self.tau_plot.addItem(it)
        self.c_item = pg.PlotDataItem(pen=None, symbol="s", symbolSize=6,
                                      symbolBrush=curve_color(2))
        self.c_open = pg.PlotDataItem(pen=None, symbol="s", symbolSize=6,
                                      symbolBrush=None, symbolPen=curve_pen(1))
        self.c_err = pg.ErrorBarItem(pen=curve_pen(2, 1.0))
        for it in (self.c_err, self.c_item, self.c_open):
            self.contrast_plot.addItem(it)
        self.trace_item = pg.PlotDataItem(pen=curve_pen(6, 1.0))
        self.trace_plot.addItem(self.trace_item)
        self._show_values(False)
        self.timer = QTimer(self, interval=POLL_MS)
        self.timer.timeout.connect(self._take_update)
        self._qmap_request = 0
        context.runner.sigJobFinished.connect(self._on_job_finished)

    # ----------------------------------------------------------- targets
    def applies_to(self, results):
        return None  # needs no result file: it makes one

    def refresh(self) -> None:
        """Nothing to recompute for the targets."""

    # ------------------------------------------------------------ inputs
    def _browse_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Raw data being written", self.source_edit.text() or "",
            "Raw data: HDF5 frames or hits, Rigaku .bin (*.h5 *.hdf5 *.hdf *.nxs *.bin);;"
            "All files (*)")
        if path:
            self.set_source(path)

    def _browse_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Folder receiving block files",
                                                self.source_edit.text() or "")
        if path:
            self.set_source(path)

    def _browse_qmap(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Q-map", self.qmap_edit.text() or "",
                                              "HDF5 (*.h5 *.hdf5 *.hdf);;All files (*)")
        if path:
            self.qmap_edit.setText(path)

    def _browse_output(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Result file", self.output_path() or "",
                                              "Result files (*.hdf)")
        if path:
            self.output_edit.setText(path)

    def _on_source_edited(self) -> None:
        if self.source_edit.text().strip():
            self.set_source(self.source_edit.text().strip())

    def set_source(self, path: str) -> None:
        """Take ``path`` as the source; look for a q-map beside it (in a worker)."""
        self.source_edit.setText(str(path))
        if not self.qmap_edit.text().strip():
            self._qmap_request = self.submit("qmap-beside", qmap_beside_job, str(path),
                                             on_result=self._on_qmap_found,
                                             description="Looking for a q-map")

    def _on_qmap_found(self, path) -> None:
        if path and not self.qmap_edit.text().strip():
            self.qmap_edit.setText(path)
            self.context.show_status(f"Live: q-map {Path(path).name} found beside the source")

    def output_path(self) -> str:
        """The output file: as typed, else ``SOURCE_results.hdf`` beside the source."""
        out = self.output_edit.text().strip()
        if out:
            return out
        src = self.source_edit.text().strip()
        if not src:
            return ""
        p = Path(src.rstrip("/"))
        if "*" in p.name:
            p = p.parent
        stem = p.name if p.is_dir() else p.stem
        return str(p.parent / f"{stem}_results.hdf")

    # ----------------------------------------------------------- running
    def start(self) -> None:
        """Start following (GUI thread): validates the inputs, submits the worker."""
        from xpcsviewer.jobs.live import LiveOptions

        if self.running:
            return
        src, qmap, out = (self.source_edit.text().strip(), self.qmap_edit.text().strip(),
                          self.output_path())
        if not src or not qmap:
            self.status.setText("Choose a source and a q-map first.")
            return
        if not Path(qmap).is_file():
            self.status.setText(f"No q-map file {qmap}.")
            return
        if Path(out).resolve() == Path(src).resolve():
            self.status.setText("The output cannot be the source.")
            return
        opts = LiveOptions(every=self.every.value(), fit=self.fit_box.isChecked(),
                           model=self.model_combo.currentData(), idle=self.idle.value(),
                           spec=CorrelateSpec(frame_time=self.frame_time()))
        self.sink = UpdateSink()
        self.stop_event = threading.Event()
        self.final = None
        self.last_update = None
        self._clear_items()
        self.running = True
        self.start_btn.setEnabled(False)
        self.stop_btn.setEnabled(True)
        self.status.setText(f"Waiting for frames in {Path(src).name}\u2026")
        self.submit("follow", live_job, {"source": src, "qmap": qmap, "output": out,
                                         "options": opts}, self.sink, self.stop_event,
                    on_result=self._on_final, on_error=self._on_error,
                    description=f"Live: {Path(src).name}")
        self.timer.start()

    def stop(self) -> None:
        """Finish now with the frames read so far (the worker writes and returns)."""
        if self.stop_event is not None:
            self.stop_event.set()
            self.status.setText("Stopping: writing the result of the frames read\u2026")
        self.stop_btn.setEnabled(False)

    def _finished(self) -> None:
        self.running = False
        self.timer.stop()
        self.start_btn.setEnabled(True)
        self.stop_btn.setEnabled(False)

    def _on_error(self, info) -> None:
        self._take_update()
        self._finished()
        self.status.setText(f"Stopped: {info.message}")
        self.context.report_error(info)

    def _on_final(self, up) -> None:
        self._finished()
        self.final = up
        self._apply(up)
        if self.sink is not None:
            self.sink.take()  # the final update is drawn
        # the result is a file like any other: it joins the targets; fitted here, it
        # is fitted there too (it opened unfitted beside a status saying "fitted")
        fitted = bool(up.bins) and self.fit_box.isChecked()
        self.context.open_files([up.output],
                                fit_model=self.model_combo.currentData() if fitted else None)

    def _on_job_finished(self, key: str, _rid: int) -> None:
        # a cancel (Esc, closing the window) ends the job without a result
        if key == self.job_key("follow") and self.running:
            self._take_update()
            self._finished()
            self.status.setText("Cancelled; the last partial result stays in "
                                f"{self.output_path()}")

    def _take_update(self) -> None:
        if self.sink is None:
            return
        up = self.sink.take()
        if up is not None:
            self._apply(up)
        elif self.sink.ready and self.last_update is None and self.running:
            src = Path(self.source_edit.text().strip()).name
            if self.sink.engine == "sparse":
                self.status.setText(f"Ready (photon correlator): waiting for hits in "
                                    f"{src}\u2026")
            else:
                self.status.setText(f"Ready: waiting for frames in {src}\u2026")

    # ----------------------------------------------------------- drawing
    def _clear_items(self) -> None:
        for d in (self.g2_items, self.fit_items):
            for it in d.values():
                self.g2_plot.removeItem(it)
            d.clear()
        self.g2_legend.clear()
        for it in (self.tau_item, self.tau_open, self.c_item, self.trace_item):
            it.setData([], [])
        self.tau_err.setData(x=np.zeros(0), y=np.zeros(0), top=np.zeros(0), bottom=np.zeros(0))
        self.c_err.setData(x=np.zeros(0), y=np.zeros(0), height=np.zeros(0))
        self._show_values(False)

    def _show_values(self, on: bool) -> None:
        # empty plots showed pyqtgraph's 0-1 and 1-10 ranges as if they were q and tau
        # (issue 33): no numbers until there are data
        if getattr(self, "_values_shown", None) == on:
            return  # setStyle re-lays out and redraws the axes: not at every update
        self._values_shown = on
        for p in (self.g2_plot, self.tau_plot, self.contrast_plot, self.trace_plot):
            for side in ("left", "bottom"):
                p.getAxis(side).setStyle(showValues=on)

    def _status_text(self, up) -> str:
        exp = f" of {up.expected:,}" if up.expected else ""
        lag = f"{up.lag_s:.2f} s" if math.isfinite(up.lag_s) else "\u2014"
        head = ("Finished" if up.final else "Following") + f": {up.frames:,}{exp} frames"
        if up.final:  # first: the label shows three lines, and how it ended matters most
            how = {"expected": "expected frame count reached", "closed": "writer closed the file",
                   "idle": "no new frames", "stopped": "stopped"}.get(up.end or "", up.end)
            problem = getattr(up, "problem", None)
            if problem:  # what went wrong with the source says more than how it ended
                how = PROBLEM_WORDS.get(problem, problem) + "; partial result"
            head = f"Finished ({how}): {up.frames:,}{exp} frames"
        text = (f"{head}, {up.frame_rate_hz:,.0f} frames/s (writer {up.writer_rate_hz:,.0f}/s), "
                f"lag {up.lag_frames:,} frames ({lag})")
        if up.bins:
            ok = sum(b["status"] == "converged" for b in up.bins)
            text += f" \u2014 {ok}/{len(up.bins)} q-bins converged"
        if up.fit_error:
            text += f" \u2014 fit failed: {up.fit_error}"
        if up.final:
            if up.latency_s is not None:
                text += f"; fitted {up.latency_s:.1f} s after the last frame"
        note = "; ".join(x for x in (up.note, no_photon_note(getattr(up, "view", None))) if x)
        if note:
            text += f"\n{note}"
        return text

    def frame_time(self) -> float | None:
        """The frame time typed in (s), or None: the raw file's."""
        text = self.frame_time_edit.text().strip()
        try:
            v = float(text) if text else None
        except ValueError:
            return None
        return v if v is not None and v > 0 and math.isfinite(v) else None

    def _time_labels(self, unit: str) -> None:
        if getattr(self, "_unit_shown", None) == unit:
            return  # setLabel re-lays out the text and the axis: only on a change
        self._unit_shown = unit
        self.g2_plot.setLabel("bottom", f"\u03c4 ({unit})")
        self.tau_plot.setLabel("left", f"\u03c4 ({unit})")
        self.trace_plot.setLabel("bottom", f"t ({unit})")

    def _apply(self, up) -> None:
        """Draw one update into the existing items (GUI thread; small arrays only)."""
        self.last_update = up
        text = self._status_text(up)
        self.status.setText(text)
        self.status.setToolTip(text)
        v = up.view
        if v is None:
            return
        self._time_labels(v.time_unit)
        self._show_values(True)
        if self._draw_curves(v):
            self._more_items_later()
        self.trace_item.setData(v.trace_t, v.trace_i)
        self._draw_bins(up)
        self.updates_drawn += 1
        self.sigUpdated.emit()

    def _draw_curves(self, v) -> bool:
        """The g2 points and fit lines of ``v``; True when items are still to be made.

        Making a plot item costs (its legend entry, the symbol atlas: ~90 ms for all
        of a first update when idle, over 1 s under load), so at most
        :data:`NEW_ITEMS_PER_TURN` are made per turn of the event loop.
        """
        nd = v.g2.shape[1] if v.g2.ndim == 2 else 0
        fit_ok = v.fit_t is not None
        made, more = 0, False
        for k, j in enumerate(_shown_bins(nd)):
            ok = drawn_points(v, j)
            item = self.g2_items.get(j)
            if item is None:
                if made >= NEW_ITEMS_PER_TURN:
                    more = True
                    continue
                made += 1
                item = pg.PlotDataItem(pen=None, symbol="o", symbolSize=5,
                                       symbolBrush=curve_color(k), symbolPen=None,
                                       name=f"q={v.q[j]:.4g}")
                self.g2_plot.addItem(item)
                self.g2_items[j] = item
            item.setData(v.tau[ok], v.g2[ok, j])
            curve = v.fit_curves.get(j + 1) if fit_ok else None
            fit_item = self.fit_items.get(j)
            if curve is not None:
                if fit_item is None:
                    if made >= NEW_ITEMS_PER_TURN:
                        more = True
                        continue
                    made += 1
                    fit_item = pg.PlotDataItem(pen=curve_pen(k, 1.5))
                    self.g2_plot.addItem(fit_item)
                    self.fit_items[j] = fit_item
                fit_item.setData(v.fit_t, curve)
            elif fit_item is not None:
                fit_item.setData([], [])
        return more

    def _more_items_later(self) -> None:
        up = self.last_update

        def go() -> None:
            # a newer update draws (and makes items) itself; a cleared tab has none
            if self.last_update is up and up is not None and up.view is not None:
                if self._draw_curves(up.view):
                    self._more_items_later()

        QTimer.singleShot(0, go)

    def _draw_bins(self, up) -> None:
        bins = up.bins
        if not bins:
            return
        q = np.array([b["q"] for b in bins], float)
        tau = np.array([np.nan if b["tau_s"] is None else b["tau_s"] for b in bins], float)
        te = np.array([np.nan if b["tau_err_s"] is None else b["tau_err_s"] for b in bins], float)
        conv = np.array([b["status"] == "converged" for b in bins])
        ok = np.isfinite(tau) & (tau > 0) & (q > 0)
        self.tau_item.setData(q[ok & conv], tau[ok & conv])
        # open: unresolved or at a bound; a failed, flat or poor fit's tau means nothing
        rough = np.array([b["status"] in ROUGH_STATUSES for b in bins])
        self.tau_open.setData(q[ok & rough], tau[ok & rough])
        m = ok & conv & np.isfinite(te)
        top, bottom = _log_err(tau[m], te[m])
        self.tau_err.setData(x=np.log10(q[m]), y=np.log10(tau[m]), top=top, bottom=bottom)
        c = np.array([np.nan if b["contrast"] is None else b["contrast"] for b in bins], float)
        ce = np.array([np.nan if b["contrast_err"] is None else b["contrast_err"] for b in bins],
                      float)
        # contrast where a fit measured it (a failed, flat or poor fit's contrast with an
        # error of thousands would set the axis); open where tau is only a limit
        okc = np.isfinite(c) & (q > 0) & (conv | rough)
        self.c_item.setData(q[okc & conv], c[okc & conv])
        self.c_open.setData(q[okc & ~conv], c[okc & ~conv])
        mc = okc & np.isfinite(ce)
        self.c_err.setData(x=np.log10(q[mc]), y=c[mc], height=2 * ce[mc])

    def clear_plots(self) -> None:
        """The targets do not matter here: keep what is shown."""

    # ---------------------------------------------------------- lifecycle
    def closeEvent(self, event) -> None:  # Qt override
        if self.stop_event is not None:
            self.stop_event.set()
        super().closeEvent(event)

    def data_columns(self):
        up = self.final or self.last_update
        if up is None or up.view is None:
            return None
        v = up.view
        cols = {"tau (s)": v.tau}
        for j in range(v.g2.shape[1]):
            cols[f"g2_q{j + 1}"] = v.g2[:, j]
            cols[f"g2_err_q{j + 1}"] = v.g2_err[:, j]
        if up.bins:
            cols["bin"] = np.array([b["bin"] for b in up.bins])
            cols["q (1/A)"] = np.array([b["q"] for b in up.bins], float)
            cols["status"] = np.array([b["status"] for b in up.bins])
            for key in ("tau_s", "tau_err_s", "contrast", "contrast_err"):
                cols[key] = np.array([np.nan if b[key] is None else b[key] for b in up.bins],
                                     float)
        return cols, [f"Live result {up.output} at {up.frames} frames"
                      + (" (final)" if up.final else " (partial)")]

    def get_settings(self) -> dict:
        return {"qmap": self.qmap_edit.text(), "fit": self.fit_box.isChecked(),
                "model": self.model_combo.currentData(), "every": self.every.value(),
                "idle": self.idle.value()}

    def set_settings(self, s: dict) -> None:
        apply_settings(s, combos=(("model", self.model_combo),), checks=(("fit", self.fit_box),),
                       spins=(("every", self.every), ("idle", self.idle)),
                       edits=(("qmap", self.qmap_edit),))
