"""Two-time correlation C(t1, t2) per dynamic bin (result-file-format.md §7).

Semantics
---------
For a dynamic bin with pixels p (P_b of them), each pixel value is first divided by
the mean intensity, in the same frame, of its static bin (``smooth="sqmap"``, the
default) or of the dynamic bin (``smooth="dqmap"``); a non-positive mean becomes 1.
Then::

    C(t1, t2) = P_b * sum_p I_p(t1) I_p(t2) / (sum_p I_p(t1) * sum_p I_p(t2))

with a non-positive denominator replaced by 1. g2 from C2 is the mean of the k-th
diagonal, ``g2[k] = mean_i C[i, i + k]`` (k = 0..N-1), for the whole run and for 5
equal segments of N // 5 frames (the first 5 * (N // 5) frames).

Algorithm and memory
--------------------
C of a bin is a Gram matrix, X Xᵀ over its normalised pixels. The map is built in
row tiles of ``block_rows`` frames: only the blocks on and above the diagonal are
computed (a blocked symmetric rank-k update: a diagonal block is ``Y_I Y_Iᵀ``, which
NumPy hands to BLAS ``syrk``; the others are one GEMM each), so the work is about
half of a full matrix product. Each tile is normalised on the fly from the stored
counts, so the movie is never held in float64: memory is the selected pixels in their
integer dtype (float input: float32), the float64 map of the bin in progress, the
finished maps (float64 symmetric, or float32 upper triangles for writing) and two tiles.

On the CPU (NumPy backend, or a JAX job routed to the CPU) the blocks go straight to
BLAS: no XLA compilation at all. On an accelerator one jitted kernel per tile shape
normalises a tile and one computes a block (tiles are padded to ``block_rows``, so a
job compiles two programs).
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xpcsviewer.backends import get_backend, resolve_device
from xpcsviewer.compute._binning import PixelBins
from xpcsviewer.compute.inputs import FrameStream, Partition, frame_chunks
from xpcsviewer.compute.multitau.correlator import ScatteringAccumulator
from xpcsviewer.compute.options import TwotimeOptions
from xpcsviewer.compute.spec import CorrelateSpec, Engine, parse_bins
from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = [
    "TwotimeResult",
    "TwotimeRun",
    "c2_diagonal_mean",
    "c2_g2_segments",
    "correlate_twotime",
    "twotime_map",
]


#: float64 bytes of one normalised tile; bounds ``block_rows`` for very large bins
TILE_BYTES = 64 << 20
#: a bin's normalised frames are kept whole (each tile normalised once) up to this size
#: or the size of its map, whichever is larger; beyond it tiles are recomputed
CACHE_BYTES = 256 << 20


#: arrays at least this large are mapped in small pages (see :func:`_small_pages`)
SMALL_PAGES_BYTES = 4 << 20


def _small_pages(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """A fresh zero array in the kernel's small pages (private anonymous memory).

    NumPy advises huge pages for large arrays. On the VMs we measured, faulting fresh
    memory in as huge pages cost 5x more per MB than small pages (eight 4000 x 4000
    float32 maps cast from a float64 map: 1.23 vs 0.25 CPU-s), and GEMM ran at the same
    speed on either; the job's big buffers and maps are written once or reused, so they
    take small pages. Zero-filled by the kernel; freed with the array.
    """
    dt = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if nbytes < SMALL_PAGES_BYTES or not hasattr(mmap, "MAP_ANONYMOUS"):
        return np.zeros(shape, dt)
    buf = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    return np.frombuffer(buf, dtype=dt).reshape(shape)


def _group_layout(group_id: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(order, starts, counts): pixel order grouping each normalisation group together."""
    gid = np.asarray(group_id, dtype=np.int64)
    order = np.argsort(gid, kind="stable")
    _, starts, counts = np.unique(gid[order], return_index=True, return_counts=True)
    return order, starts, counts


class _TileNormalizer:
    """Normalised, pre-scaled row tiles of one bin, into reusable buffers.

    Row t of a tile becomes ``y_t * sqrt(P_b) / S_t`` with ``y`` the values divided by
    their group's per-frame mean and ``S_t = sum(y_t)``, so that a block of the map is
    one BLAS product. Fresh large arrays are avoided on purpose: first-touch page
    faults cost more than the arithmetic on the machines we measured.
    """

    def __init__(self, x: np.ndarray, starts: np.ndarray, counts: np.ndarray, rows: int,
                 cache_bytes: int) -> None:
        self.x, self.starts, self.counts = x, starts, counts
        n, pb = x.shape
        self.pb = pb
        self.gidx = np.repeat(np.arange(counts.size), counts)
        self.scale_pb = np.sqrt(float(pb))
        # a signed or float input may give S <= 0 rows, where the standard rule
        # (non-positive denominator -> 1) cannot be folded into the rows
        self.nonneg = np.issubdtype(x.dtype, np.unsignedinteger) or bool(n == 0 or np.min(x) >= 0)
        self.whole = 8 * n * pb <= cache_bytes
        if self.whole:
            self.buf = np.empty((n, pb))
            self.sums = np.empty(n)
            for a in range(0, n, rows):
                self._fill(self.buf[a : a + rows], self.sums[a : a + rows], a, min(n, a + rows))
        else:
            self.tmp = np.empty((rows, pb))
            self.bufs = (np.empty((rows, pb)), np.empty((rows, pb)))
            self.sbufs = (np.empty(rows), np.empty(rows))

    def _fill(self, y: np.ndarray, s: np.ndarray, a0: int, a1: int) -> None:
        np.copyto(y, self.x[a0:a1], casting="unsafe")
        gmean = np.add.reduceat(y, self.starts, axis=1)
        gmean /= self.counts
        gmean[~(gmean > 0)] = 1.0
        tmp = None if self.whole else self.tmp[: a1 - a0]
        inv = 1.0 / gmean
        if tmp is None:
            y *= np.take(inv, self.gidx, axis=1)
        else:
            np.take(inv, self.gidx, axis=1, out=tmp)
            y *= tmp
        np.sum(y, axis=1, out=s)
        if self.nonneg:
            # S = 0 only for an all-zero row, whose map entries are 0 anyway
            f = np.where(s > 0, self.scale_pb / np.where(s > 0, s, 1.0), self.scale_pb)
            y *= f[:, None]

    def tile(self, slot: int, a0: int, a1: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows [a0, a1) normalised (and pre-scaled when ``nonneg``), with their sums."""
        if self.whole:
            return self.buf[a0:a1], self.sums[a0:a1]
        y, s = self.bufs[slot][: a1 - a0], self.sbufs[slot][: a1 - a0]
        self._fill(y, s, a0, a1)
        return y, s


def _diagonal_sums(flat: np.ndarray, n: int) -> np.ndarray:
    """Sums of the diagonals k = 0..n-1 of an upper-triangular n x n matrix.

    ``flat`` holds the matrix row-major followed by at least n zeros. Row i of the
    skewed view starts at element (i, i); its entries past column n - 1 fall into the
    next row's lower triangle (zero) or the zero tail, so a plain column sum is exact.
    """
    st = flat.strides[0]
    skew = np.lib.stride_tricks.as_strided(flat, shape=(n, n), strides=((n + 1) * st, st))
    return skew.sum(axis=0)


def _map_g2(c: np.ndarray, flat: np.ndarray, n_segments: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """(g2 (N,), segments (N // n_segments, n_segments)) of an upper-triangular map."""
    n = c.shape[0]
    full = _diagonal_sums(flat, n) / np.arange(n, 0, -1)
    length = n // n_segments
    seg = np.zeros((length, n_segments))
    if length:
        sub = np.zeros(length * length + length)
        for k in range(n_segments):
            a = k * length
            sub[: length * length].reshape(length, length)[:] = c[a : a + length, a : a + length]
            seg[:, k] = _diagonal_sums(sub, length) / np.arange(length, 0, -1)
    return full, seg


def finish_map(c: np.ndarray, flat: np.ndarray, full: bool,
               maps: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """g2 of an upper-triangular map (in the shared buffer ``flat``), and the map kept in
    ``maps``: symmetric float64 (``full``) or the float32 upper triangle a file stores."""
    g2 = _map_g2(c, flat, 5)
    if full:
        m = _small_pages(c.shape, c.dtype)
        np.copyto(m, c)
        _mirror(m)
        maps.append(m)
    else:
        m = _small_pages(c.shape, np.float32)
        np.copyto(m, c, casting="same_kind")
        maps.append(m)
    return g2


def _dense_engine(engine: Engine | str) -> Engine:
    """The dense two-time engine: ``compiled`` (BLAS through NumPy on the host, what a
    planned CPU job takes), ``array`` (the backend's own kernels) or ``auto`` (compiled
    unless the backend runs on an accelerator; for callers without a plan)."""
    engine = Engine.parse(engine)
    if engine not in (Engine.AUTO, Engine.ARRAY, Engine.COMPILED):
        raise ValueError(f"engine must be auto, compiled or array (backend), got "
                         f"{engine.value!r}")
    return engine


def _host_blas(engine: Engine, be: Any, device: Any) -> bool:
    return engine is Engine.COMPILED or (engine is Engine.AUTO and _cpu_engine(be, device))


def _cpu_engine(backend: Any, device: Any) -> bool:
    """Blocks go to BLAS through NumPy unless a JAX job runs on an accelerator."""
    if backend.name == "numpy":
        return True
    return device is None or getattr(device, "platform", "cpu") == "cpu"


def _upper_map(
    x: np.ndarray,
    group_id: np.ndarray,
    out_flat: np.ndarray,
    *,
    block_rows: int,
    backend: Any,
    device: Any,
    cpu: bool,
) -> np.ndarray:
    """Fill ``out_flat`` (N*N + N) with the upper triangle of C; returns the (N, N) view."""
    n, pb = x.shape
    order, starts, counts = _group_layout(group_id)
    if not np.array_equal(order, np.arange(pb)):
        x = np.asarray(x)[:, order]
    rows = max(16, min(int(block_rows), TILE_BYTES // max(8 * pb, 1)))
    c = out_flat[: n * n].reshape(n, n)
    out_flat[n * n :] = 0.0
    tiles = [(a, min(n, a + rows)) for a in range(0, n, rows)]
    if cpu:
        norm = _TileNormalizer(x, starts, counts, rows, cache_bytes=max(8 * n * n, CACHE_BYTES))
        for i, (a0, a1) in enumerate(tiles):
            yi, si = norm.tile(0, a0, a1)
            for b0, b1 in tiles[i:]:
                view = c[a0:a1, b0:b1]
                if b0 == a0:
                    yj, sj = yi, si
                    np.matmul(yi, yi.T, out=view)  # same operand transposed: BLAS syrk
                else:
                    yj, sj = norm.tile(1, b0, b1)
                    np.matmul(yi, yj.T, out=view)
                if not norm.nonneg:
                    den = np.multiply.outer(si, sj)
                    den[~(den > 0)] = 1.0
                    view *= pb
                    view /= den
                if b0 == a0:
                    for k in range(1, a1 - a0):  # lower half of a diagonal block
                        view[k, :k] = 0.0
            # lower-left blocks of this row band
            if a0 > 0:
                c[a0:a1, :a0] = 0.0
    else:
        from xpcsviewer.compute.twotime._xla import upper_map_xla

        upper_map_xla(np.asarray(x), counts, c, rows, device)
    return c


def _mirror(c: np.ndarray) -> None:
    """Upper triangle (lower zero) -> symmetric, in place, in row bands."""
    n = c.shape[0]
    for a in range(0, n, 512):
        b = min(n, a + 512)
        c[b:, a:b] = c[a:b, b:].T
        blk = c[a:b, a:b]
        blk += np.triu(blk, 1).T


def twotime_map(
    frames: np.ndarray,
    group_id: np.ndarray,
    *,
    block_rows: int = 1024,
    backend: Any = None,
    device: Any = None,
    engine: Engine | str = Engine.AUTO,
    full: bool = True,
) -> np.ndarray:
    """C(t1, t2) of one bin from its pixels' frames.

    Parameters
    ----------
    frames : (N, P_b) integer or float
        Values of the bin's pixels over time (any real dtype; a view is fine).
    group_id : (P_b,) int
        Normalisation group (static bin) of each pixel.
    block_rows : int
        Frames per tile (capped so that a tile stays below ``TILE_BYTES``).
    engine : {auto, array}
        ``auto``: BLAS through NumPy on the CPU, the backend's jitted kernels on
        an accelerator; ``array`` (old word ``backend``) always uses the backend's own
        kernels.
    full : bool
        True: the symmetric map; False: the upper triangle (diagonal included),
        lower triangle zero, which is what a result file stores.

    Returns
    -------
    (N, N) float64
    """
    be = backend if backend is not None else get_backend()
    engine = _dense_engine(engine)
    n = frames.shape[0]
    flat = np.empty(n * n + n)
    c = _upper_map(frames, group_id, flat, block_rows=block_rows, backend=be, device=device,
                   cpu=_host_blas(engine, be, device))
    if full:
        _mirror(c)
    return c


def c2_diagonal_mean(c2: np.ndarray) -> np.ndarray:
    """``g[k] = mean_i C[i, i + k]`` for k = 0..N-1 of an (N, N) map -> (N,) float64."""
    c = np.asarray(c2, dtype=np.float64)
    n = c.shape[0]
    return np.array([np.trace(c, offset=k) / (n - k) for k in range(n)])


def c2_g2_segments(c2: np.ndarray, n_segments: int = 5) -> np.ndarray:
    """Diagonal means inside ``n_segments`` blocks of N // n_segments frames.

    Returns
    -------
    (N // n_segments, n_segments) float64
    """
    n = c2.shape[0]
    length = n // n_segments
    out = np.zeros((length, n_segments))
    if length == 0:
        return out
    for s in range(n_segments):
        a = s * length
        out[:, s] = c2_diagonal_mean(c2[a : a + length, a : a + length])
    return out


def keep_frames(store: np.ndarray | None, frames: np.ndarray, done: int, n: int
                ) -> np.ndarray:
    """Put a chunk of frames (m, P) at row ``done`` of the (n, P) store, made on the first
    chunk in the smallest dtype that holds it and widened to float32 when a later
    chunk needs it; returns the store."""
    m = frames.shape[0]
    if done + m > n:
        raise ValueError(f"more frames than announced ({done + m} > {n})")
    if store is None:
        store = np.empty((n, frames.shape[1]), dtype=_store_dtype(frames.dtype))
    elif not np.can_cast(frames.dtype, store.dtype, "safe"):
        store = store.astype(np.float32)
    store[done : done + m] = frames
    return store


def _store_dtype(dt: np.dtype) -> np.dtype:
    """Counts keep their integer type (exact, 1-4 bytes); anything else is float32."""
    dt = np.dtype(dt)
    if np.issubdtype(dt, np.integer) and dt.itemsize <= 4:
        return dt
    return np.dtype(np.float32)


@dataclass
class TwotimeResult:
    """Two-time maps and their g2 (NumPy float64).

    Attributes
    ----------
    processed_bins : (Np,) int64
        1-based dynamic bins, ascending.
    c2 : list of (N, N) arrays
        Maps in ``processed_bins`` order: symmetric float64, or float32 upper
        triangles with ``c2_format="upper32"``.
    g2_full : (N, Np) float64
        Diagonal means, delay k = 0..N-1.
    g2_segments : (N // 5, 5, Np) float64
    n_frames : int
    config : dict
    """

    processed_bins: np.ndarray
    c2: list[np.ndarray]
    g2_full: np.ndarray
    g2_segments: np.ndarray
    n_frames: int
    config: dict[str, Any] = field(default_factory=dict)


@dataclass
class TwotimeRun:
    """Two-time plus the scattering averages of the same pass."""

    twotime: TwotimeResult
    scattering: ScatteringAccumulator


def correlate_twotime(
    frames: FrameStream | np.ndarray,
    partition: Partition | Any,
    spec: CorrelateSpec | None = None,
    *,
    options: TwotimeOptions | None = None,
    engine: Engine | str = Engine.AUTO,
    device: Any = "auto",
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> TwotimeResult | TwotimeRun:
    """Two-time maps of selected dynamic bins from a frame stream.

    Parameters
    ----------
    frames, partition
        As for :func:`~xpcsviewer.compute.multitau.correlator.correlate_multitau`.
    spec : CorrelateSpec, optional
        ``dq``: the 1-based dynamic bins (``"1-5,8"`` or numbers; default all non-empty
        bins); ``smooth``: the per-frame normalisation group, static bin (``sqmap``) or
        dynamic bin (``dqmap``).
    options : TwotimeOptions, optional
        ``chunk_size`` (frames per read of an array), ``block_rows`` (rows per
        matrix-product block), ``backend``, ``with_scattering`` (also the
        temporal/spatial means of the same pass: a ``TwotimeRun``) and ``c2_format``
        (``"upper32"``: the float32 upper triangles a result file stores).
    engine : {auto, array}
        See :func:`twotime_map` (``auto`` runs CPU jobs on BLAS, never compiling).
    progress, cancel
        Reported / checked between chunks and between bins.

    Returns
    -------
    TwotimeResult or TwotimeRun
    """
    spec = spec if spec is not None else CorrelateSpec()
    opt = options if options is not None else TwotimeOptions()
    smooth, c2_format, block_rows = spec.smooth, opt.c2_format, opt.block_rows
    if c2_format not in ("full", "upper32"):
        raise ValueError(f"c2_format must be 'full' or 'upper32', got {c2_format!r}")
    chunks, n_frames = frame_chunks(frames, opt.chunk_size)
    be = opt.backend if opt.backend is not None else get_backend()
    pixels: PixelBins = Partition.of(partition).pixels()
    bins = parse_bins(spec.dq, pixels.n_dynamic)
    bins = bins[pixels.dynamic_count[bins - 1] > 0]
    # pixels of the selected bins, grouped bin by bin and, inside a bin, by
    # normalisation group (C does not depend on pixel order; tiles normalise by reduceat)
    sel = np.flatnonzero(np.isin(pixels.dynamic_id, bins - 1))
    grp_all = pixels.static_id if smooth == "sqmap" else pixels.dynamic_id
    order = sel[np.lexsort((grp_all[sel], pixels.dynamic_id[sel]))]
    sel_index = pixels.pixel_index[order]
    sel_dyn = pixels.dynamic_id[order]
    sel_group = grp_all[order]
    dev = (
        None
        if be.name == "numpy"
        else resolve_device(device, work=float(n_frames) * n_frames * max(len(order), 1) / 64)
    )
    engine = _dense_engine(engine)
    if _host_blas(engine, be, dev):
        # BLAS through NumPy, the sums on NumPy too: nothing of this job needs XLA
        # (nor a compiled kernel)
        from xpcsviewer.compute.twotime._cpu import correlate_cpu

        return correlate_cpu(chunks, n_frames, pixels, bins, spec, opt, progress, cancel)
    store: np.ndarray | None = None
    # the means are host sums of the frames being read: on the device they would send
    # every frame again as float64 (4x a uint16 frame) and compile per chunk shape
    acc = (ScatteringAccumulator(pixels, n_frames, backend=get_backend("numpy"), device=None)
           if opt.with_scattering else None)
    done = 0
    total_steps = n_frames + len(bins)
    report(progress, cancel, 0, total_steps, "two-time: reading")
    for chunk in chunks:
        chunk = np.asarray(chunk)
        flat = chunk.reshape(chunk.shape[0], -1)
        k = flat.shape[0]
        store = keep_frames(store, flat[:, sel_index], done, n_frames)
        if acc is not None:
            acc.add(flat, flat[:, pixels.pixel_index])
        done += k
        report(progress, cancel, done, total_steps, "two-time: reading")
    if done != n_frames:
        raise ValueError(f"expected {n_frames} frames, got {done}")
    maps: list[np.ndarray] = []
    g2 = np.zeros((n_frames, len(bins)))
    g2_seg = np.zeros((n_frames // 5, 5, len(bins)))
    bounds = np.searchsorted(sel_dyn, bins - 1, side="left")
    ends = np.searchsorted(sel_dyn, bins - 1, side="right")
    full = c2_format == "full"
    cpu = _host_blas(engine, be, dev)
    flat = np.empty(n_frames * n_frames + n_frames)  # one float64 map buffer for all bins
    on_device = None
    if not cpu and be.name == "jax":
        from xpcsviewer.compute.twotime._xla import DeviceStore

        # the store crosses once, as stored; each bin is a column range of it
        on_device = DeviceStore(store, [int(b - a) for a, b in zip(bounds, ends, strict=True)],
                                dev, rows=block_rows)
    for i, (a, b) in enumerate(zip(bounds, ends, strict=True)):
        order, _starts, counts = _group_layout(sel_group[a:b])
        if on_device is not None and np.array_equal(order, np.arange(b - a)):
            c = flat[: n_frames * n_frames].reshape(n_frames, n_frames)
            flat[n_frames * n_frames:] = 0.0
            on_device.upper_map(int(a), counts, c)
        else:
            c = _upper_map(store[:, a:b], sel_group[a:b], flat, block_rows=block_rows,
                           backend=be, device=dev, cpu=cpu)
        g2[:, i], g2_seg[:, :, i] = finish_map(c, flat, full, maps)
        report(progress, cancel, n_frames + i + 1, total_steps, f"two-time: bin {bins[i]}")
    res = TwotimeResult(
        processed_bins=bins,
        c2=maps,
        g2_full=g2,
        g2_segments=g2_seg,
        n_frames=int(n_frames),
        config={"smooth": smooth, "backend": be.name},
    )
    if acc is not None:
        return TwotimeRun(res, acc)
    return res
