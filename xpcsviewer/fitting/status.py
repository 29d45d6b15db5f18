"""What a g2 fit may claim: statuses decided from the fit itself, with stated thresholds.

A status depends only on the curve and its fit, never on what else is in the batch.
The first matching rule wins:

1. ``failed``: no valid point, too few points for the free parameters, or a
   non-finite result.
2. ``poor_fit``: chi2_red > :data:`CHI2_RED_MAX` (the scatter is more than 5x the
   stated errors: they cannot weight the fit), or contrast > :data:`CONTRAST_MAX`
   (g2 - 1 of a normalised correlation cannot exceed 1). The numbers are kept.
3. ``no_decay``: the decay does not beat a constant: (chi2_const - chi2) / s <
   :data:`NO_DECAY_DCHI2`, s = max(1, chi2_red) (the misfit scale), or the contrast
   ends at 0. No relaxation time is reported.
4. ``misfit`` (systematic misfit): the residuals of the fitted points, in delay order,
   have too few (or too many) sign runs: Wald-Wolfowitz |z| > :data:`RUNS_Z_MAX`
   (:func:`~xpcsviewer.fitting.adequacy.runs_test`). chi2_red alone cannot tell errors
   stated too small (white excess scatter: the errors are scaled) from a wrong model
   (structure); the runs test can. The reason says where (first delays, early/late
   decay, baseline) and which candidate model fits adequately instead.
5. ``unresolved``: a decay is seen but tau is not pinned down: the profile of chi^2
   over tau stays within :data:`EDGE_DCHI2` (scaled) of its minimum at an edge of the
   tau grid or of its bounds (then a one-sided 95 % limit is reported instead of a
   value, e.g. "tau > 2 s"); with a free baseline the fitted decay has not reached a
   plateau by the last fitted delay (more than :data:`PLATEAU_LEFT_MAX` of it left:
   a lower limit from the profile); tau moves beyond its 2-sigma profile interval when
   the last :data:`WINDOW_DROP` fitted delays are dropped ("tau decided by the last
   delays"); tau is below the first delay; the relative error of tau is >=
   :data:`TAU_REL_ERR_MAX` or its 68 % profile interval reaches beyond a factor
   :data:`TAU_FACTOR_MAX` of it; or the contrast is below :data:`CONTRAST_SIGMAS` sigma.
6. ``at_bound``: another free parameter (baseline, stretch, fraction, contrast at its
   upper bound) ends on a bound.
7. ``converged``: a resolved relaxation time.

Errors are the covariance errors scaled by sqrt(chi2_red) when chi2_red > 1 (never
shrunk when the scatter is smaller than the stated errors); curves without usable
errors are fitted unweighted and their errors scaled by sqrt(chi2_red) either way.
Relaxation times also get a profile-likelihood interval (Delta chi^2 = 1 on the same
scale, asymmetric where the profile is).
"""

from __future__ import annotations

import enum

import numpy as np

__all__ = [
    "CHI2_RED_MAX",
    "CONTRAST_MAX",
    "CONTRAST_SIGMAS",
    "EDGE_DCHI2",
    "LIMIT_DCHI2",
    "NO_DECAY_DCHI2",
    "PLATEAU_LEFT_MAX",
    "RUNS_Z_MAX",
    "TAU_FACTOR_MAX",
    "TAU_REL_ERR_MAX",
    "WINDOW_DROP",
    "FitStatus",
    "profile_limits",
]

CHI2_RED_MAX = 25.0
CONTRAST_MAX = 1.0
NO_DECAY_DCHI2 = 6.0
TAU_REL_ERR_MAX = 0.5
#: ... and the 68 % profile interval must lie within this factor of tau on both sides
#: (a one-sided long profile, which the curvature error hides).
TAU_FACTOR_MAX = 2.0
CONTRAST_SIGMAS = 3.0
#: The profile at a grid edge within 1 (scaled chi^2) of the minimum: the 1-sigma
#: interval of tau reaches the edge of the grid.
EDGE_DCHI2 = 1.0
#: One-sided 95 % limits from the profile (chi^2 with one degree of freedom).
LIMIT_DCHI2 = 2.706
#: Residual runs test: |z| above this is structure (two-sided p = 0.27 % for a
#: correct model with independent errors).
RUNS_Z_MAX = 3.0
#: No plateau: more than this fraction of the fitted decay, (g2(t_last) - baseline) /
#: contrast, is left at the last fitted delay (single exponential: t_last < 1.5 tau).
PLATEAU_LEFT_MAX = 0.05
#: Window stability: tau is refitted without this many last fitted delays.
WINDOW_DROP = 2


class FitStatus(str, enum.Enum):
    """Outcome of one curve's fit (the value is what JSON, CSV and the GUI show)."""

    CONVERGED = "converged"
    NO_DECAY = "no_decay"
    UNRESOLVED = "unresolved"
    POOR_FIT = "poor_fit"
    MISFIT = "misfit"
    AT_BOUND = "at_bound"
    FAILED = "failed"

    @property
    def ok(self) -> bool:
        """True for ``converged``."""
        return self is FitStatus.CONVERGED


def _crossing(log_t: np.ndarray, d: np.ndarray, level: float, from_top: bool) -> float:
    # Walk in from one edge while the profile stays below ``level``; interpolate the
    # crossing in log tau. NaN when it never rises above ``level``.
    idx = range(d.size - 1, -1, -1) if from_top else range(d.size)
    prev = None
    for i in idx:
        if not np.isfinite(d[i]):
            return float("nan")
        if d[i] >= level:
            if prev is None:
                return float("nan")
            f = (level - d[prev]) / (d[i] - d[prev]) if d[i] != d[prev] else 0.0
            return float(np.exp(log_t[prev] + f * (log_t[i] - log_t[prev])))
        prev = i
    return float("nan")


def profile_limits(
    tau_grid: np.ndarray, profile: np.ndarray, chi2_min: np.ndarray, scale: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Edges reached by the tau profile, and the one-sided 95 % limits.

    Parameters
    ----------
    tau_grid, profile : (B, G)
    chi2_min : (B,) the refined optimum (<= the grid minimum)
    scale : (B,) misfit scale s (chi^2 differences are divided by it)

    Returns
    -------
    to_top, to_bottom : (B,) bool
        The profile stays within :data:`EDGE_DCHI2` of the minimum at the top (bottom)
        grid edge.
    lower_limit, upper_limit : (B,) s
        "tau > lower_limit" when ``to_top``; "tau < upper_limit" when ``to_bottom``
        (NaN otherwise).
    """
    n_b, n_g = profile.shape
    with np.errstate(invalid="ignore"):
        d = (profile - chi2_min[:, None]) / scale[:, None]
    to_top = np.zeros(n_b, bool)
    to_bottom = np.zeros(n_b, bool)
    lower = np.full(n_b, np.nan)
    upper = np.full(n_b, np.nan)
    if n_g < 2:
        return to_top, to_bottom, lower, upper
    with np.errstate(invalid="ignore"):
        to_top = np.isfinite(d[:, -1]) & (d[:, -1] < EDGE_DCHI2)
        to_bottom = np.isfinite(d[:, 0]) & (d[:, 0] < EDGE_DCHI2)
    log_t = np.log(tau_grid)
    for b in np.flatnonzero(to_top):
        lower[b] = _crossing(log_t[b], d[b], LIMIT_DCHI2, from_top=True)
    for b in np.flatnonzero(to_bottom):
        upper[b] = _crossing(log_t[b], d[b], LIMIT_DCHI2, from_top=False)
    return to_top, to_bottom, lower, upper
