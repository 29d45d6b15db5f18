"""D(q): the power law and verdict per file, as the Diffusion tab and figure show them (no Qt).

The Diffusion tab's job and the export paths call :func:`diffusion_analysis`; the
figure draws the :class:`DiffusionAnalysis` it is handed and fits nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from xpcsviewer.fitting.fit_table import G2Fits
from xpcsviewer.views.g2 import DiffusionPoints, diffusion_points

__all__ = ["DiffusionAnalysis", "DiffusionLaw", "diffusion_analysis"]


@dataclass(frozen=True)
class DiffusionLaw:
    """One file's points, verdict and drawn power law.

    ``power`` is the verdict's free fit, or the fit at the fixed exponent asked for;
    None when it has no finite prefactor (nothing to draw).
    """

    points: DiffusionPoints
    verdict: Any  # fitting.DiffusionVerdict
    power: Any  # fitting.DiffusionResult or None

    @property
    def file_index(self) -> int:
        return self.points.file_index

    @property
    def label(self) -> str:
        return self.points.label

    @property
    def q_note(self) -> str:
        """Which q the points and the law are at (issue 48), one line."""
        return self.points.q_note


@dataclass(frozen=True)
class DiffusionAnalysis:
    """The D(q) analysis of a set of g2 fits.

    Attributes
    ----------
    method, model : str
        Of the g2 fits the points come from.
    quantity : {"tau", "gamma"}
        What ``points.y`` holds (the power law is fitted to tau either way).
    q_range : (lo, hi) or None
    exponent : float or None
        The fixed exponent of ``power``; None: fitted.
    laws : tuple of DiffusionLaw, one per file with fits
    """

    method: str
    model: str
    quantity: str
    q_range: tuple[float, float] | None
    exponent: float | None
    laws: tuple[DiffusionLaw, ...]


def diffusion_analysis(
    fits: G2Fits | None,
    quantity: str = "tau",
    qmin: float | None = None,
    qmax: float | None = None,
    exponent: float | None = None,
) -> DiffusionAnalysis | None:
    """Points, verdict and power law per file of ``fits``; None without fits.

    Parameters
    ----------
    fits : G2Fits or None
    quantity : {"tau", "gamma"}
    qmin, qmax : float, optional
        The q range of the power laws (an open end without a value).
    exponent : float, optional
        Draw the power law at this fixed exponent (e.g. -2); None fits it. The
        verdict always fits it.
    """
    from xpcsviewer.fitting import diffusion_verdict, fit_diffusion

    if fits is None or fits.n_curves == 0:
        return None
    q_range = (
        None
        if qmin is None and qmax is None
        else (qmin if qmin is not None else 0.0, qmax if qmax is not None else math.inf)
    )
    laws = []
    for pts in diffusion_points(fits, quantity):
        pts = _at_effective_q(fits, pts, quantity)
        # The power law is always fitted to tau (s), whatever is shown.
        tau = pts.y if quantity == "tau" else 1.0 / pts.y
        tau_err = pts.y_err if quantity == "tau" else pts.y_err * tau**2
        verdict = diffusion_verdict(pts.q, tau, tau_err, q_range)
        power = verdict.free if exponent is None else fit_diffusion(
            pts.q, tau, tau_err, q_range, exponent)
        laws.append(DiffusionLaw(pts, verdict, power if math.isfinite(power.prefactor)
                                 else None))
    return DiffusionAnalysis(fits.method, fits.model, quantity, q_range, exponent,
                             tuple(laws))


def _at_effective_q(fits: G2Fits, pts: DiffusionPoints, quantity: str) -> DiffusionPoints:
    """The points at each bin's effective q (:mod:`xpcsviewer.compute.effective_q`), the
    centre kept in ``q_centre``; at the centre, saying why, when the file cannot give it."""
    import dataclasses

    import numpy as np

    from xpcsviewer.compute.effective_q import DEFINITION, file_q_eff, is_cached
    from xpcsviewer.io.errors import XpcsFileError
    from xpcsviewer.io.results.pixel_q import read_effective_q_inputs

    keys = fits.curve_keys
    if keys is None or pts.rows.size == 0 or not keys[int(pts.rows[0])][0]:
        return dataclasses.replace(pts, q_note="q: the bin centres (the file is not known)")
    tau = pts.y if quantity == "tau" else 1.0 / pts.y
    try:
        # the worker made it a moment before: a figure export on the GUI thread reads
        # nothing again
        inputs = read_effective_q_inputs(keys[int(pts.rows[0])][0], known=is_cached)
        q, eff, note = file_q_eff(inputs,
                                  fits.columns[pts.rows], tau,
                                  fits.t_range)
    except (XpcsFileError, OSError, ValueError, KeyError) as exc:  # the centres, and why
        return dataclasses.replace(pts, q_note=f"q: the bin centres ({exc})")
    if not eff.any():
        return dataclasses.replace(pts, q_note=f"q: the bin centres ({note})")
    q = np.where(eff, q, pts.q)
    text = "q: " + DEFINITION + (f"; {int((~eff).sum())} at the centre ({note})"
                                 if not eff.all() else "")
    return dataclasses.replace(pts, q=q, q_centre=pts.q, q_note=text)
