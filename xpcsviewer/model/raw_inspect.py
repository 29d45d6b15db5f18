"""What one pass over a raw source tells about it: its timelines, per-pixel maps, count
distributions and the faults found in them (issue 45).

Made by :func:`xpcsviewer.jobs.inspect.inspect_source` (the accumulators and finders of
:mod:`xpcsviewer.compute.rawstats`); shown by the Raw tab, printed and written by
``xpcsviewer inspect``. The JSON of :meth:`RawInspection.findings_json` is a contract other
tools read: ``{"findings": [{"kind", "frames": [first, last], "pixels": [[row, col], ...],
"frequency_hz", "detail", "q_bin"}, ...]}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["FINDING_KINDS", "Finding", "RawInspection"]

#: The kinds of fault the finders report (more may be added; readers must accept others).
FINDING_KINDS = ("hot_pixel", "dead_pixel", "cosmic", "empty_frames", "at_cap", "modulation")


@dataclass(frozen=True)
class Finding:
    """One fault: what, in which frames and pixels, and a line a user reads.

    Attributes
    ----------
    kind : str
        One of :data:`FINDING_KINDS` (more may be added).
    frames : (first, last)
        Frames concerned, inclusive, 0-based frame indices of the source (the whole run
        for a pixel fault).
    pixels : tuple of (row, col)
        Pixels concerned; ``()`` when none (a frame or modulation fault).
    frequency_hz : float or None
        Frequency of a modulation (None without a frame time, or for other kinds).
    detail : str
        One line, e.g. ``"mean 41.2 ph/frame vs bin median 0.02"``.
    q_bin : int or None
        1-based dynamic q-bin where it applies.
    score : float
        The finder's significance (for sorting); not part of the JSON contract.
    """

    kind: str
    frames: tuple[int, int]
    pixels: tuple[tuple[int, int], ...] = ()
    frequency_hz: float | None = None
    detail: str = ""
    q_bin: int | None = None
    score: float = 0.0

    def as_dict(self) -> dict:
        """The JSON contract's entry (plain Python types only)."""
        return {
            "kind": str(self.kind),
            "frames": [int(self.frames[0]), int(self.frames[1])],
            "pixels": [[int(r), int(c)] for r, c in self.pixels],
            "frequency_hz": None if self.frequency_hz is None else float(self.frequency_hz),
            "detail": str(self.detail),
            "q_bin": None if self.q_bin is None else int(self.q_bin),
        }


@dataclass
class RawInspection:
    """The statistics of one pass over a raw source and the faults found in them.

    Timelines are (N,) over the source's frames; maps are (H, W); ``bin_photons`` and
    ``count_hist`` exist only with a q-map (columns/rows follow its dynamic bins 1..n_bins).
    """

    path: str
    layout: str
    detector_shape: tuple[int, int]
    n_frames: int
    frame_time: float | None  #: s per frame (None: unknown; no Hz or flux then)
    counter_cap: int | None  #: counts at which a pixel saturates (None: none known)
    photons: np.ndarray  #: (N,) float64 photons per frame (valid pixels)
    hit_pixels: np.ndarray  #: (N,) int64 pixels with >= 1 count per frame
    at_cap: np.ndarray  #: (N,) int64 hit pixels at the cap per frame (zeros without cap)
    n_valid: int  #: valid pixels (the q-map's mask; all pixels without a q-map)
    bin_photons: np.ndarray | None  #: (N, n_bins) float32 photons per frame per q-bin
    pixel_sum: np.ndarray  #: (H, W) float64 counts summed over the run
    pixel_max: np.ndarray  #: (H, W) max count in one frame
    pixel_cap_frames: np.ndarray  #: (H, W) int32 frames at the cap
    count_hist: np.ndarray | None  #: (n_bins, kmax + 2) P(k) counts incl. zeros; last: k > kmax
    findings: list[Finding] = field(default_factory=list)

    @property
    def occupancy(self) -> np.ndarray:
        """(N,) fraction of valid pixels hit in each frame."""
        return np.asarray(self.hit_pixels, dtype=np.float64) / max(int(self.n_valid), 1)

    @property
    def cap_fraction(self) -> np.ndarray:
        """(N,) fraction of the hit pixels at the counter cap in each frame."""
        hit = np.maximum(np.asarray(self.hit_pixels, dtype=np.float64), 1.0)
        return np.asarray(self.at_cap, dtype=np.float64) / hit

    @property
    def flux(self) -> np.ndarray | None:
        """(H, W) mean photons/s per pixel, or None without a frame time."""
        if self.frame_time is None or self.frame_time <= 0 or self.n_frames <= 0:
            return None
        seconds = self.n_frames * float(self.frame_time)
        return np.asarray(self.pixel_sum, dtype=np.float64) / seconds

    @property
    def mean_image(self) -> np.ndarray:
        """(H, W) mean counts per frame."""
        return np.asarray(self.pixel_sum, dtype=np.float64) / max(int(self.n_frames), 1)

    def findings_json(self) -> dict:
        """``{"findings": [Finding.as_dict(), ...]}``, the contract of ``inspect -o``."""
        return {"findings": [f.as_dict() for f in self.findings]}
