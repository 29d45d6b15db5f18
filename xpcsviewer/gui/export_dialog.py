"""The Export Figure dialog: where to save, and at which journal size (issue 33)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QFileDialog, QLabel, QMessageBox, QWidget

from xpcsviewer.export._fig_common import SIZE_PRESETS

__all__ = ["FIGURE_FILTERS", "SIZE_LABELS", "FigureExportDialog", "confirm_replace_figure"]

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
        # one question for the file and every page of an earlier export, asked after
        # (:func:`confirm_replace_figure`), not Qt's about the one name typed
        self.setOption(QFileDialog.Option.DontConfirmOverwrite, True)
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


def confirm_replace_figure(parent: QWidget | None, path: str | Path) -> bool:
    """Ask once before an export replaces the files of an earlier one under this name
    (``NAME.png`` and every page ``NAME_pN.png``); True when none exist or the user
    agrees. The pages the new figure does not have are removed by the export."""
    from xpcsviewer.export.files import figure_files

    there = figure_files(path)
    if not there:
        return True
    shown = [p.name for p in there[:12]]
    if len(there) > 12:
        shown.append(f"\u2026 and {len(there) - 12} more")
    text = (f"An earlier export of this figure is in {Path(path).parent}:\n\n"
            + "\n".join(shown)
            + "\n\nReplace it? Its pages that the new figure does not have are removed, "
              "so the folder never holds pages of two exports.")
    answer = QMessageBox.question(
        parent, "Replace the earlier export?", text,
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
        QMessageBox.StandardButton.No)
    return answer == QMessageBox.StandardButton.Yes
