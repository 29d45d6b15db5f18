"""``xpcsviewer fit FILE ... [--model] [--q-range A B] [--t-range A B] [--bayes] -o OUT``.

All q-bins of all readable files go through one batched least-squares solve; files
that cannot be read are reported (one line each) and the others are still fitted,
with exit code 3. Output by extension: ``.json`` (ARCHITECTURE.md section 8), ``.csv``
(one row per file and q-bin) or ``.h5``/``.hdf``/``.hdf5`` (our own fit file).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

EXIT_OK, EXIT_ERROR, EXIT_BAD_INPUT = 0, 1, 3
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
        "g2": np.asarray(mt.g2, dtype=np.float64)[:, cols].T,
        "g2_err": np.asarray(mt.g2_err, dtype=np.float64)[:, cols].T,
        "valid": valid[:, cols].T,
        "suspect_excluded": int((np.asarray(mt.valid) & ~valid)[:, cols].sum()),
        "sample": dict(res.sample),
        "sample_units": dict(res.sample_units),
    }


def _radius(verdict: Any, d: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
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


def run(args: argparse.Namespace) -> int:
    """Fit, write the output file, return 0 (or 3 when some input was unreadable)."""
    from xpcsviewer.fitting import diffusion_from_fit, fit_g2
    from xpcsviewer.fitting.results import (
        fit_record,
        save_fit_hdf5,
        write_fit_csv,
        write_fit_json,
    )
    from xpcsviewer.io import XpcsFileError
    from xpcsviewer.progress import TextProgressBar

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
    check_output(out, args.files, getattr(args, "overwrite", False))
    quiet = bool(getattr(args, "quiet", False))
    q_range = tuple(args.q_range) if args.q_range else None
    t_range = tuple(args.t_range) if args.t_range else None
    device = getattr(args, "device", None) or "auto"
    include_suspect = bool(getattr(args, "include_suspect_errors", False))

    loaded: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    bar = TextProgressBar("reading", enabled=not quiet)
    for i, path in enumerate(args.files):
        try:
            loaded.append(_load(path, q_range, include_suspect))
        except XpcsFileError as exc:
            print(f"xpcsviewer fit: {exc.one_line()}", file=sys.stderr)
            errors.append({"path": exc.path, "error": exc.one_line()})
        bar(i + 1, len(args.files), Path(path).name)

    records: list[dict[str, Any]] = []
    if loaded:
        n_t = max(d["tau"].size for d in loaded)
        blocks = {k: [] for k in ("tau", "g2", "g2_err", "valid")}
        for d in loaded:
            nb, t = d["g2"].shape
            pad = n_t - t
            blocks["tau"].append(np.pad(np.broadcast_to(d["tau"], (nb, t)), ((0, 0), (0, pad)),
                                        constant_values=np.nan))
            blocks["g2"].append(np.pad(d["g2"], ((0, 0), (0, pad)), constant_values=np.nan))
            blocks["g2_err"].append(np.pad(d["g2_err"], ((0, 0), (0, pad)), constant_values=np.nan))
            blocks["valid"].append(np.pad(d["valid"], ((0, 0), (0, pad)), constant_values=False))
        stacked = {k: np.concatenate(v, axis=0) for k, v in blocks.items()}
        bar = TextProgressBar(f"fitting {stacked['g2'].shape[0]} curves", enabled=not quiet)
        fit = fit_g2(stacked["tau"], stacked["g2"], stacked["g2_err"], stacked["valid"],
                     model=args.model, t_range=t_range, device=device, progress=bar)
        start = 0
        for k, d in enumerate(loaded):
            nb = d["g2"].shape[0]
            sub = fit.select(slice(start, start + nb))
            start += nb
            verdict = diffusion_from_fit(d["q"], sub)
            bayes = None
            if args.bayes:
                from xpcsviewer.fitting.bayes import fit_g2_bayes

                bbar = TextProgressBar(f"NUTS {k + 1}/{len(loaded)}", enabled=not quiet)
                bayes = fit_g2_bayes(d["tau"], d["g2"], d["g2_err"], d["valid"], model=args.model,
                                     init=sub, t_range=t_range, progress=bbar)
            rec = fit_record(d["path"], d["q"], d["phi"], sub, verdict, bayes,
                             extra=_radius(verdict, d, args))
            rec["suspect_points_excluded"] = d["suspect_excluded"]
            records.append(rec)

    if suffix == ".json":
        write_fit_json(out, records, errors)
    elif suffix == ".csv":
        write_fit_csv(out, records)
    else:
        save_fit_hdf5(out, records)
    if not quiet:
        from collections import Counter

        counts = Counter(s for r in records for s in r["status"])
        n_all = sum(counts.values())
        parts = ", ".join(f"{n} {s}" for s, n in counts.most_common())
        verdicts = Counter(r["diffusion"]["verdict"] for r in records if "diffusion" in r)
        vtxt = ", ".join(f"{n} {v}" for v, n in verdicts.most_common())
        print(f"fitted {len(records)} file(s), {n_all} curves: {parts}; diffusion: {vtxt} -> {out}",
              file=sys.stderr)
    return EXIT_BAD_INPUT if errors else EXIT_OK
