"""Series: tau(q) and contrast of a run of files against start time, index or a field.

The targets (an ageing or temperature run) are fitted in a worker with the ``fit``
command's entry point (:mod:`xpcsviewer.jobs.series`); each file is fitted once (kept by
path, modification time, model and abscissa), so a file added later (a new target, the
end of a Live acquisition, or with "follow folder" a finished file appearing in the open
folder) is fitted alone and appended. What is drawn, and what is left out, is
:func:`xpcsviewer.views.series.series_drawing`, which the exported figure draws too.
Export: the figure (matplotlib) and the table (CSV, the columns of ``xpcsviewer series``).
A line joins only files of one sample on one q-partition
(:mod:`xpcsviewer.views.series_groups`); the status line says what was not joined.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
)

from xpcsviewer.gui.panels._live_jobs import fit_series_job, list_finished_job
from xpcsviewer.gui.panels._twotime_keys import wrapping_label
from xpcsviewer.gui.panels.base import BasePanel, apply_settings
from xpcsviewer.gui.widgets import SparseLogAxis, curve_color, curve_pen, plain_axes

__all__ = ["SeriesPanel", "export_series_figure_job", "series_key"]

FOLLOW_MS = 3000
#: pyqtgraph symbols of the open marker kinds ("t1" points up, "t" down).
_SYMBOLS = {"open": "o", "limit_up": "t1", "limit_down": "t"}


def export_series_figure_job(table, bins: list[int], path: str, log_x: bool = False,
                             size: str = "double", progress=None, cancel=None) -> str:
    """Worker job: the series figure (matplotlib, Agg) at a journal ``size``, saved
    atomically."""
    from xpcsviewer.export import save_figure
    from xpcsviewer.export.series import series_figure

    save_figure(series_figure(table, bins, log_x=log_x, size=size), path)
    return str(path)


def series_key(drawings) -> str:
    """The lines' key below the plots, one entry per group: "q (1/Å): A02…: ━ 0.0016,
    ━ 0.0032; H01…: ━ 0.0044" in the lines' colours (issue 49: a legend of every
    line of several groups covered the τ plot)."""
    from html import escape

    groups: dict[str, list[str]] = {}
    for k, d in enumerate(drawings):
        c = curve_color(k).name()
        groups.setdefault(d.group, []).append(
            f"<span style='color:{c}'>\u2501</span> {d.q:.4g}")
    if not groups:
        return ""
    parts = [(f"{escape(g)}: " if g else "") + ", ".join(v) for g, v in groups.items()]
    return "q (\u00c5\u207b\u00b9): " + "; ".join(parts)


class SeriesPanel(BasePanel):
    """tau and contrast per q-bin against the file's start time, index or a field."""

    name = "series"
    title = "Series"

    def __init__(self, context, parent=None) -> None:
        super().__init__(context, parent)
        from xpcsviewer.jobs.series import SeriesTable

        self.table = SeriesTable("start_time")
        self._cache: dict[tuple, object] = {}  # (path, mtime, model, x) -> FileFit
        self.extra_paths: list[str] = []  # files found by "follow folder"
        self._pending: set[str] = set()
        lay = QVBoxLayout(self)
        bar = QHBoxLayout()
        self.x_combo = QComboBox()
        self.x_combo.setToolTip("x axis: start time of each file, its place in the list, or a "
                                "metadata value")
        self.x_combo.addItem("start time", "start_time")
        self.x_combo.addItem("file index", "index")
        self.x_combo.addItem("metadata field", "field")
        self.field_edit = QLineEdit(placeholderText="/entry/sample/temperature",
                                    toolTip="An HDF5 path, or a name under /entry/sample")
        self.field_edit.setEnabled(False)
        self.model_combo = QComboBox()
        self.model_combo.setToolTip("g2 model fitted to every file; automatic picks by AICc "
                                    "(default)")
        for m, text in (("auto", "automatic (AICc)"), ("single", "single"),
                        ("stretched", "stretched"), ("double", "double")):
            self.model_combo.addItem(text, m)
        self.follow_box = QCheckBox("Follow folder", toolTip=(
            "Append result files that appear finished in the open folder (not the "
            "partial results of a live run)"))
        self.logx = QCheckBox("log x", checked=False)
        self.logx.setToolTip("Logarithmic x axis (default off)")
        for w in (QLabel("x"), self.x_combo, self.field_edit, QLabel("model"),
                  self.model_combo, self.logx, self.follow_box):
            bar.addWidget(w)
        bar.addStretch(1)
        lay.addLayout(bar)
        self.status = QLabel(" ")
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        body = QHBoxLayout()
        self.bin_list = QListWidget()
        self.bin_list.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.bin_list.setMaximumWidth(160)
        self.bin_list.setToolTip("q-bins to draw (Ctrl/Shift-click for several)")
        body.addWidget(self.bin_list)
        plots = pg.GraphicsLayoutWidget()
        self.tau_plot = plain_axes(plots.addPlot(
            row=0, col=0, axisItems={"left": SparseLogAxis("left"),
                                     "bottom": SparseLogAxis("bottom")}))
        self.tau_plot.setLogMode(x=False, y=True)
        self.tau_plot.setLabel("left", "\u03c4 (s)")
        self.c_plot = plain_axes(plots.addPlot(row=1, col=0,
                                               axisItems={"bottom": SparseLogAxis("bottom")}))
        self.c_plot.setLabel("left", "contrast")
        self.c_plot.setXLink(self.tau_plot)
        for p in (self.tau_plot, self.c_plot):
            p.showGrid(x=True, y=True, alpha=0.3)
        right = QVBoxLayout()
        right.addWidget(plots, 1)
        self.tau_key = wrapping_label()  # the lines' key: below the plots, not over them
        self.tau_key.setTextFormat(Qt.TextFormat.RichText)
        self.tau_key.setToolTip("Each line's q, per group of files (one sample on one "
                                "q-partition); the colours are the lines'")
        right.addWidget(self.tau_key)
        body.addLayout(right, 1)
        lay.addLayout(body, 1)
        self.x_combo.currentIndexChanged.connect(self._on_x_changed)
        self.field_edit.editingFinished.connect(self._refit)
        self.model_combo.currentIndexChanged.connect(lambda _i: self._refit())
        self.bin_list.itemSelectionChanged.connect(self._draw)
        self.logx.toggled.connect(lambda _b: self._draw())
        self.follow_timer = QTimer(self, interval=FOLLOW_MS)
        self.follow_timer.timeout.connect(self._look_in_folder)
        self.follow_box.toggled.connect(self._on_follow)

    # ----------------------------------------------------------- settings
    def x_name(self) -> str:
        x = self.x_combo.currentData()
        return (self.field_edit.text().strip() or "start_time") if x == "field" else x

    def _key(self, path: str) -> tuple:
        try:
            mtime = Path(path).stat().st_mtime
        except OSError:
            mtime = 0.0
        return (path, mtime, self.model_combo.currentData(), self.x_name())

    def _on_x_changed(self, _i: int) -> None:
        self.field_edit.setEnabled(self.x_combo.currentData() == "field")
        self._refit()

    def _refit(self) -> None:
        self._dirty = True
        if self.isVisible():
            self._refresh_now()

    def _on_follow(self, on: bool) -> None:
        if on:
            self.follow_timer.start()
            self._look_in_folder()
        else:
            self.follow_timer.stop()

    # ------------------------------------------------------------ targets
    def applies_to(self, results):
        if not results and not self.extra_paths:
            return "Select the files of a run (two or more) first"
        return None

    def series_paths(self) -> list[str]:
        """The files of the series: the targets, then files found by following."""
        paths = [str(r.path) for r in self.results]
        return paths + [p for p in self.extra_paths if p not in paths]

    def refresh(self) -> None:
        """Fit the files not fitted yet (a worker), then draw the series."""
        paths = self.series_paths()
        todo = [p for p in paths if self._key(p) not in self._cache]
        self._assemble()
        if not todo:
            self._draw()
            return
        self._pending = set(todo)
        self.status.setText(f"fitting {len(todo)} file(s) of {len(paths)}\u2026")
        keys = {p: self._key(p) for p in todo}
        self.submit("fit", fit_series_job, todo, self.x_name(), self.model_combo.currentData(),
                    on_result=lambda fits, keys=keys: self._on_fits(fits, keys),
                    description=f"Series: fitting {len(todo)} file(s)")

    def _on_fits(self, fits, keys: dict) -> None:
        for f in fits:
            self._cache[keys.get(f.path, self._key(f.path))] = f
        self._pending.clear()
        self._assemble()
        self._draw()

    def _assemble(self) -> None:
        from xpcsviewer.jobs.series import SeriesTable

        x = self.x_name()
        table = SeriesTable(x)
        table.extend([self._cache[k] for k in (self._key(p) for p in self.series_paths())
                      if k in self._cache])
        self.table = table
        self._fill_bins()

    def _fill_bins(self) -> None:
        bins = self.table.bin_numbers()
        have = [self.bin_list.item(i).data(Qt.ItemDataRole.UserRole)
                for i in range(self.bin_list.count())]
        if bins == have:
            return
        from xpcsviewer.views.series_groups import series_groups

        chosen = {it.data(Qt.ItemDataRole.UserRole) for it in self.bin_list.selectedItems()}
        qs = self.table.bin_q()
        groups = series_groups(self.table)
        self.bin_list.blockSignals(True)
        self.bin_list.clear()
        for b in bins:
            gq = [(g.label, g.q[b]) for g in groups if b in g.q]
            if len(gq) > 1:  # one line per group: each its own q
                it = QListWidgetItem(f"{b}: q={min(q for _, q in gq):.3g}\u2013"
                                     f"{max(q for _, q in gq):.3g}")
                it.setToolTip(f"bin {b} is {len(gq)} lines, one per group: " + "; ".join(
                    f"{name} q={q:.4g}" for name, q in gq))
            else:
                it = QListWidgetItem(f"{b}: q={qs.get(b, float('nan')):.4g}")
            it.setData(Qt.ItemDataRole.UserRole, b)
            self.bin_list.addItem(it)
        if not chosen & set(bins):
            chosen = set(self.table.default_bins())
        for i in range(self.bin_list.count()):
            it = self.bin_list.item(i)
            it.setSelected(it.data(Qt.ItemDataRole.UserRole) in chosen)
        self.bin_list.blockSignals(False)

    def chosen_bins(self) -> list[int]:
        return sorted(it.data(Qt.ItemDataRole.UserRole) for it in self.bin_list.selectedItems())

    # ------------------------------------------------------------ follow
    def _look_in_folder(self) -> None:
        browser = getattr(self.window(), "browser", None)
        folder = getattr(browser, "folder", None)
        if not folder:
            return
        self.submit("follow-folder", list_finished_job, str(folder), self.series_paths(),
                    on_result=self._on_found, description="Series: looking for new files")

    def _on_found(self, paths: list[str]) -> None:
        new = [p for p in paths if p not in self.series_paths()]
        if not new:
            return
        self.extra_paths.extend(new)
        self.context.show_status(f"Series: {len(new)} new file(s) appended")
        self._refit()

    # ------------------------------------------------------------ drawing
    def _draw(self) -> None:
        from xpcsviewer.views.series import KEY_TEXT, not_drawn_text, series_drawing, x_span
        from xpcsviewer.views.series_groups import not_joined_text

        self.tau_plot.clear()
        self.c_plot.clear()
        t = self.table
        logx = self.logx.isChecked()
        drawings = series_drawing(t, self.chosen_bins(), log_x=logx)
        n_ok = sum(f.error is None for f in t.files)
        errs = [f for f in t.files if f.error is not None]
        msg = (f"{n_ok} file(s) in the series, x = {t.x_label()}; {KEY_TEXT}; "
               f"{not_drawn_text(drawings)}")
        if errs:
            msg += f"; {len(errs)} could not be fitted ({Path(errs[0].path).name}: {errs[0].error})"
        joined = not_joined_text(t)  # issue 49: a line joins one sample on one partition
        if joined:
            msg += f"; {joined}"
        if self._pending:
            msg += f"; fitting {len(self._pending)} more\u2026"
        self.status.setText(msg)
        self.tau_plot.setLogMode(x=logx, y=True)
        self.c_plot.setLogMode(x=logx, y=False)
        for k, d in enumerate(drawings):
            self._draw_bin(k, d, logx)
        self.tau_key.setText(series_key(drawings) or " ")
        self.c_plot.setLabel("bottom", t.x_label())
        span = x_span(t, logx)
        if span is not None:
            lo, hi = (np.log10(span[0]), np.log10(span[1])) if logx else span
            self.tau_plot.setXRange(lo, hi, padding=0.04)
        self.sigUpdated.emit()

    def _draw_bin(self, k: int, d, logx: bool) -> None:
        """One q-bin of :func:`~xpcsviewer.views.series.series_drawing`: filled with a
        line and bars, open circles, \u25b2/\u25bc limits (no bars: their errors say
        nothing); contrast of converged fits."""
        col = curve_color(k)
        f = d.tau["filled"]
        self.tau_plot.addItem(pg.PlotDataItem(
            f.x, f.y, pen=curve_pen(k, 1.0), symbol="o", symbolSize=7, symbolBrush=col,
            symbolPen=col, name=d.label()))
        for kind in ("open", "limit_up", "limit_down"):
            p = d.tau[kind]
            self.tau_plot.addItem(pg.PlotDataItem(
                p.x, p.y, pen=None, symbol=_SYMBOLS[kind], symbolSize=7, symbolBrush=None,
                symbolPen=col))
        m = f.has_bars
        if m.any():
            y = np.log10(f.y[m])
            xx = np.log10(f.x[m]) if logx else f.x[m]
            self.tau_plot.addItem(pg.ErrorBarItem(
                x=xx, y=y, top=np.log10(f.hi[m]) - y, bottom=y - np.log10(f.lo[m]),
                pen=curve_pen(k, 1.0)))
        c = d.contrast
        self.c_plot.addItem(pg.PlotDataItem(c.x, c.y, pen=curve_pen(k, 1.0), symbol="s",
                                            symbolSize=6, symbolBrush=col))
        mc = c.has_bars
        if mc.any():
            xx = np.log10(c.x[mc]) if logx else c.x[mc]
            self.c_plot.addItem(pg.ErrorBarItem(x=xx, y=c.y[mc], height=c.hi[mc] - c.lo[mc],
                                                pen=curve_pen(k, 1.0)))

    def clear_plots(self) -> None:
        from xpcsviewer.jobs.series import SeriesTable

        self.table = SeriesTable(self.x_name())
        self.tau_plot.clear()
        self.c_plot.clear()
        self.tau_key.setText(" ")
        self.bin_list.clear()
        self.status.setText(" ")

    # ------------------------------------------------------------- export
    def export_figure(self, path, size: str = "double"):
        if not self.table.files:
            self.context.report_error(f"{self.title}: nothing to export")
            return None
        path = str(path)
        return self.submit("export-figure", export_series_figure_job, self.table,
                           self.chosen_bins(), path, self.logx.isChecked(), size,
                           on_result=self._on_exported,
                           description=f"Exporting {Path(path).name}")

    def data_columns(self):
        from xpcsviewer.views.series_groups import file_groups, series_groups

        groups = series_groups(self.table)
        rows = self.table.rows(file_groups(self.table, groups) if len(groups) > 1 else None)
        if len(rows) < 2:
            return None
        head, body = rows[0], rows[1:]
        cols = {}
        for j, name in enumerate(head):
            vals = [r[j] for r in body]
            if all(isinstance(v, (int, float)) or v is None for v in vals):
                cols[name] = np.array([np.nan if v is None else v for v in vals], float)
            else:
                cols[name] = np.array(["" if v is None else str(v) for v in vals])
        return cols, [f"Series of {len(self.table.files)} files, x = {self.table.x_label()}, "
                      f"model {self.model_combo.currentData()}"]

    def get_settings(self) -> dict:
        return {"x": self.x_combo.currentData(), "field": self.field_edit.text(),
                "model": self.model_combo.currentData(), "logx": self.logx.isChecked()}

    def set_settings(self, s: dict) -> None:
        apply_settings(s, combos=(("x", self.x_combo), ("model", self.model_combo)),
                       checks=(("logx", self.logx),), edits=(("field", self.field_edit),))
