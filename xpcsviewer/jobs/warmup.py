"""Prepare the fitting engine in the background: the user can fit at once, meanwhile.

Every least-squares fit runs through programs of fixed row counts (``lm.LM_ROWS``,
``grid.GRID_ROWS``) with delays padded to a power of two, and NUTS samples bins in
chunks of ``bayes_run.BIN_CHUNK``: a tiny problem of the same shapes compiles exactly the
programs a real file uses. With the persistent compilation cache the next start loads
them instead of compiling. Qt-free; the GUI runs :func:`prepare_engine` at start-up,
its steps in the fit process (:mod:`xpcsviewer.jobs.fit_process`; :func:`precompile`
in a worker thread with ``XPCS_FIT_PROCESS=0``; ``XPCS_GUI_WARMUP=0`` turns it off).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = ["BAYES_DEFAULTS", "padded_delays", "precompile", "prepare_engine", "start_engine",
           "warm_lsq", "warm_nuts"]

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


def start_engine(progress: ProgressCallback | None = None,
                 cancel: CancelToken | None = None) -> str:
    """Import JAX (in the fit process: its own import, no GUI stall); its description."""
    from xpcsviewer.backends import get_device_manager

    report(progress, cancel, 0, 1, "starting JAX")
    return get_device_manager().describe()


def warm_lsq(delays: tuple[int, ...] = _DELAYS, progress: ProgressCallback | None = None,
             cancel: CancelToken | None = None) -> dict[str, float]:
    """Compile the least-squares programs of these delay counts (all candidates of
    ``auto``); seconds per count. Nothing with the NumPy backend."""
    from xpcsviewer.backends import get_backend

    if get_backend().name != "jax":
        return {}
    from xpcsviewer.fitting import averaging_factors, fit_g2
    from xpcsviewer.fitting.lsq_core import one_at_a_time

    out: dict[str, float] = {}
    # one tracing thread: JAX's tracing holds the GIL, and the GUI thread and a user's
    # fit wait for every thread that holds it (docs/gui-stalls.md)
    with one_at_a_time():
        for k, n_t in enumerate(delays):
            report(progress, cancel, k, len(delays), f"least squares, {n_t} delays")
            t0 = time.monotonic()
            tau, y, err, frames = _curves(int(n_t))
            fit_g2(tau, y, err, model="auto", aux=(averaging_factors(frames), 1e-5),
                   cancel=cancel)
            out[f"lsq_{n_t}"] = time.monotonic() - t0
    return out


def warm_nuts(model: str, progress: ProgressCallback | None = None,
              cancel: CancelToken | None = None) -> float:
    """Compile the sampler's programs of one model (the GUI's defaults); seconds."""
    from xpcsviewer.backends import get_backend

    if get_backend().name != "jax":
        return 0.0
    from xpcsviewer.fitting.bayes import fit_g2_bayes
    from xpcsviewer.fitting.spec import FitSpec, SamplerSpec

    t0 = time.monotonic()
    tau, y, err, _ = _curves(_DELAYS[-1], n_b=2, model=model)
    # one block of draws compiles the programs of the full run (draws are
    # post-processed block by block); every bin, whatever its fit
    spec = SamplerSpec(num_warmup=BAYES_DEFAULTS["num_warmup"], num_samples=250,
                       num_chains=BAYES_DEFAULTS["num_chains"], sample_all=True,
                       extend=False, device=BAYES_DEFAULTS["device"])
    fit_g2_bayes(tau, y, err, fit=FitSpec(model=model), sampler=spec, cancel=cancel)
    return time.monotonic() - t0


def padded_delays(counts) -> tuple[int, ...]:
    """The delay counts to compile for files of these counts: one per padded size
    (the programs are of delays padded to a power of two), smallest first."""
    seen: dict[int, int] = {}
    for n in counts:
        n = int(n)
        if n > 0:
            seen.setdefault(1 << (n - 1).bit_length(), n)
    return tuple(seen[k] for k in sorted(seen))


def prepare_engine(delays: tuple[int, ...] | Callable[[], tuple[int, ...]] = _DELAYS,
                   nuts: bool = True,
                   progress: ProgressCallback | None = None,
                   cancel: CancelToken | None = None) -> dict[str, Any]:
    """The GUI's warm-up, in the fit process (:mod:`xpcsviewer.jobs.fit_process`):
    JAX, then the least-squares programs of ``delays`` (the opened files' counts; a
    callable is asked once JAX is up, so files opened meanwhile count), then,
    at the lowest priority and giving way to any fit, the sampler's programs.

    Each step is its own call, so a user's fit waits at most for the step running;
    a sampler step gives way at once (``"nuts_yielded"``). Returns
    ``{"backend": line, "seconds": {...}}``.
    """
    from xpcsviewer.jobs.fit_process import (
        PRIORITY_WARMUP,
        PRIORITY_WARMUP_NUTS,
        Yielded,
        run_fit_call,
    )

    out: dict[str, Any] = {"seconds": {}}
    n = 2 + (len(NUTS_MODELS) if nuts else 0)
    t0 = time.monotonic()
    report(progress, cancel, 0, n, "starting JAX")
    out["backend"] = run_fit_call("xpcsviewer.jobs.warmup:start_engine", cancel=cancel,
                                  priority=PRIORITY_WARMUP)
    out["seconds"]["jax"] = time.monotonic() - t0
    if not out["backend"].startswith("JAX"):
        report(progress, cancel, n, n, "fits ready")
        return out
    report(progress, cancel, 1, n, "least-squares programs")
    counts = tuple(delays() if callable(delays) else delays) or _DELAYS
    out["lsq_delays"] = counts
    out["seconds"].update(run_fit_call("xpcsviewer.jobs.warmup:warm_lsq", counts,
                                       cancel=cancel, priority=PRIORITY_WARMUP))
    for k, model in enumerate(NUTS_MODELS if nuts else ()):
        report(progress, cancel, 2 + k, n, f"sampler programs ({model})")
        try:
            out["seconds"][f"nuts_{model}"] = run_fit_call(
                "xpcsviewer.jobs.warmup:warm_nuts", model, cancel=cancel,
                priority=PRIORITY_WARMUP_NUTS, yielding=True)
        except Yielded:
            # a fit came first; the sampler's programs are compiled after it, if
            # that fit did not (the compilation cache makes a repeat cheap)
            out["nuts_yielded"] = True
            out["seconds"][f"nuts_{model}"] = run_fit_call(
                "xpcsviewer.jobs.warmup:warm_nuts", model, cancel=cancel,
                priority=PRIORITY_WARMUP_NUTS, yielding=False)
    report(progress, cancel, n, n, "fits ready")
    return out


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
    report(progress, cancel, 1, 3, "least-squares programs")
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
        report(progress, cancel, 2, 3, "sampler programs")
        from xpcsviewer.fitting import numpyro_lock
        from xpcsviewer.fitting.bayes import fit_g2_bayes
        from xpcsviewer.fitting.spec import FitSpec, SamplerSpec

        try:
            # background work: a user's Bayesian fit takes the sampler at our next step
            with numpyro_lock.background("the sampler warm-up"):
                for k, model in enumerate(NUTS_MODELS):
                    report(progress, cancel, 2, 3, f"sampler programs ({model}, "
                           f"{k + 1}/{len(NUTS_MODELS)})")
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
