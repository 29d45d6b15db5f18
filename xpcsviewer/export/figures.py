"""Publication figures of every view, built with matplotlib's object API on Agg.

``make_figure(kind, results, **options)`` returns a ``matplotlib.figure.Figure``
(never registered with pyplot, so it is safe in worker threads); save it with
:func:`xpcsviewer.export.save_figure`. The data preparation comes from
:mod:`xpcsviewer.views` (the shown g2 curves from :mod:`xpcsviewer.fitting.blocks`), which
the GUI tabs also use, so the figure matches the screen. A figure draws what it is
handed (ADR-8): the fits, the D(q) analysis, the ages, the snapshot fits and the
averaging screen are computed before it, by the tab, the command or the report.

Kinds and their options
-----------------------
``saxs2d``
    file_index=0, image=None ((H, W) array; default ``io.read_saxs_2d``), log=True,
    cmap="viridis", levels=None ((lo, hi); default 0.5-99.5 percentile), beam_center=True.
``saxs1d``
    phi_lines=False, norm="none" ("iq2", "iq4", "i0"), qmin, qmax, log_x=True,
    log_y=True, background=None (XpcsResult), bkg_weight=1.0, sampling=1, legend=True.
``stability``
    file_index=0, qmin, qmax, log_x=True, log_y=True, threshold=0.05.
``intensity``
    window=1 (moving average), time_axis=True, fft=False, sampling=1.
``g2``
    layout="qbin" ("file", "combined"), qmin, qmax, tmin, tmax, max_bins=None,
    errorbars=True, offset=0.0 (per file in "qbin"/"combined", per bin in "file"),
    log_x=True, ncols=None (4; a preset's own), fits=None (G2Fits), band=True,
    legend=True (files and, below them, a key of the fit line styles drawn),
    ylim=None (default: 2-98 percentile of the points, padded),
    max_panels=36 (more panels are left out; the title says so), page=0,
    per_page=None (all panels; under a size preset 6, 12 or 8 per page).
``diffusion``
    analysis (DiffusionAnalysis of :func:`xpcsviewer.views.diffusion.diffusion_analysis`,
    which holds the quantity, q range and exponent; None: "no g2 fits"), log_x=True,
    log_y=True, offset=0.0 (factor 10^(offset*n) per file), show_fit=True.
``twotime``
    file_index=0, bin_index=0 (index into the processed bins), max_size=1024,
    correct_diagonal=False, cmap="viridis", levels=None, view=None (a C2View-like object
    with ``c2``, ``t0``, ``label``; default ``io.read_c2``), g2=True.
``ages``
    file_index=0, bin_index=0, ages (required: an AgesOutcome of
    :func:`xpcsviewer.jobs.ages_bin.run_ages`, as the Two-Time tab and
    ``xpcsviewer export`` hand it, or the report's of every bin), bands="age" ("t1",
    "both"), law="linear" ("power": the law drawn; both are in the outcome),
    quantity="tau" ("contrast", "stretch": of the converged cuts, against age), and the
    map's max_size, correct_diagonal, cmap, levels, view as for ``twotime``.
``qmap``
    file_index=0, which="both" ("dynamic", "static").
``g2stability``
    file_index=0, bin_index=0 (g2 column), threshold=10.0 (% drift flagged),
    errorbars=True, legend=True, fit (required for a file with partial g2 snapshots:
    the StabilityFit of its snapshots, :func:`xpcsviewer.jobs.figure_inputs.stability_fit`,
    as the g2 stability tab holds it).
``g2map``
    file_index=0, bin_index=0 (g2 column of the profile), normalize=False,
    cmap="viridis", levels=None ((lo, hi); default 1-99 percentile), profile=True.
``average``
    statistic="baseline" ("g2_z", "intensity_z", "intensity"), summary (required:
    the AverageSummary of a screening, e.g. :func:`xpcsviewer.jobs.figure_inputs.average_screen`,
    or the IncompatibleFilesError it returned, drawn as a note), options=None
    (AverageOptions; sets the threshold lines, else the summary's), max_names=24 (file
    names as tick labels up to this many files).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xpcsviewer.export._fig_ages import _fig_ages
from xpcsviewer.export._fig_common import (
    SIZE_PRESETS,
    current_preset,
    export_style,
    new_figure,
)
from xpcsviewer.export._fig_g2 import _fig_diffusion, _fig_g2
from xpcsviewer.export._fig_multi import (
    AVERAGE_STATISTICS,
    _fig_average,
    _fig_g2map,
    _fig_g2stability,
)
from xpcsviewer.export._fig_saxs import (
    _fig_intensity,
    _fig_qmap,
    _fig_saxs1d,
    _fig_saxs2d,
    _fig_stability,
)
from xpcsviewer.export._fig_twotime import _fig_twotime
from xpcsviewer.export._layout import tidy_figure

__all__ = [
    "AVERAGE_STATISTICS",
    "FIGURE_KINDS",
    "SIZE_PRESETS",
    "make_figure",
    "make_figures",
    "new_figure",
    "preload_plotting",
]

FIGURE_KINDS: dict[str, Callable[..., Any]] = {
    "saxs2d": _fig_saxs2d,
    "saxs1d": _fig_saxs1d,
    "stability": _fig_stability,
    "intensity": _fig_intensity,
    "g2": _fig_g2,
    "diffusion": _fig_diffusion,
    "twotime": _fig_twotime,
    "ages": _fig_ages,
    "qmap": _fig_qmap,
    "g2stability": _fig_g2stability,
    "g2map": _fig_g2map,
    "average": _fig_average,
}


def preload_plotting(progress=None, cancel=None) -> None:
    """Worker job at GUI start-up: import matplotlib (colour maps, the Agg canvas) so
    neither a colour map nor the first figure export imports it on the GUI thread
    (~0.5 s)."""
    import matplotlib
    import matplotlib.figure
    from matplotlib.backends import backend_agg  # noqa: F401

    matplotlib.colormaps["viridis"]  # the registry loads lazily


def make_figure(kind: str, results: list, size: str | None = None, *, tidy: bool = True,
                **options: Any) -> Any:
    """Build the publication figure of ``kind`` for ``results``.

    Parameters
    ----------
    kind : str
        One of :data:`FIGURE_KINDS` (see the module docstring for each kind's options).
    results : list of XpcsResult
    size : {"single", "double", "slide"} or None
        Page preset (:data:`SIZE_PRESETS`: 3.4 in, 7 in or 10 x 5.6 in wide, 8, 9 or
        14 pt text); None: the preset of an enclosing
        :func:`~xpcsviewer.export._fig_common.export_style`, else each figure's own
        size and 10 pt text. With a preset
        a g2 figure holds its first page only; :func:`make_figures` gives them all.
    tidy : bool
        False: the collision pass (:func:`~xpcsviewer.export._layout.tidy_figure`) is
        left to the caller, who draws the figure with
        :func:`~xpcsviewer.export._layout.tidy_drawn` (one drawing instead of two).
    **options
        Kind-specific options; unknown options raise ``TypeError``.

    Returns
    -------
    matplotlib.figure.Figure
        Not registered with pyplot; save with :func:`~xpcsviewer.export.save_figure`.
    """
    fn = FIGURE_KINDS.get(kind)
    if fn is None:
        raise ValueError(
            f"unknown figure kind {kind!r}; use one of {sorted(FIGURE_KINDS)}"
        )
    with export_style(size if size is not None else current_preset()):
        fig = fn(list(results), **options)
        if tidy:
            tidy_figure(fig)
    return fig


def make_figures(kind: str, results: list, size: str | None = None, *, tidy: bool = True,
                 **options: Any) -> list[Any]:
    """Every page of the figure of ``kind`` (one, but for a g2 figure of more panels
    than a page of the preset holds); see :func:`make_figure`.

    Save them with :func:`~xpcsviewer.export.save_figure` (one multi-page PDF, or
    numbered PNG/SVG files).
    """
    from xpcsviewer import export as xp  # looked up when called: wrappers see each page

    if not tidy:  # only then passed on: wrappers of make_figure need not know it
        options = {**options, "tidy": False}
    with export_style(size if size is not None else current_preset()):
        first = xp.make_figure(kind, results, **options)
        n = int(getattr(first, "xpcs_pages", 1))
        return [first] + [xp.make_figure(kind, results, page=k, **options)
                          for k in range(1, n)]
