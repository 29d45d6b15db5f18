"""Image tabs across files of other detector geometries (issue 22, parts 4 and 5).

The view frames a new geometry whole and keeps the user's zoom for the same one; no
per-file label, overlay or ROI of the last file passes for the next one's; the G2 tab
names the file whose stack it shows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytestqt")  # the headless run (no PySide6) skips this module

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

pytestmark = pytest.mark.gui

LEFT = Qt.MouseButton.LeftButton


def _synthetic(folder: Path, name: str, shape, bcx: float, bcy: float, seed: int = 0):
    """A small result file of its own detector shape and beam centre."""
    from xpcsviewer.io import read_result
    from xpcsviewer.io.results.writer import write_result
    from xpcsviewer.synthetic.results import build_result

    spec = {"name": name,
            "geometry": {"shape": shape, "bcx": bcx, "bcy": bcy, "det_dist_m": 5.0},
            "partition": {"dq_num": 8, "sq_num": 80, "dp_num": 1, "sp_num": 1},
            "acquisition": {"frame_time": 1e-4, "n_frames": 1000, "rate": 0.3},
            "sample": {"radius_m": 150e-9, "contrast": 0.2}, "analysis": ("Multitau",)}
    res, extras = build_result(spec, seed=seed)
    path = folder / f"{name}_results.hdf"
    write_result(path, res, saxs_2d=extras["saxs_2d"])
    return read_result(path)


@pytest.fixture
def three_files(demo_results, tmp_path):
    """A 128x128 demo file, then two 150x260 files of one geometry."""
    wide = [_synthetic(tmp_path, f"W{i}", (150, 260), 180.3, 40.0, seed=i) for i in (1, 2)]
    return [demo_results["A02"], *wide]


def _view(panel):
    return panel.view if panel.name == "detector" else panel.plot.getViewBox()


def _assert_framed(view, shape):
    (x0, x1), (y0, y1) = view.viewRange()
    h, w = shape
    assert x0 <= 0.5 and x1 >= w - 0.5 and y0 <= 0.5 and y1 >= h - 0.5, view.viewRange()
    # framed, not lost in a larger range: one axis spans about the image
    assert min((x1 - x0) / w, (y1 - y0) / h) < 1.2, view.viewRange()


@pytest.mark.parametrize("tab", ["saxs2d", "detector"])
def test_a_new_geometry_is_framed_whole_and_the_same_keeps_the_zoom(qtbot, sync_context,
                                                                    three_files, tab):
    from xpcsviewer.gui.panels.detector import DetectorPanel
    from xpcsviewer.gui.panels.saxs2d import Saxs2DPanel

    p = (Saxs2DPanel if tab == "saxs2d" else DetectorPanel)(sync_context)
    qtbot.addWidget(p)
    p.resize(1100, 800)
    p.show()
    small, wide1, wide2 = three_files
    p.set_results(three_files)
    view = _view(p)
    _assert_framed(view, small.qmap.shape)
    view.setRange(xRange=(40, 70), yRange=(40, 70), padding=0)  # the user zooms in
    # a larger detector: the whole of it (the limits left from 128x128 clipped it)
    p.set_current(1)
    assert p.data["path"] == str(wide1.path)
    _assert_framed(view, wide1.qmap.shape)
    # the same geometry keeps the zoom
    view.setRange(xRange=(100, 160), yRange=(20, 80), padding=0)
    zoom = np.array(view.viewRange())
    p.set_current(2)
    assert p.data["path"] == str(wide2.path)
    np.testing.assert_allclose(view.viewRange(), zoom, atol=1e-6)
    # back to the smaller one: framed on it, not on the last file's overlays
    p.set_current(0)
    _assert_framed(view, small.qmap.shape)


def test_detector_labels_never_speak_of_the_last_file(qtbot, demo_results):
    from xpcsviewer.gui.context import AppContext
    from xpcsviewer.gui.panels.detector import DetectorPanel

    ctx = AppContext()  # asynchronous: the next image arrives later
    p = DetectorPanel(ctx)
    qtbot.addWidget(p)
    p.resize(1100, 800)
    p.show()
    g01, a02 = demo_results["G01"], demo_results["A02"]
    with qtbot.waitSignal(p.sigUpdated, timeout=30000):
        p.set_results([g01, a02])
    assert ctx.runner.wait_until_idle(30000)
    p.mask_tools.add_polygon([(10, 10), (60, 12), (50, 60)])
    with qtbot.waitSignal(p.sigUpdated, timeout=30000):
        p.mask_tools.apply()
    assert ctx.runner.wait_until_idle(30000)
    n = p.history().n_masked
    assert n > 100 and f"{n:,} of" in p.mask_tools.status.text()
    assert p.preview is not None
    p.set_current(1)  # the image of A02 is still being read
    assert f"{n:,}" not in p.mask_tools.status.text()
    assert "Loading" in p.mask_tools.status.text()
    assert "Loading" in p.editor.summary.text()
    assert p.preview is None and p.mask_item.image is None
    with qtbot.waitSignal(p.sigUpdated, timeout=30000):
        pass
    assert ctx.runner.wait_until_idle(30000)
    assert p.data["path"] == str(a02.path)
    assert p.mask_tools.status.text().startswith("0 of")


def test_rois_stay_on_the_geometry_they_were_drawn_on(qtbot, sync_context, three_files):
    from xpcsviewer.gui.panels._sector_rois import SHARED_KEY
    from xpcsviewer.gui.panels.saxs1d import Saxs1DPanel
    from xpcsviewer.gui.panels.saxs2d import Saxs2DPanel

    small, wide1, wide2 = three_files
    s2, s1 = Saxs2DPanel(sync_context), Saxs1DPanel(sync_context)
    for w in (s2, s1):
        qtbot.addWidget(w)
        w.resize(1000, 750)
        w.show()
    status: list[str] = []
    sync_context.sigStatus.connect(status.append)
    s1.set_results([wide1, wide2])
    s2.set_results([wide1, wide2, small])
    QTest.mouseClick(s2.rois.add_wedge_btn, LEFT)
    qtbot.waitUntil(lambda: len(s2.rois.profiles) == 1, timeout=5000)
    assert sync_context.shared[SHARED_KEY].source == wide1.label
    assert len(s1.roi_curves.curves()) == 1
    # same geometry: carried, integrated on the new file
    s2.set_current(1)
    qtbot.waitUntil(lambda: sync_context.shared[SHARED_KEY].source == wide2.label,
                    timeout=5000)
    assert len(s2.rois.items) == 1
    # another detector: not carried, not integrated there, a word in the status line
    s2.set_current(2)
    assert s2.rois.items == [] and s2.rois.roi_combo.count() == 0
    assert sync_context.shared[SHARED_KEY].profiles == []
    assert s1.roi_curves.curves() == []
    assert any("ROIs of the 150x260 geometry not carried onto 128x128" in m for m in status)
    QTest.qWait(300)  # the debounced integration must not bring them back
    assert sync_context.shared[SHARED_KEY].profiles == []
    # back on their geometry they come back
    s2.set_current(0)
    assert len(s2.rois.items) == 1
    qtbot.waitUntil(lambda: sync_context.shared[SHARED_KEY].source == wide1.label,
                    timeout=5000)
    assert any("restored" in m for m in status)
    assert len(s1.roi_curves.curves()) == 1
    s1.set_results([wide2])  # SAXS-1D draws no ROI of a file it does not show
    assert s1.roi_curves.curves() == []


def test_rois_not_carried_to_another_beam_centre(qtbot, sync_context, tmp_path):
    from xpcsviewer.gui.panels.saxs2d import Saxs2DPanel

    a = _synthetic(tmp_path, "B1", (150, 260), 180.3, 40.0)
    b = _synthetic(tmp_path, "B2", (150, 260), 120.0, 60.0)
    s2 = Saxs2DPanel(sync_context)
    qtbot.addWidget(s2)
    s2.resize(1000, 750)
    s2.show()
    status: list[str] = []
    sync_context.sigStatus.connect(status.append)
    s2.set_results([a, b])
    s2.rois.add("ring")
    s2.set_current(1)
    assert s2.rois.items == []
    assert any("beam centre (180.3, 40)" in m and "not carried" in m for m in status)


def test_g2_tab_names_the_file_it_shows(qtbot, window, demo_files, open_demo, wait_idle,
                                       tmp_path):
    """C01 (no stack) before G01: the File box names G01, the file shown, at first
    entry, after Regroup, and with a target without a stack current."""
    open_demo(window, demo_files, ["C01", "G01"])
    c01, g01 = window.results
    assert not c01.multitau or not c01.multitau.has_unnormalized_G2
    assert window.current_index() == 0
    window.select_tab("g2pixel")
    wait_idle(window)
    gp = window.panels["g2pixel"]

    def names_g01():
        assert gp.plane["path"] == str(g01.path)
        assert gp.file_selector.currentText() == g01.label
        # only files with a stack are offered
        assert [gp.file_selector.itemText(i) for i in range(gp.file_selector.count())] == \
            [r.label for r in window.results
             if r.multitau is not None and r.multitau.has_unnormalized_G2]

    names_g01()
    assert f"{c01.label} has no per-pixel stack" in gp.status.text()
    gp.regroup_dir = str(tmp_path)
    with qtbot.waitSignal(window.sigTargetsLoaded, timeout=120000):
        QTest.mouseClick(gp.regroup_btn, LEFT)
    wait_idle(window)
    assert len(window.results) == 3
    names_g01()
    assert "Regrouped into" in gp.status.text()
    for row in (2, 1, 0):  # the regrouped file, G01, C01 current in turn
        window.browser.target_list.setCurrentRow(row)
        wait_idle(window)
        names_g01()


def test_a_drawn_mask_survives_a_restart(qtbot, demo_files, _config_dir, wait_idle,
                                         open_demo):
    """Issue 22 (10): the mask drawn in the Detector tab is kept in the config folder
    and put back at the next start, tied to its file's geometry."""
    import json

    from xpcsviewer.gui.main_window import MainWindow
    from xpcsviewer.gui.panels.detector import MASK_KEY
    from xpcsviewer.gui.session import drawn_mask_path

    win = MainWindow(restore_session=False, save_session_on_close=True)
    qtbot.addWidget(win)
    win.show()
    open_demo(win, demo_files, ["G01"])
    g01 = win.results[0]
    win.select_tab("detector")
    wait_idle(win)
    det = win.panels["detector"]
    det.mask_tools.add_polygon([(10, 10), (60, 12), (50, 60)])
    det.mask_tools.apply()
    wait_idle(win)
    drawn = det.history().current.copy()
    n = det.history().n_masked
    assert n > 100
    kept = drawn_mask_path(g01.path)
    assert kept.is_file()  # written by a worker after the change, not only at close
    det.kept.clear()  # as if that write had not finished: the close writes it
    kept.unlink()
    win.close()
    assert kept.is_file() and kept.parent == _config_dir / "masks"
    data = json.loads((_config_dir / "session.json").read_text())
    (entry,) = data["panels"]["detector"]["drawn_masks"]
    assert entry["file"] == str(g01.path) and entry["n_masked"] == n

    def start():
        w = MainWindow(restore_session=True, save_session_on_close=True)
        qtbot.addWidget(w)
        said: list[str] = []
        w.context.sigStatus.connect(said.append)
        w.show()
        wait_idle(w)
        qtbot.waitUntil(lambda: any("mask drawn on" in m for m in said), timeout=10000)
        wait_idle(w)
        return w, said

    win2, said = start()
    det2 = win2.panels["detector"]
    assert any(f"restored the mask drawn on {g01.label}" in m for m in said)
    np.testing.assert_array_equal(det2.history().current, drawn)
    assert win2.context.shared[MASK_KEY].n_masked == n  # what the G2 tab regroups with
    assert det2.history().can_undo  # undo gives back the file's own mask
    win2.close()
    # another beam centre in the session: the mask is not put on that geometry
    data = json.loads((_config_dir / "session.json").read_text())
    data["panels"]["detector"]["drawn_masks"][0]["beam_centre"][0] += 5.0
    (_config_dir / "session.json").write_text(json.dumps(data))
    win3, said = start()
    det3 = win3.panels["detector"]
    assert any("not restored: the file's geometry changed" in m for m in said)
    assert det3.history().n_masked == 0
    wait_idle(win3)
    assert not kept.exists()
    win3.shutdown()


def test_nothing_drawn_leaves_no_mask_file(qtbot, sync_context, demo_results):
    from xpcsviewer.gui.panels.detector import DetectorPanel
    from xpcsviewer.gui.session import drawn_mask_path

    g01 = demo_results["G01"]
    p = DetectorPanel(sync_context)
    qtbot.addWidget(p)
    p.resize(1000, 700)
    p.show()
    p.set_results([g01])
    p.mask_tools.add_polygon([(10, 10), (60, 12), (50, 60)])
    p.mask_tools.apply()
    kept = drawn_mask_path(g01.path)
    assert kept.is_file() and p.get_settings()["drawn_masks"]
    QTest.mouseClick(p.mask_tools.reset_btn, LEFT)  # back to the file's own mask
    assert not kept.exists() and p.get_settings()["drawn_masks"] == []
    p.persist()
    assert not kept.exists()
