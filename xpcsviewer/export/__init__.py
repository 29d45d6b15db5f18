"""Matplotlib figures and tables for export (Agg, no Qt).

``make_figure(kind, results, size=None, **options)`` builds the publication figure of
any view (kinds in :data:`FIGURE_KINDS`; ``size`` a page of :data:`SIZE_PRESETS`),
``make_figures`` all its pages, ``save_figure(fig, path)`` writes PNG/SVG/PDF
atomically (TrueType fonts in PDF, text as text in SVG), ``write_csv`` /
``write_json`` write tables atomically. The data
preparation shared with the GUI lives in :mod:`xpcsviewer.views`; the fits drawn come
from :mod:`xpcsviewer.fitting` (:class:`~xpcsviewer.fitting.fit_table.G2Fits`).
"""

from xpcsviewer.export.figures import (
    FIGURE_KINDS,
    SIZE_PRESETS,
    make_figure,
    make_figures,
    new_figure,
)
from xpcsviewer.export.files import atomic_write, save_figure, write_csv, write_json

__all__ = [
    "FIGURE_KINDS",
    "SIZE_PRESETS",
    "atomic_write",
    "make_figure",
    "make_figures",
    "new_figure",
    "save_figure",
    "write_csv",
    "write_json",
]
