"""The real app (``xpcsviewer gui FOLDER``) with one scenario added, for
test_signal_close.py: ``python _signal_app.py SCENARIO FOLDER WORKDIR``.

Scenarios: ``job`` (a slow job that honours cancel, writing atomically, plus a
regrouped temporary opened as a target), ``stuck`` (a job that ignores cancel),
``modal`` (a modal dialog open when the signal comes). Markers go to WORKDIR.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import xpcsviewer._entry as entry  # takes SIGINT/SIGTERM early, as the real app

SCENARIO, FOLDER, WORK = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])


def slow_job(out: str, progress=None, cancel=None) -> str:
    """Writes ``out`` atomically for up to a minute; stops at a cancel check."""
    from xpcsviewer.io.outputs import atomic_path
    from xpcsviewer.progress import Cancelled

    try:
        with atomic_path(Path(out)) as tmp:
            with open(tmp, "w") as fh:
                (WORK / "job-started").write_text("1")
                for i in range(1200):
                    fh.write(f"{i}\n")
                    time.sleep(0.05)
                    if cancel is not None:
                        cancel.raise_if_cancelled()
    except Cancelled:
        (WORK / "job-cancelled").write_text("1")
        raise
    return out


def stuck_job(progress=None, cancel=None) -> None:
    (WORK / "job-started").write_text("1")
    time.sleep(120)  # a compile: no cancel check


def start(win) -> None:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QMessageBox

    from xpcsviewer.gui.panels._detector_jobs import _temp_dir

    if SCENARIO == "job":
        src = next(FOLDER.glob("*_results.hdf"))
        tmp = _temp_dir() / "T01_regrouped_own1_results.hdf"
        shutil.copy(src, tmp)
        (WORK / "temporary").write_text(str(tmp))
        win.context.open_files([str(tmp)])
        win.context.runner.submit("slow", slow_job, str(WORK / "out" / "slow.txt"),
                                  description="slow test job")
    elif SCENARIO == "stuck":
        win.context.runner.submit("stuck", stuck_job, description="stuck test job")
    elif SCENARIO == "modal":
        def ask() -> None:
            box = QMessageBox(QMessageBox.Icon.Question, "Question", "Modal?",
                              QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                              win)
            QTimer.singleShot(0, lambda: (WORK / "modal-open").write_text("1"))
            (WORK / "modal-result").write_text(str(box.exec()))

        QTimer.singleShot(200, ask)


def main() -> int:
    from xpcsviewer.gui import main_window

    shown = main_window.MainWindow.showEvent

    def show_event(self, event) -> None:
        shown(self, event)
        if not getattr(self, "_scenario_started", False):
            self._scenario_started = True
            start(self)

    main_window.MainWindow.showEvent = show_event
    sys.argv = [sys.argv[0], "gui", str(FOLDER)]
    return entry.main()


if __name__ == "__main__":
    sys.exit(main())
