"""Issue 48: an age cut claims no converged tau beyond what its lags can hold."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.compute.ages.age_lag import from_full_maps
from xpcsviewer.compute.ages.analysis import age_cuts, age_windows
from xpcsviewer.fitting import ageing_law
from xpcsviewer.fitting.ageing_law import cut_reach, fit_age_cuts
from xpcsviewer.fitting.spec import FitSpec
from xpcsviewer.synthetic.analytic import c2_model

DT = 0.02
N = 500  # 10 s in 5 windows of 2 s


def _cuts(tau: float, sigma: float, seed: int):
    """A stationary two-time map (tau in s) with independent entry noise, cut."""
    rng = np.random.default_rng(seed)
    c = c2_model(np.arange(N) * DT, 1.0 / tau, 0.2, None)
    noise = np.triu(rng.normal(0.0, sigma, (N, N)), 1)
    amap = from_full_maps([c + noise + noise.T], [1], DT)
    return age_cuts(amap, age_windows(n=5, span=(0.0, N * DT)))


def test_reach_is_the_longest_fittable_lag():
    cuts = _cuts(0.3, 0.02, 0)
    reach = cut_reach(cuts)[..., 0]
    # plain reference: the largest lag (s) with a finite g2 and error, per cut
    ok = np.isfinite(cuts.g2) & np.isfinite(cuts.g2_err) & (cuts.g2_err > 0)
    ref = np.array([[cuts.tau[ok[w, i, 0] & (cuts.lag > 0)].max() for i in range(5)]
                    for w in range(2)])
    np.testing.assert_allclose(reach, ref)
    # the run's ends: the last constant-t1 cut holds at most its window, the edge
    # constant-age cuts at most twice it; the middle cuts hold far more
    assert reach[1, -1] <= 2.0 and reach[0, 0] <= 4.0 and reach[0, -1] <= 4.0
    assert reach[0, 2] > 8.0 and reach[1, 0] > 8.0


@pytest.fixture(scope="module")
def slow():
    """tau = 1.2 s: beyond 0.3 of the edge cuts' reach, within it in the middle."""
    return _cuts(1.2, 0.005, 1)


def test_a_tau_beyond_its_reach_is_a_lower_limit(slow):
    af = fit_age_cuts(slow, FitSpec(model="single"))
    reach = cut_reach(slow)[..., 0]
    st = af.status[..., 0]
    short = 1.2 > ageing_law.REACH_FRACTION * reach
    assert short[1, -1] and not short[0, 2]
    assert not (st[short] == "converged").any()
    assert (st[~short] == "converged").all()
    # unresolved without a limit: the value stays, as the law's lower limit
    assert np.isfinite(af.tau[1, -1, 0])
    row = 1 * 5 + 4  # (way t1, last window): rows in (way, window, bin) order
    assert af.fits.status[row] == "unresolved"
    assert "longest lag" in af.fits.detail[row]


def test_without_the_rule_the_edge_cut_converges(slow, monkeypatch):
    """The rule, not the fit's own checks, is what withholds the edge cut's tau."""
    monkeypatch.setattr(ageing_law, "REACH_FRACTION", np.inf)
    af = fit_age_cuts(slow, FitSpec(model="single"))
    assert af.status[1, -1, 0] == "converged"
