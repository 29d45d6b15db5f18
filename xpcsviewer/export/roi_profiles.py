"""Figures and tables of wedge/ring ROI profiles (I(q) of q-wedges, I(phi) of phi-rings).

No Qt; matplotlib through the Agg canvas of :func:`xpcsviewer.export.figures.new_figure`
(the figure helpers of :mod:`xpcsviewer.export._fig_common`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["roi_profiles_figure", "roi_profiles_table", "write_roi_figure", "write_roi_table"]


def roi_profiles_table(profiles: Sequence[Any], source: str = ""
                       ) -> tuple[dict[str, np.ndarray], list[str]]:
    """Columns ``x``, ``I`` and ``pixels`` per ROI, plus header lines (units, geometry)."""
    cols: dict[str, np.ndarray] = {}
    header = [f"wedge/ring ROI profiles{' of ' + source if source else ''}",
              "q in 1/Angstrom, phi in degrees, I = mean counts/pixel/frame over the bin"]
    for p in profiles:
        roi = p.roi
        name = roi.name or roi.kind
        xname = "q (1/A)" if roi.kind == "wedge" else "phi (deg)"
        cols[f"{name}: {xname}"] = p.x
        cols[f"{name}: I"] = p.intensity
        cols[f"{name}: pixels"] = p.counts
        header.append(f"{name}: {roi.kind}, r {roi.r_min:.2f}..{roi.r_max:.2f} px, phi "
                      f"{roi.phi_start:.2f}..{roi.phi_start + roi.phi_span:.2f} deg")
    return cols, header


def roi_profiles_figure(profiles: Sequence[Any], title: str = "", log_x: bool = True,
                        log_y: bool = True) -> Any:
    """I(q) of the wedges (left) and I(phi) of the rings (right), as present."""
    from xpcsviewer.export._fig_common import _colors, new_figure

    wedges = [p for p in profiles if p.roi.kind == "wedge"]
    rings = [p for p in profiles if p.roi.kind == "ring"]
    panels = [(w, k) for w, k in ((wedges, "wedge"), (rings, "ring")) if w]
    if not panels:
        raise ValueError("no ROI profiles to draw")
    fig = new_figure(5.0 * len(panels), 4.0)
    colors = _colors(len(profiles))
    for i, (group, kind) in enumerate(panels):
        ax = fig.add_subplot(1, len(panels), i + 1)
        for p in group:
            ok = np.isfinite(p.intensity) & (p.counts > 0)
            if kind == "wedge" and log_y:
                ok &= p.intensity > 0
            ax.plot(p.x[ok], p.intensity[ok], "o-", ms=3,
                    color=colors[list(profiles).index(p)], label=p.roi.label)
        if kind == "wedge":
            ax.set_xlabel("q (\u00c5\u207b\u00b9)")
            if log_x:
                ax.set_xscale("log")
            if log_y:
                ax.set_yscale("log")
        else:
            ax.set_xlabel("\u03c6 (deg)")
        ax.set_ylabel("I (photons/pixel/frame)")
        ax.legend(frameon=False)
    if title:
        fig.suptitle(title)
    return fig


def write_roi_figure(path: str | os.PathLike, profiles: Sequence[Any], title: str = "",
                     progress=None, cancel=None, **options: Any) -> str:
    """Worker job: the figure, saved atomically (PNG/SVG/PDF by suffix)."""
    from xpcsviewer.export.files import save_figure

    if cancel is not None:
        cancel.raise_if_cancelled()
    return str(save_figure(roi_profiles_figure(profiles, title, **options), Path(path)))


def write_roi_table(path: str | os.PathLike, profiles: Sequence[Any], source: str = "",
                    progress=None, cancel=None) -> str:
    """Worker job: the CSV table, written atomically."""
    from xpcsviewer.export.files import write_table_csv

    cols, header = roi_profiles_table(profiles, source)
    return str(write_table_csv(path, cols, header=header))
