"""Figure of the two-time view."""

from __future__ import annotations

from typing import Any

import numpy as np

from xpcsviewer.export._fig_common import (
    _no_data,
    _pick,
    new_figure,
    place_legend,
    side_by_side,
)
from xpcsviewer.views import display_image
from xpcsviewer.views.age_lag_map import age_lag_only, map_bins
from xpcsviewer.views.g2 import c2_time_axis, twotime_g2_curves


# --------------------------------------------------------------------- twotime
def _fig_twotime(
    results: list,
    file_index: int = 0,
    bin_index: int = 0,
    max_size: int = 1024,
    correct_diagonal: bool = False,
    cmap: str = "viridis",
    levels: tuple[float, float] | None = None,
    view: Any = None,
    g2: bool = True,
) -> Any:
    res = _pick(results, file_index)
    tt = res.twotime
    if tt is None and age_lag_only(res):  # the age x lag map in place of the full map
        from xpcsviewer.export._fig_age_lag import fig_age_lag_twotime

        n_p = len(map_bins(res))
        if not 0 <= int(bin_index) < n_p:
            raise IndexError(f"bin_index {bin_index} outside 0..{n_p - 1}")
        return fig_age_lag_twotime(res, int(bin_index), cmap, levels, view, g2)
    if tt is None:
        return _no_data(new_figure(), f"{res.label}: no two-time analysis in the file")
    n_p = len(tt.processed_bins)
    if not 0 <= int(bin_index) < n_p:
        raise IndexError(f"bin_index {bin_index} outside 0..{n_p - 1}")
    if view is None or not hasattr(view, "c2"):  # not a full map's view (C2View)
        from xpcsviewer import io as xio

        reader = getattr(xio, "read_c2", None)
        if reader is None:
            raise RuntimeError("xpcsviewer.io.read_c2 is not available")
        view = reader(
            res.path,
            int(bin_index),
            max_size=int(max_size),
            correct_diagonal=bool(correct_diagonal),
        )
    from xpcsviewer.backends import ensure_numpy

    c2 = np.asarray(ensure_numpy(view.c2), dtype=np.float64)
    t = c2_time_axis(c2.shape[0], float(view.t0))
    lo, hi = levels if levels is not None else display_image.auto_levels(c2)
    curves = twotime_g2_curves(tt, int(bin_index)) if g2 else None
    rows, cols = side_by_side(2) if curves else (1, 1)
    fig = new_figure(5.5 * cols if curves else 6.0, 4.8 * rows)
    ax = fig.add_subplot(rows, cols, 1)
    step = float(view.t0)
    extent = (
        (t[0] - step / 2, t[-1] + step / 2, t[-1] + step / 2, t[0] - step / 2)
        if t.size
        else None
    )
    im = ax.imshow(
        c2,
        origin="upper",
        cmap=cmap,
        vmin=lo,
        vmax=hi,
        extent=extent,
        interpolation="nearest",
    )
    ax.invert_yaxis()
    cb = fig.colorbar(im, ax=ax, shrink=0.85)
    cb.set_label("C(t\u2081, t\u2082)")
    ax.set_xlabel("t\u2082 (s)")
    ax.set_ylabel("t\u2081 (s)")
    label = getattr(view, "label", "") or f"bin {tt.processed_bins[int(bin_index)]}"
    ax.set_title(
        f"{res.label}: {label}" + (" (diagonal corrected)" if correct_diagonal else "")
    )
    if curves:
        t_full, g_full, t_seg, g_seg = curves
        ax2 = fig.add_subplot(rows, cols, 2)
        ax2.plot(t_full, g_full, "k-", lw=2.0, label="full")
        from matplotlib import colormaps

        cm = colormaps["plasma"]
        for s in range(g_seg.shape[0]):
            ax2.plot(
                t_seg,
                g_seg[s],
                "-",
                lw=1.0,
                color=cm(s / max(g_seg.shape[0], 1)),
                label=f"segment {s + 1}",
            )
        ax2.set_xscale("log")
        ax2.set_xlabel("\u03c4 (s)")
        ax2.set_ylabel("g\u2082 from C\u2082")
        ax2.set_title("g2 from the two-time map")
        place_legend(fig, ax2)
    return fig
