"""The Bayesian result: :class:`BayesFitResult`, what ``fit_g2_bayes`` returns.

Posterior summaries, sampler diagnostics, statuses and the draws of B curves, with
what is asked of them afterwards (the posterior band of the curve, per-bin
diagnostics, what may be quoted). Apart from the samplers and the status rules that
fill it; it imports no JAX (unpickled in the window's process).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xpcsviewer.fitting.bayes_gates import HDI_PROB
from xpcsviewer.fitting.models import (
    G2Model,
    evaluate_model,
    model_param_names,
)

__all__ = ["BayesFitResult"]


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
        """(posterior mean, sd) of ``name`` as they may be quoted
        (:func:`xpcsviewer.fitting.status.quotable`)."""
        from xpcsviewer.fitting.status import quotable

        if self.status is None:
            return self.mean[name].copy(), self.std[name].copy()
        return quotable(name, self.mean[name], self.std[name], self.status,
                        self.tau_lower_limit, self.tau_upper_limit, self.limit_name,
                        self.detail)
