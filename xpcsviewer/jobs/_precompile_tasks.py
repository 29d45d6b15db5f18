"""The precompilation tasks of :mod:`xpcsviewer.jobs.precompile`: the jobs' own code
paths on tiny inputs, one per frame dtype and hit layout the readers produce."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["DENSE_DTYPES", "HIT_LAYOUTS", "HIT_VALUES", "KERNEL_MODULES", "LONG_SPAN_VALUES",
           "Task", "tasks"]

#: The modules holding numba kernels (every ``numba.njit`` of the package is in one).
KERNEL_MODULES = (
    "xpcsviewer.compute.multitau._numba",
    "xpcsviewer.compute.multitau._photons_numba",
    "xpcsviewer.compute.twotime._numba",
    "xpcsviewer.compute.ages._numba",
    "xpcsviewer.compute.rawstats._numba",
    "xpcsviewer.compute.xsvs._numba",
)

#: Frame dtypes of the dense correlators: the readers hand over the stored dtype
#: (Eiger, Lambda, Rigaku dense views: uint8/16/32; Pilatus int32; processed files
#: float32/64), float64 when frames are averaged.
DENSE_DTYPES = ("uint16", "uint32", "uint8", "int32", "float32", "float64")

#: (frame, pixel) dtypes of photon hits as the sparse readers hand them over: frame
#: numbers int32 (int64 beyond 2^31 raw frames, with a stride or average, Timepix, live
#: sources); pixel indices int32 (Rigaku), uint32 / int64 (Rigaku 3M, ESRF CSR, ImageD11),
#: int64 once a stride or average selected the frames.
HIT_LAYOUTS = (("int32", "int32"), ("int32", "uint32"), ("int32", "int64"),
               ("int64", "int64"))
#: Hit values: the stored count dtype (Timepix uint8, Rigaku uint16, CSR / ImageD11 any
#: of these), float64 means when frames are averaged.
HIT_VALUES = ("uint16", "uint8", "uint32", "int32", "float32", "float64")
#: Values of time-tag runs (Timepix: a frame per detector tick), whose blocks of hits may
#: span 2^31 ticks or more: the correlator's relative times are then int64.
LONG_SPAN_VALUES = ("uint8", "float64")


@dataclass(frozen=True)
class Task:
    """One unit of precompilation: ``run()`` drives a job's code path on tiny inputs.

    ``group``: the kernels it compiles belong to that group only (groups may run in
    separate processes at once without two of them writing one kernel's cache index).
    """

    name: str
    group: str
    run: Callable[[], None]


# ----------------------------------------------------------------------------- tasks
def _tiny_pixels(h: int = 2, w: int = 4) -> Any:
    from xpcsviewer.compute._binning import select_pixels

    dyn = np.ones((h, w), dtype=np.int64)
    sta = np.ones((h, w), dtype=np.int64)
    sta[:, w // 2:] = 2
    return select_pixels(dyn, sta)


def _dense(dtype: str) -> None:
    """The multi-tau update and the scattering sums, frames of ``dtype`` (what
    ``correlate_multitau``, the two-time pass and the live stream call)."""
    from xpcsviewer.backends import get_backend
    from xpcsviewer.compute._scattering import ScatteringAccumulator
    from xpcsviewer.compute.multitau._cpu import CpuLevels

    pixels = _tiny_pixels()
    x = np.zeros((3, pixels.n_pixels), dtype=dtype)
    CpuLevels(pixels.n_pixels, 2, 4).process(x)
    acc = ScatteringAccumulator(pixels, 3, backend=get_backend("numpy"), compiled=True)
    acc.add(x, x)


def _hits(frame: str, pixel: str, value: str, n: int = 3) -> tuple[np.ndarray, ...]:
    f = np.arange(n).astype(frame)
    p = (np.arange(n) % 8).astype(pixel)
    v = np.ones(n, dtype=value)
    return f, p, v


def _photons(frame: str, pixel: str, value: str) -> None:
    """The photon correlator's block update, hits of this layout."""
    from xpcsviewer.compute.multitau.photons import SparseMultitauCorrelator

    f, p, v = _hits(frame, pixel, value)
    SparseMultitauCorrelator(_tiny_pixels(), 8).process_events(3, f, p, v)


def _photons_long(value: str) -> None:
    """A block of hits spanning 2^31 frames or more (time-tag runs): int64 times."""
    from xpcsviewer.compute.multitau.photons import SparseMultitauCorrelator

    span = 2**31 + 2
    f = np.array([0, span - 1], dtype=np.int64)
    p = np.array([0, 1], dtype=np.int64)
    SparseMultitauCorrelator(_tiny_pixels(), span).process_events(span, f, p,
                                                                  np.ones(2, value))
    # a short block late in such a run: block-relative times int32, frame numbers int64
    c = SparseMultitauCorrelator(_tiny_pixels(), span + 4)
    c.process_events(span, f[:1], p[:1], np.ones(1, value))
    c.process_events(span + 4, f[1:] + 4, p[1:], np.ones(1, value))


def _twotime_ages(dtype: str) -> None:
    """The multi-tau two-time correlator (``correlate --twotime-ages``), frames of
    ``dtype``: gathering and normalising, the products and the coarse levels."""
    from xpcsviewer.compute.ages.correlator import correlate_twotime_ages
    from xpcsviewer.compute.inputs import Partition
    from xpcsviewer.compute.spec import CorrelateSpec

    dyn = np.ones((2, 4), dtype=np.int64)
    sta = np.ones((2, 4), dtype=np.int64)
    sta[:, 2:] = 2
    frames = np.ones((12, 2, 4), dtype=dtype)
    correlate_twotime_ages(frames, Partition(dyn, sta), CorrelateSpec(ages_points=2),
                           engine="compiled")


def _photon_results() -> None:
    """The photon correlator's bin sums and per-level state (result, pixel planes)."""
    from xpcsviewer.compute.multitau.photons import SparseMultitauCorrelator

    f, p, v = _hits("int32", "int32", "uint16", 5)
    # the state's value / sum dtypes: float32 / float32 (counts), float32 / float64
    # (a pixel total too big for float32 sums), float64 / float64 (float values)
    for vals in (v, v * 4000, v.astype(np.float64)):
        c = SparseMultitauCorrelator(_tiny_pixels(), 64)
        c.process_events(5, f, p, vals)
        c.result()
        # level 1 of an odd count of level-0 frames: the newest frame's values
        for lvl in (0, 1):
            c._cpu.level_state(lvl, (1, 2))


def _photon_sums(frame: str, pixel: str, value: str) -> None:
    """The scattering sums of hits (images, I(q), intensity), this layout."""
    from xpcsviewer.compute._scattering_sparse import SparseScattering

    f, p, v = _hits(frame, pixel, value)
    SparseScattering(_tiny_pixels(), 8).add_events(0, 3, f, p, v)
    SparseScattering(_tiny_pixels(), 8, segments=2).add_events(0, 3, f, p, v)


def _twotime_photons() -> None:
    """The sparse two-time kernels (their argument types do not depend on the hits')."""
    from xpcsviewer.compute.inputs import FrameStream, Partition
    from xpcsviewer.compute.twotime.photons import correlate_twotime_events
    from xpcsviewer.model.events import EventBlock

    pixels = _tiny_pixels()
    h, w = pixels.shape
    f = np.repeat(np.arange(4, dtype=np.int64), 2)
    p = np.tile(np.array([0, 1], dtype=np.int64), 4)
    block = EventBlock(0, 4, f, p, np.ones(f.size, np.uint16))
    dyn = np.ones((h, w), dtype=np.int64)
    with np.errstate(all="ignore"):
        correlate_twotime_events(FrameStream(lambda: [block], 4), Partition(dyn, dyn),
                                 engine="compiled")


def _raw_stats(frame: str, pixel: str, value: str) -> None:
    """The raw statistics' pass over hits (``xpcsviewer inspect``, the Raw tab), this
    layout."""
    from xpcsviewer.compute.rawstats.accumulate import RawStatsAccumulator

    f, p, v = _hits(frame, pixel, value)
    bins = np.ones((2, 4), dtype=np.int64)
    RawStatsAccumulator((2, 4), 3, bins=bins, engine="compiled").add_hits(f, p, v)


#: values the XSVS pass's kernel sees: int32 (the accumulator converts every count dtype)
XSVS_VALUES = ("int32",)


def _xsvs(frame: str, pixel: str, value: str) -> None:
    """The XSVS histograms' pass over hits (``xpcsviewer xsvs``, the Raw tab)."""
    from xpcsviewer.compute.xsvs.histogram import XsvsAccumulator

    f, p, v = _hits(frame, pixel, value)
    v[0] = 600  # a count beyond the histogram: its moments' kernel too
    acc = XsvsAccumulator((2, 4), 3, np.ones((2, 4), dtype=np.int64), windows=[1, 2],
                          counter_cap=3)
    acc.add_hits(f, p, v)
    acc.finish()


def tasks() -> list[Task]:
    """Every precompilation task, the common cases first (W1's uint16 frames, Rigaku
    hits), so that a run cut short has done what is used most."""
    out = [Task(f"dense {d}", "dense", lambda d=d: _dense(d)) for d in DENSE_DTYPES]
    out.append(Task("photon results", "photons", _photon_results))
    for v in HIT_VALUES:
        for fr, px in HIT_LAYOUTS:
            name = f"{fr}/{px}/{v}"
            out.append(Task(f"photons {name}", "photons",
                            lambda a=(fr, px, v): _photons(*a)))
            out.append(Task(f"photon sums {name}", "photon-sums",
                            lambda a=(fr, px, v): _photon_sums(*a)))
            out.append(Task(f"raw statistics {name}", "raw-stats",
                            lambda a=(fr, px, v): _raw_stats(*a)))
    for v in XSVS_VALUES:
        for fr, px in HIT_LAYOUTS:
            out.append(Task(f"xsvs {fr}/{px}/{v}", "xsvs",
                            lambda a=(fr, px, v): _xsvs(*a)))
    out += [Task(f"photons long span {v}", "photons", lambda v=v: _photons_long(v))
            for v in LONG_SPAN_VALUES]
    out.append(Task("two-time photons", "twotime", _twotime_photons))
    out += [Task(f"two-time ages {d}", "twotime-ages", lambda d=d: _twotime_ages(d))
            for d in DENSE_DTYPES]
    return out
