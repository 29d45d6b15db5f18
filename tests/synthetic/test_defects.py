"""The planted defect's physics: a static coherent field mixes heterodyne with the speckle."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.synthetic.defects import beamstop_fan
from xpcsviewer.synthetic.speckle import simulate_frames


def _g2(frames: np.ndarray, lags) -> np.ndarray:
    """Per-pixel normalised g2 at each lag, averaged over the pixels."""
    f = frames.reshape(frames.shape[0], -1).astype(np.float64)
    return np.array([((f[:-k] * f[k:]).mean(0) / (f[:-k].mean(0) * f[k:].mean(0))).mean()
                     for k in lags])


@pytest.mark.slow
def test_static_field_gives_the_heterodyne_g2():
    """g2 - 1 = beta (g1^2 + 2 r g1) / (1 + r)^2 with g1 = exp(-Gamma tau), beta = 1/M."""
    shape, dt, gamma, beta, r = (16, 32), 1e-3, 40.0, 0.25, 2.0
    q = np.full(shape, 0.01)
    static = np.zeros(shape)
    static[:, 16:] = r  # the right half sees the static field
    frames = simulate_frames(q, 40000, dt, D=gamma / 0.01**2, beta=beta, rate=20.0,
                             seed=3, static_field=static)
    lags = np.array([1, 3, 6, 12, 25, 50])
    g1 = np.exp(-gamma * lags * dt)
    plain = _g2(frames[:, :, :16], lags) - 1
    het = _g2(frames[:, :, 16:], lags) - 1
    np.testing.assert_allclose(plain, beta * g1**2, atol=0.006)
    np.testing.assert_allclose(het, beta * (g1**2 + 2 * r * g1) / (1 + r) ** 2, atol=0.006)
    # mean intensity (1 + r) x rate: the static field adds r x the speckle intensity
    assert frames[:, :, 16:].mean() / frames[:, :, :16].mean() == pytest.approx(1 + r, rel=0.02)


def test_no_static_field_leaves_frames_unchanged():
    q = np.full((8, 8), 0.01)
    a = simulate_frames(q, 50, 1e-3, D=1e5, seed=1)
    b = simulate_frames(q, 50, 1e-3, D=1e5, seed=1, static_field=np.zeros((8, 8)))
    np.testing.assert_array_equal(a, b)


def test_beamstop_fan_geometry():
    f = beamstop_fan((60, 80), 40.0, 30.0, angle_deg=90.0, half_width_deg=10.0,
                     start_px=5.0, end_px=20.0, intensity=2.0)
    # straight up from the beam centre (smaller rows), inside 5..20 px
    assert f[30 - 10, 40] == pytest.approx(2.0 * 5 / 10)
    assert f[30 - 4, 40] == 0 and f[30 - 25, 40] == 0 and f[30 + 10, 40] == 0
    assert f[30 - 10, 40 + 5] == 0  # 26.6 deg off the fan's axis
