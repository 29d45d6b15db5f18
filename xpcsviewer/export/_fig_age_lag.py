"""The age x lag map in the exported figures of a file without a full two-time map.

``xpcsviewer correlate --mode multitau --twotime-ages`` writes only the multi-tau
two-time map (``/xpcs/twotime/age_lag``). The Two-Time tab draws it where the full map
goes (C(age, lag): x = age, y = lag on a log axis, :mod:`xpcsviewer.views.age_lag_map`);
so do the exported two-time figure (with g2 of the map over all ages) and the ages
figure (with the age windows on it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xpcsviewer.export._fig_common import new_figure, place_legend, side_by_side
from xpcsviewer.views import ages as av
from xpcsviewer.views import display_image
from xpcsviewer.views.age_lag_map import (
    AgeLagImage,
    age_lag_bands,
    map_bins,
    read_age_lag_image,
)

__all__ = ["age_lag_view", "draw_age_lag_map", "fig_age_lag_twotime"]


def age_lag_view(res: Any, bin_index: int, view: Any = None) -> AgeLagImage:
    """The tab's image when it is handed one of this bin, else read from the file."""
    dq = int(map_bins(res)[int(bin_index)])
    if isinstance(view, AgeLagImage) and view.dq == dq:
        return view
    labels = res.qmap.dynamic_labels()
    return read_age_lag_image(str(res.path), dq, labels[dq - 1] if 0 < dq <= len(labels)
                              else "")[0]


def draw_age_lag_map(fig: Any, ax: Any, img: AgeLagImage, cmap: str = "viridis",
                     levels: Any = None, o: Any = None, bands: str = "age",
                     title: str | None = None, short: bool = False, pos: int = 0) -> None:
    """C(age, lag) on ``ax`` (log lag) with a colour bar, and the windows of the ages
    outcome ``o`` as bands (the tab's); ``short``: labels for a single journal column."""

    lo, hi = levels if levels is not None else display_image.auto_levels(img.c)
    mesh = ax.pcolormesh(img.age_edges, img.lag_edges, np.ma.masked_invalid(img.c),
                         cmap=cmap, vmin=lo, vmax=hi, shading="flat", rasterized=True)
    ax.set_yscale("log")
    cb = fig.colorbar(mesh, ax=ax, shrink=0.85)
    cb.set_label("C(age, lag)")
    if o is not None:
        flagged = av.flags(o.cuts, o.fits)[:, pos]
        for band in age_lag_bands(o.cuts.windows.lo, o.cuts.windows.hi, img.t_end,
                                  img.lag_edges[0], img.lag_edges[-1], bands, flagged):
            draw_band(ax, band)
    ax.set_xlim(img.age_edges[0], img.age_edges[-1])
    ax.set_ylim(img.lag_edges[0], img.lag_edges[-1])
    ax.set_xlabel("age (s)" if short else "age (t\u2081 + t\u2082)/2 (s)")
    ax.set_ylabel("lag (s)" if short else "lag t\u2082 \u2212 t\u2081 (s)")
    if short:
        title = f"age \u00d7 lag map, bin {img.dq}"
    ax.set_title(img.title() if title is None else title)


def fig_age_lag_twotime(res: Any, bin_index: int = 0, cmap: str = "viridis",
                        levels: Any = None, view: Any = None, g2: bool = True) -> Any:
    """The two-time figure of a file with only an age x lag map: the map and g2 of the
    map over all ages."""
    img = age_lag_view(res, bin_index, view)
    ok = np.isfinite(img.g2)
    show_g2 = bool(g2 and ok.any())
    rows, cols = side_by_side(2) if show_g2 else (1, 1)
    fig = new_figure(5.5 * cols if show_g2 else 6.0, 4.8 * rows)
    ax = fig.add_subplot(rows, cols, 1)
    draw_age_lag_map(fig, ax, img, cmap, levels, title=f"{res.label}: {img.title()}")
    if show_g2:
        ax2 = fig.add_subplot(rows, cols, 2)
        ax2.plot(img.lags[ok], img.g2[ok], "ko-", lw=1.5, ms=3, label="all ages")
        ax2.set_xscale("log")
        ax2.set_xlabel("\u03c4 (s)")
        ax2.set_ylabel("g\u2082 from the age \u00d7 lag map")
        ax2.set_title("g2 of the age \u00d7 lag map (no full map in the file)")
        place_legend(fig, ax2)
    return fig


def draw_band(ax: Any, band: Any) -> None:
    """One age window's band on a map: filled in its colour, outlined dashed in the flag
    colour where the two ways disagree."""
    from matplotlib.patches import Polygon

    col = av.window_color(band.window)
    ax.add_patch(Polygon(band.polygon, closed=True, facecolor=col, alpha=0.27,
                         edgecolor="none"))
    ax.add_patch(Polygon(band.polygon, closed=True, fill=False,
                         edgecolor=av.FLAG_COLOR if band.flagged else col,
                         lw=1.6 if band.flagged else 0.9, ls="--" if band.flagged else "-"))

