"""g2 tab: multitau correlation curves with a fit side panel.

Layouts: one panel per q-bin (files overlaid), one per file (bins overlaid), or one
combined panel. Invalid points (g2 == 0 and err == 0) are never drawn. The fit side
panel runs the batched least squares ("Fit") or NUTS ("Bayesian", with progress and
cancel) in a worker over every shown curve of every file, overlays the curves (and the
posterior band), fills a results table and publishes the fits under
``context.shared["g2_fits"]`` for the Diffusion tab. "Recompute q-bin…" correlates one
bin anew from the raw data with the Detector tab's mask and draws it over the file's
curve (:mod:`._g2_rebin`).
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QSignalBlocker, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from xpcsviewer.fitting.blocks import G2Block
from xpcsviewer.fitting.fit_table import G2Fits
from xpcsviewer.fitting.vocabulary import MODEL_CHOICES, MODEL_MENU
from xpcsviewer.gui.panels._g2_draw import G2DrawMixin
from xpcsviewer.gui.panels._g2_fitrun import G2FitRunMixin
from xpcsviewer.gui.panels._g2_jobs import (
    fit_job,
    prepare_g2_job,
)
from xpcsviewer.gui.panels._g2_params import FitParamsWidget
from xpcsviewer.gui.panels._g2_rebin import G2RebinMixin
from xpcsviewer.gui.panels._g2_results import FitResultsTable
from xpcsviewer.gui.panels.base import BasePanel, apply_settings
from xpcsviewer.gui.workers import wait_for_event_job
from xpcsviewer.views.g2 import g2_data_columns

__all__ = [
    "FitParamsWidget",
    "G2Panel",
    "fit_job",
    "prepare_g2_job",
    "wait_for_event_job",
]

#: the fit pane before any fit: never without what to do
NO_FIT_TEXT = "no fit yet: press Fit (least squares) or Bayesian"

LAYOUTS = [
    ("qbin", "one panel per q-bin"),
    ("file", "one panel per file"),
    ("combined", "one combined panel"),
]


# -------------------------------------------------------------------- the panel
class G2Panel(G2FitRunMixin, G2RebinMixin, G2DrawMixin, BasePanel):
    """g2 curves of all targets with the fit side panel."""

    name = "g2"
    title = "g2"
    figure_kind = "g2"

    sigFitsReady = Signal(object)
    """New fits were applied and drawn: (G2Fits)."""

    def __init__(self, context, parent=None) -> None:
        super().__init__(context, parent)
        self.blocks: list[G2Block] = []
        self.defaults: dict[str, dict[str, tuple]] = {}
        self.fits: G2Fits | None = None
        """The last fit, as computed (it may be of curves no longer shown)."""
        self.shown_fits: G2Fits | None = None
        """The rows of :attr:`fits` made from the curves shown now with the selected
        model: all that is drawn, tabulated and exported."""
        self._targets_key: tuple = ()
        self._init_drawing()
        self.n_bins_in_range = 0
        self._pending_fits_signal = None
        self._busy_keys: set[str] = set()

        outer = QHBoxLayout(self)
        split = QSplitter(Qt.Orientation.Horizontal)
        outer.addWidget(split)

        # ---- left: controls + plots
        left = QWidget()
        lv = QVBoxLayout(left)
        grid = QGridLayout()
        self.layout_combo = QComboBox()
        self.layout_combo.setToolTip("Plots: one panel per q-bin, one per file, or all curves "
                                     "in one panel")
        for k, text in LAYOUTS:
            self.layout_combo.addItem(text, k)
        self.q_check = QCheckBox("q range")
        self.q_check.setToolTip("Draw and fit only q-bins inside the range on the right "
                                "(\u00c5\u207b\u00b9)")
        self.qmin = QDoubleSpinBox(decimals=5, minimum=0, maximum=10, singleStep=0.0005)
        self.qmin.setToolTip("Smallest q drawn and fitted (\u00c5\u207b\u00b9), with q range "
                             "checked")
        self.qmax = QDoubleSpinBox(
            decimals=5, minimum=0, maximum=10, singleStep=0.0005, value=1.0
        )
        self.qmax.setToolTip("Largest q drawn and fitted (\u00c5\u207b\u00b9), with q range "
                             "checked")
        for w in (self.qmin, self.qmax):
            w.setSuffix(" \u00c5\u207b\u00b9")
        self.t_check = QCheckBox("t range")
        self.t_check.setToolTip("Delays drawn and fitted: only points inside this range (s)")
        self.tmin = QLineEdit("1e-6")
        self.tmax = QLineEdit("100")
        for w in (self.tmin, self.tmax):
            w.setMaximumWidth(80)
            w.setToolTip("delay in s")
        self.err_check = QCheckBox("error bars", checked=True)
        self.err_check.setToolTip("Draw the g2 error bars (default on)")
        self.logx = QCheckBox("log t", checked=True)
        self.logx.setToolTip("Logarithmic delay axis (default on)")
        self.offset = QDoubleSpinBox(decimals=3, minimum=-1, maximum=1, singleStep=0.01)
        self.offset.setToolTip(
            "Vertical offset per file (per bin in the per-file layout)"
        )
        self.ncols = QSpinBox(minimum=1, maximum=8, value=3)
        self.ncols.setToolTip("Panels per row (default 3)")
        self.max_bins = QSpinBox(minimum=1, maximum=512, value=24)
        self.max_bins.setToolTip("q-bins per file on one page (page through the rest)")
        self.page = QSpinBox(minimum=1, maximum=1, value=1)
        self.page.setToolTip("Which page of q-bins (PgUp / PgDn in the plots)")
        self.page_label = QLabel("")
        self.prev_btn = QPushButton("\u25c0")
        self.next_btn = QPushButton("\u25b6")
        for btn, tip in ((self.prev_btn, "previous bins"), (self.next_btn, "next bins")):
            btn.setMaximumWidth(32)
            btn.setToolTip(tip)
        self.label_style = QLineEdit("")
        self.label_style.setPlaceholderText("auto")
        self.label_style.setMaximumWidth(70)
        self.label_style.setToolTip(
            "Legend labels from the file names' _-separated parts: empty = automatic "
            "(the parts that differ), or positions such as 2,-1 (second and last)"
        )
        self.max_files_box()
        self.max_panels = QSpinBox(minimum=1, maximum=256, value=36)
        self.max_panels.setToolTip(
            "Draw at most this many panels (the first in q order)"
        )
        self.marker = QSpinBox(minimum=1, maximum=15, value=5)
        self.marker.setToolTip("Marker size in pixels (default 5)")
        self.legend_check = QCheckBox("legend", checked=True)
        self.legend_check.setToolTip("Show the legend of file names")
        self.suspect_check = QCheckBox("leave out suspect errors", checked=True)
        self.suspect_check.setToolTip(
            "Points whose stated error is below half their neighbours' (typically the "
            "lone last delay) are drawn as grey x and left out of fits"
        )
        # four short rows: the tab, its fit panel and the data panel fit in 1280 px
        rows = [
            [QLabel("layout"), self.layout_combo, self.q_check, self.qmin, self.qmax],
            [
                self.t_check,
                self.tmin,
                self.tmax,
                self.err_check,
                self.logx,
                self.legend_check,
                QLabel("labels"),
                self.label_style,
            ],
            [
                self.suspect_check,
                QLabel("marker"),
                self.marker,
                QLabel("max files"),
                self.max_files,
                QLabel("max panels"),
                self.max_panels,
            ],
            [
                QLabel("offset"),
                self.offset,
                QLabel("columns"),
                self.ncols,
                QLabel("bins/page"),
                self.max_bins,
                self.prev_btn,
                self.page,
                self.next_btn,
                self.page_label,
            ],
        ]
        for r, row in enumerate(rows):
            h = QHBoxLayout()
            for w in row:
                h.addWidget(w)
            h.addStretch(1)
            grid.addLayout(h, r, 0)
        lv.addLayout(grid)
        from xpcsviewer.gui.widgets import ClippedLabel

        # Status text must never resize the plot area (a resize repaints every panel):
        # two fixed lines; a longer note (files with different partitions) ends in
        # "\u2026" with the whole text as tooltip instead of running off the edge.
        self.status = ClippedLabel(" ", lines=2)
        lv.addWidget(self.status)
        self._init_rebin(lv)  # "Recompute q-bin…" (one bin from the raw data)
        lv.addWidget(self.stack, 1)  # one scrolling plot area per layout kind
        split.addWidget(left)

        # ---- right: fit side panel
        right = QWidget()
        rv = QVBoxLayout(right)
        self.model_combo = QComboBox()
        self.model_combo.setToolTip("g2 model for Fit and Bayesian; automatic picks by AICc "
                                    "per curve")
        for k in MODEL_CHOICES:
            self.model_combo.addItem(MODEL_MENU[k], k)
        rv.addWidget(QLabel("model"))
        rv.addWidget(self.model_combo)
        self.params = FitParamsWidget()
        rv.addWidget(self.params, 1)
        self.reset_btn = QPushButton("Reset parameters")
        self.reset_btn.setToolTip("Back to automatic per-curve starts and bounds")
        rv.addWidget(self.reset_btn)
        bl = QHBoxLayout()
        self.fit_btn = QPushButton("Fit")
        self.fit_btn.setToolTip(
            "Least squares for every bin in the q range of every file, all pages "
            "(in a worker process)"
        )
        self.bayes_btn = QPushButton("Bayesian")
        self.bayes_btn.setToolTip(
            "NUTS posterior of every bin in the q range of every file, all pages, "
            "where least squares finds a decay, with its model (in a worker process, "
            "8 bins at a time; Cancel keeps the bins finished)"
        )
        self.cancel_btn = QPushButton("Cancel")
        self.cancel_btn.setToolTip("Stop the running fit; curves already fitted keep their "
                                   "results")
        self.cancel_btn.setEnabled(False)
        for b in (self.fit_btn, self.bayes_btn, self.cancel_btn):
            bl.addWidget(b)
        rv.addLayout(bl)
        sl = QHBoxLayout()
        self.warmup = QSpinBox(minimum=10, maximum=20000, value=500)
        self.warmup.setToolTip("NUTS warm-up (tuning) steps per chain, not kept (default 500)")
        self.samples = QSpinBox(minimum=10, maximum=50000, value=1000)
        self.samples.setToolTip("NUTS draws kept per chain (default 1000)")
        self.chains = QSpinBox(minimum=1, maximum=8, value=2)
        self.chains.setToolTip("Independent NUTS chains; R-hat compares them (default 2)")
        for lab, w in (
            ("warm-up", self.warmup),
            ("draws", self.samples),
            ("chains", self.chains),
        ):
            sl.addWidget(QLabel(lab))
            sl.addWidget(w)
        rv.addLayout(sl)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setValue(0)
        rv.addWidget(self.progress)
        self.show_fit = QCheckBox("show fits", checked=True)
        self.show_fit.setToolTip("Draw the fitted curves over the data")
        self.show_band = QCheckBox("posterior band", checked=True)
        self.show_band.setToolTip("Shade the 94 % posterior band of the fitted curve (Bayesian "
                                  "fits)")
        fl = QHBoxLayout()
        fl.addWidget(self.show_fit)
        fl.addWidget(self.show_band)
        rv.addLayout(fl)
        self.results_table = FitResultsTable()
        rv.addWidget(self.results_table, 2)
        self.fit_status = QLabel(NO_FIT_TEXT)
        self.fit_status.setWordWrap(True)
        self.fit_status.setSizePolicy(
            QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed
        )
        self.fit_status.setFixedHeight(
            3 * self.fit_status.fontMetrics().lineSpacing() + 4
        )
        rv.addWidget(self.fit_status)
        self.export_fits_btn = QPushButton("Export fits (CSV/JSON)\u2026")
        self.export_fits_btn.setToolTip("Write the fit results (parameters, errors, status) to "
                                        "CSV or JSON")
        self.export_fits_btn.setEnabled(False)
        rv.addWidget(self.export_fits_btn)
        right.setMinimumWidth(280)
        split.addWidget(right)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        split.setSizes([700, 330])

        # ---- wiring
        self.layout_combo.currentIndexChanged.connect(lambda _i: self._draw())
        for w in (self.q_check, self.t_check):
            w.toggled.connect(lambda _b: self.refresh())
        for w in (self.qmin, self.qmax):
            w.editingFinished.connect(self._maybe_refresh_q)
        for w in (self.tmin, self.tmax):
            w.editingFinished.connect(self._maybe_refresh_t)
        self.max_bins.editingFinished.connect(self._on_bins_per_page)
        self.page.valueChanged.connect(lambda _v: self.refresh())
        self.prev_btn.clicked.connect(lambda: self.page.setValue(self.page.value() - 1))
        self.next_btn.clicked.connect(lambda: self.page.setValue(self.page.value() + 1))
        self.label_style.editingFinished.connect(self._on_label_style)
        self.suspect_check.toggled.connect(lambda _b: self.refresh())
        for w in (
            self.err_check,
            self.logx,
            self.legend_check,
            self.show_fit,
            self.show_band,
        ):
            w.toggled.connect(lambda _b: self._draw())
        for w in (self.offset,):
            w.valueChanged.connect(lambda _v: self._draw())
        for w in (self.ncols, self.marker, self.max_panels):
            w.valueChanged.connect(lambda _v: self._draw())
        self.model_combo.currentIndexChanged.connect(self._on_model_changed)
        self.reset_btn.clicked.connect(self._on_reset)
        self.fit_btn.clicked.connect(self.run_fit)
        self.bayes_btn.clicked.connect(self.run_bayes)
        self.cancel_btn.clicked.connect(self.cancel_fit)
        self.export_fits_btn.clicked.connect(self._on_export_fits)
        self.context.runner.sigJobFinished.connect(self._on_job_finished)
        self.context.sigSharedChanged.connect(self._on_shared)

    # ------------------------------------------------------------- options
    def _t_value(self, edit: QLineEdit) -> float | None:
        try:
            v = float(edit.text())
        except ValueError:
            return None
        return v if math.isfinite(v) else None

    def options(self) -> dict:
        """Selection options (GUI-thread snapshot) for ``g2_blocks``."""
        use_q, use_t = self.q_check.isChecked(), self.t_check.isChecked()
        return {
            "qmin": self.qmin.value() if use_q else None,
            "qmax": self.qmax.value() if use_q else None,
            "tmin": self._t_value(self.tmin) if use_t else None,
            "tmax": self._t_value(self.tmax) if use_t else None,
            "max_bins": self.max_bins.value(),
            "bin_offset": (self.page.value() - 1) * self.max_bins.value(),
            "exclude_suspect": self.suspect_check.isChecked(),
        }

    def _on_bins_per_page(self) -> None:
        self.page.setValue(1)
        self.refresh()

    def _on_label_style(self) -> None:
        from xpcsviewer.views.labels import parse_label_style

        try:
            parse_label_style(self.label_style.text())
        except ValueError as exc:
            self.context.report_error(f"g2 labels: {exc}")
            return
        self._draw()

    def file_labels(self) -> dict[int, str]:
        """Short legend labels per target index (see ``export.labels.short_labels``)."""
        from xpcsviewer.views.labels import short_labels

        style = self.label_style.text()
        try:
            labs = short_labels([r.label for r in self.results], style)
        except ValueError:
            labs = short_labels([r.label for r in self.results])
        return dict(enumerate(labs))

    def bins_note(self) -> str:
        """"; bins 25-36 of 36 (page 2/2)" when the bins do not fit on one page."""
        n, per = self.n_bins_in_range, self.max_bins.value()
        if n <= per:
            return ""
        a = (self.page.value() - 1) * per + 1
        b = min(n, a + per - 1)
        return f"; bins {a}\u2013{b} of {n} (page {self.page.value()}/{self.page.maximum()})"

    def _maybe_refresh_q(self) -> None:
        if self.q_check.isChecked():
            self.refresh()

    def _maybe_refresh_t(self) -> None:
        if self.t_check.isChecked():
            self.refresh()

    def model(self) -> str:
        """Current model name."""
        return self.model_combo.currentData()

    # ---------------------------------------------------------------- data
    def applies_to(self, results: list) -> str | None:
        if not results:
            return "Select one or more result files first"
        if not any(getattr(r, "multitau", None) is not None for r in results):
            return "No multitau (g2) analysis in the selected files"
        return None

    def refresh(self) -> None:
        if not self.results:
            return
        self.submit(
            "data",
            prepare_g2_job,
            self.shown_results(),
            self.options(),
            on_result=self._on_blocks,
            description="g2: selecting curves",
        )

    def _on_blocks(self, out) -> None:
        blocks, defaults, n_in_range = out
        self.blocks = list(blocks)
        self.defaults = defaults
        self.n_bins_in_range = int(n_in_range)
        n_pages = max(1, -(-self.n_bins_in_range // self.max_bins.value()))
        with QSignalBlocker(self.page):
            self.page.setMaximum(n_pages)
        self.page_label.setText(f"of {n_pages}" if n_pages > 1 else "")
        self.prev_btn.setEnabled(self.page.value() > 1)
        self.next_btn.setEnabled(self.page.value() < n_pages)
        key = tuple(str(r.path) for r in self.results)
        new_targets = key != self._targets_key
        self._targets_key = key
        # Parameter defaults are seeded once per target list, so manual edits survive replots.
        if new_targets or self.params.rowCount() == 0:
            self._fill_params(keep_edits=not new_targets)
        self._update_shown_fits()
        self._draw()

    def _fill_params(self, keep_edits: bool = True) -> None:
        rows = self.defaults.get(self.model())
        if rows:
            self.params.set_params(rows, keep_edits=keep_edits)

    def _on_model_changed(self, _i: int) -> None:
        self.params.reset()
        self._fill_params(keep_edits=False)
        # a fit of another model is not this model's fit: hidden until it is chosen again
        if self.fits is not None:
            self._update_shown_fits()
            self._draw_fits()

    def _on_shared(self, key: str) -> None:
        # A fit published elsewhere (Diffusion's "Fit g2") is the last fit here too:
        # one board, so the table, the lines and the export never show an older one.
        if key != "g2_fits":
            return
        fits = self.context.shared.get("g2_fits")
        if fits is None or fits is self.fits:
            return
        self.fits = fits
        self._update_shown_fits()
        self._draw_fits()

    def _on_reset(self) -> None:
        self.params.reset()
        self._fill_params(keep_edits=False)

    def plot_widgets(self) -> list[pg.PlotItem]:
        """The pyqtgraph panels shown now (tests)."""
        return list(self._plots)

    # -------------------------------------------------------------- export
    def figure_options(self) -> dict:
        opts = self.options()
        opts.update(
            layout=self.layout_combo.currentData(),
            errorbars=self.err_check.isChecked(),
            offset=self.offset.value(),
            log_x=self.logx.isChecked(),
            ncols=self.ncols.value(),
            max_panels=self.max_panels.value(),
            legend=self.legend_check.isChecked(),
            fits=self.shown_fits if self.show_fit.isChecked() else None,
            band=self.show_band.isChecked(),
            label_style=self.label_style.text(),
        )
        return opts

    def data_columns(self):
        if not self.blocks:
            return None
        return g2_data_columns(self.blocks)

    # ------------------------------------------------------------ settings
    def get_settings(self) -> dict:
        return {
            "layout": self.layout_combo.currentData(),
            "q_range": self.q_check.isChecked(),
            "qmin": self.qmin.value(),
            "qmax": self.qmax.value(),
            "t_range": self.t_check.isChecked(),
            "tmin": self.tmin.text(),
            "tmax": self.tmax.text(),
            "errorbars": self.err_check.isChecked(),
            "log_t": self.logx.isChecked(),
            "offset": self.offset.value(),
            "ncols": self.ncols.value(),
            "max_bins": self.max_bins.value(),
            "max_panels": self.max_panels.value(),
            "max_files": self.max_files.value(),
            "marker": self.marker.value(),
            "legend": self.legend_check.isChecked(),
            "exclude_suspect": self.suspect_check.isChecked(),
            "label_style": self.label_style.text(),
            "model": self.model(),
            "warmup": self.warmup.value(),
            "samples": self.samples.value(),
            "chains": self.chains.value(),
        }

    def set_settings(self, s: dict) -> None:
        apply_settings(
            s,
            combos=(("layout", self.layout_combo), ("model", self.model_combo)),
            checks=(
                ("q_range", self.q_check),
                ("t_range", self.t_check),
                ("errorbars", self.err_check),
                ("log_t", self.logx),
                ("legend", self.legend_check),
                ("exclude_suspect", self.suspect_check),
            ),
            spins=(
                ("qmin", self.qmin),
                ("qmax", self.qmax),
                ("offset", self.offset),
                ("ncols", self.ncols),
                ("max_bins", self.max_bins),
                ("max_panels", self.max_panels),
                ("max_files", self.max_files),
                ("marker", self.marker),
                ("warmup", self.warmup),
                ("samples", self.samples),
                ("chains", self.chains),
            ),
            edits=(("tmin", self.tmin), ("tmax", self.tmax), ("label_style", self.label_style)),
        )
