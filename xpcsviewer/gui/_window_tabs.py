"""The main window's tabs: which apply to the targets, which one shows (a mixin)."""

from __future__ import annotations

from PySide6.QtWidgets import QScrollArea

from xpcsviewer.gui.panels.base import BasePanel

__all__ = ["TAB_PRIORITY", "WindowTabsMixin"]

#: Where files open when the preferred tab does not apply to them.
TAB_PRIORITY = ("g2", "saxs2d", "twotime", "saxs1d", "intensity", "metadata")


class WindowTabsMixin:
    """Tab states and selection of :class:`~xpcsviewer.gui.main_window.MainWindow`."""

    def update_tab_states(self) -> None:
        """Enable the tabs that apply to the targets; disabled tabs say why.

        Qt moves off a tab that gets disabled (to Metadata, the one always enabled);
        once files are open again the window goes back to the tab the user chose
        (g2 at first start), or to the first of :data:`TAB_PRIORITY` that applies.
        """
        self._tabs_updating = True
        try:
            for i in range(self.tabs.count()):
                panel = self.panel_at(i)
                try:
                    reason = panel.applies_to(self.results)
                except Exception as exc:
                    reason = f"error: {exc}"
                self.tabs.setTabEnabled(i, reason is None)
                self.tabs.setTabToolTip(i, reason or "")
            if self.results:
                for name in (self.preferred_tab, *TAB_PRIORITY):
                    if name in self.panels and self.tabs.isTabEnabled(self.tab_index(name)):
                        self.tabs.setCurrentIndex(self.tab_index(name))
                        break
        finally:
            self._tabs_updating = False
        self._on_tab_changed(self.tabs.currentIndex())

    def _on_tab_changed(self, _i: int) -> None:
        if getattr(self, "_tabs_updating", False):
            return
        panel = self.current_panel()
        if panel is not None and self.results and self.tabs.isTabEnabled(self.tabs.currentIndex()):
            self.preferred_tab = panel.name  # what the user looks at, kept across Clear
        if panel is not None:
            panel.ensure_fresh()

    def panel_at(self, i: int) -> BasePanel | None:
        """The panel of tab ``i``."""
        w = self.tabs.widget(i)
        if isinstance(w, QScrollArea):
            w = w.widget()
        return w if isinstance(w, BasePanel) else None

    def tab_index(self, name: str) -> int:
        """Tab index of the panel registered as ``name``."""
        panel = self.panels[name]
        for i in range(self.tabs.count()):
            if self.panel_at(i) is panel:
                return i
        raise KeyError(name)

    def current_panel(self) -> BasePanel | None:
        """The panel of the current tab."""
        return self.panel_at(self.tabs.currentIndex())

    def select_tab(self, name: str) -> None:
        """Show the tab registered as ``name`` (and come back to it after Clear)."""
        self.preferred_tab = name
        self.tabs.setCurrentIndex(self.tab_index(name))

    def select_tab_index(self, i: int) -> None:
        """Show tab ``i`` if it is enabled."""
        if 0 <= i < self.tabs.count() and self.tabs.isTabEnabled(i):
            self.tabs.setCurrentIndex(i)

    def _step_tab(self, step: int) -> None:
        n = self.tabs.count()
        i = self.tabs.currentIndex()
        for _ in range(n):
            i = (i + step) % n
            if self.tabs.isTabEnabled(i):
                self.tabs.setCurrentIndex(i)
                return
