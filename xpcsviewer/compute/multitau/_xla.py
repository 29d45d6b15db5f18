"""The XLA engine of the multi-tau correlator: one compiled program per job.

Why: the array-kernel engine (``engine="backend"``) compiled a kernel per block shape
and level (22 XLA programs for a 256x256 x 10k job), turned frames into float64 and gathered
them on the host, sent ~4x the frames' bytes, and ran the level loop in Python.

Here a job compiles two programs, whatever its frame count:

- ``step``: one block of ``block`` frames *as stored* (uint8/uint16/..., the last block
  zero-padded, its real length a traced value) crosses to the device once; the pixel
  gather, the conversion to float64, the optional per-frame normalisation and every
  level's update (sums of products, history, first frames, totals, pairing into the
  next level) happen inside, over pixel tiles (``lax.map``) so that each tile's levels
  stay in cache on a CPU. Per-level frame counts are traced scalars computed on the host.
- ``finish``: every level's per-pixel terms reduced to static/dynamic bin sums.

Pixel tiles are split over the process's host CPU devices (``shard_map``) when the
job runs on the CPU platform, so the program uses every core; on a GPU one device
runs all tiles. The state layout is (tiles, levels, rows, tile width); delays of
level 0 are 1..2m, of level L >= 1 m+1..2m (rows padded to 2m).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from xpcsviewer.backends import get_backend, resolve_device
from xpcsviewer.backends.conversions import count_host_to_device, ensure_numpy
from xpcsviewer.compute._binning import PixelBins
from xpcsviewer.compute.multitau.pixels import (
    MIN_PAIRS,
    combine_bin_sums,
    pixel_terms,
    reduce_pixel_terms,
)

__all__ = ["XlaMultitau", "correlate_xla", "xla_device"]

MIN_BLOCK = 8
ROWS = 8  # frames per inner step of the sums of products (divides every level size)
BLOCK = 256  # frames per transfer and per step
TILE = 1024  # pixels per tile on a CPU (fastest of 128..16384 measured on 2 cores)

def _level_sizes(block: int, n_levels: int) -> list[int]:
    return [max(block >> lv, MIN_BLOCK) for lv in range(n_levels)]


def _schedule(n: int, has_left: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per-level valid rows, left-over flags and counts for a block of ``n`` frames."""
    nl = has_left.size
    nv = np.zeros(nl, np.int32)
    hl_new = has_left.copy()
    v = n
    for lv in range(nl):
        nv[lv] = v
        tot = v + int(has_left[lv])
        hl_new[lv] = tot % 2
        v = tot // 2
    return nv, hl_new, count + nv


@dataclass
class _Layout:
    n_pix: int
    tile: int
    n_tiles: int
    n_shards: int
    n_levels: int
    buf: int
    m: int
    block: int


def _build_step(jax: Any, lay: _Layout, gather: bool, normalize: bool, mesh: Any) -> Any:
    jnp, lax = jax.numpy, jax.lax
    buf, m, w = lay.buf, lay.m, lay.tile
    sizes = _level_sizes(lay.block, lay.n_levels)
    xs_of = [tuple(range(1, buf + 1))] + [tuple(range(m + 1, buf + 1))] * (lay.n_levels - 1)

    def _products(ext, s, xs, width):
        # Sums of products for the delays xs and the sum of the block's rows, streamed
        # ROWS frames per loop step as row updates of a (buf, width) accumulator.
        # XLA:CPU reduces over a major axis column by column (40x slower than NumPy
        # measured for a (256, 65536) sum over frames), so no reduction over frames
        # appears here.
        k0 = xs[0]

        def body(i, carry):
            acc, tot = carry
            win = lax.dynamic_slice_in_dim(ext, i * ROWS, buf + ROWS)
            for r in range(ROWS):
                row = win[buf + r]
                # rows buf+r-k0, ..., buf+r-k_last (newest first)
                lagged = win[buf + r - xs[-1]: buf + r - k0 + 1][::-1]
                acc = acc + row[None, :] * lagged
                tot = tot + row
            return acc, tot

        acc, tot = lax.fori_loop(0, s // ROWS, body,
                                 (jnp.zeros((len(xs), width)), jnp.zeros(width)))
        if len(xs) < buf:
            acc = jnp.concatenate([acc, jnp.zeros((buf - len(xs), width))])
        return acc, tot

    def level(lv, x, h, f, sp, tt, nv, hl, cnt):
        """One level's update; x (sizes[lv], width), state (rows, width)."""
        s, width = sizes[lv], x.shape[1]
        ext = jnp.concatenate([h, x], axis=0)  # (buf + s, width)
        prods, tot = _products(ext, s, xs_of[lv], width)
        new_h = lax.dynamic_slice_in_dim(ext, nv[lv], buf)
        # first frames (for IF): rows count..count+nv of the level, while < buf
        fidx = jnp.arange(buf) - (cnt[lv] - nv[lv])
        ok = (fidx >= 0) & (fidx < nv[lv])
        got = jnp.take(x, jnp.clip(fidx, 0, s - 1), axis=0)
        new_f = jnp.where(ok[:, None], got, f)
        nxt = None
        if lv + 1 < lay.n_levels:
            seg = lax.dynamic_slice_in_dim(ext, buf - hl[lv], s)
            nxt = 0.5 * (seg[0::2] + seg[1::2])
            keep = jnp.arange(s // 2) < (nv[lv] + hl[lv]) // 2
            nxt = jnp.where(keep[:, None], nxt, 0.0)
            if s // 2 < sizes[lv + 1]:
                nxt = jnp.concatenate([nxt, jnp.zeros((sizes[lv + 1] - s // 2, width))])
        return new_h, new_f, sp + prods, tt + tot, nxt

    def one_tile(x, hist, first, sumprod, total, nv, hl, cnt):
        # every level of one tile: x (block, w); state (levels, rows, w)
        hs, fs, ss, ts = [], [], [], []
        for lv in range(lay.n_levels):
            h, f, sp, tt, x = level(lv, x, hist[lv], first[lv], sumprod[lv], total[lv],
                                    nv, hl, cnt)
            hs.append(h)
            fs.append(f)
            ss.append(sp)
            ts.append(tt)
        return jnp.stack(hs), jnp.stack(fs), jnp.stack(ss), jnp.stack(ts), x

    def shard_body(hist, first, sumprod, total, raw, idx, nv, hl, hl_prev, cnt, scale):
        # hist etc.: (tiles_per_shard, levels, rows, w); raw: (block, pixels) stored
        # dtype; idx: (tiles_per_shard, w) pixel columns (-1: padding)
        del hl

        def tile_fn(args):
            t_idx, h, f, sp, tt = args
            cols = jnp.take(raw, jnp.clip(t_idx, 0, None), axis=1) if gather else \
                lax.dynamic_slice_in_dim(raw, t_idx[0], w, axis=1)
            x = cols.astype(jnp.float64)
            if normalize:
                x = x * scale[:, None]
            x = jnp.where((t_idx >= 0)[None, :], x, 0.0)
            return one_tile(x, h, f, sp, tt, nv, hl_prev, cnt)

        h, f, sp, tt, _ = lax.map(tile_fn, (idx, hist, first, sumprod, total))
        return h, f, sp, tt

    if mesh is not None:
        from jax.sharding import PartitionSpec as Ps

        spec = Ps("t")
        body = jax.shard_map(
            shard_body, mesh=mesh,
            in_specs=(spec, spec, spec, spec, Ps(), spec, Ps(), Ps(), Ps(), Ps(), Ps()),
            out_specs=(spec, spec, spec, spec), check_vma=False)
    else:
        body = shard_body

    def step(hist, first, sumprod, total, raw, idx, nv, hl, hl_prev, cnt, valid_cols):
        if normalize:
            # per-frame mean over the valid pixels, from the stored values
            vals = jnp.take(raw, valid_cols, axis=1).astype(jnp.float64)
            mean = vals.mean(axis=1)
            scale = 1.0 / jnp.where(mean > 0, mean, 1.0)
        else:
            scale = jnp.ones(raw.shape[0])
        return body(hist, first, sumprod, total, raw, idx, nv, hl, hl_prev, cnt, scale)

    return jax.jit(step, donate_argnums=(0, 1, 2, 3))


def _build_finish(jax: Any, lay: _Layout, ns: int, nd: int) -> Any:
    jnp = jax.numpy
    be = get_backend("jax")
    buf, m = lay.buf, lay.m
    xs_of = [np.arange(1, buf + 1)] + [np.arange(m + 1, buf + 1)] * (lay.n_levels - 1)

    def finish(hist, first, sumprod, total, counts, sid, did, d_count):
        def flat(a):  # (tiles, levels, rows, w) -> (levels, rows, tiles*w)
            t, lv, r, w = a.shape
            return a.transpose(1, 2, 0, 3).reshape(lv, r, t * w)

        h, f, sp = flat(hist), flat(first), flat(sumprod)
        tt = total.transpose(1, 0, 2).reshape(lay.n_levels, -1)
        # tile column j holds local pixel j (the gather follows pixel_index)
        order = slice(0, lay.n_pix)
        out = []
        for lv in range(lay.n_levels):
            xs = xs_of[lv]
            g2, ip, if_ = pixel_terms(jnp, h[lv][:, order], f[lv][:, order],
                                      sp[lv][: xs.size][:, order], tt[lv][order], counts[lv], xs)
            s_g2, s_ip, s_if, _ds, dss = reduce_pixel_terms(be, (g2, ip, if_), sid, did,
                                                             d_count, ns, nd)
            pad = buf - xs.size
            out.append(tuple(jnp.pad(a, ((0, pad), (0, 0))) for a in (s_g2, s_ip, s_if, dss)))
        return tuple(jnp.stack([o[i] for o in out]) for i in range(4))

    return jax.jit(finish)


class XlaMultitau:
    """The multi-tau correlator as one XLA program per job (see the module docstring).

    Parameters
    ----------
    pixels : PixelBins
    n_frames : int
    delays_per_level : int
    normalize_frame : bool
    device : jax.Device or None
        Where the program runs; CPU devices use every host device of the process.
    block, tile : int
        Frames per step and pixels per tile.
    """

    def __init__(self, pixels: PixelBins, n_frames: int, delays_per_level: int = 4,
                 normalize_frame: bool = False, *, device: Any = None, block: int = BLOCK,
                 tile: int = TILE) -> None:
        get_backend("jax")  # x64 and the host devices are set up before JAX starts
        import jax

        from xpcsviewer.compute.multitau._shared import delay_list

        self._jax = jax
        self.pixels = pixels
        self.m = int(delays_per_level)
        self.buf = 2 * self.m
        self.delays, self.levels, self.xs = delay_list(int(n_frames), self.m)
        if self.delays.size == 0:
            raise ValueError(f"need at least 2 frames to correlate, got {n_frames}")
        self.n_frames_expected = int(n_frames)
        self.n_levels = int(self.levels.max()) + 1
        self.normalize = bool(normalize_frame)
        if device is None:
            device = jax.devices()[0]
        self.device = device
        n_shards = 1
        if device.platform != "cpu":
            # an accelerator is fed best by one wide tile (a tile loop would serialise it)
            tile = -(-pixels.n_pixels // 128) * 128
        else:
            n_shards = max(1, min(len(jax.devices("cpu")), -(-pixels.n_pixels // tile)))
        n_tiles = -(-pixels.n_pixels // tile)
        n_tiles = -(-n_tiles // n_shards) * n_shards
        self.layout = _Layout(pixels.n_pixels, tile, n_tiles, n_shards, self.n_levels,
                              self.buf, self.m, int(block))
        self.mesh = None
        if n_shards > 1:
            from jax.sharding import Mesh

            self.mesh = Mesh(np.asarray(jax.devices("cpu")[:n_shards]), ("t",))
        full = pixels.pixel_index.size == pixels.shape[0] * pixels.shape[1]
        # every pixel valid and the detector a whole number of tiles: slices, no gather
        self._gather = not (full and pixels.n_pixels == n_tiles * tile)
        idx = np.full(n_tiles * tile, -1, np.int32)
        idx[: pixels.n_pixels] = pixels.pixel_index
        self._idx_host = idx.reshape(n_tiles, tile)
        self._put_state()
        self.n_processed = 0
        self._stage: np.ndarray | None = None
        self._staged = 0
        self.has_left = np.zeros(self.n_levels, np.int32)
        self.count = np.zeros(self.n_levels, np.int64)
        key = (self._gather, self.normalize)
        self._step = _STEPS.get((self._sig(), key))
        if self._step is None:
            self._step = _build_step(jax, self.layout, self._gather, self.normalize, self.mesh)
            _STEPS[(self._sig(), key)] = self._step
        self._finish = None

    def _sig(self) -> tuple:
        lay = self.layout
        return (lay.n_pix, lay.tile, lay.n_tiles, lay.n_shards, lay.n_levels, lay.buf,
                lay.block, str(self.device), self.pixels.shape)

    def _sharding(self, tiled: bool) -> Any:
        jax = self._jax
        if self.mesh is None:
            return jax.sharding.SingleDeviceSharding(self.device)
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as Ps

        return NamedSharding(self.mesh, Ps("t") if tiled else Ps())

    def _put(self, host: np.ndarray, tiled: bool) -> Any:
        count_host_to_device(host.nbytes)
        return self._jax.device_put(host, self._sharding(tiled))

    def _put_state(self) -> None:
        lay = self.layout
        key = ("zeros", self._sig())
        init = _STEPS.get(key)
        if init is None:
            jnp = self._jax.numpy
            big = (lay.n_tiles, lay.n_levels, lay.buf, lay.tile)
            small = (lay.n_tiles, lay.n_levels, lay.tile)
            # made on the device: the state never crosses from the host
            init = self._jax.jit(
                lambda: (jnp.zeros(big), jnp.zeros(big), jnp.zeros(big), jnp.zeros(small)),
                out_shardings=(self._sharding(True),) * 4)
            _STEPS[key] = init
        self.hist, self.first, self.sumprod, self.total = init()
        idx = self._idx_host if self._gather else (
            np.arange(lay.n_tiles, dtype=np.int32)[:, None] * lay.tile
            + np.arange(lay.tile, dtype=np.int32)[None, :])
        self.idx = self._put(idx, True)
        self.valid_cols = self._put(self.pixels.pixel_index.astype(np.int32), False)

    def process(self, block: np.ndarray) -> None:
        """Correlate the next (n, H*W) frames as stored (any n).

        Frames are staged on the host until a whole program block is there, so that
        only full blocks cross (the last one, or one cut by :meth:`result`, is padded).
        """
        n = int(block.shape[0])
        if n == 0:
            return
        if self.n_processed + n > self.n_frames_expected:
            raise ValueError(f"more frames than announced "
                             f"({self.n_processed + n} > {self.n_frames_expected})")
        self.n_processed += n
        lay = self.layout
        a = 0
        while a < n:
            if self._stage is None:
                self._stage = np.zeros((lay.block, block.shape[1]), dtype=block.dtype)
            take = min(n - a, lay.block - self._staged)
            self._stage[self._staged: self._staged + take] = block[a: a + take]
            self._staged += take
            a += take
            if self._staged == lay.block:
                self._send()

    def _send(self) -> None:
        n = self._staged
        if n == 0:
            return
        raw = self._stage
        if n < raw.shape[0]:
            raw[n:] = 0
        nv, hl_new, cnt = _schedule(n, self.has_left, self.count)
        dev_raw = self._put(raw, False)
        self.hist, self.first, self.sumprod, self.total = self._step(
            self.hist, self.first, self.sumprod, self.total, dev_raw, self.idx,
            nv, hl_new, self.has_left.astype(np.int32), cnt.astype(np.int32),
            self.valid_cols)
        self.has_left, self.count = hl_new, cnt
        self._staged = 0
        # a new host buffer: the transfer of the last one may still be reading it
        self._stage = None

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(g2 (T, Nd), g2_err (T, Nd), g2_static (T, Ns)); unreachable delays NaN."""
        self._send()
        pb = self.pixels
        ns, nd = pb.n_static, pb.n_dynamic
        if self._finish is None:
            key = ("finish", self._sig(), ns, nd)
            self._finish = _STEPS.get(key)
            if self._finish is None:
                self._finish = _build_finish(self._jax, self.layout, ns, nd)
                _STEPS[key] = self._finish
        sid = np.asarray(pb.static_id, np.int32)
        did = np.asarray(pb.dynamic_id, np.int32)
        dcnt = pb.dynamic_count.astype(np.float64)
        for a in (sid, did, dcnt):
            count_host_to_device(a.nbytes)
        s_g2, s_ip, s_if, dss = (ensure_numpy(o) for o in self._finish(
            self.hist, self.first, self.sumprod, self.total,
            self.count.astype(np.int64), sid, did, dcnt))
        t = self.delays.size
        g2 = np.full((t, nd), np.nan)
        err = np.full((t, nd), np.nan)
        g2s = np.full((t, ns), np.nan)
        row0 = 0
        for lv in range(self.n_levels):
            xs = list(range(1, self.buf + 1)) if lv == 0 else list(range(self.m + 1, self.buf + 1))
            n_here = int((self.levels == lv).sum())
            cnt = int(self.count[lv])
            keep = [i for i, x in enumerate(xs) if cnt - x >= MIN_PAIRS][:n_here]
            if keep:
                k = np.asarray(keep)
                rows = row0 + np.arange(len(keep))
                g2[rows], err[rows], g2s[rows] = combine_bin_sums(
                    s_g2[lv][k], s_ip[lv][k], s_if[lv][k], dss[lv][k], pb.static_count,
                    pb.dynamic_count, pb.static_to_dynamic, nd)
            row0 += n_here
        return g2, err, g2s


_STEPS: dict[Any, Any] = {}


def xla_device(device: Any) -> Any:
    """A concrete JAX device for the XLA engines ("auto": the job's route)."""
    get_backend("jax")
    import jax

    if device is None or device == "cpu":
        return jax.devices("cpu")[0]
    if isinstance(device, str):
        if device == "gpu":
            try:
                return jax.devices("gpu")[0]
            except RuntimeError:
                return jax.devices("cpu")[0]
        dev = resolve_device(device)
        return dev if dev is not None else jax.devices("cpu")[0]
    return device


def correlate_xla(chunks: Iterable[np.ndarray], n_frames: int, pixels: PixelBins,
                  spec: Any, options: Any, device: Any, progress: Any, cancel: Any) -> Any:
    """:func:`~xpcsviewer.compute.multitau.correlator.correlate_multitau` with the XLA engine:
    stored frames in, one program; the means are host sums of the same frames
    (``spec``: a CorrelateSpec, ``options``: MultitauOptions)."""
    from xpcsviewer.compute._scattering import ScatteringAccumulator
    from xpcsviewer.compute.multitau._cpu import worth_compiling
    from xpcsviewer.compute.multitau._shared import (
        MultitauResult,
        MultitauRun,
        attach_snapshots,
        feed_frames,
    )

    dev = xla_device(device)
    m, normalize_frame = int(options.delays_per_level), bool(spec.normalize_frame)
    num_partial_g2 = int(spec.num_partial_g2)
    corr = XlaMultitau(pixels, n_frames, m, normalize_frame, device=dev)
    acc = (ScatteringAccumulator(pixels, n_frames, backend=get_backend("numpy"), device=None,
                                 compiled=worth_compiling(float(pixels.n_pixels) * n_frames))
           if options.with_scattering else None)
    idx = pixels.pixel_index

    def feed(part: np.ndarray) -> None:
        corr.process(part)
        if acc is not None:
            acc.add(part, np.take(part, idx, axis=1))

    snaps = feed_frames(chunks, corr, feed, n_frames, options.chunk_size, num_partial_g2,
                        progress, cancel)
    g2, err, g2s = corr.result()
    res = MultitauResult(
        delay_frames=corr.delays.copy(), g2=g2, g2_err=err, g2_static=g2s,
        n_frames=corr.n_processed,
        config={"delays_per_level": m, "normalize_frame": normalize_frame,
                "num_partial_g2": num_partial_g2, "backend": "jax",
                "engine": "xla", "device": f"{dev.platform}:{dev.id}"})
    attach_snapshots(res, snaps)
    return MultitauRun(res, acc) if acc is not None else res
