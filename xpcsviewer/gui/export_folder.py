"""Where a save dialog proposes to write (issue 49 item 5): the user's last export
folder, else a per-user folder, never the input files' folder unless the user chose it.

The per-user folder is ``XPCSVIEWER_EXPORT_DIR`` when set, else ``xpcsviewer`` in the
platform's documents folder (``~/Documents/xpcsviewer`` on Linux and macOS,
``Documents\\xpcsviewer`` on Windows). The last export folder is kept in the session file
(``last_export_folder``).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["ExportFolder", "default_export_dir"]


def default_export_dir() -> Path:
    """The per-user folder proposed before the first export."""
    env = os.environ.get("XPCSVIEWER_EXPORT_DIR")
    if env:
        return Path(env).expanduser()
    from PySide6.QtCore import QStandardPaths

    docs = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
    return (Path(docs) if docs else Path.home() / "Documents") / "xpcsviewer"


class ExportFolder:
    """The last folder the user wrote an export into (one per window, kept in the
    session)."""

    def __init__(self) -> None:
        self.last: str | None = None

    def folder(self) -> Path:
        """The folder to propose: the last export folder while it exists, else the
        per-user folder (made, so a dialog can open in it)."""
        if self.last and Path(self.last).is_dir():
            return Path(self.last)
        folder = default_export_dir()
        with contextlib.suppress(OSError):  # unwritable: the dialog still lets one choose
            folder.mkdir(parents=True, exist_ok=True)
        return folder

    def propose(self, name: str) -> str:
        """``name`` in :meth:`folder` (a path string for a save dialog)."""
        return str(self.folder() / name)

    def remember(self, path: str | os.PathLike) -> None:
        """The user chose to write ``path``: its folder is the next proposal."""
        if path:
            self.last = str(Path(path).resolve().parent)


def ask_save_path(parent, context, title: str, name: str, filters: str) -> str:
    """A save dialog opened on ``name`` in the last export folder (:class:`ExportFolder`
    of ``context``); the folder chosen is remembered. Returns the path or ``""``."""
    from PySide6.QtWidgets import QFileDialog

    path, _ = QFileDialog.getSaveFileName(
        parent, title, context.export_folder.propose(Path(name).name), filters)
    if path:
        context.export_folder.remember(path)
    return path
