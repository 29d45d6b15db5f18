"""The complete list of operations compute code may call on a backend."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["BackendProtocol"]


@runtime_checkable
class BackendProtocol(Protocol):
    """What compute and fitting code may use, and nothing more.

    Array maths goes through ``xp`` (``numpy`` or ``jax.numpy``); everything that
    differs between an eager and a traced library is a method here. The NumPy
    backend is the reference: every method has a plain, eager implementation.

    Attributes
    ----------
    name : str
        ``"numpy"`` or ``"jax"``.
    xp : module
        The array namespace (``numpy`` or ``jax.numpy``).
    supports_jit, supports_grad, supports_gpu : bool
        Capabilities; ``grad`` raises on a backend without ``supports_grad``.
    """

    name: str
    xp: Any
    supports_jit: bool
    supports_grad: bool
    supports_gpu: bool

    # --- transforms -------------------------------------------------------
    def jit(
        self,
        fn: Callable,
        *,
        static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None,
    ) -> Callable:
        """Compile ``fn`` (identity on NumPy)."""
        ...

    def vmap(self, fn: Callable, in_axes: Any = 0, out_axes: Any = 0) -> Callable:
        """Map ``fn`` over a leading batch axis."""
        ...

    def grad(self, fn: Callable, argnums: int | Sequence[int] = 0) -> Callable:
        """Gradient of a scalar function (JAX only)."""
        ...

    # --- control flow -----------------------------------------------------
    def scan(
        self, fn: Callable, init: Any, xs: Any, length: int | None = None
    ) -> tuple[Any, Any]:
        """``lax.scan`` semantics: ``fn(carry, x) -> (carry, y)``; ys are stacked."""
        ...

    def fori_loop(self, lower: int, upper: int, body: Callable, init: Any) -> Any:
        """``body(i, val) -> val`` for ``i`` in ``[lower, upper)``."""
        ...

    def while_loop(self, cond: Callable, body: Callable, init: Any) -> Any:
        """``while cond(val): val = body(val)``."""
        ...

    # --- binning ----------------------------------------------------------
    def segment_sum(self, data: Any, segment_ids: Any, num_segments: int) -> Any:
        """Sum ``data`` rows (axis 0) into ``num_segments`` bins by ``segment_ids``.

        Ids outside ``[0, num_segments)`` are dropped.
        """
        ...

    def bincount(self, x: Any, weights: Any = None, length: int = 0) -> Any:
        """Counts (or weight sums) of non-negative ints, output length ``length``."""
        ...

    # --- functional updates -------------------------------------------------
    def index_set(self, x: Any, index: Any, values: Any) -> Any:
        """Return a copy of ``x`` with ``x[index] = values``."""
        ...

    def index_add(self, x: Any, index: Any, values: Any) -> Any:
        """Return a copy of ``x`` with ``values`` added at ``index`` (repeats add)."""
        ...

    # --- placement and conversion -------------------------------------------
    def asarray(self, x: Any, dtype: Any = None, device: Any = None) -> Any:
        """Backend array from ``x``; ``device`` as resolved by the DeviceManager."""
        ...

    def to_numpy(self, x: Any) -> Any:
        """Writable NumPy array (waits for asynchronous results)."""
        ...

    def block_until_ready(self, x: Any) -> Any:
        """Wait for asynchronous computation of ``x`` (a pytree); returns ``x``."""
        ...
