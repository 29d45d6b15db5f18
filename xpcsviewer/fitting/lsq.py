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

This module holds :func:`fit_g2`: the model choice and the assembly of the statuses
and the result. The numerics of one model's fits are in
:mod:`xpcsviewer.fitting.lsq_core`, the result class in
:mod:`xpcsviewer.fitting.lsq_result`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from xpcsviewer.fitting.adequacy import (
    aicc,
    choose_models,
    misfit_region,
    strongest_run,
)
from xpcsviewer.fitting.lm import CODE_MAX_ITER, lm_solve_batch
from xpcsviewer.fitting.lsq_core import (
    _Checks,
    _Core,
    _Data,
    _measure,
    _model_curve,
    _nan,
    _prepare,
    _solve,
    _tau_mean,
    bucket_delays,
    in_parallel,
    usable_errors,
)
from xpcsviewer.fitting.lsq_result import G2FitResult
from xpcsviewer.fitting.models import (
    LOG_PARAMS,
    G2Model,
    ParamSpec,
    model_param_names,
)
from xpcsviewer.fitting.status import (
    WINDOW_DROP,
    CurveFacts,
    FitStatus,
    bounds_hit,
    curve_status,
    early_status,
    misfit_text,
    preferred_tails,
    profile_limits,
    run_where,
    structured,
    wants_preferred,
)
from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = [
    "AUTO_CANDIDATES",
    "ERROR_SCALING",
    "FitStatus",
    "G2FitResult",
    "bucket_delays",
    "fit_g2",
    "lm_solve_batch",
    "usable_errors",
]

#: How the reported errors are scaled (said in every output).
ERROR_SCALING = "covariance errors x sqrt(chi2_red) where chi2_red > 1"
#: Candidates of ``model="auto"``, simplest first (``single_avgcorr`` joins after
#: ``single`` when the frame-averaging factors are given).
AUTO_CANDIDATES = (G2Model.SINGLE, G2Model.STRETCHED, G2Model.DOUBLE)


def _misfit_text(core: _Core, chk: _Checks, data: _Data, b: int) -> str:
    # where the strongest run of one sign lies on the fitted decay
    z = chk.runs_z[b]
    if not structured(z):  # the early scan saw it
        k = int(chk.early_k[b])
        t_k = data.t[b, np.flatnonzero(data.mask[b])[k - 1]] if k else float("nan")
        return misfit_text(z, "", chk.early_scan[b], k, t_k)
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
        where = run_where(misfit_region(shape), n_run, span.min(), span.max())
    return misfit_text(z, where)


def _finish(core: _Core, data: _Data, sel: np.ndarray, window_drop: int, max_iter: int,
            cancel: CancelToken | None, alternatives: Any) -> dict[str, Any]:
    """Checks and statuses of the curves ``sel`` (bool) of one model's fits.

    ``alternatives(rows, z) -> list of str`` gives the misfit reasons' tails.
    """
    n_b = core.p.shape[0]
    n_pts = data.n_points
    on_lo, on_hi = bounds_hit(core.x, core.lo_i, core.hi_i, core.free)
    to_top, to_bottom, lower_lim, upper_lim = profile_limits(
        core.prof.tau_grid, core.prof.profile, core.chi2, core.s_scale)
    with np.errstate(invalid="ignore"):
        t_min = np.where(data.mask, data.t, np.inf).min(axis=1)
    status = np.empty(n_b, dtype=object)
    detail = np.array([""] * n_b, dtype=object)
    facts: dict[int, CurveFacts] = {}
    early = {}
    # the residual tests come first: a large chi2_red is a poor fit only where the
    # residuals have structure (status.early_status)
    resid0, runs0 = core.runs(data)
    scan0, _ = data.scan(resid0, core.s_scale)
    for b in np.flatnonzero(sel):
        facts[b] = CurveFacts(
            n_pts=int(n_pts[b]), has_fit=core.has_fit[b], finite=core.finite[b],
            n_free=core.n_free, chi2_red=core.chi2_red[b], delta=core.delta[b],
            names=core.names, fixed=core.fixed, p=core.p[b], errors=core.errors[b],
            on_lo=on_lo[b], on_hi=on_hi[b], to_top=to_top[b], to_bottom=to_bottom[b],
            lower_limit=lower_lim[b], upper_limit=upper_lim[b], t_min=t_min[b],
            stopped=core.code[b] == CODE_MAX_ITER, max_iter=max_iter,
            window_drop=window_drop, runs_z=runs0[b], early_scan=scan0[b])
        early[b] = early_status(facts[b])
    rows = np.array([b for b, v in early.items() if v is None], dtype=np.int64)
    chk = _measure(core, data, rows, window_drop, max_iter, cancel)
    misfit = sorted(b for b in early
                    if wants_preferred(early[b], chk.runs_z[b], chk.early_scan[b]))
    tails = dict(zip(misfit, alternatives(np.array(misfit, np.int64), chk.runs_z), strict=True)) \
        if misfit else {}
    lim_lo, lim_hi = _nan(n_b), _nan(n_b)
    limit_name = np.array([""] * n_b, dtype=object)
    for b in np.flatnonzero(sel):
        f = replace(
            facts[b], runs_z=chk.runs_z[b], decay_left=chk.decay_left[b],
            t_last=chk.t_last[b], interval={n: v[b] for n, v in chk.interval.items()},
            interval2={n: v[b] for n, v in chk.interval2.items()},
            limit={n: v[b] for n, v in chk.limit.items()},
            window={n: v[b] for n, v in chk.window.items()},
            window_err={n: v[b] for n, v in chk.window_err.items()},
            early_scan=chk.early_scan[b],
            misfit=_misfit_text(core, chk, data, b) if b in tails else "",
            preferred=tails.get(b, ""))
        v = curve_status(f, early[b])
        status[b], detail[b] = v.status, v.why
        if v.status is FitStatus.UNRESOLVED and (np.isfinite(v.lower) or np.isfinite(v.upper)):
            lim_lo[b], lim_hi[b], limit_name[b] = v.lower, v.upper, v.limit_name

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


def _eligible(cores: dict, data: _Data, scores: dict, zs: dict, cands: list
              ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """AICc and structure z of the candidates as ``choose_models`` weighs them.

    A candidate with an excess at the first delays (early scan) counts as structured; a
    stretched fit with its exponent on a bound is no candidate where another model fits
    without structure (the bound, not the data, shapes it).
    """
    from xpcsviewer.fitting.status import RUNS_Z_MAX

    z_eff = {m: _structure_z(c, data, zs[m]) for m, c in cores.items()}
    sc = dict(scores)
    st = cores.get(G2Model.STRETCHED)
    if st is not None and not st.fixed[st.col("stretch")]:
        k = st.col("stretch")
        on_lo, on_hi = bounds_hit(st.x, st.lo_i, st.hi_i, st.free)
        stuck = on_lo[:, k] | on_hi[:, k]
        fits_else = np.zeros_like(stuck)
        for m in cands:
            if m is not G2Model.STRETCHED:
                zz = z_eff[m]
                fits_else |= np.isfinite(scores[m]) & ~(np.abs(zz) > RUNS_Z_MAX)
        sc[G2Model.STRETCHED] = np.where(stuck & fits_else, np.inf, scores[G2Model.STRETCHED])
    return {m.value: v for m, v in sc.items()}, {m.value: z for m, z in z_eff.items()}


def _tell_single(cores: dict, data: _Data, models: np.ndarray, detail: np.ndarray,
                 window_drop: int, max_iter: int, cancel: CancelToken | None) -> None:
    """Where ``auto`` chose a stretched fit whose tau is not determined, say what the
    single exponential on the same points gives (its verdict: a value or a limit)."""
    single = cores.get(G2Model.SINGLE)
    rows = np.array([m is G2Model.STRETCHED and str(d).startswith("stretched tau not")
                     for m, d in zip(models, detail, strict=True)], dtype=bool)
    if single is None or not rows.any():
        return
    out = _finish(single, data, rows, window_drop, max_iter, cancel, lambda r, z: [""] * r.size)
    k = single.col("tau")
    for b in np.flatnonzero(rows):
        st, why = out["status"][b], str(out["detail"][b])
        if st is FitStatus.CONVERGED:
            said = f"tau = {out['params'][b, k]:.3g} \u00b1 {out['errors'][b, k]:.2g} s (converged)"
        else:
            said = f"{st.value}: {why}" if why else st.value
        detail[b] = f"{detail[b]}; the single exponential on the same points: {said}"


def _structure_z(core: _Core, data: _Data, z: np.ndarray | None = None) -> np.ndarray:
    """The runs z of a model's fits, infinite where the first delays lie off the fit
    together (early scan): the structure the status rules see."""
    from xpcsviewer.fitting.status import EARLY_SCAN_MAX

    resid, z_runs = core.runs(data)
    scan, _ = data.scan(resid, core.s_scale)
    return np.where(scan > EARLY_SCAN_MAX, np.inf, z_runs if z is None else z)


def _candidates(aux: tuple | None) -> list[G2Model]:
    c = [G2Model.SINGLE]
    if aux is not None:
        c.append(G2Model.SINGLE_AVGCORR)
    return [*c, G2Model.STRETCHED, G2Model.DOUBLE]


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
    noise: Any = None,
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
    noise : (B, K, T) float64, optional
        Deviations of K independent parts of each curve's data from the whole (the
        pixel groups of an age cut), whose noise is correlated along the delays: the
        runs test, the early scan and AICc's count of independent points then follow
        the null the parts show (:func:`~xpcsviewer.fitting.adequacy.noise_calibration`),
        not white noise.

    Returns
    -------
    G2FitResult
    """
    from xpcsviewer.backends import get_backend

    model = G2Model.parse(model)
    if model is G2Model.SINGLE_AVGCORR and aux is None:
        raise ValueError("model 'single_avgcorr' needs aux=(m per delay, frame time)")
    be = backend if backend is not None else get_backend()
    data, _aux_b = _prepare(tau, g2, g2_err, valid, t_range, aux, be, device, noise)
    n_b = data.y.shape[0]
    auto = model is G2Model.AUTO
    cands = _candidates(aux) if auto else [model]
    total = 2 * len(cands) + 1
    report(progress, cancel, 0, total,
           f"fitting {n_b} curves ({model.value}): grid start and refinement")
    cores: dict[G2Model, _Core] = {}
    solved = in_parallel(
        [lambda m=m: _solve(m, data, params, not auto, max_iter, n_starts, cancel)
         for m in cands],
        lambda i, k: report(progress, cancel, 2 * k + 2, total, f"{cands[i].value} fitted"))
    for m, core in zip(cands, solved, strict=True):
        cores[m] = core
    n_pts = data.n_points
    scores = {m: aicc(np.where(c.has_fit & c.finite, c.chi2, np.nan), n_pts, c.n_free,
                      data.n_effective)
              for m, c in cores.items()}
    if auto:
        zs = {m: c.runs(data)[1] for m, c in cores.items()}
        sc_e, z_e = _eligible(cores, data, scores, zs, cands)
        chosen, margin = choose_models(sc_e, [m.value for m in cands], runs_z=z_e)
    else:
        zs = {}
        chosen, margin = np.zeros(n_b, np.int64), _nan(n_b)
        z_e = {}
    report(progress, cancel, total - 1, total, "checks and statuses")

    def alternatives_for(m: G2Model):
        def alt(rows: np.ndarray, z: np.ndarray) -> list[str]:
            # one set of adequacy tests behind every reason that names another model:
            # the runs test and the early scan, as the status rules read them
            if auto:
                others = [(o, scores[o][rows], z_e[o.value][rows]) for o in cands if o is not m]
            elif compare:
                sub = data.take(rows)
                others = []
                for o in _candidates(aux):
                    if o is m:
                        continue
                    c = _solve(o, sub, params, False, max_iter, n_starts, cancel)
                    sc = aicc(np.where(c.has_fit & c.finite, c.chi2, np.nan), sub.n_points,
                              c.n_free, sub.n_effective)
                    others.append((o, sc, _structure_z(c, sub)))
            else:
                return [""] * rows.size
            return preferred_tails(scores[m][rows], others)
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
    todo = [i for i in range(len(cands)) if (chosen == i).any()]
    finished = dict(zip(todo, in_parallel(
        [lambda i=i: _finish(cores[cands[i]], data, chosen == i, window_drop, max_iter, cancel,
                             alternatives_for(cands[i])) for i in todo]), strict=True))
    for i, m in enumerate(cands):
        core = cores[m]
        sel = chosen == i
        for k, n in enumerate(core.names):
            fixed_all[n].append(bool(core.fixed[k]))
        if not sel.any():
            continue
        out = finished[i]
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

    if auto:
        _tell_single(cores, data, models, detail, window_drop, max_iter, cancel)
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
