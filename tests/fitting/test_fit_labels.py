"""Issue 48: every label a physicist can take at its word.

A curve whose scatter its stated errors do not describe is ``errors_understated`` with
the factor, never ``no_decay``; no limit on a stretched tau the data do not determine;
a reason that names another model uses the tests the status rules use; no tau is
quoted where its status does not claim it; the JSON states both interval levels.
"""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.fitting import fit_g2
from xpcsviewer.fitting.status import (
    FitStatus,
    error_factor,
    preferred_tails,
    quotable,
    tau_quotable,
)

T = np.geomspace(1e-5, 1.0, 50)


def _one(y, e, model="auto", t=T):
    ones = np.ones((1, t.size), bool)
    return fit_g2(t[None], np.asarray(y)[None], np.asarray(e)[None], ones, model=model)


@pytest.mark.parametrize("factor", [8.0, 60.0])
def test_flat_curve_with_understated_errors_says_so_with_its_factor(factor):
    rng = np.random.default_rng(3)
    sd = 0.01
    y = 1.0 + rng.normal(0.0, sd, T.size)  # flat: white scatter `factor` x the errors
    f = _one(y, np.full(T.size, sd / factor), model="single")
    assert f.status[0] is FitStatus.ERRORS_UNDERSTATED, f.detail[0]
    # the factor is the scatter over the stated errors, measured independently here
    measured = np.std(y - y.mean()) / (sd / factor)
    said = float(f.detail[0].split("x the stated errors")[0].split()[-1])
    assert said == pytest.approx(measured, rel=0.15)
    assert error_factor(f.chi2_red[0]) == pytest.approx(said, rel=2e-3)
    # the same curve with errors that describe it: no decay, stated as physics
    g = _one(y, np.full(T.size, sd), model="single")
    assert g.status[0] is FitStatus.NO_DECAY
    assert np.isnan(f.reported("tau")[0][0]) and np.isnan(g.reported("tau")[0][0])


def test_a_decay_with_understated_white_errors_keeps_its_status_and_scaled_errors():
    rng = np.random.default_rng(4)
    sd = 0.004
    y = 1.0 + 0.3 * np.exp(-2 * T / 0.01) + rng.normal(0.0, sd, T.size)
    f = _one(y, np.full(T.size, sd / 10), model="single")
    assert f.status[0] is FitStatus.CONVERGED, f.detail[0]
    assert f.errors_scaled[0] and error_factor(f.chi2_red[0]) == pytest.approx(10, rel=0.3)
    assert abs(f.params["tau"][0] / 0.01 - 1) < 4 * f.errors["tau"][0] / 0.01


def test_no_limit_on_a_stretched_tau_whose_stretch_is_undetermined():
    t = np.geomspace(1e-3, 1.0, 40)
    rng = np.random.default_rng(0)
    sd = 0.01
    y = 1 + 0.2 * np.exp(-2 * (t / 5.0) ** 0.5) + rng.normal(0, sd, t.size)
    f = _one(y, np.full(t.size, sd), model="stretched", t=t)
    assert f.status[0] is FitStatus.UNRESOLVED
    assert f.detail[0].startswith("stretched tau not determined"), f.detail[0]
    assert f.errors["stretch"][0] / f.params["stretch"][0] >= 0.25
    assert np.isnan(f.tau_lower_limit[0]) and np.isnan(f.tau_upper_limit[0])
    assert np.isnan(f.reported("tau")[0][0])
    # auto says what the single exponential on the same points gives
    a = _one(y, np.full(t.size, sd), model="auto", t=t)
    if a.model_of(0).value == "stretched":
        assert "the single exponential on the same points:" in a.detail[0]


def test_a_stretched_limit_stays_where_the_stretch_is_determined():
    # a long window from 10 us: the stretch is pinned, the limit is a true bound
    rng = np.random.default_rng(1)
    sd = 0.003
    y = 1 + 0.2 * np.exp(-2 * (T / 3.0) ** 0.5) + rng.normal(0, sd, T.size)
    f = _one(y, np.full(T.size, sd), model="stretched")
    assert f.status[0] is FitStatus.UNRESOLVED
    assert f.errors["stretch"][0] / f.params["stretch"][0] < 0.25
    assert 0 < f.tau_lower_limit[0] < 3.0  # "tau > 2.3 s": true, tau is 3 s


def test_preferred_model_must_pass_the_early_scan_too():
    own = np.array([100.0])
    from xpcsviewer.fitting.models import G2Model

    # the double's runs z is fine but its early scan flags it (z made infinite)
    tails = preferred_tails(own, [(G2Model.DOUBLE, np.array([90.0]), np.array([np.inf]))])
    assert tails == ["; no candidate model fits without structure"]
    tails = preferred_tails(own, [(G2Model.DOUBLE, np.array([90.0]), np.array([0.5]))])
    assert tails[0].startswith("; double exponential")


def test_tau_is_quoted_only_where_the_status_claims_it():
    st = np.array(["converged", "at_bound", "at_bound", "errors_understated", "poor_fit",
                   "unresolved", "unresolved"], dtype=object)
    why = np.array(["", "baseline at its lower bound", "stretch at its lower bound (0.2)", "",
                    "", "", ""], dtype=object)
    nan = np.full(7, np.nan)
    lo = nan.copy()
    lo[6] = 2.0
    names = np.array(["", "", "", "", "", "", "tau2"], dtype=object)
    v = np.arange(1.0, 8.0)
    got, err = quotable("tau1", v, v, st, lo, nan, names, why)
    np.testing.assert_array_equal(np.isfinite(got),
                                  [True, True, False, False, False, False, True])
    assert np.isnan(err[~np.isfinite(got)]).all()
    # the mean time is never quoted under a limit, on any of the times
    got, _ = quotable("tau_mean", v, v, st, lo, nan, names, why)
    assert np.isnan(got[6])
    assert tau_quotable("unresolved", "", "tau2", "tau2") is False
