"""Compile the default fits once, in the background, before the user asks for one.

Every least-squares fit runs through programs of fixed row counts (``lm.LM_ROWS``,
``grid.GRID_ROWS``) with delays padded to a power of two, and NUTS samples bins in
chunks of ``bayes_run.BIN_CHUNK``: a tiny problem of the same shapes compiles exactly the
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
BAYES_DEFAULTS = {"num_warmup": 500, "num_samples": 1000, "num_chains": 2, "device": "auto"}
#: Delay counts whose padded sizes cover the usual files (<= 32, <= 64 delays).
_DELAYS = (30, 61)
#: The samplers compiled ahead: the models the automatic choice picks on the real
#: files and the demo (``single_avgcorr`` never was; it compiles on first use).
NUTS_MODELS = ("single", "stretched", "double")


def _curves(n_t: int, n_b: int = 6,
            model: str = "single") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    # the files' multi-tau layout: 1..8 frames, then 4 delays per level 2^L apart
    frames = list(range(1, 9))
    while len(frames) < n_t:
        step = 2 ** (len(frames) // 4 - 1)
        frames += [(4 + j) * step for j in range(1, 5)]
    frames = np.array(frames[:n_t], dtype=np.float64)
    tau = 1e-5 * frames
    rng = np.random.default_rng(0)
    taus = np.geomspace(1e-4, 1e-2, n_b)
    err = np.full((n_b, n_t), 0.003)
    u = tau / taus[:, None]
    # curves of the model: a posterior that fits samples in a few leapfrog steps
    # (a double model on a single decay costs ~10x the sampling)
    decay = {"single": np.exp(-2.0 * u), "stretched": np.exp(-2.0 * u ** 0.6),
             "double": (0.5 * np.exp(-u) + 0.5 * np.exp(-u / 30.0)) ** 2}[model]
    y = 1.0 + 0.2 * decay + err * rng.standard_normal(err.shape)
    return tau, y, err, frames


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
    from xpcsviewer.fitting import averaging_factors, fit_g2
    from xpcsviewer.fitting.lsq_core import one_at_a_time

    t0 = time.monotonic()
    report(progress, cancel, 1, 3, "compiling the fits (first run only)")
    # one tracing thread: JAX's tracing holds the GIL, and the GUI thread and a user's
    # fit wait for every thread that holds it (docs/gui-stalls.md)
    with one_at_a_time():
        for n_t in _DELAYS:
            # the default (auto) fits every candidate, single_avgcorr included
            tau, y, err, frames = _curves(n_t)
            fit_g2(tau, y, err, model="auto", aux=(averaging_factors(frames), 1e-5),
                   cancel=cancel)
    out["seconds"]["lsq"] = time.monotonic() - t0
    if nuts:
        t0 = time.monotonic()
        report(progress, cancel, 2, 3, "compiling the sampler (first run only)")
        from xpcsviewer.fitting import numpyro_lock
        from xpcsviewer.fitting.bayes import fit_g2_bayes
        from xpcsviewer.fitting.spec import FitSpec, SamplerSpec

        try:
            # background work: a user's Bayesian fit takes the sampler at our next step
            with numpyro_lock.background("the sampler warm-up"):
                for k, model in enumerate(NUTS_MODELS):
                    report(progress, cancel, 2, 3, f"compiling the sampler ({model}, "
                           f"{k + 1}/{len(NUTS_MODELS)}; first run only)")
                    t_m = time.monotonic()
                    tau, y, err, _ = _curves(_DELAYS[-1], n_b=2, model=model)
                    # one block of draws compiles the programs of the full run (draws
                    # are post-processed block by block); every bin, whatever its fit
                    spec = SamplerSpec(num_warmup=BAYES_DEFAULTS["num_warmup"],
                                       num_samples=250,
                                       num_chains=BAYES_DEFAULTS["num_chains"],
                                       sample_all=True, extend=False,
                                       device=BAYES_DEFAULTS["device"])
                    fit_g2_bayes(tau, y, err, fit=FitSpec(model=model), sampler=spec,
                                 cancel=cancel)
                    out["seconds"][f"nuts_{model}"] = time.monotonic() - t_m
        except numpyro_lock.Yielded:
            out["nuts_yielded"] = True
        out["seconds"]["nuts"] = time.monotonic() - t0
    report(progress, cancel, 3, 3, "fits ready")
    return out
