"""Fit results as JSON, CSV and our own HDF5 file (never the input file).

One record per result file (ARCHITECTURE.md section 8): ``path``, ``model`` (``auto``
when one was chosen per bin), ``models`` (the model of each bin), ``q``, ``phi``, per
parameter ``{"value": [...], "error": [...]}`` (one entry per q-bin; ``null`` where the
bin's model lacks the parameter; a relaxation time is ``null`` where its status does not
let it be quoted (:func:`~xpcsviewer.fitting.status.tau_quotable`: not converged), and
has ``lo``/``hi`` (68 % profile-likelihood interval), ``lo2``/``hi2`` (2 sigma) and
``window`` (refitted without the last fitted delays); with a Bayesian fit also ``mean``,
``std``, ``hdi_low``, ``hdi_high``, ``r_hat``, ``ess_bulk``, ``ess_tail``), ``tau_mean``
(the mean relaxation time Diffusion uses), ``chi2_red``, ``runs_z``, ``decay_left``,
``error_factor`` (sqrt(chi2_red), at least 1: how many times the stated errors the
scatter is), ``aicc`` per candidate model and ``delta_aicc`` (the chosen model's
margin), ``status`` and ``status_detail`` per bin, the limits
``tau_lower_limit``/``tau_upper_limit`` (on ``limit_param``), and ``diffusion`` with its
``verdict`` (``D`` null unless diffusive). With a Bayesian fit ``status`` is the
posterior's and the least-squares one is kept as ``status_lsq``; ``divergences``,
``bfmi``, ``converged`` (the sampler gates), ``draws_per_chain``, ``noise_scale`` and
``sampled`` (False: the bin kept its least-squares status, see
:data:`~xpcsviewer.fitting.bayes.SAMPLED_LSQ`) are per bin; ``bayes`` states the 94 %
HDI level (``hdi_prob``) beside the intervals the statuses read (``status_intervals``).
Units: q in 1/A, phi in degrees, times in s, D in A^2/s, radii in nm. Missing numbers
are ``null``.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from xpcsviewer.fitting.lsq import ERROR_SCALING
from xpcsviewer.fitting.status import error_factor

if TYPE_CHECKING:
    from xpcsviewer.fitting.fit_table import G2Fits

__all__ = [
    "FitJsonStream",
    "fit_record",
    "fit_results_to_csv",
    "fit_results_to_json",
    "fits_table",
    "fits_to_dict",
    "save_fit_hdf5",
    "write_fit_csv",
    "write_fit_json",
]

BAYES_KEYS = ("mean", "std", "hdi_low", "hdi_high", "r_hat", "ess_bulk", "ess_tail")
MEAN_TIME = ("integral of g1: tau (single); tau Gamma(1 + 1/stretch) (stretched); "
             "f tau1 + (1 - f) tau2 (double)")


def _rules() -> str:
    from xpcsviewer.fitting.adequacy import AICC_MARGIN
    from xpcsviewer.fitting.status import (
        CHI2_RED_MAX,
        EARLY_SCAN_MAX,
        LIMIT_DCHI2_DECAY,
        PLATEAU_LEFT_MAX,
        RUNS_Z_MAX,
        WINDOW_DROP,
    )

    return (f"misfit: residual runs |z| > {RUNS_Z_MAX:g} or the first delays together > "
            f"{EARLY_SCAN_MAX:g} sigma off the fit; poor_fit: chi2_red > {CHI2_RED_MAX:g} "
            "with structured or untestable residuals (white: errors scaled); unresolved: no "
            f"plateau (more than {100 * PLATEAU_LEFT_MAX:g} % of the decay left at the last "
            "fitted delay, free baseline) or tau and its refit without the last "
            f"{WINDOW_DROP} fitted delays outside each other's 2-sigma interval; limits "
            f"only on a decay beating a constant by Delta chi2 >= {LIMIT_DCHI2_DECAY:g}; "
            "stretch on a bound: at_bound, no limit; auto: AICc, a more complex model needs a "
            "margin "
            f"> {AICC_MARGIN:g} unless the simpler one misfits; intervals: profile "
            "likelihood, Delta chi2 = 1 (lo/hi) and 4 (lo2/hi2) x max(1, chi2_red)")


RULES = _rules()
#: The posterior intervals the Bayesian statuses read (``hdi_low``/``hdi_high`` are a
#: 94 % HDI: a summary, not what a status is decided on).
STATUS_INTERVALS = ("one-sided 95 % limits: the 5 % / 95 % posterior quantiles of log tau "
                    "(a central 90 % interval); width: the 68 % central interval "
                    "(15.9-84.1 %); window check: the 2-sigma central interval "
                    "(2.3-97.7 %)")


def _num(x: Any) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def _list(a: Any) -> list[float | None]:
    return [_num(v) for v in np.asarray(a, dtype=np.float64).ravel()]


def _strs(a: Any) -> list[str]:
    return [getattr(v, "value", str(v)) for v in a]


def fit_record(
    path: str | os.PathLike,
    fit: G2Fits,
    diffusion: Any | None = None,
    bayes: G2Fits | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """JSON-ready record of one file's fits.

    Parameters
    ----------
    path : the result file
    fit : the least-squares table of this file's curves (its rows, in bin order)
    diffusion : DiffusionVerdict, optional
        From :func:`~xpcsviewer.fitting.diffusion.diffusion_from_fit`.
    bayes : the NUTS table of the same curves, optional
    extra : dict, optional
        More keys for the diffusion block (e.g. the radius and its solvent).
    """
    post = None
    if bayes is not None:
        if len(bayes.bands) != 1:
            raise ValueError("a file's record takes the NUTS run of that one file")
        post = bayes.bands[0][1]
    rec: dict[str, Any] = {
        "path": str(path),
        "model": str(fit.model),
        "models": [str(m) for m in fit.model_names()],
        "q": _list(fit.q),
        "phi": _list(fit.phi),
    }
    for n in fit.param_names:
        v, e = fit.reported(n)
        entry: dict[str, Any] = {
            "value": _list(v),
            "error": _list(e),
            "fixed": bool(fit.fixed.get(n, False)),
        }
        if n in fit.interval:
            # the profile interval and the window refit go with the quotable value
            keep = np.isfinite(v)
            iv, iv2 = fit.interval[n], fit.interval2.get(n, np.full((v.size, 2), np.nan))
            entry["lo"] = _list(np.where(keep, iv[:, 0], np.nan))
            entry["hi"] = _list(np.where(keep, iv[:, 1], np.nan))
            entry["lo2"] = _list(np.where(keep, iv2[:, 0], np.nan))
            entry["hi2"] = _list(np.where(keep, iv2[:, 1], np.nan))
            entry["window"] = _list(fit.window.get(n, np.full(v.size, np.nan)))
        if post is not None:
            for k in BAYES_KEYS:
                entry[k] = _list(getattr(post, k)[n])
        rec[n] = entry
    tm, tm_e = fit.relaxation_time()
    rec["tau_mean"] = {"value": _list(tm), "error": _list(tm_e), "fixed": False,
                       "definition": MEAN_TIME}
    rec["chi2_red"] = _list(fit.chi2_red)
    rec["n_points"] = [int(x) for x in fit.n_points]
    rec["status"] = _strs(fit.status)
    rec["status_detail"] = [str(d) for d in fit.detail]
    rec["tau_lower_limit"] = _list(fit.tau_lower_limit)
    rec["tau_upper_limit"] = _list(fit.tau_upper_limit)
    rec["limit_param"] = [str(x) for x in fit.limit_name]
    rec["delta_chi2"] = _list(fit.delta_chi2)
    rec["runs_z"] = _list(fit.runs_z)  # null: fewer than 10 points (or one sign only)
    rec["decay_left"] = _list(fit.decay_left)
    rec["aicc"] = {m: _list(a) for m, a in fit.aicc.items()}
    rec["delta_aicc"] = _list(fit.delta_aicc)
    rec["errors_scaled"] = [bool(x) for x in fit.errors_scaled]
    # how many times the stated errors the scatter is (errors_understated names it)
    rec["error_factor"] = [error_factor(float(c)) if c is not None else None
                           for c in rec["chi2_red"]]
    rec["error_scaling"] = ERROR_SCALING
    rec["rules"] = RULES
    if diffusion is not None:
        block = diffusion.to_dict()
        block.update(extra or {})
        rec["diffusion"] = block
    if post is not None:
        bayes = post
        from xpcsviewer.fitting.bayes_gates import HDI_PROB, ess_min

        rec["status_lsq"] = rec["status"]
        rec["status_lsq_detail"] = rec["status_detail"]
        rec["status"] = _strs(bayes.status)
        rec["status_detail"] = [str(d) for d in bayes.detail]
        rec["tau_lower_limit"] = _list(bayes.tau_lower_limit)
        rec["tau_upper_limit"] = _list(bayes.tau_upper_limit)
        if bayes.limit_name is not None:
            rec["limit_param"] = [str(x) for x in bayes.limit_name]
        sampled = np.ones(len(rec["status"]), bool) if bayes.sampled is None else bayes.sampled
        rec["sampled"] = [bool(x) for x in sampled]
        diag = bayes.diagnostics()
        rec["divergences"] = [int(v) if s else None
                              for v, s in zip(diag["divergences"], sampled, strict=True)]
        rec["bfmi"] = _list(diag["bfmi"])  # worst chain per bin
        rec["r_hat_max"] = _list(diag["r_hat"])
        rec["ess_min"] = _list(np.fmin(diag["ess_bulk"], diag["ess_tail"]))
        rec["converged"] = [bool(c) for c in bayes.converged]
        rec["draws_per_chain"] = [int(v) for v in bayes.draws_per_chain]
        rec["noise_scale"] = _list(bayes.noise_scale)
        rec["bayes"] = {
            "num_chains": bayes.num_chains,
            "num_samples": bayes.num_samples,
            "num_warmup": bayes.num_warmup,
            "seed": bayes.seed,
            "chain_method": bayes.chain_method,
            "sampler": bayes.sampler,
            "ess_min": ess_min(bayes.num_chains),
            "ess_rule": "bulk and tail ESS >= 100 per chain (Vehtari et al. 2021)",
            "noise_scale": "likelihood sigma = g2_err x sqrt(max(1, chi2_red of the "
                           "least squares))",
            # two levels, both stated (issue 48): the summary interval and the rules'
            "hdi_prob": HDI_PROB,
            "status_intervals": STATUS_INTERVALS,
        }
    return rec


def fit_results_to_json(records: Sequence[dict[str, Any]], errors: Iterable[dict] = ()) -> str:
    """``{"files": [...]}`` (plus ``"errors"`` for unreadable files when any)."""
    doc: dict[str, Any] = {"files": list(records)}
    errs = list(errors)
    if errs:
        doc["errors"] = errs
    return json.dumps(doc, indent=2, allow_nan=False)


def fit_results_to_csv(records: Sequence[dict[str, Any]]) -> list[list[Any]]:
    """Rows (header first): one per (file, q-bin); status and key numbers first; ``model``
    is the bin's own (the chosen one with ``auto``)."""
    params: list[str] = []
    bayes = any("divergences" in r for r in records)
    for r in records:
        for k, v in r.items():
            if isinstance(v, dict) and "value" in v and k not in params:
                params.append(k)
    header = ["path", "model", "bin", "q", "phi", "status", "status_detail", "chi2_red",
              "tau_lower_limit", "tau_upper_limit", "runs_z", "decay_left", "delta_aicc"]
    with_iv = {n for r in records for n in params if isinstance(r.get(n), dict) and "lo" in r[n]}
    for n in params:
        header += [n, f"{n}_err"]
        if n in with_iv:
            header += [f"{n}_lo", f"{n}_hi"]
        if bayes:
            header += [f"{n}_{k}" for k in BAYES_KEYS]
    header += ["n_points", "errors_scaled", "verdict", "D", "D_err", "exponent", "exponent_err"]
    if bayes:
        header += ["status_lsq", "sampled", "converged", "r_hat_max", "ess_min",
                   "divergences", "bfmi", "noise_scale"]
    # issue 48: the q each bin's D was fitted at, and which q that is (added last)
    header += ["q_eff", "D_q"]
    rows: list[list[Any]] = [header]

    def at(r: dict, key: str, i: int) -> Any:
        v = r.get(key)
        return v[i] if isinstance(v, list) and i < len(v) else None

    for r in records:
        d = r.get("diffusion", {})
        for i in range(len(r["q"])):
            model = at(r, "models", i) or r["model"]
            row = [r["path"], model, i, r["q"][i], r["phi"][i], r["status"][i],
                   at(r, "status_detail", i), r["chi2_red"][i], at(r, "tau_lower_limit", i),
                   at(r, "tau_upper_limit", i), at(r, "runs_z", i), at(r, "decay_left", i),
                   at(r, "delta_aicc", i)]
            for n in params:
                e = r.get(n)
                if e is None:
                    row += [None, None] + ([None, None] if n in with_iv else []) + (
                        [None] * len(BAYES_KEYS) if bayes else [])
                    continue
                row += [e["value"][i], e["error"][i]]
                if n in with_iv:
                    row += [at(e, "lo", i), at(e, "hi", i)]
                if bayes:
                    row += [at(e, k, i) for k in BAYES_KEYS]
            row += [at(r, "n_points", i), at(r, "errors_scaled", i), d.get("verdict"),
                    d.get("D"), d.get("D_err"), d.get("exponent"), d.get("exponent_err")]
            if bayes:
                row += [at(r, k, i) for k in ("status_lsq", "sampled", "converged",
                                              "r_hat_max", "ess_min", "divergences", "bfmi",
                                              "noise_scale")]
            row += [at(r, "q_eff", i), d.get("q")]
            rows.append(row)
    return rows


def _atomic_write(path: Path, write: Any, by_name: bool = False) -> None:
    # Shared atomic protocol (temp file, fsync, rename); ``by_name`` hands
    # ``write`` the temporary path (h5py).
    from xpcsviewer.io.outputs import atomic_path

    with atomic_path(Path(path)) as tmp:
        if by_name:
            write(str(tmp))
        else:
            with open(tmp, "w", encoding="utf-8", errors="replace", newline="") as fh:
                write(fh)


def write_fit_json(path: str | os.PathLike, records: Sequence[dict[str, Any]],
                   errors: Iterable[dict] = ()) -> None:
    """Write :func:`fit_results_to_json` atomically."""
    text = fit_results_to_json(records, errors)
    _atomic_write(Path(path), lambda fh: fh.write(text + "\n"))


class FitJsonStream:
    """Write :func:`write_fit_json`'s bytes one record at a time (atomically).

    A batch of many files then never holds its records: each is encoded as it
    arrives into the temporary file, which becomes ``path`` only on a clean exit
    of the ``with`` block. Byte-identical to :func:`write_fit_json` of the same
    records and errors.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._errors: list[dict] = []
        self._n = 0

    def __enter__(self) -> FitJsonStream:
        from xpcsviewer.io.outputs import atomic_path

        self._ctx = atomic_path(self.path)
        tmp = self._ctx.__enter__()
        self._fh = open(tmp, "w", encoding="utf-8", errors="replace", newline="")
        self._fh.write('{\n  "files": [')
        return self

    def add(self, record: dict[str, Any]) -> None:
        """Append one file's record."""
        text = json.dumps(record, indent=2, allow_nan=False).replace("\n", "\n    ")
        self._fh.write(("," if self._n else "") + "\n    " + text)
        self._n += 1

    def set_errors(self, errors: Iterable[dict]) -> None:
        """The unreadable files, written after the records."""
        self._errors = list(errors)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool | None:
        try:
            if exc_type is None:
                self._fh.write("\n  ]" if self._n else "]")
                if self._errors:
                    text = json.dumps(self._errors, indent=2, allow_nan=False)
                    self._fh.write(',\n  "errors": ' + text.replace("\n", "\n  "))
                self._fh.write("\n}\n")
            self._fh.close()  # a full disk shows at the last flush
        except BaseException as e:  # handed to the atomic write
            if exc_type is None:
                exc_type, exc, tb = type(e), e, e.__traceback__
        finally:
            if not self._fh.closed:
                with contextlib.suppress(OSError):
                    self._fh.close()
        if exc is not None:
            # removes the temporary; raises the error naming the output, or returns
            self._ctx.__exit__(exc_type, exc, tb)
            raise exc
        return self._ctx.__exit__(None, None, None)


def write_fit_csv(path: str | os.PathLike, records: Sequence[dict[str, Any]]) -> None:
    """Write :func:`fit_results_to_csv` atomically (empty cells for missing numbers)."""
    rows = fit_results_to_csv(records)

    def write(fh: Any) -> None:
        w = csv.writer(fh)
        for row in rows:
            w.writerow(["" if v is None else v for v in row])

    _atomic_write(Path(path), write)


def save_fit_hdf5(path: str | os.PathLike, records: Sequence[dict[str, Any]]) -> None:
    """Save fit records to an HDF5 file of our own, atomically.

    Layout: ``/fits/<i>`` per input file with attrs ``path``, ``model``; datasets
    ``q``, ``phi``, ``chi2_red``, ``status`` (strings), ``<param>/<key>`` for each
    numeric list (value, error, mean, ...); ``diffusion`` attrs. Refuses to write over
    any of the input files.
    """
    import h5py

    out = Path(path).resolve()
    for r in records:
        if Path(r["path"]).resolve() == out:
            raise ValueError(f"refusing to write fit results into the input file {out}")

    def arr(v: list) -> np.ndarray:
        return np.array([np.nan if x is None else x for x in v], dtype=np.float64)

    def write(tmp: str) -> None:
        from xpcsviewer.io.outputs import open_h5_output  # a full disk: an OSError

        with open_h5_output(tmp) as f:
            f.attrs["format"] = "xpcsviewer-fit"
            f.attrs["version"] = 1
            g = f.create_group("fits")
            for i, r in enumerate(records):
                gi = g.create_group(f"{i:04d}")
                gi.attrs["path"] = r["path"]
                gi.attrs["model"] = r["model"]
                gi["q"] = arr(r["q"])
                gi["phi"] = arr(r["phi"])
                gi["chi2_red"] = arr(r["chi2_red"])
                gi["status"] = np.array(r["status"], dtype=h5py.string_dtype())
                for k, v in r.items():
                    if isinstance(v, dict) and v and "value" not in v and all(
                            isinstance(x, list) for x in v.values()):
                        ga = gi.create_group(k)  # e.g. aicc per candidate model
                        for kk, vv in v.items():
                            ga[kk] = arr(vv)
                    elif isinstance(v, dict) and "value" in v:
                        gp = gi.create_group(k)
                        gp.attrs["fixed"] = bool(v.get("fixed", False))
                        for kk, vv in v.items():
                            if isinstance(vv, list):
                                gp[kk] = arr(vv)
                    elif (isinstance(v, list) and v and k not in gi
                          and all(isinstance(x, str) for x in v)):
                        gi[k] = np.array(v, dtype=h5py.string_dtype())
                    elif (isinstance(v, list) and v and k not in gi
                          and all(isinstance(x, bool) for x in v)):
                        gi[k] = np.array(v, dtype=bool)
                    elif (isinstance(v, list) and v and k not in gi
                          and all(x is None or isinstance(x, int | float) for x in v)):
                        gi[k] = arr(v)
                    elif isinstance(v, str) and k not in ("path", "model"):
                        gi.attrs[k] = v
                if "diffusion" in r:
                    gd = gi.create_group("diffusion")
                    for kk, vv in r["diffusion"].items():
                        if isinstance(vv, bool | int | float | str):
                            gd.attrs[kk] = vv
                        elif vv is None:
                            gd.attrs[kk] = np.nan

    _atomic_write(out, write, by_name=True)


# The tabulation of the g2 tab's fits (G2Fits): its table, CSV and JSON.


def fits_table(fits: G2Fits) -> tuple[dict[str, np.ndarray], list[str]]:
    """CSV columns of a fit: status and its reason first, then file, bin, q, phi,
    value and error per parameter (relaxation times empty where only a limit exists),
    the limits, chi2 and, for NUTS, the sampler diagnostics."""
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
    return {
        "model": fits.model,
        "method": fits.method,
        "t_range": list(fits.t_range) if fits.t_range else None,
        "units": {"tau": "s", "q": "1/A"},
        "tau_mean": MEAN_TIME,
        "rules": RULES,
        "curves": rows,
    }
