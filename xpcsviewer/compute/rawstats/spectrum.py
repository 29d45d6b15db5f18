"""Power spectra of timelines and the periodic-modulation finder.

A q-bin's photons per frame are white-ish noise (Poisson and fast speckle) over a red
background (slow dynamics, beam drift). A vibration or a chopper adds a line. The
periodogram of a noise-only series has, at each frequency, power ~ noise level x Exp(1);
the noise level is taken from the spectrum itself (medians of segments of frequencies,
interpolated), so a red background moves the level and not the test. A line is a
frequency whose power exceeds the level by more than chance allows over every frequency
and series searched.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from xpcsviewer.model.raw_inspect import Finding

__all__ = ["MOD_FALSE_ALARMS", "MOD_MIN_CYCLES", "MOD_PARTS", "MOD_SEGMENT", "MOD_TRIES",
           "find_modulations", "lasting", "line_threshold", "noise_level", "power_spectrum",
           "refine_peak"]

#: false lines allowed per run, over all frequencies and q-bins: the threshold on
#: power / level is ln(frequencies x series / MOD_FALSE_ALARMS) (Exp(1) tail)
MOD_FALSE_ALARMS = 1e-3
#: lowest frequency searched, in cycles per run: fewer cycles cannot be told from a drift
MOD_MIN_CYCLES = 4
#: frequencies per segment of the noise level (its median / ln 2): wide enough that one
#: line (and its leakage into a few neighbours) does not move the median, and that the
#: level's own error (relative sd 1.44 / sqrt(segment), corrected for in the threshold:
#: :func:`line_threshold`) stays small
MOD_SEGMENT = 256
#: a line must last: present in each of this many parts of the run (:func:`lasting`)
MOD_PARTS = 4
#: lines above the threshold tried per series, strongest first, for one that lasts
MOD_TRIES = 5


def power_spectrum(trace: np.ndarray, frame_time: float | None) -> tuple[np.ndarray, np.ndarray]:
    """(frequencies, power) of a timeline: the one-sided periodogram |FFT|^2 / N of the
    mean-subtracted trace, at frequencies 0 .. Nyquist in Hz (cycles per frame when
    ``frame_time`` is None). Power 0 at frequency 0."""
    x = np.asarray(trace, dtype=np.float64)
    n = x.size
    if n < 2:
        return np.zeros(min(n, 1)), np.zeros(min(n, 1))
    spec = np.fft.rfft(x - x.mean())
    power = (spec.real**2 + spec.imag**2) / n
    dt = 1.0 if frame_time is None or frame_time <= 0 else float(frame_time)
    return np.fft.rfftfreq(n, d=dt), power


def noise_level(power: np.ndarray, segment: int = MOD_SEGMENT) -> np.ndarray:
    """The noise level (mean power of a noise-only periodogram) at each frequency: the
    median of each segment of ``segment`` frequencies / ln 2 (the median of Exp(1)),
    interpolated linearly between segment centres. The first value (frequency 0) is
    left out of the segments."""
    p = np.asarray(power, dtype=np.float64)
    m = p.size - 1
    if m < 1:
        return np.ones_like(p)
    seg = max(8, min(int(segment), m))
    k = max(1, m // seg)
    edges = np.linspace(1, p.size, k + 1).astype(np.int64)
    centres = (edges[:-1] + edges[1:] - 1) / 2.0
    # segments are of two lengths at most: the medians of each length in one call (a
    # loop over 2,000 segments of a 10^6-frame run cost ~0.1 s per series)
    lens = np.diff(edges)
    meds = np.empty(k)
    for n_seg in np.unique(lens):
        sel = np.flatnonzero(lens == n_seg)
        meds[sel] = np.median(p[edges[:-1][sel][:, None] + np.arange(n_seg)], axis=1)
    level = np.interp(np.arange(p.size), centres, meds / math.log(2.0))
    tiny = np.finfo(np.float64).tiny
    return np.maximum(level, tiny)


def refine_peak(spec: np.ndarray, j: int) -> float:
    """The fractional frequency bin of a line at bin ``j`` of the complex spectrum
    ``spec`` of N samples (Jacobsen's three-bin estimator with Candan's bias correction
    for the rectangular window), within ±0.5 of ``j``."""
    if j <= 0 or j >= spec.size - 1:
        return float(j)
    a, b, c = spec[j - 1], spec[j], spec[j + 1]
    den = 2.0 * b - a - c
    if den == 0:
        return float(j)
    delta = float(np.real((a - c) / den))
    n = 2 * (spec.size - 1)  # samples (exact for even N; the correction is tiny anyway)
    delta *= math.tan(math.pi / n) / (math.pi / n)
    return float(j + max(-0.5, min(0.5, delta)))


def line_threshold(n_tests: int, segment: int) -> float:
    """The power / level above which a frequency is a line: t with P(ratio > t) =
    MOD_FALSE_ALARMS / n_tests, the level being a median of ``segment`` Exp(1) values
    (relative sd s = 1.44 / sqrt(segment): P(ratio > t) ~ exp(-t + t**2 s**2 / 2))."""
    t0 = math.log(max(n_tests, 1) / MOD_FALSE_ALARMS)
    s2 = (1.0 / math.log(2.0)) ** 2 / max(segment, 1)
    disc = 1.0 - 2.0 * s2 * t0
    return t0 * 4.0 if disc <= 0 else min((1.0 - math.sqrt(disc)) / s2, t0 * 4.0)


def _line(x: np.ndarray, lo: int, segment: int
          ) -> tuple[int, float, np.ndarray, np.ndarray, np.ndarray]:
    """(bin of the largest power/level at bins >= lo, that ratio, complex spectrum,
    ratios, noise levels)."""
    spec = np.fft.rfft(x - x.mean())
    power = spec.real**2 + spec.imag**2
    level = noise_level(power, segment)
    ratio = power / level
    ratio[:lo] = 0.0
    if x.size % 2 == 0:
        ratio[-1] = 0.0  # Nyquist: real-valued, its own statistics
    j = int(np.argmax(ratio))
    return j, float(ratio[j]), spec, ratio, level


def lasting(x: np.ndarray, fbin: float, level: float, ratio: float,
            parts: int = MOD_PARTS) -> bool:
    """Whether a line at ``fbin`` cycles per run (its power/level ``ratio``, ``level`` the
    noise level there) is a lasting modulation: its power in each of ``parts`` equal
    parts of the run is at least a quarter of what a steady sinusoid leaves in each
    (``ratio / parts``: power grows as the length squared, noise as the length). A step
    puts its low-frequency power in the parts it falls in only; a line just above the
    threshold passes each part's test with probability ~0.8 (its power there is ~r/4
    plus an Exp(1) noise)."""
    n = x.size
    edges = np.linspace(0, n, parts + 1).astype(np.int64)
    w = 2.0 * math.pi * fbin / n
    want = 0.25 * ratio / parts
    kept = 0
    for a, b in itertools.pairwise(edges.tolist()):
        seg = x[a:b] - x[a:b].mean()
        t = np.arange(a, b, dtype=np.float64)
        z = np.dot(seg, np.exp(-1j * w * t))
        r_part = (z.real**2 + z.imag**2) / (level * (b - a) / n)
        kept += r_part >= want
    return bool(kept >= parts)


def find_modulations(series: np.ndarray, frame_time: float | None, *,
                     bins: np.ndarray | None = None) -> list[Finding]:
    """Periodic modulations of the columns of ``series`` (N, S): photons per frame of
    each q-bin (``bins``: their 1-based numbers), or one column of the whole detector
    (``bins`` None). At most one line per column: its strongest frequency, refined.

    Each finding compares the column's power at that frequency with the other columns'
    sum (the control): a line in one bin only is the sample's or that region's, one in
    the control too is the beam's or the detector's.
    """
    x = np.asarray(series, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    n, s = x.shape
    lo = max(1, MOD_MIN_CYCLES)
    n_freq = n // 2 + 1 - lo
    if n_freq < 8 or s == 0:
        return []
    seg = max(16, min(MOD_SEGMENT, n_freq // 4))
    threshold = line_threshold(n_freq * s, seg)
    total = x.sum(axis=1)
    out = []
    for col in range(s):
        xc = x[:, col]
        if not np.any(xc != xc[0]):
            continue
        j, r, spec, ratio, level = _line(xc, lo, seg)
        if r <= threshold:
            continue
        # the strongest line that lasts: a step (a spot that comes and goes, a block of
        # empty frames) also puts power at low frequencies, but in one part of the run
        for j in np.argsort(ratio)[::-1][:MOD_TRIES]:
            if ratio[j] <= threshold:
                j = -1
                break
            fbin = refine_peak(spec, int(j))
            if lasting(xc, fbin, float(level[j]), float(ratio[j])):
                break
        else:
            j = -1
        if j < 0:
            continue
        j, r = int(j), float(ratio[j])
        cyc = fbin / n
        hz = None if frame_time is None or frame_time <= 0 else cyc / float(frame_time)
        where = f"{hz:.4g} Hz" if hz is not None else f"{cyc:.5g} cycles/frame"
        ctrl = ""
        if s > 1:
            cx = total - xc
            if np.any(cx != cx[0]):
                cspec = np.fft.rfft(cx - cx.mean())
                cp = cspec.real**2 + cspec.imag**2
                cr = float((cp / noise_level(cp, seg))[j])
                ctrl = f"; the other bins' sum {cr:.3g} x its noise level"
        b = None if bins is None else int(bins[col])
        name = f"bin {b}" if b is not None else "the detector"
        detail = (f"line at {where} in {name}: power {r:.3g} x noise level "
                  f"(threshold {threshold:.3g}){ctrl}")
        out.append(Finding("modulation", (0, n - 1), (), hz, detail, b, r / threshold))
    return out
