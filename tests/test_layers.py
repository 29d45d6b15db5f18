"""Dependencies point one way, floor by floor (docs/decisions.md, ADR-7): a table of
allowed imports, read from the source (lazy imports inside functions count too, and
``import_module`` / ``__import__`` of a named module)."""

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
    {"report"},
    {"export"},
    {"views", "jobs", "synthetic"},
    {"compute", "fitting", "batch"},
    {"io"},
    {"model"},
    {"backends", "progress", "__init__"},
]
_FLOOR = {name: k for k, floor in enumerate(FLOORS) for name in floor}


def _modules() -> dict[str, Path]:
    """Dotted name -> file of every module of the package (a package by its __init__)."""
    mods = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    return mods


def _floor_of(module: str) -> str:
    """The floor-table name of a dotted module: ``xpcsviewer.gui.app`` -> ``gui``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _nodes(node: ast.AST, eager: bool = True):
    """(node, eager) for every node; eager: run when the module is imported (any
    statement outside a function body, under ``try``/``if``/``with`` too; not the body of
    ``if TYPE_CHECKING:``)."""
    yield node, eager
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        later = node.body if isinstance(node.body, list) else [node.body]
        for c in ast.iter_child_nodes(node):  # decorators and defaults run now
            yield from _nodes(c, eager and not any(c is b for b in later))
    elif isinstance(node, ast.If) and _type_checking(node.test):
        yield from _nodes(node.test, eager)
        for c in node.body:
            yield from _nodes(c, False)
        for c in node.orelse:
            yield from _nodes(c, eager)
    else:
        for c in ast.iter_child_nodes(node):
            yield from _nodes(c, eager)


_DYNAMIC = {"import_module", "__import__"}


def _dynamic_target(call: ast.Call) -> str | None:
    """The module an ``import_module(...)``/``__import__(...)`` call names: a string
    literal, or the packages an f-string's constant start names ("xpcsviewer.commands."
    of f"xpcsviewer.commands.{name}"); None for anything else."""
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    if name not in _DYNAMIC or not call.args:
        return None
    a = call.args[0]
    if isinstance(a, ast.Constant) and isinstance(a.value, str):
        return a.value
    if isinstance(a, ast.JoinedStr) and a.values and isinstance(a.values[0], ast.Constant):
        named = str(a.values[0].value).rpartition(".")[0]  # whole dotted parts only
        # f"xpcsviewer.{x}" names no package: "?" has no floor, so it is reported
        return f"{named}.?" if named == "xpcsviewer" else named or None
    return None


def _imports_of(source: str, module: str, known: set[str], is_pkg: bool = False):
    """(target module, line, eager) of every package import in ``source`` of ``module``:
    import statements (relative ones resolved), ``from xpcsviewer import gui`` as the
    module ``xpcsviewer.gui``, and ``import_module``/``__import__`` with a literal
    or f-string name (``xpcsviewer.?`` where an f-string names no package)."""
    here = module if is_pkg else module.rpartition(".")[0]
    for node, eager in _nodes(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.rsplit(".", node.level - 1)[0] if node.level > 1 else here
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                       for a in node.names]
        elif isinstance(node, ast.Call):
            t = _dynamic_target(node)
            if t is None:
                continue
            targets = [t]
        else:
            continue
        for t in targets:
            if t == "xpcsviewer" or t.startswith("xpcsviewer."):
                yield t, node.lineno, eager


def _floor_violations(module: str, source: str, known: set[str], is_pkg: bool = False):
    """(line, own package, imported package) of each import that points up or
    sideways, or whose package cannot be read (an f-string naming none)."""
    src = _floor_of(module)
    for target, line, _ in _imports_of(source, module, known, is_pkg):
        dst = _floor_of(target)
        if dst == src:
            continue
        if dst not in _FLOOR:
            yield line, src, dst
            continue
        same_top = _FLOOR[src] == _FLOOR[dst] == 0
        if _FLOOR[dst] <= _FLOOR[src] and not same_top:
            yield line, src, dst


def test_every_package_has_a_floor():
    packages = {_floor_of(m) for m in _modules()}
    assert packages <= set(_FLOOR), packages - set(_FLOOR)


def test_no_import_points_up_or_sideways():
    mods = _modules()
    known = set(mods)
    wrong = []
    for m, path in sorted(mods.items()):
        rel = path.relative_to(PKG)
        src = path.read_text(encoding="utf-8")
        for line, a, b in _floor_violations(m, src, known, path.name == "__init__.py"):
            wrong.append(f"{rel}:{line}: {a} -> {b}")
    assert wrong == []


def _module_graph(sources: dict[str, str] | None = None) -> dict[str, set[str]]:
    """Module -> the package modules it imports when it is imported (statements that
    run on import, under try/if/with too: a lazy import inside a function does not tie
    modules together). ``sources``: dotted name -> source (default: the package)."""
    if sources is None:
        paths = _modules()
        sources = {m: p.read_text(encoding="utf-8") for m, p in paths.items()}
        pkgs = {m for m, p in paths.items() if p.name == "__init__.py"}
    else:
        pkgs = set()
    known = set(sources)
    graph: dict[str, set[str]] = {m: set() for m in sources}
    for m, src in sources.items():
        for t, _, eager in _imports_of(src, m, known, m in pkgs):
            if not eager:
                continue
            while t not in known and "." in t:
                t = t.rsplit(".", 1)[0]
            if t in known and t != m:
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


# ---------------------------------------------------------------- the checker's holes
_KNOWN = set(_modules())


def _wrong(source: str, module: str = "xpcsviewer.io.fake") -> list[tuple[str, str]]:
    return [(a, b) for _, a, b in _floor_violations(module, source, _KNOWN)]


def test_from_package_import_of_a_module_is_checked():
    # the name imported from the package is a module: its floor counts, not __init__'s
    assert _wrong("from xpcsviewer import gui\n") == [("io", "gui")]
    assert _wrong("from xpcsviewer import export as ex, __version__\n") == [("io", "export")]
    assert _wrong("from xpcsviewer import __version__\n") == []
    # relative imports were skipped as well
    assert _wrong("from .. import gui\n") == [("io", "gui")]
    assert _wrong("from ...gui import app\n", "xpcsviewer.io.sub.fake") == [("io", "gui")]
    assert _wrong("from . import errors\n") == []


def test_import_module_with_a_literal_or_fstring_is_checked():
    src = (
        "import importlib\n"
        "from importlib import import_module\n"
        "def a():\n"
        "    return importlib.import_module('xpcsviewer.gui.app')\n"
        "def b(n):\n"
        "    return import_module(f'xpcsviewer.export.{n}')\n"
        "def c():\n"
        "    return __import__('xpcsviewer.jobs')\n"
        "def d(n):\n"
        "    return import_module(f'xpcsviewer.{n}')\n"  # which package: unreadable
        "def e(n):\n"
        "    return import_module(n)\n"  # not a literal: not readable here
    )
    assert _wrong(src) == [("io", "gui"), ("io", "export"), ("io", "jobs"), ("io", "?")]
    assert _wrong("import importlib\nimportlib.import_module('xpcsviewer.backends')\n") == []


def test_imports_under_try_if_with_tie_modules_together():
    b = "from xpcsviewer.io import a\n"
    for wrapped in (
        "try:\n    import xpcsviewer.io.b\nexcept ImportError:\n    pass\n",
        "import sys\nif sys.platform:\n    import xpcsviewer.io.b\n",
        "import contextlib\nwith contextlib.suppress(ImportError):\n"
        "    from xpcsviewer.io import b\n",
        "import importlib\nB = importlib.import_module('xpcsviewer.io.b')\n",
        "class K:\n    from xpcsviewer.io import b\n",
    ):
        graph = _module_graph({"xpcsviewer.io.a": wrapped, "xpcsviewer.io.b": b})
        assert _cycles(graph) == [["xpcsviewer.io.a", "xpcsviewer.io.b"]], wrapped
    for lazy in (
        "def f():\n    import xpcsviewer.io.b\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import xpcsviewer.io.b\n",
    ):
        assert _cycles(_module_graph({"xpcsviewer.io.a": lazy, "xpcsviewer.io.b": b})) == []
    # a lazy import still counts for the floors
    assert _wrong("def f():\n    import xpcsviewer.gui\n") == [("io", "gui")]


# ----------------------------------------------------------- issue 44's rules
def _tree_of(module: str) -> ast.AST:
    return ast.parse(_modules()[module].read_text(encoding="utf-8"))


def _argparse_uses(tree: ast.AST) -> list[str]:
    """``import argparse``, an ``argparse.`` name, or an ``args.x`` / ``getattr(args, …)``
    read: the command line's value inside a job."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            if any(n.split(".")[0] == "argparse" for n in names):
                found.append(f"line {node.lineno}: imports argparse")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id in ("args", "argparse"):
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("getattr", "vars") and node.args and \
                isinstance(node.args[0], ast.Name) and node.args[0].id == "args":
            found.append(f"line {node.lineno}: {node.func.id}(args, ...)")
    return found


def test_jobs_take_values_not_the_command_line():
    """A job is called alike by the command line, the batch, live and the window: it
    takes typed values (a spec, a job), never the parser's Namespace (ADR-12)."""
    bad = {m: u for m in _modules() if m.startswith("xpcsviewer.jobs")
           for u in [_argparse_uses(_tree_of(m))] if u}
    assert not bad, bad


def test_argparse_finder_finds_a_namespace():
    src = ("import argparse\n"
           "def f(args):\n    return args.mode, getattr(args, 'x', 1)\n")
    assert len(_argparse_uses(ast.parse(src))) == 3


# ------------------------------------------------- export draws what it is handed (ADR-8)
#: What export/ may import of ``xpcsviewer.fitting``, by (module, name), each because it
#: runs no fit: ``g2_blocks`` selects the shown g2 curves of loaded results (the g2 tab
#: draws the same selection), ``drift_text``/``drift_flagged`` read a finished
#: ``StabilityFit``.
EXPORT_MAY_USE = {
    ("xpcsviewer.fitting.blocks", "g2_blocks"),
    ("xpcsviewer.fitting.stability", "drift_flagged"),
    ("xpcsviewer.fitting.stability", "drift_text"),
}
#: Functions of views/ that run an analysis (a fit) rather than prepare a drawing.
EXPORT_MAY_NOT_USE = {("xpcsviewer.views.diffusion", "diffusion_analysis")}


def _runtime_nodes(node: ast.AST):
    """Every node that can run: all of them but the body of ``if TYPE_CHECKING:``
    (function bodies included: a lazy import runs when the function is called)."""
    yield node
    if isinstance(node, ast.If) and _type_checking(node.test):
        yield from _runtime_nodes(node.test)
        for c in node.orelse:
            yield from _runtime_nodes(c)
        return
    for c in ast.iter_child_nodes(node):
        yield from _runtime_nodes(c)


def _runtime_imports(source: str, module: str, known: set[str], is_pkg: bool = False):
    """(module, name or None, line) of every package import that can run: ``from m
    import n`` gives (m, n) unless ``m.n`` is a module ((m.n, None)); ``import m``,
    ``import_module``/``__import__`` give (m, None)."""
    here = module if is_pkg else module.rpartition(".")[0]
    for node in _runtime_nodes(ast.parse(source)):
        if isinstance(node, ast.Import):
            found = [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.rsplit(".", node.level - 1)[0] if node.level > 1 else here
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            found = [(f"{base}.{a.name}", None) if f"{base}.{a.name}" in known
                     else (base, a.name) for a in node.names]
        elif isinstance(node, ast.Call) and _dynamic_target(node) is not None:
            found = [(_dynamic_target(node), None)]
        else:
            continue
        for target, name in found:
            if target == "xpcsviewer" or target.startswith("xpcsviewer."):
                yield target, name, node.lineno


def _export_computes(source: str, module: str, known: set[str], is_pkg: bool = False):
    """(line, what) of each import of ``module`` (of export/) that can run a job or an
    analysis: anything of ``xpcsviewer.jobs`` or ``xpcsviewer.compute``; of
    ``xpcsviewer.fitting`` anything but :data:`EXPORT_MAY_USE` (a whole module, a
    ``*``, a value type too: those go under ``if TYPE_CHECKING:``); the views functions
    of :data:`EXPORT_MAY_NOT_USE`."""
    for target, name, line in _runtime_imports(source, module, known, is_pkg):
        pkg = _floor_of(target)
        shown = f"{target}.{name}" if name else target
        if pkg in ("jobs", "compute"):
            yield line, shown
        elif pkg == "fitting" and (target, name) not in EXPORT_MAY_USE:
            yield line, shown
        elif (target, name) in EXPORT_MAY_NOT_USE:
            yield line, shown


def test_export_draws_what_it_is_handed():
    """ADR-8, issue 44: a figure draws what it is handed. No module of export/ imports,
    at its top, lazily in a function or by ``import_module`` (only ``if TYPE_CHECKING:``
    is exempt), a job (``xpcsviewer.jobs``), array code (``xpcsviewer.compute``), a fit
    (``xpcsviewer.fitting`` but the readers of :data:`EXPORT_MAY_USE`) or a views
    analysis (:data:`EXPORT_MAY_NOT_USE`): the command, the GUI tab or the report
    runs those and hands the figure their outcome."""
    mods = _modules()
    known = set(mods)
    wrong = []
    for m, path in sorted(mods.items()):
        if _floor_of(m) != "export":
            continue
        src = path.read_text(encoding="utf-8")
        for line, what in _export_computes(src, m, known, path.name == "__init__.py"):
            wrong.append(f"{path.relative_to(PKG)}:{line}: {what}")
    assert wrong == []


def test_export_rule_reads_every_kind_of_import():
    def found(src: str) -> list[str]:
        return [w for _, w in _export_computes(src, "xpcsviewer.export.fake", _KNOWN)]

    assert found("def f():\n    from xpcsviewer.jobs.ages import analyse_ages\n") == [
        "xpcsviewer.jobs.ages.analyse_ages"]
    assert found("from xpcsviewer import jobs\n") == ["xpcsviewer.jobs"]
    assert found("import xpcsviewer.compute\n") == ["xpcsviewer.compute"]
    assert found("from ..fitting.stability import fit_partial_snapshots\n") == [
        "xpcsviewer.fitting.stability.fit_partial_snapshots"]
    assert found("from xpcsviewer.fitting.stability import drift_text, StabilityFit\n") == [
        "xpcsviewer.fitting.stability.StabilityFit"]
    assert found("import importlib\nimportlib.import_module('xpcsviewer.jobs.average')\n") == [
        "xpcsviewer.jobs.average"]
    assert found("from xpcsviewer.views.diffusion import diffusion_analysis\n") == [
        "xpcsviewer.views.diffusion.diffusion_analysis"]
    # a type for the hints only never runs; the readers may be used
    assert found("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                 "    from xpcsviewer.jobs.ages import AgesOutcome\n"
                 "    from xpcsviewer.fitting.fit_table import G2Fits\n") == []
    assert found("from xpcsviewer.fitting.blocks import g2_blocks\n"
                 "from xpcsviewer.views.diffusion import DiffusionAnalysis\n") == []


# ---------------------------------------------------------- raw layouts: said once (issue 44)
RAW = PKG / "io" / "raw"
#: the modules that decode a raw word bit by bit (the layout modules holding a word format)
WORD_DECODERS = {"rigaku.py"}


def _docstring_nodes(tree: ast.AST) -> set[int]:
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = n.body[0] if n.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _constants(tree: ast.Module) -> dict[str, object]:
    """Module-level ``NAME = literal`` (or ``NAME: T = literal``) of upper-case names."""
    out = {}
    for n in tree.body:
        target = (n.targets[0] if isinstance(n, ast.Assign) and len(n.targets) == 1
                  else n.target if isinstance(n, ast.AnnAssign) else None)
        if not isinstance(target, ast.Name) or not target.id.lstrip("_").isupper():
            continue
        try:
            out[target.id] = ast.literal_eval(n.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            out[target.id] = None  # computed: its name still counts
    return out


def _said_twice(sources: dict[str, str]) -> list[str]:
    """What the raw-layout modules ``sources`` (file name -> source) say in two places:
    a constant name defined in two modules, a literal value (text, bytes) defined in two,
    a layout path written out (``"PATH"`` or ``"PATH/..."``, not a mention in prose) in a
    module other than the one defining it, and a bit shift (``>>``, decoding a word)
    outside :data:`WORD_DECODERS`."""
    trees = {m: ast.parse(s) for m, s in sources.items()}
    found: list[str] = []
    names: dict[str, str] = {}
    values: dict[object, tuple[str, str]] = {}
    paths: dict[str, str] = {}
    for m, t in trees.items():
        for name, value in _constants(t).items():
            if name in names:
                found.append(f"{name} defined in {names[name]} and {m}")
            names.setdefault(name, m)
            if isinstance(value, (str, bytes)) and len(value) >= 3:
                if value in values:
                    found.append(f"{value!r} is {values[value][0]}.{values[value][1]} and "
                                 f"{m}.{name}")
                values.setdefault(value, (m, name))
                if isinstance(value, str) and "/" in value and " " not in value:
                    paths.setdefault(value, f"{m}.{name}")
    for m, t in trees.items():
        docs = _docstring_nodes(t)
        own = {v for v in _constants(t).values() if isinstance(v, str)}  # told above
        for n in ast.walk(t):
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.RShift) \
                    and m not in WORD_DECODERS:
                found.append(f"{m}:{n.lineno}: a bit shift (word decoding) outside "
                             f"{sorted(WORD_DECODERS)}")
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
                for p, where in paths.items():
                    if p not in own and (n.value == p or n.value.startswith(p + "/")):
                        found.append(f"{m}:{n.lineno}: writes out {p!r} ({where})")
    return found


def test_each_raw_layout_says_its_names_and_decoding_once():
    # issue 44: the Rigaku hit word was decoded in two modules and the ESRF CSR group named
    # in two; a layout's names and decoding are its own module's, and its live reader
    # imports them (tests/io/test_whole_vs_growing.py reads the same bytes with both)
    sources = {p.name: p.read_text(encoding="utf-8") for p in sorted(RAW.glob("*.py"))}
    assert {"dense.py", "rigaku.py", "esrf_csr.py", "id11.py", "timepix.py"} <= set(sources)
    assert _said_twice(sources) == []


def test_said_twice_finds_what_was_said_twice():
    # the duplications issue 44 removed, as they were
    a = ('RAW_DATASET = "/entry/data/data"\nCSR_GROUP = "entry_0000/measurement/data"\n'
         "def frame(w):\n    return w >> 40\n")
    assert _said_twice({"rigaku.py": a}) == []
    found = _said_twice({
        "rigaku.py": a,
        "live_common.py": 'RAW_DATASET = "/entry/data/data"\n',  # the same name and value
        "esrf_csr.py": 'ESRF_GROUP = "entry_0000/measurement/data"\n',  # another name
        "live_rigaku.py": "def f(words):\n    return words >> 40\n",
        "live.py": 'def g(f):\n    return f.get("entry_0000/measurement/data/frame_ptr")\n',
        "source.py": 'TEXT = ("HDF5 (entry_0000/measurement/data/frame_ptr, index)",)\n',
    })
    assert found == [
        "RAW_DATASET defined in rigaku.py and live_common.py",
        "'/entry/data/data' is rigaku.py.RAW_DATASET and live_common.py.RAW_DATASET",
        "'entry_0000/measurement/data' is rigaku.py.CSR_GROUP and esrf_csr.py.ESRF_GROUP",
        "live_rigaku.py:2: a bit shift (word decoding) outside ['rigaku.py']",
        "live.py:2: writes out 'entry_0000/measurement/data' (rigaku.py.CSR_GROUP)",
    ]  # a mention in prose (source.py's layout list) is no second definition


def test_the_io_rooms_do_not_import_each_other():
    # io/raw (raw data) and io/results (result files) both stand on io's shared modules
    # (the HDF5 layer, outputs, errors) and never on each other, lazily neither
    mods = _modules()
    known = set(mods)
    rooms = ("xpcsviewer.io.raw", "xpcsviewer.io.results")
    wrong = []
    for m, path in sorted(mods.items()):
        own = next((r for r in rooms if m == r or m.startswith(r + ".")), None)
        if own is None:
            continue
        src = path.read_text(encoding="utf-8")
        for t, line, _ in _imports_of(src, m, known, path.name == "__init__.py"):
            other = next((r for r in rooms if t == r or t.startswith(r + ".")), own)
            if other != own:
                wrong.append(f"{path.relative_to(PKG)}:{line}: {m} -> {t}")
    assert len({m for m in mods if m.startswith(rooms)}) > 20
    assert wrong == []


def _imported_roots(module: str) -> list[tuple[str, int]]:
    """(imported module, line) of every import of ``module``, lazy ones too."""
    out = []
    for node in ast.walk(_tree_of(module)):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.append((node.module, node.lineno))
    return out


def test_compute_needs_no_file_code():
    """Array code imports neither h5py nor ``io``: the values it makes and takes live in
    ``model`` (ADR-12); the files are read and written above it."""
    bad = [(m, t, line) for m in _modules() if m.startswith("xpcsviewer.compute")
           for t, line in _imported_roots(m)
           if t.split(".")[0] == "h5py" or t == "xpcsviewer.io" or t.startswith("xpcsviewer.io.")]
    assert not bad, bad


def _engine_words(tree: ast.AST) -> list[int]:
    """Lines comparing an ``engine`` (a name or an attribute) with a string literal."""
    def is_engine(n: ast.AST) -> bool:
        return (isinstance(n, ast.Name) and n.id == "engine") or (
            isinstance(n, ast.Attribute) and n.attr == "engine")

    def is_text(n: ast.AST) -> bool:
        if isinstance(n, ast.Constant):
            return isinstance(n.value, str)
        return isinstance(n, ast.Tuple | ast.List | ast.Set) and any(map(is_text, n.elts))

    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Compare)
            and any(is_engine(x) for x in [node.left, *node.comparators])
            and any(is_text(x) for x in [node.left, *node.comparators])]


def test_one_engine_vocabulary():
    """Engines are compared as :class:`~xpcsviewer.compute.spec.Engine` members; only
    ``Engine.parse`` reads the words (old ones are its aliases)."""
    bad = {m: lines for m in _modules()
           if m.startswith(("xpcsviewer.compute", "xpcsviewer.jobs"))
           and m != "xpcsviewer.compute.spec"
           for lines in [_engine_words(_tree_of(m))] if lines}
    assert not bad, bad


def test_rule_finders_find():
    src = "if engine == 'auto' or self.engine in ('numba', 'blas'):\n    pass\n"
    assert set(_engine_words(ast.parse(src))) == {1}
    assert _engine_words(ast.parse("if engine is Engine.AUTO:\n    pass\n")) == []
