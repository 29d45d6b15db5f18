"""The main window's targets: opening them in a worker, the files that could not be
opened, raw sources (shown in the Raw tab, never targets), drops on the window, a
folder's first look, and the page shown while none is open (a mixin)."""

from __future__ import annotations

import os
from pathlib import Path

from xpcsviewer.gui.workers import ErrorInfo, friendly_message
from xpcsviewer.io.errors import display_path

__all__ = ["WindowTargetsMixin", "load_targets"]


def load_targets(paths: list[str], loader, progress=None, cancel=None) -> tuple[list, list]:
    """Open result files one by one (worker job); failures are collected, not raised.

    Returns
    -------
    results : list of XpcsResult
        In the order of ``paths``, without the files that failed.
    errors : list of (path, message, retry)
        ``retry`` is True for a file another program is still writing.
    """
    results, errors = [], []
    for i, p in enumerate(paths):
        if cancel is not None:
            cancel.raise_if_cancelled()
        if progress is not None:
            progress(i, len(paths), f"reading {display_path(Path(p).name)}")
        try:
            results.append(loader(p))
        except Exception as exc:  # one bad file must not stop the others
            errors.append((p, friendly_message(exc), bool(getattr(exc, "retry", False))))
    if progress is not None:
        progress(len(paths), len(paths), "done")
    return results, errors


class WindowTargetsMixin:
    """Targets of :class:`~xpcsviewer.gui.main_window.MainWindow` (GUI thread)."""

    def _on_targets_changed(self, paths: list[str]) -> None:
        self._loading = True
        self.context.runner.submit(
            "window:load", load_targets, list(paths), self.context.load_result,
            on_result=self._on_targets_loaded, description="Opening files")
        self._update_central()

    def _on_targets_loaded(self, out: tuple[list, list]) -> None:
        results, errors = out
        self._loading = False
        self.load_errors = [(p, m) for p, m, _r in errors]
        waiting = [p for p, _m, r in errors if r]
        self._watch_for_retry(waiting)
        marks = {}
        for path, msg, retry in errors:
            name = display_path(Path(path).name)
            # the message names the file once, by its name (the path is in the details)
            msg = msg.replace(display_path(str(path)), name)
            if name not in msg:
                msg = f"{name}: {msg}"
            if retry:
                msg = f"{msg}; it opens when the writer is done"
            marks[str(path)] = msg
            self.context.report_error(ErrorInfo(
                "FileBeingWritten" if retry else "XpcsFileError", msg,
                f"{display_path(str(path))}\n{msg}", -1))
        self.browser.mark_targets(marks)
        self.results = list(results)
        self.context.set_targets(self.results)
        cur = self.current_index()
        for panel in self.panels.values():
            panel.set_current(cur)
            panel.set_results(self.results)
        self.update_tab_states()
        self._update_central()
        note, self._open_note = getattr(self, "_open_note", ""), ""
        if results and not errors:
            self.context.show_status(f"{len(results)} file(s) open" + (f"; {note}" if note else ""))
        self.sigTargetsLoaded.emit(self.results)

    def _watch_for_retry(self, paths: list[str]) -> None:
        """Open these targets again when they (or their folders) change (GUI thread).

        A correlator writes a result in place or renames a finished temporary
        over it; either way the file or its folder changes.
        """
        self.waiting_paths = list(paths)
        w = self._retry_watcher
        for old in (*w.files(), *w.directories()):
            w.removePath(old)
        for p in paths:
            w.addPath(str(p))
            w.addPath(str(Path(p).parent))

    def _on_waiting_changed(self, _path: str) -> None:
        self._retry_timer.start()

    def _retry_waiting(self) -> None:
        if self.waiting_paths:
            self._on_targets_changed(self.browser.target_paths())

    def current_index(self) -> int:
        """Index into :attr:`results` of the current target (0 if none is current)."""
        paths = self.browser.target_paths()
        row = self.browser.current_index()
        if row < 0 or row >= len(paths):
            return 0
        loaded = [str(r.path) for r in self.results]
        try:
            return loaded.index(str(Path(paths[row])))
        except ValueError:
            return 0

    def _on_current_changed(self, _row: int) -> None:
        cur = self.current_index()
        for panel in self.panels.values():
            panel.set_current(cur)

    def _replot_current(self) -> None:
        panel = self.current_panel()
        if panel is not None:
            panel.set_results(self.results)

    def open_and_fit(self, paths: list[str], tab: str = "g2") -> None:
        """Open ``paths``, show ``tab`` and, once its curves are drawn, fit them (least
        squares, the tab's model): the first look of ``xpcsviewer FOLDER``, of
        ``xpcsviewer demo`` and of File > Open Folder shows what the app is for. Where
        nothing can be fitted (no multitau file) the fit is not started, and the fit
        pane says "press Fit" as always."""
        panel = self.panels.get(tab)
        old = getattr(self, "_first_fit", None)
        if old is not None:
            self._disarm_first_fit()
        if panel is not None and hasattr(panel, "run_fit"):

            def fit_once() -> None:
                self._disarm_first_fit()
                if self.results and panel.blocks:
                    panel.run_fit()

            self._first_fit = (panel, fit_once)
            panel.sigUpdated.connect(fit_once)
            self.select_tab(tab)
        self.open_paths(paths)

    def fit_when_shown(self, paths: list[str], model: str) -> None:
        """Have the g2 tab fit with ``model`` once it shows one of ``paths`` (the Live
        tab's result, fitted there: it opened unfitted here, issue 49). The fit waits
        for the tab to draw the files, as a user's Fit would."""
        panel = self.panels.get("g2")
        if panel is None or not hasattr(panel, "run_fit"):
            return
        want = {os.path.realpath(p) for p in paths}

        def fit_once() -> None:
            if not want & {os.path.realpath(str(r.path)) for r in panel.shown_results()}:
                return  # another update of the tab: the file is not shown yet
            panel.sigUpdated.disconnect(fit_once)
            i = panel.model_combo.findData(model)
            if i >= 0 and i != panel.model_combo.currentIndex():
                panel.model_combo.setCurrentIndex(i)
            panel.run_fit()

        panel.sigUpdated.connect(fit_once)

    def _disarm_first_fit(self, _results: list | None = None) -> None:
        """The first-look fit is for the targets opened with it: never a later open's."""
        armed, self._first_fit = getattr(self, "_first_fit", None), None
        if armed is None:
            return
        panel, fit_once = armed
        try:
            panel.sigUpdated.disconnect(fit_once)
        except (RuntimeError, TypeError):
            pass

    def _first_fit_unwanted(self, results: list) -> None:
        # targets loaded: when the tab cannot show them (no multitau), no fit waits
        armed = getattr(self, "_first_fit", None)
        if armed is not None and armed[0].applies_to(results) is not None:
            self._disarm_first_fit()

    def open_folder_first_look(self, folder: str) -> None:
        """File > Open Folder and the recent folders: as ``xpcsviewer FOLDER``."""
        self.open_and_fit([folder], "g2")

    def open_raw_sources(self, targets: list) -> None:
        """Show raw sources (:class:`~xpcsviewer.gui.raw_sources.RawTarget`) in the Raw
        tab: appended to the shared list :data:`RAW_SOURCES_KEY`, the first of them made
        :data:`RAW_CURRENT_KEY`; never result targets."""
        from xpcsviewer.gui.raw_sources import RAW_CURRENT_KEY, RAW_SOURCES_KEY

        if not targets:
            return
        have = list(self.context.shared.get(RAW_SOURCES_KEY) or [])
        paths = [t.path for t in have]
        for t in targets:
            if t.path not in paths:  # one already open keeps its q-map and bin time
                have.append(t)
                paths.append(t.path)
        current = have[paths.index(targets[0].path)]
        self.context.set_shared(RAW_SOURCES_KEY, have)
        self.context.set_shared(RAW_CURRENT_KEY, current)
        self._tabs_pinned = True  # the tabs, even without a result open
        self.update_tab_states()
        self.central.setCurrentWidget(self.tabs)
        names = ", ".join(t.label for t in targets)
        notes = []
        if current.qmap_path is None:
            notes.append("no q-map beside it: pick one in the Raw tab")
        if current.layout == "timepix" and current.bin_time is not None:
            notes.append(f"events in frames of {current.bin_time:.3g} s (change the bin "
                         "time in the Raw tab)")
        if "raw" in self.panels and self.tabs.isTabEnabled(self.tab_index("raw")):
            # not select_tab: results opened later still go to the user's tab
            self.tabs.setCurrentIndex(self.tab_index("raw"))
            where = "in the Raw tab"
        else:
            where = "as raw sources (no Raw tab in this build)"
        self.context.show_status(f"Opened {names} {where}"
                                 + (f"; {'; '.join(notes)}" if notes else ""))

    def dragEnterEvent(self, event) -> None:  # Qt override
        if event.mimeData().hasUrls():
            event.acceptProposedAction()
        else:
            super().dragEnterEvent(event)

    def dropEvent(self, event) -> None:  # Qt override
        """Files or folders dropped anywhere on the window open as from the command
        line: results become targets, raw sources go to the Raw tab."""
        urls = event.mimeData().urls() if event.mimeData().hasUrls() else []
        paths = [u.toLocalFile() for u in urls if u.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.open_paths(paths)
        else:
            super().dropEvent(event)

    def open_paths(self, paths: list[str]) -> None:
        """Open a folder (first folder given) and/or add files as targets; raw sources
        (files, a Rigaku 3M stem) go to the Raw tab instead. A folder is listed, even
        one of ESRF blocks: their series is one entry of the list.

        A folder alone opens with a target: the restored session's targets when they
        lie in it, else the folder's first file (see :meth:`_on_scanned`).
        """
        files, folder = [], None
        for p in paths:
            if Path(p).is_dir():
                folder = str(p)
                self.browser.open_folder(folder)
            else:
                files.append(str(Path(p).resolve()))
        if files:
            if not self.browser.folder:
                self.browser.open_folder(str(Path(files[0]).parent))
            self.browser.add_paths(files)
        elif folder is not None:
            self._first_file_of = str(Path(self.browser.folder).resolve())

    def _on_folder_listing(self, _folder: str) -> None:
        self._listed_n = None
        self._update_central()

    def _on_scanned(self, n: int) -> None:
        self._listed_n = int(n)
        folder, self._first_file_of = getattr(self, "_first_file_of", None), None
        self._update_central()
        if folder is None or str(Path(self.browser.folder).resolve()) != folder:
            return
        targets = self.browser.target_paths()
        if targets and all(str(Path(t).resolve().parent) == folder for t in targets):
            return  # the restored session's targets are in this folder
        opened = self.open_first_file()
        if opened and targets:
            self._open_note = "the previous targets were in another folder"
        elif not opened:
            self._disarm_first_fit()

    def show_live(self) -> None:
        """Show the Live tab, with or without files open."""
        self._tabs_pinned = True
        self.central.setCurrentWidget(self.tabs)
        self.select_tab("live")

    def open_first_file(self) -> bool:
        """Make the first listed result file the only target; without one, open the
        first raw source in the Raw tab (False when there is neither)."""
        entries = self.browser.visible_entries()
        results = [e for e in entries if e.kind is None or e.kind.kind in ("result", "other")]
        if results:
            self.browser.set_targets([results[0].path])
            return True
        raw = [e for e in entries if e.kind is not None and e.kind.kind == "raw"]
        if raw:
            self.browser.add_paths([raw[0].path])
            return True
        return False

    def _update_central(self) -> None:
        """Tabs when files are open (or Live was asked for), else the page that says
        what to do next."""
        if self.results or self._tabs_pinned:
            self.central.setCurrentWidget(self.tabs)
            return
        b = self.browser
        n_targets = len(b.target_paths())
        if n_targets and self._loading:
            self.empty_state.describe(b.folder, len(b.entries), n_targets)
        elif n_targets and self.load_errors:
            self.empty_state.describe(b.folder, len(b.entries), n_targets,
                                      [f"{Path(p).name}: {m}" for p, m in self.load_errors])
        else:
            n_raw = sum(1 for e in b.entries if e.kind is not None and e.kind.kind == "raw")
            self.empty_state.describe(b.folder or None, self._listed_n, n_raw=n_raw)
        self.central.setCurrentWidget(self.empty_state)
