"""Least-squares fits of g2 curves: global grid start, batched LM refinement, honest statuses.

All q-bins of all files go through one pass: a grid scan over the nonlinear parameters
with the linear amplitudes solved exactly (:mod:`xpcsviewer.fitting.grid`), then the
batched, bounded Levenberg-Marquardt solve (:mod:`xpcsviewer.fitting.lm`) from the best
grid points (and the next-best local minimum), keeping the lowest chi^2. Weights are
1/g2_err; errors come from the covariance, scaled by sqrt(chi2_red) when chi2_red > 1.
Each curve is then checked (residual runs test, profile-likelihood interval of its
relaxation times, a refit without the last fitted delays, whether the decay reaches a
plateau) and gets a status from :mod:`xpcsviewer.fitting.status` instead of an
exception. With ``model="auto"`` every candidate model is fitted the same way and one
is chosen per curve by AICc (:mod:`xpcsviewer.fitting.adequacy`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xpcsviewer.fitting.adequacy import (
    AICC_MARGIN,
    MODEL_LABELS,
    aicc,
    choose_models,
    misfit_region,
    runs_test,
    strongest_run,
)
from xpcsviewer.fitting.grid import grid_scan
from xpcsviewer.fitting.lm import CODE_MAX_ITER, lm_solve_batch
from xpcsviewer.fitting.models import (
    LOG_PARAMS,
    G2Model,
    ParamSpec,
    default_params,
    evaluate_model,
    mean_relaxation_time,
    model_param_names,
)
from xpcsviewer.fitting.profile import (
    LEVEL_1SIGMA,
    LEVEL_2SIGMA,
    crossing,
    drop_last,
    profile_offsets,
)
from xpcsviewer.fitting.status import (
    CHI2_RED_MAX,
    CONTRAST_MAX,
    CONTRAST_SIGMAS,
    LIMIT_DCHI2,
    NO_DECAY_DCHI2,
    PLATEAU_LEFT_MAX,
    RUNS_Z_MAX,
    TAU_FACTOR_MAX,
    TAU_REL_ERR_MAX,
    WINDOW_DROP,
    FitStatus,
    profile_limits,
)
from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = [
    "AUTO_CANDIDATES",
    "ERROR_SCALING",
    "FitStatus",
    "G2FitResult",
    "fit_g2",
    "lm_solve_batch",
    "usable_errors",
]

#: How the reported errors are scaled (said in every output).
ERROR_SCALING = "covariance errors x sqrt(chi2_red) where chi2_red > 1"
#: Candidates of ``model="auto"``, simplest first (``single_avgcorr`` joins after
#: ``single`` when the frame-averaging factors are given).
AUTO_CANDIDATES = (G2Model.SINGLE, G2Model.STRETCHED, G2Model.DOUBLE)


def _nan(n: int) -> np.ndarray:
    return np.full(n, np.nan)


@dataclass
class G2FitResult:
    """Least-squares fit of B curves; NumPy arrays throughout.

    Attributes
    ----------
    model : G2Model
        The fitted model, or ``G2Model.AUTO`` when one was chosen per curve
        (:attr:`models`).
    params : dict name -> (B,) float64
        Best-fit values in natural units (tau in s); NaN only for ``failed`` curves and,
        for ``auto``, for parameters the chosen model lacks. Use :meth:`reported` for
        what may be quoted (no tau without a decay).
    errors : dict name -> (B,) float64
        1-sigma errors: covariance errors scaled by sqrt(chi2_red) where chi2_red > 1
        (``errors_scaled``); 0 for fixed parameters, NaN where undetermined.
    chi2_red : (B,) float64
    status : (B,) object array of FitStatus
    detail : (B,) object array of str
        Why a curve has its status ("" for converged).
    tau_lower_limit, tau_upper_limit : (B,) s
        One-sided 95 % limits of ``unresolved`` curves ("tau > lower", "tau < upper";
        the parameter is :attr:`limit_name`); NaN otherwise.
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
    models : (B,) object array of G2Model, or None
        The model of each curve (``auto``); None when all have :attr:`model`.
    runs_z : (B,)
        Residual runs test z (NaN: too few points, or not tested).
    interval : dict name -> (B, 2) s
        68 % profile-likelihood interval of each relaxation time (NaN where open, not
        computed or the curve's model lacks it).
    interval2 : dict name -> (B, 2) s
        The 2-sigma profile interval (Delta chi^2 = 4, same scale), against which the
        window-stability refit is judged.
    window : dict name -> (B,) s
        The relaxation time refitted without the last :data:`WINDOW_DROP` fitted
        delays (NaN where not computed).
    decay_left : (B,)
        (g2(t_last) - baseline) / contrast of the fit at the last fitted delay.
    tau_mean, tau_mean_err : (B,) s
        Mean relaxation time (:func:`~xpcsviewer.fitting.models.mean_relaxation_time`)
        and its error from the covariance (same scaling as the errors).
    aicc : dict model name -> (B,)
        AICc of every fitted candidate (``auto``) or of the model.
    delta_aicc : (B,)
        ``auto``: AICc of the best other candidate minus that of the chosen one.
    limit_name : (B,) object array of str
        The relaxation time a limit is on ("" where none).
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
    models: np.ndarray | None = None
    runs_z: np.ndarray | None = None
    interval: dict[str, np.ndarray] = field(default_factory=dict)
    interval2: dict[str, np.ndarray] = field(default_factory=dict)
    window: dict[str, np.ndarray] = field(default_factory=dict)
    decay_left: np.ndarray | None = None
    tau_mean: np.ndarray | None = None
    tau_mean_err: np.ndarray | None = None
    aicc: dict[str, np.ndarray] = field(default_factory=dict)
    delta_aicc: np.ndarray | None = None
    limit_name: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = self.chi2_red.shape[0]
        if self.detail is None:
            self.detail = np.array([""] * n, dtype=object)
        for name in ("tau_lower_limit", "tau_upper_limit", "delta_chi2", "runs_z",
                     "decay_left", "tau_mean", "tau_mean_err", "delta_aicc"):
            if getattr(self, name) is None:
                setattr(self, name, _nan(n))
        if self.errors_scaled is None:
            self.errors_scaled = np.zeros(n, bool)
        if self.weighted is None:
            self.weighted = np.ones(n, bool)
        if self.limit_name is None:
            first = "tau" if "tau" in self.params else "tau1"
            lim = np.isfinite(self.tau_lower_limit) | np.isfinite(self.tau_upper_limit)
            self.limit_name = np.array([first if x else "" for x in lim], dtype=object)

    @property
    def n_curves(self) -> int:
        """B."""
        return int(self.chi2_red.shape[0])

    @property
    def param_names(self) -> tuple[str, ...]:
        """Parameter names in model order (``auto``: the union of the candidates')."""
        return model_param_names(self.model)

    def model_of(self, b: int) -> G2Model:
        """The model of curve ``b``."""
        return self.model if self.models is None else self.models[b]

    def model_names(self) -> np.ndarray:
        """(B,) object array: the model name of every curve."""
        if self.models is None:
            return np.array([self.model.value] * self.n_curves, dtype=object)
        return np.array([m.value for m in self.models], dtype=object)

    @property
    def ok(self) -> np.ndarray:
        """(B,) bool: status converged."""
        return np.array([s == FitStatus.CONVERGED for s in self.status], dtype=bool)

    def _quotable(self, name: str, v: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # no relaxation time without a decay, nor where only a limit exists on it
        v, e = v.copy(), e.copy()
        st = np.array([getattr(s, "value", str(s)) for s in self.status])
        limit = np.isfinite(self.tau_lower_limit) | np.isfinite(self.tau_upper_limit)
        on = np.array([name == "tau_mean" or ln in (name, "") for ln in self.limit_name],
                      dtype=bool)
        drop = (st == FitStatus.NO_DECAY.value) | ((st == FitStatus.UNRESOLVED.value) & limit & on)
        v[drop] = np.nan
        e[drop] = np.nan
        return v, e

    def reported(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(values, errors) of ``name`` as they may be quoted.

        Relaxation times are NaN where there is no decay (``no_decay``) or only a limit
        on them (``unresolved`` with ``tau_lower_limit``/``tau_upper_limit``);
        everything else is the fit's value (``poor_fit``/``misfit`` numbers are kept,
        and marked by the status).
        """
        v, e = self.params[name], self.errors[name]
        if name in LOG_PARAMS:
            return self._quotable(name, v, e)
        return v.copy(), e.copy()

    def relaxation_time(self) -> tuple[np.ndarray, np.ndarray]:
        """(B,) mean relaxation time and its error (s) as they may be quoted (NaN where
        no decay or only a limit)."""
        return self._quotable("tau_mean", self.tau_mean, self.tau_mean_err)

    def limit_text(self, b: int) -> str:
        """"tau > 2.1 s" / "tau < 3e-05 s" for curve ``b``, or ""."""
        lo, hi = self.tau_lower_limit[b], self.tau_upper_limit[b]
        name = str(self.limit_name[b]) or ("tau" if "tau" in self.params else "tau1")
        if np.isfinite(lo):
            return f"{name} > {lo:.3g} s"
        if np.isfinite(hi):
            return f"{name} < {hi:.3g} s"
        return ""

    def curve(self, tau_grid: Any, aux: tuple | None = None) -> np.ndarray:
        """Fitted g2 on ``tau_grid`` (G,) s for plotting -> (B, G); NaN rows for no fit."""
        t = np.asarray(tau_grid, dtype=np.float64).reshape(1, -1)
        use_aux = aux if aux is not None else self.aux
        out = np.full((self.n_curves, t.shape[1]), np.nan)
        models = self.model_names()
        for name in dict.fromkeys(models):
            rows = np.flatnonzero(models == name)
            m = G2Model.parse(name)
            p = tuple(self.params[n][rows, None] for n in model_param_names(m))
            a = None
            if m is G2Model.SINGLE_AVGCORR and use_aux is not None:
                mm, dt = use_aux
                mm = np.asarray(mm, dtype=np.float64)
                dt = np.asarray(dt, dtype=np.float64)
                dt = dt[rows, None] if dt.ndim == 1 and dt.size == self.n_curves else dt
                if mm.shape[-1] != t.shape[-1]:
                    # A smooth grid has no multi-tau level: draw the uncorrected model.
                    mm = np.ones_like(t)
                elif mm.ndim == 2:
                    mm = mm[rows]
                a = (mm, dt)
            with np.errstate(all="ignore"):
                out[rows] = evaluate_model(m, t, p, a, np)
        return out

    def select(self, rows: Any) -> G2FitResult:
        """The fits of some curves (a slice, index array or bool mask) as a new result."""
        aux = self.aux
        if aux is not None and np.ndim(aux[0]) == 2:
            dt = aux[1] if np.ndim(aux[1]) == 0 else np.asarray(aux[1])[rows]
            aux = (np.asarray(aux[0])[rows], dt)

        def sub(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[rows].copy()

        def subd(d: dict) -> dict:
            return {n: v[rows].copy() for n, v in d.items()}

        return G2FitResult(
            model=self.model,
            params=subd(self.params),
            errors=subd(self.errors),
            chi2_red=self.chi2_red[rows].copy(),
            status=self.status[rows].copy(),
            n_iter=self.n_iter[rows].copy(),
            n_points=self.n_points[rows].copy(),
            fixed=dict(self.fixed),
            lower=subd(self.lower),
            upper=subd(self.upper),
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
            models=sub(self.models),
            runs_z=sub(self.runs_z),
            interval=subd(self.interval),
            interval2=subd(self.interval2),
            window=subd(self.window),
            decay_left=sub(self.decay_left),
            tau_mean=sub(self.tau_mean),
            tau_mean_err=sub(self.tau_mean_err),
            aicc=subd(self.aicc),
            delta_aicc=sub(self.delta_aicc),
            limit_name=sub(self.limit_name),
        )

    def row(self, b: int) -> dict[str, Any]:
        """Plain-Python summary of curve ``b`` (for tables and pop-ups)."""
        names = model_param_names(self.model_of(b))
        return {
            "model": self.model_of(b).value,
            "params": {n: float(self.params[n][b]) for n in names},
            "errors": {n: float(self.errors[n][b]) for n in names},
            "interval": {n: [float(v) for v in self.interval[n][b]]
                         for n in names if n in self.interval},
            "chi2_red": float(self.chi2_red[b]),
            "runs_z": float(self.runs_z[b]),
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


@dataclass
class _Data:
    """The curves as the kernels see them (delays padded to a bucket on JAX)."""

    t: np.ndarray  # (B, T) delays, 1.0 where padded or unusable
    y: np.ndarray  # (B, T), 0 where masked
    sigma: np.ndarray
    mask: np.ndarray
    weighted: np.ndarray  # (B,)
    aux: tuple | None  # (m (B, T), dt (B,))
    be: Any
    dev: Any

    @property
    def n_points(self) -> np.ndarray:
        return self.mask.sum(axis=1)

    def take(self, rows: np.ndarray) -> _Data:
        aux = None if self.aux is None else (self.aux[0][rows], self.aux[1][rows])
        return _Data(self.t[rows], self.y[rows], self.sigma[rows], self.mask[rows],
                     self.weighted[rows], aux, self.be, self.dev)


@dataclass
class _Core:
    """One model's optimum for every curve of a :class:`_Data`."""

    model: G2Model
    names: tuple[str, ...]
    fixed: np.ndarray  # (P,)
    is_log: np.ndarray
    value: np.ndarray  # (B, P) natural
    lower: np.ndarray
    upper: np.ndarray
    lo_i: np.ndarray  # (B, P) internal
    hi_i: np.ndarray
    x: np.ndarray  # (B, P) internal
    p: np.ndarray  # (B, P) natural
    cost: np.ndarray
    n_iter: np.ndarray
    code: np.ndarray
    chi2: np.ndarray
    chi2_red: np.ndarray
    scale2: np.ndarray
    s_scale: np.ndarray  # misfit scale of chi^2 differences, max(1, chi2_red)
    cov: np.ndarray  # (B, P, P) natural, scaled like the errors
    errors: np.ndarray  # (B, P)
    prof: Any
    has_fit: np.ndarray
    finite: np.ndarray
    delta: np.ndarray

    @property
    def free(self) -> np.ndarray:
        return ~self.fixed

    @property
    def n_free(self) -> int:
        return int(self.free.sum())

    def col(self, name: str) -> int:
        return self.names.index(name)

    def runs(self, data: _Data) -> tuple[np.ndarray, np.ndarray]:
        """Weighted residuals (B, T) and the runs-test z (B,)."""
        g = _model_curve(self.model, data, self.p)
        with np.errstate(invalid="ignore"):
            r = np.where(data.mask, (data.y - g) / data.sigma, 0.0)
        z, _ = runs_test(r, data.mask)
        return r, np.where(self.has_fit & self.finite, z, np.nan)


def _model_curve(model: G2Model, data: _Data, p: np.ndarray) -> np.ndarray:
    # g2 of the fit at the curves' own delays, (B, T)
    pt = tuple(p[:, k : k + 1] for k in range(p.shape[1]))
    aux = None if data.aux is None else (data.aux[0], data.aux[1][:, None])
    with np.errstate(all="ignore"):
        return np.asarray(evaluate_model(model, data.t, pt, aux, np), dtype=np.float64)


def _prepare(tau, g2, g2_err, valid, t_range, aux, be, device) -> tuple[_Data, tuple | None]:
    from xpcsviewer.backends import resolve_device

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
    dev = resolve_device(device, work=float(n_b * n_t)) if be.name == "jax" else None
    y = np.where(mask, g2, 0.0)
    t_safe = np.where(mask, tau, 1.0)  # padded / invalid delays may be NaN
    aux_b = None
    if aux is not None:
        aux_b = (
            np.broadcast_to(np.asarray(aux[0], np.float64), (n_b, n_t)).copy(),
            np.broadcast_to(np.asarray(aux[1], np.float64), (n_b,)).copy(),
        )
    sigma = np.where(mask, sigma, 1.0)
    if be.name == "jax":
        # Delays padded to a power of two (masked): files with 38 or 61 delays share
        # one compiled program, which the GUI compiles once at start-up.
        pad = bucket_delays(n_t) - n_t
        if pad:
            y, sigma, t_safe = (np.pad(a, ((0, 0), (0, pad)), constant_values=c)
                                for a, c in ((y, 0.0), (sigma, 1.0), (t_safe, 1.0)))
            mask = np.pad(mask, ((0, 0), (0, pad)), constant_values=False)
            if aux_b is not None:
                aux_b = (np.pad(aux_b[0], ((0, 0), (0, pad)), constant_values=1.0), aux_b[1])
    return _Data(t_safe, y, sigma, mask, weighted, aux_b, be, dev), aux_b


def _specs(model: G2Model, data: _Data, params: dict | None, strict: bool):
    names = model_param_names(model)
    n_b = data.y.shape[0]
    specs = default_params(model, data.t, data.y, data.mask)
    for n, s in (params or {}).items():
        if n in specs:
            specs[n] = s
        elif strict:
            raise ValueError(f"model {model.value!r} has no parameter {n!r}; it has {names}")
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
    return names, value, lower, upper, fixed, is_log


def _canonical_double(names, x, jac, lo_i, hi_i, fixed) -> None:
    # The double model is symmetric under (tau1, s1, f) <-> (tau2, s2, 1 - f): keep
    # tau1 < tau2 (as the grid does) where the bounds allow the swap. In place.
    k1, k2 = names.index("tau1"), names.index("tau2")
    s1, s2 = names.index("stretch1"), names.index("stretch2")
    kf = names.index("fraction")
    same = (fixed[k1] == fixed[k2]) & (fixed[s1] == fixed[s2])
    if not same:
        return
    sym = ((lo_i[:, k1] == lo_i[:, k2]) & (hi_i[:, k1] == hi_i[:, k2])
           & (lo_i[:, s1] == lo_i[:, s2]) & (hi_i[:, s1] == hi_i[:, s2])
           & (lo_i[:, kf] == 0.0) & (hi_i[:, kf] == 1.0))
    swap = sym & (x[:, k1] > x[:, k2])
    if not swap.any():
        return
    for a, b in ((k1, k2), (s1, s2)):
        x[swap, a], x[swap, b] = x[swap, b].copy(), x[swap, a].copy()
        if jac is not None:
            jac[swap, :, a], jac[swap, :, b] = jac[swap, :, b].copy(), jac[swap, :, a].copy()
    x[swap, kf] = 1.0 - x[swap, kf]
    if jac is not None:
        jac[swap, :, kf] = -jac[swap, :, kf]


def _solve(model: G2Model, data: _Data, params: dict | None, strict: bool, max_iter: int,
           n_starts: int, cancel: CancelToken | None, specs: tuple | None = None) -> _Core:
    """Grid start, LM from the best starts, covariance: one model, every curve.

    ``specs``: (names, value, lower, upper, fixed, is_log) to use instead of the
    defaults of ``data`` with ``params``.
    """
    names, value, lower, upper, fixed, is_log = (
        specs if specs is not None else _specs(model, data, params, strict))
    free = ~fixed
    be, dev = data.be, data.dev
    t, y, sigma, mask, aux_b = data.t, data.y, data.sigma, data.mask, data.aux
    n_b = y.shape[0]
    n_points = data.n_points
    n_free = int(free.sum())
    has_fit = n_points > n_free

    prof = grid_scan(model, t, y, sigma, mask, value, lower, upper, fixed, aux_b,
                     n_starts=n_starts, backend=be, device=dev)
    if cancel is not None:
        cancel.raise_if_cancelled()
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
        model, t[curve_of], y[curve_of], sigma[curve_of], mask[curve_of], x0,
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
    x, cost, jac = xs[pick].copy(), cost_s[pick], jac_s[pick].copy()
    n_iter, code = it_s[pick], code_s[pick]
    if model is G2Model.DOUBLE:
        _canonical_double(names, x, jac, lo_i, hi_i, fixed)

    # Errors: covariance in natural coordinates (d p / d x = p for log parameters).
    p_nat = np.where(is_log, np.exp(x), x)
    dof = n_points - n_free
    with np.errstate(invalid="ignore", divide="ignore"):
        chi2 = 2.0 * cost
        chi2_red = np.where(dof > 0, chi2 / np.maximum(dof, 1), np.nan)
    scale2 = np.where(data.weighted, np.fmax(1.0, chi2_red), chi2_red)
    scale_nat = np.where(is_log, p_nat, 1.0)
    jn = jac / np.where(scale_nat == 0, 1.0, scale_nat)[:, None, :]
    fi = np.nonzero(free)[0]
    n_p = len(names)
    errors_nat = np.zeros_like(p_nat)
    cov_full = np.zeros((n_b, n_p, n_p))
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
        cov = cov * scale2[:, None, None]
        cov_full[:, fi[:, None], fi[None, :]] = cov
        var = np.diagonal(cov, axis1=1, axis2=2)
        with np.errstate(invalid="ignore"):
            errors_nat[:, fi] = np.where(var >= 0, np.sqrt(var), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        s_scale = np.where(np.isfinite(scale2) & (scale2 > 0), scale2, 1.0)
        delta = (prof.chi2_const - chi2) / s_scale
    finite = np.isfinite(p_nat).all(axis=1) & np.isfinite(cost)
    return _Core(model, names, fixed, is_log, value, lower, upper, lo_i, hi_i, x, p_nat,
                 cost, n_iter, code, chi2, chi2_red, scale2, s_scale, cov_full, errors_nat,
                 prof, has_fit, finite, delta)


def _tau_mean(core: _Core) -> tuple[np.ndarray, np.ndarray]:
    # The mean relaxation time and its error through the full covariance (numeric
    # gradient in natural coordinates).
    def tm(p: np.ndarray) -> np.ndarray:
        return mean_relaxation_time(core.model, {n: p[:, k] for k, n in enumerate(core.names)})

    v = tm(core.p)
    grad = np.zeros_like(core.p)
    for k in np.flatnonzero(core.free):
        h = 1e-6 * np.maximum(np.abs(core.p[:, k]), 1e-12)
        up, dn = core.p.copy(), core.p.copy()
        up[:, k] += h
        dn[:, k] -= h
        with np.errstate(invalid="ignore"):
            grad[:, k] = (tm(up) - tm(dn)) / (2.0 * h)
    with np.errstate(invalid="ignore"):
        var = np.einsum("bp,bpq,bq->b", grad, np.nan_to_num(core.cov, nan=np.inf), grad)
    var = np.where(np.isfinite(core.cov).all(axis=(1, 2)), var, np.nan)
    return v, np.where(var >= 0, np.sqrt(np.abs(var)), np.nan)


@dataclass
class _Checks:
    """The adequacy and stability measures of one model's fits (B-long, NaN elsewhere)."""

    resid: np.ndarray
    runs_z: np.ndarray
    decay_left: np.ndarray
    t_last: np.ndarray
    interval: dict[str, np.ndarray]  # name -> (B, 2) 68 %
    interval2: dict[str, np.ndarray]  # name -> (B, 2) 2 sigma
    limit: dict[str, np.ndarray]  # name -> (B, 2) one-sided 95 % (lower, upper)
    window: dict[str, np.ndarray]


def _measure(core: _Core, data: _Data, rows: np.ndarray, window_drop: int, max_iter: int,
             cancel: CancelToken | None) -> _Checks:
    """Runs test (all curves), decay left at the last delay, and for ``rows`` the
    profile intervals and the refit without the last ``window_drop`` fitted delays."""
    n_b = core.p.shape[0]
    resid, z = core.runs(data)
    g = _model_curve(core.model, data, core.p)
    cb, bb = core.p[:, core.col("contrast")], core.p[:, core.col("baseline")]
    last = data.mask.shape[1] - 1 - np.argmax(data.mask[:, ::-1], axis=1)
    rr = np.arange(n_b)
    with np.errstate(invalid="ignore", divide="ignore"):
        left = np.where(data.mask.any(1) & (cb > 0), (g[rr, last] - bb) / cb, np.nan)
    t_last = np.where(data.mask.any(1), data.t[rr, last], np.nan)
    taus = [k for k, n in enumerate(core.names) if n in LOG_PARAMS and core.free[k]]
    interval = {core.names[k]: np.full((n_b, 2), np.nan) for k in taus}
    interval2 = {core.names[k]: np.full((n_b, 2), np.nan) for k in taus}
    limit = {core.names[k]: np.full((n_b, 2), np.nan) for k in taus}
    window = {core.names[k]: _nan(n_b) for k in taus}
    out = _Checks(resid, z, left, t_last, interval, interval2, limit, window)
    rows = np.asarray(rows, dtype=np.int64)
    if not rows.size or not taus:
        return out
    be, dev = data.be, data.dev
    sub = data.take(rows)
    aux_r = sub.aux
    x = core.x[rows]
    lo_i, hi_i = core.lo_i[rows], core.hi_i[rows]
    chi2 = core.chi2[rows]
    s = core.s_scale[rows]
    double = core.model is G2Model.DOUBLE
    for k in taus:
        name = core.names[k]
        with np.errstate(invalid="ignore", divide="ignore"):
            sig = core.errors[rows, k] / core.p[rows, k]
        off = profile_offsets(sig)
        n_k = off.shape[1]
        target = np.clip(x[:, k : k + 1] + off, lo_i[:, k : k + 1], hi_i[:, k : k + 1])
        real = target - x[:, k : k + 1]
        x0 = np.repeat(x, n_k, axis=0)
        lo_r, hi_r = np.repeat(lo_i, n_k, axis=0), np.repeat(hi_i, n_k, axis=0)
        x0[:, k] = target.ravel()
        if double:  # keep the components ordered while one is held
            k1, k2 = core.col("tau1"), core.col("tau2")
            if k == k1:
                lo_r[:, k2] = np.minimum(np.maximum(lo_r[:, k2], x0[:, k]), hi_r[:, k2])
            else:
                hi_r[:, k1] = np.maximum(np.minimum(hi_r[:, k1], x0[:, k]), lo_r[:, k1])
            x0 = np.where(core.free, np.clip(x0, lo_r, hi_r), x0)
        free_k = core.free.copy()
        free_k[k] = False
        rep = np.repeat(np.arange(rows.size), n_k)
        aux_p = None if aux_r is None else (aux_r[0][rep], aux_r[1][rep])
        _, cost_k, _, _, _ = lm_solve_batch(
            core.model, sub.t[rep], sub.y[rep], sub.sigma[rep], sub.mask[rep], x0, lo_r, hi_r,
            free_k, aux_p, max_iter, be, dev, cancel)
        with np.errstate(invalid="ignore"):
            d = (2.0 * cost_k.reshape(rows.size, n_k) - chi2[:, None]) / s[:, None]
        lk = x[:, k]
        for store, level in ((interval, LEVEL_1SIGMA), (interval2, LEVEL_2SIGMA),
                             (limit, LIMIT_DCHI2)):
            store[name][rows, 0] = np.exp(lk + crossing(real, d, level, -1))
            store[name][rows, 1] = np.exp(lk + crossing(real, d, level, +1))
    # Window stability: the whole fit (grid start and LM, same bounds) again without
    # the last fitted delays; a local refit could stay in a minimum the data no longer
    # support.
    short = _Data(sub.t, sub.y, sub.sigma, drop_last(sub.mask, window_drop), sub.weighted,
                  sub.aux, be, dev)
    spec = (core.names, core.value[rows], core.lower[rows], core.upper[rows], core.fixed,
            core.is_log)
    w = _solve(core.model, short, None, False, max_iter, 2, cancel, specs=spec)
    for k in taus:
        ok = w.has_fit & w.finite
        window[core.names[k]][rows] = np.where(ok, w.p[:, k], np.nan)
    return out


def _bounds_hit(core: _Core) -> tuple[np.ndarray, np.ndarray]:
    eps = 1e-7 * np.maximum(1.0, np.abs(core.hi_i - core.lo_i))
    on_lo = core.free[None, :] & (core.x <= core.lo_i + eps)
    on_hi = core.free[None, :] & (core.x >= core.hi_i - eps)
    return on_lo, on_hi


def _early(core: _Core, b: int, n_pts: int, on_lo: np.ndarray) -> tuple[FitStatus, str] | None:
    """failed, poor_fit, no_decay; None when the curve goes on to the later checks."""
    if n_pts == 0:
        return FitStatus.FAILED, "no valid points"
    if not core.has_fit[b]:
        return FitStatus.FAILED, f"{n_pts} points for {core.n_free} free parameters"
    if not core.finite[b]:
        return FitStatus.FAILED, "non-finite result"
    chi2_red = core.chi2_red[b]
    if chi2_red > CHI2_RED_MAX:
        return FitStatus.POOR_FIT, f"chi2_red {chi2_red:.3g} > {CHI2_RED_MAX:g}"
    ci = core.col("contrast")
    contrast = core.p[b, ci]
    if contrast > CONTRAST_MAX:
        return FitStatus.POOR_FIT, f"contrast {contrast:.3g} > {CONTRAST_MAX:g}"
    if not core.fixed[ci] and on_lo[b, ci]:
        return FitStatus.NO_DECAY, "contrast at 0"
    delta = core.delta[b]
    if np.isfinite(delta) and delta < NO_DECAY_DCHI2:
        return FitStatus.NO_DECAY, (
            f"a constant fits as well (the decay improves chi2 by {max(delta, 0.0):.2g} "
            f"< {NO_DECAY_DCHI2:g})"
        )
    return None


@dataclass
class _Verdict:
    status: FitStatus
    why: str
    limit_name: str = ""
    lower: float = float("nan")
    upper: float = float("nan")


def _misfit_text(core: _Core, chk: _Checks, data: _Data, b: int) -> str:
    z = chk.runs_z[b]
    first, last = strongest_run(chk.resid[b], data.mask[b])
    ci, bi = core.col("contrast"), core.col("baseline")
    where = "the curve"
    if first >= 0:
        g = _model_curve(core.model, data.take(np.array([b])), core.p[b : b + 1])[0]
        with np.errstate(invalid="ignore", divide="ignore"):
            shape = (g[first : last + 1] - core.p[b, bi]) / core.p[b, ci]
        cols = np.arange(first, last + 1)
        shape = shape[data.mask[b, first : last + 1]]
        span = data.t[b, cols[data.mask[b, first : last + 1]]]
        n_run = int(data.mask[b, first : last + 1].sum())
        where = (f"{misfit_region(shape)} ({n_run} points of one sign at "
                 f"{span.min():.2g}-{span.max():.2g} s)")
    return f"systematic misfit: residual runs z = {z:+.1f} (|z| > {RUNS_Z_MAX:g}): misses {where}"


def _late(core: _Core, chk: _Checks, data: _Data, b: int, on_lo, on_hi, to_top, to_bottom,
          lower_lim, upper_lim, t_min, preferred: str, window_drop: int) -> _Verdict:
    """misfit, unresolved, at_bound or converged (rules in :mod:`.status`)."""
    names, fixed, p, e = core.names, core.fixed, core.p[b], core.errors[b]
    z = chk.runs_z[b]
    if not np.isnan(z) and not abs(z) <= RUNS_Z_MAX:
        return _Verdict(FitStatus.MISFIT, _misfit_text(core, chk, data, b) + preferred)
    tau_cols = [k for k, n in enumerate(names) if n in LOG_PARAMS]
    free_tau = [k for k in tau_cols if not fixed[k]]
    tname = names[tau_cols[0]] if tau_cols else "tau"
    U = FitStatus.UNRESOLVED
    if free_tau:
        if to_top[b]:
            lim = lower_lim[b]
            return _Verdict(U, f"{tname} > {lim:.3g} s (95 %)" if np.isfinite(lim)
                            else f"{tname} not bounded above", tname, lower=lim)
        if to_bottom[b]:
            lim = upper_lim[b]
            return _Verdict(U, f"{tname} < {lim:.3g} s (95 %)" if np.isfinite(lim)
                            else f"{tname} not bounded below", tname, upper=lim)
        for k in free_tau:
            n = names[k]
            iv, lim = chk.interval[n][b], chk.limit[n][b]
            if not np.isfinite(iv[1]):
                return _Verdict(U, f"{n} > {lim[0]:.3g} s (95 %)" if np.isfinite(lim[0])
                                else f"{n} not bounded above", n, lower=lim[0])
            if not np.isfinite(iv[0]):
                return _Verdict(U, f"{n} < {lim[1]:.3g} s (95 %)" if np.isfinite(lim[1])
                                else f"{n} not bounded below", n, upper=lim[1])
        for k in free_tau:
            if on_hi[b, k]:
                return _Verdict(U, f"{names[k]} at the top of its range")
            if on_lo[b, k]:
                return _Verdict(U, f"{names[k]} at the bottom of its range")
        k0 = free_tau[0]
        if p[k0] < t_min:
            return _Verdict(U, f"{names[k0]} {p[k0]:.3g} s below the first delay")
        left = chk.decay_left[b]
        if not fixed[core.col("baseline")] and left > PLATEAU_LEFT_MAX:
            n = names[free_tau[-1]]  # the slowest time: the one the plateau would pin
            lo = chk.limit[n][b, 0]
            why = (f"no plateau: {100 * left:.0f} % of the decay left at the last fitted delay "
                   f"({chk.t_last[b]:.3g} s)")
            if np.isfinite(lo):
                return _Verdict(U, f"{why}; {n} > {lo:.3g} s (95 %)", n, lower=lo)
            return _Verdict(U, why)
        for k in free_tau:
            n = names[k]
            tw = chk.window[n][b]
            lo2, hi2 = chk.interval2[n][b]
            if np.isfinite(tw) and ((np.isfinite(lo2) and tw < lo2) or (np.isfinite(hi2) and tw > hi2)):
                return _Verdict(U, (
                    f"{n} decided by the last delays: {p[k]:.2g} -> {tw:.2g} s without the "
                    f"last {window_drop} fitted (beyond its 2-sigma interval)"))
        for k in free_tau:
            rel = e[k] / p[k] if p[k] > 0 else np.inf
            if not (rel < TAU_REL_ERR_MAX):
                return _Verdict(U, (
                    f"{names[k]} error {100 * rel:.0f} % >= {100 * TAU_REL_ERR_MAX:.0f} %"
                    if np.isfinite(rel) else f"{names[k]} error undetermined"))
            # the curvature error can hide a long side of an asymmetric profile
            lo, hi = chk.interval[names[k]][b]
            factor = max(hi / p[k], p[k] / lo)
            if not (factor <= TAU_FACTOR_MAX):
                return _Verdict(U, (
                    f"{names[k]} {p[k]:.3g} s known only to a factor {factor:.2g} (68 % "
                    f"profile interval {lo:.2g}-{hi:.2g} s)"))
    ci = core.col("contrast")
    c, ce = p[ci], e[ci]
    if not fixed[ci] and not (c > CONTRAST_SIGMAS * ce):
        return _Verdict(U, f"contrast {c:.3g} \u00b1 {ce:.2g} below {CONTRAST_SIGMAS:g} sigma")
    for k, n in enumerate(names):
        if fixed[k] or k in tau_cols:
            continue
        if on_hi[b, k] or (on_lo[b, k] and k != ci):
            return _Verdict(FitStatus.AT_BOUND,
                            f"{n} at its {'upper' if on_hi[b, k] else 'lower'} bound")
    return _Verdict(FitStatus.CONVERGED, "")


def _preferred(own: np.ndarray, others: list[tuple[G2Model, np.ndarray, np.ndarray]]) -> list[str]:
    """The reason's tail for misfit curves: the best other candidate without structure.

    ``own``: (R,) AICc of the curve's model; ``others``: (model, AICc (R,), runs z (R,)).
    """
    out = []
    for r in range(own.size):
        best = None
        for m, sc, z in others:
            if np.isfinite(sc[r]) and np.isfinite(z[r]) and abs(z[r]) <= RUNS_Z_MAX:
                if best is None or sc[r] < best[1]:
                    best = (m, sc[r])
        if best is None:
            out.append("; no candidate model fits without structure")
            continue
        d = own[r] - best[1]
        label = MODEL_LABELS.get(best[0].value, best[0].value)
        if d > AICC_MARGIN:
            out.append(f"; {label} preferred (AICc lower by {d:.0f})")
        else:
            word = "lower" if d > 0 else "higher"
            out.append(f"; {label} fits without structure (AICc {word} by {abs(d):.0f})")
    return out


def _finish(core: _Core, data: _Data, sel: np.ndarray, window_drop: int, max_iter: int,
            cancel: CancelToken | None, alternatives: Any) -> dict[str, Any]:
    """Checks and statuses of the curves ``sel`` (bool) of one model's fits.

    ``alternatives(rows, z) -> list of str`` gives the misfit reasons' tails.
    """
    n_b = core.p.shape[0]
    n_pts = data.n_points
    on_lo, on_hi = _bounds_hit(core)
    status = np.empty(n_b, dtype=object)
    detail = np.array([""] * n_b, dtype=object)
    early = {}
    for b in np.flatnonzero(sel):
        early[b] = _early(core, b, int(n_pts[b]), on_lo)
    rows = np.array([b for b, v in early.items() if v is None], dtype=np.int64)
    chk = _measure(core, data, rows, window_drop, max_iter, cancel)
    to_top, to_bottom, lower_lim, upper_lim = profile_limits(
        core.prof.tau_grid, core.prof.profile, core.chi2, core.s_scale)
    with np.errstate(invalid="ignore"):
        t_min = np.where(data.mask, data.t, np.inf).min(axis=1)

    def structured(b: int) -> bool:
        return not np.isnan(chk.runs_z[b]) and not abs(chk.runs_z[b]) <= RUNS_Z_MAX

    # a poor fit (chi2_red too large) that is also structured says where, too
    poor = [b for b, v in early.items() if v is not None and v[0] is FitStatus.POOR_FIT
            and v[1].startswith("chi2_red") and structured(b)]
    misfit = sorted([b for b in rows if structured(b)] + poor)
    tails = dict(zip(misfit, alternatives(np.array(misfit, np.int64), chk.runs_z), strict=True)) \
        if misfit else {}
    lim_lo, lim_hi = _nan(n_b), _nan(n_b)
    limit_name = np.array([""] * n_b, dtype=object)
    for b in np.flatnonzero(sel):
        if early[b] is not None:
            status[b], detail[b] = early[b]
            if b in tails:
                detail[b] = f"{detail[b]}; {_misfit_text(core, chk, data, b)}{tails[b]}"
            continue
        v = _late(core, chk, data, b, on_lo, on_hi, to_top, to_bottom, lower_lim, upper_lim,
                  t_min[b], tails.get(b, ""), window_drop)
        st, why = v.status, v.why
        if core.code[b] == CODE_MAX_ITER:
            # The best point found is still reported; only a converged claim needs a stop.
            note = f"no convergence in {max_iter} iterations"
            if st is FitStatus.CONVERGED:
                st, why = FitStatus.UNRESOLVED, note
            else:
                why = f"{why}; {note}"
        status[b], detail[b] = st, why
        if st is FitStatus.UNRESOLVED and (np.isfinite(v.lower) or np.isfinite(v.upper)):
            lim_lo[b], lim_hi[b], limit_name[b] = v.lower, v.upper, v.limit_name
    for b in np.flatnonzero(sel):  # code-max-iter on an early status
        if early[b] is not None and early[b][0] is not FitStatus.FAILED and core.code[b] == CODE_MAX_ITER:
            detail[b] = f"{detail[b]}; no convergence in {max_iter} iterations"
    failed = np.array([s is FitStatus.FAILED for s in status])
    no_fit = ~core.has_fit | ~core.finite
    p_nat = core.p.copy()
    errors = core.errors.copy()
    p_nat[no_fit] = np.nan
    errors[no_fit] = np.nan
    errors[:, core.fixed] = np.where(no_fit[:, None], np.nan, 0.0)
    tmean, tmean_err = _tau_mean(core)
    tmean = np.where(no_fit, np.nan, tmean)
    tmean_err = np.where(no_fit, np.nan, tmean_err)
    return {
        "status": status,
        "detail": detail,
        "params": p_nat,
        "errors": errors,
        "chi2_red": np.where(no_fit, np.nan, core.chi2_red),
        "delta": np.where(no_fit | failed, np.nan, core.delta),
        "lim_lo": lim_lo,
        "lim_hi": lim_hi,
        "limit_name": limit_name,
        "checks": chk,
        "tau_mean": tmean,
        "tau_mean_err": tmean_err,
        "errors_scaled": data.weighted & (core.chi2_red > 1.0),
    }


def _candidates(aux: tuple | None) -> list[G2Model]:
    c = [G2Model.SINGLE]
    if aux is not None:
        c.append(G2Model.SINGLE_AVGCORR)
    return c + [G2Model.STRETCHED, G2Model.DOUBLE]


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
    window_drop: int = WINDOW_DROP,
    compare: bool = True,
) -> G2FitResult:
    """Fit B g2 curves: grid start, batched bounded Levenberg-Marquardt, checks, statuses.

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
    model : {"single", "stretched", "double", "single_avgcorr", "auto"}
        ``auto`` fits every candidate (single, single_avgcorr when ``aux`` is given,
        stretched, double) and chooses one per curve by AICc
        (:func:`~xpcsviewer.fitting.adequacy.choose_models`); the result's ``models``
        says which.
    params : dict name -> ParamSpec, optional
        Starts, bounds and fixed flags (scalars or (B,) arrays); default
        :func:`~xpcsviewer.fitting.models.default_params` of the data. The grid spans
        the bounds of the nonlinear parameters. With ``auto`` each candidate takes the
        entries it has (e.g. a fixed baseline applies to all).
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
    window_drop : int
        Fitted delays dropped at the end for the window-stability refit.
    compare : bool
        For a pinned model, fit the other candidates on its misfit curves to name the
        model that fits instead (the reason only; statuses do not change).

    Returns
    -------
    G2FitResult
    """
    from xpcsviewer.backends import get_backend

    model = G2Model.parse(model)
    if model is G2Model.SINGLE_AVGCORR and aux is None:
        raise ValueError("model 'single_avgcorr' needs aux=(m per delay, frame time)")
    be = backend if backend is not None else get_backend()
    data, aux_b = _prepare(tau, g2, g2_err, valid, t_range, aux, be, device)
    n_b = data.y.shape[0]
    auto = model is G2Model.AUTO
    cands = _candidates(aux) if auto else [model]
    total = 2 * len(cands) + 1
    report(progress, cancel, 0, total,
           f"fitting {n_b} curves ({model.value}): grid start and refinement")
    cores: dict[G2Model, _Core] = {}
    for i, m in enumerate(cands):
        cores[m] = _solve(m, data, params, not auto, max_iter, n_starts, cancel)
        report(progress, cancel, 2 * i + 2, total, f"{m.value} fitted")
    n_pts = data.n_points
    scores = {m: aicc(np.where(c.has_fit & c.finite, c.chi2, np.nan), n_pts, c.n_free)
              for m, c in cores.items()}
    if auto:
        zs = {m: c.runs(data)[1] for m, c in cores.items()}
        chosen, margin = choose_models({m.value: s for m, s in scores.items()},
                                       [m.value for m in cands],
                                       runs_z={m.value: z for m, z in zs.items()})
    else:
        zs = {}
        chosen, margin = np.zeros(n_b, np.int64), _nan(n_b)
    report(progress, cancel, total - 1, total, "checks and statuses")

    def alternatives_for(m: G2Model):
        def alt(rows: np.ndarray, z: np.ndarray) -> list[str]:
            if auto:
                others = [(o, scores[o][rows], zs[o][rows]) for o in cands if o is not m]
            elif compare:
                sub = data.take(rows)
                others = []
                for o in _candidates(aux):
                    if o is m:
                        continue
                    c = _solve(o, sub, params, False, max_iter, n_starts, cancel)
                    sc = aicc(np.where(c.has_fit & c.finite, c.chi2, np.nan), sub.n_points,
                              c.n_free)
                    others.append((o, sc, c.runs(sub)[1]))
            else:
                return [""] * rows.size
            return _preferred(scores[m][rows], others)
        return alt

    union = model_param_names(G2Model.AUTO) if auto else model_param_names(model)
    P = {n: _nan(n_b) for n in union}
    E = {n: _nan(n_b) for n in union}
    LO = {n: _nan(n_b) for n in union}
    HI = {n: _nan(n_b) for n in union}
    fixed_all: dict[str, list[bool]] = {n: [] for n in union}
    status = np.empty(n_b, dtype=object)
    detail = np.empty(n_b, dtype=object)
    chi2_red, delta = _nan(n_b), _nan(n_b)
    lim_lo, lim_hi = _nan(n_b), _nan(n_b)
    limit_name = np.array([""] * n_b, dtype=object)
    runs_z, left, tmean, tmean_err = _nan(n_b), _nan(n_b), _nan(n_b), _nan(n_b)
    n_iter = np.zeros(n_b, np.int64)
    scaled = np.zeros(n_b, bool)
    taus = [n for n in union if n in LOG_PARAMS]
    interval = {n: np.full((n_b, 2), np.nan) for n in taus}
    interval2 = {n: np.full((n_b, 2), np.nan) for n in taus}
    window = {n: _nan(n_b) for n in taus}
    g_max = max(c.prof.tau_grid.shape[1] for c in cores.values())
    tau_grid, profile = np.full((n_b, g_max), np.nan), np.full((n_b, g_max), np.nan)
    models = np.empty(n_b, dtype=object)
    for i, m in enumerate(cands):
        core = cores[m]
        sel = chosen == i
        for k, n in enumerate(core.names):
            fixed_all[n].append(bool(core.fixed[k]))
        if not sel.any():
            continue
        out = _finish(core, data, sel, window_drop, max_iter, cancel, alternatives_for(m))
        models[sel] = m
        for k, n in enumerate(core.names):
            P[n][sel] = out["params"][sel, k]
            E[n][sel] = out["errors"][sel, k]
            LO[n][sel] = core.lower[sel, k]
            HI[n][sel] = core.upper[sel, k]
        status[sel], detail[sel] = out["status"][sel], out["detail"][sel]
        chi2_red[sel], delta[sel] = out["chi2_red"][sel], out["delta"][sel]
        lim_lo[sel], lim_hi[sel] = out["lim_lo"][sel], out["lim_hi"][sel]
        limit_name[sel] = out["limit_name"][sel]
        chk = out["checks"]
        runs_z[sel], left[sel] = chk.runs_z[sel], chk.decay_left[sel]
        tmean[sel], tmean_err[sel] = out["tau_mean"][sel], out["tau_mean_err"][sel]
        n_iter[sel] = core.n_iter[sel]
        scaled[sel] = out["errors_scaled"][sel]
        for n, iv in chk.interval.items():
            interval[n][sel] = iv[sel]
            interval2[n][sel] = chk.interval2[n][sel]
            window[n][sel] = chk.window[n][sel]
        g = core.prof.tau_grid.shape[1]
        tau_grid[sel, :g], profile[sel, :g] = core.prof.tau_grid[sel], core.prof.profile[sel]

    report(progress, cancel, total, total, "done")
    if not auto:
        models = None
    return G2FitResult(
        model=model,
        params=P,
        errors=E,
        chi2_red=chi2_red,
        status=status,
        n_iter=n_iter,
        n_points=n_pts.astype(np.int64),
        fixed={n: bool(v) and all(v) for n, v in fixed_all.items()},
        lower=LO,
        upper=HI,
        aux=aux,
        t_range=None if t_range is None else (float(min(t_range)), float(max(t_range))),
        detail=detail,
        tau_lower_limit=lim_lo,
        tau_upper_limit=lim_hi,
        delta_chi2=delta,
        errors_scaled=scaled,
        weighted=data.weighted.copy(),
        tau_grid=tau_grid,
        profile=profile,
        models=models,
        runs_z=runs_z,
        interval=interval,
        interval2=interval2,
        window=window,
        decay_left=left,
        tau_mean=tmean,
        tau_mean_err=tmean_err,
        aicc={m.value: s for m, s in scores.items()},
        delta_aicc=margin,
        limit_name=limit_name,
    )
