"""Each dynamic q-bin's effective q: the q that its measured g2 decays at (issue 48).

A bin's g2 is not exp(-2 D q_c^2 t) at its centre q_c but a mixture over its pixels.
Our correlator (like boost_corr, result-file-format.md section 5) takes, per static bin
s with n_s pixels, g2_s = n_s sum_s G2 / (sum_s IP sum_s IF), and averages g2_s over the
static bins inside the dynamic bin. With a pixel's G2 = I_p^2 (1 + beta exp(-2 Gamma_p t))
(I_p its mean intensity) the decay of the dynamic bin is the mixture

    sum_p W_p exp(-2 Gamma_p t),   W_p = I_p^2 / (n_s m_s^2),

where m_s is the mean intensity of the pixel's static bin: within a static bin a pixel
counts by its intensity squared, and every static bin counts about equally. Its first
cumulant is Gamma = D q_eff^2 with

    q_eff^2 = sum_p W_p q_p^2 / sum_p W_p

over the bin's pixels (:func:`effective_q2`). With one static bin per dynamic bin this
is the I^2-weighted mean q^2 of the bin's pixels.

That first cumulant is the rate one exponential fitted to the mixture sees only when the
bin is narrow. The lowest bins are not (the demo's bin 1 spans q^2 x 2.7): a fit that
follows the decay into its slow tail sees a lower rate (measured: the first cumulant is
1 % above q_c^2 there, the fit-equivalent q^2 7 % below). So the effective q used for D is the
fit-equivalent one (:func:`fit_equivalent_q2`): D q_eff^2 is the rate of one
exponential fitted, on the bin's delays with its errors, to the noise-free mixture over
the bin's pixels, at the D that reproduces the bin's fitted time. It is the first
cumulant to first order in the spread, and makes D from a pixel mixture unbiased
(tests/compute/test_effective_q.py).

The pixel q comes from the file's geometry (:func:`~xpcsviewer.compute.detector.qmap.compute_qmap`),
the intensities from its time-averaged image (``/xpcs/temporal_mean/scattering_2d``);
without either (or when the geometry does not reproduce the file's bin centres) the
centre is used and :class:`EffectiveQ` says why.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "EffectiveQ",
    "bin_effective_q",
    "bin_mixtures",
    "effective_q2",
    "file_effective_q",
    "file_q_eff",
    "fit_equivalent_q2",
    "fit_equivalent_q2_many",
    "is_cached",
]

#: How the effective q is defined, in one line (the JSON note, the captions).
DEFINITION = ("each bin's effective q (q_eff): the q at which one exponential fitted to "
              "the mixture of exp(-2 D q^2 t) over the bin's pixels, weighted by their "
              "intensity squared as the correlator weights them, decays as D q^2")


def effective_q2(
    q_pixel: np.ndarray,
    dynamic_roi_map: np.ndarray,
    intensity: np.ndarray,
    n_dynamic: int,
    static_roi_map: np.ndarray | None = None,
) -> np.ndarray:
    """q_eff^2 of every dynamic bin (see the module docstring); NaN for a bin with no
    pixel of positive weight.

    Parameters
    ----------
    q_pixel : (H, W) 1/Angstrom
    dynamic_roi_map : (H, W) int, 0 = excluded, 1..n_dynamic
    intensity : (H, W) mean counts per pixel per frame (negative and non-finite
        values count as 0)
    n_dynamic : int
    static_roi_map : (H, W) int or None
        0 = excluded; None: one static bin per dynamic bin (plain I^2 weights).

    Returns
    -------
    (n_dynamic,) float64
    """
    q, dq, w = _pixel_weights(q_pixel, dynamic_roi_map, intensity, n_dynamic,
                              static_roi_map)
    num = np.bincount(dq, w * q**2, minlength=n_dynamic)
    den = np.bincount(dq, w, minlength=n_dynamic)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)


def _pixel_weights(q_pixel: np.ndarray, dynamic_roi_map: np.ndarray, intensity: np.ndarray,
                   n_dynamic: int, static_roi_map: np.ndarray | None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q, 0-based dynamic bin, correlator weight W_p) of the pixels in a dynamic and a
    static bin: W_p = I_p^2 / (n_s m_s^2) within static bin s (n_s pixels, mean m_s)."""
    q = np.asarray(q_pixel, dtype=np.float64).ravel()
    dq = np.asarray(dynamic_roi_map).ravel().astype(np.int64)
    i = np.asarray(intensity, dtype=np.float64).ravel()
    i = np.where(np.isfinite(i) & (i > 0), i, 0.0)
    sq = dq if static_roi_map is None else np.asarray(static_roi_map).ravel().astype(np.int64)
    if not (q.shape == dq.shape == i.shape == sq.shape):
        raise ValueError("q_pixel, the roi maps and intensity must have one shape")
    use = (dq > 0) & (dq <= n_dynamic) & (sq > 0) & np.isfinite(q)
    q, dq, i, sq = q[use], dq[use] - 1, i[use], sq[use]
    # static ids are small positive labels: counted directly (np.unique sorted them all)
    n_s = np.bincount(sq).astype(np.float64)
    m_s = np.bincount(sq, i, minlength=n_s.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        m_s = m_s / n_s
        w = np.where(m_s[sq] > 0, i**2 / (n_s[sq] * m_s[sq] ** 2), 0.0)
    return q, dq, w


#: Sub-bins of q^2 a bin's pixels are summed into for the mixture (its q^2 spread is
#: then resolved to 1/QHIST of its width: far below the statistical errors).
QHIST = 64


def bin_mixtures(
    q_pixel: np.ndarray,
    dynamic_roi_map: np.ndarray,
    intensity: np.ndarray,
    n_dynamic: int,
    static_roi_map: np.ndarray | None = None,
    n_hist: int = QHIST,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per dynamic bin, its pixels' q^2 and correlator weights W_p (module docstring),
    summed into ``n_hist`` equal q^2 sub-bins: ``(q2 (k,), w (k,))`` with the weighted
    mean q^2 of each sub-bin (empty arrays for a bin without weight)."""
    q, dq, w = _pixel_weights(q_pixel, dynamic_roi_map, intensity, n_dynamic,
                              static_roi_map)
    q2 = q**2
    out = []
    order = np.argsort(dq, kind="stable")
    bounds = np.searchsorted(dq[order], np.arange(n_dynamic + 1))
    for b in range(n_dynamic):
        k = order[bounds[b]:bounds[b + 1]]
        x, wb = q2[k], w[k]
        keep = wb > 0
        x, wb = x[keep], wb[keep]
        if x.size == 0:
            out.append((np.zeros(0), np.zeros(0)))
            continue
        edges = np.linspace(x.min(), x.max(), n_hist + 1)
        h = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, n_hist - 1)
        ws = np.bincount(h, wb, n_hist)
        xs = np.bincount(h, wb * x, n_hist)
        nz = ws > 0
        out.append((xs[nz] / ws[nz], ws[nz]))
    return out


def _single_rates(t: np.ndarray, y: np.ndarray, sig: np.ndarray, g0: np.ndarray) -> np.ndarray:
    """Gamma (B,) of baseline + contrast exp(-2 Gamma t) fitted to each row of y (B, T)
    (weights 1/sig^2, rows of weight 0 left out; baseline and contrast profiled out), by
    golden-section search in log Gamma, all rows at once.

    Each cost is a 2-column weighted least squares solved by SVD with lstsq's cutoff
    (``rcond=None``), batched: one call per step instead of one per row (a live update's
    fit made 6,200 single lstsq calls, half its time).
    """
    wt = np.where(np.isfinite(sig) & (sig > 0), 1.0 / np.where(sig > 0, sig, 1.0) ** 2, 0.0)
    sw = np.sqrt(wt)
    b = np.nan_to_num(y) * sw
    ones = sw
    m = t.size

    def cost(lg: np.ndarray) -> np.ndarray:
        e = np.exp(-2.0 * np.exp(lg)[:, None] * t[None, :]) * sw
        a = np.stack([ones, e], axis=2)  # (B, T, 2)
        u, sv, vt = np.linalg.svd(a, full_matrices=False)
        cut = np.finfo(np.float64).eps * max(m, 2) * sv[:, :1]
        inv = np.where(sv > cut, 1.0 / np.where(sv > cut, sv, 1.0), 0.0)
        ub = np.einsum("btk,bt->bk", u, b) * inv
        r = b - np.einsum("btk,bk->bt", u * sv[:, None, :], ub)
        del vt
        return np.einsum("bt,bt->b", r, r)

    lo, hi = np.log(g0) - 2.0, np.log(g0) + 2.0
    gr = (np.sqrt(5.0) - 1.0) / 2.0
    c, d = hi - gr * (hi - lo), lo + gr * (hi - lo)
    fc, fd = cost(c), cost(d)
    for _ in range(60):
        left = fc < fd  # the minimum lies in [lo, d]
        hi = np.where(left, d, hi)
        lo = np.where(left, lo, c)
        c_new = np.where(left, hi - gr * (hi - lo), d)
        d_new = np.where(left, c, lo + gr * (hi - lo))
        f = cost(np.where(left, c_new, d_new))
        fc, fd = np.where(left, f, fd), np.where(left, fc, f)
        c, d = c_new, d_new
    return np.exp(0.5 * (lo + hi))


def _single_rate(t: np.ndarray, y: np.ndarray, sig: np.ndarray, g0: float) -> float:
    """:func:`_single_rates` of one curve."""
    return float(_single_rates(t, y[None, :], sig[None, :], np.array([g0]))[0])


def fit_equivalent_q2(
    q2: np.ndarray, w: np.ndarray, t: np.ndarray, sig: np.ndarray, tau: float,
    iterations: int = 4,
) -> float:
    """The q^2 at which a bin's g2 decays as one exponential: D q_eff^2 is the rate of a
    single exponential (free contrast and baseline) fitted on the delays ``t`` with errors
    ``sig`` to the noise-free mixture sum_p W_p exp(-2 D q_p^2 t), with D such that that
    rate is 1/tau (the bin's fitted relaxation time; a fixed point, a few iterations).

    To first order in the spread of q^2 this is the W-weighted mean q^2
    (:func:`effective_q2`); a wide bin's mixture is not one exponential, and a fit over a
    delay window that follows it to its slow tail sees a lower rate. NaN without pixels,
    delays or a finite positive tau.
    """
    return float(fit_equivalent_q2_many([(q2, w)], t, np.asarray(sig, dtype=np.float64)[None],
                                        np.array([tau], dtype=np.float64), iterations)[0])


def fit_equivalent_q2_many(mixtures: list, t: np.ndarray, sig: np.ndarray, tau: np.ndarray,
                           iterations: int = 4) -> np.ndarray:
    """:func:`fit_equivalent_q2` of B bins at once: ``mixtures`` B pairs (q2, w), delays
    ``t`` (T,), errors ``sig`` (B, T) (a bin's delays with a non-finite or non-positive
    t or sig are left out of its fit), relaxation times ``tau`` (B,) s. (B,), NaN where
    not computable."""
    t = np.asarray(t, dtype=np.float64)
    sig = np.asarray(sig, dtype=np.float64).reshape(len(mixtures), t.size)
    tau = np.asarray(tau, dtype=np.float64).reshape(-1)
    ok = np.isfinite(t)[None, :] & (t > 0)[None, :] & np.isfinite(sig) & (sig > 0)
    out = np.full(len(mixtures), np.nan)
    rows = [j for j, (q2, _w) in enumerate(mixtures)
            if np.asarray(q2).size and ok[j].sum() >= 4 and np.isfinite(tau[j]) and tau[j] > 0]
    if not rows:
        return out
    keep = ok[rows].any(axis=0)  # delays no kept bin uses are dropped from every row
    tt = np.where(keep, t, 1.0)[keep]
    ss = np.where(ok[rows][:, keep], sig[rows][:, keep], np.nan)
    mix = [(np.asarray(mixtures[j][0], dtype=np.float64),
            np.asarray(mixtures[j][1], dtype=np.float64)) for j in rows]
    wn = [w / np.sum(w) for _q2, w in mix]
    q_eff2 = np.array([float(np.sum(w * q2)) for (q2, _w), w in zip(mix, wn, strict=True)])
    tr = tau[rows]
    for _ in range(iterations):
        d = 1.0 / (tr * q_eff2)
        y = np.stack([np.exp(-2.0 * dj * np.outer(tt, q2)) @ w
                      for dj, (q2, _w), w in zip(d, mix, wn, strict=True)])
        rate = _single_rates(tt, y, ss, 1.0 / tr)
        q_eff2 = rate / d
    out[rows] = q_eff2
    return out


@dataclass(frozen=True)
class EffectiveQ:
    """What a file's q-bins' effective q is computed from.

    Attributes
    ----------
    centre : (Nd,) 1/Angstrom
        The file's bin centres (what labels show).
    mean_q2 : (Nd,) 1/Angstrom^2
        W-weighted mean q^2 of each bin's pixels (NaN where not computable).
    mixtures : list of (q2, w) per bin, or None
        From :func:`bin_mixtures`; None when the file cannot give them.
    note : str
        Why the centre is used ("" when every bin has its pixels).
    """

    centre: np.ndarray
    mean_q2: np.ndarray
    mixtures: list | None
    note: str = ""
    #: the file's multi-tau delays (T,) s and g2 errors (T, Nd) where read with it
    delays: np.ndarray | None = None
    g2_err: np.ndarray | None = None

    @property
    def available(self) -> np.ndarray:
        """(Nd,) bool: bins whose pixels are known."""
        if self.mixtures is None:
            return np.zeros(self.centre.size, bool)
        return np.array([m[0].size > 0 for m in self.mixtures])

    def q_eff(self, cols: np.ndarray, tau: np.ndarray, t: np.ndarray,
              sig: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(q, effective) for these 0-based columns: each column's fit-equivalent q
        (:func:`fit_equivalent_q2`) for its relaxation time ``tau`` (s), delays ``t``
        (T,) and g2 errors ``sig`` (B, T) of its fitted points (NaN or 0 where not
        fitted); the centre where it cannot be computed (``effective`` False)."""
        cols = np.asarray(cols, dtype=np.int64)
        q = self.centre[cols].astype(np.float64).copy()
        eff = np.zeros(cols.size, bool)
        if self.mixtures is None:
            return q, eff
        v = fit_equivalent_q2_many([self.mixtures[c] for c in cols], t,
                                   np.asarray(sig, dtype=np.float64).reshape(cols.size, -1),
                                   np.asarray(tau, dtype=np.float64))
        good = np.isfinite(v) & (v > 0)
        q[good], eff[good] = np.sqrt(v[good]), True
        return q, eff


def _centre_only(centre: np.ndarray, note: str) -> EffectiveQ:
    return EffectiveQ(centre, np.full(centre.size, np.nan), None, note)


#: The pixel q must reproduce the file's bin centres: every centre within this many
#: bin-q-widths of its pixels' q range (else the geometry is not the partition's).
_CENTRE_SLACK = 0.5


def bin_effective_q(qmap, image: np.ndarray | None) -> EffectiveQ:
    """What the effective q of the dynamic bins of a
    :class:`~xpcsviewer.model.result.QMap` is computed from, with ``image`` the file's
    time-averaged (H, W) intensity (None: not in the file)."""
    from xpcsviewer.compute.detector.qmap import compute_qmap

    centre = np.asarray(qmap.dynamic_q, dtype=np.float64)
    if str(qmap.map_names[0]).lower() != "q":
        return _centre_only(centre, f"the partition is in {qmap.map_names[0]}, not q")
    if image is None:
        return _centre_only(centre, "the file has no 2-D intensity image")
    image = np.asarray(image, dtype=np.float64)
    if image.shape != tuple(qmap.shape):
        return _centre_only(centre, f"the 2-D image {image.shape} is not the q-map's "
                                    f"{tuple(qmap.shape)}")
    if not (qmap.energy_kev and qmap.energy_kev > 0):
        return _centre_only(centre, "the file states no energy for the pixel q")
    q_px, _ = compute_qmap(qmap.shape, qmap.energy_kev, qmap.detector_distance,
                           qmap.pixel_size, qmap.beam_center_x, qmap.beam_center_y)
    dq = np.asarray(qmap.dynamic_roi_map).astype(np.int64)
    nd = qmap.n_dynamic
    sel = (dq > 0) & (dq <= nd)
    lab = dq[sel] - 1
    lo = np.full(nd, np.inf)
    hi = np.full(nd, -np.inf)
    np.minimum.at(lo, lab, q_px[sel])
    np.maximum.at(hi, lab, q_px[sel])
    have = np.isfinite(lo)
    slack = _CENTRE_SLACK * np.where(have, hi - lo, 0.0) + 1e-9 * np.abs(centre)
    if np.any(have & ((centre < lo - slack) | (centre > hi + slack))):
        return _centre_only(centre, "the file's geometry does not reproduce its bin centres")
    img = image * np.asarray(qmap.mask, bool)
    mix = bin_mixtures(q_px, dq, img, nd, qmap.static_roi_map)
    # the weighted mean q^2 from the mixtures' sub-bins (exact: each is a weighted
    # mean with its summed weight): the pixels' weights are made once
    mean_q2 = np.array([np.sum(x * w) / np.sum(w) if w.size else np.nan for x, w in mix])
    note = "" if all(m[0].size for m in mix) else "no intensity in some bins' pixels"
    return EffectiveQ(centre, mean_q2, mix, note)


_CACHE: dict[tuple, EffectiveQ] = {}
_CACHE_MAX = 64


def is_cached(key: tuple) -> bool:
    """The effective q of this file content is already made (its inputs need no read)."""
    return key in _CACHE


def file_effective_q(inputs: dict) -> EffectiveQ:
    """:func:`bin_effective_q` of a result file's ``inputs``
    (:func:`xpcsviewer.io.results.pixel_q.read_effective_q_inputs`: its q-map, image,
    multi-tau delays and errors, or the reason it has none). Cached by the file's
    path, size and modification time."""
    key = inputs.get("key")
    if key is not None and key in _CACHE:
        return _CACHE[key]
    qmap = inputs.get("qmap")
    if qmap is None:
        return EffectiveQ(np.zeros(0), np.zeros(0), None, inputs.get("error", "no q-map"))
    out = bin_effective_q(qmap, inputs.get("image"))
    if inputs.get("delays") is not None:
        out = EffectiveQ(out.centre, out.mean_q2, out.mixtures, out.note,
                         inputs["delays"], inputs["g2_err"])
    if key is not None:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = out
    return out


def file_q_eff(inputs: dict, cols: np.ndarray, tau: np.ndarray,
               t_range: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray, str]:
    """(q, effective, note) of these 0-based g2 columns of a file (its ``inputs``) with
    relaxation times ``tau`` (s), on the file's delays and errors inside ``t_range``."""
    e = file_effective_q(inputs)
    cols = np.asarray(cols, dtype=np.int64)
    if e.delays is None or e.mixtures is None or e.centre.size <= (cols.max() if cols.size else 0):
        centre = e.centre[cols] if e.centre.size > (cols.max() if cols.size else -1) \
            else np.full(cols.size, np.nan)
        return centre, np.zeros(cols.size, bool), e.note or "no multi-tau g2 in the file"
    t = e.delays
    sig = e.g2_err[:, cols].T
    if t_range is not None:
        lo, hi = sorted(t_range)
        sig = np.where(((t >= lo) & (t <= hi))[None, :], sig, np.nan)
    q, eff = e.q_eff(cols, tau, t, sig)
    return q, eff, e.note


