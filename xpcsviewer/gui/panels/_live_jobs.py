"""Worker jobs of the Live and Series tabs (Qt-free; the panels hold the widgets)."""

from __future__ import annotations

import os
import stat
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["UpdateSink", "drawn_points", "fit_series_job", "list_finished_job", "live_job",
           "no_photon_note", "qmap_beside_job"]


class UpdateSink:
    """The newest live update, handed from the worker to the GUI thread's timer.

    Only the newest matters to a plot: an update the GUI had no time for is replaced,
    so a slow repaint never queues work. ``count`` tells how many arrived.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: Any = None
        self.count = 0
        self.ready = False  # the kernels and fits are loaded; waiting for frames
        self.engine = ""  # the correlator the job took ("sparse": on photons)

    def set_ready(self, event: Any = None) -> None:
        if isinstance(event, dict):
            self.engine = str(event.get("engine") or "")
        self.ready = True

    def put(self, update: Any) -> None:
        with self._lock:
            self._latest = update
            self.count += 1

    def take(self) -> Any:
        with self._lock:
            up, self._latest = self._latest, None
        return up


def _leave_a_core() -> None:
    """On 4 cores or more, the compiled kernels of this worker thread use one core less
    than the machine has, so the GUI thread finds a free core to paint on (numba's thread
    count is per thread). On 2 cores that would halve the rate kept up for a paint that
    takes ~20 ms of a core; there both threads stay."""
    import importlib.util

    n = os.cpu_count() or 2
    if n < 4 or importlib.util.find_spec("numba") is None:
        return
    import numba

    numba.set_num_threads(max(1, min(numba.config.NUMBA_NUM_THREADS, n - 1)))


def live_job(request: dict[str, Any], sink: UpdateSink, stop: threading.Event,
             progress=None, cancel=None) -> Any:
    """Follow ``request["source"]`` (:func:`xpcsviewer.jobs.live.follow`), handing each
    update with its plot data to ``sink``; returns the final update."""
    from xpcsviewer.io.results.reader import read_qmap
    from xpcsviewer.jobs.fitfile import fit_result_files
    from xpcsviewer.jobs.live import follow

    _leave_a_core()
    qm = read_qmap(request["qmap"])
    opts = request["options"]
    fitter = partial(fit_result_files, model=opts.model) if opts.fit else None
    return follow(request["source"], qm, request["output"], opts, fitter=fitter,
                  on_update=sink.put, on_ready=sink.set_ready, stop=stop, with_view=True,
                  progress=progress,
                  cancel=cancel)


def qmap_beside_job(source: str, progress=None, cancel=None) -> str | None:
    """The q-map beside a raw source (:func:`xpcsviewer.jobs.live.qmap_beside`)."""
    from xpcsviewer.jobs.live import qmap_beside

    p = qmap_beside(source)
    return None if p is None else str(p)


def fit_series_job(paths: list[str], x: str, model: str, progress=None, cancel=None) -> list:
    """Fit files for the series (:func:`xpcsviewer.jobs.series.fit_series_files`)."""
    from xpcsviewer.jobs.series import fit_series_files

    return fit_series_files(paths, x=x, model=model, progress=progress, cancel=cancel)


def list_finished_job(folder: str, known: list[str], quiet_s: float = 1.0,
                      progress=None, cancel=None) -> list[str]:
    """Result files in ``folder`` not in ``known`` that are finished: not modified for
    ``quiet_s`` seconds, not open for writing, and not a live run's partial result."""
    import h5py

    from xpcsviewer.io._h5links import pointers_ok
    from xpcsviewer.io.raw.live import writer_state

    seen = set(known)
    out = []
    now = time.time()
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    for name in names:
        if not name.lower().endswith((".hdf", ".h5", ".hdf5", ".nxs")):
            continue
        p = str(Path(folder) / name)
        if p in seen:
            continue
        try:
            st = os.stat(p)
            if not stat.S_ISREG(st.st_mode):  # a FIFO: opening it would wait forever
                continue
            if now - st.st_mtime < quiet_s or writer_state(p) == "open":
                continue
            with h5py.File(p, "r", locking=False) as f:
                # a link to a FIFO or outside the folder: left out (lookups would follow it)
                if not pointers_ok(f) or "xpcs/multitau/normalized_g2" not in f:
                    continue
                flag = f.get("xpcs/live/partial")
                if flag is not None and bool(flag[()]):
                    continue
        except OSError:
            continue
        out.append(p)
    return out


def drawn_points(v, j: int) -> np.ndarray:
    """(T,) bool: the points of bin ``j`` worth drawing. A g2 of exactly 0 is a delay
    with no photon pairs yet (the correlator's 0 / 0): undefined, not a measured 0; it
    was drawn at g2 = 0 (issue 49)."""
    with np.errstate(invalid="ignore"):
        return v.valid[:, j] & (v.tau > 0) & np.isfinite(v.g2[:, j]) & (v.g2[:, j] != 0)


def no_photon_note(v) -> str:
    """The status's word on the points left out by :func:`drawn_points` ("" if none)."""
    if v is None or v.g2.ndim != 2 or v.g2.size == 0:
        return ""
    with np.errstate(invalid="ignore"):
        empty = v.valid & (v.tau[:, None] > 0) & (v.g2 == 0)
    if not empty.any():
        return ""
    n_bins = int(empty.any(axis=0).sum())
    return (f"{int(empty.sum())} points of {n_bins} q-bin{'s' if n_bins != 1 else ''} "
            "have no photons yet: g2 undefined there, not drawn")
