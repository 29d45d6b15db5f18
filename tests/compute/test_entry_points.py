"""Every entry point of ``compute`` takes at most 8 parameters (issue 44, ADR-12).

The frames travel as one value (a ``FrameStream`` or an array), the partition as one
(``Partition``, or a ``QMap``), what is computed as the ``CorrelateSpec`` and each
correlator's own knobs as its options value. Read from the source: every public function
and method (``__init__`` included) of the public modules of ``xpcsviewer/compute``, and
every ``correlate*`` function of its private modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

COMPUTE = Path(__file__).resolve().parents[2] / "xpcsviewer" / "compute"
LIMIT = 8


def _count(fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> int:
    a = fn.args
    names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    n = len(names) + (a.vararg is not None) + (a.kwarg is not None)
    return n - 1 if method and names and names[0] in ("self", "cls") else n


def entry_points(root: Path = COMPUTE) -> dict[str, int]:
    """``module.function`` / ``module.Class.method`` -> its number of parameters (self and
    cls not counted; ``*args`` and ``**kw`` one each)."""
    out: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):  # the wings too (compute/multitau/, ...)
        private = path.name.startswith("_") and path.name != "__init__.py"
        stem = ".".join(path.relative_to(root).with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            funcs: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, bool]] = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                funcs.append((node.name, node, False))
            elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                funcs += [(f"{node.name}.{f.name}", f, True) for f in node.body
                          if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                          and (f.name == "__init__" or not f.name.startswith("_"))]
            for qual, fn, method in funcs:
                if private and not fn.name.startswith("correlate"):
                    continue
                if not method and fn.name.startswith("_"):
                    continue
                out[f"{stem}.{qual}"] = _count(fn, method)
    return out


def test_every_entry_point_takes_at_most_eight_parameters():
    over = {name: n for name, n in entry_points().items() if n > LIMIT}
    assert not over, f"more than {LIMIT} parameters: {over}"


def test_the_walk_sees_the_correlators_and_their_shape():
    found = entry_points()
    for name in ("multitau.correlator.correlate_multitau",
                 "twotime.correlator.correlate_twotime", "twotime.correlator.twotime_map",
                 "ages.correlator.correlate_twotime_ages",
                 "ages.correlator.correlate_twotime_ages_events",
                 "multitau.photons.correlate_multitau_events",
                 "twotime.photons.correlate_twotime_events", "twotime.groups.group_maps",
                 "ages.correlator_groups.age_lag_groups", "detector.partition.make_partition",
                 "detector.partition.geometry_partition",
                 "multitau.stream.StreamingMultitau.__init__",
                 "pipeline.correlate_to_result", "detector.pixel_audit.audit_pixels",
                 "multitau._xla.correlate_xla", "twotime._cpu.correlate_cpu"):
        assert name in found, name
    assert "inputs.Partition.pixels" in found  # methods of public classes are counted
    assert not any(k.startswith("multitau._photons_numba.") for k in found)  # kernels: not
