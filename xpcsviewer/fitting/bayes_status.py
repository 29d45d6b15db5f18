"""Statuses of the Bayesian g2 fits: the sampler gates and the least squares' rules on
the posterior.

:func:`_bayes_statuses` gives every sampled bin a status and its reason (order in
:class:`~xpcsviewer.fitting.bayes_result.BayesFitResult`): the misfit of the
posterior-median curve, a posterior piled against a prior edge (a one-sided limit),
the sampler gates, then the rules of :mod:`xpcsviewer.fitting.status` read on
posterior quantiles instead of profile intervals. Apart from the samplers; it needs
NumPy and the diagnostics' thresholds only.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from xpcsviewer.fitting.bayes_gates import CONVERGENCE, ess_min
from xpcsviewer.fitting.bayes_result import BayesFitResult
from xpcsviewer.fitting.lsq_result import G2FitResult
from xpcsviewer.fitting.models import LOG_PARAMS, evaluate_model
from xpcsviewer.fitting.status import (
    CHI2_RED_MAX,
    CONTRAST_MAX,
    CONTRAST_SIGMAS,
    STRETCH_REL_ERR_MAX,
    TAU_REL_ERR_MAX,
    FitStatus,
)

if TYPE_CHECKING:  # bayes_problem imports JAX; the statuses need NumPy only
    from xpcsviewer.fitting.bayes_problem import _Problem

__all__ = ["BOUND_FRACTION", "EDGE_LOG_TAU"]

#: Posterior mass this close (in log tau) to a prior edge means the data do not bound
#: tau on that side: a one-sided limit is reported instead of a value.
EDGE_LOG_TAU = 0.5
#: Quantiles of the posterior that stand for the least squares' profile intervals:
#: 68 % (16-84 %) and 2 sigma (2.3-97.7 %), and the one-sided 95 % limits.
_Q68 = (0.15866, 0.84134)
_Q2S = (0.02275, 0.97725)
#: A non-time parameter whose 94 % HDI reaches this fraction of its prior range from a
#: bound is on that bound (``at_bound``), as a least-squares optimum on it would be.
BOUND_FRACTION = 0.01


def _bayes_statuses(res: BayesFitResult, init: G2FitResult, p: _Problem, sigma) -> None:
    """Statuses from the sampler gates and the physical checks (see BayesFitResult), on
    the run's data ``p`` with the stated errors ``sigma`` (B, T) (no noise scale)."""
    from xpcsviewer.fitting.adequacy import early_scan, misfit_region, runs_test, strongest_run
    from xpcsviewer.fitting.status import RUNS_Z_MAX, misfit_text, structured, tested

    t, y, mask, aux, lower, upper = p.t, p.y, p.mask, p.aux, p.lower, p.upper
    names = res.param_names
    n_b = res.converged.shape[0]
    med = tuple(np.asarray(res.median[n], float)[:, None] for n in names)
    with np.errstate(all="ignore"):
        curve = evaluate_model(res.model, t[None, :], med, aux, np)
        resid = np.where(mask, (y - curve) / sigma, 0.0)
    r2 = resid ** 2
    n_free = sum(1 for n in names if not res.fixed.get(n, False))
    dof = mask.sum(axis=1) - n_free
    chi2_red = np.where(dof > 0, r2.sum(axis=1) / np.maximum(dof, 1), np.nan)
    runs_z, _ = runs_test(resid, mask)
    scan, scan_k = early_scan(resid, mask, np.where(np.isfinite(chi2_red), chi2_red, 1.0))
    # decay left at the last fitted delay, on the posterior-median curve
    rr = np.arange(n_b)
    last = mask.shape[1] - 1 - np.argmax(mask[:, ::-1], axis=1)
    c_med, b_med = res.median["contrast"], res.median["baseline"]
    with np.errstate(all="ignore"):
        left = np.where(mask.any(1) & (c_med > 0), (curve[rr, last] - b_med) / c_med, np.nan)
        t_min = np.where(mask, t[None, :], np.inf).min(axis=1)
    diag = res.diagnostics()
    status = np.empty(n_b, dtype=object)
    detail = np.empty(n_b, dtype=object)
    lo_lim = np.full(n_b, np.nan)
    hi_lim = np.full(n_b, np.nan)
    limit_name = np.array([""] * n_b, dtype=object)
    taus = [n for n in names if n in LOG_PARAMS and n in res.samples
            and not res.fixed.get(n, False)]
    lsq_status = [getattr(v, "value", str(v)) for v in init.status]
    U = FitStatus.UNRESOLVED
    for b in range(n_b):
        def say(st, why, n="", lo=np.nan, hi=np.nan, _b=b):
            status[_b], detail[_b] = st, why
            if np.isfinite(lo) or np.isfinite(hi):
                lo_lim[_b], hi_lim[_b], limit_name[_b] = lo, hi, n

        if res.used_bins is not None and not res.used_bins[b]:
            say(FitStatus.FAILED, "too few points")
            continue
        c_mean, c_sd = res.mean["contrast"][b], res.std["contrast"][b]
        # as the least squares (status.early_status): a large chi2_red with white
        # residuals is errors stated too small, not a poor fit
        if chi2_red[b] > CHI2_RED_MAX and (structured(runs_z[b], scan[b])
                                           or not tested(runs_z[b])):
            say(FitStatus.POOR_FIT, f"chi2_red {chi2_red[b]:.3g} > {CHI2_RED_MAX:g}")
            continue
        if c_mean > CONTRAST_MAX:
            say(FitStatus.POOR_FIT, f"contrast {c_mean:.3g} > {CONTRAST_MAX:g}")
            continue
        if lsq_status[b] in ("no_decay", "errors_understated"):  # sampled on request only
            say(FitStatus(lsq_status[b]), init.detail[b])
            continue
        z = runs_z[b]
        if not structured(z) and structured(z, scan[b]):
            k = int(scan_k[b])
            t_k = t[np.flatnonzero(mask[b])[k - 1]] if k else np.nan
            say(FitStatus.MISFIT, misfit_text(z, "", scan[b], k, t_k)
                + " (posterior-median curve)")
            continue
        if not np.isnan(z) and not abs(z) <= RUNS_Z_MAX:
            first, end = strongest_run(resid[b], mask[b])
            where = "the curve"
            if first >= 0:
                sel = mask[b, first:end + 1]
                with np.errstate(all="ignore"):
                    shape = ((curve[b, first:end + 1] - b_med[b]) / c_med[b])[sel]
                span = t[first:end + 1][sel]
                where = (f"{misfit_region(shape)} ({int(sel.sum())} points of one sign at "
                         f"{span.min():.2g}-{span.max():.2g} s)")
            say(FitStatus.MISFIT, f"systematic misfit: residual runs z = {z:+.1f} (|z| > "
                f"{RUNS_Z_MAX:g}) of the posterior-median curve: misses {where}")
            continue
        bad = []
        gate = ess_min(res.num_chains)
        if not min(diag["ess_bulk"][b], diag["ess_tail"][b]) >= gate:
            bad.append(f"ESS {min(diag['ess_bulk'][b], diag['ess_tail'][b]):.0f} < {gate:.0f}")
        if not diag["r_hat"][b] <= CONVERGENCE["r_hat_max"]:
            bad.append(f"r_hat {diag['r_hat'][b]:.4f} > {CONVERGENCE['r_hat_max']}")
        if diag["divergences"][b] > CONVERGENCE["divergences_max"]:
            n_d = int(diag["divergences"][b])
            bad.append(f"{n_d} divergence{'s' if n_d != 1 else ''}")
        if not diag["bfmi"][b] >= CONVERGENCE["bfmi_min"]:
            bad.append(f"BFMI {diag['bfmi'][b]:.2g} < {CONVERGENCE['bfmi_min']}")
        note = f" (sampler: {', '.join(bad)})" if bad else ""
        logs = {n: np.log(res.samples[n][:, :, b].ravel()) for n in taus}
        edge = None
        for n in taus:
            # A posterior piled against a prior edge: a limit, even where the chains mix
            # slowly along the unbounded direction.
            q05, q95 = np.quantile(logs[n], [0.05, 0.95])
            if np.log(upper[n][b]) - q95 < EDGE_LOG_TAU:
                lim = math.exp(q05)
                edge = (f"{n} > {lim:.3g} s (95 %){note}", n, lim, np.nan)
            elif q05 - np.log(lower[n][b]) < EDGE_LOG_TAU:
                lim = math.exp(q95)
                edge = (f"{n} < {lim:.3g} s (95 %){note}", n, np.nan, lim)
            if edge:
                break
        if edge and "stretch" in res.samples and not res.fixed.get("stretch", False):
            # as the least squares: no limit on a stretched tau whose stretch the data
            # do not determine (it trades off against tau along the open side)
            s_mean, s_sd = res.mean["stretch"][b], res.std["stretch"][b]
            if not s_sd < STRETCH_REL_ERR_MAX * s_mean:
                say(U, f"stretched tau not determined: the stretch {s_mean:.2g} \u00b1 "
                    f"{s_sd:.2g} trades off against tau, which the window does not end: no "
                    "limit on tau")
                continue
        if edge:
            say(U, edge[0], edge[1], edge[2], edge[3])
            continue
        if bad:
            longer = ""
            if res.draws_per_chain is not None and res.draws_per_chain[b] > res.num_samples:
                longer = f" ({res.draws_per_chain[b]} draws per chain, thinned)"
            say(FitStatus.FAILED, "sampler: " + ", ".join(bad) + longer)
            continue
        verdict = _posterior_checks(res, init, b, taus, logs, left[b], t_min[b], t[last[b]])
        if verdict is not None:
            say(*verdict)
            continue
        if not res.fixed.get("contrast", False) and not c_mean > CONTRAST_SIGMAS * c_sd:
            say(U, f"contrast {c_mean:.3g} +- {c_sd:.2g} below {CONTRAST_SIGMAS:g} sd")
            continue
        on = _on_bound(res, b, lower, upper)
        if on:
            say(FitStatus.AT_BOUND, on)
            continue
        say(FitStatus.CONVERGED, "")
    res.status, res.detail, res.chi2_red = status, detail, chi2_red
    res.tau_lower_limit, res.tau_upper_limit = lo_lim, hi_lim
    res.limit_name = limit_name


def _posterior_checks(res, init, b, taus, logs, left, t_min, t_last):
    """unresolved by the least squares' rules, on the posterior: below the first delay,
    no plateau, decided by the last delays, too wide; None when none applies."""
    from xpcsviewer.fitting.status import PLATEAU_LEFT_MAX, TAU_FACTOR_MAX, WINDOW_DROP

    U = FitStatus.UNRESOLVED
    if not taus:
        return None
    k0 = taus[0]
    m0 = res.median[k0][b]
    if m0 < t_min:
        return U, f"{k0} {m0:.3g} s below the first delay"
    if not res.fixed.get("baseline", False) and left > PLATEAU_LEFT_MAX:
        n = taus[-1]  # the slowest time: the one a plateau would pin
        lim = math.exp(np.quantile(logs[n], 0.05))
        return (U, f"no plateau: {100 * left:.0f} % of the decay left at the last fitted "
                f"delay ({t_last:.3g} s); {n} > {lim:.3g} s (95 %)", n, lim, np.nan)
    for n in taus:
        # the least squares' refit without the last delays, against the posterior's
        # 2-sigma interval (a second sampling run would cost as much as the first)
        tw = init.window[n][b] if n in init.window else np.nan
        lo2, hi2 = np.exp(np.quantile(logs[n], _Q2S))
        if np.isfinite(tw) and not lo2 <= tw <= hi2:
            return U, (f"{n} decided by the last delays: {res.median[n][b]:.2g} -> "
                       f"{tw:.2g} s without the last {WINDOW_DROP} fitted (least squares; "
                       "beyond its 2-sigma posterior interval)")
    for n in taus:
        rel = res.std[n][b] / res.mean[n][b]
        if not rel < TAU_REL_ERR_MAX:
            return U, f"{n} sd {100 * rel:.0f} % >= {100 * TAU_REL_ERR_MAX:.0f} %"
        lo, hi = np.exp(np.quantile(logs[n], _Q68))
        mid = res.median[n][b]
        factor = max(hi / mid, mid / lo)
        if not factor <= TAU_FACTOR_MAX:
            return U, (f"{n} {mid:.3g} s known only to a factor {factor:.2g} (68 % "
                       f"posterior interval {lo:.2g}-{hi:.2g} s)")
    return None


def _on_bound(res, b, lower, upper) -> str:
    """"stretch runs against its upper bound ..." where a free non-time parameter's
    94 % HDI reaches a bound (the contrast only at the top: at 0 it is unresolved;
    the baseline has a normal prior)."""
    for n in res.param_names:
        if n in LOG_PARAMS or n == "baseline" or res.fixed.get(n, False) or n not in lower:
            continue
        lo, hi = float(lower[n][b]), float(upper[n][b])
        if n == "contrast":
            lo = -np.inf
        eps = BOUND_FRACTION * (hi - (0.0 if n == "contrast" else lo))
        h_lo, h_hi = res.hdi_low[n][b], res.hdi_high[n][b]
        if h_hi >= hi - eps:
            return f"{n} runs against its upper bound {hi:.3g} (94 % HDI {h_lo:.3g}-{h_hi:.3g})"
        if h_lo <= lo + eps:
            return f"{n} runs against its lower bound {lo:.3g} (94 % HDI {h_lo:.3g}-{h_hi:.3g})"
    return ""
