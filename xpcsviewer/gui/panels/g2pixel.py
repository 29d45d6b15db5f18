"""G2 tab: the per-pixel G2/IP/IF stack, and g2 regrouped with another partition.

Shows per-pixel g2 = G2 / (IP IF), or G2, IP, IF, at the delay chosen with the slider
(one delay plane is read per view, in a worker), with levels and colour map, and the
Detector tab's mask on top. *Regroup* re-bins g2 and its errors from the stack with
the file's own partition, a q-map file, or the partition drawn in the Detector tab,
optionally with the Detector tab's mask (:func:`xpcsviewer.jobs.regroup.regroup_file`,
the code of ``xpcsviewer regroup``); the result is written to a new file in a
temporary folder and added to the targets, so the g2 tab (and every other tab) shows
and fits it like any file. *Save as* writes it where you choose (never over an input).
*Audit pixels* ranks the pixels by their leverage on g2 and flags hot ones, circled
here and on SAXS-2D; *Mask these* hands them to the Detector tab's mask
(:mod:`._pixel_audit_box`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSignalBlocker, Qt, QTimer
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QSlider,
    QSpinBox,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
)

from xpcsviewer.gui.export_folder import ask_save_path
from xpcsviewer.gui.image_view import LevelBoxes, WorkerImageView, frame_key
from xpcsviewer.gui.panels._detector_jobs import (
    g2_plane_job,
    regroup_job,
    save_regrouped_job,
)
from xpcsviewer.gui.panels._drawing import MaskOverlayItem, mask_overlay
from xpcsviewer.gui.panels._pixel_audit_box import AUDIT_KEY, PixelAuditMixin
from xpcsviewer.gui.panels.base import BasePanel
from xpcsviewer.gui.panels.detector import MASK_KEY, PARTITION_KEY
from xpcsviewer.gui.widgets import COLORMAPS, FileSelector, colormap

__all__ = ["G2PixelPanel"]

TARGETS = (("g2", "g2 = G2 / (IP\u00b7IF)"), ("G2", "G2"), ("IP", "IP (past mean)"),
           ("IF", "IF (future mean)"))


def _load_qmap_job(path: str, progress=None, cancel=None):
    from xpcsviewer.io import read_qmap

    return read_qmap(path)


class G2PixelPanel(PixelAuditMixin, BasePanel):
    """Per-pixel G2/IP/IF viewer and regrouping of g2 (one file: the current target)."""

    name = "g2pixel"
    title = "G2"
    uses_current = True

    def __init__(self, context, parent=None) -> None:
        super().__init__(context, parent)
        self.plane: dict | None = None
        self.regrouped: dict | None = None
        #: folder of regrouped files (None: a per-user temporary folder)
        self.regroup_dir: str | None = None
        self._levels_for: str | None = None  # the quantity the manual levels were set for
        self._frame: tuple | None = None  # frame_key of the stack framed last
        self._shown_path: str | None = None  # the file whose stack is shown
        self._n_delays = 0
        lay = QVBoxLayout(self)
        bar = QHBoxLayout()
        self.file_selector = FileSelector()
        self.file_selector.setMinimumContentsLength(12)
        self.file_selector.sigIndexChosen.connect(self._on_file_chosen)
        self.target_combo = QComboBox(toolTip="What to show per pixel")
        for k, text in TARGETS:
            self.target_combo.addItem(text, k)
        self.cmap_combo = QComboBox(toolTip="Colour map")
        self.cmap_combo.addItems(COLORMAPS)
        self.level_boxes = LevelBoxes("Levels from the 1-99 percentiles of the pixels with "
                                      "data; uncheck to set them", "Lower level",
                                      "Upper level", upper=2.0, min_span=1e-9)
        self.auto_check = self.level_boxes.auto_check
        self.vmin, self.vmax = self.level_boxes.vmin, self.level_boxes.vmax
        self.mask_check = QCheckBox("Detector mask", checked=True,
                                    toolTip="Show the Detector tab's mask on top")
        # two short rows: the tab must fit a 1280-pixel window next to the file list
        for w in (QLabel("File"), self.file_selector, self.target_combo, self.cmap_combo):
            bar.addWidget(w)
        bar.addStretch(1)
        lay.addLayout(bar)
        bar2 = QHBoxLayout()
        for w in [*self.level_boxes.widgets(), self.mask_check]:
            bar2.addWidget(w)
        bar2.addStretch(1)
        lay.addLayout(bar2)
        row = QHBoxLayout()
        self.slider = QSlider(Qt.Orientation.Horizontal, minimum=0, maximum=0)
        self.slider.setToolTip("Delay shown (index into the delays; the value is shown at the "
                               "right)")
        self.delay_spin = QSpinBox(minimum=0, maximum=0, toolTip="Delay index")
        self.delay_label = QLabel("\u03c4 = \u2013")
        self.delay_label.setMinimumWidth(150)
        row.addWidget(QLabel("delay"))
        row.addWidget(self.slider, 1)
        row.addWidget(self.delay_spin)
        row.addWidget(self.delay_label)
        lay.addLayout(row)
        self.iplot = pg.PlotItem()
        self.iplot.setLabel("bottom", "column (pixel)")
        self.iplot.setLabel("left", "row (pixel)")
        # pixels made in the worker: a 3-4 Mpixel float image rescaled at each render
        # stalled the window (see gui/image_view.py)
        self.image_view = WorkerImageView(self.iplot)
        self.image_view.sigLevelsDragged.connect(self._on_hist_levels)
        self.iplot.invertY(True)
        self.iplot.setAspectLocked(True)
        self.mask_item = MaskOverlayItem()  # no autoDownsample: see detector.py
        self.mask_item.setZValue(10)
        self.iplot.addItem(self.mask_item)
        lay.addWidget(self.image_view, 1)
        # regrouping and the pixel audit take turns below the image: side by side they
        # would not fit a 1280-pixel window
        self.tools_tabs = QTabWidget()
        self.regroup_box = self._build_regroup()
        self.tools_tabs.addTab(self.regroup_box, "Regroup")
        self.tools_tabs.addTab(self._build_audit(), "Pixel audit")
        # after "Mask these" the next step is Regroup (with the Detector tab's mask)
        self.mask_these_btn.clicked.connect(
            lambda: self.tools_tabs.setCurrentWidget(self.regroup_box))
        lay.addWidget(self.tools_tabs)
        self.status = QLabel(" ")
        self._file_note = ""  # which file is shown, when not the current target
        self._message = ""
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        self._timer = QTimer(self, singleShot=True, interval=120)  # debounced slider
        self._timer.timeout.connect(self.load_plane)
        self.slider.valueChanged.connect(self._on_slider)
        self.delay_spin.valueChanged.connect(self.slider.setValue)
        self.target_combo.currentIndexChanged.connect(lambda _i: self.load_plane())
        self.cmap_combo.currentTextChanged.connect(lambda _t: self._apply_cmap())
        self.auto_check.toggled.connect(self._on_auto_toggled)
        for s in (self.vmin, self.vmax):
            s.valueChanged.connect(self._on_levels_edited)
        self.mask_check.toggled.connect(lambda _b: self._show_mask())
        context.sigSharedChanged.connect(self._on_shared)
        self._apply_cmap()

    def _build_regroup(self) -> QGroupBox:
        box = QGroupBox("Regroup g2 from the per-pixel stack")
        g = QGridLayout(box)
        self.src_group = QButtonGroup(self)
        self.own_radio = QRadioButton("the file's own partition", checked=True)
        self.own_radio.setToolTip("Regroup with the q-bins stored in this result file")
        self.file_radio = QRadioButton("a q-map file")
        self.file_radio.setToolTip("Regroup with the partition of another q-map file")
        self.drawn_radio = QRadioButton("the Detector tab's partition")
        self.drawn_radio.setToolTip("Regroup with the partition made on the Detector tab")
        for i, b in enumerate((self.own_radio, self.file_radio, self.drawn_radio)):
            self.src_group.addButton(b, i)
        self.qmap_edit = QLineEdit(placeholderText="q-map file (/qmap or a result's /xpcs/qmap)")
        self.qmap_edit.setToolTip("q-map file for a q-map file partition (HDF5: /qmap or a "
                                  "result's /xpcs/qmap)")
        self.qmap_browse = QToolButton(text="\u2026", toolTip="Choose a q-map file")
        self.qmap_browse.clicked.connect(self._on_browse_qmap)
        self.use_mask_check = QCheckBox("apply the Detector tab's mask", checked=True)
        self.use_mask_check.setToolTip("Leave out the pixels masked on the Detector tab")
        self.regroup_btn = QPushButton("Regroup")
        self.regroup_btn.setToolTip("Re-bin g2 and its errors; the result opens as a new target "
                                    "(g2 tab: plot and fit it)")
        self.save_btn = QPushButton("Save as\u2026", enabled=False,
                                    toolTip="Write the regrouped result to a new file")
        g.addWidget(QLabel("partition"), 0, 0)
        g.addWidget(self.own_radio, 0, 1)
        g.addWidget(self.drawn_radio, 0, 2)
        g.addWidget(self.file_radio, 1, 1)
        g.addWidget(self.qmap_edit, 1, 2)
        g.addWidget(self.qmap_browse, 1, 3)
        g.addWidget(self.use_mask_check, 2, 1)
        g.addWidget(self.regroup_btn, 2, 2)
        g.addWidget(self.save_btn, 2, 3)
        g.setColumnStretch(2, 1)
        self.regroup_btn.clicked.connect(lambda: self.regroup())
        self.save_btn.clicked.connect(self._on_save_as)
        return box

    # ----------------------------------------------------------------- data
    def applies_to(self, results: list[Any]) -> str | None:
        if not results:
            return "Select one or more result files first"
        if not any(r.multitau is not None and r.multitau.has_unnormalized_G2 for r in results):
            return ("No per-pixel G2 stack in these files (correlate with --save-g2-pixel; "
                    "the demo file G01 has one)")
        return None

    def _stacked(self) -> list[Any]:
        """The targets with a per-pixel stack: the ones the File box offers."""
        return [r for r in self.results
                if r.multitau is not None and r.multitau.has_unnormalized_G2]

    def current_result(self) -> Any | None:
        """The current target if it has a stack, else the file shown before (if still a
        target with a stack), else the first target with one."""
        stacked = self._stacked()
        res = super().current_result()
        if res is not None and any(r is res for r in stacked):
            return res
        return next((r for r in stacked if str(r.path) == self._shown_path),
                    stacked[0] if stacked else None)

    def refresh(self) -> None:
        stacked = self._stacked()
        res = self.current_result()
        # the box lists only files with a stack and names the one shown (issue 22)
        shown = next((i for i, r in enumerate(stacked) if r is res), 0)
        self.file_selector.set_labels([r.label for r in stacked], shown)
        if res is None:
            return
        self._shown_path = str(res.path)
        cur = super().current_result()
        self._file_note = (f"{cur.label} has no per-pixel stack; showing {res.label}."
                           if cur is not None and cur is not res else "")
        self._say(self._message)
        n = int(res.multitau.delay_frames.size)
        if n != self._n_delays:
            self._n_delays = n
            for w in (self.slider, self.delay_spin):
                with QSignalBlocker(w):
                    w.setMaximum(n - 1)
                    w.setValue(min(w.value(), n - 1))
        self.load_plane()

    def _say(self, message: str) -> None:
        """Show ``message`` in the status line, after the note on the file shown."""
        self._message = message
        self.status.setText(" ".join(t for t in (self._file_note, message) if t) or " ")

    def _on_file_chosen(self, i: int) -> None:
        stacked = self._stacked()
        if 0 <= i < len(stacked):
            self.current_index = next(j for j, r in enumerate(self.results)
                                      if r is stacked[i])
        self.refresh()

    def delay_index(self) -> int:
        """The chosen delay (row of the delay list)."""
        return int(self.slider.value())

    def set_delay(self, k: int) -> None:
        """Choose delay ``k`` (the plane is read after a short pause)."""
        self.slider.setValue(int(k))

    def _on_slider(self, k: int) -> None:
        with QSignalBlocker(self.delay_spin):
            self.delay_spin.setValue(k)
        self._on_slider_label()
        self._timer.start()

    def load_plane(self) -> int | None:
        """Read and show the chosen delay of the chosen quantity (worker)."""
        res = self.current_result()
        if res is None:
            return None
        self._on_slider_label()
        target = self.target_combo.currentData()
        # pixels for the user's levels when they were set for this quantity
        manual = (None if self.auto_check.isChecked() or self._levels_for != target
                  else self.level_boxes.values())
        return self.submit("plane", g2_plane_job, str(res.path), self.delay_index(),
                           target, manual, on_result=self._on_plane,
                           description=f"G2 {res.label}")

    def _on_slider_label(self) -> None:
        res = self.current_result()
        k = self.delay_index()
        if res is not None and k < res.multitau.tau.size:
            self.delay_label.setText(f"\u03c4 = {res.multitau.tau[k]:.3g} s "
                                     f"({int(res.multitau.delay_frames[k])} frames)")

    def _on_plane(self, plane: dict) -> None:
        self.plane = plane
        img = plane["image"]
        res = next((r for r in self.results if str(r.path) == plane["path"]), None)
        key = frame_key(res.qmap) if res is not None else (img.shape,)
        self._apply_cmap()
        # the same geometry keeps the user's zoom; another is framed whole
        self.image_view.show_pixels(plane["pixels"], plane["pixel_levels"], plane["histogram"],
                                    auto_range=key != self._frame, source=plane["display"])
        self._frame = key
        # manual levels belong to one quantity (g2 near 1, IP in counts): another
        # quantity starts from its own auto levels
        if self.auto_check.isChecked() or self._levels_for != plane["target"]:
            self._levels_for = None if self.auto_check.isChecked() else plane["target"]
            self.level_boxes.show(*plane["levels"])
        self._apply_levels()
        self._show_mask()
        self._show_flagged()
        if not plane["has_data"].any():
            self._say("No pixel has data at this delay (beyond the measured range)")
        elif self._message.startswith("No pixel"):
            self._say("")
        self.sigUpdated.emit()

    def _shown_target(self) -> str | None:
        # levels are set on the image shown (its plane may lag the combo by a read)
        return self.plane["target"] if self.plane is not None else self.target_combo.currentData()

    def _on_levels_edited(self, _v: float) -> None:
        self._levels_for = self._shown_target()
        self._apply_levels()

    def levels(self) -> tuple[float, float]:
        """The display levels of the image shown (the auto levels exactly when on)."""
        if self.plane is not None and self._levels_for is None:
            return tuple(float(v) for v in self.plane["levels"])
        return self.level_boxes.values()

    def _apply_levels(self) -> None:
        """The colour table at once, exact pixels from a worker."""
        if self.plane is None:
            return
        self.image_view.set_levels(*self.levels())
        self.image_view.requantize(self.submit, "G2 levels")

    def _apply_cmap(self) -> None:
        name = self.cmap_combo.currentText()
        self.image_view.set_colormap(name, colormap(name))

    def _on_hist_levels(self, lo: float, hi: float) -> None:
        if self.plane is None:
            return
        self.level_boxes.take_drag(lo, hi)
        self._levels_for = self._shown_target()
        self._apply_levels()

    def _on_auto_toggled(self, on: bool) -> None:
        self._levels_for = None if on else self._shown_target()
        if on and self.plane is not None:
            self.level_boxes.show(*self.plane["levels"])
            self._apply_levels()

    def _detector_mask(self) -> np.ndarray | None:
        res = self.current_result()
        dm = self.context.shared.get(MASK_KEY)
        if res is None or dm is None or dm.mask.shape != res.qmap.shape:
            return None
        return dm.mask

    def _show_mask(self) -> None:
        m = self._detector_mask()
        res = self.current_result()
        if m is None or not self.mask_check.isChecked() or self.plane is None:
            self.mask_item.clear()
            return
        self.mask_item.setImage(mask_overlay(res.qmap.mask, m), levels=(0, 2))

    def _on_shared(self, key: str) -> None:
        if key == MASK_KEY:
            self._show_mask()
        elif key == AUDIT_KEY:
            self._show_flagged()

    def clear_plots(self) -> None:
        self.plane = None
        self.image_view.clear()
        self.mask_item.clear()
        self.audit_overlay.setData([], [])

    # -------------------------------------------------------------- regroup
    def _on_browse_qmap(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "q-map file", "",
                                              "HDF5 (*.hdf *.h5 *.hdf5 *.nxs)")
        if path:
            self.qmap_edit.setText(path)
            self.file_radio.setChecked(True)

    def regroup(self, out_dir: str | None = None) -> int | None:
        """Regroup the current file with the chosen partition and mask (worker)."""
        res = self.current_result()
        if res is None:
            return None
        out_dir = out_dir or self.regroup_dir
        mask = self._detector_mask() if self.use_mask_check.isChecked() else None
        dm = self.context.shared.get(MASK_KEY)
        if mask is not None and dm is not None and dm.n_masked == 0:
            mask = None  # nothing masked: the file's own pixels
        if self.file_radio.isChecked():
            path = self.qmap_edit.text().strip()
            if not path:
                self.context.report_error("G2: choose a q-map file first")
                return None
            return self.submit("regroup-qmap", _load_qmap_job, path,
                               on_result=lambda qm: self._start_regroup(res, qm, mask, "qmap",
                                                                        out_dir),
                               description="Reading the q-map")
        if self.drawn_radio.isChecked():
            drawn = self.context.shared.get(PARTITION_KEY)
            if drawn is None or drawn.qmap.shape != res.qmap.shape:
                self.context.report_error(
                    "G2: no partition of this detector in the Detector tab (press "
                    "\"Use for regrouping\" there)")
                return None
            return self._start_regroup(res, drawn.qmap, mask, "drawn", out_dir)
        return self._start_regroup(res, None, mask, "masked" if mask is not None else "own",
                                   out_dir)

    def _start_regroup(self, res, qmap, mask, tag: str, out_dir: str | None) -> int:
        self._say(f"Regrouping {res.label} \u2026")
        return self.submit("regroup", regroup_job, str(res.path), qmap, mask, out_dir, tag,
                           on_result=self._on_regrouped, description=f"Regrouping {res.label}")

    def _on_regrouped(self, out: dict) -> None:
        self.regrouped = out
        mt = out["result"].multitau
        self.save_btn.setEnabled(True)
        self._say(
            f"Regrouped into {Path(out['path']).name}: {mt.g2.shape[1]} bins "
            f"({mt.config.get('regroup_note', '')}); opened as a target: see the g2 tab")
        self.context.open_files([out["path"]])

    def save_as(self, path: str, overwrite: bool = False) -> int | None:
        """Write the last regrouped result to ``path`` (worker; never an input)."""
        out = self.regrouped
        if out is None:
            return None
        from xpcsviewer.io.results.g2stack import g2_side_path

        src = out["source"]
        return self.submit("save-as", save_regrouped_job, path, out["result"], out["saxs_2d"],
                           [src, str(g2_side_path(src))], overwrite,
                           on_result=self._on_exported, description=f"Saving {Path(path).name}")

    def _on_save_as(self) -> None:
        if self.regrouped is None:
            return
        name = Path(self.regrouped["path"]).name
        path = ask_save_path(self, self.context, "Save regrouped result", name,
                             "Result files (*.hdf *.h5)")
        if path:
            self.save_as(path, overwrite=True)  # the dialog asked before replacing

    # ------------------------------------------------------------- settings
    def get_settings(self) -> dict:
        return {"target": self.target_combo.currentData(), "cmap": self.cmap_combo.currentText(),
                "auto_levels": self.auto_check.isChecked(),
                "levels": [self.vmin.value(), self.vmax.value()],
                "mask": self.mask_check.isChecked()}

    def set_settings(self, s: dict) -> None:
        i = self.target_combo.findData(s.get("target"))
        if i >= 0:
            self.target_combo.setCurrentIndex(i)
        if s.get("cmap") in COLORMAPS:
            self.cmap_combo.setCurrentText(s["cmap"])
        lv = s.get("levels")
        if isinstance(lv, list) and len(lv) == 2 and all(
                isinstance(v, (int, float)) and math.isfinite(v) for v in lv):
            self.vmin.setValue(lv[0])
            self.vmax.setValue(lv[1])
        for key, box in (("auto_levels", self.auto_check), ("mask", self.mask_check)):
            if isinstance(s.get(key), bool):
                box.setChecked(s[key])
