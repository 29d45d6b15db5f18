"""The NUTS samplers of the Bayesian g2 fits and the summary of their draws.

``per_bin`` (:func:`_run_per_bin_chunks`): NUTS vmapped over bins and chains in
chunks of :data:`BIN_CHUNK` bins, through compiled programs cached per model and
shape (:func:`_per_bin_programs`), resumable for the extension round; ``joint``
(:func:`_run_joint`): all bins as one NumPyro model through ``MCMC``.
:func:`_summarise` turns draws into a :class:`BayesFitResult` with the sampler gates.
Every step that may trace a model holds :func:`xpcsviewer.fitting.numpyro_lock.hold`.
Apart from :mod:`xpcsviewer.fitting.bayes`, which chooses the bins, starts and
priors and assembles the result.
"""

from __future__ import annotations

import functools
import math
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
from xpcsviewer.fitting.bayes_diagnostics import (  # noqa: E402
    CONVERGENCE,
    HDI_PROB,
    ess_bulk,
    ess_min,
    ess_tail,
)
from xpcsviewer.fitting.bayes_model import g2_model  # noqa: E402
from xpcsviewer.fitting.bayes_result import BayesFitResult  # noqa: E402
from xpcsviewer.fitting.models import G2Model, model_param_names  # noqa: E402
from xpcsviewer.progress import report  # noqa: E402

__all__ = ["BIN_CHUNK"]


def _choose_chain_method(chain_method: str, num_chains: int) -> str:
    if chain_method != "auto":
        return chain_method
    # "parallel" needs one device per chain (XLA host devices set before JAX starts);
    # otherwise vectorised chains run in one program, which measured faster on CPU
    # than sequential chains (docs/fitting.md).
    if num_chains > 1 and jax.local_device_count() >= num_chains:
        return "parallel"
    return "vectorized"


def _run_joint(t, y, sigma, mask, model, lower, upper, fixed, aux, unit_stretch,
               init_values, num_warmup, per_block, n_blocks, num_chains, method, seed,
               target_accept_prob, max_tree_depth, dense_mass, progress, cancel, t_ref):
    """All bins as one NumPyro model (one step size and mass matrix for all)."""
    kernel = NUTS(
        g2_model,
        init_strategy=init_to_value(values=init_values),
        target_accept_prob=target_accept_prob,
        max_tree_depth=max_tree_depth,
        dense_mass=dense_mass,
    )
    mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=per_block,
                num_chains=num_chains, chain_method=method, progress_bar=False)
    args = (jnp.asarray(t), jnp.asarray(y), jnp.asarray(sigma), jnp.asarray(mask))
    kwargs = {"model": model, "lower": lower, "upper": upper, "fixed": fixed, "aux": aux,
              "unit_stretch": unit_stretch, "t_ref": jnp.asarray(t_ref)}
    fields = ("diverging", "energy", "num_steps")
    total = n_blocks + 1
    report(progress, cancel, 0, total, f"NUTS warm-up ({num_warmup} steps, {num_chains} chains)")
    with numpyro_lock.hold(progress, cancel):
        mcmc.warmup(jax.random.PRNGKey(int(seed)), *args, extra_fields=fields,
                    collect_warmup=False, **kwargs)
    report(progress, cancel, 1, total, "sampling")
    chunks, div, energy, steps = [], [], [], []
    for blk in range(n_blocks):
        with numpyro_lock.hold(progress, cancel):
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
    n_b = y.shape[0]
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


@functools.lru_cache(maxsize=16)
def _per_bin_programs(model: G2Model, unit_stretch: bool, has_aux: bool, num_warmup: int,
                      target_accept_prob: float, max_tree_depth: int, method: str,
                      num_chains: int, example: Any):
    """Compiled init / block / post-processing programs, cached so that fitting the
    next file of the same shape reuses them (no recompilation).

    ``example`` is a hashable stand-in for the data structure (site names); the
    potential is built with ``dynamic_args=True``, so it takes the data as arguments.
    """
    from numpyro.infer.hmc import hmc
    from numpyro.infer.util import initialize_model, unconstrain_fn

    one_bin = _one_bin_model(model, unit_stretch, has_aux)
    first_args, first_init = example.value
    info = initialize_model(jax.random.PRNGKey(0), one_bin,
                            init_strategy=init_to_value(values=first_init),
                            model_args=first_args, dynamic_args=True)
    init_kernel, sample_kernel = hmc(potential_fn_gen=info.potential_fn, algo="NUTS")

    def init_bins(z, args, keys):
        return jax.vmap(lambda zz, a, k: init_kernel(
            zz, num_warmup, target_accept_prob=target_accept_prob,
            max_tree_depth=max_tree_depth, dense_mass=True, model_args=a, rng_key=k,
        ))(z, args, keys)

    def block(state, args, n_steps):
        step_bins = jax.vmap(lambda st, a: sample_kernel(st, model_args=a))

        def body(s, _):
            s = step_bins(s, args)
            return s, (s.z, s.diverging, s.energy, s.num_steps)

        return jax.lax.scan(body, state, None, length=n_steps)

    if method == "parallel":
        devs = jax.local_devices()[:num_chains]
        init = jax.pmap(init_bins, in_axes=(0, None, 0), devices=devs)
        blocks: dict[int, Any] = {}

        def run_block(st, args, n):
            if n not in blocks:
                blocks[n] = jax.pmap(lambda s, a: block(s, a, n), in_axes=(0, None), devices=devs)
            return blocks[n](st, args)
    else:
        init = jax.jit(jax.vmap(init_bins, in_axes=(0, None, 0)))
        blocks = {}

        def run_block(st, args, n):
            if n not in blocks:
                blocks[n] = jax.jit(jax.vmap(lambda s, a: block(s, a, n), in_axes=(0, None)))
            return blocks[n](st, args)

    post = jax.jit(jax.vmap(jax.vmap(jax.vmap(
        lambda a, z: info.postprocess_fn(*a)(z), in_axes=(0, 0)), in_axes=(None, 0)),
        in_axes=(None, 0)))
    unconstrain = jax.jit(jax.vmap(
        lambda a, v: unconstrain_fn(one_bin, a, {}, v)
    ))
    return init, run_block, post, unconstrain


class _Example:
    # Hashable by structure only (site names, number of delays), carrying one value.
    def __init__(self, key: tuple, value: Any) -> None:
        self.key, self.value = key, value

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Example) and other.key == self.key


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


def _run_per_bin_chunks(t, y, sigma, mask, model, lower, upper, fixed, aux, unit_stretch,
                        init_values, num_warmup, per_block, n_blocks, num_chains, method,
                        seed, target_accept_prob, max_tree_depth, progress, cancel, t_ref):
    """:func:`_run_per_bin` over chunks of :data:`BIN_CHUNK` bins with delays padded to
    a power of two (masked points add nothing to the likelihood)."""
    from xpcsviewer.fitting.lsq import bucket_delays

    n_b, n_t = y.shape
    t_pad = bucket_delays(n_t)
    t = _pad_axis(np.asarray(t), t_pad, 0, 1.0)
    y = _pad_axis(y, t_pad, 1, 0.0)
    sigma = _pad_axis(sigma, t_pad, 1, 1.0)
    mask = _pad_axis(mask, t_pad, 1, False)
    if aux is not None:
        aux = (jnp.asarray(_pad_axis(np.asarray(aux[0]), t_pad, 0, 1.0)), aux[1])
    n_chunks = math.ceil(n_b / BIN_CHUNK)
    parts = []
    kept = []  # per chunk: (final state, per-bin arguments, programs)
    for k in range(n_chunks):
        real = np.arange(k * BIN_CHUNK, min(n_b, (k + 1) * BIN_CHUNK))
        idx = np.concatenate([real, np.full(BIN_CHUNK - real.size, real[0])])

        def sub(d: dict, idx: np.ndarray = idx) -> dict:
            return {n: jnp.asarray(np.asarray(v)[idx]) for n, v in d.items()}

        def chunk_progress(done, total, msg="", _k=k):
            if progress is not None:
                head = f"bins {_k * BIN_CHUNK + 1}-{min(n_b, (_k + 1) * BIN_CHUNK)}: " \
                    if n_chunks > 1 else ""
                progress(_k * total + done, n_chunks * total, head + msg)

        out = _run_per_bin(
            t, y[idx], sigma[idx], mask[idx], model, sub(lower), sub(upper), sub(fixed),
            aux, unit_stretch, sub(init_values), num_warmup, per_block, n_blocks,
            num_chains, method, int(seed) + 7919 * k, target_accept_prob, max_tree_depth,
            chunk_progress if progress is not None else None, cancel, t_ref[idx],
        )
        draws, div, energy, steps, kept_k = out
        kept.append(kept_k)
        m = real.size
        parts.append(({n: v[..., :m] for n, v in draws.items()}, div[..., :m],
                      energy[..., :m], steps[..., :m] if np.ndim(steps) >= 3 else steps))
    draws = {n: np.concatenate([p[0][n] for p in parts], axis=-1) for n in parts[0][0]}
    cat = (lambda i: np.concatenate([p[i] for p in parts], axis=-1))  # noqa: E731

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

            # placed as the first run's arrays were: host arrays would make the
            # programs compile again for their placement (5 s at the first extension)
            state = jax.tree_util.tree_map(_placed_like, gather(1, lambda kk: kk[0]),
                                           kept[0][0])  # (chains, lanes, ...)
            args = jax.tree_util.tree_map(_placed_like, gather(0, lambda kk: kk[1]),
                                          kept[0][1])  # (lanes, ...)
            run_block, post, step = kept[0][2]
            zs, div, energy, steps_ = [], [], [], []
            for _ in range(n_more):
                with step():
                    state, (z, d, e, ns) = run_block(state, args, per)
                zs.append(jax.device_get(z))
                div.append(np.asarray(d))
                energy.append(np.asarray(e))
                steps_.append(np.asarray(ns))
                report(progress, cancel, len(zs), n_more, f"more draws {len(zs)}/{n_more}")
            parts_c = []
            for z in zs:
                with step():
                    parts_c.append(post(args, z))
            cons = {k: np.concatenate([np.asarray(c[k]) for c in parts_c], axis=1)
                    for k in parts_c[0]}
            m = len(sel)
            outs.append(({k: v[..., 0][..., :m] for k, v in cons.items()},
                         np.concatenate(div, axis=1)[..., :m],
                         np.concatenate(energy, axis=1)[..., :m]))
        return ({k: np.concatenate([o[0][k] for o in outs], axis=-1) for k in outs[0][0]},
                np.concatenate([o[1] for o in outs], axis=-1),
                np.concatenate([o[2] for o in outs], axis=-1))

    return (draws, cat(1), cat(2), cat(3)), resume


def _run_per_bin(t, y, sigma, mask, model, lower, upper, fixed, aux, unit_stretch,
                 init_values, num_warmup, per_block, n_blocks, num_chains, method, seed,
                 target_accept_prob, max_tree_depth, progress, cancel, t_ref):
    """NUTS vmapped over bins (and chains): each bin adapts its own step size and a
    dense 2-4 parameter mass matrix, so one badly conditioned bin does not shrink the
    others' step size; all in one compiled program."""
    n_b, n_t = y.shape
    has_aux = aux is not None
    aux_m = jnp.asarray(aux[0], jnp.float64) if has_aux else jnp.ones(n_t)
    aux_dt = jnp.asarray(aux[1] if has_aux else 1.0, jnp.float64)
    # Per-bin arguments with a leading bin axis; each bin is a 1-bin model.
    bin_args = (
        jnp.broadcast_to(jnp.asarray(t), (n_b, n_t)),
        jnp.asarray(y)[:, None, :],
        jnp.asarray(sigma)[:, None, :],
        jnp.asarray(mask)[:, None, :],
        {k: v[:, None] for k, v in lower.items()},
        {k: v[:, None] for k, v in upper.items()},
        {k: jnp.asarray(v)[:, None] for k, v in fixed.items()},
        jnp.broadcast_to(aux_m, (n_b, n_t)),
        jnp.broadcast_to(aux_dt, (n_b,)),
        jnp.asarray(t_ref, jnp.float64)[:, None],
    )
    init_b = {k: jnp.asarray(v)[:, None] for k, v in init_values.items()}
    first = jax.tree_util.tree_map(lambda a: a[0], bin_args)
    example = _Example(
        (tuple(sorted(init_b)), tuple(sorted(fixed)), n_t),
        (first, {k: v[0] for k, v in init_b.items()}),
    )
    # Each step that may trace the model holds the process-wide NumPyro lock; the
    # compiled programs then run while another thread waits its turn.
    step = functools.partial(numpyro_lock.hold, progress, cancel)
    with step():
        misses = _per_bin_programs.cache_info().misses
        init, run_block, post, unconstrain = _per_bin_programs(
            model, unit_stretch, has_aux, int(num_warmup), float(target_accept_prob),
            int(max_tree_depth), method, int(num_chains), example,
        )
    if _per_bin_programs.cache_info().misses > misses:
        # new programs compile at their first call (tens of seconds without the
        # persistent cache): say so, or a user sees a stuck bar
        report(progress, cancel, 0, 1, "compiling the sampler (first run only)\u2026")
    with step():
        z0 = unconstrain(bin_args, init_b)
    keys = jax.random.split(jax.random.PRNGKey(int(seed)), num_chains * n_b).reshape(
        num_chains, n_b, 2
    )
    z0c = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (num_chains, *a.shape)), z0)
    report(progress, cancel, 0, 1, f"NUTS warm-up ({num_warmup} steps, {num_chains} chains)")
    with step():
        state = init(z0c, bin_args, keys)

    n_wblocks = max(1, math.ceil(num_warmup / max(1, per_block))) if num_warmup else 0
    w_per = math.ceil(num_warmup / n_wblocks) if n_wblocks else 0
    total = n_wblocks + n_blocks
    done = 0
    remaining = num_warmup
    while remaining > 0:
        n = min(w_per, remaining)
        with step():
            state, _ = run_block(state, bin_args, n)
        state = jax.block_until_ready(state)  # dispatch is asynchronous: honest progress
        remaining -= n
        done += 1
        report(progress, cancel, done, total, "warm-up")
    zs, div, energy, steps = [], [], [], []
    for _ in range(n_blocks):
        with step():
            state, (z, d, e, ns) = run_block(state, bin_args, per_block)
        zs.append(jax.device_get(z))
        div.append(np.asarray(d))
        energy.append(np.asarray(e))
        steps.append(np.asarray(ns))
        done += 1
        report(progress, cancel, done, total, f"sampling {done - n_wblocks}/{n_blocks}")
    # (C, S, B, 1) unconstrained draws -> constrained, incl. deterministic sites (tau);
    # block by block: one program shape whatever the number of draws (the warm-up's)
    cons = []
    for z in zs:
        with step():
            cons.append(post(bin_args, z))
    draws = {k: np.concatenate([np.asarray(c[k]) for c in cons], axis=1)[..., 0]
             for k in cons[0]}
    return (draws, np.concatenate(div, axis=1), np.concatenate(energy, axis=1),
            np.concatenate(steps, axis=1), (state, bin_args, (run_block, post, step)))


def _summarise(model, samples, div_bin, n_div, bf, fixed, num_chains, num_samples,
               num_warmup, seed, method, aux, init) -> BayesFitResult:
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
        num_warmup=num_warmup, seed=int(seed), chain_method=method, aux=aux,
        fixed={n: n in fixed for n in names}, used_bins=used, divergences_per_bin=div_bin,
        draws_per_chain=np.full(n_b, int(num_samples)),
    )
