"""The XLA engine of the two-time correlator: two compiled programs per bin width.

Before (issue 31 profile), a job compiled a normalisation and a product kernel per
dynamic bin (each bin has its own pixel count), converted frames to float32 on the host
and sent every tile once per tile pair (5x the frames' bytes for a 128²x4k job).

Here a bin's frames cross to the device once, as stored; the normalisation by each
static group's per-frame mean runs there once for the whole bin, and the map is made by
one product program over fixed (rows x rows) tiles addressed by traced offsets. Shapes
are padded (frames to whole tiles, pixels and groups to powers of two) so one pair of
programs serves every bin of a job whose bins fall in one width bucket.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xpcsviewer.backends.conversions import count_host_to_device, ensure_numpy

__all__ = ["upper_map_xla"]

_PROGRAMS: dict[Any, Any] = {}


def _pow2(n: int, floor: int) -> int:
    return max(floor, 1 << max(0, int(n - 1).bit_length()))


def _programs(jax: Any, n_pad: int, p_pad: int, g_pad: int, rows: int) -> tuple[Any, Any]:
    key = (n_pad, p_pad, g_pad, rows)
    got = _PROGRAMS.get(key)
    if got is not None:
        return got
    jnp, lax = jax.numpy, jax.lax

    def prep(raw, gid, count):
        # raw (n_pad, p_pad) stored dtype; padded pixels sit in group g_pad - 1 with
        # value 0, padded frames are 0 (their sums are 0 and their rows are not read)
        x = raw.astype(jnp.float64)
        gsum = jax.ops.segment_sum(x.T, gid, g_pad)  # (g_pad, n_pad)
        gmean = gsum / count[:, None]
        gmean = jnp.where(gmean > 0, gmean, 1.0)
        y = x / gmean[gid].T
        return y, y.sum(axis=1)

    def gram(y, s, a0, b0, n_pix):
        yi = lax.dynamic_slice_in_dim(y, a0, rows)
        yj = lax.dynamic_slice_in_dim(y, b0, rows)
        si = lax.dynamic_slice_in_dim(s, a0, rows)
        sj = lax.dynamic_slice_in_dim(s, b0, rows)
        den = si[:, None] * sj[None, :]
        return n_pix * (yi @ yj.T) / jnp.where(den > 0, den, 1.0)

    got = (jax.jit(prep), jax.jit(gram))
    _PROGRAMS[key] = got
    return got


def upper_map_xla(x: np.ndarray, counts: np.ndarray, c: np.ndarray, rows: int,
                  device: Any) -> None:
    """Upper triangle of a bin's two-time map into ``c`` (N, N); lower triangle 0.

    Parameters
    ----------
    x : (N, P) frames of the bin's pixels, ordered by static group, as stored
    counts : (G,) pixels per static group (their columns are consecutive)
    c : (N, N) float64 output
    rows : int
        Tile rows.
    device : jax.Device
    """
    from xpcsviewer.backends import get_backend

    get_backend("jax")
    import jax

    n, pb = x.shape
    rows = int(rows)
    n_pad = -(-n // rows) * rows
    p_pad = _pow2(pb, 256)
    g_pad = _pow2(counts.size + 1, 8)
    raw = np.zeros((n_pad, p_pad), dtype=x.dtype)
    raw[:n, :pb] = x
    gid = np.full(p_pad, g_pad - 1, np.int32)
    gid[:pb] = np.repeat(np.arange(counts.size, dtype=np.int32), counts)
    cnt = np.ones(g_pad, np.float64)
    cnt[: counts.size] = counts
    prep, gram = _programs(jax, n_pad, p_pad, g_pad, rows)
    for a in (raw, gid, cnt):
        count_host_to_device(a.nbytes)
    y, s = prep(jax.device_put(raw, device), jax.device_put(gid, device),
                jax.device_put(cnt, device))
    c[:] = 0.0
    n_pix = np.float64(pb)
    for a0 in range(0, n, rows):
        a1 = min(n, a0 + rows)
        for b0 in range(a0, n, rows):
            b1 = min(n, b0 + rows)
            blk = ensure_numpy(gram(y, s, np.int32(a0), np.int32(b0), n_pix))
            blk = blk[: a1 - a0, : b1 - b0]
            c[a0:a1, b0:b1] = np.triu(blk) if b0 == a0 else blk
