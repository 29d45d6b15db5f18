"""Data preparation for the g2, Diffusion and Two-Time views (pure NumPy, no Qt/JAX).

The GUI tabs and the exported figures both call these functions, so the screen and
the publication figure show the same numbers.

Units: tau and t in s, q in 1/Angstrom, Gamma in 1/s, D in Angstrom^2/s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "DiffusionPoints",
    "G2Block",
    "G2Fits",
    "apply_overrides",
    "c2_time_axis",
    "diffusion_points",
    "fit_g2_blocks",
    "fit_g2_blocks_bayes",
    "fits_table",
    "g2_blocks",
    "g2_data_columns",
    "g2_points",
    "g2_tau_grid",
    "robust_ylim",
    "twotime_g2_curves",
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

    @property
    def n_bins(self) -> int:
        """B."""
        return int(self.columns.size)


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
        Keep at most this many bins per file (the first ones in q order).

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
            )
        )
    return out


def g2_points(block: G2Block, j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The drawable points of curve ``j`` of a block: (tau, g2, err), invalid removed."""
    ok = block.valid[:, j]
    return block.tau[ok], block.g2[ok, j], block.g2_err[ok, j]


def robust_ylim(values: list[np.ndarray], pad: float = 0.05) -> tuple[float, float] | None:
    """Y range for a g2 panel that isolated wild points cannot blow up.

    Real files hold isolated points far off the curve (g2 up to ~300 where a bin
    had no photons); a min/max range would flatten every curve. Points farther than
    a fence ``f = max(5 IQR, 3 (p95 - p5), 1)`` outside ``[p5, p95]`` are left out
    of the range (not of the data); the range is the min/max of the rest, widened
    by ``pad`` of its span on each side. None when nothing is finite.
    """
    v = np.concatenate([np.asarray(x, dtype=np.float64).ravel() for x in values] or [np.zeros(0)])
    v = v[np.isfinite(v)]
    if v.size == 0:
        return None
    p5, q1, q3, p95 = np.percentile(v, [5, 25, 75, 95])
    # A genuine g2 stays within ~1 of its baseline (contrast <= 1): a fence of at least
    # 1 never cuts a real curve, while the wild points sit tens to hundreds away.
    fence = max(5.0 * (q3 - q1), 3.0 * (p95 - p5), 1.0)
    keep = v[(v >= p5 - fence) & (v <= p95 + fence)]
    a, b = float(keep.min()), float(keep.max())
    span = b - a if b > a else max(abs(a) * 0.05, 1e-3)
    return a - pad * span, b + pad * span


def g2_tau_grid(tau: np.ndarray, n: int = 128) -> np.ndarray:
    """Log-spaced delays for fit curves over the data range padded by half a decade each side."""
    t = np.asarray(tau, dtype=np.float64)
    t = t[np.isfinite(t) & (t > 0)]
    if t.size == 0:
        return np.zeros(0)
    lo, hi = np.log10(t.min()) - 0.5, np.log10(t.max()) + 0.5
    return np.logspace(lo, hi, int(n))


def g2_data_columns(blocks: list[G2Block]) -> tuple[dict[str, np.ndarray], list[str]]:
    """CSV columns of the shown g2 data: per file ``tau``, then g2 and err per bin.

    Invalid points are written as NaN.
    """
    cols: dict[str, np.ndarray] = {}
    header = ["g2 data: tau in s; g2 and err dimensionless; invalid points are nan"]
    for b in blocks:
        cols[f"{b.label}:tau_s"] = b.tau
        for j in range(b.n_bins):
            name = f"{b.label}:bin{b.columns[j] + 1}"
            cols[f"{name}:g2"] = np.where(b.valid[:, j], b.g2[:, j], np.nan)
            cols[f"{name}:err"] = np.where(b.valid[:, j], b.g2_err[:, j], np.nan)
        header.append(
            f"{b.label}: "
            + "; ".join(
                f"bin{c + 1} = {lab}"
                for c, lab in zip(b.columns, b.bin_labels, strict=True)
            )
        )
    return cols, header


# ------------------------------------------------------------------------- fits
@dataclass
class G2Fits:
    """Fits of every shown curve (all files, all bins in range), flat over curves.

    Attributes
    ----------
    model : str
        g2 model name (``single``, ``stretched``, ``double``, ``single_avgcorr``).
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
        ``converged`` or the reason it failed (``max_iter``, ``at_bound``, ...);
        Bayesian fits: ``converged`` or ``not_converged``.
    chi2_red : (B,) float64
    dt : (B,) float64
        Frame time per curve (for the averaging-corrected model).
    t_range : (lo, hi) s or None
    bands : list of (file rows (k,), BayesFitResult) for the posterior band
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

    def rows_of(self, file_index: int) -> np.ndarray:
        """Curve rows of file ``file_index``."""
        return np.flatnonzero(self.file_index == file_index)

    def find(self, file_index: int, column: int) -> int | None:
        """Row of (file, g2 column), or None."""
        hit = np.flatnonzero((self.file_index == file_index) & (self.columns == column))
        return int(hit[0]) if hit.size else None

    def curve(self, rows: Any, tau_grid: np.ndarray) -> np.ndarray:
        """Fitted g2 of ``rows`` on ``tau_grid`` (G,) -> (len(rows), G); NaN rows for no fit.

        The averaging-corrected model is drawn without the multi-tau correction on a
        smooth grid (m = 1), as ``G2FitResult.curve`` does.
        """
        from xpcsviewer.fitting import evaluate_model

        rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
        t = np.asarray(tau_grid, dtype=np.float64)[None, :]
        p = tuple(self.params[n][rows][:, None] for n in self.param_names)
        aux = None
        if self.model == "single_avgcorr":
            aux = (np.ones_like(t), self.dt[rows][:, None])
        with np.errstate(all="ignore"):
            out = np.asarray(
                evaluate_model(self.model, t, p, aux, np), dtype=np.float64
            )
        return np.broadcast_to(out, (rows.size, t.shape[1])).copy()

    def band(self, rows: Any, tau_grid: np.ndarray) -> np.ndarray | None:
        """Posterior band (lower, median, upper) of ``rows`` -> (len(rows), 3, G); None for LSQ."""
        if not self.bands:
            return None
        rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
        out = np.full((rows.size, 3, np.size(tau_grid)), np.nan)
        for file_rows, res in self.bands:
            file_rows = np.asarray(file_rows)
            sel = [k for k, r in enumerate(rows) if r in file_rows]
            if not sel:
                continue
            b = res.band(tau_grid)  # (Bf, 3, G)
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
    status = np.array(["no_data"] * n_total, dtype=object)
    chi2 = np.full(n_total, np.nan)
    offsets = np.cumsum([0] + [b.n_bins for b in blocks])
    for gi, g in enumerate(groups):
        report(
            progress, cancel, gi, len(groups), f"fitting group {gi + 1}/{len(groups)}"
        )
        ref = blocks[g[0]]
        y = np.concatenate([blocks[i].g2.T for i in g], axis=0)
        e = np.concatenate([blocks[i].g2_err.T for i in g], axis=0)
        v = np.concatenate([blocks[i].valid.T for i in g], axis=0)
        aux = None
        if model == "single_avgcorr":
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
        chi2[rows] = res.chi2_red
    report(progress, cancel, len(groups), len(groups), "done")
    return _assemble(blocks, model, "lsq", par, err, status, chi2, t_range)


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
    """NUTS posterior of every curve, one sampling run per file (checks ``cancel`` between blocks).

    Values are posterior means, errors posterior standard deviations; ``status`` is
    ``converged`` when NumPyro's gates pass (r-hat, ESS, divergences, BFMI).
    """
    from xpcsviewer.fitting import (
        averaging_factors,
        evaluate_model,
        fit_g2_bayes,
        model_param_names,
    )

    names = model_param_names(model)
    n_total = sum(b.n_bins for b in blocks)
    par = {n: np.full(n_total, np.nan) for n in names}
    err = {n: np.full(n_total, np.nan) for n in names}
    status = np.array(["no_data"] * n_total, dtype=object)
    chi2 = np.full(n_total, np.nan)
    bands = []
    offsets = np.cumsum([0] + [b.n_bins for b in blocks])
    n_blocks = len(blocks)

    for k, b in enumerate(blocks):

        def sub_progress(done, total, msg="", _k=k, _b=b):
            if progress is not None:
                frac = done / total if total else 0.0
                progress(int(1000 * (_k + frac)), 1000 * n_blocks, f"{_b.label}: {msg}")

        aux = (
            (averaging_factors(b.delay_frames), b.t0)
            if model == "single_avgcorr"
            else None
        )
        specs = apply_overrides(model, b.tau, b.g2.T, b.valid.T, overrides) or params
        res = fit_g2_bayes(
            b.tau,
            b.g2.T,
            b.g2_err.T,
            b.valid.T,
            model=model,
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
        for n in names:
            par[n][rows] = np.asarray(res.mean[n], dtype=np.float64)
            err[n][rows] = np.asarray(res.std[n], dtype=np.float64)
        status[rows] = [
            "converged" if c else "not_converged" for c in np.asarray(res.converged)
        ]
        # chi^2 of the posterior-mean curve, for comparison with the least squares.
        p = tuple(np.asarray(res.mean[n], float)[:, None] for n in names)
        with np.errstate(all="ignore"):
            model_y = evaluate_model(model, b.tau[None, :], p, aux, np)
            m = b.valid.T.copy()
            if t_range is not None:
                lo, hi = sorted(t_range)
                m &= ((b.tau >= lo) & (b.tau <= hi))[None, :]
            sig = np.where(b.g2_err.T > 1e-6, b.g2_err.T, np.nan)
            r2 = np.where(m, ((b.g2.T - model_y) / sig) ** 2, 0.0)
            dof = m.sum(1) - sum(1 for n in names if not res.fixed.get(n, False))
            chi2[rows] = np.where(
                dof > 0, np.nansum(r2, 1) / np.maximum(dof, 1), np.nan
            )
        bands.append((rows, res))
    return _assemble(blocks, model, "bayes", par, err, status, chi2, t_range, bands)


def fits_table(fits: G2Fits) -> tuple[dict[str, np.ndarray], list[str]]:
    """CSV columns of a fit: file, bin, q, phi, value and error per parameter, chi2, status."""
    cols: dict[str, np.ndarray] = {
        "file": np.array(fits.file_labels, dtype=object),
        "bin": fits.columns + 1,
        "q_invA": fits.q,
        "phi_deg": fits.phi,
    }
    for n in fits.param_names:
        unit = "_s" if n.startswith("tau") else ""
        cols[f"{n}{unit}"] = fits.params[n]
        cols[f"{n}{unit}_err"] = fits.errors[n]
    cols["chi2_red"] = fits.chi2_red
    cols["status"] = fits.status
    header = [
        f"g2 fit: model {fits.model}, method {fits.method}; tau in s, q in 1/A",
        f"t_range: {fits.t_range}",
    ]
    return cols, header


def fits_to_dict(fits: G2Fits) -> dict:
    """JSON-ready summary of a fit (one entry per curve)."""
    rows = []
    for b in range(fits.n_curves):
        rows.append(
            {
                "file": fits.file_labels[b],
                "bin": int(fits.columns[b]) + 1,
                "q": float(fits.q[b]),
                "phi": float(fits.phi[b]),
                "label": fits.bin_labels[b],
                "params": {n: float(fits.params[n][b]) for n in fits.param_names},
                "errors": {n: float(fits.errors[n][b]) for n in fits.param_names},
                "chi2_red": float(fits.chi2_red[b]),
                "status": str(fits.status[b]),
            }
        )
    return {
        "model": fits.model,
        "method": fits.method,
        "t_range": list(fits.t_range) if fits.t_range else None,
        "units": {"tau": "s", "q": "1/A"},
        "curves": rows,
    }


__all__.append("fits_to_dict")


# -------------------------------------------------------------------- diffusion
@dataclass(frozen=True)
class DiffusionPoints:
    """tau (or Gamma) vs q of one file from converged fits.

    Attributes
    ----------
    file_index : int
    label : str
    q : (n,) float64
    y, y_err : (n,) float64
        tau (s) or Gamma = 1/tau (1/s).
    rows : (n,) int
        Rows in the ``G2Fits`` used.
    n_dropped : int
        Fits left out (not converged or non-finite).
    """

    file_index: int
    label: str
    q: np.ndarray
    y: np.ndarray
    y_err: np.ndarray
    rows: np.ndarray
    n_dropped: int


def _tau_name(fits: G2Fits) -> str:
    return "tau" if "tau" in fits.params else "tau1"


def diffusion_points(fits: G2Fits, quantity: str = "tau") -> list[DiffusionPoints]:
    """Per-file tau(q) or Gamma(q) from a fit; failed fits are dropped (counted).

    Parameters
    ----------
    fits : G2Fits
    quantity : {"tau", "gamma"}
        Gamma = 1/tau with error tau_err / tau^2.
    """
    if quantity not in ("tau", "gamma"):
        raise ValueError(f"quantity must be 'tau' or 'gamma', got {quantity!r}")
    name = _tau_name(fits)
    out = []
    for fi in np.unique(fits.file_index):
        rows = fits.rows_of(int(fi))
        t = fits.params[name][rows]
        te = fits.errors[name][rows]
        ok = fits.ok[rows] & np.isfinite(t) & (t > 0)
        r = rows[ok]
        tau, tau_err = t[ok], te[ok]
        if quantity == "gamma":
            y, ye = 1.0 / tau, tau_err / tau**2
        else:
            y, ye = tau, tau_err
        out.append(
            DiffusionPoints(
                int(fi),
                fits.file_labels[rows[0]],
                fits.q[r],
                y,
                ye,
                r,
                int((~ok).sum()),
            )
        )
    return out


# ---------------------------------------------------------------------- twotime
def c2_time_axis(n: int, t0: float) -> np.ndarray:
    """Times (s) of the rows/columns of an (n, n) C2 view whose step is ``t0`` (already x stride)."""
    return np.arange(int(n), dtype=np.float64) * float(t0)


def twotime_g2_curves(
    twotime: Any, index: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """g2 from C2 stored in the file for processed bin ``index``.

    Returns
    -------
    (t_full (N-1,), g2_full (N-1,), t_seg (L-1,), g2_seg (5, L-1)) or None
        Delays k = 1.. times the per-analysis t0 (the k = 0 point is the shot-noise
        spike and is not drawn). None when the file stores no g2 from C2.
    """
    from xpcsviewer.backends import ensure_numpy

    if twotime is None or twotime.g2_full is None:
        return None
    full = np.asarray(ensure_numpy(twotime.g2_full), dtype=np.float64)
    if not 0 <= index < full.shape[0]:
        raise IndexError(f"processed bin index {index} outside 0..{full.shape[0] - 1}")
    g = full[index]
    t0 = float(twotime.t0)
    t_full = np.arange(1, g.size) * t0
    seg = None
    if twotime.g2_segments is not None:
        seg = np.asarray(ensure_numpy(twotime.g2_segments), dtype=np.float64)[index]
    if seg is None or seg.ndim != 2 or seg.shape[-1] < 2:
        return t_full, g[1:], np.zeros(0), np.zeros((0, 0))
    t_seg = np.arange(1, seg.shape[-1]) * t0
    return t_full, g[1:], t_seg, seg[:, 1:]
