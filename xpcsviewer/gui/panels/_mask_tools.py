"""The Detector tab's mask tools: draw shapes on the image, then apply them.

Tools: rectangle, circle, ellipse, polygon (click the corners, double-click to close),
line with a width, and the eraser (a rectangle that gives pixels back). A drawn shape
stays editable (pyqtgraph handles) until *Apply* (Enter) turns every pending shape
into masked pixels in a worker; *Discard* drops them. Drawing only moves pyqtgraph
items on the GUI thread, so it stays smooth on any detector.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QDoubleSpinBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from xpcsviewer.gui.panels._drawing import DrawViewBox, shape_of_roi

__all__ = ["TOOLS", "MaskTools"]

#: (key, button text, tooltip)
TOOLS = (
    ("rectangle", "Rect", "Rectangle: drag a box"),
    ("circle", "Circle", "Circle: drag from the centre outward"),
    ("ellipse", "Ellipse", "Ellipse: drag its bounding box"),
    ("polygon", "Polygon", "Polygon: click the corners; double-click, or click the first "
                           "corner, to close"),
    ("line", "Line", "Line with a width: drag from end to end"),
    ("eraser", "Eraser", "Eraser: drag a box; its pixels are given back"),
)
_MASK_PEN = pg.mkPen("#D55E00", width=2)
_ERASE_PEN = pg.mkPen("#009E73", width=2, style=Qt.PenStyle.DashLine)


class MaskTools(QWidget):
    """Mask drawing tools bound to a :class:`DrawViewBox` (GUI thread).

    Parameters
    ----------
    view : DrawViewBox
        The image's view box; shapes are added to it.
    """

    sigApply = Signal(list, list)
    """Apply the pending shapes: (mask shapes, eraser shapes) as lists of Shape."""
    sigThreshold = Signal(object, object)
    """Mask pixels outside [low, high]: (low or None, high or None)."""
    sigUndo = Signal()
    """Undo the last mask step: ()."""
    sigRedo = Signal()
    """Redo: ()."""
    sigReset = Signal()
    """Back to the file's own mask: ()."""
    sigLoad = Signal()
    """Load a mask file: ()."""
    sigSave = Signal()
    """Save the mask to a file: ()."""
    sigShowMask = Signal(bool)
    """Show or hide the mask overlay: (bool)."""

    def __init__(self, view: DrawViewBox, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = view
        self.tool: str | None = None
        self.pending: list[tuple[pg.ROI, bool]] = []  # (roi, eraser)
        self._preview: pg.GraphicsObject | None = None
        self._poly_pts: list[tuple[float, float]] = []
        lay = QVBoxLayout(self)
        draw = QGroupBox("Draw")
        grid = QGridLayout(draw)
        self.tool_group = QButtonGroup(self)
        self.tool_group.setExclusive(False)
        self.tool_buttons: dict[str, QToolButton] = {}
        for i, (key, text, tip) in enumerate(TOOLS):
            b = QToolButton(text=text, toolTip=tip, checkable=True)
            b.setMinimumWidth(62)
            self.tool_group.addButton(b)
            self.tool_buttons[key] = b
            b.toggled.connect(lambda on, k=key: self._on_tool_toggled(k, on))
            grid.addWidget(b, i // 3, i % 3)
        self.width_spin = QDoubleSpinBox(minimum=0.5, maximum=500.0, value=3.0, decimals=1,
                                         suffix=" px", toolTip="Width of new lines")
        self.apply_btn = QPushButton("Apply", toolTip="Mask the drawn shapes (Enter)")
        self.discard_btn = QPushButton("Discard", toolTip="Drop the drawn shapes")
        grid.addWidget(QLabel("line width"), 2, 0)
        grid.addWidget(self.width_spin, 2, 1)
        grid.addWidget(self.apply_btn, 3, 0, 1, 2)
        grid.addWidget(self.discard_btn, 3, 2)
        lay.addWidget(draw)
        thr = QGroupBox("Threshold on intensity")
        tl = QHBoxLayout(thr)
        self.low_edit = QLineEdit(placeholderText="low", toolTip="Mask pixels below (empty: none)")
        self.high_edit = QLineEdit(placeholderText="high",
                                   toolTip="Mask pixels above, e.g. hot pixels (empty: none)")
        self.threshold_btn = QPushButton("Mask outside")
        self.threshold_btn.setToolTip("Mask the pixels below low or above high")
        for w in (self.low_edit, self.high_edit, self.threshold_btn):
            tl.addWidget(w)
        lay.addWidget(thr)
        hist = QHBoxLayout()
        self.undo_btn = QPushButton("Undo", toolTip="Ctrl+Z")
        self.redo_btn = QPushButton("Redo", toolTip="Ctrl+Y")
        self.reset_btn = QPushButton("Reset", toolTip="Back to the file's own mask (undoable)")
        for w in (self.undo_btn, self.redo_btn, self.reset_btn):
            hist.addWidget(w)
        lay.addLayout(hist)
        files = QHBoxLayout()
        self.show_check = QCheckBox("show mask", checked=True)
        self.show_check.setToolTip("Draw the mask over the image")
        self.load_btn = QPushButton("Load\u2026", toolTip="Load a mask (HDF5, npy, tiff)")
        self.save_btn = QPushButton("Save\u2026", toolTip="Save the mask (HDF5: /qmap/mask)")
        for w in (self.show_check, self.load_btn, self.save_btn):
            files.addWidget(w)
        lay.addLayout(files)
        self.status = QLabel(" ")
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        lay.addStretch(1)
        self.apply_btn.clicked.connect(self.apply)
        self.discard_btn.clicked.connect(self.discard)
        self.threshold_btn.clicked.connect(self._on_threshold)
        self.undo_btn.clicked.connect(self.sigUndo)
        self.redo_btn.clicked.connect(self.sigRedo)
        self.reset_btn.clicked.connect(self.sigReset)
        self.load_btn.clicked.connect(self.sigLoad)
        self.save_btn.clicked.connect(self.sigSave)
        self.show_check.toggled.connect(self.sigShowMask)
        view.sigDrawDrag.connect(self._on_drag)
        view.sigDrawClick.connect(self._on_click)

    def install_shortcuts(self, host: QWidget) -> None:
        """Enter (apply), Ctrl+Z, Ctrl+Y while the focus is anywhere in ``host``."""
        for keys, slot in ((QKeySequence.StandardKey.Undo, self.sigUndo.emit),
                           (QKeySequence.StandardKey.Redo, self.sigRedo.emit),
                           (QKeySequence(Qt.Key.Key_Return), self.apply),
                           (QKeySequence(Qt.Key.Key_Enter), self.apply)):
            sc = QShortcut(keys, host)
            sc.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            sc.activated.connect(slot)

    # --------------------------------------------------------------- tools
    def set_tool(self, key: str | None) -> None:
        """Choose a tool (None: pan and zoom)."""
        for k, b in self.tool_buttons.items():
            b.blockSignals(True)
            b.setChecked(k == key)
            b.blockSignals(False)
        self._finish_polygon()
        self.tool = key
        self.view.drawing = key is not None

    def _on_tool_toggled(self, key: str, on: bool) -> None:
        self.set_tool(key if on else None)

    def _drop(self, item) -> None:
        """Remove a drawn item and let Qt delete it (a removed pyqtgraph item left to the
        garbage collector after its view is gone can crash the interpreter)."""
        self.view.removeItem(item)
        item.deleteLater()

    def _add_pending(self, roi: pg.ROI, eraser: bool) -> None:
        roi.setPen(_ERASE_PEN if eraser else _MASK_PEN)
        self.pending.append((roi, eraser))
        self._update_status()

    def _on_drag(self, start: QPointF, now: QPointF, finished: bool) -> None:
        tool = self.tool
        if tool in (None, "polygon"):
            return
        if self._preview is not None:
            self._drop(self._preview)
            self._preview = None
        x0, y0, x1, y1 = start.x(), start.y(), now.x(), now.y()
        if tool == "circle":
            r = max(((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5, 0.5)
            roi = pg.CircleROI((x0 - r, y0 - r), (2 * r, 2 * r))
        elif tool == "line":
            if (x1, y1) == (x0, y0):
                x1 += 1.0
            roi = pg.LineROI((x0, y0), (x1, y1), self.width_spin.value())
        else:
            pos = (min(x0, x1), min(y0, y1))
            size = (max(abs(x1 - x0), 0.5), max(abs(y1 - y0), 0.5))
            roi = pg.EllipseROI(pos, size) if tool == "ellipse" else pg.RectROI(pos, size)
        self.view.addItem(roi)
        if finished:
            self._add_pending(roi, tool == "eraser")
        else:
            self._preview = roi

    def _on_click(self, pos: QPointF, double: bool) -> None:
        if self.tool != "polygon":
            return
        if double:
            self._finish_polygon()
            return
        if len(self._poly_pts) >= 3:
            # a click on the first corner closes the polygon
            px, py = self.view.viewPixelSize()
            x0, y0 = self._poly_pts[0]
            if abs(pos.x() - x0) <= 6 * px and abs(pos.y() - y0) <= 6 * py:
                self._finish_polygon()
                return
        self._poly_pts.append((pos.x(), pos.y()))
        if self._preview is not None:
            self._drop(self._preview)
        # a plain outline while clicking: ROI handles would catch the next clicks
        xs, ys = zip(*self._poly_pts, strict=True)
        self._preview = pg.PlotCurveItem(np.asarray(xs), np.asarray(ys), pen=_MASK_PEN)
        self.view.addItem(self._preview)

    def _finish_polygon(self) -> None:
        """Close the polygon being clicked (at least three corners) as a pending shape."""
        if self._preview is not None:
            self._drop(self._preview)
            self._preview = None
        pts, self._poly_pts = self._poly_pts, []
        if len(pts) >= 3:
            roi = pg.PolyLineROI(pts, closed=True)
            self.view.addItem(roi)
            self._add_pending(roi, False)

    # -------------------------------------------------------------- actions
    def add_polygon(self, points: list[tuple[float, float]]) -> None:
        """Add a closed polygon as if clicked (scripts, tests)."""
        self._poly_pts = [(float(x), float(y)) for x, y in points]
        self._finish_polygon()

    def apply(self) -> None:
        """Send the pending shapes to be masked, then drop their outlines."""
        self._finish_polygon()
        if not self.pending:
            return
        masks = [shape_of_roi(r) for r, er in self.pending if not er]
        erase = [shape_of_roi(r) for r, er in self.pending if er]
        self.discard()
        self.sigApply.emit(masks, erase)

    def discard(self) -> None:
        """Drop the pending shapes."""
        self._finish_polygon()
        for roi, _e in self.pending:
            self._drop(roi)
        self.pending = []
        self._update_status()

    def _on_threshold(self) -> None:
        def num(edit: QLineEdit):
            t = edit.text().strip()
            try:
                return float(t) if t else None
            except ValueError:
                return None

        low, high = num(self.low_edit), num(self.high_edit)
        if low is None and high is None:
            self.status.setText("Threshold: give a low and/or a high limit")
            return
        self.sigThreshold.emit(low, high)

    def _update_status(self) -> None:
        n = len(self.pending)
        self.apply_btn.setText(f"Apply ({n})" if n else "Apply")

    def set_history_state(self, can_undo: bool, can_redo: bool, text: str) -> None:
        """Enable undo/redo and show the mask's state (GUI thread)."""
        self.undo_btn.setEnabled(can_undo)
        self.redo_btn.setEnabled(can_redo)
        self.status.setText(text)
