"""g2 model functions, averaging factors and data-driven starts."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.fitting import (
    G2Model,
    averaging_factors,
    default_params,
    evaluate_model,
    model_param_names,
)


def test_single_and_stretched_formula():
    t = np.logspace(-6, 0, 50)
    g = evaluate_model("single", t, (0.3, 1e-3, 1.0, 1.01))
    np.testing.assert_allclose(g, 1.01 + 0.3 * np.exp(-2 * t / 1e-3), rtol=1e-14)
    g = evaluate_model("stretched", t, (0.3, 1e-3, 0.6, 1.0))
    np.testing.assert_allclose(g, 1.0 + 0.3 * np.exp(-2 * (t / 1e-3) ** 0.6), rtol=1e-14)


def test_double_formula_and_single_limit():
    t = np.logspace(-6, 0, 50)
    g = evaluate_model("double", t, (0.2, 1e-4, 1.0, 1e-2, 1.0, 0.3, 1.0))
    ref = 1.0 + 0.2 * (0.3 * np.exp(-t / 1e-4) + 0.7 * np.exp(-t / 1e-2)) ** 2
    np.testing.assert_allclose(g, ref, rtol=1e-14)
    # f = 1 is the single model with the same tau
    g1 = evaluate_model("double", t, (0.2, 1e-3, 1.0, 1e-2, 1.0, 1.0, 1.0))
    np.testing.assert_allclose(g1, evaluate_model("single", t, (0.2, 1e-3, 1.0, 1.0)), rtol=1e-14)


def test_averaging_factors_follow_multitau_layout():
    frames = np.array([1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40])
    m = averaging_factors(frames)
    np.testing.assert_array_equal(m, [1] * 8 + [2] * 4 + [4] * 4 + [8])


@pytest.mark.parametrize("m", [1, 2, 4, 16])
@pytest.mark.parametrize("gamma_dt", [1e-4, 0.05, 0.7])
def test_avgcorr_matches_brute_force_frame_average(m, gamma_dt):
    # Correlating intensities averaged over m frames: average the field decay over all
    # m^2 frame pairs of the two windows (lag >= m frames, so no absolute values needed).
    dt, tau = 1.0, 1.0 / gamma_dt
    lags = np.array([m * 8, m * 10, m * 15], dtype=float) * dt
    i = np.arange(m)
    brute = np.array(
        [np.mean(np.exp(-2.0 * (lag + (i[:, None] - i[None, :]) * dt) / tau)) for lag in lags]
    )
    g = evaluate_model(
        "single_avgcorr", lags, (1.0, tau, 0.0), (np.full(lags.shape, float(m)), dt)
    )
    np.testing.assert_allclose(g, brute, rtol=1e-10)


def test_avgcorr_without_aux_is_an_error():
    with pytest.raises(ValueError, match="aux"):
        evaluate_model("single_avgcorr", np.ones(3), (1.0, 1.0, 1.0))


def test_model_names_and_parse():
    assert model_param_names("single") == ("contrast", "tau", "stretch", "baseline")
    assert G2Model.parse("DOUBLE") is G2Model.DOUBLE
    with pytest.raises(ValueError, match="unknown g2 model"):
        G2Model.parse("triple")


def test_default_params_from_data(delays):
    _, tau = delays
    taus = np.array([1e-4, 1e-3, 1e-2])
    g2 = 1.0 + 0.3 * np.exp(-2 * tau[None, :] / taus[:, None])
    specs = default_params("single", tau, g2, np.ones_like(g2, bool))
    # A start, not a fit: the 1/e crossing with contrast from the first 3 delays
    # (which have already decayed a little for the fastest curve).
    np.testing.assert_allclose(specs["tau"].value, taus, rtol=0.5)
    np.testing.assert_allclose(specs["contrast"].value, 0.3, rtol=0.35)
    np.testing.assert_allclose(specs["baseline"].value, 1.0, atol=1e-3)
    assert specs["stretch"].fixed and specs["stretch"].value == 1.0
    np.testing.assert_allclose(specs["tau"].lower, tau[0] / 10)
    np.testing.assert_allclose(specs["tau"].upper, tau[-1] * 10)
    assert not default_params("stretched", tau, g2[0])["stretch"].fixed
    d = default_params("double", tau, g2[1])
    assert d["tau1"].value < d["tau2"].value and d["stretch1"].fixed


@pytest.mark.parametrize(
    ("model", "p"),
    [
        ("stretched", (0.3, 2e-3, 0.7, 1.01)),
        ("double", (0.25, 1e-4, 0.9, 1e-2, 1.3, 0.35, 1.0)),
        ("single_avgcorr", (0.2, 3e-4, 1.0)),  # tau of 30 frames: averaging matters
        ("single_avgcorr", (0.2, 2e-6, 1.0)),  # tau below a frame: large x
        ("single_avgcorr", (0.2, 5.0, 1.0)),  # slow: x -> 0
    ],
)
def test_analytic_jacobian_matches_finite_differences(model, p):
    from xpcsviewer.fitting.models import (
        LOG_PARAMS,
        averaging_factors,
        evaluate_with_jacobian,
    )

    t = np.logspace(-6, 0, 40)
    aux = None
    if model == "single_avgcorr":  # the 8-ID-I layout, frame time 10 us
        frames = np.array([1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48,
                           56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512,
                           640, 768, 896, 1024, 1280, 1536, 1792, 2048], float)
        t = frames * 1e-5
        aux = (averaging_factors(frames), 1e-5)
    g, d = evaluate_with_jacobian(model, t, p, aux=aux)
    np.testing.assert_allclose(g, evaluate_model(model, t, p, aux), rtol=1e-15)
    names = model_param_names(model)
    for k, n in enumerate(names):
        h = 1e-6
        up, dn = list(p), list(p)
        if n in LOG_PARAMS:  # derivative with respect to log(tau)
            up[k], dn[k] = p[k] * np.exp(h), p[k] * np.exp(-h)
        else:
            up[k], dn[k] = p[k] + h, p[k] - h
        fd = (evaluate_model(model, t, tuple(up), aux)
              - evaluate_model(model, t, tuple(dn), aux)) / (2 * h)
        np.testing.assert_allclose(d[k], fd, rtol=1e-6, atol=1e-9, err_msg=n)


def test_starts_and_bounds_ignore_a_wild_point():
    """Real photon-starved files have isolated g2 ~ 300: starts and the contrast
    bound come from the bulk of the curve, not from that point."""
    from xpcsviewer.fitting.models import default_params, estimate_starts

    tau = np.geomspace(1e-5, 1e-1, 40)
    g2 = 1.0 + 0.2 * np.exp(-2 * tau / 1e-3)
    wild = g2.copy()
    wild[1] = 336.0
    wild[-2] = 250.0
    ok = np.ones_like(g2, bool)
    est = estimate_starts(tau, wild[None], ok[None])
    assert est["contrast"][0] == pytest.approx(0.2, abs=0.01)
    assert est["baseline"][0] == pytest.approx(1.0, abs=1e-3)
    spec = default_params("single", tau, wild, ok)
    assert spec["contrast"].upper == pytest.approx(1.0)


def test_shared_contrast_start_is_the_setups_contrast_not_decayed_curves():
    """Issue 49: the fit table showed a contrast start of 0.03 (the median over curves,
    most of which had decayed before their first delays) beside fitted contrasts of 0.2.
    One start for the setup comes from the curves that still hold their correlation."""
    from xpcsviewer.fitting.models import estimate_starts, shared_contrast_start

    rng = np.random.default_rng(3)
    tau = np.geomspace(4e-5, 1.0, 60)
    taus = 2e-3 / np.arange(1, 17) ** 2  # tau ~ 1/q^2 over 16 bins
    g2 = 1.0 + 0.2 * np.exp(-2 * tau[None] / taus[:, None])
    g2 += rng.normal(0, 0.01, g2.shape)
    ok = np.ones_like(g2, bool)
    per_curve = estimate_starts(tau, g2, ok)["contrast"]
    assert np.median(per_curve) < 0.1  # the old shown start
    assert shared_contrast_start(tau, g2, ok) == pytest.approx(0.2, rel=0.1)
    # nothing above the baseline: no estimate, not a number
    assert np.isnan(shared_contrast_start(tau, np.ones((2, tau.size)), ok[:2]))
