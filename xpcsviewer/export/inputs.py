"""Analyses the figures are handed, computed before them (ADR-8: a figure only draws).

The GUI's export actions and ``xpcsviewer export`` call these, then pass the result
to :func:`~xpcsviewer.export.make_figure`. The D(q) analysis is
:func:`xpcsviewer.views.diffusion.diffusion_analysis` (the Diffusion tab's too).
"""

from __future__ import annotations

from typing import Any

__all__ = ["average_screen"]


def average_screen(results: list, options: Any = None) -> Any:
    """The averaging screen of loaded ``results`` (nothing is read again), for the
    ``average`` figure.

    Parameters
    ----------
    results : list of XpcsResult
    options : AverageOptions, optional

    Returns
    -------
    AverageSummary, or the IncompatibleFilesError the screening raised (the figure
    draws it as a note).
    """
    from xpcsviewer.jobs.average import AverageOptions, IncompatibleFilesError, screen_files

    if not results:
        raise ValueError("no result files given")
    by_path = {str(r.path): r for r in results}
    try:
        return screen_files(
            [str(r.path) for r in results],
            options if options is not None else AverageOptions(),
            reader=lambda p: by_path[str(p)],
        )
    except IncompatibleFilesError as exc:
        return exc
