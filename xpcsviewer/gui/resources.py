"""The app's non-code assets (``resources/``, installed as ``xpcsviewer.resources``)."""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import as_file, files

from PySide6.QtGui import QIcon, QPixmap

__all__ = ["ICON_SIZES", "app_icon", "icon_pixmap"]

ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def _icon_file(name: str) -> str:
    with as_file(files("xpcsviewer.resources.icons") / name) as p:  # a real path when installed
        return str(p)


@lru_cache(maxsize=1)
def app_icon() -> QIcon:
    """The application icon, every PNG size plus the SVG (Qt picks per use)."""
    icon = QIcon()
    for n in ICON_SIZES:
        icon.addFile(_icon_file(f"xpcsviewer-{n}.png"))
    icon.addFile(_icon_file("xpcsviewer.svg"))
    return icon


def icon_pixmap(size: int = 96) -> QPixmap:
    """The icon as a pixmap of ``size`` px (About box)."""
    return app_icon().pixmap(size, size)
