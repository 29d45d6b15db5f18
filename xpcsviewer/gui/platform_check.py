"""Before Qt starts: is there a screen, and on Linux are the system libraries of the X11
(xcb) plugin there? (No Qt import: the command line asks too.)

Without them Qt prints "could not load the Qt platform plugin "xcb"" and aborts the
process. We ask the dynamic linker (``ldd``) which libraries of the plugin are not
found and print the one command that installs them instead.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["NO_DISPLAY_HINT", "debian_package", "display_problem", "has_display",
           "missing_libraries", "xcb_libraries_missing"]

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

_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found", re.MULTILINE)


def missing_libraries(ldd_output: str) -> list[str]:
    """Library names ``ldd`` reports as "not found", in order, without repeats."""
    return list(dict.fromkeys(_NOT_FOUND.findall(ldd_output)))


def debian_package(soname: str) -> str:
    """Debian/Ubuntu package of a library: libxcb-cursor.so.0 -> libxcb-cursor0."""
    m = re.match(r"^(lib[^/]+?)\.so\.(\d+)", soname)
    if not m:
        return soname
    stem, major = m.group(1).lower(), m.group(2)
    return f"{stem}-{major}" if stem[-1].isdigit() else f"{stem}{major}"


def _uses_xcb() -> bool:
    plat = os.environ.get("QT_QPA_PLATFORM", "")
    if plat:
        return plat.split(":")[0].split(";")[0] == "xcb"
    return sys.platform.startswith("linux") and not os.environ.get("WAYLAND_DISPLAY")


def xcb_libraries_missing() -> list[str]:
    """Libraries the xcb plugin needs that the system lacks ([] if none or not checkable)."""
    if not sys.platform.startswith("linux") or not _uses_xcb() or shutil.which("ldd") is None:
        return []
    try:
        import PySide6
    except ImportError:
        return []
    qt = Path(PySide6.__file__).parent / "Qt"
    targets = [qt / "plugins" / "platforms" / "libqxcb.so",
               *sorted((qt / "lib").glob("libQt6XcbQpa.so*"))[:1]]
    out = []
    for t in targets:
        if not t.exists():
            continue
        try:
            res = subprocess.run(["ldd", str(t)], capture_output=True, text=True, timeout=10,
                                 check=False)
        except (OSError, subprocess.TimeoutExpired):
            return []
        out += missing_libraries(res.stdout)
    return list(dict.fromkeys(out))


def display_problem() -> str | None:
    """One line saying why Qt's xcb plugin cannot load here and how to fix it, or None.

    (No display at all is handled by ``commands._display`` before this.)
    """
    missing = xcb_libraries_missing()
    if missing:
        pkgs = " ".join(debian_package(m) for m in missing)
        return (f"Qt's X11 plugin needs system libraries that are missing ({', '.join(missing)}); "
                f"install them with: sudo apt-get install {pkgs}  "
                "(other distributions: the packages providing these files)")
    return None
