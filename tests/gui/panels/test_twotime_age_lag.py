"""Issue 35: a result file with a multi-tau two-time age x lag map and no full map
(``correlate --mode multitau --twotime-ages``): the Two-Time tab shows the map's bins,
the age x lag map where the full map goes, the ages analysed from it, and the exported
figures draw the same panels."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtWidgets import QGraphicsPolygonItem

from xpcsviewer.gui.context import AppContext
from xpcsviewer.gui.panels.twotime import TwotimePanel
from xpcsviewer.gui.workers import TaskRunner
from xpcsviewer.views.age_lag_map import AgeLagImage


@pytest.fixture(scope="module")
def results(age_lag_only_file):
    """The session's file with only an age x lag map (tests/conftest.py: 300 frames,
    ``--twotime-ages``); bins 2 and 3 decay within the run, so their cuts converge."""
    from xpcsviewer.io import read_result

    res = read_result(age_lag_only_file)
    assert res.twotime is None and res.age_lag is not None
    return [res]


@pytest.fixture
def panel(qtbot):
    ctx = AppContext(runner=TaskRunner())
    p = TwotimePanel(ctx)
    qtbot.addWidget(p)
    p.resize(1400, 900)
    p.show()
    yield p
    p.cancel_jobs()
    ctx.runner.wait_for_done(20000)


def _bin3(qtbot, panel, results):
    """Open the file and show bin 3 (its map and its ages)."""
    with qtbot.waitSignals([panel.sigMapShown, panel.ages.sigAgesShown], timeout=120000):
        panel.set_results(results)
    with qtbot.waitSignals([panel.sigMapShown, panel.ages.sigAgesShown], timeout=120000):
        panel.set_bin_index(2)
    return panel.ages.outcome


def test_the_file_reads_with_its_map_extent(results):
    info = results[0].age_lag
    assert info.bins.tolist() == [1, 2, 3]
    assert info.n_frames == 300 and info.frame_time == pytest.approx(0.01)


def test_the_tab_shows_the_age_lag_map_and_its_ages(qtbot, panel, results):
    from xpcsviewer.io.results.age_lag import read_age_lag
    from xpcsviewer.views.age_lag_map import age_lag_bands, age_lag_image

    assert panel.applies_to(results) is None
    o = _bin3(qtbot, panel, results)
    combo = panel.bin_combo
    assert [combo.itemData(i) for i in range(combo.count())] == [1, 2, 3]
    # the ages, from the age x lag map, with finite tau drawn
    assert o.source == "age x lag map" and o.request.dq == 3 and o.cuts.windows.n == 5
    assert np.isfinite(o.fits.tau[0, :, 0]).sum() >= 3
    tau = np.array(panel.ages.drawn_points()["tau"])
    assert len(tau) >= 3 and np.all(np.isfinite(tau)) and np.all(tau[:, 1] > 0)
    assert "from the age x lag map" in panel.ages.status.text()
    # the map area: C(age, lag) of bin 3, log lag axis, titled as such
    img = panel.view
    assert isinstance(img, AgeLagImage) and img.dq == 3
    ref = age_lag_image(read_age_lag(results[0].path, [3]), 0)
    np.testing.assert_array_equal(panel.c2_img.image, ref.c)
    assert "age \u00d7 lag map, bin 3" in panel.c2_plot.titleLabel.text
    assert panel.c2_plot.getAxis("left").logMode
    assert "lag" in panel.c2_plot.getAxis("left").labelText
    assert "age" in panel.c2_plot.getAxis("bottom").labelText
    r = panel.c2_img.mapRectToParent(panel.c2_img.boundingRect())
    assert r.left() == pytest.approx(img.age_edges[0])
    assert r.right() == pytest.approx(img.age_edges[-1])
    assert r.top() == pytest.approx(np.log10(img.lag_edges[0]))
    assert r.bottom() == pytest.approx(np.log10(img.lag_edges[-1]))
    assert "no full two-time map" in panel.status.text()
    # the age windows on it (age x log10 lag)
    items = [it for it in panel.c2_plot.items if isinstance(it, QGraphicsPolygonItem)]
    assert len(items) == 5
    band = age_lag_bands(o.cuts.windows.lo, o.cuts.windows.hi, img.t_end,
                         img.lag_edges[0], img.lag_edges[-1], "age")[1]
    np.testing.assert_allclose([(p.x(), p.y()) for p in items[1].polygon()],
                               np.column_stack([band.polygon[:, 0],
                                                np.log10(band.polygon[:, 1])]))
    # g2 of the map over all ages beside it
    (curve,) = panel.g2_plot.listDataItems()
    np.testing.assert_allclose(curve.xData, img.lags[np.isfinite(img.g2)])


def _texts(fig) -> str:
    return " ".join(t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")))


def _check_ages_figure(fig) -> None:
    from matplotlib.collections import QuadMesh

    assert "no two-time analysis" not in _texts(fig)
    ax_map, ax_tau, ax_age, ax_t1 = fig.axes[:4]
    assert any(isinstance(c, QuadMesh) for c in ax_map.collections)
    assert ax_map.get_yscale() == "log" and "age \u00d7 lag map" in ax_map.get_title()
    assert len(ax_map.patches) == 10  # five windows: fill and edge
    assert ax_tau.get_lines() and ax_age.get_lines() and ax_t1.get_lines()


def test_the_exported_figures_draw_the_age_lag_map(results):
    from matplotlib.collections import QuadMesh

    from xpcsviewer.export import make_figure
    from xpcsviewer.jobs.ages_bin import bin_request, run_ages

    # the figure draws what it is handed (ADR-8): the analysis runs first
    ages = run_ages(bin_request(results[0], 2))
    _check_ages_figure(make_figure("ages", results, bin_index=2, ages=ages))
    fig = make_figure("twotime", results, bin_index=2)
    assert "no two-time analysis" not in _texts(fig)
    assert any(isinstance(c, QuadMesh) for c in fig.axes[0].collections)
    assert "age \u00d7 lag map, bin 3" in fig.axes[0].get_title()
    assert fig.axes[-1].get_lines()  # g2 of the map over all ages


def test_export_command_draws_it(results, tmp_path):
    from xpcsviewer.cli import main

    for kind in ("ages", "twotime"):
        assert main(["export", str(results[0].path), "--plot", kind, "-o", str(tmp_path),
                     "--quiet"]) == 0
        assert (tmp_path / f"A001_{kind}.png").stat().st_size > 0


def test_the_tabs_figures_and_csv(qtbot, panel, results):
    from xpcsviewer.export import make_figure

    _bin3(qtbot, panel, results)
    assert panel.figure_kind == "ages"
    _check_ages_figure(make_figure("ages", panel.shown_results(), "double",
                                   **panel.figure_options()))
    # the tab without ages: the map and g2 over all ages, figure and CSV
    panel.ages.ages_check.setChecked(False)
    assert panel.figure_kind == "twotime"
    fig = make_figure("twotime", panel.shown_results(), **panel.figure_options())
    assert "no two-time analysis" not in _texts(fig)
    assert "age \u00d7 lag map, bin 3" in fig.axes[0].get_title()
    img = panel.view
    line = fig.axes[-1].get_lines()[0]
    np.testing.assert_allclose(line.get_xdata(), img.lags[np.isfinite(img.g2)])
    cols, _header = panel.data_columns()
    np.testing.assert_allclose(cols["g2_all_ages"], img.g2)


def test_a_file_with_neither_map_says_so(panel, results):
    from xpcsviewer.export import make_figure

    bare = [dataclasses.replace(results[0], age_lag=None)]
    assert panel.applies_to(bare) == "No two-time analysis in the selected files"
    for kind in ("ages", "twotime"):
        fig = make_figure(kind, bare)
        assert "no two-time analysis in the file" in fig.axes[0].texts[0].get_text()


def test_the_tab_takes_tau_errors_from_the_age_lag_group_maps(qtbot, panel, small_movie,
                                                               tmp_path):
    # correlate --twotime-ages --twotime-groups K: the tab's ages read the groups' age x
    # lag maps for their tau errors and say so, as for full maps' groups
    from xpcsviewer.cli import main
    from xpcsviewer.io import read_result

    _qm, qpath, _movie, npy = small_movie(tmp_path, 300, 0.5)
    out = tmp_path / "G002_results.hdf"
    assert main(["correlate", str(npy), "--qmap", str(qpath), "-o", str(out),
                 "--twotime-ages", "--twotime-groups", "6", "--group-tile", "4",
                 "--frame-time", "0.01", "--quiet"]) == 0
    o = _bin3(qtbot, panel, [read_result(out)])
    assert o.fits.tau_err_source == "pixel groups (6)"
    panel.ages.quantity.setCurrentIndex(0)
    assert "pixel groups (6)" in panel.ages.law_label.text()
