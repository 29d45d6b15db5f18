"""Workers and the TaskRunner: every read, computation and fit off the GUI thread.

A panel calls ``context.runner.submit(key, fn, *args, on_result=...)``. ``fn`` is a
Qt-free function taking ``progress`` and ``cancel`` keyword arguments (see
:mod:`xpcsviewer.progress`). The worker converts the result to NumPy (after
``block_until_ready``: JAX dispatch is asynchronous, and the GUI thread must not
pay for it), then emits exactly one of result / error / cancelled, then finished.

A newer submit under the same key cancels the older one; the older result, if it
still arrives, is dropped as stale (its request id is no longer the latest).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, is_dataclass
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal, Slot

from xpcsviewer.gui.gui_gc import LIVE_RUNNERS, gui_thread_gc
from xpcsviewer.progress import Cancelled, CancelToken

__all__ = ["ComputeWorker", "ErrorInfo", "TaskRunner", "WorkerSignals", "friendly_message",
           "live_runners", "preload_backend", "to_numpy_tree", "warmup_enabled"]

logger = logging.getLogger(__name__)

PROGRESS_INTERVAL_S = 0.1  # at most ~10 progress signals per second

_LIVE_RUNNERS = LIVE_RUNNERS


def live_runners() -> list:
    """Every TaskRunner still alive (tests check that none is busy at teardown)."""
    return list(_LIVE_RUNNERS)


@dataclass(frozen=True)
class ErrorInfo:
    """What went wrong in a job, for the error sink.

    Attributes
    ----------
    kind : str
        Exception class name (e.g. ``"XpcsFileError"``).
    message : str
        One line for the status bar.
    traceback_text : str
        Full traceback for the details dialog ("" when none).
    request_id : int
        Id of the request that failed (-1 when not from a job).
    """

    kind: str
    message: str
    traceback_text: str = ""
    request_id: int = -1

    @classmethod
    def from_exception(cls, exc: BaseException, request_id: int = -1) -> ErrorInfo:
        """Build from an exception (with its traceback if it has one)."""
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return cls(type(exc).__name__, friendly_message(exc), tb, request_id)


#: Internal texts of numpy / pyqtgraph / matplotlib and what they mean to a user.
_FRIENDLY = (
    ("cannot set range [nan", "Nothing to show: the selected data are all NaN or Inf"),
    ("cannot set range [inf", "Nothing to show: the selected data are all NaN or Inf"),
    ("cannot set range [-inf", "Nothing to show: the selected data are all NaN or Inf"),
    ("maximum allowed dimension exceeded",
     "The data are too large to show at once: narrow the range or show fewer files"),
    ("array is too big", "The data are too large to show at once: narrow the range or "
                         "show fewer files"),
    ("data cannot be log-scaled", "No positive values to show on a logarithmic axis"),
    ("axis limits cannot be nan or inf",
     "Nothing to show: the selected data are all NaN or Inf"),
    ("zero-size array", "Nothing to show: no valid data points in the selection"),
)


def friendly_message(exc: BaseException) -> str:
    """One line a user understands for ``exc`` (the traceback stays in the details)."""
    from xpcsviewer.io.errors import XpcsFileError, display_path

    if isinstance(exc, MemoryError):
        return ("Not enough memory for this view: show fewer files or a smaller range, "
                "or close other programs")
    if isinstance(exc, XpcsFileError):
        return exc.one_line()
    text = display_path(str(exc)).strip()
    low = text.lower()
    for key, nice in _FRIENDLY:
        if key in low:
            return nice
    first = text.splitlines()[0] if text else ""
    return first or type(exc).__name__


def warmup_enabled() -> bool:
    """Load JAX and compile the fits in a worker at start-up (``XPCS_GUI_WARMUP=0``:
    import JAX on the GUI thread instead, as the tests do)."""
    return os.environ.get("XPCS_GUI_WARMUP", "1").strip().lower() not in ("0", "false", "no")


def preload_backend() -> str:
    """Import the array backend (JAX) on the calling thread; returns its status line.

    Call it on the GUI thread before jobs start. If the first import of JAX
    happened in a worker, other threads could meanwhile find a half-initialised
    ``jax`` in ``sys.modules`` (``is_jax_array`` then fails with "partially
    initialized module 'jax' has no attribute 'Array'"); importing once, up front,
    removes that race. It costs about 1.5 s at start-up.
    """
    from xpcsviewer.backends import get_backend, get_device_manager

    try:
        dm = get_device_manager()
        get_backend()
        return dm.describe()
    except Exception as exc:  # a broken JAX install leaves the NumPy backend usable
        logger.warning("backend preload failed: %s", exc)
        return f"backend unavailable: {exc}"


def _block(x: Any) -> None:
    fn = getattr(x, "block_until_ready", None)
    if callable(fn):
        fn()


def to_numpy_tree(x: Any) -> Any:
    """Convert JAX arrays in a (nested) result to NumPy; other objects pass through.

    Handles arrays, lists, tuples (incl. NamedTuples), dicts and dataclasses
    (converted field by field in a shallow copy). NumPy arrays are returned as they are.
    """
    if isinstance(x, np.ndarray) or x is None or isinstance(x, (str, bytes, int, float)):
        return x
    # Checked by module name first: another thread may be half-way through
    # importing jax, and touching jax.Array then fails.
    if type(x).__module__.split(".")[0] in ("jax", "jaxlib"):
        from xpcsviewer.backends import ensure_numpy

        _block(x)
        return ensure_numpy(x)
    if isinstance(x, dict):
        return {k: to_numpy_tree(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(to_numpy_tree(v) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(to_numpy_tree(v) for v in x)
    if is_dataclass(x) and not isinstance(x, type):
        import dataclasses

        changes = {}
        for f in dataclasses.fields(x):
            v = getattr(x, f.name)
            nv = to_numpy_tree(v)
            if nv is not v:
                changes[f.name] = nv
        if changes:
            try:
                return dataclasses.replace(x, **changes)
            except (TypeError, ValueError):
                return x
        return x
    return x


class WorkerSignals(QObject):
    """Signals of one :class:`ComputeWorker` (QRunnable cannot hold signals)."""

    sigStarted = Signal()
    """Emitted when the job starts running: ()."""
    sigProgress = Signal(int, int, str)
    """Progress: (done, total, message); at most ~10 Hz."""
    sigResult = Signal(object)
    """The job's result, NumPy-converted: (object)."""
    sigError = Signal(object)
    """The job failed: (ErrorInfo)."""
    sigCancelled = Signal()
    """The job stopped at a cancel check: ()."""
    sigFinished = Signal()
    """Always last: ()."""


class ComputeWorker(QRunnable):
    """Run ``fn(*args, progress=cb, cancel=token, **kwargs)`` in the thread pool.

    Parameters
    ----------
    fn : callable
        Qt-free function; must accept ``progress`` and ``cancel`` keywords.
    request_id : int
        Id stamped on errors (and used by the runner to drop stale results).
    """

    def __init__(self, fn: Callable[..., Any], *args: Any, request_id: int = -1,
                 config: Any = None, **kwargs: Any) -> None:
        super().__init__()
        self.setAutoDelete(False)
        self.fn = fn
        self.config = config  # the RunConfig the job runs under (None: defaults)
        self.args = args
        self.kwargs = kwargs
        self.request_id = request_id
        self.token = CancelToken()
        self.signals = WorkerSignals()
        self._last_progress = 0.0
        self._progress_lock = threading.Lock()

    def cancel(self) -> None:
        """Ask the job to stop at its next cancel check (thread-safe)."""
        self.token.cancel()

    def _progress(self, done: int, total: int, message: str = "") -> None:
        now = time.monotonic()
        with self._progress_lock:
            # the start of a phase (done == 0: "compiling the sampler (first run
            # only)", then seconds of silence) always gets through
            if 0 < done < total and now - self._last_progress < PROGRESS_INTERVAL_S:
                return
            self._last_progress = now
        self._emit(self.signals.sigProgress, int(done), int(total), str(message))

    @staticmethod
    def _emit(signal: Any, *args: Any) -> None:
        # At exit Qt deletes the signals object while a job that cannot stop at
        # once (a JIT compile) still runs; its last emits have nowhere to go.
        try:
            signal.emit(*args)
        except RuntimeError:  # "Signal source has been deleted"
            logger.debug("job signal dropped: its receiver is gone")

    @Slot()
    def run(self) -> None:
        """Run the job (in a pool thread, or inline for a synchronous runner).

        Emits never raise: the window (and the signals object) may be gone by
        the time a long job ends, and the job then ends quietly.
        """
        sig = self.signals
        emit = self._emit
        emit(sig.sigStarted)
        try:
            if self.token.cancelled:
                raise Cancelled()
            from xpcsviewer.backends import use_config

            with use_config(self.config):
                out = self.fn(*self.args, progress=self._progress, cancel=self.token,
                              **self.kwargs)
                out = to_numpy_tree(out)
        except (Cancelled, KeyboardInterrupt):  # Ctrl-C of a command (snapshot)
            emit(sig.sigCancelled)
        except Exception as exc:  # every failure goes to the error sink, never a crash
            logger.exception("job %d failed", self.request_id)
            emit(sig.sigError, ErrorInfo.from_exception(exc, self.request_id))
        else:
            if self.token.cancelled:
                emit(sig.sigCancelled)
            else:
                emit(sig.sigResult, out)
        finally:
            emit(sig.sigFinished)


class _Job:
    __slots__ = ("description", "key", "on_error", "on_progress", "on_result", "relay",
                 "request_id", "worker")

    def __init__(self, key, request_id, worker, on_result, on_error, on_progress, description):
        self.key = key
        self.request_id = request_id
        self.worker = worker
        self.relay = None
        self.on_result = on_result
        self.on_error = on_error
        self.on_progress = on_progress
        self.description = description


class _JobRelay(QObject):
    """Receives one worker's signals on the GUI thread and forwards them to the runner."""

    def __init__(self, runner: TaskRunner, job: _Job) -> None:
        super().__init__()
        self._runner = runner
        self._job = job

    @Slot(int, int, str)
    def on_progress(self, done: int, total: int, message: str) -> None:
        self._runner._on_progress(self._job, done, total, message)

    @Slot(object)
    def on_result(self, result: Any) -> None:
        self._runner._on_result(self._job, result)

    @Slot(object)
    def on_error(self, info: Any) -> None:
        self._runner._on_error(self._job, info)

    @Slot()
    def on_finished(self) -> None:
        self._runner._on_finished(self._job)


def wait_for_event_job(event, progress=None, cancel=None) -> None:
    """Worker job that ends when ``event`` is set (a panel drawing in slices on
    the GUI thread holds one, so "wait until idle" waits for the whole picture)."""
    from xpcsviewer.progress import Cancelled

    while not event.wait(0.05):
        if cancel is not None and cancel.cancelled:
            raise Cancelled()


class TaskRunner(QObject):
    """One queue of keyed jobs over a ``QThreadPool``.

    Parameters
    ----------
    synchronous : bool
        Run each job inline inside :meth:`submit` (tests, snapshot of simple cases).
    pool : QThreadPool, optional
        Defaults to a private pool (so closing the window waits only for ours).

    Notes
    -----
    All methods must be called on the GUI thread. Callbacks run on the GUI thread.
    """

    sigBusyChanged = Signal(bool)
    """True when the first job starts, False when the last one finishes: (bool)."""
    sigProgress = Signal(str, int, int, str)
    """Progress of a job: (key, done, total, message)."""
    sigError = Signal(object)
    """A job failed and had no ``on_error`` handler, or always for the sink: (ErrorInfo)."""
    sigJobFinished = Signal(str, int)
    """A job finished (any outcome): (key, request_id)."""
    sigIdle = Signal()
    """No job is running any more: ()."""

    def __init__(self, parent: QObject | None = None, synchronous: bool = False,
                 pool: QThreadPool | None = None) -> None:
        super().__init__(parent)
        self.synchronous = synchronous
        self._pool = pool if pool is not None else QThreadPool()
        if pool is None:
            n_global = QThreadPool.globalInstance().maxThreadCount()
            self._pool.setMaxThreadCount(max(2, min(4, n_global)))
        self._next_id = 0
        self._latest: dict[str, int] = {}
        self._jobs: dict[int, _Job] = {}
        self._closed = False
        #: The RunConfig (backend, device) of the jobs submitted from now on; the
        #: Tools menu replaces it. None: the environment's defaults.
        self.config: Any = None
        _LIVE_RUNNERS.add(self)
        gui_thread_gc()  # before the first job can run in a worker

    # ------------------------------------------------------------------ API
    @property
    def pool(self) -> QThreadPool:
        """The thread pool the jobs run in."""
        return self._pool

    @property
    def is_busy(self) -> bool:
        """True while any job is running or queued."""
        return bool(self._jobs)

    def running_keys(self) -> list[str]:
        """Keys of the jobs running now (descriptions in :meth:`running_descriptions`)."""
        return sorted({j.key for j in self._jobs.values()})

    def running_descriptions(self) -> list[str]:
        """Descriptions of the jobs running now."""
        return [j.description or j.key for j in self._jobs.values()]

    def latest_id(self, key: str) -> int | None:
        """Request id of the newest job submitted under ``key``."""
        return self._latest.get(key)

    def submit(self, key: str, fn: Callable[..., Any], *args: Any,
               on_result: Callable[[Any], None] | None = None,
               on_error: Callable[[ErrorInfo], None] | None = None,
               on_progress: Callable[[int, int, str], None] | None = None,
               description: str = "", **kwargs: Any) -> int:
        """Run ``fn(*args, progress=..., cancel=..., **kwargs)`` in a worker.

        Parameters
        ----------
        key : str
            Job slot (usually the panel name plus a purpose). A newer submit with the
            same key cancels the older job; its result is dropped.
        fn : callable
            Qt-free; must accept ``progress`` and ``cancel`` keywords.
        on_result, on_error, on_progress : callable, optional
            Called on the GUI thread for the latest request only. Without
            ``on_error`` the error goes to :attr:`sigError` (the app's error sink).
        description : str
            Shown next to the progress bar.

        Returns
        -------
        int
            The request id; -1 once the runner is closed (nothing runs).
        """
        if self._closed:
            # A timer or a late result of a closed window asking for more work: its
            # widgets are gone, so the result would have nowhere to go.
            logger.debug("runner closed: %s not started", key)
            return -1
        self.cancel(key)
        self._next_id += 1
        rid = self._next_id
        self._latest[key] = rid
        worker = ComputeWorker(fn, *args, request_id=rid, config=self.config, **kwargs)
        job = _Job(key, rid, worker, on_result, on_error, on_progress, description)
        was_busy = self.is_busy
        self._jobs[rid] = job
        # The relay lives on the GUI thread, so these queued connections deliver
        # every callback there (a plain lambda would run in the worker thread).
        job.relay = _JobRelay(self, job)
        s = worker.signals
        s.sigProgress.connect(job.relay.on_progress)
        s.sigResult.connect(job.relay.on_result)
        s.sigError.connect(job.relay.on_error)
        s.sigFinished.connect(job.relay.on_finished)
        if not was_busy:
            self.sigBusyChanged.emit(True)
        if self.synchronous:
            worker.run()
        else:
            self._pool.start(worker)
        return rid

    def cancel(self, key: str) -> None:
        """Cancel every running job under ``key`` (their results will be dropped)."""
        for job in list(self._jobs.values()):
            if job.key == key:
                job.worker.cancel()

    def cancel_all(self) -> None:
        """Cancel every running job."""
        for job in list(self._jobs.values()):
            job.worker.cancel()
        self._latest.clear()

    def close(self) -> None:
        """Cancel every job and start no new one (the window that owns the runner is
        closing; results of running jobs are dropped)."""
        self._closed = True
        self.cancel_all()

    @property
    def closed(self) -> bool:
        return self._closed

    def wait_for_done(self, msecs: int = 30000) -> bool:
        """Wait for the pool to finish, then deliver pending signals (GUI thread).

        Returns
        -------
        bool
            True when no job is left running.
        """
        from PySide6.QtCore import QCoreApplication

        # in slices: a Python signal handler (a second Ctrl-C) runs between them
        deadline = time.monotonic() + msecs / 1000.0
        while not (ok := self._pool.waitForDone(50)):
            if time.monotonic() >= deadline:
                break
        # Queued finished-signals still sit in the event loop: deliver them (none
        # come from a job still running: no point waiting for those).
        deadline = time.monotonic() + (2.0 if ok else 0.0)
        while self._jobs and time.monotonic() < deadline:
            QCoreApplication.processEvents()
        return ok and not self._jobs

    def wait_until_idle(self, msecs: int = 30000) -> bool:
        """Run the event loop until no job is left (GUI thread; no sleeping).

        Jobs started by results of other jobs (a panel refreshing after the files
        loaded) are waited for too. Returns False on timeout.
        """
        from PySide6.QtCore import QCoreApplication, QEventLoop, QTimer

        deadline = time.monotonic() + msecs / 1000.0
        while True:
            QCoreApplication.processEvents()
            if not self._jobs:
                # Results delivered just now may submit follow-up jobs.
                QCoreApplication.processEvents()
                if not self._jobs:
                    return True
            left = int((deadline - time.monotonic()) * 1000)
            if left <= 0:
                return False
            loop = QEventLoop()
            timer = QTimer(singleShot=True)
            timer.timeout.connect(loop.quit)
            self.sigIdle.connect(loop.quit)
            timer.start(min(left, 200))
            loop.exec()
            timer.stop()
            try:
                self.sigIdle.disconnect(loop.quit)
            except (RuntimeError, TypeError):
                pass

    # ------------------------------------------------------------- handlers
    def _is_latest(self, job: _Job) -> bool:
        return self._latest.get(job.key) == job.request_id and not job.worker.token.cancelled

    def _on_progress(self, job: _Job, done: int, total: int, message: str) -> None:
        if not self._is_latest(job):
            return
        self.sigProgress.emit(job.description or job.key, done, total, message)
        if job.on_progress is not None:
            job.on_progress(done, total, message)

    def _on_result(self, job: _Job, result: Any) -> None:
        if not self._is_latest(job):
            return
        if job.on_result is not None:
            try:
                job.on_result(result)
            except Exception as exc:  # a bug in a panel's apply step: report, don't crash
                logger.exception("applying result of %s failed", job.key)
                self.sigError.emit(ErrorInfo.from_exception(exc, job.request_id))

    def _on_error(self, job: _Job, info: ErrorInfo) -> None:
        if not self._is_latest(job):
            return
        if job.on_error is not None:
            job.on_error(info)
        else:
            self.sigError.emit(info)

    def _on_finished(self, job: _Job) -> None:
        self._jobs.pop(job.request_id, None)
        self.sigJobFinished.emit(job.key, job.request_id)
        if not self._jobs:
            self.sigBusyChanged.emit(False)
            self.sigIdle.emit()
