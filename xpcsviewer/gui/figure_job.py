"""The figure export job of the window's tabs, run in a worker process (Qt-free: the
child imports this module, never Qt).

Building and saving a matplotlib figure holds the GIL for 0.3-2 s; in a worker thread of
the window that is a pause of the GUI thread at load (docs/gui-stalls.md). The window
submits :func:`export_figure_in_process`: the same job in a spawned process
(:func:`xpcsviewer.jobs.process_job.run_in_process`), the same files written.
``XPCS_DRAW_IN_PROCESS=0`` draws in the calling thread instead.
"""

from __future__ import annotations

import logging
import os
import pickle
from typing import Any

__all__ = ["Deferred", "draw_in_process", "export_figure_in_process", "export_figure_job",
           "in_process"]

logger = logging.getLogger(__name__)


class Deferred:
    """A figure option computed in the export worker, not on the GUI thread (a fit or a
    screen the tab has not made yet): ``Deferred(fn, *args)``."""

    def __init__(self, fn, *args) -> None:
        self.fn, self.args = fn, args

    def __call__(self):
        return self.fn(*self.args)


def export_figure_job(kind: str, results: list, options: dict, path: str,
                      size: str = "double", progress=None, cancel=None) -> dict:
    """Worker job: build the matplotlib figure ``kind`` and save it atomically.

    Runs off the GUI thread (Agg, no Qt). ``size`` is a journal preset, as
    ``export --size``. Pages are written as one set; the files of an earlier export
    under this name that the new set does not hold are removed (the window asked).

    Returns
    -------
    dict
        ``written``: the files written, in page order; ``removed``: the stale files of
        an earlier export removed (path strings).
    """
    from xpcsviewer.export import make_figures
    from xpcsviewer.export.files import figure_files, save_figure_pages
    from xpcsviewer.progress import report

    report(progress, cancel, 0, 2, "building figure")
    options = {k: v() if isinstance(v, Deferred) else v for k, v in options.items()}
    # g2 panels beyond a page go on more pages (issue 33)
    figs = make_figures(kind, results, size, **options)
    report(progress, cancel, 1, 2, "writing")
    before = figure_files(path)
    written = save_figure_pages(figs, path)
    report(progress, cancel, 2, 2, "done")
    return {"written": [str(p) for p in written],
            "removed": [str(p) for p in before if p not in written]}


def draw_in_process() -> bool:
    """Whether figure and report drawing go to a worker process (``XPCS_DRAW_IN_PROCESS``,
    default on)."""
    return os.environ.get("XPCS_DRAW_IN_PROCESS", "1").strip().lower() not in (
        "0", "off", "no", "false")


def in_process(fn, *args: Any, progress=None, cancel=None) -> Any:
    """``fn(*args)`` in a spawned worker process (:func:`draw_in_process`), else here;
    here too when an argument cannot be pickled (logged)."""
    if draw_in_process():
        try:
            pickle.dumps(args)
        except Exception as exc:  # an option holding an unpicklable object
            logger.info("%s drawn in this process: %s", fn.__name__, exc)
        else:
            from xpcsviewer.jobs.process_job import run_in_process

            return run_in_process(fn, *args, progress=progress, cancel=cancel)
    return fn(*args, progress=progress, cancel=cancel)


def export_figure_in_process(kind: str, results: list, options: dict, path: str,
                             size: str = "double", progress=None, cancel=None) -> dict:
    """:func:`export_figure_job` in a worker process (see :func:`in_process`)."""
    return in_process(export_figure_job, kind, results, options, path, size,
                      progress=progress, cancel=cancel)
