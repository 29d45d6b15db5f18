"""The main window's backend, theme and help actions (a mixin)."""

from __future__ import annotations

import logging

from PySide6.QtWidgets import QMessageBox

from xpcsviewer.gui.resources import icon_pixmap
from xpcsviewer.gui.theme import apply_theme
from xpcsviewer.gui.widgets import elide_words

__all__ = ["PROGRESS_BAR_WIDTH", "PROGRESS_WIDTH", "SHORTCUTS", "WindowExtrasMixin"]

logger = logging.getLogger("xpcsviewer.gui.main_window")

SHORTCUTS = [
    ("Ctrl+O", "Open folder"),
    ("Ctrl+Shift+O", "Open files"),
    ("F5", "Reload the folder"),
    ("Ctrl+E", "Export the current tab's figure"),
    ("Ctrl+Shift+E", "Export the current tab's data (CSV)"),
    ("Ctrl+Tab / Ctrl+Shift+Tab", "Next / previous tab"),
    ("Ctrl+1 \u2026 Ctrl+9", "Go to tab 1 \u2026 9"),
    ("\u2191 / \u2193 in the target list", "Step through the target files"),
    ("Del in the target list", "Remove the selected targets"),
    ("Ctrl+L", "Live acquisition (the Live tab)"),
    ("Esc", "Cancel running jobs"),
    ("Ctrl+Q", "Quit"),
]


#: Width of the status bar's progress bar (px); its label is cut between words to fit.
PROGRESS_WIDTH = 260
#: the warm-up job's name (also the progress label's key)
WARMUP_DESCRIPTION = "preparing the fitting engine; you can fit now"
#: the bar itself: room for "100%"; the job's name has the rest, in a label
PROGRESS_BAR_WIDTH = 70


def _has_jax() -> bool:
    import importlib.util

    return importlib.util.find_spec("jax") is not None


class WindowExtrasMixin:
    """Backend warm-up and choice, theme, layout reset, shortcuts and About box; the
    status bar's progress label."""

    # ------------------------------------------------------------- progress
    def _on_job_finished(self, _key: str, _request_id: int) -> None:
        # The bar shows the job that reported last. Once that one has ended (done,
        # failed or cancelled) its "X: 0%" must not stay while other jobs run.
        st = self._progress_state
        if "key" in st and st["key"] not in self.context.runner.running_descriptions():
            for k in ("key", "done", "total", "message"):
                st.pop(k, None)
            self._schedule_progress()

    def _label_progress(self, st: dict) -> None:
        """Text and tooltip of the busy progress bar (GUI thread)."""
        bar, lab = self.progress, self.progress_label
        if "key" not in st:
            # no job reports progress now: a busy bar named after a running job (the
            # warm-up first: its first message may be seconds away), all in the tooltip
            running = self.context.runner.running_descriptions()
            name = WARMUP_DESCRIPTION if WARMUP_DESCRIPTION in running else (
                running[0] if running else "")
            bar.setFormat("")
            lab.setText(elide_words(lab.fontMetrics(), name, lab.width() - 8))
            tip = "\n".join(running)
            bar.setToolTip(tip)
            lab.setToolTip(tip)
            return
        fm = lab.fontMetrics()
        room = lab.width() - 8  # the label's own font and width: it cannot run over
        lab.setText(elide_words(fm, st["key"], room))
        bar.setFormat("%p%")
        tip = f"{st['key']}: {st['message']}"
        bar.setToolTip(tip)
        lab.setToolTip(tip)
        if st["key"] == WARMUP_DESCRIPTION and st.get("done", 0) >= 1 and not self.warmup_done:
            # JAX is up after the first step; the programs are prepared for a while
            # more: say what is loaded instead of "JAX: starting..." (issue 33)
            self._describe_backend(pending="preparing fits\u2026")

    # -------------------------------------------------------------- backend
    def _start_warmup(self) -> None:
        from xpcsviewer.export.figures import preload_plotting
        from xpcsviewer.jobs.fit_process import process_enabled
        from xpcsviewer.jobs.warmup import precompile, prepare_engine

        self.context.runner.submit("warmup:plotting", preload_plotting,
                                   description="loading matplotlib")
        if process_enabled():
            # in the fit process, step by step: a fit goes first, the sampler's
            # programs give way to any fit (issue 49: the warm-up stalled the window)
            self.context.runner.submit(
                "warmup", prepare_engine, self._first_warm_delays, on_result=self._on_warmup,
                on_error=lambda info: self._describe_backend(),
                description=WARMUP_DESCRIPTION)
        else:
            self.context.runner.submit(
                "warmup", precompile, on_result=self._on_warmup,
                on_error=lambda info: self._describe_backend(),
                description=WARMUP_DESCRIPTION)
        # numba's correlators: a cold cache (new version, cleaned cache) is filled by a
        # low-priority child process, so no correlate job waits for the compiler
        from xpcsviewer.jobs.precompile import ensure_kernels

        self.context.runner.submit(
            "warmup:kernels", ensure_kernels,
            on_result=lambda out: logger.info("correlators: %s", out.get("reason")),
            on_error=lambda info: logger.warning("correlators: %s", info.message),
            description="correlators: checking the compiled kernels")
        self._schedule_progress()  # the warm-up is named at once, not at its first step

    def _opened_delays(self) -> tuple[int, ...]:
        """Delay counts of the open files, one per compiled size (any thread)."""
        from xpcsviewer.jobs.warmup import padded_delays

        counts = []
        for r in list(getattr(self, "results", ()) or ()):
            mt = getattr(r, "multitau", None)
            if mt is not None:
                counts.append(len(mt.tau))
        return padded_delays(counts)

    def _first_warm_delays(self) -> tuple[int, ...]:
        """The warm-up's least-squares step asks (worker thread): the open files'
        counts, else the usual ones; files opened later go to :meth:`_warm_for_targets`."""
        from xpcsviewer.jobs.warmup import _DELAYS

        counts = self._opened_delays() or _DELAYS
        self._warm_sizes = {1 << (n - 1).bit_length() for n in counts}
        return counts

    def _warm_for_targets(self, _results: list) -> None:
        """Files opened after the warm-up's least-squares step: their delay counts'
        programs, before the sampler's (fit process only)."""
        from xpcsviewer.jobs.fit_process import PRIORITY_WARMUP, process_enabled, run_fit_call
        from xpcsviewer.jobs.warmup import padded_delays

        done = getattr(self, "_warm_sizes", None)
        if done is None or not process_enabled():
            return  # the warm-up's first step has not asked yet: it takes them all
        new = [n for n in self._opened_delays() if 1 << (n - 1).bit_length() not in done]
        if not new:
            return
        done.update(1 << (n - 1).bit_length() for n in new)
        self.context.runner.submit(
            "warmup:lsq", run_fit_call, "xpcsviewer.jobs.warmup:warm_lsq",
            padded_delays(new), priority=PRIORITY_WARMUP,
            on_error=lambda info: logger.warning("warm-up: %s", info.message),
            description=WARMUP_DESCRIPTION)

    def _on_warmup(self, out: dict) -> None:
        import gc

        self.warmup_done = True
        self._engine_line = out.get("backend")
        # What exists now (modules, JAX and Qt objects) lives as long as the app: keep it
        # out of the collector's full passes, which hold the GIL and pause the window
        # for a time that grows with the heap.
        gc.freeze()
        self._describe_backend()
        logger.info("warm-up: %s", out.get("seconds"))

    def _describe_backend(self, pending: str = "") -> None:
        import numpy as np

        from xpcsviewer.backends import get_backend, get_device_manager, use_config
        from xpcsviewer.jobs.fit_process import process_enabled

        cfg = self.run_config()
        engine = getattr(self, "_engine_line", None)
        try:
            if process_enabled() and cfg.backend != "numpy" and _has_jax():
                # the fit process's JAX: not imported here (a GIL stall of seconds)
                line = f"{engine} (fit process)" if engine else "JAX (fit process)"
                self.backend_label.setText(f"{line} \u00b7 {pending}" if pending else line)
                return
            with use_config(cfg):
                be = get_backend()
            if be.name == "numpy":
                line = f"NumPy {np.__version__}, CPU, float64"
            else:
                import jax

                accels = get_device_manager().visible_accelerators
                where = "CPU" if cfg.device == "cpu" or not accels else accels[0].platform.upper()
                if where != "CPU" and cfg.device == "auto":
                    where += " (by job size)"
                line = f"JAX {jax.__version__}, {where}, float64"
        except Exception as exc:
            line = f"backend error: {exc}"
        self.backend_label.setText(f"{line} \u00b7 {pending}" if pending else line)

    def run_config(self):
        """The RunConfig new jobs run under (the Tools menu's choice)."""
        from xpcsviewer.backends import current_config

        return self.context.runner.config or current_config()

    def set_backend(self, name: str) -> None:
        """Use ``"jax"``, ``"numpy"`` or ``"auto"`` for new jobs."""
        from dataclasses import replace

        from xpcsviewer.backends import get_backend

        try:
            if name == "jax":
                get_backend("jax")  # an absent JAX is said now, not at the next job
            self.context.runner.config = replace(self.run_config(), backend=name)
        except Exception as exc:
            self.context.report_error(exc)
            self.backend_actions["auto"].setChecked(True)
        self._describe_backend()

    def set_device(self, name: str) -> None:
        """Route new jobs to ``"auto"``, ``"cpu"`` or ``"gpu"`` (falls back if absent)."""
        from dataclasses import replace

        self.context.runner.config = replace(self.run_config(), device=name)
        self._describe_backend()

    # ----------------------------------------------------------------- view
    def set_theme(self, theme: str) -> None:
        """Apply ``"light"`` or ``"dark"`` to the window and every plot."""
        self.theme = theme if theme in ("light", "dark") else "light"
        apply_theme(self, self.theme)
        if self.theme in self.theme_actions:
            self.theme_actions[self.theme].setChecked(True)

    def reset_layout(self) -> None:
        """Dock and window layout back to the default."""
        self.restoreState(self._default_state)
        self.browser_dock.setVisible(True)
        self.browser_dock.setFloating(False)

    def show_shortcuts(self):
        """List the keyboard shortcuts (non-modal): a two-column table, sized to show
        every row on one line (a message box wrapped the long lines out of line)."""
        from PySide6.QtCore import Qt
        from PySide6.QtWidgets import (
            QAbstractItemView,
            QDialog,
            QDialogButtonBox,
            QTableWidget,
            QTableWidgetItem,
            QVBoxLayout,
        )

        box = QDialog(self)
        box.setWindowTitle("Keyboard shortcuts")
        t = QTableWidget(len(SHORTCUTS), 2, box)
        t.setHorizontalHeaderLabels(["Keys", "Action"])
        t.verticalHeader().setVisible(False)
        t.setWordWrap(False)
        t.setShowGrid(False)
        t.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        t.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        t.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        for r, (keys, what) in enumerate(SHORTCUTS):
            t.setItem(r, 0, QTableWidgetItem(keys))
            t.setItem(r, 1, QTableWidgetItem(what))
        t.resizeColumnsToContents()
        t.resizeRowsToContents()
        t.horizontalHeader().setStretchLastSection(True)
        for bar in (t.setHorizontalScrollBarPolicy, t.setVerticalScrollBarPolicy):
            bar(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        frame = 2 * t.frameWidth()
        t.setMinimumSize(
            sum(t.columnWidth(c) for c in range(2)) + frame + 24,
            t.horizontalHeader().sizeHint().height()
            + sum(t.rowHeight(r) for r in range(t.rowCount())) + frame,
        )
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, box)
        buttons.rejected.connect(box.close)
        lay = QVBoxLayout(box)
        lay.addWidget(t)
        lay.addWidget(buttons)
        box.table = t
        box.setModal(False)
        box.show()
        self._shortcut_box = box
        return box

    def show_about(self) -> QMessageBox:
        """About box (non-modal), with the application icon."""
        from xpcsviewer import __version__

        box = QMessageBox(self)
        box.setWindowTitle("About XPCS Viewer")
        box.setIconPixmap(icon_pixmap(96))
        box.setText(f"<b>XPCS Viewer {__version__}</b>")
        box.setInformativeText(
            "X-ray photon correlation spectroscopy results: SAXS, g2 fits, diffusion, "
            f"two-time maps.\n\nBackend: {self.backend_label.text()}")
        box.setStandardButtons(QMessageBox.StandardButton.Close)
        box.setModal(False)
        box.show()
        self._about_box = box
        return box
