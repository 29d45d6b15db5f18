"""The tau profile's edges and limits, and what of a fit may be quoted.

Apart from :mod:`xpcsviewer.fitting.status` (the rules themselves) so that both stay
short; ``status`` re-exports every name here.
"""

from __future__ import annotations

import numpy as np

from xpcsviewer.fitting.models import LOG_PARAMS

__all__ = ["bounds_hit", "profile_limits", "quotable", "tau_quotable"]

#: The profile at a grid edge within 1 (scaled chi^2) of the minimum: the 1-sigma
#: interval of tau reaches the edge of the grid.
EDGE_DCHI2 = 1.0
#: One-sided 95 % limits from the profile (chi^2 with one degree of freedom).
LIMIT_DCHI2 = 2.706


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


def tau_quotable(status: object, why: object = "", name: str = "tau",
                 limit_name: object = "") -> bool:
    """Relaxation time ``name`` of a curve with this status and reason may be quoted as
    a value: ``converged``; ``at_bound`` on a parameter other than the stretch; or
    ``unresolved`` by a one-sided limit on another time (a double exponential's tau2
    beyond the window leaves a resolved tau1; never ``tau_mean``)."""
    st = getattr(status, "value", str(status))
    if st == "converged":
        return True
    if st == "at_bound":
        return not str(why).startswith("stretch")
    other = str(limit_name or "")
    return st == "unresolved" and name != "tau_mean" and other not in ("", name)


def quotable(name: str, values: np.ndarray, errors: np.ndarray, status: np.ndarray,
             lower: np.ndarray, upper: np.ndarray, limit_name: np.ndarray | None,
             detail: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(values, errors) of parameter ``name`` as they may be quoted: the one rule every
    fit table, record, figure and tab reads.

    A relaxation time (a name in LOG_PARAMS, or ``tau_mean``) is quoted only where the
    status claims it: ``converged``, or ``at_bound`` with another parameter on its
    bound (not a stretch on its bound, whose reason, in ``detail``, starts with
    "stretch": that tau belongs to no determined shape). Everywhere else (failed, no
    decay, errors understated, poor fit, misfit, unresolved with or without a limit) it
    is NaN: the reason and the limit say what is known, except that a one-sided limit
    on one time (``limit_name``) leaves the others of a resolved double quotable.
    Other parameters are the fit's values: ``poor_fit``/``misfit`` numbers are kept
    and marked by their status.
    """
    v = np.array(values, dtype=np.float64, copy=True)
    e = np.array(errors, dtype=np.float64, copy=True)
    if name != "tau_mean" and name not in LOG_PARAMS:
        return v, e
    n_b = len(status)
    why = [""] * n_b if detail is None else list(detail)
    has_limit = np.isfinite(lower) | np.isfinite(upper)
    on = [""] * n_b if limit_name is None else list(limit_name)
    keep = np.array([tau_quotable(status[b], why[b], name, on[b] if has_limit[b] else "")
                     for b in range(n_b)], dtype=bool)
    v[~keep], e[~keep] = np.nan, np.nan
    return v, e


def bounds_hit(x: np.ndarray, lo: np.ndarray, hi: np.ndarray,
               free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(B, P) bool: free parameters on their lower / upper bound (internal coordinates)."""
    eps = 1e-7 * np.maximum(1.0, np.abs(hi - lo))
    on_lo = free[None, :] & (x <= lo + eps)
    on_hi = free[None, :] & (x >= hi - eps)
    return on_lo, on_hi
