"""The fits in a worker process: JAX's tracing and compiling never hold the GUI's GIL.

JAX traces and compiles in pure Python that holds the GIL for 0.5-1.5 s at a time; in a
thread of the GUI process that stalls the window (docs/gui-stalls.md, issue 49 item 7).
:class:`FitProcess` runs such calls in one persistent ``spawn`` child, started lazily
and kept warm (its compiled programs stay loaded; the persistent compilation cache of
:mod:`xpcsviewer.backends.cache` keeps them across starts). Inputs and outputs are
pickled (NumPy arrays, dataclasses); progress comes back over the pipe; a cancel sets an
event the child's token reads. Calls take turns by priority: a user's fit goes before
the warm-up, and a *yielding* call (the sampler warm-up) is cancelled when a call of
higher priority waits. A child that dies is a :class:`FitProcessError` for the call
running, and the next call starts a new one. Qt-free.

``XPCS_FIT_PROCESS=0`` runs the calls in the caller's thread instead (tests, debugging).
"""

from __future__ import annotations

import contextlib
import heapq
import importlib
import itertools
import os
import threading
import time
import traceback
from collections.abc import Iterator
from typing import Any

from xpcsviewer.progress import Cancelled, CancelToken

__all__ = [
    "PRIORITY_FIT",
    "PRIORITY_WARMUP",
    "PRIORITY_WARMUP_NUTS",
    "FitProcess",
    "FitProcessError",
    "Yielded",
    "fit_process",
    "probe",
    "process_enabled",
    "run_fit_call",
    "shutdown_fit_process",
]

PRIORITY_FIT = 10
PRIORITY_WARMUP = 5
PRIORITY_WARMUP_NUTS = 0
#: a cancelled call that does not answer within this time: the child is ended
CANCEL_GRACE_S = 8.0


class FitProcessError(RuntimeError):
    """The fitting process stopped (crashed or was killed) during a call."""


class Yielded(Exception):  # the name reads as an event
    """A yielding call was cancelled because a call of higher priority waited."""


def process_enabled() -> bool:
    """Whether fits run in the worker process (``XPCS_FIT_PROCESS=0``: in-thread)."""
    return os.environ.get("XPCS_FIT_PROCESS", "1").strip().lower() not in ("0", "false", "no")


def _resolve(target: str):
    mod, _, name = target.partition(":")
    if not mod.startswith("xpcsviewer.") or not name:
        raise ValueError(f"not a fit-process target: {target!r}")
    return getattr(importlib.import_module(mod), name)


# ---------------------------------------------------------------- the child
class _EventToken(CancelToken):
    """A cancel token over the parent's multiprocessing event."""

    def __init__(self, event) -> None:
        self._event = event


def _serve(conn, cancel_event) -> None:
    """The child's loop: one call at a time, ``None`` ends it."""
    from xpcsviewer.backends import use_config

    lock = threading.Lock()

    def send(msg) -> None:
        with lock:
            conn.send(msg)

    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        tid, target, args, kwargs, config = msg

        def progress(done, total, message="", _tid=tid) -> None:
            send(("progress", _tid, (int(done), int(total), str(message))))

        try:
            with use_config(config):
                out = _resolve(target)(*args, progress=progress,
                                       cancel=_EventToken(cancel_event), **kwargs)
            reply = ("result", tid, out)
        except Cancelled:
            reply = ("cancelled", tid, None)
        except BaseException as exc:  # every failure goes back to the caller
            reply = ("error", tid, (type(exc).__name__, str(exc), traceback.format_exc()))
        try:
            send(reply)
        except Exception as exc:  # a result that cannot be pickled
            send(("error", tid, (type(exc).__name__, f"result not sendable: {exc}",
                                 traceback.format_exc())))


def probe(seconds: float = 0.0, fail: str = "", progress=None, cancel=None) -> int:
    """A call that only waits (checking ``cancel`` and reporting progress every
    20 ms) and returns the process id: the checks of the plumbing (tests, debugging)."""
    from xpcsviewer.progress import report

    n = max(1, int(seconds / 0.02))
    for k in range(n if seconds > 0 else 0):
        report(progress, cancel, k, n, "waiting")
        time.sleep(0.02)
    if fail:
        raise ValueError(fail)
    return os.getpid()


# ----------------------------------------------------------------- turns
class _Turns:
    """One call at a time, the highest priority first (then first come)."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._busy = False
        self._waiting: list[tuple[int, int]] = []
        self._seq = itertools.count()

    @contextlib.contextmanager
    def turn(self, priority: int, cancel: CancelToken | None) -> Iterator[None]:
        entry = (-priority, next(self._seq))
        with self._cv:
            heapq.heappush(self._waiting, entry)
            try:
                while self._busy or self._waiting[0] != entry:
                    if cancel is not None and cancel.cancelled:
                        raise Cancelled()
                    self._cv.wait(0.1)
            except BaseException:
                self._waiting.remove(entry)
                heapq.heapify(self._waiting)
                self._cv.notify_all()
                raise
            heapq.heappop(self._waiting)
            self._busy = True
        try:
            yield
        finally:
            with self._cv:
                self._busy = False
                self._cv.notify_all()

    def waiting_above(self, priority: int) -> bool:
        with self._cv:
            return any(-p > priority for p, _ in self._waiting)


# ----------------------------------------------------------------- parent
@contextlib.contextmanager
def _main_not_rerun() -> Iterator[None]:
    # A spawn child runs the parent's main script again (as __mp_main__) unless told
    # otherwise: the app's, a benchmark's or a test runner's main has no business
    # there, and one without the __main__ guard would start a child of its own. The
    # child needs only this module, pickled by name.
    import sys

    main = sys.modules.get("__main__")
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__")
             if main is not None and k in main.__dict__}
    try:
        if main is not None:
            main.__dict__.pop("__file__", None)
            main.__spec__ = None
        yield
    finally:
        if main is not None:
            main.__dict__.update(saved)
            if "__spec__" not in saved:
                main.__dict__.pop("__spec__", None)


class FitProcess:
    """A lazily started, persistent ``spawn`` child that runs fit calls."""

    def __init__(self) -> None:
        self._turns = _Turns()
        self._start_lock = threading.Lock()
        self._proc = None
        self._conn = None
        self._cancel = None
        self._ids = itertools.count(1)
        self.starts = 0  #: how many children were started (tests)

    @property
    def pid(self) -> int | None:
        """The child's process id (None before the first call)."""
        p = self._proc
        return p.pid if p is not None and p.is_alive() else None

    def _ensure(self):
        with self._start_lock:
            if self._proc is not None and self._proc.is_alive():
                return self._conn
            self._drop()
            import multiprocessing as mp

            ctx = mp.get_context("spawn")
            parent, child = ctx.Pipe()
            self._cancel = ctx.Event()
            proc = ctx.Process(target=_serve, args=(child, self._cancel), daemon=True,
                               name="xpcsviewer-fits")
            with _main_not_rerun():
                proc.start()
            child.close()
            self._proc, self._conn = proc, parent
            self.starts += 1
            return parent

    def _drop(self) -> None:
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()
        if proc is not None and proc.is_alive():
            proc.kill()
            proc.join(2)

    def call(self, target: str, *args: Any, progress=None, cancel: CancelToken | None = None,
             priority: int = PRIORITY_FIT, yielding: bool = False, **kwargs: Any) -> Any:
        """Run ``target`` ("module:function", called with ``progress=`` and ``cancel=``)
        in the child and return its result (blocks the calling thread, never the GUI's).

        Raises :class:`~xpcsviewer.progress.Cancelled` when ``cancel`` fired,
        :class:`Yielded` when a yielding call gave way, :class:`FitProcessError` when
        the child died (the next call starts a new one), and the child's exception
        otherwise (as a ``RuntimeError`` naming its type).
        """
        from xpcsviewer.backends import current_config

        config = current_config()
        with self._turns.turn(priority, cancel):
            conn = self._ensure()
            tid = next(self._ids)
            self._cancel.clear()
            conn.send((tid, target, args, kwargs, config))
            cancelled_at = None
            yielded = False
            while True:
                try:
                    ready = conn.poll(0.05)
                except (EOFError, OSError):
                    ready = False
                if ready:
                    try:
                        kind, rid, payload = conn.recv()
                    except (EOFError, OSError):
                        kind = None
                    if kind is None:
                        pass  # the pipe closed: judged below, by the child's exit
                    elif rid != tid:
                        continue  # a late reply of a call given up on
                    elif kind == "progress":
                        # no `continue`: a child reporting every few ms would never
                        # let the cancel and yield checks below run
                        if progress is not None and cancelled_at is None:
                            progress(*payload)
                    elif kind == "result":
                        return payload
                    elif kind == "cancelled":
                        if yielded:
                            raise Yielded()
                        raise Cancelled()
                    else:
                        name, message, tb = payload
                        err = RuntimeError(f"{name}: {message}" if message else name)
                        err.remote_traceback = tb
                        raise err
                proc = self._proc
                if proc is None or not proc.is_alive():
                    code = None if proc is None else proc.exitcode
                    self._drop()
                    if cancelled_at is not None:
                        raise Yielded() if yielded else Cancelled()
                    raise FitProcessError(
                        f"the fitting process stopped (exit code {code}); "
                        "the next fit starts a new one")
                if cancelled_at is None:
                    if cancel is not None and cancel.cancelled:
                        cancelled_at = time.monotonic()
                    elif yielding and self._turns.waiting_above(priority):
                        cancelled_at, yielded = time.monotonic(), True
                    if cancelled_at is not None:
                        self._cancel.set()
                elif time.monotonic() - cancelled_at > CANCEL_GRACE_S and not yielded:
                    # a compile does not look at the token: end the child, the next
                    # call starts a new one (the compilation cache keeps the programs)
                    self._drop()
                    raise Cancelled()

    def shutdown(self, timeout: float = 2.0) -> None:
        """End the child (the window closes)."""
        with self._start_lock:
            proc, conn = self._proc, self._conn
            if proc is not None and proc.is_alive() and conn is not None:
                with contextlib.suppress(Exception):
                    if self._cancel is not None:
                        self._cancel.set()
                    conn.send(None)
                proc.join(timeout)
            self._drop()


_PROCESS: FitProcess | None = None
_PROCESS_LOCK = threading.Lock()


def fit_process() -> FitProcess:
    """The application's one fit process (made on first use)."""
    global _PROCESS
    with _PROCESS_LOCK:
        if _PROCESS is None:
            _PROCESS = FitProcess()
        return _PROCESS


def shutdown_fit_process() -> None:
    """End the fit process if one was started."""
    with _PROCESS_LOCK:
        proc = _PROCESS
    if proc is not None:
        proc.shutdown()


def run_fit_call(target: str, *args: Any, progress=None, cancel=None,
                 priority: int = PRIORITY_FIT, yielding: bool = False, **kwargs: Any) -> Any:
    """``target`` in the fit process, or in this thread with ``XPCS_FIT_PROCESS=0``."""
    if not process_enabled():
        return _resolve(target)(*args, progress=progress, cancel=cancel, **kwargs)
    return fit_process().call(target, *args, progress=progress, cancel=cancel,
                              priority=priority, yielding=yielding, **kwargs)
