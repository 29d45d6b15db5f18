"""Metadata: a searchable tree of one file's metadata with units."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
)

from xpcsviewer.gui.panels.base import BasePanel
from xpcsviewer.gui.widgets import FileSelector

__all__ = ["MetadataPanel", "format_value", "metadata_rows"]

_UNIT_RE = re.compile(r"^(.*?)\s*\(([^()]*)\)\s*$")


def format_value(v: Any) -> str:
    """Readable text for a metadata value (10 significant digits; long arrays summarised)."""
    if isinstance(v, bytes):
        v = v.decode("utf-8", "replace")
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.10g}"
    if isinstance(v, np.ndarray):
        if v.size == 1:
            return format_value(v.reshape(()).item())
        if v.size > 16:
            finite = v[np.isfinite(v)] if np.issubdtype(v.dtype, np.number) else v
            if np.issubdtype(v.dtype, np.number) and finite.size:
                return (f"array {v.shape} {v.dtype}, min {finite.min():.6g}, "
                        f"max {finite.max():.6g}")
            return f"array {v.shape} {v.dtype}"
        return np.array2string(v, precision=6, separator=", ")
    return str(v)


def metadata_rows(metadata: dict[str, Any]) -> list[tuple[list[str], str, str]]:
    """Split ``"group/key (units)" -> value`` entries into (path parts, value text, unit)."""
    rows = []
    for key, value in metadata.items():
        unit = ""
        m = _UNIT_RE.match(str(key))
        name = str(key)
        if m:
            name, unit = m.group(1), m.group(2)
        parts = [p for p in name.strip("/").split("/") if p]
        rows.append((parts or [name], format_value(value), unit))
    return rows


class MetadataPanel(BasePanel):
    """Tree of the file's metadata (columns: name, value, unit) with a search box."""

    name = "metadata"
    title = "Metadata"
    uses_current = True

    def __init__(self, context, parent=None) -> None:
        super().__init__(context, parent)
        lay = QVBoxLayout(self)
        bar = QHBoxLayout()
        self.file_selector = FileSelector()
        self.file_selector.sigIndexChosen.connect(self._on_file_chosen)
        self.search = QLineEdit(placeholderText="search names and values")
        self.search.setToolTip("Show only entries whose name or value contains this text")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._apply_filter)
        self.count_label = QLabel(" ")
        for w in (QLabel("File"), self.file_selector, self.search, self.count_label):
            bar.addWidget(w)
        lay.addLayout(bar)
        self.tree = QTreeWidget()
        self.tree.setColumnCount(3)
        self.tree.setHeaderLabels(["name", "value", "unit"])
        self.tree.header().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.tree.header().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        lay.addWidget(self.tree, 1)

    def refresh(self) -> None:
        self.file_selector.set_labels([r.label for r in self.results], self.current_index)
        res = self.current_result()
        self.tree.clear()
        if res is None:
            return
        md = dict(res.metadata)
        md.setdefault("file/path", str(res.path))
        md.setdefault("file/layout", res.layout)
        md.setdefault("file/analysis_type", ", ".join(res.analysis_type))
        md.setdefault("file/detector_shape", f"{res.detector_shape}")
        md.setdefault("file/frame_time (s)", res.frame_time)
        if not any("sample/" in k for k in md):  # the sample group is usually in metadata
            for k, v in (res.sample or {}).items():
                md.setdefault(f"sample/{k}", v)
        for w in res.warnings:
            md.setdefault(f"warnings/{len([k for k in md if k.startswith('warnings/')])}", w)
        groups: dict[tuple, QTreeWidgetItem] = {}
        for parts, value, unit in metadata_rows(md):
            parent = self.tree.invisibleRootItem()
            for depth in range(len(parts) - 1):
                key = tuple(parts[: depth + 1])
                if key not in groups:
                    it = QTreeWidgetItem([parts[depth], "", ""])
                    parent.addChild(it)
                    groups[key] = it
                parent = groups[key]
            leaf = QTreeWidgetItem([parts[-1], value, unit])
            leaf.setToolTip(1, value)
            parent.addChild(leaf)
        if len(md) <= 300:
            self.tree.expandAll()
        else:
            self.tree.expandToDepth(1)
        self._apply_filter(self.search.text())
        self.sigUpdated.emit()

    def _on_file_chosen(self, i: int) -> None:
        self.current_index = i
        self.refresh()

    def leaves(self, visible_only: bool = True) -> list[tuple[str, str, str]]:
        """(name, value, unit) of the leaf rows (shown ones by default)."""
        out = []

        def walk(item):
            for i in range(item.childCount()):
                ch = item.child(i)
                if visible_only and ch.isHidden():
                    continue
                if ch.childCount():
                    walk(ch)
                else:
                    out.append((ch.text(0), ch.text(1), ch.text(2)))

        walk(self.tree.invisibleRootItem())
        return out

    def _apply_filter(self, text: str) -> None:
        words = text.lower().split()

        def visit(item, path: str) -> bool:
            any_child = False
            for i in range(item.childCount()):
                ch = item.child(i)
                p = f"{path}/{ch.text(0)}"
                if ch.childCount():
                    show = visit(ch, p)
                else:
                    hay = f"{p} {ch.text(1)} {ch.text(2)}".lower()
                    show = all(w in hay for w in words)
                ch.setHidden(not show)
                any_child |= show
            return any_child

        visit(self.tree.invisibleRootItem(), "")
        if words:
            self.tree.expandAll()
        self.count_label.setText(f"{len(self.leaves())} entries")

    def clear_plots(self) -> None:
        self.tree.clear()

    def data_columns(self):
        res = self.current_result()
        if res is None:
            return None
        rows = self.leaves(visible_only=False)
        return ({"name": np.array([r[0] for r in rows], dtype=object),
                 "value": np.array([r[1] for r in rows], dtype=object),
                 "unit": np.array([r[2] for r in rows], dtype=object)},
                [f"Metadata of {res.label}"])

    def get_settings(self) -> dict:
        return {"search": self.search.text()}

    def set_settings(self, s: dict) -> None:
        if isinstance(s.get("search"), str):
            self.search.setText(s["search"])
