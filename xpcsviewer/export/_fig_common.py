"""Shared helpers of the publication figures (matplotlib object API on Agg, no pyplot).

Page sizes: :data:`SIZE_PRESETS` (journal single and double column, slide). Inside
:func:`export_style` every :func:`new_figure` is scaled to the preset's width with the
preset's font sizes; without a preset the figures keep their own sizes. Font types
(:data:`FONT_RC`) apply to every export, with or without a preset.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["FONT_RC", "INV_A", "SIZE_PRESETS", "SizePreset", "export_style", "new_figure"]

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
#: Journals reject Type 3 fonts and SVG glyph outlines: embed TrueType, keep SVG text.
FONT_RC = {"pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none"}
_MARKERS = ["o", "s", "^", "v", "D", "<", ">", "p", "h", "*", "P", "X"]


@dataclass(frozen=True)
class SizePreset:
    """A page: width and tallest height (in), base font size (pt), g2 panels per row
    and per page."""

    name: str
    width: float
    max_height: float
    font: float
    g2_cols: int
    g2_per_page: int

    def rc(self) -> dict[str, Any]:
        f = self.font
        return {**_STYLE, "font.size": f, "axes.labelsize": f, "axes.titlesize": f,
                "figure.titlesize": f, "legend.fontsize": f - 1,
                "legend.title_fontsize": f - 1, "xtick.labelsize": f - 1,
                "ytick.labelsize": f - 1, "lines.markersize": 0.4 * f,
                # x tick labels clear of the lowest y tick label at the corner
                "xtick.major.pad": max(3.5, 0.5 * f)}


SIZE_PRESETS: dict[str, SizePreset] = {
    "single": SizePreset("single", 3.4, 6.0, 8.0, 2, 6),
    "double": SizePreset("double", 7.0, 9.0, 9.0, 4, 12),
    "slide": SizePreset("slide", 10.0, 5.6, 14.0, 4, 8),
}
_PRESET: contextvars.ContextVar[SizePreset | None] = contextvars.ContextVar(
    "xpcs_export_preset", default=None)


def preset_of(size: str | SizePreset | None) -> SizePreset | None:
    """The preset named ``size`` (None: none, the figures' own sizes)."""
    if size is None or isinstance(size, SizePreset):
        return size
    try:
        return SIZE_PRESETS[str(size)]
    except KeyError:
        raise ValueError(f"size must be one of {sorted(SIZE_PRESETS)}, got {size!r}") from None


def current_preset() -> SizePreset | None:
    return _PRESET.get()


@contextlib.contextmanager
def export_style(size: str | SizePreset | None = None) -> Iterator[SizePreset | None]:
    """rcParams (fonts, font types) and page size of the figures built inside."""
    import matplotlib

    preset = preset_of(size)
    rc = preset.rc() if preset is not None else _STYLE
    token = _PRESET.set(preset)
    try:
        with matplotlib.rc_context({**rc, **FONT_RC}):
            yield preset
    finally:
        _PRESET.reset(token)


def new_figure(width: float = 6.4, height: float = 4.8) -> Any:
    """A pyplot-free ``Figure`` with an Agg canvas (inches); under a size preset it is
    the preset's width, with the asked aspect ratio up to the preset's tallest page."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    preset = _PRESET.get()
    if preset is not None:
        height = max(height * preset.width / width, 0.6 * preset.width)
        width, height = preset.width, min(height, preset.max_height)
    fig = Figure(figsize=(width, height), layout="constrained")
    if preset is not None:  # a margin: text at the edge stays on the page at any dpi
        fig.get_layout_engine().set(w_pad=5 / 72, h_pad=5 / 72)
    FigureCanvasAgg(fig)
    return fig


def side_by_side(n: int = 2) -> tuple[int, int]:
    """(rows, cols) of ``n`` panels meant to sit side by side: stacked on a page too
    narrow for them (a single journal column)."""
    preset = _PRESET.get()
    return (n, 1) if preset is not None and preset.width < 5.0 else (1, n)


def plain(text: str) -> str:
    """``text`` drawn as written: each unescaped ``$`` escaped (matplotlib reads a pair
    of them as mathtext; a file name's ``a$x{b$`` would stop the drawing)."""
    out, prev = [], ""
    for ch in text:
        out.append("\\$" if ch == "$" and prev != "\\" else ch)
        prev = ch
    return "".join(out)


def legend_below(fig: Any, handles: list, labels: list[str], **kw: Any) -> Any:
    """A frameless figure legend below the axes (it can cover no data point), in as
    many columns as fit the page; under a size preset the page grows by its height."""
    labels = [plain(str(t)) for t in labels]  # measured now, before tidy_figure
    renderer = fig.canvas.get_renderer()
    ncols = min(len(labels), 6)
    while True:
        leg = fig.legend(handles, labels, loc="outside lower center", ncols=ncols,
                         frameon=False, **kw)
        if ncols == 1 or leg.get_window_extent(renderer).width <= 0.97 * fig.bbox.width:
            break
        leg.remove()
        ncols -= 1
    preset = _PRESET.get()
    if preset is not None:  # a taller page for a long legend, not flatter axes
        w, h = fig.get_size_inches()
        extra = leg.get_window_extent(renderer).height / fig.dpi - 0.3
        fig.set_size_inches(w, min(h + max(extra, 0.0), preset.max_height))
    return leg


def place_legend(fig: Any, ax: Any, inside: int = 3, **kw: Any) -> Any:
    """The axes' legend: inside at the emptiest corner for up to ``inside`` entries,
    else below the axes (a long legend would cover the curves or outgrow the axes)."""
    h, t = ax.get_legend_handles_labels()
    if not t:
        return None
    if len(t) <= inside:
        return ax.legend(h, t, loc="best", **kw)
    return legend_below(fig, h, t, **kw)


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
