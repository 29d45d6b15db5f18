"""The one fit table: every fitted curve's numbers, status and reason, flat over curves.

Both solvers fill it (:mod:`xpcsviewer.fitting.block_fits`: least squares from
:class:`~xpcsviewer.fitting.lsq.G2FitResult`, NUTS from
:class:`~xpcsviewer.fitting.bayes_result.BayesFitResult`, one copy each in
:func:`fill_lsq` / :func:`fill_bayes`); the tabs, the figures, the JSON/CSV record
(:mod:`xpcsviewer.fitting.results`), live and series read it. What may be quoted is
:func:`xpcsviewer.fitting.status.quotable`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from xpcsviewer.fitting.blocks import G2Block

__all__ = ["G2Fits", "fill_bayes", "fill_lsq", "lsq_start"]


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
    n_points, delta_chi2 : (B,)
        Points fitted; the decay's evidence (least squares).
    fixed : dict name -> bool
    interval2, window : dict name -> (B, 2), (B,) s
        2-sigma profile interval; the time refitted without the last fitted delays.
    aicc : dict model -> (B,)
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
    # what the record (JSON/CSV) tells beside the values
    n_points: np.ndarray | None = None
    fixed: dict = field(default_factory=dict)
    interval2: dict = field(default_factory=dict)
    window: dict = field(default_factory=dict)
    delta_chi2: np.ndarray | None = None
    aicc: dict = field(default_factory=dict)
    #: (rows, G2FitResult) of each least-squares solve behind the table
    solves: list = field(default_factory=list, repr=False, compare=False)
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
                        self.limit_name, self.detail)

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
        if self.tau_mean is not None:  # the solver's own (same numbers as its record)
            v, e = self.tau_mean, self.tau_mean_err
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
        n = self.n_curves
        new_of_old = np.full(n, -1, np.int64)
        new_of_old[rows] = np.arange(rows.size)

        def pick(a: Any) -> Any:
            # every per-curve field, whatever its container: (B, ...) arrays, lists of
            # B, dicts of (B, ...) arrays; run-wide values are kept as they are
            if isinstance(a, np.ndarray) and a.ndim and a.shape[0] == n:
                return a[rows]
            if isinstance(a, list) and len(a) == n and not (n == 0 and rows.size):
                return [a[r] for r in rows]
            if isinstance(a, dict) and a and all(
                    isinstance(v, np.ndarray) and v.ndim and v.shape[0] == n
                    for v in a.values()):
                return {k: v[rows] for k, v in a.items()}
            return a

        kw = {f.name: pick(getattr(self, f.name)) for f in fields(self)
              if f.name not in ("bands", "band_cache", "key_index", "solves")}
        if file_index is not None:
            kw["file_index"] = np.asarray(file_index)
        kw["bands"] = [(new_of_old[np.asarray(fr, np.int64)], res) for fr, res in self.bands]
        kw["band_cache"] = self.band_cache  # keyed by band index and grid: still valid
        kw["solves"] = [(new_of_old[np.asarray(r, np.int64)], res) for r, res in self.solves]
        return G2Fits(**kw)

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


def _strs(a: Any) -> list[str]:
    return [getattr(x, "value", str(x)) for x in a]


def fill_lsq(out: G2Fits, rows: np.ndarray, res: Any) -> None:
    """Rows ``rows`` of ``out`` from one least-squares solve (``G2FitResult`` of
    len(rows) curves, in order): the one place its fields enter the table. The solve
    is kept (:attr:`G2Fits.solves`) so a Bayesian fit starts from it, not from a
    second solve."""
    out.solves.append((np.asarray(rows, np.int64), res))
    for n in out.params:
        out.params[n][rows] = res.params[n]
        out.errors[n][rows] = res.errors[n]
    out.status[rows] = _strs(res.status)
    out.detail[rows] = list(res.detail)
    out.chi2_red[rows] = res.chi2_red
    out.tau_lower_limit[rows], out.tau_upper_limit[rows] = (res.tau_lower_limit,
                                                            res.tau_upper_limit)
    out.errors_scaled[rows] = res.errors_scaled
    out.models[rows] = res.model_names()
    out.limit_name[rows] = res.limit_name
    out.n_points[rows] = res.n_points
    out.delta_chi2[rows] = res.delta_chi2
    for k in ("tau_mean", "tau_mean_err", "runs_z", "delta_aicc", "decay_left"):
        getattr(out, k)[rows] = getattr(res, k)
    out.fixed.update(res.fixed)
    for src, dst in ((res.interval, out.interval), (res.interval2, out.interval2)):
        for n, iv in src.items():
            dst.setdefault(n, np.full((out.n_curves, 2), np.nan))[rows] = iv
    for n, w in res.window.items():
        out.window.setdefault(n, np.full(out.n_curves, np.nan))[rows] = w
    for m, a in res.aicc.items():
        out.aicc.setdefault(m, np.full(out.n_curves, np.nan))[rows] = a


def fill_bayes(out: G2Fits, rows: np.ndarray, init: Any, res: Any) -> None:
    """Rows ``rows`` of ``out`` from one file's NUTS run ``res`` started at the least
    squares ``init``: posterior mean and sd where sampled, the least squares' numbers
    and status where not (``res.sampled``)."""
    lsq_only = ~np.asarray(res.sampled, bool)
    for n in out.params:
        out.params[n][rows] = np.where(lsq_only, init.params[n], res.mean[n])
        out.errors[n][rows] = np.where(lsq_only, init.errors[n], res.std[n])
    out.models[rows] = res.model_names()
    out.limit_name[rows] = res.limit_name
    out.delta_aicc[rows] = init.delta_aicc
    out.status_lsq[rows] = _strs(init.status)
    out.status[rows] = _strs(res.status)
    out.detail[rows] = list(res.detail)
    out.chi2_red[rows] = res.chi2_red
    out.tau_lower_limit[rows], out.tau_upper_limit[rows] = (res.tau_lower_limit,
                                                            res.tau_upper_limit)
    d = res.diagnostics()
    diag = out.diagnostics
    diag["r_hat"][rows] = d["r_hat"]
    diag["ess"][rows] = np.fmin(d["ess_bulk"], d["ess_tail"])
    diag["divergences"][rows] = np.where(lsq_only, np.nan, d["divergences"])
    diag["bfmi"][rows] = d["bfmi"]
    diag["noise_scale"][rows] = res.noise_scale
    diag["draws"][rows] = np.where(lsq_only, np.nan, res.draws_per_chain)
    out.bands.append((rows, res))


def lsq_start(fits: G2Fits, rows: np.ndarray) -> Any | None:
    """The least-squares solve result of exactly ``rows`` (in order), from the solves
    behind ``fits``; None when the rows were not solved together."""
    rows = np.asarray(rows, np.int64)
    for r, res in fits.solves:
        r = np.asarray(r, np.int64)
        at = {int(x): k for k, x in enumerate(r) if x >= 0}
        if all(int(x) in at for x in rows):
            return res.select(np.array([at[int(x)] for x in rows], np.int64))
    return None
