"""XSVS photon statistics against independent references: scipy's negative binomial and
Poisson, exact expected histograms, a direct numerical maximum of the censored
likelihood, a finite-difference Hessian, and the visibility integral by quadrature."""

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import minimize
from scipy.stats import nbinom, poisson

from xpcsviewer.fitting.xsvs import (
    STATUSES,
    fit_nb,
    fit_nb_table,
    fit_visibility,
    nb_logpmf,
    nb_logsf,
    visibility,
)

K = 511


def _expected(mu, M, n=1e14, kmax=K):
    """N P(k) rounded, k = 0..K, and N P(K > kmax) in the last column."""
    k = np.arange(kmax + 1)
    p = np.append(np.exp(nb_logpmf(k, mu, M)), np.exp(nb_logsf(kmax + 1, mu, M)))
    return np.round(p * n).astype(np.int64)


def _ref_negll(theta, hist, cens):
    """-log L from scipy.stats.nbinom: exact columns pmf, censored columns sf, in
    (log mu, beta); independent of the module's formulas."""
    mu, b = np.exp(theta[0]), theta[1]
    if b <= 0:
        return np.inf
    M = 1.0 / b
    p = M / (M + mu)
    kk = np.arange(hist.size - 1)
    ex = hist[:-1]
    cc = cens[:-1]
    over = hist[-1] + cens[-1]
    ll = np.sum(ex * nbinom.logpmf(kk, M, p))
    ll += np.sum(np.where(cc > 0, cc * nbinom.logsf(kk - 1, M, p), 0.0))
    ll += over * nbinom.logsf(hist.size - 2, M, p) if over else 0.0
    return -ll


# ------------------------------------------------------------------ pmf and sf


@pytest.mark.parametrize("mu,M", [(0.005, 1.25), (0.3, 2.0), (5.0, 5.0), (80.0, 1.25),
                                  (2.0, 0.3), (1.0, 1e4)])
def test_logpmf_and_logsf_match_scipy_nbinom(mu, M):
    k = np.arange(0, 400)
    p = M / (M + mu)
    ref = nbinom.logpmf(k, M, p)
    fin = ref > -700
    np.testing.assert_allclose(nb_logpmf(k, mu, M)[fin], ref[fin], rtol=1e-11, atol=1e-11)
    sf = nbinom.logsf(k - 1, M, p)
    fin = sf > -700
    np.testing.assert_allclose(nb_logsf(k, mu, M)[fin], sf[fin], rtol=1e-9, atol=1e-12)
    assert np.all(nb_logsf(np.array([0, -3]), mu, M) == 0.0)


@pytest.mark.parametrize("M", [1e10, 1e15, np.inf])
def test_huge_M_is_poisson(M):
    k = np.arange(0, 60)
    mu = 3.0
    # the NB-Poisson difference is about k^2 / (2 M) (k < 60)
    tol = 3600 / M + 1e-12
    np.testing.assert_allclose(nb_logpmf(k, mu, M), poisson.logpmf(k, mu), rtol=0, atol=tol)
    np.testing.assert_allclose(nb_logsf(k, mu, M), poisson.logsf(k - 1, mu), rtol=0, atol=tol)


def test_tails_do_not_underflow():
    # far tail and far below the mean: finite, monotone
    v = nb_logsf(np.array([1, 5, 400, 2000, 5000]), 300.0, 2.0)
    assert np.all(np.isfinite(v)) and np.all(np.diff(v) < 0)
    assert nb_logsf(5000, 1.0, 1e6) < -1e4


# ------------------------------------------------------------------ uncensored fits


@pytest.mark.parametrize("mu", [0.005, 0.05, 0.3, 1.0, 8.0, 50.0])
@pytest.mark.parametrize("M", [1.25, 2.0, 5.0])
def test_expected_histogram_recovers_mu_and_M(mu, M):
    r = fit_nb(_expected(mu, M))
    assert r.status == "ok", r.reason
    assert float(r.mean) == pytest.approx(mu, rel=1e-6)
    assert float(r.M) == pytest.approx(M, rel=1e-6)
    assert float(r.beta) == pytest.approx(1 / M, rel=1e-6)
    assert float(r.M_error) == pytest.approx(float(r.beta_error) / float(r.beta) ** 2,
                                             rel=1e-12)
    assert float(r.gof_p) > 0.99
    assert r.mean.shape == ()


def test_large_mean_mostly_in_the_overflow_column():
    h = _expected(300.0, 5.0, n=1e9, kmax=127)
    assert h[-1] > 0.8 * h.sum()
    r = fit_nb(h)
    assert r.status == "ok"
    assert float(r.mean) == pytest.approx(300.0, rel=1e-5)
    assert float(r.M) == pytest.approx(5.0, rel=1e-5)
    assert np.isnan(r.spread)


def test_poisson_histogram_is_said_not_fitted():
    r = fit_nb(_expected(1.0, np.inf, n=1e6))
    assert r.status == "poisson"
    assert np.isnan(r.beta) and np.isnan(r.M) and np.isnan(r.beta_error)
    assert float(r.mean) == pytest.approx(1.0, rel=1e-5)
    up = float(r.reason.item().split("beta < ")[1].split(",")[0])
    # the profile-likelihood limit, near 1.645 sd of beta at 0: sqrt(2 / (N mu^2))
    assert up == pytest.approx(1.645 * np.sqrt(2 / 1e6), rel=0.2)


def test_few_photons_and_no_data():
    h = np.zeros(K + 2, np.int64)
    assert fit_nb(h).status == "no_data"
    h[0] = 1000
    r = fit_nb(h)
    assert r.status == "no_data" and r.reason == "no photons"
    h[1], h[2], h[3] = 50, 10, 4
    r = fit_nb(h)
    assert r.status == "few_photons" and np.isnan(r.beta)
    assert np.isfinite(r.mean) and "14 samples" in r.reason.item()
    assert set(np.unique(fit_nb_table(np.stack([h, 0 * h])).status)) <= set(STATUSES)
    # every sample at the cap or above K: only lower bounds, nothing fitted
    c = np.zeros_like(h)
    c[3] = 5000
    h2 = np.zeros_like(h)
    h2[-1] = 10
    r = fit_nb(h2, c)
    assert r.status == "no_data" and np.isnan(r.mean) and "no count" in r.reason.item()
    h2[0] = 10
    r = fit_nb(h2, c)
    assert r.status == "few_photons" and "known count" in r.reason.item()


def test_a_two_population_histogram_is_a_misfit():
    h = _expected(0.2, 5.0, n=1e6) + _expected(6.0, 5.0, n=1e6)
    r = fit_nb(h)
    assert r.status == "misfit" and np.isfinite(r.beta)
    assert "chi2_red" in r.reason.item() and r.gof_p < 1e-4


def test_table_shape_progress_and_simulated_rows():
    rng = np.random.default_rng(3)
    h = np.zeros((3, 4, 34), np.int64)
    for i in range(3):
        for j in range(4):
            k = rng.poisson(rng.gamma(2.0, 0.5 * (j + 1) / 2.0, 20000))
            h[i, j] = np.bincount(np.minimum(k, 33), minlength=34)
    seen = []
    t = fit_nb_table(h, progress=lambda d, n: seen.append((d, n)))
    assert t.beta.shape == (3, 4) and t.status.dtype == np.dtype("<U12")
    assert t.n_samples.dtype == np.int64 and np.all(t.n_samples == 20000)
    assert seen[-1] == (12, 12)
    one = fit_nb(h[1, 2])
    assert float(one.beta) == pytest.approx(t.beta[1, 2], rel=1e-12)
    assert np.all(np.abs(t.beta - 0.5) < 5 * t.beta_error)


# ------------------------------------------------------------------ censoring


def _capped(mu, M, cap, n=1e14):
    """Expected histogram of a one-frame window with a counter cap: true k >= cap is
    recorded as k = cap, censored."""
    h = _expected(mu, M, n=n)
    c = np.zeros_like(h)
    c[cap] = h[cap:].sum()
    h[cap:] = 0
    return h, c


def test_cap_of_three_naive_fit_is_biased_censored_is_not():
    h, c = _capped(1.0, 2.0, 3)
    r = fit_nb(h, c)
    assert r.status == "ok"
    assert float(r.M) == pytest.approx(2.0, rel=1e-6)
    assert float(r.mean) == pytest.approx(1.0, rel=1e-6)
    naive = fit_nb(h + c)
    assert abs(float(naive.beta) * 2.0 - 1) > 0.05


def test_censored_fit_is_the_direct_numerical_maximum():
    rng = np.random.default_rng(7)
    k = rng.poisson(rng.gamma(2.0, 0.9 / 2.0, 200_000))
    # samples at 3 or more: half censored at a count between 3 and their own
    cen = (k >= 3) & (rng.random(k.size) < 0.5)
    obs = np.where(cen, rng.integers(3, np.maximum(k, 3) + 1), k)
    kmax = 8
    h = np.bincount(np.minimum(obs[~cen], kmax + 1), minlength=kmax + 2)
    c = np.bincount(np.minimum(obs[cen], kmax + 1), minlength=kmax + 2)
    assert h[-1] + c[-1] > 0 and c[3:].sum() > 1000
    r = fit_nb(h, c)
    best = None
    for start in ([np.log(0.5), 0.2], [np.log(1.5), 1.0]):
        o = minimize(_ref_negll, start, args=(h, c), method="Nelder-Mead",
                     options={"xatol": 1e-10, "fatol": 1e-9, "maxiter": 4000})
        best = o if best is None or o.fun < best.fun else best
    assert float(r.mean) == pytest.approx(np.exp(best.x[0]), rel=1e-6)
    assert float(r.beta) == pytest.approx(best.x[1], rel=1e-6)
    # censoring that depends on the count (half of k >= 3) is not what the model
    # assumes: the exact cells say so
    assert r.status == "misfit"


def _fd_cov(h, c, mu, b, d=1e-4):
    """Inverse Hessian of -log L in (mu, beta) by central differences of the reference."""
    def f(m, bb):
        return _ref_negll([np.log(m), bb], h, c)
    x0 = np.array([mu, b])
    st = d * x0
    H = np.zeros((2, 2))
    for i in range(2):
        for j in range(2):
            def g(si, sj, i=i, j=j):
                x = x0.copy()
                x[i] += si * st[i]
                x[j] += sj * st[j]
                return f(*x)
            H[i, j] = (g(1, 1) - g(1, -1) - g(-1, 1) + g(-1, -1)) / (4 * st[i] * st[j])
    return np.linalg.inv(H)


def test_stated_errors_are_the_observed_information():
    rng = np.random.default_rng(11)
    k = rng.poisson(rng.gamma(2.0, 0.5 / 2.0, 100_000))
    h = np.bincount(np.minimum(k, 41), minlength=42)
    assert h[-1] == 0
    r = fit_nb(h)
    cov = _fd_cov(h, np.zeros_like(h), float(r.mean), float(r.beta))
    assert float(r.mean_error) == pytest.approx(np.sqrt(cov[0, 0]), rel=1e-3)
    assert float(r.beta_error) == pytest.approx(np.sqrt(cov[1, 1]), rel=1e-3)
    # censored: a cap of 2
    c = np.zeros_like(h)
    c[2] = h[2:].sum()
    h2 = h.copy()
    h2[2:] = 0
    r2 = fit_nb(h2, c)
    cov2 = _fd_cov(h2, c, float(r2.mean), float(r2.beta))
    assert float(r2.mean_error) == pytest.approx(np.sqrt(cov2[0, 0]), rel=1e-3)
    assert float(r2.beta_error) == pytest.approx(np.sqrt(cov2[1, 1]), rel=1e-3)
    assert float(r2.beta_error) > float(r.beta_error)


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        fit_nb(np.array([5, -1, 0]))
    with pytest.raises(ValueError):
        fit_nb(np.array([5, 1, 0]), np.array([1, 0]))


# ------------------------------------------------------------------ visibility


def _v_quad(T, tau, s):
    f = lambda t: (T - t) * np.exp(-2 * (t / tau) ** s)  # noqa: E731
    pts = [p for p in tau * np.geomspace(1e-3, 1e3, 13) if p < T]
    val = quad(f, 0, T, points=pts or None, limit=500, epsabs=0, epsrel=1e-13)[0]
    return 2 * val / T**2


@pytest.mark.parametrize("s", [1.0, 0.5, 1.5])
def test_visibility_matches_quadrature(s):
    x = np.geomspace(1e-4, 1e4, 33)
    ref = np.array([_v_quad(t, 1.0, s) for t in x])
    np.testing.assert_allclose(visibility(x, 1.0, s), ref, rtol=1e-10, atol=0)
    # the same in other units
    np.testing.assert_allclose(visibility(x * 1e-3, 1e-3, s), ref, rtol=1e-10)


def test_visibility_limits():
    assert visibility(0.0, 1e-3) == 1.0
    assert visibility(0.0, 1e-3, 0.5) == 1.0
    # around the switch to the series: continuous
    x = np.linspace(0.04, 0.06, 201)
    assert np.all(np.abs(np.diff(visibility(x, 1.0))) < 1e-3)
    # far beyond tau: tau / T (single)
    assert visibility(1e6, 1.0) == pytest.approx(1e-6, rel=1e-5)


def test_fit_visibility_recovers_single_and_stretched():
    T = np.geomspace(1e-5, 1e-1, 13)
    y = 0.3 * visibility(T, 1e-3)
    f = fit_visibility(T, y, np.full_like(T, 0.003))
    assert f.status == "ok" and f.model == "single"
    assert f.beta0 == pytest.approx(0.3, rel=1e-6) and f.tau == pytest.approx(1e-3, rel=1e-6)
    assert f.stretch == 1.0 and np.isnan(f.limit) and f.n_points == 13
    assert 0 < f.tau_error < 0.1 * f.tau
    y2 = 0.2 * visibility(T, 3e-3, 0.7)
    f2 = fit_visibility(T, y2, np.full_like(T, 0.002), model="stretched")
    assert f2.status == "ok"
    assert f2.beta0 == pytest.approx(0.2, rel=1e-5)
    assert f2.tau == pytest.approx(3e-3, rel=1e-5)
    assert f2.stretch == pytest.approx(0.7, rel=1e-5)


def test_fit_visibility_limits_outside_the_exposures():
    T = np.geomspace(1e-5, 1e-2, 10)
    e = np.full_like(T, 0.003)
    slow = fit_visibility(T, 0.3 * visibility(T, 10.0), e)
    assert slow.status == "tau_above" and 1e-2 < slow.limit < 10.0
    fast = fit_visibility(T, 0.3 * visibility(T, 1e-8), 0.01 * 0.3 * visibility(T, 1e-8))
    assert fast.status == "tau_below" and 1e-8 < fast.limit < 1e-5
    y = 0.3 * visibility(T, 1e-3)
    y[2:] = np.nan
    assert fit_visibility(T, y, e).status == "few_points"


def test_beta_from_moments_is_the_variance_visibility():
    """(var - mean) / mean^2 on exact samples, its error against the scatter of seeds."""
    from xpcsviewer.fitting.xsvs import beta_from_moments

    rng = np.random.default_rng(5)
    est, errs = [], []
    for _ in range(200):
        k = rng.poisson(rng.gamma(2.0, 0.3 / 2.0, 20000)).astype(np.float64)
        s = [np.sum(k ** p) for p in (1, 2, 3, 4)]
        b, e = beta_from_moments(k.size, *s)
        assert b == pytest.approx((k.var(ddof=1) - k.mean()) / k.mean() ** 2, rel=1e-9)
        est.append(b)
        errs.append(e)
    est = np.asarray(est)
    assert abs(est.mean() - 0.5) < 3 * est.std() / np.sqrt(est.size)
    assert 0.85 < est.std() / np.mean(errs) < 1.15
    b, e = beta_from_moments(np.array([0, 5]), np.zeros(2), np.zeros(2), np.zeros(2),
                             np.zeros(2))
    assert np.isnan(b).all() and np.isnan(e).all()
