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

from xpcsviewer.compute.detector.qmap import compute_qmap
from xpcsviewer.progress import CancelToken, ProgressCallback, report
from xpcsviewer.synthetic.analytic import decay_rate

__all__ = ["Geometry", "iter_frames", "simulate_frames"]

# The field's dtype: float32 normals cost half of float64 ones and dominate the
# simulation; the AR(1) recursion contracts, so rounding does not accumulate.
_FIELD_DTYPE = np.float32


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
    mask: np.ndarray | None = None,
    speckle_px: int = 1,
    seed: int = 0,
    chunk: int = 256,
    dtype: type = np.uint16,
    static_field: np.ndarray | None = None,
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
    mask : (H, W) bool, optional
        Only these pixels are simulated (the others count 0, like a beamstop or gaps).
    speckle_px : int
        Speckle size in pixels: one field per ``speckle_px`` x ``speckle_px`` cell
        (its Gamma is the mean over the cell's pixels), Poisson counts per pixel.
        Speckles of about two pixels are common at XPCS beamlines, and the field
        costs ``speckle_px**2`` times less to simulate.
    seed : int
        Same seed, same frames (independent of ``chunk``).
    chunk : int
        Frames per yielded block.
    dtype :
        Integer dtype of the counts.
    static_field : (H, W) float, optional
        Intensity of a static, coherent field at each pixel relative to the mean
        speckle intensity there (0: none), e.g. parasitic scattering from a
        beam-stop edge. It adds to every mode's field with a fixed random phase,
        so the pixel's intensity is ``rate (1 + r)`` on average and mixes
        heterodyne with the speckle: ``g2 - 1 = beta (|g1|^2 + 2 r g1) / (1 + r)^2``,
        whose decay is partly at Gamma instead of 2 Gamma.
    """
    q = np.asarray(q_map, dtype=np.float64)
    if q.ndim != 2:
        raise ValueError(f"q_map must be 2-D, got shape {q.shape}")
    if not (0 < beta <= 1):
        raise ValueError(f"beta must be in (0, 1], got {beta}")
    if n_frames < 1 or chunk < 1 or not frame_time > 0:
        raise ValueError("n_frames, chunk and frame_time must be positive")
    m = max(1, round(1.0 / beta))
    h, w = q.shape
    active = np.ones(q.shape, bool) if mask is None else np.asarray(mask, bool)
    if active.shape != q.shape:
        raise ValueError(f"mask shape {active.shape} != q_map shape {q.shape}")
    if int(speckle_px) < 1:
        raise ValueError(f"speckle_px must be >= 1, got {speckle_px}")
    sp = int(speckle_px)
    idx = np.flatnonzero(active.ravel())
    gamma_px = decay_rate(q, D, phi_map, flow_rate, flow_angle_deg).ravel()[idx]
    lam0 = np.broadcast_to(np.asarray(rate, dtype=np.float64), q.shape).ravel()[idx]
    rows, cols = np.divmod(idx, w)
    cell = (rows // sp) * (-(-w // sp)) + cols // sp
    _, of_cell = np.unique(cell, return_inverse=True)
    n_cell = int(of_cell.max()) + 1 if idx.size else 0
    gamma0 = (np.bincount(of_cell, gamma_px, n_cell)
              / np.maximum(np.bincount(of_cell, minlength=n_cell), 1))
    seq = np.random.SeedSequence(seed)
    field_rng, count_rng = (np.random.default_rng(s) for s in seq.spawn(2))
    # Each mode's real and imaginary parts are independent real AR(1) processes of
    # variance 1/2, so |E_m|^2 has mean 1.
    x = field_rng.standard_normal((2 * m, n_cell), dtype=_FIELD_DTYPE)
    x *= _FIELD_DTYPE(np.sqrt(0.5))
    het, het_cell, het_amp = _static_amplitudes(static_field, q.shape, idx, of_cell, m, seq)

    def step(t_mid: float) -> tuple[np.ndarray, np.ndarray]:
        fac = 1.0 if ageing is None else float(ageing(t_mid))
        rho = np.exp(-gamma0 * frame_time * fac)
        return rho.astype(_FIELD_DTYPE), np.sqrt(0.5 * (1.0 - rho**2)).astype(_FIELD_DTYPE)

    rho, sig = step(0.0)
    inten_het = np.empty((min(chunk, n_frames), het.size))
    done = 0
    while done < n_frames:
        report(progress, cancel, done, n_frames, "simulating frames")
        c = min(chunk, n_frames - done)
        noise = field_rng.standard_normal((c, 2 * m, n_cell), dtype=_FIELD_DTYPE)
        inten = np.empty((c, n_cell))
        for i in range(c):
            k = done + i
            if k > 0:
                if ageing is not None:
                    rho, sig = step((k - 0.5) * frame_time)
                x *= rho
                noise[i] *= sig
                x += noise[i]
            inten[i] = np.einsum("ij,ij->j", x, x, dtype=np.float64)
            if het.size:
                y = x[:, het_cell] + het_amp
                inten_het[i] = np.einsum("ij,ij->j", y, y, dtype=np.float64)
        t = (done + np.arange(c)) * frame_time
        fac = np.ones(c) if drift is None else np.asarray(drift(t), dtype=np.float64)
        inten_px = inten[:, of_cell] if sp > 1 else inten
        if het.size:
            inten_px[:, het] = inten_het[:c]
        inten_px *= lam0[None] * (fac / m)[:, None]
        frames = np.zeros((c, h * w), dtype=dtype)
        frames[:, idx] = count_rng.poisson(inten_px)
        yield frames.reshape(c, h, w)
        done += c
    report(progress, cancel, n_frames, n_frames, "simulating frames")


def _static_amplitudes(static_field, shape, idx, of_cell, m, seq):
    """Simulated pixels with a static field: their positions among the simulated
    pixels, their speckle cells, and the field's (2M, k) real/imaginary parts."""
    if static_field is None:
        return np.zeros(0, np.intp), np.zeros(0, np.intp), np.zeros((2 * m, 0), _FIELD_DTYPE)
    r = np.broadcast_to(np.asarray(static_field, dtype=np.float64), shape).ravel()[idx]
    if (r < 0).any() or not np.isfinite(r).all():
        raise ValueError("static_field must be finite and >= 0")
    het = np.flatnonzero(r > 0)
    # its own stream (child 2 of the seed), so frames without it stay unchanged
    phase = np.random.default_rng(seq.spawn(1)[0]).uniform(0.0, 2 * np.pi, (m, het.size))
    amp = np.sqrt(r[het])[None, :]
    parts = np.concatenate([amp * np.cos(phase), amp * np.sin(phase)])  # |A_m|^2 = r per mode
    return het, of_cell[het], parts.astype(_FIELD_DTYPE)


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
