"""XSVS photon statistics: negative binomial fits of photon-count histograms (issue 46).

Per q-bin and exposure the counts k of the (pixel, window) samples follow a negative
binomial with mean mu and M modes, P(k) = Gamma(k+M)/(Gamma(M) k!) (M/(M+mu))^M
(mu/(M+mu))^k; beta = 1/M is the speckle visibility and beta -> 0 the Poisson limit.
Internally everything is written in beta, so that beta = 0 is an ordinary point.

Histograms (``..., K + 2``): columns 0..K exact counts, the last column true count > K.
``cens`` (same layout, disjoint from ``hist``): samples whose true count is at least the
column's k (a counter cap hit), the last column again > K. Pure numpy/scipy, float64.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import betainc, betaincc, gammainc, gammaincc, gammaln, xlogy
from scipy.stats import chi2 as _chi2

from xpcsviewer.fitting._xsvs_moments import beta_from_moments
from xpcsviewer.fitting._xsvs_vis import VIS_STATUSES, VisFit, fit_visibility, visibility

__all__ = ["MIN_PAIRS", "STATUSES", "VIS_STATUSES", "NbTable", "VisFit", "beta_from_moments",
           "fit_nb", "fit_nb_table", "fit_visibility", "nb_logpmf", "nb_logsf", "visibility"]

STATUSES = ("ok", "misfit", "poisson", "few_photons", "no_data")
#: fewer samples with k >= 2 than this: beta is not determined (1 + beta to +-20 %)
MIN_PAIRS = 25
#: misfit below this goodness-of-fit p-value
GOF_P_MIN = 1e-4
#: Poisson when beta < this many errors
POISSON_SIGMAS = 2.0
#: one-sided 95 % upper limit: a fall of the log-likelihood by 2.706 / 2
_DLOGL_95 = 1.353
#: the censored fit keeps beta below this (M > 1e-3): beyond, the data say nothing
_BETA_MAX = 1e3


# ---------------------------------------------------------------- stable pieces


def _series(x, coef):
    """sum_n coef[n] x^n (Horner)."""
    out = np.zeros_like(x)
    for c in coef[::-1]:
        out = out * x + c
    return out


_NS = np.arange(30, dtype=np.float64)
_SIGN = (-1.0) ** _NS
_PSI = _SIGN / (_NS + 1)                                   # log1p(x)/x
_PSI1 = (_SIGN * _NS / (_NS + 1))[1:]                      # psi'
_PSI2 = (_SIGN * _NS * (_NS - 1) / (_NS + 1))[2:]          # psi''
_PHI = _SIGN / (_NS + 2)                                   # (x - log1p x)/x^2
_PHI1 = (_SIGN * _NS / (_NS + 2))[1:]                      # phi'
_SMALL = 0.2  # series below: 0.2^28 < 1e-19


def _psi(x):
    xs = np.where(x < _SMALL, 1.0, x)
    return np.where(x < _SMALL, _series(np.where(x < _SMALL, x, 0.0), _PSI),
                    np.log1p(xs) / xs)


def _psi1(x):
    xs = np.where(x < _SMALL, 1.0, x)
    return np.where(x < _SMALL, _series(np.where(x < _SMALL, x, 0.0), _PSI1),
                    1.0 / (xs * (1 + xs)) - np.log1p(xs) / xs**2)


def _psi2(x):
    xs = np.where(x < _SMALL, 1.0, x)
    closed = (-(1 + 2 * xs) / (xs**2 * (1 + xs) ** 2) - 1.0 / (xs**2 * (1 + xs))
              + 2 * np.log1p(xs) / xs**3)
    return np.where(x < _SMALL, _series(np.where(x < _SMALL, x, 0.0), _PSI2), closed)


def _phi(x):
    xs = np.where(x < _SMALL, 1.0, x)
    return np.where(x < _SMALL, _series(np.where(x < _SMALL, x, 0.0), _PHI),
                    (xs - np.log1p(xs)) / xs**2)


def _phi1(x):
    xs = np.where(x < _SMALL, 1.0, x)
    return np.where(x < _SMALL, _series(np.where(x < _SMALL, x, 0.0), _PHI1),
                    1.0 / (xs * (1 + xs)) - 2 * (xs - np.log1p(xs)) / xs**3)


def _stirlerr(x):
    """log Gamma(x) - [(x - 1/2) log x - x + log(2 pi)/2]; 0 at x = inf."""
    big = x >= 15
    xb = np.where(big, x, 15.0)
    r = 1.0 / xb
    r2 = r * r
    ser = r * (1 / 12 - r2 * (1 / 360 - r2 * (1 / 1260 - r2 * (1 / 1680 - r2 / 1188))))
    xs = np.where(big, 1.0, x)
    small = gammaln(xs) - ((xs - 0.5) * np.log(xs) - xs + 0.5 * np.log(2 * np.pi))
    return np.where(big, ser, small)


def _logpoch_rel(k, b):
    """log[Gamma(M + k) / (Gamma(M) M^k)] with M = 1/b, = sum_{j<k} log1p(j b); 0 at b = 0."""
    pos = b > 0
    bb = np.where(pos, b, 1.0)
    M = 1.0 / bb
    x = k * bb
    # (M + k - 1/2) log1p(k/M) - k written so that M = 1/b never multiplies a log
    val = (k * (_psi(x) - 1.0) + (k - 0.5) * np.log1p(x)
           + _stirlerr(M + k) - _stirlerr(M))
    return np.where(pos & (k > 0), val, 0.0)


def _logpmf_b(k, mu, b):
    x = mu * b
    lp = (_logpoch_rel(k, b) - k * np.log1p(x) + xlogy(k, mu) - gammaln(k + 1.0)
          - mu * _psi(x))
    return np.where((k >= 0) & (k == np.floor(k)), lp, -np.inf)


def _logsf_b(k, mu, b):
    """log P(K >= k) in beta = 1/M (beta = 0: Poisson); accurate in both tails."""
    k, mu, b = np.broadcast_arrays(np.asarray(k, np.float64), np.asarray(mu, np.float64),
                                   np.asarray(b, np.float64))
    kk = np.maximum(np.ceil(k), 1.0)
    pois = b <= 0
    bb = np.where(pois, 1.0, b)
    q = mu * bb / (1 + mu * bb)
    M = 1.0 / bb
    with np.errstate(divide="ignore", invalid="ignore"):
        sf = np.where(pois, gammainc(kk, mu), betainc(kk, M, q))
        cdf = np.where(pois, gammaincc(kk, mu), betaincc(kk, M, q))
        out = np.where(sf > 0.5, np.log1p(-cdf), np.log(sf))
        # deep tail (sf underflows): P(k) / (1 - r), r = P(k+1)/P(k) at k
        r = np.minimum((1 + kk * b) * mu / ((kk + 1) * (1 + mu * b)), 0.999)
        tail = _logpmf_b(kk, mu, b) - np.log1p(-r)
        out = np.where(sf < 1e-280, tail, out)
    return np.where(k <= 0, 0.0, out)


def _as_beta(M):
    M = np.asarray(M, np.float64)
    with np.errstate(divide="ignore"):
        return np.where(np.isinf(M), 0.0, 1.0 / M)


def nb_logpmf(k, mu, M) -> np.ndarray:
    """log P(k; mu, M) of the negative binomial, vectorised (broadcast).

    Stable for large M (M = inf gives the Poisson log pmf): the Gamma ratio is computed
    relative to M^k by a Stirling difference, never as a difference of large lgammas.
    """
    k, mu, M = np.broadcast_arrays(np.asarray(k, np.float64), np.asarray(mu, np.float64),
                                   np.asarray(M, np.float64))
    return _logpmf_b(k, mu, _as_beta(M))


def nb_logsf(k, mu, M) -> np.ndarray:
    """log P(K >= k; mu, M), vectorised; 0 for k <= 0; M = inf is Poisson."""
    return _logsf_b(k, mu, _as_beta(M))


# ---------------------------------------------------------------- the table


@dataclass(frozen=True)
class NbTable:
    """Negative binomial fits; every field an ndarray of the input's leading shape.

    ``spread`` is the sd (ddof 0) of the observed counts, nan where censored samples
    (counter cap or overflow) exist. ``M``, ``beta`` and their errors are nan unless the
    status is ``ok`` or ``misfit``.
    """

    mean: np.ndarray
    mean_error: np.ndarray
    spread: np.ndarray
    M: np.ndarray
    M_error: np.ndarray
    beta: np.ndarray
    beta_error: np.ndarray
    chi2_red: np.ndarray
    gof_p: np.ndarray
    n_samples: np.ndarray  #: int64
    n_photons: np.ndarray
    status: np.ndarray  #: '<U12', one of STATUSES
    reason: np.ndarray  #: object: one line for the user, '' when ok


def _exact_ll(G, Se, Ne, mu, b, j):
    """Exact-count log-likelihood less sum log k!, (m,)."""
    x = mu * b
    return ((G * np.log1p(j * b[:, None])).sum(1) + xlogy(Se, mu) - Se * np.log1p(x)
            - Ne * mu * _psi(x))


def _exact_derivs(G, Se, Ne, mu, b, j):
    """Gradient and Hessian of the exact part in (t = log mu, beta)."""
    x = mu * b
    u = 1.0 / (1.0 + j * b[:, None])
    gt = Se - mu * (Se * b + Ne) / (1 + x)
    gb = (G * j * u).sum(1) - Se * mu / (1 + x) - Ne * mu**2 * _psi1(x)
    htt = -mu * (Se * b + Ne) / (1 + x) ** 2
    hbb = -(G * (j * u) ** 2).sum(1) + Se * mu**2 / (1 + x) ** 2 - Ne * mu**3 * _psi2(x)
    htb = -Se * mu / (1 + x) ** 2 - Ne * mu**2 * (2 * _psi1(x) + x * _psi2(x))
    return gt, gb, htt, hbb, htb


def _fit_exact(n, j):
    """MLE without censoring: mu the sample mean, beta by safeguarded Newton on the
    profile score (mu-hat does not depend on beta); beta = 0 when var <= mean."""
    N = n.sum(1)
    Se = (n * j).sum(1)
    mu = Se / N
    G = N[:, None] - np.cumsum(n, 1)

    def score(b, rows):
        return ((G[rows] * j / (1 + j * b[:, None])).sum(1)
                - N[rows] * mu[rows] ** 2 * _phi(mu[rows] * b))

    def curv(b, rows):
        return (-(G[rows] * j**2 / (1 + j * b[:, None]) ** 2).sum(1)
                - N[rows] * mu[rows] ** 3 * _phi1(mu[rows] * b))

    m = n.shape[0]
    b = np.zeros(m)
    s0 = score(b, np.arange(m))
    act = np.nonzero(s0 > 0)[0]
    if act.size:
        var = (n[act] * j**2).sum(1) / N[act] - mu[act] ** 2
        lo = np.zeros(act.size)
        hi = np.maximum(4 * (var - mu[act]) / mu[act] ** 2, 1e-3)
        for _ in range(80):  # bracket: score(hi) < 0
            s = score(hi, act)
            up = s > 0
            if not up.any():
                break
            lo = np.where(up, hi, lo)
            hi = np.where(up, hi * 4, hi)
        bb = np.clip((var - mu[act]) / mu[act] ** 2, lo, hi)
        bb = np.where((bb <= lo) | (bb >= hi), 0.5 * (lo + hi), bb)
        live = np.ones(act.size, bool)
        for _ in range(200):
            i = np.nonzero(live)[0]
            if not i.size:
                break
            s, c = score(bb[i], act[i]), curv(bb[i], act[i])
            lo[i] = np.where(s > 0, bb[i], lo[i])
            hi[i] = np.where(s > 0, hi[i], bb[i])
            with np.errstate(divide="ignore", invalid="ignore"):
                nb = bb[i] - s / c
            bad = ~np.isfinite(nb) | (c >= 0) | (nb <= lo[i]) | (nb >= hi[i])
            nb = np.where(bad, 0.5 * (lo[i] + hi[i]), nb)
            done = np.abs(nb - bb[i]) <= 1e-14 * nb + 1e-300
            done |= (hi[i] - lo[i]) <= 1e-15 * hi[i]
            bb[i] = nb
            live[i[done]] = False
        b[act] = bb
    info_b = -curv(b, np.arange(m))
    with np.errstate(divide="ignore", invalid="ignore"):
        sd_b = 1.0 / np.sqrt(info_b)
        sd_mu = np.sqrt(mu * (1 + mu * b) / N)
    return mu, b, sd_mu, sd_b, (G, Se, N)


def _beta_upper_exact(G, Se, Ne, mu, b, sd_b, j):
    """95 % one-sided upper limit of beta from the exact profile likelihood."""
    l0 = _exact_ll(G, Se, Ne, mu, b, j)
    lo = b.copy()
    hi = b + np.where(np.isfinite(sd_b), 2 * sd_b, 1.0)
    for _ in range(60):
        up = l0 - _exact_ll(G, Se, Ne, mu, hi, j) < _DLOGL_95
        if not up.any():
            break
        lo = np.where(up, hi, lo)
        hi = np.where(up, 2 * hi + 1e-12, hi)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        inside = l0 - _exact_ll(G, Se, Ne, mu, mid, j) < _DLOGL_95
        lo = np.where(inside, mid, lo)
        hi = np.where(inside, hi, mid)
    return hi


def _cens_ll(mu, b, cc, over, K1):
    """Censored log-likelihood: sum_k cc_k log P(K >= k) + over log P(K >= K + 1)."""
    out = np.where(over > 0, over * _logsf_b(K1, mu, b), 0.0)
    kc = cc.shape[1]
    if kc > 1:
        j = np.arange(kc, dtype=np.float64)
        a = np.log1p(j[:-1] * b[:, None])
        D = np.concatenate([np.zeros((b.size, 1)), np.cumsum(a, 1)], 1)
        x = mu * b
        lp = (D - j * np.log1p(x)[:, None] + xlogy(j, mu[:, None]) - gammaln(j + 1)
              - (mu * _psi(x))[:, None])
        top = _logsf_b(float(kc), mu, b)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            lsf = np.logaddexp.accumulate(np.concatenate([lp, top], 1)[:, ::-1], 1)[:, ::-1]
            out = out + np.where(cc > 0, cc * lsf[:, :kc], 0.0).sum(1)
    return out


def _fit_cens(ex, cc, over, K1, j):
    """Joint MLE in (log mu, beta >= 0) with censoring: damped Newton, the exact part's
    derivatives analytic, the censored part's by central differences."""
    Ne = ex.sum(1)
    Se = (ex * j).sum(1)
    G = Ne[:, None] - np.cumsum(ex, 1)
    ntot = Ne + cc.sum(1) + over
    m = ex.shape[0]
    # the censored sums need the pmf only up to the highest censored column
    occ = np.nonzero(cc.any(0))[0]
    cc = cc[:, :occ[-1] + 1] if occ.size else cc[:, :0]
    # start: counts at the cap or overflow taken as exact
    obs = ex.copy()
    obs[:, :cc.shape[1]] += cc
    n1 = obs.sum(1) + over
    m1 = ((obs * j).sum(1) + over * K1) / n1
    v1 = ((obs * j**2).sum(1) + over * K1**2) / n1 - m1**2
    t = np.log(np.maximum(m1, 1e-12))
    b = np.clip((v1 - m1) / np.maximum(m1, 1e-12) ** 2, 0.01, 10.0)

    def F(t, b, i):
        mu = np.exp(t)
        return -(_exact_ll(G[i], Se[i], Ne[i], mu, b, j) + _cens_ll(mu, b, cc[i], over[i], K1))

    def derivs(t, b, i):
        mu = np.exp(t)
        gt, gb, htt, hbb, htb = _exact_derivs(G[i], Se[i], Ne[i], mu, b, j)
        ht, hb = 1e-4, 1e-4 * np.maximum(b, 1e-2)
        bc = np.maximum(b, hb)  # stencil kept at beta >= 0; moved back below
        c = [_cens_ll(np.exp(t + dt), bc + db * hb, cc[i], over[i], K1)
             for dt, db in ((0, 0), (ht, 0), (-ht, 0), (0, 1), (0, -1), (ht, 1), (-ht, -1))]
        cgt = (c[1] - c[2]) / (2 * ht)
        cgb = (c[3] - c[4]) / (2 * hb)
        chtt = (c[1] - 2 * c[0] + c[2]) / ht**2
        chbb = (c[3] - 2 * c[0] + c[4]) / hb**2
        chtb = (c[5] - c[1] - c[3] + 2 * c[0] - c[2] - c[4] + c[6]) / (2 * ht * hb)
        cgt = cgt + chtb * (b - bc)
        cgb = cgb + chbb * (b - bc)
        return -(gt + cgt), -(gb + cgb), -(htt + chtt), -(hbb + chbb), -(htb + chtb)

    live = np.ones(m, bool)
    for _ in range(100):
        i = np.nonzero(live)[0]
        if not i.size:
            break
        gt, gb, htt, hbb, htb = derivs(t[i], b[i], i)
        det = htt * hbb - htb**2
        pd = (htt > 0) & (det > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            dt = np.where(pd, -(hbb * gt - htb * gb) / det, -gt / np.maximum(np.abs(htt), 1e-12))
            db = np.where(pd, -(htt * gb - htb * gt) / det, -gb / np.maximum(np.abs(hbb), 1e-12))
        # at the boundary with the slope pointing out: Newton in log mu alone
        bound = (b[i] <= 0) & (gb > 0)
        dt = np.where(bound, -gt / np.where(htt > 0, htt, 1.0), dt)
        db = np.where(bound, 0.0, db)
        dt = np.clip(dt, -2, 2)
        db = np.clip(db, -0.5 * b[i] - 0.5, 2 * b[i] + 1)
        f0 = F(t[i], b[i], i)
        lam = np.ones(i.size)
        nt, nb = t[i].copy(), b[i].copy()
        pend = np.arange(i.size)
        for _ls in range(25):  # halvings: only the rows still without a descent
            tt = t[i[pend]] + lam[pend] * dt[pend]
            bt = np.clip(b[i[pend]] + lam[pend] * db[pend], 0.0, _BETA_MAX)
            f1 = F(tt, bt, i[pend])
            acc = f1 <= f0[pend] + 1e-13 * np.abs(f0[pend])
            nt[pend[acc]], nb[pend[acc]] = tt[acc], bt[acc]
            pend = pend[~acc]
            if not pend.size:
                break
            lam[pend] *= 0.5
        # done: a step at the finite differences' noise, or a Newton decrement at the
        # roundoff of the log-likelihood
        stepped = (np.abs(nt - t[i]) <= 1e-10) & (np.abs(nb - b[i]) <= 1e-10 * np.maximum(nb, 1e-3))
        stepped |= np.abs(dt * gt + db * gb) <= 1e-14 * np.abs(f0) + 1e-300
        t[i], b[i] = nt, nb
        stuck = np.zeros(i.size, bool)
        stuck[pend] = True
        live[i[stepped | stuck]] = False
    idx = np.arange(m)
    gt, gb, htt, hbb, htb = derivs(t, b, idx)
    mu = np.exp(t)
    det = htt * hbb - htb**2
    with np.errstate(divide="ignore", invalid="ignore"):
        sd_t = np.sqrt(hbb / det)
        sd_b = np.sqrt(htt / det)
        sd_mu = mu * sd_t
        # upper limit from the quadratic profile (Schur complement) about the maximum
        hp = hbb - htb**2 / htt
        slope = np.where(b > 0, 0.0, np.maximum(gb, 0.0))
        upper = b + (-slope + np.sqrt(slope**2 + 2 * hp * _DLOGL_95)) / hp
    return mu, b, sd_mu, sd_b, upper, ntot


def _gof(ex, cc, over, mu, b, K1):
    """Pearson chi2 per dof and p over the cells that are multinomial whatever the
    censoring: exact k below the lowest censored k, and one tail cell P(K >= that k);
    the low and high ends merged until each cell expects >= 5."""
    m = ex.shape[0]
    chi2r = np.full(m, np.nan)
    p = np.full(m, np.nan)
    ntot = ex.sum(1) + cc.sum(1) + over
    for r in range(m):
        if not (np.isfinite(mu[r]) and np.isfinite(b[r]) and ntot[r] > 0):
            continue
        cz = np.nonzero(cc[r] > 0)[0]
        kc = int(cz[0]) if cz.size else K1
        # cells beyond the largest count seen are all in the tail cell: computing the
        # pmf up to K for every histogram cost most of a table's time
        nz = np.nonzero(ex[r, :kc] > 0)[0]
        kc = max(1, min(kc, (int(nz[-1]) + 2) if nz.size else 1))
        k = np.arange(kc, dtype=np.float64)
        e = ntot[r] * np.exp(np.append(_logpmf_b(k, mu[r], b[r]),
                                       _logsf_b(float(kc), mu[r], b[r])))
        o = np.append(ex[r, :kc], ntot[r] - ex[r, :kc].sum())
        big = np.nonzero(e >= 5)[0]
        if big.size < 2:
            continue
        lo, hi = big[0], big[-1]
        ce = np.concatenate([[e[:lo + 1].sum()], e[lo + 1:hi], [e[hi:].sum()]])
        co = np.concatenate([[o[:lo + 1].sum()], o[lo + 1:hi], [o[hi:].sum()]])
        dof = ce.size - 1 - (2 if b[r] > 0 else 1)
        if dof < 1:
            continue
        c2 = float(((co - ce) ** 2 / ce).sum())
        chi2r[r] = c2 / dof
        p[r] = float(_chi2.sf(c2, dof))
    return chi2r, p


def _check(hist, cens):
    h = np.asarray(hist)
    if h.ndim < 1 or h.shape[-1] < 3:
        raise ValueError("hist must have a last axis of K + 2 >= 3 columns")
    if np.any(h < 0):
        raise ValueError("hist has negative counts")
    c = np.zeros(h.shape) if cens is None else np.asarray(cens)
    if c.shape != h.shape:
        raise ValueError(f"cens shape {c.shape} differs from hist {h.shape}")
    if np.any(c < 0):
        raise ValueError("cens has negative counts")
    return h.astype(np.float64), c.astype(np.float64)


def fit_nb_table(hist, cens=None, progress: Callable[[int, int], None] | None = None
                 ) -> NbTable:
    """Negative binomial maximum-likelihood fits of many histograms at once.

    Parameters
    ----------
    hist : array_like (..., K + 2) int
        Exact counts k = 0..K; last column: true count > K (censored at K + 1).
    cens : array_like (..., K + 2) int or None
        Censored samples (disjoint from ``hist``): true count >= the column's k.
    progress : callable(done, total), optional
        Called as groups of fits finish.

    Returns
    -------
    NbTable
        Fields of shape ``hist.shape[:-1]``.

    Notes
    -----
    Without censored samples mu-hat is the sample mean and beta-hat the root of the
    profile score (exact Newton; errors from the analytic observed information, mu and
    beta orthogonal at the maximum). With censored samples (cap or overflow) both are
    fitted jointly in (log mu, beta >= 0); the censored terms' derivatives are central
    differences. Statuses: :data:`STATUSES`; see ``docs/xsvs.md``.
    """
    h, c = _check(hist, cens)
    lead = h.shape[:-1]
    K1 = h.shape[-1] - 1
    h = h.reshape(-1, K1 + 1)
    c = c.reshape(-1, K1 + 1)
    m = h.shape[0]
    total = m
    ex, cc = h[:, :K1], c[:, :K1]
    over = h[:, K1] + c[:, K1]
    k = np.arange(K1, dtype=np.float64)
    n_samples = ex.sum(1) + cc.sum(1) + over
    n_photons = ((ex + cc) * k).sum(1) + over * K1
    has_cens = (cc.sum(1) + over) > 0
    n2 = (ex[:, 2:] + cc[:, 2:]).sum(1) + over
    with np.errstate(divide="ignore", invalid="ignore"):
        omean = n_photons / n_samples
        spread = np.sqrt(np.maximum(((ex * k**2).sum(1)) / n_samples - omean**2, 0.0))
    spread = np.where(has_cens | (n_samples == 0), np.nan, spread)
    mean, mean_e, beta, beta_e, upper = (np.full(m, np.nan) for _ in range(5))
    n_exact = ex.sum(1)
    nodata = (n_samples == 0) | (n_photons == 0)
    # every count censored: the likelihood is flat in mu (only lower bounds known)
    blind = ~nodata & (n_exact == 0)
    done = int((nodata | blind).sum())

    def trim(rows):
        # columns beyond the highest count seen carry nothing
        if not rows.size:
            return 1
        occ = (ex[rows] + cc[rows]).any(0)
        return max(int(np.nonzero(occ)[0].max()) + 1 if occ.any() else 1, 2)

    A = np.nonzero(~nodata & ~has_cens)[0]
    if A.size:
        kc = trim(A)
        j = k[:kc]
        mu, b, smu, sb, (G, Se, N) = _fit_exact(ex[A, :kc], j)
        mean[A], beta[A], mean_e[A], beta_e[A] = mu, b, smu, sb
        pz = (b <= 0) | (b < POISSON_SIGMAS * sb)
        if pz.any():
            upper[A[pz]] = _beta_upper_exact(G[pz], Se[pz], N[pz], mu[pz], b[pz], sb[pz], j)
        done += A.size
        if progress is not None:
            progress(done, total)
    B = np.nonzero(~nodata & ~blind & has_cens)[0]
    if B.size:
        kc = trim(B)
        mu, b, smu, sb, up, _ = _fit_cens(ex[B, :kc], cc[B, :kc], over[B], float(K1),
                                          k[:kc])
        mean[B], beta[B], mean_e[B], beta_e[B], upper[B] = mu, b, smu, sb, up
        done += B.size
        if progress is not None:
            progress(done, total)
    chi2r, gofp = _gof(ex, cc, over, mean, beta, K1)
    status = np.full(m, "ok", dtype="<U12")
    reason = np.full(m, "", dtype=object)
    with np.errstate(divide="ignore", invalid="ignore"):
        M = 1.0 / beta
        M_e = beta_e / beta**2
    for r in range(m):
        if nodata[r]:
            status[r] = "no_data"
            reason[r] = "no samples" if n_samples[r] == 0 else "no photons"
        elif blind[r]:
            status[r] = "no_data"
            reason[r] = (f"all {int(n_samples[r])} samples at the counter cap or above K: "
                         "no count is known")
        elif has_cens[r] and n_exact[r] < MIN_PAIRS:
            status[r] = "few_photons"
            reason[r] = (f"{int(n_exact[r])} samples with a known count (< {MIN_PAIRS}), the "
                         "rest at the counter cap or above K")
        elif n2[r] < MIN_PAIRS:
            status[r] = "few_photons"
            reason[r] = (f"{int(n2[r])} samples with 2 or more photons (< {MIN_PAIRS}): "
                         "beta not determined")
        elif beta[r] <= 0 or beta[r] < POISSON_SIGMAS * beta_e[r] or not np.isfinite(beta[r]):
            status[r] = "poisson"
            reason[r] = f"Poisson: beta consistent with 0 (beta < {upper[r]:.3g}, 95 %)"
        elif np.isfinite(gofp[r]) and gofp[r] < GOF_P_MIN:
            status[r] = "misfit"
            reason[r] = f"poor fit: chi2_red {chi2r[r]:.3g}, p = {gofp[r]:.1e}"
    blank = ~np.isin(status, ("ok", "misfit"))
    for a in (M, M_e, beta, beta_e):
        a[blank] = np.nan
    mean[nodata | blind] = np.nan
    mean_e[nodata | blind] = np.nan
    if progress is not None and done < total:
        progress(total, total)

    def sh(a, dt=None):
        a = np.asarray(a) if dt is None else np.asarray(a, dtype=dt)
        return a.reshape(lead)

    return NbTable(mean=sh(mean), mean_error=sh(mean_e), spread=sh(spread), M=sh(M),
                   M_error=sh(M_e), beta=sh(beta), beta_error=sh(beta_e),
                   chi2_red=sh(chi2r), gof_p=sh(gofp), n_samples=sh(n_samples, np.int64),
                   n_photons=sh(n_photons), status=sh(status), reason=sh(reason))


def fit_nb(hist, cens=None) -> NbTable:
    """One histogram (K + 2,): :func:`fit_nb_table` with 0-d fields."""
    h = np.asarray(hist)
    if h.ndim != 1:
        raise ValueError("fit_nb takes one histogram (K + 2,); use fit_nb_table")
    return fit_nb_table(h, cens)

