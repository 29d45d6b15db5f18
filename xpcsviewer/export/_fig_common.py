"""Shared helpers of the publication figures (matplotlib object API on Agg, no pyplot)."""

from __future__ import annotations

from typing import Any

__all__ = ["INV_A", "new_figure"]

INV_A = "\u00c5\u207b\u00b9"
_STYLE = {
    "font.size": 10,
    "axes.labelsize": 11,
    "axes.titlesize": 10,
    "legend.fontsize": 8,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "lines.linewidth": 1.3,
    "lines.markersize": 4,
    "axes.grid": False,
}
_MARKERS = ["o", "s", "^", "v", "D", "<", ">", "p", "h", "*", "P", "X"]


def new_figure(width: float = 6.4, height: float = 4.8) -> Any:
    """A pyplot-free ``Figure`` with an Agg canvas (inches)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _colors(n: int) -> list:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return [cmap(i % 10) for i in range(max(n, 1))]


def _pick(results: list, file_index: int) -> Any:
    if not results:
        raise ValueError("no result files given")
    if not 0 <= int(file_index) < len(results):
        raise IndexError(f"file_index {file_index} outside 0..{len(results) - 1}")
    return results[int(file_index)]


def _no_data(fig: Any, text: str) -> Any:
    ax = fig.add_subplot(1, 1, 1)
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()
    return fig


