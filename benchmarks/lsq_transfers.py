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
    .venv/bin/python benchmarks/lsq_transfers.py --expand             # the old transfers

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


def old_lm_solve_batch(model, t, y, sigma, mask, x0, lo, hi, free, aux=None, max_iter=200,
                       backend=None, device="auto", cancel=None, rows=None):
    """``lm_solve_batch`` before the curves stayed on the device (commit d7b84a3): each
    chunk's rows gathered on the host and sent, rows expanded per solve row."""
    from xpcsviewer.backends import get_backend, resolve_device
    from xpcsviewer.fitting import lm

    if rows is not None:
        t = np.broadcast_to(np.asarray(t, np.float64), y.shape)[rows]
        y, sigma, mask = y[rows], sigma[rows], mask[rows]
        aux = None if aux is None else (aux[0][rows], aux[1][rows])
    be = backend if backend is not None else get_backend()
    n_b, n_t = y.shape
    n_par = x0.shape[1]
    if aux is None:
        aux_m, aux_dt = np.ones((n_b, n_t)), np.ones(n_b)
    else:
        aux_m = np.broadcast_to(np.asarray(aux[0], dtype=np.float64), (n_b, n_t)).copy()
        aux_dt = np.broadcast_to(np.asarray(aux[1], dtype=np.float64), (n_b,)).copy()
    dev = resolve_device(device, work=float(n_b * n_t)) if be.name == "jax" else None
    unit_stretch = bool(model in (lm.G2Model.SINGLE, lm.G2Model.STRETCHED)
                        and not free[2] and np.all(x0[:, 2] == 1.0))
    solver = lm._solver_cached(be.name, model, n_par, int(max_iter), unit_stretch)
    t_all = np.broadcast_to(np.asarray(t, np.float64), (n_b, n_t))
    w_all = 1.0 / np.asarray(sigma, np.float64)
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    free_dev = be.asarray(np.asarray(free, bool), device=dev)
    rpc = lm.LM_ROWS if be.name == "jax" else n_b
    first_pass = 10 if be.name == "jax" else int(max_iter)
    x_cur = np.asarray(x0, np.float64).copy()
    lam, it = np.full(n_b, 1e-3), np.zeros(n_b, np.int64)
    code = np.full(n_b, lm.CODE_RUNNING, np.int64)
    cost, jac = np.full(n_b, np.nan), np.full((n_b, n_t, n_par), np.nan)
    active = np.arange(n_b)
    for it_stop in (first_pass, int(max_iter)):
        for s in range(0, active.size, max(1, rpc)):
            r = active[s:s + rpc]
            idx = np.concatenate([r, np.full(max(0, rpc - r.size), r[0])]) \
                if be.name == "jax" else r
            args = [t_all[idx], y[idx], w_all[idx], mask[idx], lo[idx], hi[idx],
                    aux_m[idx], aux_dt[idx]]
            out = solver(*(be.asarray(a, device=dev) for a in args), free_dev,
                         be.asarray(x_cur[idx], device=dev), be.asarray(lam[idx], device=dev),
                         be.asarray(it[idx], device=dev), np.int64(it_stop))
            out = be.block_until_ready(out)
            xs, cs, js, ls, its, codes = (be.to_numpy(o)[: r.size] for o in out)
            x_cur[r], cost[r], jac[r] = xs, cs, js
            lam[r], it[r], code[r] = ls, its, codes
        active = active[code[active] == lm.CODE_RUNNING]
        if not active.size:
            break
    return x_cur, cost, jac, it, code


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
    ap.add_argument("--expand", action="store_true",
                    help="the transfers before: rows gathered on the host, sent per chunk")
    a = ap.parse_args(argv)
    if a.expand:
        import xpcsviewer.fitting.lsq_core as core

        core.lm_solve_batch = old_lm_solve_batch

    from fit import make_problem

    from xpcsviewer.backends import get_backend, get_transfer_stats, reset_transfer_stats
    from xpcsviewer.backends.jax_backend import compile_counts
    from xpcsviewer.fitting import fit_g2

    tau, g2, err, _ = make_problem(a.files, a.bins, a.delays)
    data_bytes = 3 * g2.size * 8
    be = get_backend("jax")
    sites = _site_counter() if a.breakdown else None
    out: dict = {"curves": g2.shape[0], "delays": g2.shape[1], "model": a.model,
                 "data_bytes": data_bytes, "expand": a.expand, "device_arg": a.device}
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
