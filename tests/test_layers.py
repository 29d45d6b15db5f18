"""Dependencies point one way, floor by floor (docs/decisions.md, ADR-7): a table of
allowed imports, read from the source (lazy imports inside functions count too)."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "xpcsviewer"

#: Floors, top first. A module may import its own package and any package on a lower
#: floor; the packages of one floor do not import each other (except the top floor's
#: command line and its commands).
FLOORS = [
    {"__main__", "_entry", "cli", "commands"},
    {"gui"},
    {"export"},
    {"views", "jobs", "synthetic"},
    {"compute", "fitting", "batch"},
    {"io"},
    {"backends", "progress", "__init__"},
]
_FLOOR = {name: k for k, floor in enumerate(FLOORS) for name in floor}


def _package_of(rel: Path) -> str:
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "xpcsviewer":
                yield (parts[1] if len(parts) > 1 else "__init__"), node.lineno


def test_every_package_has_a_floor():
    packages = {_package_of(p.relative_to(PKG)) for p in PKG.rglob("*.py")}
    assert packages <= set(_FLOOR), packages - set(_FLOOR)


def test_no_import_points_up_or_sideways():
    wrong = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        src = _package_of(rel)
        for dst, line in _imports(path):
            if dst == src:
                continue
            same_top = _FLOOR[src] == _FLOOR[dst] == 0
            if _FLOOR[dst] <= _FLOOR[src] and not same_top:
                wrong.append(f"{rel}:{line}: {src} -> {dst}")
    assert wrong == []
