"""Each q-bin's effective q (issue 48): the kernels against plain NumPy and the physics
they exist for (a bin's g2 is a pixel mixture; D against the centre is biased, against
the effective q it is not)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import curve_fit

from xpcsviewer.compute.effective_q import (
    bin_effective_q,
    bin_mixtures,
    effective_q2,
    fit_equivalent_q2,
)


def _maps(seed: int = 0):
    rng = np.random.default_rng(seed)
    h, w = 12, 10
    q = rng.uniform(1e-3, 5e-3, (h, w))
    dq = rng.integers(0, 4, (h, w))  # 0 excluded, bins 1..3
    sq = np.where(dq > 0, (dq - 1) * 3 + rng.integers(1, 4, (h, w)), 0)  # 3 per bin
    inten = rng.uniform(0.1, 3.0, (h, w))
    return q, dq, sq, inten


def test_effective_q2_is_the_correlators_weighted_mean():
    q, dq, sq, inten = _maps()
    got = effective_q2(q, dq, inten, 3, sq)
    # plain loops: W_p = I_p^2 / (n_s m_s^2) within static bin s
    for b in range(1, 4):
        num = den = 0.0
        for s in np.unique(sq[dq == b]):
            pix = (sq == s) & (dq == b)
            m = inten[pix].mean()
            wts = inten[pix] ** 2 / (pix.sum() * m**2)
            num += np.sum(wts * q[pix] ** 2)
            den += np.sum(wts)
        assert got[b - 1] == pytest.approx(num / den, rel=1e-12)
    # one static bin per dynamic bin: the plain I^2-weighted mean q^2
    plain = effective_q2(q, dq, inten, 3)
    for b in range(1, 4):
        pix = dq == b
        ref = np.average(q[pix] ** 2, weights=inten[pix] ** 2)
        assert plain[b - 1] == pytest.approx(ref, rel=1e-12)
    # a bin without pixels is NaN, not 0
    assert np.isnan(effective_q2(q, dq, inten, 4, sq)[3])


def test_mixtures_keep_the_weighted_mean():
    q, dq, sq, inten = _maps(1)
    mean = effective_q2(q, dq, inten, 3, sq)
    for b, (x, wts) in enumerate(bin_mixtures(q, dq, inten, 3, sq, n_hist=8)):
        assert x.size <= 8
        assert np.sum(wts * x) / np.sum(wts) == pytest.approx(mean[b], rel=1e-12)


def _delays():
    # multi-tau delays of 1000 frames at 1e-4 s
    lv = [np.arange(1, 9)] + [np.arange(5, 9) * 2**k for k in range(1, 7)]
    return np.concatenate(lv) * 1e-4


def _wide_bin(q_lo: float, q_hi: float, n: int = 4000):
    """Pixels of an annulus (density ~ q) under a steeply falling intensity."""
    rng = np.random.default_rng(3)
    q = np.sqrt(rng.uniform(q_lo**2, q_hi**2, n))
    inten = (q_lo / q) ** 4
    return q, inten


@pytest.mark.parametrize("q_lo,q_hi", [(1.2e-3, 2.0e-3), (4.0e-3, 4.8e-3)])
def test_D_from_a_pixel_mixture_is_unbiased_with_q_eff(q_lo, q_hi):
    d_true = 1.0e8  # A^2/s
    q, inten = _wide_bin(q_lo, q_hi)
    t = _delays()
    x = d_true * q_lo**2
    t = t[t < 6.0 / x]  # the delays over which g2 decays
    wts = inten**2 / np.sum(inten**2)
    g2 = 1.0 + 0.2 * (np.exp(-2.0 * d_true * np.outer(t, q**2)) @ wts)
    err = np.full(t.size, 1e-3)

    # an independent fitter (SciPy) measures the bin's one-exponential time
    def single(tt, c, tau, b):
        return b + c * np.exp(-2.0 * tt / tau)

    (_, tau, _), _ = curve_fit(single, t, g2, p0=(0.2, 1.0 / x, 1.0), sigma=err)
    centre = 0.5 * (q_lo + q_hi)
    d_centre = 1.0 / (tau * centre**2)
    mix = bin_mixtures(q, np.ones(q.size, int), inten, 1)[0]
    d_eff = 1.0 / (tau * fit_equivalent_q2(mix[0], mix[1], t, err, tau))
    assert d_eff / d_true == pytest.approx(1.0, abs=0.003)
    if q_hi / q_lo > 1.5:  # the wide lowest bin: the centre is several per cent off
        assert abs(d_centre / d_true - 1.0) > 0.03
        # and the weighted mean q^2 alone (the first cumulant) is not the fitted rate
        m1 = np.sum(mix[1] * mix[0]) / np.sum(mix[1])
        assert abs(1.0 / (tau * m1) / d_true - 1.0) > 0.03


def test_fit_equivalent_q2_of_one_q_is_that_q():
    t = _delays()
    v = fit_equivalent_q2(np.array([4e-6]), np.array([1.0]), t, np.full(t.size, 1e-3),
                          1.0 / (1e8 * 4e-6))
    assert v == pytest.approx(4e-6, rel=1e-6)
    assert np.isnan(fit_equivalent_q2(np.zeros(0), np.zeros(0), t, t, 1.0))


class _QMap:
    """The attributes :func:`bin_effective_q` reads."""

    def __init__(self, bcx=5.0):
        from xpcsviewer.compute.detector.qmap import compute_qmap

        self.shape = (12, 12)
        self.energy_kev, self.detector_distance, self.pixel_size = 10.0, 5.0, 150e-6
        self.beam_center_x, self.beam_center_y = bcx, 6.0
        q, _ = compute_qmap(self.shape, 10.0, 5.0, 150e-6, 5.0, 6.0)
        edges = np.linspace(q.min(), q.max() + 1e-12, 4)
        self.dynamic_roi_map = np.digitize(q, edges)
        self.static_roi_map = self.dynamic_roi_map
        self.mask = np.ones(self.shape, bool)
        self.n_dynamic = 3
        self.dynamic_q = 0.5 * (edges[:-1] + edges[1:])
        self.map_names = ("q", "phi")
        self.q = q


def test_bin_effective_q_from_the_geometry_or_says_why_not():
    qm = _QMap()
    img = np.ones(qm.shape)
    e = bin_effective_q(qm, img)
    assert e.note == "" and e.available.all()
    for b in range(3):
        assert e.mean_q2[b] == pytest.approx(np.mean(qm.q[qm.dynamic_roi_map == b + 1] ** 2))
    assert not bin_effective_q(qm, None).available.any()
    assert "no 2-D intensity" in bin_effective_q(qm, None).note
    moved = _QMap(bcx=0.0)
    moved.beam_center_x = 11.0  # the stated geometry no longer gives these bins
    assert "does not reproduce" in bin_effective_q(moved, img).note


def _reference_q2(q2, w, t, sig, tau, iterations=4):
    """The plain loop: one lstsq per cost, one bin at a time (the pre-batch code)."""
    ok = np.isfinite(t) & (t > 0) & np.isfinite(sig) & (sig > 0)
    t, sig = t[ok], sig[ok]
    if q2.size == 0 or t.size < 4 or not (np.isfinite(tau) and tau > 0):
        return float("nan")
    wt = 1.0 / sig**2

    def rate_of(y, g0):
        def cost(lg):
            e = np.exp(-2.0 * np.exp(lg) * t)
            a = np.stack([np.ones_like(e), e], axis=1) * np.sqrt(wt)[:, None]
            coef, *_ = np.linalg.lstsq(a, y * np.sqrt(wt), rcond=None)
            r = y * np.sqrt(wt) - a @ coef
            return float(r @ r)

        lo, hi = np.log(g0) - 2.0, np.log(g0) + 2.0
        gr = (np.sqrt(5.0) - 1.0) / 2.0
        c, d = hi - gr * (hi - lo), lo + gr * (hi - lo)
        fc, fd = cost(c), cost(d)
        for _ in range(60):
            if fc < fd:
                hi, d, fd = d, c, fc
                c = hi - gr * (hi - lo)
                fc = cost(c)
            else:
                lo, c, fc = c, d, fd
                d = lo + gr * (hi - lo)
                fd = cost(d)
        return float(np.exp(0.5 * (lo + hi)))

    q_eff2 = float(np.sum(w * q2) / np.sum(w))
    for _ in range(iterations):
        dd = 1.0 / (tau * q_eff2)
        y = np.exp(-2.0 * dd * np.outer(t, q2)) @ (w / np.sum(w))
        q_eff2 = rate_of(y, 1.0 / tau) / dd
    return q_eff2


def test_batched_fit_equivalent_q2_equals_the_plain_loop():
    """All bins at once (batched SVD, vectorised golden section) = one lstsq per cost."""
    from xpcsviewer.compute.effective_q import fit_equivalent_q2_many

    rng = np.random.default_rng(3)
    t = _delays()
    mixtures, sig, tau = [], [], []
    for j in range(12):
        q = rng.uniform(1e-3, 3e-3) * rng.uniform(1.0, 1.6, size=rng.integers(1, 40))
        w = rng.uniform(0.1, 1.0, q.size)
        mixtures.append((q**2, w))
        s = np.full(t.size, 1e-3) * rng.uniform(0.5, 2.0, t.size)
        s[rng.random(t.size) < 0.2] = np.nan  # delays a bin did not fit
        if j == 5:
            s[:] = np.nan  # no delay: NaN
        sig.append(s)
        tau.append(1.0 / (rng.uniform(0.5, 2.0) * 1e8 * np.mean(q**2)))
    tau[7] = np.nan  # no relaxation time: NaN
    mixtures[9] = (np.zeros(0), np.zeros(0))  # no pixels: NaN
    got = fit_equivalent_q2_many(mixtures, t, np.array(sig), np.array(tau))
    want = np.array([_reference_q2(q2, w, t, s, tt)
                     for (q2, w), s, tt in zip(mixtures, sig, tau, strict=True)])
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got[[5, 7, 9]]).all() and np.isfinite(got).sum() == 9
    # the search finds a minimum of a cost that is flat to second order: round-off of
    # 1e-16 in the cost moves it by ~sqrt(1e-16); both codes agree to that (4e-9 seen)
    np.testing.assert_allclose(got, want, rtol=5e-8)
