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
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xpcsviewer.backends import get_backend

# The JAX backend switches x64 on (and checks it) before NumPyro creates any array.
get_backend("jax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpyro  # noqa: E402
import numpyro.distributions as dist  # noqa: E402
from numpyro.diagnostics import hpdi, split_gelman_rubin  # noqa: E402
from numpyro.infer import MCMC, NUTS, init_to_value  # noqa: E402

from xpcsviewer.fitting import numpyro_lock  # noqa: E402
from xpcsviewer.fitting.bayes_diagnostics import (  # noqa: E402
    CONVERGENCE,
    HDI_PROB,
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
from xpcsviewer.fitting.lsq import G2FitResult, fit_g2, usable_errors  # noqa: E402
from xpcsviewer.fitting.models import (  # noqa: E402
    LOG_PARAMS,
    G2Model,
    ParamSpec,
    default_params,
    evaluate_model,
    model_param_names,
)
from xpcsviewer.fitting.status import (  # noqa: E402
    CHI2_RED_MAX,
    CONTRAST_MAX,
    CONTRAST_SIGMAS,
    TAU_REL_ERR_MAX,
    FitStatus,
)
from xpcsviewer.progress import CancelToken, ProgressCallback, report  # noqa: E402

__all__ = [
    "CONVERGENCE",
    "SAMPLED_LSQ",
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

#: Posterior mass this close (in log tau) to a prior edge means the data do not bound
#: tau on that side: a one-sided limit is reported instead of a value.
EDGE_LOG_TAU = 0.5


def g2_model(
    t: Any,
    g2: Any = None,
    sigma: Any = None,
    mask: Any = None,
    *,
    model: G2Model,
    lower: dict[str, Any],
    upper: dict[str, Any],
    fixed: dict[str, Any],
    aux: tuple | None = None,
    unit_stretch: bool = False,
    t_ref: Any = None,
) -> None:
    """NumPyro model of B g2 curves with independent per-bin parameters.

    Parameters
    ----------
    t : (T,) s
    g2, sigma : (B, T) float64; g2 None for prior predictive
    mask : (B, T) bool
    model : G2Model
    lower, upper : dict name -> (B,) prior bounds (as the least-squares bounds)
    fixed : dict name -> (B,) values of fixed parameters
    aux : (m (T,), dt) for ``single_avgcorr``
    unit_stretch : bool
        True when ``stretch`` is fixed at exactly 1 (the plain exponential).
    t_ref : (B,) s, optional
        First delay of each bin's data: with the (first) relaxation time and the
        contrast free, the contrast is sampled through :data:`SHEAR_SITE` (see there).
    """
    names = model_param_names(model)
    n_b = next(iter(lower.values())).shape[0]
    vals: dict[str, Any] = {}
    logs: dict[str, Any] = {}
    shear = t_ref is not None and _sheared(model, fixed)
    with numpyro.plate("bins", n_b):
        for n in names:
            if n in fixed:
                vals[n] = fixed[n]
                if n in LOG_PARAMS:
                    logs[n] = jnp.log(fixed[n])
                continue
            if n == "contrast" and shear:
                continue  # after the times, stretches and fraction, below
            if n == "tau2" and "tau1" not in fixed:
                # Ordered times, flat in (log tau1, log tau2) on lo < log tau1 < log tau2
                # < hi (the least-squares box, ordered): log tau2 = log tau1 + v (hi -
                # log tau1), v ~ U(0, 1), and the factor (hi - log tau1) makes the joint
                # density flat. (tau1 e^d with d ~ U(0, hi - lo) let tau2 run decades
                # beyond hi, where the model is flat: r-hat 3.6 on a real bin.)
                room = jnp.maximum(jnp.log(upper["tau2"]) - logs["tau1"], 1e-12)
                v = numpyro.sample(TAU2_SITE, dist.Uniform(0.0, 1.0))
                numpyro.factor("tau_order_prior", jnp.log(room))
                logs[n] = logs["tau1"] + v * room
                vals[n] = numpyro.deterministic(n, jnp.exp(logs[n]))
            elif n in LOG_PARAMS:
                lt = numpyro.sample(
                    f"log_{n}", dist.Uniform(jnp.log(lower[n]), jnp.log(upper[n]))
                )
                logs[n] = lt
                vals[n] = numpyro.deterministic(n, jnp.exp(lt))
            elif n == "baseline":
                vals[n] = numpyro.sample(n, dist.Normal(1.0, 0.1))
            elif n == "contrast":
                vals[n] = numpyro.sample(n, dist.Uniform(0.0, upper[n]))
            else:
                vals[n] = numpyro.sample(n, dist.Uniform(lower[n], upper[n]))
        if shear:
            # z = logit(contrast / c_max) as NumPyro's own transform, sheared by the
            # decay until the first delay: y = z + 2 log g1(t_ref) (single: z - 2
            # (t_ref/tau)^stretch). The data fix roughly the amplitude at t_ref, so
            # (log tau, y) is nearly uncorrelated where (log tau, contrast) is a
            # curved ridge. The shear's Jacobian is 1, so the logistic density of z is
            # exactly the uniform contrast prior.
            y = numpyro.sample(SHEAR_SITE, dist.ImproperUniform(dist.constraints.real, (), ()))
            z = y - 2.0 * _log_g1(model, t_ref, vals, logs)
            numpyro.factor("contrast_prior", -jax.nn.softplus(z) - jax.nn.softplus(-z))
            vals["contrast"] = numpyro.deterministic(
                "contrast", upper["contrast"] * jax.nn.sigmoid(z))
        if model in (G2Model.SINGLE, G2Model.STRETCHED) and "tau" in logs:
            # Same model, cheaper gradient: work in log tau and skip the power when
            # the stretch is fixed at 1 (one exp per point instead of several).
            col = lambda v: jnp.broadcast_to(jnp.asarray(v, jnp.float64), (n_b,))[:, None]  # noqa: E731
            lt = col(logs["tau"])
            if unit_stretch:
                us = t[None, :] * jnp.exp(-lt)
            else:
                us = jnp.exp(col(vals["stretch"]) * (jnp.log(t)[None, :] - lt))
            mean = col(vals["baseline"]) + col(vals["contrast"]) * jnp.exp(-2.0 * us)
        else:
            p = tuple(jnp.broadcast_to(jnp.asarray(vals[n], jnp.float64), (n_b,))[:, None] for n in names)
            mean = evaluate_model(model, t[None, :], p, aux, jnp)
        numpyro.sample(
            "obs", dist.Normal(mean, sigma).mask(mask).to_event(1), obs=g2
        )


#: The sampled site behind a free contrast (see ``g2_model``).
SHEAR_SITE = "contrast_shear"
#: The sampled site behind tau2 of the double model: its place between tau1 and the
#: top of its range, in log time (0-1).
TAU2_SITE = "tau2_position"


def _sheared(model: G2Model, fixed: dict) -> bool:
    # the contrast-tau ridge the shear straightens exists with both free
    first = "tau1" if model is G2Model.DOUBLE else "tau"
    return "contrast" not in fixed and first not in fixed


def _log_g1(model: G2Model, t: Any, vals: dict, logs: dict) -> Any:
    """log g1(t) (<= 0) of the field correlation at delays ``t`` (B,), in log times."""
    def power(tn: str, sn: str) -> Any:
        return jnp.exp(vals.get(sn, 1.0) * (jnp.log(t) - logs[tn]))

    if model is G2Model.DOUBLE:
        f = vals["fraction"]
        # log(f e^-a + (1 - f) e^-b) without underflow when both decays are long gone
        return jnp.logaddexp(jnp.log(f) - power("tau1", "stretch1"),
                             jnp.log1p(-f) - power("tau2", "stretch2"))
    return -power("tau", "stretch")


@dataclass
class BayesFitResult:
    """Posterior summary of B curves; NumPy arrays throughout.

    Attributes
    ----------
    model : G2Model
        The sampled model, or ``G2Model.AUTO`` when each bin was sampled with the model
        the least squares chose for it (:attr:`models`).
    models : (B,) object array of G2Model, or None
        The model of each bin (``auto``); None when all have :attr:`model`.
    sampled : (B,) bool
        Bins sampled (:func:`to_sample`); the others keep the least-squares status,
        chi2_red and limits, with NaN posterior summaries.
    mean, std, hdi_low, hdi_high, median : dict name -> (B,)
        Posterior summaries (94% highest-density interval) per free parameter;
        fixed parameters have std 0 and their value everywhere; NaN where a bin's
        model lacks the parameter or the bin was not sampled.
    r_hat, ess_bulk, ess_tail : dict name -> (B,)
        NaN for fixed parameters.
    divergences : int
        Divergent transitions after warm-up, all chains and bins.
    divergences_per_bin : (B,) int
        Per bin (with ``sampler="joint"`` every bin shares the joint count).
    bfmi : (C, B) energy Bayesian fraction of missing information per chain and bin
    converged : (B,) bool
        The sampler gates: r_hat <= 1.01, ESS bulk and tail >= 100 per chain
        (:func:`~xpcsviewer.fitting.bayes_diagnostics.ess_min`) for every free
        parameter, no divergences in the bin, BFMI >= 0.2 in every chain.
    draws_per_chain : (B,) int
        Draws each chain ran after warm-up: ``num_samples``, or m x ``num_samples``
        thinned by m for the bins of the extension round (``samples`` always holds
        ``num_samples`` per chain).
    status, detail : (B,) FitStatus and the reason
        Not sampled: the least squares' ("not sampled: <its reason>"). Sampled:
        ``failed`` without data; ``poor_fit``, ``no_decay`` (``sample_all`` only) and
        ``misfit`` (runs test of the posterior-median residuals) first, since a
        sampler cannot mix on a model that does not apply; ``unresolved`` with a
        limit when the posterior of a time piles against a prior edge; ``failed``
        when a sampler gate fails; then ``unresolved`` (below the first delay, no
        plateau, decided by the last delays, sd/mean >= 50 % or known only to a
        factor 2, contrast below 3 sd), ``at_bound`` (a stretch or fraction's HDI on
        a bound), else ``converged`` (docs/fitting.md section 3).
    noise_scale : (B,)
        s in the likelihood sigma = s * g2_err: sqrt(max(1, chi2_red)) of the
        least-squares optimum.
    chi2_red : (B,)
        Of the posterior-median curve against the stated errors.
    tau_lower_limit, tau_upper_limit : (B,) s
        One-sided 95 % limits (5 %/95 % posterior quantiles) for ``unresolved`` bins
        whose posterior runs to a prior edge or that have no plateau; NaN otherwise.
    limit_name : (B,) object array of str
        The relaxation time a limit is on ("" where none).
    samples : dict name -> (C, S, B) natural-unit draws
    mean_tree_steps : float
        Mean leapfrog steps per draw (cost indicator).
    num_chains, num_samples, num_warmup, seed, chain_method
    """

    model: G2Model
    mean: dict[str, np.ndarray]
    std: dict[str, np.ndarray]
    median: dict[str, np.ndarray]
    hdi_low: dict[str, np.ndarray]
    hdi_high: dict[str, np.ndarray]
    r_hat: dict[str, np.ndarray]
    ess_bulk: dict[str, np.ndarray]
    ess_tail: dict[str, np.ndarray]
    divergences: int
    bfmi: np.ndarray
    converged: np.ndarray
    samples: dict[str, np.ndarray]
    num_chains: int
    num_samples: int
    num_warmup: int
    seed: int
    chain_method: str
    aux: tuple | None = None
    fixed: dict[str, bool] = field(default_factory=dict)
    used_bins: np.ndarray | None = None
    mean_tree_steps: float = float("nan")
    sampler: str = "per_bin"
    divergences_per_bin: np.ndarray | None = None
    status: np.ndarray | None = None
    detail: np.ndarray | None = None
    noise_scale: np.ndarray | None = None
    chi2_red: np.ndarray | None = None
    tau_lower_limit: np.ndarray | None = None
    tau_upper_limit: np.ndarray | None = None
    draws_per_chain: np.ndarray | None = None
    models: np.ndarray | None = None
    sampled: np.ndarray | None = None
    limit_name: np.ndarray | None = None

    @property
    def param_names(self) -> tuple[str, ...]:
        """Parameter names in model order (``auto``: the union of the models')."""
        return model_param_names(self.model)

    def model_names(self) -> np.ndarray:
        """(B,) object array: the model name of every bin."""
        n_b = self.converged.shape[0]
        if self.models is None:
            return np.array([self.model.value] * n_b, dtype=object)
        return np.array([G2Model.parse(m).value for m in self.models], dtype=object)

    def band(self, tau_grid: Any, max_draws: int = 400, prob: float = HDI_PROB) -> np.ndarray:
        """Posterior band of the model curve on ``tau_grid`` (G,) s -> (B, 3, G).

        Rows: lower (3%), median, upper (97%) of the model mean over up to
        ``max_draws`` posterior draws (the band of the curve, not of new data); each
        bin with its own model, NaN for bins not sampled.
        """
        t = np.asarray(tau_grid, dtype=np.float64)
        first = self.samples[self.param_names[0]]
        c, s, n_b = first.shape
        out = np.full((n_b, 3, t.shape[-1]), np.nan)
        step = max(1, (c * s) // max_draws)
        models = self.model_names()
        done = np.zeros(n_b, bool) if self.sampled is None else ~np.asarray(self.sampled, bool)
        lo_q, hi_q = (1.0 - prob) / 2.0, 1.0 - (1.0 - prob) / 2.0
        for name in dict.fromkeys(models[~done]):
            rows = np.flatnonzero((models == name) & ~done)
            p = tuple(self.samples[n][:, :, rows].reshape(c * s, rows.size)[::step][:, :, None]
                      for n in model_param_names(name))  # (D, R, 1)
            aux = self.aux
            if aux is not None and np.shape(aux[0])[-1] != t.shape[-1]:
                aux = (np.ones_like(t), aux[1])
            with np.errstate(all="ignore"):
                curves = np.asarray(evaluate_model(name, t[None, None, :], p, aux, np),
                                    dtype=np.float64)  # (D, R, G)
            # np.quantile is vectorised; nanquantile loops in Python over every (bin, delay)
            quant = np.quantile if np.isfinite(curves).all() else np.nanquantile
            q = quant(curves, [lo_q, 0.5, hi_q], axis=0)  # (3, R, G)
            out[rows] = np.moveaxis(q, 0, 1)
        return out

    def diagnostics(self) -> dict[str, np.ndarray]:
        """Per bin: worst r-hat and ESS over the free parameters, divergences, worst
        BFMI (NaN for bins not sampled)."""
        free = [n for n in self.param_names if not self.fixed.get(n, False)]
        n_b = self.converged.shape[0]

        def worst(d: dict, fn) -> np.ndarray:
            out = np.full(n_b, np.nan)
            if not free:
                return out
            a = np.stack([d[n] for n in free])
            has = np.isfinite(a).any(axis=0)  # NaN: fixed, another model's, not sampled
            out[has] = fn(a[:, has], axis=0)
            return out

        div = self.divergences_per_bin
        bf = np.atleast_2d(self.bfmi)
        b_min = np.full(n_b, np.nan)
        has = np.isfinite(bf).all(axis=0)
        b_min[has] = np.min(bf[:, has], axis=0)
        return {
            "r_hat": worst(self.r_hat, np.nanmax),
            "ess_bulk": worst(self.ess_bulk, np.nanmin),
            "ess_tail": worst(self.ess_tail, np.nanmin),
            "divergences": np.zeros(n_b, np.int64) if div is None else np.asarray(div),
            "bfmi": b_min,
        }

    def reported(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(posterior mean, sd) of ``name`` as they may be quoted (see G2FitResult.reported)."""
        v, e = self.mean[name].copy(), self.std[name].copy()
        if name in LOG_PARAMS and self.status is not None:
            st = np.array([getattr(x, "value", str(x)) for x in self.status])
            lim = np.isfinite(self.tau_lower_limit) | np.isfinite(self.tau_upper_limit)
            on = np.ones(st.shape, bool) if self.limit_name is None else np.array(
                [str(x) in (name, "") for x in self.limit_name], dtype=bool)
            drop = (st == "no_decay") | (st == "failed") | ((st == "unresolved") & lim & on)
            v[drop], e[drop] = np.nan, np.nan
        return v, e


def _choose_chain_method(chain_method: str, num_chains: int) -> str:
    if chain_method != "auto":
        return chain_method
    # "parallel" needs one device per chain (XLA host devices set before JAX starts);
    # otherwise vectorised chains run in one program, which measured faster on CPU
    # than sequential chains (docs/fitting.md).
    if num_chains > 1 and jax.local_device_count() >= num_chains:
        return "parallel"
    return "vectorized"


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


def fit_g2_bayes(
    tau: Any,
    g2: Any,
    g2_err: Any,
    valid: Any | None = None,
    model: G2Model | str = "single",
    init: G2FitResult | None = None,
    num_warmup: int = 500,
    num_samples: int = 1000,
    num_chains: int = 4,
    seed: int = 0,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    block_size: int = 250,
    *,
    params: dict[str, ParamSpec] | None = None,
    t_range: tuple[float, float] | None = None,
    aux: tuple | None = None,
    chain_method: str = "auto",
    target_accept_prob: float = 0.8,
    max_tree_depth: int = 10,
    dense_mass: bool = False,
    sampler: str = "per_bin",
    extend: bool = True,
    sample_all: bool = False,
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
    model : {"single", "stretched", "double", "single_avgcorr", "auto"}
        ``auto``: each bin is sampled with the model the least squares chose for it
        (``init``'s per-bin models), one sampling run per model.
    init : G2FitResult, optional
        Least-squares fit of ``model`` to start the chains from and to choose the bins
        (and for ``auto`` their models); computed when None.
    num_warmup, num_samples, num_chains : int
        Draws per chain; chains run vectorised on one device, or in parallel when
        JAX has one host device per chain.
    seed : int
        PRNG seed; the same seed and data give the same draws.
    block_size : int
        Draws per block between progress reports.
    params : dict name -> ParamSpec, optional
        Bounds (prior ranges) and fixed values, as for ``fit_g2``.
    t_range : (lo, hi) s, optional
    aux : (m (T,), dt), for ``single_avgcorr`` (and ``auto``, where it may be chosen)
    sampler : {"per_bin", "joint"}
        ``per_bin`` (default): NUTS vmapped over bins and chains, each bin with its own
        step size and dense mass matrix, in one compiled program. ``joint``: all bins
        as one NumPyro model through ``MCMC`` (``dense_mass`` applies there).
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
    model = G2Model.parse(model)
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
    if sampler not in ("per_bin", "joint"):
        raise ValueError(f"sampler must be 'per_bin' or 'joint', not {sampler!r}")
    row_models = init.model_names()
    sampled = np.ones(n_b, bool) if sample_all else to_sample(init)
    # The stated noise scale: posterior widths comparable with the least-squares
    # errors when the scatter exceeds the stated errors.
    chi2_lsq = np.asarray(init.chi2_red, float)
    with np.errstate(invalid="ignore"):
        s2 = np.where(weighted, np.fmax(1.0, chi2_lsq), chi2_lsq)
    noise_scale = np.sqrt(np.where(np.isfinite(s2) & (s2 > 0), s2, 1.0))
    groups = [(m, np.flatnonzero(sampled & (row_models == m.value))) for m in MODEL_ORDER]
    groups = [(m, r) for m, r in groups if r.size]
    n_s = sum(r.size for _, r in groups)
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

        res = _fit_model(
            m, tau, g2[rows], sigma0[rows], mask[rows], noise_scale[rows],
            init.select(rows), _spec_rows(params, rows, n_b), aux, num_warmup,
            num_samples, num_chains, int(seed) + 7907 * MODEL_ORDER.index(m),
            sub_progress if progress is not None else None, cancel, block_size,
            chain_method, target_accept_prob, max_tree_depth, dense_mass, sampler, extend)
        parts.append((rows, res))
    return _merge(model, parts, init, sampled, noise_scale, num_chains, num_samples,
                  num_warmup, seed, chain_method, sampler, aux)


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


def _merge(model, parts, init, sampled, noise_scale, num_chains, num_samples, num_warmup,
           seed, chain_method, sampler, aux) -> BayesFitResult:
    """One result over all bins from the models' runs; bins not sampled keep the
    least-squares status (and chi2_red and limits), their posterior summaries NaN."""
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
    method = parts[0][1].chain_method if parts else _choose_chain_method(chain_method, num_chains)
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
        num_warmup=num_warmup, seed=int(seed), chain_method=method, aux=aux, fixed=fixed,
        used_bins=used,
        mean_tree_steps=(sum(k * s for k, s in steps) / n_steps) if n_steps else float("nan"),
        sampler=sampler, divergences_per_bin=div, status=status, detail=detail,
        noise_scale=noise_scale, chi2_red=chi2, tau_lower_limit=lo_lim,
        tau_upper_limit=hi_lim, draws_per_chain=draws,
        models=np.array([G2Model(m) for m in init.model_names()], dtype=object)
        if model is G2Model.AUTO else None,
        sampled=sampled.copy(), limit_name=limit_name,
    )


def _fit_model(model, tau, g2, sigma0, mask, noise_scale, init, params, aux, num_warmup,
               num_samples, num_chains, seed, progress, cancel, block_size, chain_method,
               target_accept_prob, max_tree_depth, dense_mass, sampler,
               extend) -> BayesFitResult:
    """One model's sampling run over its bins (all arrays already of those bins)."""
    # aux only where the model uses it: the compiled programs are keyed by it
    aux = aux if model is G2Model.SINGLE_AVGCORR else None
    names = model_param_names(model)
    n_b = g2.shape[0]
    specs = default_params(model, tau, g2, mask)
    if params is not None:
        specs.update({n: s for n, s in params.items() if n in specs})
    lower = {n: np.broadcast_to(np.asarray(specs[n].lower, float), (n_b,)).copy() for n in names}
    upper = {n: np.broadcast_to(np.asarray(specs[n].upper, float), (n_b,)).copy() for n in names}
    fixed = {
        n: jnp.asarray(np.broadcast_to(np.asarray(specs[n].value, float), (n_b,)))
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
        start["tau1"], start["tau2"] = np.where(swap, start["tau2"], start["tau1"]), np.where(swap, start["tau1"], start["tau2"])
        if "fraction" in start:
            start["fraction"] = np.where(swap, 1.0 - start["fraction"], start["fraction"])
        if "stretch1" in start and "stretch2" in start:
            start["stretch1"], start["stretch2"] = np.where(swap, start["stretch2"], start["stretch1"]), np.where(swap, start["stretch1"], start["stretch2"])
        room = np.log(upper["tau2"]) - np.log(start["tau1"])
        with np.errstate(all="ignore"):
            pos = np.log(start["tau2"] / start["tau1"]) / room
        start[TAU2_SITE] = np.clip(np.nan_to_num(pos, nan=0.5), 1e-6, 1.0 - 1e-6)
        start["tau2"] = start["tau1"] * np.exp(start[TAU2_SITE] * room)
    init_values: dict[str, Any] = {}
    for n, v in start.items():
        if n == TAU2_SITE:
            init_values[n] = jnp.asarray(v)
        elif n in LOG_PARAMS:
            if n == "tau2" and TAU2_SITE in start:
                continue
            init_values[f"log_{n}"] = jnp.asarray(np.log(v))
        else:
            init_values[n] = jnp.asarray(v)

    sigma = sigma0 * noise_scale[:, None]
    y = np.where(mask, g2, 0.0)
    aux_j = None if aux is None else (jnp.asarray(aux[0], jnp.float64), float(aux[1]))
    t_safe = np.where(np.isfinite(tau) & (tau > 0), tau, 1.0)
    t_ref = np.min(np.where(mask, t_safe[None, :], np.inf), axis=1)
    t_ref = np.where(np.isfinite(t_ref), t_ref, np.min(t_safe))
    if _sheared(model, fixed):
        c_max = upper["contrast"]
        z0 = np.log(start["contrast"] / (c_max - start["contrast"]))
        vals0 = {**{n: np.asarray(v) for n, v in fixed.items()}, **start}
        logs0 = {n: np.log(vals0[n]) for n in names if n in LOG_PARAMS}
        init_values.pop("contrast")
        init_values[SHEAR_SITE] = jnp.asarray(z0 + 2.0 * _log_g1(model, t_ref, vals0, logs0))
    unit_stretch = bool("stretch" in fixed and np.all(np.asarray(fixed["stretch"]) == 1.0))
    n_blocks = max(1, math.ceil(num_samples / max(1, block_size)))
    per_block = math.ceil(num_samples / n_blocks)
    lower_j = {n: jnp.asarray(v) for n, v in lower.items()}
    upper_j = {n: jnp.asarray(v) for n, v in upper.items()}
    if sampler == "joint":
        method = _choose_chain_method(chain_method, num_chains)
        draws, diverging, energies, steps = _run_joint(
            t_safe, y, sigma, mask, model, lower_j, upper_j, fixed, aux_j, unit_stretch,
            init_values, num_warmup, per_block, n_blocks, num_chains, method, seed,
            target_accept_prob, max_tree_depth, dense_mass, progress, cancel, t_ref,
        )
    elif sampler == "per_bin":
        method = "parallel" if (chain_method == "parallel" or (
            chain_method == "auto" and num_chains > 1 and jax.local_device_count() >= num_chains
        )) else "vectorized"
        draws, resume = _run_per_bin_chunks(
            t_safe, y, sigma, mask, model, lower_j, upper_j, fixed, aux_j, unit_stretch,
            init_values, num_warmup, per_block, n_blocks, num_chains, method, seed,
            target_accept_prob, max_tree_depth, progress, cancel, t_ref,
        )
    else:
        raise ValueError(f"sampler must be 'per_bin' or 'joint', not {sampler!r}")
    if sampler == "per_bin":
        draws, diverging, energies, steps = draws  # see _run_per_bin_chunks
    samples: dict[str, np.ndarray] = {}
    for n in names:
        if n in fixed:
            v = np.asarray(fixed[n])
            samples[n] = np.broadcast_to(v, (num_chains, num_samples, n_b)).copy()
        else:
            samples[n] = draws[n][:, :num_samples].copy()
    div_bin = np.sum(diverging[:, :num_samples], axis=(0, 1)).astype(np.int64)  # (B,)
    # the joint sampler repeats its (shared) transitions for every bin
    n_div = int(div_bin[0]) if sampler == "joint" else int(div_bin.sum())
    bf = bfmi(energies[:, :num_samples])  # (C, B)
    summary = (model, samples, div_bin, n_div, bf, fixed, num_chains, num_samples,
               num_warmup, seed, method, aux, init)
    res = _summarise(*summary)
    res.mean_tree_steps = float(np.mean(steps))
    res.sampler = sampler
    res.noise_scale = noise_scale
    _bayes_statuses(res, init, t_safe, y, sigma0, mask, aux, lower, upper)
    more = _short_of_draws(res, init) if sampler == "per_bin" and extend else {}
    if more:
        # One extension round: the chains of these bins go on from where they stopped
        # (same step size and mass matrix) to m x the draws, thinned by m: the stored
        # draws keep num_samples per chain and about the ESS of the m-fold run.
        m = max(more.values())
        bins = sorted(more)
        report(progress, cancel, 0, 1, f"{len(bins)} bins short of ESS "
               f"{ess_min(num_chains):.0f}: {(m - 1) * num_samples} more draws per chain")
        extra = resume(bins, (m - 1) * n_blocks, per_block)
        for i, b in enumerate(bins):
            for n in names:
                if n not in fixed:
                    both = np.concatenate([draws[n][:, :, b], extra[0][n][:, :, i]], axis=1)
                    samples[n][:, :, b] = both[:, m - 1::m][:, :num_samples]
            div_bin[b] = int(np.sum(diverging[:, :, b]) + np.sum(extra[1][:, :, i]))
            bf[:, b] = bfmi(np.concatenate([energies[:, :, b], extra[2][:, :, i]], axis=1))
        n_div = int(div_bin.sum())
        summary = (model, samples, div_bin, n_div, bf, *summary[5:])
        res = _summarise(*summary)
        res.draws_per_chain[bins] = m * num_samples
        res.mean_tree_steps = float(np.mean(steps))
        res.sampler = sampler
        res.noise_scale = noise_scale
        _bayes_statuses(res, init, t_safe, y, sigma0, mask, aux, lower, upper)
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


def _run_joint(t, y, sigma, mask, model, lower, upper, fixed, aux, unit_stretch,
               init_values, num_warmup, per_block, n_blocks, num_chains, method, seed,
               target_accept_prob, max_tree_depth, dense_mass, progress, cancel, t_ref):
    """All bins as one NumPyro model (one step size and mass matrix for all)."""
    kernel = NUTS(
        g2_model,
        init_strategy=init_to_value(values=init_values),
        target_accept_prob=target_accept_prob,
        max_tree_depth=max_tree_depth,
        dense_mass=dense_mass,
    )
    mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=per_block,
                num_chains=num_chains, chain_method=method, progress_bar=False)
    args = (jnp.asarray(t), jnp.asarray(y), jnp.asarray(sigma), jnp.asarray(mask))
    kwargs = {"model": model, "lower": lower, "upper": upper, "fixed": fixed, "aux": aux,
              "unit_stretch": unit_stretch, "t_ref": jnp.asarray(t_ref)}
    fields = ("diverging", "energy", "num_steps")
    total = n_blocks + 1
    report(progress, cancel, 0, total, f"NUTS warm-up ({num_warmup} steps, {num_chains} chains)")
    with numpyro_lock.hold(progress, cancel):
        mcmc.warmup(jax.random.PRNGKey(int(seed)), *args, extra_fields=fields,
                    collect_warmup=False, **kwargs)
    report(progress, cancel, 1, total, "sampling")
    chunks, div, energy, steps = [], [], [], []
    for blk in range(n_blocks):
        with numpyro_lock.hold(progress, cancel):
            mcmc.run(mcmc.post_warmup_state.rng_key, *args, extra_fields=fields, **kwargs)
        smp = mcmc.get_samples(group_by_chain=True)
        chunks.append({k: np.asarray(v) for k, v in smp.items()})
        extra = mcmc.get_extra_fields(group_by_chain=True)
        div.append(np.asarray(extra["diverging"]))
        energy.append(np.asarray(extra["energy"]))
        steps.append(np.asarray(extra["num_steps"]))
        mcmc.post_warmup_state = mcmc.last_state
        report(progress, cancel, blk + 2, total, f"block {blk + 1}/{n_blocks}")
    draws = {k: np.concatenate([c[k] for c in chunks], axis=1) for k in chunks[0]}
    n_b = y.shape[0]
    # one joint density: every bin shares the transitions' divergences and energy
    d = np.concatenate(div, axis=1)
    e = np.concatenate(energy, axis=1)
    return (draws, np.repeat(d[:, :, None], n_b, axis=2),
            np.repeat(e[:, :, None], n_b, axis=2), np.concatenate(steps, axis=1))


def _one_bin_model(model: G2Model, unit_stretch: bool, has_aux: bool):
    """A 1-bin NumPyro model taking all data as positional arguments (vmappable)."""

    def one_bin(t, yb, sb, mb, lo, hi, fx, aux_m, aux_dt, t_ref):
        g2_model(t, yb, sb, mb, model=model, lower=lo, upper=hi, fixed=fx,
                 aux=(aux_m, aux_dt) if has_aux else None, unit_stretch=unit_stretch,
                 t_ref=t_ref)

    return one_bin


@functools.lru_cache(maxsize=16)
def _per_bin_programs(model: G2Model, unit_stretch: bool, has_aux: bool, num_warmup: int,
                      target_accept_prob: float, max_tree_depth: int, method: str,
                      num_chains: int, example: Any):
    """Compiled init / block / post-processing programs, cached so that fitting the
    next file of the same shape reuses them (no recompilation).

    ``example`` is a hashable stand-in for the data structure (site names); the
    potential is built with ``dynamic_args=True``, so it takes the data as arguments.
    """
    from numpyro.infer.hmc import hmc
    from numpyro.infer.util import initialize_model, unconstrain_fn

    one_bin = _one_bin_model(model, unit_stretch, has_aux)
    first_args, first_init = example.value
    info = initialize_model(jax.random.PRNGKey(0), one_bin,
                            init_strategy=init_to_value(values=first_init),
                            model_args=first_args, dynamic_args=True)
    init_kernel, sample_kernel = hmc(potential_fn_gen=info.potential_fn, algo="NUTS")

    def init_bins(z, args, keys):
        return jax.vmap(lambda zz, a, k: init_kernel(
            zz, num_warmup, target_accept_prob=target_accept_prob,
            max_tree_depth=max_tree_depth, dense_mass=True, model_args=a, rng_key=k,
        ))(z, args, keys)

    def block(state, args, n_steps):
        step_bins = jax.vmap(lambda st, a: sample_kernel(st, model_args=a))

        def body(s, _):
            s = step_bins(s, args)
            return s, (s.z, s.diverging, s.energy, s.num_steps)

        return jax.lax.scan(body, state, None, length=n_steps)

    if method == "parallel":
        devs = jax.local_devices()[:num_chains]
        init = jax.pmap(init_bins, in_axes=(0, None, 0), devices=devs)
        blocks: dict[int, Any] = {}

        def run_block(st, args, n):
            if n not in blocks:
                blocks[n] = jax.pmap(lambda s, a: block(s, a, n), in_axes=(0, None), devices=devs)
            return blocks[n](st, args)
    else:
        init = jax.jit(jax.vmap(init_bins, in_axes=(0, None, 0)))
        blocks = {}

        def run_block(st, args, n):
            if n not in blocks:
                blocks[n] = jax.jit(jax.vmap(lambda s, a: block(s, a, n), in_axes=(0, None)))
            return blocks[n](st, args)

    post = jax.jit(jax.vmap(jax.vmap(jax.vmap(
        lambda a, z: info.postprocess_fn(*a)(z), in_axes=(0, 0)), in_axes=(None, 0)),
        in_axes=(None, 0)))
    unconstrain = jax.jit(jax.vmap(
        lambda a, v: unconstrain_fn(one_bin, a, {}, v)
    ))
    return init, run_block, post, unconstrain


class _Example:
    # Hashable by structure only (site names, number of delays), carrying one value.
    def __init__(self, key: tuple, value: Any) -> None:
        self.key, self.value = key, value

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Example) and other.key == self.key


#: Bins sampled together by the per-bin kernel. Every file's bins go through programs
#: of this one lane count (and delays padded to a power of two), so a session compiles
#: the sampler once (the GUI does that at start-up) instead of once per bin count.
BIN_CHUNK = 8


def _placed_like(new: Any, old: Any) -> Any:
    sharding = getattr(old, "sharding", None)
    return new if sharding is None else jax.device_put(new, sharding)


def _pad_axis(a: Any, n: int, axis: int, value: float) -> Any:
    pad = n - a.shape[axis]
    if pad <= 0:
        return a
    widths = [(0, 0)] * a.ndim
    widths[axis] = (0, pad)
    return np.pad(np.asarray(a), widths, constant_values=value)


def _run_per_bin_chunks(t, y, sigma, mask, model, lower, upper, fixed, aux, unit_stretch,
                        init_values, num_warmup, per_block, n_blocks, num_chains, method,
                        seed, target_accept_prob, max_tree_depth, progress, cancel, t_ref):
    """:func:`_run_per_bin` over chunks of :data:`BIN_CHUNK` bins with delays padded to
    a power of two (masked points add nothing to the likelihood)."""
    from xpcsviewer.fitting.lsq import bucket_delays

    n_b, n_t = y.shape
    t_pad = bucket_delays(n_t)
    t = _pad_axis(np.asarray(t), t_pad, 0, 1.0)
    y = _pad_axis(y, t_pad, 1, 0.0)
    sigma = _pad_axis(sigma, t_pad, 1, 1.0)
    mask = _pad_axis(mask, t_pad, 1, False)
    if aux is not None:
        aux = (jnp.asarray(_pad_axis(np.asarray(aux[0]), t_pad, 0, 1.0)), aux[1])
    n_chunks = math.ceil(n_b / BIN_CHUNK)
    parts = []
    kept = []  # per chunk: (final state, per-bin arguments, programs)
    for k in range(n_chunks):
        real = np.arange(k * BIN_CHUNK, min(n_b, (k + 1) * BIN_CHUNK))
        idx = np.concatenate([real, np.full(BIN_CHUNK - real.size, real[0])])

        def sub(d: dict) -> dict:
            return {n: jnp.asarray(np.asarray(v)[idx]) for n, v in d.items()}

        def chunk_progress(done, total, msg="", _k=k):
            if progress is not None:
                head = f"bins {_k * BIN_CHUNK + 1}-{min(n_b, (_k + 1) * BIN_CHUNK)}: " \
                    if n_chunks > 1 else ""
                progress(_k * total + done, n_chunks * total, head + msg)

        out = _run_per_bin(
            t, y[idx], sigma[idx], mask[idx], model, sub(lower), sub(upper), sub(fixed),
            aux, unit_stretch, sub(init_values), num_warmup, per_block, n_blocks,
            num_chains, method, int(seed) + 7919 * k, target_accept_prob, max_tree_depth,
            chunk_progress if progress is not None else None, cancel, t_ref[idx],
        )
        draws, div, energy, steps, kept_k = out
        kept.append(kept_k)
        m = real.size
        parts.append(({n: v[..., :m] for n, v in draws.items()}, div[..., :m],
                      energy[..., :m], steps[..., :m] if np.ndim(steps) >= 3 else steps))
    draws = {n: np.concatenate([p[0][n] for p in parts], axis=-1) for n in parts[0][0]}
    cat = (lambda i: np.concatenate([p[i] for p in parts], axis=-1))  # noqa: E731

    def resume(bins: list[int], n_more: int, per: int):
        """Go on sampling ``bins`` for ``n_more`` blocks of ``per`` draws from where
        their chains stopped, in lanes of the same programs; draws (C, S', len(bins))."""
        outs = []
        for c0 in range(0, len(bins), BIN_CHUNK):
            sel = bins[c0:c0 + BIN_CHUNK]
            lanes = [(b // BIN_CHUNK, b % BIN_CHUNK) for b in sel]
            lanes += [lanes[0]] * (BIN_CHUNK - len(lanes))

            def gather(axis, pick):
                return jax.tree_util.tree_map(
                    lambda *leaves: np.stack([np.asarray(leaves[k]).take(j, axis=axis)
                                              for k, j in lanes], axis=axis),
                    *[pick(kk) for kk in kept])

            # placed as the first run's arrays were: host arrays would make the
            # programs compile again for their placement (5 s at the first extension)
            state = jax.tree_util.tree_map(_placed_like, gather(1, lambda kk: kk[0]),
                                           kept[0][0])  # (chains, lanes, ...)
            args = jax.tree_util.tree_map(_placed_like, gather(0, lambda kk: kk[1]),
                                          kept[0][1])  # (lanes, ...)
            run_block, post, step = kept[0][2]
            zs, div, energy, steps_ = [], [], [], []
            for _ in range(n_more):
                with step():
                    state, (z, d, e, ns) = run_block(state, args, per)
                zs.append(jax.device_get(z))
                div.append(np.asarray(d))
                energy.append(np.asarray(e))
                steps_.append(np.asarray(ns))
                report(progress, cancel, len(zs), n_more, f"more draws {len(zs)}/{n_more}")
            parts_c = []
            for z in zs:
                with step():
                    parts_c.append(post(args, z))
            cons = {k: np.concatenate([np.asarray(c[k]) for c in parts_c], axis=1)
                    for k in parts_c[0]}
            m = len(sel)
            outs.append(({k: v[..., 0][..., :m] for k, v in cons.items()},
                         np.concatenate(div, axis=1)[..., :m],
                         np.concatenate(energy, axis=1)[..., :m]))
        return ({k: np.concatenate([o[0][k] for o in outs], axis=-1) for k in outs[0][0]},
                np.concatenate([o[1] for o in outs], axis=-1),
                np.concatenate([o[2] for o in outs], axis=-1))

    return (draws, cat(1), cat(2), cat(3)), resume


def _run_per_bin(t, y, sigma, mask, model, lower, upper, fixed, aux, unit_stretch,
                 init_values, num_warmup, per_block, n_blocks, num_chains, method, seed,
                 target_accept_prob, max_tree_depth, progress, cancel, t_ref):
    """NUTS vmapped over bins (and chains): each bin adapts its own step size and a
    dense 2-4 parameter mass matrix, so one badly conditioned bin does not shrink the
    others' step size; all in one compiled program."""
    n_b, n_t = y.shape
    has_aux = aux is not None
    aux_m = jnp.asarray(aux[0], jnp.float64) if has_aux else jnp.ones(n_t)
    aux_dt = jnp.asarray(aux[1] if has_aux else 1.0, jnp.float64)
    # Per-bin arguments with a leading bin axis; each bin is a 1-bin model.
    bin_args = (
        jnp.broadcast_to(jnp.asarray(t), (n_b, n_t)),
        jnp.asarray(y)[:, None, :],
        jnp.asarray(sigma)[:, None, :],
        jnp.asarray(mask)[:, None, :],
        {k: v[:, None] for k, v in lower.items()},
        {k: v[:, None] for k, v in upper.items()},
        {k: jnp.asarray(v)[:, None] for k, v in fixed.items()},
        jnp.broadcast_to(aux_m, (n_b, n_t)),
        jnp.broadcast_to(aux_dt, (n_b,)),
        jnp.asarray(t_ref, jnp.float64)[:, None],
    )
    init_b = {k: jnp.asarray(v)[:, None] for k, v in init_values.items()}
    first = jax.tree_util.tree_map(lambda a: a[0], bin_args)
    example = _Example(
        (tuple(sorted(init_b)), tuple(sorted(fixed)), n_t),
        (first, {k: v[0] for k, v in init_b.items()}),
    )
    # Each step that may trace the model holds the process-wide NumPyro lock; the
    # compiled programs then run while another thread waits its turn.
    step = functools.partial(numpyro_lock.hold, progress, cancel)
    with step():
        misses = _per_bin_programs.cache_info().misses
        init, run_block, post, unconstrain = _per_bin_programs(
            model, unit_stretch, has_aux, int(num_warmup), float(target_accept_prob),
            int(max_tree_depth), method, int(num_chains), example,
        )
    if _per_bin_programs.cache_info().misses > misses:
        # new programs compile at their first call (tens of seconds without the
        # persistent cache): say so, or a user sees a stuck bar
        report(progress, cancel, 0, 1, "compiling the sampler (first run only)\u2026")
    with step():
        z0 = unconstrain(bin_args, init_b)
    keys = jax.random.split(jax.random.PRNGKey(int(seed)), num_chains * n_b).reshape(
        num_chains, n_b, 2
    )
    z0c = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (num_chains, *a.shape)), z0)
    report(progress, cancel, 0, 1, f"NUTS warm-up ({num_warmup} steps, {num_chains} chains)")
    with step():
        state = init(z0c, bin_args, keys)

    n_wblocks = max(1, math.ceil(num_warmup / max(1, per_block))) if num_warmup else 0
    w_per = math.ceil(num_warmup / n_wblocks) if n_wblocks else 0
    total = n_wblocks + n_blocks
    done = 0
    remaining = num_warmup
    while remaining > 0:
        n = min(w_per, remaining)
        with step():
            state, _ = run_block(state, bin_args, n)
        state = jax.block_until_ready(state)  # dispatch is asynchronous: honest progress
        remaining -= n
        done += 1
        report(progress, cancel, done, total, "warm-up")
    zs, div, energy, steps = [], [], [], []
    for _ in range(n_blocks):
        with step():
            state, (z, d, e, ns) = run_block(state, bin_args, per_block)
        zs.append(jax.device_get(z))
        div.append(np.asarray(d))
        energy.append(np.asarray(e))
        steps.append(np.asarray(ns))
        done += 1
        report(progress, cancel, done, total, f"sampling {done - n_wblocks}/{n_blocks}")
    # (C, S, B, 1) unconstrained draws -> constrained, incl. deterministic sites (tau);
    # block by block: one program shape whatever the number of draws (the warm-up's)
    cons = []
    for z in zs:
        with step():
            cons.append(post(bin_args, z))
    draws = {k: np.concatenate([np.asarray(c[k]) for c in cons], axis=1)[..., 0]
             for k in cons[0]}
    return (draws, np.concatenate(div, axis=1), np.concatenate(energy, axis=1),
            np.concatenate(steps, axis=1), (state, bin_args, (run_block, post, step)))


def _summarise(model, samples, div_bin, n_div, bf, fixed, num_chains, num_samples,
               num_warmup, seed, method, aux, init) -> BayesFitResult:
    names = model_param_names(model)
    mean, std, med, lo, hi, rh, eb, et = ({} for _ in range(8))
    for n in names:
        x = samples[n]
        flat = x.reshape(-1, x.shape[-1])
        mean[n] = flat.mean(axis=0)
        std[n] = flat.std(axis=0, ddof=1) if flat.shape[0] > 1 else np.zeros(flat.shape[1])
        med[n] = np.median(flat, axis=0)
        if n in fixed:
            lo[n] = hi[n] = mean[n].copy()
            nanv = np.full(flat.shape[1], np.nan)
            rh[n], eb[n], et[n] = nanv, nanv.copy(), nanv.copy()
            continue
        interval = np.asarray(hpdi(flat, prob=HDI_PROB, axis=0))
        lo[n], hi[n] = interval[0], interval[1]
        with np.errstate(all="ignore"):
            rh[n] = np.asarray(split_gelman_rubin(x))
        eb[n] = ess_bulk(x)
        et[n] = ess_tail(x)
    free = [n for n in names if n not in fixed]
    n_b = samples[names[0]].shape[-1]
    conv = np.ones(n_b, dtype=bool)
    for n in free:
        conv &= np.nan_to_num(rh[n], nan=np.inf) <= CONVERGENCE["r_hat_max"]
        conv &= np.nan_to_num(eb[n], nan=0.0) >= ess_min(num_chains)
        conv &= np.nan_to_num(et[n], nan=0.0) >= ess_min(num_chains)
    conv &= div_bin <= CONVERGENCE["divergences_max"]
    conv &= np.all(np.nan_to_num(bf, nan=0.0) >= CONVERGENCE["bfmi_min"], axis=0)
    used = np.asarray(init.n_points) > sum(1 for n in names if n not in fixed)
    conv &= used
    return BayesFitResult(
        model=model, mean=mean, std=std, median=med, hdi_low=lo, hdi_high=hi,
        r_hat=rh, ess_bulk=eb, ess_tail=et, divergences=n_div, bfmi=bf, converged=conv,
        samples=samples, num_chains=num_chains, num_samples=num_samples,
        num_warmup=num_warmup, seed=int(seed), chain_method=method, aux=aux,
        fixed={n: n in fixed for n in names}, used_bins=used, divergences_per_bin=div_bin,
        draws_per_chain=np.full(n_b, int(num_samples)),
    )


#: Quantiles of the posterior that stand for the least squares' profile intervals:
#: 68 % (16-84 %) and 2 sigma (2.3-97.7 %), and the one-sided 95 % limits.
_Q68 = (0.15866, 0.84134)
_Q2S = (0.02275, 0.97725)
#: A non-time parameter whose 94 % HDI reaches this fraction of its prior range from a
#: bound is on that bound (``at_bound``), as a least-squares optimum on it would be.
BOUND_FRACTION = 0.01


def _bayes_statuses(res: BayesFitResult, init: G2FitResult, t, y, sigma, mask, aux,
                    lower: dict, upper: dict) -> None:
    """Statuses from the sampler gates and the physical checks (see BayesFitResult)."""
    from xpcsviewer.fitting.adequacy import misfit_region, runs_test, strongest_run
    from xpcsviewer.fitting.status import RUNS_Z_MAX

    names = res.param_names
    n_b = res.converged.shape[0]
    med = tuple(np.asarray(res.median[n], float)[:, None] for n in names)
    with np.errstate(all="ignore"):
        curve = evaluate_model(res.model, t[None, :], med, aux, np)
        resid = np.where(mask, (y - curve) / sigma, 0.0)
    r2 = resid ** 2
    n_free = sum(1 for n in names if not res.fixed.get(n, False))
    dof = mask.sum(axis=1) - n_free
    chi2_red = np.where(dof > 0, r2.sum(axis=1) / np.maximum(dof, 1), np.nan)
    runs_z, _ = runs_test(resid, mask)
    # decay left at the last fitted delay, on the posterior-median curve
    rr = np.arange(n_b)
    last = mask.shape[1] - 1 - np.argmax(mask[:, ::-1], axis=1)
    c_med, b_med = res.median["contrast"], res.median["baseline"]
    with np.errstate(all="ignore"):
        left = np.where(mask.any(1) & (c_med > 0), (curve[rr, last] - b_med) / c_med, np.nan)
        t_min = np.where(mask, t[None, :], np.inf).min(axis=1)
    diag = res.diagnostics()
    status = np.empty(n_b, dtype=object)
    detail = np.empty(n_b, dtype=object)
    lo_lim = np.full(n_b, np.nan)
    hi_lim = np.full(n_b, np.nan)
    limit_name = np.array([""] * n_b, dtype=object)
    taus = [n for n in names if n in LOG_PARAMS and n in res.samples
            and not res.fixed.get(n, False)]
    lsq_status = [getattr(v, "value", str(v)) for v in init.status]
    U = FitStatus.UNRESOLVED
    for b in range(n_b):
        def say(st, why, n="", lo=np.nan, hi=np.nan, _b=b):
            status[_b], detail[_b] = st, why
            if np.isfinite(lo) or np.isfinite(hi):
                lo_lim[_b], hi_lim[_b], limit_name[_b] = lo, hi, n

        if res.used_bins is not None and not res.used_bins[b]:
            say(FitStatus.FAILED, "too few points")
            continue
        c_mean, c_sd = res.mean["contrast"][b], res.std["contrast"][b]
        if chi2_red[b] > CHI2_RED_MAX:
            say(FitStatus.POOR_FIT, f"chi2_red {chi2_red[b]:.3g} > {CHI2_RED_MAX:g}")
            continue
        if c_mean > CONTRAST_MAX:
            say(FitStatus.POOR_FIT, f"contrast {c_mean:.3g} > {CONTRAST_MAX:g}")
            continue
        if lsq_status[b] == "no_decay":  # sampled only on request (sample_all)
            say(FitStatus.NO_DECAY, init.detail[b])
            continue
        z = runs_z[b]
        if not np.isnan(z) and not abs(z) <= RUNS_Z_MAX:
            first, end = strongest_run(resid[b], mask[b])
            where = "the curve"
            if first >= 0:
                sel = mask[b, first:end + 1]
                with np.errstate(all="ignore"):
                    shape = ((curve[b, first:end + 1] - b_med[b]) / c_med[b])[sel]
                span = t[first:end + 1][sel]
                where = (f"{misfit_region(shape)} ({int(sel.sum())} points of one sign at "
                         f"{span.min():.2g}-{span.max():.2g} s)")
            say(FitStatus.MISFIT, f"systematic misfit: residual runs z = {z:+.1f} (|z| > "
                f"{RUNS_Z_MAX:g}) of the posterior-median curve: misses {where}")
            continue
        bad = []
        gate = ess_min(res.num_chains)
        if not min(diag["ess_bulk"][b], diag["ess_tail"][b]) >= gate:
            bad.append(f"ESS {min(diag['ess_bulk'][b], diag['ess_tail'][b]):.0f} < {gate:.0f}")
        if not diag["r_hat"][b] <= CONVERGENCE["r_hat_max"]:
            bad.append(f"r_hat {diag['r_hat'][b]:.4f} > {CONVERGENCE['r_hat_max']}")
        if diag["divergences"][b] > CONVERGENCE["divergences_max"]:
            n_d = int(diag["divergences"][b])
            bad.append(f"{n_d} divergence{'s' if n_d != 1 else ''}")
        if not diag["bfmi"][b] >= CONVERGENCE["bfmi_min"]:
            bad.append(f"BFMI {diag['bfmi'][b]:.2g} < {CONVERGENCE['bfmi_min']}")
        note = f" (sampler: {', '.join(bad)})" if bad else ""
        logs = {n: np.log(res.samples[n][:, :, b].ravel()) for n in taus}
        edge = None
        for n in taus:
            # A posterior piled against a prior edge: a limit, even where the chains mix
            # slowly along the unbounded direction.
            q05, q95 = np.quantile(logs[n], [0.05, 0.95])
            if np.log(upper[n][b]) - q95 < EDGE_LOG_TAU:
                lim = math.exp(q05)
                edge = (f"{n} > {lim:.3g} s (95 %){note}", n, lim, np.nan)
            elif q05 - np.log(lower[n][b]) < EDGE_LOG_TAU:
                lim = math.exp(q95)
                edge = (f"{n} < {lim:.3g} s (95 %){note}", n, np.nan, lim)
            if edge:
                break
        if edge:
            say(U, edge[0], edge[1], edge[2], edge[3])
            continue
        if bad:
            longer = ""
            if res.draws_per_chain is not None and res.draws_per_chain[b] > res.num_samples:
                longer = f" ({res.draws_per_chain[b]} draws per chain, thinned)"
            say(FitStatus.FAILED, "sampler: " + ", ".join(bad) + longer)
            continue
        verdict = _posterior_checks(res, init, b, taus, logs, left[b], t_min[b], last[b], t)
        if verdict is not None:
            say(*verdict)
            continue
        if not res.fixed.get("contrast", False) and not c_mean > CONTRAST_SIGMAS * c_sd:
            say(U, f"contrast {c_mean:.3g} +- {c_sd:.2g} below {CONTRAST_SIGMAS:g} sd")
            continue
        on = _on_bound(res, b, lower, upper)
        if on:
            say(FitStatus.AT_BOUND, on)
            continue
        say(FitStatus.CONVERGED, "")
    res.status, res.detail, res.chi2_red = status, detail, chi2_red
    res.tau_lower_limit, res.tau_upper_limit = lo_lim, hi_lim
    res.limit_name = limit_name


def _posterior_checks(res, init, b, taus, logs, left, t_min, last, t):
    """unresolved by the least squares' rules, on the posterior: below the first delay,
    no plateau, decided by the last delays, too wide; None when none applies."""
    from xpcsviewer.fitting.status import PLATEAU_LEFT_MAX, TAU_FACTOR_MAX, WINDOW_DROP

    U = FitStatus.UNRESOLVED
    if not taus:
        return None
    k0 = taus[0]
    m0 = res.median[k0][b]
    if m0 < t_min:
        return U, f"{k0} {m0:.3g} s below the first delay"
    if not res.fixed.get("baseline", False) and left > PLATEAU_LEFT_MAX:
        n = taus[-1]  # the slowest time: the one a plateau would pin
        lim = math.exp(np.quantile(logs[n], 0.05))
        return (U, f"no plateau: {100 * left:.0f} % of the decay left at the last fitted "
                f"delay ({t[last]:.3g} s); {n} > {lim:.3g} s (95 %)", n, lim, np.nan)
    for n in taus:
        # the least squares' refit without the last delays, against the posterior's
        # 2-sigma interval (a second sampling run would cost as much as the first)
        tw = init.window[n][b] if n in init.window else np.nan
        lo2, hi2 = np.exp(np.quantile(logs[n], _Q2S))
        if np.isfinite(tw) and not lo2 <= tw <= hi2:
            return U, (f"{n} decided by the last delays: {res.median[n][b]:.2g} -> "
                       f"{tw:.2g} s without the last {WINDOW_DROP} fitted (least squares; "
                       "beyond its 2-sigma posterior interval)")
    for n in taus:
        rel = res.std[n][b] / res.mean[n][b]
        if not rel < TAU_REL_ERR_MAX:
            return U, f"{n} sd {100 * rel:.0f} % >= {100 * TAU_REL_ERR_MAX:.0f} %"
        lo, hi = np.exp(np.quantile(logs[n], _Q68))
        mid = res.median[n][b]
        factor = max(hi / mid, mid / lo)
        if not factor <= TAU_FACTOR_MAX:
            return U, (f"{n} {mid:.3g} s known only to a factor {factor:.2g} (68 % "
                       f"posterior interval {lo:.2g}-{hi:.2g} s)")
    return None


def _on_bound(res, b, lower, upper) -> str:
    """"stretch runs against its upper bound ..." where a free non-time parameter's
    94 % HDI reaches a bound (the contrast only at the top: at 0 it is unresolved;
    the baseline has a normal prior)."""
    for n in res.param_names:
        if n in LOG_PARAMS or n == "baseline" or res.fixed.get(n, False) or n not in lower:
            continue
        lo, hi = float(lower[n][b]), float(upper[n][b])
        if n == "contrast":
            lo = -np.inf
        eps = BOUND_FRACTION * (hi - (0.0 if n == "contrast" else lo))
        h_lo, h_hi = res.hdi_low[n][b], res.hdi_high[n][b]
        if h_hi >= hi - eps:
            return f"{n} runs against its upper bound {hi:.3g} (94 % HDI {h_lo:.3g}-{h_hi:.3g})"
        if h_lo <= lo + eps:
            return f"{n} runs against its lower bound {lo:.3g} (94 % HDI {h_lo:.3g}-{h_hi:.3g})"
    return ""
