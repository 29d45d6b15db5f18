"""Drawing on detector images: a view box that hands mouse drags to a tool, the
conversion of pyqtgraph ROIs to mask shapes, and the wedge/ring sector item.

Coordinates are the image's: x = column, y = row, pixel (r, c) covering
``[c, c + 1) x [r, r + 1)`` (row-major images, no transform), as
:mod:`xpcsviewer.compute.detector.masking` expects.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QPainterPath, QPainterPathStroker

from xpcsviewer.compute.detector.masking import Shape
from xpcsviewer.compute.detector.roi import SectorRoi

__all__ = ["MASK_LUT", "DrawViewBox", "MaskOverlayItem", "SectorItem", "mask_overlay",
           "pool_overlay", "shape_of_roi"]

#: overlay colours: valid (clear), excluded by the file (grey), masked by the user (red,
#: nearly opaque: at 150 of 255 over a bright image it was barely seen, issue 49)
MASK_LUT = np.array([[0, 0, 0, 0], [90, 90, 90, 190], [255, 0, 0, 235]], dtype=np.uint8)


def pool_overlay(overlay: np.ndarray, f: int) -> np.ndarray:
    """``overlay`` (H, W) uint8 reduced by ``f`` on both axes, each block keeping its
    largest value: a lone masked pixel stays a whole block (an average, as the screen's
    scaling takes, left 1/f\u00b2 of its colour)."""
    if f <= 1:
        return overlay
    h, w = overlay.shape
    hp, wp = -(-h // f) * f, -(-w // f) * f
    pad = np.zeros((hp, wp), overlay.dtype)
    pad[:h, :w] = overlay
    return pad.reshape(hp // f, f, wp // f, f).max(axis=(1, 3))


class MaskOverlayItem(pg.ImageItem):
    """The mask overlay (uint8 for :data:`MASK_LUT`) that stays visible when the image
    is shown smaller than its pixels: below one screen pixel per image pixel it shows
    the overlay max-pooled into blocks of at least two screen pixels (a power of two,
    cached per factor), so no masked pixel is averaged away; at one screen pixel or
    more per image pixel, the exact overlay. ``setImage`` / ``clear`` as on an
    ImageItem."""

    MAX_FACTOR = 64

    def __init__(self) -> None:
        super().__init__()
        self.setLookupTable(MASK_LUT)
        self._full: np.ndarray | None = None
        self._pooled: dict[int, np.ndarray] = {}
        self._factor = 1
        self._own = False  # setImage called by this class (a pooled level)

    def setImage(self, image=None, autoLevels=None, **kwargs):  # pyqtgraph override
        if getattr(self, "_own", True) or image is None:  # True: ImageItem.__init__'s call
            return super().setImage(image, autoLevels=autoLevels, **kwargs)
        self._full = np.asarray(image)
        self._pooled = {1: self._full}
        self._show_factor(self._wanted_factor(), force=True)
        return None

    def clear(self) -> None:  # pyqtgraph override
        self._full = None  # (never called by ImageItem.__init__)
        self._pooled = {}
        super().clear()

    def shown_factor(self) -> int:
        """The pooling factor of the overlay shown now (1: every pixel)."""
        return self._factor

    def _wanted_factor(self) -> int:
        vb = self.getViewBox()
        if vb is None or not hasattr(vb, "viewPixelSize"):
            return self._factor
        try:
            image_px = max(vb.viewPixelSize())  # image pixels per screen pixel
        except (ZeroDivisionError, TypeError):
            return self._factor
        if not image_px > 1.0 or not math.isfinite(image_px):
            return 1
        # a block at least two screen pixels wide: one pixel of red was hard to find
        return int(min(self.MAX_FACTOR, 2 ** math.ceil(math.log2(2.0 * image_px) - 1e-9)))

    def _show_factor(self, f: int, force: bool = False) -> None:
        if self._full is None or (f == self._factor and not force):
            return
        img = self._pooled.get(f)
        if img is None:
            img = self._pooled[f] = pool_overlay(self._full, f)
        self._factor = f
        self._own = True
        try:
            super().setImage(img, levels=(0, 2), autoLevels=False)
        finally:
            self._own = False
        h, w = self._full.shape
        self.setRect(QRectF(0, 0, img.shape[1] * f, img.shape[0] * f) if f > 1
                     else QRectF(0, 0, w, h))

    def viewTransformChanged(self) -> None:  # pyqtgraph override
        super().viewTransformChanged()
        if getattr(self, "_full", None) is not None:
            self._show_factor(self._wanted_factor())


def mask_overlay(initial: np.ndarray, current: np.ndarray) -> np.ndarray:
    """(H, W) uint8 for :data:`MASK_LUT`: 1 where the file excludes a pixel, 2 where the
    user masked it, 0 elsewhere."""
    out = (~np.asarray(initial, bool)).view(np.uint8).copy()
    out[np.asarray(initial, bool) & ~np.asarray(current, bool)] = 2
    return out


class DrawViewBox(pg.ViewBox):
    """A ViewBox whose left-button drags and clicks go to a drawing tool while
    :attr:`drawing` is True (pan and zoom otherwise, and always with other buttons)."""

    sigDrawDrag = Signal(object, object, bool)
    """A left drag while drawing: (start QPointF, current QPointF, finished bool)."""
    sigDrawClick = Signal(object, bool)
    """A left click while drawing: (position QPointF, double-click bool)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.drawing = False

    def mouseDragEvent(self, ev, axis=None) -> None:  # Qt override
        if self.drawing and ev.button() == Qt.MouseButton.LeftButton and axis is None:
            ev.accept()
            start = self.mapSceneToView(ev.buttonDownScenePos())
            now = self.mapSceneToView(ev.scenePos())
            self.sigDrawDrag.emit(start, now, bool(ev.isFinish()))
            return
        super().mouseDragEvent(ev, axis)

    def mouseClickEvent(self, ev) -> None:  # Qt override
        if self.drawing and ev.button() == Qt.MouseButton.LeftButton:
            ev.accept()
            self.sigDrawClick.emit(self.mapSceneToView(ev.scenePos()), bool(ev.double()))
            return
        super().mouseClickEvent(ev)


def _xy(p) -> tuple[float, float]:
    return float(p.x()), float(p.y())


def shape_of_roi(roi: pg.ROI) -> Shape:
    """The mask shape a drawn pyqtgraph ROI stands for (in image coordinates)."""
    size = roi.size()
    w, h = float(size[0]), float(size[1])
    angle = float(roi.angle())
    if isinstance(roi, pg.PolyLineROI):
        pts = [_xy(roi.mapToParent(hd["item"].pos())) for hd in roi.handles]
        return Shape("polygon", {"vertices": pts})
    if isinstance(roi, pg.LineROI):
        x0, y0 = _xy(roi.mapToParent(QPointF(0.0, h / 2)))
        x1, y1 = _xy(roi.mapToParent(QPointF(w, h / 2)))
        return Shape("line", {"x0": x0, "y0": y0, "x1": x1, "y1": y1, "width": abs(h)})
    if isinstance(roi, (pg.CircleROI, pg.EllipseROI)):
        cx, cy = _xy(roi.mapToParent(QPointF(w / 2, h / 2)))
        if isinstance(roi, pg.CircleROI):
            return Shape("circle", {"cx": cx, "cy": cy, "radius": abs(w) / 2})
        return Shape("ellipse", {"cx": cx, "cy": cy, "rx": abs(w) / 2, "ry": abs(h) / 2,
                                 "angle_deg": angle})
    x0, y0 = _xy(roi.mapToParent(QPointF(0.0, 0.0)))
    return Shape("rectangle", {"x0": x0, "y0": y0, "width": w, "height": h, "angle_deg": angle})


class SectorItem(pg.GraphicsObject):
    """An annular sector around the beam centre, moved and resized with the mouse.

    Drag the inner or outer arc to change the radii, an edge to change that angle,
    the inside to rotate it about the beam centre and move it in or out.

    Parameters
    ----------
    roi : SectorRoi
        Initial geometry (radii in pixels, angles in degrees, phi convention of the
        q-map: 0 along +x, counter-clockwise on screen).
    centre : (x, y)
        Beam centre in view coordinates (pixel centre of column bcx: bcx + 0.5).
    color : str or QColor
    """

    sigChanged = Signal(object)
    """The geometry changes while dragging: (SectorItem)."""
    sigChangeFinished = Signal(object)
    """A drag ended: (SectorItem)."""

    def __init__(self, roi: SectorRoi, centre: tuple[float, float], color="#D55E00") -> None:
        super().__init__()
        self.roi = roi
        self.centre = (float(centre[0]), float(centre[1]))
        self.color = pg.mkColor(color)
        self._pen = pg.mkPen(self.color, width=2)
        self._pen.setCosmetic(True)
        self._hover_pen = pg.mkPen(self.color, width=4)
        self._hover_pen.setCosmetic(True)
        self._hover = False
        self._drag: tuple | None = None
        # on a white box: readable over any colour map
        self.label = pg.TextItem(roi.name, color=self.color, anchor=(0.5, 0.5),
                                 fill=pg.mkBrush(255, 255, 255, 200))
        self.label.setParentItem(self)
        self.setAcceptHoverEvents(True)
        self.setZValue(20)
        self._rebuild()

    # ------------------------------------------------------------ geometry
    def set_roi(self, roi: SectorRoi) -> None:
        """Replace the geometry (GUI thread)."""
        self.roi = roi
        self._rebuild()
        self.sigChanged.emit(self)

    def set_centre(self, centre: tuple[float, float]) -> None:
        """Move the beam centre (a file with another geometry)."""
        self.centre = (float(centre[0]), float(centre[1]))
        self._rebuild()

    def _point(self, r: float, phi_deg: float) -> QPointF:
        a = math.radians(phi_deg)
        return QPointF(self.centre[0] + r * math.cos(a), self.centre[1] - r * math.sin(a))

    def _outline(self) -> QPainterPath:
        roi = self.roi
        n = max(8, int(roi.phi_span / 2))
        angles = np.linspace(roi.phi_start, roi.phi_start + roi.phi_span, n + 1)
        path = QPainterPath()
        if roi.phi_span >= 360.0:  # a ring: two circles
            for r in (roi.r_max, roi.r_min):
                path.moveTo(self._point(r, angles[0]))
                for a in angles[1:]:
                    path.lineTo(self._point(r, a))
            return path
        path.moveTo(self._point(roi.r_min, angles[0]))
        for a in angles:
            path.lineTo(self._point(roi.r_max, a))
        for a in angles[::-1]:
            path.lineTo(self._point(roi.r_min, a))
        path.closeSubpath()
        return path

    def _rebuild(self) -> None:
        self.prepareGeometryChange()
        self._path = self._outline()
        mid = self.roi.phi_start + self.roi.phi_span / 2
        self.label.setText(self.roi.name)
        self.label.setPos(self._point(self.roi.r_max, mid))
        self.update()

    def boundingRect(self) -> QRectF:  # Qt override
        pad = 4 * max(self.pixelWidth() or 0.0, self.pixelHeight() or 0.0, 1e-6)
        return self._path.boundingRect().adjusted(-pad, -pad, pad, pad)

    def shape(self) -> QPainterPath:  # Qt override
        stroker = QPainterPathStroker()
        stroker.setWidth(8 * max(self.pixelWidth() or 0.0, 1e-6))
        return stroker.createStroke(self._path) | self._path

    def paint(self, p, *args) -> None:
        p.setRenderHint(p.RenderHint.Antialiasing, True)
        p.setPen(self._hover_pen if self._hover else self._pen)
        fill = pg.mkColor(self.color)
        fill.setAlpha(30)
        p.setBrush(pg.mkBrush(fill))
        p.drawPath(self._path)

    # --------------------------------------------------------------- mouse
    def _polar(self, pos: QPointF) -> tuple[float, float]:
        dx, dy = pos.x() - self.centre[0], pos.y() - self.centre[1]
        return math.hypot(dx, dy), math.degrees(math.atan2(-dy, dx))

    def _grab_mode(self, pos: QPointF) -> str:
        """Which part a press at ``pos`` grabs: an arc, an edge, or the whole item."""
        r, phi = self._polar(pos)
        tol = 6 * max(self.pixelWidth() or 0.0, 1e-6)
        roi = self.roi
        cands = [(abs(r - roi.r_min), "r_min"), (abs(r - roi.r_max), "r_max")]
        if roi.phi_span < 360.0:
            for a, mode in ((roi.phi_start, "start"), (roi.phi_start + roi.phi_span, "end")):
                d = (phi - a + 180.0) % 360.0 - 180.0
                cands.append((abs(math.radians(d)) * max(r, 1e-6), mode))
        dist, mode = min(cands)
        return mode if dist <= tol else "move"

    def hoverEvent(self, ev) -> None:  # Qt override
        hover = not ev.isExit() and ev.acceptDrags(Qt.MouseButton.LeftButton)
        if hover != self._hover:
            self._hover = hover
            self.update()

    def mouseDragEvent(self, ev) -> None:  # Qt override
        if ev.button() != Qt.MouseButton.LeftButton:
            ev.ignore()
            return
        ev.accept()
        pos = ev.pos()
        if ev.isStart():
            self._drag = (self._grab_mode(ev.buttonDownPos()), self.roi,
                          *self._polar(ev.buttonDownPos()))
        if self._drag is None:
            return
        mode, roi0, r0, phi0 = self._drag
        r, phi = self._polar(pos)
        kw = {}
        if mode == "r_min":
            kw["r_min"] = min(max(0.0, r), roi0.r_max - 1.0)
        elif mode == "r_max":
            kw["r_max"] = max(r, roi0.r_min + 1.0)
        elif mode == "start":
            end = roi0.phi_start + roi0.phi_span
            span = (end - phi) % 360.0 or 360.0
            kw.update(phi_start=phi, phi_span=min(max(span, 1.0), 359.0))
        elif mode == "end":
            kw["phi_span"] = min(max((phi - roi0.phi_start) % 360.0, 1.0), 359.0)
        else:
            dr = r - r0
            dr = max(dr, -roi0.r_min)
            kw.update(r_min=roi0.r_min + dr, r_max=roi0.r_max + dr)
            if roi0.phi_span < 360.0:
                kw["phi_start"] = (roi0.phi_start + (phi - phi0) + 180.0) % 360.0 - 180.0
        self.roi = replace(roi0, **kw)
        self._rebuild()
        self.sigChanged.emit(self)
        if ev.isFinish():
            self._drag = None
            self.sigChangeFinished.emit(self)
