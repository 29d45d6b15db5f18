"""The pixel audit in the GUI: which pixels make a bin's g2 wrong (issue 36).

The G2 tab's *Audit pixels* runs :func:`xpcsviewer.jobs.pixel_audit.audit_file` (the
code of ``xpcsviewer audit``) in a worker and lists the pixels by leverage; the
flagged ones are circled on the per-pixel image and on SAXS-2D (published under
:data:`AUDIT_KEY`). *Mask these* hands them to the Detector tab's mask editor (one
undoable step, :data:`MASK_REQUEST_KEY`); *Regroup* with the Detector tab's mask then
gives g2 without them, to fit as today.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QGridLayout,
    QGroupBox,
    QLabel,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
)

__all__ = [
    "AUDIT_KEY",
    "MASK_REQUEST_KEY",
    "FlaggedPixels",
    "MaskRequest",
    "PixelAuditMixin",
    "apply_mask_request",
    "audit_job",
    "exclude_request",
    "flagged_overlay",
    "show_flagged",
]

AUDIT_KEY = "pixel_audit"
MASK_REQUEST_KEY = "mask_request"
#: rows of the table in the tab (the CSV holds as many as asked)
TABLE_ROWS = 50


@dataclass(frozen=True)
class FlaggedPixels:
    """The pixels an audit flagged in one file (row, column arrays)."""

    path: str
    rows: np.ndarray
    cols: np.ndarray


@dataclass(frozen=True)
class MaskRequest:
    """Pixels to mask in the Detector tab's mask of ``path`` ((H, W) bool, True = mask)."""

    path: str
    selected: np.ndarray
    what: str


def audit_job(path: str, mask: np.ndarray | None, progress=None, cancel=None) -> dict:
    """Worker job: the audit of ``path`` (with an extra valid-pixel mask) and its table."""
    from xpcsviewer.compute.detector.pixel_audit import audit_table_rows
    from xpcsviewer.jobs.pixel_audit import audit_file

    audit = audit_file(path, mask, progress=progress, cancel=cancel)
    flagged = np.flatnonzero(audit.flagged)
    return {"path": str(path), "audit": audit,
            "rows": audit_table_rows(audit, top=TABLE_ROWS),
            "flagged_rows": audit.rows[flagged], "flagged_cols": audit.cols[flagged]}


def save_table_job(dest: str, audit: Any, top: int, progress=None, cancel=None) -> str:
    """Worker job: the ranked table as CSV (atomic; never over an HDF5 file)."""
    from xpcsviewer.jobs.pixel_audit import write_audit_csv

    return str(write_audit_csv(dest, [audit], top=top))


def flagged_overlay() -> pg.ScatterPlotItem:
    """Open magenta circles for flagged pixels (screen-sized: visible zoomed out)."""
    item = pg.ScatterPlotItem(symbol="o", size=14, pen=pg.mkPen("m", width=2), brush=None)
    item.setZValue(20)
    return item


def show_flagged(item: pg.ScatterPlotItem, flagged: FlaggedPixels | None,
                 path: str | None) -> None:
    """Circle the flagged pixels of ``path`` (nothing for another file or none)."""
    if flagged is None or path is None or flagged.path != str(path):
        item.setData([], [])
        return
    item.setData(flagged.cols + 0.5, flagged.rows + 0.5)


def apply_mask_request(panel: Any, req: MaskRequest) -> bool:
    """Mask ``req``'s pixels in the Detector tab ``panel`` (one undoable step).

    The tab turns to the request's file; its mask is then published as usual, so the
    G2 tab's regrouping (with the Detector tab's mask) leaves the pixels out. A raw
    source's path (the Raw tab's "Mask these") goes to its own mask history
    (``panel.apply_raw_mask_request``).
    """
    i = next((j for j, r in enumerate(panel.results) if str(r.path) == req.path), None)
    if i is None:
        raw = getattr(panel, "apply_raw_mask_request", None)
        done = raw(req) if raw is not None else None
        if done is not None:
            return done
        panel.context.show_status(f"Detector: {Path(req.path).name} is not a target")
        return False
    panel.set_current(i)
    h = panel.histories.get(req.path)
    if h is None:
        h = panel._new_history(panel.results[i])
        panel._on_from_file(schedule=False)
    return exclude_request(panel, h, req)


def exclude_request(panel: Any, h: Any, req: MaskRequest) -> bool:
    """Mask ``req``'s pixels in the history ``h`` of the tab ``panel`` (one step) and
    publish the mask; False when the shape differs or nothing changes."""
    if h.shape != req.selected.shape:
        panel.context.report_error(f"Detector: {req.what}: mask of another detector shape")
        return False
    n = int((h.current & req.selected).sum())
    if not h.exclude(req.selected):
        panel.context.show_status(f"Detector: {req.what}: already masked")
        return False
    panel._mask_changed()
    then = ("correlate from the Raw tab to use the mask"
            if getattr(panel, "raw_current", None) is not None
            else "regroup on the G2 tab to see g2 without them")
    panel.context.show_status(f"Detector: {req.what}: {n} pixels masked (undo on the "
                              f"Detector tab); {then}")
    return True


class PixelAuditMixin:
    """The audit box of the G2 tab (mixed into :class:`~.g2pixel.G2PixelPanel`)."""

    audit_out: dict | None = None

    def _build_audit(self) -> QGroupBox:
        box = QGroupBox()  # on the G2 tab's "Pixel audit" page: the page names it
        box.setToolTip("Pixel audit: which pixels make g2 wrong")
        g = QGridLayout(box)
        g.setContentsMargins(6, 4, 6, 4)
        self.audit_btn = QPushButton("Audit pixels")
        self.audit_btn.setToolTip(
            "Rank every pixel by how much its bin's g2 changes without it (in error bars) "
            "and flag hot pixels (robust z against their q-bin); the Detector tab's mask "
            "applies")
        self.audit_show = QCheckBox("circle flagged", checked=True,
                                    toolTip="Circle the flagged pixels here and on SAXS-2D")
        self.mask_these_btn = QPushButton("Mask these", enabled=False)
        self.mask_these_btn.setToolTip("Add the flagged pixels to the Detector tab's mask "
                                       "(undoable there); then Regroup with its mask")
        self.audit_top = QSpinBox(minimum=1, maximum=10**6, value=100,
                                  toolTip="Rows in the saved table")
        self.audit_save_btn = QPushButton("Save table\u2026", enabled=False,
                                          toolTip="Write the ranked table as CSV")
        self.audit_table = QTableWidget(0, 7)
        self.audit_table.setHorizontalHeaderLabels(
            ["bin", "row", "col", "q", "leverage", "z", "reason"])
        self.audit_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.audit_table.verticalHeader().setVisible(False)
        self.audit_table.verticalHeader().setDefaultSectionSize(20)
        self.audit_table.horizontalHeader().setStretchLastSection(True)
        self.audit_table.setWordWrap(False)  # one line a pixel; the tooltip has it all
        self.audit_table.setMaximumHeight(92)  # 3 rows: the image keeps its height
        self.audit_label = QLabel(" ")
        self.audit_label.setWordWrap(True)
        g.addWidget(self.audit_btn, 0, 0)
        g.addWidget(self.audit_show, 0, 1)
        g.addWidget(self.mask_these_btn, 0, 2)
        g.addWidget(QLabel("rows"), 0, 3)
        g.addWidget(self.audit_top, 0, 4)
        g.addWidget(self.audit_save_btn, 0, 5)
        g.addWidget(self.audit_table, 1, 0, 1, 6)
        g.addWidget(self.audit_label, 2, 0, 1, 6)
        self.audit_overlay = flagged_overlay()
        self.iplot.addItem(self.audit_overlay)
        self.audit_btn.clicked.connect(lambda: self.audit())
        self.audit_show.toggled.connect(lambda _b: self._publish_flagged())
        self.mask_these_btn.clicked.connect(lambda: self.mask_flagged())
        self.audit_save_btn.clicked.connect(self._on_save_table)
        return box

    def audit(self) -> int | None:
        """Audit the file shown (worker)."""
        res = self.current_result()
        if res is None:
            return None
        self.audit_label.setText(f"Auditing {res.label} \u2026")
        return self.submit("audit", audit_job, str(res.path), self._detector_mask(),
                           on_result=self._on_audit, description=f"Pixel audit {res.label}")

    def _on_audit(self, out: dict) -> None:
        self.audit_out = out
        au = out["audit"]
        rows = out["rows"][1:]
        t = self.audit_table
        t.setRowCount(len(rows))
        for i, r in enumerate(rows):
            cells = [str(r[1]), str(r[2]), str(r[3]), f"{r[4]:.4g}",
                     "" if r[5] is None else f"{r[5]:.3g}", f"{r[6]:.3g}", r[7]]
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(r[7] or "not flagged")
                t.setItem(i, j, item)
        t.resizeColumnsToContents()
        n = len(out["flagged_rows"])
        self.audit_label.setText(
            f"{Path(out['path']).name}: {au.pixel_index.size:,} pixels audited, {n} flagged "
            f"(leverage > {au.leverage_flag:g} error bars or z > {au.hot_z:g})")
        self.mask_these_btn.setEnabled(n > 0)
        self.audit_save_btn.setEnabled(True)
        self._publish_flagged()

    def _publish_flagged(self) -> None:
        out = self.audit_out
        fl = None
        if out is not None and self.audit_show.isChecked():
            fl = FlaggedPixels(out["path"], out["flagged_rows"], out["flagged_cols"])
        self.context.set_shared(AUDIT_KEY, fl)
        self._show_flagged()

    def _show_flagged(self) -> None:
        res = self.current_result()
        show_flagged(self.audit_overlay, self.context.shared.get(AUDIT_KEY),
                     None if res is None else str(res.path))

    def mask_flagged(self) -> bool:
        """Hand the flagged pixels to the Detector tab's mask editor."""
        out = self.audit_out
        if out is None or not len(out["flagged_rows"]):
            return False
        au = out["audit"]
        sel = np.zeros(au.shape, bool)
        sel[out["flagged_rows"], out["flagged_cols"]] = True
        self.use_mask_check.setChecked(True)  # the next Regroup leaves them out
        self.context.set_shared(MASK_REQUEST_KEY, MaskRequest(
            out["path"], sel, "pixel audit"))
        self.audit_label.setText(f"{int(sel.sum())} flagged pixels added to the Detector "
                                 "tab's mask: press Regroup to see g2 without them")
        return True

    def save_audit_table(self, path: str) -> int | None:
        """Write the ranked table to ``path`` (worker)."""
        if self.audit_out is None:
            return None
        return self.submit("audit-save", save_table_job, path, self.audit_out["audit"],
                           self.audit_top.value(), on_result=self._on_exported,
                           description=f"Saving {Path(path).name}")

    def _on_save_table(self) -> None:
        if self.audit_out is None:
            return
        name = Path(self.audit_out["path"]).stem + "_pixels.csv"
        from xpcsviewer.gui.export_folder import ask_save_path

        path = ask_save_path(self, self.context, "Save the pixel table", name, "CSV (*.csv)")
        if path:
            self.save_audit_table(path)
