"""Host->device bytes, copies and compiled programs of one least-squares fit (JAX).

The fit of ``--files`` x ``--bins`` curves of ``--delays`` points (default 100 x 36 x 60 =
3600 x 60, the case of docs/device-routing.md), run twice in this process: the first
call compiles (``compile_counts``), the second is warm and must compile nothing. The
bytes are the JAX backend's placement counters (``get_transfer_stats``) for the warm
call; ``data`` is tau, g2 and g2_err as (B, T) float64 (3 x B x T x 8 bytes).

    .venv/bin/python benchmarks/lsq_transfers.py                      # 3600 x 60, single
    .venv/bin/python benchmarks/lsq_transfers.py --files 1000 --json out.json
    .venv/bin/python benchmarks/lsq_transfers.py --save r.npz         # results, to compare
    .venv/bin/python benchmarks/lsq_transfers.py --compare r.npz      # ... with a saved run
    .venv/bin/python benchmarks/lsq_transfers.py --breakdown          # bytes per call site

``--device`` is passed to ``fit_g2`` (``auto``, ``cpu``, ``gpu``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _result_arrays(res) -> dict[str, np.ndarray]:
    # every field of the result as arrays (dicts flattened; statuses as strings)
    out: dict[str, np.ndarray] = {}
    for f in dataclasses.fields(res):
        v = getattr(res, f.name)
        items = v.items() if isinstance(v, dict) else [("", v)]
        for k, a in items:
            if a is None or isinstance(a, (str, bool, tuple)):
                continue
            arr = np.asarray(a)
            if arr.dtype == object:
                arr = np.array([str(getattr(x, "value", x)) for x in arr.ravel()]).reshape(
                    arr.shape)
            out[f"{f.name}.{k}" if k else f.name] = arr
    return out


def compare(a: dict, b: dict) -> dict:
    """Largest relative difference per numeric field; names of fields that differ."""
    worst, differ = 0.0, []
    for k in sorted(set(a) | set(b)):
        if k not in a or k not in b or a[k].shape != b[k].shape:
            differ.append(k)
            continue
        x, y = a[k], b[k]
        if x.dtype.kind in "fc":
            same = (x == y) | (np.isnan(x) & np.isnan(y))
            if not same.all():
                with np.errstate(invalid="ignore", divide="ignore"):
                    rel = np.abs(x - y) / np.maximum(np.abs(x), np.abs(y))
                r = float(np.nanmax(np.where(same, 0.0, rel)))
                worst = max(worst, r if np.isfinite(r) else np.inf)
                if not np.isfinite(r) or r > 1e-12:
                    differ.append(k)
        elif not np.array_equal(x, y):
            differ.append(k)
    return {"max_rel_diff": worst, "fields_differ": differ}


def _site_counter() -> Counter:
    # bytes per (caller in lsq/lsq_core, callee frame) of every counted copy
    import xpcsviewer.backends.jax_backend as jb

    sites: Counter = Counter()
    orig = jb.count_host_to_device

    def count(nbytes: int) -> None:
        f, outer, inner = sys._getframe(1), None, None
        while f is not None:
            name = os.path.basename(f.f_code.co_filename)
            if inner is None and name in ("lm.py", "grid.py"):
                inner = f"{name}:{f.f_code.co_name}"
            if name in ("lsq_core.py", "lsq.py"):
                outer = f"{name}:{f.f_lineno}"
                break
            f = f.f_back
        sites[(outer, inner, "bytes")] += int(nbytes)
        sites[(outer, inner, "copies")] += 1
        orig(nbytes)

    jb.count_host_to_device = count
    return sites


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--bins", type=int, default=36)
    ap.add_argument("--delays", type=int, default=60)
    ap.add_argument("--model", default="single")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--save", type=Path, help="write the warm fit's results (.npz)")
    ap.add_argument("--compare", type=Path, help="compare with results saved by --save")
    ap.add_argument("--breakdown", action="store_true")
    a = ap.parse_args(argv)

    from fit import make_problem

    from xpcsviewer.backends import get_backend, get_transfer_stats, reset_transfer_stats
    from xpcsviewer.backends.jax_backend import compile_counts
    from xpcsviewer.fitting import fit_g2

    tau, g2, err, _ = make_problem(a.files, a.bins, a.delays)
    data_bytes = 3 * g2.size * 8
    be = get_backend("jax")
    sites = _site_counter() if a.breakdown else None
    out: dict = {"curves": g2.shape[0], "delays": g2.shape[1], "model": a.model,
                 "data_bytes": data_bytes}
    for run in ("cold", "warm"):
        if sites is not None:
            sites.clear()
        reset_transfer_stats()
        c0 = compile_counts()
        t0 = time.perf_counter()
        res = fit_g2(tau, g2, err, model=a.model, backend=be, device=a.device)
        dt = time.perf_counter() - t0
        s = get_transfer_stats()
        c1 = compile_counts()
        out[run] = {
            "seconds": round(dt, 3),
            "h2d_bytes": s.host_to_device_bytes,
            "h2d_copies": s.host_to_device_count,
            "h2d_over_data": round(s.host_to_device_bytes / data_bytes, 3),
            "d2h_bytes": s.device_to_host_bytes,
            "d2h_copies": s.device_to_host_count,
            "lowered": c1["lowered"] - c0["lowered"],
            "compiled": c1["compiled"] - c0["compiled"],
            "cache_hits": c1["cache_hits"] - c0["cache_hits"],
        }
    from xpcsviewer.backends import get_device_manager

    out["device"] = get_device_manager().describe()
    if sites is not None:
        out["breakdown"] = sorted(
            ({"caller": o, "site": i, "bytes": sites[(o, i, "bytes")],
              "copies": sites[(o, i, "copies")]}
             for (o, i, kind) in list(sites) if kind == "bytes"),
            key=lambda r: -r["bytes"])
    arrays = _result_arrays(res)
    out["statuses"] = dict(Counter(arrays["status"].tolist()))
    if a.save:
        np.savez_compressed(a.save, **arrays)
    if a.compare:
        with np.load(a.compare) as z:
            out["compare"] = compare({k: z[k] for k in z.files}, arrays)
    text = json.dumps(out, indent=1, default=str)
    print(text)
    if a.json:
        a.json.write_text(text + "\n")
    return out


if __name__ == "__main__":
    main()
