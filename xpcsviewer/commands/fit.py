"""``xpcsviewer fit FILE ... [--model] [--q-range A B] [--t-range A B] [--bayes] [-o OUT]``.

Files go in chunks of :data:`FILES_PER_TASK` through :mod:`xpcsviewer.batch` (the
same chunks in-process, with ``--workers N`` or ``--scheduler``); the q-bins of a
chunk's files with the same delays share one batched least-squares solve, in which
a curve's fit does not depend on the other curves, so a file's numbers depend
neither on the other files nor on where the task ran. Files that cannot be read are
reported at the end (one line each, then the count) and the others are still
fitted, with exit code 3. Output
by extension: ``.json`` (ARCHITECTURE.md section 8; streamed as the records
arrive), ``.csv`` (one row per file and q-bin) or ``.h5``/``.hdf``/``.hdf5`` (our
own fit file); without ``-o`` a table on stdout, as ``info`` prints.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

from xpcsviewer.jobs.fit import FILES_PER_TASK, UNITS, FitOptions, fit_files

EXIT_OK, EXIT_ERROR, EXIT_BAD_INPUT = 0, 1, 3
_HDF = (".h5", ".hdf", ".hdf5")


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


def why(r: dict[str, Any], i: int) -> str:
    """Row ``i``'s status reason ("" where the record has none)."""
    return str((r.get("status_detail") or [""] * (i + 1))[i] or "")


def _row_model(r: dict[str, Any], i: int) -> str:
    models = r.get("models")
    return str(models[i]) if models else str(r["model"])


def fit_table(records: list[dict[str, Any]]) -> list[str]:
    """The fits as a text table: one line per file and q-bin (``fit`` without ``-o``).

    With the automatic choice each row names its model; ``tau_s`` is that model's
    relaxation time (the fast one, ``tau1``, of a double exponential, whose slow one
    has its own column), "-" where the status does not let it be quoted (the last
    column, ``reason``, says why)."""
    if not records:
        return []
    from xpcsviewer.fitting.status_limits import tau_quotable

    row_models = {_row_model(r, i) for r in records for i in range(len(r["q"]))}
    show_model = len(row_models) > 1 or any(r["model"] == "auto" for r in records)
    has_tau2 = "double" in row_models
    # the shape parameters of the models that fit them
    more = [n for n, m in _SHAPE_OF.items() if m in row_models]
    two_d = any(len(set(r["phi"])) > 1 for r in records)
    bayes = any("bayes" in r for r in records)
    # with --bayes the values are the posterior's (mean +- sd) where a bin was sampled,
    # beside the sampler's diagnostics; a bin not sampled keeps its least squares
    post = ["sampled", "r_hat", "ess", "div"] if bayes else []
    head = ["file", "bin", "q_1/A", *(["phi_deg"] if two_d else []), "status",
            *(["model"] if show_model else []), "tau_s", *(["tau2_s"] if has_tau2 else []),
            "contrast", *more, "chi2_red", *post, "reason"]
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
            sampled = bool(r.get("sampled", [False] * (i + 1))[i])

            def val(n: str, i: int = i, r: dict = r, sampled: bool = sampled) -> tuple:
                e = r[n]
                if sampled and e.get("mean") is not None:
                    # the posterior's own status and limits decide (status.quotable)
                    lim = r["tau_lower_limit"][i] is not None or r["tau_upper_limit"][i] is not None
                    quoted = not n.startswith("tau") or tau_quotable(
                        r["status"][i], why(r, i), n,
                        r.get("limit_param", [""] * (i + 1))[i] if lim else "")
                    return (e["mean"][i], e["std"][i]) if quoted else (None, None)
                return e["value"][i], e["error"][i]

            v, e = val(first)
            if v is None and lo is not None:
                cells.append(f"> {lo:.3g}")
            elif v is None and hi is not None:
                cells.append(f"< {hi:.3g}")
            else:
                cells.append(_pm(v, e, ".4g"))
            if has_tau2:
                cells.append(_pm(*val("tau2"), ".4g") if model == "double" else "-")
            cells.append(_pm(*val("contrast"), ".3f"))
            cells += [_pm(*val(n), ".3f") if n in r and model == m else "-"
                      for n, m in zip(more, [_SHAPE_OF[n] for n in more], strict=True)]
            chi2 = r["chi2_red"][i]
            cells.append("-" if chi2 is None else f"{chi2:.3g}")
            if bayes:
                rh, es = r.get("r_hat_max", [None] * (i + 1))[i], r.get("ess_min",
                                                                         [None] * (i + 1))[i]
                dv = r.get("divergences", [None] * (i + 1))[i]
                cells += ["yes" if sampled else "no",
                          "-" if rh is None or not sampled else f"{rh:.3f}",
                          "-" if es is None or not sampled else f"{es:.0f}",
                          "-" if dv is None else str(dv)]
            # the reason beside every tau not quoted: "-" alone would not say why
            reason = why(r, i)
            lsq = (r.get("status_lsq") or [None] * (i + 1))[i] if sampled else None
            if lsq and lsq != r["status"][i]:
                # knife-edge bins: each method by its own rules; both said (issue 48)
                reason = (f"{reason}; " if reason else "") + f"least squares: {lsq}"
            cells.append(reason)
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
    from xpcsviewer.io.outputs import check_distinct_inputs, check_output

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
    check_distinct_inputs(args.files)  # as average: one file twice is one measurement
    from xpcsviewer.commands._inputs import skip_side_files

    files = skip_side_files(args.files, "xpcsviewer fit")
    if not files:
        return 3
    args.files = files
    quiet = bool(getattr(args, "quiet", False))
    model = args.model or "auto"
    ages = None
    if getattr(args, "ages", None) is not None:
        from xpcsviewer.commands.ages import ages_options

        try:
            ages = ages_options(args)
        except ValueError as exc:
            print(f"xpcsviewer fit: error: {exc}", file=sys.stderr)
            return 2
    opts = FitOptions(
        model=model,
        q_range=tuple(args.q_range) if args.q_range else None,
        t_range=tuple(args.t_range) if args.t_range else None,
        bayes=bool(args.bayes),
        include_suspect=bool(getattr(args, "include_suspect_errors", False)),
        temperature=getattr(args, "temperature", None),
        viscosity=getattr(args, "viscosity", None),
        ages=ages,
    )
    items = file_items(args.files)
    errors: list[dict[str, str]] = []
    records: list[dict[str, Any]] = []  # CSV/HDF5/table only: their layout needs every record
    status_counts: Counter[str] = Counter()
    verdicts: Counter[str] = Counter()
    n_fitted = 0
    n_sampled = [0, 0]  # bins sampled, bins (--bayes)

    def run_all(stream: Any) -> Any:
        def take(o: Any) -> None:
            nonlocal n_fitted
            if not o.ok:
                errors.append({"path": items[o.index]["shown"], "error": o.error})
                return
            rec = o.value
            n_fitted += 1
            if "sampled" in rec:
                n_sampled[0] += sum(bool(x) for x in rec["sampled"])
                n_sampled[1] += len(rec["sampled"])
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
    if not quiet and opts.bayes:
        print(f"Bayesian: {n_sampled[0]} of {n_sampled[1]} bins sampled (the others keep "
              "their least-squares status: no decay with a relaxation time to sample)",
              file=sys.stderr)
    if not quiet:
        n_all = sum(status_counts.values())
        parts = ", ".join(f"{n} {s}" for s, n in status_counts.most_common())
        vtxt = ", ".join(f"{n} {v}" for v, n in verdicts.most_common())
        dest = f" -> {out}" if out is not None else ""
        print(f"fitted {n_fitted} file(s), {n_all} curves: {parts}; diffusion: {vtxt}{dest}"
              f" ({where.describe()}, {summary.seconds:.1f} s)", file=sys.stderr)
    return summary.exit_code


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``xpcsviewer fit`` (called by :mod:`xpcsviewer.cli`)."""
    from xpcsviewer.commands._args import add_ages, add_batch, model_choices, pair

    add_batch(p, skip_existing=False)
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--model", choices=model_choices(),
                   default=None,
                   help="g2 model; default auto: every candidate is fitted and one chosen "
                        "per q-bin by AICc (--bayes samples each bin's choice); single: g2 = "
                        "baseline + contrast exp(-2 t/tau); stretched: exp(-2 (t/tau)^stretch); "
                        "double: two decays; single_avgcorr: single with the multi-tau "
                        "frame-averaging correction")
    p.add_argument("--q-range", **pair(float),
                   help="fit only the q-bins with A <= q <= B, in 1/\u00c5 (default: all)")
    p.add_argument("--t-range", **pair(float),
                   help="fit only the delays with A <= tau <= B, in s (default: all)")
    p.add_argument("--bayes", action="store_true",
                   help="also run NumPyro NUTS (4 chains x 1500 draws per q-bin that least "
                        "squares finds decaying; the others keep its status)")
    p.add_argument("--include-suspect-errors", action="store_true",
                   help="also fit delay points whose stated error is below half their "
                        "neighbours' (left out by default; see `xpcsviewer info`)")
    p.add_argument("--temperature", type=float, metavar="K",
                   help="sample temperature for the Stokes-Einstein radius (with --viscosity)")
    p.add_argument("--viscosity", type=float, metavar="PA_S",
                   help="solvent viscosity in Pa s for the Stokes-Einstein radius")
    p.add_argument("-o", "--output", default=None, metavar="OUT.json|.csv|.h5",
                   help="write the fits to a file (default: print a table)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    p.add_argument("--ages", nargs="?", const=True, default=None, metavar="T[,T...]",
                   help="also g2 by sample age of files with two-time data, as `ages` "
                        "(JSON output: an 'ages' object per file); optional window centres "
                        "in s (default: --windows)")
    add_ages(p, None)
