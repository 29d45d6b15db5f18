"""Issue 33: the Series tab and its exported figure draw one rule
(:func:`xpcsviewer.views.series.series_drawing`): the same (x, tau) per marker kind,
no tau of a poor, flat or failed fit, 95 % limits as triangles, and a "not drawn" note.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from xpcsviewer.fitting.vocabulary import ROUGH_STATUSES

#: Statuses whose tau must never be drawn.
MEANINGLESS = ("misfit", "poor_fit", "no_decay", "failed")


def _key(kind: str, x, y) -> list[tuple]:
    return [(kind, round(float(a), 6), round(float(np.log10(b)), 9))
            for a, b in zip(x, y, strict=True)]


def _tab_points(panel) -> Counter:
    """(kind, x, log10 tau) of every tau marker the tab drew."""
    out: Counter = Counter()
    for it in panel.tau_plot.listDataItems():
        sym, brush = it.opts.get("symbol"), it.opts.get("symbolBrush")
        if it.xData is None or not len(it.xData) or sym is None:
            continue
        kind = {"t1": "limit_up", "t": "limit_down"}.get(
            sym, "filled" if brush is not None else "open")
        out.update(_key(kind, it.xData, it.yData))
    return out


def _figure_points(ax) -> Counter:
    """(kind, x, log10 tau) of every tau marker of the figure's tau axes."""
    out: Counter = Counter()
    for ln in ax.get_lines():
        mk = ln.get_marker()
        if mk not in ("o", "^", "v") or not len(ln.get_xdata()):
            continue
        if mk == "o":
            kind = "open" if str(ln.get_markerfacecolor()) == "none" else "filled"
        else:
            kind = "limit_up" if mk == "^" else "limit_down"
        out.update(_key(kind, ln.get_xdata(), ln.get_ydata()))
    return out


def _table_points(table, bins, statuses) -> set[tuple]:
    """(x, log10 tau) of the bins' fits of ``statuses`` (their tau and both limits)."""
    out = set()
    for b in bins:
        x, tau, _, st = table.curve(b, "tau_s")
        for name in ("tau_s", "tau_lower_limit_s", "tau_upper_limit_s"):
            y = tau if name == "tau_s" else table.curve(b, name)[1]
            for xi, yi, s in zip(x, y, st, strict=True):
                if s in statuses and np.isfinite(xi) and np.isfinite(yi) and yi > 0:
                    out.add((round(float(xi), 6), round(float(np.log10(yi)), 9)))
    return out


def _tab_and_figure(qtbot, paths, x, tmp_path):
    """Fit ``paths`` as the tab does (its worker job, its table), draw every bin in the
    tab, export the figure of the same bins; (panel, figure)."""
    from PySide6.QtCore import Qt

    from xpcsviewer.export.series import series_figure
    from xpcsviewer.gui.context import AppContext
    from xpcsviewer.gui.panels._live_jobs import fit_series_job
    from xpcsviewer.gui.panels.series import SeriesPanel, export_series_figure_job
    from xpcsviewer.gui.workers import TaskRunner

    panel = SeriesPanel(AppContext(TaskRunner(synchronous=True)))
    qtbot.addWidget(panel)
    panel.x_combo.setCurrentIndex(panel.x_combo.findData(x))
    panel.extra_paths = [str(p) for p in paths]
    panel._on_fits(fit_series_job(panel.extra_paths, x, "auto"), {})
    panel.bin_list.selectAll()
    bins = panel.chosen_bins()
    assert bins == panel.table.bin_numbers() and len(panel.table.files) == len(paths)
    assert panel.bin_list.item(0).data(Qt.ItemDataRole.UserRole) == bins[0]
    fig = series_figure(panel.table, bins, log_x=panel.logx.isChecked())
    png = tmp_path / "series.png"
    assert export_series_figure_job(panel.table, bins, str(png)) == str(png)
    assert png.stat().st_size > 10_000
    return panel, fig, bins


def _check_same_drawing(panel, fig, bins) -> Counter:
    ax_t = fig.axes[0]
    tab, figure = _tab_points(panel), _figure_points(ax_t)
    assert tab == figure
    # no tau (nor limit) of a meaningless fit is drawn; every drawn point is a measured one
    bad = _table_points(panel.table, bins, MEANINGLESS)
    drawn = {(x, y) for _, x, y in figure}
    assert not drawn & bad
    assert drawn <= _table_points(panel.table, bins, ("converged", *ROUGH_STATUSES))
    # both say what they left out, in the same words
    from xpcsviewer.views.series import not_drawn_text, series_drawing

    note = not_drawn_text(series_drawing(panel.table, bins))
    assert note.startswith("not drawn: ")
    assert note in ax_t.get_title() and note in panel.status.text()
    return Counter(k for k, _, _ in figure)


@pytest.mark.realdata
def test_b0147_tab_and_figure_draw_the_same_points(real_data_dir, qtbot, tmp_path):
    files = sorted((real_data_dir / "aps8idi_llps_saxpcs").glob("Average_B0147_*_results.hdf"))
    if len(files) != 10:
        pytest.skip("the ten B0147 files are not present")
    panel, fig, bins = _tab_and_figure(qtbot, files, "start_time", tmp_path)
    kinds = _check_same_drawing(panel, fig, bins)
    # converged points and the 95 % lower limits as triangles; since issue 48 an
    # unresolved tau without a limit is no point at all (only at_bound ones are open)
    assert kinds["filled"] > 0 and kinds["limit_up"] > 0
    assert "no decay" in fig.axes[0].get_title() or "errors understated" in \
        fig.axes[0].get_title()


def test_demo_series_tab_and_figure_draw_the_same_points(demo_set_dir, qtbot, tmp_path):
    files = [p for p in sorted(demo_set_dir.glob("*_results.hdf"))
             if not p.name.startswith(("C01", "C02"))]  # two-time only: nothing to fit
    panel, fig, bins = _tab_and_figure(qtbot, files, "index", tmp_path)
    kinds = _check_same_drawing(panel, fig, bins)
    assert kinds["filled"] > 0 and kinds["limit_up"] + kinds["limit_down"] > 0
