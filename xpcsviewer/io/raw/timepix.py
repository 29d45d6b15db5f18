"""Timepix3/4 event lists in HDF5: one photon per event, ``x``, ``y``, time of arrival.

A group (the file root or up to two levels down) holds 1-D datasets of equal length:

- ``x``: column, ``y``: row of the pixel;
- ``toa``: time of arrival, in ticks or seconds (see below);
- ``tot`` (optional): time over threshold, reported by ``info`` but not used: every
  event is one photon (count 1).

Units of ``toa``: an attribute ``tick_s`` (seconds per tick, for integer ticks) or
``units`` (``s``, ``ms``, ``us``, ``ns``, ``ps``) on the dataset or its group. Float values
with neither are seconds. Times in seconds are turned into whole ticks of
``resolution_s`` (an attribute, else 1 ns). Integer values with neither are an error.

Two views (``bin_time``):

- time-tag (``bin_time`` None): a frame is one tick, ``frame = tick - first tick`` and
  ``frame_time = tick_s``;
- frames (``bin_time`` in seconds): ``frame = floor((toa - toa_first) / bin_time)``, in
  whole ticks (exact) when ``bin_time`` is a whole number of ticks.

Frame ranges are found by binary search over ``toa`` (single elements, then a small
window, read with h5py). A list that is not sorted by ``toa`` (real lists are only
roughly sorted) is read whole once and sorted stably in memory (about twice the event
bytes). The detector shape is a ``detector_shape`` attribute (group or file), else the
caller's (from the q-map). Only numpy and h5py.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from xpcsviewer.io._h5 import check_declared, local_dataset, open_h5_file
from xpcsviewer.io.errors import XpcsFileError
from xpcsviewer.io.raw.sparse import SparseSource
from xpcsviewer.io.raw.util import attr, check_pixels, detector_shape, find_groups, read_slice

__all__ = ["TIMEPIX_NAMES", "UNITS", "TimepixEvents", "toa_tick_units"]

TIMEPIX_NAMES = ("x", "y", "toa")
#: seconds per unit of ``toa`` for the ``units`` attribute
UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6,
         "ns": 1e-9, "ps": 1e-12}
#: tick of float seconds without a ``resolution_s`` attribute
DEFAULT_RESOLUTION_S = 1e-9
#: events per read in the pass that checks the order (bounded memory)
_PASS = 1 << 22
#: below this many events the binary search reads the window whole
_WINDOW = 4096
#: the ticks a reader takes (seconds): from a femtosecond to an hour
TICK_RANGE_S = (1e-15, 3600.0)
#: times of arrival, in ticks, are below this (exact in int64, and as float64 below 2**53
#: frames); a run has at most this many frames
MAX_TICK = 1 << 62
MAX_FRAMES = 1 << 53



def toa_tick_units(toa: h5py.Dataset, grp: h5py.Group) -> tuple[Any, Any]:
    """(tick_s, units) of a list's arrival times as stated: on the ``toa`` dataset, else
    on its group (``tick_s``; ``units``/``unit``, else the group's ``toa_units``); None
    where not stated. The reader and the file browser's classifier read them alike."""
    tick = attr(toa, "tick_s")
    if tick is None:
        tick = attr(grp, "tick_s")
    units = attr(toa, "units", "unit")
    if units is None:
        units = attr(grp, "toa_units")
    return tick, units

class _Text:
    """A message part computed when shown (the file entry of an event of a list sorted
    in memory takes a pass over ``toa``: only for an error)."""

    def __init__(self, make: Any) -> None:
        self._make = make

    def __str__(self) -> str:
        return self._make()

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


class TimepixEvents(SparseSource):
    """A Timepix3/4 event list (see the module notes).

    Parameters
    ----------
    path : str or Path
        The HDF5 file.
    shape : (int, int), optional
        Detector (rows, cols) when the file has no ``detector_shape`` attribute.
    bin_time : float, optional
        Seconds per frame (frame view); None: time-tag view (a frame per tick).
    begin, end, stride, avg : int
        Frame selection (of ticks or of frames), as :class:`~xpcsviewer.io.raw.RawFrames`.
    group : str, optional
        The group to read (default: the first holding ``x``, ``y``, ``toa``).

    Attributes
    ----------
    time_tag : bool
        True in the time-tag view.
    tick_s : float
        Seconds per tick of the (whole-number) times.
    has_tot : bool
        The list has a ``tot`` dataset (not used as counts).
    sorted_in_memory : bool
        The list was not sorted by ``toa`` and is held sorted in memory.

    Raises
    ------
    XpcsFileError
        No event group, datasets of different lengths, integer ``toa`` without units,
        non-finite times, an unknown detector shape, a pixel outside the detector.
    """

    layout = "timepix"

    def __init__(self, path: str | Path, *, shape: tuple[int, int] | None = None,
                 bin_time: float | None = None, begin: int = 0, end: int | None = -1,
                 stride: int = 1, avg: int = 1, group: str | None = None) -> None:
        self.path = Path(path)
        self._h5 = None
        if bin_time is not None:
            bt = float(bin_time)
            if not (math.isfinite(bt) and bt > 0):
                raise ValueError(f"--bin-time must be a positive number of seconds "
                                 f"(got {bin_time})")
        self._h5 = open_h5_file(self.path)
        try:
            self._open(shape, bin_time, group)
        except XpcsFileError:
            self.close()
            raise
        self._select(begin, end, stride, avg)

    # ------------------------------------------------------------ opening
    def _open(self, shape: Any, bin_time: float | None, group: str | None) -> None:
        f = self._h5
        groups = find_groups(f, TIMEPIX_NAMES)
        if group is not None:
            g = group if group.startswith("/") else "/" + group
            if g not in groups:
                raise XpcsFileError(self.path, "no event list here", g,
                                    "a group with x, y, toa")
        elif not groups:
            raise XpcsFileError(self.path, "no Timepix event list", "x/y/toa",
                                "a group with 1-D x, y, toa")
        else:
            g = groups[0]
        base = "" if g == "/" else g
        self.dataset_path = g
        grp = f[g]
        self._names = {k: f"{base}/{k}" for k in ("x", "y", "toa", "tot")}
        ds = {}
        for k in TIMEPIX_NAMES:
            d = local_dataset(f, self._names[k], "1-D event data")
            want = "integers" if k != "toa" else "numbers"
            if d.ndim != 1 or d.dtype.kind not in ("iu" if k != "toa" else "iuf"):
                raise XpcsFileError(self.path, f"has shape {d.shape} and dtype {d.dtype}",
                                    self._names[k], f"1-D {want}")
            check_declared(d, expected="1-D event data", max_elements=1 << 62)
            ds[k] = d
        self._x, self._y, self._toa = ds["x"], ds["y"], ds["toa"]
        n = int(self._toa.shape[0])
        lens = {k: int(d.shape[0]) for k, d in ds.items()}
        self.has_tot = isinstance(grp.get("tot"), h5py.Dataset)
        if self.has_tot:
            lens["tot"] = int(grp["tot"].shape[0]) if grp["tot"].ndim == 1 else -1
        if any(v != n for v in lens.values()):
            listed = ", ".join(f"{k} has {v}" for k, v in lens.items())
            raise XpcsFileError(self.path, f"event datasets of different lengths ({listed})",
                                g, "x, y, toa (and tot) of one length")
        if n == 0:
            raise XpcsFileError(self.path, "no events", self._names["toa"],
                                "at least one event")
        self.raw_events = n
        self._units(f, grp)
        stored = attr(grp, "detector_shape")
        stored_where = g
        if stored is None:
            stored, stored_where = attr(f, "detector_shape"), "/"
        self.frame_shape = detector_shape(self.path, stored, stored_where, shape)
        self._ticks: np.ndarray | None = None
        self._pix: np.ndarray | None = None
        self.sorted_in_memory = not self._is_sorted()
        if self.sorted_in_memory:
            self._load_sorted()
        self._bounds: dict[int, int] = {}
        self._t0 = self._tick_at(0)
        # the view
        self.time_tag = bin_time is None
        self._m: int | None = None
        if self.time_tag:
            self.frame_time = self.tick_s
            self._scale = None
        else:
            bt = float(bin_time)
            self.frame_time = bt
            m = round(bt / self.tick_s)
            if 1 <= m < MAX_TICK and abs(m * self.tick_s - bt) <= 1e-9 * bt:
                self._m = int(m)
                self._scale = None
            else:
                self._scale = self.tick_s / bt
        self.raw_frames = int(self._frames(np.array([self._tick_at(n - 1)]))[0]) + 1
        if self.raw_frames > MAX_FRAMES:  # ticks in 0..2**62: exact, no wrap
            last = self._tick_at(n - 1)
            raise XpcsFileError(
                self.path, f"the times of arrival span {last - self._t0} ticks of "
                f"{self.tick_s:g} s ({(last - self._t0) * self.tick_s:.6g} s): "
                f"{self.raw_frames} frames", self._names["toa"],
                "at most 2**53 frames (a longer --bin-time)")
        self.count_dtype = np.dtype(np.uint8)
        self.files = (self.path,)
        view = ("time-tag (a frame per tick of "
                f"{self.tick_s:.3g} s)" if self.time_tag else f"frames of {self.frame_time:.3g} s")
        text = f"Timepix event list (group {g}), {view}"
        if self.has_tot:
            text += "; tot present, not used (each event counts 1)"
        if self.sorted_in_memory:
            text += "; not sorted by toa in the file: sorted in memory"
        others = [x for x in groups if x != g]
        if others:
            text += "; other groups not read: " + ", ".join(others)
        self.layout_text = text

    def _units(self, f: h5py.File, grp: h5py.Group) -> None:
        """Set ``tick_s`` and how ``toa`` values become whole ticks."""
        toa = self._toa
        where = self._names["toa"]
        tick, units = toa_tick_units(toa, grp)
        res = attr(toa, "resolution_s")
        if res is None:
            res = attr(grp, "resolution_s")
        if res is None:
            res = attr(f, "resolution_s")
        is_int = toa.dtype.kind in "iu"

        def positive(v: Any, name: str) -> float:
            try:
                x = float(v)
            except (TypeError, ValueError):
                x = math.nan
            lo, hi = TICK_RANGE_S
            if not (math.isfinite(x) and lo <= x <= hi):
                shown = repr(v.item() if isinstance(v, np.generic) else v)
                raise XpcsFileError(self.path, f"attribute {name} = {shown}", where,
                                    f"a tick of {lo:g} to {hi:g} seconds")
            return x

        if units is not None and tick is None:
            u = str(units).strip()
            if u not in UNITS:
                raise XpcsFileError(self.path, f"unknown units {u!r}", where,
                                    "units s, ms, us, ns or ps, or a tick_s attribute")
            factor = UNITS[u]
        else:
            factor = None
        if tick is not None:
            self.tick_s = positive(tick, "tick_s")
            self._mult = None if is_int else 1.0  # values are ticks
        elif is_int:
            if factor is None:
                raise XpcsFileError(
                    self.path, f"integer time of arrival ({toa.dtype}) without units",
                    where, "an attribute tick_s (seconds per tick) or units "
                    "(s, ms, us, ns, ps)")
            self.tick_s = factor
            self._mult = None
        else:  # float seconds (or units): whole ticks of resolution_s
            self.tick_s = (positive(res, "resolution_s") if res is not None
                           else DEFAULT_RESOLUTION_S)
            self._mult = (factor if factor is not None else 1.0) / self.tick_s

    def _to_ticks(self, v: np.ndarray, first: int = 0) -> np.ndarray:
        """``toa`` values (entries ``first, first + 1, ...``) -> int64 whole ticks
        (monotone, so order is kept), each checked in its stored type: finite, >= 0 and
        below :data:`MAX_TICK` (a uint64 of 2**64 - 1 is never read as -1)."""
        v = np.asarray(v)
        if self._mult is None:
            bad = (v < 0) | (v >= MAX_TICK) if v.dtype.kind == "i" else v >= MAX_TICK
            if bad.any():
                self._bad_time(v, int(np.argmax(bad)), first)
            return v.astype(np.int64, copy=False)
        x = np.asarray(v, dtype=np.float64) * self._mult
        bad = ~((x > -0.5) & (x < MAX_TICK))  # NaN is bad too
        if bad.any():
            self._bad_time(v, int(np.argmax(bad)), first)
        return np.rint(x).astype(np.int64)

    def _bad_time(self, v: np.ndarray, j: int, first: int) -> None:
        raw = v[j].item()
        sec = float(raw) * (self.tick_s if self._mult is None else self._mult * self.tick_s)
        shown = f"{raw!r}" + (f" ({sec:.6g} s)" if math.isfinite(sec) else "")
        if not (raw == raw and abs(raw) != math.inf):
            problem, want = "is not finite", "finite times"
        elif raw < 0:
            problem, want = "is negative", "times of arrival >= 0 (from the acquisition's start)"
        else:
            problem = "is too large"
            want = (f"times of arrival >= 0 and below 2**62 ticks of {self.tick_s:g} s "
                    f"({MAX_TICK * self.tick_s:.3g} s)")
        raise XpcsFileError(self.path, f"time of arrival {shown} of entry {first + j} "
                            f"{problem}", self._names["toa"], want)

    def _is_sorted(self) -> bool:
        """One bounded pass over ``toa``: non-decreasing?"""
        prev = None
        for a in range(0, self.raw_events, _PASS):
            t = self._to_ticks(read_slice(self._toa, a, a + _PASS), a)
            if (prev is not None and t[0] < prev) or (np.diff(t) < 0).any():
                return False
            prev = t[-1]
        return True

    def _load_sorted(self) -> None:
        h, w = self.frame_shape
        ticks = self._to_ticks(read_slice(self._toa, 0, self.raw_events))
        pix = self._pixels(0, self.raw_events)
        order = np.argsort(ticks, kind="stable")
        self._ticks = ticks[order]
        self._pix = pix[order].astype(np.int32 if h * w < 2**31 else np.int64)

    def _pixels(self, a: int, b: int) -> np.ndarray:
        """Checked flat pixels ``y * W + x`` of events ``[a, b)`` in file order."""
        h, w = self.frame_shape
        x = read_slice(self._x, a, b)
        check_pixels(self.path, x, w, a, self._names["x"], "column x", f"{h} x {w} detector")
        y = read_slice(self._y, a, b)
        check_pixels(self.path, y, h, a, self._names["y"], "row y", f"{h} x {w} detector")
        return y.astype(np.int64) * w + x.astype(np.int64)

    # ------------------------------------------------------------ search
    def _tick_at(self, i: int) -> int:
        if self._ticks is not None:
            return int(self._ticks[i])
        return int(self._to_ticks(read_slice(self._toa, i, i + 1), i)[0])

    def _frames(self, ticks: np.ndarray) -> np.ndarray:
        d = ticks - self._t0
        if self.time_tag:
            return d
        if self._m is not None:
            return d // self._m
        return np.floor(d.astype(np.float64) * self._scale).astype(np.int64)

    def _lower_bound(self, frame: int) -> int:
        """First event whose frame is >= ``frame``."""
        n = self.raw_events
        if frame <= 0:
            return 0
        if frame >= self.raw_frames:
            return n
        hit = self._bounds.get(frame)
        if hit is not None:
            return hit
        if self._ticks is not None and (self.time_tag or self._m is not None):
            step = 1 if self.time_tag else self._m
            lo = int(np.searchsorted(self._ticks, self._t0 + frame * step, side="left"))
        else:
            lo, hi = 0, n
            while hi - lo > _WINDOW:
                mid = (lo + hi) // 2
                if int(self._frames(np.array([self._tick_at(mid)]))[0]) < frame:
                    lo = mid + 1
                else:
                    hi = mid
            lo = self._search_window(frame, lo, hi)
        if len(self._bounds) > 4096:
            self._bounds.clear()
        self._bounds[frame] = lo
        return lo

    def _search_window(self, frame: int, lo: int, hi: int) -> int:
        if hi <= lo:
            return lo
        t = (self._ticks[lo:hi] if self._ticks is not None
             else self._to_ticks(read_slice(self._toa, lo, hi), lo))
        return lo + int(np.searchsorted(self._frames(t), frame, side="left"))

    # ------------------------------------------------------------ SparseSource
    def _raw_count(self, a: int, b: int) -> int:
        if b <= a:
            return 0
        return self._lower_bound(b) - self._lower_bound(a)

    def _raw_range(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if b <= a:
            i0 = i1 = 0
        else:
            i0, i1 = self._lower_bound(a), self._lower_bound(b)
        if i1 <= i0:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.uint8)
        if self._ticks is not None:
            ticks = self._ticks[i0:i1]
            pixel = self._pix[i0:i1].astype(np.int64)
        else:
            ticks = self._to_ticks(read_slice(self._toa, i0, i1), i0)
            pixel = self._pixels(i0, i1)
        return self._frames(ticks), pixel, np.ones(i1 - i0, dtype=np.uint8)

    def _edge_hits(self, b: int, e: int, k: int) -> tuple[int, list, list]:
        i0, i1 = self._lower_bound(b), self._lower_bound(e)
        if i1 <= i0:
            return 0, [], []
        idx = sorted({*range(i0, min(i1, i0 + k + 1)), *range(max(i0, i1 - k - 1), i1)})
        ticks = {i: self._tick_at(i) for i in idx}
        frames = self._frames(np.array([ticks[i] for i in idx], dtype=np.int64))
        frame = {i: int(f) for i, f in zip(idx, frames, strict=True)}
        where = self._names["toa"]
        found: dict[int, int] = {}

        def text(i: int) -> str:
            t = ticks[i]
            if self._ticks is not None and not found:  # sorted in memory: file entries
                found.update(self._entries({ticks[j] for j in idx}))
            at = f"entry {i}" if self._ticks is None else f"entry {found[t]}"
            return f"{at} (time of arrival {t * self.tick_s:.6g} s, frame {frame[i]})"

        def hit(i: int) -> tuple[int, str, Any]:
            return frame[i], where, _Text(lambda: text(i))

        return (i1 - i0, [hit(i) for i in range(i0, min(i1, i0 + k + 1))],
                [hit(i) for i in range(max(i0, i1 - k - 1), i1)])

    def _entries(self, ticks: set[int]) -> dict[int, int]:
        """The first entry in the file of each of ``ticks`` (a list sorted in memory:
        one bounded pass)."""
        want = np.array(sorted(ticks), dtype=np.int64)
        out: dict[int, int] = {}
        for a in range(0, self.raw_events, _PASS):
            t = self._to_ticks(read_slice(self._toa, a, a + _PASS), a)
            hit = np.flatnonzero(np.isin(t, want))
            for j in hit:
                out.setdefault(int(t[j]), a + int(j))
            if len(out) == want.size:
                break
        return out

    @property
    def out_dtype(self) -> np.dtype:
        """Dense frames count events per pixel: uint32 (several photons of one pixel in a
        frame must not wrap a uint8), float64 when frames are averaged."""
        return np.dtype(np.uint32) if self.avg == 1 else np.dtype(np.float64)

    def summary(self, count_photons: bool = True) -> dict[str, Any]:
        out = super().summary(count_photons)
        out["time_tag"] = self.time_tag
        out["tick_s"] = self.tick_s
        out["tot"] = self.has_tot
        return out

    def close(self) -> None:
        if getattr(self, "_h5", None) is not None:
            self._h5.close()
            self._h5 = None
