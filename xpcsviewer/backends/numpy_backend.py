"""Plain NumPy reference backend: eager, float64, CPU only."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from xpcsviewer.backends.conversions import ensure_numpy

__all__ = ["NumpyBackend"]


def _tree_map(fn: Callable, *trees: Any) -> Any:
    """Map over tuples, lists, dicts and NamedTuples; leaves are anything else."""
    first = trees[0]
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(_tree_map(fn, *parts) for parts in zip(*trees, strict=True)))
    if isinstance(first, tuple | list):
        return type(first)(_tree_map(fn, *parts) for parts in zip(*trees, strict=True))
    if isinstance(first, dict):
        return {k: _tree_map(fn, *(t[k] for t in trees)) for k in first}
    if first is None:
        return None
    return fn(*trees)


def _tree_leaves(tree: Any) -> list:
    out: list = []
    _tree_map(out.append, tree)
    return out


def _stack_trees(items: list) -> Any:
    return _tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *items)


def _take(tree: Any, axes: Any, i: int) -> Any:
    if axes is None:
        return tree
    if isinstance(axes, int):
        return _tree_map(lambda a: np.take(a, i, axis=axes), tree)
    return type(tree)(_take(t, a, i) for t, a in zip(tree, axes, strict=True))


class NumpyBackend:
    """The reference backend; every operation is a straightforward NumPy call."""

    name = "numpy"
    xp = np
    supports_jit = False
    supports_grad = False
    supports_gpu = False

    def __repr__(self) -> str:
        return "NumpyBackend()"

    def describe(self) -> str:
        """One line for the status bar."""
        return f"NumPy {np.__version__}, CPU, float64"

    # --- transforms -------------------------------------------------------
    def jit(
        self,
        fn: Callable,
        *,
        static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None,
    ) -> Callable:
        return fn

    def vmap(self, fn: Callable, in_axes: Any = 0, out_axes: Any = 0) -> Callable:
        if out_axes != 0:
            raise ValueError("NumpyBackend.vmap supports out_axes=0 only")

        def mapped(*args: Any) -> Any:
            axes = (in_axes,) * len(args) if not isinstance(in_axes, tuple | list) else in_axes
            if len(axes) != len(args):
                raise ValueError("in_axes must have one entry per argument")
            sizes = {
                np.shape(leaf)[ax]
                for arg, ax in zip(args, axes, strict=True)
                if ax is not None
                for leaf in _tree_leaves(arg)
            }
            if len(sizes) != 1:
                raise ValueError(f"vmap: inconsistent batch sizes {sorted(sizes)}")
            n = sizes.pop()
            results = [
                fn(*(_take(a, ax, i) for a, ax in zip(args, axes, strict=True))) for i in range(n)
            ]
            return _stack_trees(results)

        return mapped

    def grad(self, fn: Callable, argnums: int | Sequence[int] = 0) -> Callable:
        raise NotImplementedError(
            "The NumPy backend has no automatic differentiation; use the JAX backend"
        )

    # --- control flow -----------------------------------------------------
    def scan(
        self, fn: Callable, init: Any, xs: Any, length: int | None = None
    ) -> tuple[Any, Any]:
        if xs is None:
            if length is None:
                raise ValueError("scan needs xs or length")
            n = length
        else:
            n = len(_tree_leaves(xs)[0])
        carry = init
        ys = []
        for i in range(n):
            x = None if xs is None else _tree_map(lambda a, i=i: a[i], xs)
            carry, y = fn(carry, x)
            ys.append(y)
        stacked = _stack_trees(ys) if ys and ys[0] is not None else None
        return carry, stacked

    def fori_loop(self, lower: int, upper: int, body: Callable, init: Any) -> Any:
        val = init
        for i in range(int(lower), int(upper)):
            val = body(i, val)
        return val

    def while_loop(self, cond: Callable, body: Callable, init: Any) -> Any:
        val = init
        while bool(cond(val)):
            val = body(val)
        return val

    # --- binning ----------------------------------------------------------
    def segment_sum(self, data: Any, segment_ids: Any, num_segments: int) -> Any:
        data = np.asarray(data)
        ids = np.asarray(segment_ids).astype(np.int64, copy=False)
        keep = (ids >= 0) & (ids < num_segments)
        if data.ndim == 1:
            dtype = np.result_type(data.dtype, np.float64)
            if np.issubdtype(data.dtype, np.complexfloating):
                out = np.zeros(num_segments, dtype=data.dtype)
                np.add.at(out, ids[keep], data[keep])
                return out
            return np.bincount(ids[keep], weights=data[keep], minlength=num_segments)[
                :num_segments
            ].astype(dtype, copy=False)
        out = np.zeros((num_segments, *data.shape[1:]), dtype=data.dtype)
        np.add.at(out, ids[keep], data[keep])
        return out

    def bincount(self, x: Any, weights: Any = None, length: int = 0) -> Any:
        x = np.asarray(x).astype(np.int64, copy=False)
        if weights is None:
            return np.bincount(x, minlength=length)[: length or None]
        return np.bincount(x, weights=np.asarray(weights), minlength=length)[
            : length or None
        ]

    # --- functional updates -------------------------------------------------
    def index_set(self, x: Any, index: Any, values: Any) -> Any:
        out = np.array(x, copy=True)
        out[index] = values
        return out

    def index_add(self, x: Any, index: Any, values: Any) -> Any:
        out = np.array(x, copy=True)
        np.add.at(out, index, values)
        return out

    # --- placement and conversion -------------------------------------------
    def asarray(self, x: Any, dtype: Any = None, device: Any = None) -> Any:
        # device is ignored: NumPy lives on the host.
        return np.asarray(x, dtype=dtype)

    def to_numpy(self, x: Any) -> np.ndarray:
        return ensure_numpy(x)

    def block_until_ready(self, x: Any) -> Any:
        return x
