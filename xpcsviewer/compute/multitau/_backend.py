"""The array-kernel engine of the multi-tau correlator (``engine="backend"``).

One jitted update per level and block (the NumPy backend runs it eagerly and is the
reference); block sizes are padded to powers of two (at least ``MIN_BLOCK``) with the
real length passed as a value, so JAX compiles about log2(chunk) shapes per level kind.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xpcsviewer.compute._binning import kernel_cache

__all__ = ["MIN_BLOCK", "level_kernel", "next_pow2", "normalize_kernel"]

MIN_BLOCK = 8
PIXEL_TILE = 8192


def level_kernel(
    backend: Any, buf: int, xs: tuple[int, ...], has_left: int, need_first: bool
) -> Any:
    """One level's update for a padded block; returns new state and the next level's block.

    ``has_left`` (static, 0/1): the previous block left one unpaired frame; it is
    always the last frame seen, i.e. ``hist[-1]``, so no extra state is needed.
    ``need_first`` (static): fewer than ``buf`` frames seen, so the first-frames
    buffer (for IF) is still filling.
    """

    def build() -> Any:
        xp = backend.xp
        if backend.name == "numpy":
            def products(block, hist):
                # einsum streams both operands without a temporary; pixel tiles keep
                # the block in cache across the delays (2x faster measured)
                nb, p = block.shape
                out = np.empty((len(xs), p))
                for s in range(0, p, PIXEL_TILE):
                    b = block[:, s : s + PIXEL_TILE]
                    h = hist[:, s : s + PIXEL_TILE]
                    for k, x in enumerate(xs):
                        w = min(x, nb)
                        v = np.einsum("ij,ij->j", b[:w], h[buf - x : buf - x + w])
                        if x < nb:
                            v += np.einsum("ij,ij->j", b[x:], b[: nb - x])
                        out[k, s : s + PIXEL_TILE] = v
                return out
        else:
            def products(block, hist):
                # XLA fuses multiply + reduce into one loop; an einsum would become a
                # dot_general batched over the (huge) pixel axis, which is slow on CPU
                nb = block.shape[0]
                rows = []
                for x in xs:
                    inner = (block[x:] * block[: nb - x]).sum(axis=0) if x < nb else 0.0
                    m = min(x, nb)
                    rows.append(inner + (block[:m] * hist[buf - x : buf - x + m]).sum(axis=0))
                return xp.stack(rows)

        def kernel(hist, first, sumprod, total, block, n_valid, count):
            nb, p = block.shape
            # Sums of products without concatenating history and block: pairs that
            # straddle the boundary use the last x history rows, the rest are shifted
            # slices of the block. Padded (zero) rows sit at the end of the block and
            # are only ever the later frame of a pair, so they add nothing.
            prods = products(block, hist)
            # new history = last buf valid frames of [hist, block]
            idx = n_valid + xp.arange(buf)
            from_hist = xp.take(hist, xp.clip(idx, 0, buf - 1), axis=0)
            from_block = xp.take(block, xp.clip(idx - buf, 0, nb - 1), axis=0)
            new_hist = xp.where((idx < buf)[:, None], from_hist, from_block)
            if need_first:
                fidx = xp.arange(buf) - count
                ok = (fidx >= 0) & (fidx < n_valid)
                got = xp.take(block, xp.clip(fidx, 0, nb - 1), axis=0)
                first = xp.where(ok[:, None], got, first)
            # pair consecutive frames into the next level's block (nb is even)
            if has_left:
                head = 0.5 * (hist[buf - 1 :] + block[:1])
                nxt = xp.concatenate([head, 0.5 * (block[1 : nb - 1 : 2] + block[2:nb:2])], axis=0)
            else:
                nxt = 0.5 * (block[0::2] + block[1::2])
            m = (n_valid + has_left) // 2
            nxt = nxt * (xp.arange(nb // 2) < m)[:, None]
            if nb // 2 < MIN_BLOCK:
                # a floor on block sizes bounds the number of compiled shapes
                nxt = xp.concatenate([nxt, xp.zeros((MIN_BLOCK - nb // 2, p))], axis=0)
            return new_hist, first, sumprod + prods, total + block.sum(axis=0), nxt

        return backend.jit(kernel)

    return kernel_cache(backend, ("multitau_level", buf, xs, has_left, need_first), build)


def normalize_kernel(backend: Any) -> Any:
    def build() -> Any:
        xp = backend.xp

        def kernel(block):
            mean = block.mean(axis=1)
            return block / xp.where(mean > 0, mean, 1.0)[:, None]

        return backend.jit(kernel)

    return kernel_cache(backend, ("frame_normalize",), build)


def next_pow2(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())
