"""The least-squares result: :class:`G2FitResult`, what one call of ``fit_g2`` returns.

It holds per-curve arrays and answers questions about them (what may be quoted, the
fitted curve for plotting, a subset of curves, one curve's summary) without any
solver: exporters, views and the Bayesian fit read it without pulling in the
least-squares numerics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xpcsviewer.fitting.models import (
    G2Model,
    evaluate_model,
    model_param_names,
)
from xpcsviewer.fitting.status import FitStatus, quotable

__all__ = ["G2FitResult"]


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
        return quotable(name, v, e, self.status, self.tau_lower_limit, self.tau_upper_limit,
                        self.limit_name, self.detail)

    def reported(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(values, errors) of ``name`` as they may be quoted
        (:func:`xpcsviewer.fitting.status.quotable`)."""
        return self._quotable(name, self.params[name], self.errors[name])

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
