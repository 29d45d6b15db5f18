"""Figures of the g2 and Diffusion views."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from xpcsviewer.export._fig_common import (
    _MARKERS,
    INV_A,
    _colors,
    _no_data,
    current_preset,
    legend_below,
    new_figure,
)
from xpcsviewer.fitting.blocks import g2_blocks
from xpcsviewer.views.g2 import g2_panels, g2_points, robust_ylim
from xpcsviewer.views.g2_fit import FIT_LOOK, g2_fit_line

if TYPE_CHECKING:  # the values handed in, read here, made elsewhere (ADR-8)
    from xpcsviewer.fitting.blocks import G2Block
    from xpcsviewer.fitting.fit_table import G2Fits
    from xpcsviewer.views.diffusion import DiffusionAnalysis


# -------------------------------------------------------------------------- g2
def _draw_g2_curve(
    ax,
    block: G2Block,
    j: int,
    color,
    marker: str,
    shift: float,
    errorbars: bool,
    label: str,
) -> None:
    t, y, e = g2_points(block, j)
    if errorbars:
        ax.errorbar(
            t,
            y + shift,
            yerr=e,
            fmt=marker,
            ms=3.5,
            mfc="none",
            color=color,
            elinewidth=0.6,
            capsize=0,
            label=label,
        )
    else:
        ax.plot(t, y + shift, marker, ms=3.5, mfc="none", color=color, label=label)


#: Matplotlib's line style and width of a fit's look (views.g2_fit.FIT_LOOK).
_LINE = {"solid": "-", "dotted": ":", "dashed": "--", "dashdot": "-."}
_WIDTH = (1.0, 0.9, 0.8)


def _draw_g2_fit(
    ax,
    fits: G2Fits | None,
    block: G2Block,
    j: int,
    color,
    shift: float,
    band: bool,
) -> str | None:
    """Draw the fit of curve ``j``; returns its status (None: no fit drawn)."""
    fit = g2_fit_line(fits, block, j, shift, band)  # the g2 tab draws the same
    if fit is None:
        return None
    ax.plot(fit.grid, fit.curve, _LINE[fit.line], color="0.55" if fit.grey else color,
            lw=_WIDTH[fit.weight])
    if fit.band is not None:
        ax.fill_between(fit.grid, fit.band[0], fit.band[1], color=color, alpha=0.25, lw=0)
    return fit.status


def fit_key(statuses: set[str]) -> tuple[list, list[str]]:
    """Legend handles and labels of the fit line styles drawn: one entry per look
    (statuses sharing a look share the entry), in FIT_LOOK's order."""
    from matplotlib.lines import Line2D

    looks: dict[tuple, list[str]] = {}
    known = [s for s in FIT_LOOK if s in statuses]
    if statuses - set(FIT_LOOK):
        known.append("failed")  # drawn as failed (views.g2_fit)
    for s in dict.fromkeys(known):
        looks.setdefault(FIT_LOOK[s], []).append(s.replace("_", " "))
    handles, labels = [], []
    for (line, weight, grey), names in looks.items():
        handles.append(Line2D([], [], ls=_LINE[line], lw=_WIDTH[weight] * 1.3,
                              color="0.55" if grey else "0.15"))
        labels.append("fit: " + " / ".join(names))
    return handles, labels


def _fig_g2(
    results: list,
    layout: str = "qbin",
    qmin: float | None = None,
    qmax: float | None = None,
    tmin: float | None = None,
    tmax: float | None = None,
    max_bins: int | None = None,
    errorbars: bool = True,
    offset: float = 0.0,
    log_x: bool = True,
    ncols: int | None = None,
    fits: G2Fits | None = None,
    band: bool = True,
    legend: bool = True,
    ylim: tuple[float, float] | None = None,
    max_panels: int = 36,
    exclude_suspect: bool = True,
    bin_offset: int = 0,
    label_style: str = "",
    page: int = 0,
    per_page: int | None = None,
) -> Any:
    from xpcsviewer.views.labels import short_labels

    if layout not in ("qbin", "file", "combined"):
        raise ValueError(f"layout must be 'qbin', 'file' or 'combined', got {layout!r}")
    blocks = g2_blocks(results, qmin, qmax, tmin, tmax, max_bins,
                               exclude_suspect=exclude_suspect, bin_offset=bin_offset)
    if not blocks:
        return _no_data(
            new_figure(), "no multitau g2 in the selected files and q range"
        )
    colors_f = _colors(len(results))
    try:
        labs = short_labels([r.label for r in results], label_style)
    except ValueError:
        labs = short_labels([r.label for r in results])
    # Panels by q value, never by bin number (the same helper as the g2 tab).
    panels, note = g2_panels(blocks, layout, dict(enumerate(labs)))
    n_all = len(panels)
    # Hundreds of subplots are unreadable (and slow): keep the first ones, say so.
    panels = panels[: max(1, int(max_panels))]
    preset = current_preset()
    if per_page is None:
        per_page = preset.g2_per_page if preset is not None else len(panels)
    per_page = max(1, int(per_page))
    n_pages = -(-len(panels) // per_page)
    if not 0 <= int(page) < n_pages:
        raise IndexError(f"page {page} outside 0..{n_pages - 1}")
    first = int(page) * per_page
    n_shown = len(panels)
    panels = panels[first:first + per_page]
    n = len(panels)
    if ncols is None:
        ncols = preset.g2_cols if preset is not None else 4
    if preset is not None:  # no more columns than the page's width holds
        ncols = min(int(ncols), preset.g2_cols)
    nc = max(1, min(int(ncols), n if n_pages == 1 else int(ncols)))
    nr = int(np.ceil(n / nc))
    if preset is not None:  # panels of the page width; rows as many as this page has
        pw = preset.width / nc
        fig = new_figure(preset.width, nr * (0.72 * pw + 0.25 * preset.font / 9) + 1.0)
    else:
        fig = new_figure(min(3.2 * nc, 16.0), min(2.8 * nr + 0.4, 40.0))
    fig.xpcs_pages = n_pages
    axes = fig.subplots(nr, nc, squeeze=False)
    handles: dict[str, Any] = {}
    statuses: set[str] = set()
    for k, spec in enumerate(panels):
        ax = axes[k // nc][k % nc]
        colors_b = _colors(len(spec.members))
        shifts = []
        for m, ((bi, j), lab) in enumerate(zip(spec.members, spec.labels, strict=True)):
            b = blocks[bi]
            if layout == "qbin":
                color, marker = colors_f[b.file_index % 10], _MARKERS[b.file_index % 12]
                shift = offset * b.file_index
            else:
                color = colors_b[m]
                marker = _MARKERS[(m if layout == "file" else b.file_index) % 12]
                shift = offset * m
            shifts.append(shift)
            _draw_g2_curve(ax, b, j, color, marker, shift, errorbars, lab)
            if b.excluded is not None and b.excluded[:, j].any():
                ex = b.excluded[:, j]  # drawn, but left out of the fit
                ax.plot(b.tau[ex], b.g2[ex, j] + shift, "x", color="0.6", ms=4)
            st = _draw_g2_fit(ax, fits, b, j, color, shift, band)
            if st is not None:
                statuses.add(st)
        ax.set_xscale("log" if log_x else "linear")
        if ylim is not None:
            ax.set_ylim(*ylim)
        else:
            auto = robust_ylim(
                [g2_points(blocks[bi], j)[1] + s
                 for (bi, j), s in zip(spec.members, shifts, strict=True)])
            if auto is not None:
                ax.set_ylim(*auto)
        ax.set_title(spec.title)
        # axis labels on the outer panels only: the inner ones repeat them
        if k + nc >= n:
            ax.set_xlabel("\u03c4 (s)")
        if k % nc == 0:
            ax.set_ylabel("g\u2082(q, \u03c4)")
        if legend:
            h, t = ax.get_legend_handles_labels()
            if (layout == "qbin" and not spec.mixed_q) or preset is not None:
                # one legend below (a page has no room beside each panel)
                handles.update(zip(t, h, strict=True))
            else:
                ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=6,
                          ncols=2 if len(t) > 12 else 1, frameon=False)
    for k in range(n, nr * nc):
        axes[k // nc][k % nc].set_axis_off()
    key_h, key_l = fit_key(statuses) if legend else ([], [])
    head = f"g2 with {fits.method} fits ({fits.model} model)" if fits is not None else ""
    if handles or key_l:
        size = fig.get_size_inches()
        leg = legend_below(fig, list(handles.values()) + key_h, list(handles) + key_l)
        if preset is not None and (leg.get_window_extent(fig.canvas.get_renderer()).height
                                   / fig.dpi > 0.45 * preset.max_height):
            leg.remove()  # it would crowd the panels off the page
            fig.set_size_inches(size)
            head += ("; " if head else "") + f"{len(handles)} curves: no room for a legend"
            if key_l:
                legend_below(fig, key_h, key_l)
    if n_pages > 1:
        head += ("; " if head else "") + (
            f"page {int(page) + 1}/{n_pages} (panels {first + 1}-{first + n} of {n_shown})")
    if n_all > n_shown:
        head += ("; " if head else "") + f"first {n_shown} of {n_all} panels"
    if note:
        head += ("\n" if head else "") + note
    if head:
        fig.suptitle(head, fontsize=9 if preset is None else preset.font)
    return fig


# ------------------------------------------------------------------- diffusion
def _fig_diffusion(
    results: list,
    analysis: DiffusionAnalysis | None = None,
    log_x: bool = True,
    log_y: bool = True,
    offset: float = 0.0,
    show_fit: bool = True,
) -> Any:
    fig = new_figure()
    if analysis is None:
        return _no_data(fig, "no g2 fits: fit the g2 curves first")
    quantity = analysis.quantity
    ax = fig.add_subplot(1, 1, 1)
    colors = _colors(len(results) or len(analysis.laws))
    for n, law in enumerate(analysis.laws):
        p, dr, verdict = law.points, law.power, law.verdict
        factor = 10.0 ** (offset * n)
        color = colors[p.file_index % len(colors)]
        ax.errorbar(
            p.q,
            p.y * factor,
            yerr=p.y_err * factor,
            fmt=_MARKERS[n % 12],
            mfc="none",
            color=color,
            capsize=0,
            elinewidth=0.7,
            label=f"{p.label}"
            + (f" ({p.n_dropped} bins not converged)" if p.n_dropped else ""),
        )
        if show_fit and p.q.size >= 2 and dr is not None:
            sel = p.q[dr.used] if dr.used.any() else p.q
            grid = np.geomspace(sel.min() / 1.1, sel.max() * 1.1, 128)
            yfit = dr.curve(grid) if quantity == "tau" else 1.0 / dr.curve(grid)
            txt = (
                f"b = {dr.exponent:g} (fixed)"
                if dr.exponent_fixed
                else f"b = {dr.exponent:.3f} \u00b1 {dr.exponent_err:.3f}"
            )
            if verdict.diffusive:
                txt += f", D = {verdict.D:.4g} \u00b1 {verdict.D_err:.2g} \u00c5\u00b2/s"
            else:
                txt += f": {verdict.verdict.replace('_', ' ')}"
            ax.plot(grid, yfit * factor, "-", color=color, lw=1.0, label=txt)
    ax.set_xscale("log" if log_x else "linear")
    ax.set_yscale("log" if log_y else "linear")
    # issue 48: which q the points and laws are at (each bin's effective q, or the centre)
    eff = any(lw.points.q_centre is not None for lw in analysis.laws)
    ax.set_xlabel(f"q_eff ({INV_A}): each bin's effective q" if eff else f"q ({INV_A})")
    ax.set_ylabel("\u03c4 (s)" if quantity == "tau" else "\u0393 (s\u207b\u00b9)")
    law = "\u03c4 = A q^b" if quantity == "tau" else "\u0393 = q^-b / A"
    ax.set_title(
        f"Relaxation vs q ({analysis.method} {analysis.model} fits; power law {law})")
    # below the axes: a legend inside covers points of some file
    h, t = ax.get_legend_handles_labels()
    if t:
        legend_below(fig, h, t)
    return fig
