"""Profile-likelihood intervals of relaxation times, and the window-stability refit.

A relaxation time's interval comes from chi^2 minimised over every other parameter at
fixed values of it (the profile), not from the curvature at the optimum: where the decay
is barely seen the profile is flat on one side and the curvature error hides it. The
profile is evaluated by the same batched Levenberg-Marquardt solve with the time held
fixed, at offsets from the optimum in log tau (multiples of the curvature error and
fixed factors up to 30x, so both a narrow and a one-sided profile are sampled), and
the interval is where (chi2 - chi2_min) / s crosses a level (interpolated in its square
root, which is linear in the offset for a parabolic profile) (s = max(1, chi2_red), the
scale of the errors): 1 for 68 %, 4 for 2 sigma, 2.706 for one-sided 95 % limits.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "LEVEL_1SIGMA",
    "LEVEL_2SIGMA",
    "PROFILE_FACTORS",
    "PROFILE_SIGMAS",
    "crossing",
    "drop_last",
    "profile_offsets",
]

#: Offsets from the optimum in units of the curvature error of log tau ...
PROFILE_SIGMAS = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
#: ... and as fixed factors of tau (a flat side is still sampled out to 30x).
PROFILE_FACTORS = (1.25, 1.6, 2.5, 4.0, 10.0, 30.0)
LEVEL_1SIGMA = 1.0
LEVEL_2SIGMA = 4.0


def profile_offsets(sig_log: np.ndarray) -> np.ndarray:
    """(R, K) signed offsets in log tau per curve (K = 2 x 13), both sides.

    Parameters
    ----------
    sig_log : (R,) curvature error of log tau (NaN or 0: only the fixed factors count)
    """
    s = np.asarray(sig_log, dtype=np.float64)
    s = np.where(np.isfinite(s) & (s > 0), s, 0.0)
    one = np.concatenate(
        [s[:, None] * np.asarray(PROFILE_SIGMAS)[None, :],
         np.broadcast_to(np.log(np.asarray(PROFILE_FACTORS)), (s.size, len(PROFILE_FACTORS)))],
        axis=1,
    )
    one = np.where(one > 0, one, np.log(PROFILE_FACTORS[0]))  # a zero error: no zero offset
    return np.concatenate([one, -one], axis=1)


def crossing(offsets: np.ndarray, delta: np.ndarray, level: float, side: int) -> np.ndarray:
    """Where the profile first reaches ``level`` walking from the optimum to one side.

    Parameters
    ----------
    offsets : (R, K) log-tau offsets of the profile points (the optimum, 0, is implied)
    delta : (R, K) (chi2 - chi2_min) / s at them (NaN: no value)
    level : float
    side : +1 (towards longer times) or -1

    Returns
    -------
    (R,) offset of the crossing, interpolated linearly in sqrt(delta) (exact for a
    parabola) between the bracketing points; NaN where the profile stays below
    ``level`` on that side (an open interval).
    """
    off = np.asarray(offsets, dtype=np.float64) * side
    d = np.where(np.isfinite(delta), np.maximum(delta, 0.0), np.nan)
    key = np.where(off > 0, off, np.inf)
    order = np.argsort(key, axis=1, kind="stable")
    off = np.take_along_axis(off, order, axis=1)
    d = np.take_along_axis(d, order, axis=1)
    n_r, n_k = off.shape
    prev_o = np.zeros(n_r)
    prev_d = np.zeros(n_r)
    out = np.full(n_r, np.nan)
    done = np.zeros(n_r, bool)
    for k in range(n_k):
        o, dk = off[:, k], d[:, k]
        use = ~done & (o > 0) & np.isfinite(o) & np.isfinite(dk)
        hit = use & (dk >= level)
        rk, rp, rl = np.sqrt(np.where(use, dk, 0.0)), np.sqrt(prev_d), math.sqrt(level)
        with np.errstate(invalid="ignore", divide="ignore"):
            f = np.where(rk > rp, (rl - rp) / (rk - rp), 1.0)
        out = np.where(hit, prev_o + np.clip(f, 0.0, 1.0) * (o - prev_o), out)
        done |= hit
        adv = use & ~hit & (o > prev_o)
        prev_o = np.where(adv, o, prev_o)
        prev_d = np.where(adv, dk, prev_d)
    return out * side


def drop_last(mask: np.ndarray, k: int) -> np.ndarray:
    """``mask`` without the last ``k`` fitted points of every row."""
    m = np.asarray(mask, dtype=bool)
    if k <= 0:
        return m.copy()
    rank_from_end = np.cumsum(m[:, ::-1], axis=1)[:, ::-1]  # 1 for the last fitted point
    return m & (rank_from_end > k)
