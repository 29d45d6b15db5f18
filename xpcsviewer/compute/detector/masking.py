"""Mask shapes on a detector image, thresholds, and an undo/redo history.

Coordinates are those of the image display: x along columns, y along rows, and
pixel (row r, column c) covers ``[c, c + 1) x [r, r + 1)``, so its centre is at
``(c + 0.5, r + 0.5)``. A shape selects the pixels whose centres lie inside it.
Every function returns an (H, W) bool array ("selected"), is O(pixels of the
shape's bounding box) and may run off the GUI thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "MaskHistory",
    "Shape",
    "circle",
    "ellipse",
    "line",
    "polygon",
    "rasterize",
    "rectangle",
    "threshold",
]


def _box(shape: tuple[int, int], xs: np.ndarray, ys: np.ndarray, pad: float = 0.0):
    """Row/column slices of the pixels whose centres may lie in the x/y extent."""
    h, w = int(shape[0]), int(shape[1])
    c0 = max(0, int(np.floor(np.min(xs) - pad - 0.5)))
    c1 = min(w, int(np.ceil(np.max(xs) + pad + 0.5)) + 1)
    r0 = max(0, int(np.floor(np.min(ys) - pad - 0.5)))
    r1 = min(h, int(np.ceil(np.max(ys) + pad + 0.5)) + 1)
    return slice(r0, max(r0, r1)), slice(c0, max(c0, c1))


def _centres(rs: slice, cs: slice) -> tuple[np.ndarray, np.ndarray]:
    x = np.arange(cs.start, cs.stop, dtype=np.float64)[None, :] + 0.5
    y = np.arange(rs.start, rs.stop, dtype=np.float64)[:, None] + 0.5
    return x, y


def _rotated_frame(x, y, x0, y0, angle_deg):
    """Coordinates of (x, y) in a frame at (x0, y0) rotated by ``angle_deg``."""
    a = np.deg2rad(angle_deg)
    dx, dy = x - x0, y - y0
    return dx * np.cos(a) + dy * np.sin(a), -dx * np.sin(a) + dy * np.cos(a)


def rectangle(shape: tuple[int, int], x0: float, y0: float, width: float, height: float,
              angle_deg: float = 0.0) -> np.ndarray:
    """Pixels inside a rectangle with a corner at (x0, y0), rotated about it.

    As a pyqtgraph ``RectROI``: ``pos = (x0, y0)``, ``size = (width, height)``,
    ``angle`` in degrees (counter-clockwise in x/y).
    """
    out = np.zeros(shape, bool)
    a = np.deg2rad(angle_deg)
    ux, uy = np.cos(a), np.sin(a)
    corners_x = x0 + np.array([0, width * ux, width * ux - height * uy, -height * uy])
    corners_y = y0 + np.array([0, width * uy, width * uy + height * ux, height * ux])
    rs, cs = _box(shape, corners_x, corners_y)
    x, y = _centres(rs, cs)
    u, v = _rotated_frame(x, y, x0, y0, angle_deg)
    lo_u, hi_u = sorted((0.0, float(width)))
    lo_v, hi_v = sorted((0.0, float(height)))
    out[rs, cs] = (u >= lo_u) & (u <= hi_u) & (v >= lo_v) & (v <= hi_v)
    return out


def ellipse(shape: tuple[int, int], cx: float, cy: float, rx: float, ry: float,
            angle_deg: float = 0.0) -> np.ndarray:
    """Pixels inside an ellipse centred at (cx, cy) with semi-axes rx, ry, rotated."""
    out = np.zeros(shape, bool)
    rx, ry = abs(float(rx)), abs(float(ry))
    if rx == 0 or ry == 0:
        return out
    r = max(rx, ry)
    rs, cs = _box(shape, np.array([cx - r, cx + r]), np.array([cy - r, cy + r]))
    x, y = _centres(rs, cs)
    u, v = _rotated_frame(x, y, cx, cy, angle_deg)
    out[rs, cs] = (u / rx) ** 2 + (v / ry) ** 2 <= 1.0
    return out


def circle(shape: tuple[int, int], cx: float, cy: float, radius: float) -> np.ndarray:
    """Pixels inside a circle."""
    return ellipse(shape, cx, cy, radius, radius)


def polygon(shape: tuple[int, int], vertices: Sequence[Sequence[float]]) -> np.ndarray:
    """Pixels inside a closed polygon (even-odd rule), vertices as (x, y)."""
    out = np.zeros(shape, bool)
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 2)
    if len(v) < 3:
        return out
    rs, cs = _box(shape, v[:, 0], v[:, 1])
    x, y = _centres(rs, cs)
    inside = np.zeros((y.shape[0], x.shape[1]), bool)
    xj, yj = v[-1]
    for xi, yi in v:  # one pass per edge, vectorised over the box's pixels
        crosses = (yi > y) != (yj > y)
        with np.errstate(divide="ignore", invalid="ignore"):
            x_at = (xj - xi) * (y - yi) / (yj - yi) + xi
        inside ^= crosses & (x < x_at)
        xj, yj = xi, yi
    out[rs, cs] = inside
    return out


def line(shape: tuple[int, int], x0: float, y0: float, x1: float, y1: float,
         width: float) -> np.ndarray:
    """Pixels within ``width / 2`` of the segment (x0, y0)-(x1, y1)."""
    out = np.zeros(shape, bool)
    half = abs(float(width)) / 2.0
    rs, cs = _box(shape, np.array([x0, x1]), np.array([y0, y1]), pad=half)
    x, y = _centres(rs, cs)
    dx, dy = x1 - x0, y1 - y0
    n2 = dx * dx + dy * dy
    t = np.zeros(1) if n2 == 0 else np.clip(((x - x0) * dx + (y - y0) * dy) / n2, 0.0, 1.0)
    px, py = x0 + t * dx, y0 + t * dy
    out[rs, cs] = (x - px) ** 2 + (y - py) ** 2 <= half * half
    return out


def threshold(image: np.ndarray, low: float | None = None, high: float | None = None
              ) -> np.ndarray:
    """Pixels outside ``[low, high]`` (and non-finite ones): the ones to mask."""
    img = np.asarray(image, dtype=np.float64)
    bad = ~np.isfinite(img)
    with np.errstate(invalid="ignore"):
        if low is not None:
            bad |= img < float(low)
        if high is not None:
            bad |= img > float(high)
    return bad


@dataclass(frozen=True)
class Shape:
    """One drawn shape: ``kind`` and its parameters (plain numbers, JSON-friendly).

    Kinds and parameters: ``rectangle`` (x0, y0, width, height, angle_deg),
    ``ellipse`` (cx, cy, rx, ry, angle_deg), ``circle`` (cx, cy, radius),
    ``polygon`` (vertices), ``line`` (x0, y0, x1, y1, width).
    """

    kind: str
    params: dict[str, Any] = field(default_factory=dict)

    def select(self, shape: tuple[int, int]) -> np.ndarray:
        """The pixels this shape selects on a detector of ``shape``."""
        fn = _KINDS.get(self.kind)
        if fn is None:
            raise ValueError(f"unknown shape {self.kind!r}; expected one of {sorted(_KINDS)}")
        return fn(shape, **self.params)


_KINDS = {"rectangle": rectangle, "ellipse": ellipse, "circle": circle, "polygon": polygon,
          "line": line}


def rasterize(shape: tuple[int, int], shapes: Sequence[Shape], progress=None,
              cancel=None) -> np.ndarray:
    """Union of the pixels selected by ``shapes`` (worker job)."""
    out = np.zeros(shape, bool)
    for i, s in enumerate(shapes):
        if cancel is not None:
            cancel.raise_if_cancelled()
        if progress is not None:
            progress(i, len(shapes), f"rasterizing {s.kind}")
        out |= s.select(shape)
    return out


class MaskHistory:
    """A valid-pixel mask with undo, redo and reset (Qt-free, not thread-safe).

    Steps are kept as packed bits (1/8 byte per pixel), so a 4-Mpixel detector
    costs 0.5 MB per step; at most ``max_steps`` are kept.

    Parameters
    ----------
    initial : (H, W) bool
        The starting mask (True = valid), e.g. the file's own.
    """

    def __init__(self, initial: np.ndarray, max_steps: int = 100) -> None:
        self.initial = np.asarray(initial, bool).copy()
        self.shape = self.initial.shape
        self.current = self.initial.copy()
        self.max_steps = int(max_steps)
        self._undo: list[bytes] = []
        self._redo: list[bytes] = []
        self.version = 0  # every change counts one: a step computed on an old one is stale

    def _pack(self, m: np.ndarray) -> bytes:
        return np.packbits(m, axis=None).tobytes()

    def _unpack(self, b: bytes) -> np.ndarray:
        n = self.shape[0] * self.shape[1]
        return np.unpackbits(np.frombuffer(b, np.uint8), count=n).astype(bool).reshape(self.shape)

    def _push(self, new: np.ndarray) -> bool:
        if np.array_equal(new, self.current):
            return False
        return self.commit(new, self._pack(self.current), self.version)

    def commit(self, new: np.ndarray, packed_current: bytes, version: int) -> bool:
        """Make ``new`` current, with the current mask already packed (a step made in a
        worker). Refused (False) when the history changed since ``version``."""
        if version != self.version:
            return False
        self._undo.append(packed_current)
        del self._undo[: -self.max_steps]
        self._redo.clear()
        self.current = np.asarray(new, bool)
        self.version += 1
        return True

    def exclude(self, selected: np.ndarray) -> bool:
        """Mask the selected pixels. Returns whether the mask changed."""
        return self._push(self.current & ~np.asarray(selected, bool))

    def include(self, selected: np.ndarray) -> bool:
        """Eraser: give back selected pixels that the initial mask had as valid."""
        return self._push(self.current | (np.asarray(selected, bool) & self.initial))

    def set(self, mask: np.ndarray) -> bool:
        """Replace the mask (e.g. a loaded file) as one undoable step."""
        m = np.asarray(mask, bool)
        if m.shape != self.shape:
            raise ValueError(f"mask of shape {m.shape} for a {self.shape} detector")
        return self._push(m.copy())

    def reset(self) -> bool:
        """Back to the initial mask (undoable)."""
        return self._push(self.initial.copy())

    @property
    def can_undo(self) -> bool:
        """Whether :meth:`undo` has a step to go back to."""
        return bool(self._undo)

    @property
    def can_redo(self) -> bool:
        """Whether :meth:`redo` has a step to go forward to."""
        return bool(self._redo)

    def undo(self) -> bool:
        """One step back. Returns False when there is none."""
        if not self._undo:
            return False
        self._redo.append(self._pack(self.current))
        self.current = self._unpack(self._undo.pop())
        self.version += 1
        return True

    def redo(self) -> bool:
        """One step forward again. Returns False when there is none."""
        if not self._redo:
            return False
        self._undo.append(self._pack(self.current))
        self.current = self._unpack(self._redo.pop())
        self.version += 1
        return True

    @property
    def n_masked(self) -> int:
        """Pixels masked now that the initial mask had as valid."""
        return int((self.initial & ~self.current).sum())
