"""Where NUTS chains run: the host CPU devices by default, the GPU when asked for or
routed there (issue 31). One placement for every NUTS path of :mod:`xpcsviewer.fitting`."""

from __future__ import annotations

import functools
from typing import Any

from xpcsviewer.backends import get_backend

get_backend("jax")  # x64 and the host devices are set before JAX starts

import jax  # noqa: E402

__all__ = ["NUTS_DEVICES", "chain_method_of", "mcmc_chain_method", "nuts_devices"]


#: Where NUTS chains may run (``device`` of the Bayesian fits).
NUTS_DEVICES = ("auto", "cpu", "gpu")


def _platform_devices(platform: str | None) -> list:
    try:
        return list(jax.devices(platform))
    except RuntimeError:  # no such platform in this process
        return []


def _routed(work: float | None, steps: float | None) -> str:
    try:
        from xpcsviewer.backends.routing import route
    except ImportError:  # no whole-job router in this installation: the host CPU
        return "cpu"
    return route("nuts", work=float(work or 0.0), steps=float(steps or 0.0)).device


def nuts_devices(num_chains: int, device: str = "auto", *, work: float | None = None,
                 steps: float | None = None, chain_method: str = "auto",
                 available: Any = None) -> list:
    """The devices the NUTS chains of one run go to: one per chain (chains in
    parallel) or a single one (chains vectorised in one program).

    Chains run on the host CPU devices by default, also where a GPU is visible: on an
    H200 machine one file's 36 curves took 106 s on the GPU and 19 s on the CPU
    (docs/fitting.md). The backends package starts JAX with several host CPU devices
    (``--xla_force_host_platform_device_count``), so that chains run in parallel when
    there is one CPU device per chain, otherwise vectorised on one CPU device.

    Parameters
    ----------
    num_chains : int
    device : {"auto", "cpu", "gpu"}
        ``auto``: the whole-job router's choice (:func:`xpcsviewer.backends.routing.route`
        for a ``nuts`` job of ``work`` units), the CPU without a router; ``gpu``: the
        GPU, an error where there is none.
    work : float, optional
        curves x points x (warm-up + draws) x chains, for ``auto``.
    steps : float, optional
        warm-up + draws per chain (sequential transitions), for ``auto``.
    chain_method : {"auto", "parallel", "vectorized"}
        ``parallel`` needs one device per chain (an error otherwise); ``vectorized``
        gives one device.
    available : callable platform -> devices, optional
        Default ``jax.devices(platform)`` (``[]`` for a platform JAX does not have);
        tests pass fake device lists.
    """
    if device not in NUTS_DEVICES:
        raise ValueError(f"device must be one of {', '.join(NUTS_DEVICES)}, not {device!r}")
    if chain_method not in ("auto", "parallel", "vectorized"):
        raise ValueError(f"chain_method must be 'auto', 'parallel' or 'vectorized', "
                         f"not {chain_method!r}")
    devices_of = _platform_devices if available is None else available
    platform = _routed(work, steps) if device == "auto" else device
    pool = list(devices_of(platform)) if platform == "gpu" else []
    if platform == "gpu" and not pool and device == "gpu":
        raise ValueError("device='gpu': JAX sees no GPU in this process")
    if not pool:  # the CPU, or a routed GPU that this process does not have
        pool = list(devices_of("cpu"))
    if not pool:  # a process started without the CPU platform (JAX_PLATFORMS)
        pool = list(devices_of(None))
    if not pool:
        raise RuntimeError("JAX has no device for the NUTS chains")
    if chain_method == "parallel" and len(pool) < num_chains:
        raise ValueError(f"chain_method='parallel' needs a device per chain: {num_chains} "
                         f"chains, {len(pool)} {pool[0].platform} devices")
    if num_chains > 1 and chain_method != "vectorized" and len(pool) >= num_chains:
        return pool[:num_chains]
    return pool[:1]


def chain_method_of(devices: list) -> str:
    """``parallel`` (a device per chain) or ``vectorized`` (one device)."""
    return "parallel" if len(devices) > 1 else "vectorized"


def mcmc_chain_method(devices: list) -> Any:
    """NumPyro ``MCMC``'s ``chain_method`` for chains on ``devices`` (its own
    ``parallel`` maps over the default backend's devices, the GPU where there is one)."""
    if len(devices) > 1:
        return functools.partial(jax.pmap, devices=devices)
    return "vectorized"
