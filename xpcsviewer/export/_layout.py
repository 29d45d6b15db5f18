"""Last pass over a built figure so that no text runs into other text or off the page.

The figure functions place things for a roomy page; on a narrow one (a single journal
column) long titles and axis labels and dense tick labels collide. Each
step measures the drawn text with the Agg renderer and changes only what collides.
"""

from __future__ import annotations

import textwrap
from itertools import combinations
from typing import Any

from xpcsviewer.export._fig_common import plain as _escape

__all__ = ["plain_texts", "tidy_drawn", "tidy_figure"]


def plain_texts(fig: Any) -> None:
    """Every text of the figure as written: titles, labels, legends and annotations come
    from file names and metadata (``a$x{b}$`` in a name would be parsed as mathtext
    and stop the drawing, or change the name); the figures' own texts use none. Tick
    labels keep their formatters' mathtext (``10^{-3}``), fixed tick texts are escaped."""
    from matplotlib.axis import Tick
    from matplotlib.text import Text
    from matplotlib.ticker import FixedFormatter

    ticks = {id(t) for tick in fig.findobj(Tick) for t in (tick.label1, tick.label2)}
    for t in fig.findobj(Text):
        if id(t) not in ticks and "$" in t.get_text():
            t.set_text(_escape(t.get_text()))
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            fmt = axis.get_major_formatter()
            if isinstance(fmt, FixedFormatter):
                fmt.seq = [_escape(str(x)) for x in fmt.seq]


def _wrap(t: Any, room: float, renderer: Any) -> bool:
    """Wrap ``t`` to ``room`` pixels; True when its text changed."""
    text = t.get_text()
    if not text or not t.get_visible() or room <= 0:
        return False
    w = t.get_window_extent(renderer)
    along = w.height if t.get_rotation() % 180 == 90 else w.width
    if along <= room:
        return False
    longest = max(len(s) for s in text.split("\n"))
    chars = max(10, int(longest * room / along * 0.95))
    wrapped = "\n".join(textwrap.fill(s, chars) for s in text.split("\n"))
    t.set_text(wrapped)
    return wrapped != text


def _texts_and_room(fig: Any) -> list[tuple[Any, float]]:
    fig_w = fig.bbox.width
    items = []
    if fig._suptitle is not None:
        items.append((fig._suptitle, 0.96 * fig_w))
    for ax in fig.axes:
        w, h = ax.bbox.width, ax.bbox.height
        for t in (ax.title, ax._left_title, ax._right_title):
            items.append((t, max(w, 0.3 * fig_w)))
        items.append((ax.xaxis.label, max(w, 0.2 * fig_w)))
        items.append((ax.yaxis.label, h))
    return items


def _hit(a: Any, b: Any, tol: float = 0.5) -> bool:
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > tol
            and min(a.y1, b.y1) - max(a.y0, b.y0) > tol)


def _tick_boxes(axis: Any, renderer: Any) -> list:
    out = []
    for tick in axis._update_ticks():
        for lab in (tick.label1, tick.label2):
            if lab.get_visible() and lab.get_text().strip():
                out.append(lab.get_window_extent(renderer))
    return out


def _crowded(axis: Any, renderer: Any) -> bool:
    return any(_hit(a, b) for a, b in combinations(_tick_boxes(axis, renderer), 2))


def _thin_ticks(axis: Any, step: int) -> None:
    """Fewer tick labels on ``axis`` (``step``: how many times thinned before)."""
    from matplotlib.ticker import FixedLocator, LogLocator, MaxNLocator, NullFormatter

    if axis.get_scale() == "log":
        if step == 0:
            axis.set_minor_formatter(NullFormatter())
        else:
            axis.set_major_locator(LogLocator(numticks=max(2, 6 - 2 * step)))
        return
    loc = axis.get_major_locator()
    if isinstance(loc, FixedLocator):  # labelled rows (g2 map): keep every other one
        ticks = list(axis.get_majorticklocs())
        labels = [t.get_text() for t in axis.get_majorticklabels()]
        if len(ticks) > 2:
            axis.set_ticks(ticks[::2], labels=labels[::2] if len(labels) == len(ticks) else None)
        return
    axis.set_major_locator(MaxNLocator(nbins=max(2, 5 - step), steps=[1, 2, 2.5, 5, 10]))


def tidy_figure(fig: Any) -> None:
    """Wrap long titles and axis labels and thin colliding tick labels; the figure is
    laid out again when drawn."""
    plain_texts(fig)  # before the first draw, which would parse them
    fig.draw_without_rendering()  # constrained layout: the axes' real sizes
    _tidy_laid_out(fig, fig.canvas.get_renderer())


def tidy_drawn(fig: Any, dpi: float) -> Any:
    """:func:`tidy_figure` and the raster drawing at ``dpi`` together (a figure made
    with ``tidy=False``): the layout is computed by the drawing itself and the texts are
    measured on it, so a figure where nothing collides (most) is laid out and drawn in
    one pass instead of a layout pass and a drawing; one whose texts changed is drawn
    again, and that drawing is also the layout its ticks are checked on (a wrapped title
    cost a layout pass, a drawing and then another layout pass and drawing before:
    issue 49). Returns the Agg canvas (``buffer_rgba()``: the pixels)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    plain_texts(fig)
    fig.set_dpi(dpi)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    changed = False
    for t, room in _texts_and_room(fig):
        changed |= _wrap(t, room, canvas.get_renderer())
    for step in range(3):
        if changed:  # laid out and drawn anew: the pixels are final unless ticks crowd
            canvas.draw()
            changed = False
        renderer = canvas.get_renderer()
        crowded = [axis for ax in fig.axes if ax.get_visible() and ax.axison
                   for axis in (ax.xaxis, ax.yaxis) if _crowded(axis, renderer)]
        if not crowded:
            return canvas
        for axis in crowded:
            _thin_ticks(axis, step)
        changed = True
    canvas.draw()
    return canvas


def _tidy_laid_out(fig: Any, renderer: Any) -> bool:
    """The wrapping and thinning of :func:`tidy_figure` on a laid-out figure; True when
    something changed (the figure must be drawn again)."""
    changed = False
    for t, room in _texts_and_room(fig):
        changed |= _wrap(t, room, renderer)
    for step in range(3):
        # a layout pass costs most of a figure's time: only after a change
        if changed:
            fig.draw_without_rendering()
        crowded = [axis for ax in fig.axes if ax.get_visible() and ax.axison
                   for axis in (ax.xaxis, ax.yaxis) if _crowded(axis, renderer)]
        if not crowded:
            break
        for axis in crowded:
            _thin_ticks(axis, step)
        changed = True
    return changed
