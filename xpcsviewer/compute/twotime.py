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

Memory
------
Frames of the selected bins are held once, as float32 (photon counts up to 2^24 are
exact), i.e. N x P_sel x 4 bytes; each map is built as a blocked matrix product of
float64 normalised row blocks (never the whole bin in float64), so the extra memory
per bin is the N x N map itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xpcsviewer.backends import ensure_numpy, get_backend, resolve_device
from xpcsviewer.compute._binning import PixelBins, kernel_cache, segment_sum_rows, select_pixels
from xpcsviewer.compute.multitau import ScatteringAccumulator, iter_array_chunks
from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = [
    "TwotimeResult",
    "TwotimeRun",
    "c2_diagonal_mean",
    "c2_g2_segments",
    "correlate_twotime",
    "parse_bins",
    "twotime_map",
]


def parse_bins(spec: str | Sequence[int] | None, n_dynamic: int) -> np.ndarray:
    """1-based dynamic bins from ``"all"``, ``None``, ``"1-5,8"`` or a list.

    Raises
    ------
    ValueError
        Malformed text or bins outside 1..n_dynamic.
    """
    if spec is None or (isinstance(spec, str) and spec.strip().lower() in ("", "all")):
        return np.arange(1, n_dynamic + 1, dtype=np.int64)
    out: set[int] = set()
    if isinstance(spec, str):
        for part in spec.split(","):
            part = part.strip()
            if not part:
                continue
            try:
                if "-" in part:
                    a, b = (int(v) for v in part.split("-", 1))
                    if b < a:
                        raise ValueError
                    out.update(range(a, b + 1))
                else:
                    out.add(int(part))
            except ValueError:
                raise ValueError(f"bad bin range {part!r} (expected e.g. 1-5,8)") from None
    else:
        out.update(int(v) for v in spec)
    bins = np.asarray(sorted(out), dtype=np.int64)
    bad = bins[(bins < 1) | (bins > n_dynamic)]
    if bad.size:
        raise ValueError(f"dynamic bins {bad.tolist()} are outside 1..{n_dynamic}")
    return bins


def _kernels(backend: Any) -> tuple[Any, Any]:
    def build_norm() -> Any:
        xp = backend.xp

        def norm(x, sid, count, n_groups):
            # x (r, pb) float32 counts -> float64 values divided by their group's
            # per-frame mean; S (r,) the per-frame sums after normalisation
            x = x.astype(xp.float64)
            gsum = segment_sum_rows(backend, x.T, sid, n_groups)  # (n_groups, r)
            gmean = gsum / count[:, None]
            gmean = xp.where(gmean > 0, gmean, 1.0)
            y = x / gmean[sid].T
            return y, y.sum(axis=1)

        return backend.jit(norm, static_argnames="n_groups")

    def build_gram() -> Any:
        xp = backend.xp

        def gram(yi, si, yj, sj, n_pix):
            den = si[:, None] * sj[None, :]
            return n_pix * (yi @ yj.T) / xp.where(den > 0, den, 1.0)

        return backend.jit(gram)

    return (
        kernel_cache(backend, ("twotime_norm",), build_norm),
        kernel_cache(backend, ("twotime_gram",), build_gram),
    )


def twotime_map(
    frames: np.ndarray,
    group_id: np.ndarray,
    *,
    block_rows: int = 1024,
    backend: Any = None,
    device: Any = None,
) -> np.ndarray:
    """C(t1, t2) of one bin from its pixels' frames.

    Parameters
    ----------
    frames : (N, P_b) float32 or integer
        Values of the bin's pixels over time.
    group_id : (P_b,) int
        0-based normalisation group (static bin) of each pixel.
    block_rows : int
        Rows per matrix-product block (bounds the float64 temporaries).

    Returns
    -------
    (N, N) float64
        Symmetric two-time map.
    """
    be = backend if backend is not None else get_backend()
    x = np.asarray(frames)
    n, pb = x.shape
    gid = np.asarray(group_id, dtype=np.int64)
    uniq, local = np.unique(gid, return_inverse=True)
    count = np.bincount(local, minlength=uniq.size).astype(np.float64)
    sid = be.asarray(local.astype(np.int32), device=device)
    cnt = be.asarray(count, device=device)
    norm, gram = _kernels(be)
    c = np.empty((n, n))
    starts = list(range(0, n, block_rows))
    blocks = {}

    def get(a: int) -> tuple[Any, Any]:
        if a not in blocks:
            xb = be.asarray(x[a : a + block_rows].astype(np.float32, copy=False), device=device)
            blocks[a] = norm(xb, sid, cnt, n_groups=int(uniq.size))
        return blocks[a]

    for i, a in enumerate(starts):
        yi, si = get(a)
        for b in starts[i:]:
            yj, sj = get(b)
            blk = ensure_numpy(gram(yi, si, yj, sj, float(pb)))
            c[a : a + blk.shape[0], b : b + blk.shape[1]] = blk
            if b != a:
                c[b : b + blk.shape[1], a : a + blk.shape[0]] = blk.T
        # row block a is never needed again
        blocks.pop(a, None)
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


@dataclass
class TwotimeResult:
    """Two-time maps and their g2 (NumPy float64).

    Attributes
    ----------
    processed_bins : (Np,) int64
        1-based dynamic bins, ascending.
    c2 : list of (N, N) float64
        Full symmetric maps in ``processed_bins`` order.
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
    frames: np.ndarray | Iterable[np.ndarray],
    dynamic_roi_map: np.ndarray,
    static_roi_map: np.ndarray,
    mask: np.ndarray | None = None,
    *,
    dq_bins: str | Sequence[int] | None = None,
    n_frames: int | None = None,
    n_dynamic: int | None = None,
    n_static: int | None = None,
    smooth: str = "sqmap",
    chunk_size: int = 256,
    block_rows: int = 1024,
    backend: Any = None,
    device: Any = "auto",
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
    with_scattering: bool = False,
) -> TwotimeResult | TwotimeRun:
    """Two-time maps of selected dynamic bins from a frame stream.

    Parameters
    ----------
    frames : (N, H, W) array or iterable of (n, H, W) chunks
    dynamic_roi_map, static_roi_map, mask
        As for :func:`correlate_multitau`.
    dq_bins : str or list of int, optional
        1-based dynamic bins (``"1-5,8"``); default all non-empty bins.
    n_frames : int, optional
        Required for an iterable.
    smooth : {"sqmap", "dqmap"}
        Per-frame normalisation group: static bin (default) or dynamic bin.
    chunk_size, block_rows : int
        Frames per read; rows per matrix-product block.
    progress, cancel
        Reported / checked between chunks and between bins.
    with_scattering : bool
        Also return the temporal/spatial means of the same pass.

    Returns
    -------
    TwotimeResult or TwotimeRun
    """
    if smooth not in ("sqmap", "dqmap"):
        raise ValueError(f"smooth must be 'sqmap' or 'dqmap', got {smooth!r}")
    if hasattr(frames, "shape"):
        if frames.ndim != 3:
            raise ValueError(f"frames must be (N, H, W), got shape {frames.shape}")
        n_frames = frames.shape[0] if n_frames is None else n_frames
        chunks: Iterable[np.ndarray] = iter_array_chunks(frames, chunk_size)
    else:
        if n_frames is None:
            raise ValueError("n_frames is required when frames is an iterable of chunks")
        chunks = frames
    be = backend if backend is not None else get_backend()
    pixels: PixelBins = select_pixels(dynamic_roi_map, static_roi_map, mask, n_dynamic, n_static)
    bins = parse_bins(dq_bins, pixels.n_dynamic)
    bins = bins[pixels.dynamic_count[bins - 1] > 0]
    # pixels of the selected bins, grouped bin by bin (stable: keeps detector order)
    sel = np.flatnonzero(np.isin(pixels.dynamic_id, bins - 1))
    order = sel[np.argsort(pixels.dynamic_id[sel], kind="stable")]
    sel_index = pixels.pixel_index[order]
    sel_dyn = pixels.dynamic_id[order]
    sel_group = pixels.static_id[order] if smooth == "sqmap" else sel_dyn
    dev = resolve_device(device, work=float(n_frames) * n_frames * max(len(order), 1) / 64)
    store = np.empty((n_frames, order.size), dtype=np.float32)
    acc = ScatteringAccumulator(pixels, n_frames, backend=be, device=dev) if with_scattering else None
    done = 0
    total_steps = n_frames + len(bins)
    report(progress, cancel, 0, total_steps, "two-time: reading")
    for chunk in chunks:
        chunk = np.asarray(chunk)
        flat = chunk.reshape(chunk.shape[0], -1)
        k = flat.shape[0]
        if done + k > n_frames:
            raise ValueError(f"more frames than announced ({done + k} > {n_frames})")
        store[done : done + k] = flat[:, sel_index]
        if acc is not None:
            acc.add(flat, be.asarray(flat[:, pixels.pixel_index], dtype=np.float64, device=dev))
        done += k
        report(progress, cancel, done, total_steps, "two-time: reading")
    if done != n_frames:
        raise ValueError(f"expected {n_frames} frames, got {done}")
    maps: list[np.ndarray] = []
    g2 = np.zeros((n_frames, len(bins)))
    g2_seg = np.zeros((n_frames // 5, 5, len(bins)))
    bounds = np.searchsorted(sel_dyn, bins - 1, side="left")
    ends = np.searchsorted(sel_dyn, bins - 1, side="right")
    for i, (a, b) in enumerate(zip(bounds, ends)):
        c = twotime_map(store[:, a:b], sel_group[a:b], block_rows=block_rows, backend=be, device=dev)
        maps.append(c)
        g2[:, i] = c2_diagonal_mean(c)
        g2_seg[:, :, i] = c2_g2_segments(c, 5)
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
