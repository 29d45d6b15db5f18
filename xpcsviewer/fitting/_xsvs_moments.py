"""Visibility from the moments of photon counts (the beta(T) law's points, issue 46):
distribution-free, where the negative binomial of :mod:`xpcsviewer.fitting.xsvs` is only
close (exposures longer than ~tau/2)."""

from __future__ import annotations

import numpy as np

__all__ = ["beta_from_moments"]


def beta_from_moments(n, s1, s2, s3, s4):
    """Visibility from the moments of the counts, whatever their distribution:
    beta = (v - m) / m^2 (m the mean, v the unbiased variance), with its delta-method
    error from the third and fourth central moments.

    ``n`` samples, ``s1..s4`` the sums of k, k^2, k^3, k^4 (arrays of one shape).
    Var K = m + beta m^2 holds for any integrated speckle intensity (it is what the
    visibility integral computes), where the negative binomial's shape is only close
    once an exposure is longer than ~tau/2: the beta(T) law is fitted to these.
    nan where there is no photon or fewer than 2 samples.
    """
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        m = s1 / n
        r2, r3, r4 = s2 / n, s3 / n, s4 / n
        mu2 = r2 - m * m
        mu3 = r3 - 3 * m * r2 + 2 * m ** 3
        mu4 = r4 - 4 * m * r3 + 6 * m * m * r2 - 3 * m ** 4
        v = mu2 * n / (n - 1)
        beta = (v - m) / (m * m)
        gv = 1.0 / (m * m)
        gm = -1.0 / (m * m) - 2.0 * (v - m) / m ** 3
        var = (gv * gv * np.maximum(mu4 - mu2 * mu2, 0.0) + gm * gm * mu2
               + 2 * gv * gm * mu3) / n
        err = np.sqrt(np.maximum(var, 0.0))
    bad = ~((n > 1) & (m > 0))
    return np.where(bad, np.nan, beta), np.where(bad, np.nan, err)
