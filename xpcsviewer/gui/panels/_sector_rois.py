"""Wedge and ring ROIs: drawn on SAXS-2D, their I(q) / I(phi) shown in SAXS-1D.

:class:`SectorRoiTools` is attached to the SAXS-2D panel: "q-wedge" and "phi-ring"
buttons add a sector on the image, which is moved and resized with the mouse
(:class:`~xpcsviewer.gui.panels._drawing.SectorItem`); the profiles of every ROI are
integrated in a worker (debounced) and published as ``context.shared["saxs_rois"]``;
the list exports them as CSV and as a figure. :class:`SectorRoiCurves` is attached
to the SAXS-1D panel and draws the wedges' I(q) over the files' curves and the
rings' I(phi) in a second plot.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
)

from xpcsviewer.compute.detector.roi import SectorRoi, integrate_rois
from xpcsviewer.gui.export_folder import ask_save_path
from xpcsviewer.gui.image_view import frame_key, shape_text
from xpcsviewer.gui.panels._drawing import SectorItem

__all__ = ["RoiSet", "SectorRoiCurves", "SectorRoiTools", "roi_color", "roi_geometry"]

SHARED_KEY = "saxs_rois"

#: ROI colours, apart from the file curves' (Okabe-Ito orange, vermillion, purple, black)
_ROI_COLOURS = ("#E69F00", "#D55E00", "#CC79A7", "#000000", "#56B4E9")


def roi_color(name: str):
    """Colour of ROI ``name`` ("W1", "R2", ...): the same on SAXS-2D and SAXS-1D."""
    digits = "".join(ch for ch in str(name) if ch.isdigit())
    i = int(digits) - 1 if digits else 0
    return pg.mkColor(_ROI_COLOURS[i % len(_ROI_COLOURS)])


def roi_geometry(qmap) -> tuple:
    """What a ROI's pixels and q mean: the frame (shape, beam centre) and the q-map's
    energy, detector distance and pixel size."""
    def num(v):
        return None if v is None else round(float(v), 9)

    return (*frame_key(qmap), num(qmap.energy_kev), num(qmap.detector_distance),
            num(qmap.pixel_size))


def _geometry_change(old: tuple, new: tuple) -> tuple[str, str]:
    """("the 512x1024 geometry", "1676x2100"): what differs, in a few words."""
    if old[0] != new[0]:
        return f"the {shape_text(old[0])} geometry", shape_text(new[0])
    if old[1:3] != new[1:3]:
        return (f"the beam centre ({old[1]:g}, {old[2]:g})",
                f"the beam centre ({new[1]:g}, {new[2]:g})")
    return "another q-map (energy, distance or pixel size)", "this one"


@dataclass(frozen=True)
class RoiSet:
    """What SAXS-2D publishes: the profiles of its ROIs on one file's image."""

    source: str
    profiles: list
    path: str = ""  # the file integrated


class SectorRoiTools(QObject):
    """ROI controls and items of the SAXS-2D panel (GUI thread).

    Parameters
    ----------
    panel : Saxs2DPanel
        Provides ``plot`` (the image's PlotItem), ``data["raw"]`` (the image),
        ``current_result()`` and ``context``; the controls go into its layout.
    """

    def __init__(self, panel: Any) -> None:
        super().__init__(panel)
        self.panel = panel
        self.items: list[SectorItem] = []
        self.profiles: list = []
        self._count = 0
        #: roi_geometry of the image the ROIs are on; ROIs of other geometries are kept
        #: aside and come back with a file of theirs (issue 22)
        self.geometry: tuple | None = None
        self.parked: dict[tuple, list[SectorRoi]] = {}
        row = QHBoxLayout()
        self.add_wedge_btn = QPushButton("+ q-wedge", toolTip=(
            "Add a sector: I(q) of that sector. Drag its arcs, edges or inside to "
            "shape and move it"))
        self.add_ring_btn = QPushButton("+ \u03c6-ring", toolTip=(
            "Add an annulus: I(\u03c6) of that ring. Drag its circles to resize, the "
            "inside to move it"))
        self.roi_combo = QComboBox(toolTip="The ROIs on this image")
        self.roi_combo.setMinimumContentsLength(16)
        self.bins = QSpinBox(minimum=2, maximum=2000, value=60, toolTip="Bins of the selected ROI")
        self.remove_btn = QPushButton("Remove", toolTip="Remove the selected ROI")
        self.csv_btn = QPushButton("ROI CSV\u2026", toolTip="Export the ROI profiles as CSV")
        self.fig_btn = QPushButton("ROI figure\u2026",
                                   toolTip="Export the ROI profiles as a figure (PNG/SVG/PDF)")
        for w in (QLabel("ROI"), self.add_wedge_btn, self.add_ring_btn, self.roi_combo,
                  QLabel("bins"), self.bins, self.remove_btn, self.csv_btn, self.fig_btn):
            row.addWidget(w)
        row.addStretch(1)
        panel.layout().insertLayout(2, row)
        self.add_wedge_btn.clicked.connect(lambda: self.add("wedge"))
        self.add_ring_btn.clicked.connect(lambda: self.add("ring"))
        self.remove_btn.clicked.connect(self.remove_current)
        self.bins.editingFinished.connect(self._on_bins)
        self.roi_combo.currentIndexChanged.connect(self._on_selected)
        self.csv_btn.clicked.connect(self._on_export_csv)
        self.fig_btn.clicked.connect(self._on_export_figure)
        self._timer = QTimer(self, singleShot=True, interval=150)
        self._timer.timeout.connect(self.recompute)
        panel.sigUpdated.connect(self._on_image_shown)
        self._update_buttons()

    # -------------------------------------------------------------- items
    def _centre(self) -> tuple[float, float] | None:
        res = self.panel.shown_result()
        if res is None:
            return None
        return res.qmap.beam_center_x + 0.5, res.qmap.beam_center_y + 0.5

    def add(self, kind: str, roi: SectorRoi | None = None) -> SectorItem | None:
        """Add a ROI (a default one placed on the image unless given); GUI thread."""
        centre = self._centre()
        data = self.panel.data
        if centre is None or data is None:
            # pressed while the image is still being read, or with no file at all
            why = ("the image is still loading; add the ROI once it is shown"
                   if self.panel.results else "open a file before adding ROIs")
            self.panel.context.show_status(f"SAXS-2D: {why}")
            return None
        self.geometry = roi_geometry(self.panel.shown_result().qmap)
        self._count += 1
        if roi is None:
            h, w = data["raw"].shape
            corners = [(0, 0), (w, 0), (0, h), (w, h)]
            reach = max(np.hypot(x - centre[0], y - centre[1]) for x, y in corners)
            n = sum(1 for it in self.items if it.roi.kind == kind)
            if kind == "wedge":
                roi = SectorRoi("wedge", 0.08 * reach, 0.6 * reach, -15.0 + 45.0 * n, 30.0,
                                self.bins.value(), f"W{self._count}")
            else:
                r0 = (0.15 + 0.12 * n) * reach
                roi = SectorRoi("ring", r0, r0 + 0.08 * reach, -180.0, 360.0,
                                self.bins.value(), f"R{self._count}")
        item = self._add_item(roi)
        self._update_buttons()
        self._timer.start()
        return item

    def _add_item(self, roi: SectorRoi) -> SectorItem:
        item = SectorItem(roi, self._centre(), roi_color(roi.name))
        item.sigChanged.connect(lambda _it: self._timer.start())
        self.panel.plot.addItem(item)
        self.items.append(item)
        self.roi_combo.addItem(roi.label)
        self.roi_combo.setCurrentIndex(len(self.items) - 1)
        return item

    def remove_current(self) -> None:
        """Remove the ROI selected in the list."""
        i = self.roi_combo.currentIndex()
        if not 0 <= i < len(self.items):
            return
        item = self.items.pop(i)
        self.panel.plot.removeItem(item)
        self.roi_combo.removeItem(i)
        self._update_buttons()
        self.recompute()

    def _on_selected(self, i: int) -> None:
        if 0 <= i < len(self.items):
            self.bins.setValue(int(self.items[i].roi.n_bins))

    def _on_bins(self) -> None:
        i = self.roi_combo.currentIndex()
        if 0 <= i < len(self.items):
            it = self.items[i]
            it.set_roi(replace(it.roi, n_bins=self.bins.value()))

    def _update_buttons(self) -> None:
        have = bool(self.items)
        for w in (self.remove_btn, self.csv_btn, self.fig_btn, self.roi_combo, self.bins):
            w.setEnabled(have)

    def _on_image_shown(self) -> None:
        res = self.panel.shown_result()
        if res is None:
            return
        new = roi_geometry(res.qmap)
        old, self.geometry = self.geometry, new
        if old is None or old == new:
            if self.items:
                self._timer.start()
            return
        notes = []
        if self.items:
            # a ROI drawn on one geometry means other pixels and q on another
            self.parked[old] = [it.roi for it in self.items]
            for it in self.items:
                self.panel.plot.removeItem(it)
            self.items = []
            self.roi_combo.clear()
            was, now = _geometry_change(old, new)
            notes.append(f"ROIs of {was} not carried onto {now}")
        back = self.parked.pop(new, [])
        for roi in back:
            self._add_item(roi)
        if back:
            notes.append(f"{len(back)} ROI(s) drawn on this geometry restored")
        if notes:
            self.panel.context.show_status(f"SAXS-2D: {'; '.join(notes)}")
        self._update_buttons()
        self.recompute()

    # ------------------------------------------------------------ profiles
    def recompute(self) -> None:
        """Integrate every ROI on the shown image in a worker (GUI thread: snapshot only)."""
        # the image shown and its own q-map, never the next file's while it loads
        res, data = self.panel.shown_result(), self.panel.data
        for i, it in enumerate(self.items):
            self.roi_combo.setItemText(i, it.roi.label)
        if res is None or not self.items or roi_geometry(res.qmap) != self.geometry:
            self.profiles = []
            self.panel.context.set_shared(SHARED_KEY, RoiSet("", []))
            return
        rois = [it.roi for it in self.items]
        self.panel.submit("rois", integrate_rois, data["raw"], rois, res.qmap,
                          on_result=lambda out, r=res: self._on_profiles(r, out),
                          description="SAXS-2D ROIs")

    def _on_profiles(self, res: Any, profiles: list) -> None:
        if self.panel.shown_result() is not res:
            return  # another image since
        self.profiles = list(profiles)
        self.panel.context.set_shared(SHARED_KEY, RoiSet(res.label, self.profiles,
                                                         str(res.path)))

    # -------------------------------------------------------------- export
    def _source(self) -> str:
        res = self.panel.shown_result()
        return "" if res is None else res.label

    def export_csv(self, path: str) -> int | None:
        """Write the profiles to CSV in a worker; returns the request id."""
        from xpcsviewer.export.roi_profiles import write_roi_table

        if not self.profiles:
            self.panel.context.report_error("SAXS-2D: no ROI profiles to export")
            return None
        return self.panel.submit("roi-csv", write_roi_table, path, list(self.profiles),
                                 self._source(), on_result=self.panel._on_exported,
                                 description=f"Exporting {Path(path).name}")

    def export_figure(self, path: str) -> int | None:
        """Write the profiles' figure in a worker; returns the request id."""
        from xpcsviewer.export.roi_profiles import write_roi_figure

        if not self.profiles:
            self.panel.context.report_error("SAXS-2D: no ROI profiles to export")
            return None
        return self.panel.submit("roi-figure", write_roi_figure, path, list(self.profiles),
                                 self._source(), on_result=self.panel._on_exported,
                                 description=f"Exporting {Path(path).name}")

    def _on_export_csv(self) -> None:
        path = ask_save_path(self.panel, self.panel.context, "Export ROI profiles",
                             "roi_profiles.csv", "CSV (*.csv)")
        if path:
            self.export_csv(path)

    def _on_export_figure(self) -> None:
        path = ask_save_path(self.panel, self.panel.context, "Export ROI figure",
                             "roi_profiles.png", "Figures (*.png *.svg *.pdf)")
        if path:
            self.export_figure(path)


class SectorRoiCurves(QObject):
    """The ROI profiles in the SAXS-1D panel: I(q) of wedges on its plot, I(phi) of
    rings in a second plot below it (GUI thread)."""

    def __init__(self, panel: Any) -> None:
        super().__init__(panel)
        self.panel = panel
        self.items: list = []
        self.phi_widget = pg.PlotWidget()
        self.phi_plot = self.phi_widget.getPlotItem()
        self.phi_plot.setLabel("bottom", "\u03c6 (deg)")
        self.phi_plot.setLabel("left", "I (ROI rings)")
        self.phi_plot.showGrid(x=True, y=True, alpha=0.3)
        self.phi_legend = self.phi_plot.addLegend(offset=(-10, 10))
        self.phi_widget.setMaximumHeight(220)
        self.phi_widget.setVisible(False)
        panel.layout().addWidget(self.phi_widget)
        panel.context.sigSharedChanged.connect(self._on_shared)
        panel.sigUpdated.connect(self.redraw)

    def _on_shared(self, key: str) -> None:
        if key == SHARED_KEY:
            self.redraw()

    def redraw(self) -> None:
        """Draw the published profiles (the panel's own redraw cleared its plot)."""
        roi_set = self.panel.context.shared.get(SHARED_KEY)
        plot = self.panel.plot
        for it in self.items:
            if it.scene() is not None:
                plot.removeItem(it)
        self.items = []
        self.phi_plot.clear()
        profiles = [] if roi_set is None else roi_set.profiles
        if roi_set is not None and roi_set.path and roi_set.path not in {
                str(r.path) for r in self.panel.results}:
            profiles = []  # the ROIs' file is no longer a target
        rings = 0
        for p in profiles:
            ok = np.isfinite(p.intensity) & (p.counts > 0)
            colour = roi_color(p.roi.name)
            pen = pg.mkPen(colour, width=2, style=Qt.PenStyle.DashLine)
            name = f"{p.roi.label} [{roi_set.source}]"
            if p.roi.kind == "wedge":
                ok &= p.intensity > 0  # the SAXS-1D plot is often log-log
                item = pg.PlotDataItem(p.x[ok], p.intensity[ok], pen=pen, name=name,
                                       symbol="t", symbolSize=6, symbolBrush=colour,
                                       symbolPen=None)
                plot.addItem(item)
                self.items.append(item)
            else:
                rings += 1
                self.phi_plot.addItem(pg.PlotDataItem(p.x[ok], p.intensity[ok], pen=pen,
                                                      name=name))
        self.phi_widget.setVisible(rings > 0)

    def curves(self) -> list:
        """The ROI curves now on the SAXS-1D plot (tests)."""
        return list(self.items)
