"""Render resources/icons/xpcsviewer.svg to the PNG sizes desktops expect.

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/render_icons.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ICONS = Path(__file__).resolve().parents[1] / "resources" / "icons"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def main() -> int:
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    svg = QSvgRenderer(str(ICONS / "xpcsviewer.svg"))
    if not svg.isValid():
        print(f"cannot read {ICONS / 'xpcsviewer.svg'}", file=sys.stderr)
        return 1
    for n in SIZES:
        img = QImage(n, n, QImage.Format.Format_ARGB32)
        img.fill(Qt.GlobalColor.transparent)
        p = QPainter(img)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        svg.render(p)
        p.end()
        out = ICONS / f"xpcsviewer-{n}.png"
        img.save(str(out))
        print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
