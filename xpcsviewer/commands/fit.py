"""``xpcsviewer fit FILE ... [--model] [--q-range A B] [--t-range A B] [--bayes] -o OUT``.

Files go in chunks of :data:`FILES_PER_TASK` through :mod:`xpcsviewer.batch` (the
same chunks in-process, with ``--workers N`` or ``--scheduler``); the q-bins of a
chunk's files with the same delays share one batched least-squares solve, in which
a curve's fit does not depend on the other curves, so a file's numbers depend
neither on the other files nor on where the task ran. Files that cannot be read are reported at the end (one line
each, then the count) and the others are still fitted, with exit code 3. Output
by extension: ``.json`` (ARCHITECTURE.md section 8; streamed as the records
arrive), ``.csv`` (one row per file and q-bin) or ``.h5``/``.hdf``/``.hdf5`` (our
own fit file).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

EXIT_OK, EXIT_ERROR, EXIT_BAD_INPUT = 0, 1, 3
# Files per task, the same in-process and on Dask: one batched solve per chunk
# amortises JAX's per-call cost, and a Dask task of 32 files (~0.6 s) its per-task cost.
FILES_PER_TASK = 32
_HDF = (".h5", ".hdf", ".hdf5")


def _load(path: str, q_range: tuple[float, float] | None,
          include_suspect: bool = False) -> dict[str, Any]:
    from xpcsviewer.io import XpcsFileError, read_result
    from xpcsviewer.io.errors import display_path

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
    valid = np.asarray(mt.valid if include_suspect else mt.fit_mask, dtype=bool)
    return {
        "path": display_path(path),
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
    }


def _radius(verdict: Any, d: dict[str, Any], args: Any) -> dict[str, Any]:
    """Stokes-Einstein radius only for a diffusive file with a stated solvent."""
    from xpcsviewer.fitting import hydrodynamic_radius, solvent_from_sample

    if not verdict.diffusive:
        return {}
    t, eta = getattr(args, "temperature", None), getattr(args, "viscosity", None)
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
    device: str = "auto"


def fit_files(opts: FitOptions, items: list[dict[str, Any]]) -> list[Any]:
    """Fit a chunk of files (a batch task; runs on any worker): one outcome per file.

    Files with the same delays share one batched least-squares solve (a curve's
    fit does not depend on the other curves of the solve; tested); a file that
    cannot be read is an outcome with its error, the others are still fitted.
    """
    from xpcsviewer.batch import ItemOutcome, outcome_of
    from xpcsviewer.fitting import averaging_factors, diffusion_from_fit, fit_g2
    from xpcsviewer.fitting.results import fit_record
    from xpcsviewer.io.errors import display_path

    outs = [outcome_of(lambda it: _load(it["path"], opts.q_range, opts.include_suspect), it)
            for it in items]
    groups: dict[tuple, list[int]] = {}
    for k, o in enumerate(outs):
        if o.ok:
            d = o.value
            d["path"] = display_path(items[k]["shown"])
            groups.setdefault((d["tau"].shape, d["tau"].tobytes()), []).append(k)
    for ks in groups.values():
        ds = [outs[k].value for k in ks]

        def solve(_: Any, ds: list = ds) -> Any:
            tau = ds[0]["tau"]
            g2 = np.concatenate([d["g2"] for d in ds], axis=0)
            aux = None
            if opts.model in ("auto", "single_avgcorr"):  # frames averaged per delay
                aux = (averaging_factors(ds[0]["delay_frames"]),
                       np.concatenate([np.full(d["g2"].shape[0], d["t0"]) for d in ds]))
            return fit_g2(np.broadcast_to(tau, g2.shape), g2,
                          np.concatenate([d["g2_err"] for d in ds], axis=0),
                          np.concatenate([d["valid"] for d in ds], axis=0),
                          model=opts.model, t_range=opts.t_range, device=opts.device, aux=aux)

        fit = outcome_of(solve, None)
        start = 0
        for k, d in zip(ks, ds, strict=True):
            nb = d["g2"].shape[0]
            rows = slice(start, start + nb)
            start += nb
            if not fit.ok:
                outs[k] = ItemOutcome(0, error=f"{d['path']}: {fit.error}", kind=fit.kind)
                continue

            def record(d: dict, rows: slice = rows, fit: Any = fit) -> dict[str, Any]:
                sub = fit.value.select(rows)
                verdict = diffusion_from_fit(d["q"], sub)
                bayes = None
                if opts.bayes:
                    from xpcsviewer.fitting.bayes import fit_g2_bayes

                    bayes = fit_g2_bayes(d["tau"], d["g2"], d["g2_err"], d["valid"],
                                         model=opts.model, init=sub, t_range=opts.t_range)
                rec = fit_record(d["path"], d["q"], d["phi"], sub, verdict, bayes,
                                 extra=_radius(verdict, d, opts))
                rec["suspect_points_excluded"] = d["suspect_excluded"]
                return rec

            outs[k] = outcome_of(record, d)
    return outs


def run(args: argparse.Namespace) -> int:
    """Fit, write the output file, return 0 (or 3 when some input was unreadable)."""
    from xpcsviewer.batch import (
        BatchBar,
        PerChunk,
        file_items,
        print_failures,
        run_batch,
        where_from_args,
    )
    from xpcsviewer.fitting.results import FitJsonStream, save_fit_hdf5, write_fit_csv
    from xpcsviewer.io.outputs import check_output

    out = Path(args.output)
    suffix = out.suffix.lower()
    if suffix not in (".json", ".csv", *_HDF):
        print(f"xpcsviewer fit: error: output must end in .json, .csv or .h5 (got {out.name})",
              file=sys.stderr)
        return 2
    if (getattr(args, "temperature", None) is None) != (getattr(args, "viscosity", None) is None):
        print("xpcsviewer fit: error: --temperature and --viscosity go together",
              file=sys.stderr)
        return 2
    try:
        where = where_from_args(args)
    except ValueError as exc:
        print(f"xpcsviewer fit: error: {exc}", file=sys.stderr)
        return 2
    check_output(out, args.files, getattr(args, "overwrite", False))
    quiet = bool(getattr(args, "quiet", False))
    model = args.model or ("single" if args.bayes else "auto")
    if model == "auto" and args.bayes:
        print("xpcsviewer fit: error: --bayes samples one model: give --model", file=sys.stderr)
        return 2
    opts = FitOptions(
        model=model,
        q_range=tuple(args.q_range) if args.q_range else None,
        t_range=tuple(args.t_range) if args.t_range else None,
        bayes=bool(args.bayes),
        include_suspect=bool(getattr(args, "include_suspect_errors", False)),
        temperature=getattr(args, "temperature", None),
        viscosity=getattr(args, "viscosity", None),
        device=getattr(args, "device", None) or "auto",
    )
    items = file_items(args.files)
    errors: list[dict[str, str]] = []
    records: list[dict[str, Any]] = []  # CSV/HDF5 only: their layout needs every record
    status_counts: Counter[str] = Counter()
    verdicts: Counter[str] = Counter()
    n_fitted = 0

    def run_all(stream: Any) -> Any:
        def take(o: Any) -> None:
            nonlocal n_fitted
            if not o.ok:
                errors.append({"path": items[o.index]["shown"], "error": o.error})
                return
            rec = o.value
            n_fitted += 1
            status_counts.update(rec["status"])
            if "diffusion" in rec:
                verdicts[rec["diffusion"]["verdict"]] += 1
            if stream is not None:
                stream.add(rec)
            else:
                records.append(rec)

        with BatchBar("fit", enabled=not quiet) as bar:
            return run_batch(PerChunk(partial(fit_files, opts), FILES_PER_TASK), items, take,
                             where=where, progress=bar)

    if suffix == ".json":
        with FitJsonStream(out) as stream:
            summary = run_all(stream)
            stream.set_errors(errors)
    else:
        summary = run_all(None)
        if suffix == ".csv":
            write_fit_csv(out, records)
        else:
            save_fit_hdf5(out, records)
    print_failures("xpcsviewer fit", summary)
    if not quiet:
        n_all = sum(status_counts.values())
        parts = ", ".join(f"{n} {s}" for s, n in status_counts.most_common())
        vtxt = ", ".join(f"{n} {v}" for v, n in verdicts.most_common())
        print(f"fitted {n_fitted} file(s), {n_all} curves: {parts}; diffusion: {vtxt} -> {out}"
              f" ({where.describe()}, {summary.seconds:.1f} s)", file=sys.stderr)
    return summary.exit_code
