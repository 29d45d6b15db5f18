"""Is there a screen to open a window on? (No Qt import.)"""

from __future__ import annotations

import os
import sys

NO_DISPLAY_HINT = (
    "No display found (DISPLAY and WAYLAND_DISPLAY are unset), so no window can open.\n"
    "Run it on a desktop or over `ssh -X`, or render tabs offscreen instead:\n"
    "  QT_QPA_PLATFORM=offscreen xpcsviewer snapshot FILE --tab g2 -o g2.png\n"
    "or run under a virtual screen: xvfb-run xpcsviewer FOLDER"
)


def has_display() -> bool:
    """True where Qt can show a window (or a platform plugin was chosen explicitly)."""
    if os.environ.get("QT_QPA_PLATFORM"):
        return True
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
