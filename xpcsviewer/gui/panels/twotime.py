"""Two-Time tab: C(t1, t2) of one q-bin, decimated to the screen, with g2 from C2.

The map is read in a worker by ``io.read_c2(max_size=...)``, which reads strided
hyperslabs only (never the whole N x N map). Time axes are in seconds with the
per-analysis step times the decimation stride (``C2View.t0``). The bin is chosen from
a list or by clicking the small q-map / scattering image; its position is remembered
across files and clamped to the new file's number of bins. A file with only an age x lag
map (multi-tau two-time, no full map) shows that map instead (``_twotime_age_lag``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from xpcsviewer.gui.panels import _twotime_age_lag as al
from xpcsviewer.gui.panels._twotime_ages import AgesView
from xpcsviewer.gui.panels._twotime_keys import segment_key
from xpcsviewer.gui.panels.base import BasePanel
from xpcsviewer.gui.widgets import COLORMAPS, FileSelector, SparseLogAxis, colormap
from xpcsviewer.views import display_image
from xpcsviewer.views.g2 import twotime_g2_curves

__all__ = ["TwotimePanel", "read_c2_job", "read_image_job"]


def read_c2_job(
    path: str,
    index: int,
    max_size: int,
    correct_diagonal: bool,
    reader=None,
    progress=None,
    cancel=None,
):
    """Worker job: the decimated map and its 0.5-99.5 percentile levels."""
    if reader is None:
        from xpcsviewer.io import read_c2 as reader
    if cancel is not None:
        cancel.raise_if_cancelled()
    view = reader(
        path,
        int(index),
        max_size=int(max_size),
        correct_diagonal=bool(correct_diagonal),
    )
    if cancel is not None:
        cancel.raise_if_cancelled()
    return view, display_image.auto_levels(np.asarray(view.c2))


def read_image_job(path: str, progress=None, cancel=None):
    """Worker job: log10 of the scattering image for the picker."""
    from xpcsviewer.io import read_saxs_2d

    return display_image.log_image(read_saxs_2d(path))


class TwotimePanel(BasePanel):
    """C2 map of the selected q-bin, picker images and g2 from C2."""

    name = "twotime"
    title = "Two-Time"

    @property
    def figure_kind(self) -> str:
        """``"ages"`` (map with windows, cuts, tau(t_w)) while ages are shown."""
        return "ages" if self.ages.enabled() and self.ages.outcome is not None else "twotime"

    sigMapShown = Signal()
    """A new C2 map is on screen: ()."""

    def __init__(self, context, parent=None) -> None:
        super().__init__(context, parent)
        self.c2_reader = (
            None  # None: xpcsviewer.io.read_c2 (tests may inject a stand-in)
        )
        self.view: Any = None
        self._bin_index = 0  # remembered across files, clamped on use
        self._file_index = 0
        self._auto_levels = (0.0, 1.0)
        self._picker_image: np.ndarray | None = None

        lay = QVBoxLayout(self)
        grid = QGridLayout()
        self.file_sel = FileSelector()
        self.bin_combo = QComboBox()
        self.bin_combo.setToolTip(
            "q-bin (processed two-time bins); click the q-map too"
        )
        self.bin_combo.setMinimumContentsLength(16)
        self.file_sel.setMinimumContentsLength(12)
        self.picker_kind = QComboBox()
        self.picker_kind.setToolTip("Image to pick the q-bin on: the dynamic q-map or the "
                                    "scattering image")
        self.picker_kind.addItem("dynamic q-map", "qmap")
        self.picker_kind.addItem("scattering image", "saxs")
        self.cmap_combo = QComboBox()
        self.cmap_combo.setToolTip("Colour map of the two-time map")
        for name in COLORMAPS:
            self.cmap_combo.addItem(name)
        self.auto_check = QCheckBox("auto levels", checked=True)
        self.auto_check.setToolTip("0.5\u201399.5 percentile of the map")
        self.vmin = QDoubleSpinBox(
            decimals=3, minimum=-1e6, maximum=1e6, value=0.8, singleStep=0.05
        )
        self.vmin.setToolTip("Lower colour level of C(t\u2081, t\u2082), with auto levels off "
                             "(default 0.8)")
        self.vmax = QDoubleSpinBox(
            decimals=3, minimum=-1e6, maximum=1e6, value=2.2, singleStep=0.05
        )
        self.vmax.setToolTip("Upper colour level of C(t\u2081, t\u2082), with auto levels off "
                             "(default 2.2)")
        self.diag_check = QCheckBox("correct diagonal")
        self.diag_check.setToolTip(
            "Replace C(t, t) by the mean of its neighbours "
            "(removes the shot-noise spike)"
        )
        self.max_size = QSpinBox(minimum=64, maximum=8192, value=1024, singleStep=128)
        self.max_size.setToolTip("Largest map size shown; larger maps are read strided")
        rows = [
            [
                QLabel("file"),
                self.file_sel,
                QLabel("q-bin"),
                self.bin_combo,
                QLabel("pick on"),
                self.picker_kind,
            ],
            [
                QLabel("cmap"),
                self.cmap_combo,
                self.auto_check,
                self.vmin,
                self.vmax,
                self.diag_check,
                QLabel("max size"),
                self.max_size,
            ],
        ]
        for r, row in enumerate(rows):
            h = QHBoxLayout()
            for w in row:
                h.addWidget(w)
            h.addStretch(1)
            grid.addLayout(h, r, 0)
        lay.addLayout(grid)
        self.status = QLabel(" ")
        self.status.setWordWrap(True)  # wraps at the panel's width (never cut)
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

        split = QSplitter(Qt.Orientation.Horizontal)
        # picker
        self.picker = pg.GraphicsLayoutWidget()
        self.picker_plot = self.picker.addPlot(title="click a q-bin")
        self.picker_plot.setAspectLocked(True)
        self.picker_plot.invertY(True)
        self.picker_plot.hideAxis("bottom")
        self.picker_plot.hideAxis("left")
        self.picker_img = pg.ImageItem(axisOrder="row-major")
        self.highlight = pg.ImageItem(axisOrder="row-major")
        self.picker_plot.addItem(self.picker_img)
        self.picker_plot.addItem(self.highlight)
        self.picker.scene().sigMouseClicked.connect(self._on_picker_click)
        split.addWidget(self.picker)
        # c2 map
        self.c2_widget = pg.GraphicsLayoutWidget()
        self.c2_plot = self.c2_widget.addPlot(axisItems={"left": SparseLogAxis("left")})
        self.c2_plot.setAspectLocked(True)
        self.c2_plot.setLabel("bottom", "t\u2082 (s)")
        self.c2_plot.setLabel("left", "t\u2081 (s)")
        for ax in ("bottom", "left"):
            # Plain seconds: an SI prefix would turn the unit into "(s) (x0.001)".
            self.c2_plot.getAxis(ax).enableAutoSIPrefix(False)
        self.c2_img = pg.ImageItem(axisOrder="row-major")
        self.c2_plot.addItem(self.c2_img)
        self.colorbar = pg.ColorBarItem(
            values=(0.8, 2.2),
            colorMap=colormap("viridis"),
            interactive=False,
            label="C(t\u2081, t\u2082)",
        )
        self.colorbar.setImageItem(self.c2_img, insert_in=self.c2_plot)
        split.addWidget(self.c2_widget)
        # g2 from c2
        # one number format on the log delay axis, as on the g2 and intensity tabs
        # (issue 49: "10⁻⁸ 10⁻⁷ ... 0.0001" on one axis)
        self.g2_pw = pg.PlotWidget(axisItems={"bottom": SparseLogAxis("bottom")})
        self.g2_plot = self.g2_pw.getPlotItem()
        self.g2_plot.setLogMode(x=True, y=False)
        self.g2_plot.setLabel("bottom", "\u03c4 (s)")
        self.g2_plot.setLabel("left", "g\u2082 from C\u2082")
        self.g2_plot.showGrid(x=True, y=True, alpha=0.2)
        # the segments' key is a line below the plot: a legend inside covered the curves
        self.g2_key = QLabel(" ")
        self.g2_key.setWordWrap(True)
        self.g2_key.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.g2_key.setToolTip("Key of the curves: g2 of the whole run and of each time "
                               "segment, early to late")
        g2_box = QWidget()
        g2_lay = QVBoxLayout(g2_box)
        g2_lay.setContentsMargins(0, 0, 0, 0)
        g2_lay.addWidget(self.g2_pw, 1)
        g2_lay.addWidget(self.g2_key)
        split.addWidget(g2_box)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 3)
        split.setStretchFactor(2, 2)
        # ages below the map: windows on it, cuts both ways, tau(t_w) (issue 35)
        self.ages = AgesView(self)
        vsplit = QSplitter(Qt.Orientation.Vertical)
        # the wrapping status inside the splitter: in the panel's own layout its height
        # for width would make the scroll area size the tab to its preferred height
        top = QWidget()
        top_lay = QVBoxLayout(top)
        top_lay.setContentsMargins(0, 0, 0, 0)
        top_lay.addWidget(self.status)
        top_lay.addWidget(split, 1)
        vsplit.addWidget(top)
        vsplit.addWidget(self.ages)
        vsplit.setStretchFactor(0, 3)
        vsplit.setStretchFactor(1, 2)
        lay.addWidget(vsplit, 1)

        self.file_sel.sigIndexChosen.connect(self._on_file_chosen)
        self.bin_combo.activated.connect(self._on_bin_chosen)
        self.picker_kind.currentIndexChanged.connect(lambda _i: self._show_picker())
        self.cmap_combo.currentTextChanged.connect(lambda _t: self._apply_levels())
        self.auto_check.toggled.connect(lambda _b: self._apply_levels())
        self.vmin.valueChanged.connect(lambda _v: self._apply_levels())
        self.vmax.valueChanged.connect(lambda _v: self._apply_levels())
        self.diag_check.toggled.connect(lambda _b: self.load_map())
        self.max_size.editingFinished.connect(self.load_map)
        self.context.sigSelectedBin.connect(self.select_dq_bin)

    # --------------------------------------------------------------- files
    def set_current(self, index: int) -> None:
        """Follow the current target (up/down in the target list) when it has a two-time map."""
        index = max(0, int(index))
        self.current_index = index
        if not self.results:
            return
        target = self.results[min(index, len(self.results) - 1)]
        tt = self.twotime_results()
        pos = next((k for k, r in enumerate(tt) if r is target), None)
        if pos is None or pos == self._file_index:
            return  # a target without two-time data keeps the shown map
        self._file_index = pos
        self._dirty = True
        if self.isVisible():
            self._refresh_now()

    def twotime_results(self) -> list:
        """Targets with a two-time analysis (full maps or an age x lag map)."""
        return [r for r in self.results if al.has_twotime(r)]

    def applies_to(self, results: list) -> str | None:
        if not results:
            return "Select one or more result files first"
        if not any(al.has_twotime(r) for r in results):
            return "No two-time analysis in the selected files"
        return None

    def current(self):
        """The shown two-time result, or None."""
        tt = self.twotime_results()
        if not tt:
            return None
        return tt[max(0, min(self._file_index, len(tt) - 1))]

    def refresh(self) -> None:
        tt = self.twotime_results()
        if not tt:
            return
        self._file_index = max(0, min(self._file_index, len(tt) - 1))
        self.file_sel.set_labels([r.label for r in tt], self._file_index)
        self._fill_bins()
        self._show_picker()
        self.load_map()

    def _on_file_chosen(self, i: int) -> None:
        self._file_index = int(i)
        self._fill_bins()
        self._picker_image = None
        self._show_picker()
        self.load_map()

    def _fill_bins(self) -> None:
        res = self.current()
        self.bin_combo.blockSignals(True)
        self.bin_combo.clear()
        if res is not None:
            labels = res.qmap.dynamic_labels()
            for v in al.map_bins(res):
                lab = labels[v - 1] if 0 < v <= len(labels) else f"bin {v}"
                self.bin_combo.addItem(f"{v}: {lab}", int(v))
            n = self.bin_combo.count()
            # The remembered position is clamped to this file's bins (never an assert).
            self._bin_index = max(0, min(self._bin_index, n - 1))
            if n:
                self.bin_combo.setCurrentIndex(self._bin_index)
        self.bin_combo.blockSignals(False)

    def _on_bin_chosen(self, i: int) -> None:
        self.set_bin_index(int(i))

    def set_bin_index(self, i: int) -> None:
        """Show processed bin ``i`` (0-based, clamped)."""
        n = self.bin_combo.count()
        if n == 0:
            return
        self._bin_index = max(0, min(int(i), n - 1))
        self.bin_combo.setCurrentIndex(self._bin_index)
        self._update_highlight()
        self.load_map()

    def select_dq_bin(self, dq: int) -> bool:
        """Select the processed bin whose 1-based dynamic value is ``dq``; False if none."""
        res = self.current()
        if res is None:
            return False
        hit = np.flatnonzero(al.map_bins(res) == int(dq))
        if hit.size == 0:
            self.context.show_status(f"Two-Time: q-bin {dq} has no two-time map")
            return False
        self.set_bin_index(int(hit[0]))
        return True

    # -------------------------------------------------------------- picker
    def _show_picker(self) -> None:
        res = self.current()
        if res is None:
            return
        if self.picker_kind.currentData() == "saxs":
            if self._picker_image is None:
                self.submit(
                    "image",
                    read_image_job,
                    str(res.path),
                    on_result=self._on_image,
                    description="Two-Time: scattering image",
                )
                return
            img = self._picker_image
            self.picker_img.setImage(
                img, autoLevels=False, levels=display_image.auto_levels(img)
            )
            self.picker_img.setColorMap(colormap("viridis"))
        else:
            roi = np.asarray(res.qmap.dynamic_roi_map, dtype=np.float64)
            shown = np.where(roi > 0, roi, np.nan)
            self.picker_img.setImage(
                shown,
                autoLevels=False,
                levels=(0.5, max(1.0, float(np.nanmax(roi)) + 0.5)),
            )
            self.picker_img.setColorMap(colormap("turbo"))
        self._update_highlight()

    def _on_image(self, img) -> None:
        self._picker_image = np.asarray(img)
        self._show_picker()

    def _update_highlight(self) -> None:
        res = self.current()
        if res is None or self.bin_combo.count() == 0:
            self.highlight.clear()
            return
        dq = int(self.bin_combo.itemData(self._bin_index))
        sel = np.asarray(res.qmap.dynamic_roi_map) == dq
        # Dim everything but the chosen bin (a bright overlay vanishes on light colours).
        rgba = np.zeros((*sel.shape, 4), dtype=np.uint8)
        rgba[~sel] = (0, 0, 0, 170)
        self.highlight.setImage(rgba, autoLevels=False)

    def _on_picker_click(self, ev) -> None:
        if ev.button() != Qt.MouseButton.LeftButton:
            return
        pos = self.picker_img.mapFromScene(ev.scenePos())
        self.pick_at(pos.y(), pos.x())

    def pick_at(self, row: float, col: float) -> bool:
        """Select the bin under detector pixel (row, col); False outside any two-time bin."""
        res = self.current()
        if res is None:
            return False
        roi = np.asarray(res.qmap.dynamic_roi_map)
        r, c = math.floor(row), math.floor(col)
        if not (0 <= r < roi.shape[0] and 0 <= c < roi.shape[1]) or roi[r, c] <= 0:
            return False
        return self.select_dq_bin(int(roi[r, c]))

    # ----------------------------------------------------------------- map
    def load_map(self) -> int | None:
        """Read the selected map in a worker (strided to ``max size``)."""
        res = self.current()
        if res is None or self.bin_combo.count() == 0:
            return None
        if al.age_lag_only(res):  # no full map: the age x lag map in its place
            return al.load_age_lag(self, res)
        self.status.setText("reading two-time map\u2026")
        self.ages.follow()
        return self.submit(
            "c2",
            read_c2_job,
            str(res.path),
            self._bin_index,
            self.max_size.value(),
            self.diag_check.isChecked(),
            self.c2_reader,
            on_result=self._on_map,
            description="Two-Time: reading C2",
        )

    def _on_map(self, out) -> None:
        view, levels = out
        al.set_map_axes(self, False)
        self.view = view
        self._auto_levels = levels
        c2 = np.asarray(view.c2)
        m = c2.shape[0]
        step = float(view.t0)
        self.c2_img.setImage(c2, autoLevels=False)
        # Pixel i covers [i - 1/2, i + 1/2) x step seconds.
        self.c2_img.setRect(QRectF(-step / 2, -step / 2, m * step, m * step))
        self._apply_levels()
        self.c2_plot.setTitle(
            f"{getattr(view, 'label', '')}  ({m}\u00d7{m}, stride "
            f"{getattr(view, 'stride', 1)})"
        )
        self.c2_plot.autoRange()
        self._draw_g2()
        res = self.current()
        n = getattr(view, "n_frames", None) or (res.twotime.n_frames if res else m)
        self.status.setText(
            f"{res.label if res else ''}: map {n}\u00d7{n} shown as {m}\u00d7{m}; "
            f"t step {step:.4g} s"
        )
        self.sigMapShown.emit()
        self.sigUpdated.emit()

    def _apply_levels(self) -> None:
        cmap = colormap(self.cmap_combo.currentText())
        self.c2_img.setColorMap(cmap)
        self.colorbar.setColorMap(cmap)
        if self.auto_check.isChecked():
            lo, hi = self._auto_levels
        else:
            lo, hi = sorted((self.vmin.value(), self.vmax.value()))
            if hi <= lo:
                hi = lo + 1e-6
        self.vmin.setEnabled(not self.auto_check.isChecked())
        self.vmax.setEnabled(not self.auto_check.isChecked())
        self.c2_img.setLevels((lo, hi))
        self.colorbar.setLevels((lo, hi))

    def levels(self) -> tuple[float, float]:
        """Display levels in use."""
        lv = self.c2_img.getLevels()
        return float(lv[0]), float(lv[1])

    def _draw_g2(self) -> None:
        self.g2_plot.clear()
        self.g2_key.setText(" ")
        res = self.current()
        if res is None:
            return
        curves = twotime_g2_curves(res.twotime, self._bin_index)
        if curves is None:
            return
        self.g2_key.setText(segment_key(curves[3].shape[0]))
        t_full, g_full, t_seg, g_seg = curves
        ok = g_full != 0
        self.g2_plot.addItem(
            # the theme's text colour: black vanishes on the dark theme
            pg.PlotDataItem(t_full[ok], g_full[ok], name="full",
                            pen=pg.mkPen(pg.getConfigOption("foreground"), width=3.0))
        )
        cm = colormap("plasma")
        for s in range(g_seg.shape[0]):
            color = cm.map(s / max(g_seg.shape[0], 1), mode="qcolor")
            self.g2_plot.addItem(
                pg.PlotDataItem(
                    t_seg,
                    g_seg[s],
                    pen=pg.mkPen(color, width=1.2),
                    name=f"segment {s + 1}",
                )
            )

    def clear_plots(self) -> None:
        self.view = None
        self.ages.cancel()
        self.ages.clear()
        self.c2_img.clear()
        self.picker_img.clear()
        self.highlight.clear()
        self.g2_plot.clear()

    # ------------------------------------------------------------- export
    def figure_options(self) -> dict:
        if self.figure_kind == "ages":
            return self._map_options() | self.ages.figure_options()
        return self._map_options()

    def _map_options(self) -> dict:
        res = self.current()
        idx = self.results.index(res) if res is not None and res in self.results else 0
        opts = {
            "file_index": idx,
            "bin_index": self._bin_index,
            "max_size": self.max_size.value(),
            "correct_diagonal": self.diag_check.isChecked(),
            "cmap": self.cmap_combo.currentText(),
        }
        if not self.auto_check.isChecked():
            opts["levels"] = tuple(sorted((self.vmin.value(), self.vmax.value())))
        if self.view is not None:
            opts["view"] = self.view
        return opts

    def data_columns(self):
        if self.figure_kind == "ages":
            from xpcsviewer.views.ages import ages_columns

            return ages_columns(self.ages.outcome)
        res = self.current()
        if res is None:
            return None
        if al.age_lag_only(res):  # g2 of the age x lag map over all ages
            return al.age_lag_columns(self)
        curves = twotime_g2_curves(res.twotime, self._bin_index)
        if curves is None:
            return None
        t_full, g_full, t_seg, g_seg = curves
        cols = {"tau_s": t_full, "g2_full": g_full, "tau_segment_s": t_seg}
        for s in range(g_seg.shape[0]):
            cols[f"g2_segment{s + 1}"] = g_seg[s]
        return cols, [f"g2 from C2 of {res.label}, {self.bin_combo.currentText()}"]

    # ----------------------------------------------------------- settings
    def get_settings(self) -> dict:
        return {
            "bin_index": self._bin_index,
            "cmap": self.cmap_combo.currentText(),
            "auto_levels": self.auto_check.isChecked(),
            "vmin": self.vmin.value(),
            "vmax": self.vmax.value(),
            "correct_diagonal": self.diag_check.isChecked(),
            "max_size": self.max_size.value(),
            "picker": self.picker_kind.currentData(),
            "ages": self.ages.get_settings(),
        }

    def set_settings(self, s: dict) -> None:
        if isinstance(s.get("ages"), dict):
            self.ages.set_settings(s["ages"])
        try:
            if "bin_index" in s:
                self._bin_index = max(0, int(s["bin_index"]))
            if "cmap" in s and self.cmap_combo.findText(str(s["cmap"])) >= 0:
                self.cmap_combo.setCurrentText(str(s["cmap"]))
            for key, box in (("auto_levels", self.auto_check),):
                if key in s:
                    box.setChecked(bool(s[key]))
            self.diag_check.blockSignals(True)
            if "correct_diagonal" in s:
                self.diag_check.setChecked(bool(s["correct_diagonal"]))
            self.diag_check.blockSignals(False)
            for key, spin in (("vmin", self.vmin), ("vmax", self.vmax)):
                if key in s:
                    spin.setValue(float(s[key]))
            if "max_size" in s:
                self.max_size.setValue(int(s["max_size"]))
            if "picker" in s:
                i = self.picker_kind.findData(s["picker"])
                if i >= 0:
                    self.picker_kind.setCurrentIndex(i)
        except (TypeError, ValueError):
            pass
