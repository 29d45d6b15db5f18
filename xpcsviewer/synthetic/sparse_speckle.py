"""Photon-sparse speckle with known dynamics: hits of frames, and photon arrival times.

Two simulators, both chunked so that memory stays bounded whatever the length:

- :func:`iter_speckle_hits` / :func:`speckle_hits`: Brownian speckle frames of the
  speckle simulator (:func:`xpcsviewer.synthetic.speckle.iter_frames`) on a small
  region of a large detector (e.g. 128 x 128 pixels near the beam on a 512 x 1024
  Rigaku module), at a low photon rate, turned into hits chunk by chunk (the dense
  movie of the whole detector is never formed);
- :func:`iter_arrivals` / :func:`simulate_arrivals`: time-tagged photons for an event
  detector (Timepix). Per pixel the field is a sum of M independent complex
  Ornstein-Uhlenbeck processes (contrast 1/M) with field correlation time ``tau``,
  ``g1(t) = exp(-t / tau)``, so ``g2(t) = 1 + beta exp(-2 t / tau)`` (the project's
  convention, :mod:`xpcsviewer.fitting.models`). The field is sampled exactly (AR(1))
  on a grid ``dt << tau`` that is a whole number of detector ticks; the intensity is
  held over each grid cell, its photons are ``Poisson(I dt)`` and each is placed
  uniformly at tick resolution inside the cell.

Held over a cell of ``dt`` the intensity's correlation is the exponential at whole
cells, linear in between: at the default ``dt = tau / 20`` the g2 differs from the
exponential by at most (2 dt / tau)^2 / 8 = 0.125 % of its value.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from xpcsviewer.progress import CancelToken, ProgressCallback, report
from xpcsviewer.synthetic.speckle import iter_frames

__all__ = ["arrival_grid", "iter_arrivals", "iter_speckle_hits", "simulate_arrivals",
           "speckle_hits"]

#: field samples (pixels x modes x steps) per chunk of the arrival simulator (~40 MB)
_SAMPLES = 1 << 21
#: the field's dtype (as the frame simulator's: the AR(1) recursion contracts)
_FIELD_DTYPE = np.float32


# ---------------------------------------------------------------------- frames -> hits
def iter_speckle_hits(
    q_roi: np.ndarray,
    n_frames: int,
    frame_time: float,
    D: float,
    *,
    detector_shape: tuple[int, int],
    origin: tuple[int, int] = (0, 0),
    beta: float = 0.25,
    rate: float | np.ndarray = 0.01,
    mask: np.ndarray | None = None,
    speckle_px: int = 2,
    seed: int = 0,
    chunk: int = 256,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Yield the hits of Brownian speckle frames, chunk by chunk, in frame order.

    Parameters
    ----------
    q_roi : (h, w) float
        q (1/Angstrom) of the region's pixels (the region of the detector simulated).
    n_frames, frame_time, D :
        As :func:`~xpcsviewer.synthetic.speckle.iter_frames` (D in Angstrom^2/s).
    detector_shape : (H, W)
        The whole detector: hits are flat indices ``row * W + col`` into it.
    origin : (row, col)
        Where the region's first pixel is on the detector.
    beta, rate, mask, speckle_px, seed, chunk, progress, cancel :
        As :func:`~xpcsviewer.synthetic.speckle.iter_frames`; ``rate`` in photons per
        pixel per frame (photon-sparse: 0.002-0.02), ``mask`` over the region.

    Yields
    ------
    frame, pixel : (n,) int64
        Frame (from 0) and detector pixel of each hit; frames non-decreasing.
    count : (n,) uint16
    """
    q = np.asarray(q_roi, dtype=np.float64)
    h, w = q.shape
    big_h, big_w = (int(s) for s in detector_shape)
    r0, c0 = (int(o) for o in origin)
    if r0 < 0 or c0 < 0 or r0 + h > big_h or c0 + w > big_w:
        raise ValueError(f"the {h} x {w} region at {origin} is not inside the "
                         f"{big_h} x {big_w} detector")
    done = 0
    for frames in iter_frames(q, n_frames, frame_time, D, beta=beta, rate=rate, mask=mask,
                              speckle_px=speckle_px, seed=seed, chunk=chunk, dtype=np.uint16,
                              progress=progress, cancel=cancel):
        f, r, c = np.nonzero(frames)
        count = frames[f, r, c]
        yield (f.astype(np.int64) + done, (r.astype(np.int64) + r0) * big_w + c + c0, count)
        done += frames.shape[0]


def speckle_hits(q_roi: np.ndarray, n_frames: int, frame_time: float, D: float,
                 **kwargs: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All hits of :func:`iter_speckle_hits` at once: (frame, pixel, count)."""
    parts = list(iter_speckle_hits(q_roi, n_frames, frame_time, D, **kwargs))
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint16)
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))  # type: ignore


# ---------------------------------------------------------------------- time tags
def arrival_grid(tau_s: float, tick_s: float, dt_s: float | None = None) -> int:
    """Detector ticks per grid cell of the field: ``dt_s`` (default ``tau / 20``) in whole
    ticks, at least one."""
    if not (tau_s > 0 and tick_s > 0):
        raise ValueError("tau_s and tick_s must be positive")
    dt = tau_s / 20.0 if dt_s is None else float(dt_s)
    if not dt > 0:
        raise ValueError(f"dt_s must be positive, got {dt_s}")
    return max(1, round(float(dt) / float(tick_s)))


def iter_arrivals(
    shape: tuple[int, int],
    rate_hz: float | np.ndarray,
    tau_s: float,
    contrast: float,
    duration_s: float,
    tick_s: float,
    seed: int = 0,
    *,
    dt_s: float | None = None,
    max_samples: int = _SAMPLES,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Yield photon arrivals (x, y, toa ticks) chunk by chunk, sorted by time.

    Parameters
    ----------
    shape : (H, W)
        The pixels simulated (x the column, y the row).
    rate_hz : float or (H, W)
        Mean photons per second of each pixel.
    tau_s : float
        Field correlation time: g1(t) = exp(-t / tau).
    contrast : float
        Speckle contrast; M = round(1 / contrast) independent modes per pixel, so the
        realised contrast is 1 / M.
    duration_s : float
        Length of the acquisition (photons at ticks ``[0, duration / tick)``).
    tick_s : float
        Detector tick (e.g. 1.5625 ns for Timepix3).
    seed : int
    dt_s : float, optional
        Field grid (default ``tau / 20``), rounded to whole ticks (:func:`arrival_grid`).
    max_samples : int
        Complex field samples (pixels x modes x grid steps) per chunk; memory about
        20 bytes each.

    Yields
    ------
    x, y : (n,) int64
    toa : (n,) int64
        Ticks from the start; non-decreasing over the whole stream.

    Notes
    -----
    The field, the counts and the placements draw from three streams of ``seed``, each
    consumed in time order: the arrivals do not depend on ``max_samples``.
    """
    h, w = (int(s) for s in shape)
    if h < 1 or w < 1:
        raise ValueError(f"shape must be positive, got {shape}")
    if not (0 < contrast <= 1):
        raise ValueError(f"contrast must be in (0, 1], got {contrast}")
    if not duration_s > 0:
        raise ValueError(f"duration_s must be positive, got {duration_s}")
    m = max(1, round(1.0 / contrast))
    p = h * w
    sub = arrival_grid(tau_s, tick_s, dt_s)
    dt = sub * tick_s
    n_ticks = round(float(duration_s) / float(tick_s))
    n_steps = -(-n_ticks // sub)
    lam = np.broadcast_to(np.asarray(rate_hz, dtype=np.float64), (h, w)).ravel()
    if (lam < 0).any() or not np.isfinite(lam).all():
        raise ValueError("rate_hz must be finite and >= 0")
    mean_per_cell = lam * dt / m  # per mode: |E|^2 has mean 1
    rho = np.float32(np.exp(-dt / tau_s))
    sig = np.float32(np.sqrt(0.5 * (1.0 - float(rho) ** 2)))
    steps = max(1, min(n_steps, int(max_samples) // (m * p)))
    ss = np.random.SeedSequence(seed)
    field_rng, count_rng, place_rng = (np.random.default_rng(s) for s in ss.spawn(3))
    # the real and imaginary parts of the M modes: 2M real AR(1) processes of variance
    # 1/2 each (|E_m|^2 of mean 1), started stationary
    z = field_rng.standard_normal((2 * m, p), dtype=_FIELD_DTYPE) * _FIELD_DTYPE(np.sqrt(0.5))
    tmp = np.empty_like(z)
    done = 0
    while done < n_steps:
        report(progress, cancel, done, n_steps, "simulating photon arrivals")
        s = min(steps, n_steps - done)
        x = field_rng.standard_normal((s, 2 * m, p), dtype=_FIELD_DTYPE)
        x *= sig
        np.multiply(z, rho, out=tmp)
        x[0] += tmp
        for i in range(1, s):  # x_i = rho x_(i-1) + sig xi_i, vectorised over pixels
            np.multiply(x[i - 1], rho, out=tmp)
            x[i] += tmp
        z = x[-1].copy()
        inten = np.einsum("smp,smp->sp", x, x, dtype=np.float64)
        del x
        inten *= mean_per_cell[None, :]
        counts = count_rng.poisson(inten)
        cell, pix = np.nonzero(counts)
        reps = counts[cell, pix]
        cell = np.repeat(cell.astype(np.int64) + done, reps)
        pix = np.repeat(pix.astype(np.int64), reps)
        toa = cell * sub + place_rng.integers(0, sub, cell.size)
        keep = toa < n_ticks  # the last cell may reach past the end
        if not keep.all():
            toa, pix = toa[keep], pix[keep]
        order = np.argsort(toa, kind="stable")
        toa, pix = toa[order], pix[order]
        yield pix % w, pix // w, toa
        done += s
    report(progress, cancel, n_steps, n_steps, "simulating photon arrivals")


def simulate_arrivals(n_pixels_shape: tuple[int, int], rate_hz: float | np.ndarray,
                      tau_s: float, contrast: float, duration_s: float, tick_s: float,
                      seed: int = 0, **kwargs: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All arrivals of :func:`iter_arrivals` at once: (x, y, toa_ticks), sorted by time."""
    parts = list(iter_arrivals(n_pixels_shape, rate_hz, tau_s, contrast, duration_s, tick_s,
                               seed, **kwargs))
    return tuple(np.concatenate([q[i] for q in parts]) for i in range(3))  # type: ignore
