"""The Raw tab's fault list: the findings of the inspection, one a row, with what can be
done with the selected ones (mask their pixels, leave their frames out of a correlation,
save the list)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from xpcsviewer.gui.widgets import ClippedLabel

__all__ = ["KIND_WORDS", "FaultTable", "finding_cells"]

#: How the table names each kind (others are shown as they are).
KIND_WORDS = {"hot_pixel": "hot pixel", "dead_pixel": "dead pixel", "cosmic": "cosmic / gamma",
              "empty_frames": "empty frames", "at_cap": "at the cap",
              "modulation": "modulation"}
COLUMNS = ("kind", "frames", "pixels", "frequency", "detail")
PIXELS_SHOWN = 3  # pixel numbers written in the cell; the tooltip lists more


def finding_cells(f) -> list[str]:
    """The table's cells of one finding."""
    a, b = int(f.frames[0]), int(f.frames[1])
    frames = str(a) if a == b else f"{a}\u2013{b}"
    n = len(f.pixels)
    if n == 0:
        pixels = ""
    elif n <= PIXELS_SHOWN:
        pixels = ", ".join(f"({r}, {c})" for r, c in f.pixels)
    else:
        pixels = f"{n}: " + ", ".join(f"({r}, {c})" for r, c in f.pixels[:2]) + ", \u2026"
    freq = "" if f.frequency_hz is None else f"{f.frequency_hz:.3f} Hz"
    kind = KIND_WORDS.get(f.kind, f.kind)
    if f.q_bin is not None:
        kind += f" (q-bin {f.q_bin})"
    return [kind, frames, pixels, freq, f.detail]


class FaultTable(QWidget):
    """The findings, with *Mask these*, *Exclude frames* and *Save…*.

    Signals
    -------
    sigSelected(list)
        The selected findings (in table order).
    sigMask(list), sigExclude(list)
        The button was pressed with these findings selected.
    sigSave()
    """

    sigSelected = Signal(list)
    sigMask = Signal(list)
    sigExclude = Signal(list)
    sigSave = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        bar = QHBoxLayout()
        self.label = ClippedLabel("Faults: inspect the source to find them")
        self.mask_btn = QPushButton("Mask these", enabled=False,
                                    toolTip="Add the selected findings' pixels to the "
                                    "Detector tab's mask of this source (one undoable step)")
        self.exclude_btn = QPushButton("Exclude frames", enabled=False,
                                       toolTip="Leave the selected findings' frames out of "
                                       "a correlation from this window")
        self.save_btn = QPushButton("Save\u2026", enabled=False,
                                    toolTip="Write the findings as JSON or CSV, as "
                                    "`xpcsviewer inspect -o` does")
        bar.addWidget(self.label, 1)
        for w in (self.mask_btn, self.exclude_btn, self.save_btn):
            bar.addWidget(w)
        lay.addLayout(bar)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(20)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setWordWrap(False)
        lay.addWidget(self.table, 1)
        self.findings: list = []
        self.n_frames = 0
        self.table.itemSelectionChanged.connect(self._on_selection)
        self.mask_btn.clicked.connect(lambda: self.sigMask.emit(self.selected()))
        self.exclude_btn.clicked.connect(lambda: self.sigExclude.emit(self.selected()))
        self.save_btn.clicked.connect(self.sigSave.emit)

    def set_findings(self, findings: list | None, n_frames: int = 0,
                     note: str = "") -> None:
        """List ``findings`` (None: no inspection yet; ``note`` says why)."""
        self.findings = list(findings or [])
        self.n_frames = int(n_frames)
        t = self.table
        t.blockSignals(True)
        t.clearSelection()
        t.setRowCount(len(self.findings))
        for i, f in enumerate(self.findings):
            for j, text in enumerate(finding_cells(f)):
                item = QTableWidgetItem(text)
                item.setToolTip(_tooltip(f))
                if j == 1:
                    item.setData(Qt.ItemDataRole.UserRole, int(f.frames[0]))
                t.setItem(i, j, item)
        t.blockSignals(False)
        t.resizeColumnsToContents()
        if findings is None:
            self.label.setText(note or "Faults: inspect the source to find them")
        else:
            kinds = sorted({f.kind for f in self.findings})
            words = ", ".join(KIND_WORDS.get(k, k) for k in kinds)
            self.label.setText(f"{len(self.findings)} findings" + (f": {words}" if words
                                                                   else " (no fault found)"))
        self.save_btn.setEnabled(findings is not None)
        self._on_selection()

    def selected(self) -> list:
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        return [self.findings[r] for r in rows if r < len(self.findings)]

    def select_rows(self, rows: list[int]) -> None:
        """Select table rows (tests, and a click that should show a finding)."""
        self.table.clearSelection()
        mode = self.table.selectionMode()
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.MultiSelection)
        for r in rows:
            self.table.selectRow(r)
        self.table.setSelectionMode(mode)

    def _on_selection(self) -> None:
        sel = self.selected()
        self.mask_btn.setEnabled(any(len(f.pixels) for f in sel))
        self.exclude_btn.setEnabled(any(
            not (f.frames[0] <= 0 and f.frames[1] >= self.n_frames - 1) for f in sel))
        self.sigSelected.emit(sel)


def _tooltip(f) -> str:
    lines = [f"{KIND_WORDS.get(f.kind, f.kind)}: frames {f.frames[0]}..{f.frames[1]}"]
    if f.pixels:
        shown = ", ".join(f"({r}, {c})" for r, c in f.pixels[:20])
        more = f" and {len(f.pixels) - 20} more" if len(f.pixels) > 20 else ""
        lines.append(f"{len(f.pixels)} pixels (row, col): {shown}{more}")
    if f.frequency_hz is not None:
        lines.append(f"frequency {f.frequency_hz:.4g} Hz")
    if f.detail:
        lines.append(f.detail)
    return "\n".join(lines)
