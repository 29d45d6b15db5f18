"""One number format per log axis of the figures: plain decimals while every label
lies in [1e-4, 1e4), else every label a power of ten (``%g`` wrote "5e-05" beside
"0.0001" on one axis); the window's axes follow the same rule (``SparseLogAxis``)."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["PLAIN_RANGE", "label_values", "one_format"]

#: labels are plain decimals while all of them lie in [lo, hi)
PLAIN_RANGE = (1e-4, 1e4)


def _sci(v: float) -> str:
    e = math.floor(math.log10(abs(v)) + 1e-9)
    m = v / 10.0 ** e
    head = "" if abs(m - 1) < 1e-9 else f"{m:.3g}\\times"
    return f"${head}10^{{{e}}}$"


def label_values(values: list[float]) -> list[str]:
    """The labels of ``values``, in one format for all of them."""
    lo, hi = PLAIN_RANGE
    vals = [float(v) for v in values]
    finite = [v for v in vals if math.isfinite(v) and v != 0]
    plain = all(lo * (1 - 1e-9) <= abs(v) < hi for v in finite)
    return [("" if not math.isfinite(v) else "0" if v == 0
             else f"{v:.6g}" if plain else _sci(v)) for v in vals]


def one_format(axis: Any) -> None:
    """Label ``axis`` (a matplotlib Axis) in one format: its major ticks by
    :func:`label_values`, its minor ones unlabelled."""
    from matplotlib.ticker import Formatter, NullFormatter

    class _One(Formatter):
        def __call__(self, x, pos=None):
            return label_values([x])[0]

        def format_ticks(self, values):
            return label_values(list(values))

    axis.set_major_formatter(_One())
    axis.set_minor_formatter(NullFormatter())
