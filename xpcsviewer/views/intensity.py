"""View data of the Intensity-Time tab and its figure: traces, moving averages, FFT.

Pure NumPy float64. Units: time in s, intensity in photons/pixel/frame.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xpcsviewer.views.saxs import Curve

__all__ = [
    "intensity_fft",
    "intensity_traces",
    "moving_average",
    "sample_interval",
]


# -------------------------------------------------------------- intensity-time
def moving_average(y: np.ndarray, window: int) -> np.ndarray:
    """Boxcar mean over ``window`` samples, same length as ``y``.

    Each output point is the mean of the ``window`` samples centred on it; near the
    ends the window shrinks to the samples that exist (no zero padding).

    Parameters
    ----------
    y : (n,) float64
    window : int >= 1

    Returns
    -------
    (n,) float64
    """
    y = np.asarray(y, dtype=np.float64)
    w = int(window)
    if w < 1:
        raise ValueError(f"moving-average window must be >= 1, got {window}")
    if w == 1 or y.size == 0:
        return y.copy()
    c = np.concatenate([[0.0], np.cumsum(y)])
    n = y.size
    i = np.arange(n)
    lo = np.clip(i - (w - 1) // 2, 0, n)
    hi = np.clip(i + w // 2 + 1, 0, n)
    return (c[hi] - c[lo]) / (hi - lo)


def intensity_fft(y: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Magnitude spectrum of an intensity trace (mean removed).

    Parameters
    ----------
    y : (n,) float64
    dt : float
        Sampling interval (s).

    Returns
    -------
    freq : (n // 2 + 1,) float64
        Hz, ``k / (n dt)``.
    magnitude : (n // 2 + 1,) float64
        ``|FFT(y - mean(y))| / n``; the DC term is therefore 0.
    """
    y = np.asarray(y, dtype=np.float64)
    n = y.size
    if n == 0:
        return np.zeros(0), np.zeros(0)
    spec = np.abs(np.fft.rfft(y - y.mean())) / n
    freq = np.arange(spec.size, dtype=np.float64) / (n * float(dt))
    return freq, spec


def intensity_traces(results: list, *, window: int = 1, time_axis: bool = True,
                     sampling: int = 1) -> list[Curve]:
    """Intensity-vs-time traces of several files, optionally smoothed.

    Parameters
    ----------
    results : list of XpcsResult
        Files without ``intensity_vs_time`` are skipped.
    window : int
        Moving-average window (samples).
    time_axis : bool
        x in seconds (frame index x frame time x stride x avg) or frame index.
    sampling : int
        Keep every ``sampling``-th point (after smoothing).
    """
    out = []
    step = max(1, int(sampling))
    for i, res in enumerate(results):
        it = res.intensity_vs_time
        if it is None:
            continue
        it = np.asarray(it, dtype=np.float64)
        x = it[0] * sample_interval(res) if time_axis else it[0].copy()
        y = moving_average(it[1], window)
        out.append(Curve(x[::step], y[::step], res.label, "trace", i))
    return out


def sample_interval(res: Any) -> float:
    """Time per frame of the analysis (s): ``t0_eff`` of the multitau or two-time run,
    else the frame time."""
    mt = getattr(res, "multitau", None)
    if mt is not None and mt.t0_eff:
        return float(mt.t0_eff)
    tt = getattr(res, "twotime", None)
    if tt is not None and tt.t0:
        return float(tt.t0)
    return float(res.frame_time)
