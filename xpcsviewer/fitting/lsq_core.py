"""The numerics of the least-squares fits, one model at a time, for every curve at once.

:class:`_Data` is the curves as the kernels see them (masked, delays padded on JAX);
:func:`_solve` gives one model's optimum (:class:`_Core`: grid start, batched LM,
covariance errors); :func:`_measure` the adequacy and stability measures the status
rules read (runs test, profile intervals, the refit without the last delays). Apart
from :mod:`xpcsviewer.fitting.lsq`, which chooses models and assembles statuses and
the result.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from xpcsviewer.fitting.adequacy import (
    calibrated_runs,
    early_scan,
    noise_calibration,
    runs_test,
)
from xpcsviewer.fitting.grid import grid_scan
from xpcsviewer.fitting.lm import lm_solve_batch
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
from xpcsviewer.fitting.status import LIMIT_DCHI2
from xpcsviewer.progress import CancelToken

__all__ = ["bucket_delays", "usable_errors"]


def _nan(n: int) -> np.ndarray:
    return np.full(n, np.nan)


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
    #: (B, 2) and (B, T): the residual tests' correlated null from independent parts of
    #: the data (adequacy.noise_calibration), or None: white noise
    runs_ref: np.ndarray | None = None
    scan_c: np.ndarray | None = None

    @property
    def n_points(self) -> np.ndarray:
        return self.mask.sum(axis=1)

    @property
    def n_effective(self) -> np.ndarray:
        """(B,) the fitted points, divided by the variance inflation of their sum where
        the noise is correlated (:attr:`scan_c` at the last fitted point)."""
        n = self.n_points.astype(np.float64)
        if self.scan_c is None:
            return n
        last = self.mask.shape[1] - 1 - np.argmax(self.mask[:, ::-1], axis=1)
        c = self.scan_c[np.arange(n.size), last]
        return np.where(self.mask.any(axis=1), n / np.maximum(c, 1.0), n)

    def take(self, rows: np.ndarray) -> _Data:
        aux = None if self.aux is None else (self.aux[0][rows], self.aux[1][rows])
        return _Data(self.t[rows], self.y[rows], self.sigma[rows], self.mask[rows],
                     self.weighted[rows], aux, self.be, self.dev,
                     None if self.runs_ref is None else self.runs_ref[rows],
                     None if self.scan_c is None else self.scan_c[rows])

    def with_mask(self, mask: np.ndarray) -> _Data:
        """The same curves fitted on ``mask``."""
        return _Data(self.t, self.y, self.sigma, mask, self.weighted, self.aux, self.be,
                     self.dev, self.runs_ref, self.scan_c)

    def scan(self, resid: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:func:`~xpcsviewer.fitting.adequacy.early_scan` against this data's null."""
        return early_scan(resid, self.mask, scale, self.scan_c)


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
        if data.runs_ref is not None:
            z = calibrated_runs(z, data.runs_ref)
        return r, np.where(self.has_fit & self.finite, z, np.nan)


def _model_curve(model: G2Model, data: _Data, p: np.ndarray) -> np.ndarray:
    # g2 of the fit at the curves' own delays, (B, T)
    pt = tuple(p[:, k : k + 1] for k in range(p.shape[1]))
    aux = None if data.aux is None else (data.aux[0], data.aux[1][:, None])
    with np.errstate(all="ignore"):
        return np.asarray(evaluate_model(model, data.t, pt, aux, np), dtype=np.float64)


def _prepare(tau, g2, g2_err, valid, t_range, aux, be, device, noise=None
             ) -> tuple[_Data, tuple | None]:
    from xpcsviewer.backends.device import default_placement, resolve_device

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
    dev = (default_placement(resolve_device(device, work=float(n_b * n_t), kind="lsq"))
           if be.name == "jax" else None)
    y = np.where(mask, g2, 0.0)
    t_safe = np.where(mask, tau, 1.0)  # padded / invalid delays may be NaN
    aux_b = None
    if aux is not None:
        aux_b = (
            np.broadcast_to(np.asarray(aux[0], np.float64), (n_b, n_t)).copy(),
            np.broadcast_to(np.asarray(aux[1], np.float64), (n_b,)).copy(),
        )
    sigma = np.where(mask, sigma, 1.0)
    runs_ref = scan_c = None
    if noise is not None:
        nz = np.asarray(noise, np.float64)
        if nz.ndim != 3 or nz.shape[0] != n_b or nz.shape[2] != n_t:
            raise ValueError(f"noise has shape {nz.shape}, expected ({n_b}, K, {n_t})")
        runs_ref, scan_c = noise_calibration(nz, sigma, mask)
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
            if scan_c is not None:
                scan_c = np.pad(scan_c, ((0, 0), (0, pad)), constant_values=1.0)
    return _Data(t_safe, y, sigma, mask, weighted, aux_b, be, dev, runs_ref, scan_c), aux_b


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
            raise ValueError(
                f"{names[k]} must be bounded away from 0 (got lower {lower[:, k].min()})")
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
    xs, cost_s, jac_s, it_s, code_s = lm_solve_batch(
        model, t, y, sigma, mask, x0, lo_i[curve_of], hi_i[curve_of], free, aux_b, max_iter,
        be, dev, cancel, rows=curve_of)
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
    window_err: dict[str, np.ndarray]  # name -> (B,) the refit's scaled error
    early_scan: np.ndarray  # (B,) adequacy.early_scan
    early_k: np.ndarray  # (B,) the first delays it sums


#: Threads of :func:`in_parallel` even on fewer cores: a solve's thread waits on XLA and
#: the GIL in turns, so four overlap better than two (an auto fit of 36 curves on 2
#: cores: 0.55 s instead of 0.63 s quiet, 1.42 s instead of 1.78 s beside six busy
#: processes, which the scheduler shares the cores with by thread).
MIN_THREADS = 4
#: True (see :func:`one_at_a_time`) while solves must run one after another.
_SERIAL: contextvars.ContextVar[bool] = contextvars.ContextVar("xpcs_serial_solves",
                                                              default=False)


@contextlib.contextmanager
def one_at_a_time() -> Iterator[None]:
    """Solves inside run in the calling thread, one after another (:func:`in_parallel`
    starts no threads): background compiles (the GUI's warm-up) then trace in one
    thread, and a user's job and the GUI thread wait on fewer holders of the GIL."""
    token = _SERIAL.set(True)
    try:
        yield
    finally:
        _SERIAL.reset(token)


def in_parallel(jobs: list, done: Any = None) -> list:
    """Run independent solves in threads, results in order. XLA runs outside the GIL,
    so independent batched solves (the candidate models of ``auto``, a model's tau
    profiles and its window refit) share the cores; each job keeps the caller's run
    configuration (a context variable). ``done(i, k)``: job i finished, the k-th."""
    import os
    from concurrent.futures import ThreadPoolExecutor, as_completed

    n = 1 if _SERIAL.get() else min(len(jobs), max(MIN_THREADS, os.cpu_count() or 1))
    if n <= 1:
        out = []
        for i, job in enumerate(jobs):
            out.append(job())
            if done is not None:
                done(i, i)
        return out
    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="xpcs-fit") as pool:
        futs = {pool.submit(contextvars.copy_context().run, job): i
                for i, job in enumerate(jobs)}
        for k, fut in enumerate(as_completed(futs)):
            fut.result()  # the first error (a cancel) is raised here
            if done is not None:
                done(futs[fut], k)
        return [f.result() for f in sorted(futs, key=futs.get)]


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
    window_err = {core.names[k]: _nan(n_b) for k in taus}
    scan, scan_k = data.scan(resid, core.s_scale)
    scan = np.where(core.has_fit & core.finite, scan, np.nan)
    out = _Checks(resid, z, left, t_last, interval, interval2, limit, window, window_err,
                  scan, scan_k)
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

    def profile(k: int) -> None:
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
        _, cost_k, _, _, _ = lm_solve_batch(
            core.model, sub.t, sub.y, sub.sigma, sub.mask, x0, lo_r, hi_r, free_k, aux_r,
            max_iter, be, dev, cancel, rows=rep)
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
    short = sub.with_mask(drop_last(sub.mask, window_drop))
    spec = (core.names, core.value[rows], core.lower[rows], core.upper[rows], core.fixed,
            core.is_log)

    def window_fit() -> _Core:
        return _solve(core.model, short, None, False, max_iter, 2, cancel, specs=spec)

    # each profile writes its own tau's rows; independent solves share the cores
    *_, w = in_parallel([lambda k=k: profile(k) for k in taus] + [window_fit])
    for k in taus:
        ok = w.has_fit & w.finite
        window[core.names[k]][rows] = np.where(ok, w.p[:, k], np.nan)
        window_err[core.names[k]][rows] = np.where(ok, w.errors[:, k], np.nan)
    return out

