"""The fit-parameter table of the g2 tab (value / lower / upper / fix per parameter)."""

from __future__ import annotations

import math
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHeaderView, QTableWidget, QTableWidgetItem

__all__ = ["FitParamsWidget"]


class FitParamsWidget(QTableWidget):
    """Per-parameter value / lower / upper / fix for the current model.

    A fixed parameter is held at the value shown (not at a bound). Rows the user never
    edited stay "auto": each curve then gets its own data-driven start and bounds.
    """

    sigEdited = Signal()
    """The user changed a cell: ()."""

    HEAD = ("param", "value", "lower", "upper", "fix")
    #: "start", not "value": beside fitted contrasts of 0.2 an unedited start of 0.03
    #: read as a result (issue 33); the fitted values are in the results table
    LABELS = ("param", "start", "lower", "upper", "fix")

    def __init__(self, parent=None) -> None:
        super().__init__(0, len(self.HEAD), parent)
        self.setHorizontalHeaderLabels(list(self.LABELS))
        self.horizontalHeaderItem(1).setToolTip(
            "Where the fit starts (automatic rows: the first shown curve's data-driven "
            "start; each curve gets its own). The fitted values are in the results table.")
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self._edited: dict[str, set[str]] = {}
        self._names: list[str] = []
        self._filling = False
        self.itemChanged.connect(self._on_item_changed)
        self.setToolTip(
            "Unedited rows are per-curve automatic (from the data); a fixed "
            "parameter is held at the value shown"
        )

    def set_params(self, rows: dict[str, tuple], keep_edits: bool = True) -> None:
        """Show ``name -> (value, lower, upper, fixed)``; user-edited cells are kept."""
        old = self.overrides() if keep_edits else {}
        self._filling = True
        self._names = list(rows)
        self.setRowCount(len(rows))
        if not keep_edits:
            self._edited = {}
        for r, (name, (val, lo, hi, fixed)) in enumerate(rows.items()):
            o = old.get(name, {})
            it = QTableWidgetItem(name)
            it.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.setItem(r, 0, it)
            for c, key, x in ((1, "value", val), (2, "lower", lo), (3, "upper", hi)):
                cell = QTableWidgetItem(_fmt(o.get(key, x)))
                if key == "value" and key not in o:
                    _mark_auto(cell, True)
                self.setItem(r, c, cell)
            chk = QTableWidgetItem()
            chk.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsUserCheckable)
            chk.setCheckState(
                Qt.CheckState.Checked
                if o.get("fixed", fixed)
                else Qt.CheckState.Unchecked
            )
            self.setItem(r, 4, chk)
        self._filling = False

    def _on_item_changed(self, item: QTableWidgetItem) -> None:
        if self._filling or item.column() == 0:
            return
        name = self._names[item.row()]
        key = self.HEAD[item.column()] if item.column() < 4 else "fixed"
        self._edited.setdefault(name, set()).add(key)
        if key == "fixed":
            self._edited[name].add("value")
        if "value" in self._edited[name]:
            self._filling = True  # the font change is no edit of its own
            try:
                _mark_auto(self.item(item.row(), 1), False)
            finally:
                self._filling = False
        self.sigEdited.emit()

    def is_auto(self, name: str) -> bool:
        """Whether ``name``'s start is still the automatic (per-curve) one."""
        return "value" not in self._edited.get(name, set())

    def set_cell(self, name: str, key: str, value: Any) -> None:
        """Programmatic edit (as a user would): key in value/lower/upper/fixed."""
        r = self._names.index(name)
        if key == "fixed":
            self.item(r, 4).setCheckState(
                Qt.CheckState.Checked if value else Qt.CheckState.Unchecked
            )
        else:
            self.item(r, self.HEAD.index(key)).setText(_fmt(value))

    def overrides(self) -> dict[str, dict]:
        """User-set fields per parameter (only edited cells; 'fixed' carries the value)."""
        out: dict[str, dict] = {}
        for r, name in enumerate(self._names):
            keys = self._edited.get(name, set())
            if not keys:
                continue
            d: dict[str, Any] = {}
            for key in keys:
                if key == "fixed":
                    d["fixed"] = self.item(r, 4).checkState() == Qt.CheckState.Checked
                    continue
                try:
                    d[key] = float(self.item(r, self.HEAD.index(key)).text())
                except ValueError:
                    raise ValueError(f"{name} {key}: not a number") from None
            out[name] = d
        return out

    def reset(self) -> None:
        """Forget the user's edits (back to automatic per-curve values)."""
        self._edited = {}


_AUTO_TIP = (
    "Automatic start (shown in italics): an estimate from the data, not a result. "
    "Each curve starts from its own estimate; the fitted values are in the results "
    "table. Type a value or tick fix to use this one for every curve."
)


def _mark_auto(cell: QTableWidgetItem | None, auto: bool) -> None:
    # italics set a start apart from a typed value and from the fitted results (issue 49)
    if cell is None:
        return
    font = cell.font()
    font.setItalic(auto)
    cell.setFont(font)
    cell.setToolTip(_AUTO_TIP if auto else "Your start value (used for every curve)")


def _fmt(x: Any) -> str:
    if isinstance(x, bool):
        return str(x)
    x = float(x)
    return f"{x:.4g}" if math.isfinite(x) else "nan"


def _pm(v: float, e: float) -> str:
    if not math.isfinite(v):
        return "\u2014"
    if math.isfinite(e) and e > 0:
        return f"{v:.4g} \u00b1 {e:.2g}"
    return f"{v:.4g}"
