"""Text keys and labels of the Two-Time tab: the markers' and windows' keys of the ages
plots, the segments' key of the g2 plot, and lines that wrap instead of being cut."""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QLabel, QSizePolicy

from xpcsviewer.gui.widgets import colormap
from xpcsviewer.views import ages as av

__all__ = ["LAW_COLOR", "error_source", "segment_key", "tau_color", "tau_key", "window_key",
           "wrapping_label"]

TAU_COLORS = av.TAU_COLORS
LAW_COLOR = "#1f77b4"


def tau_color(way: str) -> QColor:
    """The marker colour of a way: constant age in the theme's text colour (the figures'
    near-black vanishes on the dark theme), constant t1 orange."""
    if way == "age":
        return QColor(pg.mkColor(pg.getConfigOption("foreground")))
    return QColor(TAU_COLORS[way])


def tau_key() -> str:
    """The markers' key, in the current theme's colours."""
    return (f"<span style='color:{tau_color('age').name()}'>\u25cf</span> constant age, "
            f"<span style='color:{TAU_COLORS['t1']}'>\u25cf</span> constant t\u2081 "
            "(filled: converged; open: unresolved, the law a lower limit, or at a bound; "
            "\u25b2/\u25bc: 95 % lower/"
            f"upper limit); <span style='color:{LAW_COLOR}'>\u2014</span>")
def window_key(cuts: Any, fits: Any = None) -> str:
    """"windows: ● 1 s ± 1, ● 3 s ± 1 ⚠, …" in the windows' colours (⚠: the ways disagree)."""
    parts = []
    shown = av.flags(cuts, fits)
    for k, lab in enumerate(cuts.windows.labels()):
        flag = " \u26a0" if bool(shown[k, 0]) else ""
        parts.append(f"<span style='color:{av.window_color(k)}'>\u25cf</span> {lab}{flag}")
    return "windows: " + ", ".join(parts)


def wrapping_label() -> QLabel:
    """A line that wraps at the panel's width (never cut, never widening the window)."""
    lab = QLabel(" ")
    lab.setWordWrap(True)
    lab.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    return lab


def error_source(fits: Any) -> str:
    """Where the error bars come from, when not from the fits (docs/ages.md section 4)."""
    src = getattr(fits, "tau_err_source", "fit")
    return "" if src == "fit" else f"; \u03c4 errors and the law's from {src}"


def segment_key(n_segments: int) -> str:
    """"━ full run; ━ segment 1, ━ 2, …" in the curves' colours (a line below the plot,
    where a legend inside covered the curves)."""
    fg = QColor(pg.mkColor(pg.getConfigOption("foreground"))).name()
    cm = colormap("plasma")
    parts = [f"<span style='color:{fg}'>\u2501</span> full run"]
    for s in range(n_segments):
        c = cm.map(s / max(n_segments, 1), mode="qcolor").name()
        parts.append(f"<span style='color:{c}'>\u2501</span> "
                     + (f"segment {s + 1}" if s == 0 else f"{s + 1}"))
    return "; ".join(parts[:1]) + ("; " + ", ".join(parts[1:]) if n_segments else "")
