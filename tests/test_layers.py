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


def _module_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports when it is imported (top-level
    statements only: a lazy import inside a function does not tie modules together)."""
    mods = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        for node in ast.parse(p.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in mods
                           else node.module for a in node.names]
            else:
                continue
            for t in targets:
                if not t.startswith("xpcsviewer"):
                    continue
                while t not in mods:
                    t = t.rsplit(".", 1)[0]
                if t != m:
                    graph[m].add(t)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_import_cycle():
    # Issue 25: export.g2_data <-> export.g2_fits was held together by an import at
    # the bottom of a file; no module may need another that needs it back.
    assert _cycles(_module_graph()) == []
