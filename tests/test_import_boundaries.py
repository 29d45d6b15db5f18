"""Engine packages never load Qt; the CLI's light commands never load Qt."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

QT = ("PySide6", "pyqtgraph")


def _loaded_after(code: str) -> set[str]:
    probe = (
        f"{code}\nimport sys, json\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('PySide6','pyqtgraph','jax','numpyro'))))"
    )
    env = {**os.environ, "XPCS_JAX_CACHE_DIR": "off"}
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
    )
    return {m.split(".")[0] for m in json.loads(out.stdout.strip().splitlines()[-1])}


@pytest.mark.parametrize(
    "module",
    [
        "xpcsviewer",
        "xpcsviewer.backends",
        "xpcsviewer.io",
        "xpcsviewer.compute",
        "xpcsviewer.fitting",
        "xpcsviewer.export",
        "xpcsviewer.synthetic",
        "xpcsviewer.batch",
        "xpcsviewer.cli",
    ],
)
def test_engine_imports_load_no_qt(module):
    loaded = _loaded_after(f"import {module}")
    assert not loaded & set(QT), f"{module} loaded {loaded & set(QT)}"


@pytest.mark.parametrize(
    "module", ["xpcsviewer.backends", "xpcsviewer.io", "xpcsviewer.compute", "xpcsviewer.batch"]
)
def test_engine_imports_load_no_jax(module):
    # JAX is loaded on first use of the JAX backend, not on import.
    assert "jax" not in _loaded_after(f"import {module}")


@pytest.mark.parametrize("argv", [["--help"], ["device"], ["device", "--json"]])
def test_cli_light_commands_load_no_qt(argv):
    code = (
        "import sys, contextlib, io\n"
        "from xpcsviewer.cli import main\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        "    try:\n"
        f"        main({argv!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
    )
    loaded = _loaded_after(code)
    assert not loaded & set(QT)


def test_qt_imported_only_under_gui():
    """Source check: no module outside xpcsviewer/gui/ imports Qt, even lazily inside a function."""
    import re
    from pathlib import Path

    pkg = Path(__file__).resolve().parents[1] / "xpcsviewer"
    pat = re.compile(r"^\s*(from|import)\s+(PySide6|pyqtgraph)\b", re.M)
    offenders = [
        str(p.relative_to(pkg))
        for p in pkg.rglob("*.py")
        if "gui" not in p.relative_to(pkg).parts[:1] and pat.search(p.read_text())
    ]
    assert offenders == []
