"""The missing-xcb-libraries message: parsing ldd, package names, and run_app's exit."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from xpcsviewer.gui import platform_check as pc

LDD = """\
\tlinux-vdso.so.1 (0x00007ffd)
\tlibQt6XcbQpa.so.6 => /x/libQt6XcbQpa.so.6 (0x7f)
\tlibxcb-cursor.so.0 => not found
\tlibxkbcommon-x11.so.0 => not found
\tlibxcb-icccm.so.4 => not found
\tlibxcb-cursor.so.0 => not found
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x7f)
"""


def test_missing_libraries_from_ldd():
    assert pc.missing_libraries(LDD) == ["libxcb-cursor.so.0", "libxkbcommon-x11.so.0",
                                         "libxcb-icccm.so.4"]
    assert pc.missing_libraries("\tlibc.so.6 => /lib/libc.so.6 (0x1)\n") == []


@pytest.mark.parametrize(("so", "pkg"), [
    ("libxcb-cursor.so.0", "libxcb-cursor0"),
    ("libxkbcommon-x11.so.0", "libxkbcommon-x11-0"),
    ("libxcb-render-util.so.0", "libxcb-render-util0"),
    ("libEGL.so.1", "libegl1"),
    ("libdbus-1.so.3", "libdbus-1-3"),
])
def test_debian_package(so, pkg):
    assert pc.debian_package(so) == pkg


def test_run_app_prints_the_fix_and_exits(tmp_path):
    # a fresh process whose ldd says libxcb-cursor is missing, as on a bare desktop
    fake = tmp_path / "ldd"
    fake.write_text("#!/bin/sh\necho '\tlibxcb-cursor.so.0 => not found'\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}",
           "QT_QPA_PLATFORM": "xcb", "DISPLAY": ":0"}
    code = "from xpcsviewer.gui.app import run_app; raise SystemExit(run_app([]))"
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, check=False)
    assert res.returncode == 2, res.stderr
    assert "sudo apt-get install libxcb-cursor0" in res.stderr
    assert "could not load the Qt platform plugin" not in res.stderr
