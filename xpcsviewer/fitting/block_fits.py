"""Batched fits of the shown g2 curves: least squares and NUTS over every curve of
every block, with files of the same delays in one solve (no Qt).

A curve's result does not depend on which other curves are fitted with it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xpcsviewer.fitting.blocks import G2Block, g2_tau_grid
from xpcsviewer.fitting.fit_table import G2Fits, fill_bayes, fill_lsq
from xpcsviewer.fitting.spec import FitSpec, SamplerSpec

__all__ = ["apply_overrides", "empty_table", "fit_curves", "fit_g2_blocks", "fit_g2_blocks_bayes"]


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


def _table(blocks: list[G2Block], model: str, method: str,
           t_range: tuple[float, float] | None) -> G2Fits:
    # every per-curve field the method fills, allocated "failed / not fitted"
    from xpcsviewer.fitting import model_param_names

    names = model_param_names(model)
    n = sum(b.n_bins for b in blocks)

    def nan() -> np.ndarray:
        return np.full(n, np.nan)

    def strs(v: str) -> np.ndarray:
        return np.array([v] * n, dtype=object)

    out = G2Fits(
        model=str(model),
        method=method,
        file_index=np.concatenate([np.full(b.n_bins, b.file_index) for b in blocks]
                                  ).astype(np.int64) if blocks else np.zeros(0, np.int64),
        file_labels=[b.label for b in blocks for _ in range(b.n_bins)],
        columns=np.concatenate([b.columns for b in blocks]) if blocks
        else np.zeros(0, np.int64),
        q=np.concatenate([b.q for b in blocks]) if blocks else np.zeros(0),
        phi=np.concatenate([b.phi for b in blocks]) if blocks else np.zeros(0),
        bin_labels=[lab for b in blocks for lab in b.bin_labels],
        params={k: nan() for k in names},
        errors={k: nan() for k in names},
        status=strs("failed"),
        chi2_red=nan(),
        dt=np.concatenate([np.full(b.n_bins, b.t0) for b in blocks]) if blocks
        else np.zeros(0),
        t_range=t_range,
        curve_keys=[b.curve_key(j) for b in blocks for j in range(b.n_bins)],
        detail=strs("not fitted"),
        models=strs(model),
        limit_name=strs(""),
        delta_aicc=nan(),
    )
    if method == "lsq":
        out.interval = {k: np.full((n, 2), np.nan) for k in names if k.startswith("tau")}
        for k in ("tau_mean", "tau_mean_err", "runs_z", "decay_left", "delta_chi2"):
            setattr(out, k, nan())
        out.n_points = np.zeros(n, np.int64)
    else:
        out.status_lsq = strs("failed")
        out.diagnostics = {k: nan() for k in ("r_hat", "ess", "divergences", "bfmi",
                                               "noise_scale", "draws")}
    return out


def empty_table(blocks: list[G2Block], model: str, method: str,
                t_range: tuple[float, float] | None) -> G2Fits:
    """A table of every curve of ``blocks`` for ``method`` ("lsq" / "bayes"), each
    row "failed / not fitted" until filled."""
    return _table(blocks, model, method, t_range)


def _rows(blocks: list[G2Block], g: list[int]) -> np.ndarray:
    offsets = np.cumsum([0] + [b.n_bins for b in blocks])
    return np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in g]).astype(np.int64)


def fit_curves(blocks: list[G2Block], fit: FitSpec, sampler: SamplerSpec | None = None,
               *, start: G2Fits | None = None, progress: Any = None, cancel: Any = None,
               backend: Any = None, device: str | None = None) -> G2Fits:
    """Fit every curve of ``blocks``: the one fit loop of the GUI, the command line,
    live and series.

    Least squares (``sampler`` None): files with the same delays share one batched
    solve. Bayesian (``sampler`` given): one NUTS run per file, started from the
    least squares ``start`` (a table of these blocks from this function; solved here
    when None). A curve's result does not depend on which other curves are fitted
    with it.
    """
    if sampler is None:
        return _fit_lsq(blocks, fit, progress, cancel, backend, device)
    return _fit_bayes(blocks, fit, sampler, start, progress, cancel)


def _fit_lsq(blocks, fit, progress, cancel, backend, device) -> G2Fits:
    from xpcsviewer.fitting import averaging_factors, fit_g2
    from xpcsviewer.progress import report

    model = fit.model
    groups = _group_blocks(blocks)
    out = _table(blocks, model, "lsq", fit.t_range)
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
        kw: dict[str, Any] = {"backend": backend} if backend is not None else {}
        if device is not None:
            kw["device"] = device
        specs = apply_overrides(model, ref.tau, y, v, fit.overrides) or fit.params
        res = fit_g2(ref.tau, y, e, v, model=model, params=specs, t_range=fit.t_range,
                     aux=aux, cancel=cancel, noise=_noise([blocks[i] for i in g]), **kw)
        fill_lsq(out, _rows(blocks, g), res)
        files_done += len({blocks[i].file_index for i in g})
    offsets = np.cumsum([0] + [b.n_bins for b in blocks])
    failed = {b.file_index for b, lo, hi in zip(blocks, offsets[:-1], offsets[1:], strict=True)
              if hi > lo and all(s == "failed" for s in out.status[lo:hi])}
    report(progress, cancel, len(groups), len(groups),
           f"{n_files}/{n_files} files, {len(failed)} failed")
    if model != "auto":
        out.models = None
    return out


def _noise(group: list[G2Block]) -> np.ndarray | None:
    """(B, K, T) the blocks' parts (NaN where a block has fewer or none), or None."""
    if all(b.noise is None for b in group):
        return None
    k = max(0 if b.noise is None else b.noise.shape[0] for b in group)
    out = []
    for b in group:
        n = np.full((b.n_bins, k, b.tau.size), np.nan)
        if b.noise is not None:
            n[:, :b.noise.shape[0]] = np.transpose(b.noise, (2, 0, 1))
        out.append(n)
    return np.concatenate(out, axis=0)


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
    """Least squares of every curve of every block: :func:`fit_curves` with a
    :class:`FitSpec` of these settings."""
    return fit_curves(blocks, FitSpec(model, params, overrides, t_range),
                      progress=progress, cancel=cancel, backend=backend)


def _fit_bayes(blocks, fit, sampler, start, progress, cancel) -> G2Fits:
    from xpcsviewer.fitting import averaging_factors
    from xpcsviewer.fitting.bayes import fit_g2_bayes
    from xpcsviewer.fitting.fit_table import lsq_start

    model = fit.model
    out = _table(blocks, model, "bayes", fit.t_range)
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
        rows = np.arange(offsets[k], offsets[k + 1])
        specs = apply_overrides(model, b.tau, b.g2.T, fv, fit.overrides) or fit.params
        init = None if start is None else lsq_start(start, rows)
        if init is None:
            one = fit_curves([b], fit, cancel=cancel)
            init = lsq_start(one, np.arange(b.n_bins))
        res = fit_g2_bayes(b.tau, b.g2.T, b.g2_err.T, fv,
                           fit=FitSpec(model, specs, None, fit.t_range), sampler=sampler,
                           init=init, aux=aux, progress=sub_progress, cancel=cancel)
        fill_bayes(out, rows, init, res)
    if model != "auto":
        out.models = None
    for k, b in enumerate(blocks):  # the bands the g2 tab draws, made here in the worker
        out.band(np.arange(offsets[k], offsets[k + 1]), g2_tau_grid(b.tau))
    return out


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
    device: str = "auto",
) -> G2Fits:
    """NUTS posterior of every curve, one sampling run per file and model (checks
    ``cancel`` between blocks), chains on the host CPU devices unless ``device`` asks
    for the GPU (:func:`~xpcsviewer.fitting.bayes_devices.nuts_devices`):
    :func:`fit_curves` with these settings.

    ``auto`` samples each curve with the model the least squares chose for it. Only
    curves the least squares finds decaying are sampled
    (:data:`~xpcsviewer.fitting.bayes.SAMPLED_LSQ`); the others keep the least-squares
    status and numbers ("not sampled: ..."). Values are posterior means, errors
    posterior standard deviations; ``status`` comes from the sampler gates (r-hat, ESS,
    divergences, BFMI) and the physical checks, ``diagnostics`` holds the per-curve
    figures behind it.
    """
    return fit_curves(blocks, FitSpec(model, params, overrides, t_range),
                      SamplerSpec(num_warmup=num_warmup, num_samples=num_samples,
                                  num_chains=num_chains, seed=seed, device=device),
                      progress=progress, cancel=cancel)
