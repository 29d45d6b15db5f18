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

__all__ = ["DeviceStore", "upper_map_xla"]

_PROGRAMS: dict[Any, Any] = {}


def _pow2(n: int, floor: int) -> int:
    return max(floor, 1 << max(0, int(n - 1).bit_length()))


def _programs(jax: Any, n_pad: int, p_pad: int, g_pad: int, rows: int) -> tuple[Any, Any]:
    key = (n_pad, p_pad, g_pad, rows)
    got = _PROGRAMS.get(key)
    if got is not None:
        return got
    jnp, lax = jax.numpy, jax.lax

    def prep(store, start, gid, count):
        # the bin's columns of the job's store (n_pad, P + extra); columns past the
        # bin sit in group g_pad - 1 and are zeroed, padded frames are 0 (their sums
        # are 0 and their rows are never read back)
        raw = lax.dynamic_slice_in_dim(store, start, p_pad, axis=1)
        x = jnp.where((gid < g_pad - 1)[None, :], raw.astype(jnp.float64), 0.0)
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


class DeviceStore:
    """A job's selected-pixel frames on the device: sent once, as stored, then padded
    there (frames to whole tiles, columns by the widest bin's bucket) by one program.

    Parameters
    ----------
    store : (N, P) frames of the selected pixels, bin by bin, static groups in order
    widths : the bins' pixel counts (sets the padding)
    device : jax.Device
    """

    def __init__(self, store: np.ndarray, widths: list[int], device: Any,
                 rows: int = 512) -> None:
        from xpcsviewer.backends import get_backend

        get_backend("jax")
        import jax

        self._jax = jax
        n = store.shape[0]
        n_tiles = -(-n // max(int(rows), 16))
        per = -(-n // n_tiles)
        self.rows = -(-per // 8) * 8  # even tiles: little frame padding
        self.n = n
        self.n_pad = n_tiles * self.rows
        self.extra = max([_pow2(w, 256) for w in widths] + [256])
        count_host_to_device(store.nbytes)
        dev = jax.device_put(np.ascontiguousarray(store), device)
        key = ("pad", store.shape, str(store.dtype), self.n_pad, self.extra)
        pad = _PROGRAMS.get(key)
        if pad is None:
            n_pad, extra = self.n_pad, self.extra
            pad = jax.jit(lambda a: jax.numpy.pad(a, ((0, n_pad - a.shape[0]), (0, extra))))
            _PROGRAMS[key] = pad
        self.array = pad(dev)
        self.device = device

    def upper_map(self, start: int, counts: np.ndarray, c: np.ndarray) -> None:
        """The upper triangle of the map of the bin at columns ``start:start +
        counts.sum()`` into ``c`` (N, N); lower triangle 0."""
        jax = self._jax
        pb = int(counts.sum())
        p_pad = _pow2(pb, 256)
        g_pad = _pow2(counts.size + 1, 8)
        gid = np.full(p_pad, g_pad - 1, np.int32)
        gid[:pb] = np.repeat(np.arange(counts.size, dtype=np.int32), counts)
        cnt = np.ones(g_pad, np.float64)
        cnt[: counts.size] = counts
        prep, gram = _programs(jax, self.n_pad, p_pad, g_pad, self.rows)
        for a in (gid, cnt):
            count_host_to_device(a.nbytes)
        y, s = prep(self.array, np.int32(start), jax.device_put(gid, self.device),
                    jax.device_put(cnt, self.device))
        _fill(c, gram, y, s, self.n, self.rows, pb)


def _fill(c: np.ndarray, gram: Any, y: Any, s: Any, n: int, rows: int, pb: int) -> None:
    c[:] = 0.0
    n_pix = np.float64(pb)
    for a0 in range(0, n, rows):
        a1 = min(n, a0 + rows)
        for b0 in range(a0, n, rows):
            b1 = min(n, b0 + rows)
            blk = ensure_numpy(gram(y, s, np.int32(a0), np.int32(b0), n_pix))
            blk = blk[: a1 - a0, : b1 - b0]
            c[a0:a1, b0:b1] = np.triu(blk) if b0 == a0 else blk


def upper_map_xla(x: np.ndarray, counts: np.ndarray, c: np.ndarray, rows: int,
                  device: Any) -> None:
    """Upper triangle of one bin's two-time map into ``c`` (N, N); lower triangle 0.

    Parameters
    ----------
    x : (N, P) frames of the bin's pixels, ordered by static group, as stored
    counts : (G,) pixels per static group (their columns are consecutive)
    c : (N, N) float64 output
    rows : int
        Tile rows.
    device : jax.Device
    """
    DeviceStore(x, [x.shape[1]], device, rows).upper_map(0, counts, c)
