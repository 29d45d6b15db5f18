"""What XSVS tells about a raw source (issue 46): per q-bin and exposure the photon-count
histogram, its negative-binomial fit (M modes, visibility beta = 1/M), and per q-bin the
visibility law beta(T) = beta0 V(T; tau) with, where a result file of the same run is
given, the g2 fit's contrast and tau beside it.

Made by :func:`xpcsviewer.jobs.xsvs.xsvs_source`; written by ``xpcsviewer xsvs -o``
(:data:`CSV_COLUMNS` is a contract other tools read), read back by
:func:`xpcsviewer.jobs.xsvs.read_xsvs`, shown on the Raw tab and in the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["CSV_COLUMNS", "NB_FIELDS", "NB_STATUSES", "VIS_FIELDS", "XsvsResult"]

#: ``xsvs -o table.csv``: one row per q-bin and exposure (the issue's contract)
CSV_COLUMNS = ("q_bin", "q", "exposure_s", "mean_count", "M", "M_error", "beta",
               "beta_error", "status")
#: per q-bin and exposure, each a (B, L) array of :attr:`XsvsResult.nb` (the fit's), and
#: beside them ``beta_T``/``beta_T_error``: the visibility the beta(T) law is fitted to
#: (from the counts' moments where no sample is censored; see docs/xsvs.md)
NB_FIELDS = ("mean", "mean_error", "spread", "M", "M_error", "beta", "beta_error",
             "chi2_red", "gof_p", "n_samples", "n_photons", "status", "reason")
#: statuses of a bin and exposure: fitted (``ok``; ``misfit``: fitted, the histogram
#: not a negative binomial), or said and not fitted into a number: ``poisson`` (beta
#: consistent with 0), ``few_photons``, ``no_data``, ``capped`` (several frames, some
#: at the counter cap: the sum's censoring is unknown)
NB_STATUSES = ("ok", "misfit", "poisson", "few_photons", "no_data", "capped")
#: per q-bin, each a (B,) array of :attr:`XsvsResult.vis` (the beta(T) fit)
VIS_FIELDS = ("model", "beta0", "beta0_error", "tau", "tau_error", "stretch",
              "stretch_error", "chi2_red", "n_points", "status", "reason", "limit")


@dataclass
class XsvsResult:
    """Histograms, fits and the comparison with g2 (arrays described inline).

    ``nb`` maps each of :data:`NB_FIELDS` to a (B, L) array; ``vis`` each of
    :data:`VIS_FIELDS` to a (B,) array; ``g2`` (may be empty) ``contrast``,
    ``contrast_error``, ``tau``, ``tau_error`` (B,) float64 and ``status`` (B,) str of
    the g2 fit of ``g2_source`` for the same q-bins.
    """

    source: str
    layout: str
    detector_shape: tuple[int, int]
    n_frames: int
    frame_time: float | None  #: s per frame (a tick for a time-tag list); None: unknown
    time_tag: bool
    counter_cap: int | None
    windows: np.ndarray  #: (L,) int64 frames per exposure
    n_windows: np.ndarray  #: (L,) int64 whole windows per exposure
    bin_ids: np.ndarray  #: (B,) int64, 1-based q-bins of the q-map
    q: np.ndarray  #: (B,) float64 (nan: unknown)
    n_pixels: np.ndarray  #: (B,) int64 valid pixels per bin
    hist: np.ndarray  #: (B, L, K + 2) int64 exact counts; last column > K
    cens: np.ndarray  #: (B, L, K + 2) int64 censored (true count >= k)
    photons: np.ndarray  #: (B, L) float64
    #: (B,) relative variance of the pixels' mean intensity within each bin (from the
    #: static partition); ``nb``'s beta and M are corrected for it (docs/xsvs.md)
    mean_spread: np.ndarray | None = None
    #: (B, L, 4) sums of k, k², k³, k⁴ over the samples (exact beyond K)
    moments: np.ndarray | None = None
    nb: dict[str, np.ndarray] = field(default_factory=dict)
    vis: dict[str, np.ndarray] = field(default_factory=dict)
    g2: dict[str, np.ndarray] = field(default_factory=dict)
    g2_source: str | None = None
    qmap_source: str | None = None
    notes: tuple[str, ...] = ()
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def exposure_s(self) -> np.ndarray:
        """(L,) seconds per exposure (nan without a frame time)."""
        ft = np.nan if self.frame_time is None else float(self.frame_time)
        return np.asarray(self.windows, dtype=np.float64) * ft

    @property
    def kmax(self) -> int:
        return int(self.hist.shape[-1]) - 2

    def pk(self, b: int, level: int) -> np.ndarray:
        """(K + 2,) P(k) of row ``b`` at exposure ``level``: exact and censored samples
        together, normalised by the samples (last entry: k > K)."""
        h = (self.hist[b, level] + self.cens[b, level]).astype(np.float64)
        s = h.sum()
        return h / s if s > 0 else h

    def csv_rows(self) -> list[list[Any]]:
        """Rows of :data:`CSV_COLUMNS` (numbers as repr floats, '' where not given)."""
        def num(x: Any) -> Any:
            x = float(x)
            return "" if not np.isfinite(x) else repr(x)

        rows: list[list[Any]] = [list(CSV_COLUMNS)]
        ex = self.exposure_s
        for b, bid in enumerate(self.bin_ids):
            for lev in range(self.windows.size):
                rows.append([int(bid), num(self.q[b]), num(ex[lev]),
                             num(self.nb["mean"][b, lev]), num(self.nb["M"][b, lev]),
                             num(self.nb["M_error"][b, lev]), num(self.nb["beta"][b, lev]),
                             num(self.nb["beta_error"][b, lev]),
                             str(self.nb["status"][b, lev])])
        return rows

    def summary_rows(self) -> list[dict[str, Any]]:
        """Per q-bin: the beta(T) fit and, when known, the g2 fit beside it."""
        out = []
        for b, bid in enumerate(self.bin_ids):
            row = {"q_bin": int(bid), "q": float(self.q[b]),
                   "n_pixels": int(self.n_pixels[b]),
                   "mean_spread": None if self.mean_spread is None
                   else float(self.mean_spread[b])}
            for k in VIS_FIELDS:
                v = self.vis.get(k)
                row[k] = None if v is None else v[b].item() if hasattr(v[b], "item") else v[b]
            for k in ("contrast", "contrast_error", "tau", "tau_error", "status"):
                v = self.g2.get(k)
                row["g2_" + k] = None if v is None else (
                    v[b].item() if hasattr(v[b], "item") else v[b])
            out.append(row)
        return out
