"""Two-time maps of independent pixel groups of each bin (errors of the age cuts).

The age cuts of a two-time map have g2 correlated across lags, so a fit that treats the
lags as independent understates tau's error late in a run (docs/ages.md). Independent
pixel groups give the error instead: the detector is cut into square tiles (``tile_px``
pixels, larger than a speckle) dealt at random to K groups, and the two-time map of each
processed bin is computed for each group's pixels too, with the bin's own normalisation
(:func:`~xpcsviewer.compute.twotime.correlator.twotime_map` on the group's pixels with their static
bins). The spread of a derived number over the groups is its error
(benchmarks/ages_jackknife_probe.py).

Memory: K x bins x N^2 float32 (the maps, upper triangles as the file stores them) plus
the selected pixels' frames, as the two-time pass holds them; refused above
:data:`MAX_GROUP_FRAMES` frames (16 groups of 2048 frames: 256 MiB a bin).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xpcsviewer.compute.inputs import FrameStream, Partition, frame_chunks
from xpcsviewer.compute.spec import CorrelateSpec, parse_bins
from xpcsviewer.compute.twotime.correlator import keep_frames, twotime_map
from xpcsviewer.model.groups import TwotimeGroups
from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = ["MAX_GROUP_FRAMES", "TwotimeGroups", "group_maps", "group_maps_bytes", "tile_groups"]

#: most frames a run with group maps may have (K x bins x N^2 float32 maps are held)
MAX_GROUP_FRAMES = 2048


def tile_groups(shape: tuple[int, int], n_groups: int, tile_px: int = 8,
                seed: int = 0) -> np.ndarray:
    """The group (0..n_groups-1) of every detector pixel: square tiles dealt at random.

    The ``ceil(H / tile_px) x ceil(W / tile_px)`` tiles are shuffled (``seed``) and dealt
    to the groups in turn, so that the groups hold as many tiles as possible alike (they
    differ by at most one); the same arguments give the same groups.

    Returns
    -------
    (H, W) int64
    """
    h, w = (int(x) for x in shape)
    k, t = int(n_groups), int(tile_px)
    if k < 1:
        raise ValueError(f"n_groups must be at least 1, got {n_groups}")
    if t < 1:
        raise ValueError(f"tile_px must be at least 1, got {tile_px}")
    if h < 1 or w < 1:
        raise ValueError(f"shape must be positive, got {shape}")
    th, tw = -(-h // t), -(-w // t)
    rng = np.random.default_rng(int(seed))
    tiles = rng.permutation(np.arange(th * tw) % k).reshape(th, tw)
    return np.repeat(np.repeat(tiles, t, axis=0), t, axis=1)[:h, :w].astype(np.int64)


def group_maps_bytes(n_frames: int, n_groups: int, n_bins: int) -> int:
    """Bytes of the group maps a run holds (float32 N x N per group and bin)."""
    return 4 * int(n_frames) ** 2 * int(n_groups) * int(n_bins)


def group_maps(
    frames: FrameStream | np.ndarray,
    partition: Partition | Any,
    spec: CorrelateSpec,
    *,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> TwotimeGroups:
    """The two-time maps of each pixel group of each bin, from a frame stream.

    Parameters
    ----------
    frames : FrameStream or (N, H, W) array
        The frames the bins' own maps were made of (same selection).
    partition : Partition or QMap
        As for :func:`~xpcsviewer.compute.twotime.correlator.correlate_twotime`.
    spec : CorrelateSpec
        ``dq``: the 1-based dynamic bins (the processed bins of the two-time result, as
        numbers); ``groups``, ``group_tile``, ``group_seed``: K, the tile side and the
        seed of :func:`tile_groups`.

    Returns
    -------
    TwotimeGroups
        ``maps[j]``: (K, N, N) float32 upper triangles (lower zero) of bin ``bins[j]``,
        normalised per static bin over the group's own pixels, as the bin's map is over
        all of them; NaN for a group with no pixel in the bin. ``pixels``: (K, B) counts.
    """
    chunks, n = frame_chunks(frames, 256)
    if n > MAX_GROUP_FRAMES:
        raise ValueError(
            f"two-time group maps hold K x bins x N^2 floats: at most {MAX_GROUP_FRAMES} "
            f"frames, got {n} (use fewer frames or no group maps)")
    pix = Partition.of(partition).pixels()
    bins = parse_bins(spec.dq, pix.n_dynamic)
    n_groups, tile_px, seed = int(spec.groups), int(spec.group_tile), int(spec.group_seed)
    grp_map = tile_groups(pix.shape, n_groups, tile_px, seed).ravel()
    k = int(n_groups)
    sel = np.flatnonzero(np.isin(pix.dynamic_id, bins - 1))
    sel_index = pix.pixel_index[sel]
    store: np.ndarray | None = None
    done = 0
    for chunk in chunks:
        flat = np.asarray(chunk).reshape(len(chunk), -1)
        m = flat.shape[0]
        store = keep_frames(store, flat[:, sel_index], done, n)
        done += m
        report(progress, cancel, done, n + len(bins), "two-time groups: reading")
    if done != n:
        raise ValueError(f"expected {n} frames, got {done}")
    assert store is not None or n == 0
    dyn, sta, grp = pix.dynamic_id[sel], pix.static_id[sel], grp_map[sel_index]
    maps: list[np.ndarray] = []
    counts = np.zeros((k, bins.size), dtype=np.int64)
    for j, b in enumerate(bins):
        out = np.full((k, n, n), np.nan, dtype=np.float32)
        in_bin = dyn == b - 1
        for g in range(k):
            cols = np.flatnonzero(in_bin & (grp == g))
            counts[g, j] = cols.size
            if cols.size:
                out[g] = twotime_map(store[:, cols], sta[cols], full=False)
        maps.append(out)
        report(progress, cancel, n + j + 1, n + len(bins), f"two-time groups: bin {b}")
    return TwotimeGroups(bins=bins, pixels=counts, maps=maps, tile_px=int(tile_px),
                         seed=int(seed))
