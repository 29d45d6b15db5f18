"""Issue 48: the ageing law's errors carry the cuts' correlation and limits.

A small Monte-Carlo with known truth: K pixel groups whose taus at the 5 ages share a
correlated error (the same frames behind neighbouring windows), the whole map's taus
their mean. The law's slope error from the groups (each group's law, batch means) must
match the slope's scatter; the fit's errors, which treat the ages as independent,
must not."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from xpcsviewer.fitting.ageing_law import fit_law, law_with_errors
from xpcsviewer.jobs.ages import _group_law_errors

T_W = np.array([1.0, 3.0, 5.0, 7.0, 9.0])
TRUTH = 0.5 + 0.3 * T_W
K = 16


def _fits(tau: np.ndarray, err: np.ndarray, status: np.ndarray) -> SimpleNamespace:
    """The AgeFits fields the groups' law errors read, one bin, constant-age way only."""
    shape = (2, T_W.size, 1)
    full = np.full(shape, np.nan)
    t = full.copy()
    t[0, :, 0] = tau
    e = full.copy()
    e[0, :, 0] = err
    st = np.full(shape, "converged", dtype=object)
    st[0, :, 0] = status
    tw = np.broadcast_to(T_W[None, :, None], shape).copy()
    return SimpleNamespace(tau=t, tau_err=e, status=st, t_w=tw)


def _cov(rho: float) -> np.ndarray:
    """The whole map's taus' covariance: 5 % each, early and late ages tilted against
    each other with correlation ``rho`` (a deviation that looks like a slope)."""
    sd = 0.05 * TRUTH
    s = np.sign(T_W - T_W.mean())
    return np.outer(sd, sd) * (rho * np.outer(s, s) + (1 - rho) * np.eye(T_W.size))


def _trial(rng, rho: float):
    cov = _cov(rho)
    # each group holds 1/K of the pixels: K times the whole's covariance
    groups = TRUTH + rng.multivariate_normal(np.zeros(T_W.size), K * cov, size=K)
    return groups.mean(axis=0), groups, np.sqrt(np.diag(cov))


def test_the_law_error_from_groups_carries_the_ages_correlation():
    rng = np.random.default_rng(11)
    pulls_grp, pulls_fit, cover = [], [], 0
    status = np.full(T_W.size, "converged", dtype=object)
    for _ in range(150):
        whole, groups, sd = _trial(rng, 0.8)
        lf = fit_law(T_W, whole, sd)
        tau_g = np.full((K, 2, T_W.size, 1), np.nan)
        tau_g[:, 0, :, 0] = groups
        errs = _group_law_errors(_fits(whole, sd, status), tau_g, np.ones((K, 1)))
        e = errs["linear"][0]
        assert e["dof"] == K - 1
        pulls_grp.append((lf.value["a"] - 0.3) / e["a"])
        pulls_fit.append((lf.value["a"] - 0.3) / lf.error["a"])
        lo, hi = law_with_errors(lf, e, e["dof"]).interval["a"]
        cover += lo <= 0.3 <= hi
    # plain-NumPy reference: the WLS slope's sd with the ages' true covariance
    cov = _cov(0.8)
    sd = np.sqrt(np.diag(cov))
    a = np.stack([np.ones_like(T_W), T_W], 1) / sd[:, None]
    h = np.linalg.solve(a.T @ a, a.T)[1] / sd  # slope = h @ tau
    true_sd, indep_sd = np.sqrt(h @ cov @ h), np.sqrt(h @ np.diag(sd**2) @ h)
    assert 0.85 < np.std(pulls_grp) < 1.2
    # the fit's error is short by the correlation's factor; the groups' is not
    assert np.std(pulls_fit) == pytest.approx(true_sd / indep_sd, rel=0.2)
    assert true_sd / indep_sd > 1.4
    assert 135 <= cover <= 150  # 95 % of 150, within about 2.5 sigma


def test_a_limit_below_the_law_moves_the_groups_law():
    """Each group's law reads its own tau at a lower limit: a limit the law passes
    below pays as a value, so its noise is the law's too."""
    rng = np.random.default_rng(2)
    whole, groups, sd = _trial(rng, 0.0)
    status = np.array(["converged"] * 4 + ["unresolved"], dtype=object)
    tau_g = np.full((K, 2, T_W.size, 1), np.nan)
    tau_g[:, 0, :, 0] = groups
    fits = _fits(whole, sd, status)
    base = _group_law_errors(fits, tau_g, np.ones((K, 1)))["linear"][0]["a"]
    shaken = tau_g.copy()
    shaken[:, 0, -1, 0] = whole[-1] + 3 * (groups[:, -1] - whole[-1])
    assert _group_law_errors(fits, shaken, np.ones((K, 1)))["linear"][0]["a"] > base


def test_student_t_intervals_for_errors_of_few_groups():
    lf = fit_law(T_W, TRUTH, np.full(T_W.size, 0.01))
    wide = law_with_errors(lf, {"a": 0.1}, dof=15)
    # t(15): 2.131 (95 %) and 2.947 (99 %), from the tables
    assert wide.interval["a"] == pytest.approx((0.3 - 0.2131, 0.3 + 0.2131), abs=2e-4)
    assert law_with_errors(lf, {"a": 0.11}, dof=15).verdict == "stationary"  # 2.947 * 0.11 > 0.3
    assert law_with_errors(lf, {"a": 0.11}).verdict == "ageing"  # normal: 2.576 * 0.11 < 0.3
