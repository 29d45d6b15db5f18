"""Batched, bounded Levenberg-Marquardt fits of g2 curves (all q-bins of all files at once).

One jitted, vmapped solve for B curves on the active backend (JAX by default; the NumPy
backend runs the same kernel curve by curve as the reference). Box constraints by
projection in internal coordinates (log for relaxation times), weights 1/g2_err,
covariance errors scaled by the reduced chi^2 (as ``scipy.optimize.curve_fit`` with
``absolute_sigma=False``, the existing viewers' choice), and a status per curve instead
of exceptions.
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xpcsviewer.fitting.models import (
    LOG_PARAMS,
    G2Model,
    ParamSpec,
    default_params,
    evaluate_model,
    evaluate_with_jacobian,
    model_param_names,
)
from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = ["FitStatus", "G2FitResult", "fit_g2", "lm_solve_batch", "prepare_weights"]


class FitStatus(str, enum.Enum):
    """Outcome of one curve's fit."""

    CONVERGED = "converged"
    MAX_ITER = "max_iter"
    NONFINITE = "nonfinite"
    AT_BOUND = "at_bound"
    FLAT = "flat"
    TOO_FEW_POINTS = "too_few_points"
    NO_DATA = "no_data"


# Kernel codes (inside jit) -> FitStatus
_CODE_RUNNING, _CODE_CONVERGED, _CODE_MAX_ITER = 0, 1, 2


@dataclass
class G2FitResult:
    """Least-squares fit of B curves; NumPy arrays throughout.

    Attributes
    ----------
    model : G2Model
    params : dict name -> (B,) float64
        Best-fit values in natural units (tau in s). NaN where the curve has no fit.
    errors : dict name -> (B,) float64
        1-sigma errors from the covariance scaled by ``chi2_red``; 0 for fixed
        parameters, NaN where undetermined.
    chi2_red : (B,) float64
    status : (B,) object array of FitStatus
    n_iter : (B,) int
    n_points : (B,) int
        Points used (valid, finite, inside ``t_range``).
    fixed : dict name -> bool
    lower, upper : dict name -> (B,) float64
        Bounds used.
    aux : tuple or None
        (m (T,), dt) for ``single_avgcorr``.
    """

    model: G2Model
    params: dict[str, np.ndarray]
    errors: dict[str, np.ndarray]
    chi2_red: np.ndarray
    status: np.ndarray
    n_iter: np.ndarray
    n_points: np.ndarray
    fixed: dict[str, bool] = field(default_factory=dict)
    lower: dict[str, np.ndarray] = field(default_factory=dict)
    upper: dict[str, np.ndarray] = field(default_factory=dict)
    aux: tuple | None = None
    t_range: tuple[float, float] | None = None

    @property
    def n_curves(self) -> int:
        """B."""
        return int(self.chi2_red.shape[0])

    @property
    def param_names(self) -> tuple[str, ...]:
        """Parameter names in model order."""
        return model_param_names(self.model)

    @property
    def ok(self) -> np.ndarray:
        """(B,) bool: status converged."""
        return np.array([s == FitStatus.CONVERGED for s in self.status], dtype=bool)

    def curve(self, tau_grid: Any, aux: tuple | None = None) -> np.ndarray:
        """Fitted g2 on ``tau_grid`` (G,) s for plotting -> (B, G); NaN rows for no fit."""
        t = np.asarray(tau_grid, dtype=np.float64).reshape(1, -1)
        p = tuple(self.params[n][:, None] for n in self.param_names)
        use_aux = aux if aux is not None else self.aux
        if self.model is G2Model.SINGLE_AVGCORR and use_aux is not None:
            m, dt = use_aux
            m = np.asarray(m, dtype=np.float64)
            if m.shape[-1] != t.shape[-1]:
                # A smooth grid has no multi-tau level: draw the uncorrected model.
                use_aux = (np.ones_like(t), dt)
        with np.errstate(all="ignore"):
            return evaluate_model(self.model, t, p, use_aux, np)

    def select(self, rows: Any) -> G2FitResult:
        """The fits of some curves (a slice, index array or bool mask) as a new result."""
        aux = self.aux
        if aux is not None and np.ndim(aux[0]) == 2:
            dt = aux[1] if np.ndim(aux[1]) == 0 else np.asarray(aux[1])[rows]
            aux = (np.asarray(aux[0])[rows], dt)
        return G2FitResult(
            model=self.model,
            params={n: v[rows].copy() for n, v in self.params.items()},
            errors={n: v[rows].copy() for n, v in self.errors.items()},
            chi2_red=self.chi2_red[rows].copy(),
            status=self.status[rows].copy(),
            n_iter=self.n_iter[rows].copy(),
            n_points=self.n_points[rows].copy(),
            fixed=dict(self.fixed),
            lower={n: v[rows].copy() for n, v in self.lower.items()},
            upper={n: v[rows].copy() for n, v in self.upper.items()},
            aux=aux,
            t_range=self.t_range,
        )

    def row(self, b: int) -> dict[str, Any]:
        """Plain-Python summary of curve ``b`` (for tables and pop-ups)."""
        return {
            "params": {n: float(self.params[n][b]) for n in self.param_names},
            "errors": {n: float(self.errors[n][b]) for n in self.param_names},
            "chi2_red": float(self.chi2_red[b]),
            "status": self.status[b].value,
        }


def prepare_weights(g2_err: Any, valid: Any) -> np.ndarray:
    """Standard deviations for weighting, (B, T).

    Errors that are non-finite or <= 1e-6 (too small to be real, typically 0 written
    for "unknown") are replaced by the median of the curve's good errors on valid
    points; a curve without any good error is weighted uniformly (sigma = 1).
    """
    err = np.atleast_2d(np.asarray(g2_err, dtype=np.float64))
    ok = np.atleast_2d(np.asarray(valid, dtype=bool))
    with np.errstate(invalid="ignore"):
        good = ok & np.isfinite(err) & (err > 1e-6)
    any_good = good.any(axis=1)
    med = np.ones(err.shape[0])
    if any_good.any():
        med[any_good] = np.nanmedian(np.where(good[any_good], err[any_good], np.nan), axis=1)
    return np.where(good, err, med[:, None])


# ----------------------------------------------------------------------------------
# The kernel: one curve, written for one and vmapped for many.
# ----------------------------------------------------------------------------------


def _spd_solve(xp: Any, a: Any, b: Any, n: int) -> Any:
    """Solve a small SPD system by an unrolled Cholesky factorisation.

    ``n`` is static (the parameter count, at most 7), so this traces to a few dozen
    element-wise operations that vectorise under vmap; a batched LAPACK call on
    thousands of 4x4 matrices is much slower on the CPU. A non-positive pivot gives
    NaN, which the caller treats as a rejected step.
    """
    low = [[None] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1):
            acc = a[i, j]
            for k in range(j):
                acc = acc - low[i][k] * low[j][k]
            if i == j:
                low[i][i] = xp.sqrt(xp.where(acc > 0, acc, xp.nan))
            else:
                low[i][j] = acc / low[j][j]
    z = [None] * n
    for i in range(n):
        acc = b[i]
        for k in range(i):
            acc = acc - low[i][k] * z[k]
        z[i] = acc / low[i][i]
    x = [None] * n
    for i in reversed(range(n)):
        acc = z[i]
        for k in range(i + 1, n):
            acc = acc - low[k][i] * x[k]
        x[i] = acc / low[i][i]
    return xp.stack(x)


def _make_solver(
    backend: Any, model: G2Model, n_par: int, max_iter: int, unit_stretch: bool = False
) -> Any:
    """Jitted batched solver ``solve(t, y, w, mask, x0, lo, hi, free, aux_m, aux_dt)``."""
    xp = backend.xp
    names = model_param_names(model)
    is_log = np.array([n in LOG_PARAMS for n in names])
    ftol, xtol, gtol = 1e-10, 1e-9, 1e-14

    def to_nat(x: Any) -> tuple:
        return tuple(xp.exp(x[k]) if is_log[k] else x[k] for k in range(n_par))

    def residuals(x: Any, t: Any, y: Any, w: Any, mask: Any, aux: tuple) -> Any:
        # x (..., P) -> r (..., T); masked points contribute exactly zero.
        p = tuple(xk[..., None] for xk in to_nat(xp.moveaxis(x, -1, 0)))
        g = evaluate_model(model, t, p, aux[:2], xp)
        return xp.where(mask, (g - y) * w, 0.0)

    analytic = model is not G2Model.SINGLE_AVGCORR
    simple = model in (G2Model.SINGLE, G2Model.STRETCHED)

    def single_fast(x: Any, t: Any, log_t: Any) -> tuple[Any, tuple]:
        # The (stretched) exponential in fitting coordinates (x[1] = log tau) with
        # log t precomputed: two transcendentals per point instead of five. With the
        # stretch fixed at exactly 1 (the default) a single exp per point.
        c, lt, st, b = x[0], x[1], x[2], x[3]
        if unit_stretch:
            us = t * xp.exp(-lt)
            e = xp.exp(-2.0 * us)
            ce = c * e
            # the stretch column is masked (fixed parameter): skip its arithmetic
            return b + ce, (e, 2.0 * us * ce, xp.zeros_like(ce), xp.ones_like(ce))
        lu = log_t - lt
        us = xp.exp(st * lu)
        e = xp.exp(-2.0 * us)
        ce = c * e
        g = b + ce
        return g, (e, 2.0 * st * us * ce, -2.0 * us * lu * ce, xp.ones_like(g))

    def jacobian(x: Any, free: Any, t: Any, y: Any, w: Any, mask: Any, aux: tuple):
        if simple:
            g, d = single_fast(x, t, aux[2])
            r0 = xp.where(mask, (g - y) * w, 0.0)
            jac = xp.stack([xp.where(mask, dk * w, 0.0) for dk in d], axis=-1)
            return r0, xp.where(free[None, :], jac, 0.0)
        if analytic:
            # Closed-form derivatives (in log tau): one model evaluation per step.
            g, d = evaluate_with_jacobian(model, t, to_nat(x), xp)
            r0 = xp.where(mask, (g - y) * w, 0.0)
            jac = xp.stack([xp.where(mask, dk * w, 0.0) for dk in d], axis=-1)
            return r0, xp.where(free[None, :], jac, 0.0)
        # Central differences in internal coordinates; both backends, no autodiff.
        h = 1e-6 * xp.maximum(1.0, xp.abs(x))
        eye = xp.eye(n_par)
        xs = xp.concatenate(
            [x[None, :], x[None, :] + eye * h[None, :], x[None, :] - eye * h[None, :]], axis=0
        )
        r_all = residuals(xs, t, y, w, mask, aux)
        r0 = r_all[0]
        jac = (r_all[1 : n_par + 1] - r_all[n_par + 1 :]) / (2.0 * h[:, None])
        jac = xp.where(free[:, None], jac, 0.0).T  # (T, P)
        return r0, jac

    def step_direction(jac: Any, r: Any, lam: Any, free: Any, x: Any, lo: Any, hi: Any) -> Any:
        a = jac.T @ jac
        g = jac.T @ r
        # Active set: a parameter on a bound that descent would push outward is held
        # for this step, so the others still move freely (projected LM).
        blocked = ((x <= lo) & (g > 0)) | ((x >= hi) & (g < 0))
        free = free & ~blocked
        d = xp.diagonal(a)
        d = xp.maximum(d, 1e-12 * xp.max(d) + 1e-300)
        a = a + xp.diag(lam * d)
        # Fixed parameters: identity rows so the system stays regular.
        a = xp.where(free[:, None] & free[None, :], a, xp.eye(n_par))
        g = xp.where(free, g, 0.0)
        return -_spd_solve(xp, a, g, n_par), g

    def solve_one(t, y, w, mask, x0, lo, hi, free, aux_m, aux_dt, lam0, it0, it_stop):
        # Runs until converged, max_iter, or ``it_stop`` iterations in total (then the
        # code stays "running" and the caller resumes from x, lam, it).
        aux = (aux_m, aux_dt, xp.log(t))
        x0 = xp.clip(x0, lo, hi)
        r0, j0 = jacobian(x0, free, t, y, w, mask, aux)
        cost0 = 0.5 * xp.sum(r0 * r0)
        init = (x0, cost0, j0, r0, lam0, it0, xp.where(it0 >= max_iter, _CODE_MAX_ITER, _CODE_RUNNING))

        def cond(s):
            return (s[6] == _CODE_RUNNING) & (s[5] < it_stop)

        def body(s):
            x, cost, jac, r, lam, it, code = s
            dx, g = step_direction(jac, r, lam, free, x, lo, hi)
            x_new = xp.clip(x + dx, lo, hi)
            x_new = xp.where(free, x_new, x)
            r_new, j_new = jacobian(x_new, free, t, y, w, mask, aux)
            cost_new = 0.5 * xp.sum(r_new * r_new)
            accept = xp.isfinite(cost_new) & (cost_new <= cost)
            step = xp.sqrt(xp.sum((x_new - x) ** 2))
            xnorm = xp.sqrt(xp.sum(x * x))
            small_f = (cost - cost_new) <= ftol * cost
            small_x = step <= xtol * (xnorm + xtol)
            # projected gradient: zero components pushing against an active bound
            pg = xp.where(((x <= lo) & (g > 0)) | ((x >= hi) & (g < 0)), 0.0, g)
            small_g = xp.max(xp.abs(pg)) <= gtol * xp.maximum(1.0, cost)
            done = (accept & small_f & small_x) | small_g | (lam > 1e16)
            x = xp.where(accept, x_new, x)
            cost = xp.where(accept, cost_new, cost)
            jac = xp.where(accept, j_new, jac)
            r = xp.where(accept, r_new, r)
            lam = xp.where(accept, xp.maximum(lam / 3.0, 1e-12), lam * 4.0)
            it = it + 1
            code = xp.where(
                done, _CODE_CONVERGED, xp.where(it >= max_iter, _CODE_MAX_ITER, _CODE_RUNNING)
            )
            return (x, cost, jac, r, lam, it, code)

        x, cost, jac, r, lam, it, code = backend.while_loop(cond, body, init)
        return x, cost, jac, lam, it, code

    batched = backend.vmap(solve_one, in_axes=(0, 0, 0, 0, 0, 0, 0, None, 0, 0, 0, 0, None))

    def chunk(t, y, w, mask, lo, hi, aux_m, aux_dt, free, idx, x, lam, it, it_stop):
        # Gather the rows of this chunk inside the compiled program (no eager gathers).
        g = [a[idx] for a in (t, y, w, mask)]
        return batched(*g, x, lo[idx], hi[idx], free, aux_m[idx], aux_dt[idx], lam, it, it_stop)

    return backend.jit(chunk)


@functools.lru_cache(maxsize=32)
def _solver_cached(
    backend_name: str, model: G2Model, n_par: int, max_iter: int, unit_stretch: bool
) -> Any:
    from xpcsviewer.backends import get_backend

    return _make_solver(get_backend(backend_name), model, n_par, max_iter, unit_stretch)


def _bucket(n: int) -> int:
    # Pad batch sizes to powers of two (at least 8) so the jit cache is reused across
    # files and chunks.
    b = 8
    while b < n:
        b *= 2
    return b


def lm_solve_batch(
    model: G2Model,
    t: np.ndarray,
    y: np.ndarray,
    sigma: np.ndarray,
    mask: np.ndarray,
    x0: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    free: np.ndarray,
    aux: tuple | None = None,
    max_iter: int = 200,
    backend: Any = None,
    device: Any = "auto",
    cancel: CancelToken | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Run the LM kernel on B curves in internal coordinates.

    Parameters
    ----------
    t : (T,) or (B, T) s; y, sigma : (B, T); mask : (B, T) bool
    x0, lo, hi : (B, P) internal coordinates (log for tau-like parameters)
    free : (P,) bool
    aux : (m (T,) or (B, T), dt scalar or (B,)) or None

    Returns
    -------
    x (B, P), cost (B,), jac (B, T, P) in internal coordinates, n_iter (B,), code (B,)
    """
    from xpcsviewer.backends import get_backend, resolve_device

    be = backend if backend is not None else get_backend()
    n_b, n_t = y.shape
    n_par = x0.shape[1]
    if aux is None:
        aux_m, aux_dt = np.ones((n_b, n_t)), np.ones(n_b)
    else:
        aux_m = np.broadcast_to(np.asarray(aux[0], dtype=np.float64), (n_b, n_t)).copy()
        aux_dt = np.broadcast_to(np.asarray(aux[1], dtype=np.float64), (n_b,)).copy()
    dev = resolve_device(device, work=float(n_b * n_t)) if be.name == "jax" else None
    # The plain exponential (stretch fixed at exactly 1) gets its own, cheaper kernel.
    unit_stretch = bool(
        model in (G2Model.SINGLE, G2Model.STRETCHED) and not free[2] and np.all(x0[:, 2] == 1.0)
    )
    solver = _solver_cached(be.name, model, n_par, int(max_iter), unit_stretch)
    # Inputs cross to the device once; chunks gather their rows there.
    data = [
        be.asarray(np.broadcast_to(np.asarray(t, np.float64), (n_b, n_t)), device=dev),
        be.asarray(np.asarray(y, np.float64), device=dev),
        be.asarray(1.0 / np.asarray(sigma, np.float64), device=dev),
        be.asarray(np.asarray(mask, bool), device=dev),
        be.asarray(np.asarray(lo, np.float64), device=dev),
        be.asarray(np.asarray(hi, np.float64), device=dev),
        be.asarray(aux_m, device=dev),
        be.asarray(aux_dt, device=dev),
        be.asarray(np.asarray(free, bool), device=dev),
    ]
    # A vmapped while-loop runs until its slowest lane stops, and a few curves need
    # several times the median iteration count: iterate in chunks and carry on with
    # the unfinished curves only (re-bucketed), so most of the batch stops early.
    # Two calls at most (each new batch shape compiles once): 10 iterations for all,
    # then the rest for the unfinished curves only.
    chunk = 10 if be.name == "jax" else int(max_iter)
    x_cur = np.asarray(x0, np.float64).copy()
    lam = np.full(n_b, 1e-3)
    it = np.zeros(n_b, np.int64)
    code = np.full(n_b, _CODE_RUNNING, np.int64)
    cost = np.full(n_b, np.nan)
    jac = np.full((n_b, n_t, n_par), np.nan)
    active = np.arange(n_b)
    it_stop = 0
    while active.size:
        if cancel is not None:
            cancel.raise_if_cancelled()
        it_stop = chunk if it_stop == 0 else int(max_iter)
        nb_pad = _bucket(active.size) if be.name == "jax" else active.size
        idx = np.concatenate([active, np.full(nb_pad - active.size, active[0])])
        out = solver(
            *data, be.asarray(idx, device=dev), be.asarray(x_cur[idx], device=dev),
            be.asarray(lam[idx], device=dev), be.asarray(it[idx], device=dev),
            np.int64(it_stop),
        )
        out = be.block_until_ready(out)
        xs, cs, js, ls, its, codes = (be.to_numpy(o)[: active.size] for o in out)
        x_cur[active], cost[active], jac[active] = xs, cs, js
        lam[active], it[active], code[active] = ls, its, codes
        active = active[codes == _CODE_RUNNING]
    return x_cur, cost, jac, it, code


# ----------------------------------------------------------------------------------
# Public entry point
# ----------------------------------------------------------------------------------


def _broadcast_spec(specs: dict[str, ParamSpec], names, n_b: int):
    value = np.empty((n_b, len(names)))
    lower = np.empty((n_b, len(names)))
    upper = np.empty((n_b, len(names)))
    fixed = np.zeros(len(names), dtype=bool)
    for k, n in enumerate(names):
        s = specs[n]
        value[:, k] = np.broadcast_to(np.asarray(s.value, np.float64), (n_b,))
        lower[:, k] = np.broadcast_to(np.asarray(s.lower, np.float64), (n_b,))
        upper[:, k] = np.broadcast_to(np.asarray(s.upper, np.float64), (n_b,))
        fixed[k] = bool(s.fixed)
    return value, lower, upper, fixed


def _flat_curves(g2: np.ndarray, sigma: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(B,) bool: no significant decay inside the window (non-ergodic or static).

    Compares the error-weighted means of the first and last quarter of the valid
    points (at most 8 each); flat when the drop is below 3 standard errors or below
    1e-3 (all-equal curves).
    """
    n_valid = mask.sum(axis=1)
    k = np.clip(n_valid // 4, 2, 8)[:, None]
    first = mask & (np.cumsum(mask, axis=1) <= k)
    last = mask & (np.cumsum(mask[:, ::-1], axis=1)[:, ::-1] <= k)
    w = np.where(mask, 1.0 / sigma**2, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        wh, wt = (w * first).sum(1), (w * last).sum(1)
        mh = (w * first * g2).sum(1) / wh
        mt = (w * last * g2).sum(1) / wt
        se = np.sqrt(1.0 / wh + 1.0 / wt)
        drop = mh - mt
        flat = (drop < 3.0 * se) | (drop < 1e-3)
    return flat & (n_valid >= 4)


def fit_g2(
    tau: Any,
    g2: Any,
    g2_err: Any,
    valid: Any | None = None,
    model: G2Model | str = "single",
    params: dict[str, ParamSpec] | None = None,
    t_range: tuple[float, float] | None = None,
    device: Any = "auto",
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    *,
    aux: tuple | None = None,
    max_iter: int = 200,
    backend: Any = None,
) -> G2FitResult:
    """Fit B g2 curves in one batched, bounded Levenberg-Marquardt solve.

    May run off the main thread. Bad curves never raise: they get a status.

    Parameters
    ----------
    tau : (T,) or (B, T) float64
        Delays in s; (B, T) when curves of different files have different delays
        (pad to a common T with valid=False).
    g2, g2_err : (B, T) or (T,) float64
    valid : (B, T) bool, optional
        Usable points (default: finite g2 and g2_err).
    model : {"single", "stretched", "double", "single_avgcorr"}
    params : dict name -> ParamSpec, optional
        Starts, bounds and fixed flags (scalars or (B,) arrays); default
        :func:`~xpcsviewer.fitting.models.default_params` of the data.
    t_range : (t_lo, t_hi) s, optional
        Only delays inside are fitted.
    device : "auto", "cpu", "gpu" or a jax.Device
    aux : (m (T,) or (B, T), dt float or (B,)), optional
        Frames averaged per delay and frame time (s); required for ``single_avgcorr``
        (see :func:`~xpcsviewer.fitting.models.averaging_factors`).
    max_iter : int
    backend : BackendProtocol, optional
        Default :func:`xpcsviewer.backends.get_backend`.

    Returns
    -------
    G2FitResult
    """
    model = G2Model.parse(model)
    names = model_param_names(model)
    if model is G2Model.SINGLE_AVGCORR and aux is None:
        raise ValueError("model 'single_avgcorr' needs aux=(m per delay, frame time)")
    tau_in = np.asarray(tau, dtype=np.float64)
    g2 = np.atleast_2d(np.asarray(g2, dtype=np.float64))
    err = np.atleast_2d(np.asarray(g2_err, dtype=np.float64))
    if tau_in.shape not in ((g2.shape[-1],), g2.shape) or err.shape != g2.shape:
        raise ValueError(
            f"shapes: tau {tau_in.shape}, g2 {g2.shape}, g2_err {err.shape}; "
            "expected (T,) or (B, T), (B, T), (B, T)"
        )
    tau = np.broadcast_to(tau_in, g2.shape)
    if valid is None:
        valid = np.ones(g2.shape, dtype=bool)
    valid = np.atleast_2d(np.asarray(valid, dtype=bool))
    if valid.shape != g2.shape:
        raise ValueError(f"valid has shape {valid.shape}, expected {g2.shape}")
    with np.errstate(invalid="ignore"):
        mask = valid & np.isfinite(g2) & np.isfinite(tau) & (tau > 0)
        if t_range is not None:
            lo_t, hi_t = sorted(float(v) for v in t_range)
            mask &= (tau >= lo_t) & (tau <= hi_t)
    n_b, n_t = g2.shape
    report(progress, cancel, 0, 2, f"fitting {n_b} curves ({model.value})")

    specs = default_params(model, tau, g2, mask)
    if params is not None:
        for n, s in params.items():
            if n not in specs:
                raise ValueError(f"model {model.value!r} has no parameter {n!r}; it has {names}")
            specs[n] = s
    value, lower, upper, fixed = _broadcast_spec(specs, names, n_b)
    if np.any(lower > upper):
        bad = [names[k] for k in np.nonzero((lower > upper).any(0))[0]]
        raise ValueError(f"lower bound above upper bound for {bad}")
    free = ~fixed
    is_log = np.array([n in LOG_PARAMS for n in names])
    for k in np.nonzero(is_log)[0]:
        if np.any(lower[:, k] <= 0) or (fixed[k] and np.any(value[:, k] <= 0)):
            raise ValueError(f"{names[k]} must be bounded away from 0 (got lower {lower[:, k].min()})")

    sigma = prepare_weights(err, mask)
    y = np.where(mask, g2, 0.0)
    n_points = mask.sum(axis=1)
    n_free = int(free.sum())

    # Free parameters start inside their bounds; fixed ones sit at their value.
    start = np.where(free, np.clip(value, lower, upper), value)
    x0 = np.where(is_log, np.log(np.where(is_log, start, 1.0)), start)
    lo_i = np.where(free, np.where(is_log, np.log(np.where(is_log, lower, 1.0)), lower), x0)
    hi_i = np.where(free, np.where(is_log, np.log(np.where(is_log, upper, 1.0)), upper), x0)
    x0 = np.where(np.isfinite(x0), x0, 0.5 * (lo_i + hi_i))

    t_safe = np.where(mask, tau, 1.0)  # padded / invalid delays may be NaN
    x, cost, jac, n_iter, code = lm_solve_batch(
        model, t_safe, y, sigma, mask, x0, lo_i, hi_i, free, aux, max_iter, backend, device,
        cancel,
    )
    report(progress, cancel, 1, 2, "covariance")

    p_nat = np.where(is_log, np.exp(x), x)
    dof = n_points - n_free
    with np.errstate(invalid="ignore", divide="ignore"):
        chi2_red = np.where(dof > 0, 2.0 * cost / np.maximum(dof, 1), np.nan)
    # Covariance in natural coordinates: d p / d x = p for log parameters.
    scale = np.where(is_log, p_nat, 1.0)
    jn = jac / np.where(scale == 0, 1.0, scale)[:, None, :]
    fi = np.nonzero(free)[0]
    errors_nat = np.zeros_like(p_nat)
    if fi.size:
        jf = jn[:, :, fi]
        a = np.einsum("btp,btq->bpq", jf, jf)
        cov = np.full_like(a, np.nan)
        fin = np.isfinite(a).all(axis=(1, 2))
        try:
            cov[fin] = np.linalg.inv(a[fin])
        except np.linalg.LinAlgError:
            # some matrix is singular: invert one by one, leaving NaN for those
            for b in np.nonzero(fin)[0]:
                try:
                    cov[b] = np.linalg.inv(a[b])
                except np.linalg.LinAlgError:
                    pass
        var = np.diagonal(cov, axis1=1, axis2=2) * chi2_red[:, None]
        with np.errstate(invalid="ignore"):
            errors_nat[:, fi] = np.where(var >= 0, np.sqrt(var), np.nan)

    # Status per curve, most fundamental first.
    flat = _flat_curves(y, sigma, mask)
    eps = 1e-9 * np.maximum(1.0, np.abs(hi_i - lo_i))
    at_bound = (free[None, :] & ((x <= lo_i + eps) | (x >= hi_i - eps))).any(axis=1)
    tau_cols = [k for k, n in enumerate(names) if n in LOG_PARAMS]
    tau_at_top = (
        np.zeros(n_b, bool) if not tau_cols
        else (free[tau_cols][None, :] & (x[:, tau_cols] >= hi_i[:, tau_cols] - eps[:, tau_cols])).any(1)
    )
    finite = np.isfinite(p_nat).all(axis=1) & np.isfinite(cost)
    order = [
        (n_points == 0, FitStatus.NO_DATA),
        (n_points <= n_free, FitStatus.TOO_FEW_POINTS),
        (~finite, FitStatus.NONFINITE),
        (flat | tau_at_top, FitStatus.FLAT),
        (code == _CODE_MAX_ITER, FitStatus.MAX_ITER),
        (at_bound, FitStatus.AT_BOUND),
    ]
    choices = [FitStatus.CONVERGED] + [st for _, st in order]
    which = np.zeros(n_b, dtype=np.int64)
    for k, (cond, _) in reversed(list(enumerate(order, start=1))):  # first match wins
        which[cond] = k
    # element by element: NumPy would turn str-enum members into plain strings
    status = np.empty(n_b, dtype=object)
    for b, k in enumerate(which):
        status[b] = choices[k]

    no_fit = (n_points <= n_free) | ~finite
    p_nat[no_fit] = np.nan
    errors_nat[no_fit] = np.nan
    chi2_red = np.where(no_fit, np.nan, chi2_red)
    # A flat curve has no measurable relaxation time: report none rather than a bound.
    is_flat = which == 4
    for k in tau_cols:
        p_nat[is_flat, k] = np.nan
        errors_nat[is_flat, k] = np.nan
    errors_nat[:, fixed] = np.where(no_fit[:, None], np.nan, 0.0)

    report(progress, cancel, 2, 2, "done")
    return G2FitResult(
        model=model,
        params={n: p_nat[:, k].copy() for k, n in enumerate(names)},
        errors={n: errors_nat[:, k].copy() for k, n in enumerate(names)},
        chi2_red=chi2_red,
        status=status,
        n_iter=n_iter,
        n_points=n_points.astype(np.int64),
        fixed={n: bool(fixed[k]) for k, n in enumerate(names)},
        lower={n: lower[:, k].copy() for k, n in enumerate(names)},
        upper={n: upper[:, k].copy() for k, n in enumerate(names)},
        aux=aux,
        t_range=None if t_range is None else (float(min(t_range)), float(max(t_range))),
    )
