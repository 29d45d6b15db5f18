"""Two-Time tab: strided map in a worker, time axes in seconds, bin pick by click, clamping."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QPointF, Qt

from xpcsviewer.gui.context import AppContext
from xpcsviewer.gui.panels.twotime import TwotimePanel
from xpcsviewer.gui.workers import TaskRunner

_FAKE = Path(__file__).resolve().parents[2] / "export" / "fake_results.py"


@pytest.fixture(scope="module")
def fake():
    spec = importlib.util.spec_from_file_location("xpcs_test_fake_results_tt", _FAKE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def results(tmp_path_factory, fake):
    """Written with the real writer and read back with the real reader."""
    from xpcsviewer.io import read_result

    d = tmp_path_factory.mktemp("ttpanel")
    fake.make_result(d / "D001_results.hdf", seed=1, kind="both", n_c2=150)
    fake.make_result(d / "D002_results.hdf", seed=2, kind="multitau")
    return [read_result(d / "D001_results.hdf"), read_result(d / "D002_results.hdf")]


@pytest.fixture
def panel(qtbot):
    ctx = AppContext(runner=TaskRunner())
    p = TwotimePanel(ctx)
    qtbot.addWidget(p)
    p.resize(1400, 600)
    p.show()
    yield p
    p.cancel_jobs()
    ctx.runner.wait_for_done(10000)


def _load(qtbot, panel, results):
    with qtbot.waitSignal(panel.sigMapShown, timeout=20000):
        panel.set_results(results)


def test_map_strided_with_time_axes(qtbot, panel, results):
    panel.max_size.setValue(64)  # 150 frames -> stride 3 -> 50 x 50
    _load(qtbot, panel, results)
    tt = results[0].twotime
    img = panel.c2_img.image
    assert img.shape == (50, 50)
    assert panel.view.stride == 3
    step = 3 * tt.t0
    rect = panel.c2_img.mapRectToParent(panel.c2_img.boundingRect())
    assert rect.width() == pytest.approx(50 * step)
    assert rect.left() == pytest.approx(-step / 2)
    # Auto levels: the 0.5-99.5 percentile of the shown map.
    lo, hi = np.percentile(img, [0.5, 99.5])
    assert panel.levels() == pytest.approx((lo, hi))
    # g2 from C2 beside it: full + 5 segments, delays k >= 1 in seconds.
    curves = list(panel.g2_plot.listDataItems())
    assert len(curves) == 6
    full = next(c for c in curves if c.name() == "full")
    np.testing.assert_allclose(full.xData, np.arange(1, tt.n_frames) * tt.t0)
    # Only the two-time file is offered.
    assert panel.file_sel.count() == 1


def test_manual_levels_and_diagonal(qtbot, panel, results, wait_idle):
    _load(qtbot, panel, results)
    raw = np.array(panel.c2_img.image)
    panel.auto_check.setChecked(False)
    panel.vmin.setValue(1.0)
    panel.vmax.setValue(1.3)
    assert panel.levels() == (1.0, 1.3)
    with qtbot.waitSignal(panel.sigMapShown, timeout=20000):
        panel.diag_check.setChecked(True)
    c = panel.c2_img.image
    # Corrected diagonal = mean of the off-diagonal neighbours (interior points).
    i = np.arange(1, c.shape[0] - 1)
    np.testing.assert_allclose(
        c[i, i], 0.5 * (raw[i, i + 1] + raw[i - 1, i]), rtol=1e-12
    )
    wait_idle(panel.context.runner, 120000)  # the ages of the shown bin, in the background


def test_click_on_qmap_picks_bin(qtbot, panel, results):
    _load(qtbot, panel, results)
    assert panel.bin_combo.currentData() == 1
    roi = results[0].qmap.dynamic_roi_map
    rows, cols = np.nonzero(roi == 5)
    r, c = int(rows[len(rows) // 2]), int(cols[len(cols) // 2])
    panel.picker_plot.autoRange()
    qtbot.wait(50)
    scene_pt = panel.picker_img.mapToScene(QPointF(c + 0.5, r + 0.5))
    view_pt = panel.picker.mapFromScene(scene_pt)
    with qtbot.waitSignal(panel.sigMapShown, timeout=20000):
        qtbot.mouseClick(
            panel.picker.viewport(), Qt.MouseButton.LeftButton, pos=view_pt
        )
    assert panel.bin_combo.currentData() == 5
    assert panel.view.dq_bin == 5
    # The highlight leaves exactly the chosen bin's pixels undimmed.
    hl = panel.highlight.image
    np.testing.assert_array_equal(hl[..., 3] == 0, roi == 5)
    # A bin without a two-time map is refused, the selection stays.
    rows2, cols2 = np.nonzero(roi == 2)
    assert not panel.pick_at(rows2[0], cols2[0])
    assert panel.bin_combo.currentData() == 5


def test_bin_index_remembered_and_clamped(qtbot, panel, results, fake, tmp_path):
    from xpcsviewer.io import read_result

    _load(qtbot, panel, results)
    with qtbot.waitSignal(panel.sigMapShown, timeout=20000):
        panel.set_bin_index(2)
    # A file with fewer processed bins: the remembered index is clamped, no crash.
    res = fake.make_result(
        tmp_path / "E001_results.hdf", seed=5, kind="twotime", n_c2=60
    )
    small = read_result(res.path)
    assert len(small.twotime.processed_bins) == 3
    with qtbot.waitSignal(panel.sigMapShown, timeout=20000):
        panel.set_results([small])
    assert panel.bin_combo.currentIndex() == 2
    panel._bin_index = 7  # as restored from an old session
    with qtbot.waitSignal(panel.sigMapShown, timeout=20000):
        panel.set_results(results)
    assert panel.bin_combo.currentIndex() == 2


def test_export_figure_and_data(qtbot, panel, results, tmp_path):
    _load(qtbot, panel, results)
    with qtbot.waitSignal(panel.sigExported, timeout=30000):
        panel.export_figure(str(tmp_path / "tt.svg"))
    assert b"<svg" in (tmp_path / "tt.svg").read_bytes()[:2000]
    with qtbot.waitSignal(panel.sigExported, timeout=10000):
        panel.export_data(str(tmp_path / "tt.csv"))
    assert (tmp_path / "tt.csv").read_text().count("\n") > 100


def test_demo_twotime_files(qtbot, panel, demo_set_dir):
    from xpcsviewer.io import read_result

    res = [read_result(p) for p in sorted(demo_set_dir.glob("*_results.hdf"))]
    tt_files = [r for r in res if r.twotime is not None]
    assert tt_files
    panel.max_size.setValue(256)
    with qtbot.waitSignal(panel.sigMapShown, timeout=30000):
        panel.set_results(res)
    first = tt_files[0].twotime
    m = panel.c2_img.image.shape[0]
    assert m <= 256 and m == -(-first.n_frames // panel.view.stride)
    # Time axis: the per-analysis step times the stride, in seconds.
    assert panel.view.t0 == pytest.approx(first.t0 * panel.view.stride)
    assert panel.file_sel.count() == len(tt_files)


def test_follows_up_down_in_the_target_list(window, demo_files, open_demo, wait_idle):
    """Stepping through the targets steps through the two-time maps (A01 has none)."""
    open_demo(window, demo_files, names=["A01", "C01", "D01"])
    window.select_tab("twotime")
    wait_idle(window, 60000)
    panel = window.panels["twotime"]
    rows = {Path(p).name.split("_")[0]: k for k, p in enumerate(window.browser.target_paths())}
    seen = []
    for name in ("D01", "A01", "C01", "D01"):
        window.browser.target_list.setCurrentRow(rows[name])
        wait_idle(window, 60000)
        seen.append(panel.current().label.split("_")[0])
        assert panel.file_sel.currentIndex() == panel._file_index
    assert seen == ["D01", "D01", "C01", "D01"]
