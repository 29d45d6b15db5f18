"""Compile the default fits once, in the background, before the user asks for one.

Every least-squares fit runs through programs of fixed row counts (``lm.LM_ROWS``,
``grid.GRID_ROWS``) with delays padded to a power of two, and NUTS samples bins in
chunks of ``bayes.BIN_CHUNK``: a tiny problem of the same shapes compiles exactly the
programs a real file uses. With the persistent compilation cache the next start loads
them instead of compiling. Qt-free; the GUI runs :func:`precompile` in a worker at
start-up (``XPCS_GUI_WARMUP=0`` turns that off).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = ["BAYES_DEFAULTS", "precompile"]

#: The GUI's Bayesian defaults (the g2 tab's warm-up / draws / chains boxes).
BAYES_DEFAULTS = {"num_warmup": 500, "num_samples": 1000, "num_chains": 2}
#: Delay counts whose padded sizes cover the usual files (<= 32, <= 64 delays).
_DELAYS = (30, 61)


def _curves(n_t: int, n_b: int = 6) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    tau = np.geomspace(1e-5, 1.0, n_t)
    rng = np.random.default_rng(0)
    taus = np.geomspace(1e-4, 1e-1, n_b)
    err = np.full((n_b, n_t), 0.003)
    y = 1.0 + 0.2 * np.exp(-2.0 * tau / taus[:, None]) + err * rng.standard_normal(err.shape)
    return tau, y, err


def precompile(progress: ProgressCallback | None = None, cancel: CancelToken | None = None,
               nuts: bool = True) -> dict[str, Any]:
    """Import JAX (and NumPyro) and compile the default fit programs.

    Returns ``{"backend": description line, "seconds": {...}}``, with
    ``"nuts_yielded": True`` when a user's Bayesian fit started meanwhile and the
    sampler part gave way to it (:mod:`xpcsviewer.fitting.numpyro_lock`).
    """
    from xpcsviewer.backends import get_backend, get_device_manager

    out: dict[str, Any] = {"seconds": {}}
    t0 = time.monotonic()
    report(progress, cancel, 0, 3, "starting JAX")
    out["backend"] = get_device_manager().describe()
    out["seconds"]["jax"] = time.monotonic() - t0
    if get_backend().name != "jax":
        return out
    from xpcsviewer.fitting import fit_g2

    t0 = time.monotonic()
    report(progress, cancel, 1, 3, "compiling the fits (first run only)")
    for n_t in _DELAYS:
        tau, y, err = _curves(n_t)
        fit_g2(tau, y, err, model="single", cancel=cancel)
    out["seconds"]["lsq"] = time.monotonic() - t0
    if nuts:
        t0 = time.monotonic()
        report(progress, cancel, 2, 3, "compiling the sampler (first run only)")
        from xpcsviewer.fitting import numpyro_lock
        from xpcsviewer.fitting.bayes import fit_g2_bayes

        tau, y, err = _curves(_DELAYS[-1], n_b=2)
        try:
            # background work: a user's Bayesian fit takes the sampler at our next step
            with numpyro_lock.background("the sampler warm-up"):
                # one block of draws compiles the same block program as the full run
                fit_g2_bayes(tau, y, err, num_warmup=BAYES_DEFAULTS["num_warmup"],
                             num_samples=250, num_chains=BAYES_DEFAULTS["num_chains"],
                             cancel=cancel)
        except numpyro_lock.Yielded:
            out["nuts_yielded"] = True
        out["seconds"]["nuts"] = time.monotonic() - t0
    report(progress, cancel, 3, 3, "fits ready")
    return out
