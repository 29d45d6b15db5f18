"""Session persistence of the main window: what is saved on close and restored at start.

A mixin of :class:`~xpcsviewer.gui.main_window.MainWindow` (it uses the window's
browser, panels and context); GUI thread only. The file itself is handled by
:mod:`xpcsviewer.gui.session`.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QByteArray

from xpcsviewer.gui import session as session_mod
from xpcsviewer.gui.workers import ErrorInfo

__all__ = ["WindowSessionMixin"]

logger = logging.getLogger(__name__)


class WindowSessionMixin:
    """``session_dict`` / ``save_session`` / ``restore_session`` of the main window."""

    def session_dict(self) -> dict:
        """Everything the session file stores."""
        panels = {}
        for name, p in self.panels.items():
            try:
                panels[name] = p.get_settings()
            except Exception:
                logger.exception("settings of %s", name)
        current = self.current_panel()
        # temporaries are removed at close: a session never refers to them
        targets = self.browser.target_paths()
        temp = getattr(self, "temporaries", set())
        keep = [t for t in targets if t not in temp]
        cur = self.browser.current_index()
        if 0 <= cur < len(targets) and targets[cur] in keep:
            cur = keep.index(targets[cur])
        elif cur >= 0:
            cur = 0 if keep else -1
        return {
            "folder": self.browser.folder,
            "targets": keep,
            "current_target": cur,
            "active_tab": current.name if current is not None else None,
            "geometry": bytes(self.saveGeometry().toBase64()).decode("ascii"),
            "window_state": bytes(self.saveState().toBase64()).decode("ascii"),
            "theme": self.theme,
            "panels": panels,
            "recent_folders": list(self.recent),
            "last_export_folder": self.context.export_folder.last,
            "browser": {"sort": self.browser.sort_combo.currentText(),
                        "filter_mode": self.browser.filter_mode.currentText(),
                        "watch": self.browser.watch_check.isChecked()},
        }

    def save_session(self) -> Path | None:
        """Write the session file; errors are reported, never raised."""
        try:
            return session_mod.save_session(self.session_dict())
        except Exception as exc:  # one line (report_error logs it); the trace for debugging
            logger.debug("session not saved", exc_info=True)
            self.context.report_error(f"Session not saved: {exc}")
            return None

    def restore_session(self, data: dict | None = None) -> list[str]:
        """Restore from ``data`` (default: the session file). Returns the warnings.

        Never raises: a broken or hostile session file is ignored with a message
        naming it. Missing target files are skipped with a message; each bad value
        is ignored on its own (the rest is restored).
        """
        warnings: list[str] = []
        try:
            if data is None:
                data, warn = session_mod.load_session()
                if warn:
                    warnings.append(warn)
            warnings += self._apply_session(data if isinstance(data, dict) else {})
        except Exception as exc:  # a broken session must never stop the app
            logger.exception("session restore failed")
            warnings.append(f"Session {session_mod.session_path()} partly ignored: "
                            f"{type(exc).__name__}: {str(exc)[:200]}")
        for w in warnings:
            self.context.report_error(ErrorInfo("SessionWarning", w, "", -1))
        return warnings

    def _apply_session(self, data: dict) -> list[str]:
        warnings: list[str] = []
        if not data:
            return warnings
        for step in (self._restore_look, self._restore_browser, self._restore_panels,
                     self._restore_files):
            try:
                warnings += step(data) or []
            except Exception as exc:  # a wrong type in one part spoils only that part
                logger.exception("session: %s", step.__name__)
                warnings.append(f"Session {session_mod.session_path()}: "
                                f"{step.__name__.removeprefix('_restore_')} part ignored "
                                f"({type(exc).__name__}: {str(exc)[:200]})")
        return warnings

    def _restore_look(self, data: dict) -> None:
        last = data.get("last_export_folder")
        if isinstance(last, str) and last:
            self.context.export_folder.last = last
        rec = data.get("recent_folders")
        if isinstance(rec, list):
            self.recent = [r for r in rec if isinstance(r, str)][: session_mod.MAX_RECENT]
            self._fill_recent_menu()
        for key, attr in (("geometry", "restoreGeometry"), ("window_state", "restoreState")):
            val = data.get(key)
            if isinstance(val, str) and val and val.isascii():
                getattr(self, attr)(QByteArray.fromBase64(val.encode("ascii")))
        theme = data.get("theme")
        if theme in ("light", "dark"):
            self.set_theme(theme)

    def _restore_browser(self, data: dict) -> None:
        br = data.get("browser") if isinstance(data.get("browser"), dict) else {}
        sort = br.get("sort")
        if isinstance(sort, str) and sort in [self.browser.sort_combo.itemText(i)
                                              for i in range(self.browser.sort_combo.count())]:
            self.browser.sort_combo.setCurrentText(sort)
        if br.get("filter_mode") in ("contains", "prefix"):
            self.browser.filter_mode.setCurrentText(br["filter_mode"])
        if isinstance(br.get("watch"), bool):
            self.browser.watch_check.setChecked(br["watch"])

    def _restore_panels(self, data: dict) -> list[str]:
        warnings = []
        panels = data.get("panels")
        if isinstance(panels, dict):
            for name, st in panels.items():
                if name in self.panels and isinstance(st, dict):
                    try:
                        self.panels[name].set_settings(st)
                    except Exception as exc:
                        warnings.append(f"Settings of tab {name} ignored: {exc}")
        return warnings

    def _restore_files(self, data: dict) -> list[str]:
        warnings = []
        folder = data.get("folder")
        if isinstance(folder, str) and folder:
            if Path(folder).is_dir():
                self.browser.open_folder(folder)
            else:
                warnings.append(f"Folder {folder} no longer exists")
        targets = data.get("targets")
        if isinstance(targets, list):
            keep = [t for t in targets if isinstance(t, str) and Path(t).is_file()]
            missing = [t for t in targets if isinstance(t, str) and not Path(t).is_file()]
            if missing:
                warnings.append(f"Skipped {len(missing)} missing target file(s): "
                                + ", ".join(Path(m).name for m in missing[:5]))
            cur = data.get("current_target", 0)
            ok = isinstance(cur, int) and not isinstance(cur, bool) and 0 <= cur < len(keep)
            self.browser.set_targets(keep, cur if ok else 0)
        tab = data.get("active_tab")
        if isinstance(tab, str) and tab in self.panels:
            self.select_tab(tab)
        return warnings
