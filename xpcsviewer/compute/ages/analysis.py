"""g2 by sample age from an age x lag map (:mod:`xpcsviewer.compute.ages.age_lag`).

Each age window is cut two ways (Ragulskaya et al., J. Appl. Cryst. 2024): at
constant age (the entry's age, the midpoint of its two times, inside the window)
and at constant first time (its t1 inside the window). Per bin and lag, g2 is the
weight-averaged entries. Its standard error is a sandwich (cluster-robust) variance:
entries are grouped in blocks of consecutive t1, a quarter of the cut long (entries
a lag apart share a frame, and the speckle persists for about tau), adjacent blocks
entering with Bartlett weight 1/2. Four blocks make that variance noisy, so its
ratio to the independent-entry variance (normalised to 1 for independent entries)
is averaged over neighbouring lags, kept >= 1, and applied to the latter. The
difference of the two cuts gets the independent-entry variance over the union of
their entries (shared entries cancel) times the same ratio: the two ways are flagged
as disagreeing where the chi-square of the difference over lags exceeds the
chi-square quantile of 1 - :data:`FLAG_P`. docs/ages.md has the details and tests.

Pure NumPy, float64; times in seconds, lags in frames unless named ``tau``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from xpcsviewer.compute.ages.age_lag import AgeLagLevel, AgeLagMap, entry_t1

__all__ = [
    "FLAG_P",
    "WAYS",
    "AgeCuts",
    "AgeWindows",
    "age_cut_g2",
    "age_cuts",
    "age_windows",
    "chi2_quantile",
]

#: The two ways of cutting a window: constant age, constant first time.
WAYS = ("age", "t1")
#: False-flag probability of one (window, bin) test of the two ways on stationary data.
FLAG_P = 1e-3
#: Lags of the running median of the block / independent variance ratio.
_SMOOTH = 25
#: Lags of the running mean of the entries' variance.
_SMOOTH_VAR = 9
#: Fewest blocks of t1 behind a standard error.
_MIN_BLOCKS = 4


@dataclass(frozen=True)
class AgeWindows:
    """Age windows in seconds: ``[centre - width / 2, centre + width / 2)``."""

    centres: np.ndarray  #: (W,) s
    widths: np.ndarray  #: (W,) s

    def __post_init__(self) -> None:
        c = np.asarray(self.centres, np.float64)
        w = np.asarray(self.widths, np.float64)
        if c.ndim != 1 or c.shape != w.shape or c.size == 0:
            raise ValueError("age windows need one width per centre and at least one window")
        if not (np.all(np.isfinite(c)) and np.all(np.isfinite(w)) and np.all(w > 0)):
            raise ValueError("age window centres must be finite and widths > 0")
        object.__setattr__(self, "centres", c)
        object.__setattr__(self, "widths", w)

    @property
    def lo(self) -> np.ndarray:
        return self.centres - 0.5 * self.widths

    @property
    def hi(self) -> np.ndarray:
        return self.centres + 0.5 * self.widths

    @property
    def n(self) -> int:
        return int(self.centres.size)

    def labels(self) -> list[str]:
        return [f"{c:.4g} s ± {w / 2:.3g}" for c, w in zip(self.centres, self.widths,
                                                             strict=True)]


def age_windows(
    ages: Sequence[float] | None = None,
    widths: float | Sequence[float] | None = None,
    *,
    n: int | None = None,
    log: bool = False,
    span: tuple[float, float] | None = None,
) -> AgeWindows:
    """Age windows from explicit ages and widths, or ``n`` windows tiling ``span``.

    Parameters
    ----------
    ages : centres (s); with ``widths`` one value for all or one per age (default:
        the smallest spacing of the ages, or a fifth of ``span`` for a single age)
    n : number of windows tiling ``span`` (s): equal widths, or with ``log`` edges
        on a geometric grid (each window twice as wide as the previous, starting at
        ``span[1] / 2**n`` or ``span[0]`` if later)
    """
    if (ages is None) == (n is None):
        raise ValueError("give either ages (with widths) or a number of windows")
    if ages is not None:
        c = np.atleast_1d(np.asarray(ages, np.float64))
        if widths is None:
            if c.size > 1:
                w0 = float(np.min(np.diff(np.sort(c))))
            elif span is not None:
                w0 = (span[1] - span[0]) / 5.0
            else:
                raise ValueError("give a width for a single age")
            w = np.full(c.shape, w0)
        else:
            w = np.broadcast_to(np.asarray(widths, np.float64), c.shape).copy()
        return AgeWindows(c, w)
    if span is None:
        raise ValueError("n windows need the span of ages")
    if int(n) < 1:
        raise ValueError("the number of windows must be >= 1")
    lo, hi = float(span[0]), float(span[1])
    if not hi > lo:
        raise ValueError(f"empty span of ages {span}")
    if log:
        start = max(lo, hi / 2.0 ** int(n), np.finfo(float).tiny)
        edges = np.geomspace(start, hi, int(n) + 1)
    else:
        edges = np.linspace(lo, hi, int(n) + 1)
    return AgeWindows(0.5 * (edges[1:] + edges[:-1]), np.diff(edges))


@dataclass(frozen=True)
class AgeCuts:
    """g2 of every age window, cut both ways (index 0: constant age, 1: constant t1).

    Lags are the union of the levels' lags (a lag held by several levels is read from
    the finest); lag 0 is kept for display and left out of fits.
    """

    windows: AgeWindows
    bins: np.ndarray  #: (B,) 1-based dynamic bins
    frame_time: float  #: s
    lag: np.ndarray  #: (T,) frames
    g2: np.ndarray  #: (2, W, B, T)
    g2_err: np.ndarray  #: (2, W, B, T); NaN where fewer than 4 blocks
    n_entries: np.ndarray  #: (2, W, T) entries averaged
    age_mean: np.ndarray  #: (2, W) s: mean entry age of each cut
    lag_age: np.ndarray  #: (2, W, T) s: mean entry age per lag (what a lag's g2 speaks for)
    diff_chi2: np.ndarray  #: (W, B) chi-square of (age - t1) over lags
    diff_dof: np.ndarray  #: (W, B) lags in it
    disagree: np.ndarray  #: (W, B) bool: diff_chi2 beyond chi2_quantile(1 - FLAG_P, dof)
    chi4: np.ndarray  #: (W, B, T) var_t1[C] / (<C> - 1)^2 along the constant-age cut
    chi4_floor: np.ndarray  #: (W, B, T) its noise floor (adjacent-t1 differences)
    #: (W, B, T) the variance of (age - t1) per lag behind diff_chi2 (None: not kept)
    diff_var: np.ndarray | None = None

    @property
    def tau(self) -> np.ndarray:
        """(T,) lags in s."""
        return self.lag * self.frame_time

    @property
    def valid(self) -> np.ndarray:
        """(2, W, B, T): points a fit may use (lag > 0, finite value and error)."""
        return (np.isfinite(self.g2) & np.isfinite(self.g2_err) & (self.g2_err > 0)
                & (self.lag > 0))


def chi2_quantile(p: float, dof: np.ndarray) -> np.ndarray:
    """Quantile (cumulative probability ``p``) of chi-square with ``dof`` degrees
    (Wilson-Hilferty; about 1 % off for dof >= 3), NaN for dof < 1."""
    from statistics import NormalDist

    k = np.asarray(dof, np.float64)
    z = NormalDist().inv_cdf(float(p))
    with np.errstate(invalid="ignore", divide="ignore"):
        q = k * (1.0 - 2.0 / (9.0 * k) + z * np.sqrt(2.0 / (9.0 * k))) ** 3
    return np.where(k >= 1, q, np.nan)


def _running_mean(r: np.ndarray, ok: np.ndarray, k: int) -> np.ndarray:
    """(B, T) mean of r over the valid lags within k // 2 places of each (fewer at the
    ends; in lag order). A mean, not a median: a ratio of few blocks is skewed and its
    median biased low."""
    out = np.full(r.shape, np.nan)
    h = k // 2
    for b in range(r.shape[0]):
        idx = np.flatnonzero(ok[b])
        if idx.size == 0:
            continue
        cs = np.concatenate([[0.0], np.cumsum(r[b, idx])])
        pos = np.arange(idx.size)
        lo, hi = np.maximum(pos - h, 0), np.minimum(pos + h + 1, idx.size)
        out[b, idx] = (cs[hi] - cs[lo]) / (hi - lo)
    return out


def _block_sums(x: np.ndarray, blk: np.ndarray, kmax: int) -> np.ndarray:
    """(..., n_lag, kmax) sums of x (..., n_t, n_lag) per block of each lag."""
    n_lag = blk.shape[1]
    flat = (np.arange(n_lag)[None, :] * kmax + np.where(blk >= 0, blk, 0)).ravel()
    inside = (blk >= 0).ravel()
    lead = x.shape[:-2]
    xs = x.reshape(-1, x.shape[-2] * x.shape[-1])
    out = np.stack([np.bincount(flat[inside], weights=r[inside], minlength=n_lag * kmax)
                    for r in xs])
    return out.reshape(*lead, n_lag, kmax)


def _bartlett(s: np.ndarray) -> np.ndarray:
    """Block sums (..., kmax) -> sum S_k^2 + sum S_k S_k+1 (Bartlett weight 1/2)."""
    return np.sum(s * s, axis=-1) + np.sum(s[..., 1:] * s[..., :-1], axis=-1)


def _variances(z: np.ndarray, a: np.ndarray, blk: np.ndarray, n_blk: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """Block (Bartlett) variance of sum_i z_i per (bin, lag), and its expectation for
    independent entries of equal variance, relative to sum_i a_i^2 (the independent
    variance / sigma^2). z : (B, n_t, n_lag) contributions a_i (c_i - g); a : (n_t,
    n_lag) normalised weights (0 outside); blk : block index (-1 outside).
    """
    kmax = int(n_blk.max()) if n_blk.size else 0
    nb, _, n_lag = z.shape
    if kmax == 0:
        return np.full((nb, n_lag), np.nan), np.full(n_lag, np.nan)
    v_blk = _bartlett(_block_sums(z, blk, kmax))
    # Cov(S_k, S_j) / sigma^2 = d_kj Q_k - A_k Q_j - A_j Q_k + A_k A_j Q for residuals
    # from the weighted mean: A_k, Q_k the block sums of a and a^2
    aa = _block_sums(a[None], blk, kmax)[0]
    qq = _block_sums((a * a)[None], blk, kmax)[0]
    q = qq.sum(axis=-1)
    diag = qq - 2 * aa * qq + aa * aa * q[:, None]
    off = (-aa[:, 1:] * qq[:, :-1] - aa[:, :-1] * qq[:, 1:]
           + aa[:, 1:] * aa[:, :-1] * q[:, None])
    with np.errstate(invalid="ignore", divide="ignore"):
        expect = (diag.sum(axis=-1) + off.sum(axis=-1)) / q
    return np.where(n_blk >= _MIN_BLOCKS, v_blk, np.nan), expect


def _blocks(t1: np.ndarray, inside: np.ndarray, lag: np.ndarray, width: int
            ) -> tuple[np.ndarray, np.ndarray]:
    """Block index of each entry (blocks of a quarter of the cut's t1 extent, so at
    least a lag long wherever 4 blocks fit) and the number of blocks per lag."""
    big = np.where(inside, t1[:, None], np.nan)
    with np.errstate(invalid="ignore"):
        first = np.nanmin(np.where(inside.any(axis=0), big, 0.0), axis=0)
        last = np.nanmax(np.where(inside.any(axis=0), big, 0.0), axis=0)
    extent = last - first + width
    # as long as the cut allows (a quarter of it): longer than any lag with 4 blocks
    size = np.maximum(np.maximum(extent / _MIN_BLOCKS, width), 1.0)
    k = np.floor((t1[:, None] - first[None, :]) / size[None, :]).astype(np.int64)
    blk = np.where(inside, k, -1)
    n_blk = np.where(inside.any(axis=0), blk.max(axis=0) + 1, 0)
    return blk, n_blk


@dataclass
class _LevelCut:
    g: np.ndarray  # (B, n_lag)
    a: np.ndarray  # (n_t, n_lag) normalised weights
    n: np.ndarray  # (n_lag,)
    age_sum: float
    w_sum: float
    lag_age: np.ndarray  # (n_lag,) s


def _cut_mean(c: np.ndarray, w: np.ndarray, inside: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The weighted mean of one cut of one level per (bin, lag): the weights ``ww``,
    their sums, the normalised weights ``a``, the entries ``cz`` (0 outside) and g."""
    ww = np.where(inside, w, 0.0)
    sw = ww.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = ww / sw[None, :]
        cz = np.where(inside[None], c, 0.0)
        g = np.sum(a[None] * cz, axis=1)
        g = np.where(sw > 0, g, np.nan)
    return ww, sw, a, cz, g


def _cut(c: np.ndarray, w: np.ndarray, ages: np.ndarray, t1: np.ndarray,
         inside: np.ndarray, lag: np.ndarray, width: int) -> tuple[_LevelCut, np.ndarray]:
    """One cut of one level: mean, raw contributions and blocks."""
    ww, sw, a, cz, g = _cut_mean(c, w, inside)
    z = np.where(inside[None], a[None] * (cz - g[:, None, :]), 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        lag_age = np.sum(ww * ages, axis=0) / sw
    return _LevelCut(g=g, a=np.nan_to_num(a), n=inside.sum(axis=0).astype(float),
                     age_sum=float(np.sum(ww * ages)), w_sum=float(sw.sum()),
                     lag_age=lag_age), z


def _iid(z: np.ndarray, inside: np.ndarray) -> np.ndarray:
    """(B, n_lag) variance of sum z for independent entries."""
    n = inside.sum(axis=0).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = np.sum(z * z, axis=1) * (n / np.maximum(n - 1, 1))
    return np.where(n >= 2, v, np.nan)


def q_of(a: np.ndarray) -> np.ndarray:
    """(n_lag,) sum of squared normalised weights: the mean's variance / entry variance."""
    return np.sum(a * a, axis=0)


def _entry_var(z: np.ndarray, a: np.ndarray, lag: np.ndarray) -> np.ndarray:
    """(B, n_lag) variance of one entry, smoothed over :data:`_SMOOTH_VAR` lags (it
    changes slowly with the lag; one lag's few entries would make it noisy)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        s2 = _iid(z, a > 0) / q_of(a)[None, :]
    ok = np.isfinite(s2) & (s2 > 0) & (lag > 0)[None, :]
    return np.where(np.isfinite(s2), _running_mean(s2, ok, _SMOOTH_VAR), np.nan)


def _ratio(z: np.ndarray, a: np.ndarray, inside: np.ndarray, t1: np.ndarray,
           lag: np.ndarray, width: int) -> np.ndarray:
    """(B, n_lag) block / independent-entry variance of sum z, normalised to 1 for
    independent entries and smoothed over lags (NaN below :data:`_MIN_BLOCKS` blocks)."""
    blk, n_blk = _blocks(t1, inside, lag, width)
    v_blk, expect = _variances(z, a, blk, n_blk)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = v_blk / (_iid(z, inside) * expect[None, :])
    # lag 0 (the t1 = t2 spike, or no noise at all) says nothing about the others
    ok = np.isfinite(ratio) & (ratio > 0) & (lag > 0)[None, :]
    # at least 1: noise along t1 is positively correlated (shared frames, speckle
    # memory); a ratio below 1 is the estimate's own scatter
    r = np.maximum(_running_mean(ratio, ok, _SMOOTH), 1.0)
    return np.where((n_blk >= _MIN_BLOCKS)[None, :], r, np.nan)


def _heterogeneity(c: np.ndarray, inside: np.ndarray, g: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """var_t1[C] / (<C> - 1)^2 and its noise floor: half the mean squared difference
    of t1-adjacent entries (white noise enters it fully, slow changes of C do not)."""
    n = inside.sum(axis=0)
    cz = np.where(inside[None], c, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.nansum((cz - g[:, None, :]) ** 2, axis=1) / np.maximum(n - 1, 1)
        pair = inside[1:] & inside[:-1]
        d2 = np.where(pair[None], (c[:, 1:] - c[:, :-1]) ** 2, 0.0).sum(axis=1)
        floor = 0.5 * d2 / pair.sum(axis=0)
        den = (g - 1.0) ** 2
        chi, fl = var / den, floor / den
    bad = n < 3
    return np.where(bad, np.nan, chi), np.where(bad, np.nan, fl)


def _level_rows(level: AgeLagLevel, lo: float, hi: float, dt: float) -> slice:
    """Rows of a level whose entries can fall in [lo, hi) either way."""
    t1 = entry_t1(level)[:, 0] * dt
    i1 = int(np.searchsorted(t1, hi, side="left"))
    max_lag = float(level.lag.max()) * dt if level.lag.size else 0.0
    i0 = int(np.searchsorted(t1, lo - 0.5 * max_lag - dt * level.width, side="left"))
    return slice(max(i0, 0), max(i1, 0))


def _union_lags(amap: AgeLagMap) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """All lags (frames, ascending) and per level (level columns, positions in them)."""
    lags: dict[float, tuple[int, int]] = {}
    for k, lev in enumerate(amap.levels):
        for j, lag in enumerate(np.asarray(lev.lag, float)):
            lags.setdefault(float(lag), (k, j))  # levels come finest first
    allv = np.array(sorted(lags), dtype=np.float64)
    pos = {v: i for i, v in enumerate(allv)}
    per = []
    for k, _lev in enumerate(amap.levels):
        cols = [j for v, (kk, j) in lags.items() if kk == k]
        where = [pos[v] for v, (kk, j) in lags.items() if kk == k]
        per.append((np.array(cols, np.int64), np.array(where, np.int64)))
    return allv, per


def _selected(all_bins: np.ndarray, bins: Sequence[int] | None) -> np.ndarray:
    """Positions in the map of the 1-based ``bins`` (all by default)."""
    if bins is None:
        return np.arange(all_bins.size)
    want = np.asarray(bins, np.int64)
    missing = [int(b) for b in want if b not in set(all_bins.tolist())]
    if missing:
        raise ValueError(f"bins {missing} have no two-time data (the map has "
                         f"{all_bins.tolist()})")
    return np.array([int(np.flatnonzero(all_bins == b)[0]) for b in want])


def _level_cuts(amap: AgeLagMap, windows: AgeWindows, sel: np.ndarray, lag_per: list):
    """Per (window, level) with entries: (window, level index, level, positions in the
    union of lags, entries c (B, n_t, n_lag), weights, entry ages (s), entry t1 (frames),
    lags (frames), the entries inside the cut of each way)."""
    dt = float(amap.frame_time)
    for wi in range(windows.n):
        lo, hi = float(windows.lo[wi]), float(windows.hi[wi])
        for k, lev in enumerate(amap.levels):
            cols, where = lag_per[k]
            if cols.size == 0:
                continue
            rows = _level_rows(lev, lo, hi, dt)
            c = np.asarray(lev.c, np.float64)[sel][:, rows][:, :, cols]
            w = np.asarray(lev.weight, np.float64)[rows][:, cols]
            if c.shape[1] == 0:
                continue
            lagk = np.asarray(lev.lag, np.float64)[cols]
            t1f = entry_t1(lev)[rows, 0]
            ages = (t1f[:, None] + 0.5 * lagk[None, :]) * dt
            t1s = np.broadcast_to(t1f[:, None] * dt, ages.shape)
            ok = (w > 0) & np.all(np.isfinite(c), axis=0)
            ins = [ok & (ages >= lo) & (ages < hi), ok & (t1s >= lo) & (t1s < hi)]
            yield wi, k, lev, where, c, w, ages, t1f, lagk, ins


def age_cut_g2(amap: AgeLagMap, windows: AgeWindows) -> tuple[np.ndarray, np.ndarray]:
    """(lags (T,) in frames, g2 (2, W, B, T)): the means of :func:`age_cuts` alone, the
    same numbers without their errors, flags and chi4 (a pixel group's cuts, of which
    only g2 is read, cost a fifth as much)."""
    sel = _selected(np.asarray(amap.bins, np.int64), None)
    lag, per = _union_lags(amap)
    g2 = np.full((2, windows.n, sel.size, lag.size), np.nan)
    for wi, _k, _lev, where, c, w, _a, _t, _l, ins in _level_cuts(amap, windows, sel, per):
        for way in range(2):
            g2[way, wi][:, where] = _cut_mean(c, w, ins[way])[4]
    return lag, g2


def age_cuts(amap: AgeLagMap, windows: AgeWindows, *, bins: Sequence[int] | None = None,
             progress=None, cancel=None) -> AgeCuts:
    """Cut every window both ways, with errors, the disagreement flag and chi4.

    ``bins``: 1-based dynamic bins to cut (default all of the map's).
    """
    from xpcsviewer.progress import report

    all_bins = np.asarray(amap.bins, np.int64)
    sel = _selected(all_bins, bins)
    dt = float(amap.frame_time)
    lag, per = _union_lags(amap)
    nw, nb, nt = windows.n, sel.size, lag.size
    g2 = np.full((2, nw, nb, nt), np.nan)
    var = np.full((2, nw, nb, nt), np.nan)
    n_ent = np.zeros((2, nw, nt))
    lag_age = np.full((2, nw, nt), np.nan)
    dvar = np.full((nw, nb, nt), np.nan)
    chi4 = np.full((nw, nb, nt), np.nan)
    floor = np.full((nw, nb, nt), np.nan)
    age_num = np.zeros((2, nw))
    age_den = np.zeros((2, nw))
    steps = nw * len(amap.levels)
    for wi, k, lev, where, c, w, ages, t1f, lagk, ins in _level_cuts(amap, windows, sel,
                                                                   lag_per=per):
        report(progress, cancel, wi * len(amap.levels) + k, steps,
               f"age window {wi + 1}/{nw}")
        zs, rs, cuts = [], [], []
        for way in range(2):
            cut, z = _cut(c, w, ages, t1f, ins[way], lagk, lev.width)
            r = _ratio(z, cut.a, ins[way], t1f, lagk, lev.width)
            g2[way, wi][:, where] = cut.g
            var[way, wi][:, where] = _entry_var(z, cut.a, lagk) * q_of(cut.a) * r
            n_ent[way, wi, where] = cut.n
            lag_age[way, wi, where] = cut.lag_age
            age_num[way, wi] += cut.age_sum
            age_den[way, wi] += cut.w_sum
            zs.append(z)
            rs.append(r)
            cuts.append(cut)
        # the difference: independent-entry variance over the union of both cuts
        # (shared entries cancel), times the cuts' correlation ratio
        # entries' variance pooled from both cuts (the difference alone may rest on
        # a couple of entries at short lags)
        a0, a1 = cuts[0].a, cuts[1].a
        s2 = [_entry_var(zs[k], ak, lagk) for k, ak in enumerate((a0, a1))]
        n0, n1 = cuts[0].n, cuts[1].n
        with np.errstate(invalid="ignore", divide="ignore"):
            pooled = (s2[0] * n0 + s2[1] * n1) / (n0 + n1)
        dvar[wi][:, where] = (pooled * np.sum((a0 - a1) ** 2, axis=0)
                              * 0.5 * (rs[0] + rs[1]))
        ch, fl = _heterogeneity(c, ins[0], g2[0, wi][:, where])
        chi4[wi][:, where] = ch
        floor[wi][:, where] = fl
    report(progress, cancel, steps, steps, "age cuts done")
    err = np.sqrt(var)
    with np.errstate(invalid="ignore", divide="ignore"):
        zz = (g2[0] - g2[1]) ** 2 / dvar
    use = np.isfinite(zz) & (lag > 0)
    chi2 = np.where(use, zz, 0.0).sum(axis=2)
    dof = use.sum(axis=2)
    disagree = (dof > 0) & (chi2 > chi2_quantile(1.0 - FLAG_P, np.maximum(dof, 1)))
    with np.errstate(invalid="ignore", divide="ignore"):
        age_mean = np.where(age_den > 0, age_num / age_den, np.nan)
    return AgeCuts(windows=windows, bins=all_bins[sel], frame_time=dt, lag=lag, g2=g2,
                   g2_err=err, n_entries=n_ent, age_mean=age_mean, lag_age=lag_age,
                   diff_chi2=chi2,
                   diff_dof=dof, disagree=disagree, chi4=chi4, chi4_floor=floor,
                   diff_var=np.where(use, dvar, np.nan))
