"""Matplotlib figures and tables for export (Agg, no Qt).

``make_figure(kind, results, **options)`` builds the publication figure of any view
(kinds in :data:`FIGURE_KINDS`), ``save_figure(fig, path)`` writes PNG/SVG/PDF
atomically, ``write_csv`` / ``write_json`` write tables atomically. The data
preparation shared with the GUI lives in :mod:`xpcsviewer.export.g2_data` and
:mod:`xpcsviewer.views`.
"""

from xpcsviewer.export.figures import FIGURE_KINDS, make_figure, new_figure
from xpcsviewer.export.files import atomic_write, save_figure, write_csv, write_json
from xpcsviewer.export.g2_data import (
    G2Block,
    G2Fits,
    diffusion_points,
    fits_table,
    fits_to_dict,
    g2_blocks,
    g2_data_columns,
)

__all__ = [
    "FIGURE_KINDS",
    "G2Block",
    "G2Fits",
    "atomic_write",
    "diffusion_points",
    "fits_table",
    "fits_to_dict",
    "g2_blocks",
    "g2_data_columns",
    "make_figure",
    "new_figure",
    "save_figure",
    "write_csv",
    "write_json",
]
