"""JAX backend: float64, jit/vmap/grad, CPU or GPU.

This is one of the two modules allowed to import JAX at module level; importing
it configures JAX (x64, memory fraction, compilation cache) before any array
exists, and checks that float64 really is on.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

from xpcsviewer.backends.cache import configure_compilation_cache
from xpcsviewer.backends.conversions import count_host_to_device, ensure_numpy

logger = logging.getLogger(__name__)

# Must happen before JAX initialises its backends: the flag is read once.
_frac = os.environ.get("XPCS_GPU_MEMORY_FRACTION")
if _frac is not None and "XLA_PYTHON_CLIENT_MEM_FRACTION" not in os.environ:
    os.environ["XLA_PYTHON_CLIENT_MEM_FRACTION"] = _frac


def _host_device_flag() -> None:
    # Several XLA CPU devices let NUTS chains run in parallel threads ("parallel"
    # chain method): 2x faster than vectorised chains on 2 cores (docs/fitting.md).
    # Single-device programs are unaffected. XPCS_HOST_DEVICES=1 turns it off.
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" in flags:
        return
    raw = os.environ.get("XPCS_HOST_DEVICES", "auto").strip().lower()
    try:
        n = max(4, min(16, os.cpu_count() or 1)) if raw in ("", "auto") else int(raw)
    except ValueError:
        logger.warning("XPCS_HOST_DEVICES=%r is not an integer; using 1", raw)
        n = 1
    if n > 1:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={n}".strip()


_host_device_flag()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

from xpcsviewer.backends.routing import _apply_pending_pin  # noqa: E402

_apply_pending_pin(jax)
jax.config.update("jax_enable_x64", True)
if jnp.zeros(0).dtype != jnp.float64:  # pragma: no cover - would be a JAX bug
    raise RuntimeError("JAX float64 (x64) could not be enabled; refusing to run in float32")
configure_compilation_cache()

__all__ = ["JaxBackend", "is_tracer"]


def is_tracer(x: Any) -> bool:
    """True inside jit/vmap/grad tracing, where placement must not act."""
    return isinstance(x, jax.core.Tracer)


class JaxBackend:
    """Backend on ``jax.numpy``; float64 is enforced at import."""

    name = "jax"
    xp = jnp
    supports_jit = True
    supports_grad = True
    supports_gpu = True

    def __repr__(self) -> str:
        return "JaxBackend()"

    def describe(self, device: Any = None) -> str:
        """One line for the status bar, e.g. ``JAX 0.10.2, CPU, float64``."""
        dev = device if device is not None else jax.devices()[0]
        return f"JAX {jax.__version__}, {dev.platform.upper()}, float64"

    # --- transforms -------------------------------------------------------
    def jit(
        self,
        fn: Callable,
        *,
        static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None,
    ) -> Callable:
        return jax.jit(fn, static_argnums=static_argnums, static_argnames=static_argnames)

    def vmap(self, fn: Callable, in_axes: Any = 0, out_axes: Any = 0) -> Callable:
        return jax.vmap(fn, in_axes=in_axes, out_axes=out_axes)

    def grad(self, fn: Callable, argnums: int | Sequence[int] = 0) -> Callable:
        return jax.grad(fn, argnums=argnums)

    # --- control flow -----------------------------------------------------
    def scan(
        self, fn: Callable, init: Any, xs: Any, length: int | None = None
    ) -> tuple[Any, Any]:
        return lax.scan(fn, init, xs, length=length)

    def fori_loop(self, lower: int, upper: int, body: Callable, init: Any) -> Any:
        return lax.fori_loop(lower, upper, body, init)

    def while_loop(self, cond: Callable, body: Callable, init: Any) -> Any:
        return lax.while_loop(cond, body, init)

    # --- binning ----------------------------------------------------------
    def segment_sum(self, data: Any, segment_ids: Any, num_segments: int) -> Any:
        return jax.ops.segment_sum(
            jnp.asarray(data), jnp.asarray(segment_ids), num_segments=num_segments
        )

    def bincount(self, x: Any, weights: Any = None, length: int = 0) -> Any:
        if length <= 0:
            raise ValueError("JaxBackend.bincount needs a static length > 0")
        return jnp.bincount(jnp.asarray(x), weights=weights, length=length)

    # --- functional updates -------------------------------------------------
    def index_set(self, x: Any, index: Any, values: Any) -> Any:
        return jnp.asarray(x).at[index].set(values)

    def index_add(self, x: Any, index: Any, values: Any) -> Any:
        return jnp.asarray(x).at[index].add(values)

    # --- placement and conversion -------------------------------------------
    def asarray(self, x: Any, dtype: Any = None, device: Any = None) -> Any:
        """Backend array on ``device`` (``None``: leave placement to JAX).

        An array already on the target device is returned as the same object, so
        jit caches stay warm; a tracer is returned untouched.
        """
        if is_tracer(x):
            return x if dtype is None else x.astype(dtype)
        if isinstance(x, jax.Array):
            if dtype is not None and x.dtype != jnp.dtype(dtype):
                x = x.astype(dtype)
            if device is None or x.devices() == {device}:
                return x
            return jax.device_put(x, device)
        # device_put, not jnp.asarray: the latter compiles a staging program per shape
        # and dtype (35 more compiles in a two-file fit); no device: left uncommitted
        arr = jax.device_put(ensure_numpy(x, dtype), device)
        count_host_to_device(arr.nbytes)
        return arr

    def to_numpy(self, x: Any) -> Any:
        return ensure_numpy(x)

    def block_until_ready(self, x: Any) -> Any:
        return jax.block_until_ready(x)


# --- compile counting (issue 31: "one compiled program per job") ----------------------
_COMPILE_EVENTS = {"lowered": 0, "compiled": 0, "cache_hits": 0}


def _on_duration(event: str, duration: float, **_kw: Any) -> None:
    if event == "/jax/core/compile/jaxpr_to_mlir_module_duration":
        _COMPILE_EVENTS["lowered"] += 1
    elif event == "/jax/core/compile/backend_compile_duration":
        _COMPILE_EVENTS["compiled"] += 1


def _on_event(event: str, **_kw: Any) -> None:
    if event == "/jax/compilation_cache/cache_hits":
        _COMPILE_EVENTS["cache_hits"] += 1


jax.monitoring.register_event_duration_secs_listener(_on_duration)
jax.monitoring.register_event_listener(_on_event)


def compile_counts() -> dict[str, int]:
    """Programs lowered (every in-memory jit cache miss), compiled or loaded
    (``compiled``), and of those loaded from the persistent cache (``cache_hits``) in
    this process so far: ``compiled - cache_hits`` were built by XLA."""
    return dict(_COMPILE_EVENTS)
