"""Least-squares fits of g2 curves: global grid start, batched LM refinement, honest statuses.

All q-bins of all files go through one pass: a grid scan over the nonlinear parameters
with the linear amplitudes solved exactly (:mod:`xpcsviewer.fitting.grid`), then the
batched, bounded Levenberg-Marquardt solve (:mod:`xpcsviewer.fitting.lm`) from the best
grid points (and the next-best local minimum), keeping the lowest chi^2. Weights are
1/g2_err; errors come from the covariance, scaled by sqrt(chi2_red) when chi2_red > 1.
Each curve gets a status from :mod:`xpcsviewer.fitting.status` instead of an exception.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xpcsviewer.fitting.grid import grid_scan
from xpcsviewer.fitting.lm import CODE_MAX_ITER, lm_solve_batch
from xpcsviewer.fitting.models import (
    LOG_PARAMS,
    G2Model,
    ParamSpec,
    default_params,
    evaluate_model,
    model_param_names,
)
from xpcsviewer.fitting.status import (
    CHI2_RED_MAX,
    CONTRAST_MAX,
    CONTRAST_SIGMAS,
    NO_DECAY_DCHI2,
    TAU_REL_ERR_MAX,
    FitStatus,
    profile_limits,
)
from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = [
    "ERROR_SCALING",
    "FitStatus",
    "G2FitResult",
    "fit_g2",
    "lm_solve_batch",
    "usable_errors",
]

#: How the reported errors are scaled (said in every output).
ERROR_SCALING = "covariance errors x sqrt(chi2_red) where chi2_red > 1"


@dataclass
class G2FitResult:
    """Least-squares fit of B curves; NumPy arrays throughout.

    Attributes
    ----------
    model : G2Model
    params : dict name -> (B,) float64
        Best-fit values in natural units (tau in s); NaN only for ``failed`` curves.
        Use :meth:`reported` for what may be quoted (no tau without a decay).
    errors : dict name -> (B,) float64
        1-sigma errors: covariance errors scaled by sqrt(chi2_red) where chi2_red > 1
        (``errors_scaled``); 0 for fixed parameters, NaN where undetermined.
    chi2_red : (B,) float64
    status : (B,) object array of FitStatus
    detail : (B,) object array of str
        Why a curve has its status ("" for converged).
    tau_lower_limit, tau_upper_limit : (B,) s
        One-sided 95 % limits for ``unresolved`` curves whose tau profile runs to the
        top ("tau > lower") or bottom ("tau < upper") of the grid; NaN otherwise.
    delta_chi2 : (B,)
        (chi2 of a constant - chi2 of the fit) / max(1, chi2_red): the decay's evidence.
    errors_scaled : (B,) bool
    weighted : (B,) bool
        False when the curve had no usable errors (fitted unweighted).
    n_iter : (B,) int
    n_points : (B,) int
        Points used (valid, with a usable error, inside ``t_range``).
    fixed : dict name -> bool
    lower, upper : dict name -> (B,) float64
        Bounds used.
    aux : tuple or None
        (m (T,), dt) for ``single_avgcorr``.
    tau_grid, profile : (B, G)
        The chi^2 profile over the grid of tau (tau1 for ``double``).
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
    detail: np.ndarray | None = None
    tau_lower_limit: np.ndarray | None = None
    tau_upper_limit: np.ndarray | None = None
    delta_chi2: np.ndarray | None = None
    errors_scaled: np.ndarray | None = None
    weighted: np.ndarray | None = None
    tau_grid: np.ndarray | None = None
    profile: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = self.chi2_red.shape[0]
        if self.detail is None:
            self.detail = np.array([""] * n, dtype=object)
        for name in ("tau_lower_limit", "tau_upper_limit", "delta_chi2"):
            if getattr(self, name) is None:
                setattr(self, name, np.full(n, np.nan))
        if self.errors_scaled is None:
            self.errors_scaled = np.zeros(n, bool)
        if self.weighted is None:
            self.weighted = np.ones(n, bool)

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

    def reported(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(values, errors) of ``name`` as they may be quoted.

        Relaxation times are NaN where there is no decay (``no_decay``) or only a limit
        (``unresolved`` with ``tau_lower_limit``/``tau_upper_limit``); everything else
        is the fit's value (``poor_fit`` numbers are kept, and marked by the status).
        """
        v = self.params[name].copy()
        e = self.errors[name].copy()
        if name in LOG_PARAMS:
            st = np.array([getattr(s, "value", str(s)) for s in self.status])
            limit = np.isfinite(self.tau_lower_limit) | np.isfinite(self.tau_upper_limit)
            drop = (st == FitStatus.NO_DECAY.value) | ((st == FitStatus.UNRESOLVED.value) & limit)
            v[drop] = np.nan
            e[drop] = np.nan
        return v, e

    def limit_text(self, b: int) -> str:
        """"tau > 2.1 s" / "tau < 3e-05 s" for curve ``b``, or ""."""
        lo, hi = self.tau_lower_limit[b], self.tau_upper_limit[b]
        name = "tau" if "tau" in self.params else "tau1"
        if np.isfinite(lo):
            return f"{name} > {lo:.3g} s"
        if np.isfinite(hi):
            return f"{name} < {hi:.3g} s"
        return ""

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

        def sub(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[rows].copy()

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
            detail=sub(self.detail),
            tau_lower_limit=sub(self.tau_lower_limit),
            tau_upper_limit=sub(self.tau_upper_limit),
            delta_chi2=sub(self.delta_chi2),
            errors_scaled=sub(self.errors_scaled),
            weighted=sub(self.weighted),
            tau_grid=sub(self.tau_grid),
            profile=sub(self.profile),
        )

    def row(self, b: int) -> dict[str, Any]:
        """Plain-Python summary of curve ``b`` (for tables and pop-ups)."""
        return {
            "params": {n: float(self.params[n][b]) for n in self.param_names},
            "errors": {n: float(self.errors[n][b]) for n in self.param_names},
            "chi2_red": float(self.chi2_red[b]),
            "status": self.status[b].value,
            "detail": str(self.detail[b]),
            "limit": self.limit_text(b),
        }


def bucket_delays(n_t: int) -> int:
    """Delays per curve after padding: a power of two, at least 32."""
    b = 32
    while b < n_t:
        b *= 2
    return b


def usable_errors(g2_err: Any, valid: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weights and the points they allow, (B, T).

    A stated error that is non-finite or <= 1e-6 (0 is written for "unknown") cannot
    weight its point, so the point is left out; a curve without any usable error is
    fitted unweighted (sigma = 1 on all its valid points).

    Returns
    -------
    sigma : (B, T) float64
    mask : (B, T) bool
        ``valid`` without the points whose error is unusable.
    weighted : (B,) bool
    """
    err = np.atleast_2d(np.asarray(g2_err, dtype=np.float64))
    ok = np.atleast_2d(np.asarray(valid, dtype=bool))
    with np.errstate(invalid="ignore"):
        good = ok & np.isfinite(err) & (err > 1e-6)
    weighted = good.any(axis=1)
    mask = np.where(weighted[:, None], good, ok)
    sigma = np.where(weighted[:, None] & good, err, 1.0)
    return sigma, mask, weighted


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


def _to_internal(p: np.ndarray, is_log: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(is_log, np.log(np.where(is_log, p, 1.0)), p)


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
    n_starts: int = 2,
) -> G2FitResult:
    """Fit B g2 curves: grid start, batched bounded Levenberg-Marquardt, statuses.

    May run off the main thread. Bad curves never raise: they get a status. The result
    of a curve does not depend on the other curves in the batch.

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
        :func:`~xpcsviewer.fitting.models.default_params` of the data. The grid spans
        the bounds of the nonlinear parameters.
    t_range : (t_lo, t_hi) s, optional
        Only delays inside are fitted.
    device : "auto", "cpu", "gpu" or a jax.Device
    aux : (m (T,) or (B, T), dt float or (B,)), optional
        Frames averaged per delay and frame time (s); required for ``single_avgcorr``
        (see :func:`~xpcsviewer.fitting.models.averaging_factors`).
    max_iter : int
    backend : BackendProtocol, optional
        Default :func:`xpcsviewer.backends.get_backend`.
    n_starts : int
        LM starts per curve from the grid (the global grid optimum and the next-best
        local minima of the tau profile); the lowest chi^2 is kept.

    Returns
    -------
    G2FitResult
    """
    from xpcsviewer.backends import get_backend, resolve_device

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
    sigma, mask, weighted = usable_errors(err, mask)
    n_b, n_t = g2.shape
    report(progress, cancel, 0, 3, f"fitting {n_b} curves ({model.value}): grid start")

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
    value = np.where(free, np.clip(value, lower, upper), value)
    lower = np.where(free, lower, value)
    upper = np.where(free, upper, value)

    be = backend if backend is not None else get_backend()
    dev = resolve_device(device, work=float(n_b * n_t)) if be.name == "jax" else None
    y = np.where(mask, g2, 0.0)
    t_safe = np.where(mask, tau, 1.0)  # padded / invalid delays may be NaN
    aux_b = None
    if aux is not None:
        aux_b = (
            np.broadcast_to(np.asarray(aux[0], np.float64), (n_b, n_t)),
            np.broadcast_to(np.asarray(aux[1], np.float64), (n_b,)),
        )
    if be.name == "jax":
        # Delays padded to a power of two (masked): files with 38 or 61 delays share
        # one compiled program, which the GUI compiles once at start-up.
        pad = bucket_delays(n_t) - n_t
        if pad:
            y, sigma, tau = (np.pad(a, ((0, 0), (0, pad)), constant_values=c)
                             for a, c in ((y, 0.0), (sigma, 1.0), (tau, 1.0)))
            t_safe = np.pad(t_safe, ((0, 0), (0, pad)), constant_values=1.0)
            mask = np.pad(mask, ((0, 0), (0, pad)), constant_values=False)
            if aux_b is not None:
                aux_b = (np.pad(aux_b[0], ((0, 0), (0, pad)), constant_values=1.0), aux_b[1])
    n_points = mask.sum(axis=1)
    n_free = int(free.sum())
    has_fit = n_points > n_free

    # 1. Global start on the grid.
    prof = grid_scan(model, t_safe, y, sigma, mask, value, lower, upper, fixed, aux_b,
                     n_starts=n_starts, backend=be, device=dev)
    report(progress, cancel, 1, 3, "refining")

    # 2. LM from every start that exists; keep the lowest cost per curve.
    lo_i, hi_i = _to_internal(lower, is_log), _to_internal(upper, is_log)
    starts = prof.start
    start_ok = np.isfinite(starts).all(axis=2)
    start_ok[:, 0] = True
    curve_of, which = np.nonzero(start_ok)
    x0_nat = np.where(np.isfinite(starts[curve_of, which]), starts[curve_of, which],
                      value[curve_of])
    x0 = np.clip(_to_internal(x0_nat, is_log), lo_i[curve_of], hi_i[curve_of])
    x0 = np.where(free, x0, _to_internal(value[curve_of], is_log))
    aux_rows = None if aux_b is None else (aux_b[0][curve_of], aux_b[1][curve_of])
    xs, cost_s, jac_s, it_s, code_s = lm_solve_batch(
        model, t_safe[curve_of], y[curve_of], sigma[curve_of], mask[curve_of], x0,
        lo_i[curve_of], hi_i[curve_of], free, aux_rows, max_iter, be, dev, cancel,
    )
    best = np.full(n_b, -1)
    best_cost = np.full(n_b, np.inf)
    for r in range(curve_of.size):  # few rows per curve; keep the lowest finite cost
        b, c = curve_of[r], cost_s[r]
        if np.isfinite(c) and np.isfinite(xs[r]).all() and c < best_cost[b]:
            best[b], best_cost[b] = r, c
    first_row = np.searchsorted(curve_of, np.arange(n_b))
    pick = np.where(best >= 0, best, first_row)
    x, cost, jac, n_iter, code = xs[pick], cost_s[pick], jac_s[pick], it_s[pick], code_s[pick]
    report(progress, cancel, 2, 3, "errors and statuses")

    # 3. Errors: covariance in natural coordinates (d p / d x = p for log parameters).
    p_nat = np.where(is_log, np.exp(x), x)
    dof = n_points - n_free
    with np.errstate(invalid="ignore", divide="ignore"):
        chi2 = 2.0 * cost
        chi2_red = np.where(dof > 0, chi2 / np.maximum(dof, 1), np.nan)
    scale2 = np.where(weighted, np.fmax(1.0, chi2_red), chi2_red)
    scale_nat = np.where(is_log, p_nat, 1.0)
    jn = jac / np.where(scale_nat == 0, 1.0, scale_nat)[:, None, :]
    fi = np.nonzero(free)[0]
    errors_nat = np.zeros_like(p_nat)
    if fi.size:
        jf = np.nan_to_num(jn[:, :, fi], nan=0.0, posinf=0.0, neginf=0.0)
        a = np.einsum("btp,btq->bpq", jf, jf)
        cov = np.full_like(a, np.nan)
        fin = np.isfinite(a).all(axis=(1, 2))
        try:
            cov[fin] = np.linalg.inv(a[fin])
        except np.linalg.LinAlgError:
            for b in np.nonzero(fin)[0]:  # some matrix is singular: its errors stay NaN
                try:
                    cov[b] = np.linalg.inv(a[b])
                except np.linalg.LinAlgError:
                    pass
        var = np.diagonal(cov, axis1=1, axis2=2) * scale2[:, None]
        with np.errstate(invalid="ignore"):
            errors_nat[:, fi] = np.where(var >= 0, np.sqrt(var), np.nan)

    # 4. Statuses (see xpcsviewer.fitting.status).
    with np.errstate(invalid="ignore", divide="ignore"):
        s_scale = np.where(np.isfinite(scale2) & (scale2 > 0), scale2, 1.0)
        delta = (prof.chi2_const - chi2) / s_scale
    to_top, to_bottom, lower_lim, upper_lim = profile_limits(
        prof.tau_grid, prof.profile, chi2, s_scale
    )
    finite = np.isfinite(p_nat).all(axis=1) & np.isfinite(cost)
    col = {n: k for k, n in enumerate(names)}
    ci = col["contrast"]
    contrast, contrast_err = p_nat[:, ci], errors_nat[:, ci]
    eps = 1e-7 * np.maximum(1.0, np.abs(hi_i - lo_i))
    on_lo = free[None, :] & (x <= lo_i + eps)
    on_hi = free[None, :] & (x >= hi_i - eps)
    tau_cols = [col[n] for n in names if n in LOG_PARAMS]
    with np.errstate(invalid="ignore"):
        t_min = np.where(mask, tau, np.inf).min(axis=1)
    status = np.empty(n_b, dtype=object)
    detail = np.empty(n_b, dtype=object)
    for b in range(n_b):
        st, why = _decide_one(
            b, names, fixed, has_fit[b], n_points[b], n_free, finite[b], code[b], max_iter,
            chi2_red[b], contrast[b], contrast_err[b], delta[b], on_lo[b], on_hi[b],
            tau_cols, p_nat[b], errors_nat[b], t_min[b], to_top[b], to_bottom[b],
            lower_lim[b], upper_lim[b], ci,
        )
        status[b], detail[b] = st, why
    failed = np.array([s is FitStatus.FAILED for s in status])
    unresolved = np.array([s is FitStatus.UNRESOLVED for s in status])
    lower_lim = np.where(unresolved & to_top, lower_lim, np.nan)
    upper_lim = np.where(unresolved & to_bottom & ~to_top, upper_lim, np.nan)

    no_fit = ~has_fit | ~finite
    p_nat[no_fit] = np.nan
    errors_nat[no_fit] = np.nan
    chi2_red = np.where(no_fit, np.nan, chi2_red)
    delta = np.where(no_fit | failed, np.nan, delta)
    errors_nat[:, fixed] = np.where(no_fit[:, None], np.nan, 0.0)

    report(progress, cancel, 3, 3, "done")
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
        detail=detail,
        tau_lower_limit=lower_lim,
        tau_upper_limit=upper_lim,
        delta_chi2=delta,
        errors_scaled=weighted & (chi2_red > 1.0),
        weighted=weighted,
        tau_grid=prof.tau_grid,
        profile=prof.profile,
    )


def _decide_one(b, names, fixed, has_fit, n_pts, n_free, finite, code, max_iter, *rest):
    st, why = _decide(b, names, fixed, has_fit, n_pts, n_free, finite, *rest)
    if code == CODE_MAX_ITER and st is not FitStatus.FAILED:
        # The best point found is still reported; only a converged claim needs a stop.
        note = f"no convergence in {max_iter} iterations"
        if st is FitStatus.CONVERGED:
            return FitStatus.UNRESOLVED, note
        why = f"{why}; {note}"
    return st, why


def _decide(b, names, fixed, has_fit, n_pts, n_free, finite, chi2_red,
            contrast, contrast_err, delta, on_lo, on_hi, tau_cols, p, e, t_min,
            to_top, to_bottom, lower_lim, upper_lim, ci) -> tuple[FitStatus, str]:
    """One curve's status and the reason (rules in :mod:`xpcsviewer.fitting.status`)."""
    if n_pts == 0:
        return FitStatus.FAILED, "no valid points"
    if not has_fit:
        return FitStatus.FAILED, f"{n_pts} points for {n_free} free parameters"
    if not finite:
        return FitStatus.FAILED, "non-finite result"
    if chi2_red > CHI2_RED_MAX:
        return FitStatus.POOR_FIT, f"chi2_red {chi2_red:.3g} > {CHI2_RED_MAX:g}"
    if contrast > CONTRAST_MAX:
        return FitStatus.POOR_FIT, f"contrast {contrast:.3g} > {CONTRAST_MAX:g}"
    if not fixed[ci] and on_lo[ci]:
        return FitStatus.NO_DECAY, "contrast at 0"
    if np.isfinite(delta) and delta < NO_DECAY_DCHI2:
        return FitStatus.NO_DECAY, (
            f"a constant fits as well (the decay improves chi2 by {max(delta, 0.0):.2g} "
            f"< {NO_DECAY_DCHI2:g})"
        )
    free_tau = [k for k in tau_cols if not fixed[k]]
    tname = names[tau_cols[0]] if tau_cols else "tau"
    if free_tau:
        if to_top:
            lim = f"{tname} > {lower_lim:.3g} s (95 %)" if np.isfinite(lower_lim) else (
                f"{tname} not bounded above")
            return FitStatus.UNRESOLVED, lim
        if to_bottom:
            lim = f"{tname} < {upper_lim:.3g} s (95 %)" if np.isfinite(upper_lim) else (
                f"{tname} not bounded below")
            return FitStatus.UNRESOLVED, lim
        for k in free_tau:
            if on_hi[k]:
                return FitStatus.UNRESOLVED, f"{names[k]} at the top of its range"
            if on_lo[k]:
                return FitStatus.UNRESOLVED, f"{names[k]} at the bottom of its range"
        k0 = free_tau[0]
        if p[k0] < t_min:
            return FitStatus.UNRESOLVED, f"{names[k0]} {p[k0]:.3g} s below the first delay"
        for k in free_tau:
            rel = e[k] / p[k] if p[k] > 0 else np.inf
            if not (rel < TAU_REL_ERR_MAX):
                return FitStatus.UNRESOLVED, (
                    f"{names[k]} error {100 * rel:.0f} % >= {100 * TAU_REL_ERR_MAX:.0f} %"
                    if np.isfinite(rel) else f"{names[k]} error undetermined")
    if not fixed[ci] and not (contrast > CONTRAST_SIGMAS * contrast_err):
        return FitStatus.UNRESOLVED, (
            f"contrast {contrast:.3g} \u00b1 {contrast_err:.2g} below {CONTRAST_SIGMAS:g} sigma")
    for k, n in enumerate(names):
        if fixed[k] or k in tau_cols:
            continue
        if on_hi[k] or (on_lo[k] and k != ci):
            return FitStatus.AT_BOUND, f"{n} at its {'upper' if on_hi[k] else 'lower'} bound"
    return FitStatus.CONVERGED, ""
