"""The Two-Time tab on a file whose two-time analysis is an age x lag map only (issue 35).

``xpcsviewer correlate --mode multitau --twotime-ages`` writes the multi-tau two-time
map (``/xpcs/twotime/age_lag``) and no full map (10^5 frames would take 80 GB). For
such a file the tab lists the map's bins, draws C(age, lag) of the chosen bin where the
full map goes (x = age, y = lag on a log axis; :mod:`xpcsviewer.views.age_lag_map`),
the age windows on it, g2 of the map over all ages beside it, and the ages view below
from the same map. The map is read and gridded in a worker (the ``"c2"`` job).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF

from xpcsviewer.gui.widgets import curve_pen
from xpcsviewer.views import ages as av
from xpcsviewer.views.age_lag_map import (
    AgeLagImage,
    age_lag_bands,
    age_lag_only,
    has_twotime,
    map_bins,
    map_extent,
    read_age_lag_image,
)

__all__ = ["age_lag_columns", "age_lag_only", "has_twotime", "load_age_lag", "map_bands",
           "map_bins", "map_extent", "set_map_axes", "show_age_lag"]


def load_age_lag(panel: Any, res: Any) -> int | None:
    """Read and grid the chosen bin of the file's age x lag map in a worker."""
    dq = int(map_bins(res)[panel._bin_index])
    panel.status.setText("reading the age \u00d7 lag map\u2026")
    panel.ages.follow()
    label = panel.bin_combo.currentText().split(": ", 1)[-1]
    return panel.submit("c2", read_age_lag_image, str(res.path), dq,
                        "" if label.startswith("bin ") else label,
                        on_result=lambda out: show_age_lag(panel, out),
                        description="Two-Time: reading the age \u00d7 lag map")


def set_map_axes(panel: Any, age_lag: bool) -> None:
    """The map plot's axes for a full map (t2, t1, square) or the age x lag map."""
    p = panel.c2_plot
    p.setLogMode(False, age_lag)
    p.setAspectLocked(not age_lag)
    p.setLabel("bottom", "age (t\u2081 + t\u2082)/2 (s)" if age_lag else "t\u2082 (s)")
    p.setLabel("left", "lag t\u2082 \u2212 t\u2081 (s)" if age_lag else "t\u2081 (s)")
    panel.colorbar.getAxis("left").setLabel("C(age, lag)" if age_lag else "C(t\u2081, t\u2082)")
    panel.g2_plot.setLabel("left", "g\u2082 from the age \u00d7 lag map" if age_lag
                           else "g\u2082 from C\u2082")
    for w in (panel.diag_check, panel.max_size):  # a full map's read settings
        w.setEnabled(not age_lag)


def show_age_lag(panel: Any, out: tuple[AgeLagImage, tuple[float, float]]) -> None:
    """Draw a read age x lag map (GUI thread)."""
    img, levels = out
    if not age_lag_only(panel.current()):
        return
    panel.view = img
    panel._auto_levels = levels
    set_map_axes(panel, True)
    panel.c2_img.setImage(img.c, autoLevels=False)
    y0, y1 = np.log10(img.lag_edges[0]), np.log10(img.lag_edges[-1])
    x0, x1 = float(img.age_edges[0]), float(img.age_edges[-1])
    panel.c2_img.setRect(QRectF(x0, y0, x1 - x0, y1 - y0))
    panel._apply_levels()
    panel.c2_plot.setTitle(img.title())
    panel.c2_plot.autoRange()
    panel.ages.draw_bands()
    draw_g2(panel, img)
    res = panel.current()
    panel.status.setText(
        f"{res.label}: no full two-time map in the file; its age \u00d7 lag map of "
        f"{img.n_frames} frames ({img.n_levels} levels, {img.lags.size} lags) is shown; "
        f"t step {img.frame_time:.4g} s")
    panel.sigMapShown.emit()
    panel.sigUpdated.emit()


def draw_g2(panel: Any, img: AgeLagImage) -> None:
    """g2 of the age x lag map averaged over all ages, in the tab's g2 plot."""
    panel.g2_plot.clear()
    panel.g2_key.setText("\u2501 g2 over all ages")
    ok = np.isfinite(img.g2)
    panel.g2_plot.addItem(pg.PlotDataItem(img.lags[ok], img.g2[ok], pen=curve_pen(6, 3.0),
                                          symbol="o", symbolSize=4, name="all ages"))


def map_bands(panel: Any, o: Any, shown: str) -> list[av.MapBand]:
    """The windows of ages outcome ``o`` in the map plot's coordinates: on the full
    map (t2, t1), or on the age x lag map (age, log10 lag)."""
    flagged = av.flags(o.cuts, o.fits)[:, 0]
    lo, hi = o.cuts.windows.lo, o.cuts.windows.hi
    t_end = (o.n_frames - 1) * o.frame_time
    if not age_lag_only(panel.current()):
        return av.map_bands(lo, hi, t_end, shown, flagged)
    img = panel.view if isinstance(panel.view, AgeLagImage) else None
    lag_lo, lag_hi = ((img.lag_edges[0], img.lag_edges[-1]) if img is not None
                      else (o.frame_time, o.n_frames * o.frame_time))
    out = []
    for b in age_lag_bands(lo, hi, t_end, lag_lo, lag_hi, shown, flagged):
        poly = np.column_stack([b.polygon[:, 0], np.log10(b.polygon[:, 1])])
        out.append(av.MapBand(b.window, b.way, poly, b.mirrored, b.flagged))
    return out


def age_lag_columns(panel: Any) -> tuple[dict[str, np.ndarray], list[str]] | None:
    """The CSV of the g2 plot of an age x lag map: lag and g2 over all ages."""
    img = panel.view
    if not isinstance(img, AgeLagImage) or img.dq != panel.bin_combo.currentData():
        return None
    return ({"tau_s": img.lags, "g2_all_ages": img.g2},
            [f"g2 of the age x lag map over all ages, {panel.current().label}, "
             f"{panel.bin_combo.currentText()}"])
