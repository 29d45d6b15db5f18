"""Batched least squares: known answers, scipy parity, batching, backends, bad curves."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import curve_fit

from xpcsviewer.backends import get_backend
from xpcsviewer.fitting import FitStatus, ParamSpec, default_params, fit_g2
from xpcsviewer.fitting.lsq import usable_errors

# (model, true parameters, noise): single, stretched, double, noisy, nearly flat
CATALOGUE = {
    "single": ("single", {"contrast": 0.3, "tau": 1e-3, "stretch": 1.0, "baseline": 1.0}, 0.002),
    "stretched": ("stretched", {"contrast": 0.2, "tau": 5e-3, "stretch": 0.7, "baseline": 1.01},
                  0.002),
    "double": (
        "double",
        {"contrast": 0.3, "tau1": 1e-4, "stretch1": 1.0, "tau2": 1e-2, "stretch2": 1.0,
         "fraction": 0.4, "baseline": 1.0},
        0.001,
    ),
    "noisy": ("single", {"contrast": 0.15, "tau": 2e-2, "stretch": 1.0, "baseline": 1.0}, 0.02),
    "nearly_flat": ("single", {"contrast": 0.03, "tau": 3e-2, "stretch": 1.0, "baseline": 1.0},
                    0.003),
}


def _scipy_fn(model, fixed):
    names = list(fixed)

    def fn(t, *free):
        p = dict(fixed)
        it = iter(free)
        for n in names:
            if p[n] is None:
                p[n] = next(it)
        if model in ("single", "stretched"):
            return p["baseline"] + p["contrast"] * np.exp(-2 * (t / p["tau"]) ** p["stretch"])
        s1 = np.exp(-((t / p["tau1"]) ** p["stretch1"]))
        s2 = np.exp(-((t / p["tau2"]) ** p["stretch2"]))
        s = p["fraction"] * s1 + (1 - p["fraction"]) * s2
        return p["baseline"] + p["contrast"] * s**2

    return fn


def _make(rng, delays, case):
    model, truth, noise = CATALOGUE[case]
    _, tau = delays
    from xpcsviewer.fitting import evaluate_model, model_param_names

    p = tuple(truth[n] for n in model_param_names(model))
    g = evaluate_model(model, tau, p)
    err = np.full_like(g, noise)
    return model, truth, tau, g + noise * rng.standard_normal(g.shape), err


@pytest.mark.parametrize("case", list(CATALOGUE))
def test_scipy_parity_catalogue(rng, delays, case, backend):
    model, _truth, tau, y, err = _make(rng, delays, case)
    res = fit_g2(tau, y, err, model=model, backend=backend)
    assert res.status[0] is FitStatus.CONVERGED, res.status[0]
    specs = default_params(model, tau, y)
    names = list(specs)
    fixed = {n: (specs[n].value if specs[n].fixed else None) for n in names}
    free = [n for n in names if not specs[n].fixed]
    popt, pcov = curve_fit(
        _scipy_fn(model, fixed), tau, y, sigma=err,
        p0=[res.params[n][0] * (1 + 1e-3) for n in free],
        bounds=([float(specs[n].lower) for n in free], [float(specs[n].upper) for n in free]),
        ftol=1e-15, xtol=1e-15, gtol=1e-15, max_nfev=10000,
    )
    # curve_fit (absolute_sigma=False) scales by chi2_red both ways; ours only up
    fn = _scipy_fn(model, fixed)
    chi2_red = np.sum(((fn(tau, *popt) - y) / err) ** 2) / (tau.size - len(free))
    rescale = np.sqrt(max(1.0, chi2_red) / chi2_red)
    assert res.errors_scaled[0] == (chi2_red > 1)
    for k, n in enumerate(free):
        np.testing.assert_allclose(res.params[n][0], popt[k], rtol=1e-6, err_msg=n)
        # scipy's 2-point Jacobian is less accurate than our central differences
        np.testing.assert_allclose(
            res.errors[n][0], np.sqrt(pcov[k, k]) * rescale, rtol=1e-3, err_msg=n
        )


@pytest.mark.parametrize("case", ["single", "stretched", "double"])
def test_known_answer_within_stated_errors(delays, case):
    # Over independent noise draws the pull (fit - truth) / error is ~N(0, 1).
    rng = np.random.default_rng(7)
    model, truth, _noise = CATALOGUE[case]
    ys = []
    for _ in range(40):
        _, _, tau, y, err = _make(rng, delays, case)
        ys.append(y)
    res = fit_g2(tau, np.array(ys), np.broadcast_to(err, (40, err.size)), model=model)
    assert all(s is FitStatus.CONVERGED for s in res.status)
    for n, v in truth.items():
        if res.fixed[n]:
            assert np.all(res.params[n] == v) and np.all(res.errors[n] == 0)
            continue
        pull = (res.params[n] - v) / res.errors[n]
        assert abs(np.mean(pull)) < 0.6, (n, np.mean(pull))
        assert 0.6 < np.std(pull) < 1.5, (n, np.std(pull))


def test_batched_equals_one_by_one(rng, delays, backend):
    _, tau = delays
    taus = np.logspace(-4.5, -1, 9)
    g2 = 1 + 0.25 * np.exp(-2 * tau[None, :] / taus[:, None])
    err = 0.003 * (1 + rng.random(g2.shape))
    y = g2 + err * rng.standard_normal(g2.shape)
    batch = fit_g2(tau, y, err, model="stretched", backend=backend)
    for b in range(len(taus)):
        one = fit_g2(tau, y[b], err[b], model="stretched", backend=backend)
        assert one.status[0] == batch.status[b]
        for n in batch.params:
            np.testing.assert_allclose(one.params[n][0], batch.params[n][b], rtol=1e-9, err_msg=n)
            np.testing.assert_allclose(one.errors[n][0], batch.errors[n][b], rtol=1e-6, err_msg=n)


def test_jax_and_numpy_agree(rng, delays):
    _, tau = delays
    taus = np.logspace(-4, -1.5, 6)
    g2 = 1 + 0.2 * np.exp(-2 * tau[None, :] / taus[:, None])
    err = np.full_like(g2, 0.002)
    y = g2 + err * rng.standard_normal(g2.shape)
    a = fit_g2(tau, y, err, model="single", backend=get_backend("numpy"))
    b = fit_g2(tau, y, err, model="single", backend=get_backend("jax"))
    assert list(a.status) == list(b.status)
    for n in a.params:
        # both reach the same optimum; the iterations may differ in the last bits
        np.testing.assert_allclose(a.params[n], b.params[n], rtol=1e-9)
        assert a.params[n].dtype == np.float64 and b.params[n].dtype == np.float64
    np.testing.assert_allclose(a.chi2_red, b.chi2_red, rtol=1e-9)


def test_bad_curves_get_statuses_not_exceptions(delays, backend):
    _, tau = delays
    n_t = tau.size
    good = 1 + 0.3 * np.exp(-2 * tau / 1e-3)
    rows = {
        "good": good,
        "all_nan": np.full(n_t, np.nan),
        "all_equal": np.full(n_t, 1.2),
        "few": good.copy(),
        "nonergodic": 1.25 + 0.001 * np.sin(np.arange(n_t)),
    }
    y = np.array(list(rows.values()))
    err = np.full_like(y, 0.002)
    valid = np.ones_like(y, bool)
    valid[3, 3:] = False  # 3 points, 3 free parameters
    res = fit_g2(tau, y, err, valid, model="single", backend=backend)
    st = dict(zip(rows, res.status, strict=True))
    assert st["good"] is FitStatus.CONVERGED
    assert st["all_nan"] is FitStatus.FAILED
    assert st["all_equal"] is FitStatus.NO_DECAY
    assert st["few"] is FitStatus.FAILED
    assert st["nonergodic"] is FitStatus.NO_DECAY
    assert "no valid points" in res.detail[1] and "3 points" in res.detail[3]
    # no relaxation time is quoted without a decay, and no numbers at all without data
    tau_rep, _ = res.reported("tau")
    assert np.isnan(tau_rep[2]) and np.isnan(tau_rep[4]) and np.isfinite(tau_rep[0])
    assert np.isfinite(res.params["baseline"][2])  # the constant's level is kept
    assert np.isnan(res.params["contrast"][1])


def test_fixed_parameter_is_held_at_user_value(rng, delays):
    _, tau = delays
    y = 1.02 + 0.3 * np.exp(-2 * tau / 1e-3) + 0.002 * rng.standard_normal(tau.size)
    specs = default_params("single", tau, y)
    specs["baseline"] = ParamSpec("baseline", 1.0, 0.9, 1.1, fixed=True)
    res = fit_g2(tau, y, np.full_like(y, 0.002), model="single", params=specs)
    assert res.params["baseline"][0] == 1.0 and res.errors["baseline"][0] == 0.0
    free = fit_g2(tau, y, np.full_like(y, 0.002), model="single")
    assert abs(free.params["baseline"][0] - 1.02) < 0.002


def test_at_bound_status(rng, delays):
    _, tau = delays
    y = 1 + 0.3 * np.exp(-2 * tau / 1e-3) + 0.001 * rng.standard_normal(tau.size)
    specs = default_params("single", tau, y)
    specs["baseline"] = ParamSpec("baseline", 0.99, 0.9, 0.999)
    res = fit_g2(tau, y, np.full_like(y, 0.001), model="single", params=specs)
    assert res.status[0] is FitStatus.AT_BOUND, res.detail[0]
    assert "baseline" in res.detail[0]
    assert res.params["baseline"][0] == pytest.approx(0.999)


def test_t_range_selects_points(rng, delays):
    _, tau = delays
    y = 1 + 0.3 * np.exp(-2 * tau / 1e-3)
    y[tau > 0.1] = 5.0  # garbage outside the range must not matter
    res = fit_g2(tau, y, np.full_like(y, 1e-3), t_range=(1e-5, 0.1))
    assert res.params["tau"][0] == pytest.approx(1e-3, rel=1e-6)
    assert res.n_points[0] == int(np.sum((tau >= 1e-5) & (tau <= 0.1)))


def test_unusable_errors_leave_their_points_out():
    err = np.array([[0.0, 1e-7, 0.002, 0.004, np.nan, 0.003]])
    valid = np.ones_like(err, bool)
    sigma, mask, weighted = usable_errors(err, valid)
    np.testing.assert_array_equal(mask, [[False, False, True, True, False, True]])
    np.testing.assert_array_equal(sigma[mask], [0.002, 0.004, 0.003])
    assert weighted[0]
    # no usable error at all: unweighted, every valid point kept
    sigma, mask, weighted = usable_errors(np.zeros((1, 3)), np.ones((1, 3), bool))
    assert not weighted[0] and mask.all() and np.all(sigma == 1.0)


def test_zero_error_point_is_not_fitted(delays):
    _, tau = delays
    y = 1 + 0.3 * np.exp(-2 * tau / 1e-3)
    err = np.full_like(y, 1e-3)
    y_bad = y.copy()
    y_bad[5], err[5] = 1.9, 0.0  # a wild point with "unknown" (0) error
    res = fit_g2(tau, y_bad, err)
    assert res.n_points[0] == tau.size - 1
    assert res.params["tau"][0] == pytest.approx(1e-3, rel=1e-6)


def test_avgcorr_recovers_tau_where_plain_model_is_biased(delays):
    frames, tau = delays
    from xpcsviewer.fitting import averaging_factors, evaluate_model

    dt = 1e-5
    m = averaging_factors(frames)
    true_tau = 1e-4  # 10 frames: the decay reaches the averaged levels (m = 2, 4)
    y = evaluate_model("single_avgcorr", tau, (0.3, true_tau, 1.0), (m, dt))
    err = np.full_like(y, 1e-4)
    corr = fit_g2(tau, y, err, model="single_avgcorr", aux=(m, dt))
    plain = fit_g2(tau, y, err, model="single")
    assert corr.params["tau"][0] == pytest.approx(true_tau, rel=1e-6)
    assert abs(plain.params["tau"][0] / true_tau - 1) > 5e-4  # ~0.1% bias: see docs


def test_curve_for_plotting(delays):
    _, tau = delays
    y = 1 + 0.3 * np.exp(-2 * tau[None, :] / np.array([[1e-3], [1e-2]]))
    res = fit_g2(tau, y, np.full_like(y, 1e-3))
    grid = np.logspace(-5, 0, 33)
    c = res.curve(grid)
    assert c.shape == (2, 33)
    np.testing.assert_allclose(c[1], 1 + 0.3 * np.exp(-2 * grid / 1e-2), rtol=1e-6)


def test_cancel_and_progress(delays):
    from xpcsviewer.progress import Cancelled, CancelToken

    _, tau = delays
    y = 1 + 0.3 * np.exp(-2 * tau / 1e-3) * np.ones((3, 1))
    seen = []
    fit_g2(tau, y, np.full_like(y, 1e-3), progress=lambda d, t, m: seen.append((d, t)))
    assert seen[0] == (0, 3) and seen[-1] == (3, 3)
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        fit_g2(tau, y, np.full_like(y, 1e-3), cancel=token)


def test_in_parallel_keeps_order_config_and_errors():
    # The candidate models and profiles of a fit run in threads: results must come back
    # in job order, each job must see the caller's RunConfig, and an error (a cancel)
    # must reach the caller.
    import time

    from xpcsviewer.backends.config import RunConfig, current_config, use_config
    from xpcsviewer.fitting.lsq_core import in_parallel

    cfg = RunConfig(backend="numpy", device="cpu")
    seen = []
    with use_config(cfg):
        out = in_parallel([lambda k=k: (time.sleep(0.02 * (3 - k)), current_config(), k)[1:]
                           for k in range(4)], lambda i, k: seen.append(i))
    assert [k for _c, k in out] == [0, 1, 2, 3]
    assert all(c == cfg for c, _k in out)
    assert sorted(seen) == [0, 1, 2, 3]

    def boom():
        raise KeyError("cancelled")

    with pytest.raises(KeyError, match="cancelled"):
        in_parallel([lambda: 1, boom])
