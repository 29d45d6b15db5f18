"""The XLA engine of the photon multi-tau correlator (issue 47): hits in, one set of
compiled programs per job, the work on the device.

Why: the photon correlator (:mod:`~xpcsviewer.compute.multitau.photons`) walks each
pixel's hits in numba on the CPU; an accelerator needs the same state built from
whole-array operations.

How, per job:

- ``add_events``: the hits cross to the device as read (frame, detector pixel and value
  in their stored types), in staged chunks of ``CHUNK`` hits (the last one short, never
  padded on the host), so host->device bytes are the event bytes plus the pixel table.
- ``assemble`` (one program): the chunks are joined and padded on the device to a
  power-of-two bucket, pixels mapped to correlated pixels (others become the sentinel
  ``P``), the optional per-frame normalisation applied, the hits sorted by one int64 key
  ``pixel << k | frame`` and the hits of one pixel and frame merged (values add).
- ``level`` (one program, run once per level; level, frame counts traced): with the
  hits of a level sorted by (pixel, frame) and one entry per pixel and frame, the
  partner of hit i at delay d is among entries i+1..i+B, so B shifted comparisons find
  every pair; products, first and last B frames and totals are scattered into (B, P)
  planes, reduced to the bin sums by the dense correlator's own
  :func:`~xpcsviewer.compute.multitau.pixels.pixel_terms` /
  :func:`~xpcsviewer.compute.multitau.pixels.reduce_pixel_terms`, and consecutive
  frame pairs (frame >> 1, a segment sum over the sorted keys) give the next level's
  hits in the same bucket (complete pairs only; the pixel order is kept).

The (pixels x levels x B) state of the CPU engine never exists: each level's planes
live only inside its program. A prefix of the frames (a partial g2) is the same
programs with a smaller traced frame count. Float64 throughout.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from xpcsviewer.backends import get_backend
from xpcsviewer.backends.conversions import count_host_to_device, ensure_numpy
from xpcsviewer.compute._binning import PixelBins
from xpcsviewer.compute.multitau.pixels import (
    MIN_PAIRS,
    combine_bin_sums,
    pixel_terms,
    reduce_pixel_terms,
)

__all__ = ["CHUNK", "XlaPhotonMultitau"]

CHUNK = 1 << 20  # hits per host->device transfer
MIN_BUCKET = 1 << 10


def _pow2(n: int, least: int = 1) -> int:
    return max(int(least), 1 << max(int(n) - 1, 0).bit_length())


def _group(jax: Any, q: Any, f: Any, v: Any, keep: Any, p: int, shift: Any,
           factor: Any) -> tuple[Any, Any, Any]:
    """Hits with equal (pixel, frame >> shift) summed (times ``factor``), in order, the
    rest of the bucket sentinel (pixel ``p``). ``q`` stays sorted: a hit not kept keeps
    its pixel, with a frame past every level's count and value 0."""
    jnp, ops = jax.numpy, jax.ops
    n = q.shape[0]
    gone = int(np.iinfo(f.dtype).max) >> 1  # frames fit in half the type (the key)
    fk = jnp.where(keep, f >> shift, gone)
    new = jnp.concatenate([jnp.ones(1, bool), (q[1:] != q[:-1]) | (fk[1:] != fk[:-1])])
    gid = jnp.cumsum(new.astype(jnp.int32)) - 1
    used = jnp.arange(n) <= gid[-1]
    vn = ops.segment_sum(jnp.where(keep, v, 0.0), gid, n, indices_are_sorted=True) * factor
    qn = jnp.where(used, ops.segment_min(q, gid, n, indices_are_sorted=True), p)
    fn = jnp.where(used, ops.segment_max(fk, gid, n, indices_are_sorted=True), gone)
    return qn, fn, vn


def _build_assemble(jax: Any, p: int, nb: int, kbits: int, nf: int, normalize: bool) -> Any:
    jnp, lax = jax.numpy, jax.lax

    def assemble(frames, pixels, values, lut):
        f = jnp.concatenate([a.astype(jnp.int64) for a in frames])
        px = jnp.concatenate([a.astype(jnp.int32) for a in pixels])
        v = jnp.concatenate([a.astype(jnp.float64) for a in values])
        pad = nb - f.shape[0]
        q = jnp.take(lut, px, mode="clip")
        q = jnp.where(q < 0, p, q)
        f = jnp.pad(f, (0, pad))
        q = jnp.pad(q, (0, pad), constant_values=p)
        v = jnp.pad(v, (0, pad))
        valid = q < p
        if normalize:
            # per frame: 1 / mean over the correlated pixels (the CPU engine's frame_scale)
            sums = jnp.zeros(nf).at[jnp.where(valid, f, nf)].add(v, mode="drop")
            mean = sums / max(p, 1)
            v = v * (1.0 / jnp.where(mean > 0, mean, 1.0))[jnp.clip(f, 0, nf - 1)]
        key = (q.astype(jnp.int64) << kbits) | jnp.where(valid, f, 0)
        key, v = lax.sort((key, v), num_keys=1)
        q = (key >> kbits).astype(jnp.int32)
        # frames in 4 bytes when they fit (memory traffic of every level)
        f = (key & ((1 << kbits) - 1)).astype(jnp.int32 if kbits <= 29 else jnp.int64)
        return _group(jax, q, f, v, q < p, p, 0, 1.0)

    return jax.jit(assemble)


def _build_level(jax: Any, p: int, buf: int, ns: int, nd: int, planes: bool = False) -> Any:
    """One level: its bin sums (or, ``planes``, its (B, P) state for the per-pixel G2
    side file) and the next level's hits."""
    jnp = jax.numpy
    be = get_backend("jax")
    xs = np.arange(1, buf + 1)
    dump = buf * p

    def level(q, f, v, count, count_next, sid, did, d_count):
        valid = (q < p) & (f < count)
        vz = jnp.where(valid, v, 0.0)
        sp = jnp.zeros(dump + 1)
        for s in range(1, buf + 1):
            # entry i + s: the partner at delay d = f[i+s] - f[i] when it is the same pixel
            q2 = jnp.concatenate([q[s:], jnp.full(s, p, q.dtype)])
            f2 = jnp.concatenate([f[s:], jnp.zeros(s, f.dtype)])
            v2 = jnp.concatenate([vz[s:], jnp.zeros(s)])
            d = f2 - f
            ok = valid & (q2 == q) & (d <= buf) & (f2 < count)
            sp = sp.at[jnp.where(ok, (d - 1) * p + q, dump)].add(vz * v2)
        first = jnp.zeros(dump + 1).at[jnp.where(valid & (f < buf), f * p + q, dump)].add(vz)
        j = f - (count - buf)
        last = jnp.zeros(dump + 1).at[jnp.where(valid & (j >= 0), j * p + q, dump)].add(vz)
        # the hits are in pixel order: a sorted segment sum
        tot = jax.ops.segment_sum(vz, q, p + 1, indices_are_sorted=True)[:p]

        def plane(a):
            return a[:dump].reshape(buf, p)

        keep = valid & ((f >> 1) < count_next)
        nxt = _group(jax, q, f, v, keep, p, 1, 0.5)
        if planes:
            return (plane(last), plane(first), plane(sp), tot), nxt
        terms = pixel_terms(jnp, plane(last), plane(first), plane(sp), tot, count, xs)
        s_g2, s_ip, s_if, _dsum, dss = reduce_pixel_terms(be, terms, sid, did, d_count, ns, nd)
        return (s_g2, s_ip, s_if, dss), nxt

    return jax.jit(level)


_PROGRAMS: dict[Any, Any] = {}


def _cached(key: tuple, build: Any) -> Any:
    fn = _PROGRAMS.get(key)
    if fn is None:
        fn = _PROGRAMS[key] = build()
    return fn


class XlaPhotonMultitau:
    """The photon multi-tau correlator as XLA programs (see the module notes).

    Parameters
    ----------
    pixels : PixelBins
    n_frames : int
        Processed frames of the job (sets levels and delays).
    delays_per_level, normalize_frame :
        As the CPU photon correlator.
    device : jax.Device or None
    chunk : int
        Hits per host->device transfer.
    """

    def __init__(self, pixels: PixelBins, n_frames: int, delays_per_level: int = 4,
                 normalize_frame: bool = False, *, device: Any = None,
                 chunk: int = CHUNK) -> None:
        get_backend("jax")  # x64 set before JAX starts
        import jax

        from xpcsviewer.compute._scattering_sparse import pixel_lookup
        from xpcsviewer.compute.multitau._shared import delay_list

        self._jax = jax
        self.pixels = pixels
        self.m = int(delays_per_level)
        self.buf = 2 * self.m
        self.n_frames = int(n_frames)
        self.delays, self.levels, self.xs = delay_list(self.n_frames, self.m)
        if self.delays.size == 0:
            raise ValueError(f"need at least 2 frames to correlate, got {n_frames}")
        self.n_levels = int(self.levels.max()) + 1
        self.normalize = bool(normalize_frame)
        self.device = device if device is not None else jax.devices("cpu")[0]
        self.chunk = int(chunk)
        # frame field: room for every frame (the sentinel's frame is 0)
        self.kbits = max(int(self.n_frames).bit_length(), 1)
        if self.kbits + int(pixels.n_pixels + 1).bit_length() > 62:
            raise ValueError(f"{self.n_frames} frames x {pixels.n_pixels} pixels do not fit "
                             "one 63-bit sort key")
        self.n_processed = 0
        self.n_events = 0
        self._lut = self._put(pixel_lookup(pixels))
        self._chunks: list[tuple[Any, Any, Any]] = []
        self._stage: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._staged = 0
        self._sorted: tuple[Any, Any, Any] | None = None
        pb = pixels
        self._tables = tuple(self._put(a) for a in (
            np.asarray(pb.static_id, np.int32), np.asarray(pb.dynamic_id, np.int32),
            np.asarray(pb.dynamic_count, np.float64)))

    def _put(self, host: np.ndarray) -> Any:
        count_host_to_device(host.nbytes)
        return self._jax.device_put(host, self.device)

    # ------------------------------------------------------------------ input
    def add_events(self, stop: int, frame: np.ndarray, pixel: np.ndarray,
                   value: np.ndarray) -> None:
        """Hits of processed frames ``[n_processed, stop)`` (frame order)."""
        stop = int(stop)
        if stop > self.n_frames:
            raise ValueError(f"more frames than announced ({stop} > {self.n_frames})")
        if stop < self.n_processed:
            raise ValueError(f"frames must come in order: at {self.n_processed}, asked to "
                             f"stop at {stop}")
        frame, pixel, value = (np.asarray(a) for a in (frame, pixel, value))
        if frame.size and (int(frame[0]) < self.n_processed or int(frame[-1]) >= stop):
            raise ValueError(f"hits outside frames [{self.n_processed}, {stop})")
        if self._sorted is not None:
            raise ValueError("hits added after the result was taken")
        self.n_processed = stop
        a = 0
        while a < frame.size:
            take = min(frame.size - a, self.chunk - self._staged)
            self._stage.append((frame[a:a + take], pixel[a:a + take], value[a:a + take]))
            self._staged += take
            a += take
            if self._staged == self.chunk:
                self._send()
        self.n_events += int(frame.size)

    def _send(self) -> None:
        if not self._staged:
            return
        parts = list(zip(*self._stage, strict=True))
        host = [np.concatenate(p) if len(p) > 1 else np.ascontiguousarray(p[0])
                for p in parts]
        self._chunks.append(tuple(self._put(h) for h in host))
        self._stage, self._staged = [], 0

    def _assembled(self) -> tuple[Any, Any, Any]:
        if self._sorted is None:
            self._send()
            p = self.pixels.n_pixels
            nb = _pow2(self.n_events, MIN_BUCKET)
            nf = _pow2(self.n_frames) if self.normalize else 0
            if not self._chunks:
                z = np.zeros(0, np.int32)
                self._chunks.append((self._put(z), self._put(z), self._put(np.zeros(0))))
            fr, px, va = (list(c) for c in zip(*self._chunks, strict=True))
            sig = tuple((a.shape, str(a.dtype)) for a in fr + px + va)
            fn = _cached(("assemble", p, nb, self.kbits, nf, self.normalize, sig,
                          str(self.device)),
                         lambda: _build_assemble(self._jax, p, nb, self.kbits, nf,
                                                 self.normalize))
            self._sorted = fn(fr, px, va, self._lut)
            self._chunks = []  # the sorted hits hold them all
        return self._sorted

    # ----------------------------------------------------------------- output
    def _run_levels(self, stop: int, planes: bool) -> Iterator[Any]:
        """Each level's output over frames ``[0, stop)``, in order (device arrays)."""
        pb = self.pixels
        ns, nd = pb.n_static, pb.n_dynamic
        fn = _cached(("level", pb.n_pixels, self.buf, ns, nd, planes, str(self.device)),
                     lambda: _build_level(self._jax, pb.n_pixels, self.buf, ns, nd, planes))
        q, f, v = self._assembled()
        for lvl in range(self.n_levels):
            count = stop >> lvl
            out, (q, f, v) = fn(q, f, v, np.int64(count), np.int64(count >> 1),
                                *self._tables)
            yield out

    def bin_sums(self, stop: int | None = None) -> list[tuple[np.ndarray, ...]]:
        """Per level, (s_g2, s_ip, s_if, dss) of delays 1..B (rows) over frames
        ``[0, stop)``."""
        stop = self.n_processed if stop is None else int(stop)
        out = list(self._run_levels(stop, False))  # every level queued before one is read
        return [tuple(ensure_numpy(a) for a in s) for s in out]

    @property
    def _cpu(self) -> None:
        return None  # iter_pixel_planes reads the levels below, not a photon state

    @property
    def _levels(self) -> Iterator[Any]:
        """The levels' state (``hist, first, sumprod, total, count``) of all frames, one
        level at a time (the per-pixel planes read them in order; one level is held)."""
        from xpcsviewer.compute.multitau.correlator import _Level

        stop = self.n_processed
        for lvl, (hist, first, sp, tot) in enumerate(self._run_levels(stop, True)):
            xs = tuple(range(1, self.buf + 1)) if lvl == 0 else tuple(
                range(self.m + 1, self.buf + 1))
            rows = np.asarray(xs) - 1
            yield _Level(xs, ensure_numpy(hist), ensure_numpy(first),
                         ensure_numpy(sp)[rows], ensure_numpy(tot), stop >> lvl)

    def pixel_planes(self) -> Iterator[tuple[int, np.ndarray]]:
        """Per-pixel G2/IP/IF, one (3, H, W) float32 plane per delay (the CPU engines'
        :func:`~xpcsviewer.compute.multitau.pixels.iter_pixel_planes`)."""
        from xpcsviewer.compute.multitau.pixels import iter_pixel_planes

        return iter_pixel_planes(self)

    def result(self, stop: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(g2 (T, Nd), g2_err (T, Nd), g2_static (T, Ns)) of frames ``[0, stop)``;
        unreachable delays NaN (the CPU engines' rows and rules)."""
        stop = self.n_processed if stop is None else int(stop)
        pb = self.pixels
        ns, nd = pb.n_static, pb.n_dynamic
        t = self.delays.size
        g2 = np.full((t, nd), np.nan)
        err = np.full((t, nd), np.nan)
        g2s = np.full((t, ns), np.nan)
        sums = self.bin_sums(stop)
        row0 = 0
        for lvl in range(self.n_levels):
            xs = range(1, self.buf + 1) if lvl == 0 else range(self.m + 1, self.buf + 1)
            n_here = int((self.levels == lvl).sum())
            cnt = stop >> lvl
            keep = [x - 1 for x in xs if cnt - x >= MIN_PAIRS][:n_here]
            if keep:
                k = np.asarray(keep)
                s_g2, s_ip, s_if, dss = sums[lvl]
                rows = row0 + np.arange(k.size)
                g2[rows], err[rows], g2s[rows] = combine_bin_sums(
                    s_g2[k], s_ip[k], s_if[k], dss[k], pb.static_count, pb.dynamic_count,
                    pb.static_to_dynamic, nd)
            row0 += n_here
        return g2, err, g2s


def correlate_events_xla(frames: Any, partition: Any, spec: Any = None, *, options: Any = None,
                         device: Any = None, progress: Any = None, cancel: Any = None) -> Any:
    """:func:`~xpcsviewer.compute.multitau.photons.correlate_multitau_events` with the XLA
    engine: the same result (float64 round-off), the correlation on ``device``; the means
    (``with_scattering``) are the CPU engine's host sums of the same hits.

    ``options.pixel_sink`` gets the per-pixel G2/IP/IF planes, as from the CPU engine.
    """
    from xpcsviewer.compute.inputs import Partition
    from xpcsviewer.compute.multitau._shared import (
        MultitauResult,
        MultitauRun,
        attach_snapshots,
    )
    from xpcsviewer.compute.multitau._xla import xla_device
    from xpcsviewer.compute.options import MultitauOptions
    from xpcsviewer.compute.spec import CorrelateSpec
    from xpcsviewer.progress import report

    spec = spec if spec is not None else CorrelateSpec()
    opt = options if options is not None else MultitauOptions()
    dev = xla_device(device)
    blocks, n_frames = frames.open(), int(frames.n_frames)
    pixels = Partition.of(partition).pixels()
    m, normalize = int(opt.delays_per_level), bool(spec.normalize_frame)
    corr = XlaPhotonMultitau(pixels, n_frames, m, normalize, device=dev)
    acc = None
    if opt.with_scattering:
        from xpcsviewer.compute._scattering_sparse import SparseScattering
        from xpcsviewer.compute.pipeline import multitau_segments

        acc = SparseScattering(pixels, n_frames, opt.scattering_group,
                               segments=multitau_segments(n_frames))
    num_partial_g2 = int(spec.num_partial_g2)
    report(progress, cancel, 0, n_frames, "multi-tau (photons, XLA)")
    from xpcsviewer.model.events import prefetched

    for block in prefetched(iter(blocks)):
        if block.start != corr.n_processed:
            raise ValueError(f"blocks must follow each other: at frame {corr.n_processed}, "
                             f"got a block from {block.start}")
        corr.add_events(block.stop, block.frame, block.pixel, block.value)
        if acc is not None:
            acc.add_events(block.start, block.stop, block.frame, block.pixel, block.value)
        report(progress, cancel, corr.n_processed, n_frames,
               f"multi-tau (photons, XLA): {corr.n_events:,} hits sent")
    if corr.n_processed != n_frames:
        raise ValueError(f"expected {n_frames} frames, got {corr.n_processed}")
    marks = ([round(n_frames * (i + 1) / num_partial_g2) for i in range(num_partial_g2)]
             if num_partial_g2 > 0 else [])
    snaps = []
    for mk in dict.fromkeys(marks):
        if 0 < mk < n_frames:
            g, e, _ = corr.result(mk)
            snaps.append((mk, g, e))
        report(progress, cancel, len(snaps), len(marks) + 1, "multi-tau (photons, XLA)")
    g2, err, g2s = corr.result()
    from xpcsviewer.compute.multitau.correlator import emit_pixel_planes

    emit_pixel_planes(corr, opt.pixel_sink, progress, cancel)
    if n_frames in marks:
        snaps.append((n_frames, g2, err))
    res = MultitauResult(
        delay_frames=corr.delays.copy(), g2=g2, g2_err=err, g2_static=g2s,
        n_frames=corr.n_processed,
        config={"delays_per_level": m, "normalize_frame": normalize,
                "num_partial_g2": num_partial_g2, "backend": "jax", "path": "sparse",
                "engine": "xla", "device": f"{dev.platform}:{dev.id}",
                "events": int(corr.n_events)})
    attach_snapshots(res, snaps)
    return MultitauRun(res, acc) if acc is not None else res
