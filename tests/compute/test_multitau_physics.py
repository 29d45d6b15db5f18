"""Physics: simulated speckle with known D and contrast 1/M gives the right g2 and D."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.backends import get_backend
from xpcsviewer.compute.detector.partition import PartitionGrid, make_partition
from xpcsviewer.compute.inputs import Partition
from xpcsviewer.compute.multitau.correlator import correlate_multitau, delay_list
from xpcsviewer.compute.options import MultitauOptions
from xpcsviewer.synthetic.speckle import Geometry, simulate_frames

curve_fit = pytest.importorskip("scipy.optimize").curve_fit

D_TRUE = 5.0e6  # Angstrom^2/s
DT = 1e-3  # s
BETA = 0.25  # M = 4 modes
N = 2000


def _expected(q, qm, delays, levels, d_fit, beta, j):
    """Expected multi-tau g2 of dynamic bin j (1 + beta exp(-2 D q^2 tau) per pixel).

    Mirrors the correlator's semantics: static-bin ratio of sums, plain mean over the
    static bins of the dynamic bin, and level-L frames that are boxcar means of 2^L
    frames, which multiplies the decay by K = sinh^2(c w / 2) / (w^2 sinh^2(c / 2)),
    c = 2 Gamma dt, w = 2^L (exact for delays longer than the window).
    """
    w = (1 << levels).astype(float)
    out = np.zeros(len(delays))
    statics = np.unique(qm.static_roi_map[qm.dynamic_roi_map == j + 1])
    for s in statics:
        c = 2 * d_fit * q[qm.static_roi_map == s] ** 2 * DT
        k = np.sinh(np.outer(w, c) / 2) ** 2 / (w[:, None] ** 2 * np.sinh(c / 2)[None, :] ** 2)
        out += 1 + beta * (np.exp(-np.outer(delays, c)) * k).mean(axis=1)
    return out / len(statics)


@pytest.mark.slow
def test_simulated_brownian_motion_gives_known_g2_and_D():
    geo = Geometry(shape=(64, 64), energy_kev=10.0, det_dist_m=5.0, pixel_size_m=75e-6,
                   bcx=-10.0, bcy=32.0)
    q, phi = geo.qmap()
    qm = make_partition(q, phi, None, PartitionGrid(4, 16))
    frames = simulate_frames(q, N, DT, D=D_TRUE, beta=BETA, rate=1.0, seed=3)
    res = correlate_multitau(frames, Partition(qm.dynamic_roi_map, qm.static_roi_map, qm.mask),
                             options=MultitauOptions(backend=get_backend("numpy")))
    d, lvl, _ = delay_list(N)
    assert np.array_equal(res.delay_frames, d)
    ok = res.g2_err > 0  # the last delays have a single pair: zero spread
    nd = qm.n_dynamic
    # g2 agrees with the known model within its statistical error. Neighbouring
    # multi-tau delays share most of their frame pairs, so a bin's residuals move
    # together and its mean r^2 scatters widely between seeds (1 to 5 for the slowest
    # bin over seeds 1-6): per bin a loose bound, over all bins a tight one.
    r2 = []
    for j in range(nd):
        diff = _expected(q, qm, d, lvl, D_TRUE, BETA, j) - res.g2[:, j]
        r = diff[ok[:, j]] / res.g2_err[ok[:, j], j]
        assert np.mean(r**2) < 6.0, j
        assert np.abs(r).max() < 5.5, j
        r2.append(np.mean(r**2))
    assert np.mean(r2) < 3.0

    def joint(_, d_fit, *betas):
        return np.concatenate(
            [_expected(q, qm, d, lvl, d_fit, betas[j], j)[ok[:, j]] for j in range(nd)]
        )

    y = np.concatenate([res.g2[ok[:, j], j] for j in range(nd)])
    s = np.concatenate([res.g2_err[ok[:, j], j] for j in range(nd)])
    p, cov = curve_fit(joint, None, y, p0=[0.7 * D_TRUE] + [0.2] * nd, sigma=s, absolute_sigma=True)
    assert abs(p[0] / D_TRUE - 1) < 0.02
    assert np.sqrt(cov[0, 0]) / D_TRUE < 0.01  # the test has the power to see a 2 % error
    np.testing.assert_allclose(p[1:], BETA, atol=0.01)  # contrast 1 / M
