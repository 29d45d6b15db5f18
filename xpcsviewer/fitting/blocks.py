"""The g2 curves of the shown files and the fits of them, flat over curves (no Qt).

:class:`G2Block` is one file's curves inside a q range and a t range, with a key per
curve of what a fit of it was computed from; :class:`G2Fits` holds the least-squares or
NUTS fits of every shown curve (statuses of :mod:`xpcsviewer.fitting.status`, reasons,
limits, sampler diagnostics). The fits are made by :mod:`xpcsviewer.fitting.block_fits`
and tabulated by :mod:`xpcsviewer.fitting.results`; the tabs and figures draw them.

Units: tau and t in s, q in 1/Angstrom.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "G2Block",
    "G2Fits",
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
        :mod:`xpcsviewer.io.g2_quality`); they are still drawn.
    source : str
        Path of the file the curves were read from ("" when unknown).
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


@dataclass
class G2Fits:
    """Fits of every shown curve (all files, all bins in range), flat over curves.

    Attributes
    ----------
    model : str
        g2 model name (``single``, ``stretched``, ``double``, ``single_avgcorr``), or
        ``auto`` when one was chosen per curve (:attr:`models`).
    method : str
        ``"lsq"`` (least squares) or ``"bayes"`` (NUTS posterior mean ± std).
    file_index : (B,) int
    file_labels : list of str, length B
    columns : (B,) int
    q, phi : (B,) float64
    bin_labels : list of str
    params, errors : dict name -> (B,) float64
        Values in natural units (tau in s); NaN where a curve has no fit.
    status : (B,) object array of str
        ``converged``, ``no_decay``, ``unresolved``, ``misfit``, ``poor_fit``,
        ``at_bound`` or ``failed`` (:mod:`xpcsviewer.fitting.status`), for NUTS from the
        sampler gates and the same physical checks.
    detail : (B,) object array of str
        The reason for the status ("" for converged).
    chi2_red : (B,) float64
    dt : (B,) float64
        Frame time per curve (for the averaging-corrected model).
    t_range : (lo, hi) s or None
    bands : list of (file rows (k,), BayesFitResult) for the posterior band
    tau_lower_limit, tau_upper_limit : (B,) s
        One-sided 95 % limits of unresolved curves; NaN otherwise.
    diagnostics : dict name -> (B,) or None
        NUTS only: ``r_hat`` (worst free parameter), ``ess`` (smallest bulk/tail),
        ``divergences``, ``bfmi`` (worst chain), ``noise_scale``, ``draws`` (per chain;
        more than asked for where the extension round sampled a bin longer).
    status_lsq : (B,) or None
        NUTS only: the least-squares status of the starting fit.
    errors_scaled : (B,) bool
        Errors multiplied by sqrt(chi2_red) (chi2_red > 1).
    curve_keys : list of (path, column, digest) or None
        What each row was fitted from (:meth:`G2Block.curve_key`): a row belongs to
        exactly that curve of that file with those points.
    models : (B,) object array of str or None
        The model of each row (``auto``); None when every row has :attr:`model`.
    interval : dict name -> (B, 2) s
        68 % profile-likelihood interval of each relaxation time (least squares).
    tau_mean, tau_mean_err : (B,) s or None
        Mean relaxation time of each row's model (what Diffusion uses as 1/Gamma).
    runs_z, delta_aicc, decay_left : (B,) or None
        Residual runs-test z; the chosen model's AICc margin (``auto``); fraction of
        the decay left at the last fitted delay.
    limit_name : (B,) object array of str or None
        The relaxation time a limit is on ("" where none).
    """

    model: str
    method: str
    file_index: np.ndarray
    file_labels: list[str]
    columns: np.ndarray
    q: np.ndarray
    phi: np.ndarray
    bin_labels: list[str]
    params: dict[str, np.ndarray]
    errors: dict[str, np.ndarray]
    status: np.ndarray
    chi2_red: np.ndarray
    dt: np.ndarray
    t_range: tuple[float, float] | None = None
    bands: list = field(default_factory=list)
    #: (band index, grid) -> (Bf, 3, G); filled in the fit's worker for the drawn grids
    band_cache: dict = field(default_factory=dict, repr=False, compare=False)
    detail: np.ndarray | None = None
    tau_lower_limit: np.ndarray | None = None
    tau_upper_limit: np.ndarray | None = None
    diagnostics: dict[str, np.ndarray] | None = None
    status_lsq: np.ndarray | None = None
    errors_scaled: np.ndarray | None = None
    curve_keys: list | None = None
    models: np.ndarray | None = None
    interval: dict = field(default_factory=dict)
    tau_mean: np.ndarray | None = None
    tau_mean_err: np.ndarray | None = None
    runs_z: np.ndarray | None = None
    delta_aicc: np.ndarray | None = None
    decay_left: np.ndarray | None = None
    limit_name: np.ndarray | None = None
    #: (curve_keys it was made from, key -> row); see :meth:`match`
    key_index: tuple = field(default=(None, {}), repr=False, compare=False)

    def __post_init__(self) -> None:
        n = int(np.asarray(self.q).size)
        if self.detail is None:
            self.detail = np.array([""] * n, dtype=object)
        if self.tau_lower_limit is None:
            self.tau_lower_limit = np.full(n, np.nan)
        if self.tau_upper_limit is None:
            self.tau_upper_limit = np.full(n, np.nan)
        if self.errors_scaled is None:
            self.errors_scaled = np.zeros(n, bool)

    @property
    def n_curves(self) -> int:
        """B."""
        return int(self.q.size)

    @property
    def param_names(self) -> tuple[str, ...]:
        """Parameter names in model order."""
        from xpcsviewer.fitting import model_param_names

        return model_param_names(self.model)

    @property
    def ok(self) -> np.ndarray:
        """(B,) bool: fit converged."""
        return np.array([s == "converged" for s in self.status], dtype=bool)

    def model_of(self, b: int) -> str:
        """The model of row ``b``."""
        return self.model if self.models is None else str(self.models[b])

    def model_names(self) -> np.ndarray:
        """(B,) object array: the model of every row."""
        if self.models is None:
            return np.array([self.model] * self.n_curves, dtype=object)
        return np.asarray(self.models, dtype=object)

    def tau_name(self, b: int) -> str:
        """The row's headline relaxation time: ``tau``, or ``tau1`` of the double model."""
        return "tau1" if self.model_of(b) == "double" else "tau"

    def _limit_on(self, b: int) -> str:
        if self.limit_name is not None and self.limit_name[b]:
            return str(self.limit_name[b])
        return self.tau_name(b) if self.models is not None else (
            "tau" if "tau" in self.params else "tau1")

    def has_limit(self, b: int) -> bool:
        """Curve ``b`` has a one-sided limit instead of a relaxation time."""
        return bool(np.isfinite(self.tau_lower_limit[b]) or np.isfinite(self.tau_upper_limit[b]))

    def limit_text(self, b: int) -> str:
        """"tau > 2.1 s" / "tau < 3e-05 s" for curve ``b``, or ""."""
        name = self._limit_on(b)
        if np.isfinite(self.tau_lower_limit[b]):
            return f"{name} > {self.tau_lower_limit[b]:.3g} s"
        if np.isfinite(self.tau_upper_limit[b]):
            return f"{name} < {self.tau_upper_limit[b]:.3g} s"
        return ""

    def _quotable(self, name: str, v: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        from xpcsviewer.fitting.status import quotable

        return quotable(name, v, e, self.status, self.tau_lower_limit, self.tau_upper_limit,
                        self.limit_name)

    def reported(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(values, errors) that may be quoted (:func:`xpcsviewer.fitting.status.quotable`)."""
        return self._quotable(name, self.params[name], self.errors[name])

    def relaxation_time(self) -> tuple[np.ndarray, np.ndarray]:
        """(B,) mean relaxation time of each row's model and its error, as quotable.

        A single exponential's is its tau (and error); a stretched or double one's
        comes from the fit where it gave one (least squares: covariance errors),
        otherwise (NUTS) from the posterior means, errors propagated without
        correlations.
        """
        names = self.model_names()
        single = np.isin(names, ("single", "single_avgcorr"))
        if self.tau_mean is not None:
            v = np.where(single, self.params.get("tau", np.nan), self.tau_mean)
            e = np.where(single, self.errors.get("tau", np.nan), self.tau_mean_err)
        else:
            from xpcsviewer.fitting.models import (
                mean_relaxation_time,
                model_param_names,
            )

            v, e = np.full(self.n_curves, np.nan), np.full(self.n_curves, np.nan)
            for m in dict.fromkeys(names):
                rows = np.flatnonzero(names == m)
                ps = {n: self.params[n][rows] for n in model_param_names(m)}
                v[rows] = mean_relaxation_time(m, ps)
                var = np.zeros(rows.size)
                for n in ps:
                    h = 1e-6 * np.maximum(np.abs(ps[n]), 1e-12)
                    up, dn = dict(ps), dict(ps)
                    up[n], dn[n] = ps[n] + h, ps[n] - h
                    with np.errstate(invalid="ignore"):
                        g = (mean_relaxation_time(m, up) - mean_relaxation_time(m, dn)) / (2 * h)
                        var = var + np.nan_to_num(g * self.errors[n][rows]) ** 2
                e[rows] = np.sqrt(var)
        return self._quotable("tau_mean", np.asarray(v, float), np.asarray(e, float))

    def rows_of(self, file_index: int) -> np.ndarray:
        """Curve rows of file ``file_index``."""
        return np.flatnonzero(self.file_index == file_index)

    def find(self, file_index: int, column: int) -> int | None:
        """Row of (file, g2 column), or None."""
        hit = np.flatnonzero((self.file_index == file_index) & (self.columns == column))
        return int(hit[0]) if hit.size else None

    @property
    def sources(self) -> list[str]:
        """Path of the file of each row ("" where unknown)."""
        if self.curve_keys is None:
            return [""] * self.n_curves
        return [k[0] for k in self.curve_keys]

    def match(self, block: G2Block, j: int) -> int | None:
        """Row fitted from curve ``j`` of ``block`` as it is now, or None.

        Without curve keys (fits made by hand) the row is found by file index and
        column, as :meth:`find` does.
        """
        if self.curve_keys is None:
            return self.find(block.file_index, int(block.columns[j]))
        keys, index = self.key_index
        if keys is not self.curve_keys:
            index = {k: r for r, k in enumerate(self.curve_keys)}
            self.key_index = (self.curve_keys, index)
        return index.get(block.curve_key(j))

    def for_blocks(self, blocks: list[G2Block]) -> G2Fits | None:
        """The rows that belong to the curves of ``blocks`` (in their order, with their
        file indices), or None when no row does.

        A fit of other files, other bins, other points or other data is left out: the
        view never draws, tabulates or exports a fit for a curve it was not made for.
        """
        rows, fidx = [], []
        for b in blocks:
            for j in range(b.n_bins):
                r = self.match(b, j)
                if r is not None:
                    rows.append(r)
                    fidx.append(b.file_index)
        if not rows:
            return None
        return self.take(np.asarray(rows, np.int64), np.asarray(fidx, np.int64))

    def take(self, rows: np.ndarray, file_index: np.ndarray | None = None) -> G2Fits:
        """These rows as a fit of their own (posterior bands and caches kept)."""
        rows = np.asarray(rows, np.int64)
        new_of_old = np.full(self.n_curves, -1, np.int64)
        new_of_old[rows] = np.arange(rows.size)

        def pick(a):
            return None if a is None else np.asarray(a)[rows]

        bands = [(new_of_old[np.asarray(fr, np.int64)], res) for fr, res in self.bands]
        return G2Fits(
            model=self.model,
            method=self.method,
            file_index=self.file_index[rows] if file_index is None else file_index,
            file_labels=[self.file_labels[r] for r in rows],
            columns=self.columns[rows],
            q=self.q[rows],
            phi=self.phi[rows],
            bin_labels=[self.bin_labels[r] for r in rows],
            params={k: v[rows] for k, v in self.params.items()},
            errors={k: v[rows] for k, v in self.errors.items()},
            status=self.status[rows],
            chi2_red=self.chi2_red[rows],
            dt=self.dt[rows],
            t_range=self.t_range,
            bands=bands,
            band_cache=self.band_cache,  # keyed by band index and grid: still valid
            detail=pick(self.detail),
            tau_lower_limit=pick(self.tau_lower_limit),
            tau_upper_limit=pick(self.tau_upper_limit),
            diagnostics=None if self.diagnostics is None
            else {k: v[rows] for k, v in self.diagnostics.items()},
            status_lsq=pick(self.status_lsq),
            errors_scaled=pick(self.errors_scaled),
            curve_keys=None if self.curve_keys is None
            else [self.curve_keys[r] for r in rows],
            models=pick(self.models),
            interval={k: v[rows] for k, v in self.interval.items()},
            tau_mean=pick(self.tau_mean),
            tau_mean_err=pick(self.tau_mean_err),
            runs_z=pick(self.runs_z),
            delta_aicc=pick(self.delta_aicc),
            decay_left=pick(self.decay_left),
            limit_name=pick(self.limit_name),
        )

    def curve(self, rows: Any, tau_grid: np.ndarray) -> np.ndarray:
        """Fitted g2 of ``rows`` on ``tau_grid`` (G,) -> (len(rows), G); NaN rows for no fit.

        The averaging-corrected model is drawn without the multi-tau correction on a
        smooth grid (m = 1), as ``G2FitResult.curve`` does.
        """
        from xpcsviewer.fitting import evaluate_model, model_param_names

        rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
        t = np.asarray(tau_grid, dtype=np.float64)[None, :]
        out = np.full((rows.size, t.shape[1]), np.nan)
        names = self.model_names()[rows] if rows.size else np.zeros(0, object)
        for m in dict.fromkeys(names):  # each row with its own model
            k = np.flatnonzero(names == m)
            sel = rows[k]
            p = tuple(self.params[n][sel][:, None] for n in model_param_names(m))
            aux = None
            if m == "single_avgcorr":
                aux = (np.ones_like(t), self.dt[sel][:, None])
            with np.errstate(all="ignore"):
                out[k] = np.asarray(evaluate_model(m, t, p, aux, np), dtype=np.float64)
        return out

    def band(self, rows: Any, tau_grid: np.ndarray) -> np.ndarray | None:
        """Posterior band (lower, median, upper) of ``rows`` -> (len(rows), 3, G); None for LSQ."""
        if not self.bands:
            return None
        rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
        out = np.full((rows.size, 3, np.size(tau_grid)), np.nan)
        grid = np.asarray(tau_grid, dtype=np.float64)
        for j, (file_rows, res) in enumerate(self.bands):
            file_rows = np.asarray(file_rows)
            sel = [k for k, r in enumerate(rows) if r in file_rows]
            if not sel:
                continue
            key = (j, grid.size, grid.tobytes())
            b = self.band_cache.get(key)
            if b is None:
                b = self.band_cache[key] = res.band(grid)  # (Bf, 3, G)
            for k in sel:
                out[k] = b[int(np.flatnonzero(file_rows == rows[k])[0])]
        return out
