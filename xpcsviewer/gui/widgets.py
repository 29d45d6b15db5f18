"""Small widgets shared by the panels."""

from __future__ import annotations

import functools

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QFontMetrics, QPainter
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QSpinBox,
    QWidget,
)

__all__ = ["COLORMAPS", "BinSpinBox", "ClippedLabel", "FileSelector", "colormap", "curve_color",
           "curve_pen", "elide_words", "labeled", "log_friendly_plot_widget", "plain_axes",
           "prepare_axes", "side_legend"]

COLORMAPS = ("viridis", "plasma", "magma", "inferno", "cividis", "turbo", "jet", "hot", "gray")

# Colour-blind-safe cycle (Okabe-Ito, then Tableau), readable on light and dark.
_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
            "#F0E442", "#8c564b", "#7f7f7f", "#bcbd22", "#17becf")


def curve_pen(i: int, width: float = 1.5, alpha: int = 255, style=None) -> pg.QtGui.QPen:
    """Pen of the ``i``-th curve."""
    c = pg.mkColor(_COLOURS[i % len(_COLOURS)])
    c.setAlpha(alpha)
    pen = pg.mkPen(c, width=width)
    if style is not None:
        pen.setStyle(style)
    return pen


def curve_color(i: int):
    """Colour of the ``i``-th curve."""
    return pg.mkColor(_COLOURS[i % len(_COLOURS)])


@functools.lru_cache(maxsize=32)
def colormap(name: str) -> pg.ColorMap:
    """A pyqtgraph colour map by name (matplotlib names; 'jet'/'hot'/'gray' too).

    Maps pyqtgraph does not ship come from ``matplotlib.colormaps``, never through
    pyqtgraph's matplotlib source, which imports pyplot (~0.5 s on the GUI thread;
    the start-up warm-up imports matplotlib in a worker). Cached: maps are not mutated.
    """
    if name == "gray":
        return pg.ColorMap([0.0, 1.0], [(0, 0, 0), (255, 255, 255)])
    try:
        cm = pg.colormap.get(name)
    except Exception:
        cm = None
    if cm is not None:
        return cm
    try:
        import matplotlib

        mcm = matplotlib.colormaps[name]
        pos = np.linspace(0.0, 1.0, 256)
        return pg.ColorMap(pos, np.round(mcm(pos) * 255).astype(np.uint8))
    except Exception:
        pass
    if name == "jet":
        return pg.ColorMap([0, 0.125, 0.375, 0.625, 0.875, 1.0],
                           [(0, 0, 128), (0, 0, 255), (0, 255, 255), (255, 255, 0),
                            (255, 0, 0), (128, 0, 0)])
    if name == "hot":
        return pg.ColorMap([0, 0.375, 0.75, 1.0],
                           [(0, 0, 0), (255, 0, 0), (255, 255, 0), (255, 255, 255)])
    return pg.colormap.get("viridis")


def labeled(text: str, widget: QWidget, tip: str = "") -> QWidget:
    """``widget`` with a label on its left."""
    w = QWidget()
    lay = QHBoxLayout(w)
    lay.setContentsMargins(0, 0, 0, 0)
    lab = QLabel(text)
    lay.addWidget(lab)
    lay.addWidget(widget, 1)
    if tip:
        w.setToolTip(tip)
        widget.setToolTip(tip)
    return w


class BinSpinBox(QSpinBox):
    """A q-bin picker that shows bins 1-based, as the file lists and tables do, while
    its value stays the 0-based g2 column (``value()``, ``setValue``, ``setMaximum``)."""

    def __init__(self, parent=None, **kwargs) -> None:
        kwargs.setdefault("toolTip", "q-bin (numbered from 1, as in the bin lists)")
        super().__init__(parent, **kwargs)
        self.setMinimum(0)
        self.setMaximum(0)

    def textFromValue(self, value: int) -> str:  # Qt override
        return str(int(value) + 1)

    def valueFromText(self, text: str) -> int:  # Qt override
        try:
            return int(text.strip()) - 1
        except ValueError:
            return self.value()

    def validate(self, text: str, pos: int):
        from PySide6.QtGui import QValidator

        t = text.strip()
        if not t:
            return QValidator.State.Intermediate, text, pos
        if not t.isdigit():
            return QValidator.State.Invalid, text, pos
        ok = self.minimum() <= int(t) - 1 <= self.maximum()
        return (QValidator.State.Acceptable if ok else QValidator.State.Intermediate), text, pos


class FileSelector(QComboBox):
    """Pick one of the target files (single-file tabs)."""

    sigIndexChosen = Signal(int)
    """The user chose a file: (index)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setToolTip("Which target file this tab shows (\u2191/\u2193 in the target list too)")
        self.setMinimumContentsLength(18)
        self.activated.connect(self.sigIndexChosen.emit)

    def set_labels(self, labels: list[str], current: int) -> None:
        """Show ``labels`` and select ``current`` without emitting."""
        self.blockSignals(True)
        self.clear()
        self.addItems(labels)
        if labels:
            self.setCurrentIndex(max(0, min(current, len(labels) - 1)))
        self.blockSignals(False)


def elide_words(fm: QFontMetrics, text: str, width: float) -> str:
    """``text`` cut after the last whole word that fits ``width`` pixels, with "\u2026"
    (never mid-word, unless the first word alone is too wide)."""
    if fm.horizontalAdvance(text) <= width:
        return text
    words = text.split(" ")
    while len(words) > 1:
        words.pop()
        cut = " ".join(words).rstrip(" ,;:(\u2014-") + "\u2026"
        if fm.horizontalAdvance(cut) <= width:
            return cut
    return fm.elidedText(text, Qt.TextElideMode.ElideRight, int(width))


class ClippedLabel(QLabel):
    """A label of ``lines`` fixed lines: the text wraps between words, and what does
    not fit ends in "\u2026" with the whole text as tooltip.

    Its height never follows the text (a label that grows re-lays out, and repaints,
    the plots under it), and it never asks for more width than it gets (a long note
    ran off the window's edge). ``text()`` is the whole text.
    """

    def __init__(self, text: str = "", lines: int = 1, parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self._lines = max(1, int(lines))
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self._fix_height()

    def _fix_height(self) -> None:
        m = self.contentsMargins()
        lines = self._lines * self.fontMetrics().lineSpacing()
        self.setFixedHeight(lines + m.top() + m.bottom() + 2)

    def shown_lines(self) -> tuple[list[str], bool]:
        """The lines painted at the current width, and whether the text was cut."""
        fm = self.fontMetrics()
        width = max(1, self.contentsRect().width())
        out: list[str] = []
        for para in self.text().split("\n"):
            line = ""
            for w in para.split(" "):
                t = f"{line} {w}" if line else w
                if line and fm.horizontalAdvance(t) > width:
                    out.append(line)
                    line = w
                else:
                    line = t
            out.append(line)
        cut = len(out) > self._lines
        if cut:
            out = [*out[: self._lines - 1], elide_words(fm, " ".join(out[self._lines - 1:]), width)]
        for k, line in enumerate(out):
            if fm.horizontalAdvance(line) > width:  # one word wider than the label
                out[k] = fm.elidedText(line, Qt.TextElideMode.ElideMiddle, width)
                cut = True
        return out, cut

    def setText(self, text: str) -> None:  # Qt override
        super().setText(text)
        self._update_tip()

    def _update_tip(self) -> None:
        self.setToolTip(self.text() if self.shown_lines()[1] else "")

    def resizeEvent(self, event) -> None:  # Qt override
        super().resizeEvent(event)
        self._update_tip()

    def changeEvent(self, event) -> None:  # Qt override
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._fix_height()

    def paintEvent(self, event) -> None:  # Qt override
        painter = QPainter(self)
        r = self.contentsRect()
        step = self.fontMetrics().lineSpacing()
        align = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        for k, line in enumerate(self.shown_lines()[0]):
            rect = r.adjusted(0, k * step, 0, 0)
            rect.setHeight(step)
            self.style().drawItemText(painter, rect, align, self.palette(), self.isEnabled(),
                                      line, self.foregroundRole())
        painter.end()


def _opaque_grid_specs(self, p):
    """Grid lines pre-blended onto the plot background: Qt's raster engine draws
    semi-transparent lines ~10x slower, and a grid replays on every paint (a full g2
    grid or Intensity-Time spent most of its paint time there). Same look."""
    specs = pg.AxisItem._xpcs_plain_specs(self, p)
    if specs is None or self.grid is False:
        return specs
    axis_spec, tick_specs, text_specs = specs
    view = self.linkedView()
    if view is not None and self.zValue() >= view.zValue():
        # opaque lines must lie under the data, not over it (pyqtgraph draws the axes,
        # and so the grid, above the view box)
        self.setZValue(view.zValue() - 1)
    bg = pg.mkColor(pg.getConfigOption("background"))
    out = []
    for pen, p1, p2 in tick_specs:
        c = pen.color()
        a = c.alphaF()
        if a < 1.0:
            pen = pg.QtGui.QPen(pen)
            pen.setColor(pg.QtGui.QColor.fromRgbF(
                a * c.redF() + (1 - a) * bg.redF(), a * c.greenF() + (1 - a) * bg.greenF(),
                a * c.blueF() + (1 - a) * bg.blueF()))
        out.append((pen, p1, p2))
    return axis_spec, out, text_specs


if not hasattr(pg.AxisItem, "_xpcs_plain_specs"):  # once per process
    pg.AxisItem._xpcs_plain_specs = pg.AxisItem.generateDrawSpecs
    pg.AxisItem.generateDrawSpecs = _opaque_grid_specs


def prepare_axes(plot: pg.PlotItem) -> None:
    """Make the axes' pictures now, as their paint would: measuring the tick labels
    can resize an axis, and in a paint that re-lays the plot out and paints it twice."""
    for name in ("left", "bottom", "right", "top"):
        ax = plot.getAxis(name)
        if ax is None or not ax.isVisible() or ax.picture is not None:
            continue
        picture = pg.QtGui.QPicture()
        painter = pg.QtGui.QPainter(picture)
        try:
            if ax.style["tickFont"]:
                painter.setFont(ax.style["tickFont"])
            specs = ax.generateDrawSpecs(painter)
            if specs is not None:
                ax.drawPicture(painter, *specs)
        finally:
            painter.end()
        ax.picture = picture


def plain_axes(plot: pg.PlotItem) -> pg.PlotItem:
    """Turn off pyqtgraph's SI-prefix rescaling ("x1e-06") so axes show the values."""
    for name in ("left", "bottom", "right", "top"):
        ax = plot.getAxis(name)
        if ax is not None:
            ax.enableAutoSIPrefix(False)
    return plot


def side_legend(plot: pg.PlotItem, text_size: str = "8pt") -> pg.LegendItem:
    """A legend in the plot's layout right of the data (never over it); items named
    at creation are listed in it, as with ``addLegend``."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QSizePolicy

    legend = pg.LegendItem(labelTextSize=text_size,
                           brush=pg.mkBrush(pg.getConfigOption("background")),
                           labelTextColor=pg.getConfigOption("foreground"))
    legend.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
    plot.layout.addItem(legend, 2, 3)
    plot.layout.setAlignment(legend, Qt.AlignmentFlag.AlignTop)
    plot.legend = legend
    return legend


_SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076"
                                            "\u2077\u2078\u2079")


def _superscript(n: int) -> str:
    """An integer in superscript digits: -5 -> \u207b\u2075."""
    return str(int(n)).translate(_SUPERSCRIPT)


class SparseLogAxis(pg.AxisItem):
    """An axis whose log-mode minor ticks are labelled as densely as the labels fit:
    every 1..9 x 10^n on a short range, fewer (1, 2, 5 x 10^n; 1, 3 x 10^n) on longer
    ones, or the decades alone. (pyqtgraph labels every minor tick and they overlap; 1, 2, 5
    alone left a range such as 0.0006-0.003 with nothing labelled below 10^-3.)

    One axis, one number format: plain decimals while every label lies in [10^-4, 10^4)
    (0.0001 to 9000: at most four decimals or four digits), else every label as a power
    of ten (pyqtgraph wrote "0.0001" beside "9e-05" as "9\u00b710\u207b\u2075", and "2"
    beside "10\u00b9", on one axis)."""

    #: labels of an axis are plain decimals while all of them lie in [lo, hi)
    PLAIN_RANGE = (1e-4, 1e4)

    #: Label sets, densest first, and the smallest gap between neighbours (decades).
    _MANTISSAS = tuple((m, float(np.min(np.diff(np.log10([*m, 10])))))
                       for m in ((1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 4, 6, 8), (1, 2, 3, 5, 7),
                                 (1, 2, 5), (1, 3), (1,)))

    def _label_set(self, strings: list[str]) -> tuple[int, ...]:
        """The densest mantissas whose labels do not overlap at this axis length."""
        from PySide6.QtGui import QFontMetricsF

        lo, hi = self.range  # log10 units in log mode
        span = abs(hi - lo)
        vertical = self.orientation in ("left", "right")
        length = self.size().height() if vertical else self.size().width()
        if span <= 0 or length <= 0:
            return (1, 2, 5)
        fm = QFontMetricsF(self.style["tickFont"] or self.font())
        if vertical:
            extent = 1.4 * fm.height()
        else:
            extent = max((fm.horizontalAdvance(t) for t in strings), default=0.0) + 10
        per_decade = length / span
        for mants, gap in self._MANTISSAS:
            if gap * per_decade >= extent:
                return mants
        return (1,)

    def logTickValues(self, minVal, maxVal, size, stdTicks):
        # pyqtgraph repeats the decades among the minor ticks: their labels, drawn
        # twice, counted twice against its text-crowding limit, which then dropped
        # every minor label of a range of a few decades
        levels = super().logTickValues(minVal, maxVal, size, stdTicks)
        major = np.array([v for sp, vals in levels if sp is not None for v in vals])
        out = []
        for sp, vals in levels:
            if sp is None and major.size:
                vals = [v for v in vals if np.min(np.abs(major - v)) > 1e-6]
            out.append((sp, vals))
        return out

    _fine = False  # the last tickValues fell back to ticks inside one mantissa step
    _fine_step = 1.0  # their step (linear units)
    _sci = False  # the last tickValues' labels are powers of ten (else plain decimals)

    def _plain_fits(self, values) -> bool:
        """Whether every value (linear units) prints as a plain decimal."""
        lo, hi = self.PLAIN_RANGE
        return all(lo * (1 - 1e-9) <= abs(x) < hi for x in values)

    def tickValues(self, minVal, maxVal, size):  # pyqtgraph override
        levels = super().tickValues(minVal, maxVal, size)
        self._fine = False
        self._sci = False
        if not self.logMode or not np.isfinite(minVal) or not np.isfinite(maxVal):
            return levels
        lo, hi = sorted((minVal, maxVal))

        def labelled(v: float) -> bool:
            mant = 10 ** (v - np.floor(v + 1e-9))
            return any(abs(mant - m) < 1e-6 * m for m in range(1, 10))

        inside = {round(v, 9) for _, vals in levels for v in vals if lo <= v <= hi
                  and labelled(v)}
        if len(inside) >= 2:
            # the format of the whole axis, from the labels tickStrings will keep
            keep_set = self._label_set([self._plain(v, 1.0) for v in inside])
            shown = [10.0 ** v for v in inside
                     if any(abs(10 ** (v - np.floor(v + 1e-9)) - m) < 1e-6 * m
                            for m in keep_set)]
            self._sci = not self._plain_fits(shown)
            return levels
        # a range inside one mantissa step (tau 0.47-0.49 s) had no label at all, and
        # one label does not give a scale: nice linear values, placed in log10
        a, b = 10.0 ** lo, 10.0 ** hi
        step = 10.0 ** np.floor(np.log10((b - a) / 3.0))
        for m in (1, 2, 5, 10):
            if (b - a) / (m * step) <= 5:
                step *= m
                break
        vals = np.arange(np.ceil(a / step) * step, b + 1e-12 * b, step)
        vals = vals[vals > 0]
        if vals.size < 2:
            return levels
        self._fine = True
        self._fine_step = float(step)
        self._sci = not self._plain_fits(vals)
        return [(None, list(np.log10(vals)))]

    @staticmethod
    def _plain(v: float, scale: float) -> str:
        """log10 value ``v`` as a plain decimal: 0.002, 0.5, 30."""
        x = 10.0 ** v * scale
        n = int(np.floor(np.log10(x) + 1e-9))
        mant = x / 10.0 ** n
        if abs(mant - round(mant)) < 1e-6:
            return f"{x:.{max(0, -n)}f}"
        return f"{x:.3g}"

    @staticmethod
    def _power(v: float, scale: float) -> str:
        """log10 value ``v`` as a power of ten: 10\u207b\u2075, 2\u00b710\u207b\u2075."""
        x = 10.0 ** v * scale
        n = int(np.floor(np.log10(x) + 1e-9))
        mant = x / 10.0 ** n
        m = f"{round(mant)}" if abs(mant - round(mant)) < 1e-6 else f"{mant:.3g}"
        return ("" if m == "1" else f"{m}\u00b7") + "10" + _superscript(n)

    def _fine_strings(self, values) -> list[str]:
        """Labels of the linear ticks inside one mantissa step: as many decimals as the
        step needs (0.996, 0.998, 1.000, not 1, 1, 1); powers of ten with one exponent
        outside the plain range (1.20\u00b710\u207b\u2075)."""
        xs = [10.0 ** v for v in values]
        step = self._fine_step
        if not self._sci:
            d = max(0, -int(np.floor(np.log10(step) + 1e-9)))
            return [f"{x:.{d}f}" for x in xs]
        n = int(np.floor(np.log10(max(xs, default=1.0)) + 1e-9))
        d = max(0, -int(np.floor(np.log10(step / 10.0 ** n) + 1e-9)))
        return [f"{x / 10.0 ** n:.{d}f}\u00b710{_superscript(n)}" for x in xs]

    def tickStrings(self, values, scale, spacing):  # pyqtgraph override
        if self.logMode and self._fine:
            return self._fine_strings(values)
        if not self.logMode:
            return super().tickStrings(values, scale, spacing)
        fmt = self._power if self._sci else self._plain
        strings = [fmt(v, scale) for v in values]
        keep_set = self._label_set(strings)
        out = []
        for v, s in zip(values, strings, strict=False):
            mant = 10 ** (v - np.floor(v + 1e-9))
            keep = any(abs(mant - m) < 1e-6 * m for m in keep_set)
            out.append(s if keep else "")
        return out


def log_friendly_plot_widget() -> pg.PlotWidget:
    """A PlotWidget with :class:`SparseLogAxis` on the left and bottom."""
    return pg.PlotWidget(axisItems={"left": SparseLogAxis("left"),
                                    "bottom": SparseLogAxis("bottom")})
