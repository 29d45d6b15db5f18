"""Matplotlib figures and tables for export (Agg, no Qt).

``make_figure(kind, results, size=None, **options)`` builds the publication figure of
any view (kinds in :data:`FIGURE_KINDS`; ``size`` a page of :data:`SIZE_PRESETS`),
``make_figures`` all its pages, ``save_figure(fig, path)`` writes PNG/SVG/PDF
atomically (TrueType fonts in PDF, text as text in SVG; pages as one set, the stale
pages of an earlier export removed), ``write_csv`` / ``write_json`` write tables
atomically. The data
preparation shared with the GUI lives in :mod:`xpcsviewer.views`. A figure draws what it
is handed (ADR-8): the fits (:class:`~xpcsviewer.fitting.fit_table.G2Fits`), the D(q)
analysis, the ages and the screens are computed before it (:mod:`xpcsviewer.jobs.ages_bin`,
:mod:`xpcsviewer.jobs.figure_inputs`); nothing here runs a job, a fit or array code.
"""

from xpcsviewer.export.figures import (
    FIGURE_KINDS,
    SIZE_PRESETS,
    make_figure,
    make_figures,
    new_figure,
)
from xpcsviewer.export.files import (
    atomic_write,
    figure_files,
    save_figure,
    save_figure_pages,
    write_csv,
    write_json,
)

__all__ = [
    "FIGURE_KINDS",
    "SIZE_PRESETS",
    "atomic_write",
    "figure_files",
    "make_figure",
    "make_figures",
    "new_figure",
    "save_figure",
    "save_figure_pages",
    "write_csv",
    "write_json",
]
