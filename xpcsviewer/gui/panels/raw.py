"""Raw: the detector's own data of a raw source (issue 45).

Shows the source of the context's ``RAW_CURRENT_KEY`` (a
:class:`~xpcsviewer.gui.raw_sources.RawTarget`; the selector lists ``RAW_SOURCES_KEY``):

- the frame view (``_raw_views.RawImageView``): any frame, or the sum / mean / max of a
  frame range, log or linear, with the q-map's dynamic bins and the mask over it, or a
  per-pixel map of the inspection (mean flux, max count, frames at the cap);
- the run's timelines (photons per frame, occupancy, fraction at the counter cap): a
  click shows that frame;
- the photons of a q-bin, a pixel (a click on the image) or a drawn region against time,
  with its power spectrum beside a control region, and P(k) of the q-bin;
- the fault list of the inspection, which starts by itself when a source is shown
  (*Find faults*): *Mask these* hands the selected findings' pixels to the Detector
  tab's mask (one undoable step), *Exclude frames* keeps their frames out of a
  correlation from the window (``RAW_EXCLUDE_KEY``), *Correlate…* opens the dialog;
- XSVS (``_raw_xsvs``): P(k) by exposure with its fits, beta(T), the table.

Every read runs in a worker (``_raw_jobs``); a newer request under the same key
cancels the older one, so the latest frame asked for wins.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QDoubleValidator
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from xpcsviewer.gui.export_folder import ask_save_path
from xpcsviewer.gui.panels._drawing import mask_overlay
from xpcsviewer.gui.panels._pixel_audit_box import MASK_REQUEST_KEY, MaskRequest
from xpcsviewer.gui.panels._raw_faults import FaultTable
from xpcsviewer.gui.panels._raw_jobs import (
    RawHandle,
    bin_trace_job,
    exclusion_ranges,
    findings_mask,
    frame_job,
    inspect_job,
    map_job,
    merge_ranges,
    open_source_job,
    pixel_trace_job,
    save_findings_job,
)
from xpcsviewer.gui.panels._raw_views import PkPlot, RawImageView, TimelinePlots, TracePlots
from xpcsviewer.gui.panels._raw_xsvs import XsvsView
from xpcsviewer.gui.panels.base import BasePanel, apply_settings
from xpcsviewer.gui.panels.detector import MASK_KEY
from xpcsviewer.gui.raw_sources import (
    RAW_CURRENT_KEY,
    RAW_EXCLUDE_KEY,
    RAW_MEAN_IMAGE_KEY,
    RAW_SOURCES_KEY,
)
from xpcsviewer.gui.widgets import ClippedLabel

__all__ = ["RawPanel"]

MARKS_MAX = 2000  # pixels circled at most for the selected findings


def _positive(text: str) -> float | None:
    try:
        v = float(text) if text.strip() else None
    except ValueError:
        return None
    return v if v is not None and v > 0 and math.isfinite(v) else None


class RawPanel(BasePanel):
    """Frames, timelines, per-pixel maps, traces, P(k) and faults of a raw source."""

    name = "raw"
    title = "Raw"

    def __init__(self, context, parent=None) -> None:
        super().__init__(context, parent)
        self.target = None  # the RawTarget shown
        self.handle: RawHandle | None = None
        self.info = None  # SourceInfo of the source shown
        self.inspection = None
        self._sources: list = []  # the RawTargets of the selector
        self._qmap_chosen = False  # the q-map was chosen here (a wrong one is an error)
        lay = QVBoxLayout(self)
        lay.addLayout(self._build_bar())
        self.status = ClippedLabel("No raw source: open a raw file (browser, drag and "
                                   "drop, or `xpcsviewer RAWFILE`).", lines=2)
        lay.addWidget(self.status)
        split = QSplitter(Qt.Orientation.Horizontal)
        left = QSplitter(Qt.Orientation.Vertical)
        self.image_view = RawImageView()
        self.faults = FaultTable()
        left.addWidget(self.image_view)
        left.addWidget(self.faults)
        left.setSizes([640, 220])
        right = QSplitter(Qt.Orientation.Vertical)
        self.timelines = TimelinePlots()
        right.addWidget(self.timelines)
        self.pages = QTabWidget()
        trace_page = QWidget()
        tl = QVBoxLayout(trace_page)
        tl.setContentsMargins(2, 2, 2, 2)
        tbar = QHBoxLayout()
        self.bin_spin = QSpinBox(minimum=1, maximum=1, enabled=False,
                                 toolTip="Dynamic q-bin (from 1): its photons, spectrum and P(k)")
        tbar.addWidget(QLabel("q-bin"))
        tbar.addWidget(self.bin_spin)
        tbar.addWidget(QLabel("  (click a pixel, or draw a ROI, for their own trace)"))
        tbar.addStretch(1)
        tl.addLayout(tbar)
        self.traces = TracePlots()
        tl.addWidget(self.traces, 1)
        self.pk = PkPlot()
        self.pages.addTab(trace_page, "Trace and spectrum")
        self.pages.addTab(self.pk, "P(k)")
        right.addWidget(self.pages)
        right.setSizes([380, 500])
        split.addWidget(left)
        split.addWidget(right)
        split.setSizes([560, 640])
        self.modes = QTabWidget()  # the inspection's views | XSVS (issue 46)
        self.modes.addTab(split, "Frames, timelines, faults")
        self.xsvs = XsvsView(self)
        self.modes.addTab(self.xsvs, "XSVS: speckle visibility")
        lay.addWidget(self.modes, 1)
        iv = self.image_view
        iv.sigRequest.connect(self.request_image)
        iv.sigPixelPicked.connect(self.show_pixel_trace)
        iv.sigRegionDrawn.connect(self.show_region_trace)
        iv.image.sigLevelsDragged.connect(
            lambda _lo, _hi: iv.image.requantize(self.submit, "Raw: levels"))
        self.timelines.sigFramePicked.connect(iv.show_frame)
        self.traces.sigFramePicked.connect(iv.show_frame)
        self.bin_spin.valueChanged.connect(lambda _v: self.show_bin())
        self.faults.sigSelected.connect(self._on_findings_selected)
        self.faults.sigMask.connect(self.mask_findings)
        self.faults.sigExclude.connect(self.exclude_findings)
        self.faults.sigSave.connect(self._on_save)
        context.sigSharedChanged.connect(self._on_shared)

    def _build_bar(self) -> QHBoxLayout:
        bar = QHBoxLayout()
        self.source_combo = QComboBox(toolTip="Raw source shown (the raw files opened)")
        self.source_combo.setMinimumContentsLength(16)
        self.source_combo.activated.connect(self._on_source_chosen)
        self.qmap_edit = QLineEdit(placeholderText="q-map (found beside the source)",
                                   toolTip="q-map (partition) file: its bins, mask and "
                                   "P(k); empty: one found beside the source")
        self.qmap_edit.editingFinished.connect(self._on_settings_edited)
        qmap_btn = QPushButton("\u2026", toolTip="Choose the q-map file")
        qmap_btn.setMaximumWidth(32)
        qmap_btn.clicked.connect(self._browse_qmap)
        self.bin_edit = QLineEdit(placeholderText="bin time (s)", enabled=False,
                                  toolTip="Seconds per frame made from an event list "
                                  "(Timepix); empty: its time-tag frames")
        self.frame_edit = QLineEdit(placeholderText="frame time (s)",
                                    toolTip="Seconds per frame, where the file has none "
                                    "(for Hz and photons/s)")
        for e in (self.bin_edit, self.frame_edit):
            e.setValidator(QDoubleValidator(1e-12, 1e6, 12))
            e.setMaximumWidth(110)
            e.editingFinished.connect(self._on_settings_edited)
        self.find_check = QCheckBox("Find faults", checked=True,
                                    toolTip="Inspect the whole run when a source is shown: "
                                    "timelines, per-pixel maps, P(k) and the fault finder")
        self.inspect_btn = QPushButton("Inspect", enabled=False,
                                       toolTip="Run the inspection pass now (the Detector "
                                       "tab's mask of this source applies)")
        self.inspect_btn.clicked.connect(lambda: self.inspect())
        self.correlate_btn = QPushButton("Correlate\u2026", enabled=False,
                                         toolTip="Correlate this source in the window")
        self.correlate_btn.clicked.connect(self.open_correlate)
        for w in (QLabel("Source"), self.source_combo, QLabel("q-map"), self.qmap_edit,
                  qmap_btn, QLabel("bin"), self.bin_edit, QLabel("frame"), self.frame_edit,
                  self.find_check, self.inspect_btn, self.correlate_btn):
            bar.addWidget(w)
        bar.setStretchFactor(self.qmap_edit, 1)
        return bar

    # ------------------------------------------------------------ targets
    def applies_to(self, results):
        # shows raw sources, not result files
        if self.context.shared.get(RAW_CURRENT_KEY) is None:
            return "Open a raw file first (browser, drag and drop, or `xpcsviewer RAWFILE`)"
        return None

    def refresh(self) -> None:
        self._show_current()

    def clear_plots(self) -> None:
        """Result files do not matter here: keep what is shown."""

    def _on_shared(self, key: str) -> None:
        if key == RAW_SOURCES_KEY:
            self._fill_sources()
        elif key == RAW_CURRENT_KEY:
            self._fill_sources()
            self._dirty = True
            if self.isVisible():
                self._refresh_now()
        elif key == MASK_KEY:
            self._show_mask()

    def _fill_sources(self) -> None:
        sources = list(self.context.shared.get(RAW_SOURCES_KEY) or [])
        current = self.context.shared.get(RAW_CURRENT_KEY)
        if current is not None and all(s.path != current.path for s in sources):
            sources.append(current)
        self._sources = sources
        self.source_combo.blockSignals(True)
        self.source_combo.clear()
        for s in sources:
            self.source_combo.addItem(s.label, s.path)
            self.source_combo.setItemData(self.source_combo.count() - 1, s.path,
                                          Qt.ItemDataRole.ToolTipRole)
        if current is not None:
            self.source_combo.setCurrentIndex(self.source_combo.findData(current.path))
        self.source_combo.blockSignals(False)

    def _on_source_chosen(self, i: int) -> None:
        if 0 <= i < len(self._sources):
            self.context.set_shared(RAW_CURRENT_KEY, self._sources[i])

    def _show_current(self) -> None:
        t = self.context.shared.get(RAW_CURRENT_KEY)
        if t is None or (self.target is not None and t == self.target):
            return
        self.open_target(t)

    def shown_target(self):
        """The target with what was typed here: q-map, bin time, frame time."""
        if self.target is None:
            return None
        qmap = self.qmap_edit.text().strip() or (self.info.qmap_path if self.info else None)
        return dataclasses.replace(self.target, qmap_path=qmap or None,
                                   bin_time=_positive(self.bin_edit.text()),
                                   frame_time=self.frame_time())

    def frame_time(self) -> float | None:
        """Seconds per frame: typed here, else the file's (None: unknown)."""
        typed = _positive(self.frame_edit.text()) if self.frame_edit.isEnabled() else None
        if typed is not None:
            return typed
        return self.info.frame_time if self.info is not None else None

    # ------------------------------------------------------------ opening
    def open_target(self, t) -> None:
        """Show the raw source ``t`` (a RawTarget): open it in a worker, then its frame
        and (with *Find faults*) the inspection."""
        self.target = t
        self._qmap_chosen = False
        self.qmap_edit.setText(t.qmap_path or "")
        self.bin_edit.setText("" if t.bin_time is None else f"{t.bin_time:g}")
        self.frame_edit.setText("" if t.frame_time is None else f"{t.frame_time:g}")
        self._open()

    def _open(self) -> None:
        t = self.target
        if self.handle is not None:  # closed in a worker: it may wait for a read
            old = self.handle
            self.submit(f"close:{id(old)}", lambda progress=None, cancel=None: old.close(),
                        description="Raw: closing")
        self.cancel_jobs_except("close:")
        self.handle = RawHandle(t.path, _positive(self.bin_edit.text()))
        self.info = self.inspection = None
        self._clear_views()
        self.status.setText(f"Opening {t.label}\u2026")
        self.submit("open", open_source_job, self.handle,
                    self.qmap_edit.text().strip() or None, self._qmap_chosen,
                    on_result=self._on_opened, on_error=self._on_open_failed,
                    description=f"Raw: opening {t.label}")

    def cancel_jobs_except(self, prefix: str) -> None:
        runner = self.context.runner
        for key in runner.running_keys():
            if key.startswith(f"{self.name}:") and not key.startswith(f"{self.name}:{prefix}"):
                runner.cancel(key)

    def _clear_views(self) -> None:
        self.timelines.set_data(None, None, None)
        self.timelines.set_frame(None)
        self.timelines.set_highlight([])
        self.traces.set_data(None, None)
        self.pk.set_counts(None, None)
        self.faults.set_findings(None)
        self.xsvs.clear()
        self.bin_spin.setEnabled(False)
        for b in (self.inspect_btn, self.correlate_btn):
            b.setEnabled(False)

    def _on_open_failed(self, info) -> None:
        self.status.setText(f"Could not open {self.target.label}: "
                            f"{getattr(info, 'message', info)}")
        self.context.report_error(info)

    def _on_opened(self, info) -> None:
        self.info = info
        if not self._qmap_chosen:
            self.qmap_edit.setText(info.qmap_path or "")
        self.bin_edit.setEnabled(info.layout == "timepix")
        own = info.frame_time
        self.frame_edit.setEnabled(own is None)
        if own is not None:
            self.frame_edit.setText(f"{own:g}")
            self.frame_edit.setToolTip("Seconds per frame, from the file")
        iv = self.image_view
        iv.set_source(info.n_frames, info.shape, info.qmap, info.outline, info.colour,
                      info.box)
        self._show_mask()
        self.bin_spin.blockSignals(True)
        self.bin_spin.setMaximum(max(1, info.n_bins))
        self.bin_spin.blockSignals(False)
        self.inspect_btn.setEnabled(True)
        self.correlate_btn.setEnabled(True)
        self._say_source()
        self.request_image()
        self.xsvs.set_source(info)
        if self.find_check.isChecked():
            self.inspect()
        self.sigUpdated.emit()

    def _say_source(self, extra: str = "") -> None:
        i = self.info
        ft = self.frame_time()
        text = (f"{Path(i.path).name}: {i.layout_text}, {i.n_frames:,} frames of "
                f"{i.shape[0]}x{i.shape[1]}")
        if i.n_events is not None:
            text += f", {i.n_events:,} events"
        text += f", {ft:g} s/frame" if ft else ", frame time unknown"
        text += "; q-map " + (Path(i.qmap_path).name if i.qmap_path else "none (no bins)")
        if i.note:
            text += f" ({i.note})"
        self.status.setText(text + extra)

    def _on_settings_edited(self) -> None:
        if self.target is None:
            return
        t = self.shown_target()
        qmap_typed = self.qmap_edit.text().strip() or None
        info = self.info
        if qmap_typed != (None if info is None else info.qmap_path):
            self._qmap_chosen = qmap_typed is not None
        if info is None or qmap_typed != info.qmap_path or (
                info.layout == "timepix" and t.bin_time != self.handle.bin_time):
            self._open()  # another q-map or bin time: another source to open
        elif self.inspection is not None and t.frame_time != self.inspection.frame_time:
            self._say_source()
            self.inspect()

    def _browse_qmap(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Q-map", self.qmap_edit.text() or "",
                                              "HDF5 (*.h5 *.hdf5 *.hdf);;All files (*)")
        if path:
            self.qmap_edit.setText(path)
            self._on_settings_edited()

    def _detector_mask(self) -> np.ndarray | None:
        m = self.context.shared.get(MASK_KEY)
        if m is None or self.target is None or m.path != self.target.path:
            return None
        return m.mask

    def _show_mask(self) -> None:
        info = self.info
        if info is None or info.qmap is None:
            self.image_view.set_mask(None)
            return
        initial = np.asarray(info.qmap.mask, bool)
        current = self._detector_mask()
        if current is None or current.shape != initial.shape:
            current = initial
        self.image_view.set_mask(mask_overlay(initial, current))

    # ------------------------------------------------------------- images
    def request_image(self) -> None:
        """Read what the image view asks for (a frame, a range or a map) in a worker."""
        if self.info is None:
            return
        req = self.image_view.request()
        if req[0] == "map":
            values = self._map_values(req[1])
            if values is None:
                self.image_view.plot.setTitle("per-pixel maps: inspect the source first")
                return
            self.submit("image", map_job, values, req[1], req[2],
                        on_result=self.image_view.show_data,
                        description="Raw: per-pixel map")
            return
        how, first, last, log = req
        self.timelines.set_frame(first)
        self.submit("image", frame_job, self.handle, first, last, how, log,
                    on_result=self._on_image, description=f"Raw: frame {first}")

    def _on_image(self, data) -> None:
        self.image_view.show_data(data)
        self.sigUpdated.emit()

    def _map_values(self, kind: str) -> np.ndarray | None:
        ins = self.inspection
        if ins is None:
            return None
        if kind == "flux":
            flux = ins.flux
            return flux if flux is not None else ins.mean_image  # counts/frame then
        if kind == "max":
            return ins.pixel_max
        return ins.pixel_cap_frames

    # --------------------------------------------------------- inspection
    def inspect(self) -> int | None:
        """Run the inspection pass over the whole run (worker)."""
        if self.info is None:
            return None
        info = self.info
        self.faults.set_findings(None, note=f"Inspecting {Path(info.path).name}\u2026")
        return self.submit("inspect", inspect_job, info.path, info.qmap, self.frame_time(),
                           self.handle.bin_time, self._detector_mask(),
                           on_result=self._on_inspected, on_error=self._on_inspect_failed,
                           description=f"Inspecting {Path(info.path).name}")

    def _on_inspect_failed(self, err) -> None:
        self.faults.set_findings(None, note=f"Inspection failed: "
                                 f"{getattr(err, 'message', err)}")
        self.context.report_error(err)

    def _on_inspected(self, ins) -> None:
        self.inspection = ins
        self.timelines.set_data(ins.photons, ins.occupancy, ins.cap_fraction)
        self.timelines.set_frame(self.image_view.first_spin.value())
        self.faults.set_findings(ins.findings, ins.n_frames)
        cap = f"cap {ins.counter_cap}" if ins.counter_cap else "no counter cap known"
        self._say_source(f"; {float(np.mean(ins.photons)) if ins.n_frames else 0:.4g} "
                         f"photons/frame, {cap}, {len(ins.findings)} findings")
        self.context.set_shared(RAW_MEAN_IMAGE_KEY, (ins.path, ins.mean_image))
        if ins.bin_photons is not None:
            n = ins.bin_photons.shape[1]
            self.bin_spin.blockSignals(True)
            self.bin_spin.setMaximum(max(1, n))
            mod = [f.q_bin for f in ins.findings if f.kind == "modulation" and f.q_bin]
            if mod:
                self.bin_spin.setValue(int(mod[0]))
            self.bin_spin.blockSignals(False)
            self.bin_spin.setEnabled(n > 0)
            self.show_bin()
        else:
            self.pk.set_counts(None, None)
        if self.image_view.request()[0] == "map":
            self.request_image()
        self.sigUpdated.emit()

    def show_bin(self) -> None:
        """The chosen q-bin's photons, spectrum and P(k)."""
        ins = self.inspection
        if ins is None or ins.bin_photons is None:
            return
        b = self.bin_spin.value()
        hist = ins.count_hist
        self.pk.set_counts(None if hist is None or b > len(hist) else hist[b - 1], b)
        self.submit("trace", bin_trace_job, ins, b, on_result=self._on_trace,
                    description=f"Raw: q-bin {b}")

    def show_pixel_trace(self, row: int, col: int) -> int | None:
        """The counts of pixel (row, col) against time (worker)."""
        if self.info is None:
            return None
        self.image_view.set_region(row, row + 1, col, col + 1)
        return self._submit_trace(("pixel", row, col))

    def show_region_trace(self, r0: int, r1: int, c0: int, c1: int) -> int | None:
        """The photons of the valid pixels of a drawn rectangle against time (worker)."""
        if self.info is None:
            return None
        return self._submit_trace(("roi", r0, r1, c0, c1))

    def _submit_trace(self, what: tuple) -> int:
        info = self.info
        mask = None if info.qmap is None else np.asarray(info.qmap.mask, bool)
        photons = None if self.inspection is None else self.inspection.photons
        self.pages.setCurrentIndex(0)
        return self.submit("trace", pixel_trace_job, info.path, what, mask,
                           (self.handle.bin_time, self.frame_time(), info.shape), photons,
                           on_result=self._on_trace, description="Raw: pixel trace")

    def _on_trace(self, data) -> None:
        self.traces.set_data(data, self.frame_time())
        self.sigUpdated.emit()

    # ------------------------------------------------------------ findings
    def _on_findings_selected(self, findings: list) -> None:
        pixels = [p for f in findings for p in f.pixels][:MARKS_MAX]
        self.image_view.mark_pixels(pixels)
        n = self.info.n_frames if self.info else 0
        partial = [tuple(f.frames) for f in findings
                   if not (f.frames[0] <= 0 and f.frames[1] >= n - 1)]
        self.timelines.set_highlight(partial)
        if partial:
            self.image_view.show_frame(partial[0][0])
        mod = [f.q_bin for f in findings if f.kind == "modulation" and f.q_bin]
        if mod and self.bin_spin.isEnabled():
            self.bin_spin.setValue(int(mod[0]))

    def mask_findings(self, findings: list) -> bool:
        """Hand the pixels of ``findings`` to the Detector tab's mask of this source."""
        if self.info is None:
            return False
        sel = findings_mask(findings, self.info.shape)
        if not sel.any():
            return False
        self.context.set_shared(MASK_REQUEST_KEY, MaskRequest(self.info.path, sel,
                                                              "raw findings"))
        self.context.show_status(f"Raw: {int(sel.sum()):,} pixels added to the Detector "
                                 "tab's mask (undo there)")
        return True

    def exclude_findings(self, findings: list) -> list[tuple[int, int]]:
        """Leave the frames of ``findings`` out of a correlation of this source (added
        to those excluded before); returns all excluded ranges."""
        if self.info is None:
            return []
        new = exclusion_ranges(findings, self.info.n_frames)
        old = self.context.shared.get(RAW_EXCLUDE_KEY)
        if old is not None and old[0] == self.info.path:
            new = merge_ranges([*old[1], *new])
        self.context.set_shared(RAW_EXCLUDE_KEY, (self.info.path, new))
        n = sum(b - a + 1 for a, b in new)
        ranges = "1 range" if len(new) == 1 else f"{len(new)} ranges"
        self.context.show_status(f"Raw: {n:,} frame{'s' * (n != 1)} in {ranges} left out of "
                                 "a correlation from the window")
        return new

    def _on_save(self) -> None:
        if self.inspection is None:
            return
        name = Path(self.inspection.path).stem + "_findings.json"
        path = ask_save_path(self, self.context, "Save the findings", name,
                             "JSON (*.json);;CSV (*.csv)")
        if path:
            self.save_findings(path)

    def save_findings(self, path: str) -> int | None:
        """Write the findings to ``path`` (JSON or CSV by suffix; worker)."""
        if self.inspection is None:
            return None
        return self.submit("save", save_findings_job, str(path), self.inspection,
                           on_result=self._on_exported,
                           description=f"Saving {Path(path).name}")

    # ----------------------------------------------------------- correlate
    def open_correlate(self) -> None:
        """Open the correlate dialog on this source (where the app has it)."""
        try:
            from xpcsviewer.gui.correlate_dialog import open_correlate_dialog
        except ImportError as exc:
            self.context.report_error(f"Raw: the correlate dialog is not available ({exc})")
            return
        open_correlate_dialog(self, self.context, self.shown_target())

    # ------------------------------------------------------------ settings
    def get_settings(self) -> dict:
        return {"log": self.image_view.log_check.isChecked(),
                "bins": self.image_view.bins_combo.currentData(),
                "mask": self.image_view.mask_check.isChecked(),
                "find_faults": self.find_check.isChecked()}

    def set_settings(self, s: dict) -> None:
        iv = self.image_view
        apply_settings(s, combos=(("bins", iv.bins_combo),),
                       checks=(("log", iv.log_check), ("mask", iv.mask_check),
                               ("find_faults", self.find_check)))
