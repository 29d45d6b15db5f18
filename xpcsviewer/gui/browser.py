"""The data browser (left dock): folder, source list, target list.

The folder listing runs in a worker (a network folder can take seconds): each file's
header says what it is (:func:`xpcsviewer.io.classify.list_sources`: a result, a raw
source with its layout, frames and hits, a q-map, a per-pixel side file), shown on a
second line under its name; a Rigaku 3M set and an ESRF block series are one entry.
Result files become targets (opened when they do); raw sources never do: they are
handed on by :attr:`DataBrowser.sigRawSources` (the window shows them in the Raw tab).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QStyle,
    QStyledItemDelegate,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from xpcsviewer.gui.context import AppContext
from xpcsviewer.io.classify import FileKind, classify_path, list_sources
from xpcsviewer.io.errors import display_path

__all__ = ["RESULT_PATTERNS", "DataBrowser", "FileEntry", "filter_entries", "list_folder",
           "sort_entries"]

RESULT_PATTERNS = ("*.hdf", "*.h5", "*.hdf5", "*.nxs")
#: item data: the one-line description of an entry (drawn under its name)
KIND_ROLE = Qt.ItemDataRole.UserRole + 1
#: the description's colour per kind (None: the palette's muted text)
_KIND_COLOURS = {"raw": "#1f6fb2", "qmap": "#7a5a00", "side": None, "result": None,
                 "other": "#c0392b"}


@dataclass(frozen=True)
class FileEntry:
    """One entry of the folder: name, full path, modification time (s since epoch) and
    what it is (None: not classified)."""

    name: str
    path: str
    mtime: float
    kind: FileKind | None = None


def list_folder(folder: str, progress=None, cancel=None) -> list[FileEntry]:
    """The results, raw sources, q-maps and side files of ``folder`` (no dot-files, not
    recursive), each said what it is from its header; worker job.

    Files named as results (``*.hdf``, ``*.h5``, ...) that are none of these are listed
    too (kind ``"other"``, with why), as before: opening one says what is wrong.

    Raises
    ------
    FileNotFoundError, NotADirectoryError
        ``folder`` is not a readable folder.
    """
    out = []
    for e in list_sources(folder, progress=progress, cancel=cancel, others=True):
        if e.kind.kind == "other" and not any(
                fnmatch.fnmatch(e.name.lower(), p) for p in RESULT_PATTERNS):
            continue
        out.append(FileEntry(e.name, str(Path(e.path)), e.mtime, e.kind))
    return out


def describe_entries(entries: list[FileEntry]) -> str:
    """"3 results, 5 raw sources, 4 q-maps, 1 side file" (kinds with none left out)."""
    names = (("result", "result", "results"), ("raw", "raw source", "raw sources"),
             ("qmap", "q-map", "q-maps"), ("side", "side file", "side files"),
             ("other", "other file", "other files"))
    counts = {k: 0 for k, _, _ in names}
    for e in entries:
        counts[e.kind.kind if e.kind is not None else "result"] += 1
    parts = [f"{counts[k]} {one if counts[k] == 1 else many}"
             for k, one, many in names if counts[k]]
    return ", ".join(parts) or "no files"


class _EntryDelegate(QStyledItemDelegate):
    """Two lines an entry: its name (cut in the middle), then what it is (small, in the
    kind's colour, cut at the end)."""

    def sizeHint(self, option, index) -> QSize:  # Qt override
        base = super().sizeHint(option, index)
        if not index.data(KIND_ROLE):
            return base
        # no width of its own: the list never scrolls sideways (names are cut instead)
        return QSize(0, base.height() + option.fontMetrics.height())

    def paint(self, painter, option, index) -> None:  # Qt override
        text = index.data(KIND_ROLE)
        if not text:
            super().paint(painter, option, index)
            return
        self.initStyleOption(option, index)
        style = option.widget.style() if option.widget is not None else None
        name = option.text
        option.text = ""
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, option, painter,
                              option.widget)
        r = option.rect.adjusted(4, 1, -4, -1)
        line = option.fontMetrics.height()
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        pal = option.palette
        painter.save()
        painter.setPen(pal.color(QPalette.ColorRole.HighlightedText if selected
                                 else QPalette.ColorRole.Text))
        fm = option.fontMetrics
        painter.drawText(r.x(), r.y(), r.width(), line, Qt.AlignmentFlag.AlignVCenter,
                         fm.elidedText(name, Qt.TextElideMode.ElideMiddle, r.width()))
        font = painter.font()
        font.setPointSizeF(max(6.0, font.pointSizeF() * 0.85))
        painter.setFont(font)
        colour = _KIND_COLOURS.get(index.data(KIND_ROLE + 1) or "", None)
        if selected:
            painter.setPen(pal.color(QPalette.ColorRole.HighlightedText))
        elif colour is not None:
            painter.setPen(QColor(colour))
        else:
            painter.setPen(pal.color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text))
        small = painter.fontMetrics()
        painter.drawText(r.x() + 8, r.y() + line, r.width() - 8, r.height() - line,
                         Qt.AlignmentFlag.AlignTop,
                         small.elidedText(text, Qt.TextElideMode.ElideRight, r.width() - 8))
        painter.restore()


def filter_entries(entries: list[FileEntry], text: str, mode: str = "contains") -> list[FileEntry]:
    """Keep entries whose name matches ``text``.

    ``mode="prefix"``: name starts with text. ``"contains"``: every
    whitespace-separated word occurs in the name. Case-insensitive.
    """
    text = text.strip().lower()
    if not text:
        return list(entries)
    if mode == "prefix":
        return [e for e in entries if e.name.lower().startswith(text)]
    words = text.split()
    return [e for e in entries if all(w in e.name.lower() for w in words)]


SORT_MODES = ("name", "name-reverse", "time", "time-reverse")


def sort_entries(entries: list[FileEntry], mode: str = "name") -> list[FileEntry]:
    """Sort by name or modification time, optionally reversed."""
    key = (lambda e: (e.mtime, e.name)) if mode.startswith("time") else (lambda e: e.name)
    return sorted(entries, key=key, reverse=mode.endswith("reverse"))


def _to_qt(path: str) -> str | bytes:
    """A path as item data: a file name with bytes that are not UTF-8 travels as
    bytes, which Qt keeps as they are (a str would be re-encoded and lost)."""
    return path if display_path(path) == path else os.fsencode(path)


def _from_qt(value) -> str:
    if isinstance(value, (bytes, bytearray)):
        return os.fsdecode(bytes(value))
    return str(value)


def _elide_middle(view: QListWidget) -> None:
    """Names cut in the middle, not at the end: series of result files differ near the
    end of long names (``..._Rq0_00001_00200_results.hdf``), and a sideways scroll bar
    would show only their common start. The tooltip holds the full name."""
    view.setTextElideMode(Qt.TextElideMode.ElideMiddle)
    view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)


class _TargetList(QListWidget):
    """Target list accepting files dropped from the system file manager."""

    sigFilesDropped = Signal(list)
    """Local files dropped on the list: (list of str)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setAcceptDrops(True)
        self.setDragDropMode(QAbstractItemView.DragDropMode.DropOnly)

    def dragEnterEvent(self, event) -> None:  # Qt override
        if event.mimeData().hasUrls():
            event.acceptProposedAction()
        else:
            super().dragEnterEvent(event)

    def dragMoveEvent(self, event) -> None:  # Qt override
        if event.mimeData().hasUrls():
            event.acceptProposedAction()
        else:
            super().dragMoveEvent(event)

    def dropEvent(self, event) -> None:  # Qt override
        urls = event.mimeData().urls() if event.mimeData().hasUrls() else []
        paths = [u.toLocalFile() for u in urls if u.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.sigFilesDropped.emit(paths)
        else:
            super().dropEvent(event)


class DataBrowser(QWidget):
    """Folder path, filtered/sorted source list and ordered target list.

    All methods run on the GUI thread.
    """

    # object, not list: Qt would re-encode the strings and lose file-name bytes
    # that are not UTF-8.
    sigTargetsChanged = Signal(object)
    """The ordered target paths changed: (list of str)."""
    sigCurrentChanged = Signal(int)
    """The current target row changed (arrow keys, click): (int, -1 for none)."""
    sigFolderChanged = Signal(str)
    """A folder was opened: (str)."""
    sigScanned = Signal(int)
    """A folder listing arrived: (number of result files)."""
    sigRawSources = Signal(object)
    """Raw sources were opened (added, dropped, double-clicked): (list of RawTarget)."""

    def __init__(self, context: AppContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.context = context
        self.folder: str = ""
        self.entries: list[FileEntry] = []
        self.recent: list[str] = []
        self._watcher = QFileSystemWatcher(self)
        self._watch_timer = QTimer(self, singleShot=True, interval=500)
        self._watch_timer.timeout.connect(self.refresh)
        self._watcher.directoryChanged.connect(lambda _p: self._watch_timer.start())
        self._build()

    # ------------------------------------------------------------------ UI
    def _build(self) -> None:
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        row = QHBoxLayout()
        self.path_edit = QLineEdit(placeholderText="Folder with result files or raw data")
        self.path_edit.setToolTip("Folder with result files or raw sources; press Enter "
                                  "to open")
        self.path_edit.returnPressed.connect(lambda: self.open_folder(self.path_edit.text()))
        self.browse_btn = QToolButton(text="\u2026", toolTip="Browse for a folder")
        self.browse_btn.clicked.connect(self._on_browse_clicked)
        self.recent_btn = QToolButton(text="\u25be", toolTip="Recent folders")
        self.recent_btn.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.refresh_btn = QToolButton(text="\u27f3", toolTip="Reload the folder (F5)")
        self.refresh_btn.clicked.connect(self.refresh)
        for w in (self.path_edit, self.browse_btn, self.recent_btn, self.refresh_btn):
            row.addWidget(w)
        lay.addLayout(row)
        row = QHBoxLayout()
        self.watch_check = QCheckBox("Watch folder", toolTip="Refresh when files appear")
        self.watch_check.toggled.connect(self._on_watch_toggled)
        self.sort_combo = QComboBox(toolTip="Sort the source list")
        self.sort_combo.addItems(SORT_MODES)
        self.sort_combo.currentTextChanged.connect(lambda _t: self._fill_source())
        row.addWidget(self.watch_check)
        row.addStretch(1)
        row.addWidget(self.sort_combo)
        lay.addLayout(row)

        self.source_box = QGroupBox("Source: 0")
        sl = QVBoxLayout(self.source_box)
        row = QHBoxLayout()
        self.filter_mode = QComboBox(toolTip="How the filter matches file names")
        self.filter_mode.addItems(["contains", "prefix"])
        self.filter_edit = QLineEdit(placeholderText="filter (Enter adds matches)")
        self.filter_edit.setToolTip("Show only files whose name matches; Enter adds the "
                                    "matches as targets")
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.textChanged.connect(lambda _t: self._fill_source())
        self.filter_mode.currentTextChanged.connect(lambda _t: self._fill_source())
        self.filter_edit.returnPressed.connect(self._on_filter_return)
        row.addWidget(self.filter_mode)
        row.addWidget(self.filter_edit, 1)
        sl.addLayout(row)
        self.source_list = QListWidget()
        _elide_middle(self.source_list)
        self.source_list.setItemDelegate(_EntryDelegate(self.source_list))
        self.source_list.setToolTip("Results, raw sources, q-maps and side files of the "
                                    "folder. Double-click: a result becomes a target, a raw "
                                    "source opens in the Raw tab")
        self.source_list.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.source_list.itemDoubleClicked.connect(lambda _i: self.add_selected())
        sl.addWidget(self.source_list)
        lay.addWidget(self.source_box, 3)

        row = QHBoxLayout()
        self.add_btn = QPushButton("Add \u2193", toolTip="Add the selected files to the targets")
        self.add_btn.clicked.connect(self.add_selected)
        self.remove_btn = QPushButton("Remove", toolTip="Remove the selected targets (Del)")
        self.remove_btn.clicked.connect(self.remove_selected)
        self.up_btn = QToolButton(text="\u2191", toolTip="Move the target up")
        self.up_btn.clicked.connect(lambda: self.move_current(-1))
        self.down_btn = QToolButton(text="\u2193", toolTip="Move the target down")
        self.down_btn.clicked.connect(lambda: self.move_current(+1))
        self.clear_btn = QPushButton("Clear", toolTip="Remove all targets")
        self.clear_btn.clicked.connect(self.clear_targets)
        for w in (self.add_btn, self.remove_btn, self.up_btn, self.down_btn, self.clear_btn):
            row.addWidget(w)
        lay.addLayout(row)

        self.target_box = QGroupBox("Targets: 0")
        tl = QVBoxLayout(self.target_box)
        self.target_list = _TargetList()
        _elide_middle(self.target_list)
        self.target_list.setToolTip(
            "Files shown in the tabs. \u2191/\u2193 step through them; drop files here.")
        self.target_list.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.target_list.currentRowChanged.connect(self.sigCurrentChanged.emit)
        self.target_list.sigFilesDropped.connect(self.add_paths)
        tl.addWidget(self.target_list)
        lay.addWidget(self.target_box, 2)

    # --------------------------------------------------------------- folder
    def _on_browse_clicked(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open folder",
                                                  self.folder or str(Path.home()))
        if folder:
            self.open_folder(folder)

    def open_folder(self, folder: str) -> None:
        """Show ``folder`` and list its files in a worker."""
        folder = str(Path(folder).expanduser())
        if not Path(folder).is_dir():
            self.context.report_error(f"{folder}: not a folder")
            return
        if self.folder and self._watcher.directories():
            self._watcher.removePaths(self._watcher.directories())
        self.folder = folder
        self.path_edit.setText(folder)
        if self.watch_check.isChecked():
            self._watcher.addPath(folder)
        self.sigFolderChanged.emit(folder)
        self.refresh()

    def refresh(self) -> None:
        """List the current folder again (new files show up)."""
        if not self.folder:
            return
        self.context.runner.submit(
            "browser:scan", list_folder, self.folder, on_result=self._on_scan_result,
            description=f"Listing {Path(self.folder).name}")

    def _on_scan_result(self, entries: list[FileEntry]) -> None:
        self.entries = list(entries)
        self._fill_source()
        self.context.show_status(f"{describe_entries(self.entries)} in {self.folder}")
        self.sigScanned.emit(len(self.result_entries()))

    def result_entries(self) -> list[FileEntry]:
        """The listed result files (shown or not), in listing order."""
        return [e for e in self.entries if e.kind is None or e.kind.kind == "result"]

    def _on_watch_toggled(self, on: bool) -> None:
        dirs = self._watcher.directories()
        if dirs:
            self._watcher.removePaths(dirs)
        if on and self.folder:
            self._watcher.addPath(self.folder)

    def visible_entries(self) -> list[FileEntry]:
        """Entries after filter and sort, in list order."""
        shown = filter_entries(self.entries, self.filter_edit.text(),
                               self.filter_mode.currentText())
        return sort_entries(shown, self.sort_combo.currentText())

    def _fill_source(self) -> None:
        shown = self.visible_entries()
        self.source_list.clear()
        for e in shown:
            it = QListWidgetItem(display_path(e.name))
            it.setData(Qt.ItemDataRole.UserRole, _to_qt(e.path))
            tip = display_path(e.path)
            if e.kind is not None:
                it.setData(KIND_ROLE, e.kind.text)
                it.setData(KIND_ROLE + 1, e.kind.kind)
                tip = f"{e.kind.text}\n{tip}"
                if e.kind.kind == "raw":
                    tip += "\nDouble-click: open in the Raw tab"
            it.setToolTip(tip)
            self.source_list.addItem(it)
        self.source_box.setTitle(f"Source: {len(shown)} of {len(self.entries)}")
        if self.filter_edit.text().strip():
            self.source_list.selectAll()

    def source_names(self) -> list[str]:
        """Names shown in the source list, in order."""
        return [self.source_list.item(i).text() for i in range(self.source_list.count())]

    # -------------------------------------------------------------- targets
    def _on_filter_return(self) -> None:
        self.add_selected()

    def target_paths(self) -> list[str]:
        """The target paths, in order."""
        return [_from_qt(self.target_list.item(i).data(Qt.ItemDataRole.UserRole))
                for i in range(self.target_list.count())]

    def current_index(self) -> int:
        """Current target row (-1 for none)."""
        return self.target_list.currentRow()

    def add_selected(self) -> None:
        """Add the selected source files (or all shown ones if none is selected)."""
        items = self.source_list.selectedItems()
        if not items and self.source_list.currentItem() is not None:
            items = [self.source_list.currentItem()]
        self.add_paths([_from_qt(it.data(Qt.ItemDataRole.UserRole)) for it in items])

    def kind_of(self, path: str) -> FileKind:
        """What ``path`` is: from the listing when it is listed, else from its header
        (a few small reads: files dropped or given on the command line)."""
        for e in self.entries:
            if e.path == path and e.kind is not None:
                return e.kind
        return classify_path(path)

    def add_paths(self, paths: list[str]) -> None:
        """Append result files to the targets (duplicates skipped; folders are opened
        instead). Raw sources are not targets: they go out by :attr:`sigRawSources`;
        q-maps and side files are not added (the status line says why)."""
        from xpcsviewer.gui.raw_sources import raw_target

        have = set(self.target_paths())
        labels = {e.path: e.name for e in self.entries}
        added = 0
        raw, skipped = [], []
        for p in paths:
            p = str(p)
            if Path(p).is_dir():  # listed: a folder of ESRF blocks shows its series
                self.open_folder(p)
                continue
            fk = self.kind_of(p)
            if fk.kind == "raw":
                t = raw_target(p, fk, labels.get(p))
                if t is not None and t.path not in {r.path for r in raw}:
                    raw.append(t)
                continue
            if fk.kind in ("qmap", "side"):
                skipped.append(f"{display_path(Path(p).name)} ({fk.text})")
                continue
            if p in have:
                continue
            have.add(p)
            it = QListWidgetItem(display_path(Path(p).name))
            it.setData(Qt.ItemDataRole.UserRole, _to_qt(p))
            it.setToolTip(display_path(p))
            self.target_list.addItem(it)
            added += 1
        if added:
            self._targets_changed()
            if self.target_list.currentRow() < 0:
                self.target_list.setCurrentRow(0)
        if skipped:
            self.context.show_status("Not a result, not added: " + "; ".join(skipped))
        if raw:
            self.sigRawSources.emit(raw)

    def mark_targets(self, problems: dict[str, str]) -> None:
        """Mark the targets that could not be opened (red, "\u26a0", the reason as tooltip);
        the others are shown plain again."""
        from PySide6.QtGui import QBrush, QColor

        for i in range(self.target_list.count()):
            it = self.target_list.item(i)
            p = _from_qt(it.data(Qt.ItemDataRole.UserRole))
            name = display_path(Path(p).name)
            why = problems.get(p)
            if why is None:
                it.setText(name)
                it.setToolTip(display_path(p))
                it.setForeground(QBrush())
            else:
                it.setText(f"\u26a0 {name}")
                it.setToolTip(f"{display_path(p)}\nnot opened: {why}")
                it.setForeground(QBrush(QColor("#c0392b")))

    def set_targets(self, paths: list[str], current: int = 0) -> None:
        """Replace the targets (result files; a raw source among them goes to
        :attr:`sigRawSources` instead)."""
        self.target_list.blockSignals(True)
        self.target_list.clear()
        self.target_list.blockSignals(False)
        self.add_paths(paths)
        if self.target_list.count():
            self.target_list.setCurrentRow(max(0, min(current, self.target_list.count() - 1)))
        else:
            self._targets_changed()

    def remove_selected(self) -> None:
        """Remove the selected targets."""
        rows = sorted({self.target_list.row(i) for i in self.target_list.selectedItems()},
                      reverse=True)
        if not rows and self.target_list.currentRow() >= 0:
            rows = [self.target_list.currentRow()]
        if not rows:
            return
        self.target_list.blockSignals(True)
        for r in rows:
            self.target_list.takeItem(r)
        self.target_list.blockSignals(False)
        self._targets_changed()
        self.sigCurrentChanged.emit(self.target_list.currentRow())

    def clear_targets(self) -> None:
        """Remove every target."""
        self.set_targets([])

    def move_current(self, step: int) -> None:
        """Move the current target up (-1) or down (+1)."""
        r = self.target_list.currentRow()
        n = r + step
        if r < 0 or not 0 <= n < self.target_list.count():
            return
        self.target_list.blockSignals(True)
        it = self.target_list.takeItem(r)
        self.target_list.insertItem(n, it)
        self.target_list.setCurrentRow(n)
        self.target_list.blockSignals(False)
        self._targets_changed()
        self.sigCurrentChanged.emit(n)

    def _targets_changed(self) -> None:
        self.target_box.setTitle(f"Targets: {self.target_list.count()}")
        self.sigTargetsChanged.emit(self.target_paths())

    def keyPressEvent(self, event) -> None:  # Qt override
        if event.key() == Qt.Key.Key_Delete and self.target_list.hasFocus():
            self.remove_selected()
            return
        super().keyPressEvent(event)
