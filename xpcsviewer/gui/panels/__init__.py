"""The analysis tabs, in the order they appear.

Each entry is ``(name, "module:Class")``; classes load lazily so that a broken or
missing panel disables its tab instead of the whole window.
"""

from __future__ import annotations

import importlib

__all__ = ["PANELS", "load_panel_class", "panel_names"]

PANELS: list[tuple[str, str]] = [
    ("saxs2d", "xpcsviewer.gui.panels.saxs2d:Saxs2DPanel"),
    ("saxs1d", "xpcsviewer.gui.panels.saxs1d:Saxs1DPanel"),
    ("stability", "xpcsviewer.gui.panels.stability:StabilityPanel"),
    ("intensity", "xpcsviewer.gui.panels.intensity:IntensityPanel"),
    ("g2", "xpcsviewer.gui.panels.g2:G2Panel"),
    ("diffusion", "xpcsviewer.gui.panels.diffusion:DiffusionPanel"),
    ("twotime", "xpcsviewer.gui.panels.twotime:TwotimePanel"),
    ("g2stability", "xpcsviewer.gui.panels.g2stability:G2StabilityPanel"),
    ("g2map", "xpcsviewer.gui.panels.g2map:G2MapPanel"),
    ("g2pixel", "xpcsviewer.gui.panels.g2pixel:G2PixelPanel"),
    ("average", "xpcsviewer.gui.panels.average:AveragePanel"),
    ("qmap", "xpcsviewer.gui.panels.qmap:QMapPanel"),
    ("detector", "xpcsviewer.gui.panels.detector:DetectorPanel"),
    ("metadata", "xpcsviewer.gui.panels.metadata:MetadataPanel"),
    ("live", "xpcsviewer.gui.panels.live:LivePanel"),
    ("raw", "xpcsviewer.gui.panels.raw:RawPanel"),
    ("series", "xpcsviewer.gui.panels.series:SeriesPanel"),
]


def panel_names() -> list[str]:
    """Registry names in tab order."""
    return [n for n, _ in PANELS]


def load_panel_class(name: str) -> type:
    """Import and return the panel class registered as ``name``.

    Raises
    ------
    KeyError
        Unknown name.
    ImportError, AttributeError
        The module or class is missing (the window shows a placeholder tab).
    """
    spec = dict(PANELS)[name]
    module, cls = spec.split(":")
    return getattr(importlib.import_module(module), cls)
