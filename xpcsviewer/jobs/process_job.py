"""Run a job function in a spawned worker process, with progress and cancel.

Drawing matplotlib figures and writing a report are pure Python that holds the GIL for
seconds: in a worker *thread* of the window each holding stretch is a pause of the GUI
thread (docs/gui-stalls.md, issue 49 item 7). :func:`run_in_process` runs the same
function (its arguments and result picklable) in a fresh ``spawn`` process: the
window's process keeps its GIL. The child's progress calls come back through a queue;
a cancel (or any error in the caller) kills the child at once and raises
:class:`~xpcsviewer.progress.Cancelled`; an error in the child is raised again here
with its type and message (the child's traceback appended to the message).

Qt-free (jobs layer): the GUI submits ``run_in_process`` to its job runner like any job.
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import queue as _queue
import time
import traceback
from collections.abc import Callable
from typing import Any

from xpcsviewer.progress import Cancelled, CancelToken, ProgressCallback, report

__all__ = ["ProcessJobError", "run_in_process"]

_POLL_S = 0.05


class ProcessJobError(RuntimeError):
    """An error of the child whose type could not be raised again here."""


def _child(module: str, name: str, args: tuple, kwargs: dict, q: Any) -> None:
    def progress(done: int, total: int, message: str = "") -> None:
        q.put(("progress", (int(done), int(total), str(message))))

    if hasattr(os, "setpgrp"):  # its own process group: a cancel stops its pool too
        os.setpgrp()
    try:
        fn = getattr(importlib.import_module(module), name)
        out = fn(*args, progress=progress, cancel=None, **kwargs)
        q.put(("result", out))
    except BaseException as exc:  # everything goes back to the parent
        q.put(("error", (type(exc).__module__, type(exc).__qualname__, str(exc),
                         traceback.format_exc(limit=8))))


def _raise(module: str, qualname: str, message: str, tb: str) -> None:
    text = f"{message}\n(in the worker process)\n{tb}".rstrip()
    try:
        cls = getattr(importlib.import_module(module), qualname)
    except (ImportError, AttributeError):
        cls = None
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            exc = cls(message)
        except Exception:  # a constructor with other arguments
            exc = None
        if exc is not None:
            exc.add_note(tb.rstrip())
            raise exc
    raise ProcessJobError(f"{qualname}: {text}")


def run_in_process(fn: Callable[..., Any], *args: Any, progress: ProgressCallback | None = None,
                   cancel: CancelToken | None = None, timeout: float | None = None,
                   **kwargs: Any) -> Any:
    """``fn(*args, progress=..., cancel=None, **kwargs)`` in a spawned process; its result.

    ``fn`` must be a module-level function (the child imports it by name); its
    arguments and result are pickled. ``progress`` hears the child's progress;
    ``cancel`` (polled every 50 ms) kills the child and raises ``Cancelled``.
    """
    module, name = fn.__module__, fn.__qualname__
    if "<" in name or module == "__main__":
        raise ValueError(f"{name} cannot run in a worker process: not a module-level "
                         "function of an importable module")
    ctx = mp.get_context("spawn")  # JAX, Qt and matplotlib are not fork-safe
    q = ctx.Queue()
    # not a daemon: the job may start a process pool of its own (the report)
    proc = ctx.Process(target=_child, args=(module, name, args, kwargs, q),
                       name=f"xpcsviewer-{name}")
    proc.start()
    t_end = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            if cancel is not None and cancel.cancelled:
                raise Cancelled("cancelled")
            try:
                kind, value = q.get(timeout=_POLL_S)
            except _queue.Empty:
                if not proc.is_alive():
                    try:  # its last message may have come with its exit
                        kind, value = q.get(timeout=0.5)
                    except _queue.Empty:
                        raise ProcessJobError(
                            f"the worker process of {name} ended without a result (exit "
                            f"{proc.exitcode})") from None
                elif t_end is not None and time.monotonic() > t_end:
                    raise ProcessJobError(f"{name} took more than {timeout:.0f} s") from None
                else:
                    continue
            if kind == "progress":
                report(progress, cancel, *value)
            elif kind == "result":
                return value
            else:
                _raise(*value)
    finally:
        _stop(proc)
        q.close()


def _stop(proc: Any) -> None:
    """Kill the child and whatever it started (its process group), then reap it."""
    if proc.is_alive() and hasattr(os, "killpg"):
        try:
            os.killpg(proc.pid, 9)
        except (ProcessLookupError, PermissionError):
            pass
    if proc.is_alive():
        proc.kill()
    proc.join(5.0)
