"""The Diffusion tab's results table: one row per file, its verdict, D, exponent,
radius and the joint model, coloured by verdict (apart from the panel's plot and
options)."""

from __future__ import annotations

import math

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHeaderView, QTableWidget, QTableWidgetItem

from xpcsviewer.fitting.diffusion import D_SHOWN_PER_A2, D_SHOWN_UNIT
from xpcsviewer.gui.panels._diffusion_jobs import DiffusionFile, _pm

__all__ = ["FILE_COLUMN_PX", "VERDICT_COLORS", "fill_results_table"]

VERDICT_COLORS = {
    "diffusive": QColor(200, 240, 200),
    "not_diffusive": QColor(255, 225, 180),
    "too_few_bins": QColor(230, 230, 230),
}

#: Widest file-name column of the results table (px).
FILE_COLUMN_PX = 240


def fill_results_table(table: QTableWidget, files: list[DiffusionFile]) -> None:
    """Fill ``table`` with one row per file of ``files``."""
    head = [
        "file",
        "verdict",
        f"D ({D_SHOWN_UNIT})",
        "exponent b",
        "R\u2095 (nm)",
        "bins",
        "left out",
        "joint D (\u00c5\u1d45/s)",
        "joint \u03b1",
        "why",
    ]
    t = table
    t.setColumnCount(len(head))
    t.setHorizontalHeaderLabels(head)
    t.setRowCount(len(files))
    for r, f in enumerate(files):
        v, jt = f.verdict, f.joint
        fr = v.free if v is not None else None
        radius = _pm(*f.radius, ".4g") if math.isfinite(f.radius[0]) else "\u2014"
        if f.radius_source:
            radius += f" ({f.radius_source})"
        cells = [
            f.label,
            v.verdict.replace("_", " ") if v is not None else "\u2014",
            _pm(f.D * D_SHOWN_PER_A2, f.D_err * D_SHOWN_PER_A2),
            _pm(fr.exponent, fr.exponent_err, ".3f") if fr is not None else "\u2014",
            radius,
            str(f.points.q.size),
            str(f.points.n_dropped),
            _pm(jt.D, jt.D_err) if jt else "\u2014",
            _pm(jt.alpha, jt.alpha_err, ".3f") if jt else "\u2014",
            v.message if v is not None else "",
        ]
        color = VERDICT_COLORS.get(v.verdict) if v is not None else None
        for c, text in enumerate(cells):
            it = QTableWidgetItem(text)
            if color is not None and c < 3:
                it.setBackground(color)
                it.setForeground(QColor(0, 0, 0))
            if c in (0, len(cells) - 1):  # the long texts, maybe cut: in full
                it.setToolTip(text)
            t.setItem(r, c, it)
    hh = t.horizontalHeader()
    hh.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    # The "why" column was cut off at the right edge: it takes the width left and
    # wraps, and long file names give it room (cut in the middle, where series of
    # names are alike, at FILE_COLUMN_PX; the user can widen the column).
    hh.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
    t.resizeColumnToContents(0)
    t.setColumnWidth(0, min(t.columnWidth(0), FILE_COLUMN_PX))
    hh.setSectionResizeMode(len(head) - 1, QHeaderView.ResizeMode.Stretch)
    t.setWordWrap(True)
    t.setTextElideMode(Qt.TextElideMode.ElideMiddle)
    t.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
