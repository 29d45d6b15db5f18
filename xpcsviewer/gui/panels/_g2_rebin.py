"""g2 tab: "Recompute q-bin…": one bin of the current file correlated anew from its raw
data with the Detector tab's mask, drawn over the file's own curve (a mixin).

The work is :func:`xpcsviewer.jobs.rebin_one.recompute_bin` in a worker (progress,
cancel). Where the raw source is no longer at the path the result records, the user is
asked for it. The new curve is drawn in the panel of that bin (dashed, filled squares,
its own legend: "bin k, edited mask (N pixels)"); the status line under the button says
how many pixels the mask removed and how much g2 changed at the first delays. The
overlay stays through redraws until *Clear overlay* (or the file leaves the targets).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QProgressBar, QPushButton, QSpinBox

from xpcsviewer.gui.panels._g2_jobs import recompute_bin_job

__all__ = ["REBIN_COLOR", "G2RebinMixin"]

#: the recomputed curve's colour (the file curves use the tab10 cycle from blue)
REBIN_COLOR = "#d62728"


class G2RebinMixin:
    """Recompute one q-bin with the Detector tab's mask (see the module notes)."""

    def _init_rebin(self, layout: Any) -> None:
        from xpcsviewer.gui.widgets import ClippedLabel

        row = QHBoxLayout()
        self.rebin_bin = QSpinBox(minimum=1, maximum=1)
        self.rebin_bin.setToolTip("q-bin (1-based dynamic bin) of the current file")
        self.rebin_btn = QPushButton("Recompute q-bin\u2026")
        self.rebin_btn.setToolTip(
            "Correlate this q-bin of the current file anew from its raw data with the "
            "Detector tab's mask, and draw it over the file's curve (in a worker)")
        self.rebin_cancel = QPushButton("Cancel")
        self.rebin_cancel.setToolTip("Stop the recomputation")
        self.rebin_cancel.setEnabled(False)
        self.rebin_clear = QPushButton("Clear overlay")
        self.rebin_clear.setToolTip("Remove the recomputed curve")
        self.rebin_clear.setEnabled(False)
        self.rebin_progress = QProgressBar()
        self.rebin_progress.setRange(0, 1000)
        self.rebin_progress.setMaximumWidth(120)
        self.rebin_progress.setTextVisible(False)
        self.rebin_status = ClippedLabel(" ", lines=1)
        for w in (QLabel("q-bin"), self.rebin_bin, self.rebin_btn, self.rebin_cancel,
                  self.rebin_clear, self.rebin_progress):
            row.addWidget(w)
        row.addStretch(1)
        layout.addLayout(row)
        layout.addWidget(self.rebin_status)  # a line of its own: the numbers are long
        #: the last recomputation (a BinRecompute) and the file it is of
        self.rebin_overlay: Any = None
        self.rebin_file: str | None = None
        self._rebin_items: list[tuple[Any, Any]] = []
        self._rebin_ask: tuple | None = None
        self.rebin_btn.clicked.connect(lambda: self.recompute_bin())
        self.rebin_cancel.clicked.connect(self.cancel_rebin)
        self.rebin_clear.clicked.connect(self.clear_rebin)

    # ------------------------------------------------------------------ targets
    def set_results(self, results: list) -> None:
        super().set_results(results)
        self._rebin_range()
        if self.rebin_file is not None and not any(
                str(r.path) == self.rebin_file for r in self.results):
            self.clear_rebin()

    def set_current(self, index: int) -> None:
        super().set_current(index)
        self._rebin_range()

    def _rebin_range(self) -> None:
        res = self.current_result()
        mt = getattr(res, "multitau", None)
        self.rebin_bin.setMaximum(max(1, mt.g2.shape[1]) if mt is not None else 1)

    # ------------------------------------------------------------------ the job
    def _rebin_mask(self, res: Any) -> tuple[np.ndarray, bool]:
        """(the Detector tab's mask of ``res``, True) or (its q-map's mask, False)."""
        from xpcsviewer.gui.panels.detector import MASK_KEY

        dm = self.context.shared.get(MASK_KEY)
        if dm is not None and dm.path == str(res.path) and dm.mask.shape == res.qmap.shape:
            return np.asarray(dm.mask, bool), True
        return np.asarray(res.qmap.mask, bool), False

    def recompute_bin(self, q_bin: int | None = None, raw: str | None = None) -> int | None:
        """Start recomputing ``q_bin`` (default: the box's) of the current file in a
        worker; returns the request id."""
        res = self.current_result()
        if res is None or getattr(res, "multitau", None) is None:
            self.context.report_error("g2: no multi-tau result to recompute")
            return None
        k = int(q_bin if q_bin is not None else self.rebin_bin.value())
        mask, edited = self._rebin_mask(res)
        self._rebin_ask = (str(res.path), k, edited, str(res.multitau.config.get("raw", "")))
        self.rebin_btn.setEnabled(False)
        self.rebin_cancel.setEnabled(True)
        self.rebin_progress.setValue(0)
        self.rebin_status.setText(f"recomputing bin {k} from the raw data\u2026")
        return self.context.runner.submit(
            self.job_key("rebin"), recompute_bin_job, str(res.path), k, mask, raw,
            on_result=self._on_rebin, on_error=self._on_rebin_error,
            on_progress=self._on_rebin_progress,
            description=f"g2: recomputing q-bin {k} of {Path(res.path).name}")

    def cancel_rebin(self) -> None:
        self.context.runner.cancel(self.job_key("rebin"))
        self._rebin_idle("cancelled")

    def _rebin_idle(self, text: str) -> None:
        self.rebin_btn.setEnabled(True)
        self.rebin_cancel.setEnabled(False)
        self.rebin_status.setText(text)

    def _on_rebin_progress(self, done: int, total: int, msg: str) -> None:
        if total > 0:
            self.rebin_progress.setValue(int(1000 * done / total))

    def ask_raw_path(self, recorded: str, result: str) -> str | None:
        """The raw source of ``result`` chosen by the user (None: cancelled)."""
        path, _ = QFileDialog.getOpenFileName(
            self, f"Raw data of {Path(result).name} (recorded: {recorded})",
            str(Path(recorded).parent), "All files (*)")
        return path or None

    def _on_rebin_error(self, info: Any) -> None:
        if info.kind == "RawSourceMissing" and self._rebin_ask is not None:
            path, k, _edited, recorded = self._rebin_ask
            self._rebin_idle(f"the raw data is not at {recorded}")
            raw = self.ask_raw_path(recorded, path)
            if raw:
                self.recompute_bin(k, raw)
            return
        self._rebin_idle(f"recompute failed: {info.message}")
        self.context.report_error(info)

    def _on_rebin(self, out: Any) -> None:
        path, _k, edited, _raw = self._rebin_ask or ("", 0, False, "")
        self.rebin_overlay, self.rebin_file = out, path
        self.rebin_progress.setValue(1000)
        self.rebin_clear.setEnabled(True)
        self._rebin_idle(rebin_text(out, edited))
        self._show_rebin_overlay()

    def clear_rebin(self) -> None:
        self.rebin_overlay = self.rebin_file = None
        self._drop_rebin_items()
        self.rebin_clear.setEnabled(False)
        self.rebin_status.setText(" ")

    # ------------------------------------------------------------------ drawing
    def _finish_draw(self) -> None:
        self._show_rebin_overlay()  # the plots were redrawn: the overlay goes back on
        super()._finish_draw()

    def _drop_rebin_items(self) -> None:
        for plot, item in self._rebin_items:
            if isinstance(item, pg.LegendItem):
                # a legend cannot be unparented (it anchors to its parent): out of
                # the scene with it
                if item.scene() is not None:
                    item.scene().removeItem(item)
            else:
                plot.removeItem(item)
        self._rebin_items = []

    def rebin_panel(self) -> tuple[int, int, int] | None:
        """(panel index, member index, block index) of the recomputed bin's curve, or
        None when it is not shown."""
        out = self.rebin_overlay
        if out is None:
            return None
        for k, spec in enumerate(self.panel_specs):
            for m, (bi, j) in enumerate(spec.members):
                b = self.blocks[bi]
                if int(b.columns[j]) != out.q_bin - 1:
                    continue
                src = b.source or str(self.results[b.file_index].path)
                if Path(src) == Path(self.rebin_file):
                    return k, m, bi
        return None

    def _show_rebin_overlay(self) -> None:
        self._drop_rebin_items()
        out = self.rebin_overlay
        if out is None:
            return
        where = self.rebin_panel()
        if where is None:
            self.rebin_status.setText(rebin_text(out, self._rebin_ask and self._rebin_ask[2])
                                      + f"; bin {out.q_bin} is not shown now (q range, page)")
            return
        k, m, bi = where
        v = self._views[k]
        b = self.blocks[bi]
        layout = self.layout_combo.currentData()
        shift = self.offset.value() * (b.file_index if layout == "qbin" else m)
        ok = np.isfinite(out.g2) & (out.tau > 0)
        item = pg.PlotDataItem(
            out.tau[ok], out.g2[ok] + shift,
            pen=pg.mkPen(REBIN_COLOR, width=1.6, style=Qt.PenStyle.DashLine),
            symbol="s", symbolSize=self.marker.value(), symbolPen=pg.mkPen(REBIN_COLOR),
            symbolBrush=pg.mkBrush(REBIN_COLOR))
        v.plot.addItem(item)
        # the panel's y range was made for the file's curves: widened to show the new one
        vb = v.plot.getViewBox()
        y = out.g2[ok] + shift
        if y.size and not vb.autoRangeEnabled()[1]:
            lo, hi = vb.viewRange()[1]
            lo2, hi2 = min(lo, float(y.min())), max(hi, float(y.max()))
            if (lo2, hi2) != (lo, hi):
                pad = 0.03 * (hi2 - lo2)
                vb.setYRange(lo2 - (pad if lo2 < lo else 0), hi2 + (pad if hi2 > hi else 0),
                             padding=0)
        # upper right: where decaying curves leave room
        leg = pg.LegendItem(offset=(-4, 4), labelTextSize="8pt")
        leg.setParentItem(v.plot.getViewBox())
        leg.setBrush(pg.mkBrush(255, 255, 255, 200))
        # one entry (the file's curve is the panel's own; its pixels are in the status)
        leg.addItem(item, f"bin {out.q_bin}, edited mask ({out.n_pixels} pixels)")
        self._rebin_items = [(v.plot, item), (v.plot, leg)]


def rebin_text(out: Any, edited: bool | None) -> str:
    """The status line of a recomputed bin."""
    d = out.first_change(3)
    change = ", ".join(f"{x:+.4f}" for x in d if np.isfinite(x)) or "\u2013"
    n = abs(out.pixels_removed)
    what = f"{n} pixel{'s' if n != 1 else ''} " + ("removed" if out.pixels_removed >= 0
                                                   else "added")
    text = f"bin {out.q_bin}: {what} ({out.n_pixels_before} \u2192 {out.n_pixels})"
    text += f"; g2 change at the first delays {change}"
    text += f" ({out.path}, {out.n_frames:,} frames, {out.seconds:.1f} s)"
    if not edited:
        text += "; no Detector-tab mask for this file: its own mask"
    return text
