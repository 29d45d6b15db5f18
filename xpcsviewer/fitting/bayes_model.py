"""The NumPyro model of the Bayesian g2 fits: :func:`g2_model` and its reparametrisations.

One vectorised model of B curves with independent per-bin parameters under a
``bins`` plate (priors in :mod:`xpcsviewer.fitting.bayes`), with the sampled sites
behind a free contrast (:data:`SHEAR_SITE`) and behind tau2 of the double model
(:data:`TAU2_SITE`). Apart from the samplers (:mod:`xpcsviewer.fitting.bayes_run`)
so that the density reads on its own; importing it imports JAX and NumPyro.
"""

from __future__ import annotations

from typing import Any

from xpcsviewer.backends import get_backend

# The JAX backend switches x64 on (and checks it) before NumPyro creates any array.
get_backend("jax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpyro  # noqa: E402
import numpyro.distributions as dist  # noqa: E402

from xpcsviewer.fitting.models import (  # noqa: E402
    LOG_PARAMS,
    G2Model,
    evaluate_model,
    model_param_names,
)

__all__ = ["SHEAR_SITE", "TAU2_SITE", "g2_model"]


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
            p = tuple(jnp.broadcast_to(jnp.asarray(vals[n], jnp.float64), (n_b,))[:, None]
                      for n in names)
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


def _log_g1(model: G2Model, t: Any, vals: dict, logs: dict, xp: Any = jnp) -> Any:
    """log g1(t) (<= 0) of the field correlation at delays ``t`` (B,), in log times;
    ``xp``: NumPy for the start values (no eager JAX operation), jax.numpy in the model."""
    def power(tn: str, sn: str) -> Any:
        return xp.exp(vals.get(sn, 1.0) * (xp.log(t) - logs[tn]))

    if model is G2Model.DOUBLE:
        f = vals["fraction"]
        # log(f e^-a + (1 - f) e^-b) without underflow when both decays are long gone
        return xp.logaddexp(xp.log(f) - power("tau1", "stretch1"),
                            xp.log1p(-f) - power("tau2", "stretch2"))
    return -power("tau", "stretch")
