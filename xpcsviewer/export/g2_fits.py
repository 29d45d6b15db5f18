"""Fits of the shown g2 curves for the g2 and Diffusion views and their exports (no Qt).

Least squares (:func:`fit_g2_blocks`) and NUTS (:func:`fit_g2_blocks_bayes`) over every
shown curve of every file, with the statuses of :mod:`xpcsviewer.fitting.status`, their
reasons, limits and (NUTS) sampler diagnostics, flat over curves in :class:`G2Fits`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xpcsviewer.export.g2_data import G2Block, g2_tau_grid

__all__ = [
    "STATUS_ORDER",
    "G2Fits",
    "apply_overrides",
    "fit_g2_blocks",
    "fit_g2_blocks_bayes",
    "fits_table",
    "fits_to_dict",
]

#: Table order: what needs a look first.
STATUS_ORDER = ("converged", "unresolved", "at_bound", "misfit", "poor_fit", "no_decay",
                "failed")


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
        v, e = v.copy(), e.copy()
        st = np.asarray([str(x) for x in self.status])
        lim = np.isfinite(self.tau_lower_limit) | np.isfinite(self.tau_upper_limit)
        on = np.array([name == "tau_mean" or self._limit_on(b) == name
                       or (self.limit_name is None) for b in range(self.n_curves)], dtype=bool)
        drop = (st == "no_decay") | (st == "failed") | ((st == "unresolved") & lim & on)
        v[drop], e[drop] = np.nan, np.nan
        return v, e

    def reported(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(values, errors) that may be quoted: no relaxation time without a decay or
        where only a limit exists on it (see ``G2FitResult.reported``)."""
        if name.startswith("tau"):
            return self._quotable(name, self.params[name], self.errors[name])
        return self.params[name].copy(), self.errors[name].copy()

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


def _group_blocks(blocks: list[G2Block]) -> list[list[int]]:
    # Files with identical delays share one batched solve.
    groups: list[list[int]] = []
    for i, b in enumerate(blocks):
        for g in groups:
            ref = blocks[g[0]]
            if (
                ref.tau.shape == b.tau.shape
                and np.array_equal(ref.tau, b.tau)
                and ref.t0 == b.t0
            ):
                g.append(i)
                break
        else:
            groups.append([i])
    return groups


def apply_overrides(
    model: str,
    tau: np.ndarray,
    g2: np.ndarray,
    valid: np.ndarray,
    overrides: dict | None,
) -> dict | None:
    """Per-curve data-driven ParamSpecs with the user's fields replaced.

    Parameters
    ----------
    model : str
    tau : (T,) s
    g2, valid : (B, T)
    overrides : dict name -> {"value", "lower", "upper", "fixed"} (any subset)
        A fixed parameter is held at ``value`` (the value shown to the user), never at
        a bound.

    Returns
    -------
    dict name -> ParamSpec, or None when there is nothing to override
    """
    if not overrides:
        return None
    from dataclasses import replace

    from xpcsviewer.fitting import default_params

    specs = default_params(model, tau, g2, valid)
    for name, fields in overrides.items():
        if name not in specs:
            raise ValueError(f"model {model!r} has no parameter {name!r}")
        kw = {k: fields[k] for k in ("value", "lower", "upper", "fixed") if k in fields}
        if "fixed" in kw:
            kw["fixed"] = bool(kw["fixed"])
        specs[name] = replace(specs[name], **kw)
    return specs


def fit_g2_blocks(
    blocks: list[G2Block],
    model: str = "single",
    params: dict | None = None,
    t_range: tuple[float, float] | None = None,
    progress=None,
    cancel=None,
    backend: Any = None,
    overrides: dict | None = None,
) -> G2Fits:
    """Batched least-squares fit of every curve of every block.

    Blocks with the same delays are fitted together in one ``fit_g2`` call (usually all
    of them); ``params`` (name -> ParamSpec) applies to every curve; ``overrides``
    (see :func:`apply_overrides`) replaces single fields of the per-curve defaults.
    A curve's result does not depend on which other curves are fitted with it.

    Returns
    -------
    G2Fits
    """
    from xpcsviewer.fitting import averaging_factors, fit_g2, model_param_names
    from xpcsviewer.progress import report

    names = model_param_names(model)
    groups = _group_blocks(blocks)
    n_total = sum(b.n_bins for b in blocks)
    par = {n: np.full(n_total, np.nan) for n in names}
    err = {n: np.full(n_total, np.nan) for n in names}
    status = np.array(["failed"] * n_total, dtype=object)
    detail = np.array(["not fitted"] * n_total, dtype=object)
    chi2 = np.full(n_total, np.nan)
    lo_lim, hi_lim = np.full(n_total, np.nan), np.full(n_total, np.nan)
    scaled = np.zeros(n_total, bool)
    models = np.array([model] * n_total, dtype=object)
    limit_name = np.array([""] * n_total, dtype=object)
    interval = {n: np.full((n_total, 2), np.nan) for n in names if n.startswith("tau")}
    extra = {k: np.full(n_total, np.nan)
             for k in ("tau_mean", "tau_mean_err", "runs_z", "delta_aicc", "decay_left")}
    offsets = np.cumsum([0] + [b.n_bins for b in blocks])
    # the batch commands' wording (files done / total, failures): one solve fits
    # a whole group of files, so files complete a group at a time
    n_files = len({b.file_index for b in blocks})
    files_done = 0
    for gi, g in enumerate(groups):
        report(
            progress, cancel, gi, len(groups),
            f"{files_done}/{n_files} files: fitting {len({blocks[i].file_index for i in g})}",
        )
        ref = blocks[g[0]]
        y = np.concatenate([blocks[i].g2.T for i in g], axis=0)
        e = np.concatenate([blocks[i].g2_err.T for i in g], axis=0)
        v = np.concatenate([blocks[i].fit_valid.T for i in g], axis=0)
        aux = None
        if model in ("single_avgcorr", "auto"):  # auto: the averaged model is a candidate
            aux = (averaging_factors(ref.delay_frames), ref.t0)
        kw = {"backend": backend} if backend is not None else {}
        specs = apply_overrides(model, ref.tau, y, v, overrides) or params
        res = fit_g2(
            ref.tau,
            y,
            e,
            v,
            model=model,
            params=specs,
            t_range=t_range,
            aux=aux,
            cancel=cancel,
            **kw,
        )
        rows = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in g])
        for n in names:
            par[n][rows] = res.params[n]
            err[n][rows] = res.errors[n]
        status[rows] = [getattr(s, "value", str(s)) for s in res.status]
        detail[rows] = list(res.detail)
        chi2[rows] = res.chi2_red
        lo_lim[rows], hi_lim[rows] = res.tau_lower_limit, res.tau_upper_limit
        scaled[rows] = res.errors_scaled
        models[rows] = res.model_names()
        limit_name[rows] = res.limit_name
        for n, iv in res.interval.items():
            interval[n][rows] = iv
        for k in extra:
            extra[k][rows] = getattr(res, k)
        files_done += len({blocks[i].file_index for i in g})
    failed = {b.file_index for b, lo, hi in zip(blocks, offsets[:-1], offsets[1:], strict=True)
              if hi > lo and all(s == "failed" for s in status[lo:hi])}
    report(progress, cancel, len(groups), len(groups),
           f"{n_files}/{n_files} files, {len(failed)} failed")
    out = _assemble(blocks, model, "lsq", par, err, status, chi2, t_range)
    out.detail, out.tau_lower_limit, out.tau_upper_limit = detail, lo_lim, hi_lim
    out.errors_scaled = scaled
    out.models = models if model == "auto" else None
    out.limit_name, out.interval = limit_name, interval
    for k, v in extra.items():
        setattr(out, k, v)
    return out


def _assemble(
    blocks, model, method, par, err, status, chi2, t_range, bands=None
) -> G2Fits:
    return G2Fits(
        model=str(model),
        method=method,
        file_index=np.concatenate(
            [np.full(b.n_bins, b.file_index) for b in blocks]
        ).astype(np.int64)
        if blocks
        else np.zeros(0, np.int64),
        file_labels=[b.label for b in blocks for _ in range(b.n_bins)],
        columns=np.concatenate([b.columns for b in blocks])
        if blocks
        else np.zeros(0, np.int64),
        q=np.concatenate([b.q for b in blocks]) if blocks else np.zeros(0),
        phi=np.concatenate([b.phi for b in blocks]) if blocks else np.zeros(0),
        bin_labels=[lab for b in blocks for lab in b.bin_labels],
        params=par,
        errors=err,
        status=status,
        chi2_red=chi2,
        dt=np.concatenate([np.full(b.n_bins, b.t0) for b in blocks])
        if blocks
        else np.zeros(0),
        t_range=t_range,
        bands=list(bands or []),
        curve_keys=[b.curve_key(j) for b in blocks for j in range(b.n_bins)],
    )


def fit_g2_blocks_bayes(
    blocks: list[G2Block],
    model: str = "single",
    params: dict | None = None,
    t_range: tuple[float, float] | None = None,
    num_warmup: int = 300,
    num_samples: int = 500,
    num_chains: int = 2,
    seed: int = 0,
    progress=None,
    cancel=None,
    overrides: dict | None = None,
) -> G2Fits:
    """NUTS posterior of every curve, one sampling run per file and model (checks
    ``cancel`` between blocks).

    ``auto`` samples each curve with the model the least squares chose for it. Only
    curves the least squares finds decaying are sampled
    (:data:`~xpcsviewer.fitting.bayes.SAMPLED_LSQ`); the others keep the least-squares
    status and numbers ("not sampled: ..."). Values are posterior means, errors
    posterior standard deviations; ``status`` comes from the sampler gates (r-hat, ESS,
    divergences, BFMI) and the physical checks, ``diagnostics`` holds the per-curve
    figures behind it.
    """
    from xpcsviewer.fitting import averaging_factors, fit_g2, model_param_names
    from xpcsviewer.fitting.bayes import fit_g2_bayes

    names = model_param_names(model)
    n_total = sum(b.n_bins for b in blocks)
    par = {n: np.full(n_total, np.nan) for n in names}
    err = {n: np.full(n_total, np.nan) for n in names}
    status = np.array(["failed"] * n_total, dtype=object)
    detail = np.array(["not fitted"] * n_total, dtype=object)
    status_lsq = np.array(["failed"] * n_total, dtype=object)
    chi2 = np.full(n_total, np.nan)
    lo_lim, hi_lim = np.full(n_total, np.nan), np.full(n_total, np.nan)
    diag = {k: np.full(n_total, np.nan) for k in ("r_hat", "ess", "divergences", "bfmi",
                                                   "noise_scale", "draws")}
    models = np.array([model] * n_total, dtype=object)
    limit_name = np.array([""] * n_total, dtype=object)
    delta_aicc = np.full(n_total, np.nan)
    bands = []
    offsets = np.cumsum([0] + [b.n_bins for b in blocks])
    n_blocks = len(blocks)

    for k, b in enumerate(blocks):

        def sub_progress(done, total, msg="", _k=k, _b=b):
            if progress is not None:
                frac = done / total if total else 0.0
                progress(int(1000 * (_k + frac)), 1000 * n_blocks, f"{_b.label}: {msg}")

        aux = (  # auto: the averaged model is a candidate
            (averaging_factors(b.delay_frames), b.t0)
            if model in ("single_avgcorr", "auto")
            else None
        )
        fv = b.fit_valid.T
        specs = apply_overrides(model, b.tau, b.g2.T, fv, overrides) or params
        init = fit_g2(b.tau, b.g2.T, b.g2_err.T, fv, model=model, params=specs,
                      t_range=t_range, aux=aux, cancel=cancel)
        res = fit_g2_bayes(
            b.tau,
            b.g2.T,
            b.g2_err.T,
            fv,
            model=model,
            init=init,
            num_warmup=num_warmup,
            num_samples=num_samples,
            num_chains=num_chains,
            seed=seed,
            progress=sub_progress,
            cancel=cancel,
            params=specs,
            t_range=t_range,
            aux=aux,
        )
        rows = np.arange(offsets[k], offsets[k + 1])
        lsq_only = ~np.asarray(res.sampled, bool)  # keep the least squares' numbers
        for n in names:
            par[n][rows] = np.where(lsq_only, init.params[n], res.mean[n])
            err[n][rows] = np.where(lsq_only, init.errors[n], res.std[n])
        models[rows] = res.model_names()
        limit_name[rows] = res.limit_name
        delta_aicc[rows] = init.delta_aicc
        status[rows] = [getattr(x, "value", str(x)) for x in res.status]
        detail[rows] = list(res.detail)
        status_lsq[rows] = [getattr(x, "value", str(x)) for x in init.status]
        chi2[rows] = res.chi2_red
        lo_lim[rows], hi_lim[rows] = res.tau_lower_limit, res.tau_upper_limit
        d = res.diagnostics()
        diag["r_hat"][rows] = d["r_hat"]
        diag["ess"][rows] = np.fmin(d["ess_bulk"], d["ess_tail"])
        diag["divergences"][rows] = np.where(lsq_only, np.nan, d["divergences"])
        diag["bfmi"][rows] = d["bfmi"]
        diag["noise_scale"][rows] = res.noise_scale
        diag["draws"][rows] = np.where(lsq_only, np.nan, res.draws_per_chain)
        bands.append((rows, res))
    out = _assemble(blocks, model, "bayes", par, err, status, chi2, t_range, bands)
    out.detail, out.tau_lower_limit, out.tau_upper_limit = detail, lo_lim, hi_lim
    out.diagnostics, out.status_lsq = diag, status_lsq
    out.models = models if model == "auto" else None
    out.limit_name, out.delta_aicc = limit_name, delta_aicc
    for k, b in enumerate(blocks):  # the bands the g2 tab draws, made here in the worker
        out.band(np.arange(offsets[k], offsets[k + 1]), g2_tau_grid(b.tau))
    return out


def fits_table(fits: G2Fits) -> tuple[dict[str, np.ndarray], list[str]]:
    """CSV columns of a fit: status and its reason first, then file, bin, q, phi,
    value and error per parameter (relaxation times empty where only a limit exists),
    the limits, chi2 and, for NUTS, the sampler diagnostics."""
    from xpcsviewer.fitting import ERROR_SCALING

    cols: dict[str, np.ndarray] = {
        "status": fits.status,
        "status_detail": fits.detail,
        "model": fits.model_names(),
        "file": np.array(fits.file_labels, dtype=object),
        "bin": fits.columns + 1,
        "q_invA": fits.q,
        "phi_deg": fits.phi,
    }
    for n in fits.param_names:
        unit = "_s" if n.startswith("tau") else ""
        v, e = fits.reported(n)
        cols[f"{n}{unit}"] = v
        cols[f"{n}{unit}_err"] = e
        if n in fits.interval:  # 68 % profile interval where the value is quoted
            keep = np.isfinite(v)
            cols[f"{n}_lo{unit}"] = np.where(keep, fits.interval[n][:, 0], np.nan)
            cols[f"{n}_hi{unit}"] = np.where(keep, fits.interval[n][:, 1], np.nan)
    tm, tm_e = fits.relaxation_time()
    cols["tau_mean_s"], cols["tau_mean_s_err"] = tm, tm_e
    cols["tau_lower_limit_s"] = fits.tau_lower_limit
    cols["tau_upper_limit_s"] = fits.tau_upper_limit
    cols["chi2_red"] = fits.chi2_red
    for k in ("runs_z", "delta_aicc", "decay_left"):
        if getattr(fits, k) is not None:
            cols[k] = getattr(fits, k)
    if fits.diagnostics is not None:
        for k, v in fits.diagnostics.items():
            cols[k] = v
        if fits.status_lsq is not None:
            cols["status_lsq"] = fits.status_lsq
    if fits.curve_keys is not None:
        cols["path"] = np.array(fits.sources, dtype=object)  # labels can repeat
    from xpcsviewer.fitting.results import MEAN_TIME, RULES

    header = [
        f"g2 fit: model {fits.model}, method {fits.method}; tau in s, q in 1/A",
        f"t_range: {fits.t_range}",
        f"errors: {ERROR_SCALING}" if fits.method == "lsq" else
        "errors: posterior sd; likelihood sigma = g2_err x noise_scale",
        f"tau_mean: {MEAN_TIME}",
        f"rules: {RULES}",
    ]
    return cols, header


def fits_to_dict(fits: G2Fits) -> dict:
    """JSON-ready summary of a fit (one entry per curve)."""

    def num(x: float) -> float | None:
        x = float(x)
        return x if np.isfinite(x) else None

    from xpcsviewer.fitting.models import model_param_names

    rows = []
    rep = {n: fits.reported(n) for n in fits.param_names}
    tm, tm_e = fits.relaxation_time()

    def opt(key: str, b: int) -> float | None:
        a = getattr(fits, key)
        return None if a is None else num(a[b])

    for b in range(fits.n_curves):
        own = model_param_names(fits.model_of(b))
        row = {
            "file": fits.file_labels[b],
            "path": fits.sources[b] or None,
            "bin": int(fits.columns[b]) + 1,
            "q": float(fits.q[b]),
            "phi": float(fits.phi[b]),
            "label": fits.bin_labels[b],
            "model": fits.model_of(b),
            "status": str(fits.status[b]),
            "status_detail": str(fits.detail[b]),
            "limit": fits.limit_text(b) or None,
            "params": {n: num(rep[n][0][b]) for n in own},
            "errors": {n: num(rep[n][1][b]) for n in own},
            "intervals": {n: [num(x) if np.isfinite(rep[n][0][b]) else None
                              for x in fits.interval[n][b]]
                          for n in own if n in fits.interval},
            "tau_mean": num(tm[b]),
            "tau_mean_err": num(tm_e[b]),
            "chi2_red": num(fits.chi2_red[b]),
            "runs_z": opt("runs_z", b),
            "delta_aicc": opt("delta_aicc", b),
            "decay_left": opt("decay_left", b),
        }
        if fits.diagnostics is not None:
            row["diagnostics"] = {k: num(v[b]) for k, v in fits.diagnostics.items()}
            row["status_lsq"] = str(fits.status_lsq[b])
        rows.append(row)
    from xpcsviewer.fitting.results import MEAN_TIME, RULES

    return {
        "model": fits.model,
        "method": fits.method,
        "t_range": list(fits.t_range) if fits.t_range else None,
        "units": {"tau": "s", "q": "1/A"},
        "tau_mean": MEAN_TIME,
        "rules": RULES,
        "curves": rows,
    }
