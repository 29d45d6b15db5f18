"""The base class of every analysis tab.

A panel receives the selected result files through :meth:`BasePanel.set_results`
(GUI thread), snapshots what it needs, and submits Qt-free work through
``context.runner`` under its own key (``"<name>:<purpose>"``); results come back
on the GUI thread and update pyqtgraph items in place.

Subclasses set ``name``/``title`` and override :meth:`refresh` (recompute and
redraw for ``self.results``); optionally :meth:`applies_to`,
:meth:`figure_options`, :meth:`data_columns` (or :meth:`export_data`),
:meth:`get_settings` / :meth:`set_settings`.

Refreshing is lazy: a hidden tab only marks itself out of date and recomputes
when it is shown, so switching files does not start work for nine tabs at once.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QSpinBox, QWidget

from xpcsviewer.gui.context import AppContext

# Deferred and the job: the tabs and tests import them from here
from xpcsviewer.gui.figure_job import (  # noqa: F401
    Deferred,
    export_figure_in_process,
    export_figure_job,
)

__all__ = ["BasePanel", "export_figure_job", "export_table_job"]

logger = logging.getLogger(__name__)

#: Default of the "max files" box of tabs that overlay many files.
MAX_OVERLAID_FILES = 20

_DATA_ITEM_TYPES = (pg.PlotDataItem, pg.ImageItem, pg.ErrorBarItem, pg.BarGraphItem,
                    pg.ScatterPlotItem)


def apply_settings(
    s: dict,
    *,
    combos: tuple = (),
    checks: tuple = (),
    spins: tuple = (),
    edits: tuple = (),
) -> None:
    """Restore ``(key, widget)`` pairs from a settings dict, key by key.

    Combo boxes match by item data; spin boxes convert to their value type. A missing
    key is skipped and a bad value ignored, so one stale entry of an old session file
    does not stop the others.
    """
    for key, combo in combos:
        if key in s:
            i = combo.findData(s[key])
            if i >= 0:
                combo.setCurrentIndex(i)
    for key, box in checks:
        if key in s:
            box.setChecked(bool(s[key]))
    for key, spin in spins:
        if key in s:
            try:
                spin.setValue(type(spin.value())(s[key]))
            except (TypeError, ValueError):
                pass
    for key, edit in edits:
        if key in s:
            edit.setText(str(s[key]))


def export_message(written: list[str], removed: list[str] = ()) -> str:
    """The status line of an export: every file written by name, then their folder
    (last: a long path is what a narrow status bar cuts), e.g. "Wrote g2_p1.png,
    g2_p2.png (2 pages; removed g2_p3.png of an earlier export) in /data/figs"."""
    paths = [Path(p) for p in written]
    notes = [f"{len(paths)} pages"] if len(paths) > 1 else []
    if removed:
        notes.append(f"removed {', '.join(Path(p).name for p in removed)} "
                     "of an earlier export")
    names = ", ".join(p.name for p in paths)
    if notes:
        names += f" ({'; '.join(notes)})"
    return f"Wrote {names} in {paths[0].parent}"


def export_table_job(columns: dict, path: str, header: list[str] | None = None,
                     progress=None, cancel=None) -> str:
    """Worker job: write named columns to CSV atomically (see ``write_table_csv``)."""
    from xpcsviewer.export.files import write_table_csv

    if cancel is not None:
        cancel.raise_if_cancelled()
    write_table_csv(path, columns, header=header)
    return str(path)


class BasePanel(QWidget):
    """One analysis tab.

    Parameters
    ----------
    context : AppContext
        Shared services (runner, error sink, cache, shared dict).
    parent : QWidget, optional

    Attributes
    ----------
    name : str
        Registry name, e.g. ``"saxs2d"`` (also the ``--tab`` value of ``snapshot``).
    title : str
        Tab label, e.g. ``"SAXS-2D"``.
    figure_kind : str or None
        Plot kind for ``xpcsviewer.export.make_figure`` (None: figure export unsupported).
    results : list of XpcsResult
        The current targets.
    """

    name: str = "base"
    title: str = "Base"
    figure_kind: str | None = None

    sigExported = Signal(str)
    """An export finished: (path)."""
    sigUpdated = Signal()
    """The panel finished applying a new result to its plots: ()."""

    def __init__(self, context: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.context = context
        self.results: list[Any] = []
        self.current_index = 0
        self._dirty = False

    # ------------------------------------------------------------- targets
    def set_results(self, results: list[Any]) -> None:
        """Set the target files (GUI thread); recompute now if shown, else on show."""
        self.results = list(results)
        self._dirty = True
        if self.isVisible():
            self._refresh_now()

    #: True for tabs that show one file (the current target): they refresh when it changes.
    uses_current: bool = False

    def set_current(self, index: int) -> None:
        """The current target changed (arrow keys in the target list; GUI thread)."""
        index = max(0, int(index))
        if index == self.current_index:
            return
        self.current_index = index
        if self.uses_current and self.results:
            self._dirty = True
            if self.isVisible():
                self._refresh_now()

    #: The "max files" box of a tab that overlays files (see :meth:`max_files_box`).
    max_files = None

    def max_files_box(self, default: int = MAX_OVERLAID_FILES) -> QSpinBox:
        """A "max files" spin box: the tab overlays (and computes) only the first N targets.

        Work and memory then follow what is shown: 1000 targets overlaid in one
        plot are 1000 curves nobody can read (and, for the intensity traces,
        gigabytes). Call once in ``__init__`` and put the box in the controls.
        """
        box = QSpinBox(minimum=1, maximum=100_000, value=int(default))
        box.setToolTip("Overlay at most this many files (the first targets)")
        box.editingFinished.connect(self._refresh_if_shown)
        self.max_files = box
        return box

    def _refresh_if_shown(self) -> None:
        self._dirty = True
        if self.isVisible():
            self._refresh_now()

    def shown_results(self) -> list[Any]:
        """The targets this tab draws: all, or the first ``max files``."""
        if self.max_files is None:
            return list(self.results)
        return list(self.results[: self.max_files.value()])

    def shown_note(self) -> str:
        """"; the first N of M files (raise max files)" when targets were left out, else ""."""
        n = len(self.shown_results())
        if n >= len(self.results):
            return ""
        return f"; the first {n} of {len(self.results)} files (raise max files)"

    def current_result(self) -> Any | None:
        """The current target (clamped to the list), or None without targets."""
        if not self.results:
            return None
        return self.results[min(self.current_index, len(self.results) - 1)]

    def applies_to(self, results: list[Any]) -> str | None:
        """None if this tab can show ``results``, else the reason (tab tooltip)."""
        if not results:
            return "Select one or more result files first"
        return None

    def refresh(self) -> None:
        """Recompute and redraw for :attr:`results` (GUI thread; submit heavy work).

        The default does nothing; subclasses override it.
        """

    def mark_stale(self) -> None:
        """Recompute on the next show (a job of this tab was cancelled: what it was
        computing never came, and the tab must not stay as it was left)."""
        self._dirty = True

    def ensure_fresh(self) -> None:
        """Refresh now if the targets changed since the last refresh (GUI thread)."""
        if self._dirty:
            self._refresh_now()

    def _refresh_now(self) -> None:
        self._dirty = False
        if self.applies_to(self.results) is not None:
            self.clear_plots()
            return
        try:
            self.refresh()
        except Exception as exc:  # a panel bug must not take the window down
            logger.exception("refresh of %s failed", self.name)
            self.context.report_error(exc)

    def clear_plots(self) -> None:
        """Remove the shown data (targets do not apply). Subclasses override."""

    def showEvent(self, event) -> None:  # Qt override
        super().showEvent(event)
        self.ensure_fresh()

    # ------------------------------------------------------------- workers
    def job_key(self, purpose: str = "main") -> str:
        """Runner key of this panel's job ``purpose``."""
        return f"{self.name}:{purpose}"

    def submit(self, purpose: str, fn: Callable[..., Any], *args: Any,
               on_result: Callable[[Any], None] | None = None,
               on_error: Callable[[Any], None] | None = None,
               description: str = "", **kwargs: Any) -> int:
        """Submit ``fn`` under this panel's key ``purpose`` (cancels the previous one)."""
        return self.context.runner.submit(
            self.job_key(purpose), fn, *args, on_result=on_result, on_error=on_error,
            description=description or f"{self.title}: {purpose}", **kwargs)

    def cancel_jobs(self) -> None:
        """Cancel this panel's running jobs."""
        runner = self.context.runner
        for key in runner.running_keys():
            if key.startswith(f"{self.name}:"):
                runner.cancel(key)

    # -------------------------------------------------------------- export
    def figure_options(self) -> dict:
        """Keyword options for ``make_figure(self.figure_kind, results, **options)``."""
        return {}

    def export_figure(self, path: str | os.PathLike, size: str = "double") -> int | None:
        """Export a publication figure (PNG/SVG/PDF by suffix) in a worker, at the
        journal ``size`` preset (``"double"``, ``"single"``, ``"slide"``).

        Returns the request id, or None when this tab has no figure export.
        """
        if self.figure_kind is None:
            self.context.report_error(f"{self.title}: no figure export for this tab")
            return None
        path = str(path)
        return self.submit(
            "export-figure", export_figure_in_process, self.figure_kind, self.shown_results(),
            dict(self.figure_options()), path, size,
            on_result=self._on_exported, description=f"Exporting {Path(path).name}")

    def data_columns(self) -> tuple[dict[str, np.ndarray], list[str]] | None:
        """The shown data as named columns plus header comment lines (GUI thread).

        Columns may differ in length (padded with empty cells). None: nothing to export.
        """
        return None

    def export_data(self, path: str | os.PathLike) -> int | None:
        """Export the shown data to CSV in a worker (atomic). Returns the request id."""
        table = self.data_columns()
        if table is None:
            self.context.report_error(f"{self.title}: no data to export")
            return None
        columns, header = table
        path = str(path)
        return self.submit(
            "export-data", export_table_job, dict(columns), path, list(header),
            on_result=self._on_exported, description=f"Exporting {Path(path).name}")

    def _on_exported(self, result: str | dict) -> None:
        if isinstance(result, dict):  # a figure: every page written, stale ones removed
            written, removed = result["written"], result["removed"]
        else:
            written, removed = [str(result)], []
        self.context.show_status(export_message(written, removed))
        self.sigExported.emit(str(written[0]))

    # ------------------------------------------------------------ settings
    def get_settings(self) -> dict:
        """This tab's settings for the session file (JSON-serialisable)."""
        return {}

    def set_settings(self, settings: dict) -> None:
        """Restore settings from :meth:`get_settings`; ignore unknown or bad values."""

    def persist(self) -> None:
        """Write the files the session refers to (GUI thread, at close, after the
        workers stopped, before :meth:`get_settings`). The default writes nothing."""

    # --------------------------------------------------------------- tests
    def plot_items(self) -> list[Any]:
        """The visible pyqtgraph data items (curves, images, error bars) of this panel.

        Scatter items that belong to a curve are not listed separately.
        """
        items = []
        for view in self.findChildren(pg.GraphicsView):
            scene = view.scene()
            # a tab may keep plot areas it does not show (the g2 tab: one per layout)
            if scene is None or not view.isVisibleTo(self):
                continue
            for it in scene.items():
                if not isinstance(it, _DATA_ITEM_TYPES) or not it.isVisible():
                    continue
                if isinstance(it, pg.ScatterPlotItem) and isinstance(
                        it.parentItem(), pg.PlotDataItem):
                    continue
                if isinstance(it, pg.PlotDataItem) and (it.xData is None or it.xData.size == 0):
                    continue  # an emptied, reusable item shows nothing
                items.append(it)
        return items
