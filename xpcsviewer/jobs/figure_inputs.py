"""Analyses the figures are handed, computed before them (ADR-8: a figure only draws).

The GUI's export actions, ``xpcsviewer export`` and the report call these, then pass
the result to :func:`~xpcsviewer.export.make_figure`: the averaging screen of loaded
files (the ``average`` figure's ``summary``) and the fits of a file's partial g2
snapshots (the ``g2stability`` figure's ``fit``). The D(q) analysis is
:func:`xpcsviewer.views.diffusion.diffusion_analysis` (the Diffusion tab's too), the
ages of a two-time bin :func:`xpcsviewer.jobs.ages_bin.run_ages`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["average_screen", "stability_fit"]


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


def stability_fit(res: Any, progress=None, cancel=None) -> Any:
    """Worker job: the single-exponential fits of every partial g2 snapshot and q-bin of
    one loaded result and the tau drift (the g2 stability tab's and the ``g2stability``
    figure's ``fit``); None when the file has no snapshots.

    Returns
    -------
    StabilityFit of :func:`xpcsviewer.fitting.stability.fit_partial_snapshots`, or None.
    """
    from xpcsviewer.fitting.stability import fit_partial_snapshots

    mt = res.multitau
    if mt is None or mt.g2_partial is None:
        return None
    return fit_partial_snapshots(
        np.asarray(mt.tau, dtype=np.float64),
        np.asarray(mt.g2_partial, dtype=np.float64),
        None if mt.g2_partial_err is None else np.asarray(mt.g2_partial_err, float),
        None if mt.g2_partial_labels is None else np.asarray(mt.g2_partial_labels),
        res.qmap.dynamic_labels(),
        progress=progress,
        cancel=cancel,
    )
