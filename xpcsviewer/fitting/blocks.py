"""The g2 curves of the shown files, flat over curves (no Qt).

:class:`G2Block` is one file's curves inside a q range and a t range, with a key per
curve of what a fit of it was computed from. Their fits are the one fit table,
:class:`xpcsviewer.fitting.fit_table.G2Fits`, made by
:func:`xpcsviewer.fitting.block_fits.fit_curves` and tabulated by
:mod:`xpcsviewer.fitting.results`; the tabs and figures draw them.

Units: tau and t in s, q in 1/Angstrom.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "G2Block",
    "bins_in_range",
    "g2_blocks",
    "g2_tau_grid",
]


@dataclass(frozen=True)
class G2Block:
    """The g2 curves of one file inside a q range and a t range.

    Attributes
    ----------
    file_index : int
        Position of the file in the target list.
    label : str
        File label.
    tau : (T,) float64
        Delays (s) inside the t range.
    g2, g2_err : (T, B) float64
        Columns are the selected dynamic bins.
    valid : (T, B) bool
        False for missing points (g2 == 0 and err == 0, non-finite): never drawn or fitted.
    columns : (B,) int
        0-based g2 columns (dynamic bins) in the file.
    q, phi : (B,) float64
        1/Angstrom and degrees of each column.
    bin_labels : list of str
    delay_frames : (T,) int
    t0 : float
        Effective frame time (s) of the multitau analysis.
    excluded : (T, B) bool or None
        Valid points left out of fits (their stated error is implausibly small, see
        :mod:`xpcsviewer.io.results.g2_quality`); they are still drawn.
    source : str
        Path of the file the curves were read from ("" when unknown).
    noise : (K, T, B) float64 or None
        Deviations of K independent parts of the data from the whole (the pixel
        groups of an age cut): the fits judge residual structure against the
        correlated noise they show (``fit_g2(noise=...)``).
    """

    file_index: int
    label: str
    tau: np.ndarray
    g2: np.ndarray
    g2_err: np.ndarray
    valid: np.ndarray
    columns: np.ndarray
    q: np.ndarray
    phi: np.ndarray
    bin_labels: list[str]
    delay_frames: np.ndarray
    t0: float
    excluded: np.ndarray | None = None
    source: str = ""
    noise: np.ndarray | None = None

    @property
    def n_bins(self) -> int:
        """B."""
        return int(self.columns.size)

    @property
    def fit_valid(self) -> np.ndarray:
        """(T, B) bool: the points fits use (``valid`` without ``excluded``)."""
        return self.valid if self.excluded is None else self.valid & ~self.excluded

    def curve_key(self, j: int) -> tuple[str, int, str]:
        """What a fit of curve ``j`` was computed from: (file, g2 column, digest of the
        fitted points).

        The digest covers the delays, values and errors of the points a fit uses, so a
        changed t range, point mask or file content gives another key: a fit is drawn
        or exported only for the curve whose key it carries.
        """
        import hashlib

        m = self.fit_valid[:, j]
        h = hashlib.blake2b(digest_size=8)
        for a in (self.tau[m], self.g2[m, j], self.g2_err[m, j]):
            h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
        return (self.source, int(self.columns[j]), h.hexdigest())


def _ordered(lo: float | None, hi: float | None) -> tuple[float | None, float | None]:
    if lo is not None and hi is not None and lo > hi:
        return hi, lo
    return lo, hi


def g2_blocks(
    results: list,
    qmin: float | None = None,
    qmax: float | None = None,
    tmin: float | None = None,
    tmax: float | None = None,
    max_bins: int | None = None,
    exclude_suspect: bool = True,
    bin_offset: int = 0,
) -> list[G2Block]:
    """Select the g2 curves of every multitau file in a q range and a t range.

    Parameters
    ----------
    results : list of XpcsResult
        Files without multitau data are skipped (their index is kept in ``file_index``).
    qmin, qmax : float, optional
        q range (1/Angstrom, inclusive); swapped if inverted.
    tmin, tmax : float, optional
        Delay range (s, inclusive); swapped if inverted.
    max_bins : int, optional
        Keep at most this many bins per file (in q order, from ``bin_offset``).
    bin_offset : int
        Skip this many of each file's bins in range first (paging through bins).
    exclude_suspect : bool
        Mark the points whose stated error is implausibly small as ``excluded`` from
        fits (the default; they are still drawn).

    Returns
    -------
    list of G2Block
        Files with no bin in the range are left out.
    """
    from xpcsviewer.backends import ensure_numpy

    qmin, qmax = _ordered(qmin, qmax)
    tmin, tmax = _ordered(tmin, tmax)
    out = []
    for i, res in enumerate(results):
        mt = getattr(res, "multitau", None)
        if mt is None:
            continue
        qm = res.qmap
        cols = np.asarray(qm.qbins_in_range(qmin, qmax), dtype=np.int64)
        g2 = np.asarray(ensure_numpy(mt.g2), dtype=np.float64)
        cols = cols[cols < g2.shape[1]]
        cols = cols[max(0, int(bin_offset)):]
        if max_bins is not None:
            cols = cols[: int(max_bins)]
        if cols.size == 0:
            continue
        tau = np.asarray(ensure_numpy(mt.tau), dtype=np.float64)
        keep = np.isfinite(tau)
        if tmin is not None:
            keep &= tau >= tmin
        if tmax is not None:
            keep &= tau <= tmax
        rows = np.flatnonzero(keep)
        err = np.asarray(ensure_numpy(mt.g2_err), dtype=np.float64)
        val = np.asarray(mt.valid, dtype=bool)
        g = g2[np.ix_(rows, cols)]
        e = err[np.ix_(rows, cols)]
        v = val[np.ix_(rows, cols)] & np.isfinite(g) & np.isfinite(e)
        v &= ~((g == 0) & (e == 0))
        labels = qm.dynamic_labels()
        sus = getattr(mt, "err_suspect", None)
        excl = None
        if exclude_suspect and sus is not None:
            excl = np.asarray(sus, dtype=bool)[np.ix_(rows, cols)] & v
        out.append(
            G2Block(
                file_index=i,
                label=res.label,
                tau=tau[rows],
                g2=g,
                g2_err=e,
                valid=v,
                columns=cols,
                q=np.asarray(qm.dynamic_q, float)[cols],
                phi=np.asarray(qm.dynamic_phi, float)[cols],
                bin_labels=[labels[c] for c in cols],
                delay_frames=np.asarray(mt.delay_frames)[rows],
                t0=float(mt.t0_eff),
                excluded=excl,
                source=str(getattr(res, "path", "") or ""),
            )
        )
    return out


def bins_in_range(results: list, qmin: float | None = None, qmax: float | None = None) -> int:
    """Most bins any multitau file has in the q range (what paging runs over)."""
    qmin, qmax = _ordered(qmin, qmax)
    n = 0
    for res in results:
        mt = getattr(res, "multitau", None)
        if mt is None:
            continue
        cols = np.asarray(res.qmap.qbins_in_range(qmin, qmax))
        n = max(n, int((cols < mt.g2.shape[1]).sum()))
    return n


def g2_tau_grid(tau: np.ndarray, n: int = 128) -> np.ndarray:
    """Log-spaced delays for fit curves over the data range padded by half a decade each side."""
    t = np.asarray(tau, dtype=np.float64)
    t = t[np.isfinite(t) & (t > 0)]
    if t.size == 0:
        return np.zeros(0)
    lo, hi = np.log10(t.min()) - 0.5, np.log10(t.max()) + 0.5
    return np.logspace(lo, hi, int(n))
