"""The g2 tab's fit side widgets: the parameter table and the results table.

The results table puts what a user must read first (status, file, bin, q, tau or its
limit, contrast, chi2) in the first columns, colours rows by status and, for NUTS,
shows the sampler diagnostics (r-hat, ESS, divergences, BFMI).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHeaderView, QTableWidget, QTableWidgetItem

__all__ = ["STATUS_COLORS", "FitParamsWidget", "FitResultsTable", "fmt", "pm"]

#: Row colours by status (light backgrounds; text is drawn black on them).
STATUS_COLORS = {
    "converged": QColor(205, 240, 205),
    "unresolved": QColor(255, 240, 190),
    "at_bound": QColor(255, 240, 190),
    "poor_fit": QColor(255, 215, 170),
    "no_decay": QColor(225, 225, 225),
    "failed": QColor(255, 200, 200),
}


class FitParamsWidget(QTableWidget):
    """Per-parameter value / lower / upper / fix for the current model.

    A fixed parameter is held at the value shown (not at a bound). Rows the user never
    edited stay "auto": each curve then gets its own data-driven start and bounds.
    """

    sigEdited = Signal()
    """The user changed a cell: ()."""

    HEAD = ("param", "value", "lower", "upper", "fix")

    def __init__(self, parent=None) -> None:
        super().__init__(0, len(self.HEAD), parent)
        self.setHorizontalHeaderLabels(list(self.HEAD))
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
                self.setItem(r, c, QTableWidgetItem(fmt(o.get(key, x))))
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
        self.sigEdited.emit()

    def set_cell(self, name: str, key: str, value: Any) -> None:
        """Programmatic edit (as a user would): key in value/lower/upper/fixed."""
        r = self._names.index(name)
        if key == "fixed":
            self.item(r, 4).setCheckState(
                Qt.CheckState.Checked if value else Qt.CheckState.Unchecked
            )
        else:
            self.item(r, self.HEAD.index(key)).setText(fmt(value))

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


def fmt(x: Any) -> str:
    if isinstance(x, bool):
        return str(x)
    x = float(x)
    return f"{x:.4g}" if math.isfinite(x) else "nan"


def pm(v: float, e: float) -> str:
    if not math.isfinite(v):
        return "\u2014"
    if math.isfinite(e) and e > 0:
        return f"{v:.4g} \u00b1 {e:.2g}"
    return f"{v:.4g}"




class FitResultsTable(QTableWidget):
    """One row per fitted curve, status first, coloured by status; sortable."""

    def __init__(self, parent=None) -> None:
        super().__init__(0, 0, parent)
        self.verticalHeader().setVisible(False)
        self.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.setToolTip(
            "converged: a resolved tau; unresolved: a decay but tau not pinned down (a "
            "limit where the data only bound it); poor_fit: chi2_red > 25 or contrast > 1; "
            "no_decay: a constant fits as well; at_bound: a parameter on its bound"
        )

    def show_fits(self, fits: Any) -> None:
        """Fill from a ``G2Fits`` (None clears)."""
        self.setSortingEnabled(False)
        if fits is None:
            self.setRowCount(0)
            self.setColumnCount(0)
            return
        names = list(fits.param_names)
        tname = "tau" if "tau" in names else "tau1"
        others = [n for n in names if n not in (tname, "contrast")]
        bayes = fits.diagnostics is not None
        head = ["status", "file", "bin", "q (\u00c5\u207b\u00b9)", f"{tname} (s)", "contrast",
                "\u03c7\u00b2\u1d63"]
        head += [f"{n} (s)" if n.startswith("tau") else n for n in others]
        if bayes:
            head += ["r\u0302", "ESS", "div.", "BFMI"]
        head += ["why"]
        self.setColumnCount(len(head))
        self.setHorizontalHeaderLabels(head)
        self.setRowCount(fits.n_curves)
        tau_v, tau_e = fits.reported(tname)
        for b in range(fits.n_curves):
            st = str(fits.status[b])
            tau_txt = fits.limit_text(b).replace(f"{tname} ", "") or pm(tau_v[b], tau_e[b])
            cells: list[tuple[str, float | None]] = [
                (st, None),
                (fits.file_labels[b], None),
                (str(int(fits.columns[b]) + 1), float(fits.columns[b]) + 1),
                (f"{fits.q[b]:.5f}", float(fits.q[b])),
                (tau_txt, float(tau_v[b]) if np.isfinite(tau_v[b]) else None),
                (pm(fits.params["contrast"][b], fits.errors["contrast"][b]), None),
                (fmt(fits.chi2_red[b]), float(fits.chi2_red[b])),
            ]
            cells += [(pm(fits.params[n][b], fits.errors[n][b]), None) for n in others]
            if bayes:
                d = fits.diagnostics
                cells += [
                    (f"{d['r_hat'][b]:.3f}" if np.isfinite(d["r_hat"][b]) else "\u2014", None),
                    (f"{d['ess'][b]:.0f}" if np.isfinite(d["ess"][b]) else "\u2014", None),
                    (f"{d['divergences'][b]:.0f}" if np.isfinite(d["divergences"][b]) else "\u2014",
                     None),
                    (f"{d['bfmi'][b]:.2f}" if np.isfinite(d["bfmi"][b]) else "\u2014", None),
                ]
            cells.append((str(fits.detail[b]), None))
            color = STATUS_COLORS.get(st)
            for c, (text, key) in enumerate(cells):
                it = QTableWidgetItem(text)
                if key is not None:
                    it.setData(Qt.ItemDataRole.UserRole, key)
                if color is not None and c < 7:
                    it.setBackground(color)
                    it.setForeground(QColor(0, 0, 0))
                if c == len(cells) - 1:
                    it.setToolTip(text)
                self.setItem(b, c, it)
        hdr = self.horizontalHeader()
        hdr.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        if fits.n_curves <= 50:
            # Measuring every cell is slow for long tables; then keep the default widths.
            self.resizeColumnsToContents()
        # File names are long and alike: show their distinguishing end, full in a tooltip.
        self.setTextElideMode(Qt.TextElideMode.ElideLeft)
        self.setColumnWidth(1, min(self.columnWidth(1), 110))
        for b in range(fits.n_curves):
            self.item(b, 1).setToolTip(fits.file_labels[b])
        self.setSortingEnabled(True)
