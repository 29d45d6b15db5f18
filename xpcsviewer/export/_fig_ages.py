"""Figure of the two-time tab's ages: the map with the age windows, the cuts read both
ways with their fits, and tau against age with the ageing law (issue 35).

Drawn with :mod:`xpcsviewer.views.ages`, the rule the tab draws with: the same points,
the same marker kinds (filled converged, open unresolved, triangles for 95 % limits,
the rest left out and counted), the same flag where the two ways disagree. The
analysis is handed in (``ages=``, an ``AgesOutcome`` of
:func:`xpcsviewer.jobs.ages_bin.run_ages` or the report's): the figure runs none.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xpcsviewer.export._fig_common import (
    _no_data,
    _pick,
    current_preset,
    legend_below,
    new_figure,
    side_by_side,
)
from xpcsviewer.views import ages as av
from xpcsviewer.views import display_image
from xpcsviewer.views.age_lag_map import age_lag_only, has_twotime, map_bins
from xpcsviewer.views.g2 import c2_time_axis
from xpcsviewer.views.g2_fit import FIT_LOOK

__all__ = ["MPL_MARKERS", "TAU_COLORS", "_fig_ages"]

#: Matplotlib markers of the tau marker kinds (the Series figure's, filled added).
MPL_MARKERS = {"filled": "o", "open": "o", "limit_up": "^", "limit_down": "v"}
#: Colours of the two ways in the tau(t_w) axes (the tab's).
TAU_COLORS = av.TAU_COLORS
_LINESTYLES = {"solid": "-", "dotted": ":", "dashed": "--", "dashdot": "-."}
_LAW_COLOR = "#1f77b4"


def _draw_map(fig: Any, ax: Any, res: Any, bin_index: int, o: Any, bands: str,
              view: Any, max_size: int, correct_diagonal: bool, cmap: str,
              levels: Any, short: bool = False, pos: int = 0) -> None:
    from xpcsviewer.backends import ensure_numpy
    from xpcsviewer.export._fig_age_lag import draw_band

    if age_lag_only(res):  # no full map in the file: its age x lag map instead
        from xpcsviewer.export._fig_age_lag import age_lag_view, draw_age_lag_map

        img = age_lag_view(res, bin_index, view)
        draw_age_lag_map(fig, ax, img, cmap, levels, o, bands, pos=pos,
                         title=f"{res.label}: {img.title()}; bands: "
                         f"{'both' if bands == 'both' else av.WAY_LABELS[bands]}",
                         short=short)
        return
    if view is None or not hasattr(view, "c2"):  # not a full map's view (C2View)
        from xpcsviewer import io as xio

        view = xio.read_c2(res.path, int(bin_index), max_size=int(max_size),
                           correct_diagonal=bool(correct_diagonal))
    c2 = np.asarray(ensure_numpy(view.c2), dtype=np.float64)
    t = c2_time_axis(c2.shape[0], float(view.t0))
    step = float(view.t0)
    lo, hi = levels if levels is not None else display_image.auto_levels(c2)
    extent = (t[0] - step / 2, t[-1] + step / 2, t[0] - step / 2, t[-1] + step / 2)
    im = ax.imshow(c2, origin="lower", cmap=cmap, vmin=lo, vmax=hi, extent=extent,
                   interpolation="nearest")
    cb = fig.colorbar(im, ax=ax, shrink=0.85)
    cb.set_label("C(t\u2081, t\u2082)")
    t_end = (o.n_frames - 1) * o.frame_time
    cuts = o.cuts
    for band in av.map_bands(cuts.windows.lo, cuts.windows.hi, t_end, bands,
                             av.flags(cuts, o.fits)[:, pos]):
        draw_band(ax, band)
    ax.set_xlabel("t\u2082 (s)")
    ax.set_ylabel("t\u2081 (s)")
    if short:
        ax.set_title(getattr(view, "label", ""))
    else:
        ax.set_title(f"{res.label}: {getattr(view, 'label', '')}; bands: "
                     f"{'both' if bands == 'both' else av.WAY_LABELS[bands]}")


def _draw_cuts(ax: Any, way: str, curves: list, legend: bool, short: bool = False) -> list:
    """The cuts of one way; returns the windows' legend handles (``legend``) or []."""
    handles = []
    for c in curves:
        bars = np.isfinite(c.lo) & np.isfinite(c.hi)
        yerr = np.vstack([np.where(bars, c.y - c.lo, 0.0), np.where(bars, c.hi - c.y, 0.0)])
        flag = " \u26a0" if c.flagged else ""
        h = ax.errorbar(c.x, c.y, yerr=yerr, fmt="o", ms=2.0, lw=0.5, color=c.color,
                        label=f"{c.label}{flag}")
        if legend:
            handles.append(h)
        if c.fit is not None:
            grid, curve, status = c.fit
            line, weight, grey = FIT_LOOK.get(status, FIT_LOOK["failed"])
            ax.plot(grid, curve, _LINESTYLES[line], lw=1.6 - 0.4 * weight,
                    color="#808080" if grey else c.color)
    ax.set_xscale("log")
    ax.set_xlabel("lag \u03c4 (s)")
    ax.set_ylabel("g\u2082")
    title = {"age": "constant age", "t1": "constant t\u2081"}[way] if short else av.WAY_LABELS[way]
    if any(c.flagged for c in curves):
        title += "  \u26a0" if short else "  \u26a0 ways disagree"
    ax.set_title(title, color=av.FLAG_COLOR if any(c.flagged for c in curves) else "k")
    return handles


def _draw_tau(ax: Any, o: Any, law: str, short: bool = False, pos: int = 0) -> list:
    """tau against age with the law; returns the legend handles (law, ways, marker
    kinds drawn)."""
    from matplotlib.lines import Line2D

    from xpcsviewer.views.series import not_drawn_text

    line = av.law_line(o.fits, pos, law)
    if line is not None:
        fin = np.isfinite(line.lo) & np.isfinite(line.hi) & (line.hi > 0) & (line.tau > 0)
        lo = np.where(line.lo > 0, line.lo, line.tau * 1e-3)
        if fin.any():
            ax.fill_between(line.t[fin], lo[fin], line.hi[fin], color=_LAW_COLOR,
                            alpha=0.2, lw=0)
        ok = line.tau > 0
        ax.plot(line.t[ok], line.tau[ok], "-", color=_LAW_COLOR, lw=1.3, label="law")
    drawings = []
    handles = []
    for way in av.WAYS:
        d = av.tau_drawing(o.fits, way, pos)
        drawings.append(d)
        col = TAU_COLORS[way]
        f = d.tau["filled"]
        if f.x.size:
            m = f.has_bars
            yerr = np.vstack([np.where(m, f.y - f.lo, 0.0), np.where(m, f.hi - f.y, 0.0)])
            ax.errorbar(f.x, f.y, yerr=yerr, fmt="o", color=col, ms=5, lw=0.8)
        for kind in ("open", "limit_up", "limit_down"):
            p = d.tau[kind]
            if p.x.size:
                ax.plot(p.x, p.y, ls="none", marker=MPL_MARKERS[kind], mfc="none",
                        color=col, ms=5)
        handles.append(Line2D([], [], ls="none", marker="o", color=col,
                              label="constant age" if way == "age" else "constant t\u2081"))
    ax.set_yscale("log")
    lim = av.tau_ylim(drawings, line)
    if lim is not None:
        ax.set_ylim(*lim)
        if lim[1] / lim[0] < 10:  # within a decade a log axis has no labelled tick
            from matplotlib.ticker import LogLocator

            from xpcsviewer.export._ticks import one_format

            ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
            one_format(ax.yaxis)  # "5e-05" beside "0.0001" no more
    ax.set_xlabel("age t_w (s)")
    ax.set_ylabel("\u03c4 (s)")
    key = [Line2D([], [], ls="none", marker=MPL_MARKERS[k], mfc=None if k == "filled"
                  else "none", color="k", label=t)
           for k, t in (("filled", "converged"), ("open", "unresolved (law: \u2265) / at bound"),
                        ("limit_up", "95 % lower limit"), ("limit_down", "95 % upper limit"))
           if any(d.tau[k].x.size for d in drawings)]
    h, _ = ax.get_legend_handles_labels()
    if line is None:
        text = "law: too few \u03c4 (3 drawn, 2 resolved)"
    else:
        text = line.short if short else line.text
    src = getattr(o.fits, "tau_err_source", "fit")
    # the bars are not the fits' when the file has pixel groups (docs/ages.md section 4)
    errs = ("" if src == "fit" else f"\nerrors: {src.replace('pixel ', '')}" if short
            else f"; errors: {src}")
    ax.set_title(f"{text}\n{not_drawn_text(drawings)}{errs}", fontsize="small")
    return h + handles + key


def _draw_param(ax: Any, o: Any, name: str, pos: int = 0) -> list:
    """Contrast or stretching exponent of the converged cuts against age (the tab's)."""
    from matplotlib.lines import Line2D

    for way in av.WAYS:
        p = av.param_points(o.fits, way, pos, name)
        if p.x.size:
            m = p.has_bars
            yerr = np.vstack([np.where(m, p.y - p.lo, 0.0), np.where(m, p.hi - p.y, 0.0)])
            ax.errorbar(p.x, p.y, yerr=yerr, fmt="o", color=TAU_COLORS[way], ms=5, lw=0.8)
    ax.set_xlabel("age t_w (s)")
    ax.set_ylabel(av.QUANTITIES[name])
    ax.set_title(f"{av.QUANTITIES[name]} of the converged cuts", fontsize="small")
    return [Line2D([], [], ls="none", marker="o", color=TAU_COLORS[w],
                   label=av.WAY_LABELS[w]) for w in av.WAYS]


def _fig_ages(
    results: list,
    file_index: int = 0,
    bin_index: int = 0,
    ages: Any = None,
    bands: str = "age",
    law: str = "linear",
    quantity: str = "tau",
    max_size: int = 1024,
    correct_diagonal: bool = False,
    cmap: str = "viridis",
    levels: tuple[float, float] | None = None,
    view: Any = None,
) -> Any:
    res = _pick(results, file_index)
    if not has_twotime(res):
        return _no_data(new_figure(), f"{res.label}: no two-time analysis in the file")
    n_p = len(map_bins(res))
    if not 0 <= int(bin_index) < n_p:
        raise IndexError(f"bin_index {bin_index} outside 0..{n_p - 1}")
    if bands not in av.BAND_CHOICES:
        raise ValueError(f"bands must be one of {av.BAND_CHOICES}, got {bands!r}")
    if ages is None:
        raise ValueError("no ages analysis given: pass ages= (an AgesOutcome of "
                         "xpcsviewer.jobs.ages_bin.run_ages)")
    o = ages
    # ``ages`` may hold several bins (the report's, of every bin): this bin's position
    dq = int(map_bins(res)[int(bin_index)])
    held = np.asarray(o.cuts.bins).tolist()
    pos = held.index(dq) if dq in held else 0
    # a single journal column keeps the 2 x 2 grid (one panel a row leaves the map a
    # stamp on a 6 in page), with short titles
    narrow = side_by_side(2) == (2, 1)
    preset = current_preset()
    # a slide is wide and short: the four panels in one row
    row = preset is not None and preset.max_height < 0.7 * preset.width
    if row:
        fig = new_figure(10.0, 4.2)
        axs = fig.subplots(1, 4).ravel()
    else:
        fig = new_figure(3.4, 5.6) if narrow else new_figure(10.0, 8.0)
        axs = fig.subplots(2, 2).ravel()
    _draw_map(fig, axs[0], res, bin_index, o, bands, view, max_size, correct_diagonal,
              cmap, levels, short=narrow or row, pos=pos)
    if quantity == "tau":
        handles = _draw_tau(axs[1], o, law, short=narrow or row, pos=pos)
    elif quantity in av.QUANTITIES:
        handles = _draw_param(axs[1], o, quantity, pos)
    else:
        raise ValueError(f"quantity must be one of {tuple(av.QUANTITIES)}, got {quantity!r}")
    for k, way in enumerate(av.WAYS):
        handles += _draw_cuts(axs[2 + k], way, av.cut_curves(o.cuts, way, pos, o.fits),
                              legend=k == 0, short=narrow or row)
    axs[3].sharey(axs[2])
    from matplotlib.ticker import MaxNLocator

    for ax in axs[:2]:  # times in s: few labels, they are long ("0.025")
        ax.xaxis.set_major_locator(MaxNLocator(nbins=3 if (narrow or row) else 5))
    if not age_lag_only(res):  # the age x lag map's lag axis is a log axis
        axs[0].yaxis.set_major_locator(MaxNLocator(nbins=3 if (narrow or row) else 5))
    # one key below the axes (inside any of them it would cover points)
    legend_below(fig, handles, [h.get_label() for h in handles], fontsize="small")
    fig.suptitle(f"g\u2082 by age of {res.label} from the {o.source}: "
                 f"{av.disagree_text(o.cuts, pos, o.fits)}")
    return fig
