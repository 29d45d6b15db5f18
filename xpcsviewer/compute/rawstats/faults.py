"""The fault finders, run on a run's accumulated statistics (:class:`.accumulate.RawStats`).

Each finder is a test against what the run itself says is normal, with a threshold named
here and the reason for it. Pixel tests compare a pixel's summed counts S with the level
of its q-bin (or, without a q-map, of its neighbourhood) under a negative binomial law
whose excess spread is measured in that bin: speckle (whose intensity is exponential for
a static sample: a pixel 10 x its bin's mean is not rare there) and the change of I(q)
across a bin widen the law, so neither is taken for a fault; for a dynamic sample the
spread measured is ~0 and the law is Poisson.
"""

from __future__ import annotations

import math

import numpy as np

from xpcsviewer.compute.rawstats.accumulate import RawStats
from xpcsviewer.compute.rawstats.clusters import (
    COSMIC_MARGIN,
    find_clusters,
    score_clusters,
)
from xpcsviewer.compute.rawstats.spectrum import find_modulations
from xpcsviewer.model.raw_inspect import FINDING_KINDS, Finding

__all__ = ["AT_CAP_FRAME_FRACTION", "AT_CAP_MIN_PIXELS", "AT_CAP_PIXEL_FRACTION",
           "DEAD_LOG_P", "DEAD_MAX_GROUP", "EMPTY_LOG10_P", "EMPTY_RATIO", "HOT_LOG10_P",
           "HOT_RATIO", "LOCAL_SIZE", "TRIM", "find_at_cap", "find_cosmics",
           "find_dead_pixels", "find_empty_frames", "find_faults", "find_hot_pixels",
           "pixel_levels"]

#: hot: the tail probability of the pixel's counts under its bin's law, at most 1e-9
#: (about one false hot pixel in a thousand 1M-pixel runs) ...
HOT_LOG10_P = -9.0
#: ... and counts at least HOT_RATIO x the bin's level: a guard against a bin whose law
#: is wrongly narrow (few pixels, a steep I(q)); detector hot pixels count far more
HOT_RATIO = 10.0
#: dead: no count where the bin's law gives P(0) <= e**-20 (a Poisson mean of 20 counts)
DEAD_LOG_P = -20.0
#: without a q-map: a group of dead pixels larger than this (8-connected zeros) is a
#: shadow or the dark outside the beam, not dead pixels
DEAD_MAX_GROUP = 9
#: the level and spread of a bin leave out this fraction at each end of its pixels (the
#: hot and dead pixels themselves)
TRIM = 0.005
#: without a q-map: the level of a pixel is the median of its LOCAL_SIZE x LOCAL_SIZE
#: neighbourhood (wider than a speckle, narrower than the change of I(q))
LOCAL_SIZE = 9
#: pixels at the cap in at least this fraction of the frames (and in 3 or more) are
#: reported: their counts are clipped often enough to bias the bin's statistics
AT_CAP_PIXEL_FRACTION = 0.01
#: frames where at least this fraction of the hit pixels are at the cap (and at least
#: AT_CAP_MIN_PIXELS): a saturated frame (a beam spike, a direct-beam leak)
AT_CAP_FRAME_FRACTION = 0.05
AT_CAP_MIN_PIXELS = 3
#: empty frames: a run of frames each below EMPTY_RATIO x the run's level whose summed
#: photons have a Poisson lower tail <= 1e-9 at that level (one empty frame where 21
#: photons are expected; five where 5 are)
EMPTY_RATIO = 0.1
EMPTY_LOG10_P = -9.0
#: below this many photons per frame the run's median is noisy: its mean is the level
EMPTY_MEDIAN_MIN = 20.0


def _trimmed(x: np.ndarray) -> np.ndarray:
    if x.size < 20:
        return x
    lo, hi = np.quantile(x, [TRIM, 1.0 - TRIM])
    return x[(x >= lo) & (x <= hi)]


def pixel_levels(stats: RawStats) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(expected summed counts, excess spread beta, tested) per flat pixel.

    With q-bins: the level of each bin's pixels is the trimmed mean of their sums.
    Without: the median of the pixel's neighbourhood (the local mean where that is 0)
    scaled by the trimmed mean ratio of the pixels of similar level. beta: Var(S / mu) -
    mean(1 / mu) over the trimmed pixels of the group (negative binomial: Var S = mu +
    beta mu**2), at least 0. ``tested``: valid pixels in a bin (or valid, without bins).
    """
    s = np.asarray(stats.pixel_sum, dtype=np.float64).reshape(-1)
    lut = stats.lut
    nb = 0 if stats.bin_photons is None else stats.bin_photons.shape[1]
    mu = np.zeros_like(s)
    beta = np.zeros_like(s)
    if nb:
        tested = lut > 0
        groups = lut.astype(np.int64)
        base = np.ones_like(s)
    else:
        from scipy.ndimage import median_filter, uniform_filter

        tested = lut >= 0
        img = s.reshape(stats.shape)
        # separable (rows, then columns): a quarter of the 2-D window's time on a 3M
        # detector, and as blind to a lone hot pixel or a short line of them
        base = median_filter(median_filter(img, size=(1, LOCAL_SIZE), mode="reflect"),
                             size=(LOCAL_SIZE, 1), mode="reflect").reshape(-1)
        local_mean = uniform_filter(img, size=LOCAL_SIZE, mode="reflect").reshape(-1)
        base = np.where(base > 0, base, local_mean)
        groups = np.zeros(s.size, dtype=np.int64)
        pos = tested & (base > 0)
        if np.any(pos):  # 12 groups of similar level (log-spaced quantiles)
            lb = np.log(base[pos])
            edges = np.quantile(lb, np.linspace(0, 1, 13)[1:-1])
            groups[pos] = 1 + np.searchsorted(edges, lb)
        tested = pos
    for g in np.unique(groups[tested]):
        at = np.flatnonzero(tested & (groups == g))
        r = _trimmed(s[at] / base[at])
        c = float(r.mean()) if r.size else 0.0
        if c <= 0:
            continue
        m = c * base[at]
        mu[at] = m
        rt = _trimmed(s[at] / m)
        inv = _trimmed(1.0 / m)
        beta[at] = max(0.0, float(rt.var() - inv.mean())) if rt.size > 1 else 0.0
    return mu, beta, tested & (mu > 0)


def _log10_sf(k: np.ndarray, mu: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """log10 P(S >= k) under the negative binomial (mean mu, Var mu + beta mu**2);
    Poisson where beta is 0."""
    from scipy.stats import nbinom, poisson

    k = np.asarray(k, dtype=np.float64)
    out = np.empty(k.shape)
    pois = beta <= 1e-12
    if np.any(pois):
        out[pois] = poisson.logsf(k[pois] - 1, mu[pois]) / math.log(10.0)
    nbm = ~pois
    if np.any(nbm):
        n = 1.0 / beta[nbm]
        p = 1.0 / (1.0 + mu[nbm] * beta[nbm])
        out[nbm] = nbinom.logsf(k[nbm] - 1, n, p) / math.log(10.0)
    return out


def _tail(l10: float) -> str:
    """A tail probability's power of ten, for a detail line."""
    return "< 1e-300" if not np.isfinite(l10) or l10 < -300 else f"1e{l10:.0f}"


def _rc(flat: np.ndarray, w: int) -> tuple[tuple[int, int], ...]:
    return tuple((int(p) // w, int(p) % w) for p in flat)


def find_hot_pixels(stats: RawStats, levels=None) -> list[Finding]:
    """One finding per hot pixel (see :data:`HOT_LOG10_P`, :data:`HOT_RATIO`)."""
    mu, beta, tested = levels if levels is not None else pixel_levels(stats)
    s = np.asarray(stats.pixel_sum, dtype=np.float64).reshape(-1)
    n = max(stats.n_frames, 1)
    cand = np.flatnonzero(tested & (s >= HOT_RATIO * mu) & (s >= 1))
    if cand.size == 0:
        return []
    lp = _log10_sf(np.floor(s[cand]), mu[cand], beta[cand])
    w = stats.shape[1]
    out = []
    for p, l10 in zip(cand, lp, strict=True):
        if l10 > HOT_LOG10_P:
            continue
        b = int(stats.lut[p]) if stats.bin_photons is not None else None
        where = f"bin {b}" if b is not None else "its neighbourhood"
        detail = (f"mean {s[p] / n:.4g} counts/frame vs {mu[p] / n:.3g} in {where} "
                  f"(x{s[p] / mu[p]:.3g}, tail {_tail(l10)})")
        out.append(Finding("hot_pixel", (0, stats.n_frames - 1), _rc([p], w), None, detail,
                           b, float(min(-l10, 1e300))))
    return out


def _groups_8(flat: np.ndarray, shape: tuple[int, int]) -> list[np.ndarray]:
    """8-connected groups of the flat pixels (one frame: the clustering of cosmics)."""
    from xpcsviewer.compute.rawstats.clusters import find_clusters as _fc

    f = np.zeros(flat.size, np.int64)
    groups = _fc(f, flat, np.ones(flat.size), shape, min_pixels=1)
    return [g.pixels for g in groups]


def _local_levels(s: np.ndarray, tested: np.ndarray, mu: np.ndarray,
                  shape: tuple[int, int]) -> tuple[np.ndarray, float]:
    """(median of each pixel's 5 x 5 neighbourhood of sums, untested pixels taken at
    their ``mu``; the excess spread beta of sums around those medians)."""
    from scipy.ndimage import median_filter

    img = np.where(tested, s, mu).reshape(shape)
    local = median_filter(median_filter(img, size=(1, 5), mode="reflect"),
                          size=(5, 1), mode="reflect").reshape(-1)
    ok = tested & (local > 0)
    if np.count_nonzero(ok) < 20:
        return local, np.inf
    r = _trimmed(s[ok] / local[ok])
    inv = _trimmed(1.0 / local[ok])
    return local, max(0.0, float(r.var() - inv.mean()))


def find_dead_pixels(stats: RawStats, levels=None) -> list[Finding]:
    """Pixels with no count where their bin's law makes that impossible
    (:data:`DEAD_LOG_P`): one finding per 8-connected group."""
    mu, beta, tested = levels if levels is not None else pixel_levels(stats)
    s = np.asarray(stats.pixel_sum, dtype=np.float64).reshape(-1)
    cand = np.flatnonzero(tested & (s == 0))
    if cand.size and stats.bin_photons is None:
        # without a q-map nothing masks the beamstop's shadow or the dark beyond the
        # illuminated area: their edge pixels have lit neighbours. A dead pixel is a
        # small island of zeros (DEAD_MAX_GROUP), not the rim of a large dark region
        from scipy.ndimage import label

        lab, _n = label((s == 0).reshape(stats.shape), structure=np.ones((3, 3), bool))
        sizes = np.bincount(lab.ravel())
        cand = cand[sizes[lab.ravel()[cand]] <= DEAD_MAX_GROUP]
    if cand.size == 0:
        return []
    m, b = mu[cand], beta[cand]
    if stats.bin_photons is not None:
        # a bin's spread includes its I(q) slope (wide bins near the beam): against
        # it, no count where 150 are expected can look possible. The pixel's own
        # neighbourhood, with the spread of sums around their neighbourhoods, cannot
        # hide it (the larger of the two levels, the smaller spread: a dead pixel is
        # found when either law makes its zero impossible)
        lm, lb = _local_levels(s, tested, mu, stats.shape)
        m, b = np.maximum(m, lm[cand]), np.minimum(b, lb)
    with np.errstate(divide="ignore", invalid="ignore"):
        logp0 = np.where(b > 1e-12, -np.log1p(m * b) / np.where(b > 1e-12, b, 1.0), -m)
    dead = cand[logp0 <= DEAD_LOG_P]
    if dead.size == 0:
        return []
    n = max(stats.n_frames, 1)
    out = []
    for grp in _groups_8(dead, stats.shape):
        exp = float(mu[grp].mean())
        bins = np.unique(stats.lut[grp]) if stats.bin_photons is not None else []
        qb = int(bins[0]) if len(bins) == 1 else None
        detail = (f"{grp.size} pixel(s) with no count in {n} frames where "
                  f"{exp:.4g} counts were expected ({exp / n:.3g}/frame)")
        out.append(Finding("dead_pixel", (0, stats.n_frames - 1), _rc(grp, stats.shape[1]),
                           None, detail, qb, exp))
    return out


def _runs(flag: np.ndarray) -> list[tuple[int, int]]:
    """[first, last] of each run of True."""
    f = np.asarray(flag, dtype=np.int8)
    d = np.diff(np.r_[0, f, 0])
    return list(zip(np.flatnonzero(d == 1).tolist(), (np.flatnonzero(d == -1) - 1).tolist(),
                    strict=True))


def find_at_cap(stats: RawStats) -> list[Finding]:
    """Pixels at the counter cap in many frames (one finding listing them, most often
    capped first) and runs of frames where many hit pixels are at the cap."""
    cap = stats.counter_cap
    if cap is None:
        return []
    n = stats.n_frames
    out = []
    cf = np.asarray(stats.pixel_cap_frames).reshape(-1)
    need = max(3.0, AT_CAP_PIXEL_FRACTION * n)
    px = np.flatnonzero(cf >= need)
    if px.size:
        px = px[np.argsort(-cf[px], kind="stable")]
        top = px[0]
        w = stats.shape[1]
        detail = (f"{px.size} pixel(s) at the cap ({cap} counts) in >= {need:.0f} of {n} "
                  f"frames; most: ({top // w}, {top % w}) in {cf[top]} frames")
        out.append(Finding("at_cap", (0, n - 1), _rc(px, w), None, detail, None,
                           float(cf[top]) / max(n, 1)))
    hit = np.maximum(np.asarray(stats.hit_pixels), 1)
    at = np.asarray(stats.at_cap)
    frac = at / hit
    for a, b in _runs((frac >= AT_CAP_FRAME_FRACTION) & (at >= AT_CAP_MIN_PIXELS)):
        worst = a + int(np.argmax(frac[a:b + 1]))
        detail = (f"frames {a}..{b}: up to {100 * frac[worst]:.3g} % of the hit pixels at "
                  f"the cap ({cap} counts; {at[worst]} pixels in frame {worst})")
        out.append(Finding("at_cap", (a, b), (), None, detail, None, float(frac[worst])))
    return out


def find_empty_frames(hit_pixels: np.ndarray, photons: np.ndarray | None = None
                      ) -> list[Finding]:
    """Runs of frames far below the run's level whose hit pixels are impossibly few for
    it (:data:`EMPTY_RATIO`, :data:`EMPTY_LOG10_P`); frames with no hit at all in a
    sparse stream are dropped frames.

    Hit pixels, not photons: a bright spot or a hot pixel adds thousands of photons to
    each frame it lights, and a level set by it would take the frames without it for
    empty; it adds one hit pixel per pixel. ``photons`` (per frame) only go into the
    detail."""
    from scipy.stats import poisson

    x = np.asarray(hit_pixels, dtype=np.float64)
    if x.size == 0:
        return []
    level = float(np.median(x))
    if level < EMPTY_MEDIAN_MIN:
        level = float(x.mean())
    if level <= 0:
        return []
    out = []
    for a, b in _runs(x <= EMPTY_RATIO * level):
        k = float(x[a:b + 1].sum())
        m = level * (b - a + 1)
        l10 = float(poisson.logcdf(math.floor(k), m)) / math.log(10.0)
        if l10 > EMPTY_LOG10_P:
            continue
        if k == 0:
            what = "no hit pixel"
        else:
            what = f"{k:.4g} hit pixels"
            if photons is not None:
                what += f" ({float(np.sum(photons[a:b + 1])):.4g} photons)"
        detail = (f"{b - a + 1} frame(s) with {what} where {level:.4g} hit pixels per "
                  f"frame are expected (tail {_tail(l10)})")
        out.append(Finding("empty_frames", (a, b), (), None, detail, None, min(-l10, 1e300)))
    return out


def find_cosmics(stats: RawStats) -> list[Finding]:
    """Clusters of bright pixels in one frame (:mod:`.clusters`) whose joint Poisson and
    single-mode scores both exceed log10(frames x valid pixels) + :data:`COSMIC_MARGIN`."""
    f, p, v = stats.candidates
    clusters = find_clusters(f, p, v, stats.shape)
    if not clusters:
        return []
    need = math.log10(max(stats.n_frames, 1) * max(stats.n_valid, 1)) + COSMIC_MARGIN
    out = []
    w = stats.shape[1]
    for cl, (joint, single) in zip(clusters, score_clusters(clusters, stats.pixel_sum,
                                                            stats.n_frames), strict=True):
        if joint < need or single < need:
            continue
        detail = (f"{cl.pixels.size} neighbouring pixels, {cl.values.sum():.4g} counts in "
                  f"frame {cl.frame} (scores {joint:.3g} joint Poisson, {single:.3g} "
                  f"single mode; threshold {need:.3g})")
        out.append(Finding("cosmic", (cl.frame, cl.frame), _rc(cl.pixels, w), None, detail,
                           None, min(joint, single)))
    return out


def find_faults(stats: RawStats, frame_time: float | None = None) -> list[Finding]:
    """Every finder on ``stats``, ordered by kind (:data:`FINDING_KINDS`), then by score
    (most significant first)."""
    levels = pixel_levels(stats)
    found = (find_hot_pixels(stats, levels) + find_dead_pixels(stats, levels)
             + find_cosmics(stats) + find_empty_frames(stats.hit_pixels, stats.photons)
             + find_at_cap(stats))
    if stats.bin_photons is not None and stats.bin_photons.shape[1]:
        bins = np.arange(1, stats.bin_photons.shape[1] + 1)
        found += find_modulations(stats.bin_photons, frame_time, bins=bins)
    else:
        found += find_modulations(stats.photons, frame_time)
    rank = {k: i for i, k in enumerate(FINDING_KINDS)}
    found.sort(key=lambda f: (rank.get(f.kind, len(rank)), -f.score, f.frames[0]))
    return found
