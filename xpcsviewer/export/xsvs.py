"""The XSVS figure (issue 46): P(k) of one q-bin and exposure with the fitted negative
binomial and the Poisson of the same mean, and beta(T) of every q-bin with the fitted
visibility law and the g2 fit's contrast at the left edge.

Drawn from an :class:`~xpcsviewer.model.xsvs.XsvsResult` with the view data of
:mod:`xpcsviewer.views.xsvs`, the same the Raw tab's XSVS view draws. Matplotlib's
object API on Agg.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.export._fig_common import _colors, export_style, new_figure, plain
from xpcsviewer.views.xsvs import beta_view, exposures, pk_view

__all__ = ["PANELS", "xsvs_figure"]

#: The figure's panels: P(k) of one bin and exposure, beta(T) of every bin.
PANELS = ("pk", "beta")
#: beta(T) curves in one legend at most (more: the first ones named, all drawn).
MAX_LEGEND = 12


def _draw_pk(ax: Any, res: Any, b: int, level: int) -> None:
    v = pk_view(res, b, level)
    ax.set_yscale("log")
    ax.set_xlabel("k (photons per pixel per exposure)")
    ax.set_ylabel("P(k)")
    ax.set_title(textwrap.fill(plain(v.title), 40), fontsize="small")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if v.empty:
        ax.text(0.5, 0.5, "no samples", ha="center", va="center", transform=ax.transAxes)
        return
    ax.plot(v.k, v.p, "o", color="C0", label="measured")
    if v.k_cens.size:
        ax.plot(v.k_cens, v.p_cens, "^", mfc="none", color="C3", ms=7,
                label="censored at the cap (P(count \u2265 k))")
    if v.nb_cens is not None:
        ax.plot(v.k_cens, v.nb_cens, "x", color="C1", ms=7, label="fit P(count \u2265 k)")
    if v.k_tail is not None:
        ax.plot([v.k_tail], [v.p_tail], ">", mfc="none", color="C0", label="k > K")
    pos = v.p[v.p > 0]
    floor = float(pos.min()) / 20 if pos.size else 1e-6
    if v.nb is not None:
        ok = v.nb > floor
        ax.plot(v.k_model[ok], v.nb[ok], "-", color="C1", label="negative binomial fit")
    if v.poisson is not None:
        ok = v.poisson > floor
        ax.plot(v.k_model[ok], v.poisson[ok], "--", color="0.45", label="Poisson, same mean")
    ax.legend(loc="upper right", frameon=False, fontsize="small")
    # the fit's line, folded to the panel's width and kept out of the layout (a long
    # line made the layout engine squeeze both panels and cut their titles)
    ax.text(0.02, 0.02, textwrap.fill(plain(v.text), 46), transform=ax.transAxes,
            fontsize="x-small", va="bottom", in_layout=False)


def _draw_beta(ax: Any, res: Any) -> None:
    curves = beta_view(res)
    _, xlabel = exposures(res)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("visibility \u03b2 = 1/M")
    ax.set_title("\u03b2(T) and \u03b2\u2080 V(T; \u03c4) (dashed: \u03c4 a limit)\n"
                 "\u25cf ok, \u25cb poor P(k) fit, \u25c7 g2 contrast", fontsize="small")
    if not curves:
        ax.text(0.5, 0.5, "no q-bin with an ok fit", ha="center", va="center",
                transform=ax.transAxes)
        return
    t_min = min(float(c.t.min()) for c in curves)
    x_g2 = t_min / 2.5  # the g2 contrast: T -> 0, drawn at the left edge
    for i, (col, c) in enumerate(zip(_colors(len(curves)), curves, strict=False)):
        label = c.label if i < MAX_LEGEND else None
        ax.errorbar(c.t, c.beta, yerr=c.err, fmt="o", color=col, ms=4, capsize=2,
                    label=label)
        if c.t_misfit.size:
            ax.plot(c.t_misfit, c.beta_misfit, "o", mfc="none", color=col, ms=4)
        if c.model is not None:
            ax.plot(c.t_model, c.model, "-" if c.model_ok else "--", color=col, lw=1.0)
        if c.contrast is not None:
            ax.errorbar([x_g2], [c.contrast], yerr=[c.contrast_err] if c.contrast_err
                        else None, fmt="D", color=col, mfc="none", ms=5, capsize=2)
    if any(c.contrast is not None for c in curves):
        ax.set_xlim(left=x_g2 / 1.5)
    lo = min(float(np.min(c.beta)) for c in curves)
    ax.set_ylim(bottom=min(0.0, lo))
    ax.legend(loc="upper right", frameon=False, fontsize="x-small",
              ncols=2 if len(curves) > 6 else 1)


def xsvs_figure(res: Any, bin_index: int = 0, level: int = 0,
                panels: tuple[str, ...] = PANELS, size: str | None = None) -> Any:
    """The XSVS figure of ``res``: ``panels`` of :data:`PANELS` side by side (stacked on
    a single journal column); ``bin_index``/``level`` the row and exposure of P(k).

    Raises
    ------
    ValueError
        An unknown panel, or ``bin_index``/``level`` outside the result.
    """
    bad = [p for p in panels if p not in PANELS]
    if bad or not panels:
        raise ValueError(f"panels must be some of {PANELS}, got {panels!r}")
    nb, nl = res.hist.shape[:2]
    if not (0 <= bin_index < nb and 0 <= level < nl):
        raise ValueError(f"bin row {bin_index} / exposure {level} outside "
                         f"0..{nb - 1} / 0..{nl - 1}")
    with export_style(size):
        n = len(panels)
        fig = new_figure(6.4 * n if n > 1 else 6.4, 4.6)
        from xpcsviewer.export._fig_common import side_by_side

        axes = np.atleast_1d(fig.subplots(*side_by_side(n)) if n > 1
                             else fig.add_subplot(1, 1, 1)).ravel()
        for ax, p in zip(axes, panels, strict=True):
            if p == "pk":
                _draw_pk(ax, res, bin_index, level)
            else:
                _draw_beta(ax, res)
        fig.suptitle(plain(f"XSVS of {Path(str(res.source)).name}"), fontsize="medium")
    return fig
