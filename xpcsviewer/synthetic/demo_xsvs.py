"""The demo's XSVS acquisitions: speckle of known contrast and dynamics, per q-bin.

X-ray speckle visibility spectroscopy reads the number of modes M (contrast
``beta0 = 1/M``) and the correlation time from the counts of pixels in an exposure T:
they are negative binomial with visibility ``beta(T) = beta0 * V(T / tau)``, where
``V = (2/T^2) int_0^T (T - t) |g1(t)|^2 dt``, for ``g1 = exp(-t/tau)``
``V = 2 (e^-x - 1 + x) / x^2`` with ``x = 2 T / tau`` (:func:`visibility`).

Each spec of :data:`XSVS_SPECS` lights a few q-bins (rings of the q-map) of one detector,
each bin with its own ``tau``, M and photon rate, and is written into ``OUT/raw`` like the
photon-sparse acquisitions of :mod:`~xpcsviewer.synthetic.demo_sparse` (raw file, q-map,
a result correlated on photons, ``raw/truth.json``), with the truth per q-bin
(:func:`xsvs_truth`) in its truth.json entry under ``xsvs``:

- ``X01``: a Rigaku XSPA ``.bin`` in its 2-bit mode (counts clipped at 3), 10 us frames,
  mean counts 0.1 to 1 per pixel and frame, tau 30 us to 1 ms;
- ``X02``: a Timepix event list (time tags) with tau 10 us, 100 us, 1 ms and 10 ms,
  slow bins with many pixels and few photons, fast bins with few pixels at high rate.

The field of each pixel is M independent complex Ornstein-Uhlenbeck modes
(:func:`~xpcsviewer.synthetic.sparse_speckle.iter_arrivals`) on a grid ``dt <= tau/20``
of its bin, its photons Poisson per cell and placed at random ticks in it; each pixel's
grid starts at a random tick of its first cell, so exposures fall at random phases of
the cells. A frame's count is the photons that arrived in it: the intensity integrated
over the frame's exposure (then clipped at the counter's cap). The field held over a
cell raises beta(T) by about ``(2 dt / tau)^2 / 12`` (0.08 % at ``tau / 20``), stated per
bin as ``held_field_bias``.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np

from xpcsviewer.progress import CancelToken

__all__ = ["XSVS_SPECS", "scaled_spec", "visibility", "xsvs_detector", "xsvs_hits",
           "xsvs_sample_truth", "xsvs_truth"]

#: ticks of the photon placement per field cell of a frame layout (the grid phases)
_TICKS_PER_CELL = 16
_INTEGRATION = ("each frame's count is the photons that arrived during its exposure: "
                "the speckle intensity integrated over the frame (field on a grid of "
                "dt <= tau/20, at least 2 cells a frame, each pixel's grid at a random "
                "phase), then clipped at the counter's cap")
_EVENTS = ("photon arrival times (time tags): the counts in any window T are the "
           "intensity integrated over T (field on a grid of dt = tau/20 per bin, each "
           "pixel's grid at a random phase)")

XSVS_SPECS: list[dict[str, Any]] = [
    {
        "name": "X01_rigaku_2bit_xsvs",
        "description": "APS Rigaku XSPA .bin in 2-bit mode (counts clipped at 3), 10 us "
                       "frames: speckle with M = 2 (beta0 = 0.5) on four rings, tau 1 ms "
                       "to 30 us, 1 to 0.1 photons per pixel and frame (XSVS truth)",
        "layout": "rigaku",
        "geometry": {"shape": (512, 1024), "energy_kev": 10.0, "det_dist_m": 5.0,
                     "pixel_size_m": 76e-6, "bcx": 512.0, "bcy": 256.0},
        "partition": {"dq_num": 4, "sq_num": 16},
        "acquisition": {"frame_time": 1e-5, "n_frames": 2500, "counter_cap": 3},
        "sample": {"model": "exponential", "contrast": 0.5, "stretch": 1.0},
        # rings r_px[0]..r_px[1] (one per q-bin, low q first), of each ring the `pixels`
        # nearest to its point at anchor_deg
        "xsvs": {"r_px": [10, 90], "anchor_deg": 30.0, "bins": [
            {"tau_s": 1e-3, "pixels": 1000, "mean_count": 1.0},
            {"tau_s": 3e-4, "pixels": 800, "mean_count": 0.5},
            {"tau_s": 1e-4, "pixels": 800, "mean_count": 0.25},
            {"tau_s": 3e-5, "pixels": 1000, "mean_count": 0.1},
        ]},
        "analysis": ("Multitau",),
    },
    {
        "name": "X02_timepix_xsvs",
        "description": "Timepix3 quad event list (512 x 512, tick 1.5625 ns), 0.4 s: "
                       "speckle with M = 2 on four rings, tau 10 ms to 10 us; slow bins "
                       "many pixels, fast bins few at a high rate (XSVS truth)",
        "layout": "timepix",
        "geometry": {"shape": (512, 512), "energy_kev": 10.0, "det_dist_m": 5.0,
                     "pixel_size_m": 55e-6, "bcx": 256.0, "bcy": 256.0},
        "partition": {"dq_num": 4, "sq_num": 16},
        "acquisition": {"tick_s": 1.5625e-9, "duration_s": 0.4, "counter_cap": None},
        "sample": {"model": "exponential", "contrast": 0.5, "stretch": 1.0},
        "xsvs": {"r_px": [10, 250], "anchor_deg": 30.0, "bins": [
            {"tau_s": 1e-2, "pixels": 5000, "rate_hz": 500.0},
            {"tau_s": 1e-3, "pixels": 500, "rate_hz": 3e3},
            {"tau_s": 1e-4, "pixels": 64, "rate_hz": 3e4},
            {"tau_s": 1e-5, "pixels": 12, "rate_hz": 3e5},
        ]},
        "analysis": ("Multitau",),
    },
]


def visibility(T: Any, tau: float) -> Any:
    """``V(T) = (2/T^2) int_0^T (T - t) exp(-2 t / tau) dt = 2 (e^-x - 1 + x) / x^2``,
    ``x = 2 T / tau`` (series below x = 1e-4)."""
    x = 2.0 * np.asarray(T, dtype=np.float64) / float(tau)
    small = x < 1e-4
    xs = np.where(small, 1.0, x)
    v = 2.0 * (np.expm1(-xs) + xs) / xs**2
    return np.where(small, 1.0 - x / 3.0 + x * x / 12.0, v)


def scaled_spec(spec: dict[str, Any], scale: float) -> dict[str, Any]:
    """A copy of ``spec`` with ``scale`` times its frames (duration) and pixels per bin (a
    bin keeps up to 12), named ``..._small`` when smaller (a size knob for tests)."""
    s = copy.deepcopy(spec)
    if scale != 1:
        s["name"] = f"{s['name']}_small"
    for b in s["xsvs"]["bins"]:
        b["pixels"] = max(min(int(b["pixels"]), 12), round(b["pixels"] * scale))
    acq = s["acquisition"]
    if "n_frames" in acq:
        acq["n_frames"] = max(64, round(acq["n_frames"] * scale))
    else:
        acq["duration_s"] = float(acq["duration_s"]) * scale
    return s


# ---------------------------------------------------------------------- q-map
def xsvs_detector(spec: dict[str, Any]) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
    """(partition, q, phi, mask) of an XSVS spec.

    The partition's dynamic q-bins are the rings of ``xsvs.r_px`` (linear in q, one per
    entry of ``bins``, low q first); of each ring only the ``pixels`` nearest to its
    point at ``anchor_deg`` (a patch) stay, so the bins keep their q and hold the stated
    number of pixels (:func:`~xpcsviewer.compute.detector.partition.restrict_partition`).
    """
    from xpcsviewer.compute.detector.partition import (
        PartitionGrid,
        make_partition,
        restrict_partition,
    )
    from xpcsviewer.compute.detector.qmap import DetectorGeometry
    from xpcsviewer.synthetic.speckle import Geometry

    geo = Geometry(**spec["geometry"])
    q, phi = geo.qmap()
    h, w = geo.shape
    xs = spec["xsvs"]
    bins = xs["bins"]
    rows, cols = np.ogrid[:h, :w]
    r = np.hypot(rows - geo.bcy, cols - geo.bcx)
    r0, r1 = (float(v) for v in xs["r_px"])
    ring = (r >= r0) & (r < r1)
    part = spec.get("partition", {})
    grid = PartitionGrid(len(bins), int(part.get("sq_num", 4 * len(bins))))
    full = make_partition(q, phi, ring, grid, DetectorGeometry(
        beam_center_x=geo.bcx, beam_center_y=geo.bcy, detector_distance=geo.det_dist_m,
        pixel_size=geo.pixel_size_m, energy_kev=geo.energy_kev))
    if full.n_dynamic != len(bins):  # pragma: no cover - rings inside the detector
        raise ValueError(f"{spec['name']}: {full.n_dynamic} rings on the detector, "
                         f"{len(bins)} bins stated")
    dyn = np.asarray(full.dynamic_roi_map).ravel().astype(np.int64)
    a = math.radians(float(xs.get("anchor_deg", 0.0)))
    keep = np.zeros(h * w, bool)
    dy = np.broadcast_to(rows - geo.bcy, (h, w)).ravel()
    dx = np.broadcast_to(cols - geo.bcx, (h, w)).ravel()
    edges = np.linspace(r0, r1, len(bins) + 1)
    for k, b in enumerate(bins):
        idx = np.flatnonzero(dyn == k + 1)
        rm = 0.5 * (edges[k] + edges[k + 1])
        # distance to the ring's point at anchor_deg (counter-clockwise from +x, row up)
        d = np.hypot(dy[idx] + rm * math.sin(a), dx[idx] - rm * math.cos(a))
        n = int(b["pixels"])
        if n > idx.size:
            raise ValueError(f"{spec['name']}: bin {k + 1} has {idx.size} pixels, "
                             f"{n} asked")
        keep[idx[np.argsort(d, kind="stable")[:n]]] = True
    qm = restrict_partition(full, keep.reshape(h, w))
    return qm, q, phi, np.asarray(qm.mask) > 0


def _bin_pixels(qm: Any) -> list[np.ndarray]:
    """Flat detector indices of each dynamic q-bin's pixels (bin order), sorted."""
    dyn = np.asarray(qm.dynamic_roi_map).ravel()
    return [np.flatnonzero(dyn == k) for k in range(1, int(qm.n_dynamic) + 1)]


# ---------------------------------------------------------------------- simulation
def _grid(spec: dict[str, Any], tau: float) -> tuple[float, int, float]:
    """(field cell dt, cells per frame or 0, tick of the placement) for a bin."""
    acq = spec["acquisition"]
    if "frame_time" in acq:
        ft = float(acq["frame_time"])
        k = max(2, math.ceil(20.0 * ft / tau - 1e-9))
        return ft / k, k, ft / k / _TICKS_PER_CELL
    tick = float(acq["tick_s"])
    sub = max(1, round(tau / 20.0 / tick))
    return sub * tick, 0, tick


def _bin_arrivals(spec: dict[str, Any], k: int, n_px: int, seed: Any,
                  cancel: CancelToken | None) -> Any:
    """Yield (pixel index in the bin, tick) of bin k's photons, chunk by chunk, the tick
    counted from the start (each pixel's grid shifted by its random phase)."""
    from xpcsviewer.synthetic.sparse_speckle import iter_arrivals

    b = spec["xsvs"]["bins"][k]
    acq = spec["acquisition"]
    tau = float(b["tau_s"])
    dt, per_frame, tick = _grid(spec, tau)
    sub = round(dt / tick)
    if per_frame:
        duration = int(acq["n_frames"]) * float(acq["frame_time"])
        rate = float(b["mean_count"]) / float(acq["frame_time"])
    else:
        duration = float(acq["duration_s"])
        rate = float(b["rate_hz"])
    n_ticks = round(duration / tick)
    field_seed, phase_seed = seed.spawn(2)
    phase = np.random.default_rng(phase_seed).integers(0, sub, n_px)
    for x, _y, toa in iter_arrivals(
            (1, n_px), rate, tau, 1.0 / _modes(spec), duration + dt, tick,
            int(field_seed.generate_state(1)[0]), dt_s=dt, cancel=cancel):
        t = toa.astype(np.int64) - phase[x]
        ok = (t >= 0) & (t < n_ticks)
        yield x[ok], t[ok]


def _r(x: float) -> float:
    """x to 12 significant digits (truth.json without float noise)."""
    return float(f"{float(x):.12g}")


def _modes(spec: dict[str, Any]) -> int:
    return max(1, round(1.0 / float(spec["sample"]["contrast"])))


def xsvs_hits(spec: dict[str, Any], qm: Any, seed: int,
              cancel: CancelToken | None = None) -> tuple[np.ndarray, ...]:
    """The photons of an XSVS spec on the pixels of ``qm`` (:func:`xsvs_detector`).

    Frame layouts: hits ``(frame, pixel, count)`` in frame order, each count the
    photons of the frame's exposure clipped at ``acquisition.counter_cap``; event lists:
    ``(x, y, toa)`` sorted by toa (ticks).
    """
    acq = spec["acquisition"]
    w = int(spec["geometry"]["shape"][1])
    cap = acq.get("counter_cap")
    seeds = np.random.SeedSequence(seed).spawn(len(spec["xsvs"]["bins"]))
    framed = "frame_time" in acq
    parts = []
    for k, pix in enumerate(_bin_pixels(qm)):
        if framed:
            n = int(acq["n_frames"])
            _dt, per_frame, _tick = _grid(spec, float(spec["xsvs"]["bins"][k]["tau_s"]))
            ticks_per_frame = per_frame * _TICKS_PER_CELL
            counts = np.zeros(n * pix.size, np.int64)
            for x, t in _bin_arrivals(spec, k, pix.size, seeds[k], cancel):
                counts += np.bincount((t // ticks_per_frame) * pix.size + x,
                                      minlength=counts.size)
            if cap is not None:
                np.minimum(counts, int(cap), out=counts)
            nz = np.flatnonzero(counts)
            parts.append((nz // pix.size, pix[nz % pix.size], counts[nz].astype(np.uint16)))
        else:
            chunks = list(_bin_arrivals(spec, k, pix.size, seeds[k], cancel))
            x = np.concatenate([c[0] for c in chunks])
            parts.append((pix[x], np.concatenate([c[1] for c in chunks])))
    if framed:
        f, p, c = (np.concatenate([part[i] for part in parts]) for i in range(3))
        order = np.lexsort((p, f))
        return f[order], p[order], c[order]
    p, t = (np.concatenate([part[i] for part in parts]) for i in range(2))
    order = np.argsort(t, kind="stable")
    p, t = p[order], t[order]
    return p % w, p // w, t


# ---------------------------------------------------------------------- truth
def xsvs_sample_truth(spec: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    """The ``/entry/sample`` truth of an XSVS spec as ``{key: (value, unit)}``: tau, rate
    or mean count per q-bin (lists, bin order), contrast, modes, stretch, counter cap."""
    bins = spec["xsvs"]["bins"]
    acq = spec["acquisition"]
    out: dict[str, tuple[Any, str]] = {
        "model": ("exponential", ""),
        "tau": ([float(b["tau_s"]) for b in bins], "s"),
        "contrast": (1.0 / _modes(spec), ""),
        "speckle_modes": (_modes(spec), ""),
        "stretch": (float(spec["sample"].get("stretch", 1.0)), ""),
    }
    if "frame_time" in acq:
        out["mean_count"] = ([float(b["mean_count"]) for b in bins], "photons/frame/pixel")
    else:
        out["rate"] = ([float(b["rate_hz"]) for b in bins], "photons/s/pixel")
    if acq.get("counter_cap") is not None:
        out["counter_cap"] = (int(acq["counter_cap"]), "counts")
    out["description"] = (spec.get("description", ""), "")
    return out


def _nb_at_least(cap: int, mean: float, m: float) -> float:
    """P(k >= cap) of a negative binomial of this mean and m modes."""
    p = m / (m + mean)
    pk, total = p**m, 0.0
    for k in range(cap):
        total += pk
        pk *= (k + m) / (k + 1) * (1.0 - p)
    return max(0.0, 1.0 - total)


def xsvs_truth(spec: dict[str, Any], qmap: Any = None) -> dict[str, Any]:
    """The XSVS truth of a spec, as truth.json states it under ``xsvs``.

    Parameters
    ----------
    spec : dict
        One of :data:`XSVS_SPECS` (or :func:`scaled_spec` of one).
    qmap : QMap, optional
        Its partition (default: made again, :func:`xsvs_detector`).

    Returns
    -------
    dict
        ``M``, ``beta0``, ``stretch``, ``counter_cap`` (int or None), ``frame_time_s``
        (frames) or ``tick_s`` and ``duration_s`` (events), ``integration`` (how the counts
        integrate the intensity), ``visibility`` (the formula) and ``q_bins``: per
        dynamic q-bin (``q_bin`` 1-based as in the q-map) ``q``, ``pixels``, ``M``,
        ``beta0``, ``tau_s``, ``stretch``, ``mean_count_per_frame`` or ``rate_hz``,
        ``counter_cap``, ``grid_dt_s`` and ``held_field_bias`` (relative excess of
        beta(T) from the field held over a grid cell); frames also
        ``beta_1frame`` (beta0 V(frame)) and ``at_cap_fraction_1frame`` (P(k >= cap) of a
        negative binomial of the bin's mean and 1/beta_1frame modes).
    """
    qm = qmap if qmap is not None else xsvs_detector(spec)[0]
    acq = spec["acquisition"]
    m = _modes(spec)
    beta0 = 1.0 / m
    stretch = float(spec["sample"].get("stretch", 1.0))
    cap = acq.get("counter_cap")
    cap = None if cap is None else int(cap)
    framed = "frame_time" in acq
    qs = np.asarray(qm.dynamic_q, dtype=np.float64)
    npx = [int(p.size) for p in _bin_pixels(qm)]
    rows = []
    for k, b in enumerate(spec["xsvs"]["bins"]):
        tau = float(b["tau_s"])
        dt = _grid(spec, tau)[0]
        row: dict[str, Any] = {"q_bin": k + 1, "q": float(qs[k]), "pixels": npx[k], "M": m,
                               "beta0": beta0, "tau_s": tau, "stretch": stretch}
        if framed:
            ft = float(acq["frame_time"])
            b1 = beta0 * float(visibility(ft, tau))
            row.update(mean_count_per_frame=float(b["mean_count"]),
                       rate_hz=_r(float(b["mean_count"]) / ft), counter_cap=cap,
                       grid_dt_s=_r(dt), beta_1frame=b1)
            if cap is not None:
                row["at_cap_fraction_1frame"] = _nb_at_least(cap, float(b["mean_count"]),
                                                             1.0 / b1)
        else:
            row.update(rate_hz=float(b["rate_hz"]), counter_cap=cap, grid_dt_s=_r(dt))
        row["held_field_bias"] = (2.0 * dt / tau) ** 2 / 12.0
        rows.append(row)
    out: dict[str, Any] = {"M": m, "beta0": beta0, "stretch": stretch, "counter_cap": cap}
    if framed:
        out.update(frame_time_s=float(acq["frame_time"]), n_frames=int(acq["n_frames"]),
                   integration=_INTEGRATION)
    else:
        out.update(tick_s=float(acq["tick_s"]), duration_s=float(acq["duration_s"]),
                   integration=_EVENTS)
    out["visibility"] = ("beta(T) = beta0 (2/T^2) int_0^T (T - t) |g1(t)|^2 dt = beta0 2 "
                         "(exp(-x) - 1 + x) / x^2, x = 2 T / tau (g1 = exp(-t / tau))")
    out["q_bins"] = rows
    return out
