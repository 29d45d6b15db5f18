"""The Raw tab's XSVS page (issue 46): speckle visibility from the photon counts.

*Compute XSVS* runs :func:`xpcsviewer.jobs.xsvs.xsvs_source` on the tab's source with
its q-map, frame time, bin time and the Detector tab's mask (a worker, with progress
and *Cancel*), with the g2 fit of a result file of the window correlated from the same
source beside; an ``NAME_xsvs.h5`` beside the source is read by itself when the source
is shown. The page draws what :mod:`xpcsviewer.views.xsvs` makes of the result (the
exported figure draws the same, :mod:`xpcsviewer.export.xsvs`):

- P(k) of a chosen q-bin and exposure: the measured points (log y), the fitted
  negative binomial, the Poisson of the same mean (dashed), the samples censored at
  the counter cap (\u25b3), and a line with mean, M, beta, status and reason;
- beta(T) of every q-bin with ok points (log x), with the fitted visibility law and the
  g2 fit's contrast (\u25c7) at the left edge;
- a table per q-bin: q, beta0, tau (or its limit), status, the g2 fit beside.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from xpcsviewer.gui.export_folder import ask_save_path
from xpcsviewer.gui.widgets import ClippedLabel, curve_color, curve_pen, plain_axes

__all__ = ["XsvsView", "compute_xsvs_job", "find_xsvs_job", "result_of_source",
           "xsvs_figure_job", "xsvs_table_job"]


# ------------------------------------------------------------------ jobs (Qt-free)
def find_xsvs_job(path: str, results: list | None = None, progress=None,
                  cancel=None) -> tuple[str, Any] | None:
    """``(path, XsvsResult)`` of the ``NAME_xsvs.h5`` beside ``path``, else of the one
    beside a result file among ``results`` correlated from it (``correlate --xsvs``
    writes ``RESULTNAME_xsvs.h5``); None: none."""
    from xpcsviewer.jobs.xsvs import find_xsvs, read_xsvs

    p = find_xsvs(path)
    if p is None and results:
        r = result_of_source(path, list(results))
        p = find_xsvs(r) if r is not None else None
    if p is None:
        return None
    return str(p), read_xsvs(p)


def result_of_source(path: str, results: list) -> str | None:
    """The first of ``results`` (result files of the window) correlated from the raw
    source ``path`` (:func:`~xpcsviewer.jobs.raw_findings.result_raw_path`), or None."""
    import os

    from xpcsviewer.jobs.raw_findings import result_raw_path

    for r in results:
        try:
            raw, _ = result_raw_path(r)
            if raw is not None and os.path.samefile(raw, path):
                return str(r.path)
        except (OSError, AttributeError, TypeError, ValueError):  # not comparable: skip
            continue
    return None


def compute_xsvs_job(path: str, qmap: Any, frame_time: float | None,
                     bin_time: float | None, mask: np.ndarray | None,
                     results: list | None = None, progress=None,
                     cancel=None) -> tuple[None, Any]:
    """``(None, XsvsResult)``: one pass over the source with its fits; the g2 fit of a
    result file among ``results`` correlated from this source beside them."""
    from xpcsviewer.jobs.xsvs import xsvs_source

    result = result_of_source(path, list(results or []))
    return None, xsvs_source(path, qmap=qmap, frame_time=frame_time, bin_time=bin_time,
                             mask=mask, result=result, progress=progress, cancel=cancel)


def xsvs_table_job(path: str, res: Any, progress=None, cancel=None) -> str:
    """Write ``res`` to ``path`` (.csv: the contract table; .h5/.hdf: everything)."""
    from xpcsviewer.jobs.xsvs import write_xsvs

    if cancel is not None:
        cancel.raise_if_cancelled()
    return str(write_xsvs(path, res))


def xsvs_figure_job(path: str, res: Any, bin_index: int, level: int,
                    size: str = "double", progress=None, cancel=None) -> str:
    """Draw the XSVS figure (P(k) and beta(T)) and save it (PNG/SVG/PDF by suffix)."""
    from xpcsviewer.export import save_figure
    from xpcsviewer.export.xsvs import xsvs_figure

    fig = xsvs_figure(res, bin_index, level, size=size)
    if cancel is not None:
        cancel.raise_if_cancelled()
    return str(save_figure(fig, path))


# --------------------------------------------------------------------- widgets
def _plot(log_x: bool, log_y: bool, bottom: str, left: str) -> pg.PlotWidget:
    from xpcsviewer.gui.widgets import log_friendly_plot_widget

    w = log_friendly_plot_widget()
    p = plain_axes(w.getPlotItem())
    p.setLogMode(x=log_x, y=log_y)
    p.setLabel("bottom", bottom)
    p.setLabel("left", left)
    p.showGrid(x=True, y=True, alpha=0.3)
    p.setMenuEnabled(False)
    return w


class XsvsView(QWidget):
    """The XSVS page of the Raw tab; ``panel`` (the RawPanel) runs its jobs.

    GUI thread only. :meth:`set_source` (a source was opened) looks for the file beside
    it; :meth:`compute` runs the pass; :meth:`set_result` draws a result.
    """

    def __init__(self, panel: Any, parent=None) -> None:
        super().__init__(parent)
        from xpcsviewer.views.xsvs import TABLE_COLUMNS, XSVS_TEXT

        self.panel = panel
        self.res = None
        self.res_path: str | None = None  # the file read (None: computed here)
        self.source: str | None = None
        self.pk_view = None
        self.curves: list = []
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        bar = QHBoxLayout()
        self.compute_btn = QPushButton("Compute XSVS", enabled=False, toolTip=(
            "Photon-count statistics per q-bin and exposure (1, 2, 4, \u2026 frames) of "
            "this source, fitted: one pass in a worker (the q-map, frame time and the "
            "Detector tab's mask of this tab apply). " + XSVS_TEXT))
        self.cancel_btn = QPushButton("Cancel", enabled=False, toolTip=(
            "Stop the XSVS pass; nothing is kept of it"))
        self.bin_combo = QComboBox(toolTip="q-bin of P(k)")
        self.level_combo = QComboBox(toolTip="Exposure of P(k)")
        for c in (self.bin_combo, self.level_combo):
            c.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.figure_btn = QPushButton("Export figure\u2026", enabled=False,
                                      toolTip="P(k) shown and \u03b2(T): PNG, SVG or PDF")
        self.csv_btn = QPushButton("Export CSV\u2026", enabled=False, toolTip=(
            "One row per q-bin and exposure: q_bin, q, exposure_s, mean_count, M, "
            "M_error, beta, beta_error, status (as `xpcsviewer xsvs -o x.csv`)"))
        self.save_btn = QPushButton("Save\u2026", enabled=False, toolTip=(
            "Everything (histograms, fits) as NAME_xsvs.h5: read again when the source "
            "is shown"))
        for w in (self.compute_btn, self.cancel_btn, QLabel("q-bin"), self.bin_combo,
                  QLabel("exposure"), self.level_combo, self.figure_btn, self.csv_btn,
                  self.save_btn):
            bar.addWidget(w)
        bar.addStretch(1)
        lay.addLayout(bar)
        self.status = ClippedLabel("XSVS: show a raw source with a q-map", lines=1)
        lay.addWidget(self.status)
        split = QSplitter(Qt.Orientation.Vertical)
        plots = QSplitter(Qt.Orientation.Horizontal)
        pk_box = QWidget()
        pl = QVBoxLayout(pk_box)
        pl.setContentsMargins(0, 0, 0, 0)
        self.pk_plot = _plot(False, True, "k (photons per pixel per exposure)", "P(k)")
        self.pk_text = ClippedLabel("", lines=2)
        pl.addWidget(self.pk_plot, 1)
        pl.addWidget(self.pk_text)
        self.beta_plot = _plot(True, False, "exposure T (s)", "visibility \u03b2 = 1/M")
        plots.addWidget(pk_box)
        plots.addWidget(self.beta_plot)
        self.table = QTableWidget(0, len(TABLE_COLUMNS))
        self.table.setHorizontalHeaderLabels(list(TABLE_COLUMNS))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(20)
        self.table.horizontalHeader().setStretchLastSection(True)
        split.addWidget(plots)
        split.addWidget(self.table)
        split.setSizes([420, 160])
        lay.addWidget(split, 1)
        self._make_items()
        self.compute_btn.clicked.connect(lambda: self.compute())
        self.cancel_btn.clicked.connect(self.cancel)
        self.bin_combo.currentIndexChanged.connect(lambda _i: self.show_pk())
        self.level_combo.currentIndexChanged.connect(lambda _i: self.show_pk())
        self.table.itemSelectionChanged.connect(self._on_row_selected)
        self.figure_btn.clicked.connect(self._on_export_figure)
        self.csv_btn.clicked.connect(self._on_export_csv)
        self.save_btn.clicked.connect(self._on_save)

    def _make_items(self) -> None:
        p = self.pk_plot.getPlotItem()
        self.pk_legend = p.addLegend(offset=(-10, 10), labelTextSize="8pt")
        self.pk_points = pg.PlotDataItem(pen=None, symbol="o", symbolSize=7,
                                         symbolBrush=curve_color(0),
                                         symbolPen=curve_color(0), name="measured")
        self.pk_cens = pg.PlotDataItem(pen=None, symbol="t1", symbolSize=11,
                                       symbolBrush=None, symbolPen=pg.mkPen("#D55E00",
                                                                            width=1.5),
                                       name="censored at the cap (k \u2265)")
        self.pk_tail = pg.PlotDataItem(pen=None, symbol="t2", symbolSize=9,
                                       symbolBrush=None, symbolPen=curve_color(0),
                                       name="k > K")
        self.pk_nb = pg.PlotDataItem(pen=curve_pen(1, 2.0), name="negative binomial fit")
        self.pk_nb_cens = pg.PlotDataItem(pen=None, symbol="x", symbolSize=10,
                                          symbolBrush=curve_color(1), symbolPen=None,
                                          name="fit P(count \u2265 k)")
        self.pk_poisson = pg.PlotDataItem(
            pen=pg.mkPen("#777777", width=1.5, style=Qt.PenStyle.DashLine),
            name="Poisson, same mean")
        self.pk_items = (self.pk_poisson, self.pk_nb, self.pk_points, self.pk_cens,
                         self.pk_nb_cens, self.pk_tail)
        for it in self.pk_items:
            p.addItem(it)
        self.beta_items: list = []
        # top right: beta(T) falls from the top left
        self.beta_legend = self.beta_plot.getPlotItem().addLegend(offset=(-10, 10),
                                                                  labelTextSize="8pt")

    # -------------------------------------------------------------- source
    def clear(self, note: str = "") -> None:
        """Forget the result (another source is being opened)."""
        self.res = self.res_path = None
        self._fill_combos()
        self._draw_beta()
        self.show_pk()
        self.table.setRowCount(0)
        for b in (self.figure_btn, self.csv_btn, self.save_btn):
            b.setEnabled(False)
        self.compute_btn.setEnabled(False)
        self.cancel_btn.setEnabled(False)
        self.status.setText(note or "XSVS: show a raw source with a q-map")

    def set_source(self, info: Any) -> int | None:
        """A source was opened (``SourceInfo``): read its ``NAME_xsvs.h5`` if there is one
        (worker); *Compute XSVS* needs a q-map."""
        self.source = info.path
        has_bins = info.qmap is not None and info.n_bins > 0
        self.compute_btn.setEnabled(has_bins)
        self.status.setText("XSVS: not computed (Compute XSVS)" if has_bins else
                            "XSVS: needs a q-map with dynamic bins (choose one above)")
        return self.panel.submit("xsvs", find_xsvs_job, info.path,
                                 list(getattr(self.panel, "results", []) or []),
                                 on_result=self._on_found, on_error=self._on_failed,
                                 description="Raw: looking for XSVS beside the source")

    def _on_found(self, found) -> None:
        if found is None:
            return
        path, res = found
        self.set_result(res, path)

    def compute(self) -> int | None:
        """Run XSVS on the shown source (worker; progress on the status line)."""
        panel = self.panel
        info = panel.info
        if info is None or info.qmap is None:
            return None
        self.compute_btn.setEnabled(False)
        self.cancel_btn.setEnabled(True)
        # an event list in its own ticks: exposures from one tick up (XSVS beyond any
        # frame rate), not in the bin time the tab's frame views use
        ticks = str(getattr(info, "layout", "")) == "timepix"
        frame_time = None if ticks else panel.frame_time()
        bin_time = None if ticks else panel.handle.bin_time
        self.status.setText(f"XSVS: computing {Path(info.path).name}"
                            + (" in its detector ticks" if ticks else "") + "\u2026")
        return panel.context.runner.submit(
            panel.job_key("xsvs"), compute_xsvs_job, info.path, info.qmap,
            frame_time, bin_time, panel._detector_mask(),
            list(panel.results), on_result=self._on_computed, on_error=self._on_failed,
            on_progress=self._on_progress,
            description=f"XSVS of {Path(info.path).name}")

    def cancel(self) -> None:
        self.panel.context.runner.cancel(self.panel.job_key("xsvs"))
        self.cancel_btn.setEnabled(False)
        self.compute_btn.setEnabled(self.panel.info is not None)
        self.status.setText("XSVS: cancelled")

    def _on_progress(self, done: int, total: int, message: str) -> None:
        pct = f" {100 * done / total:.0f} %" if total else ""
        self.status.setText(f"XSVS:{pct} {message}")

    def _on_computed(self, found) -> None:
        self.cancel_btn.setEnabled(False)
        self.compute_btn.setEnabled(True)
        self.set_result(found[1], found[0])

    def _on_failed(self, err) -> None:
        self.cancel_btn.setEnabled(False)
        self.compute_btn.setEnabled(self.panel.info is not None)
        self.status.setText(f"XSVS failed: {getattr(err, 'message', err)}")
        self.panel.context.report_error(err)

    # ------------------------------------------------------------- drawing
    def set_result(self, res: Any, path: str | None = None) -> None:
        """Draw ``res`` (read from ``path``, or None: computed here)."""
        self.res, self.res_path = res, path
        self._fill_combos()
        self._draw_beta()
        self._fill_table()
        self.show_pk()
        for b in (self.figure_btn, self.csv_btn, self.save_btn):
            b.setEnabled(True)
        nb = res.nb
        n_ok = int(np.sum(np.asarray(nb["status"]) == "ok")) if nb else 0
        where = f"read from {Path(path).name}" if path else "computed"
        ft = f"{res.frame_time:g} s/frame" if res.frame_time else "frame time unknown"
        cap = f"counter cap {res.counter_cap}" if res.counter_cap else "no counter cap"
        g2 = f"; g2 fit of {Path(res.g2_source).name} beside" if res.g2_source else ""
        self.status.setText(
            f"XSVS {where}: {len(res.bin_ids)} q-bins \u00d7 {res.windows.size} exposures "
            f"({ft}, {cap}); {n_ok} P(k) fits ok, {len(self.curves)} bins drawn in "
            f"\u03b2(T){g2}")
        self.panel.sigUpdated.emit()

    def _fill_combos(self) -> None:
        from xpcsviewer.views.xsvs import exposure_text

        res = self.res
        for combo in (self.bin_combo, self.level_combo):
            combo.blockSignals(True)
            combo.clear()
        if res is not None:
            for b, bid in enumerate(res.bin_ids):
                q = float(res.q[b])
                self.bin_combo.addItem(f"{int(bid)}" + (f" (q {q:.4g} \u00c5\u207b\u00b9)"
                                                        if np.isfinite(q) else ""), b)
            for lev in range(res.windows.size):
                self.level_combo.addItem(exposure_text(res, lev)[4:], lev)
            # open on the first exposure whose P(k) was fitted (an event list's first
            # ticks hold too few photons to show a fit)
            st = np.asarray(res.nb.get("status", np.empty((0, 0))))
            if st.size:
                fitted = np.flatnonzero(np.isin(st[0], ("ok", "misfit")))
                if fitted.size:
                    self.level_combo.setCurrentIndex(int(fitted[0]))
        for combo in (self.bin_combo, self.level_combo):
            combo.blockSignals(False)

    def show_pk(self) -> None:
        """P(k) of the chosen q-bin and exposure."""
        from xpcsviewer.views.xsvs import pk_view

        res = self.res
        b, lev = self.bin_combo.currentData(), self.level_combo.currentData()
        p = self.pk_plot.getPlotItem()
        if res is None or b is None or lev is None:
            self.pk_view = None
            for it in self.pk_items:
                it.setData([], [])
            p.setTitle("")
            self.pk_text.setText("")
            return
        v = self.pk_view = pk_view(res, int(b), int(lev))
        self.pk_points.setData(v.k, v.p)
        self.pk_cens.setData(v.k_cens, v.p_cens)
        if v.nb_cens is not None:
            self.pk_nb_cens.setData(v.k_cens, v.nb_cens)
        else:
            self.pk_nb_cens.setData([], [])
        if v.k_tail is not None:
            self.pk_tail.setData([v.k_tail], [v.p_tail])
        else:
            self.pk_tail.setData([], [])
        pos = np.concatenate([v.p[v.p > 0], v.p_cens[v.p_cens > 0]])
        floor = float(pos.min()) / 20 if pos.size else 1e-9
        for item, y in ((self.pk_nb, v.nb), (self.pk_poisson, v.poisson)):
            if y is None:
                item.setData([], [])
            else:
                ok = y > floor
                item.setData(v.k_model[ok], y[ok])
        self.pk_legend.clear()  # only what is drawn
        for it in self.pk_items:
            if it.xData is not None and it.xData.size:
                self.pk_legend.addItem(it, it.name())
        self.pk_legend.anchor((1, 0), (1, 0), offset=(-10, 10))
        top = int(max(v.k_model.max() if v.k_model.size else 0,
                      v.k_cens.max() if v.k_cens.size else 0,
                      v.k_tail or 0, v.k.max() if v.k.size else 0))
        step = max(1, (top + 1) // 10)  # counts are whole numbers: integer ticks
        p.getAxis("bottom").setTicks([[(k, str(k)) for k in range(0, top + 1, step)], []])
        p.setTitle(v.title, size="9pt")
        self.pk_text.setText(v.text)
        p.enableAutoRange()

    def _draw_beta(self) -> None:
        from xpcsviewer.views.xsvs import beta_view, exposures

        p = self.beta_plot.getPlotItem()
        for it in self.beta_items:
            p.removeItem(it)
        self.beta_items = []
        self.beta_legend.clear()
        self.curves = [] if self.res is None else beta_view(self.res)
        if self.res is None:
            p.setTitle("")
            return
        p.setLabel("bottom", exposures(self.res)[1])
        if not self.curves:
            p.setTitle("\u03b2(T): no q-bin with an ok P(k) fit", size="9pt")
            return
        x_g2 = min(float(c.t.min()) for c in self.curves) / 2.5
        for i, c in enumerate(self.curves):
            col = curve_color(i)
            pts = pg.PlotDataItem(c.t, c.beta, pen=None, symbol="o", symbolSize=6,
                                  symbolBrush=col, symbolPen=col, name=c.label)
            # ErrorBarItem does not follow the plot's log mode: give it log10(T)
            err = pg.ErrorBarItem(x=np.log10(c.t), y=c.beta, height=2 * c.err,
                                  pen=pg.mkPen(col, width=1))
            items = [pts, err]
            if c.t_misfit.size:
                items.append(pg.PlotDataItem(c.t_misfit, c.beta_misfit, pen=None,
                                             symbol="o", symbolSize=6, symbolBrush=None,
                                             symbolPen=col))
            if c.model is not None:
                style = Qt.PenStyle.SolidLine if c.model_ok else Qt.PenStyle.DashLine
                items.append(pg.PlotDataItem(c.t_model, c.model,
                                             pen=pg.mkPen(col, width=1.5, style=style)))
            if c.contrast is not None:
                items.append(pg.PlotDataItem([x_g2], [c.contrast], pen=None, symbol="d",
                                             symbolSize=10, symbolBrush=None,
                                             symbolPen=pg.mkPen(col, width=1.5)))
                if c.contrast_err:
                    items.append(pg.ErrorBarItem(x=np.array([np.log10(x_g2)]),
                                                 y=np.array([c.contrast]),
                                                 height=np.array([2 * c.contrast_err]),
                                                 pen=pg.mkPen(col, width=1)))
            for it in items:
                p.addItem(it)
            self.beta_items += items
        # the legend grew after it was anchored: anchor it again, inside the plot
        self.beta_legend.anchor((1, 0), (1, 0), offset=(-10, 10))
        p.setTitle("\u03b2(T): \u25cf ok, \u25cb poor P(k) fit; lines \u03b2\u2080 V(T; \u03c4); "
                   "\u25c7 g2 contrast", size="9pt")
        self.beta_plot.setToolTip(
            "Visibility \u03b2 = 1/M of the P(k) fits against the exposure T, with the "
            "fitted law \u03b2\u2080 V(T; \u03c4) (dashed where \u03c4 is only a limit: "
            "below the shortest or above the longest exposure) and the g2 fit's "
            "contrast (\u25c7) at the left edge, T \u2192 0")
        p.enableAutoRange()

    def _fill_table(self) -> None:
        from xpcsviewer.views.xsvs import table_rows

        t = self.table
        rows = table_rows(self.res)
        t.blockSignals(True)
        t.setRowCount(len(rows))
        for i, row in enumerate(rows):
            for j, text in enumerate(row):
                item = QTableWidgetItem(text)
                if j == 4 and self.res.vis:
                    item.setToolTip(str(self.res.vis["reason"][i]) or text)
                t.setItem(i, j, item)
        t.blockSignals(False)
        t.resizeColumnsToContents()

    def _on_row_selected(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        if rows:
            self.bin_combo.setCurrentIndex(rows[0].row())

    # -------------------------------------------------------------- export
    def _default_name(self, suffix: str) -> str:
        src = self.source or (self.res.source if self.res is not None else "xsvs")
        p = Path(src)
        return str(p.with_name(p.stem + suffix))

    def export_csv(self, path: str) -> int | None:
        """Write the contract CSV (one row per q-bin and exposure; worker)."""
        if self.res is None:
            return None
        return self.panel.submit("xsvs-export", xsvs_table_job, str(path), self.res,
                                 on_result=self.panel._on_exported,
                                 description=f"Exporting {Path(path).name}")

    def save(self, path: str) -> int | None:
        """Write everything (HDF5; worker)."""
        return self.export_csv(path)

    def export_figure(self, path: str, size: str = "double") -> int | None:
        """Write the figure (P(k) shown, beta(T)) as PNG/SVG/PDF (worker)."""
        if self.res is None:
            return None
        b = int(self.bin_combo.currentData() or 0)
        lev = int(self.level_combo.currentData() or 0)
        return self.panel.submit("xsvs-figure", xsvs_figure_job, str(path), self.res, b,
                                 lev, size, on_result=self.panel._on_exported,
                                 description=f"Exporting {Path(path).name}")

    def _on_export_csv(self) -> None:
        path = ask_save_path(self, self.panel.context, "Export the XSVS table",
                             self._default_name("_xsvs.csv"), "CSV (*.csv)")
        if path:
            self.export_csv(path)

    def _on_save(self) -> None:
        path = ask_save_path(self, self.panel.context, "Save XSVS",
                             self._default_name("_xsvs.h5"), "HDF5 (*.h5 *.hdf)")
        if path:
            self.save(path)

    def _on_export_figure(self) -> None:
        path = ask_save_path(self, self.panel.context, "Export the XSVS figure",
                             self._default_name("_xsvs.png"), "Figures (*.png *.svg *.pdf)")
        if path:
            self.export_figure(path)
