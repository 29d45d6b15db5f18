"""Joint diffusion posterior: D and alpha from all g2 curves of one file (NumPyro NUTS).

g2_b(t) = baseline_b + contrast_b exp(-2 t D q_b^alpha), one (D, alpha) for all bins,
started from the least-squares joint fit and sampled in blocks (progress, cancel).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from xpcsviewer.backends import get_backend

get_backend("jax")  # x64 before any array

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
from xpcsviewer.fitting.bayes_run import mcmc_chain_method, nuts_devices  # noqa: E402
from xpcsviewer.fitting.lsq import usable_errors  # noqa: E402
from xpcsviewer.progress import CancelToken, ProgressCallback, report  # noqa: E402

__all__ = ["DiffusionBayesResult", "diffusion_model", "fit_diffusion_joint_bayes"]


def diffusion_model(t, q, g2=None, sigma=None, mask=None, *, log_d_range, c_max,
                    alpha_fixed=None) -> None:
    """g2_b(t) = baseline_b + contrast_b exp(-2 t D q_b^alpha), all bins of one file.

    Priors: log D uniform over ``log_d_range``; alpha ~ U(0.5, 4) (or fixed);
    contrast_b ~ U(0, c_max_b); baseline_b ~ Normal(1, 0.1).
    """
    log_d = numpyro.sample("log_D", dist.Uniform(log_d_range[0], log_d_range[1]))
    numpyro.deterministic("D", jnp.exp(log_d))
    alpha = (numpyro.sample("alpha", dist.Uniform(0.5, 4.0)) if alpha_fixed is None
             else alpha_fixed)
    with numpyro.plate("bins", q.shape[0]):
        contrast = numpyro.sample("contrast", dist.Uniform(0.0, c_max))
        baseline = numpyro.sample("baseline", dist.Normal(1.0, 0.1))
        rate = jnp.exp(log_d + alpha * jnp.log(q))
        mean = baseline[:, None] + contrast[:, None] * jnp.exp(-2.0 * t[None, :] * rate[:, None])
        numpyro.sample("obs", dist.Normal(mean, sigma).mask(mask).to_event(1), obs=g2)


@dataclass
class DiffusionBayesResult:
    """Posterior of the joint diffusion model (D in A^alpha/s, A^2/s for alpha = 2).

    ``summary[name]`` holds mean, std, hdi_low, hdi_high (94%), r_hat, ess_bulk,
    ess_tail for ``D`` and ``alpha``; ``samples`` the draws (C, S); ``used_bins`` the
    bins that entered.
    """

    summary: dict[str, dict[str, float]]
    samples: dict[str, np.ndarray]
    divergences: int
    bfmi: np.ndarray
    converged: bool
    used_bins: np.ndarray
    alpha_fixed: bool


def fit_diffusion_joint_bayes(
    q: Any, tau: Any, g2: Any, g2_err: Any, valid: Any | None = None,
    q_range: tuple[float, float] | None = None, t_range: tuple[float, float] | None = None,
    alpha: float | None = None, init: Any | None = None, num_warmup: int = 500,
    num_samples: int = 1000, num_chains: int = 4, seed: int = 0,
    progress: ProgressCallback | None = None, cancel: CancelToken | None = None,
    block_size: int = 250, device: str = "auto",
) -> DiffusionBayesResult:
    """NUTS posterior of D and alpha directly from all g2 curves of one file.

    Started from :func:`~xpcsviewer.fitting.diffusion_joint.fit_diffusion_joint` (``init``,
    computed when None); sampled in blocks with progress and cancellation like
    :func:`fit_g2_bayes`. Converged: r_hat <= 1.01 and ESS bulk/tail >= 100 per chain
    for D (and alpha), no divergences, BFMI >= 0.2. Chains run on the host CPU devices
    unless ``device`` asks for the GPU (:func:`~xpcsviewer.fitting.bayes_devices.nuts_devices`).
    """
    from xpcsviewer.fitting.diffusion_joint import fit_diffusion_joint

    q = np.asarray(q, dtype=np.float64).ravel()
    tau = np.asarray(tau, dtype=np.float64).ravel()
    g2 = np.atleast_2d(np.asarray(g2, dtype=np.float64))
    err = np.atleast_2d(np.asarray(g2_err, dtype=np.float64))
    valid = np.ones(g2.shape, bool) if valid is None else np.atleast_2d(np.asarray(valid, bool))
    if init is None:
        init = fit_diffusion_joint(q, tau, g2, err, valid, q_range, t_range, alpha)
    use = np.asarray(init.used_bins, bool)
    if not np.isfinite(init.D) or use.sum() < 1:
        raise ValueError("no usable bins for the joint diffusion fit")
    with np.errstate(invalid="ignore"):
        mask = valid & np.isfinite(g2) & (np.isfinite(tau) & (tau > 0))[None, :]
        if t_range is not None:
            lo_t, hi_t = sorted(float(v) for v in t_range)
            mask &= ((tau >= lo_t) & (tau <= hi_t))[None, :]
    sigma, mask, _ = usable_errors(err[use], mask[use])
    y = np.where(mask, g2[use], 0.0)
    t_safe = np.where(np.isfinite(tau) & (tau > 0), tau, 1.0)
    c0 = np.clip(np.nan_to_num(init.contrast[use], nan=0.1), 1e-4, None)
    c_max = np.maximum(1.0, 2.0 * c0)
    b0 = np.nan_to_num(init.baseline[use], nan=1.0)
    ld0 = float(np.log(init.D))
    devices = nuts_devices(num_chains, device,
                           work=y.size * (num_warmup + num_samples) * num_chains)
    home = devices[0]  # the chains' arrays are made there, not on the default device
    put = functools.partial(jax.tree_util.tree_map, jnp.asarray)  # uncommitted: pmap-able
    with jax.default_device(home):
        values = put({"log_D": ld0, "contrast": np.minimum(c0, 0.999 * c_max), "baseline": b0})
        if alpha is None:
            values["alpha"] = put(float(np.clip(init.alpha, 0.51, 3.99)))
        args = put((t_safe, q[use], y, sigma, mask))
        kwargs = {"log_d_range": (ld0 - 10.0, ld0 + 10.0), "c_max": put(c_max),
                  "alpha_fixed": None if alpha is None else float(alpha)}
    kernel = NUTS(diffusion_model, init_strategy=init_to_value(values=values), dense_mass=False)
    n_blocks = max(1, math.ceil(num_samples / max(1, block_size)))
    per_block = math.ceil(num_samples / n_blocks)
    mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=per_block, num_chains=num_chains,
                chain_method=mcmc_chain_method(devices), progress_bar=False)
    fields = ("diverging", "energy")
    total = n_blocks + 1
    report(progress, cancel, 0, total, "NUTS warm-up (joint diffusion)")
    # one NumPyro trace at a time in the process (numpyro_lock)
    with numpyro_lock.hold(progress, cancel), jax.default_device(home):
        mcmc.warmup(jax.random.PRNGKey(int(seed)), *args, extra_fields=fields,
                    collect_warmup=False, **kwargs)
    report(progress, cancel, 1, total, "sampling")
    chunks, div, energy = [], [], []
    for blk in range(n_blocks):
        with numpyro_lock.hold(progress, cancel), jax.default_device(home):
            mcmc.run(mcmc.post_warmup_state.rng_key, *args, extra_fields=fields, **kwargs)
        smp = mcmc.get_samples(group_by_chain=True)
        chunks.append({k: np.asarray(smp[k]) for k in ("D", "alpha") if k in smp})
        extra = mcmc.get_extra_fields(group_by_chain=True)
        div.append(np.asarray(extra["diverging"]))
        energy.append(np.asarray(extra["energy"]))
        mcmc.post_warmup_state = mcmc.last_state
        report(progress, cancel, blk + 2, total, f"block {blk + 1}/{n_blocks}")
    samples = {k: np.concatenate([c[k] for c in chunks], axis=1)[:, :num_samples]
               for k in chunks[0]}
    summary: dict[str, dict[str, float]] = {}
    ok = True
    for k, x in samples.items():
        interval = np.asarray(hpdi(x.reshape(-1), prob=HDI_PROB))
        with np.errstate(all="ignore"):
            rh = float(split_gelman_rubin(x))
        eb, et = float(ess_bulk(x)), float(ess_tail(x))
        summary[k] = {"mean": float(x.mean()), "std": float(x.std(ddof=1)),
                      "hdi_low": float(interval[0]), "hdi_high": float(interval[1]),
                      "r_hat": rh, "ess_bulk": eb, "ess_tail": et}
        ok &= rh <= CONVERGENCE["r_hat_max"] and min(eb, et) >= ess_min(num_chains)
    n_div = int(np.sum(np.concatenate(div, axis=1)[:, :num_samples]))
    bf = bfmi(np.concatenate(energy, axis=1)[:, :num_samples])
    ok &= n_div <= CONVERGENCE["divergences_max"] and bool(np.all(bf >= CONVERGENCE["bfmi_min"]))
    return DiffusionBayesResult(summary, samples, n_div, bf, bool(ok), use, alpha is not None)
