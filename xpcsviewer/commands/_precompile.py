"""The command line of the install-time compile caches: numba's kernels
(:mod:`xpcsviewer.jobs.precompile`) and, with ``--jax``, JAX's fit programs
(:mod:`xpcsviewer.jobs.precompile_jax`); run by ``make install`` and as the child
processes of a fill."""

from __future__ import annotations

import argparse
import json
import os
import sys

from xpcsviewer.jobs.precompile import cache_status, precompile_kernels


def main(argv: list[str] | None = None) -> int:
    """``python -m xpcsviewer.commands._precompile``: fill the kernel cache (the install
    step, and the child processes of a fill)."""
    ap = argparse.ArgumentParser(
        prog="python -m xpcsviewer.commands._precompile",
        description="compile xpcsviewer's numba kernels into numba's cache, so that no "
                    "job waits for a compile")
    ap.add_argument("--check", action="store_true",
                    help="only say whether the cache is warm (exit 1 when it is not)")
    ap.add_argument("--force", action="store_true", help="run every task, even when warm")
    ap.add_argument("--jobs", type=int, default=0,
                    help="processes compiling at once (default: the CPU count, at most 4)")
    ap.add_argument("--group", help=argparse.SUPPRESS)
    ap.add_argument("--no-record", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    ap.add_argument("--progress", action="store_true",
                    help="print a JSON line per kernel set (for a parent process)")
    ap.add_argument("--nice", action="store_true",
                    help="run at low CPU priority (a background fill)")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--jax", action="store_true",
                    help="instead of the kernels, fill JAX's compilation cache with the "
                         "default fit programs (XPCS_PRECOMPILE_JAX=all|lsq|nuts|off)")
    ap.add_argument("--jax-group", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.jax_group or args.jax:
        return _jax(args)
    if args.check:
        st = cache_status()
        print(json.dumps(st) if args.json else
              f"{'warm' if st['warm'] else 'cold'}: {st['reason']} ({st['cache_dir']})")
        return 0 if st["warm"] else 1
    jobs = args.jobs if args.jobs > 0 else max(1, min(4, os.cpu_count() or 1))
    if args.nice and hasattr(os, "nice"):
        os.nice(10)

    def lines(done: int, total: int, message: str = "") -> None:
        name = message.split(": ", 1)[-1]
        print(json.dumps({"progress": [done, total, name]}), flush=True)

    try:
        res = precompile_kernels(lines if args.progress else None, force=args.force,
                                 jobs=jobs, group=args.group, record=not args.no_record,
                                 quiet=args.quiet or args.json)
    except Exception as exc:
        print(f"xpcsviewer precompile: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(res))
    elif not args.quiet:
        if not res["ran"]:
            print(f"numba kernels: cached already in {res['cache_dir']}", file=sys.stderr)
        else:
            print(f"numba kernels: {len(res['ran'])} kernel sets in "
                  f"{res['seconds']['total']:.1f} s, cached in {res['cache_dir']}",
                  file=sys.stderr)
    return 0


def _jax(args: argparse.Namespace) -> int:
    from xpcsviewer.jobs.precompile_jax import fill_programs, groups_wanted, run_group

    try:
        if args.jax_group:  # a child of a fill: its counts as one JSON line
            print(json.dumps(run_group(args.jax_group)), flush=True)
            return 0
        groups = groups_wanted()
        jobs = args.jobs if args.jobs > 0 else max(1, min(2, os.cpu_count() or 1))
        res = fill_programs(groups, jobs=jobs, quiet=args.quiet or args.json)
    except Exception as exc:
        print(f"xpcsviewer precompile --jax: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(res))
    elif not args.quiet:
        if res.get("skipped"):
            print(f"JAX fit programs: skipped ({res['skipped']})", file=sys.stderr)
        else:
            n = sum(g["compiled"] for g in res["groups"].values())
            hits = sum(g["cache_hits"] for g in res["groups"].values())
            print(f"JAX fit programs: {n} ({hits} cached already) in {res['seconds']:.1f} s, "
                  f"{res['entries'][1]} entries in {res['cache_dir']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
