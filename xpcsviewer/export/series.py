"""The series figure: tau and contrast per q-bin against time, index or a field.

Drawn from a :class:`xpcsviewer.jobs.series.SeriesTable` (what the Series tab shows),
with matplotlib's object API on Agg: converged fits as filled markers with their
errors, the other statuses as open markers without bars (contrast: converged only).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xpcsviewer.export._fig_common import _STYLE, _colors, new_figure

__all__ = ["series_figure"]


def series_figure(table: Any, bins: list[int] | None = None, log_x: bool = False) -> Any:
    """Two stacked axes (tau, contrast) sharing the abscissa; ``bins``: q-bin numbers
    (default: :meth:`~xpcsviewer.jobs.series.SeriesTable.default_bins`)."""
    import matplotlib

    all_bins = table.bin_numbers()
    if not all_bins:
        raise ValueError("the series has no fitted q-bin")
    if not bins:
        bins = table.default_bins()
    qs = table.bin_q()
    with matplotlib.rc_context(_STYLE):
        fig = new_figure(6.4, 6.0)
        ax_t, ax_c = fig.subplots(2, 1, sharex=True)
        for col, b in zip(_colors(len(bins)), bins, strict=False):
            x, tau, te, st = table.curve(b, "tau_s")
            _, c, ce, _ = table.curve(b, "contrast")
            conv = np.array([s == "converged" for s in st], bool)
            ok = np.isfinite(x) & np.isfinite(tau) & (tau > 0)
            good = ok & conv
            lab = f"q = {qs.get(b, float('nan')):.4g} \u00c5$^{{-1}}$"
            ax_t.errorbar(x[good], tau[good],
                          yerr=np.where(np.isfinite(te[good]), te[good], 0),
                          color=col, fmt="o-", lw=0.8, label=lab)
            ax_t.plot(x[ok & ~conv], tau[ok & ~conv], "o", mfc="none", color=col)
            okc = np.isfinite(x) & np.isfinite(c) & conv
            ax_c.errorbar(x[okc], c[okc], yerr=np.where(np.isfinite(ce[okc]), ce[okc], 0),
                          color=col, fmt="s-", lw=0.8, ms=3)
        ax_t.set_yscale("log")
        if log_x:
            ax_t.set_xscale("log")
        ax_t.set_ylabel("\u03c4 (s)")
        ax_c.set_ylabel("contrast")
        ax_c.set_xlabel(table.x_label())
        ax_t.legend(loc="best")
        ax_t.set_title(f"{len(table.files)} files; filled: converged (fit errors), "
                       "open: other statuses")
    return fig
