"""The fit-results table of the g2 tab: status first, coloured by status.

What a user must read first (status, bin, q, tau or its limit, contrast, chi2, file)
sits in the first columns; for NUTS the sampler diagnostics (r-hat, ESS, divergences,
BFMI) follow. A failed fit's status cell carries its first reason on a second line
("failed" / "ESS 180 < 200", the whole reason in its tooltip): the panel is narrow,
the "why" column far right. A time the status does not let be quoted is a dash.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHeaderView, QTableWidget, QTableWidgetItem

from xpcsviewer.fitting.vocabulary import STATUS_COLORS as STATUS_HEX
from xpcsviewer.gui.panels._g2_params import _fmt, _pm

__all__ = ["STATUS_COLORS", "FitResultsTable"]

#: Row colours by status (text is drawn black on them).
STATUS_COLORS = {k: QColor(v) for k, v in STATUS_HEX.items()}


_FILE_COLUMN = 6  # after the numbers (see FitResultsTable.show_fits)
_STATUS_WIDTH = 110  # px: "ESS 180 < 200"; longer reasons elided, whole in the tooltip


def short_labels(labels: list[str]) -> list[str]:
    """Each label by what tells it from the others: the common start and end (at
    ``_``, ``-``, ``.`` or space) dropped; a label that would be empty stays whole."""
    uniq = list(dict.fromkeys(labels))
    if len(uniq) < 2:
        return list(labels)
    seps = "_-. "

    def cut(prefix: str) -> int:
        # back to the last separator, so a word is never split
        k = len(prefix)
        while k > 0 and prefix[k - 1] not in seps:
            k -= 1
        return k

    def common(words: list[str]) -> str:  # character by character, as meant here
        n = 0
        while all(len(w) > n for w in words) and len({w[n] for w in words}) == 1:
            n += 1
        return words[0][:n]

    head = cut(common(uniq))
    tail = cut(common([u[::-1] for u in uniq]))
    out = {}
    for u in uniq:
        mid = u[head:len(u) - tail] if tail else u[head:]
        out[u] = mid.strip(seps) or u
    return [out[x] for x in labels]


def status_text(status: str, detail: str) -> str:
    """The status cell: a failed fit with its first reason below, "failed\nESS 180 < 200"."""
    if status != "failed" or not detail:
        return status
    first = detail.removeprefix("sampler: ").split(", ")[0]
    return f"failed\n{first}"


def _interval(fits: Any, name: str, b: int, v: float) -> str:
    # "0.49 -0.1 +0.3": the profile-likelihood interval, asymmetric where the profile
    # is; "v +- e" (the larger side) where the two sides differ by less than 10 %.
    # ``v``: the quotable value of row b (fits.reported, made once per table: per row
    # it made the fill of 300 rows quadratic)
    iv = getattr(fits, "interval", {}).get(name)
    if iv is None or not np.isfinite(v) or not np.isfinite(iv[b]).all():
        return ""
    lo, hi = v - iv[b, 0], iv[b, 1] - v
    if abs(hi - lo) < 0.1 * max(lo, hi):
        return f"{v:.4g} \u00b1 {max(lo, hi):.2g}"
    return f"{v:.3g} \u2212{lo:.2g} +{hi:.2g}"


def _double_taus(fits: Any, b: int, reported: dict) -> tuple[str, float | None]:
    """A double exponential's main cell: its quotable times "tau1 / tau2" (each by the
    status rule: a value, a one-sided limit, or a dash), and tau1 to sort by. The
    main column read "—" for a converged double while both times sat in columns off
    screen (issue 49)."""
    parts, key = [], None
    limit = fits.limit_text(b)
    for n in ("tau1", "tau2"):
        v, e = reported[n]
        if limit.startswith(f"{n} "):
            parts.append(limit.removeprefix(f"{n} "))
            continue
        parts.append(_interval(fits, n, b, v[b]) or _pm(v[b], e[b]))
        if n == "tau1" and np.isfinite(v[b]):
            key = float(v[b])
    if key is None and np.isfinite(reported["tau2"][0][b]):
        key = float(reported["tau2"][0][b])
    return " / ".join(parts), key


class FitResultsTable(QTableWidget):
    """One row per fitted curve, status first, coloured by status; sortable."""

    def __init__(self, parent=None) -> None:
        super().__init__(0, 0, parent)
        self.verticalHeader().setVisible(False)
        self.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.setToolTip(
            "converged: a resolved tau; unresolved: a decay but tau not pinned down (a "
            "limit where the data only bound it); misfit: residual structure (runs test); "
            "poor_fit: chi2_red > 25 or contrast > 1; "
            "errors_understated: the scatter is many times the stated errors (the factor "
            "is in the reason): no usable information; "
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
        # the verdict and the key numbers first: the panel is narrow
        tau_head = f"{tname} (s)"
        if "tau1" in names and "tau2" in names and any(
                fits.model_of(b) == "double" for b in range(fits.n_curves)):
            # a double's row holds both its times, "tau1 / tau2"
            tau_head = "tau (s)" if tname == "tau" else "tau1 / tau2 (s)"
        head = ["status", "bin", "q (\u00c5\u207b\u00b9)", tau_head, "contrast",
                "\u03c7\u00b2\u1d63", "file"]
        # several files: the file beside the status, by the part that tells them apart
        # (48 rows of three files repeated bins 1-16 with the file out of sight)
        many = len(set(fits.file_labels)) > 1
        file_col = 1 if many else _FILE_COLUMN
        if many:
            head.insert(1, head.pop(_FILE_COLUMN))
        short = dict(zip(fits.file_labels, short_labels(fits.file_labels), strict=True))
        head += [f"{n} (s)" if n.startswith("tau") else n for n in others]
        head += ["model", "\u0394AICc"]
        if bayes:
            head += ["r\u0302", "ESS", "div.", "BFMI"]
        head += ["why"]
        self.setColumnCount(len(head))
        self.setHorizontalHeaderLabels(head)
        self.setRowCount(fits.n_curves)
        # a time the status does not let be quoted is "\u2014" and its reason (issue 48):
        # never the optimum's number, failed fits included
        tau_v, tau_e = fits.reported(tname)
        quoted = tau_v
        failed = np.array([str(x) == "failed" for x in fits.status], bool)
        shown = {n: (fits.reported(n) if n.startswith("tau") else (fits.params[n], fits.errors[n]))
                 for n in others}
        tau_at = head.index(tau_head)
        doubles = {n: fits.reported(n) for n in ("tau1", "tau2") if n in fits.params}
        for b in range(fits.n_curves):
            st = str(fits.status[b])
            if len(doubles) == 2 and fits.model_of(b) == "double":
                tau_txt, tau_key = _double_taus(fits, b, doubles)
            else:
                tau_txt = (fits.limit_text(b).replace(f"{tname} ", "")
                           or _interval(fits, tname, b, quoted[b]) or _pm(tau_v[b], tau_e[b]))
                tau_key = float(tau_v[b]) if np.isfinite(tau_v[b]) else None
            cells: list[tuple[str, float | None]] = [
                (status_text(st, str(fits.detail[b])), None),
                (str(int(fits.columns[b]) + 1), float(fits.columns[b]) + 1),
                (f"{fits.q[b]:.5f}", float(fits.q[b])),
                (tau_txt, tau_key),
                (_pm(fits.params["contrast"][b], fits.errors["contrast"][b]), None),
                (_fmt(fits.chi2_red[b]), float(fits.chi2_red[b])),
            ]
            cells.insert(file_col, (short[fits.file_labels[b]], None))
            cells += [(_pm(shown[n][0][b], shown[n][1][b]), None) for n in others]
            dA = fits.delta_aicc[b] if fits.delta_aicc is not None else np.nan
            cells += [(fits.model_of(b), None), (f"{dA:.1f}" if np.isfinite(dA) else "", None)]
            if bayes:
                d = fits.diagnostics
                cells += [
                    (f"{d['r_hat'][b]:.3f}" if np.isfinite(d["r_hat"][b]) else "\u2014", None),
                    (f"{d['ess'][b]:.0f}" if np.isfinite(d["ess"][b]) else "\u2014", None),
                    (f"{d['divergences'][b]:.0f}" if np.isfinite(d["divergences"][b]) else "\u2014",
                     None),
                    (f"{d['bfmi'][b]:.2f}" if np.isfinite(d["bfmi"][b]) else "\u2014", None),
                ]
            why = str(fits.detail[b])
            lsq = None if fits.status_lsq is None else str(fits.status_lsq[b])
            if lsq and lsq != st:
                # knife-edge bins: the two methods judge by their own rules (issue 48)
                why = (f"{why}; " if why else "") + (
                    f"least squares: {lsq} (each method by its own rules)")
            cells.append((why, None))
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
                if c == tau_at and fits.model_of(b) == "double" and len(doubles) == 2:
                    it.setToolTip("double exponential: tau1 / tau2 (s), each quoted as "
                                  "its status allows")
                if c == 0 and fits.detail[b]:
                    it.setToolTip(f"{st}: {fits.detail[b]}")
                self.setItem(b, c, it)
        hdr = self.horizontalHeader()
        hdr.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        if fits.n_curves <= 50:
            # Measuring every cell is slow for long tables; then keep the default widths.
            self.resizeColumnsToContents()
        # File labels are already cut to what tells them apart (either end may hold it):
        # shorten in the middle, full in a tooltip.
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.setColumnWidth(file_col, min(self.columnWidth(file_col), 130))
        # every status name whole ("errors_understated" elided read as nothing)
        fm0 = self.fontMetrics()
        widest = max(fm0.horizontalAdvance(k) for k in STATUS_HEX) + 16
        self.setColumnWidth(0, min(self.columnWidth(0), max(_STATUS_WIDTH, widest)))
        # the relaxation time is the number read here: never cut, long tables too
        tau_col = head.index(tau_head)
        fm = self.fontMetrics()
        need = max((fm.horizontalAdvance(self.item(b, tau_col).text())
                    for b in range(fits.n_curves)), default=0) + 16
        need = max(need, fm.horizontalAdvance(head[tau_col]) + 24)
        self.setColumnWidth(tau_col, max(self.columnWidth(tau_col), need))
        for b in np.flatnonzero(failed):
            self.resizeRowToContents(int(b))  # the reason's line
        for b in range(fits.n_curves):
            self.item(b, file_col).setToolTip(fits.file_labels[b])
        self.setSortingEnabled(True)
