"""Worker jobs of the g2 tab (Qt-free: they run in the thread pool)."""

from __future__ import annotations

import math

import numpy as np

from xpcsviewer.fitting.blocks import G2Block, bins_in_range, g2_blocks
from xpcsviewer.fitting.spec import FitSpec, SamplerSpec
from xpcsviewer.fitting.vocabulary import MODEL_CHOICES
from xpcsviewer.jobs.fit_process import run_fit_call
from xpcsviewer.progress import Cancelled, CancelToken

__all__ = [
    "StopToken",
    "bayes_all_job",
    "fit_all_job",
    "fit_job",
    "prepare_g2_job",
    "recompute_bin_job",
    "write_fits_job",
]


def _model_defaults(blocks: list[G2Block]) -> dict[str, dict[str, tuple]]:
    """Table defaults per model: (value, lower, upper, fixed) from the median over curves."""
    from xpcsviewer.fitting import default_params
    from xpcsviewer.fitting.models import shared_contrast_start

    out: dict[str, dict[str, tuple]] = {}
    if not blocks:
        return out
    tau = blocks[0].tau
    g = np.concatenate([b.g2.T for b in blocks if b.tau.shape == tau.shape], axis=0)
    v = np.concatenate([b.fit_valid.T for b in blocks if b.tau.shape == tau.shape], axis=0)
    shared_c = shared_contrast_start(tau, g, v)
    for model in MODEL_CHOICES:
        specs = default_params(model, tau, g, v)
        row = {}
        for n in specs:  # auto: the parameters every candidate shares
            s = specs[n]

            def med(x, log=False):
                a = np.asarray(x, dtype=np.float64).ravel()
                a = a[np.isfinite(a)]
                if a.size == 0:
                    return math.nan
                return (
                    float(np.exp(np.median(np.log(a))))
                    if log and np.all(a > 0)
                    else float(np.median(a))
                )

            lo = float(np.nanmin(np.asarray(s.lower, float)))
            hi = float(np.nanmax(np.asarray(s.upper, float)))
            row[n] = (med(s.value, n.startswith("tau")), lo, hi, bool(s.fixed))
        if "contrast" in row and math.isfinite(shared_c):
            # one start for the setup's contrast, not the median of decayed curves (issue 49)
            _v, lo, hi, fixed = row["contrast"]
            row["contrast"] = (min(max(shared_c, lo), hi), lo, hi, fixed)
        out[model] = row
    return out


def prepare_g2_job(results: list, opts: dict, progress=None, cancel=None):
    """Worker job: the shown g2 blocks, the fit-table defaults of every model and the
    number of bins in the q range (for paging)."""
    blocks = g2_blocks(
        results,
        opts.get("qmin"),
        opts.get("qmax"),
        opts.get("tmin"),
        opts.get("tmax"),
        opts.get("max_bins"),
        exclude_suspect=opts.get("exclude_suspect", True),
        bin_offset=opts.get("bin_offset", 0),
    )
    if cancel is not None:
        cancel.raise_if_cancelled()
    n_in_range = bins_in_range(results, opts.get("qmin"), opts.get("qmax"))
    return blocks, _model_defaults(blocks), n_in_range


#: the one fit loop, run in the fit process (:mod:`xpcsviewer.jobs.fit_process`)
FIT_TARGET = "xpcsviewer.fitting.block_fits:fit_curves"
#: the least squares and units of a Bayesian fit of every bin
PLAN_TARGET = "xpcsviewer.fitting.bayes_units:plan"


def fit_job(blocks, model: str, overrides: dict, t_range, progress=None, cancel=None):
    """Worker job: batched least squares of every curve of ``blocks`` (the one fit
    loop, :func:`~xpcsviewer.fitting.block_fits.fit_curves`) in the fit process: JAX's
    tracing there holds no GIL of the GUI's."""
    return run_fit_call(FIT_TARGET, blocks, FitSpec(model, None, overrides or None, t_range),
                        progress=progress, cancel=cancel)


def fit_all_job(results: list, opts: dict, model: str, overrides: dict, t_range,
                progress=None, cancel=None):
    """Worker job: least squares of every bin in the q range of every target, every
    page of bins (issue 49: Fit covered only the page shown); the page shows its rows
    and paging shows the others without a new fit."""
    blocks = g2_blocks(results, opts.get("qmin"), opts.get("qmax"), opts.get("tmin"),
                       opts.get("tmax"), None,
                       exclude_suspect=opts.get("exclude_suspect", True))
    if not blocks:
        raise ValueError("no g2 curves in the q and t ranges to fit")
    return fit_job(blocks, model, overrides, t_range, progress=progress, cancel=cancel)


class StopToken(CancelToken):
    """Cancelled when the job's own token or ``stop`` is: a stop ends the sampling
    but lets the job return what it finished (the runner drops the result of a
    cancelled job)."""

    def __init__(self, outer: CancelToken | None, stop: CancelToken) -> None:
        super().__init__()
        self._outer, self._stop = outer, stop

    @property
    def cancelled(self) -> bool:
        return self._stop.cancelled or (self._outer is not None and self._outer.cancelled)

    def raise_if_cancelled(self) -> None:
        if self.cancelled:
            raise Cancelled()


def _duration(s: float) -> str:
    s = max(0.0, float(s))
    if s < 90:
        return f"{max(1, round(s))} s"
    return f"{int(s // 60)} min {round(s % 60):02d} s"


def bayes_all_job(results: list, opts: dict, model: str, overrides: dict, t_range,
                  sampler: dict, stop: CancelToken | None = None, progress=None,
                  cancel=None):
    """Worker job: NUTS posterior of every bin in the q range of every target, every
    page of bins (issue 49), unit by unit (:mod:`xpcsviewer.fitting.bayes_units`):
    progress "bins k-l of n" with the time left once a unit is done; ``stop`` ends
    the sampling and returns the bins finished (the others keep their least-squares
    fit, :data:`~xpcsviewer.fitting.bayes_units.CANCELLED_DETAIL`); a stop before
    any bin finished is a cancel."""
    import time
    from dataclasses import replace

    from xpcsviewer.fitting.bayes_units import (
        CANCELLED_DETAIL,
        keep_lsq,
        offsets,
        place,
        sub_block,
    )
    from xpcsviewer.fitting.block_fits import empty_table

    blocks = g2_blocks(results, opts.get("qmin"), opts.get("qmax"), opts.get("tmin"),
                       opts.get("tmax"), None,
                       exclude_suspect=opts.get("exclude_suspect", True))
    if not blocks:
        raise ValueError("no g2 curves in the q and t ranges to fit")
    token = StopToken(cancel, stop if stop is not None else CancelToken())
    fit = FitSpec(model, None, overrides or None, t_range)
    spec = SamplerSpec(**sampler)
    n_all = sum(b.n_bins for b in blocks)

    def say(done, total, msg):
        if progress is not None:
            progress(int(done), int(total), msg)

    say(0, 1000, f"least squares of {n_all} bins (the chains' start)")
    start, units = run_fit_call(PLAN_TARGET, blocks, fit, cancel=token)
    out = empty_table(blocks, model, "bayes", t_range)
    off = offsets(blocks)
    n_s = sum(u.n_sampled for u in units)
    done_s, t_first = 0, None
    finished = np.zeros(n_all, bool)
    try:
        for u in units:
            b = blocks[u.block]
            rows = off[u.block] + u.cols
            head = (f"bins {done_s + 1}-{done_s + u.n_sampled} of {n_s}"
                    if u.n_sampled else "bins not sampled")
            eta = ""
            if t_first is not None and done_s:
                left = (time.monotonic() - t_first) / done_s * (n_s - done_s)
                eta = f", about {_duration(left)} left"

            def sub(d, t, msg="", _head=head, _eta=eta, _u=u, _done=done_s):
                # msg starts with the file's name (fit_curves)
                frac = d / t if t else 0.0
                say(1000 * (_done + frac * _u.n_sampled) / max(n_s, 1), 1000,
                    f"{_head} ({_u.model or 'least squares'}){_eta}: {msg}")

            if t_first is None and u.n_sampled:
                t_first = time.monotonic()
            part = run_fit_call(FIT_TARGET, [sub_block(b, u.cols)], fit,
                                replace(spec, seed=int(spec.seed) + u.seed_offset),
                                start=start.take(rows), progress=sub, cancel=token)
            place(out, rows, part)
            finished[rows] = True
            done_s += u.n_sampled
    except Cancelled:
        if (cancel is not None and cancel.cancelled) or not done_s:
            raise
        keep_lsq(out, np.flatnonzero(~finished), start, CANCELLED_DETAIL)
    if model != "auto":
        out.models = None
    say(1000, 1000, f"{done_s} of {n_s} bins sampled")
    return out


def write_fits_job(fits, path: str, progress=None, cancel=None) -> str:
    """Worker job: write fits to CSV (or JSON for a ``.json`` suffix), atomically."""
    from xpcsviewer.export import write_csv, write_json
    from xpcsviewer.fitting.results import fits_table, fits_to_dict

    if str(path).lower().endswith(".json"):
        write_json(path, fits_to_dict(fits))
    else:
        cols, header = fits_table(fits)
        write_csv(path, cols, header)
    return str(path)


def recompute_bin_job(result_path: str, q_bin: int, mask, raw=None, progress=None,
                      cancel=None):
    """Worker job: one q-bin of a result correlated anew from its raw data with ``mask``
    (:func:`~xpcsviewer.jobs.rebin_one.recompute_bin`)."""
    from xpcsviewer.jobs.rebin_one import recompute_bin

    return recompute_bin(result_path, q_bin, mask, raw=raw, progress=progress, cancel=cancel)
