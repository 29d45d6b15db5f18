"""Residual tests against correlated noise (age cuts of two-time maps): the null from
independent parts of the data, against AR(1) noise's known inflation, and the fit
statuses of curves whose noise is correlated along the delays."""

import numpy as np
import pytest

from xpcsviewer.fitting import fit_g2
from xpcsviewer.fitting.adequacy import calibrated_runs, noise_calibration, runs_test


def _ar1(rng, shape, rho):
    """Unit-variance AR(1) series along the last axis."""
    x = np.empty(shape)
    x[..., 0] = rng.standard_normal(shape[:-1])
    s = np.sqrt(1 - rho**2)
    for i in range(1, shape[-1]):
        x[..., i] = rho * x[..., i - 1] + s * rng.standard_normal(shape[:-1])
    return x


def test_white_parts_leave_the_tests_as_they_are():
    rng = np.random.default_rng(0)
    n_b, k, t = 40, 16, 200
    noise = rng.standard_normal((n_b, k, t))
    ref, c = noise_calibration(noise, np.ones((n_b, t)), np.ones((n_b, t), bool))
    assert abs(np.mean(ref[:, 0])) < 0.15 and np.mean(ref[:, 1]) == pytest.approx(1, abs=0.1)
    assert np.median(c[:, -1]) == pytest.approx(1.0, abs=0.2)
    z = rng.standard_normal(n_b)
    np.testing.assert_allclose(calibrated_runs(z, np.full((n_b, 2), np.nan)), z)


def test_ar1_parts_give_its_known_variance_inflation_and_runs_null():
    rng = np.random.default_rng(1)
    n_b, k, t, rho = 30, 16, 400, 0.8
    parts = _ar1(rng, (n_b, k, t), rho)
    sigma, mask = np.full((n_b, t), 0.5), np.ones((n_b, t), bool)
    ref, c = noise_calibration(0.5 * parts, sigma, mask)
    # Var(sum of k AR(1) points) / k -> (1 + rho) / (1 - rho) = 9 for k >> 1 / (1 - rho)
    assert np.median(c[:, -1]) == pytest.approx((1 + rho) / (1 - rho), rel=0.2)
    # a fresh AR(1) residual: white runs z far below -3, calibrated about N(0, 1)
    data = _ar1(rng, (n_b, t), rho)
    z, _ = runs_test(data, mask)
    assert np.median(z) < -8
    cal = calibrated_runs(z, ref)
    assert abs(np.median(cal)) < 0.6 and np.mean(np.abs(cal) > 3) <= 0.1
    # a part with a non-finite point where the curve is fitted is left out
    bad = 0.5 * parts.copy()
    bad[:, :13, 5] = np.nan  # 3 good parts remain: too few to calibrate
    ref2, c2 = noise_calibration(bad, sigma, mask)
    assert np.isnan(ref2).all() and np.all(c2 == 1.0)


def _curves(rng, n_b, rho, k=16, shape="single"):
    t = np.arange(1, 301) * 0.01
    tau = 0.5
    if shape == "single":
        g = 1 + 0.2 * np.exp(-2 * t / tau)
    else:  # two well-separated decays: a single exponential misses them
        g = 1 + 0.1 * np.exp(-2 * t / 0.05) + 0.1 * np.exp(-2 * t / 1.5)
    sig = 0.004
    y = g + sig * _ar1(rng, (n_b, t.size), rho)
    parts = sig * np.sqrt(k) * _ar1(rng, (n_b, k, t.size), rho)
    return t, y, np.full((n_b, t.size), sig), parts


def test_correlated_noise_is_not_a_misfit_when_the_parts_show_it():
    rng = np.random.default_rng(2)
    t, y, e, parts = _curves(rng, 12, 0.85)
    white = fit_g2(t, y, e, model="single")
    cal = fit_g2(t, y, e, model="single", noise=parts)
    assert np.mean(white.status == "misfit") >= 0.5
    assert np.mean(cal.status == "misfit") <= 0.2
    # the parts change the tests only, never the fitted numbers
    np.testing.assert_allclose(cal.params["tau"], white.params["tau"], rtol=1e-10)
    assert np.median(np.abs(cal.params["tau"] / 0.5 - 1)) < 0.1


def test_a_wrong_model_is_still_a_misfit_with_the_parts():
    rng = np.random.default_rng(3)
    t, y, e, parts = _curves(rng, 8, 0.5, shape="double")
    cal = fit_g2(t, y, e, model="single", noise=parts)
    assert np.mean(cal.status == "misfit") >= 0.75
    auto = fit_g2(t, y, e, model="auto", noise=parts)
    assert np.mean(np.asarray(auto.models, object) == "double") >= 0.75


def test_noise_of_the_wrong_shape_is_refused():
    t = np.linspace(0.01, 1, 50)
    y = 1 + 0.2 * np.exp(-2 * t / 0.2)
    with pytest.raises(ValueError, match="noise has shape"):
        fit_g2(t, y[None], np.full((1, 50), 0.01), noise=np.zeros((1, 4, 49)))
