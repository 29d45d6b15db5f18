"""Fill JAX's persistent compilation cache at install with the default fit programs.

A first ``fit --bayes`` in a fresh process with an empty cache spends most of its time
compiling (XLA: the least-squares programs of the automatic model choice and the NUTS
programs of each sampled model). The programs depend only on shapes and settings: the
delays padded to a power of two (``lsq_core`` / ``bayes_run``), the bins in chunks of
``bayes_run.BIN_CHUNK``, the chain count and the model. Tiny problems of those shapes,
fitted through the same functions, make the very programs a real file uses; they are
written to the cache of :func:`xpcsviewer.backends.cache.compilation_cache_dir`, so a
user's first fit loads them instead of compiling.

Groups (each in a process of its own, two at a time, so that a 2-core install
compiles in parallel; JAX compiles one program at a time per process):

- ``lsq``: the automatic least squares for <= 32 and <= 64 delays;
- ``nuts-cli``: NUTS of the command line's ``--bayes`` (``jobs.fit.BAYES_CHAINS``);
- ``nuts-gui``: NUTS of the window's defaults (``jobs.warmup.BAYES_DEFAULTS``).

``XPCS_PRECOMPILE_JAX`` chooses: ``all`` (default), ``lsq`` (no NUTS: a quicker CI
install), ``off``. Entries are per CPU, JAX version and device count: a cache is not
meant to be copied between machines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = ["GROUPS", "fill_programs", "groups_wanted", "run_group"]

#: every group, longest first (the order they are started in)
GROUPS = ("nuts-cli", "nuts-gui", "lsq")
PROGRAM = "xpcsviewer.commands._precompile"


def groups_wanted(value: str | None = None) -> tuple[str, ...]:
    """The groups ``XPCS_PRECOMPILE_JAX`` (or ``value``) asks for."""
    raw = (os.environ.get("XPCS_PRECOMPILE_JAX", "all") if value is None else value)
    raw = raw.strip().lower()
    if raw in ("", "all", "1", "yes", "on", "true"):
        return GROUPS
    if raw in ("off", "0", "no", "none", "false"):
        return ()
    if raw == "lsq":
        return ("lsq",)
    if raw == "nuts":
        return ("nuts-cli", "nuts-gui")
    raise ValueError(f"XPCS_PRECOMPILE_JAX={raw!r}: expected all, lsq, nuts or off")


def _chains(group: str) -> int:
    if group == "nuts-cli":
        from xpcsviewer.jobs.fit import BAYES_CHAINS

        return BAYES_CHAINS
    from xpcsviewer.jobs.warmup import BAYES_DEFAULTS

    return int(BAYES_DEFAULTS["num_chains"])


def run_group(group: str, cancel: CancelToken | None = None) -> dict[str, Any]:
    """Compile (or load) one group's programs in this process: ``{"seconds",
    "compiled", "cache_hits"}`` (XLA programs built or loaded, and of those loaded)."""
    if group not in GROUPS:
        raise ValueError(f"unknown JAX program group {group!r} (one of {', '.join(GROUPS)})")
    t0 = time.monotonic()
    from xpcsviewer.backends import get_backend
    from xpcsviewer.backends.jax_backend import compile_counts

    if get_backend().name != "jax":
        return {"seconds": 0.0, "compiled": 0, "cache_hits": 0, "skipped": "no JAX"}
    from xpcsviewer.jobs.warmup import _DELAYS, NUTS_MODELS, _curves

    before = compile_counts()
    if group == "lsq":
        from xpcsviewer.fitting import averaging_factors, fit_g2

        for n_t in _DELAYS:  # auto fits every candidate, single_avgcorr included
            tau, y, err, frames = _curves(n_t)
            fit_g2(tau, y, err, model="auto", aux=(averaging_factors(frames), 1e-5),
                   cancel=cancel)
    else:
        from xpcsviewer.fitting.bayes import fit_g2_bayes
        from xpcsviewer.fitting.spec import FitSpec, SamplerSpec
        from xpcsviewer.jobs.fit import BAYES_WARMUP

        for model in NUTS_MODELS:
            tau, y, err, _ = _curves(_DELAYS[-1], n_b=2, model=model)
            # one block of draws compiles the full run's programs (the warm-up's rule)
            spec = SamplerSpec(num_warmup=BAYES_WARMUP, num_samples=250,
                               num_chains=_chains(group), sample_all=True, extend=False,
                               device="auto")
            fit_g2_bayes(tau, y, err, fit=FitSpec(model=model), sampler=spec, cancel=cancel)
    after = compile_counts()
    return {"seconds": round(time.monotonic() - t0, 2),
            "compiled": after["compiled"] - before["compiled"],
            "cache_hits": after["cache_hits"] - before["cache_hits"]}


def _entries(path: Path | None) -> int:
    if path is None or not path.is_dir():
        return 0
    return sum(1 for p in path.iterdir() if p.name.endswith("-cache"))


def fill_programs(groups: tuple[str, ...] | None = None, jobs: int = 2,
                  progress: ProgressCallback | None = None,
                  cancel: CancelToken | None = None, quiet: bool = True) -> dict[str, Any]:
    """Run ``groups`` (default: :func:`groups_wanted`) in child processes, ``jobs`` at
    a time. Returns ``{"cache_dir", "entries" (before, after), "groups": {name:
    run_group's dict}, "seconds"}``; raises RuntimeError naming a group that failed."""
    from xpcsviewer.backends.cache import compilation_cache_dir

    t0 = time.monotonic()
    groups = groups_wanted() if groups is None else tuple(groups)
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        raise ValueError(f"unknown JAX program groups {unknown} (of {', '.join(GROUPS)})")
    cache = compilation_cache_dir()
    out: dict[str, Any] = {"cache_dir": None if cache is None else str(cache),
                           "groups": {}, "entries": [_entries(cache), _entries(cache)]}
    if cache is None or not groups:
        out["seconds"] = 0.0
        out["skipped"] = ("the compilation cache is off (XPCS_JAX_CACHE_DIR)" if cache is None
                          else "XPCS_PRECOMPILE_JAX=off")
        return out
    pending = [g for g in GROUPS if g in groups]
    running: list[tuple[subprocess.Popen, str, Any, Any]] = []
    failed: list[str] = []
    n_all = len(pending)
    report(progress, cancel, 0, n_all, "compiling the fit programs")
    try:
        while pending or running:
            if cancel is not None:
                cancel.raise_if_cancelled()
            while pending and len(running) < max(1, jobs):
                g = pending.pop(0)
                sink = tempfile.TemporaryFile(mode="w+")  # no pipe to fill up
                err = tempfile.TemporaryFile(mode="w+")
                cmd = [sys.executable, "-m", PROGRAM, "--jax-group", g]
                running.append((subprocess.Popen(cmd, stdout=sink, stderr=err), g, sink, err))
            time.sleep(0.1)
            for item in [r for r in running if r[0].poll() is not None]:
                running.remove(item)
                proc, g, sink, err = item
                sink.seek(0)
                err.seek(0)
                text, etext = sink.read(), err.read()
                sink.close()
                err.close()
                if proc.returncode != 0:
                    failed.append(f"{g} (exit {proc.returncode}: "
                                  f"{(etext.strip().splitlines() or [''])[-1][:200]})")
                    continue
                res = json.loads(text.strip().splitlines()[-1])
                out["groups"][g] = res
                report(progress, cancel, n_all - len(pending) - len(running), n_all,
                       f"compiled the fit programs: {g}")
                if not quiet:
                    print(f"  JAX {g}: {res['compiled']} programs ({res['cache_hits']} "
                          f"loaded from the cache) in {res['seconds']:.1f} s", file=sys.stderr)
    finally:
        for proc, _, sink, err in running:  # interrupted: stop the others
            proc.kill()
            proc.wait()
            sink.close()
            err.close()
    if failed:
        raise RuntimeError(f"compiling the JAX fit programs failed: {'; '.join(failed)}")
    out["entries"][1] = _entries(cache)
    out["seconds"] = round(time.monotonic() - t0, 2)
    return out
