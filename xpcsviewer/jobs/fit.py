"""Fit result files: read each file's multi-tau g2, fit it, tabulate the record.

The file job behind ``xpcsviewer fit`` and the Series and Live fits
(:mod:`xpcsviewer.jobs.fitfile`): a chunk of files is one batch task, fitted by the
one fit loop (:func:`xpcsviewer.fitting.block_fits.fit_curves`, as the g2 tab fits),
in which a curve's fit does not depend on the other curves.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# NUTS settings of ``--bayes`` (fit_g2_bayes's defaults, named for the progress text).
BAYES_WARMUP, BAYES_SAMPLES, BAYES_CHAINS = 500, 1000, 4
# Progress units per file: the bar moves within a file, not only when one is done.
UNITS = 1000
# Shares of a file's units (measured orders): reading and least squares about
# equal; with --bayes the sampling (bins x chains x draws) takes nearly all.
_SHARES = {False: (0.5, 0.5, 0.0), True: (0.02, 0.03, 0.95)}  # read, lsq, sampling
# Files per task, the same in-process and on Dask: one batched solve per chunk
# amortises JAX's per-call cost, and a Dask task of 32 files (~0.6 s) its per-task cost.
FILES_PER_TASK = 32


def _load(path: str, q_range: tuple[float, float] | None,
          include_suspect: bool = False) -> dict[str, Any]:
    from xpcsviewer.compute.effective_q import file_effective_q
    from xpcsviewer.io import XpcsFileError, read_result
    from xpcsviewer.io.errors import display_path
    from xpcsviewer.io.results.pixel_q import read_effective_q_inputs

    res = read_result(path)
    mt = res.multitau
    if mt is None:
        raise XpcsFileError(path, "no multi-tau g2 to fit", dataset="/xpcs/multitau/normalized_g2",
                            expected="a multitau result file")
    q = np.asarray(res.qmap.dynamic_q, dtype=np.float64)
    phi = np.asarray(res.qmap.dynamic_phi, dtype=np.float64)
    cols = np.arange(q.size)
    if q_range is not None:
        lo, hi = sorted(q_range)
        cols = cols[(q >= lo) & (q <= hi)]
        if cols.size == 0:  # nothing to fit: the option, not the file, is at fault
            from xpcsviewer.batch import UsageError

            raise UsageError(
                f"{display_path(path)}: --q-range {lo:g} {hi:g} selects no q-bin "
                f"(its q-bins span {np.nanmin(q):.4g} to {np.nanmax(q):.4g} 1/\u00c5)")
    valid = np.asarray(mt.valid if include_suspect else mt.fit_mask, dtype=bool)
    return {
        "path": display_path(path),
        "bins": cols + 1,  # the file's own 1-based dynamic bin numbers
        "q": q[cols],
        "phi": phi[cols],
        "tau": np.asarray(mt.tau, dtype=np.float64),
        "delay_frames": np.asarray(mt.delay_frames, dtype=np.float64),
        "t0": float(mt.t0_eff),
        "g2": np.asarray(mt.g2, dtype=np.float64)[:, cols].T,
        "g2_err": np.asarray(mt.g2_err, dtype=np.float64)[:, cols].T,
        "valid": valid[:, cols].T,
        "suspect_excluded": int((np.asarray(mt.valid) & ~valid)[:, cols].sum()),
        "sample": dict(res.sample),
        "sample_units": dict(res.sample_units),
        "effective_q": file_effective_q(read_effective_q_inputs(path, res.qmap)),
    }


def _radius(verdict: Any, d: dict[str, Any], opts: FitOptions) -> dict[str, Any]:
    """Stokes-Einstein radius only for a diffusive file with a stated solvent: the
    options' temperature and viscosity, else the file's."""
    from xpcsviewer.fitting import hydrodynamic_radius, solvent_from_sample

    if not verdict.diffusive:
        return {}
    t, eta = opts.temperature, opts.viscosity
    source = "command line"
    if t is None or eta is None:
        stated = solvent_from_sample(d["sample"], d["sample_units"])
        if stated is None:
            return {"radius_nm": None,
                    "radius_note": "no radius: give --temperature and --viscosity "
                                   "(the file states no solvent)"}
        t, eta, source = stated[0], stated[1], "file /entry/sample"
    r, r_err = hydrodynamic_radius(verdict.D, t, eta, verdict.D_err)
    return {"radius_nm": r if np.isfinite(r) else None,
            "radius_err_nm": r_err if np.isfinite(r_err) else None,
            "solvent": {"temperature_K": t, "viscosity_Pa_s": eta, "source": source}}


@dataclass(frozen=True)
class FitOptions:
    """The per-file fit settings shipped with every task."""

    model: str = "auto"
    q_range: tuple[float, float] | None = None
    t_range: tuple[float, float] | None = None
    bayes: bool = False
    include_suspect: bool = False
    temperature: float | None = None
    viscosity: float | None = None
    nuts_device: str = "auto"  # where --bayes chains run: host CPU devices unless "gpu"
    #: g2 by age as ``xpcsviewer ages`` (keywords of jobs.ages.analyse_ages), or None
    ages: dict[str, Any] | None = None

    def fit_spec(self) -> Any:
        from xpcsviewer.fitting.spec import FitSpec

        return FitSpec(model=self.model, t_range=self.t_range)

    def sampler_spec(self) -> Any:
        from xpcsviewer.fitting.spec import SamplerSpec

        return SamplerSpec(num_warmup=BAYES_WARMUP, num_samples=BAYES_SAMPLES,
                           num_chains=BAYES_CHAINS, device=self.nuts_device)


def fit_files(opts: FitOptions, items: list[dict[str, Any]],
              progress: Any = None, cancel: Any = None) -> list[Any]:
    """Fit a chunk of files (a batch task; runs on any worker): one outcome per file.

    Files with the same delays share one batched least-squares solve (a curve's
    fit does not depend on the other curves of the solve; tested); a file that
    cannot be read is an outcome with its error, the others are still fitted.
    ``progress(done, total, message)`` (in-process only) counts :data:`UNITS` per
    file: reading, the least-squares solve, and with ``bayes`` the sampling, shared
    among the files by their bins (the work is bins x chains x draws). ``cancel``
    (a :class:`~xpcsviewer.progress.CancelToken`, in-process only) stops the solves at
    their next check, raising ``Cancelled``.
    """
    from xpcsviewer.backends.routing import route_and_pin
    from xpcsviewer.batch import ItemOutcome, outcome_of
    from xpcsviewer.fitting import diffusion_from_fit
    from xpcsviewer.fitting.block_fits import fit_curves
    from xpcsviewer.fitting.results import fit_record
    from xpcsviewer.io.errors import display_path

    n_units = len(items) * UNITS
    load_share, fit_share, sample_share = _SHARES[bool(opts.bayes)]
    done = [0.0]

    def tell(units: float, message: str) -> None:
        if progress is not None:
            progress(min(int(units), n_units), n_units, message)

    def step(units: float, message: str) -> None:
        done[0] += units
        tell(done[0], message)

    outs = []
    for k, it in enumerate(items):
        outs.append(outcome_of(
            lambda it: _load(it["path"], opts.q_range, opts.include_suspect), it))
        step(load_share * UNITS, f"read {k + 1}/{len(items)}")
    ok = [k for k, o in enumerate(outs) if o.ok]
    for k in ok:
        outs[k].value["path"] = display_path(items[k]["shown"])
    blocks = [_block(outs[k].value, k) for k in ok]
    spec = opts.fit_spec()
    # the device by the whole solve's estimated cost, before JAX starts: a fit on the
    # CPU then never starts a GPU (routing.pin_cpu)
    work = float(sum(outs[k].value["g2"].size for k in ok))
    lsq_device = route_and_pin("lsq", work=work, nbytes=24.0 * work).device
    # the sampling units of every file, by its bins
    ok_bins = {k: outs[k].value["g2"].shape[0] for k in ok}
    per_bin = sample_share * n_units / max(1, sum(ok_bins.values()))
    fit = outcome_of(lambda _: fit_curves(blocks, spec, device=lsq_device, cancel=cancel),
                     None)
    step(fit_share * UNITS * len(ok), f"least squares: {sum(ok_bins.values())} curves")
    for k, b in zip(ok, blocks, strict=True):
        d = outs[k].value
        if not fit.ok:
            outs[k] = ItemOutcome(0, error=f"{d['path']}: {fit.error}", kind=fit.kind)
            continue

        def record(d: dict, b: Any = b, fit: Any = fit) -> dict[str, Any]:
            sub = fit.value.take(fit.value.rows_of(b.file_index))
            q_fit, q_block = _effective_q(d, sub, opts)
            verdict = diffusion_from_fit(q_fit, sub)
            bayes = None
            if opts.bayes:
                from xpcsviewer.fitting.bayes import to_sample
                from xpcsviewer.fitting.fit_table import lsq_start

                base, share = done[0], per_bin * b.n_bins
                n_s = int(to_sample(lsq_start(sub, np.arange(b.n_bins))).sum())
                what = (f"{Path(d['path']).name}: sampling {n_s} of {b.n_bins} bins x "
                        f"{BAYES_CHAINS} chains x {BAYES_WARMUP + BAYES_SAMPLES} draws: "
                        if n_s else f"{Path(d['path']).name}: no bin to sample (none decays "
                        "with a relaxation time in the least squares): ")

                def sub_progress(n: int, total: int, msg: str = "", b: Any = b) -> None:
                    msg = msg.removeprefix(f"{b.label}: ")  # ``what`` names the file
                    tell(base + share * (n / total if total else 0.0), what + msg)

                try:
                    bayes = fit_curves([b], spec, opts.sampler_spec(), start=sub,
                                       progress=sub_progress if progress else None,
                                       cancel=cancel)
                finally:  # a failed file's share is spent too: the bar never goes back
                    step(share, what + "done")
            q_eff = q_block.pop("q_eff")
            rec = fit_record(d["path"], sub, verdict, bayes,
                             extra={**q_block, **_radius(verdict, d, opts)})
            rec["q_eff"] = q_eff
            rec["bins"] = [int(x) for x in d["bins"]]
            rec["suspect_points_excluded"] = d["suspect_excluded"]
            if opts.ages is not None:
                rec["ages"] = _ages(items[b.file_index]["path"], opts)
            return rec

        outs[k] = outcome_of(record, d)
    return outs


def _effective_q(d: dict[str, Any], sub: Any, opts: FitOptions
                 ) -> tuple[np.ndarray, dict[str, Any]]:
    """The q each bin's D is fitted at (its effective q, else its centre) and what the
    record states about it (:mod:`xpcsviewer.compute.effective_q`)."""
    from xpcsviewer.compute.effective_q import DEFINITION

    tau = d["tau"]
    use = np.asarray(d["valid"], bool)
    if opts.t_range is not None:
        lo, hi = sorted(opts.t_range)
        use = use & ((tau >= lo) & (tau <= hi))[None, :]
    sig = np.where(use, d["g2_err"], np.nan)
    tm, _ = sub.relaxation_time()
    eq = d["effective_q"]
    q, eff = eq.q_eff(np.asarray(d["bins"]) - 1, tm, tau, sig)
    q_fit = np.where(eff, q, d["q"])
    if eff.any():
        source = "effective" if eff[np.isfinite(tm)].all() else "mixed"
        note = f"D from {DEFINITION}; q is the bin centre"
        if source == "mixed":
            note += f" (the centre where no pixels: {eq.note})" if eq.note else ""
    else:
        source = "centre"
        note = "D from the bin centres" + (f": {eq.note}" if eq.note else "")
    return q_fit, {"q": source, "q_note": note,
                   "q_eff": [float(v) if e else None for v, e in zip(q, eff, strict=True)]}


def _ages(path: str, opts: FitOptions) -> dict[str, Any]:
    """``fit --ages``: the file's g2-by-age record (``ages --json``), or why there is none."""
    from xpcsviewer.io.errors import XpcsFileError
    from xpcsviewer.jobs.ages import ages_file, json_record

    try:
        return json_record(ages_file(path, fit=opts.fit_spec(), **opts.ages))
    except XpcsFileError as exc:
        return {"error": exc.one_line()}


def _block(d: dict[str, Any], k: int) -> Any:
    """One loaded file as the fitted curves (all its points as read: the mask chosen
    by --include-suspect is ``valid``)."""
    from xpcsviewer.fitting.blocks import G2Block

    return G2Block(
        file_index=k, label=Path(d["path"]).name, tau=d["tau"], g2=d["g2"].T,
        g2_err=d["g2_err"].T, valid=d["valid"].T, columns=np.asarray(d["bins"]) - 1,
        q=d["q"], phi=d["phi"], bin_labels=[str(x) for x in d["bins"]],
        delay_frames=d["delay_frames"], t0=d["t0"], source=str(d["path"]))
