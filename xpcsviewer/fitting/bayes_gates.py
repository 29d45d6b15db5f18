"""The sampler's convergence gates and the posterior interval's probability.

Apart from :mod:`~xpcsviewer.fitting.bayes_diagnostics` because that imports JAX and
NumPyro: a Bayesian result sent from the fit process is unpickled in the window's
process, and importing JAX there (in a worker thread, its C extension's start-up
holding the GIL) paused the window for 0.3-0.5 s.
"""

from __future__ import annotations

__all__ = ["CONVERGENCE", "HDI_PROB", "ess_min"]

#: The sampler gates: every free parameter of a bin passes all of them. ESS bulk and
#: tail must reach ``ess_per_chain`` times the number of chains (Vehtari et al. 2021:
#: at least 100 per chain, i.e. 400 for four chains), see :func:`ess_min`.
CONVERGENCE = {"r_hat_max": 1.01, "ess_per_chain": 100.0, "divergences_max": 0,
               "bfmi_min": 0.2}
HDI_PROB = 0.94


def ess_min(num_chains: int) -> float:
    """The ESS gate (bulk and tail) for ``num_chains`` chains."""
    return CONVERGENCE["ess_per_chain"] * max(1, int(num_chains))
