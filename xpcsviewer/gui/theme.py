"""Light and dark themes for the widgets and every pyqtgraph plot."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QWidget

__all__ = ["THEMES", "apply_theme"]

THEMES = {
    "light": {"background": "w", "foreground": "k"},
    "dark": {"background": "#1e1e1e", "foreground": "#dddddd"},
}


def _dark_palette() -> QPalette:
    p = QPalette()
    c = {
        QPalette.ColorRole.Window: "#2b2b2b", QPalette.ColorRole.WindowText: "#dddddd",
        QPalette.ColorRole.Base: "#1e1e1e", QPalette.ColorRole.AlternateBase: "#2b2b2b",
        QPalette.ColorRole.ToolTipBase: "#333333", QPalette.ColorRole.ToolTipText: "#eeeeee",
        QPalette.ColorRole.Text: "#dddddd", QPalette.ColorRole.Button: "#353535",
        QPalette.ColorRole.ButtonText: "#dddddd", QPalette.ColorRole.Highlight: "#2a82da",
        QPalette.ColorRole.HighlightedText: "#000000", QPalette.ColorRole.Link: "#2a82da",
    }
    for role, col in c.items():
        p.setColor(role, QColor(col))
    p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text, QColor("#777777"))
    p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.ButtonText, QColor("#777777"))
    p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.WindowText, QColor("#777777"))
    return p


def apply_theme(root: QWidget, theme: str) -> None:
    """Apply ``theme`` to the application palette and to the plots under ``root`` (GUI thread)."""
    t = THEMES.get(theme, THEMES["light"])
    pg.setConfigOptions(background=t["background"], foreground=t["foreground"])
    app = QApplication.instance()
    if app is not None:
        app.setPalette(_dark_palette() if theme == "dark" else app.style().standardPalette())
    fg = pg.mkColor(t["foreground"])
    bg = pg.mkColor(t["background"])
    bg.setAlpha(220)
    for view in root.findChildren(pg.GraphicsView):
        view.setBackground(t["background"])
        scene = view.scene()
        if scene is None:
            continue
        for it in scene.items():
            if isinstance(it, pg.AxisItem):
                it.setPen(fg)
                it.setTextPen(fg)
            elif isinstance(it, pg.LegendItem):
                # legends keep the colours of the theme they were made in otherwise
                it.setLabelTextColor(fg)
                it.setBrush(pg.mkBrush(bg))
                for _sample, label in it.items:
                    label.setText(label.text, color=fg)
            elif isinstance(it, pg.LabelItem) and it.text:
                it.setText(it.text, color=fg)  # plot titles: pale after dark -> light
