"""Issue 22 as a user walks it through the real window: a folder opens on g2 with a
target, a fit stays with its file, a new detector size is framed whole."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gui


def _wide_file(folder):
    from xpcsviewer.io.results.writer import write_result
    from xpcsviewer.synthetic.results import build_result

    spec = {"name": "W1",
            "geometry": {"shape": (150, 260), "bcx": 180.3, "bcy": 40.0, "det_dist_m": 5.0},
            "partition": {"dq_num": 8, "sq_num": 80, "dp_num": 1, "sp_num": 1},
            "acquisition": {"frame_time": 1e-4, "n_frames": 1000, "rate": 0.3},
            "sample": {"radius_m": 150e-9, "contrast": 0.2}, "analysis": ("Multitau",)}
    res, extras = build_result(spec, seed=3)
    path = folder / "W1_results.hdf"
    write_result(path, res, saxs_2d=extras["saxs_2d"])
    return path


def _fit_lines(g2):
    # the panels laid out now (the pool keeps removed ones for reuse)
    return [s for v in g2._views[: len(g2.panel_specs)] for s in v.slots
            if s.key is not None and s.fit.xData is not None and s.fit.xData.size]


def test_walk(window, demo_files, wait_idle, qtbot, tmp_path):
    # 6: a folder alone opens on g2 with its first file
    window.open_paths([str(demo_files[0].parent)])
    wait_idle(window, 60000)
    g2 = window.panels["g2"]
    assert window.current_panel() is g2 and len(g2.blocks) == 1
    # 1: a fit, then another target: the fit is not drawn on it, nor tabulated
    with qtbot.waitSignal(g2.sigFitsReady, timeout=60000):
        g2.fit_btn.click()
    wait_idle(window)
    assert len(_fit_lines(g2)) == g2.blocks[0].n_bins
    wide = _wide_file(tmp_path)
    window.browser.set_targets([str(wide)])
    wait_idle(window, 60000)
    assert [b.source for b in g2.blocks] == [str(wide)]
    assert _fit_lines(g2) == [] and g2.results_table.rowCount() == 0
    assert "not drawn" in g2.fit_status.text()
    # back to the fitted file: its own fit comes back
    window.browser.set_targets([str(demo_files[0])])
    wait_idle(window, 60000)
    assert len(_fit_lines(g2)) == g2.blocks[0].n_bins
    # 5: SAXS-2D frames the larger detector whole after a zoom on the small one
    window.select_tab("saxs2d")
    wait_idle(window)
    vb = window.panels["saxs2d"].plot.getViewBox()
    vb.setRange(xRange=(40, 60), yRange=(40, 60), padding=0)
    window.browser.set_targets([str(wide)])
    wait_idle(window, 60000)
    (x0, x1), (y0, y1) = vb.viewRange()
    assert x0 <= 0.5 and x1 >= 259.5 and y0 <= 0.5 and y1 >= 149.5
