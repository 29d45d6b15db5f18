"""g2 models shared by least squares and NUTS, their parameters and data-driven starts.

One parameterisation everywhere (least squares, Bayesian, diffusion, GUI, CLI):

- ``single``:     g2 = baseline + contrast * exp(-2 (t/tau)^stretch), stretch fixed at 1
- ``stretched``:  the same with ``stretch`` free
- ``double``:     g2 = baseline + contrast * [f e^{-(t/tau1)^s1} + (1-f) e^{-(t/tau2)^s2}]^2
- ``single_avgcorr``: ``single`` (stretch 1) times the multi-tau frame-averaging factor
  [sinh(m dt/tau) / (m sinh(dt/tau))]^2 on g2 - baseline, m = frames averaged at the
  delay's multi-tau level, dt = frame time.
- ``auto``: not a model but a choice: every candidate model is fitted and one is chosen
  per curve by AICc (:mod:`xpcsviewer.fitting.adequacy`).

With stretch = 1, tau is the field-correlation time: g1(t) = exp(-t/tau), Gamma = 1/tau.
The model functions are written against an array namespace ``xp`` and broadcast their
parameters against ``t`` so that one call evaluates many parameter sets.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

__all__ = [
    "AUTO_PARAMS",
    "MODEL_PARAMS",
    "G2Model",
    "ParamSpec",
    "averaging_factors",
    "default_params",
    "evaluate_model",
    "evaluate_with_jacobian",
    "mean_relaxation_time",
    "model_param_names",
    "shared_contrast_start",
]


class G2Model(enum.StrEnum):
    """The g2 models; the value is the name used by the CLI, JSON and GUI."""

    SINGLE = "single"
    STRETCHED = "stretched"
    DOUBLE = "double"
    SINGLE_AVGCORR = "single_avgcorr"
    #: Fit every candidate and choose one per curve (least squares only).
    AUTO = "auto"

    @classmethod
    def parse(cls, value: G2Model | str) -> G2Model:
        """Model from its name (``"single"``, ...) or itself; ValueError if unknown."""
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            names = ", ".join(m.value for m in cls)
            raise ValueError(f"unknown g2 model {value!r}; use one of {names}") from None


MODEL_PARAMS: dict[G2Model, tuple[str, ...]] = {
    G2Model.SINGLE: ("contrast", "tau", "stretch", "baseline"),
    G2Model.STRETCHED: ("contrast", "tau", "stretch", "baseline"),
    G2Model.DOUBLE: (
        "contrast",
        "tau1",
        "stretch1",
        "tau2",
        "stretch2",
        "fraction",
        "baseline",
    ),
    G2Model.SINGLE_AVGCORR: ("contrast", "tau", "baseline"),
}

#: Columns of an ``auto`` fit: the union of the candidates' parameters (NaN where the
#: chosen model lacks one).
AUTO_PARAMS = ("contrast", "tau", "stretch", "tau1", "stretch1", "tau2", "stretch2",
               "fraction", "baseline")

# Relaxation times span decades: they are fitted (and sampled) in log space.
LOG_PARAMS = frozenset({"tau", "tau1", "tau2"})


def model_param_names(model: G2Model | str) -> tuple[str, ...]:
    """Parameter names of ``model`` in their fixed order (``auto``: the union)."""
    m = G2Model.parse(model)
    return AUTO_PARAMS if m is G2Model.AUTO else MODEL_PARAMS[m]


def _log_gamma(x: Any) -> np.ndarray:
    from math import lgamma

    a = np.asarray(x, dtype=np.float64)
    out = np.full(a.shape, np.nan)
    ok = np.isfinite(a) & (a > 0)
    out[ok] = [lgamma(v) for v in a[ok]]
    return out


def mean_relaxation_time(model: G2Model | str, p: dict[str, Any]) -> np.ndarray:
    """The mean relaxation time of the field correlation, integral of g1(t) dt (s).

    ``single``/``single_avgcorr``: tau; ``stretched``: tau Gamma(1 + 1/stretch) (the
    mean time of a Kohlrausch decay, = tau/beta Gamma(1/beta)); ``double``: the
    amplitude-weighted mean f tau1 Gamma(1 + 1/s1) + (1 - f) tau2 Gamma(1 + 1/s2) (f tau1
    + (1 - f) tau2 at unit stretches). Diffusion uses it as 1/Gamma.

    Parameters
    ----------
    model : a model other than ``auto``
    p : dict name -> array (natural units)
    """
    m = G2Model.parse(model)
    if m in (G2Model.SINGLE, G2Model.SINGLE_AVGCORR):
        return np.asarray(p["tau"], dtype=np.float64) * 1.0
    if m is G2Model.STRETCHED:
        s = np.asarray(p["stretch"], dtype=np.float64)
        return np.asarray(p["tau"], dtype=np.float64) * np.exp(_log_gamma(1.0 + 1.0 / s))
    if m is G2Model.DOUBLE:
        f = np.asarray(p["fraction"], dtype=np.float64)
        g1 = np.exp(_log_gamma(1.0 + 1.0 / np.asarray(p["stretch1"], dtype=np.float64)))
        g2 = np.exp(_log_gamma(1.0 + 1.0 / np.asarray(p["stretch2"], dtype=np.float64)))
        return f * np.asarray(p["tau1"], np.float64) * g1 + (1.0 - f) * np.asarray(
            p["tau2"], np.float64) * g2
    raise ValueError(f"no single relaxation time for model {m.value!r}")


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: start value, bounds and whether it is fixed.

    ``value``, ``lower`` and ``upper`` are floats or (B,) arrays (one per curve).
    A fixed parameter is held at ``value`` exactly (never silently at a bound);
    a free one starts at ``value`` clipped into ``[lower, upper]``.
    """

    name: str
    value: Any
    lower: Any
    upper: Any
    fixed: bool = False

    def with_fixed(self, value: Any | None = None) -> ParamSpec:
        """A copy fixed at ``value`` (default: the current value)."""
        return replace(self, fixed=True, value=self.value if value is None else value)

    def with_free(self) -> ParamSpec:
        """A copy that is fitted."""
        return replace(self, fixed=False)


def _log_sinh(xp: Any, x: Any) -> Any:
    # log(sinh x) for x > 0 without overflow (large x) or cancellation (small x).
    return x + xp.log(-xp.expm1(-2.0 * x)) - np.log(2.0)


def _x_coth(xp: Any, x: Any) -> Any:
    # x coth x for x > 0: 2x / (1 - e^{-2x}) - x, exact to the last digits at both ends
    return -2.0 * x / xp.expm1(-2.0 * x) - x


def evaluate_model(
    model: G2Model | str,
    t: Any,
    p: tuple,
    aux: tuple | None = None,
    xp: Any = np,
) -> Any:
    """g2 of ``model`` at delays ``t``.

    Parameters
    ----------
    model : G2Model or str
    t : array, (..., T) float64
        Delays in s.
    p : tuple of arrays
        Parameters in :func:`model_param_names` order, each broadcastable with ``t``
        (e.g. shape (..., 1) for a batch of parameter sets).
    aux : (m, dt), optional
        For ``single_avgcorr`` only: frames averaged per delay ``m`` (T,) and the
        frame time ``dt`` (s).
    xp : module
        ``numpy`` or ``jax.numpy``.

    Returns
    -------
    array, broadcast shape of ``t`` and ``p``
    """
    model = G2Model.parse(model)
    if model in (G2Model.SINGLE, G2Model.STRETCHED):
        contrast, tau, stretch, baseline = p
        return baseline + contrast * xp.exp(-2.0 * (t / tau) ** stretch)
    if model is G2Model.DOUBLE:
        contrast, tau1, s1, tau2, s2, frac, baseline = p
        field = frac * xp.exp(-((t / tau1) ** s1)) + (1.0 - frac) * xp.exp(-((t / tau2) ** s2))
        return baseline + contrast * field**2
    if model is G2Model.SINGLE_AVGCORR:
        contrast, tau, baseline = p
        if aux is None:
            raise ValueError("single_avgcorr needs aux=(m, dt): frames averaged and frame time")
        m, dt = aux
        x = dt / tau
        # [sinh(m x) / (m sinh x)]^2 in log space; equals 1 for m = 1.
        log_f = 2.0 * (_log_sinh(xp, m * x) - xp.log(m) - _log_sinh(xp, x))
        return baseline + contrast * xp.exp(-2.0 * t / tau + log_f)
    raise ValueError(f"model {model.value!r} has no single g2 curve (auto is a choice)")


def evaluate_with_jacobian(
    model: G2Model | str, t: Any, p: tuple, xp: Any = np, aux: tuple | None = None
) -> tuple[Any, tuple] | None:
    """g2 and its analytic derivatives, or None where only numeric ones exist.

    Derivatives are with respect to the fitting coordinates: log(tau) for relaxation
    times (see ``LOG_PARAMS``), the parameter itself otherwise.

    Parameters
    ----------
    model : G2Model or str
    t : (..., T) s
    p : tuple of arrays broadcastable with ``t``, in :func:`model_param_names` order
    aux : (m, dt), for ``single_avgcorr``

    Returns
    -------
    (g, (dg/dp_0, dg/dp_1, ...)) with every array broadcast to ``g``'s shape, or None
    (``single_avgcorr`` without ``aux``).
    """
    model = G2Model.parse(model)
    if model is G2Model.SINGLE_AVGCORR:
        if aux is None:
            return None
        contrast, tau, baseline = p
        m, dt = aux
        x = dt / tau
        log_f = 2.0 * (_log_sinh(xp, m * x) - xp.log(m) - _log_sinh(xp, x))
        e = xp.exp(-2.0 * t / tau + log_f)
        g = baseline + contrast * e
        # d log f / d log tau = 2 (x coth x - m x coth(m x)); y coth y -> 1 as y -> 0
        d_log_f = 2.0 * (_x_coth(xp, x) - _x_coth(xp, m * x))
        return g, (e * xp.ones_like(g), contrast * e * (2.0 * t / tau + d_log_f),
                   xp.ones_like(g))
    if model in (G2Model.SINGLE, G2Model.STRETCHED):
        contrast, tau, stretch, baseline = p
        u = t / tau
        us = u**stretch
        e = xp.exp(-2.0 * us)
        ce = contrast * e
        g = baseline + ce
        one = xp.ones_like(g)
        # u^s log u -> 0 as u -> 0; keep it finite where t = 0
        log_u = xp.log(xp.where(u > 0, u, 1.0))
        return g, (e * one, 2.0 * stretch * us * ce, -2.0 * us * log_u * ce, one)
    if model is G2Model.DOUBLE:
        contrast, tau1, s1, tau2, s2, frac, baseline = p
        u1, u2 = t / tau1, t / tau2
        v1, v2 = u1**s1, u2**s2
        e1, e2 = xp.exp(-v1), xp.exp(-v2)
        field = frac * e1 + (1.0 - frac) * e2
        g = baseline + contrast * field**2
        k = 2.0 * contrast * field
        one = xp.ones_like(g)
        l1 = xp.log(xp.where(u1 > 0, u1, 1.0))
        l2 = xp.log(xp.where(u2 > 0, u2, 1.0))
        return g, (
            field**2 * one,
            k * frac * e1 * s1 * v1,
            -k * frac * e1 * v1 * l1,
            k * (1.0 - frac) * e2 * s2 * v2,
            -k * (1.0 - frac) * e2 * v2 * l2,
            k * (e1 - e2),
            one,
        )
    return None


def averaging_factors(delay_frames: Any) -> np.ndarray:
    """Frames averaged at each delay of a multi-tau layout.

    In the multi-tau scheme a delay at level L (spacing 2^L frames) correlates frames
    averaged in groups of m = 2^L; the spacing to the previous delay is that m
    (1,2,...,8 -> 1; 10,12,14,16 -> 2; 20,... -> 4).

    Parameters
    ----------
    delay_frames : (T,) int
        Delays in frames, ascending.

    Returns
    -------
    (T,) float64
        m per delay (a power of two, at least 1).
    """
    d = np.asarray(delay_frames, dtype=np.float64).ravel()
    if d.size == 0:
        return d
    spacing = np.diff(d, prepend=d[0] - 1.0)
    spacing = np.where(np.isfinite(spacing) & (spacing >= 1.0), spacing, 1.0)
    return 2.0 ** np.round(np.log2(spacing))


def _valid_median(y: np.ndarray, ok: np.ndarray, first: bool, k: int) -> np.ndarray:
    # Median of the first (or last) k valid points of each row; NaN when none. A
    # median, not a mean: one wild point of a photon-starved real file (g2 ~ 300)
    # must not set the start contrast and, through it, the contrast bound.
    if not first:
        y, ok = y[:, ::-1], ok[:, ::-1]
    # the first k valid columns of each row, gathered into a (B, k) block
    idx = np.argsort(~ok, axis=1, kind="stable")[:, :k]
    vals = np.take_along_axis(y, idx, axis=1)
    sel = np.take_along_axis(ok, idx, axis=1)
    vals = np.where(sel, vals, np.nan)
    out = np.full(y.shape[0], np.nan)
    rows = sel.any(axis=1)
    if rows.any():
        out[rows] = np.nanmedian(vals[rows], axis=1)
    return out


def estimate_starts(
    tau: np.ndarray, g2: np.ndarray, valid: np.ndarray
) -> dict[str, np.ndarray]:
    """Per-curve start values from the data (contrast, tau, baseline).

    contrast: median of the first 3 valid points minus the baseline (median of the last
    3), so a single wild point does not set them;
    tau: 2x the delay where (g2 - baseline)/contrast first falls below 1/e (log-linear
    interpolation), since exp(-2 t/tau) = 1/e at t = tau/2.

    Returns
    -------
    dict of (B,) float64 arrays: ``contrast``, ``tau``, ``baseline``, ``t_min``, ``t_max``
        (``t_min``/``t_max`` are the smallest/largest valid positive delays, NaN if none).
    """
    g2 = np.atleast_2d(np.asarray(g2, dtype=np.float64))
    tt = np.broadcast_to(np.asarray(tau, dtype=np.float64), g2.shape)
    with np.errstate(invalid="ignore"):
        ok = np.atleast_2d(np.asarray(valid, dtype=bool)) & np.isfinite(g2) & (tt > 0)
    y = np.where(ok, g2, 0.0)
    t_min = np.where(ok.any(1), np.where(ok, tt, np.inf).min(1), np.nan)
    t_max = np.where(ok.any(1), np.where(ok, tt, -np.inf).max(1), np.nan)
    head = _valid_median(y, ok, True, 3)
    tail = _valid_median(y, ok, False, 3)
    baseline = tail
    contrast = head - tail
    # A usable normalised decay for the 1/e crossing.
    with np.errstate(invalid="ignore", divide="ignore"):
        norm = (g2 - baseline[:, None]) / np.where(contrast > 0, contrast, np.nan)[:, None]
    target = np.exp(-1.0)
    below = ok & (norm < target)
    has = below.any(1) & (contrast > 0)
    rows = np.arange(g2.shape[0])
    i = np.argmax(below, axis=1)
    # the last valid point before the crossing, for log-linear interpolation
    before = ok & (np.arange(g2.shape[1])[None, :] < i[:, None])
    has_prev = before.any(1)
    j = g2.shape[1] - 1 - np.argmax(before[:, ::-1], axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        y0, y1 = norm[rows, j], norm[rows, i]
        x0, x1 = np.log(tt[rows, j]), np.log(tt[rows, i])
        frac = np.where(y0 == y1, 0.0, np.clip((y0 - target) / (y0 - y1), 0.0, 1.0))
        t_cross = np.where(has_prev, np.exp(x0 + frac * (x1 - x0)), tt[rows, i])
    tau_est = np.where(has, 2.0 * t_cross, np.nan)
    # Never crossed: slow relative to the window.
    tau_est = np.where(np.isnan(tau_est), 2.0 * t_max, tau_est)
    return {
        "contrast": contrast,
        "tau": tau_est,
        "baseline": baseline,
        "t_min": t_min,
        "t_max": t_max,
    }


def shared_contrast_start(tau: Any, g2: Any, valid: Any | None = None) -> float:
    """One contrast start for many curves of one setup (the fit table's shown start).

    The speckle contrast does not depend on q, but each curve's early-delay estimate
    (:func:`estimate_starts`) is lowered by the decay before its first delays: the
    median over a file's curves was 0.03 beside fitted contrasts of 0.2 (issue 49), as
    most high-q curves have decayed by then. Only curves whose estimated tau is at least
    10x their first delay are used, each corrected for that decay by exp(2 t_head/tau),
    and those that never fell to 1/e but hold at least half the largest estimate (slower
    than the run); the median of those. Without such a curve, the largest positive
    estimate; NaN when none is positive.
    """
    g2a = np.atleast_2d(np.asarray(g2, dtype=np.float64))
    va = np.isfinite(g2a) if valid is None else np.atleast_2d(np.asarray(valid, dtype=bool))
    est = estimate_starts(tau, g2a, va)
    c, t, t0 = est["contrast"], est["tau"], est["t_min"]
    tt = np.broadcast_to(np.asarray(tau, dtype=np.float64), g2a.shape)
    # the delay of the head estimate: the median delay of the first 3 valid points
    head_t = _valid_median(np.where(va, tt, 0.0), va & (tt > 0), True, 3)
    pos = np.isfinite(c) & (c > 0)
    if not pos.any():
        return float("nan")
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        # a curve that never fell to 1/e has tau = 2 t_max: noise about the baseline
        # unless it holds at least half the largest estimate (a decay slower than the run)
        crossed = np.isfinite(t) & (t < 2.0 * est["t_max"])
        held = ~crossed & (c >= 0.5 * c[pos].max())
        # the 1/e crossing of a curve scaled by its head value lies tau/2 after the
        # head, so the estimate is tau + 2 t_head
        t = t - 2.0 * head_t
        slow = pos & ((crossed & (t >= 10.0 * t0)) | held)
        corrected = np.where(crossed, c * np.exp(2.0 * head_t / t), c)
    if slow.any():
        return float(np.median(corrected[slow]))
    return float(c[pos].max())


def default_params(
    model: G2Model | str,
    tau: Any,
    g2: Any,
    valid: Any | None = None,
) -> dict[str, ParamSpec]:
    """Data-driven start values and bounds for every parameter of ``model``.

    Parameters
    ----------
    model : G2Model or str
    tau : (T,) or (B, T) float64
        Delays in s.
    g2 : (T,) or (B, T) float64
    valid : same shape as ``g2``, bool, optional
        Usable points (default: finite ``g2``).

    Returns
    -------
    dict name -> ParamSpec
        Values are (B,) arrays (floats when ``g2`` is 1-D). Bounds: contrast
        [0, max(1, 2 c0)]; tau in [t_min/10, t_max*10] of the valid delays; stretch
        [0.2, 2] (fixed at 1 except for ``stretched``); fraction [0, 1]; baseline
        [min(0.8, b0-0.1), max(1.2, b0+0.1)]. For ``auto`` only contrast and baseline
        (shared by every candidate).
    """
    model = G2Model.parse(model)
    if model is G2Model.AUTO:
        # the parameters every candidate shares (a user's setting applies to all)
        both = default_params(G2Model.SINGLE, tau, g2, valid)
        return {"contrast": both["contrast"], "baseline": both["baseline"]}
    g2a = np.asarray(g2, dtype=np.float64)
    one_d = g2a.ndim == 1
    g2a = np.atleast_2d(g2a)
    if valid is None:
        valid = np.isfinite(g2a)
    va = np.atleast_2d(np.asarray(valid, dtype=bool))
    est = estimate_starts(tau, g2a, va)
    t_min = np.where(np.isfinite(est["t_min"]), est["t_min"], 1e-6)
    t_max = np.where(np.isfinite(est["t_max"]), est["t_max"], 1.0)
    t_max = np.maximum(t_max, t_min)
    tau_lo, tau_hi = t_min / 10.0, t_max * 10.0
    c0 = np.where(np.isfinite(est["contrast"]), est["contrast"], 0.1)
    c_hi = np.maximum(1.0, 2.0 * c0)
    c0 = np.clip(c0, 1e-3, c_hi)
    b0 = np.where(np.isfinite(est["baseline"]), est["baseline"], 1.0)
    b_lo = np.minimum(0.8, b0 - 0.1)
    b_hi = np.maximum(1.2, b0 + 0.1)
    t0 = np.where(np.isfinite(est["tau"]), est["tau"], np.sqrt(t_min * t_max))
    t0 = np.clip(t0, tau_lo, tau_hi)

    def out(x: Any) -> Any:
        x = np.asarray(x, dtype=np.float64)
        return float(x[0]) if one_d else x

    specs: dict[str, ParamSpec] = {}
    specs["contrast"] = ParamSpec("contrast", out(c0), 0.0, out(c_hi))
    if model is G2Model.DOUBLE:
        specs["tau1"] = ParamSpec("tau1", out(np.clip(t0 / 4.0, tau_lo, tau_hi)), out(tau_lo),
                                  out(tau_hi))
        specs["stretch1"] = ParamSpec("stretch1", 1.0, 0.2, 2.0, fixed=True)
        specs["tau2"] = ParamSpec("tau2", out(np.clip(t0 * 4.0, tau_lo, tau_hi)), out(tau_lo),
                                  out(tau_hi))
        specs["stretch2"] = ParamSpec("stretch2", 1.0, 0.2, 2.0, fixed=True)
        specs["fraction"] = ParamSpec("fraction", 0.5, 0.0, 1.0)
    else:
        specs["tau"] = ParamSpec("tau", out(t0), out(tau_lo), out(tau_hi))
        if model is not G2Model.SINGLE_AVGCORR:
            specs["stretch"] = ParamSpec(
                "stretch", 1.0, 0.2, 2.0, fixed=model is not G2Model.STRETCHED
            )
    specs["baseline"] = ParamSpec("baseline", out(b0), out(b_lo), out(b_hi))
    return {name: specs[name] for name in MODEL_PARAMS[model]}
