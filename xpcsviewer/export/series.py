"""The series figure: tau and contrast per q-bin against time, index or a field.

Drawn from a :class:`xpcsviewer.jobs.series.SeriesTable` with the Series tab's rule,
:func:`xpcsviewer.views.series.series_drawing` (issue 33): converged fits filled with
their errors, unresolved/at-bound open, 95 % limits as ▲/▼, the other statuses left
out and counted in the title. A line joins one group of files only (one sample, one
q-partition: :mod:`xpcsviewer.views.series_groups`); where there are several, each line
names its group and a note under the axes says what was not joined and why.
Matplotlib's object API on Agg.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xpcsviewer.export._fig_common import _colors, export_style, new_figure
from xpcsviewer.views.series import not_drawn_text, series_drawing, x_span
from xpcsviewer.views.series_groups import not_joined_text

__all__ = ["MPL_MARKERS", "series_figure"]

#: Matplotlib markers of the open marker kinds (the tab's "o", "t1", "t").
MPL_MARKERS = {"open": "o", "limit_up": "^", "limit_down": "v"}


def _bars(p: Any) -> np.ndarray:
    """(2, n) lower/upper bar lengths; 0 where a point has none."""
    m = p.has_bars
    return np.vstack([np.where(m, p.y - p.lo, 0.0), np.where(m, p.hi - p.y, 0.0)])


def _key_handles(kinds: set[str]) -> list:
    """Black proxies of the marker kinds drawn, for the legend."""
    from matplotlib.lines import Line2D

    text = {"filled": "converged", "open": "unresolved / at bound",
            "limit_up": "95 % lower limit", "limit_down": "95 % upper limit"}
    return [Line2D([], [], ls="none", marker=MPL_MARKERS.get(k, "o"),
                   mfc=None if k == "filled" else "none", color="k", label=text[k])
            for k in text if k in kinds]


def series_figure(table: Any, bins: list[int] | None = None, log_x: bool = False,
                  size: str | None = None) -> Any:
    """Two stacked axes (tau, contrast) sharing the abscissa; ``bins``: q-bin numbers
    (default: :meth:`~xpcsviewer.jobs.series.SeriesTable.default_bins`); ``size``: a
    journal preset (as ``export --size``), None for the figure's own 6.4 in."""
    if not table.bin_numbers():
        raise ValueError("the series has no fitted q-bin")
    bins = list(bins) if bins else table.default_bins()
    drawings = series_drawing(table, bins, log_x=log_x)
    with export_style(size):
        fig = new_figure(6.4, 6.4)
        ax_t, ax_c = fig.subplots(2, 1, sharex=True)
        for col, d in zip(_colors(len(drawings)), drawings, strict=False):
            f = d.tau["filled"]
            ax_t.errorbar(f.x, f.y, yerr=_bars(f), color=col, fmt="o-", lw=0.8,
                          label=f"q = {d.q:.4g} \u00c5$^{{-1}}$"
                          + (f" ({d.group})" if d.group else ""))
            for kind, mk in MPL_MARKERS.items():
                p = d.tau[kind]
                ax_t.plot(p.x, p.y, ls="none", marker=mk, mfc="none", color=col, ms=5)
            c = d.contrast
            ax_c.errorbar(c.x, c.y, yerr=_bars(c), color=col, fmt="s-", lw=0.8, ms=3)
        ax_t.set_yscale("log")
        if log_x:
            ax_t.set_xscale("log")
        span = x_span(table, log_x)
        if span is not None and span[1] > span[0]:
            pad = (np.log10(span[1] / span[0]) if log_x else span[1] - span[0]) * 0.04
            ax_t.set_xlim(*((span[0] / 10**pad, span[1] * 10**pad) if log_x
                            else (span[0] - pad, span[1] + pad)))
        ax_t.set_ylabel("\u03c4 (s)")
        ax_c.set_ylabel("contrast")
        ax_c.set_xlabel(table.x_label())
        kinds = {k for d in drawings for k, p in d.tau.items() if p.x.size}
        handles, _ = ax_t.get_legend_handles_labels()
        ax_t.legend(handles=handles + _key_handles(kinds), loc="best", ncol=2)
        ax_t.set_title(f"{len(table.files)} files; {not_drawn_text(drawings)}")
        ax_c.set_title("contrast of converged fits")
        note = not_joined_text(table)
        if note:  # below the axes (the layout makes room), wrapped to the figure's width
            import textwrap

            from matplotlib.font_manager import FontProperties

            pts = FontProperties(size="small").get_size_in_points()
            width = max(30, int(fig.get_figwidth() * 72 / (0.55 * pts)))
            fig.supxlabel(textwrap.fill(note, width), x=0.01, ha="left", fontsize="small")
    return fig
