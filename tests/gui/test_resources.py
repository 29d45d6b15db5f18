"""The app's assets are installed with it and shown in the window and the About box."""

from __future__ import annotations

import configparser
from importlib.resources import files

import pytest

pytestmark = pytest.mark.gui


def test_resources_are_packaged():
    icons = files("xpcsviewer.resources.icons")
    for n in (16, 32, 48, 64, 128, 256, 512):
        data = (icons / f"xpcsviewer-{n}.png").read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in (icons / "xpcsviewer.svg").read_bytes()
    entry = configparser.ConfigParser(interpolation=None)
    entry.read_string((files("xpcsviewer.resources") / "xpcsviewer.desktop").read_text())
    d = entry["Desktop Entry"]
    assert d["Exec"].startswith("xpcsviewer") and d["Icon"] == "xpcsviewer"
    assert d["Type"] == "Application"


def test_icon_in_window_and_about(qtbot):
    from xpcsviewer.gui.main_window import MainWindow
    from xpcsviewer.gui.resources import app_icon

    icon = app_icon()
    assert not icon.isNull()
    assert {32, 256} <= {s.width() for s in icon.availableSizes()}
    win = MainWindow(restore_session=False, save_session_on_close=False)
    qtbot.addWidget(win)
    assert not win.windowIcon().isNull()
    box = win.show_about()
    pix = box.iconPixmap()
    assert pix.width() >= 64
    img = pix.toImage()
    # the icon, not a blank square: its corners are transparent and its centre is not
    assert img.pixelColor(1, 1).alpha() == 0
    assert img.pixelColor(pix.width() // 2, pix.height() // 3).alpha() > 0
    assert "XPCS Viewer" in box.text()
    box.close()
