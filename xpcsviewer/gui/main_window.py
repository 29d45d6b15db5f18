"""The main window: data browser dock, analysis tabs, menus, status bar, session."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from PySide6.QtCore import QFileSystemWatcher, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFileDialog,
    QFrame,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QStackedWidget,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from xpcsviewer.gui import session as session_mod
from xpcsviewer.gui._window_extras import PROGRESS_BAR_WIDTH, PROGRESS_WIDTH, WindowExtrasMixin
from xpcsviewer.gui._window_session import WindowSessionMixin
from xpcsviewer.gui._window_tabs import WindowTabsMixin
from xpcsviewer.gui._window_targets import WindowTargetsMixin, load_targets
from xpcsviewer.gui.browser import DataBrowser
from xpcsviewer.gui.context import AppContext
from xpcsviewer.gui.empty_state import EmptyState
from xpcsviewer.gui.panels import PANELS, load_panel_class
from xpcsviewer.gui.panels.base import BasePanel
from xpcsviewer.gui.resources import app_icon
from xpcsviewer.gui.workers import (
    ErrorInfo,
    TaskRunner,
    warmup_enabled,
)

__all__ = ["MainWindow", "UnavailablePanel", "load_targets", "warmup_enabled"]

logger = logging.getLogger(__name__)
#: job keys Esc and Cancel leave running (see MainWindow.cancel_jobs)
KEEP_ON_CANCEL = ("warmup", "window:load")



#: How long closing the window waits for cancelled jobs to stop.
CLOSE_WAIT_MS = 800
#: Contexts of closed windows whose cancelled jobs were still running.
_DETACHED: list = []


class UnavailablePanel(BasePanel):
    """Stand-in tab for a panel whose module could not be loaded."""

    def __init__(self, context: AppContext, name: str, reason: str, parent=None) -> None:
        super().__init__(context, parent)
        self.name = name
        self.title = name
        self.reason = reason
        lay = QVBoxLayout(self)
        lab = QLabel(f"This tab is not available:\n{reason}")
        lab.setAlignment(Qt.AlignmentFlag.AlignCenter)
        lay.addWidget(lab)

    def applies_to(self, results):
        return f"Not available: {self.reason}"


_TITLES = {"saxs2d": "SAXS-2D", "saxs1d": "SAXS-1D", "stability": "Stability",
           "intensity": "Intensity", "g2": "g2", "diffusion": "Diffusion",
           "twotime": "Two-Time", "qmap": "Q-Map", "metadata": "Metadata"}


class MainWindow(WindowTargetsMixin, WindowTabsMixin, WindowExtrasMixin, WindowSessionMixin,
                 QMainWindow):
    """The XPCS Viewer window.

    Parameters
    ----------
    context : AppContext, optional
        Shared services; a new one (asynchronous runner) by default.
    restore_session : bool
        Restore folder, targets, tab, geometry and tab settings from the session file.
    save_session_on_close : bool
        Write the session when the window closes.
    """

    sigTargetsLoaded = Signal(list)
    """Targets were opened and handed to the tabs: (list of XpcsResult)."""

    def __init__(self, context: AppContext | None = None, restore_session: bool = True,
                 save_session_on_close: bool = True, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.context = context if context is not None else AppContext(TaskRunner())
        self.context.setParent(self)
        self.save_session_on_close = save_session_on_close
        self.results: list[Any] = []
        self.errors: list[ErrorInfo] = []
        self.load_errors: list[tuple[str, str]] = []
        self.theme = "light"
        self._pending_session: dict | None = None
        self.waiting_paths: list[str] = []
        self._retry_watcher = QFileSystemWatcher(self)
        self._retry_timer = QTimer(self, singleShot=True, interval=700)
        self._retry_timer.timeout.connect(self._retry_waiting)
        self._retry_watcher.fileChanged.connect(self._on_waiting_changed)
        self._retry_watcher.directoryChanged.connect(self._on_waiting_changed)
        self._pending_current = 0
        self.recent: list[str] = []
        self.figure_size = "double"  #: the Export Figure dialog's last size
        self.setWindowTitle("XPCS Viewer")
        self.setWindowIcon(app_icon())
        self.resize(1400, 900)
        self._build_browser()
        self._build_tabs()
        self._build_status()
        self._build_menus()
        self._default_state = self.saveState()
        self.context.sigError.connect(self._on_error)
        self.context.sigStatus.connect(self._on_status)
        self._progress_state: dict = {}
        self._progress_timer = QTimer(self, singleShot=True, interval=0)
        self._progress_timer.timeout.connect(self._apply_progress)
        self.context.runner.sigBusyChanged.connect(self._on_busy_changed)
        self.context.runner.sigProgress.connect(self._on_progress)
        self.update_tab_states()
        self.warmup_done = False
        self.sigTargetsLoaded.connect(self._warm_for_targets)
        self.sigTargetsLoaded.connect(self._first_fit_unwanted)
        if warmup_enabled():
            # JAX, NumPyro and the default fit programs load in a worker: the window
            # shows at once and the first fit does not compile.
            self.backend_label.setText("JAX: starting\u2026")
            QTimer.singleShot(0, self._start_warmup)
        else:
            self._describe_backend()
        if restore_session:
            self.restore_session()

    # ------------------------------------------------------------ building
    def _build_browser(self) -> None:
        self.browser = DataBrowser(self.context)
        self.browser_dock = QDockWidget("Data", self)
        self.browser_dock.setObjectName("data_browser_dock")
        self.browser_dock.setWidget(self.browser)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.browser_dock)
        self.browser.sigTargetsChanged.connect(self._on_targets_changed)
        self.browser.sigCurrentChanged.connect(self._on_current_changed)
        self.browser.sigFolderChanged.connect(self._on_folder_opened)
        self.browser.sigRawSources.connect(self.open_raw_sources)  # the Raw tab's
        self.setAcceptDrops(True)  # files dropped anywhere open (see dropEvent)
        self.context.sigOpenFiles.connect(self.browser.add_paths)  # e.g. regrouped g2
        self.temporaries: set[str] = set()  # removed at close
        self.context.sigOpenFiles.connect(self._note_temporaries)
        self.context.sigFitWhenShown.connect(self.fit_when_shown)
        self.browser.target_list.itemActivated.connect(lambda _i: self._replot_current())

    def _build_tabs(self) -> None:
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        # every tab in sight at the default size: Fusion's 12 px a side put the 16 labels
        # 55 px past a 1389 px window, Live and Series behind the scroll arrows (issue
        # 33); 8 px fits them. The arrows stay for narrower windows (no minimum width).
        self.tabs.tabBar().setStyleSheet("QTabBar::tab { padding: 4px 8px; }")
        self.panels: dict[str, BasePanel] = {}
        self.preferred_tab = "g2"  # the tab files open on, until the user picks another
        for name, _spec in PANELS:
            try:
                cls = load_panel_class(name)
                panel = cls(self.context)
                title = getattr(panel, "title", _TITLES.get(name, name))
            except Exception as exc:  # a missing or broken panel disables one tab only
                if isinstance(exc, ImportError):
                    logger.warning("panel %s is not available: %s", name, exc)
                else:
                    logger.exception("panel %s could not be built", name)
                panel = UnavailablePanel(self.context, name, f"{type(exc).__name__}: {exc}")
                title = _TITLES.get(name, name)
            self.panels[name] = panel
            # A scroll area lets the window shrink below a panel's minimum width
            # (small laptop screens) instead of forcing a huge window.
            scroll = QScrollArea()
            scroll.setWidgetResizable(True)
            scroll.setFrameShape(QFrame.Shape.NoFrame)
            scroll.setWidget(panel)
            self.tabs.addTab(scroll, title)
        self.tabs.currentChanged.connect(self._on_tab_changed)
        # without targets the centre says what to do instead of greyed-out tabs
        self.empty_state = EmptyState()
        self.empty_state.sigOpenFolder.connect(self._on_open_folder)
        self.empty_state.sigOpenFirst.connect(self.open_first_file)
        self.empty_state.sigPathsDropped.connect(self.open_paths)
        self.empty_state.sigLive.connect(self.show_live)
        self._tabs_pinned = False  # the Live tab was asked for: tabs even without files
        self.central = QStackedWidget()
        self.central.addWidget(self.empty_state)
        self.central.addWidget(self.tabs)
        self.setCentralWidget(self.central)
        self.browser.sigScanned.connect(self._on_scanned)
        self._listed_n: int | None = None  # files of the folder (None: being listed)
        self._loading = False  # targets being opened
        self.browser.sigFolderChanged.connect(self._on_folder_listing)

    def _build_status(self) -> None:
        sb = self.statusBar()
        self.message_label = QLabel("Ready")
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details_btn = QToolButton(text="Details\u2026", toolTip="Show the last error")
        self.details_btn.setVisible(False)
        self.details_btn.clicked.connect(self.show_error_details)
        # the job's name in a label of its own, the bar only "66%": a name inside the
        # bar ran past it ("compiling t|he fits", issue 33)
        self.progress_label = QLabel()
        self.progress_label.setFixedWidth(PROGRESS_WIDTH - PROGRESS_BAR_WIDTH)
        self.progress_label.setAlignment(Qt.AlignmentFlag.AlignRight
                                         | Qt.AlignmentFlag.AlignVCenter)
        self.progress_label.setVisible(False)
        self.progress = QProgressBar()
        self.progress.setFixedWidth(PROGRESS_BAR_WIDTH)
        self.progress.setTextVisible(True)
        self.progress.setVisible(False)
        self.cancel_btn = QPushButton("Cancel", toolTip="Cancel running jobs (Esc)")
        self.cancel_btn.setVisible(False)
        self.cancel_btn.clicked.connect(self.cancel_jobs)
        # their place is kept while hidden: showing them must not resize the status bar
        # (and so every plot above it, a full repaint at each job start)
        for w in (self.progress_label, self.progress, self.cancel_btn):
            pol = w.sizePolicy()
            pol.setRetainSizeWhenHidden(True)
            w.setSizePolicy(pol)
        self.backend_label = QLabel("backend: \u2026")
        self.backend_label.setToolTip("Array backend and device (Tools menu)")
        sb.addWidget(self.message_label, 1)
        sb.addWidget(self.details_btn)
        sb.addPermanentWidget(self.progress_label)
        sb.addPermanentWidget(self.progress)
        sb.addPermanentWidget(self.cancel_btn)
        sb.addPermanentWidget(self.backend_label)
        self.context.runner.sigJobFinished.connect(self._on_job_finished)

    def _action(self, menu, text: str, slot, shortcut: str | QKeySequence | None = None,
                tip: str = "") -> QAction:
        act = QAction(text, self)
        if shortcut is not None:
            act.setShortcut(QKeySequence(shortcut))
        if tip:
            act.setStatusTip(tip)
        act.triggered.connect(slot)
        menu.addAction(act)
        return act

    def _build_menus(self) -> None:
        mb = self.menuBar()
        m = mb.addMenu("&File")
        self._action(m, "Open &Folder\u2026", self._on_open_folder, "Ctrl+O")
        self._action(m, "Open F&iles\u2026", self._on_open_files, "Ctrl+Shift+O")
        self._action(m, "&Reload Folder", self.browser.refresh, "F5")
        from xpcsviewer.gui.correlate_dialog import add_correlate_action

        add_correlate_action(self, m)
        self.recent_menu = m.addMenu("Recent Folders")
        self.browser.recent_btn.setMenu(self.recent_menu)
        m.addSeparator()
        self._action(m, "Export &Figure\u2026", self._on_export_figure, "Ctrl+E",
                     "Publication figure of the current tab (PNG, SVG, PDF)")
        self._action(m, "Export &Data\u2026", self._on_export_data, "Ctrl+Shift+E",
                     "The current tab's data as CSV")
        self._action(m, "&Report of the Targets\u2026", self._on_report, None,
                     "One HTML or PDF report of the selected files (as xpcsviewer report)")
        m.addSeparator()
        self._action(m, "&Quit", self.close, QKeySequence.StandardKey.Quit)

        m = mb.addMenu("&View")
        grp = QActionGroup(self)
        self.theme_actions = {}
        for t in ("light", "dark"):
            a = self._action(m, f"{t.capitalize()} Theme", lambda _c=False, t=t: self.set_theme(t))
            a.setCheckable(True)
            grp.addAction(a)
            self.theme_actions[t] = a
        self.theme_actions["light"].setChecked(True)
        m.addSeparator()
        m.addAction(self.browser_dock.toggleViewAction())
        self._action(m, "Reset &Layout", self.reset_layout)
        self._action(m, "Next Tab", lambda: self._step_tab(+1), "Ctrl+Tab")
        self._action(m, "Previous Tab", lambda: self._step_tab(-1), "Ctrl+Shift+Tab")
        for i in range(min(9, self.tabs.count())):
            a = QAction(self)
            a.setShortcut(QKeySequence(f"Ctrl+{i + 1}"))
            a.triggered.connect(lambda _c=False, i=i: self.select_tab_index(i))
            self.addAction(a)
        esc = QAction(self)
        esc.setShortcut(QKeySequence("Esc"))
        esc.triggered.connect(self.cancel_jobs)
        self.addAction(esc)

        m = mb.addMenu("&Tools")
        self._action(m, "&Live Acquisition\u2026", self.show_live, "Ctrl+L",
                     "Correlate an acquisition while the detector writes it")
        bm = m.addMenu("Backend")
        grp = QActionGroup(self)
        self.backend_actions = {}
        for key, label in (("auto", "Automatic"), ("jax", "JAX"), ("numpy", "NumPy")):
            a = self._action(bm, label, lambda _c=False, k=key: self.set_backend(k))
            a.setCheckable(True)
            grp.addAction(a)
            self.backend_actions[key] = a
        # the window's jobs run under the configuration it was opened with (the
        # command line's flags over the environment); the menus change it
        from xpcsviewer.backends import current_config

        if self.context.runner.config is None:
            self.context.runner.config = current_config()
        cfg = self.context.runner.config
        self.backend_actions[cfg.backend].setChecked(True)
        dm = m.addMenu("Device")
        grp = QActionGroup(self)
        self.device_actions = {}
        for key, label in (("auto", "Automatic (by job size)"), ("cpu", "CPU"), ("gpu", "GPU")):
            a = self._action(dm, label, lambda _c=False, k=key: self.set_device(k))
            a.setCheckable(True)
            grp.addAction(a)
            self.device_actions[key] = a
        self.device_actions[cfg.device].setChecked(True)

        m = mb.addMenu("&Help")
        self._action(m, "&Keyboard Shortcuts", self.show_shortcuts, "F1")
        self._action(m, "&About", self.show_about)

    def _on_open_files(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(
            self, "Open result files or raw sources", self.browser.folder or str(Path.home()),
            "Results and raw data (*.hdf *.h5 *.hdf5 *.nxs *.npy *.bin *.bin.00*);;"
            "All files (*)")
        if files:
            self.open_paths(files)

    def _on_open_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open folder",
                                                  self.browser.folder or str(Path.home()))
        if folder:
            self.open_folder_first_look(folder)

    def _on_folder_opened(self, folder: str) -> None:
        self.recent = session_mod.add_recent(self.recent, folder)
        self._fill_recent_menu()

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        for f in self.recent:
            a = self.recent_menu.addAction(f)
            a.triggered.connect(lambda _c=False, f=f: self.open_folder_first_look(f))
        if self.recent:
            self.recent_menu.addSeparator()
            a = self.recent_menu.addAction("Clear Recent")
            a.triggered.connect(self._clear_recent)

    def _clear_recent(self) -> None:
        self.recent = []
        self._fill_recent_menu()

    # -------------------------------------------------------------- export
    def _on_export_figure(self) -> None:
        panel = self.current_panel()
        if panel is None:
            return
        from xpcsviewer.gui.export_dialog import FigureExportDialog, confirm_replace_figure

        base = self.context.export_folder.propose(f"{panel.name}.png")
        dlg = FigureExportDialog(self, Path(base), self.figure_size)
        try:
            if not dlg.exec():
                return
            path = dlg.chosen_path()
            self.figure_size = dlg.chosen_size()
        finally:
            dlg.deleteLater()
        if path and confirm_replace_figure(self, path):
            self.context.export_folder.remember(path)
            panel.export_figure(path, size=self.figure_size)

    def _on_report(self) -> None:
        from xpcsviewer.gui._report_action import report_targets

        report_targets(self)

    def _on_export_data(self) -> None:
        panel = self.current_panel()
        if panel is None:
            return
        base = self.context.export_folder.propose(f"{panel.name}.csv")
        path, _ = QFileDialog.getSaveFileName(self, "Export data", base, "CSV (*.csv)")
        if path:
            self.context.export_folder.remember(path)
            panel.export_data(path)

    # ------------------------------------------------------- status, errors
    def _on_status(self, msg: str) -> None:
        self.message_label.setText(msg)
        self.message_label.setToolTip(msg)  # the whole line where the bar cuts it
        self.message_label.setStyleSheet("")

    def _on_error(self, info: ErrorInfo) -> None:
        self.errors.append(info)
        self.message_label.setText(f"\u26a0 {info.message}")
        self.message_label.setStyleSheet("color: #c0392b;")
        self.message_label.setToolTip(info.message)
        self.details_btn.setVisible(True)

    def show_error_details(self) -> QMessageBox | None:
        """Open a dialog with the recent errors and the last traceback (non-modal)."""
        if not self.errors:
            return None
        last = self.errors[-1]
        box = QMessageBox(QMessageBox.Icon.Warning, "Errors", last.message,
                          QMessageBox.StandardButton.Close, self)
        # earlier errors, each once (with a count), without Python class names
        counts: dict[str, int] = {}
        for e in self.errors[-50:-1]:
            if e.message != last.message:
                counts[e.message] = counts.get(e.message, 0) + 1
        lines = [m if n == 1 else f"{m} (\u00d7{n})" for m, n in counts.items()]
        box.setInformativeText("\n".join(lines[-10:]))
        box.setDetailedText(last.traceback_text or last.message)
        box.setModal(False)
        box.show()
        self._error_box = box
        return box

    def _on_busy_changed(self, busy: bool) -> None:
        self._progress_state["busy"] = busy
        if not busy:
            self._progress_state.pop("done", None)
        self._schedule_progress()

    def _on_progress(self, key: str, done: int, total: int, message: str) -> None:
        self._progress_state.update(key=key, done=done, total=total, message=message)
        self._schedule_progress()

    def _schedule_progress(self) -> None:
        # QProgressBar repaints synchronously, and with it every widget waiting for a
        # paint (a whole plot grid): on a turn of its own it never adds to a job's
        # callback on the GUI thread.
        if not self._progress_timer.isActive():
            self._progress_timer.start()

    def _apply_progress(self) -> None:
        st = self._progress_state
        busy = st.get("busy", False)
        self.progress.setVisible(busy)
        self.progress_label.setVisible(busy)
        self.cancel_btn.setVisible(busy)
        if not busy:
            self.progress.setRange(0, 1)
            self.progress.setValue(1)
            return
        total = st.get("total", 0)
        if "done" in st and total > 0:
            self.progress.setRange(0, total)
            self.progress.setValue(min(st["done"], total))
        else:
            self.progress.setRange(0, 0)
        self._label_progress(st)

    def cancel_jobs(self) -> None:
        """Cancel every running computation (Esc, the status bar's Cancel).

        Two jobs go on: the start-up warm-up (cut short, it left "JAX: starting…" for good
        and the first fit compiling) and the opening of the targets (cut short, every tab
        stayed blank while the target list named the files; a new target list replaces
        it anyway). Both were seen pressing Esc during the start-up."""
        runner = self.context.runner
        mine = [k for k in runner.running_keys() if not k.startswith(KEEP_ON_CANCEL)]
        for key in mine:
            runner.cancel(key)
            panel = self.panels.get(key.split(":", 1)[0])
            if panel is not None:
                panel.mark_stale()
        if mine:
            self.context.show_status("Cancelled (a tab left unfinished recomputes when "
                                     "shown again)")
        elif runner.is_busy:
            self.context.show_status("Nothing to cancel: the start-up warm-up and the "
                                     "opening of files go on")

    # ---------------------------------------------------------------- close
    def shutdown(self, msecs: int = 10000) -> bool:
        """Cancel jobs, start no new ones and wait for the pool (GUI thread; the end of
        the window's work). True when all stopped."""
        self.context.runner.close()
        return self.context.runner.wait_for_done(msecs)

    def _note_temporaries(self, paths: list[str]) -> None:
        # files a tab wrote to the per-user temporary folder (a regrouped g2)
        from xpcsviewer.gui.panels._detector_jobs import temp_dir_path

        tmp = temp_dir_path()
        for p in paths:
            if Path(p).parent == tmp:
                self.temporaries.add(str(p))

    def remove_temporaries(self) -> list[str]:
        """Delete the temporary files this window made; returns those removed."""
        gone = []
        for p in sorted(self.temporaries):
            try:
                Path(p).unlink(missing_ok=True)
                gone.append(p)
            except OSError as exc:
                logger.warning("temporary %s not removed: %s", p, exc)
        self.temporaries.clear()
        return gone

    def closeEvent(self, event) -> None:  # Qt override
        # Closing must not wait for a job that cannot stop at once (a JIT
        # compile, one long read): cancel, wait a moment, then let the shared
        # services outlive the window until their threads end.
        if not self.shutdown(CLOSE_WAIT_MS):
            self.context.setParent(None)
            _DETACHED.append(self.context)
        if self.save_session_on_close:
            for name, panel in self.panels.items():
                try:
                    panel.persist()
                except Exception:  # the session is still saved
                    logger.exception("persist of %s", name)
            self.save_session()
        self.remove_temporaries()
        super().closeEvent(event)


def _app() -> QApplication | None:
    return QApplication.instance()
