"""Correlate a raw source from the window (issue 45): the same job as
``xpcsviewer correlate``, in a worker, with the plan, a time estimate, progress and cancel.

The dialog fills a :class:`~xpcsviewer.jobs.correlate_form.CorrelateForm` (Qt-free: the
form -> job conversion, the side files, the run and its clean-up live there). Its
choices come from the window: the q-map beside the source (or a file, or the Detector
tab's partition, ``shared["drawn_partition"]``), the Detector tab's mask of this source
(``shared["detector_mask"]``), the frames the Raw tab excluded
(``shared["raw_exclude_frames"]``). On success the result opens as a target on the g2
tab. :func:`open_correlate_dialog` is what the Raw tab's *Correlate…* button and the
File menu's *Correlate Raw…* call.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from xpcsviewer.gui.panels.detector import MASK_KEY, PARTITION_KEY
from xpcsviewer.gui.raw_sources import RAW_EXCLUDE_KEY, RawTarget, raw_target
from xpcsviewer.jobs.correlate_form import (
    CorrelateForm,
    FormOutcome,
    FormPreview,
    default_output,
    preview_form,
    run_form,
)

__all__ = ["CorrelateDialog", "add_correlate_action", "open_correlate_dialog"]

#: the window attribute that remembers where the dialog last wrote (the user's results
#: folder for the next proposal)
LAST_FOLDER_ATTR = "correlate_output_folder"


def _spin(lo: int, hi: int, value: int, tip: str) -> QSpinBox:
    s = QSpinBox()
    s.setRange(lo, hi)
    s.setValue(value)
    s.setToolTip(tip)
    return s


def _seconds_text(text: str) -> float | None:
    t = text.strip()
    return float(t) if t else None


class CorrelateDialog(QDialog):
    """The correlate form of one raw source (non-modal; one run at a time).

    Parameters
    ----------
    context : AppContext
    target : RawTarget
    window : QWidget, optional
        The main window (opens the result, remembers the results folder).
    """

    RUN_KEY = "correlate-dialog:run"
    PLAN_KEY = "correlate-dialog:plan"

    def __init__(self, context: Any, target: RawTarget, window: QWidget | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.context, self.target, self.window_ = context, target, window
        self.setWindowTitle(f"Correlate {target.label}")
        self.running = False
        self.failed = False
        self.outcome: FormOutcome | None = None
        self.preview: FormPreview | None = None
        self._run_id: int | None = None
        outer = QVBoxLayout(self)
        src = QLabel(f"<b>{target.label}</b> ({target.layout})")
        src.setToolTip(target.path)
        outer.addWidget(src)
        outer.addWidget(self._build_inputs())
        outer.addWidget(self._build_frames())
        outer.addWidget(self._build_compute())
        outer.addWidget(self._build_output())
        self.plan_label = QLabel("")
        self.plan_label.setWordWrap(True)
        self.plan_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.plan_label.setMinimumHeight(60)
        plan_box = QGroupBox("Plan")
        QVBoxLayout(plan_box).addWidget(self.plan_label)
        outer.addWidget(plan_box)
        self.command_label = QLabel("")
        self.command_label.setWordWrap(True)
        self.command_label.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse)
        self.command_label.setToolTip("The same job on the command line")
        self.command_label.setStyleSheet("font-family: monospace; font-size: 8pt")
        outer.addWidget(self.command_label)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        outer.addWidget(self.progress)
        outer.addWidget(self.status)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.run_btn = QPushButton("Correlate")
        self.run_btn.setDefault(True)
        self.run_btn.clicked.connect(self.start)
        self.cancel_btn = QPushButton("Close")
        self.cancel_btn.clicked.connect(self.cancel_or_close)
        buttons.addWidget(self.run_btn)
        buttons.addWidget(self.cancel_btn)
        outer.addLayout(buttons)
        self._plan_timer = QTimer(self)
        self._plan_timer.setSingleShot(True)
        self._plan_timer.setInterval(300)
        self._plan_timer.timeout.connect(self.refresh_plan)
        for e in (self.qmap_edit, self.exclude_edit, self.frame_time_edit,
                  self.bin_time_edit, self.dq_edit, self.output_edit):
            e.textChanged.connect(self._changed)
        for s in (self.begin, self.end, self.stride, self.avg, self.ages_points,
                  self.groups, self.group_tile):
            s.valueChanged.connect(self._changed)
        for c in (self.qmap_combo, self.mask_combo, self.mode_combo, self.path_combo):
            c.currentIndexChanged.connect(self._changed)
        for b in (self.ages_check, self.overwrite_check):
            b.toggled.connect(self._changed)
        self.context.runner.sigJobFinished.connect(self._on_job_finished)
        self._update_enabled()
        self._changed()

    # ------------------------------------------------------------------ form
    def _build_inputs(self) -> QGroupBox:
        box = QGroupBox("Inputs")
        form = QFormLayout(box)
        self.qmap_combo = QComboBox()
        self.qmap_combo.addItem("q-map file", "file")
        drawn = self.context.shared.get(PARTITION_KEY)
        if drawn is not None:
            self.qmap_combo.addItem(
                f"Detector tab's partition ({drawn.qmap.n_dynamic} bins, "
                f"{drawn.qmap.shape[0]}x{drawn.qmap.shape[1]})", "drawn")
        self.qmap_edit = QLineEdit(self.target.qmap_path or "")
        self.qmap_edit.setPlaceholderText("a partition file (/qmap) or a result file")
        browse = QPushButton("\u2026")
        browse.setToolTip("Choose a q-map file")
        browse.clicked.connect(self._browse_qmap)
        row = QHBoxLayout()
        row.addWidget(self.qmap_combo)
        row.addWidget(self.qmap_edit, 1)
        row.addWidget(browse)
        form.addRow("Q-map", row)
        self.mask_combo = QComboBox()
        self.mask_combo.addItem("the q-map's own", "qmap")
        dm = self.detector_mask()
        if dm is not None:
            self.mask_combo.addItem(f"Detector tab's ({dm.n_masked} pixels masked)", "detector")
            self.mask_combo.setCurrentIndex(1)
        self.mask_combo.setToolTip("The Detector tab's mask of this source is written beside "
                                   "the result (OUT_mask.hdf) and ANDed with the q-map's "
                                   "(correlate --mask)")
        form.addRow("Mask", self.mask_combo)
        return box

    def _build_frames(self) -> QGroupBox:
        box = QGroupBox("Frames")
        form = QFormLayout(box)
        row = QHBoxLayout()
        self.begin = _spin(0, 2**31 - 1, 0, "First raw frame (0-based)")
        self.end = _spin(-1, 2**31 - 1, -1, "End raw frame (exclusive); -1: the last")
        self.stride = _spin(1, 1 << 20, 1, "Every n-th frame")
        self.avg = _spin(1, 1 << 20, 1, "Mean of n consecutive frames")
        for text, w in (("begin", self.begin), ("end", self.end), ("stride", self.stride),
                        ("avg", self.avg)):
            row.addWidget(QLabel(text))
            row.addWidget(w)
        form.addRow("Selection", row)
        self.exclude_edit = QLineEdit(self.raw_exclusions())
        self.exclude_edit.setPlaceholderText("e.g. 100-149,800 (raw frames, inclusive)")
        self.exclude_edit.setToolTip("Frames dropped as if never recorded (the Raw tab's "
                                     "Exclude frames); delays across them are shifted")
        form.addRow("Exclude", self.exclude_edit)
        self.frame_time_edit = QLineEdit("" if self.target.frame_time is None
                                         or self.target.layout == "timepix"
                                         else repr(float(self.target.frame_time)))
        self.frame_time_edit.setPlaceholderText("from the file (else 1 s)")
        form.addRow("Frame time (s)", self.frame_time_edit)
        self.bin_time_edit = QLineEdit("" if self.target.bin_time is None
                                       else repr(float(self.target.bin_time)))
        self.bin_time_edit.setPlaceholderText("time-tag mode (multi-tau only)")
        self.bin_time_edit.setEnabled(self.target.layout == "timepix")
        self.bin_time_edit.setToolTip("Event lists: frames of this length")
        form.addRow("Bin time (s)", self.bin_time_edit)
        form.setRowVisible(self.bin_time_edit, self.target.layout == "timepix")
        return box

    def _build_compute(self) -> QGroupBox:
        box = QGroupBox("Correlation")
        form = QFormLayout(box)
        self.mode_combo = QComboBox()
        for text, mode in (("multi-tau", "multitau"), ("two-time", "twotime"),
                           ("both", "both")):
            self.mode_combo.addItem(text, mode)
        self.dq_edit = QLineEdit("all")
        self.dq_edit.setToolTip("Dynamic q-bins of the two-time and age x lag maps, e.g. 1-5,8")
        row = QHBoxLayout()
        row.addWidget(self.mode_combo)
        row.addWidget(QLabel("q-bins"))
        row.addWidget(self.dq_edit)
        form.addRow("Mode", row)
        self.ages_check = QCheckBox("age x lag map")
        self.ages_points = _spin(1, 64, 8, "Points per level (lags 0..2M-1, then M per octave)")
        self.groups = _spin(0, 64, 0, "K independent pixel groups (errors of the age cuts)")
        self.group_tile = _spin(1, 256, 8, "Side of the detector tiles dealt to the groups")
        row = QHBoxLayout()
        row.addWidget(self.ages_check)
        row.addWidget(QLabel("points"))
        row.addWidget(self.ages_points)
        row.addWidget(QLabel("pixel groups"))
        row.addWidget(self.groups)
        row.addWidget(QLabel("tile"))
        row.addWidget(self.group_tile)
        form.addRow("Ages", row)
        self.path_combo = QComboBox()
        for text, word in (("auto (cheaper)", "auto"), ("photons", "photons"),
                           ("frames", "frames")):
            self.path_combo.addItem(text, word)
        form.addRow("Path", self.path_combo)
        return box

    def _build_output(self) -> QGroupBox:
        box = QGroupBox("Output")
        row = QHBoxLayout(box)
        folders = [getattr(self.window_, LAST_FOLDER_ATTR, None)]
        self.output_edit = QLineEdit(str(default_output(self.target.path, folders)))
        browse = QPushButton("\u2026")
        browse.setToolTip("Choose the result file")
        browse.clicked.connect(self._browse_output)
        self.overwrite_check = QCheckBox("replace")
        self.overwrite_check.setToolTip("Replace an existing result (never an input)")
        row.addWidget(self.output_edit, 1)
        row.addWidget(browse)
        row.addWidget(self.overwrite_check)
        return box

    def _browse_qmap(self) -> None:
        start = self.qmap_edit.text() or str(Path(self.target.path).parent)
        path, _ = QFileDialog.getOpenFileName(self, "Q-map", start,
                                              "HDF5 (*.hdf *.h5 *.hdf5 *.nxs);;All (*)")
        if path:
            self.qmap_edit.setText(path)
            self.qmap_combo.setCurrentIndex(0)

    def _browse_output(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Result file", self.output_edit.text(),
                                              "HDF5 (*.hdf *.h5)")
        if path:
            self.output_edit.setText(path)

    # ----------------------------------------------------------- window state
    def detector_mask(self) -> Any:
        """The Detector tab's mask of this source (None: none published for it)."""
        dm = self.context.shared.get(MASK_KEY)
        if dm is None or str(Path(dm.path)) != str(Path(self.target.path)):
            return None
        return dm

    def raw_exclusions(self) -> str:
        """The Raw tab's excluded frames of this source, as ``"A-B,C"``."""
        from xpcsviewer.compute.spec import frame_ranges_text, parse_frame_ranges

        got = self.context.shared.get(RAW_EXCLUDE_KEY)
        if not got or str(Path(got[0])) != str(Path(self.target.path)):
            return ""
        return frame_ranges_text(parse_frame_ranges(got[1]))

    def form(self) -> CorrelateForm:
        """The form as filled in (raises ValueError / SpecError for a bad entry)."""
        drawn = None
        if self.qmap_combo.currentData() == "drawn":
            drawn = self.context.shared[PARTITION_KEY].qmap
        mask = None
        if self.mask_combo.currentData() == "detector":
            dm = self.detector_mask()
            mask = None if dm is None else dm.mask
        try:
            frame_time = _seconds_text(self.frame_time_edit.text())
            bin_time = _seconds_text(self.bin_time_edit.text()) \
                if self.bin_time_edit.isEnabled() else None
        except ValueError:
            raise ValueError("frame and bin times are seconds, e.g. 0.001") from None
        return CorrelateForm(
            raw=self.target.path, output=self.output_edit.text().strip(),
            qmap=self.qmap_edit.text().strip() or None, drawn_qmap=drawn, mask=mask,
            begin=self.begin.value(), end=self.end.value(), stride=self.stride.value(),
            avg=self.avg.value(), exclude=self.exclude_edit.text(),
            mode=self.mode_combo.currentData(), dq=self.dq_edit.text().strip() or "all",
            ages=self.ages_check.isChecked(), ages_points=self.ages_points.value(),
            groups=self.groups.value(), group_tile=self.group_tile.value(),
            path=self.path_combo.currentData(), frame_time=frame_time, bin_time=bin_time,
            overwrite=self.overwrite_check.isChecked())

    # ------------------------------------------------------------------ plan
    def _changed(self, *_a: Any) -> None:
        self.qmap_edit.setEnabled(self.qmap_combo.currentData() == "file")
        ages = self.ages_check.isChecked()
        self.ages_points.setEnabled(ages)
        bins = ages or self.mode_combo.currentData() != "multitau"
        for w in (self.dq_edit, self.groups, self.group_tile):
            w.setEnabled(bins)  # used by the two-time and age x lag maps only
        if self.running:
            return
        try:
            form = self.form()
            self.command_label.setText(shlex.join(form.command()))
        except ValueError as exc:
            self.command_label.setText("")
            self.plan_label.setText(str(exc))
            self.run_btn.setEnabled(False)
            return
        self.run_btn.setEnabled(bool(form.output))
        self._plan_timer.start()

    def refresh_plan(self) -> int | None:
        """Plan the form in a worker (its text and time estimate show when ready)."""
        try:
            form = self.form()
            form.job()
        except ValueError as exc:
            self.plan_label.setText(str(exc))
            return None
        self.plan_label.setText("planning\u2026")
        return self.context.runner.submit(
            self.PLAN_KEY, preview_form, form, on_result=self._on_plan,
            on_error=lambda info: self.plan_label.setText(info.message),
            description="Planning the correlation")

    def _on_plan(self, preview: FormPreview) -> None:
        self.preview = preview
        self.plan_label.setText(preview.text())

    # ------------------------------------------------------------------- run
    def start(self) -> int | None:
        """Run the form in a worker (the Correlate button)."""
        if self.running:
            return None
        try:
            form = self.form()
            form.job()
        except ValueError as exc:
            self.status.setText(str(exc))
            return None
        self.running, self.outcome, self.failed = True, None, False
        self.status.setText("correlating\u2026")
        self.progress.setRange(0, 0)
        self._update_enabled()
        self._run_id = self.context.runner.submit(
            self.RUN_KEY, run_form, form, on_result=self._on_done, on_error=self._on_error,
            on_progress=self._on_progress, description=f"Correlating {self.target.label}")
        return self._run_id

    def _on_progress(self, done: int, total: int, message: str) -> None:
        if total > 0:
            self.progress.setRange(0, int(total))
            self.progress.setValue(int(done))
        if message:
            self.status.setText(message)

    def _on_done(self, out: FormOutcome) -> None:
        self.outcome = out
        done = out.outcome
        lines = [f"wrote {out.output.name}: {done.summary}", *done.notes]
        self.status.setText("\n".join(lines))
        if self.window_ is not None:
            setattr(self.window_, LAST_FOLDER_ATTR, str(out.output.parent))
        self.context.show_status(f"Correlated {self.target.label} -> {out.output.name}")
        self.open_result(out.output)

    def _on_error(self, info: Any) -> None:
        self.failed = True
        self.status.setText(f"not run: {info.message}")
        self.context.show_status(f"Correlate: {info.message}")

    def _on_job_finished(self, key: str, rid: int) -> None:
        if key != self.RUN_KEY or rid != self._run_id:
            return
        self.running = False
        if self.outcome is None and not self.failed:
            self.status.setText("cancelled: nothing was written")
        self.progress.setRange(0, 1)
        self.progress.setValue(1 if self.outcome is not None else 0)
        self._update_enabled()

    def cancel_or_close(self) -> None:
        """Cancel the run (nothing is left behind), or close the dialog."""
        if self.running:
            self.status.setText("cancelling\u2026")
            self.context.runner.cancel(self.RUN_KEY)
        else:
            self.close()

    def _update_enabled(self) -> None:
        self.run_btn.setEnabled(not self.running)
        self.cancel_btn.setText("Cancel" if self.running else "Close")
        for box in self.findChildren(QGroupBox):
            if box.title() != "Plan":
                box.setEnabled(not self.running)

    def open_result(self, path: Path) -> None:
        """Open the result as a target, current, on the g2 tab."""
        win = self.window_
        if win is None or not hasattr(win, "open_paths"):
            self.context.open_files([str(path)])
            return
        if hasattr(win, "sigTargetsLoaded") and hasattr(win, "select_tab"):
            def show(_results: Any) -> None:
                win.sigTargetsLoaded.disconnect(show)
                if "g2" in getattr(win, "panels", {}):
                    win.select_tab("g2")

            win.sigTargetsLoaded.connect(show)
        win.open_paths([str(path)])
        browser = getattr(win, "browser", None)
        if browser is not None:
            paths = [str(Path(p).resolve()) for p in browser.target_paths()]
            if str(path.resolve()) in paths:
                browser.target_list.setCurrentRow(paths.index(str(path.resolve())))

    def closeEvent(self, event: Any) -> None:  # Qt override
        if self.running:
            self.context.runner.cancel(self.RUN_KEY)
        self.context.runner.cancel(self.PLAN_KEY)
        try:
            self.context.runner.sigJobFinished.disconnect(self._on_job_finished)
        except (RuntimeError, TypeError):
            pass
        super().closeEvent(event)


def _main_window(widget: QWidget | None) -> QWidget | None:
    w = widget.window() if widget is not None else None
    return w if w is not None and hasattr(w, "open_paths") else None


def open_correlate_dialog(parent: QWidget | None, context: Any,
                          target: RawTarget) -> CorrelateDialog:
    """Show the correlate dialog of ``target`` (non-modal) and return it."""
    win = _main_window(parent)
    dlg = CorrelateDialog(context, target, window=win, parent=win or parent)
    dlg.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, True)
    dlg.show()
    return dlg


def add_correlate_action(window: Any, menu: Any) -> Any:
    """File > Correlate Raw…: ask for a raw source, then open its dialog."""
    from PySide6.QtGui import QAction

    act = QAction("&Correlate Raw\u2026", window)
    act.setStatusTip("Correlate a raw acquisition into a result file (as xpcsviewer "
                     "correlate)")

    def ask() -> None:
        start = getattr(getattr(window, "browser", None), "folder", None) or str(Path.home())
        path, _ = QFileDialog.getOpenFileName(window, "Correlate a raw source", start,
                                              "All files (*)")
        if not path:
            return
        target = raw_target(path)
        if target is None:
            window.context.report_error(f"{Path(path).name}: not a raw source of a known "
                                        "layout (expected dense frames, Rigaku .bin, ESRF "
                                        "CSR, ImageD11 or Timepix)")
            return
        open_correlate_dialog(window, window.context, target)

    act.triggered.connect(ask)
    menu.addAction(act)
    return act
