"""The batched, bounded Levenberg-Marquardt kernel (all curves in one jitted, vmapped solve).

Written for one curve and vmapped for many through the active backend (JAX by default;
the NumPy backend runs the same kernel curve by curve as the reference). Box
constraints by projection in internal coordinates (log for relaxation times).
"""

from __future__ import annotations

import functools
import threading
import weakref
import zlib
from typing import Any

import numpy as np

from xpcsviewer.fitting.models import (
    LOG_PARAMS,
    G2Model,
    evaluate_with_jacobian,
    model_param_names,
)
from xpcsviewer.progress import CancelToken

__all__ = ["CODE_CONVERGED", "CODE_MAX_ITER", "CODE_RUNNING", "lm_solve_batch", "rows_per_call"]

#: Solve rows per compiled call of the LM kernel (JAX) on an accelerator ...
LM_ROWS = 256
#: ... and at least this many on the CPU. A vmapped while loop computes every lane
#: until the slowest one has finished, so a chunk of a few slow rows (a double fit at
#: 200 iterations) costs its lanes x the slowest's iterations: 64 rows instead of 256
#: cut the CPU of the live ``--fit`` (auto, 36 curves) from 0.93 s to 0.35 s, and of 32
#: files of 36 curves from 5.2 s to 4.5 s.
CPU_ROWS = 64
#: Rows x (padded) delays of a CPU call at least: from this size on XLA compiles the
#: lanes alike (64 or 128 rows give bit for bit the values of 256, measured for every
#: model, 32 to 128 delays); smaller calls differ in the last bits, which the LM's
#: stopping rules carry into the 8th digit. So the row count changes no fitted value.
CPU_MIN_POINTS = 4096


def rows_per_call(device: Any, n_t: int, accel: int = LM_ROWS, cpu: int = CPU_ROWS) -> int:
    """Rows of one compiled call of ``n_t`` delays on ``device`` (a jax.Device; None:
    JAX's default): ``accel`` on an accelerator; on the CPU ``cpu``, doubled while the
    call holds fewer than :data:`CPU_MIN_POINTS` points (at most ``accel``)."""
    platform = getattr(device, "platform", None)
    if platform is None:
        import jax

        platform = jax.default_backend()
    if platform != "cpu":
        return accel
    rows = cpu
    while rows * max(1, n_t) < CPU_MIN_POINTS and rows < accel:
        rows *= 2
    return rows


# Kernel codes (inside jit)
CODE_RUNNING, CODE_CONVERGED, CODE_MAX_ITER = 0, 1, 2
_CODE_RUNNING, _CODE_CONVERGED, _CODE_MAX_ITER = CODE_RUNNING, CODE_CONVERGED, CODE_MAX_ITER


# ----------------------------------------------------------------------------------
# The kernel: one curve, written for one and vmapped for many.
# ----------------------------------------------------------------------------------


def _spd_solve(xp: Any, a: Any, b: Any, n: int) -> Any:
    """Solve a small SPD system by an unrolled Cholesky factorisation.

    ``n`` is static (the parameter count, at most 7), so this traces to a few dozen
    element-wise operations that vectorise under vmap; a batched LAPACK call on
    thousands of 4x4 matrices is much slower on the CPU. A non-positive pivot gives
    NaN, which the caller treats as a rejected step.
    """
    low = [[None] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1):
            acc = a[i, j]
            for k in range(j):
                acc = acc - low[i][k] * low[j][k]
            if i == j:
                low[i][i] = xp.sqrt(xp.where(acc > 0, acc, xp.nan))
            else:
                low[i][j] = acc / low[j][j]
    z = [None] * n
    for i in range(n):
        acc = b[i]
        for k in range(i):
            acc = acc - low[i][k] * z[k]
        z[i] = acc / low[i][i]
    x = [None] * n
    for i in reversed(range(n)):
        acc = z[i]
        for k in range(i + 1, n):
            acc = acc - low[k][i] * x[k]
        x[i] = acc / low[i][i]
    return xp.stack(x)


def _make_solver(
    backend: Any, model: G2Model, n_par: int, max_iter: int, unit_stretch: bool = False
) -> Any:
    """Jitted batched solver ``solve(t, y, w, mask, x0, lo, hi, free, aux_m, aux_dt)``."""
    xp = backend.xp
    names = model_param_names(model)
    is_log = np.array([n in LOG_PARAMS for n in names])
    ftol, xtol, gtol = 1e-10, 1e-9, 1e-14

    def to_nat(x: Any) -> tuple:
        return tuple(xp.exp(x[k]) if is_log[k] else x[k] for k in range(n_par))

    simple = model in (G2Model.SINGLE, G2Model.STRETCHED)
    avgcorr = model is G2Model.SINGLE_AVGCORR

    def single_fast(x: Any, t: Any, log_t: Any) -> tuple[Any, tuple]:
        # The (stretched) exponential in fitting coordinates (x[1] = log tau) with
        # log t precomputed: two transcendentals per point instead of five. With the
        # stretch fixed at exactly 1 (the default) a single exp per point.
        c, lt, st, b = x[0], x[1], x[2], x[3]
        if unit_stretch:
            us = t * xp.exp(-lt)
            e = xp.exp(-2.0 * us)
            ce = c * e
            # the stretch column is masked (fixed parameter): skip its arithmetic
            return b + ce, (e, 2.0 * us * ce, xp.zeros_like(ce), xp.ones_like(ce))
        lu = log_t - lt
        us = xp.exp(st * lu)
        e = xp.exp(-2.0 * us)
        ce = c * e
        g = b + ce
        return g, (e, 2.0 * st * us * ce, -2.0 * us * lu * ce, xp.ones_like(g))

    def jacobian(x: Any, free: Any, t: Any, y: Any, w: Any, mask: Any, aux: tuple):
        if simple:
            g, d = single_fast(x, t, aux[2])
            r0 = xp.where(mask, (g - y) * w, 0.0)
            jac = xp.stack([xp.where(mask, dk * w, 0.0) for dk in d], axis=-1)
            return r0, xp.where(free[None, :], jac, 0.0)
        # Closed-form derivatives (in log tau): one model evaluation per step.
        g, d = evaluate_with_jacobian(model, t, to_nat(x), xp, aux[:2] if avgcorr else None)
        r0 = xp.where(mask, (g - y) * w, 0.0)
        jac = xp.stack([xp.where(mask, dk * w, 0.0) for dk in d], axis=-1)
        return r0, xp.where(free[None, :], jac, 0.0)

    def step_direction(jac: Any, r: Any, lam: Any, free: Any, x: Any, lo: Any, hi: Any) -> Any:
        a = jac.T @ jac
        g = jac.T @ r
        # Active set: a parameter on a bound that descent would push outward is held
        # for this step, so the others still move freely (projected LM).
        blocked = ((x <= lo) & (g > 0)) | ((x >= hi) & (g < 0))
        free = free & ~blocked
        d = xp.diagonal(a)
        d = xp.maximum(d, 1e-12 * xp.max(d) + 1e-300)
        a = a + xp.diag(lam * d)
        # Fixed parameters: identity rows so the system stays regular.
        a = xp.where(free[:, None] & free[None, :], a, xp.eye(n_par))
        g = xp.where(free, g, 0.0)
        return -_spd_solve(xp, a, g, n_par), g

    def solve_one(t, y, w, mask, x0, lo, hi, free, aux_m, aux_dt, lam0, it0, it_stop):
        # Runs until converged, max_iter, or ``it_stop`` iterations in total (then the
        # code stays "running" and the caller resumes from x, lam, it).
        aux = (aux_m, aux_dt, xp.log(t))
        x0 = xp.clip(x0, lo, hi)
        r0, j0 = jacobian(x0, free, t, y, w, mask, aux)
        cost0 = 0.5 * xp.sum(r0 * r0)
        code0 = xp.where(it0 >= max_iter, _CODE_MAX_ITER, _CODE_RUNNING)
        init = (x0, cost0, j0, r0, lam0, it0, code0)

        def cond(s):
            return (s[6] == _CODE_RUNNING) & (s[5] < it_stop)

        def body(s):
            x, cost, jac, r, lam, it, code = s
            dx, g = step_direction(jac, r, lam, free, x, lo, hi)
            x_new = xp.clip(x + dx, lo, hi)
            x_new = xp.where(free, x_new, x)
            r_new, j_new = jacobian(x_new, free, t, y, w, mask, aux)
            cost_new = 0.5 * xp.sum(r_new * r_new)
            accept = xp.isfinite(cost_new) & (cost_new <= cost)
            step = xp.sqrt(xp.sum((x_new - x) ** 2))
            xnorm = xp.sqrt(xp.sum(x * x))
            small_f = (cost - cost_new) <= ftol * cost
            small_x = step <= xtol * (xnorm + xtol)
            # projected gradient: zero components pushing against an active bound
            pg = xp.where(((x <= lo) & (g > 0)) | ((x >= hi) & (g < 0)), 0.0, g)
            small_g = xp.max(xp.abs(pg)) <= gtol * xp.maximum(1.0, cost)
            done = (accept & small_f & small_x) | small_g | (lam > 1e16)
            x = xp.where(accept, x_new, x)
            cost = xp.where(accept, cost_new, cost)
            jac = xp.where(accept, j_new, jac)
            r = xp.where(accept, r_new, r)
            lam = xp.where(accept, xp.maximum(lam / 3.0, 1e-12), lam * 4.0)
            it = it + 1
            code = xp.where(
                done, _CODE_CONVERGED, xp.where(it >= max_iter, _CODE_MAX_ITER, _CODE_RUNNING)
            )
            return (x, cost, jac, r, lam, it, code)

        x, cost, jac, _r, lam, it, code = backend.while_loop(cond, body, init)
        return x, cost, jac, lam, it, code

    batched = backend.vmap(solve_one, in_axes=(0, 0, 0, 0, 0, 0, 0, None, 0, 0, 0, 0, None))

    def chunk(t, y, w, mask, lo, hi, aux_m, aux_dt, free, x, lam, it, it_stop):
        return batched(t, y, w, mask, x, lo, hi, free, aux_m, aux_dt, lam, it, it_stop)

    return backend.jit(chunk)


@functools.lru_cache(maxsize=32)
def _solver_cached(
    backend_name: str, model: G2Model, n_par: int, max_iter: int, unit_stretch: bool
) -> Any:
    from xpcsviewer.backends import get_backend

    return _make_solver(get_backend(backend_name), model, n_par, max_iter, unit_stretch)


# ----------------------------------------------------------------------------------
# The curves on the device: sent once, gathered there for every chunk of solve rows.
# ----------------------------------------------------------------------------------

_STORE_LOCK = threading.RLock()
#: (id(host array), role, backend, device) -> (weakref to it, crc32, device blocks)
_STORE: dict[tuple, tuple] = {}
_CONST: dict[tuple, Any] = {}


def _upload_blocks(be: Any, dev: Any, arr: np.ndarray, n_r: int) -> list:
    # (N, ...) as ceil(N / n_r) device arrays of n_r rows (the last zero-padded): fixed
    # shapes, so the gather program does not depend on N
    n = arr.shape[0]
    out = []
    for s in range(0, max(n, 1), n_r):
        blk = arr[s:s + n_r]
        if blk.shape[0] < n_r:
            pad = np.zeros((n_r - blk.shape[0], *arr.shape[1:]), arr.dtype)
            blk = np.concatenate([blk, pad])
        out.append(be.asarray(np.ascontiguousarray(blk), device=dev))
    return out


def _kept_blocks(be: Any, dev: Any, arr: np.ndarray, role: str, n_r: int,
                 fn: Any = None) -> list:
    """Device blocks of ``fn(arr)`` (of ``n_r`` rows), sent once while ``arr`` lives and
    is unchanged.

    Keyed by the host array's identity (a fit's solves pass the same arrays) and checked
    against its CRC, so an array changed in place is sent again; dropped with the array.
    A live array of the same bytes (a copy of all the curves) shares its blocks.
    """
    key = (id(arr), role, be.name, dev, n_r)
    raw = np.ascontiguousarray(arr).view(np.uint8)
    crc = zlib.crc32(raw)
    with _STORE_LOCK:
        hit = _STORE.get(key)
        if hit is not None and hit[0]() is arr and hit[1] == crc:
            return hit[2]
        blocks = None
        for k2, (ref2, crc2, blocks2) in list(_STORE.items()):
            other = ref2()
            if (k2[1:] == key[1:] and crc2 == crc and other is not None
                    and other.shape == arr.shape and other.dtype == arr.dtype
                    and np.array_equal(np.ascontiguousarray(other).view(np.uint8), raw)):
                blocks = blocks2
                break
        if blocks is None:
            blocks = _upload_blocks(be, dev, fn(arr) if fn is not None else arr, n_r)
        ref = weakref.ref(arr, lambda _r, k=key: _STORE.pop(k, None))
        _STORE[key] = (ref, crc, blocks)
        return blocks


def _const(be: Any, dev: Any, value: Any, shape: tuple, dtype: Any) -> Any:
    key = (be.name, dev, value, shape, np.dtype(dtype).str)
    with _STORE_LOCK:
        if key not in _CONST:
            _CONST[key] = be.asarray(np.full(shape, value, dtype), device=dev)
        return _CONST[key]


@functools.lru_cache(maxsize=8)
def _gather_cached(backend_name: str, n_r: int) -> Any:
    from xpcsviewer.backends import get_backend

    be = get_backend(backend_name)
    xp = be.xp

    def step(acc: tuple, block: tuple, gidx: Any, b: Any) -> tuple:
        # rows of block b into their lanes; the other lanes keep acc
        sel = (gidx // n_r) == b
        local = gidx % n_r
        return tuple(xp.where(sel.reshape((-1,) + (1,) * (a.ndim - 1)), blk[local], a)
                     for a, blk in zip(acc, block, strict=True))

    return be.jit(step)


def _take(be: Any, dev: Any, tables: list[list], g: np.ndarray) -> tuple:
    """Rows ``g`` (R,: the rows per call on ``dev``) of the block tables, gathered on
    the device."""
    n_r = g.size
    blk = g // n_r
    ids = np.unique(blk)
    first = [tab[ids[0]] for tab in tables]
    if ids.size == 1 and np.array_equal(g, ids[0] * n_r + np.arange(n_r)):
        return tuple(first)  # exactly one block, in order
    step = _gather_cached(be.name, n_r)
    gdev = be.asarray(g.astype(np.int32), device=dev)
    acc = tuple(first)
    for b in ids:
        acc = step(acc, tuple(tab[b] for tab in tables), gdev,
                   _const(be, dev, int(b), (), np.int32))
    return acc


def _runs(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # consecutive rows with bitwise equal bounds share one table row (a curve's starts
    # or profile points): run index per row, and the table
    bits = np.concatenate([np.ascontiguousarray(lo).view(np.uint64),
                           np.ascontiguousarray(hi).view(np.uint64)], axis=1)
    new = np.ones(lo.shape[0], bool)
    new[1:] = (bits[1:] != bits[:-1]).any(axis=1)
    return np.cumsum(new) - 1, lo[new], hi[new]


def lm_solve_batch(
    model: G2Model,
    t: np.ndarray,
    y: np.ndarray,
    sigma: np.ndarray,
    mask: np.ndarray,
    x0: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    free: np.ndarray,
    aux: tuple | None = None,
    max_iter: int = 200,
    backend: Any = None,
    device: Any = "auto",
    cancel: CancelToken | None = None,
    rows: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Run the LM kernel on B solve rows in internal coordinates.

    Parameters
    ----------
    t : (T,) or (N, T) s; y, sigma : (N, T); mask : (N, T) bool
    x0, lo, hi : (B, P) internal coordinates (log for tau-like parameters)
    free : (P,) bool
    aux : (m (T,) or (N, T), dt scalar or (N,)) or None
    rows : (B,) int, optional
        The curve of each solve row (several starts or profile points per curve);
        None: row b is curve b (N = B). On JAX the N curves go to the device once (kept
        there while these host arrays live unchanged) and the rows are gathered there.

    Returns
    -------
    x (B, P), cost (B,), jac (B, T, P) in internal coordinates, n_iter (B,), code (B,)
    """
    from xpcsviewer.backends import get_backend
    from xpcsviewer.backends.device import default_placement, resolve_device

    be = backend if backend is not None else get_backend()
    jx = be.name == "jax"
    n_c, n_t = y.shape
    n_b, n_par = x0.shape
    rows = np.arange(n_c) if rows is None else np.asarray(rows, np.int64)
    if rows.shape != (n_b,):
        raise ValueError(f"rows has shape {rows.shape}, expected ({n_b},)")
    dev = default_placement(resolve_device(device, work=float(n_b * n_t))) if jx else None
    # The plain exponential (stretch fixed at exactly 1) gets its own, cheaper kernel.
    unit_stretch = bool(
        model in (G2Model.SINGLE, G2Model.STRETCHED) and not free[2] and np.all(x0[:, 2] == 1.0)
    )
    solver = _solver_cached(be.name, model, n_par, int(max_iter), unit_stretch)
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    t = np.asarray(t, np.float64)
    if t.ndim == 1:
        t = np.ascontiguousarray(np.broadcast_to(t, (n_c, n_t)))
    if aux is not None:
        aux = (np.asarray(aux[0], np.float64), np.asarray(aux[1], np.float64))
        if aux[0].shape != (n_c, n_t):
            aux = (np.ascontiguousarray(np.broadcast_to(aux[0], (n_c, n_t))), aux[1])
        if aux[1].shape != (n_c,):
            aux = (aux[0], np.ascontiguousarray(np.broadcast_to(aux[1], (n_c,))))
    free_dev = be.asarray(np.asarray(free, bool), device=dev)
    # rows per compiled call: one program whatever the number of rows
    per_call = rows_per_call(dev, n_t) if jx else n_b
    if jx:
        def inv(s: np.ndarray) -> np.ndarray:
            return 1.0 / np.asarray(s, np.float64)

        curves = [_kept_blocks(be, dev, t, "t", per_call),
                  _kept_blocks(be, dev, y, "y", per_call),
                  _kept_blocks(be, dev, sigma, "w", per_call, inv),
                  _kept_blocks(be, dev, mask, "mask", per_call)]
        if aux is not None:
            curves += [_kept_blocks(be, dev, aux[0], "m", per_call),
                       _kept_blocks(be, dev, aux[1], "dt", per_call)]
        run_of, lo_u, hi_u = _runs(lo, hi)
        bounds = [_upload_blocks(be, dev, lo_u, per_call),
                  _upload_blocks(be, dev, hi_u, per_call)]
    else:
        w_all = 1.0 / np.asarray(sigma, np.float64)
        aux_m = np.ones((n_c, n_t)) if aux is None else aux[0]
        aux_dt = np.ones(n_c) if aux is None else aux[1]

    def chunk_args(idx: np.ndarray, first: bool) -> list:
        # t, y, w, mask, lo, hi, aux_m, aux_dt, free, x, lam, it for solve rows idx
        if not jx:
            c = rows[idx]
            return [t[c], y[c], w_all[c], mask[c], lo[idx], hi[idx], aux_m[c], aux_dt[c],
                    free_dev, x_cur[idx], lam[idx], it[idx]]
        tc, yc, wc, mc, *ax = _take(be, dev, curves, rows[idx])
        lo_c, hi_c = _take(be, dev, bounds, run_of[idx])
        if not ax:
            ax = [_const(be, dev, 1.0, (per_call, n_t), np.float64),
                  _const(be, dev, 1.0, (per_call,), np.float64)]
        if first:  # every row starts from lam = 1e-3, it = 0
            lam_d = _const(be, dev, 1e-3, (per_call,), np.float64)
            it_d = _const(be, dev, 0, (per_call,), np.int64)
        else:
            lam_d, it_d = be.asarray(lam[idx], device=dev), be.asarray(it[idx], device=dev)
        return [tc, yc, wc, mc, lo_c, hi_c, *ax, free_dev,
                be.asarray(x_cur[idx], device=dev), lam_d, it_d]

    # Fixed-size chunks of curves: one compiled program whatever the number of curves
    # (the GUI compiles it once at start-up), and a vmapped while-loop that waits for
    # its slowest lane only within a chunk. First 10 iterations for every curve, then
    # the rest for the unfinished ones.
    first_pass = 10 if jx else int(max_iter)
    x_cur = np.asarray(x0, np.float64).copy()
    lam = np.full(n_b, 1e-3)
    it = np.zeros(n_b, np.int64)
    code = np.full(n_b, _CODE_RUNNING, np.int64)
    cost = np.full(n_b, np.nan)
    jac = np.full((n_b, n_t, n_par), np.nan)
    active = np.arange(n_b)
    for n_pass, it_stop in enumerate((first_pass, int(max_iter))):
        for s in range(0, active.size, max(1, per_call)):
            if cancel is not None:
                cancel.raise_if_cancelled()
            act = active[s:s + per_call]
            idx = np.concatenate([act, np.full(max(0, per_call - act.size), act[0])]) \
                if jx else act
            out = solver(*chunk_args(idx, n_pass == 0), np.int64(it_stop))
            out = be.block_until_ready(out)
            xs, cs, js, ls, its, codes = (be.to_numpy(o)[: act.size] for o in out)
            x_cur[act], cost[act], jac[act] = xs, cs, js
            lam[act], it[act], code[act] = ls, its, codes
        active = active[code[active] == _CODE_RUNNING]
        if not active.size:
            break
    return x_cur, cost, jac, it, code
