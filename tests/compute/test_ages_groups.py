"""Tau errors of the age cuts from independent pixel groups (compute/ages_groups.py)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from xpcsviewer.compute.ages.groups import MIN_GROUPS, batch_sd, tau_influence


def test_batch_sd_is_the_standard_error_of_the_mean_for_equal_weights():
    rng = np.random.default_rng(0)
    x = rng.normal(3.0, 2.0, 12)
    assert batch_sd(x, np.ones(12)) == pytest.approx(np.std(x, ddof=1) / np.sqrt(12))
    # weights are renormalised over the finite values; too few groups say nothing
    x2 = np.append(x, np.nan)
    assert batch_sd(x2, np.ones(13)) == pytest.approx(batch_sd(x, np.ones(12)))
    assert np.isnan(batch_sd(x[: MIN_GROUPS - 1], np.ones(MIN_GROUPS - 1)))
    assert np.isnan(batch_sd(x, np.zeros(12)))


def test_tau_influence_is_the_linearised_refit():
    from scipy.optimize import least_squares

    lag = np.geomspace(0.01, 2.0, 40)
    err = np.full(lag.size, 0.01)
    tau, beta, base = 0.3, 0.2, 1.0

    def fit(y):
        r = least_squares(lambda p: (p[2] + p[0] * np.exp(-2 * lag / p[1]) - y) / err,
                          [beta, tau, base], xtol=1e-14, ftol=1e-14, gtol=1e-14)
        return r.x[1]

    y0 = base + beta * np.exp(-2 * lag / tau)
    h = tau_influence(lag, err, tau, beta)
    d = 1e-4 * np.random.default_rng(1).standard_normal(lag.size)
    assert fit(y0 + d) - tau == pytest.approx(float(h @ d), rel=2e-3)


def _trial(rng, k=12, n=120, dt=0.01, tau=0.15, beta=0.2, spread=0.15, white=0.004):
    """K group maps whose relaxation time differs by group (speckle samples differ):
    their mean's cut has an error correlated across all lags, which a fit's covariance
    cannot see; plus white noise per entry."""
    t = np.arange(n) * dt
    lag = np.abs(t[:, None] - t[None, :])
    maps = []
    for _ in range(k):
        tg = tau * (1 + spread * rng.standard_normal())
        m = 1 + beta * np.exp(-2 * lag / tg) + white * rng.standard_normal((n, n))
        maps.append(np.triu(m) + np.triu(m, 1).T)
    maps = np.array(maps)
    return maps.mean(axis=0), maps


@pytest.mark.slow
def test_group_errors_cover_an_error_correlated_across_lags():
    from xpcsviewer.compute.ages.age_lag import from_full_maps
    from xpcsviewer.jobs.ages import analyse_ages

    rng = np.random.default_rng(7)
    tau, k = 0.15, 12
    pulls_fit, pulls_grp = [], []
    for _ in range(40):
        whole, maps = _trial(rng, k=k, tau=tau)
        amap = from_full_maps([whole], [1], 0.01)
        plain = analyse_ages(amap, n_windows=1, model="single").fits
        grp = SimpleNamespace(bins=[1], pixels=np.full((k, 1), 100), maps=[maps])
        out = analyse_ages(amap, n_windows=1, model="single", groups=grp).fits
        assert out.tau_err_source == f"pixel groups ({k})"
        np.testing.assert_array_equal(out.tau, plain.tau)
        pulls_fit.append((plain.tau[0, 0, 0] - tau) / plain.tau_err[0, 0, 0])
        pulls_grp.append((out.tau[0, 0, 0] - tau) / out.tau_err[0, 0, 0])
    sd_fit, sd_grp = np.std(pulls_fit), np.std(pulls_grp)
    # the fit's own error misses the groups' spread; the groups' error holds it
    assert sd_fit > 3
    assert 0.7 < sd_grp < 1.4


def test_law_with_errors_moves_intervals_and_verdict():
    from xpcsviewer.fitting.ageing_law import fit_law, law_with_errors

    t = np.array([1.0, 3.0, 5.0, 7.0, 9.0])
    lf = fit_law(t, 0.2 + 0.1 * t, np.full(5, 0.01), "linear")
    assert lf.verdict == "ageing" and lf.error["a"] < 0.01
    wide = law_with_errors(lf, {"a": 0.05, "tau0": np.nan})
    assert wide.value == lf.value and wide.error["tau0"] == lf.error["tau0"]
    assert wide.error["a"] == 0.05 and wide.verdict == "stationary"  # 0.1 - 2.576 * 0.05 < 0
    assert wide.interval["a"] == pytest.approx((0.1 - 1.959964 * 0.05, 0.1 + 1.959964 * 0.05))
    pw = fit_law(t, 0.3 * t ** 0.5, np.full(5, 0.01), "power")
    p2 = law_with_errors(pw, {"tau0": 0.03})
    lo, hi = p2.interval["tau0"]
    assert lo < pw.value["tau0"] < hi and hi / pw.value["tau0"] == pytest.approx(
        pw.value["tau0"] / lo)


def test_an_open_tau_keeps_the_fits_error():
    """Beyond the window (unresolved, or at a bound) tau's interval is open: the groups'
    linearised spread is not its error, so the fit's stays. A law reading a tau at a
    bound keeps its own errors; an unresolved tau enters every group's law as that
    group's own lower limit (issue 48: a limit the law passes below pays as a value, so
    its noise moves the law; the cuts at the run's ends give such points)."""
    from dataclasses import replace

    from xpcsviewer.compute.ages.age_lag import from_full_maps
    from xpcsviewer.fitting.ageing_law import with_tau_errors
    from xpcsviewer.jobs.ages import _group_law_errors, analyse_ages

    rng = np.random.default_rng(3)
    whole, _maps = _trial(rng, k=12, tau=0.1, white=0.01)
    plain = analyse_ages(from_full_maps([whole], [1], 0.01), n_windows=3,
                         model="single").fits
    st = np.array(plain.status, dtype=object)
    assert (st[:, :2] == "converged").all()
    st[:, 2] = "unresolved"  # the last window's, as a cut at the run's end gives them
    # an unresolved tau with a value, as the multi-tau map's cuts give them
    fits = replace(plain, status=st, tau=np.where(st == "unresolved", 0.9, plain.tau),
                   tau_err=np.where(st == "unresolved", 0.3, plain.tau_err))
    out = with_tau_errors(fits, np.full(fits.tau.shape, 0.01), "pixel groups (12)")
    np.testing.assert_array_equal(out.tau_err[st == "unresolved"], 0.3)
    np.testing.assert_array_equal(out.tau_err[st == "converged"], 0.01)
    assert out.tau_err_source == "pixel groups (12)"
    tau_g = np.broadcast_to(fits.tau, (12, *fits.tau.shape)) * rng.uniform(0.9, 1.1, (12, 1, 1, 1))
    errs = _group_law_errors(fits, tau_g, np.full((12, 1), 100.0))
    assert all(errs[name][0] for name in errs)
    assert all(errs[name][0]["dof"] == 11 for name in errs)  # 12 groups
    # an unresolved tau is each group's own lower limit: their values there count
    shaken = np.where(st == "unresolved", tau_g * 3.0, tau_g)
    assert _group_law_errors(fits, shaken, np.full((12, 1), 100.0)) != errs
    bounded = replace(fits, status=np.where(st == "unresolved", "at_bound", st))
    errs = _group_law_errors(bounded, tau_g, np.full((12, 1), 100.0))
    for name in errs:
        assert errs[name][0] == {}  # a law reading a tau at a bound keeps its own errors
    only_conv = replace(fits, status=np.where(st == "unresolved", "no_decay", st))
    errs = _group_law_errors(only_conv, tau_g, np.full((12, 1), 100.0))
    assert all(errs[name][0] for name in errs)  # converged points only: from the groups


def _ar1(rng, n, rho):
    x = np.empty(n)
    x[0] = rng.standard_normal()
    for i in range(1, n):
        x[i] = rho * x[i - 1] + np.sqrt(1 - rho**2) * rng.standard_normal()
    return x


def _frame_noise_maps(rng, k=16, n=160, dt=0.01, tau=0.3, ageing=0.0, s=0.03):
    """K group maps with a per-frame fluctuation u(t1) u(t2) (AR(1) over tau/2): the
    same frames behind every lag, so the two ways' difference is correlated over lags;
    ``ageing``: tau grows as tau (1 + ageing * age)."""
    t = np.arange(n) * dt
    lag = np.abs(t[:, None] - t[None, :])
    tl = tau * (1 + ageing * 0.5 * (t[:, None] + t[None, :]))
    maps = []
    for _ in range(k):
        u = _ar1(rng, n, np.exp(-dt / (tau / 2)))
        m = (1 + 0.2 * np.exp(-2 * lag / tl) + s * np.outer(u, u)
             + 0.01 * rng.standard_normal((n, n)))
        maps.append(np.triu(m) + np.triu(m, 1).T)
    maps = np.array(maps)
    return maps.mean(axis=0), maps


def test_the_ways_flag_is_judged_against_the_groups_null():
    """On stationary maps whose noise is correlated over lags the lag-independent
    chi-square flags the two ways often; against the groups' null about never. An
    ageing map is still flagged."""
    from xpcsviewer.compute.ages.age_lag import from_full_maps
    from xpcsviewer.compute.ages.analysis import FLAG_P, age_cuts
    from xpcsviewer.compute.ages.groups import FLAG_MIN_GROUPS, group_cut_g2, group_flag
    from xpcsviewer.jobs.ages import windows_for

    rng = np.random.default_rng(0)
    counts = {}
    for ageing in (0.0, 3.0):
        naive = cal = 0
        for _ in range(10):
            whole, maps = _frame_noise_maps(rng, ageing=ageing)
            amap = from_full_maps([whole], [1], 0.01)
            cuts = age_cuts(amap, windows_for(amap, n_windows=3))
            grp = SimpleNamespace(bins=[1], pixels=np.full((16, 1), 100), maps=[maps])
            g2, wt = group_cut_g2(cuts, grp)
            flag = group_flag(cuts, g2, wt, FLAG_P)
            assert not (flag & ~cuts.disagree).any()  # never beyond the cuts' own flag
            naive += int(cuts.disagree.sum())
            cal += int(flag.sum())
        counts[ageing] = (naive, cal)
    assert counts[0.0][0] >= 4 and counts[0.0][1] <= 1  # of 30 (window, map) tests
    assert counts[3.0][1] >= 8
    # too few groups: the cuts' own flag stands
    few = SimpleNamespace(bins=[1], pixels=np.full((FLAG_MIN_GROUPS - 1, 1), 100),
                          maps=[maps[: FLAG_MIN_GROUPS - 1]])
    g2, wt = group_cut_g2(cuts, few)
    np.testing.assert_array_equal(group_flag(cuts, g2, wt, FLAG_P), cuts.disagree)
