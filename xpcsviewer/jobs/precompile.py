"""Compile the numba kernels ahead of use, into numba's on-disk cache.

The compiled CPU correlators (:data:`KERNEL_MODULES`) are numba functions with
``cache=True``: the first call for a set of argument types compiles the kernel (seconds:
~5-8 s for the multi-tau update of one frame dtype on 2 cores) and stores the machine
code in numba's cache; any later process loads it in milliseconds. A kernel is compiled
per signature, so each frame dtype (uint8 ... float64) and each hit layout of the photon
readers is a compile of its own. :func:`precompile_kernels` makes those first calls,
on tiny inputs through the jobs' own code (the correlators and accumulators, never the
kernels directly), so the cache holds exactly what the jobs ask for:

- at install: ``make install`` / ``make test`` / ``make demo`` run
  ``python -m xpcsviewer.jobs.precompile`` after ``pip install`` and again whenever a
  kernel module changes;
- at the GUI's first start (a cleaned cache, a new version, another user of a read-only
  install): the start-up warm-up runs :func:`ensure_kernels` in a worker; when
  :func:`cache_status` says the cache is cold it fills it in a low-priority child process.
  A job that needs a kernel meanwhile compiles just that one (:func:`guard_cache_writes`
  keeps the two processes' index updates apart).

Where the cache is: numba's choice, unchanged (``NUMBA_CACHE_DIR`` when set; else the
``__pycache__`` folder beside the kernel modules when it is writable, as in the project's
editable install; else numba's per-user folder, ``~/.cache/numba``). :func:`cache_dir`
says which. Numba stamps each kernel's index with a hash of its module's source: an
edited module starts with an empty index, which :func:`cache_status` reports as cold,
so the same mechanism refills it. Entries are per CPU model, so a cache is not meant to
be copied between machines.

After a complete run a small record (``xpcsviewer-kernels.pyXY.json``, in the cache
folder) lists the signatures each task produced; :func:`cache_status` checks them
against numba's index files without loading any machine code.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import json
import os
import signal
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from xpcsviewer.progress import CancelToken, ProgressCallback, report

__all__ = [
    "DENSE_DTYPES",
    "HIT_LAYOUTS",
    "HIT_VALUES",
    "KERNEL_MODULES",
    "cache_dir",
    "cache_status",
    "ensure_kernels",
    "guard_cache_writes",
    "kernel_dispatchers",
    "precompile_kernels",
    "tasks",
]

from xpcsviewer.jobs._precompile_tasks import (
    DENSE_DTYPES,
    HIT_LAYOUTS,
    HIT_VALUES,
    KERNEL_MODULES,
    Task,
    tasks,
)

_RECORD = "xpcsviewer-kernels.py{}{}.json"
#: the command line that fills the cache (the install step; each child of a fill)
PROGRAM = "xpcsviewer.commands._precompile"


# ----------------------------------------------------------------------------- numba
def available() -> bool:
    """Whether numba is installed (without it nothing is compiled: NumPy engines run)."""
    return importlib.util.find_spec("numba") is not None


def kernel_dispatchers() -> dict[str, Any]:
    """``{"module.function": dispatcher}`` of every numba kernel of :data:`KERNEL_MODULES`
    (importing them imports numba, not compiling anything)."""
    from numba.core.registry import CPUDispatcher

    out: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in KERNEL_MODULES:
            mod = importlib.import_module(name)
            for attr, obj in vars(mod).items():
                if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == name:
                    out[f"{name}.{attr}"] = obj
    return out


def _cache_of(disp: Any) -> Any:
    """numba's per-function cache object (``None`` when caching is off)."""
    cache = getattr(disp, "_cache", None)
    return cache if hasattr(cache, "cache_path") else None


def cache_dir() -> str | None:
    """The folder numba keeps the kernels' cache in (None: caching unavailable)."""
    if not available():
        return None
    for disp in kernel_dispatchers().values():
        cache = _cache_of(disp)
        if cache is not None:
            return str(cache.cache_path)
    return None


def _record_path() -> Path | None:
    d = cache_dir()
    return None if d is None else Path(d) / _RECORD.format(*sys.version_info[:2])


def _sources() -> dict[str, str]:
    """sha256 of each kernel module's source (numba stamps its index the same way) and
    of the tasks' (they decide the signatures)."""
    out = {}
    for name in (*KERNEL_MODULES, "xpcsviewer.jobs.precompile",
                 "xpcsviewer.jobs._precompile_tasks", PROGRAM):
        spec = importlib.util.find_spec(name)
        path = Path(spec.origin) if spec and spec.origin else None
        out[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path else ""
    return out


def _cached_signatures(disp: Any) -> set[str] | None:
    """Signatures (as ``str`` of the argument types) numba's index holds for ``disp`` on
    this machine's CPU and for its current source; None when it cannot be read."""
    cache = _cache_of(disp)
    if cache is None:
        return None
    try:
        # the key of any signature carries this CPU's codegen magic and the bytecode hash
        probe = cache._index_key((), disp.targetctx.codegen())
        index = cache._cache_file._load_index()
    except Exception:  # numba internals moved: treat as unknown (cold)
        return None
    return {str(k[0]) for k in index if k[1:] == probe[1:]}


def _identity() -> dict[str, Any]:
    import numba

    return {"numba": numba.__version__, "python": list(sys.version_info[:2]),
            "sources": _sources()}


def cache_status() -> dict[str, Any]:
    """Whether the cache holds every kernel signature the jobs use, without loading any.

    Returns ``{"warm": bool, "cache_dir": str | None, "missing": [task names],
    "reason": str}``; ``missing`` lists every task when no complete precompilation of
    the current kernel sources was recorded in this cache.
    """
    names = [t.name for t in tasks()]
    if not available():
        return {"warm": True, "cache_dir": None, "missing": [],
                "reason": "numba is not installed (the NumPy engines run)"}
    out: dict[str, Any] = {"warm": False, "cache_dir": cache_dir(), "missing": names}
    path = _record_path()
    if path is None:
        return {**out, "reason": "numba's cache is unavailable for the kernels"}
    from xpcsviewer.backends.json_file import read_json_object

    rec, why = read_json_object(path, "kernel precompilation record")
    tasks_rec = rec.get("tasks") if rec is not None else None
    if rec is None or not isinstance(tasks_rec, dict):
        return {**out, "reason": "no precompilation recorded in this cache"
                + (f" ({why})" if why else "")}
    if {k: rec.get(k) for k in ("numba", "python", "sources")} != _identity():
        return {**out, "reason": "the kernels, numba or Python changed since the last "
                                 "precompilation"}
    disps = kernel_dispatchers()
    have = {name: _cached_signatures(d) for name, d in disps.items()}
    missing = []
    for task in names:
        pairs = tasks_rec.get(task)
        if not (isinstance(pairs, list) and all(
                isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
                for p in pairs)):
            missing.append(task)  # not recorded, or not as this version writes it
            continue
        for kernel, sig in pairs:
            if kernel not in have or have[kernel] is None or sig not in have[kernel]:
                missing.append(task)
                break
    if missing:
        return {**out, "missing": missing,
                "reason": f"{len(missing)} of {len(names)} kernel sets are not cached"}
    return {**out, "warm": True, "missing": [], "reason": "every kernel is cached"}


def _signatures(disps: dict[str, Any]) -> set[tuple[str, str]]:
    return {(name, str(sig)) for name, d in disps.items() for sig in d.signatures}


def _run_tasks(todo: list[Task], progress: ProgressCallback | None,
               cancel: CancelToken | None, done0: int = 0,
               total: int | None = None) -> dict[str, Any]:
    """Run ``todo`` in this process: ``{"seconds": {task: s}, "tasks": {task: [[kernel,
    signature], ...]}}`` (the signatures each task asked numba for)."""
    disps = kernel_dispatchers()
    total = len(todo) if total is None else total
    secs: dict[str, float] = {}
    sigs: dict[str, list[list[str]]] = {}
    for i, task in enumerate(todo):
        report(progress, cancel, done0 + i, total, f"compiling kernels: {task.name}")
        before = _signatures(disps)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numba's notices about caching and threads
            task.run()
        secs[task.name] = round(time.perf_counter() - t0, 3)
        # a signature loaded or compiled earlier in this process is not new: ask each
        # kernel which of its signatures this task's argument types select
        sigs[task.name] = sorted([k, s] for k, s in _signatures(disps) - before)
    return {"seconds": secs, "tasks": sigs}


def _write_record(task_sigs: dict[str, list[list[str]]]) -> None:
    path = _record_path()
    if path is None:
        return
    rec = {**_identity(), "tasks": task_sigs}
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    try:
        tmp.write_text(json.dumps(rec, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)


#: Groups by their compile time, longest first (the dense update of six dtypes: ~45 %).
_GROUP_ORDER = ("dense", "photons", "photon-sums", "twotime")


def _run_groups(groups: list[list[Task]], jobs: int, quiet: bool,
                progress: ProgressCallback | None = None,
                cancel: CancelToken | None = None) -> dict[str, Any]:
    """Each group in a fresh process (``jobs`` at a time, the longest first): no two
    processes compile the same kernel, so numba's index files see one writer each.
    ``progress`` hears of each group as it ends."""
    import subprocess
    import tempfile

    rank = {g: i for i, g in enumerate(_GROUP_ORDER)}
    pending = sorted((g[0].group for g in groups), key=lambda g: rank.get(g, len(rank)))
    running: list[tuple[subprocess.Popen, str, Any]] = []
    out: dict[str, Any] = {"seconds": {}, "tasks": {}}
    failed: list[str] = []
    n_all, n_done = len(pending), 0
    try:
        while pending or running:
            if cancel is not None:
                cancel.raise_if_cancelled()
            while pending and len(running) < jobs:
                group = pending.pop(0)
                cmd = [sys.executable, "-m", PROGRAM, "--json",
                       "--group", group, "--force", "--no-record"]
                sink = tempfile.TemporaryFile(mode="w+")  # no pipe to fill up
                running.append((subprocess.Popen(cmd, stdout=sink), group, sink))
            time.sleep(0.1)
            for item in [r for r in running if r[0].poll() is not None]:
                running.remove(item)
                proc, group, sink = item
                n_done += 1
                sink.seek(0)
                text = sink.read()
                sink.close()
                if proc.returncode != 0:
                    failed.append(group)
                    report(progress, cancel, n_done, n_all, f"compiling kernels: {group} FAILED")
                    continue
                report(progress, cancel, n_done, n_all, f"compiling kernels: {group}")
                res = json.loads(text.strip().splitlines()[-1])
                res["seconds"].pop("total", None)
                out["seconds"].update(res["seconds"])
                out["tasks"].update(res["tasks"])
                if not quiet:
                    print(f"  {group}: {len(res['seconds'])} kernel sets, "
                          f"{sum(res['seconds'].values()):.1f} s", file=sys.stderr)
    finally:
        for proc, _, sink in running:  # interrupted: stop the others
            proc.kill()
            proc.wait()
            sink.close()
    if failed:
        raise RuntimeError(f"precompiling the kernel groups {failed} failed")
    return out


_GUARD_LOCK = threading.Lock()
_GUARDED: list[bool] = []


def guard_cache_writes() -> bool:
    """Serialise numba's cache index updates between processes (POSIX).

    numba updates a kernel's index by read, add, write: two processes saving different
    signatures of one kernel at the same moment could both take the same data-file
    number. With this guard each update holds an advisory lock (``INDEX.nbi.lock``
    beside the index); :func:`ensure_kernels` installs it in the process that starts
    the background compile, which installs it too. Returns whether it is installed.
    """
    with _GUARD_LOCK:
        if _GUARDED:
            return _GUARDED[0]
        try:
            import fcntl

            from numba.core.caching import IndexDataCacheFile
            orig = IndexDataCacheFile.save
        except (ImportError, AttributeError):
            _GUARDED.append(False)
            return False

        @functools.wraps(orig)
        def save(self: Any, key: Any, data: Any) -> Any:
            index = getattr(self, "_index_path", None)
            try:
                fd = os.open(f"{index}.lock", os.O_RDWR | os.O_CREAT, 0o666)
            except (OSError, TypeError):
                return orig(self, key, data)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                return orig(self, key, data)
            finally:
                os.close(fd)  # releases the lock

        IndexDataCacheFile.save = save
        _GUARDED.append(True)
        return True


def ensure_kernels(progress: ProgressCallback | None = None,
                   cancel: CancelToken | None = None, *, jobs: int = 1,
                   nice: bool = True) -> dict[str, Any]:
    """The GUI's start-up hook: when :func:`cache_status` finds the cache cold, fill it
    in a child process at low priority (the window's process keeps its CPU, memory and
    GIL; ``cancel`` stops the child at once). Progress lines are relayed.
    ``jobs`` > 1 compiles that many kernel groups at once and ``nice=False`` at normal
    priority: for a command that waits on it (``device --calibrate``).

    Returns :func:`precompile_kernels`' dict (``"ran": []`` when the cache was warm).
    """
    import subprocess

    t0 = time.monotonic()
    if not available():
        return precompile_kernels()
    status = cache_status()
    if status["warm"]:
        return {"cache_dir": status["cache_dir"], "was_warm": True, "ran": [], "tasks": {},
                "seconds": {"total": round(time.monotonic() - t0, 3)},
                "reason": status["reason"]}
    guard_cache_writes()
    report(progress, cancel, 0, len(status["missing"]), "compiling the correlators "
           "(first run only)")
    cmd = [sys.executable, "-m", PROGRAM, "--jobs",
           str(max(1, int(jobs))), "--json", "--progress", *(["--nice"] if nice else [])]
    # its own process group: with jobs > 1 it starts compilers of its own, and a cancel
    # (a kill) must stop them too
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, start_new_session=hasattr(os, "killpg"))
    lines: list[str] = []

    def stop() -> None:
        if hasattr(os, "killpg"):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        proc.kill()
        proc.wait()

    def relay() -> None:
        for line in proc.stdout:
            lines.append(line)
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "progress" in msg and progress is not None:
                done, total, name = msg["progress"]
                progress(done, total, f"compiling the correlators: {name}")

    reader = threading.Thread(target=relay, name="precompile-relay", daemon=True)
    reader.start()
    try:
        while proc.poll() is None:
            if cancel is not None and cancel.cancelled:
                stop()
                cancel.raise_if_cancelled()
            time.sleep(0.2)
    except BaseException:
        if proc.poll() is None:
            stop()
        raise
    reader.join(5.0)
    if proc.returncode != 0:
        raise RuntimeError(f"precompiling the kernels failed (exit {proc.returncode})")
    out = json.loads(lines[-1])
    out["seconds"]["total"] = round(time.monotonic() - t0, 3)
    return out


def precompile_kernels(progress: ProgressCallback | None = None,
                       cancel: CancelToken | None = None, *, force: bool = False,
                       jobs: int = 1, group: str | None = None,
                       record: bool = True, quiet: bool = True) -> dict[str, Any]:
    """Fill numba's cache with every kernel signature the jobs use.

    Returns ``{"cache_dir", "was_warm", "ran": [task names], "seconds": {"total",
    task: s}, "reason"}``: nothing runs when :func:`cache_status` finds the cache warm
    (unless ``force``); else the missing tasks run (a task whose kernels are cached
    only loads them). ``jobs`` > 1 runs the kernel groups in that many processes at
    once (install time); ``group`` restricts to one group. Qt-free; safe in a worker
    thread (numba compiles one kernel at a time per process).
    """
    t0 = time.monotonic()
    if not available():
        return {"cache_dir": None, "was_warm": True, "ran": [], "tasks": {},
                "seconds": {"total": 0.0}, "reason": "numba is not installed"}
    guard_cache_writes()
    every = tasks()
    status = cache_status()
    out: dict[str, Any] = {"cache_dir": status["cache_dir"], "was_warm": status["warm"],
                           "reason": status["reason"]}
    todo = every if force else [t for t in every if t.name in set(status["missing"])]
    if group is not None:
        todo = [t for t in todo if t.group == group]
    if not todo:
        return {**out, "ran": [], "tasks": {},
                "seconds": {"total": round(time.monotonic() - t0, 3)}}
    if jobs > 1 and group is None:
        by_group: dict[str, list[Task]] = {}
        for t in todo:
            by_group.setdefault(t.group, []).append(t)
        report(progress, cancel, 0, len(by_group), "compiling kernels")
        res = _run_groups(list(by_group.values()), jobs, quiet, progress, cancel)
    else:
        res = _run_tasks(todo, progress, cancel)
    if record:
        prev = {}
        if not force and status.get("warm") is False and len(todo) < len(every):
            prev = _previous_tasks()
        merged = {**prev, **res["tasks"]}
        if all(t.name in merged for t in every):
            _write_record(merged)
    report(progress, cancel, 1, 1, "kernels compiled")
    return {**out, "ran": [t.name for t in todo], "tasks": res["tasks"],
            "seconds": {"total": round(time.monotonic() - t0, 3), **res["seconds"]}}


def _previous_tasks() -> dict[str, Any]:
    path = _record_path()
    try:
        rec = json.loads(path.read_text(encoding="utf-8")) if path else {}
    except (OSError, ValueError):
        return {}
    return rec.get("tasks", {}) if {k: rec.get(k) for k in ("numba", "python", "sources")} \
        == _identity() else {}
