"""The application context shared by the main window and every panel.

It holds the one :class:`~xpcsviewer.gui.workers.TaskRunner`, the error sink,
the status line, a small thread-safe cache of opened result files, and a shared
dictionary panels use to publish results to each other (the g2 panel publishes
its fits under ``"g2_fits"`` for the Diffusion panel).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, Signal, Slot

from xpcsviewer.gui.workers import (
    ErrorInfo,
    TaskRunner,
    preload_backend,
    warmup_enabled,
)

__all__ = ["AppContext", "ResultCache", "SharedArrays"]

logger = logging.getLogger(__name__)


class SharedArrays:
    """Content-shared (H, W) q-map arrays of opened files (thread-safe).

    A folder of results usually shares one q-map: three detector-sized maps,
    about 9 MB per file for a 0.5 Mpixel detector, were held once per target
    (1000 targets: 10 GB). Equal arrays are now held once, read-only; only exact
    equality (checked element by element) shares an array.
    """

    NAMES = ("mask", "dynamic_roi_map", "static_roi_map")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._table: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

    @staticmethod
    def _key(name: str, a: np.ndarray) -> tuple:
        flat = a.reshape(-1)
        step = max(1, flat.size // 4096)
        sample = hashlib.blake2b(np.ascontiguousarray(flat[::step]).tobytes(),
                                 digest_size=16).hexdigest()
        return (name, a.shape, a.dtype.str, sample)

    def share(self, qmap: Any) -> Any:
        """Replace ``qmap``'s big arrays by equal ones already held (in place)."""
        for name in self.NAMES:
            a = getattr(qmap, name, None)
            if not isinstance(a, np.ndarray) or a.size < 4096:
                continue
            key = self._key(name, a)
            with self._lock:
                held = self._table.get(key)
                if held is not None and held is not a and np.array_equal(held, a):
                    setattr(qmap, name, held)
                    continue
                if held is None:
                    a.setflags(write=False)  # shared: nobody may change it in place
                    self._table[key] = a
        return qmap


class ResultCache:
    """A small thread-safe LRU of :class:`~xpcsviewer.model.result.XpcsResult` by path.

    The key includes the file's modification time and size, so a file rewritten
    on disk (a new run into the same name) is read again.
    """

    def __init__(self, maxsize: int = 16) -> None:
        self.maxsize = int(maxsize)
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple, Any] = OrderedDict()
        # One lock per key so two workers asking for the same file read it once.
        self._key_locks: dict[tuple, threading.Lock] = {}

    @staticmethod
    def _key(path: Path) -> tuple:
        st = os.stat(path)
        return (str(path.resolve()), st.st_mtime_ns, st.st_size)

    def get(self, path: str | os.PathLike, loader) -> Any:
        """Return the cached value for ``path`` or ``loader(path)`` (stored)."""
        path = Path(path)
        key = self._key(path)
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            klock = self._key_locks.setdefault(key, threading.Lock())
        with klock:
            with self._lock:
                if key in self._items:
                    self._items.move_to_end(key)
                    return self._items[key]
            value = loader(path)
            with self._lock:
                self._items[key] = value
                self._items.move_to_end(key)
                while len(self._items) > self.maxsize:
                    self._items.popitem(last=False)
                self._key_locks.pop(key, None)
        return value

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


class AppContext(QObject):
    """Services shared by the window and the panels (create on the GUI thread).

    Parameters
    ----------
    runner : TaskRunner, optional
        Defaults to a new asynchronous runner; tests pass ``TaskRunner(synchronous=True)``.
    preload : bool, optional
        Import the array backend now, on the GUI thread (see ``preload_backend``);
        default: unless the start-up warm-up does it in a worker.
    cache_size : int
        How many opened result files to keep.
    """

    sigError = Signal(object)
    """An error for the sink (status line + details dialog): (ErrorInfo)."""
    sigStatus = Signal(str)
    """A status-bar message: (str)."""
    sigSharedChanged = Signal(str)
    """A key of :attr:`shared` was set: (key)."""
    sigTargetsChanged = Signal(list)
    """The target files changed: (list of XpcsResult)."""
    sigSelectedBin = Signal(int)
    """A panel picked a dynamic q-bin (1-based value, e.g. a click on the q-map): (int)."""
    sigOpenFiles = Signal(list)
    """A panel made files to add to the targets (e.g. regrouped g2): (list of str)."""
    sigFitWhenShown = Signal(list, str)
    """Fit these files on the g2 tab with this model once it shows them (the Live
    tab's fitted result): (list of str, model)."""

    _sigForeignError = Signal(object)
    """An exception raised in another thread, queued to the GUI thread: (BaseException)."""

    def __init__(self, runner: TaskRunner | None = None, cache_size: int = 16,
                 parent: QObject | None = None, preload: bool | None = None) -> None:
        super().__init__(parent)
        # With the start-up warm-up JAX loads in a worker (the window shows ~1 s
        # sooner); otherwise it is imported here, on the GUI thread.
        if preload is None:
            preload = not warmup_enabled()
        self.backend_line = preload_backend() if preload else ""
        self.runner = runner if runner is not None else TaskRunner(self)
        self.runner.sigError.connect(self.report_error)
        self.cache = ResultCache(cache_size)
        self.shared_arrays = SharedArrays()
        self.shared: dict[str, Any] = {}
        self.targets: list[Any] = []
        self.last_error: ErrorInfo | None = None
        from xpcsviewer.gui.export_folder import ExportFolder

        #: where save dialogs propose to write (the last export folder)
        self.export_folder = ExportFolder()
        self._sigForeignError.connect(self._on_foreign_error)

    # --------------------------------------------------------------- errors
    def report_error(self, error: ErrorInfo | BaseException | str) -> ErrorInfo:
        """Send an error to the sink (GUI thread).

        Returns
        -------
        ErrorInfo
            The normalised error.
        """
        if isinstance(error, ErrorInfo):
            info = error
        elif isinstance(error, BaseException):
            info = ErrorInfo.from_exception(error)
        else:
            info = ErrorInfo("Error", str(error), "", -1)
        self.last_error = info
        logger.warning("%s: %s", info.kind, info.message)
        self.sigError.emit(info)
        return info

    def report_error_threadsafe(self, error: ErrorInfo | BaseException | str) -> None:
        """Like :meth:`report_error`, callable from any thread (queued to the GUI thread)."""
        self._sigForeignError.emit(error)

    @Slot(object)
    def _on_foreign_error(self, error) -> None:
        self.report_error(error)

    def show_status(self, msg: str) -> None:
        """Show a message in the status bar."""
        self.sigStatus.emit(str(msg))

    # ---------------------------------------------------------------- files
    def load_result(self, path: str | os.PathLike) -> Any:
        """Read a result file (cached; thread-safe; call it from workers).

        Raises
        ------
        XpcsFileError
            The file is missing or is not a result file.
        """
        from xpcsviewer.io import read_result

        return self.cache.get(path, lambda p: self._load(read_result, p))

    def _load(self, reader, path: Path) -> Any:
        res = reader(path)
        self.shared_arrays.share(res.qmap)
        return res

    # --------------------------------------------------------------- shared
    def set_shared(self, key: str, value: Any) -> None:
        """Publish ``value`` under ``key`` and emit :attr:`sigSharedChanged` (GUI thread)."""
        self.shared[key] = value
        self.sigSharedChanged.emit(key)

    def open_files(self, paths: list[str], fit_model: str | None = None) -> None:
        """Ask the window to add ``paths`` to the targets (GUI thread); with
        ``fit_model``, the g2 tab fits them with it when it first shows them."""
        if fit_model:
            self.sigFitWhenShown.emit([str(p) for p in paths], str(fit_model))
        self.sigOpenFiles.emit([str(p) for p in paths])

    def set_targets(self, results: list[Any]) -> None:
        """Record the current targets and emit :attr:`sigTargetsChanged` (GUI thread)."""
        self.targets = list(results)
        self.sigTargetsChanged.emit(list(results))
