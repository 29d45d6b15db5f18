"""Synthetic g2 problems with known answers for the fitting tests."""

from __future__ import annotations

import numpy as np
import pytest

from xpcsviewer.backends import get_backend


@pytest.fixture(params=["numpy", "jax"])
def backend(request):
    """Both backends; the NumPy one is the reference."""
    return get_backend(request.param)


def multitau_delays(dt: float = 1e-5, n_levels: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """A multi-tau layout like the 8-ID-I files: 1..8, 10,12,14,16, 20,... frames."""
    frames = list(range(1, 9))
    spacing = 2
    while len(frames) < 8 + 4 * 2 * n_levels:
        for _ in range(4):
            frames.append(frames[-1] + spacing)
        spacing *= 2
    f = np.array(frames, dtype=np.float64)
    return f, f * dt


def single_curves(rng, tau, taus, contrast=0.3, baseline=1.0, noise=0.002):
    """B noisy single-exponential curves (B, T) and their errors."""
    taus = np.atleast_1d(taus)
    g2 = baseline + contrast * np.exp(-2.0 * tau[None, :] / taus[:, None])
    err = np.full_like(g2, noise)
    return g2 + noise * rng.standard_normal(g2.shape), err


@pytest.fixture
def delays():
    """``multitau_delays`` (frames, tau in s) with dt = 1e-5 s."""
    return multitau_delays()
