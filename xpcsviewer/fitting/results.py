"""Fit results as JSON, CSV and our own HDF5 file (never the input file).

One record per result file (ARCHITECTURE.md section 8): ``path``, ``model``, ``q``,
``phi``, per parameter ``{"value": [...], "error": [...]}`` (one entry per q-bin; with a
Bayesian fit also ``mean``, ``std``, ``hdi_low``, ``hdi_high``, ``r_hat``, ``ess_bulk``,
``ess_tail``), ``chi2_red``, ``status``, ``diffusion`` {D, D_err, exponent,
exponent_err} and, with a Bayesian fit, ``divergences``, ``bfmi`` and ``converged``.
Units: q in 1/A, phi in degrees, times in s, D in A^2/s. Missing numbers are ``null``.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from xpcsviewer.fitting.diffusion import DiffusionResult
from xpcsviewer.fitting.lsq import G2FitResult

__all__ = [
    "fit_record",
    "fit_results_to_csv",
    "fit_results_to_json",
    "save_fit_hdf5",
    "write_fit_csv",
    "write_fit_json",
]

BAYES_KEYS = ("mean", "std", "hdi_low", "hdi_high", "r_hat", "ess_bulk", "ess_tail")


def _num(x: Any) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def _list(a: Any) -> list[float | None]:
    return [_num(v) for v in np.asarray(a, dtype=np.float64).ravel()]


def fit_record(
    path: str | os.PathLike,
    q: Any,
    phi: Any,
    fit: G2FitResult,
    diffusion: dict[str, DiffusionResult] | None = None,
    bayes: Any | None = None,
    rows: slice | None = None,
) -> dict[str, Any]:
    """JSON-ready record of one file's fits.

    Parameters
    ----------
    path : the result file
    q, phi : (Nq,) bin centres (1/A, degrees)
    fit : G2FitResult
        May hold more curves than this file (all files in one batch); ``rows``
        selects this file's curves.
    diffusion : {"free": ..., "fixed": ...} from ``diffusion_from_fit``
        D from the fit with the exponent fixed at -2, exponent from the free fit.
    bayes : BayesFitResult, optional
    rows : slice, optional
    """
    sl = rows if rows is not None else slice(None)
    rec: dict[str, Any] = {
        "path": str(path),
        "model": fit.model.value,
        "q": _list(q),
        "phi": _list(phi),
    }
    for n in fit.param_names:
        entry: dict[str, Any] = {
            "value": _list(fit.params[n][sl]),
            "error": _list(fit.errors[n][sl]),
            "fixed": bool(fit.fixed.get(n, False)),
        }
        if bayes is not None:
            for k in BAYES_KEYS:
                entry[k] = _list(getattr(bayes, k)[n])
        rec[n] = entry
    rec["chi2_red"] = _list(fit.chi2_red[sl])
    rec["status"] = [s.value for s in fit.status[sl]]
    if diffusion is not None:
        fixed, free = diffusion["fixed"], diffusion["free"]
        rec["diffusion"] = {
            "D": _num(fixed.D),
            "D_err": _num(fixed.D_err),
            "exponent": _num(free.exponent),
            "exponent_err": _num(free.exponent_err),
            "prefactor": _num(free.prefactor),
            "prefactor_err": _num(free.prefactor_err),
            "n_bins": int(fixed.n_points),
            "units": {"D": "A^2/s", "q": "1/A", "tau": "s"},
        }
    if bayes is not None:
        per_bin = bayes.divergences_per_bin
        rec["divergences"] = (
            [int(v) for v in per_bin] if per_bin is not None else int(bayes.divergences)
        )
        rec["bfmi"] = _list(np.min(np.atleast_2d(bayes.bfmi), axis=0))  # worst chain per bin
        rec["converged"] = [bool(c) for c in bayes.converged]
        rec["bayes"] = {
            "num_chains": bayes.num_chains,
            "num_samples": bayes.num_samples,
            "num_warmup": bayes.num_warmup,
            "seed": bayes.seed,
            "chain_method": bayes.chain_method,
            "sampler": bayes.sampler,
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
    """Rows (header first): one per (file, q-bin), parameters as value/error columns."""
    params: list[str] = []
    bayes = any("divergences" in r for r in records)
    for r in records:
        for k, v in r.items():
            if isinstance(v, dict) and "value" in v and k not in params:
                params.append(k)
    header = ["path", "model", "bin", "q", "phi", "status", "chi2_red"]
    for n in params:
        header += [n, f"{n}_err"]
        if bayes:
            header += [f"{n}_{k}" for k in BAYES_KEYS]
    header += ["D", "D_err", "exponent", "exponent_err"]
    if bayes:
        header += ["converged", "divergences"]
    rows: list[list[Any]] = [header]
    for r in records:
        d = r.get("diffusion", {})
        for i in range(len(r["q"])):
            row = [r["path"], r["model"], i, r["q"][i], r["phi"][i], r["status"][i], r["chi2_red"][i]]
            for n in params:
                e = r.get(n)
                if e is None:
                    row += [None, None] + ([None] * len(BAYES_KEYS) if bayes else [])
                    continue
                row += [e["value"][i], e["error"][i]]
                if bayes:
                    row += [e.get(k, [None] * (i + 1))[i] for k in BAYES_KEYS]
            row += [d.get("D"), d.get("D_err"), d.get("exponent"), d.get("exponent_err")]
            if bayes:
                dv = r.get("divergences")
                row += [r.get("converged", [None] * (i + 1))[i],
                        dv[i] if isinstance(dv, list) else dv]
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
        with h5py.File(tmp, "w") as f:
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
                    if isinstance(v, dict) and "value" in v:
                        gp = gi.create_group(k)
                        gp.attrs["fixed"] = bool(v.get("fixed", False))
                        for kk, vv in v.items():
                            if isinstance(vv, list):
                                gp[kk] = arr(vv)
                if "diffusion" in r:
                    gd = gi.create_group("diffusion")
                    for kk, vv in r["diffusion"].items():
                        if isinstance(vv, int | float):
                            gd.attrs[kk] = vv
                        elif vv is None:
                            gd.attrs[kk] = np.nan
                if "converged" in r:
                    gi["converged"] = np.array(r["converged"], dtype=bool)
                    gi["divergences"] = np.atleast_1d(np.asarray(r["divergences"], dtype=np.int64))

    _atomic_write(out, write, by_name=True)
