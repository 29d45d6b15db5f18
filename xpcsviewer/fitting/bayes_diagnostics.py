"""MCMC diagnostics on draws shaped (chains, samples, ...): ESS bulk/tail, BFMI.

NumPyro's own functions underneath (``effective_sample_size``); ESS bulk is computed on
rank-normalised split chains and ESS tail from the 5 %/95 % quantile indicators,
following Vehtari et al. (2021). Importing this module imports JAX/NumPyro.
"""

from __future__ import annotations

import numpy as np

from xpcsviewer.backends import get_backend

# x64 on (and checked) before JAX creates any array.
get_backend("jax")

from numpyro.diagnostics import effective_sample_size  # noqa: E402
from scipy.special import ndtri  # noqa: E402  (NumPy: no compiled JAX program)

from xpcsviewer.fitting.bayes_gates import CONVERGENCE, HDI_PROB, ess_min  # noqa: E402

__all__ = ["CONVERGENCE", "HDI_PROB", "bfmi", "ess_bulk", "ess_min", "ess_tail"]


def _split_chains(x: np.ndarray) -> np.ndarray:
    # (C, S, ...) -> (2C, S//2, ...), dropping the middle draw of odd S.
    s = x.shape[1] // 2
    return np.concatenate([x[:, :s], x[:, x.shape[1] - s :]], axis=0)


def _ess(x: np.ndarray) -> np.ndarray:
    # ESS with NaN for constant draws (no variance: undefined, not infinite).
    with np.errstate(all="ignore"):
        e = np.asarray(effective_sample_size(np.asarray(x, dtype=np.float64)))
    var = np.var(x.reshape(-1, *x.shape[2:]), axis=0)
    return np.where(var > 0, e, np.nan)


def ess_bulk(x: np.ndarray) -> np.ndarray:
    """Rank-normalised split-chain ESS of draws (C, S, ...)."""
    c, s = x.shape[:2]
    flat = x.reshape(c * s, -1)
    ranks = np.argsort(np.argsort(flat, axis=0, kind="stable"), axis=0) + 1.0
    z = np.asarray(ndtri((ranks - 0.375) / (c * s + 0.25))).reshape(x.shape)
    return _ess(_split_chains(z))


def ess_tail(x: np.ndarray) -> np.ndarray:
    """min of the split-chain ESS of the 5% and 95% quantile indicators, draws (C, S, ...)."""
    q05 = np.quantile(x, 0.05, axis=(0, 1))
    q95 = np.quantile(x, 0.95, axis=(0, 1))
    lo = _ess(_split_chains((x <= q05).astype(np.float64)))
    hi = _ess(_split_chains((x >= q95).astype(np.float64)))
    return np.fmin(lo, hi)


def bfmi(energy: np.ndarray) -> np.ndarray:
    """Energy BFMI per chain from NUTS energies (C, S, ...) -> (C, ...)."""
    e = np.asarray(energy, dtype=np.float64)
    num = np.sum(np.diff(e, axis=1) ** 2, axis=1) / e.shape[1]
    den = np.var(e, axis=1)
    with np.errstate(all="ignore"):
        return num / den


