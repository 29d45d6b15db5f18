"""Photon-counting speckle frames with known dynamics.

Model, per detector pixel: M independent speckle modes, each a complex Gaussian
field E_m(t) (unit mean intensity) that evolves as an AR(1) process

    E_m(t + dt) = rho E_m(t) + sqrt(1 - rho^2) xi,   rho = exp(-Gamma dt),

with xi complex standard normal. The field correlation is then exp(-Gamma tau)
and the intensity I = rate * sum_m |E_m|^2 / M has
g2(tau) = 1 + (1/M) exp(-2 Gamma tau) (Siegert relation, contrast beta = 1/M).
Counts are Poisson(I(t) * drift(t)). Gamma = D q^2 (Brownian motion; D from
Stokes-Einstein, see :mod:`~xpcsviewer.synthetic.analytic`), optionally plus an
anisotropic flow term, times an ageing factor that changes with time; beam damage
is a slow intensity drift.

Frames are produced in chunks by a generator, so memory is the field state
(M x H x W complex) plus one chunk, whatever the number of frames. The random
streams are consumed frame by frame, so the frames do not depend on the chunk size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from xpcsviewer.compute.qmap import compute_qmap
from xpcsviewer.progress import CancelToken, ProgressCallback, report
from xpcsviewer.synthetic.analytic import decay_rate

__all__ = ["Geometry", "iter_frames", "simulate_frames"]


@dataclass(frozen=True)
class Geometry:
    """Detector geometry: shape (H, W), energy (keV), distance and pixel (m), beam centre (px)."""

    shape: tuple[int, int] = (256, 256)
    energy_kev: float = 10.0
    det_dist_m: float = 10.0
    pixel_size_m: float = 75e-6
    bcx: float = 128.0
    bcy: float = 128.0

    def qmap(self) -> tuple[np.ndarray, np.ndarray]:
        """(q, phi) per pixel: 1/Angstrom and degrees."""
        return compute_qmap(
            self.shape,
            self.energy_kev,
            self.det_dist_m,
            self.pixel_size_m,
            self.bcx,
            self.bcy,
        )


def iter_frames(
    q_map: np.ndarray,
    n_frames: int,
    frame_time: float,
    D: float,
    *,
    beta: float = 0.25,
    rate: float | np.ndarray = 1.0,
    phi_map: np.ndarray | None = None,
    flow_rate: float = 0.0,
    flow_angle_deg: float = 0.0,
    ageing: Callable[[float], float] | None = None,
    drift: Callable[[np.ndarray], np.ndarray] | None = None,
    seed: int = 0,
    chunk: int = 256,
    dtype: type = np.uint16,
    progress: ProgressCallback | None = None,
    cancel: CancelToken | None = None,
) -> Iterator[np.ndarray]:
    """Yield photon-count frames in chunks of shape (<= chunk, H, W).

    Parameters
    ----------
    q_map : (H, W) float
        q of each pixel (1/Angstrom).
    n_frames : int
    frame_time : float
        Seconds between frames (the AR(1) step).
    D : float
        Diffusion coefficient (Angstrom^2/s); Gamma = D q^2.
    beta : float
        Speckle contrast; the number of modes is M = round(1 / beta), so the
        realised contrast is exactly 1 / M.
    rate : float or (H, W)
        Mean photons per pixel per frame (before ``drift``).
    phi_map, flow_rate, flow_angle_deg :
        Optional anisotropic flow term, see :func:`~xpcsviewer.synthetic.analytic.decay_rate`.
    ageing : callable t -> factor, optional
        Gamma(t) = Gamma0 * ageing(t) (t in s from the first frame): e.g. an ageing
        gel slowing down, ``lambda t: 1 / (1 + t / t_a)``.
    drift : callable t -> factor, optional
        Multiplies the mean intensity of frames at times t (beam damage, flux drift).
    seed : int
        Same seed, same frames (independent of ``chunk``).
    chunk : int
        Frames per yielded block.
    dtype :
        Integer dtype of the counts.
    """
    q = np.asarray(q_map, dtype=np.float64)
    if q.ndim != 2:
        raise ValueError(f"q_map must be 2-D, got shape {q.shape}")
    if not (0 < beta <= 1):
        raise ValueError(f"beta must be in (0, 1], got {beta}")
    if n_frames < 1 or chunk < 1 or not frame_time > 0:
        raise ValueError("n_frames, chunk and frame_time must be positive")
    m = max(1, int(round(1.0 / beta)))
    gamma0 = decay_rate(q, D, phi_map, flow_rate, flow_angle_deg)
    lam0 = np.broadcast_to(np.asarray(rate, dtype=np.float64), q.shape)
    seq = np.random.SeedSequence(seed)
    field_rng, count_rng = (np.random.default_rng(s) for s in seq.spawn(2))
    h, w = q.shape
    # Stationary start: each mode is CN(0, 1).
    e = (
        field_rng.standard_normal((m, h, w)) + 1j * field_rng.standard_normal((m, h, w))
    ) * np.sqrt(0.5)
    rho_const = np.exp(-gamma0 * frame_time) if ageing is None else None
    done = 0
    while done < n_frames:
        report(progress, cancel, done, n_frames, "simulating frames")
        c = min(chunk, n_frames - done)
        noise = field_rng.standard_normal((c, 2, m, h, w))
        inten = np.empty((c, h, w))
        for i in range(c):
            k = done + i
            if k > 0:
                if rho_const is None:
                    rho = np.exp(
                        -gamma0 * frame_time * float(ageing((k - 0.5) * frame_time))
                    )
                else:
                    rho = rho_const
                xi = (noise[i, 0] + 1j * noise[i, 1]) * np.sqrt(0.5)
                e = rho * e + np.sqrt(1.0 - rho**2) * xi
            inten[i] = (e.real**2 + e.imag**2).sum(axis=0) / m
        t = (done + np.arange(c)) * frame_time
        fac = np.ones(c) if drift is None else np.asarray(drift(t), dtype=np.float64)
        inten *= lam0[None] * fac[:, None, None]
        yield count_rng.poisson(inten).astype(dtype)
        done += c
    report(progress, cancel, n_frames, n_frames, "simulating frames")


def simulate_frames(
    shape_or_qmap: tuple[int, int] | np.ndarray,
    n_frames: int,
    frame_time: float,
    q_map: np.ndarray | None = None,
    D: float = 1e4,
    **kwargs,
) -> np.ndarray:
    """All frames at once, (n_frames, H, W): ``np.concatenate(list(iter_frames(...)))``.

    ``simulate_frames(shape, n_frames, frame_time, q_map, D, beta=..., rate=..., seed=...)``
    or ``simulate_frames(q_map, n_frames, frame_time, D=...)``. For long runs use
    :func:`iter_frames` to keep memory bounded.
    """
    if q_map is None:
        q_map = np.asarray(shape_or_qmap)
    elif tuple(np.asarray(q_map).shape) != tuple(shape_or_qmap):
        raise ValueError(
            f"q_map shape {np.asarray(q_map).shape} != shape {shape_or_qmap}"
        )
    return np.concatenate(
        list(iter_frames(q_map, n_frames, frame_time, D, **kwargs)), axis=0
    )
