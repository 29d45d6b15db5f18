"""The ageing law with unresolved taus as lower limits (censored, Tobit) against
independent references: weighted least squares where nothing is censored, a direct
numerical maximum of the same likelihood, a finite-difference Hessian, and the
coverage of a law whose late points are only known from below."""

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.stats import norm

from xpcsviewer.fitting.ageing_law import fit_law


def _neg_loglik(p, x, y, e, cens):
    z = (p[0] + p[1] * x - y) / e
    return 0.5 * np.sum(z[~cens] ** 2) - np.sum(norm.logcdf(z[cens]))


def test_without_limits_it_is_weighted_least_squares():
    rng = np.random.default_rng(0)
    t = np.linspace(1, 9, 7)
    e = 0.05 + 0.02 * t
    y = 0.3 + 0.2 * t + rng.normal(0, e)
    lf = fit_law(t, y, e, lower=np.zeros(7, bool))
    slope, icpt = np.polyfit(t, y, 1, w=1 / e)
    assert lf.value["a"] == pytest.approx(slope, rel=1e-10)
    assert lf.value["tau0"] == pytest.approx(icpt, rel=1e-10)
    assert fit_law(t, y, e).value == lf.value


def test_censored_maximum_and_covariance_match_a_direct_reference():
    t = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    y = np.array([0.52, 0.71, 0.95, 1.12, 1.60, 1.95])
    e = np.array([0.04, 0.05, 0.06, 0.08, 0.08, 0.1])
    cens = np.array([False, False, False, False, True, True])
    lf = fit_law(t, y, e, lower=cens)
    assert np.all(lf.predict(t[cens]) < y[cens])  # both limits bind
    assert lf.value["a"] > fit_law(t[:4], y[:4], e[:4]).value["a"] + 0.05
    ref = minimize(_neg_loglik, [0.3, 0.2], args=(t, y, e, cens), method="Nelder-Mead",
                   options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20000})
    assert lf.value["tau0"] == pytest.approx(ref.x[0], abs=1e-6)
    assert lf.value["a"] == pytest.approx(ref.x[1], abs=1e-6)
    # the covariance is the inverse Hessian of the same likelihood (finite differences)
    h, p0 = np.zeros((2, 2)), ref.x
    d = 1e-4
    for i in range(2):
        for j in range(2):
            def f(di, dj, i=i, j=j):
                q = p0.copy()
                q[i] += di
                q[j] += dj
                return _neg_loglik(q, t, y, e, cens)
            h[i, j] = (f(d, d) - f(d, -d) - f(-d, d) + f(-d, -d)) / (4 * d * d)
    sd = np.sqrt(np.diag(np.linalg.inv(h)))
    assert lf.chi2_red * 4 < 9.49  # chi2 (4 values and 2 binding limits less 2) unscaled
    assert lf.error["a"] == pytest.approx(sd[1], rel=1e-3)
    assert lf.error["tau0"] == pytest.approx(sd[0], rel=1e-3)


def test_a_limit_below_the_law_has_no_pull_and_one_above_lifts_it():
    t = np.linspace(1, 6, 6)
    e = np.full(6, 0.05)
    y = 0.5 + 0.1 * t
    below = y.copy()
    below[-1] = 0.2  # "at least 0.2 s": the law at 1.1 s says nothing new
    cens = np.zeros(6, bool)
    cens[-1] = True
    lf = fit_law(t, below, e, lower=cens)
    ref = fit_law(t[:-1], y[:-1], e[:-1])
    assert lf.value["a"] == pytest.approx(ref.value["a"], abs=1e-9)
    # taken as a value the same point would drag the slope down
    assert fit_law(t, below, e).value["a"] < 0.5 * ref.value["a"]
    above = y.copy()
    above[-1] = 2.0  # at least 2 s where the values' line gives 1.1 s
    assert fit_law(t, above, e, lower=cens).value["a"] > ref.value["a"] + 0.02


@pytest.mark.parametrize("law", ["linear", "power"])
def test_late_limits_give_an_unbiased_law_with_a_covering_interval(law):
    """The late taus of an ageing sample run past the window: their fits come out low
    and unresolved. As values they bias the slope low; as lower limits the interval
    covers the truth about 95 % of the time."""
    rng = np.random.default_rng(3)
    t_w = np.linspace(1.0, 9.0, 8)
    tau0, slope = 0.5, 0.3
    truth = tau0 + slope * t_w if law == "linear" else tau0 * t_w**slope
    name = "a" if law == "linear" else "mu"
    cens = t_w > 6.5  # the last 2 windows: unresolved
    hits, bias_values, est = 0, [], []
    for _ in range(200):
        err = 0.06 * truth
        y = truth + rng.normal(0, err)
        # an unresolved fit falls short of the truth by a fraction of it
        y[cens] = truth[cens] * rng.uniform(0.5, 0.95, cens.sum())
        lf = fit_law(t_w, y, err, law, lower=cens)
        lo, hi = lf.interval[name]
        hits += lo <= slope <= hi
        est.append(lf.value[name])
        bias_values.append(fit_law(t_w, y, err, law).value[name])
    assert 180 <= hits <= 199, hits
    assert abs(np.mean(est) / slope - 1) < 0.03
    assert np.mean(bias_values) / slope < 0.9  # what the limits used to do as values


def test_limits_alone_do_not_make_a_law():
    t = np.linspace(1, 5, 5)
    e = np.full(5, 0.05)
    cens = np.array([False, True, True, True, True])
    assert fit_law(t, 1 + 0.1 * t, e, lower=cens).verdict == "undetermined"
    cens[1] = False
    assert fit_law(t, 1 + 0.1 * t, e, lower=cens).verdict == "ageing"
