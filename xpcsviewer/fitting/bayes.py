"""Bayesian g2 fits with NumPyro NUTS: all q-bins of one file in one sampling run.

The models are the least-squares ones (same parameter names and meaning, see
:mod:`xpcsviewer.fitting.models`), written as one vectorised NumPyro model with
independent per-bin parameters under a ``bins`` plate. Priors (per bin):

- tau, tau1: log-uniform over [t_min/10, t_max*10] of the bin's valid delays
  (the least-squares bounds); double: (log tau1, log tau2) flat on the ordered box
  log lo < log tau1 < log tau2 < log hi (no label switching);
- contrast ~ U(0, c_max), c_max = the least-squares upper bound (1 unless the data
  show more), sampled sheared by the decay until the first delay (same prior,
  straighter posterior; see ``g2_model``); baseline ~ Normal(1,
  0.1); stretch ~ U(lower, upper) (0.2-2 by default); fraction ~ U(0, 1); fixed
  parameters are constants;
- likelihood: Normal(model, s * g2_err) on the points the least squares uses, with
  the stated noise scale s = sqrt(max(1, chi2_red)) of the least-squares optimum, so
  that posterior widths match the least-squares errors when the scatter exceeds the
  stated errors (chi2_red > 1).

Only bins where least squares found a decay with a relaxation time are sampled
(:data:`SAMPLED_LSQ`, :func:`to_sample`), each with its least-squares model (one run
per model for ``auto``); the others keep the least-squares status. Chains start at
the least-squares optimum, itself from the global grid start (``init_to_value``), and
are sampled in blocks through the post-warm-up state so that
progress and cancellation work between blocks. Each bin gets a status from the
sampler diagnostics (split r-hat, ESS bulk/tail >= 100 per chain, divergences, BFMI)
and the same physical checks as the least squares (:mod:`xpcsviewer.fitting.status`);
bins short of ESS or r-hat get one round of more draws (``extend``).

This module holds :func:`fit_g2_bayes` and what it decides (bins, starts, priors, the
extension round, merging the models' runs); the model is in
:mod:`~xpcsviewer.fitting.bayes_model`, the samplers in
:mod:`~xpcsviewer.fitting.bayes_run` (given a :mod:`~xpcsviewer.fitting.bayes_problem`
per run), the result in
:mod:`~xpcsviewer.fitting.bayes_result` and the statuses in
:mod:`~xpcsviewer.fitting.bayes_status`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from xpcsviewer.backends import get_backend

# The JAX backend switches x64 on (and checks it) before NumPyro creates any array.
get_backend("jax")

from xpcsviewer.fitting.bayes_diagnostics import (  # noqa: E402
    CONVERGENCE,
    bfmi,
    ess_bulk,
    ess_min,
    ess_tail,
)
from xpcsviewer.fitting.bayes_diffusion import (  # noqa: E402
    DiffusionBayesResult,
    diffusion_model,
    fit_diffusion_joint_bayes,
)
from xpcsviewer.fitting.bayes_model import (  # noqa: E402
    SHEAR_SITE,
    TAU2_SITE,
    _log_g1,
    _sheared,
    g2_model,
)
from xpcsviewer.fitting.bayes_problem import _Problem, _Run  # noqa: E402
from xpcsviewer.fitting.bayes_result import BayesFitResult  # noqa: E402
from xpcsviewer.fitting.bayes_run import (  # noqa: E402
    _run_joint,
    _run_per_bin_chunks,
    _summarise,
    nuts_devices,
)
from xpcsviewer.fitting.bayes_status import _bayes_statuses  # noqa: E402
from xpcsviewer.fitting.lsq import G2FitResult, fit_g2, usable_errors  # noqa: E402
from xpcsviewer.fitting.models import (  # noqa: E402
    LOG_PARAMS,
    G2Model,
    ParamSpec,
    default_params,
    model_param_names,
)
from xpcsviewer.fitting.spec import FitSpec, SamplerSpec  # noqa: E402
from xpcsviewer.fitting.status import TAU_REL_ERR_MAX, FitStatus  # noqa: E402
from xpcsviewer.progress import CancelToken, ProgressCallback, report  # noqa: E402

__all__ = [
    "CONVERGENCE",
    "SAMPLED_LSQ",
    "SHEAR_SITE",
    "TAU2_SITE",
    "BayesFitResult",
    "DiffusionBayesResult",
    "bfmi",
    "diffusion_model",
    "ess_bulk",
    "ess_tail",
    "fit_diffusion_joint_bayes",
    "fit_g2_bayes",
    "g2_model",
    "to_sample",
]


#: Least-squares statuses of the bins NUTS samples: a decay beats a constant and the
#: fit gives a relaxation time, though maybe unresolved, on a bound or misfitting. An
#: ``unresolved`` bin only where its times have no one-sided limit and errors below
#: ``TAU_REL_ERR_MAX`` (50 %): otherwise its posterior is as wide (NUTS calls it
#: unresolved too) and runs towards a prior edge, where on the real files and the demo
#: those bins had nearly all divergences and r-hat up to 3.6. ``poor_fit`` (scatter
#: beyond 5x the stated errors), ``no_decay`` and ``failed`` keep their status too.
SAMPLED_LSQ = ("converged", "unresolved", "at_bound", "misfit")
#: Sampling order of the models of an automatic fit (one sampling run each).
MODEL_ORDER = (G2Model.SINGLE, G2Model.SINGLE_AVGCORR, G2Model.STRETCHED, G2Model.DOUBLE)
#: What :func:`fit_g2_bayes` is asked without ``fit`` / ``sampler``.
SINGLE = FitSpec(model="single")
NUTS_DEFAULTS = SamplerSpec()


def fit_g2_bayes(
    tau: Any,
    g2: Any,
    g2_err: Any,
    valid: Any | None = None,
    *,
    fit: FitSpec = SINGLE,
    sampler: SamplerSpec = NUTS_DEFAULTS,
    init: G2FitResult | None = None,
    aux: tuple | None = None,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> BayesFitResult:
    """NUTS posterior of B g2 curves (all q-bins of one file), one sampling run per model.

    Only the bins where least squares found a decay with a relaxation time are
    sampled (:func:`to_sample`; all with ``sample_all``); the others keep the
    least-squares status, with the reason "not sampled: ...". May run off the main
    thread; checks ``cancel`` between warm-up
    and each block of ``block_size`` draws (raises :class:`xpcsviewer.progress.Cancelled`).

    Parameters
    ----------
    tau : (T,) s
    g2, g2_err, valid : (B, T)
    fit : FitSpec
        ``model`` ("single" unless asked) {"single", "stretched", "double",
        "single_avgcorr", "auto"}: ``auto`` samples each bin with the model the least
        squares chose for it (``init``'s per-bin models), one sampling run per model.
        ``params``: bounds (prior ranges) and fixed values, as for ``fit_g2``;
        ``t_range``: (lo, hi) s, the delays fitted. ``overrides`` must be resolved into
        ``params`` first (:func:`~xpcsviewer.fitting.block_fits.apply_overrides`);
        ValueError otherwise.
    sampler : SamplerSpec
        The NUTS settings, below.
    init : G2FitResult, optional
        Least-squares fit of ``model`` to start the chains from and to choose the bins
        (and for ``auto`` their models); computed when None.
    aux : (m (T,), dt), for ``single_avgcorr`` (and ``auto``, where it may be chosen)

    Settings of ``sampler`` (:class:`~xpcsviewer.fitting.spec.SamplerSpec`):

    num_warmup, num_samples, num_chains : int
        Draws per chain; chains run in parallel when there is a device per chain
        (the host CPU devices, see :func:`~xpcsviewer.fitting.bayes_devices.nuts_devices`),
        otherwise vectorised on one device.
    seed : int
        PRNG seed; the same seed and data give the same draws.
    block_size : int
        Draws per block between progress reports.
    chain_method : {"auto", "parallel", "vectorized"}
    device : {"auto", "cpu", "gpu"}
        Where the chains run (:func:`~xpcsviewer.fitting.bayes_devices.nuts_devices`): the
        host CPU devices unless the GPU is asked for (or, for ``auto``, chosen by the
        whole-job router).
    sampler.sampler : {"per_bin", "joint"}
        ``per_bin`` (default): NUTS vmapped over bins and chains, each bin with its own
        step size and dense mass matrix, through two compiled programs (start, block).
        ``joint``: all bins as one NumPyro model through ``MCMC`` (``dense_mass``
        applies there).
    extend : bool
        ``per_bin`` only: bins the least squares calls converged that miss only the
        ESS or r-hat gate get one round of more draws (see ``draws_per_chain``).
    sample_all : bool
        Sample every bin, whatever its least-squares status (for comparisons).

    Returns
    -------
    BayesFitResult
        Posterior summaries NaN for bins not sampled (``sampled``).
    """
    if fit.overrides:
        raise ValueError("fit_g2_bayes takes fit.params, not fit.overrides: resolve them "
                         "first (block_fits.apply_overrides)")
    model, params, t_range = G2Model.parse(fit.model), fit.params, fit.t_range
    tau = np.asarray(tau, dtype=np.float64).ravel()
    g2 = np.atleast_2d(np.asarray(g2, dtype=np.float64))
    err = np.atleast_2d(np.asarray(g2_err, dtype=np.float64))
    valid = np.ones(g2.shape, bool) if valid is None else np.atleast_2d(np.asarray(valid, bool))
    with np.errstate(invalid="ignore"):
        mask = valid & np.isfinite(g2) & (np.isfinite(tau) & (tau > 0))[None, :]
    if t_range is not None:
        lo_t, hi_t = sorted(float(v) for v in t_range)
        mask &= ((tau >= lo_t) & (tau <= hi_t))[None, :]
    sigma0, mask, weighted = usable_errors(err, mask)
    n_b = g2.shape[0]
    report(progress, cancel, 0, 1, "least-squares start")
    if init is None:
        init = fit_g2(tau, g2, err, mask, model, params=params, aux=aux,
                      backend=get_backend("jax"))
    if init.model is not model and not (model is G2Model.AUTO and init.models is None):
        raise ValueError(f"init is a fit of {init.model.value!r}, not {model.value!r}")
    if sampler.sampler not in ("per_bin", "joint"):
        raise ValueError(f"sampler must be 'per_bin' or 'joint', not {sampler.sampler!r}")
    row_models = init.model_names()
    sampled = np.ones(n_b, bool) if sampler.sample_all else to_sample(init)
    # The stated noise scale: posterior widths comparable with the least-squares
    # errors when the scatter exceeds the stated errors.
    chi2_lsq = np.asarray(init.chi2_red, float)
    with np.errstate(invalid="ignore"):
        s2 = np.where(weighted, np.fmax(1.0, chi2_lsq), chi2_lsq)
    noise_scale = np.sqrt(np.where(np.isfinite(s2) & (s2 > 0), s2, 1.0))
    groups = [(m, np.flatnonzero(sampled & (row_models == m.value))) for m in MODEL_ORDER]
    groups = [(m, r) for m, r in groups if r.size]
    n_s = sum(r.size for _, r in groups)
    devices = nuts_devices(sampler.num_chains, sampler.device,
                           chain_method=sampler.chain_method,
                           work=n_s * g2.shape[1] * sampler.draws * sampler.num_chains,
                           steps=sampler.draws)
    run = _Run(sampler, tuple(devices))
    parts = []
    for m, rows in groups:
        if m is G2Model.SINGLE_AVGCORR and aux is None:
            raise ValueError("model 'single_avgcorr' needs aux=(m per delay, frame time)")
        base = sum(r.size for r, _ in parts)

        def sub_progress(d, t, msg="", _base=base, _n=rows.size, _m=m):
            if len(groups) == 1:
                progress(d, t, msg)
            else:  # one bar over the models' runs, shared by their bins
                frac = (_base + _n * (d / t if t else 0.0)) / n_s
                progress(int(1000 * frac), 1000, f"{_m.value}, {_n} bins: {msg}")

        bins = _Bins(m, tau, g2[rows], sigma0[rows], mask[rows], noise_scale[rows],
                     init.select(rows), _spec_rows(params, rows, n_b),
                     aux if m is G2Model.SINGLE_AVGCORR else None)
        res = _fit_model(bins, run.seeded(int(sampler.seed) + 7907 * MODEL_ORDER.index(m)),
                         sub_progress if progress is not None else None, cancel)
        parts.append((rows, res))
    return _merge(model, parts, init, sampled, noise_scale, run, aux)


@dataclass(frozen=True, eq=False)  # arrays: no value equality
class _Bins:
    """One model's bins as :func:`_fit_model` samples them (arrays (B, T) or (B,) of
    those bins); ``aux`` only where the model uses it (the compiled programs are keyed
    by it)."""

    model: G2Model
    tau: np.ndarray
    g2: np.ndarray
    sigma0: np.ndarray
    mask: np.ndarray
    noise_scale: np.ndarray
    init: G2FitResult
    params: dict[str, ParamSpec] | None
    aux: tuple | None


def to_sample(init: G2FitResult) -> np.ndarray:
    """(B,) bool: the bins NUTS samples, from their least-squares fit (see
    :data:`SAMPLED_LSQ`)."""
    lsq = np.array([getattr(s, "value", str(s)) for s in init.status], dtype=object)
    limit = np.isfinite(init.tau_lower_limit) | np.isfinite(init.tau_upper_limit)
    rel = np.zeros(lsq.shape)  # the worst relative error of the bin's times
    for n in LOG_PARAMS & set(init.params):
        p, e = np.asarray(init.params[n], float), np.asarray(init.errors[n], float)
        with np.errstate(all="ignore"):
            r = np.where(np.isfinite(e) & (p > 0), e / p, np.inf)
        rel = np.fmax(rel, np.where(np.isfinite(p), r, 0.0))  # NaN: not the bin's model
    loose = limit | ~(rel < TAU_REL_ERR_MAX)
    return np.isin(lsq, SAMPLED_LSQ) & ~((lsq == "unresolved") & loose)


def _spec_rows(params: dict | None, rows: np.ndarray, n_b: int) -> dict | None:
    """The ParamSpecs of some curves (per-curve arrays indexed, scalars kept)."""
    if params is None:
        return None
    from dataclasses import replace

    def pick(v):
        a = np.asarray(v)
        return a[rows] if a.ndim == 1 and a.size == n_b and n_b > 1 else v

    return {n: replace(s, value=pick(s.value), lower=pick(s.lower), upper=pick(s.upper))
            for n, s in params.items()}


def _merge(model, parts, init, sampled, noise_scale, run: _Run, aux) -> BayesFitResult:
    """One result over all bins from the models' runs; bins not sampled keep the
    least-squares status (and chi2_red and limits), their posterior summaries NaN."""
    spec = run.spec
    num_chains, num_samples = spec.num_chains, spec.num_samples
    names = model_param_names(model)
    n_b = sampled.shape[0]
    stats = [{n: np.full(n_b, np.nan) for n in names} for _ in range(8)]
    mean, std, med, lo, hi, rh, eb, et = stats
    samples = {n: np.full((num_chains, num_samples, n_b), np.nan) for n in names}
    div = np.zeros(n_b, np.int64)
    bf = np.full((num_chains, n_b), np.nan)
    conv = np.zeros(n_b, bool)
    used = np.zeros(n_b, bool)
    draws = np.zeros(n_b, np.int64)
    lsq = [getattr(s, "value", str(s)) for s in init.status]
    status = np.array([FitStatus(s) for s in lsq], dtype=object)
    detail = np.array([f"not sampled: {d}" if d else f"not sampled: least squares {s}"
                       for s, d in zip(lsq, init.detail, strict=True)], dtype=object)
    chi2 = np.asarray(init.chi2_red, float).copy()
    lo_lim = np.asarray(init.tau_lower_limit, float).copy()
    hi_lim = np.asarray(init.tau_upper_limit, float).copy()
    limit_name = np.array(init.limit_name, dtype=object).copy()
    fixed_seen: dict[str, list[bool]] = {n: [] for n in names}
    steps = []
    for rows, r in parts:
        for n in r.param_names:
            for dst, src in zip(stats, (r.mean, r.std, r.median, r.hdi_low, r.hdi_high,
                                        r.r_hat, r.ess_bulk, r.ess_tail), strict=True):
                dst[n][rows] = src[n]
            samples[n][:, :, rows] = r.samples[n]
            fixed_seen[n].append(bool(r.fixed.get(n, False)))
        div[rows] = r.divergences_per_bin
        bf[:, rows] = r.bfmi
        conv[rows] = r.converged
        used[rows] = r.used_bins
        draws[rows] = r.draws_per_chain
        status[rows], detail[rows], chi2[rows] = r.status, r.detail, r.chi2_red
        lo_lim[rows], hi_lim[rows] = r.tau_lower_limit, r.tau_upper_limit
        limit_name[rows] = r.limit_name
        steps.append((rows.size, r.mean_tree_steps))
    fixed = {n: (all(v) if v else bool(init.fixed.get(n, False))) for n, v in fixed_seen.items()}
    n_steps = sum(k for k, _ in steps)
    return BayesFitResult(
        model=model, mean=mean, std=std, median=med, hdi_low=lo, hdi_high=hi, r_hat=rh,
        ess_bulk=eb, ess_tail=et, divergences=sum(r.divergences for _, r in parts),
        bfmi=bf, converged=conv,
        samples=samples, num_chains=num_chains, num_samples=num_samples,
        num_warmup=spec.num_warmup, seed=int(spec.seed), chain_method=run.method, aux=aux,
        fixed=fixed,
        used_bins=used,
        mean_tree_steps=(sum(k * s for k, s in steps) / n_steps) if n_steps else float("nan"),
        sampler=spec.sampler, divergences_per_bin=div, status=status, detail=detail,
        noise_scale=noise_scale, chi2_red=chi2, tau_lower_limit=lo_lim,
        tau_upper_limit=hi_lim, draws_per_chain=draws,
        models=np.array([G2Model(m) for m in init.model_names()], dtype=object)
        if model is G2Model.AUTO else None,
        sampled=sampled.copy(), limit_name=limit_name,
    )


def _problem(bins: _Bins) -> _Problem:
    """The priors, start values and arrays of one model's sampling run."""
    model, tau, g2, mask, init, params = (bins.model, bins.tau, bins.g2, bins.mask,
                                          bins.init, bins.params)
    names = model_param_names(model)
    n_b = g2.shape[0]
    specs = default_params(model, tau, g2, mask)
    if params is not None:
        specs.update({n: s for n, s in params.items() if n in specs})
    lower = {n: np.broadcast_to(np.asarray(specs[n].lower, float), (n_b,)).copy() for n in names}
    upper = {n: np.broadcast_to(np.asarray(specs[n].upper, float), (n_b,)).copy() for n in names}
    fixed = {
        n: np.broadcast_to(np.asarray(specs[n].value, float), (n_b,)).copy()
        for n in names
        if specs[n].fixed
    }
    # Start values strictly inside the prior support.
    start: dict[str, np.ndarray] = {}
    for n in names:
        if n in fixed:
            continue
        v = np.asarray(init.params[n], float)
        v = np.where(np.isfinite(v), v, np.broadcast_to(np.asarray(specs[n].value, float), (n_b,)))
        lo, hi = lower[n], upper[n]
        if n == "contrast":
            lo = np.zeros(n_b)
        if n != "baseline":
            pad = 1e-6 * (hi - lo) if n not in LOG_PARAMS else 0.0
            if n in LOG_PARAMS:
                v = np.exp(np.clip(np.log(v), np.log(lo) + 1e-6, np.log(hi) - 1e-6))
            else:
                v = np.clip(v, lo + pad, hi - pad)
        start[n] = v
    if model is G2Model.DOUBLE and "tau1" not in fixed and "tau2" not in fixed:
        # Order the components (tau1 < tau2) like the prior does.
        swap = start["tau1"] > start["tau2"]
        start["tau1"], start["tau2"] = (np.where(swap, start["tau2"], start["tau1"]),
                                        np.where(swap, start["tau1"], start["tau2"]))
        if "fraction" in start:
            start["fraction"] = np.where(swap, 1.0 - start["fraction"], start["fraction"])
        if "stretch1" in start and "stretch2" in start:
            start["stretch1"], start["stretch2"] = (
                np.where(swap, start["stretch2"], start["stretch1"]),
                np.where(swap, start["stretch1"], start["stretch2"]))
        room = np.log(upper["tau2"]) - np.log(start["tau1"])
        with np.errstate(all="ignore"):
            pos = np.log(start["tau2"] / start["tau1"]) / room
        start[TAU2_SITE] = np.clip(np.nan_to_num(pos, nan=0.5), 1e-6, 1.0 - 1e-6)
        start["tau2"] = start["tau1"] * np.exp(start[TAU2_SITE] * room)
    init_values: dict[str, Any] = {}
    for n, v in start.items():
        if n == TAU2_SITE:
            init_values[n] = np.asarray(v, float)
        elif n in LOG_PARAMS:
            if n == "tau2" and TAU2_SITE in start:
                continue
            init_values[f"log_{n}"] = np.log(v)
        else:
            init_values[n] = np.asarray(v, float)

    sigma = bins.sigma0 * bins.noise_scale[:, None]
    y = np.where(mask, g2, 0.0)
    aux = bins.aux
    aux_j = None if aux is None else (np.asarray(aux[0], np.float64), float(aux[1]))
    t_safe = np.where(np.isfinite(tau) & (tau > 0), tau, 1.0)
    t_ref = np.min(np.where(mask, t_safe[None, :], np.inf), axis=1)
    t_ref = np.where(np.isfinite(t_ref), t_ref, np.min(t_safe))
    if _sheared(model, fixed):
        c_max = upper["contrast"]
        z0 = np.log(start["contrast"] / (c_max - start["contrast"]))
        vals0 = {**{n: np.asarray(v) for n, v in fixed.items()}, **start}
        logs0 = {n: np.log(vals0[n]) for n in names if n in LOG_PARAMS}
        init_values.pop("contrast")
        init_values[SHEAR_SITE] = z0 + 2.0 * _log_g1(model, t_ref, vals0, logs0, np)
    unit_stretch = bool("stretch" in fixed and np.all(np.asarray(fixed["stretch"]) == 1.0))
    return _Problem(t_safe, y, sigma, mask, model, lower, upper, fixed, aux_j, unit_stretch,
                    init_values, t_ref)


class _Phases:
    """One bar over the sampling and its extension round that never goes back: the
    sampling fills the first :data:`SAMPLING_SHARE`, the extension round (when there
    is one) the rest."""

    def __init__(self, progress: ProgressCallback) -> None:
        self.progress, self.lo, self.hi, self.top = progress, 0.0, SAMPLING_SHARE, 0

    def __call__(self, done: int, total: int, message: str = "") -> None:
        f = self.lo + (self.hi - self.lo) * (done / total if total else 0.0)
        self.top = max(self.top, int(1000 * f))
        self.progress(self.top, 1000, message)


#: Share of a sampling run's bar before a possible extension round.
SAMPLING_SHARE = 0.85


def _fit_model(bins: _Bins, run: _Run, progress, cancel) -> BayesFitResult:
    """One model's sampling run over its bins."""
    phases = None if progress is None else _Phases(progress)
    progress = phases
    p = _problem(bins)
    model, init, noise_scale, spec = bins.model, bins.init, bins.noise_scale, run.spec
    num_chains, num_samples, sampler = spec.num_chains, spec.num_samples, spec.sampler
    names, fixed, n_b = model_param_names(model), p.fixed, p.y.shape[0]
    if sampler == "joint":
        draws, diverging, energies, steps = _run_joint(p, run, progress, cancel)
    elif sampler == "per_bin":
        (draws, diverging, energies, steps), resume = _run_per_bin_chunks(
            p, run, progress, cancel)
    else:
        raise ValueError(f"sampler must be 'per_bin' or 'joint', not {sampler!r}")
    samples: dict[str, np.ndarray] = {}
    for n in names:
        if n in fixed:
            v = np.asarray(fixed[n])
            samples[n] = np.broadcast_to(v, (num_chains, num_samples, n_b)).copy()
        else:
            samples[n] = draws[n][:, :num_samples].copy()
    div_bin = np.sum(diverging[:, :num_samples], axis=(0, 1)).astype(np.int64)  # (B,)
    bf = bfmi(energies[:, :num_samples])  # (C, B)

    def summary(more_draws: dict | None = None) -> BayesFitResult:
        res = _summarise(model, samples, div_bin, bf, fixed, init, run, bins.aux)
        if more_draws:
            res.draws_per_chain[list(more_draws)] = list(more_draws.values())
        res.mean_tree_steps = float(np.mean(steps))
        res.sampler = sampler
        res.noise_scale = noise_scale
        _bayes_statuses(res, init, p, bins.sigma0)
        return res

    res = summary()
    more = _short_of_draws(res, init) if sampler == "per_bin" and spec.extend else {}
    if more:
        # One extension round: the chains of these bins go on from where they stopped
        # (same step size and mass matrix) to m x the draws, thinned by m: the stored
        # draws keep num_samples per chain and about the ESS of the m-fold run.
        m = max(more.values())
        bins_x = sorted(more)
        if phases is not None:
            phases.lo, phases.hi = SAMPLING_SHARE, 1.0
        report(progress, cancel, 0, 1, f"{len(bins_x)} bins short of ESS "
               f"{ess_min(num_chains):.0f}: {(m - 1) * num_samples} more draws per chain")
        extra = resume(bins_x, (m - 1) * run.n_blocks, run.per_block)
        for i, b in enumerate(bins_x):
            for n in names:
                if n not in fixed:
                    both = np.concatenate([draws[n][:, :, b], extra[0][n][:, :, i]], axis=1)
                    samples[n][:, :, b] = both[:, m - 1::m][:, :num_samples]
            div_bin[b] = int(np.sum(diverging[:, :, b]) + np.sum(extra[1][:, :, i]))
            bf[:, b] = bfmi(np.concatenate([energies[:, :, b], extra[2][:, :, i]], axis=1))
        res = summary(dict.fromkeys(bins_x, m * num_samples))
    if phases is not None:
        phases.lo = phases.hi = 1.0
        phases(1, 1, "sampled")
    return res


#: Most draws of the extension round, as a multiple of the draws asked for.
EXTEND_MAX = 4
#: Least-squares statuses of the bins the extension round may sample longer.
EXTEND_LSQ = ("converged", "unresolved")


def _short_of_draws(res: BayesFitResult, init: G2FitResult) -> dict[int, int]:
    """Bins to sample longer: bin -> m (m x the draws asked for, thinned by m).

    Those the least squares calls converged or unresolved (:data:`EXTEND_LSQ`) whose
    posterior fails only the ESS or r-hat gate (more draws cannot cure divergences or a
    low BFMI), with m set so that the ESS (linear in the draws) reaches 1.25 x the
    gate; at most :data:`EXTEND_MAX`.
    """
    diag = res.diagnostics()
    target = ess_min(res.num_chains)
    lsq = [getattr(v, "value", str(v)) for v in init.status]
    out: dict[int, int] = {}
    for b in range(res.converged.shape[0]):
        if (getattr(res.status[b], "value", str(res.status[b])) != "failed"
                or lsq[b] not in EXTEND_LSQ
                or diag["divergences"][b] > CONVERGENCE["divergences_max"]
                or not diag["bfmi"][b] >= CONVERGENCE["bfmi_min"]):
            continue
        ess = min(diag["ess_bulk"][b], diag["ess_tail"][b])
        if not ess > 0:
            continue
        out[b] = int(min(EXTEND_MAX, max(2, math.ceil(1.25 * target / ess))))
    return out
