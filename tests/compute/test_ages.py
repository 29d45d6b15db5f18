"""g2 by age (issue 35): the cuts against a brute-force loop over the full map, honest
errors on independent and t1-correlated noise, the disagreement flag's false rate,
the two projections on a stationary and an ageing series, the ageing law's interval
coverage and verdicts, and chi4 against its noise floor."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.compute.ages.age_lag import AgeLagLevel, AgeLagMap, from_full_maps
from xpcsviewer.compute.ages.analysis import AgeWindows, age_cut_g2, age_cuts, age_windows
from xpcsviewer.fitting.ageing_law import fit_law
from xpcsviewer.synthetic.analytic import c2_model

DT = 0.02


def _maps(n: int, tau0: float, ta: float | None, sigma: float, rng, beta: float = 0.2,
          rho: float = 0.0, n_bins: int = 1) -> list[np.ndarray]:
    """Analytic C2 (Gamma(t) = 1 / (tau0 (1 + t / ta))) plus noise; with ``rho`` the
    noise of each diagonal is AR(1) along t1 (entries at nearby t1 correlated)."""
    t = np.arange(n) * DT
    fac = None if ta is None else (lambda x: 1.0 / (1.0 + x / ta))
    out = []
    for _ in range(n_bins):
        c = c2_model(t, 1.0 / tau0, beta, fac)
        noise = np.zeros((n, n))
        for lag in range(1, n):
            e = rng.normal(0, sigma, n - lag)
            if rho:
                for i in range(1, e.size):
                    e[i] = rho * e[i - 1] + np.sqrt(1 - rho * rho) * e[i]
            idx = np.arange(n - lag)
            noise[idx, idx + lag] = e
        c = c + noise + noise.T
        out.append(c)
    return out


def _amap(maps: list[np.ndarray]) -> AgeLagMap:
    return from_full_maps(maps, list(range(1, len(maps) + 1)), DT)


def test_age_windows_explicit_equal_and_log():
    w = age_windows([1.0, 3.0, 5.0], 1.0)
    assert np.allclose(w.lo, [0.5, 2.5, 4.5]) and np.allclose(w.hi, [1.5, 3.5, 5.5])
    w = age_windows([1.0, 3.0], [1.0, 2.0])
    assert np.allclose(w.widths, [1.0, 2.0])
    w = age_windows([2.0, 3.0, 5.0])  # default width: the smallest spacing
    assert np.allclose(w.widths, 1.0)
    w = age_windows(n=4, span=(0.0, 8.0))
    assert np.allclose(w.lo, [0, 2, 4, 6]) and np.allclose(w.hi, [2, 4, 6, 8])
    w = age_windows(n=3, log=True, span=(0.0, 8.0))
    assert np.allclose(w.lo, [1, 2, 4]) and np.allclose(w.hi, [2, 4, 8])
    with pytest.raises(ValueError):
        age_windows([1.0], -1.0)
    with pytest.raises(ValueError):
        age_windows()


def test_cuts_equal_a_brute_force_loop_over_the_full_map():
    rng = np.random.default_rng(1)
    n = 37
    maps = [1.0 + rng.random((n, n)), 1.0 + rng.random((n, n))]
    maps = [np.triu(m) + np.triu(m, 1).T for m in maps]
    win = AgeWindows(np.array([0.13, 0.31, 0.5]), np.array([0.1, 0.17, 0.3]))
    cuts = age_cuts(_amap(maps), win)
    for b, m in enumerate(maps):
        for wi in range(win.n):
            lo, hi = win.lo[wi], win.hi[wi]
            for lag in range(n):
                got = {0: [], 1: []}
                for i in range(n - lag):
                    j = i + lag
                    age, t1 = 0.5 * (i + j) * DT, i * DT
                    if lo <= age < hi:
                        got[0].append(m[i, j])
                    if lo <= t1 < hi:
                        got[1].append(m[i, j])
                for way in (0, 1):
                    vals = np.array(got[way])
                    assert cuts.n_entries[way, wi, lag] == vals.size
                    if vals.size:
                        assert cuts.g2[way, wi, b, lag] == pytest.approx(vals.mean(), rel=1e-13)
                    else:
                        assert np.isnan(cuts.g2[way, wi, b, lag])
                vals = np.array(got[0])
                if vals.size >= 3:  # chi4: var over t1 / (<C> - 1)^2
                    ref = vals.var(ddof=1) / (vals.mean() - 1) ** 2
                    assert cuts.chi4[wi, b, lag] == pytest.approx(ref, rel=1e-10)
                    fl = 0.5 * np.mean(np.diff(vals) ** 2) / (vals.mean() - 1) ** 2
                    assert cuts.chi4_floor[wi, b, lag] == pytest.approx(fl, rel=1e-10)


def test_a_lag_held_by_two_levels_is_read_from_the_finest():
    c0 = np.full((1, 4, 3), 2.0)
    c1 = np.full((1, 2, 2), 5.0)
    lev0 = AgeLagLevel(1, np.arange(4.0), np.array([0.0, 1.0, 2.0]), c0, np.ones((4, 3)))
    lev1 = AgeLagLevel(2, np.array([0.0, 2.0]), np.array([2.0, 4.0]), c1, np.ones((2, 2)))
    amap = AgeLagMap(np.array([1]), 6, 1.0, (lev0, lev1))
    cuts = age_cuts(amap, AgeWindows(np.array([3.0]), np.array([6.0])))
    assert cuts.lag.tolist() == [0, 1, 2, 4]
    assert cuts.g2[0, 0, 0].tolist() == [2.0, 2.0, 2.0, 5.0]


def test_the_means_alone_equal_the_full_cuts_bit_for_bit():
    # the pixel groups' cuts read only g2 (age_cut_g2): the same numbers as age_cuts
    rng = np.random.default_rng(7)
    n = 41
    maps = [1.0 + rng.random((n, n)) for _ in range(3)]
    maps = [np.triu(m) + np.triu(m, 1).T for m in maps]
    maps[1][3, 9] = np.nan  # an entry missing in one bin drops it from every bin
    win = AgeWindows(np.array([0.13, 0.31, 0.6]), np.array([0.1, 0.17, 0.4]))
    full = age_cuts(_amap(maps), win)
    lag, g2 = age_cut_g2(_amap(maps), win)
    assert np.array_equal(lag, full.lag)
    assert np.array_equal(g2, full.g2, equal_nan=True)
    # a multi-level map: lags from two levels
    c0 = rng.random((2, 6, 3)) + 1.0
    c1 = rng.random((2, 3, 2)) + 1.0
    lev0 = AgeLagLevel(1, np.arange(6.0), np.array([0.0, 1.0, 2.0]), c0, np.ones((6, 3)))
    lev1 = AgeLagLevel(2, np.array([0.0, 2.0, 4.0]), np.array([2.0, 4.0]), c1,
                       np.ones((3, 2)))
    amap = AgeLagMap(np.array([1, 2]), 6, 1.0, (lev0, lev1))
    w2 = AgeWindows(np.array([1.5, 4.0]), np.array([3.0, 2.0]))
    full = age_cuts(amap, w2)
    lag, g2 = age_cut_g2(amap, w2)
    assert np.array_equal(lag, full.lag)
    assert np.array_equal(g2, full.g2, equal_nan=True)
    assert np.isfinite(g2).any()


def _pulls(rho: float, seeds: int) -> tuple[np.ndarray, np.ndarray]:
    """(pulls with our errors, pulls with independent-entry errors) of constant-age g2
    on stationary maps, at lags 1..30."""
    tau0, beta, n = 0.4, 0.2, 160
    ours, naive = [], []
    win = age_windows([1.0, 2.2], 1.2)
    lag = np.arange(1, 31)
    truth = 1 + beta * np.exp(-2 * lag * DT / tau0)
    for s in range(seeds):
        rng = np.random.default_rng(100 + s)
        m = _maps(n, tau0, None, 0.1, rng, beta, rho)
        cuts = age_cuts(_amap(m), win)
        g = cuts.g2[0, :, 0, 1:31]
        ours.append((g - truth) / cuts.g2_err[0, :, 0, 1:31])
        # the independent-entry error: sample sd / sqrt(n) along the cut
        sd = []
        for wi in range(win.n):
            row = []
            for L in lag:
                i = np.arange(n - L)
                age = (i + 0.5 * L) * DT
                v = m[0][i, i + L][(age >= win.lo[wi]) & (age < win.hi[wi])]
                row.append(v.std(ddof=1) / np.sqrt(v.size))
            sd.append(row)
        naive.append((g - truth) / np.array(sd))
    return np.array(ours).ravel(), np.array(naive).ravel()


@pytest.mark.parametrize("rho", [0.0, 0.8])
def test_g2_errors_are_honest_for_independent_and_correlated_entries(rho):
    ours, naive = _pulls(rho, 40)
    if rho:  # the correlated case defeats the independent-entry error (what this catches)
        assert np.std(naive) > 2.5
        assert 0.85 < np.std(ours) < 1.3, np.std(ours)
    else:
        assert 0.85 < np.std(ours) < 1.1, np.std(ours)


def test_two_ways_rarely_flagged_on_stationary_maps_and_flagged_on_ageing_ones():
    win = age_windows(n=4, span=(0.0, 4.0))
    flags = 0
    for s in range(60):
        m = _maps(200, 0.3, None, 0.1, np.random.default_rng(s), n_bins=1)
        flags += int(age_cuts(_amap(m), win).disagree.sum())
    assert flags <= 2  # 240 tests at a false-flag probability of 1e-3
    m = _maps(200, 0.3, 0.5, 0.05, np.random.default_rng(7), n_bins=1)
    cuts = age_cuts(_amap(m), win)
    assert cuts.disagree[1:3].all()


@pytest.fixture(scope="module")
def fitted():
    from xpcsviewer.fitting.ageing_law import fit_age_cuts
    from xpcsviewer.fitting.spec import FitSpec

    win = age_windows(n=5, span=(0.0, 10.0))
    out = {}
    for name, ta in (("stationary", None), ("ageing", 2.0)):
        m = _maps(500, 0.4, ta, 0.02, np.random.default_rng(3))
        cuts = age_cuts(_amap(m), win)
        out[name] = (cuts, fit_age_cuts(cuts, FitSpec(model="single")))
    return out


def test_two_projections_on_a_stationary_series(fitted):
    cuts, af = fitted["stationary"]
    assert not cuts.disagree.any()
    for way in (0, 1):
        tau, err = af.tau[way, :, 0], af.tau_err[way, :, 0]
        assert np.all(np.abs(tau - 0.4) < 3 * err)
    assert af.verdict == ["stationary"]
    assert af.flag_testable.all() and not af.disagree.any()
    assert af.laws["linear"][0].interval["a"][0] < 0 < af.laws["linear"][0].interval["a"][1]


def test_two_projections_on_an_ageing_series(fitted):
    cuts, af = fitted["ageing"]
    t_w = af.t_w[0, :, 0]
    truth = 0.4 * (1 + t_w / 2.0)
    tau, err = af.tau[0, :, 0], af.tau_err[0, :, 0]
    assert np.all(np.abs(tau - truth) < 3 * err)
    # constant t1 reads later ages at longer lags: slower than the age cut, and flagged
    both = np.isfinite(af.tau[1, 1:, 0])
    assert both.sum() >= 3 and np.all((af.tau[1, 1:, 0] > af.tau[0, 1:, 0])[both])
    assert cuts.disagree[1:4, 0].all()  # the last t1 cut reaches only short lags
    # tau beyond half the window: the noise along t1 outlasts the error's blocks, so the
    # fitted table withholds the flag there
    assert not af.flag_testable[2:, 0].any() and not af.disagree[2:, 0].any()
    lf = af.laws["linear"][0]
    assert af.verdict == ["ageing"]
    assert lf.interval["a"][0] < 0.2 < lf.interval["a"][1]  # truth tau0 / ta = 0.2


@pytest.mark.parametrize("law", ["linear", "power"])
def test_law_interval_covers_the_truth_95_percent(law):
    rng = np.random.default_rng(5)
    t_w = np.linspace(1.0, 9.0, 8)
    tau0, slope = 0.5, 0.3
    truth = tau0 + slope * t_w if law == "linear" else tau0 * t_w**slope
    name = "a" if law == "linear" else "mu"
    hits = 0
    for _ in range(200):
        err = 0.06 * truth
        lf = fit_law(t_w, truth + rng.normal(0, err), err, law)
        lo, hi = lf.interval[name]
        hits += lo <= slope <= hi
    assert 180 <= hits <= 198, hits


def test_law_verdicts():
    t = np.linspace(1, 9, 6)
    e = np.full(6, 0.01)
    assert fit_law(t, 1 + 0.1 * t, e).verdict == "ageing"
    assert fit_law(t, 2 - 0.1 * t, e).verdict == "accelerating"
    assert fit_law(t, np.full(6, 1.0), e).verdict == "stationary"
    assert fit_law(t[:2], t[:2], e[:2]).verdict == "undetermined"
    assert fit_law(t, 1 + 0.1 * t, e, "power").verdict == "ageing"


def test_chi4_at_its_noise_floor_without_heterogeneity_and_above_it_with():
    win = age_windows(n=2, span=(0.0, 4.0))
    m = _maps(200, 2.0, None, 0.05, np.random.default_rng(11))
    cuts = age_cuts(_amap(m), win)
    r = cuts.chi4[:, 0, 1:20] / cuts.chi4_floor[:, 0, 1:20]
    assert 0.8 < np.mean(r) < 1.25
    # intermittent dynamics: the contrast of C switches between t1 segments
    t = np.arange(200) * DT
    beta_t = np.where((np.arange(200) // 25) % 2 == 0, 0.1, 0.3)
    het = 1 + np.sqrt(np.outer(beta_t, beta_t)) * (c2_model(t, 0.5, 1.0) - 1)
    rng = np.random.default_rng(12)
    noise = np.triu(rng.normal(0, 0.05, (200, 200)), 1)
    cuts = age_cuts(_amap([het + noise + noise.T]), win)
    r = cuts.chi4[:, 0, 1:20] / cuts.chi4_floor[:, 0, 1:20]
    assert np.mean(r) > 2


def test_chi2_quantile_against_scipy():
    stats = pytest.importorskip("scipy.stats")
    from xpcsviewer.compute.ages.analysis import chi2_quantile

    dof = np.array([3, 10, 50, 300])
    for p in (0.95, 1 - 1e-3):
        ref = stats.chi2.ppf(p, dof)
        assert np.allclose(chi2_quantile(p, dof), ref, rtol=0.02)
