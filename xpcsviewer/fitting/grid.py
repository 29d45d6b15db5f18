"""Global start for the least squares: a grid over the nonlinear parameters.

Every g2 model is linear in ``contrast`` and ``baseline`` once its nonlinear parameters
(tau, stretch, tau1/tau2/fraction) are fixed, so the best amplitudes at each grid point
are a weighted 2x2 linear solve. Scanning a log grid of tau over the bounds (by default
[t_min/10, 10 t_max]) therefore gives, per curve and in one vectorised pass:

- the global optimum on the grid, from which the Levenberg-Marquardt refinement starts
  (a noisy first delay can no longer put the start on a fast decoy decay);
- the profile chi^2(tau) (minimised over everything else), used to tell a resolved tau
  from one that only has a limit (the profile running to the edge of the grid);
- chi^2 of a constant (no decay), for the ``no_decay`` test.

The kernel is written for one curve against the backend's array namespace and vmapped
over curves, like the LM kernel.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from xpcsviewer.fitting.lm import rows_per_call
from xpcsviewer.fitting.models import (
    LOG_PARAMS,
    G2Model,
    evaluate_model,
    model_param_names,
)

__all__ = ["GridProfile", "grid_points", "grid_scan"]

#: Grid sizes: tau points over the bounds for single/avgcorr; tau x stretch for the
#: stretched model; (tau1 < tau2 pairs) x fraction for the double model.
N_TAU_1D = 48
N_TAU_STRETCHED, N_STRETCH = 48, 9
N_TAU_DOUBLE, N_FRACTION = 24, 5
#: Curves per compiled call of the grid kernel (JAX) on an accelerator, and at least on
#: the CPU (every lane is computed: 36 curves in 64 lanes instead of 256; the same
#: values bit for bit, see ``lm.CPU_MIN_POINTS``).
GRID_ROWS = 256
CPU_GRID_ROWS = 64
#: A further LM start only from a local minimum of the tau profile this close (chi^2
#: scaled by the misfit) to the best grid point.
START_DCHI2 = 25.0


@dataclass
class GridProfile:
    """What the grid scan found, per curve (NumPy arrays).

    Attributes
    ----------
    start : (B, M, P) natural units
        Up to M starts per curve: the global grid optimum first, then the best other
        local minima of the tau profile (NaN rows where there are fewer).
    tau_grid : (B, G) s
        The grid of the profiled relaxation time (``tau``, or ``tau1`` for ``double``).
    profile : (B, G)
        chi^2 minimised over every other parameter at each grid tau (contrast >= 0).
    chi2_const : (B,)
        chi^2 of the best constant (the no-decay model; the fixed baseline if fixed).
    chi2_grid : (B,)
        The grid optimum's chi^2.
    """

    start: np.ndarray
    tau_grid: np.ndarray
    profile: np.ndarray
    chi2_const: np.ndarray
    chi2_grid: np.ndarray


def grid_points(
    model: G2Model, value: np.ndarray, lower: np.ndarray, upper: np.ndarray, fixed: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """The grid of parameter sets per curve.

    Parameters
    ----------
    value, lower, upper : (B, P) natural units
    fixed : (P,) bool

    Returns
    -------
    theta : (B, K, P)
        Parameter sets (contrast 1 and baseline 0: the model's shape only).
    tau_index : (K,) int
        Index of each point's profiled tau in the tau grid.
    n_tau : int
    """
    names = model_param_names(model)
    n_b, n_p = value.shape
    col = {n: k for k, n in enumerate(names)}

    def log_axis(k: int, n: int) -> np.ndarray:
        if fixed[k]:
            return value[:, k : k + 1]
        return np.exp(np.linspace(np.log(lower[:, k]), np.log(upper[:, k]), n, axis=1))

    def lin_axis(k: int, pts: np.ndarray) -> np.ndarray:
        if fixed[k]:
            return value[:, k : k + 1]
        lo, hi = lower[:, k : k + 1], upper[:, k : k + 1]
        inside = pts[(pts > lo.min()) & (pts < hi.max())]
        grid = np.broadcast_to(inside, (n_b, inside.size)) if inside.size else value[:, k : k + 1]
        return np.clip(grid, lo, hi)

    if model is G2Model.DOUBLE:
        t1 = log_axis(col["tau1"], N_TAU_DOUBLE)
        t2 = log_axis(col["tau2"], N_TAU_DOUBLE)
        fr = lin_axis(col["fraction"], np.linspace(0.1, 0.9, N_FRACTION))
        if t1.shape[1] > 1 and t2.shape[1] > 1:
            i1, i2 = np.triu_indices(t1.shape[1], k=1)  # tau1 < tau2: no label switching
            n_tau = t1.shape[1] - 1
        else:
            i1, i2 = np.meshgrid(np.arange(t1.shape[1]), np.arange(t2.shape[1]), indexing="ij")
            i1, i2 = i1.ravel(), i2.ravel()
            n_tau = t1.shape[1]
        n_pair, n_fr = i1.size, fr.shape[1]
        theta = np.broadcast_to(value[:, None, :], (n_b, n_pair * n_fr, n_p)).copy()
        theta[:, :, col["tau1"]] = np.repeat(t1[:, i1], n_fr, axis=1)
        theta[:, :, col["tau2"]] = np.repeat(t2[:, i2], n_fr, axis=1)
        theta[:, :, col["fraction"]] = np.tile(fr, (1, n_pair))
        tau_index = np.repeat(i1, n_fr)
    else:
        free_stretch = model is G2Model.STRETCHED and not fixed[col["stretch"]]
        n_t = N_TAU_STRETCHED if free_stretch else N_TAU_1D
        tg = log_axis(col["tau"], n_t)
        if "stretch" in col:
            st = lin_axis(col["stretch"],
                          np.array([0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0, 1.25, 1.6])[:N_STRETCH])
        else:
            st = np.ones((n_b, 1))
        n_tt, n_st = tg.shape[1], st.shape[1]
        theta = np.broadcast_to(value[:, None, :], (n_b, n_tt * n_st, n_p)).copy()
        theta[:, :, col["tau"]] = np.repeat(tg, n_st, axis=1)
        if "stretch" in col:
            theta[:, :, col["stretch"]] = np.tile(st, (1, n_tt))
        tau_index = np.repeat(np.arange(n_tt), n_st)
        n_tau = n_tt
    theta[:, :, col["contrast"]] = 1.0
    theta[:, :, col["baseline"]] = 0.0
    return theta, tau_index, n_tau


def _closed_form(xp: Any, se, see, sey, w, yc, lin):
    """chi^2 minimised over contrast and baseline from the weighted sums of the shape.

    With y centred on its weighted mean (no cancellation); bounds by projection.
    """
    c_free, b_free = lin[:, 0:1] > 0.5, lin[:, 1:2] > 0.5
    c_val, b_val = lin[:, 2:3], lin[:, 3:4]
    c_lo, c_hi, b_lo, b_hi = lin[:, 4:5], lin[:, 5:6], lin[:, 6:7], lin[:, 7:8]
    sw = xp.sum(w, axis=1)[:, None]
    sw = xp.where(sw > 0, sw, 1.0)  # no valid point: any finite answer (failed later)
    syy = xp.sum(w * yc * yc, axis=1)[:, None]
    ym = lin[:, 8:9]  # the weighted mean taken out of y
    # in centred coordinates the baseline is b - ym
    bv, blo, bhi = b_val - ym, b_lo - ym, b_hi - ym
    det = sw * see - se * se
    ok = det > 1e-12 * sw * see
    c_both = xp.where(ok, sw * sey / xp.where(ok, det, 1.0), 0.0)
    see_safe = xp.where(see > 0, see, 1.0)
    c = xp.where(c_free, xp.where(b_free, c_both, (sey - bv * se) / see_safe), c_val)
    c = xp.where(c_free, xp.clip(c, c_lo, c_hi), c)
    bc = xp.where(b_free, -c * se / sw, bv)
    bc = xp.where(b_free, xp.clip(bc, blo, bhi), bc)
    # one projection round: with a clipped baseline, the contrast again
    c2 = xp.clip((sey - bc * se) / see_safe, c_lo, c_hi)
    c = xp.where(c_free & b_free, c2, c)
    chi2 = syy + bc * bc * sw + 2.0 * bc * c * se - 2.0 * c * sey + c * c * see
    chi2 = xp.maximum(chi2, 0.0)
    b0 = xp.where(b_free, xp.clip(0.0, blo, bhi), bv)[:, 0]
    chi2_const = syy[:, 0] + b0 * b0 * sw[:, 0]
    return chi2, c, bc + ym, chi2_const


def _make_kernel(backend: Any, model: G2Model, unit_stretch: bool) -> Any:
    """Batched scan kernel ``(t, yc, w, theta, lin, aux_m, aux_dt) -> (chi2, c, b, chi2_const)``.

    A loop over the delays accumulates the weighted sums of the model's shape e (one
    (B, K) slab at a time, which stays in cache: measured 4-5x faster on the CPU than
    reducing (B, K, T) arrays along T); chi^2 then follows in closed form from the sums
    with y centred on its weighted mean (no cancellation).
    """
    xp = backend.xp
    names = model_param_names(model)
    n_p = len(names)

    def shape_at(ti, theta, inv_tau, log_tau, mi, aux_dt):
        # The model with contrast 1 and baseline 0 at one delay per curve, (B, K).
        if model is G2Model.SINGLE and unit_stretch:
            return xp.exp(ti[:, None] * inv_tau)
        if model in (G2Model.SINGLE, G2Model.STRETCHED):
            return xp.exp(-2.0 * xp.exp(theta[:, :, 2] * (xp.log(ti)[:, None] - log_tau)))
        p = tuple(theta[:, :, k] for k in range(n_p))
        return evaluate_model(model, ti[:, None], p, (mi[:, None], aux_dt[:, None]), xp)

    def kernel(t, yc, w, theta, lin, aux_m, aux_dt):
        # yc: y minus its weighted mean (per curve); w: 1/sigma^2, 0 where masked.
        inv_tau = -2.0 / theta[:, :, 1]
        log_tau = xp.log(theta[:, :, 1])
        zero = xp.zeros(theta.shape[:2], dtype=theta.dtype)

        def body(i, acc):
            se, see, sey = acc
            e = shape_at(t[:, i], theta, inv_tau, log_tau, aux_m[:, i], aux_dt)
            pw = e * w[:, i][:, None]
            return se + pw, see + pw * e, sey + pw * yc[:, i][:, None]

        se, see, sey = backend.fori_loop(0, t.shape[1], body, (zero, zero, zero))
        return _closed_form(xp, se, see, sey, w, yc, lin)

    return backend.jit(kernel)


def _make_double_kernel(backend: Any) -> Any:
    """The double model at unit stretches over full axes, ``(t, yc, w, lin, rate1, rate2, frac)``.

    Its grid is (tau1, tau2) pairs x fractions over three short axes (rate = -1/tau,
    (B, n1), (B, n2); fractions (B, nf)): each delay needs exp(-t/tau) once per axis
    value, broadcast over the (n1, n2, nf) block, instead of four transcendentals per
    grid point. The block includes tau1 >= tau2 (twice the points of the grid), which
    is still ~10x faster on the CPU than the general kernel, and far faster than
    gathering the grid's points (XLA's CPU gather).
    """
    xp = backend.xp

    def kernel(t, yc, w, lin, rate1, rate2, frac):
        n_b = t.shape[0]
        shape = (n_b, rate1.shape[1], rate2.shape[1], frac.shape[1])
        zero = xp.zeros(shape, dtype=t.dtype)
        fr = frac[:, None, None, :]

        def body(i, acc):
            se, see, sey = acc
            ti = t[:, i][:, None]
            e1 = xp.exp(ti * rate1)[:, :, None, None]
            e2 = xp.exp(ti * rate2)[:, None, :, None]
            field = e2 + fr * (e1 - e2)
            e = field * field
            pw = e * w[:, i][:, None, None, None]
            return se + pw, see + pw * e, sey + pw * yc[:, i][:, None, None, None]

        se, see, sey = backend.fori_loop(0, t.shape[1], body, (zero, zero, zero))
        flat = (n_b, -1)
        return _closed_form(xp, se.reshape(flat), see.reshape(flat), sey.reshape(flat), w, yc,
                            lin)

    return backend.jit(kernel)


@functools.lru_cache(maxsize=16)
def _kernel_cached(backend_name: str, model: G2Model, unit_stretch: bool) -> Any:
    from xpcsviewer.backends import get_backend

    return _make_kernel(get_backend(backend_name), model, unit_stretch)


@functools.lru_cache(maxsize=4)
def _double_kernel_cached(backend_name: str) -> Any:
    from xpcsviewer.backends import get_backend

    return _make_double_kernel(get_backend(backend_name))


def _axes(theta_k: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    # The axis values per curve (B, n) and each grid point's index on it, when every
    # curve's points lie on its own axis of the same length; else None.
    try:
        ax = np.stack([np.unique(r) for r in theta_k])
    except ValueError:
        return None
    if not ax.shape[1]:
        return None
    j = np.searchsorted(ax[0], theta_k[0])
    if j.max() >= ax.shape[1] or not np.array_equal(np.take(ax, j, axis=1), theta_k):
        return None
    return ax, j


def _groups(tau_index: np.ndarray, n_tau: int) -> np.ndarray:
    # (n_tau, G) grid-point indices of each tau (padded with -1): a dense gather
    # replaces a Python loop over the tau grid.
    counts = np.bincount(tau_index, minlength=n_tau)
    order = np.argsort(tau_index, kind="stable")
    out = np.full((n_tau, int(counts.max())), -1, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    for g in range(n_tau):
        out[g, : counts[g]] = order[starts[g] : starts[g] + counts[g]]
    return out


def _profile(chi2: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # (B, n_tau) min of chi2 over each tau's grid points, and the point reaching it.
    vals = np.where(groups[None] >= 0, chi2[:, np.maximum(groups, 0)], np.inf)
    j = np.argmin(vals, axis=2)
    arg = np.take_along_axis(np.broadcast_to(groups, vals.shape), j[:, :, None], 2)[..., 0]
    return np.take_along_axis(vals, j[:, :, None], 2)[..., 0], arg


def _local_minima(profile: np.ndarray) -> np.ndarray:
    # (B, G) bool: no higher than either neighbour (edges compare with one)
    left = np.concatenate([np.full((profile.shape[0], 1), np.inf), profile[:, :-1]], axis=1)
    right = np.concatenate([profile[:, 1:], np.full((profile.shape[0], 1), np.inf)], axis=1)
    return (profile <= left) & (profile <= right)


def grid_scan(
    model: G2Model,
    t: np.ndarray,
    y: np.ndarray,
    sigma: np.ndarray,
    mask: np.ndarray,
    value: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    fixed: np.ndarray,
    aux: tuple | None = None,
    n_starts: int = 2,
    backend: Any = None,
    device: Any = None,
) -> GridProfile:
    """Scan the grid for every curve; see the module docstring.

    Parameters
    ----------
    t, y, sigma : (B, T); mask : (B, T) bool (masked points have no weight)
    value, lower, upper : (B, P) natural units; fixed : (P,) bool
    aux : (m (B, T), dt (B,)) or None
    n_starts : int
        Starts kept per curve (distinct local minima of the tau profile).
    """
    from xpcsviewer.backends import get_backend

    be = backend if backend is not None else get_backend()
    names = model_param_names(model)
    col = {n: k for k, n in enumerate(names)}
    n_b, n_t = y.shape
    theta, tau_index, n_tau = grid_points(model, value, lower, upper, fixed)
    k_pts = theta.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where(mask, 1.0 / sigma**2, 0.0)
    ci, bi = col["contrast"], col["baseline"]
    y0 = np.where(mask, y, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ym = np.where(w.sum(1) > 0, (w * y0).sum(1) / w.sum(1), 0.0)
    yc = np.where(mask, y0 - ym[:, None], 0.0)
    lin = np.stack(
        [
            np.full(n_b, 0.0 if fixed[ci] else 1.0),
            np.full(n_b, 0.0 if fixed[bi] else 1.0),
            value[:, ci], value[:, bi],
            lower[:, ci], upper[:, ci], lower[:, bi], upper[:, bi],
            ym,
        ],
        axis=1,
    )
    if aux is None:
        aux_m, aux_dt = np.ones((n_b, n_t)), np.ones(n_b)
    else:
        aux_m = np.broadcast_to(np.asarray(aux[0], np.float64), (n_b, n_t))
        aux_dt = np.broadcast_to(np.asarray(aux[1], np.float64), (n_b,))
    unit_stretch = bool(
        model is G2Model.SINGLE
        and fixed[col["stretch"]]
        and np.all(value[:, col["stretch"]] == 1.0)
    )
    kernel = _kernel_cached(be.name, model, unit_stretch)
    fast_double = None
    if model is G2Model.DOUBLE and all(
        fixed[col[n]] and np.all(value[:, col[n]] == 1.0) for n in ("stretch1", "stretch2")
    ):
        axes = [_axes(theta[:, :, col[n]]) for n in ("tau1", "tau2", "fraction")]
        if all(a is not None for a in axes):
            (ax1, j1), (ax2, j2), (axf, jf) = axes
            kernel = _double_kernel_cached(be.name)
            # column of each grid point in the kernel's (n1, n2, nf) block
            block = (j1 * ax2.shape[1] + j2) * axf.shape[1] + jf
            fast_double = (-1.0 / ax1, -1.0 / ax2, axf, block)
    # Curves per call: bounded memory (a few chunk x K slabs) and one compiled program
    # whatever the number of curves (the GUI compiles it at start-up).
    chunk = rows_per_call(device, n_t, GRID_ROWS, CPU_GRID_ROWS) if be.name == "jax" else n_b
    chi2 = np.empty((n_b, k_pts))
    cc = np.empty((n_b, k_pts))
    bb = np.empty((n_b, k_pts))
    c_const = np.empty(n_b)
    for s in range(0, n_b, chunk):
        rows = np.arange(s, min(n_b, s + chunk))
        if be.name == "jax":  # one compiled shape for every chunk
            rows = np.concatenate([rows, np.full(chunk - rows.size, rows[0])])
        if fast_double is not None:
            r1, r2, fr, block = fast_double
            args = [t[rows], yc[rows], w[rows], lin[rows], r1[rows], r2[rows], fr[rows]]
        else:
            args = [t[rows], yc[rows], w[rows], theta[rows], lin[rows], aux_m[rows], aux_dt[rows]]
        out = kernel(*(be.asarray(a, device=device) for a in args))
        out = [be.to_numpy(o) for o in be.block_until_ready(out)]
        if fast_double is not None:
            out[:3] = [o[:, block] for o in out[:3]]
        k = min(chunk, n_b - s)
        chi2[s : s + k], cc[s : s + k], bb[s : s + k], c_const[s : s + k] = (o[:k] for o in out)
    chi2 = np.where(np.isfinite(chi2), chi2, np.inf)
    groups = _groups(tau_index, n_tau)
    # Profile over the tau grid: min over every other grid dimension.
    prof, _arg = _profile(chi2, groups)
    # Starts: the best decaying grid points (contrast > 0) at distinct profile minima.
    masked = np.where(cc > 0, chi2, np.inf)
    prof_dec, arg_dec = _profile(masked, groups)
    n_p = value.shape[1]
    rows = np.arange(n_b)
    start = np.full((n_b, n_starts, n_p), np.nan)

    def put(m: int, kk: np.ndarray, have: np.ndarray) -> None:
        st = theta[rows, kk].copy()
        st[:, ci] = cc[rows, kk]
        st[:, bi] = bb[rows, kk]
        start[have, m] = st[have]

    # First start: the global optimum among decaying points (any point if none decays).
    k0 = np.where(np.isfinite(masked.min(axis=1)), np.argmin(masked, axis=1),
                  np.argmin(chi2, axis=1))
    put(0, k0, np.ones(n_b, bool))
    # Further starts: the next-best local minima of the decaying profile.
    minima = _local_minima(prof_dec) & np.isfinite(prof_dec)
    minima[rows, tau_index[k0]] = False
    order = np.argsort(np.where(minima, prof_dec, np.inf), axis=1, kind="stable")
    # A rival minimum far above the best cannot win after refinement (the profile is
    # smooth on the grid's scale): refine only those within START_DCHI2 (scaled).
    n_pts = mask.sum(axis=1)
    scale = np.maximum(1.0, chi2[rows, k0] / np.maximum(1, n_pts - 3))
    for m in range(1, min(n_starts, n_tau)):
        g = order[:, m - 1]
        close = prof_dec[rows, g] - chi2[rows, k0] < START_DCHI2 * scale
        put(m, arg_dec[rows, g], minima[rows, g] & close)
    # log-parameters must stay positive; amplitudes inside their bounds
    for n in names:
        k = col[n]
        if n in LOG_PARAMS:
            start[:, :, k] = np.where(start[:, :, k] > 0, start[:, :, k], np.nan)
    tau_col = col["tau"] if "tau" in col else col["tau1"]
    tau_grid = theta[:, groups[:, 0], tau_col]
    return GridProfile(
        start=start,
        tau_grid=tau_grid,
        profile=prof,
        chi2_const=c_const,
        chi2_grid=np.min(chi2, axis=1),
    )
