"""Batched fits of the shown g2 curves: least squares and NUTS over every curve of
every block, with files of the same delays in one solve (no Qt).

A curve's result does not depend on which other curves are fitted with it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xpcsviewer.fitting.blocks import G2Block, G2Fits, g2_tau_grid

__all__ = ["apply_overrides", "fit_g2_blocks", "fit_g2_blocks_bayes"]


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
    device: str = "auto",
) -> G2Fits:
    """NUTS posterior of every curve, one sampling run per file and model (checks
    ``cancel`` between blocks), chains on the host CPU devices unless ``device`` asks
    for the GPU (:func:`~xpcsviewer.fitting.bayes_devices.nuts_devices`).

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
            device=device,
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
