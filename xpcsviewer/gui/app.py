"""Start the desktop app: ``run_app(paths)``."""

from __future__ import annotations

import logging
import os
import sys
import threading

__all__ = ["configure_pyqtgraph", "install_error_hooks", "quiet_numerical_warnings", "run_app"]

logger = logging.getLogger(__name__)
_configured = False


def configure_pyqtgraph() -> None:
    """Global pyqtgraph options, once: detector rows and columns shown as stored."""
    global _configured
    if _configured:
        return
    import pyqtgraph as pg

    pg.setConfigOptions(imageAxisOrder="row-major", antialias=True, background="w",
                        foreground="k")
    # Every histogram's colour-map menu lists matplotlib's "other" maps when it is
    # built, importing matplotlib's colour maps on the GUI thread (~1 s of the
    # start-up). The app has its own colour-map box; skip that one submenu.
    try:
        from pyqtgraph.widgets import ColorMapMenu as _cmm

        if callable(getattr(_cmm, "find_mpl_leftovers", None)):
            _cmm.find_mpl_leftovers = lambda: []
    except ImportError:
        pass
    _configured = True


def install_error_hooks(context) -> bool:
    """Route uncaught exceptions (GUI and worker threads) to the error sink.

    ``XPCSVIEWER_CATCH_ERRORS=0`` leaves Python's default hooks (debugging).
    Returns True when the hooks were installed.
    """
    if os.environ.get("XPCSVIEWER_CATCH_ERRORS", "1").strip() in ("0", "false", "no"):
        return False
    def hook(exc_type, exc, tb):
        if issubclass(exc_type, KeyboardInterrupt):
            sys.__excepthook__(exc_type, exc, tb)
            return
        logger.error("uncaught exception", exc_info=(exc_type, exc, tb))
        if exc.__traceback__ is None:
            exc = exc.with_traceback(tb)
        if threading.current_thread() is threading.main_thread():
            context.report_error(exc)
        else:
            context.report_error_threadsafe(exc)

    def thread_hook(args):
        hook(args.exc_type, args.exc_value, args.exc_traceback)

    sys.excepthook = hook
    threading.excepthook = thread_hook
    return True


def quiet_numerical_warnings() -> None:
    """Numerical warnings (all-NaN slices, 0/0 in a ratio) are not printed to stderr.

    Bad data are reported once, in words, by the reader and the panels; NumPy's
    RuntimeWarnings would only repeat it cryptically on the terminal.
    """
    import warnings

    warnings.simplefilter("ignore", RuntimeWarning)


def run_app(paths: list[str], fit_tab: str | None = None) -> int:
    """Open the main window on ``paths`` (folders and/or files) and run the event loop.

    With ``fit_tab`` (the demo: "g2") the window shows that tab and fits the targets.
    SIGINT and SIGTERM close the window as the user would and return 128 + signal
    (:mod:`xpcsviewer.gui.shutdown`); 0 otherwise.
    """
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from xpcsviewer.gui.platform_check import display_problem

    if QApplication.instance() is None and (problem := display_problem()):
        print(f"xpcsviewer: {problem}", file=sys.stderr)
        return 2
    quiet_numerical_warnings()

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("XPCS Viewer")
    app.setOrganizationName("xpcsviewer")
    app.setDesktopFileName("xpcsviewer")  # Wayland/X11 match the window to xpcsviewer.desktop
    from xpcsviewer.gui.resources import app_icon

    app.setWindowIcon(app_icon())
    configure_pyqtgraph()
    from xpcsviewer.gui.main_window import MainWindow
    from xpcsviewer.gui.shutdown import (
        SIGNAL_WAIT_S,
        SignalCloser,
        wait_for_workers,
        write_ready_marker,
    )
    from xpcsviewer.progress import interrupted

    win = MainWindow()
    install_error_hooks(win.context)
    closer = SignalCloser(win)
    try:
        if sig := interrupted():  # Ctrl-C while the window was being built
            win.save_session_on_close = False
            win.close()
            return 128 + sig
        if paths and fit_tab:
            win.open_and_fit([str(p) for p in paths], fit_tab)
        elif paths:
            win.open_paths([str(p) for p in paths])
        win.show()
        QTimer.singleShot(0, write_ready_marker)
        code = int(app.exec())
        from xpcsviewer.jobs.fit_process import shutdown_fit_process

        shutdown_fit_process()  # the fit process ends with the window
        if closer.signum:
            # The session is saved and the temporaries are gone. Cancelled jobs that
            # cannot stop (a compile) must not keep the process; and Python's own
            # teardown of JAX and Qt took 1-2.5 s and crashed (SIGSEGV) in ~1 of 16
            # runs, turning the documented 128 + signal into 139: skip it.
            wait_for_workers(SIGNAL_WAIT_S, since=closer.signal_time)
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(128 + closer.signum)
    finally:
        closer.restore()
    return code
