"""Detector faults planted in the hits of a photon movie, with their truth.

The raw-data fault finder (``xpcsviewer inspect``, the Raw tab) is checked on known
answers: a spec's ``faults`` entry says what to plant, :func:`inject_faults` plants it
into the hits ``(frame, pixel, count)`` of a simulated speckle movie (before they are
written in a layout) and returns the truth as findings in the JSON contract of
``xpcsviewer inspect``: ``{"kind", "frames": [first, last], "pixels": [[row, col], ...],
"frequency_hz", "detail", "q_bin"}``. The faults and their physics:

- ``hot_pixels`` ``[{"row", "col", "rate"}]``: a pixel with a steady Poisson rate of its
  own (photons/frame) added to the sample's, every frame (kind ``hot_pixel``);
- ``dead_pixels`` ``[[row, col], ...]``: pixels that never count (``dead_pixel``);
- ``cosmics`` ``[{"frame", "pixels": [[row, col], ...], "counts"}]``: a cosmic ray or
  gamma lighting a few neighbouring pixels with many counts in one frame (``cosmic``);
- ``empty_frames`` ``[[first, last], ...]``: frames the detector delivered empty, hits
  of every pixel dropped (``empty_frames``);
- ``modulation`` ``{"q_bin", "frequency_hz", "amplitude"}``: the intensity of one dynamic
  q-bin multiplied by ``(1 + a sin(2 pi f t)) / (1 + a)`` (a vibration of the sample or
  beam), by binomial thinning of the bin's counts, so the photon statistics stay
  Poisson-like (``modulation``, with the frequency);
- ``at_cap`` ``[{"pixels", "frames": [first, last], "rate"}]``: a bright spot (a Bragg
  or parasitic reflection) whose pixels receive Poisson(``rate``) photons per frame,
  far above the counter's ``cap``, so nearly every frame of theirs reads the cap
  (``at_cap``);
- ``cap`` (int): the counter's cap (3, 15, 255, 4095 for the Rigaku's 2-, 4-, 8-,
  12-bit modes): every count is clipped to it; it plants no finding of its own.

The faults are planted in this order: modulation (of the sample's photons), hot pixels,
cosmic rays, bright spots, then dead pixels and empty frames remove counts, and the cap
clips last. Places that would hide one fault under another (a cosmic ray in an empty
frame, a dead hot pixel) are refused; a bright spot may span an empty block (its
frames there are empty like the others). Only numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["FAULT_KINDS", "counts_to_events", "inject_faults", "match_findings", "merge_hits"]

#: the kinds this module plants (the fault finder's names)
FAULT_KINDS = ("hot_pixel", "dead_pixel", "cosmic", "empty_frames", "at_cap", "modulation")


def merge_hits(f: np.ndarray, p: np.ndarray, c: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hits sorted by (frame, pixel), counts of the same (frame, pixel) summed, zeros
    dropped."""
    f = np.asarray(f, np.int64)
    p = np.asarray(p, np.int64)
    c = np.asarray(c, np.int64)
    keep = c > 0
    f, p, c = f[keep], p[keep], c[keep]
    if not f.size:
        return f, p, c
    order = np.lexsort((p, f))
    f, p, c = f[order], p[order], c[order]
    start = np.flatnonzero(np.r_[True, (np.diff(f) != 0) | (np.diff(p) != 0)])
    return f[start], p[start], np.add.reduceat(c, start)


def _finding(kind: str, frames: tuple[int, int], pixels: list[list[int]] | tuple = (),
             detail: str = "", frequency_hz: float | None = None,
             q_bin: int | None = None) -> dict[str, Any]:
    return {"kind": kind, "frames": [int(frames[0]), int(frames[1])],
            "pixels": [[int(r), int(c)] for r, c in pixels],
            "frequency_hz": None if frequency_hz is None else float(frequency_hz),
            "detail": detail, "q_bin": None if q_bin is None else int(q_bin)}


def _flat(pixels: Any, w: int) -> np.ndarray:
    rc = np.asarray(pixels, dtype=np.int64).reshape(-1, 2)
    return rc[:, 0] * w + rc[:, 1]


def _check(faults: dict[str, Any], shape: tuple[int, int], n_frames: int) -> None:
    """Refuse faults that would hide each other or lie outside the run."""
    h, w = shape
    empty = np.zeros(n_frames, bool)
    for a, b in faults.get("empty_frames", ()):
        if not 0 <= a <= b < n_frames:
            raise ValueError(f"empty frames [{a}, {b}] outside the {n_frames} frames")
        empty[a:b + 1] = True
    dead = set(_flat(faults.get("dead_pixels", np.zeros((0, 2))), w).tolist())
    lit = [(_flat([[p["row"], p["col"]]], w), None) for p in faults.get("hot_pixels", ())]
    lit += [(_flat(c["pixels"], w), (c["frame"], c["frame"])) for c in faults.get("cosmics", ())]
    lit += [(_flat(s["pixels"], w), tuple(s["frames"])) for s in faults.get("at_cap", ())]
    for flat, frames in lit:
        if flat.min() < 0 or flat.max() >= h * w:
            raise ValueError(f"a fault's pixel is outside the {h} x {w} detector")
        if dead & set(flat.tolist()):
            raise ValueError("a dead pixel is also lit by another fault")
        if frames is not None:
            a, b = frames
            if not 0 <= a <= b < n_frames or empty[a:b + 1].all():
                raise ValueError(f"frames [{a}, {b}] of a fault are outside the run or "
                                 "all in an empty block")


def inject_faults(
    hits: tuple[np.ndarray, np.ndarray, np.ndarray],
    shape: tuple[int, int],
    n_frames: int,
    frame_time: float,
    faults: dict[str, Any],
    *,
    dynamic_map: np.ndarray | None = None,
    seed: int = 0,
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], list[dict[str, Any]]]:
    """Plant ``faults`` into the hits of a movie; return the new hits and the truth.

    Parameters
    ----------
    hits : (frame, pixel, count)
        The sample's hits, frames from 0, ``pixel = row * W + col``.
    shape : (H, W)
    n_frames : int
    frame_time : float
        Seconds per frame (the modulation's clock).
    faults : dict
        See the module notes.
    dynamic_map : (H, W) int, optional
        The q-map's dynamic bins (1-based, 0 outside), needed for ``modulation``.
    seed : int
        Same seed, same counts.

    Returns
    -------
    hits : (frame int64, pixel int64, count int64)
        Sorted by (frame, pixel), one hit per (frame, pixel).
    truth : list of dict
        One finding per planted fault (per pixel for hot and dead pixels), in the
        findings contract.
    """
    h, w = (int(s) for s in shape)
    _check(faults, (h, w), n_frames)
    rng = np.random.default_rng([int(seed), 45])
    f, p, c = (np.asarray(a, np.int64) for a in hits)
    truth: list[dict[str, Any]] = []
    last = n_frames - 1
    mod = faults.get("modulation")
    if mod:
        if dynamic_map is None:
            raise ValueError("a modulation needs the q-map's dynamic bins")
        k = int(mod["q_bin"])
        in_bin = np.asarray(dynamic_map).ravel()[p] == k
        if not in_bin.any():
            raise ValueError(f"q-bin {k} has no photons to modulate")
        a, freq = float(mod["amplitude"]), float(mod["frequency_hz"])
        keep = (1.0 + a * np.sin(2.0 * np.pi * freq * frame_time * f[in_bin])) / (1.0 + a)
        c = c.copy()
        c[in_bin] = rng.binomial(c[in_bin], keep)
        truth.append(_finding("modulation", (0, last), (), detail=(
            f"injected: q-bin {k} intensity x (1 + {a:g} sin(2 pi {freq:g} Hz t)) / "
            f"(1 + {a:g})"), frequency_hz=freq, q_bin=k))
    extra_f, extra_p, extra_c = [f], [p], [c]
    all_frames = np.arange(n_frames, dtype=np.int64)
    for px in faults.get("hot_pixels", ()):
        rate = float(px["rate"])
        extra_f.append(all_frames)
        extra_p.append(np.full(n_frames, px["row"] * w + px["col"], np.int64))
        extra_c.append(rng.poisson(rate, n_frames))
        truth.append(_finding("hot_pixel", (0, last), [[px["row"], px["col"]]],
                              detail=f"injected: Poisson {rate:g} photons/frame of its own"))
    for ray in faults.get("cosmics", ()):
        flat = _flat(ray["pixels"], w)
        extra_f.append(np.full(flat.size, int(ray["frame"]), np.int64))
        extra_p.append(flat)
        extra_c.append(np.full(flat.size, int(ray["counts"]), np.int64))
        truth.append(_finding("cosmic", (ray["frame"], ray["frame"]), ray["pixels"],
                              detail=f"injected: {flat.size} pixels x {int(ray['counts'])} "
                                     "counts in one frame"))
    cap = faults.get("cap")
    for spot in faults.get("at_cap", ()):
        flat = _flat(spot["pixels"], w)
        a, b = (int(x) for x in spot["frames"])
        fr = np.repeat(np.arange(a, b + 1, dtype=np.int64), flat.size)
        extra_f.append(fr)
        extra_p.append(np.tile(flat, b - a + 1))
        extra_c.append(rng.poisson(float(spot["rate"]), fr.size))
        truth.append(_finding("at_cap", (a, b), spot["pixels"], detail=(
            f"injected: a bright spot of Poisson {float(spot['rate']):g} photons/frame "
            f"per pixel, counter cap {cap}")))
    f, p, c = merge_hits(np.concatenate(extra_f), np.concatenate(extra_p),
                         np.concatenate(extra_c))
    drop = np.zeros(f.size, bool)
    dead = faults.get("dead_pixels", ())
    if len(dead):
        drop |= np.isin(p, _flat(dead, w))
        for r, col in dead:
            truth.append(_finding("dead_pixel", (0, last), [[r, col]],
                                  detail="injected: never counts"))
    for a, b in faults.get("empty_frames", ()):
        drop |= (f >= a) & (f <= b)
        truth.append(_finding("empty_frames", (a, b), (),
                              detail=f"injected: {b - a + 1} frames delivered empty"))
    f, p, c = f[~drop], p[~drop], c[~drop]
    if cap is not None:
        c = np.minimum(c, int(cap))
    return (f, p, c), truth


def counts_to_events(f: np.ndarray, p: np.ndarray, c: np.ndarray, shape: tuple[int, int],
                     frame_ticks: int, seed: int = 0
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hits of frames as photon events of a Timepix list: (x, y, toa ticks), sorted.

    Each of a hit's ``count`` photons arrives at a uniform tick inside its frame
    (``frame * frame_ticks`` .. ``(frame + 1) * frame_ticks - 1``), so the list read
    with ``bin_time = frame_ticks * tick`` gives the frames back.
    """
    w = int(shape[1])
    rng = np.random.default_rng([int(seed), 46])
    reps = np.asarray(c, np.int64)
    ff = np.repeat(np.asarray(f, np.int64), reps)
    pp = np.repeat(np.asarray(p, np.int64), reps)
    toa = ff * int(frame_ticks) + rng.integers(0, int(frame_ticks), ff.size)
    if toa.size:
        # the reader counts frames from the first photon: it opens its frame
        first = int(np.argmin(toa))
        toa[first] = ff[first] * int(frame_ticks)
    order = np.argsort(toa, kind="stable")
    pp, toa = pp[order], toa[order]
    return pp % w, pp // w, toa


def _pixels(d: dict[str, Any]) -> set[tuple[int, int]]:
    return {(int(r), int(c)) for r, c in d.get("pixels") or ()}


def _overlap(a: Any, b: Any) -> bool:
    return int(a[0]) <= int(b[1]) and int(b[0]) <= int(a[1])


def _found(t: dict[str, Any], found: list[dict[str, Any]], freq_tol: float) -> bool:
    """Whether the findings ``found`` find the planted fault ``t``."""
    kind = t["kind"]
    same = [f for f in found if f["kind"] == kind]
    want = _pixels(t)
    if kind in ("hot_pixel", "dead_pixel"):
        return want <= set().union(*(_pixels(f) for f in same)) if same else not want
    if kind == "empty_frames":
        return any(list(f["frames"]) == list(t["frames"]) for f in same)
    if kind in ("cosmic", "at_cap"):
        return any(_overlap(f["frames"], t["frames"]) and want <= _pixels(f) for f in same)
    if kind == "modulation":
        return any(f.get("frequency_hz") is not None
                   and abs(float(f["frequency_hz"]) - float(t["frequency_hz"])) <= freq_tol
                   and (t.get("q_bin") is None or f.get("q_bin") == t["q_bin"]) for f in same)
    raise ValueError(f"unknown fault kind {kind!r}")


def _explained(f: dict[str, Any], truth: list[dict[str, Any]], freq_tol: float) -> bool:
    """Whether a finding is about a planted fault (else it is a false alarm): it shares a
    pixel with one, or (without pixels) is of its kind in overlapping frames or is about a
    cosmic ray's frame alone, or is its modulation."""
    for t in truth:
        if f["kind"] == "modulation" or t["kind"] == "modulation":
            if f["kind"] == t["kind"] and _found(t, [f], freq_tol):
                return True
            continue
        if _pixels(f) & _pixels(t):
            return True
        if not _pixels(f) and f["kind"] == t["kind"] and _overlap(f["frames"], t["frames"]):
            return True
        # a frame finding of exactly a cosmic ray's frame (its pixels at the cap)
        if not _pixels(f) and t["kind"] == "cosmic" and list(f["frames"]) == list(t["frames"]):
            return True
    return False


def match_findings(truth: list[dict[str, Any]], found: list[dict[str, Any]], *,
                   freq_tol: float = 0.2) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(missed faults, false alarms) of findings against the planted truth.

    A planted fault is found when: hot or dead pixels, each of its pixels is in a finding
    of its kind; empty frames, a finding of that kind has exactly its frames; a cosmic ray
    or a bright spot at the cap, a finding of its kind in overlapping frames holds all of
    its pixels; a modulation, a finding of its q-bin within ``freq_tol`` Hz. A finding
    is a false alarm when it is about no planted fault (see :func:`_explained`): a
    second finding of one fault (a hot pixel that also reaches the cap, the frame of a
    cosmic ray at the cap) is not one.

    Both lists hold dicts of the findings contract (``Finding.as_dict()``, truth.json).
    """
    missed = [t for t in truth if not _found(t, found, freq_tol)]
    false = [f for f in found if not _explained(f, truth, freq_tol)]
    return missed, false
