"""Model adequacy and tau that holds: runs test, AICc choice, profile intervals, window.

Every kernel is checked against an independent reference: a plain-Python runs count,
SciPy's special functions, a profile made here by weighted linear least squares on a
fine tau grid (the single model is linear in contrast and baseline), SciPy fits.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from xpcsviewer.fitting import FitStatus, fit_g2
from xpcsviewer.fitting.adequacy import (
    AICC_MARGIN,
    aicc,
    choose_models,
    misfit_region,
    runs_test,
    strongest_run,
)
from xpcsviewer.fitting.models import G2Model, default_params, mean_relaxation_time
from xpcsviewer.fitting.profile import crossing, drop_last, profile_offsets


def _runs_reference(r):
    # Wald-Wolfowitz by hand: count runs in a plain loop
    s = [1 if v > 0 else -1 for v in r if v != 0]
    n1, n2 = s.count(1), s.count(-1)
    runs = 1 + sum(1 for a, b in itertools.pairwise(s) if a != b)
    n = n1 + n2
    mu = 2 * n1 * n2 / n + 1
    var = (mu - 1) * (mu - 2) / (n - 1)
    return (runs - mu) / math.sqrt(var), runs


def test_runs_test_matches_a_plain_count_and_known_cases(rng):
    r = rng.standard_normal((50, 40))
    mask = rng.random((50, 40)) > 0.2
    r[3, :5] = 0.0  # exact zeros carry no sign
    z, runs = runs_test(r, mask)
    for b in range(50):
        ref_z, ref_runs = _runs_reference(r[b, mask[b]])
        assert runs[b] == ref_runs
        assert z[b] == pytest.approx(ref_z, rel=1e-12)
    # alternating signs: the most runs; one block of each sign: the fewest
    alt = np.tile([1.0, -1.0], 10)
    block = np.r_[np.ones(10), -np.ones(10)]
    z2, runs2 = runs_test(np.stack([alt, block]), np.ones((2, 20), bool))
    assert list(runs2) == [20, 2]
    # n1 = n2 = 10: mu = 11, var = 10 * 9 / 19
    assert z2[0] == pytest.approx(9 / math.sqrt(90 / 19))
    assert z2[1] == pytest.approx(-9 / math.sqrt(90 / 19))
    # one sign only, and too few points
    z3, _ = runs_test(np.stack([np.ones(20), np.r_[1.0, -1.0, np.zeros(18)]]),
                      np.ones((2, 20), bool))
    assert z3[0] == -np.inf and np.isnan(z3[1])


def test_runs_z_is_standard_normal_for_white_residuals(rng):
    z, _ = runs_test(rng.standard_normal((4000, 60)), np.ones((4000, 60), bool))
    assert abs(np.mean(z)) < 0.05 and abs(np.std(z) - 1) < 0.05
    # the stated threshold |z| > 3 is rare for a correct model (0.27 % for a normal z)
    assert np.mean(np.abs(z) > 3) < 0.006


def test_strongest_run_and_region():
    r = np.array([1, -1, 1, 1, 1, 1, -1, 1, -1.0])
    m = np.ones(9, bool)
    assert strongest_run(r, m) == (2, 5)
    m[3] = False  # a masked point does not break the run
    assert strongest_run(r, m) == (2, 5)
    # a short run of large residuals outranks a long one of small ones: 6/sqrt(2) > 2
    r = np.array([3, 3, -0.5, 0.5, *[-0.5] * 12, 1])
    assert strongest_run(r, np.ones(r.size, bool)) == (0, 1)
    assert "first delays" in misfit_region(np.array([0.99, 0.95]))
    assert "early decay" in misfit_region(np.array([0.8, 0.6]))
    assert "late decay" in misfit_region(np.array([0.3, 0.2]))
    assert "baseline" in misfit_region(np.array([0.01]))


def test_aicc_formula_and_choice_rule():
    n = np.array([40.0])
    # by hand: n ln(chi2/n) + 2K + 2K(K+1)/(n-K-1), K = free + 1
    k = 4
    ref = 40 * math.log(52 / 40) + 2 * k + 2 * k * (k + 1) / (40 - k - 1)
    assert aicc(np.array([52.0]), n, 3)[0] == pytest.approx(ref)
    assert aicc(np.array([52.0]), np.array([5.0]), 3)[0] == np.inf  # too few points
    scores = {"single": np.array([0.0, 0.0, 0.0, 0.0]),
              "stretched": np.array([-5.0, -11.0, -30.0, -8.0]),
              "double": np.array([-9.0, -12.0, -45.0, np.inf])}
    chosen, delta = choose_models(scores, ["single", "stretched", "double"])
    # a more complex model must lower AICc by more than the margin
    assert AICC_MARGIN == 10
    assert list(chosen) == [0, 1, 2, 0]
    assert delta[0] == -9.0 and delta[1] == pytest.approx(-12.0 - (-11.0))
    assert delta[2] == pytest.approx(-30.0 + 45.0)
    # the frame-averaged single exponential is the same family: the margin is to others
    scores["single_avgcorr"] = np.array([-0.1, 0.1, 0.0, -12.0])
    order = ["single", "single_avgcorr", "stretched", "double"]
    chosen, delta = choose_models(scores, order)
    assert list(chosen) == [0, 2, 3, 1]
    assert delta[0] == -9.0 and delta[3] == pytest.approx(-8.0 - (-12.0))
    # models with residual structure are not eligible where another fits without it
    z = {"single": np.array([-5.0, 0, 0, 0.0]), "single_avgcorr": np.array([-5.0, 0, 0, 0.0]),
         "stretched": np.array([1.0, 0, -4.0, 0.0]), "double": np.array([0.5, 0, -4.0, 4.0])}
    chosen, delta = choose_models(scores, order, runs_z=z)
    # row 0: single and its twin structured -> stretched (only 5 lower: not by the
    # margin, but the only eligible simpler one) then double lower by 4 only
    assert list(chosen) == [2, 2, 0, 1]
    assert delta[0] == pytest.approx(-9.0 - (-5.0)) and delta[2] == np.inf
    z_all = {k: np.full(4, -5.0) for k in z}  # nothing fits: AICc over all
    assert list(choose_models(scores, order, runs_z=z_all)[0]) == [0, 2, 3, 1]


def test_mean_relaxation_time_against_scipy_and_an_integral():
    from scipy.integrate import quad
    from scipy.special import gamma

    tau = np.array([0.3, 1e-3, 2.0])
    beta = np.array([0.4, 1.0, 1.7])
    got = mean_relaxation_time("stretched", {"tau": tau, "stretch": beta})
    np.testing.assert_allclose(got, tau / beta * gamma(1 / beta), rtol=1e-12)
    for t, b, g in zip(tau, beta, got, strict=True):  # the integral of g1 over t
        val, _ = quad(lambda x, t=t, b=b: math.exp(-((x / t) ** b)), 0, np.inf, limit=200)
        assert g == pytest.approx(val, rel=1e-7)
    p = {"tau1": np.array([1e-3]), "tau2": np.array([0.5]), "fraction": np.array([0.3]),
         "stretch1": np.array([1.0]), "stretch2": np.array([1.0])}
    assert mean_relaxation_time("double", p)[0] == pytest.approx(0.3e-3 + 0.7 * 0.5)
    assert mean_relaxation_time("single", {"tau": tau})[1] == 1e-3


def test_crossing_and_drop_last():
    off = np.array([[0.1, 0.2, 0.4, -0.1, -0.3]])
    # a parabola 25 x^2 sampled at the offsets: crossings of 1 at +-0.2
    d = 25 * off**2
    assert crossing(off, d, 1.0, +1)[0] == pytest.approx(0.2)
    assert crossing(off, d, 1.0, -1)[0] == pytest.approx(-0.2)  # exact in sqrt(delta)
    # not a parabola: linear in sqrt(delta) between the bracketing points
    d2 = np.array([[0.25, 4.0, 9.0, 0.25, 4.0]])
    assert crossing(off, d2, 1.0, +1)[0] == pytest.approx(0.1 + (1 - 0.5) / (2 - 0.5) * 0.1)
    assert np.isnan(crossing(off, d, 10.0, -1)[0])  # open on that side
    assert profile_offsets(np.array([0.1])).shape == (1, 26)
    m = np.array([[1, 1, 0, 1, 1, 0], [1, 0, 0, 0, 0, 0]], bool)
    np.testing.assert_array_equal(drop_last(m, 2), [[1, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]])


def _profile_reference(t, y, s, lo, hi):
    """chi^2(tau) on a fine log grid by weighted linear least squares in (contrast, baseline)."""
    grid = np.geomspace(lo, hi, 4001)
    w = 1 / s
    out = np.empty(grid.size)
    for i, tau in enumerate(grid):
        a = np.stack([np.exp(-2 * t / tau), np.ones_like(t)], 1) * w[:, None]
        coef, *_ = np.linalg.lstsq(a, y * w, rcond=None)
        out[i] = np.sum((a @ coef - y * w) ** 2)
    return grid, out


def _reference_crossings(grid, chi2, level):
    # walk out from the minimum of the fine grid; interpolate between the two points
    i0 = int(np.argmin(chi2))
    d = chi2 - chi2[i0]
    out = []
    for step in (-1, 1):
        i = i0
        while 0 <= i + step < grid.size and d[i + step] < level:
            i += step
        j = i + step
        if not 0 <= j < grid.size:
            out.append(np.nan)
            continue
        f = (level - d[i]) / (d[j] - d[i])
        out.append(float(np.exp(np.log(grid[i]) + f * (np.log(grid[j]) - np.log(grid[i])))))
    return tuple(out)


@pytest.mark.parametrize("backend_name", ["numpy", "jax"])
def test_profile_interval_matches_a_direct_profile(delays, rng, backend_name):
    from xpcsviewer.backends import get_backend

    _, tau = delays
    tau = tau * 10
    true = [(0.2, 5e-3, 1.0), (0.05, 0.2, 1.0), (0.1, 0.02, 1.0)]
    y = np.stack([b + c * np.exp(-2 * tau / t) for c, t, b in true])
    err = np.full_like(y, 0.004)
    y = y + err * rng.standard_normal(y.shape)
    res = fit_g2(tau, y, err, backend=get_backend(backend_name))
    for b in range(3):
        sp = default_params("single", tau, y[b])
        grid, chi2 = _profile_reference(tau, y[b], err[b], sp["tau"].lower, sp["tau"].upper)
        s = max(1.0, res.chi2_red[b])
        lo, hi = _reference_crossings(grid, chi2 / s, 1.0)
        got = res.interval["tau"][b]
        # the profile is asymmetric in tau; both ends within the reference grid spacing
        np.testing.assert_allclose(got, [lo, hi], rtol=1e-3)
        assert got[0] < res.params["tau"][b] < got[1]


def _two_step(tau):
    # g2 1.20 -> 1.10 -> 1.02: a fast third of the field decaying at 1 ms, the rest at 0.3 s
    return 1.02 + 0.18 * (0.333 * np.exp(-tau / 1e-3) + 0.667 * np.exp(-tau / 0.3)) ** 2


def test_two_step_decay_is_a_misfit_for_single_and_auto_chooses_double(delays):
    _, tau = delays
    tau = tau * 10  # 64 delays, 1e-4 to 13 s
    rng = np.random.default_rng(1)
    err = np.full(tau.size, 0.005) * np.where(tau < 1e-4, 3.0, 1.0)
    y = _two_step(tau) + err * rng.standard_normal(tau.size)
    single = fit_g2(tau, y, err, model="single")
    # chi2_red ~17 passes the 25 gate; the residual structure does not
    assert 5 < single.chi2_red[0] < 25 and single.runs_z[0] < -3
    assert single.status[0] is FitStatus.MISFIT
    assert "systematic misfit" in single.detail[0] and "first delays" in single.detail[0]
    assert "double exponential preferred" in single.detail[0]
    auto = fit_g2(tau, y, err, model="auto")
    assert auto.model_of(0) is G2Model.DOUBLE and auto.status[0] is FitStatus.CONVERGED
    assert auto.delta_aicc[0] > AICC_MARGIN
    for name, truth in (("tau1", 1e-3), ("tau2", 0.3), ("fraction", 0.333)):
        assert abs(auto.params[name][0] - truth) < 3 * auto.errors[name][0], name
        if name.startswith("tau"):
            lo, hi = auto.interval[name][0]
            assert lo < auto.params[name][0] < hi
    assert np.isnan(auto.params["tau"][0]) and np.isnan(auto.params["stretch"][0])
    # the mean relaxation time f tau1 + (1 - f) tau2
    f = auto.params["fraction"][0]
    assert auto.tau_mean[0] == pytest.approx(f * auto.params["tau1"][0]
                                             + (1 - f) * auto.params["tau2"][0])
    # the drawn curve is the chosen model's
    grid = np.geomspace(1e-5, 10, 50)
    np.testing.assert_allclose(auto.curve(grid)[0], _two_step(grid), atol=0.01)


def test_auto_keeps_single_for_single_exponentials_and_finds_stretched(delays, rng):
    _, tau = delays
    n = 40
    taus = np.geomspace(2e-4, 2e-2, n)
    err = np.full((n, tau.size), 0.003)
    y = 1 + 0.2 * np.exp(-2 * tau[None] / taus[:, None]) + err * rng.standard_normal(err.shape)
    res = fit_g2(tau, y, err, model="auto")
    names = res.model_names()
    assert np.mean(names == "single") >= 0.9, names
    ok = res.ok & (names == "single")
    assert ok.sum() >= 0.85 * n
    pull = (res.params["tau"][ok] - taus[ok]) / res.errors["tau"][ok]
    assert np.all(np.abs(pull) < 4)
    # a Kohlrausch decay with beta 0.5 over the whole window: stretched, by far
    ys = 1 + 0.2 * np.exp(-2 * (tau / 2e-3) ** 0.5) + 0.002 * rng.standard_normal(tau.size)
    st = fit_g2(tau, ys, np.full(tau.size, 0.002), model="auto")
    assert st.model_of(0) is G2Model.STRETCHED and st.delta_aicc[0] > AICC_MARGIN
    assert st.params["stretch"][0] == pytest.approx(0.5, abs=0.05)
    single = fit_g2(tau, ys, np.full(tau.size, 0.002), model="single")
    assert single.status[0] in (FitStatus.MISFIT, FitStatus.POOR_FIT)
    assert "stretched exponential" in single.detail[0]


def test_no_plateau_gives_a_lower_limit_unless_the_baseline_is_fixed(delays, rng):
    from xpcsviewer.fitting import ParamSpec

    _, tau = delays
    tau = tau * 5  # to 13 s; only delays below 1.5 s are fitted
    y = 1.0 + 0.1 * np.exp(-2 * tau / 2.0)
    err = np.full_like(y, 0.002)
    y = y + err * rng.standard_normal(y.shape)
    free = fit_g2(tau, y, err, t_range=(0, 1.5))
    assert free.status[0] is FitStatus.UNRESOLVED and "no plateau" in free.detail[0]
    assert free.decay_left[0] > 0.05
    lim = free.tau_lower_limit[0]
    assert 0.5 < lim < 2.0 and f"tau > {lim:.3g} s (95 %)" in free.detail[0]
    assert np.isnan(free.reported("tau")[0][0]) and np.isnan(free.relaxation_time()[0][0])
    fixed = fit_g2(tau, y, err, t_range=(0, 1.5),
                   params={"baseline": ParamSpec("baseline", 1.0, 0.8, 1.2, fixed=True)})
    assert fixed.status[0] is FitStatus.CONVERGED
    assert abs(fixed.params["tau"][0] - 2.0) < 3 * fixed.errors["tau"][0]
    # the whole decay in the window: converged with the free baseline too
    whole = fit_g2(tau, y, err)
    assert whole.status[0] is FitStatus.CONVERGED and whole.decay_left[0] < 0.01


def test_tau_decided_by_a_lone_last_point_is_unresolved(delays):
    # like the 8-ID-I lone last delay: a point below the curve with a small stated error
    # stretches tau; without the last two fitted delays it falls back
    _, tau = delays
    tau = tau * 2
    n = 6
    y = np.empty((2 * n, tau.size))
    err = np.full_like(y, 0.002)
    for s in range(n):
        rng = np.random.default_rng(s)
        clean = 1.0 + 0.02 * np.exp(-2 * tau / 0.3) + 0.002 * rng.standard_normal(tau.size)
        y[s], y[n + s] = clean, clean
        y[n + s, -1] -= 0.006
        err[n + s, -1] = 0.0005
    res = fit_g2(tau, y, err)
    bad = res.status[n:]
    assert all(s is FitStatus.UNRESOLVED for s in bad), list(res.detail[n:])
    assert all("tau decided by the last delays" in d for d in res.detail[n:])
    lo2_ok = res.window["tau"][n:] < res.params["tau"][n:]
    assert np.all(lo2_ok)
    # the same curves without the bad point hold
    assert sum(s is FitStatus.CONVERGED for s in res.status[:n]) >= n - 1
    assert np.all(np.abs(res.window["tau"][:n] / res.params["tau"][:n] - 1) < 0.3)


def test_auto_fit_agrees_between_backends_and_batches(delays, rng):
    from xpcsviewer.backends import get_backend

    _, tau = delays
    y = np.stack([
        1 + 0.2 * np.exp(-2 * tau / 3e-3),
        1 + 0.2 * np.exp(-2 * (tau / 2e-3) ** 0.6),
        _two_step(tau * 300),
        1 + 0.1 * np.exp(-2 * tau / 0.5),
    ])
    err = np.full_like(y, 0.003)
    y = y + err * rng.standard_normal(y.shape)
    a = fit_g2(tau, y, err, model="auto", backend=get_backend("numpy"))
    b = fit_g2(tau, y, err, model="auto", backend=get_backend("jax"))
    assert list(a.model_names()) == list(b.model_names())
    assert [s.value for s in a.status] == [s.value for s in b.status]
    for n in a.params:
        np.testing.assert_allclose(a.params[n], b.params[n], rtol=1e-6, equal_nan=True)
    for n in a.interval:
        np.testing.assert_allclose(a.interval[n], b.interval[n], rtol=1e-5, equal_nan=True)
        np.testing.assert_allclose(a.window[n], b.window[n], rtol=1e-5, equal_nan=True)
    np.testing.assert_allclose(a.runs_z, b.runs_z, equal_nan=True)
    np.testing.assert_allclose(a.tau_mean, b.tau_mean, rtol=1e-6, equal_nan=True)
    for k in range(y.shape[0]):  # a curve alone gets what it gets in the batch
        alone = fit_g2(tau, y[k], err[k], model="auto", backend=get_backend("jax"))
        assert alone.model_of(0) is b.model_of(k) and alone.status[0] is b.status[k]
        np.testing.assert_allclose(alone.tau_mean[0], b.tau_mean[k], rtol=1e-6)


def test_misfit_region_of_an_all_nan_run_is_quiet():
    # issue 33 (8): a stray "RuntimeWarning: Mean of empty slice" on stderr
    import warnings

    from xpcsviewer.fitting.adequacy import misfit_region

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert misfit_region(np.array([np.nan, np.nan])) == "the curve"
