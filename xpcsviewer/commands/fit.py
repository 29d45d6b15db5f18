"""``xpcsviewer fit FILE ... [--model] [--q-range A B] [--t-range A B] [--bayes] [-o OUT]``.

Files go in chunks of :data:`FILES_PER_TASK` through :mod:`xpcsviewer.batch` (the
same chunks in-process, with ``--workers N`` or ``--scheduler``); the q-bins of a
chunk's files with the same delays share one batched least-squares solve, in which
a curve's fit does not depend on the other curves, so a file's numbers depend
neither on the other files nor on where the task ran. Files that cannot be read are reported at the end (one line
each, then the count) and the others are still fitted, with exit code 3. Output
by extension: ``.json`` (ARCHITECTURE.md section 8; streamed as the records
arrive), ``.csv`` (one row per file and q-bin) or ``.h5``/``.hdf``/``.hdf5`` (our
own fit file); without ``-o`` a table on stdout, as ``info`` prints.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

EXIT_OK, EXIT_ERROR, EXIT_BAD_INPUT = 0, 1, 3
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


def fit_files(opts: FitOptions, items: list[dict[str, Any]],
              progress: Any = None) -> list[Any]:
    """Fit a chunk of files (a batch task; runs on any worker): one outcome per file.

    Files with the same delays share one batched least-squares solve (a curve's
    fit does not depend on the other curves of the solve; tested); a file that
    cannot be read is an outcome with its error, the others are still fitted.
    ``progress(done, total, message)`` (in-process only) counts :data:`UNITS` per
    file: reading, the least-squares solve, and with ``bayes`` the sampling, shared
    among the files by their bins (the work is bins x chains x draws).
    """
    from xpcsviewer.batch import ItemOutcome, outcome_of
    from xpcsviewer.fitting import averaging_factors, diffusion_from_fit, fit_g2
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
    groups: dict[tuple, list[int]] = {}
    for k, o in enumerate(outs):
        if o.ok:
            d = o.value
            d["path"] = display_path(items[k]["shown"])
            groups.setdefault((d["tau"].shape, d["tau"].tobytes()), []).append(k)
    # the sampling units of every file, by its bins
    ok_bins = {k: outs[k].value["g2"].shape[0] for ks in groups.values() for k in ks}
    per_bin = sample_share * n_units / max(1, sum(ok_bins.values()))
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
                          model=opts.model, t_range=opts.t_range, aux=aux)

        fit = outcome_of(solve, None)
        step(fit_share * UNITS * len(ds), f"least squares: {sum(ok_bins[k] for k in ks)} curves")
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

                    base, share = done[0], per_bin * d["g2"].shape[0]
                    what = (f"{Path(d['path']).name}: {d['g2'].shape[0]} bins x "
                            f"{BAYES_CHAINS} chains x {BAYES_WARMUP + BAYES_SAMPLES} draws, ")

                    def sub_progress(n: int, total: int, msg: str = "") -> None:
                        tell(base + share * (n / total if total else 0.0), what + msg)

                    aux = None
                    if opts.model in ("auto", "single_avgcorr"):
                        aux = (averaging_factors(d["delay_frames"]), d["t0"])
                    try:
                        bayes = fit_g2_bayes(
                            d["tau"], d["g2"], d["g2_err"], d["valid"], model=opts.model,
                            init=sub, t_range=opts.t_range, aux=aux, num_warmup=BAYES_WARMUP,
                            num_samples=BAYES_SAMPLES, num_chains=BAYES_CHAINS,
                            progress=sub_progress if progress else None)
                    finally:  # a failed file's share is spent too: the bar never goes back
                        step(share, what + "done")
                rec = fit_record(d["path"], d["q"], d["phi"], sub, verdict, bayes,
                                 extra=_radius(verdict, d, opts))
                rec["bins"] = [int(b) for b in d["bins"]]
                rec["suspect_points_excluded"] = d["suspect_excluded"]
                return rec

            outs[k] = outcome_of(record, d)
    return outs


class _FitBar:
    """One bar over the whole batch in :data:`UNITS` per file: the batch reports the
    files done, the chunk being fitted reports its progress within (in-process)."""

    def __init__(self, bar: Any, n_files: int) -> None:
        self.bar, self.n, self.base = bar, n_files, 0

    def files(self, done: int, total: int, message: str = "") -> None:
        self.base = done
        self.bar(done * UNITS, total * UNITS, message)

    def within(self, units: int, _chunk_total: int, message: str = "") -> None:
        self.bar(self.base * UNITS + units, self.n * UNITS,
                 f"{self.base}/{self.n} files done; {message}")


def _pm(v: Any, e: Any, fmt: str) -> str:
    if v is None:
        return "-"
    return f"{v:{fmt}}" + ("" if e is None else f" \u00b1 {e:.2g}")


#: shape parameters in the table, and the model that fits each
_SHAPE_OF = {"stretch": "stretched", "fraction": "double"}


def _row_model(r: dict[str, Any], i: int) -> str:
    models = r.get("models")
    return str(models[i]) if models else str(r["model"])


def fit_table(records: list[dict[str, Any]]) -> list[str]:
    """The fits as a text table: one line per file and q-bin (``fit`` without ``-o``).

    With the automatic choice each row names its model; ``tau_s`` is that model's
    relaxation time (the fast one, ``tau1``, of a double exponential, whose slow one
    has its own column)."""
    if not records:
        return []
    row_models = {_row_model(r, i) for r in records for i in range(len(r["q"]))}
    show_model = len(row_models) > 1 or any(r["model"] == "auto" for r in records)
    has_tau2 = "double" in row_models
    # the shape parameters of the models that fit them
    more = [n for n, m in _SHAPE_OF.items() if m in row_models]
    two_d = any(len(set(r["phi"])) > 1 for r in records)
    head = ["file", "bin", "q_1/A", *(["phi_deg"] if two_d else []), "status",
            *(["model"] if show_model else []), "tau_s", *(["tau2_s"] if has_tau2 else []),
            "contrast", *more, "chi2_red"]
    rows = [head]
    for r in records:
        name = str(r["path"]).rsplit("/", 1)[-1]
        bins = r.get("bins") or list(range(1, len(r["q"]) + 1))
        for i in range(len(r["q"])):
            lo, hi = r["tau_lower_limit"][i], r["tau_upper_limit"][i]
            model = _row_model(r, i)
            cells = [name, str(bins[i]), f"{r['q'][i]:.4g}"]
            if two_d:
                cells.append(f"{r['phi'][i]:.4g}")
            cells.append(r["status"][i])
            if show_model:
                cells.append(model)
            first = "tau1" if model == "double" else "tau"
            v, e = r[first]["value"][i], r[first]["error"][i]
            if v is None and lo is not None:
                cells.append(f"> {lo:.3g}")
            elif v is None and hi is not None:
                cells.append(f"< {hi:.3g}")
            else:
                cells.append(_pm(v, e, ".4g"))
            if has_tau2:
                cells.append(_pm(r["tau2"]["value"][i], r["tau2"]["error"][i], ".4g")
                             if model == "double" else "-")
            cells.append(_pm(r["contrast"]["value"][i], r["contrast"]["error"][i], ".3f"))
            cells += [_pm(r[n]["value"][i], r[n]["error"][i], ".3f")
                      if n in r and model == m else "-"
                      for n, m in zip(more, [_SHAPE_OF[n] for n in more], strict=True)]
            chi2 = r["chi2_red"][i]
            cells.append("-" if chi2 is None else f"{chi2:.3g}")
            rows.append(cells)
    widths = [max(len(row[c]) for row in rows) for c in range(len(head))]
    lines = ["  ".join(x.ljust(w) for x, w in zip(row, widths, strict=True)).rstrip()
             for row in rows]
    for r in records:
        d = r.get("diffusion") or {}
        if d.get("message"):
            lines.append(f"note: {str(r['path']).rsplit('/', 1)[-1]}: {d['message']}")
    return lines


def run(args: argparse.Namespace) -> int:
    """Fit, write the output file (or print a table without ``-o``); 0, or 3 when some
    input was unreadable."""
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

    out = Path(args.output) if getattr(args, "output", None) else None
    suffix = out.suffix.lower() if out is not None else ""
    if out is not None and suffix not in (".json", ".csv", *_HDF):
        print(f"xpcsviewer fit: error: output must end in .json, .csv or .h5 (got {out.name})",
              file=sys.stderr)
        return 2
    if (getattr(args, "temperature", None) is None) != (getattr(args, "viscosity", None) is None):
        print("xpcsviewer fit: error: --temperature and --viscosity go together",
              file=sys.stderr)
        return 2
    for opt in ("temperature", "viscosity"):  # checked before any fit, not after
        v = getattr(args, opt, None)
        if v is not None and not (math.isfinite(v) and v > 0):
            print(f"xpcsviewer fit: error: --{opt} must be a positive finite number "
                  f"(got {v})", file=sys.stderr)
            return 2
    try:
        where = where_from_args(args)
    except ValueError as exc:
        print(f"xpcsviewer fit: error: {exc}", file=sys.stderr)
        return 2
    if out is not None:
        check_output(out, args.files, getattr(args, "overwrite", False))
    from xpcsviewer.commands._inputs import skip_side_files

    files = skip_side_files(args.files, "xpcsviewer fit")
    if not files:
        return 3
    args.files = files
    quiet = bool(getattr(args, "quiet", False))
    model = args.model or "auto"
    opts = FitOptions(
        model=model,
        q_range=tuple(args.q_range) if args.q_range else None,
        t_range=tuple(args.t_range) if args.t_range else None,
        bayes=bool(args.bayes),
        include_suspect=bool(getattr(args, "include_suspect_errors", False)),
        temperature=getattr(args, "temperature", None),
        viscosity=getattr(args, "viscosity", None),
    )
    items = file_items(args.files)
    errors: list[dict[str, str]] = []
    records: list[dict[str, Any]] = []  # CSV/HDF5/table only: their layout needs every record
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
            prog = _FitBar(bar, len(items))
            # a chunk's own progress cannot come back from a Dask worker: files only there
            task = (partial(fit_files, opts) if quiet or where.distributed
                    else partial(fit_files, opts, progress=prog.within))
            return run_batch(PerChunk(task, FILES_PER_TASK), items, take, where=where,
                             progress=prog.files)

    if suffix == ".json":
        with FitJsonStream(out) as stream:
            summary = run_all(stream)
            stream.set_errors(errors)
    else:
        summary = run_all(None)
        if suffix == ".csv":
            write_fit_csv(out, records)
        elif out is not None:
            save_fit_hdf5(out, records)
        else:
            for line in fit_table(records):
                print(line)
    print_failures("xpcsviewer fit", summary)
    if not quiet:
        n_all = sum(status_counts.values())
        parts = ", ".join(f"{n} {s}" for s, n in status_counts.most_common())
        vtxt = ", ".join(f"{n} {v}" for v, n in verdicts.most_common())
        dest = f" -> {out}" if out is not None else ""
        print(f"fitted {n_fitted} file(s), {n_all} curves: {parts}; diffusion: {vtxt}{dest}"
              f" ({where.describe()}, {summary.seconds:.1f} s)", file=sys.stderr)
    return summary.exit_code
