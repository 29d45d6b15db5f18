"""What the window shows while no file is open: what to do next, never a wall of
greyed-out tabs."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from xpcsviewer.io.errors import display_path

__all__ = ["EmptyState"]


def _from_url(url) -> str:
    return url.toLocalFile()


class EmptyState(QWidget):
    """The central page of a window without targets (state-dependent hint, buttons,
    and a drop target for files and folders)."""

    sigOpenFolder = Signal()
    """The user asked to browse for a folder: ()."""
    sigOpenFirst = Signal()
    """The user asked to open the first file of the listed folder: ()."""
    sigPathsDropped = Signal(list)
    """Files or folders were dropped here: (list of str)."""
    sigLive = Signal()
    """The user asked to follow an acquisition (the Live tab): ()."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAcceptDrops(True)
        lay = QVBoxLayout(self)
        lay.addStretch(1)
        self.title = QLabel()
        self.title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        f = self.title.font()
        f.setPointSizeF(f.pointSizeF() * 1.4)
        f.setBold(True)
        self.title.setFont(f)
        self.text = QLabel()
        self.text.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.RichText)
        lay.addWidget(self.title)
        lay.addWidget(self.text)
        row = QHBoxLayout()
        row.addStretch(1)
        self.first_btn = QPushButton("Open the first file")
        self.first_btn.setToolTip("Show the first file of the folder (it becomes the only target)")
        self.first_btn.clicked.connect(self.sigOpenFirst.emit)
        self.folder_btn = QPushButton("Open Folder\u2026")
        self.folder_btn.setToolTip("Choose a folder of result files (Ctrl+O)")
        self.folder_btn.clicked.connect(self.sigOpenFolder.emit)
        self.live_btn = QPushButton("Live acquisition\u2026",
                                    toolTip="Correlate frames while the detector writes them")
        self.live_btn.clicked.connect(self.sigLive.emit)
        row.addWidget(self.first_btn)
        row.addWidget(self.folder_btn)
        row.addWidget(self.live_btn)
        row.addStretch(1)
        lay.addLayout(row)
        lay.addStretch(2)
        self.describe(None, None)

    def describe(self, folder: str | None, n_files: int | None, n_targets: int = 0,
                 problems: list[str] | None = None, n_raw: int = 0) -> None:
        """Say what to do next.

        ``n_files`` None: the folder is being listed; ``n_targets`` > 0 with no
        problems: the targets are being opened; ``n_raw``: raw sources listed.
        """
        self.first_btn.setVisible(bool(folder) and bool(n_files or n_raw) and not n_targets)
        if problems:
            self.title.setText("No target could be opened")
            items = "".join(f"<li>{_esc(p)}</li>" for p in problems[:6])
            more = f"<li>\u2026 and {len(problems) - 6} more</li>" if len(problems) > 6 else ""
            self.text.setText(
                f"<ul style='text-align:left'>{items}{more}</ul>"
                "Pick other files in the <b>Data</b> list on the left.")
            return
        if n_targets:
            self.title.setText(f"Opening {n_targets} file(s)\u2026")
            self.text.setText("")
            return
        if not folder:
            self.title.setText("No files open")
            self.text.setText(
                "Open a folder of XPCS result files (<b>File \u2192 Open Folder</b>, Ctrl+O) "
                "or drop files or a folder here.<br>For example data, run "
                "<tt>xpcsviewer demo</tt>.")
            return
        name = _esc(display_path(folder))
        if n_files is None:
            self.title.setText("Listing the folder\u2026")
            self.text.setText(name)
        elif n_files == 0 and n_raw:
            self.title.setText(f"{n_raw} raw source(s) in {_esc(Path(folder).name)}")
            self.text.setText(
                "Double-click one in the <b>Data</b> list on the left to look at its frames "
                "and faults in the <b>Raw</b> tab, and to correlate it.")
        elif n_files == 0:
            self.title.setText("No result files here")
            self.text.setText(
                f"{name} holds no result files (*.hdf, *.h5, *.hdf5, *.nxs).<br>"
                "Open another folder, or tick <b>Watch folder</b> to see files as "
                "they are written.")
        else:
            self.title.setText(f"{n_files} result file(s) in {_esc(Path(folder).name)}")
            self.text.setText(
                "Select files in the <b>Data</b> list on the left and press "
                "<b>Add \u2193</b> (or double-click one, or type a filter and press Enter): "
                "the tabs then show these targets.")

    def dragEnterEvent(self, event) -> None:  # Qt override
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # Qt override
        paths = [_from_url(u) for u in event.mimeData().urls() if u.isLocalFile()]
        if paths:
            self.sigPathsDropped.emit(paths)
            event.acceptProposedAction()


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
