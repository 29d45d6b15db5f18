"""The NUTS samplers of the Bayesian g2 fits, where their chains run, and the summary
of their draws.

:func:`nuts_devices` places the chains: host CPU devices by default (one per chain
when there are enough, else one), the GPU only when asked for. ``per_bin``
(:func:`_run_per_bin_chunks`): NUTS vectorised over bins and chains in chunks of
:data:`BIN_CHUNK` bins through two compiled programs per model and setting (start,
block of transitions; :class:`_PerBinSampler`, cached by :func:`_per_bin_programs`),
traced without eager JAX operations and compiled at once in threads, resumable for
the extension round; ``joint`` (:func:`_run_joint`): all bins as one NumPyro model
through ``MCMC``. :func:`_summarise` turns draws into a :class:`BayesFitResult` with
the sampler gates. Every step that may trace a model holds
:func:`xpcsviewer.fitting.numpyro_lock.hold`. Apart from
:mod:`xpcsviewer.fitting.bayes`, which chooses the bins, starts and priors and
assembles the result.
"""

from __future__ import annotations

import functools
import math
from concurrent.futures import Future
from typing import Any

import numpy as np

from xpcsviewer.backends import get_backend

# The JAX backend switches x64 on (and checks it) before NumPyro creates any array.
get_backend("jax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from numpyro.diagnostics import hpdi, split_gelman_rubin  # noqa: E402
from numpyro.infer import MCMC, NUTS, init_to_value  # noqa: E402

from xpcsviewer.fitting import numpyro_lock  # noqa: E402
from xpcsviewer.fitting.bayes_devices import (  # noqa: E402
    NUTS_DEVICES,
    chain_method_of,
    mcmc_chain_method,
    nuts_devices,
)
from xpcsviewer.fitting.bayes_diagnostics import (  # noqa: E402
    CONVERGENCE,
    HDI_PROB,
    ess_bulk,
    ess_min,
    ess_tail,
)
from xpcsviewer.fitting.bayes_model import g2_model  # noqa: E402
from xpcsviewer.fitting.bayes_problem import _Problem, _Run  # noqa: E402
from xpcsviewer.fitting.bayes_result import BayesFitResult  # noqa: E402
from xpcsviewer.fitting.models import G2Model, model_param_names  # noqa: E402
from xpcsviewer.progress import report  # noqa: E402

__all__ = ["BIN_CHUNK", "NUTS_DEVICES", "chain_method_of", "nuts_devices"]


def _run_joint(p: _Problem, run: _Run, progress, cancel):
    """All bins as one NumPyro model (one step size and mass matrix for all), chains on
    ``run.devices`` (:func:`nuts_devices`)."""
    spec, n_blocks, num_warmup, num_chains = (run.spec, run.n_blocks, run.spec.num_warmup,
                                              run.spec.num_chains)
    kernel = NUTS(
        g2_model,
        init_strategy=init_to_value(values=p.init_values),
        target_accept_prob=spec.target_accept_prob,
        max_tree_depth=spec.max_tree_depth,
        dense_mass=spec.dense_mass,
    )
    mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=run.per_block,
                num_chains=num_chains, chain_method=mcmc_chain_method(run.devices),
                progress_bar=False)
    home = run.devices[0]  # the chains' arrays are made there, not on the default device
    put = functools.partial(jax.tree_util.tree_map, jnp.asarray)  # uncommitted: pmap-able
    with jax.default_device(home):
        args = (put(p.t), put(p.y), put(p.sigma), put(p.mask))
        kwargs = {"model": p.model, "lower": put(p.lower), "upper": put(p.upper),
                  "fixed": put(p.fixed),
                  "aux": None if p.aux is None else (put(p.aux[0]), p.aux[1]),
                  "unit_stretch": p.unit_stretch, "t_ref": put(p.t_ref)}
    fields = ("diverging", "energy", "num_steps")
    total = n_blocks + 1
    report(progress, cancel, 0, total, f"NUTS warm-up ({num_warmup} steps, {num_chains} chains)")
    with numpyro_lock.hold(progress, cancel), jax.default_device(home):
        mcmc.warmup(jax.random.PRNGKey(int(spec.seed)), *args, extra_fields=fields,
                    collect_warmup=False, **kwargs)
    report(progress, cancel, 1, total, "sampling")
    chunks, div, energy, steps = [], [], [], []
    for blk in range(n_blocks):
        with numpyro_lock.hold(progress, cancel), jax.default_device(home):
            mcmc.run(mcmc.post_warmup_state.rng_key, *args, extra_fields=fields, **kwargs)
        smp = mcmc.get_samples(group_by_chain=True)
        chunks.append({k: np.asarray(v) for k, v in smp.items()})
        extra = mcmc.get_extra_fields(group_by_chain=True)
        div.append(np.asarray(extra["diverging"]))
        energy.append(np.asarray(extra["energy"]))
        steps.append(np.asarray(extra["num_steps"]))
        mcmc.post_warmup_state = mcmc.last_state
        report(progress, cancel, blk + 2, total, f"block {blk + 1}/{n_blocks}")
    draws = {k: np.concatenate([c[k] for c in chunks], axis=1) for k in chunks[0]}
    n_b = p.y.shape[0]
    # one joint density: every bin shares the transitions' divergences and energy
    d = np.concatenate(div, axis=1)
    e = np.concatenate(energy, axis=1)
    return (draws, np.repeat(d[:, :, None], n_b, axis=2),
            np.repeat(e[:, :, None], n_b, axis=2), np.concatenate(steps, axis=1))


def _one_bin_model(model: G2Model, unit_stretch: bool, has_aux: bool):
    """A 1-bin NumPyro model taking all data as positional arguments (vmappable)."""

    def one_bin(t, yb, sb, mb, lo, hi, fx, aux_m, aux_dt, t_ref):
        g2_model(t, yb, sb, mb, model=model, lower=lo, upper=hi, fixed=fx,
                 aux=(aux_m, aux_dt) if has_aux else None, unit_stretch=unit_stretch,
                 t_ref=t_ref)

    return one_bin


def _signature(args: Any) -> tuple:
    # what a compiled program is specialised to: structure, shapes and dtypes
    leaves, tree = jax.tree_util.tree_flatten(args)
    return tree, tuple((tuple(np.shape(x)), np.dtype(x.dtype).str) for x in leaves)


class _Program:
    """One jitted program, compiled ahead of its first call (``jax.stages``) for each
    argument signature it meets, so that several programs can compile at once
    (:func:`_compile_all`): XLA compiles outside the GIL, on the other cores. A
    signature being compiled is a future: a second fit waits for it instead of
    compiling it again."""

    def __init__(self, fn: Any, in_shardings: Any, out_shardings: Any) -> None:
        self._jit = jax.jit(fn, in_shardings=in_shardings, out_shardings=out_shardings)
        self._compiled: dict[tuple, Future] = {}

    def missing(self, *args: Any) -> bool:
        return _signature(args) not in self._compiled

    def lower(self, *args: Any) -> tuple:
        """Trace and lower for ``args`` (arrays or ShapeDtypeStructs) -> an item for
        :func:`_compile_all`, which must follow; hold the NumPyro lock around this."""
        key = _signature(args)
        fut: Future = Future()
        self._compiled[key] = fut
        try:
            return self, key, fut, self._jit.lower(*args)
        except BaseException as exc:
            _drop((self, key, fut, None), exc)
            raise

    def __call__(self, *args: Any) -> Any:
        fut = self._compiled.get(_signature(args))
        if fut is None:  # not prepared: trace, lower and compile now
            item = self.lower(*args)
            _compile_all([item])
            fut = item[2]
        return fut.result()(*args)


def _drop(item: tuple, exc: BaseException) -> None:
    prog, key, fut, _ = item
    if prog._compiled.get(key) is fut:
        del prog._compiled[key]
    if not fut.done():
        fut.set_exception(exc)


def _compile_all(todo: list[tuple]) -> None:
    """Compile lowered programs (:meth:`_Program.lower` items) at once, each in its own
    thread."""
    from concurrent.futures import ThreadPoolExecutor

    def one(item: tuple) -> None:
        try:
            item[2].set_result(item[3].compile())
        except BaseException as exc:
            _drop(item, exc)
            raise

    if len(todo) <= 1:
        for item in todo:
            one(item)
        return
    with ThreadPoolExecutor(max_workers=len(todo), thread_name_prefix="xpcs-nuts-xla") as pool:
        for fut in [pool.submit(one, item) for item in todo]:
            fut.result()


class _PerBinSampler:
    """The per-bin NUTS programs of one model and sampler setting on some devices.

    ``init(values, args, key)``: constrained start values (B, 1) per site, the bins'
    arguments and a PRNG key -> chain states (C, B, ...); ``block(state, args, n)``:
    ``n`` <= ``steps`` NUTS transitions -> (state, (constrained draws incl.
    deterministic sites (C, steps, B, 1), diverging, energy, num_steps (C, steps, B))),
    of which the first ``n`` are real. One block program serves the warm-up, the
    draws and the extension round, whatever their lengths. Chains are split over the
    devices (``shard_map``: each device runs its own chains' loops, as ``pmap`` did),
    bins vectorised within a device.
    """

    def __init__(self, one_bin: Any, num_warmup: int, target_accept_prob: float,
                 max_tree_depth: int, num_chains: int, devices: tuple) -> None:
        from jax.sharding import Mesh, NamedSharding
        from jax.sharding import PartitionSpec as P
        from numpyro.infer.hmc import hmc
        from numpyro.infer.util import constrain_fn, potential_energy, unconstrain_fn

        self.devices = devices
        mesh = Mesh(np.array(devices), ("chain",))
        self.chains = NamedSharding(mesh, P("chain"))
        self.replicated = NamedSharding(mesh, P())

        def potential(*args):  # the bins' data as arguments: one program for all data
            return functools.partial(potential_energy, one_bin, args, {})

        init_kernel, sample_kernel = hmc(potential_fn_gen=potential, algo="NUTS")

        def sharded(fn, in_specs):  # each device runs fn on its own chains
            return jax.shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=P("chain"),
                                 check_vma=False)

        # A device's chains x bins are one axis of lanes, each an independent sampler,
        # vectorised by one vmap: nested vmaps (chains of bins) batch NUTS' nested
        # while loops once more per level (20 s of tracing instead of 1 s).
        def lanes(tree, n_c):  # (C', B, ...) -> (C' B, ...)
            return jax.tree_util.tree_map(lambda a: a.reshape(n_c * a.shape[1], *a.shape[2:]),
                                          tree)

        def unlanes(tree, n_c, axis=0):  # (..., C' B, ...) -> (..., C', B, ...)
            return jax.tree_util.tree_map(
                lambda a: a.reshape(*a.shape[:axis], n_c, a.shape[axis] // n_c,
                                    *a.shape[axis + 1:]), tree)

        def tiled(args, n_c):  # the bins' arguments for every chain: (C' B, ...)
            return jax.tree_util.tree_map(
                lambda a: jnp.broadcast_to(a, (n_c, *a.shape)).reshape(-1, *a.shape[1:]), args)

        def init_lane(zz, a, k):
            return init_kernel(
                zz, num_warmup, target_accept_prob=target_accept_prob,
                max_tree_depth=max_tree_depth, dense_mass=True, model_args=a, rng_key=k,
                inverse_mass_matrix=_start_metric(potential(*a), zz) if _START_METRIC
                else None)

        def init_local(z, args, keys):  # (C', B, ...) start points and keys
            n_c = keys.shape[0]
            return unlanes(jax.vmap(init_lane)(lanes(z, n_c), tiled(args, n_c),
                                               lanes(keys, n_c)), n_c)

        init_sharded = sharded(init_local, (P("chain"), P(), P("chain")))

        def init(values, args, key):
            z = jax.vmap(lambda a, v: unconstrain_fn(one_bin, a, {}, v))(args, values)
            n_b = jax.tree_util.tree_leaves(args)[0].shape[0]
            keys = jax.random.split(key, num_chains * n_b).reshape(num_chains, n_b, -1)
            zc = jax.tree_util.tree_map(
                lambda a: jnp.broadcast_to(a, (num_chains, *a.shape)), z)
            return init_sharded(zc, args, keys)

        step_lanes = jax.vmap(lambda st, a: sample_kernel(st, model_args=a))
        post_lanes = jax.vmap(lambda a, z: constrain_fn(one_bin, a, {}, z,
                                                        return_deterministic=True))
        self._blocks: dict[int, _Program] = {}

        def block_of(steps: int):
            def block_local(state, args, n):
                n_c = jax.tree_util.tree_leaves(state)[0].shape[0]
                args_l = tiled(args, n_c)

                def body(s, i):
                    s = jax.lax.cond(i < n, lambda s: step_lanes(s, args_l), lambda s: s, s)
                    return s, (post_lanes(args_l, s.z), s.diverging, s.energy, s.num_steps)

                state, out = jax.lax.scan(body, lanes(state, n_c), jnp.arange(steps))
                # (steps, C' B, ...) -> (C', steps, B, ...)
                out = jax.tree_util.tree_map(lambda a: jnp.swapaxes(a, 0, 1),
                                             unlanes(out, n_c, axis=1))
                return unlanes(state, n_c), out

            return _Program(sharded(block_local, (P("chain"), P(), P())),
                            (self.chains, self.replicated, self.replicated),
                            self.chains)

        self._block_of = block_of
        self.init = _Program(init, (self.replicated,) * 3, self.chains)

    def block(self, steps: int) -> _Program:
        if steps not in self._blocks:
            self._blocks[steps] = self._block_of(steps)
        return self._blocks[steps]

    def missing(self, values: Any, args: Any, key: Any, steps: int) -> bool:
        """Whether a run of ``steps``-long blocks needs a program not compiled yet."""
        if self.init.missing(values, args, key):
            return True
        state = jax.eval_shape(self.init._jit, values, args, key)
        return self.block(steps).missing(state, args, np.int32(steps))

    def prepare(self, values: Any, args: Any, key: Any, steps: int) -> list:
        """Lower the programs a run of ``steps``-long blocks needs and has not compiled
        (the init first: it fixes the kernel's settings the block reads); hold the
        NumPyro lock around this, then :func:`_compile_all` the result at once."""
        todo: list[tuple] = []
        try:
            state = None
            if self.init.missing(values, args, key):
                todo.append(self.init.lower(values, args, key))
                state = todo[-1][3].out_info
            if state is None:
                state = jax.eval_shape(self.init._jit, values, args, key)
            block, n = self.block(steps), np.int32(steps)
            if block.missing(state, args, n):
                todo.append(block.lower(state, args, n))
        except BaseException as exc:
            for item in todo:
                _drop(item, exc)
            raise
        return todo


#: Start the warm-up from the curvature at the start point (see _start_metric).
_START_METRIC = True


def _start_metric(potential: Any, z: dict) -> Any:
    """The inverse mass matrix the warm-up starts from: the inverse Hessian of the
    potential at the start (the least-squares optimum, near the posterior mode; the
    Laplace covariance of the unconstrained parameters), no wider than NumPyro's
    identity in any direction (curvature below 1 and negative curvature give 1).

    The windowed adaptation replaces it with the draws' covariance at the end of its
    first window, as it replaces the identity; only the first window's trajectories
    change: with the identity the scales of log tau (~0.1) and baseline (~1e-3) differ
    by 100x and its trees ran to depth 10 (1023 steps), the most expensive part of a
    cold fit.
    """
    from jax.flatten_util import ravel_pytree

    flat, unravel = ravel_pytree(z)
    h = jax.hessian(lambda f: potential(unravel(f)))(flat)
    lam, vec = jnp.linalg.eigh(0.5 * (h + h.T))
    inv = (vec / jnp.maximum(lam, 1.0)) @ vec.T
    return jnp.where(jnp.all(jnp.isfinite(inv)), inv, jnp.eye(flat.size))


@functools.lru_cache(maxsize=16)
def _per_bin_programs(model: G2Model, unit_stretch: bool, has_aux: bool, num_warmup: int,
                      target_accept_prob: float, max_tree_depth: int, num_chains: int,
                      devices: tuple) -> _PerBinSampler:
    """The per-bin sampler of a model and setting, cached so that fitting the next file
    of the same shape reuses its compiled programs (no recompilation). Nothing runs or
    compiles here: no eager operation traces the model before the programs do."""
    return _PerBinSampler(_one_bin_model(model, unit_stretch, has_aux), num_warmup,
                          target_accept_prob, max_tree_depth, num_chains, devices)


def _key_data(seed: int) -> np.ndarray:
    """``jax.random.PRNGKey(seed)``'s raw data, made without a JAX operation."""
    seed = int(seed)
    if 0 <= seed < 2 ** 63:
        return np.array([(seed >> 32) & 0xFFFFFFFF, seed & 0xFFFFFFFF], np.uint32)
    return np.asarray(jax.random.PRNGKey(seed))  # pragma: no cover - negative seeds


#: Bins sampled together by the per-bin kernel. Every file's bins go through programs
#: of this one lane count (and delays padded to a power of two), so a session compiles
#: the sampler once (the GUI does that at start-up) instead of once per bin count.
BIN_CHUNK = 8


def _placed_like(new: Any, old: Any) -> Any:
    sharding = getattr(old, "sharding", None)
    return new if sharding is None else jax.device_put(new, sharding)


def _pad_axis(a: Any, n: int, axis: int, value: float) -> Any:
    pad = n - a.shape[axis]
    if pad <= 0:
        return a
    widths = [(0, 0)] * a.ndim
    widths[axis] = (0, pad)
    return np.pad(np.asarray(a), widths, constant_values=value)


def _run_per_bin_chunks(p: _Problem, run: _Run, progress, cancel):
    """:func:`_run_per_bin` over chunks of :data:`BIN_CHUNK` bins with delays padded to
    a power of two (masked points add nothing to the likelihood); chains on
    ``run.devices`` (:func:`nuts_devices`)."""
    from xpcsviewer.fitting.lsq import bucket_delays

    n_b, n_t = p.y.shape
    t_pad = bucket_delays(n_t)
    aux = None if p.aux is None else (
        _pad_axis(np.asarray(p.aux[0], np.float64), t_pad, 0, 1.0), p.aux[1])
    p = p.with_(t=_pad_axis(np.asarray(p.t), t_pad, 0, 1.0), y=_pad_axis(p.y, t_pad, 1, 0.0),
                sigma=_pad_axis(p.sigma, t_pad, 1, 1.0),
                mask=_pad_axis(p.mask, t_pad, 1, False), aux=aux)
    n_chunks = math.ceil(n_b / BIN_CHUNK)
    parts = []
    kept = []  # per chunk: (final state, per-bin arguments, sampler, lock step)
    for k in range(n_chunks):
        real = np.arange(k * BIN_CHUNK, min(n_b, (k + 1) * BIN_CHUNK))
        idx = np.concatenate([real, np.full(BIN_CHUNK - real.size, real[0])])

        def sub(d: dict, idx: np.ndarray = idx) -> dict:
            return {n: np.asarray(v, np.float64)[idx] for n, v in d.items()}

        def chunk_progress(done, total, msg="", _k=k):
            if progress is not None:
                head = f"bins {_k * BIN_CHUNK + 1}-{min(n_b, (_k + 1) * BIN_CHUNK)}: " \
                    if n_chunks > 1 else ""
                progress(_k * total + done, n_chunks * total, head + msg)

        chunk = p.with_(y=p.y[idx], sigma=p.sigma[idx], mask=p.mask[idx],
                        lower=sub(p.lower), upper=sub(p.upper), fixed=sub(p.fixed),
                        init_values=sub(p.init_values), t_ref=p.t_ref[idx])
        out = _run_per_bin(chunk, run.seeded(int(run.spec.seed) + 7919 * k),
                           chunk_progress if progress is not None else None, cancel)
        draws, div, energy, steps, kept_k = out
        kept.append(kept_k)
        m = real.size
        parts.append(({n: v[..., :m] for n, v in draws.items()}, div[..., :m],
                      energy[..., :m], steps[..., :m] if np.ndim(steps) >= 3 else steps))
    draws = {n: np.concatenate([pt[0][n] for pt in parts], axis=-1) for n in parts[0][0]}
    cat = (lambda i: np.concatenate([pt[i] for pt in parts], axis=-1))  # noqa: E731

    def resume(bins: list[int], n_more: int, per: int):
        """Go on sampling ``bins`` for ``n_more`` blocks of ``per`` draws from where
        their chains stopped, in lanes of the same programs; draws (C, S', len(bins))."""
        outs = []
        for c0 in range(0, len(bins), BIN_CHUNK):
            sel = bins[c0:c0 + BIN_CHUNK]
            lanes = [(b // BIN_CHUNK, b % BIN_CHUNK) for b in sel]
            lanes += [lanes[0]] * (BIN_CHUNK - len(lanes))

            def gather(axis, pick, lanes=lanes):
                return jax.tree_util.tree_map(
                    lambda *leaves: np.stack([np.asarray(leaves[k]).take(j, axis=axis)
                                              for k, j in lanes], axis=axis),
                    *[pick(kk) for kk in kept])

            # placed as the first run's arrays were (the compiled programs' placement)
            state = jax.tree_util.tree_map(_placed_like, gather(1, lambda kk: kk[0]),
                                           kept[0][0])  # (chains, lanes, ...)
            args = jax.tree_util.tree_map(_placed_like, gather(0, lambda kk: kk[1]),
                                          kept[0][1])  # (lanes, ...)
            sampler, step = kept[0][2], kept[0][3]
            zs, div, energy, steps_ = [], [], [], []
            for _ in range(n_more):
                with step():
                    state, (z, d, e, ns) = _block(sampler, state, args, per, run.per_block)
                zs.append(z)
                div.append(d)
                energy.append(e)
                steps_.append(ns)
                report(progress, cancel, len(zs), n_more, f"more draws {len(zs)}/{n_more}")
            cons = {k: np.concatenate([z[k] for z in zs], axis=1) for k in zs[0]}
            m = len(sel)
            outs.append(({k: v[..., 0][..., :m] for k, v in cons.items()},
                         np.concatenate(div, axis=1)[..., :m],
                         np.concatenate(energy, axis=1)[..., :m]))
        return ({k: np.concatenate([o[0][k] for o in outs], axis=-1) for k in outs[0][0]},
                np.concatenate([o[1] for o in outs], axis=-1),
                np.concatenate([o[2] for o in outs], axis=-1))

    return (draws, cat(1), cat(2), cat(3)), resume


def _block(sampler: _PerBinSampler, state: Any, args: Any, n: int, steps: int):
    """``n`` transitions through the ``steps``-long block program; host arrays of
    the first ``n`` (constrained draws, diverging, energy, num_steps)."""
    state, (z, d, e, ns) = sampler.block(steps)(state, args, np.int32(n))
    z, d, e, ns = jax.device_get((z, d, e, ns))
    return state, ({k: v[:, :n] for k, v in z.items()}, d[:, :n], e[:, :n], ns[:, :n])


def _run_per_bin(p: _Problem, run: _Run, progress, cancel):
    """NUTS vmapped over bins (and chains): each bin adapts its own step size and a
    dense 2-4 parameter mass matrix, so one badly conditioned bin does not shrink the
    others' step size; two compiled programs (start, block of transitions)."""
    (n_b, n_t), spec = p.y.shape, run.spec
    per_block, n_blocks, num_warmup = run.per_block, run.n_blocks, spec.num_warmup
    has_aux = p.aux is not None
    aux_m = np.asarray(p.aux[0], np.float64) if has_aux else np.ones(n_t)
    aux_dt = np.float64(p.aux[1] if has_aux else 1.0)

    def col(v):
        return np.asarray(v, np.float64)[:, None]

    # Per-bin arguments with a leading bin axis; each bin is a 1-bin model. Host
    # arrays, placed on the chains' devices in one transfer (no eager JAX operation).
    bin_args = (
        np.broadcast_to(np.asarray(p.t, np.float64), (n_b, n_t)),
        np.asarray(p.y, np.float64)[:, None, :],
        np.asarray(p.sigma, np.float64)[:, None, :],
        np.asarray(p.mask, bool)[:, None, :],
        {k: col(v) for k, v in p.lower.items()},
        {k: col(v) for k, v in p.upper.items()},
        {k: col(v) for k, v in p.fixed.items()},
        np.broadcast_to(aux_m, (n_b, n_t)),
        np.broadcast_to(aux_dt, (n_b,)),
        col(p.t_ref),
    )
    values = {k: col(v) for k, v in p.init_values.items()}
    key = _key_data(spec.seed)
    # Each step that may trace the model holds the process-wide NumPyro lock; the
    # compiled programs then run while another thread waits its turn.
    step = functools.partial(numpyro_lock.hold, progress, cancel)
    with step():
        sampler = _per_bin_programs(p.model, p.unit_stretch, has_aux, int(num_warmup),
                                    float(spec.target_accept_prob), int(spec.max_tree_depth),
                                    int(spec.num_chains), tuple(run.devices))
    bin_args, values, key = jax.device_put((bin_args, values, key), sampler.replicated)
    with step():
        if sampler.missing(values, bin_args, key, per_block):
            # new programs (seconds without the persistent cache): say so, or a user
            # sees a stuck bar
            report(progress, cancel, 0, 1, "compiling the sampler (first run only)\u2026")
        todo = sampler.prepare(values, bin_args, key, per_block)
    _compile_all(todo)  # at once, each on its own core
    report(progress, cancel, 0, 1, f"NUTS warm-up ({num_warmup} steps, {spec.num_chains} chains)")
    with step():
        state = sampler.init(values, bin_args, key)

    n_wblocks = max(1, math.ceil(num_warmup / max(1, per_block))) if num_warmup else 0
    w_per = math.ceil(num_warmup / n_wblocks) if n_wblocks else 0
    total = n_wblocks + n_blocks
    done = 0
    remaining = num_warmup
    while remaining > 0:
        n = min(w_per, remaining)
        with step():
            state, _ = sampler.block(per_block)(state, bin_args, np.int32(n))
        state = jax.block_until_ready(state)  # dispatch is asynchronous: honest progress
        remaining -= n
        done += 1
        report(progress, cancel, done, total, "warm-up")
    zs, div, energy, steps = [], [], [], []
    for _ in range(n_blocks):
        with step():
            state, (z, d, e, ns) = _block(sampler, state, bin_args, per_block, per_block)
        zs.append(z)
        div.append(d)
        energy.append(e)
        steps.append(ns)
        done += 1
        report(progress, cancel, done, total, f"sampling {done - n_wblocks}/{n_blocks}")
    # (C, S, B, 1) constrained draws, deterministic sites (tau) included
    draws = {k: np.concatenate([z[k] for z in zs], axis=1)[..., 0] for k in zs[0]}
    return (draws, np.concatenate(div, axis=1), np.concatenate(energy, axis=1),
            np.concatenate(steps, axis=1), (state, bin_args, sampler, step))


def _summarise(model, samples, div_bin, bf, fixed, init, run: _Run, aux) -> BayesFitResult:
    """The summaries and sampler gates of one run's draws (C, S, B) per parameter."""
    spec, num_chains, num_samples = run.spec, run.spec.num_chains, run.spec.num_samples
    # the joint sampler repeats its (shared) transitions for every bin
    n_div = int(div_bin[0]) if spec.sampler == "joint" else int(div_bin.sum())
    names = model_param_names(model)
    mean, std, med, lo, hi, rh, eb, et = ({} for _ in range(8))
    for n in names:
        x = samples[n]
        flat = x.reshape(-1, x.shape[-1])
        mean[n] = flat.mean(axis=0)
        std[n] = flat.std(axis=0, ddof=1) if flat.shape[0] > 1 else np.zeros(flat.shape[1])
        med[n] = np.median(flat, axis=0)
        if n in fixed:
            lo[n] = hi[n] = mean[n].copy()
            nanv = np.full(flat.shape[1], np.nan)
            rh[n], eb[n], et[n] = nanv, nanv.copy(), nanv.copy()
            continue
        interval = np.asarray(hpdi(flat, prob=HDI_PROB, axis=0))
        lo[n], hi[n] = interval[0], interval[1]
        with np.errstate(all="ignore"):
            rh[n] = np.asarray(split_gelman_rubin(x))
        eb[n] = ess_bulk(x)
        et[n] = ess_tail(x)
    free = [n for n in names if n not in fixed]
    n_b = samples[names[0]].shape[-1]
    conv = np.ones(n_b, dtype=bool)
    for n in free:
        conv &= np.nan_to_num(rh[n], nan=np.inf) <= CONVERGENCE["r_hat_max"]
        conv &= np.nan_to_num(eb[n], nan=0.0) >= ess_min(num_chains)
        conv &= np.nan_to_num(et[n], nan=0.0) >= ess_min(num_chains)
    conv &= div_bin <= CONVERGENCE["divergences_max"]
    conv &= np.all(np.nan_to_num(bf, nan=0.0) >= CONVERGENCE["bfmi_min"], axis=0)
    used = np.asarray(init.n_points) > sum(1 for n in names if n not in fixed)
    conv &= used
    return BayesFitResult(
        model=model, mean=mean, std=std, median=med, hdi_low=lo, hdi_high=hi,
        r_hat=rh, ess_bulk=eb, ess_tail=et, divergences=n_div, bfmi=bf, converged=conv,
        samples=samples, num_chains=num_chains, num_samples=num_samples,
        num_warmup=spec.num_warmup, seed=int(spec.seed), chain_method=run.method, aux=aux,
        fixed={n: n in fixed for n in names}, used_bins=used, divergences_per_bin=div_bin,
        draws_per_chain=np.full(n_b, int(num_samples)),
    )
