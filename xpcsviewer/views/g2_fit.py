"""The fitted g2 curve of one shown curve, as the g2 tab and the g2 figure draw it (no Qt).

Both call :func:`g2_fit_line`, so the screen and the exported figure draw the same
curve and band for a row, in the same look for its status.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xpcsviewer.fitting.blocks import G2Block, g2_tau_grid
from xpcsviewer.fitting.fit_table import G2Fits

__all__ = ["FIT_LOOK", "G2FitLine", "g2_fit_line"]

#: How a fit is drawn by its status: (line, weight, grey). line: "solid", "dotted",
#: "dashed" or "dashdot"; weight: 0 (full) to 2 (lightest); grey: drawn in grey,
#: not in the curve's colour. An unknown status is drawn as "failed".
FIT_LOOK: dict[str, tuple[str, int, bool]] = {
    "converged": ("solid", 0, False),
    "unresolved": ("dotted", 0, False),
    "at_bound": ("dotted", 0, False),
    "poor_fit": ("dashed", 1, False),
    "misfit": ("dashed", 1, False),
    "errors_understated": ("dashed", 2, True),
    "no_decay": ("dashed", 2, True),
    "failed": ("dashdot", 2, True),  # e.g. NUTS that failed its gates
}


@dataclass(frozen=True)
class G2FitLine:
    """What is drawn for the fit of one curve.

    Attributes
    ----------
    grid : (G,) delays (s)
    curve : (G,) fitted g2 on ``grid``, shifted
    band : (lo, hi) of (G,) each, shifted, or None (no band asked, none stored,
        all NaN, or a ``no_decay`` fit)
    status, line, weight, grey
        The fit's status and its look (see :data:`FIT_LOOK`).
    """

    grid: np.ndarray
    curve: np.ndarray
    band: tuple[np.ndarray, np.ndarray] | None
    status: str
    line: str
    weight: int
    grey: bool


def g2_fit_line(
    fits: G2Fits | None, block: G2Block, j: int, shift: float = 0.0, band: bool = True
) -> G2FitLine | None:
    """The fit of curve ``j`` of ``block`` to draw, or None.

    Only a fit made from exactly this curve (file, bin, points, model) with a finite
    first parameter is drawn. ``shift`` is added to the curve and band (the view's
    offset); ``band`` asks for the posterior band where the fit has one.
    """
    if fits is None:
        return None
    row = fits.match(block, j)
    if row is None or not np.isfinite(fits.params[fits.param_names[0]][row]):
        return None
    status = str(fits.status[row])
    line, weight, grey = FIT_LOOK.get(status, FIT_LOOK["failed"])
    grid = g2_tau_grid(block.tau)
    curve = fits.curve([row], grid)[0] + shift
    lohi = None
    if band and status not in ("no_decay", "errors_understated"):
        b = fits.band([row], grid)
        if b is not None and np.isfinite(b[0]).any():
            lohi = (b[0, 0] + shift, b[0, 2] + shift)
    return G2FitLine(grid, curve, lohi, status, line, weight, grey)
