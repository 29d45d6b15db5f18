"""Average: screen repeat measurements for outliers and average them into a new file.

The options are those of ``xpcsviewer average``; the work is
:func:`xpcsviewer.jobs.average.screen_files` ("Check") and
:func:`~xpcsviewer.jobs.average.average_files` ("Run"), in a worker with
progress and cancel. The plot shows the chosen per-file statistic with its
threshold lines; the table lists every rejected file with its reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from xpcsviewer.gui.panels.base import BasePanel, Deferred
from xpcsviewer.io.outputs import OutputRefusedError
from xpcsviewer.jobs.average import (
    AverageOptions,
    AverageSummary,
    IncompatibleFilesError,
    NoFilesAcceptedError,
    UnreadableFilesError,
    average_files,
    screen_files,
)
from xpcsviewer.model.result import path_label
from xpcsviewer.views.labels import average_output_name

__all__ = ["AverageOutcome", "AveragePanel", "average_job"]

STATISTICS = {
    "baseline": "g2 baseline (mean of the last delays)",
    "g2_z": "g2 curve deviation (robust z, MADs)",
    "intensity_z": "mean intensity (robust z, MADs)",
    "intensity": "mean intensity (counts/pixel/frame)",
}


@dataclass
class AverageOutcome:
    """Result of :func:`average_job`: a summary, or the reason nothing was written."""

    summary: AverageSummary | None
    error: str = ""
    screen_only: bool = False


def average_job(
    paths: list[str],
    output: str | Callable[[list[str]], str],
    options: AverageOptions,
    screen_only: bool = False,
    progress=None,
    cancel=None,
) -> AverageOutcome:
    """Worker job: screen (``screen_only``) or average; bad input becomes ``error``.

    ``output`` may be a callable naming the file from the accepted paths.
    """
    try:
        if screen_only:
            return AverageOutcome(
                screen_files(paths, options, progress=progress, cancel=cancel),
                screen_only=True,
            )
        return AverageOutcome(
            average_files(paths, output, options, progress=progress, cancel=cancel)
        )
    except NoFilesAcceptedError as exc:
        return AverageOutcome(exc.summary, "Nothing written: every file was rejected")
    except UnreadableFilesError as exc:
        return AverageOutcome(
            None, "Unreadable files:\n" + "\n".join(e.one_line() for e in exc.errors)
        )
    except (IncompatibleFilesError, FileExistsError, OutputRefusedError) as exc:
        return AverageOutcome(None, str(exc))


class AveragePanel(BasePanel):
    """Options, live statistic plot, rejected list, output chooser, Run/Cancel."""

    name = "average"
    title = "Average"
    figure_kind = "average"

    sigFinished = Signal(object)
    """An averaging or check run finished: (AverageOutcome)."""

    def __init__(self, context, parent=None) -> None:
        super().__init__(context, parent)
        self.outcome: AverageOutcome | None = None
        lay = QHBoxLayout(self)
        split = QSplitter()
        lay.addWidget(split)

        left = QWidget()
        ll = QVBoxLayout(left)
        ll.addWidget(QLabel("Files (the targets)"))
        self.file_list = QListWidget()
        ll.addWidget(self.file_list, 1)
        box = QGroupBox("Options")
        form = QFormLayout(box)
        self.method = QComboBox()
        self.method.addItem("inverse-variance weighted mean", "weighted")
        self.method.addItem("mean, standard error across files", "sem")
        self.method.setToolTip(
            "weighted: err = 1/sqrt(sum 1/err_i^2); sem: err = std(g2_i)/sqrt(n)"
        )
        form.addRow("errors", self.method)
        self.q_index = QSpinBox(minimum=0, maximum=10_000, value=0)
        self.q_index.setToolTip("q-bin whose g2 baseline screens the files (default 0: the first)")
        form.addRow("baseline q-bin", self.q_index)
        self.window = QSpinBox(minimum=1, maximum=10_000, value=10)
        self.window.setToolTip("Baseline: mean g2 of this many last delays (default 10)")
        form.addRow("baseline window", self.window)
        # Robust screening is on by default: a damaged repeat must not be averaged in
        # silently (turn both off to average everything, like --no-reject).
        self.use_baseline = QCheckBox("reject baseline outside", checked=True)
        self.use_baseline.setToolTip("Leave out files whose g2 baseline lies outside this range")
        self.b_min = QDoubleSpinBox(
            decimals=3, minimum=-10, maximum=10, value=0.95, singleStep=0.01
        )
        self.b_min.setToolTip("Lowest accepted g2 baseline (default 0.95)")
        self.b_max = QDoubleSpinBox(
            decimals=3, minimum=-10, maximum=10, value=1.05, singleStep=0.01
        )
        self.b_max.setToolTip("Highest accepted g2 baseline (default 1.05)")
        row = QHBoxLayout()
        for w in (self.b_min, QLabel("\u2013"), self.b_max):
            row.addWidget(w)
        form.addRow(self.use_baseline, row)
        self.use_mad = QCheckBox("reject above (MADs)", checked=True)
        self.use_mad.setToolTip("Leave out files whose g2 or intensity is further than this "
                                "many MADs from the median")
        self.mad = QDoubleSpinBox(decimals=1, minimum=0.5, maximum=100, value=5.0)
        self.mad.setToolTip("Rejection limit in median absolute deviations (default 5)")
        form.addRow(self.use_mad, self.mad)
        self.saxs2d = QCheckBox("average SAXS 2-D", checked=True)
        self.saxs2d.setToolTip("Also average the 2-D scattering images")
        self.stack = QCheckBox(
            "average G2/IP/IF stack (if every file has it)", checked=True
        )
        self.stack.setToolTip("Also average the per-pixel G2/IP/IF stacks; skipped if a file "
                              "lacks them")
        self.overwrite = QCheckBox("replace an existing output file")
        self.overwrite.setToolTip("Write over the output file if it exists (off: stop instead)")
        for w in (self.saxs2d, self.stack, self.overwrite):
            form.addRow(w)
        ll.addWidget(box)
        out_row = QHBoxLayout()
        self._proposed = ""
        self.output = QLineEdit()
        self.output.setToolTip("Result file to write (.hdf); named after the files, proposed "
                               "in the last export folder (never the data folder)")
        self.output.setPlaceholderText("output .hdf")
        browse = QPushButton("Browse\u2026")
        browse.setToolTip("Choose the output file")
        browse.clicked.connect(self._on_browse_clicked)
        out_row.addWidget(self.output, 1)
        out_row.addWidget(browse)
        ll.addLayout(out_row)
        btns = QHBoxLayout()
        self.check_btn = QPushButton("Check")
        self.check_btn.setToolTip(
            "Compute the statistics and rejections without writing"
        )
        self.run_btn = QPushButton("Run")
        self.run_btn.setToolTip("Screen the files and write the average of those kept")
        self.cancel_btn = QPushButton("Cancel", enabled=False)
        self.cancel_btn.setToolTip("Stop the running check or average; nothing is written")
        self.check_btn.clicked.connect(lambda: self.start(screen_only=True))
        self.run_btn.clicked.connect(lambda: self.start(screen_only=False))
        self.cancel_btn.clicked.connect(self.cancel_jobs)
        for w in (self.check_btn, self.run_btn, self.cancel_btn):
            btns.addWidget(w)
        ll.addLayout(btns)
        self.progress = QProgressBar()
        ll.addWidget(self.progress)
        split.addWidget(left)

        right = QWidget()
        rl = QVBoxLayout(right)
        stat_row = QHBoxLayout()
        self.stat_combo = QComboBox()
        self.stat_combo.setToolTip("Per-file statistic drawn; rejected files are marked")
        for k, v in STATISTICS.items():
            self.stat_combo.addItem(v, k)
        self.stat_combo.currentIndexChanged.connect(lambda _i: self._draw())
        stat_row.addWidget(QLabel("Statistic"))
        stat_row.addWidget(self.stat_combo, 1)
        rl.addLayout(stat_row)
        self.pw = pg.PlotWidget()
        self.plot = self.pw.getPlotItem()
        self.plot.showGrid(x=True, y=True, alpha=0.3)
        self.plot.setLabel("bottom", "file")

        def tip(x, y, data):
            return f"{data}\n{y:.5g}"

        self.accepted_item = pg.ScatterPlotItem(
            size=8,
            brush=pg.mkBrush("#1f77b4"),
            name="accepted",
            hoverable=True,
            tip=tip,
        )
        self.rejected_item = pg.ScatterPlotItem(
            size=10,
            symbol="x",
            brush=pg.mkBrush("#c0392b"),
            pen=pg.mkPen("#c0392b"),
            name="rejected",
            hoverable=True,
            tip=tip,
        )
        self.plot.addItem(self.accepted_item)
        self.plot.addItem(self.rejected_item)
        self.lines = [
            pg.InfiniteLine(
                angle=0, pen=pg.mkPen("r", width=1.5, style=Qt.PenStyle.DashLine)
            )
            for _ in range(2)
        ]
        for ln in self.lines:
            self.plot.addItem(ln)
            ln.hide()
        rl.addWidget(self.pw, 2)
        self.summary_label = QLabel(" ")
        self.summary_label.setWordWrap(True)
        rl.addWidget(self.summary_label)
        self.table = QTableWidget(0, 2)
        self.table.setHorizontalHeaderLabels(["rejected file", "reason"])
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.Stretch)
        rl.addWidget(self.table, 1)
        split.addWidget(right)
        split.setSizes([420, 700])
        self.use_baseline.toggled.connect(lambda _b: self._draw())
        self.b_min.valueChanged.connect(lambda _v: self._draw())
        self.b_max.valueChanged.connect(lambda _v: self._draw())
        self.use_mad.toggled.connect(lambda _b: self._draw())
        self.mad.valueChanged.connect(lambda _v: self._draw())

    # ------------------------------------------------------------- targets
    def applies_to(self, results):
        if len(results) < 2:
            return "Select two or more result files (repeat measurements) to average"
        return None

    def refresh(self) -> None:
        """Show the target files and propose an output name (GUI thread)."""
        self.file_list.clear()
        self.file_list.addItems([str(r.path) for r in self.results])
        self._propose([str(r.path) for r in self.results])
        # Screening reads only the small arrays: run it at once so the statistics
        # plot is live as soon as the targets change.
        self.start(screen_only=True)

    def _auto_name(self) -> bool:
        text = self.output.text().strip()
        return not text or text == self._proposed

    def _propose(self, paths: list[str]) -> None:
        """Name the output after ``paths`` (the targets, then the files the check
        accepts) until the user types a name of their own."""
        if not self.results or not paths or not self._auto_name():
            return
        name = average_output_name([path_label(p) for p in paths])
        # the last export folder, never the data folder (a shared beamline directory)
        self._proposed = self.context.export_folder.propose(name)
        self.output.setText(self._proposed)

    def clear_plots(self) -> None:
        self.file_list.clear()
        self.outcome = None
        self.accepted_item.setData([], [])
        self.rejected_item.setData([], [])
        for ln in self.lines:
            ln.hide()
        self.table.setRowCount(0)

    def options(self) -> AverageOptions:
        """The options shown (GUI thread)."""
        return AverageOptions(
            error_method=self.method.currentData(),
            baseline_q_index=self.q_index.value(),
            baseline_window=self.window.value(),
            baseline_range=(
                (self.b_min.value(), self.b_max.value())
                if self.use_baseline.isChecked()
                else None
            ),
            mad_threshold=self.mad.value() if self.use_mad.isChecked() else None,
            include_saxs_2d=self.saxs2d.isChecked(),
            include_g2_stack=self.stack.isChecked(),
            overwrite=self.overwrite.isChecked(),
        )

    # ------------------------------------------------------------- running
    def start(self, screen_only: bool = False) -> int | None:
        """Start a check (``screen_only``) or an average in a worker (GUI thread)."""
        paths = [str(r.path) for r in self.results]
        if len(paths) < 2:
            self.context.report_error("Average: select two or more files")
            return None
        out = self.output.text().strip()
        if not screen_only and not out:
            self.context.report_error("Average: choose an output file")
            return None
        target: str | Callable[[list[str]], str] = out
        if not screen_only:
            self.context.export_folder.remember(out)
        if not screen_only and out == self._proposed:
            # our own name: made from the files actually averaged (after rejection)
            folder = Path(out).parent
            target = lambda acc: str(  # noqa: E731
                folder / average_output_name([path_label(p) for p in acc]))
        self.progress.setValue(0)
        self._set_running(True)
        self.summary_label.setText(
            "checking\u2026" if screen_only else "averaging\u2026"
        )
        return self.submit(
            "run",
            average_job,
            paths,
            target,
            self.options(),
            screen_only,
            on_result=self._on_result,
            on_error=self._on_error,
            on_progress=self._on_progress,
            description="Average: check" if screen_only else "Average",
        )

    def _set_running(self, running: bool) -> None:
        self.run_btn.setEnabled(not running)
        self.check_btn.setEnabled(not running)
        self.cancel_btn.setEnabled(running)

    def cancel_jobs(self) -> None:
        super().cancel_jobs()
        self._set_running(False)
        self._reset_progress("cancelled")
        self.summary_label.setText("cancelled")

    def _on_progress(self, done: int, total: int, message: str) -> None:
        self.progress.setMaximum(max(1, total))
        self.progress.setValue(done)
        self.progress.setFormat(f"%p% {message}")

    def _reset_progress(self, text: str = "") -> None:
        # the bar's last message ("reading F03...") must not outlive its job
        self.progress.setValue(0)
        self.progress.setFormat(text or "%p%")

    def _on_error(self, info) -> None:
        self._set_running(False)
        self._reset_progress("failed")
        self.summary_label.setText(f"failed: {info.message}")
        self.context.report_error(info)

    def _on_result(self, outcome: AverageOutcome) -> None:
        self._set_running(False)
        if outcome.error:
            self._reset_progress("nothing written")
        else:
            self.progress.setValue(self.progress.maximum())
            self.progress.setFormat("checked" if outcome.screen_only else "written")
        self.outcome = outcome
        s = outcome.summary
        if s is not None and [st.path for st in s.stats] == [str(r.path) for r in self.results]:
            if s.output is not None and self._auto_name():
                self._proposed = str(s.output)
                self.output.setText(self._proposed)
            else:
                self._propose(s.accepted)
        if outcome.error:
            self.summary_label.setText(outcome.error)
        elif s is not None:
            txt = (
                f"{len(s.accepted)} of {len(s.stats)} files accepted "
                f"(errors: {s.error_method})"
            )
            if s.output is not None:
                txt += f"; wrote {s.output} ({', '.join(s.fields)})"
                self.context.show_status(f"Wrote {s.output}")
            if s.notes:
                txt += "\n" + "\n".join(s.notes)
            self.summary_label.setText(txt)
        rejected = s.rejected if s is not None else []
        self.table.setRowCount(len(rejected))
        for i, (p, why) in enumerate(rejected):
            self.table.setItem(i, 0, QTableWidgetItem(Path(p).name))
            self.table.setItem(i, 1, QTableWidgetItem(why))
            self.table.item(i, 0).setToolTip(p)
        self._draw()
        self.sigFinished.emit(outcome)

    def _draw(self) -> None:
        s = self.outcome.summary if self.outcome is not None else None
        key = self.stat_combo.currentData()
        for ln in self.lines:
            ln.hide()
        if s is None:
            self.accepted_item.setData([], [])
            self.rejected_item.setData([], [])
            return
        vals = np.array([getattr(st, key) for st in s.stats], dtype=np.float64)
        acc = np.array([st.accepted for st in s.stats], dtype=bool)
        x = np.arange(len(vals), dtype=np.float64)
        ok = np.isfinite(vals)
        names = np.array(
            [
                f"{Path(st.path).name}{': ' + st.reason if st.reason else ''}"
                for st in s.stats
            ],
            dtype=object,
        )
        self.accepted_item.setData(x[ok & acc], vals[ok & acc], data=names[ok & acc])
        self.rejected_item.setData(x[ok & ~acc], vals[ok & ~acc], data=names[ok & ~acc])
        self.plot.setLabel("left", STATISTICS[key])
        # whole-number file ticks, 1-based as in the file list (names are on hover)
        n = len(vals)
        step = max(1, n // 12)
        self.plot.getAxis("bottom").setTicks([[(float(i), str(i + 1)) for i in range(0, n, step)]])
        if key == "baseline" and self.use_baseline.isChecked():
            for ln, v in zip(
                self.lines, (self.b_min.value(), self.b_max.value()), strict=True
            ):
                ln.setValue(v)
                ln.show()
        elif key in ("g2_z", "intensity_z") and self.use_mad.isChecked():
            self.lines[0].setValue(self.mad.value())
            self.lines[0].show()
        self.sigUpdated.emit()

    def _on_browse_clicked(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, "Averaged result file", self.output.text(), "HDF5 result (*.hdf *.h5)"
        )
        if path:
            self.context.export_folder.remember(path)
            self.output.setText(path)

    # -------------------------------------------------------------- export
    def figure_options(self) -> dict:
        """The statistic shown, the last check's statistics and the options shown.

        Before a check finished (or when it failed) the files are screened with the
        options shown, in the export worker.
        """
        s = self.outcome.summary if self.outcome is not None else None
        if s is None:  # the loaded targets: no file is read again
            from xpcsviewer.jobs.figure_inputs import average_screen

            s = Deferred(average_screen, self.shown_results(), self.options())
        return {
            "statistic": self.stat_combo.currentData(),
            "summary": s,
            "options": self.options(),
        }

    def data_columns(self):
        s = self.outcome.summary if self.outcome is not None else None
        if s is None:
            return None
        cols = {"file": np.array([st.path for st in s.stats], dtype=object)}
        for key in STATISTICS:
            cols[key] = np.array([getattr(st, key) for st in s.stats], dtype=np.float64)
        cols["accepted"] = np.array([int(st.accepted) for st in s.stats])
        cols["reason"] = np.array([st.reason for st in s.stats], dtype=object)
        return cols, [f"averaging statistics (errors: {s.error_method})"]

    # ------------------------------------------------------------ settings
    def get_settings(self) -> dict:
        o = self.options()
        return {
            "error_method": str(self.method.currentData()),
            "q_index": o.baseline_q_index,
            "window": o.baseline_window,
            "use_baseline": self.use_baseline.isChecked(),
            "b_min": self.b_min.value(),
            "b_max": self.b_max.value(),
            "use_mad": self.use_mad.isChecked(),
            "mad": self.mad.value(),
        }

    def set_settings(self, settings: dict) -> None:
        """Apply the keys present in ``settings``; bad values are ignored."""
        setters = {
            "error_method": lambda v: self.method.setCurrentIndex(
                max(0, self.method.findData(str(v)))
            ),
            "q_index": lambda v: self.q_index.setValue(int(v)),
            "window": lambda v: self.window.setValue(int(v)),
            "use_baseline": lambda v: self.use_baseline.setChecked(bool(v)),
            "b_min": lambda v: self.b_min.setValue(float(v)),
            "b_max": lambda v: self.b_max.setValue(float(v)),
            "use_mad": lambda v: self.use_mad.setChecked(bool(v)),
            "mad": lambda v: self.mad.setValue(float(v)),
        }
        for key, value in settings.items():
            if key in setters:
                try:
                    setters[key](value)
                except (TypeError, ValueError):
                    continue
