"""Temporal and spatial means of a photon stream (the sparse twin of ``_scattering``).

:class:`SparseScattering` has the interface of
:class:`~xpcsviewer.compute._scattering.ScatteringAccumulator` (``mean_image``, ``saxs_1d``,
``saxs_1d_segments``, ``intensity_vs_time``, ``count``) but is fed hits, not frames: its
cost grows with the hits, and the sums equal the dense accumulator's on the same frames
(integer counts: exactly; averaged frames: to float64 round-off).

``frame_group`` > 1 keeps the per-frame arrays per group of frames (a time-tag run has
10^9 or more "frames" of one detector tick): ``intensity_vs_time`` and the I(q) segments
are then means per frame over each group.
"""

from __future__ import annotations

import numpy as np

from xpcsviewer.compute._binning import PixelBins

__all__ = ["SparseScattering", "pixel_lookup"]


def _sums(frame: np.ndarray, pixel: np.ndarray, value: np.ndarray, r0: int, group: int,
          sid: np.ndarray, image: np.ndarray, static: np.ndarray, tot: np.ndarray,
          segrow: np.ndarray | None) -> None:
    """image += hits per pixel; per row of frames ``tot`` += hits in static bins and
    ``static[row or its segment, bin]`` += hits (compiled when numba is there, else
    bincounts). ``segrow``: the segment of each row (``static`` then has a row per
    segment), or None (a row of ``static`` per row of frames)."""
    frame = np.ascontiguousarray(frame)
    from xpcsviewer.compute.multitau._cpu import available

    if available():
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import numba

            from xpcsviewer.compute.multitau._photons_numba import hit_sums

            nt = max(1, int(numba.get_num_threads()))
            # runs of hits cut where a row of frames begins (no temporary of the rows)
            picks = np.linspace(0, frame.size, nt + 1)[1:-1].astype(np.int64)
            starts = (np.asarray(frame[np.minimum(picks, frame.size - 1)], np.int64)
                      // group) * group
            cuts = np.searchsorted(frame, starts, side="left")
            echunks = np.unique(np.concatenate([[0], cuts, [frame.size]])).astype(np.int64)
            pbands = np.linspace(0, image.size, nt + 1).round().astype(np.int64)
            per_task = segrow is not None
            slabs = np.zeros((echunks.size - 1 if per_task else 1, *static.shape))
            ident = np.arange(tot.size, dtype=np.int64)
            hit_sums(frame, np.ascontiguousarray(pixel), np.ascontiguousarray(value), r0,
                     group, sid, image, slabs, tot, ident if segrow is None else segrow,
                     per_task, pbands, echunks)
            static += slabs.sum(axis=0) if per_task else slabs[0]
        return
    rows = np.asarray(frame, dtype=np.int64) // group - r0
    v = np.asarray(value, dtype=np.float64)
    px = np.asarray(pixel, dtype=np.int64)
    image += np.bincount(px, weights=v, minlength=image.size)
    s = sid[px]
    ok = s >= 0
    r = rows[ok]
    tot += np.bincount(r, weights=v[ok], minlength=tot.size)[: tot.size]
    if segrow is not None:
        r = segrow[r]
    ns = static.shape[1]
    static += np.bincount(r * ns + s[ok], weights=v[ok],
                          minlength=static.size).reshape(static.shape)


def pixel_lookup(pixels: PixelBins) -> np.ndarray:
    """(H*W,) int32: the correlated-pixel number of each detector pixel, -1 elsewhere."""
    h, w = pixels.shape
    lut = np.full(h * w, -1, dtype=np.int32)
    lut[pixels.pixel_index] = np.arange(pixels.n_pixels, dtype=np.int32)
    return lut


class SparseScattering:
    """Running means over a stream of hits (see the module notes).

    Parameters
    ----------
    pixels : PixelBins
    n_frames : int
        Processed frames the stream will have (a capacity; :meth:`grow` extends it).
    frame_group : int
        Frames per row of the per-frame arrays (1: one row per frame).
    segments : int, optional
        For a stream of known length ``n_frames``: keep the static-bin sums only per time
        segment (the ``segments`` the result file stores) instead of per row, so memory
        does not grow with the frames times the static bins (a 200,000-frame run with 360
        static bins would hold 576 MB); :meth:`saxs_1d_segments` then answers only for
        that number.
    """

    def __init__(self, pixels: PixelBins, n_frames: int, frame_group: int = 1,
                 segments: int | None = None) -> None:
        self.pixels = pixels
        self.group = max(1, int(frame_group))
        h, w = pixels.shape
        self.sum_image = np.zeros(h * w)
        rows = -(-max(int(n_frames), 1) // self.group)
        self.intensity = np.zeros(rows)  # sums over the correlated pixels, per row
        self.n_segments = None if segments is None else max(1, min(int(segments), rows))
        if self.n_segments is None:
            self.static_sums = np.zeros((rows, pixels.n_static))
            self._seg_bounds = None
        else:
            self.static_sums = np.zeros((self.n_segments, pixels.n_static))
            self._seg_bounds = np.linspace(0, rows, self.n_segments + 1).round().astype(
                np.int64)
        self._sid = np.full(h * w, -1, dtype=np.int64)
        self._sid[pixels.pixel_index] = pixels.static_id
        self.count = 0  # processed frames added

    def grow(self, n_frames: int) -> None:
        """Room for ``n_frames`` processed frames (a live stream; doubles)."""
        rows = -(-int(n_frames) // self.group)
        if rows <= self.intensity.shape[0]:
            return
        if self._seg_bounds is not None:
            raise ValueError("a stream with fixed time segments cannot grow")
        rows = max(rows, 2 * self.intensity.shape[0])
        inten = np.zeros(rows)
        inten[: self.intensity.shape[0]] = self.intensity
        sums = np.zeros((rows, self.pixels.n_static))
        sums[: self.static_sums.shape[0]] = self.static_sums
        self.intensity, self.static_sums = inten, sums

    def add_events(self, start: int, stop: int, frame: np.ndarray, pixel: np.ndarray,
                   value: np.ndarray) -> None:
        """Add the hits of processed frames ``[start, stop)`` (``start`` = frames so far)."""
        if start != self.count:
            raise ValueError(f"frames must come in order: expected {self.count}, got {start}")
        self.grow(stop)
        if np.asarray(frame).size:
            r0 = start // self.group
            r1 = (stop - 1) // self.group + 1
            tot = np.zeros(r1 - r0)
            if self._seg_bounds is None:
                block = np.zeros((r1 - r0, self.pixels.n_static))
                _sums(frame, pixel, value, r0, self.group, self._sid, self.sum_image, block,
                      tot, None)
                self.static_sums[r0:r1] += block
            else:
                segrow = np.searchsorted(self._seg_bounds, np.arange(r0, r1),
                                         side="right") - 1
                _sums(frame, pixel, value, r0, self.group, self._sid, self.sum_image,
                      self.static_sums, tot, np.minimum(segrow, self.n_segments - 1))
            self.intensity[r0:r1] += tot
        self.count = int(stop)

    # ------------------------------------------------------------ views
    def _rows(self) -> tuple[int, np.ndarray]:
        """(rows in use, frames in each row)."""
        rows = -(-self.count // self.group)
        frames = np.full(rows, float(self.group))
        if rows:
            frames[-1] = self.count - (rows - 1) * self.group
        return rows, frames

    def mean_image(self) -> np.ndarray:
        """(H, W) mean counts per pixel per frame."""
        return (self.sum_image / max(self.count, 1)).reshape(self.pixels.shape)

    def saxs_1d(self) -> np.ndarray:
        """(Ns,) mean counts per pixel per frame in each static bin (NaN if empty)."""
        c = self.pixels.static_count.astype(np.float64)
        sums = (self.static_sums if self._seg_bounds is not None
                else self.static_sums[: self._rows()[0]])
        with np.errstate(invalid="ignore", divide="ignore"):
            return sums.sum(axis=0) / (c * max(self.count, 1))

    def saxs_1d_segments(self, n_segments: int) -> np.ndarray:
        """(S, Ns) per-segment means (boundaries round(linspace(0, rows, S+1)) in rows).

        Raises
        ------
        ValueError
            Per-segment sums were kept for another number of segments, or for a stream
            that is not complete.
        """
        rows, frames = self._rows()
        s = max(1, min(int(n_segments), rows))
        c = self.pixels.static_count.astype(np.float64)
        fc = np.concatenate([[0.0], np.cumsum(frames)])
        if self._seg_bounds is not None:
            if s != self.n_segments or rows != self._seg_bounds[-1]:
                raise ValueError(f"time segments were kept for {self.n_segments} segments "
                                 f"of {self._seg_bounds[-1]} rows, asked for {s} of {rows}")
            bounds, seg = self._seg_bounds, self.static_sums
        else:
            bounds = np.linspace(0, rows, s + 1).round().astype(np.int64)
            cs = np.concatenate([np.zeros((1, self.pixels.n_static)),
                                 np.cumsum(self.static_sums[:rows], axis=0)])
            seg = cs[bounds[1:]] - cs[bounds[:-1]]
        nf = fc[bounds[1:]] - fc[bounds[:-1]]
        with np.errstate(invalid="ignore", divide="ignore"):
            return seg / (c[None, :] * nf[:, None])

    def intensity_vs_time(self) -> np.ndarray:
        """(rows,) mean counts per correlated pixel and frame of each row."""
        rows, frames = self._rows()
        p = max(self.pixels.n_pixels, 1)
        return self.intensity[:rows] / (p * frames)
