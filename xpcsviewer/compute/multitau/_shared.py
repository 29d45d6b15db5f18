"""What the multi-tau engines share: the delay list, the result, the frame feeding with
partial-g2 snapshots (the compiled and array engines in :mod:`.correlator`, the XLA
program in :mod:`._xla`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xpcsviewer.compute._scattering import ScatteringAccumulator
from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = ["MultitauResult", "MultitauRun", "attach_snapshots", "delay_list", "feed_frames"]


def delay_list(
    n_frames: int, delays_per_level: int = 4
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Multi-tau delays for ``n_frames`` processed frames.

    Parameters
    ----------
    n_frames : int
        N, frames after begin/end/stride/avg.
    delays_per_level : int
        m: level 0 has delays 1..2m, level L >= 1 has (m+1..2m) * 2^L.

    Returns
    -------
    delays : (T,) int64
        Delays in processed frames, ascending.
    level : (T,) int64
        Level L of each delay.
    x : (T,) int64
        Delay in level-L frames (``delays = x << level``).
    """
    m = int(delays_per_level)
    if m < 1:
        raise ValueError(f"delays_per_level must be >= 1, got {m}")
    buf = 2 * m
    out_d, out_l, out_x = [], [], []
    level = 0
    while True:
        n_l = int(n_frames) >> level
        xs = range(1, buf + 1) if level == 0 else range(m + 1, buf + 1)
        xs = [x for x in xs if x < n_l]
        if not xs:
            break
        for x in xs:
            out_d.append(x << level)
            out_l.append(level)
            out_x.append(x)
        level += 1
    return (
        np.asarray(out_d, dtype=np.int64),
        np.asarray(out_l, dtype=np.int64),
        np.asarray(out_x, dtype=np.int64),
    )


@dataclass
class MultitauResult:
    """Output of the multi-tau correlator (NumPy, float64).

    Attributes
    ----------
    delay_frames : (T,) int64
        Delays in processed frames (multiply by frame_time * stride * avg for seconds).
    g2, g2_err : (T, Nd) float64
        Dynamic-bin g2 and its error; column j is dynamic bin value j + 1.
    g2_static : (T, Ns) float64
        Static-bin g2_s (NaN for static bins without valid pixels).
    n_frames : int
        Processed frames correlated.
    g2_partial, g2_partial_err : (P, T, Nd) float64 or None
        Cumulative snapshots; delays not yet reachable are NaN.
    g2_partial_labels : (P,) int64 or None
        Frames accumulated in each snapshot.
    config : dict
        Solver settings (delays_per_level, normalize_frame, ...).
    """

    delay_frames: np.ndarray
    g2: np.ndarray
    g2_err: np.ndarray
    g2_static: np.ndarray
    n_frames: int
    g2_partial: np.ndarray | None = None
    g2_partial_err: np.ndarray | None = None
    g2_partial_labels: np.ndarray | None = None
    config: dict[str, Any] = field(default_factory=dict)


def attach_snapshots(res: MultitauResult,
                     snaps: list[tuple[int, np.ndarray, np.ndarray]]) -> None:
    """Partial g2 ``(frames, g2, err)`` snapshots into ``res``; consecutive identical
    snapshots are dropped, as the standard correlator does."""
    if not snaps:
        return
    keep = [0] + [i for i in range(1, len(snaps))
                  if not np.array_equal(snaps[i][1], snaps[i - 1][1], equal_nan=True)]
    res.g2_partial = np.stack([snaps[i][1] for i in keep])
    res.g2_partial_err = np.stack([snaps[i][2] for i in keep])
    res.g2_partial_labels = np.asarray([snaps[i][0] for i in keep], dtype=np.int64)


def feed_frames(chunks: Iterable[np.ndarray], corr: Any, feed: Callable[[np.ndarray], None],
                n_frames: int, chunk_size: int, num_partial_g2: int,
                progress: ProgressCallback | None, cancel: CancelToken | None
                ) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """Hand the frames to ``feed`` as (n, H*W) parts of at most ``chunk_size``, split at
    the partial-g2 marks so each snapshot ``(frames, g2, err)`` is taken at an exact
    frame count; checks that ``n_frames`` arrived. Shared by every engine."""
    marks = ([round(n_frames * (i + 1) / num_partial_g2) for i in range(num_partial_g2)]
             if num_partial_g2 > 0 else [])
    snaps: list[tuple[int, np.ndarray, np.ndarray]] = []
    report(progress, cancel, 0, n_frames, "multi-tau")
    for chunk in chunks:
        chunk = np.asarray(chunk)
        flat = chunk.reshape(chunk.shape[0], -1)
        a = 0
        while a < flat.shape[0]:
            nxt_mark = next((m for m in marks if m > corr.n_processed), None)
            take = min(flat.shape[0] - a, max(int(chunk_size), 1))
            if nxt_mark is not None:
                take = min(take, nxt_mark - corr.n_processed)
            feed(flat[a: a + take])
            a += take
            if corr.n_processed in marks and (not snaps or snaps[-1][0] != corr.n_processed):
                g, e, _ = corr.result()
                snaps.append((corr.n_processed, g, e))
            report(progress, cancel, corr.n_processed, n_frames, "multi-tau")
    if corr.n_processed != n_frames:
        raise ValueError(f"expected {n_frames} frames, got {corr.n_processed}")
    return snaps


@dataclass
class MultitauRun:
    """Multi-tau plus the scattering averages of the same pass."""

    multitau: MultitauResult
    scattering: ScatteringAccumulator
