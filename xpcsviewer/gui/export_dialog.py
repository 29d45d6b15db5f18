"""The Export Figure dialog: where to save, and at which journal size (issue 33)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QFileDialog, QLabel, QWidget

from xpcsviewer.export._fig_common import SIZE_PRESETS

__all__ = ["FIGURE_FILTERS", "SIZE_LABELS", "FigureExportDialog"]

FIGURE_FILTERS = "PNG (*.png);;SVG (*.svg);;PDF (*.pdf)"
#: The presets as a user names them, in the order offered.
SIZE_LABELS = {
    "double": "Journal, double column (7 in)",
    "single": "Journal, single column (3.4 in)",
    "slide": "Slide (10 in)",
}


class FigureExportDialog(QFileDialog):
    """A save dialog with a size choice below the file name.

    Qt's own (non-native) dialog: a native one has no room for the size row.
    """

    def __init__(self, parent: QWidget | None, base: Path, size: str = "double") -> None:
        super().__init__(parent, "Export figure", str(base), FIGURE_FILTERS)
        self.setOption(QFileDialog.Option.DontUseNativeDialog, True)
        self.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        self.size_combo = QComboBox(self)
        for key in SIZE_LABELS:
            if key in SIZE_PRESETS:
                p = SIZE_PRESETS[key]
                self.size_combo.addItem(SIZE_LABELS[key], key)
                self.size_combo.setItemData(
                    self.size_combo.count() - 1,
                    f"{p.width:g} in wide, {p.font:g} pt text, as `export --size {key}`",
                    Qt.ItemDataRole.ToolTipRole)
        self.size_combo.setCurrentIndex(max(0, self.size_combo.findData(size)))
        self.size_combo.setToolTip("Figure width and font size, as `xpcsviewer export --size`")
        label = QLabel("Size:", self)
        label.setToolTip(self.size_combo.toolTip())
        grid = self.layout()
        row = grid.rowCount()
        grid.addWidget(label, row, 0)
        grid.addWidget(self.size_combo, row, 1)

    def chosen_size(self) -> str:
        """The preset key picked (``"double"``, ``"single"`` or ``"slide"``)."""
        return str(self.size_combo.currentData())

    def chosen_path(self) -> str | None:
        files = self.selectedFiles()
        return files[0] if files else None
