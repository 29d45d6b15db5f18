"""The series figure: tau and contrast per q-bin against time, index or a field.

Drawn from a :class:`xpcsviewer.jobs.series.SeriesTable` (what the Series tab shows),
with matplotlib's object API on Agg; filled markers are converged fits, open ones the
other statuses, bars the fit errors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xpcsviewer.export._fig_common import _STYLE, _colors, new_figure

__all__ = ["series_figure"]


def series_figure(table: Any, bins: list[int] | None = None, log_x: bool = False) -> Any:
    """Two stacked axes (tau, contrast) sharing the abscissa; ``bins``: q-bin numbers
    (default: four spread over the q range)."""
    import matplotlib

    all_bins = table.bin_numbers()
    if not all_bins:
        raise ValueError("the series has no fitted q-bin")
    if not bins:
        idx = sorted({int(round(x)) for x in np.linspace(0, len(all_bins) - 1,
                                                         min(4, len(all_bins)))})
        bins = [all_bins[i] for i in idx]
    qs = table.bin_q()
    with matplotlib.rc_context(_STYLE):
        fig = new_figure(6.4, 6.0)
        ax_t, ax_c = fig.subplots(2, 1, sharex=True)
        for col, b in zip(_colors(len(bins)), bins, strict=False):
            x, tau, te, st = table.curve(b, "tau_s")
            _, c, ce, _ = table.curve(b, "contrast")
            conv = np.array([s == "converged" for s in st], bool)
            ok = np.isfinite(x) & np.isfinite(tau) & (tau > 0)
            lab = f"q = {qs.get(b, float('nan')):.4g} \u00c5$^{{-1}}$"
            ax_t.errorbar(x[ok], tau[ok], yerr=np.where(np.isfinite(te[ok]), te[ok], 0),
                          color=col, fmt="-", lw=0.8, label=lab)
            ax_t.plot(x[ok & conv], tau[ok & conv], "o", color=col)
            ax_t.plot(x[ok & ~conv], tau[ok & ~conv], "o", mfc="none", color=col)
            okc = np.isfinite(x) & np.isfinite(c)
            ax_c.errorbar(x[okc], c[okc], yerr=np.where(np.isfinite(ce[okc]), ce[okc], 0),
                          color=col, fmt="s-", lw=0.8, ms=3)
        ax_t.set_yscale("log")
        if log_x:
            ax_t.set_xscale("log")
        ax_t.set_ylabel("\u03c4 (s)")
        ax_c.set_ylabel("contrast")
        ax_c.set_xlabel(table.x_label())
        ax_t.legend(loc="best")
        ax_t.set_title(f"{len(table.files)} files; filled: converged, open: other statuses")
    return fig
