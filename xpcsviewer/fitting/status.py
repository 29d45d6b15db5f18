"""What a g2 fit may claim: statuses decided from the fit itself, with stated thresholds.

A status depends only on the curve and its fit, never on what else is in the batch.
The first matching rule wins:

1. ``failed``: no valid point, too few points for the free parameters, or a
   non-finite result.
2. ``poor_fit``: chi2_red > :data:`CHI2_RED_MAX` where the residuals have structure
   (rule 4's tests) or too few points to be tested (the scatter is more than 5x the
   stated errors and not white: they cannot weight the fit), or contrast >
   :data:`CONTRAST_MAX` (g2 - 1 of a normalised correlation cannot exceed 1). The
   numbers are kept. With white residuals a large chi2_red is errors stated too small:
   they are scaled by sqrt(chi2_red) and the curve goes on to the later rules.
3. ``no_decay``: the decay does not beat a constant: (chi2_const - chi2) / s <
   :data:`NO_DECAY_DCHI2`, s = max(1, chi2_red) (the misfit scale), or the contrast
   ends at 0. No relaxation time is reported. Where the scatter is more than
   sqrt(:data:`CHI2_RED_MAX`) = 5x the stated errors (white), the same curve is
   ``errors_understated`` instead: "no decay" would read as physics (arrested, or
   faster than the first delay) where the truth is that the curve carries no usable
   information; the reason gives the factor.
4. ``misfit`` (systematic misfit): the residuals of the fitted points, in delay order,
   have too few (or too many) sign runs: Wald-Wolfowitz |z| > :data:`RUNS_Z_MAX`
   (:func:`~xpcsviewer.fitting.adequacy.runs_test`). chi2_red alone cannot tell errors
   stated too small (white excess scatter: the errors are scaled) from a wrong model
   (structure); the runs test can. The sign-only runs test misses a short run of
   large residuals, so the first delays are also scanned: the sum of the first k
   scaled residuals over sqrt(k) beyond :data:`EARLY_SCAN_MAX` is a misfit too
   (:func:`~xpcsviewer.fitting.adequacy.early_scan`). The reason says where (first
   delays, early/late decay, baseline) and which candidate model fits adequately
   instead.
   A stretched fit with its exponent on a bound is ``at_bound`` here, before any
   rule on tau: its tau belongs to no determined shape, so it gets no value claim
   and no limit (``auto`` does not choose it while another model fits). A stretched
   fit whose tau would get a one-sided limit while its stretch is known to worse
   than :data:`STRETCH_REL_ERR_MAX` is ``unresolved`` with no limit ("stretched tau
   not determined"; ``auto`` adds the single exponential's verdict).
5. ``unresolved``: a decay is seen but tau is not pinned down. A limit is given only
   on a decay that beats a constant by :data:`LIMIT_DCHI2_DECAY` (5 sigma); a weaker
   one is "seen at 3 sigma only: no limit". Then: the profile of chi^2
   over tau stays within :data:`EDGE_DCHI2` (scaled) of its minimum at an edge of the
   tau grid or of its bounds (then a one-sided 95 % limit is reported instead of a
   value, e.g. "tau > 2 s"); with a free baseline the fitted decay has not reached a
   plateau by the last fitted delay (more than :data:`PLATEAU_LEFT_MAX` of it left:
   a lower limit from the profile); tau depends on where the window ends: refitted
   without the last :data:`WINDOW_DROP` fitted delays, it leaves the whole fit's
   2-sigma profile interval, or the whole fit's tau leaves the shorter fit's 2 sigma
   (both ways: a tau that grows with the window has a wide interval of its own) ("tau
   decided by the last delays"); tau is below the first delay; the relative error of
   tau is >= :data:`TAU_REL_ERR_MAX` or its 68 % profile interval reaches beyond a
   factor :data:`TAU_FACTOR_MAX` of it; or the decay is weak: the contrast below
   :data:`CONTRAST_SIGMAS` sigma (a double exponential's t = 0 contrast is an
   extrapolation, so its decay must beat a constant by CONTRAST_SIGMAS^2 instead).
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
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from xpcsviewer.fitting.adequacy import AICC_MARGIN, MODEL_LABELS
from xpcsviewer.fitting.models import LOG_PARAMS, G2Model
from xpcsviewer.fitting.status_limits import (
    EDGE_DCHI2,
    LIMIT_DCHI2,
    bounds_hit,
    profile_limits,
    quotable,
    tau_quotable,
)

__all__ = [
    "CHI2_RED_MAX",
    "CONTRAST_MAX",
    "CONTRAST_SIGMAS",
    "EARLY_SCAN_MAX",
    "EDGE_DCHI2",
    "LIMIT_DCHI2",
    "LIMIT_DCHI2_DECAY",
    "NO_DECAY_DCHI2",
    "PLATEAU_LEFT_MAX",
    "RUNS_Z_MAX",
    "STRETCH_REL_ERR_MAX",
    "TAU_FACTOR_MAX",
    "TAU_REL_ERR_MAX",
    "WINDOW_DROP",
    "CurveFacts",
    "FitStatus",
    "Verdict",
    "bounds_hit",
    "curve_status",
    "early_status",
    "error_factor",
    "late_status",
    "misfit_text",
    "preferred_tails",
    "profile_limits",
    "quotable",
    "run_where",
    "structured",
    "tau_quotable",
    "understated_text",
    "wants_preferred",
]

CHI2_RED_MAX = 25.0
CONTRAST_MAX = 1.0
NO_DECAY_DCHI2 = 6.0
TAU_REL_ERR_MAX = 0.5
#: ... and the 68 % profile interval must lie within this factor of tau on both sides
#: (a one-sided long profile, which the curvature error hides).
TAU_FACTOR_MAX = 2.0
CONTRAST_SIGMAS = 3.0
#: Residual runs test: |z| above this is structure (two-sided p = 0.27 % for a
#: correct model with independent errors).
RUNS_Z_MAX = 3.0
#: No plateau: more than this fraction of the fitted decay, (g2(t_last) - baseline) /
#: contrast, is left at the last fitted delay (single exponential: t_last < 1.5 tau).
PLATEAU_LEFT_MAX = 0.05
#: A one-sided limit claims a decay whose end is not seen: it is given only where the
#: decay beats a constant by 5 sigma, (chi2_const - chi2) / s >= 25 (a decay at the
#: noise level, 3 sigma, gets none).
LIMIT_DCHI2_DECAY = 25.0
#: A one-sided limit on a stretched tau needs the stretch known to this relative error
#: (on the real files every stretched fit that would get a limit has 39-350 %).
STRETCH_REL_ERR_MAX = 0.25
#: Window stability: tau is refitted without this many last fitted delays.
WINDOW_DROP = 2
#: Early excess: max over the first half of the fitted delays of |sum of the first k
#: scaled residuals| / sqrt(k) above this is a misfit at the short delays
#: (:func:`~xpcsviewer.fitting.adequacy.early_scan`). On correct-model fits of
#: simulated curves (single, double, stretched; 30-60 delays; 6000 fits) its 99.9 %
#: quantile is 2.4-3.0 and none exceeded 4 (tests/fitting/test_fit_defects.py).
EARLY_SCAN_MAX = 4.0


class FitStatus(str, enum.Enum):  # noqa: UP042 - str() and f-strings of a status are read as-is
    """Outcome of one curve's fit (the value is what JSON, CSV and the GUI show)."""

    CONVERGED = "converged"
    NO_DECAY = "no_decay"
    UNRESOLVED = "unresolved"
    POOR_FIT = "poor_fit"
    ERRORS_UNDERSTATED = "errors_understated"
    MISFIT = "misfit"
    AT_BOUND = "at_bound"
    FAILED = "failed"

    @property
    def ok(self) -> bool:
        """True for ``converged``."""
        return self is FitStatus.CONVERGED


_NAN = float("nan")


@dataclass(frozen=True)
class CurveFacts:
    """What the status rules read of one curve's fit (one model's fit of curve b).

    The fit's own numbers come first: all that :func:`early_status` reads. The checks'
    measures after them keep their defaults until the checks ran (the fitter builds
    the record again with them, ``dataclasses.replace``) for :func:`late_status`.
    Arrays are the curve's rows in the model's parameter order (:attr:`names`).
    """

    n_pts: int  # fitted points
    has_fit: bool  # more points than free parameters
    finite: bool  # finite parameters and cost
    n_free: int
    chi2_red: float
    delta: float  # (chi2_const - chi2) / s: the decay's evidence
    names: tuple[str, ...]
    fixed: np.ndarray  # (P,) bool
    p: np.ndarray  # (P,) natural units
    errors: np.ndarray  # (P,) scaled covariance errors
    on_lo: np.ndarray  # (P,) bool: a free parameter on its lower bound
    on_hi: np.ndarray  # (P,) bool: ... on its upper bound
    to_top: bool = False  # the tau profile within EDGE_DCHI2 at the top grid edge
    to_bottom: bool = False  # ... at the bottom grid edge
    lower_limit: float = _NAN  # "tau > lower_limit" (95 %) when to_top
    upper_limit: float = _NAN  # "tau < upper_limit" (95 %) when to_bottom
    t_min: float = _NAN  # first fitted delay (s)
    stopped: bool = False  # the solver stopped at its iteration limit
    max_iter: int = 0
    window_drop: int = WINDOW_DROP
    # the checks
    runs_z: float = _NAN  # residual runs test (NaN: not tested)
    decay_left: float = _NAN  # fraction of the decay left at the last fitted delay
    t_last: float = _NAN  # last fitted delay (s)
    interval: Mapping[str, np.ndarray] = field(default_factory=dict)  # free tau -> (2,) 68 %
    interval2: Mapping[str, np.ndarray] = field(default_factory=dict)  # ... 2 sigma
    limit: Mapping[str, np.ndarray] = field(default_factory=dict)  # ... one-sided 95 % (lo, hi)
    window: Mapping[str, float] = field(default_factory=dict)  # free tau refitted without
    # the last ``window_drop`` fitted delays
    misfit: str = ""  # misfit_text of the residuals (where structured)
    preferred: str = ""  # the misfit reason's tail (preferred_tails)
    early_scan: float = _NAN  # adequacy.early_scan (NaN: not tested)
    window_err: Mapping[str, float] = field(default_factory=dict)  # error of ``window``

    def col(self, name: str) -> int:
        return self.names.index(name)

    @property
    def contrast(self) -> float:
        return self.p[self.col("contrast")]


@dataclass
class Verdict:
    """A curve's status, why, and the one-sided limit of an ``unresolved`` one."""

    status: FitStatus
    why: str
    limit_name: str = ""
    lower: float = _NAN
    upper: float = _NAN


def structured(runs_z: float, early_scan: float = _NAN) -> bool:
    """The residuals have structure: a runs test beyond :data:`RUNS_Z_MAX`, or the first
    delays together beyond :data:`EARLY_SCAN_MAX` on one side of the fit."""
    runs = not np.isnan(runs_z) and not abs(runs_z) <= RUNS_Z_MAX
    return runs or (not np.isnan(early_scan) and early_scan > EARLY_SCAN_MAX)


def tested(runs_z: float) -> bool:
    """The residuals could be tested for structure (enough points, two signs)."""
    return not np.isnan(runs_z)


def run_where(region: str, n_run: int, t_lo: float, t_hi: float) -> str:
    """Where a misfit is: the region of the decay and the strongest run of one sign."""
    return f"{region} ({n_run} points of one sign at {t_lo:.2g}-{t_hi:.2g} s)"


def misfit_text(runs_z: float, where: str, early_scan: float = _NAN, early_k: int = 0,
                early_t: float = _NAN) -> str:
    """The reason of a systematic misfit (``where``: :func:`run_where` or "the curve");
    the early excess is named where the runs test alone does not see structure."""
    if structured(runs_z):
        return (f"systematic misfit: residual runs z = {runs_z:+.1f} (|z| > {RUNS_Z_MAX:g}): "
                f"misses {where}")
    return (f"systematic misfit: the first {early_k} delays (to {early_t:.2g} s) lie "
            f"{early_scan:.1f} sigma off the fit together (> {EARLY_SCAN_MAX:g}): misses "
            "the first delays")


def preferred_tails(own: np.ndarray,
                    others: list[tuple[G2Model, np.ndarray, np.ndarray]]) -> list[str]:
    """The reason's tail for misfit curves: the best other candidate without structure.

    ``own``: (R,) AICc of the curve's model; ``others``: (model, AICc (R,), runs z (R,)).
    """
    out = []
    for r in range(own.size):
        best = None
        for m, sc, z in others:
            if np.isfinite(sc[r]) and np.isfinite(z[r]) and abs(z[r]) <= RUNS_Z_MAX:
                if best is None or sc[r] < best[1]:
                    best = (m, sc[r])
        if best is None:
            out.append("; no candidate model fits without structure")
            continue
        d = own[r] - best[1]
        label = MODEL_LABELS.get(best[0].value, best[0].value)
        if d > AICC_MARGIN:
            out.append(f"; {label} preferred (AICc lower by {d:.0f})")
        else:
            word = "lower" if d > 0 else "higher"
            out.append(f"; {label} fits without structure (AICc {word} by {abs(d):.0f})")
    return out


def early_status(f: CurveFacts) -> tuple[FitStatus, str] | None:
    """failed, poor_fit, no_decay; None when the curve goes on to the later checks."""
    n_pts = f.n_pts
    if n_pts == 0:
        return FitStatus.FAILED, "no valid points"
    if not f.has_fit:
        return FitStatus.FAILED, f"{n_pts} points for {f.n_free} free parameters"
    if not f.finite:
        return FitStatus.FAILED, "non-finite result"
    chi2_red = f.chi2_red
    # White residuals with a large chi2_red are errors stated too small: the errors are
    # scaled and the decay judged as any other. Only where the residuals have structure
    # or cannot be tested are the numbers too far off to weight a fit.
    if chi2_red > CHI2_RED_MAX and (structured(f.runs_z, f.early_scan)
                                    or not tested(f.runs_z)):
        return FitStatus.POOR_FIT, f"chi2_red {chi2_red:.3g} > {CHI2_RED_MAX:g}"
    ci = f.col("contrast")
    contrast = f.p[ci]
    if contrast > CONTRAST_MAX:
        return FitStatus.POOR_FIT, f"contrast {contrast:.3g} > {CONTRAST_MAX:g}"
    flat = ""
    if not f.fixed[ci] and f.on_lo[ci]:
        flat = "contrast at 0"
    delta = f.delta
    if not flat and np.isfinite(delta) and delta < NO_DECAY_DCHI2:
        flat = (f"a constant fits as well (the decay improves chi2 by {max(delta, 0.0):.2g} "
                f"< {NO_DECAY_DCHI2:g})")
    if not flat:
        return None
    if chi2_red > CHI2_RED_MAX:
        return FitStatus.ERRORS_UNDERSTATED, understated_text(chi2_red, flat)
    return FitStatus.NO_DECAY, flat


def error_factor(chi2_red: float) -> float:
    """How many times the stated errors the scatter about the fit is: sqrt(chi2_red),
    never below 1 (the factor the errors are scaled by)."""
    return float(np.sqrt(max(1.0, chi2_red))) if np.isfinite(chi2_red) else float("nan")


def understated_text(chi2_red: float, flat: str) -> str:
    """The reason of an ``errors_understated`` curve: the factor first."""
    return (f"scatter {error_factor(chi2_red):.3g}x the stated errors (chi2_red {chi2_red:.3g} "
            f"> {CHI2_RED_MAX:g}, white residuals): no usable information; with errors "
            f"that describe it, {flat}")


def wants_preferred(early: tuple[FitStatus, str] | None, runs_z: float,
                    early_scan: float = _NAN) -> bool:
    """The reason names the model that fits instead: structured residuals of a curve
    that went on to the later checks, or of a poor fit by chi2_red."""
    if not structured(runs_z, early_scan):
        return False
    return early is None or (early[0] is FitStatus.POOR_FIT and early[1].startswith("chi2_red"))


def late_status(f: CurveFacts) -> Verdict:
    """misfit, unresolved, at_bound or converged (rules 4-7 above)."""
    names, fixed, p, e = f.names, f.fixed, f.p, f.errors
    on_lo, on_hi = f.on_lo, f.on_hi
    if structured(f.runs_z, f.early_scan):
        return Verdict(FitStatus.MISFIT, f.misfit + f.preferred)
    tau_cols = [k for k, n in enumerate(names) if n in LOG_PARAMS]
    free_tau = [k for k in tau_cols if not fixed[k]]
    tname = names[tau_cols[0]] if tau_cols else "tau"
    U = FitStatus.UNRESOLVED
    # A stretch exponent on its bound: the stretched tau belongs to no determined shape,
    # so neither a value nor a limit on it is given.
    if "stretch" in names and not fixed[f.col("stretch")] and free_tau:
        k = f.col("stretch")
        if on_lo[k] or on_hi[k]:
            return Verdict(FitStatus.AT_BOUND, (
                f"stretch at its {'lower' if on_lo[k] else 'upper'} bound ({p[k]:.2g}): "
                "the stretched tau is not determined"))
    undetermined = _stretch_undetermined(f) if free_tau and _limit_on_the_way(f) else ""
    if undetermined:
        return Verdict(U, undetermined)
    # A decay at the noise level gets no limit: a limit claims the decay exists.
    if free_tau and _limit_on_the_way(f) and f.delta < LIMIT_DCHI2_DECAY:
        return Verdict(U, (
            f"decay seen at {np.sqrt(max(f.delta, 0.0)):.1f} sigma only: no limit on "
            f"{tname} (a limit needs {np.sqrt(LIMIT_DCHI2_DECAY):g} sigma)"))
    if free_tau:
        if f.to_top:
            lim = f.lower_limit
            return Verdict(U, f"{tname} > {lim:.3g} s (95 %)" if np.isfinite(lim)
                           else f"{tname} not bounded above", tname, lower=lim)
        if f.to_bottom:
            lim = f.upper_limit
            return Verdict(U, f"{tname} < {lim:.3g} s (95 %)" if np.isfinite(lim)
                           else f"{tname} not bounded below", tname, upper=lim)
        for k in free_tau:
            n = names[k]
            iv, lim = f.interval[n], f.limit[n]
            if not np.isfinite(iv[1]):
                return Verdict(U, f"{n} > {lim[0]:.3g} s (95 %)" if np.isfinite(lim[0])
                               else f"{n} not bounded above", n, lower=lim[0])
            if not np.isfinite(iv[0]):
                return Verdict(U, f"{n} < {lim[1]:.3g} s (95 %)" if np.isfinite(lim[1])
                               else f"{n} not bounded below", n, upper=lim[1])
        for k in free_tau:
            if on_hi[k]:
                return Verdict(U, f"{names[k]} at the top of its range")
            if on_lo[k]:
                return Verdict(U, f"{names[k]} at the bottom of its range")
        k0 = free_tau[0]
        if p[k0] < f.t_min:
            return Verdict(U, f"{names[k0]} {p[k0]:.3g} s below the first delay")
        left = f.decay_left
        if not fixed[f.col("baseline")] and left > PLATEAU_LEFT_MAX:
            n = names[free_tau[-1]]  # the slowest time: the one the plateau would pin
            lo = f.limit[n][0]
            why = (f"no plateau: {100 * left:.0f} % of the decay left at the last fitted delay "
                   f"({f.t_last:.3g} s)")
            if np.isfinite(lo):
                return Verdict(U, f"{why}; {n} > {lo:.3g} s (95 %)", n, lower=lo)
            return Verdict(U, why)
        for k in free_tau:
            n = names[k]
            tw = f.window[n]
            lo2, hi2 = f.interval2[n]
            # two-sided: the short window's tau outside the whole fit's 2-sigma interval,
            # or the whole fit's tau outside the short window's 2 sigma (a tau that
            # grows with the window has a wide interval of its own)
            outside = (np.isfinite(lo2) and tw < lo2) or (np.isfinite(hi2) and tw > hi2)
            ew = f.window_err.get(n, _NAN)
            back = bool(np.isfinite(ew) and abs(p[k] - tw) > 2.0 * ew)
            if np.isfinite(tw) and (outside or back):
                return Verdict(U, (
                    f"{n} decided by the last delays: {p[k]:.2g} -> {tw:.2g} s without the "
                    f"last {f.window_drop} fitted (beyond the 2-sigma interval of "
                    f"{'the whole fit' if outside else 'the shorter window'})"))
        for k in free_tau:
            rel = e[k] / p[k] if p[k] > 0 else np.inf
            if not (rel < TAU_REL_ERR_MAX):
                return Verdict(U, (
                    f"{names[k]} error {100 * rel:.0f} % >= {100 * TAU_REL_ERR_MAX:.0f} %"
                    if np.isfinite(rel) else f"{names[k]} error undetermined"))
            # the curvature error can hide a long side of an asymmetric profile
            lo, hi = f.interval[names[k]]
            factor = max(hi / p[k], p[k] / lo)
            if not (factor <= TAU_FACTOR_MAX):
                return Verdict(U, (
                    f"{names[k]} {p[k]:.3g} s known only to a factor {factor:.2g} (68 % "
                    f"profile interval {lo:.2g}-{hi:.2g} s)"))
    weak = _weak_decay(f)
    if weak:
        return Verdict(U, weak)
    ci = f.col("contrast")
    for k, n in enumerate(names):
        if fixed[k] or k in tau_cols:
            continue
        if on_hi[k] or (on_lo[k] and k != ci):
            return Verdict(FitStatus.AT_BOUND,
                           f"{n} at its {'upper' if on_hi[k] else 'lower'} bound")
    return Verdict(FitStatus.CONVERGED, "")


def _limit_on_the_way(f: CurveFacts) -> bool:
    # the rules below that would give a one-sided limit (profile at a grid edge, an
    # open 68 % interval, no plateau with a free baseline)
    if f.to_top or f.to_bottom:
        return True
    for n in f.interval:
        iv = f.interval[n]
        if not (np.isfinite(iv[0]) and np.isfinite(iv[1])):
            return True
    return bool(not f.fixed[f.col("baseline")] and f.decay_left > PLATEAU_LEFT_MAX)


def _stretch_undetermined(f: CurveFacts) -> str:
    """Why a limit on a stretched tau would mean nothing ("" where it would not).

    Where tau is bounded on one side only, a free stretch trades off against it along
    the open direction: a KWW tau at a stretch known to worse than
    :data:`STRETCH_REL_ERR_MAX` is no time scale, and a limit on it sends a reader
    2-5x off (issue 48). The reason says what the fit does bound; ``auto`` adds the
    single exponential's verdict on the same points.
    """
    if "stretch" not in f.names or f.fixed[f.col("stretch")]:
        return ""
    k = f.col("stretch")
    s, es = f.p[k], f.errors[k]
    rel = es / s if s > 0 else np.inf
    if rel < STRETCH_REL_ERR_MAX:
        return ""
    err = f"{es:.2g}" if np.isfinite(es) else "?"
    return (f"stretched tau not determined: the stretch {s:.2g} \u00b1 {err} trades off "
            f"against tau, which the window does not end: no limit on tau")


def _weak_decay(f: CurveFacts) -> str:
    """Why the decay is not seen above the noise ("" when it is).

    The contrast of a single or stretched decay must exceed :data:`CONTRAST_SIGMAS` of
    its error. A double decay's t = 0 contrast is extrapolated (degenerate when tau1
    sits at the first delays), so its decay is judged by the evidence over a constant
    instead: (chi2_const - chi2) / s >= CONTRAST_SIGMAS^2.
    """
    ci = f.col("contrast")
    if f.fixed[ci]:
        return ""
    if "tau1" in f.names:
        need = CONTRAST_SIGMAS ** 2
        if np.isfinite(f.delta) and f.delta < need:
            return (f"decay below {CONTRAST_SIGMAS:g} sigma (it improves chi2 by "
                    f"{f.delta:.3g} < {need:g})")
        return ""
    c, ce = f.p[ci], f.errors[ci]
    if not (c > CONTRAST_SIGMAS * ce):
        return f"contrast {c:.3g} \u00b1 {ce:.2g} below {CONTRAST_SIGMAS:g} sigma"
    return ""


def curve_status(f: CurveFacts, early: tuple[FitStatus, str] | None) -> Verdict:
    """The curve's verdict: ``early`` (:func:`early_status` of ``f``) with the misfit
    reason where :func:`wants_preferred`, else :func:`late_status`; a solver stopped at
    its iteration limit says so, and is not ``converged``."""
    note = f"no convergence in {f.max_iter} iterations"
    if early is not None:
        st, why = early
        if wants_preferred(early, f.runs_z, f.early_scan):
            why = f"{why}; {f.misfit}{f.preferred}"
        if st is not FitStatus.FAILED and f.stopped:
            why = f"{why}; {note}"
        return Verdict(st, why)
    v = late_status(f)
    if f.stopped:
        # The best point found is still reported; only a converged claim needs a stop.
        if v.status is FitStatus.CONVERGED:
            return Verdict(FitStatus.UNRESOLVED, note)
        return replace(v, why=f"{v.why}; {note}")
    return v
