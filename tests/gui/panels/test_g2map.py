"""g2 map tab: q-bin x log-delay image, invalid points masked, profile of one bin."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")

import pyqtgraph as pg

from xpcsviewer.gui.context import AppContext
from xpcsviewer.gui.panels.g2map import G2MapPanel, prepare_g2_map
from xpcsviewer.gui.workers import TaskRunner
from xpcsviewer.io import read_result


@pytest.fixture(scope="module")
def demo(demo_set_dir):
    return [read_result(p) for p in sorted(demo_set_dir.glob("*_results.hdf"))]


@pytest.fixture
def panel(qtbot):
    ctx = AppContext(runner=TaskRunner())
    p = G2MapPanel(ctx)
    qtbot.addWidget(p)
    p.resize(1200, 700)
    p.show()
    yield p
    p.cancel_jobs()
    ctx.runner.wait_for_done(10000)


def test_prepare_map_resamples_nearest_delay_and_masks():
    tau = np.array([1e-3, 2e-3, 4e-3, 8e-3])
    g2 = np.array([[1.3, 1.2], [1.2, 1.1], [1.1, 1.05], [1.0, 1.0]])
    valid = np.ones_like(g2, bool)
    valid[2, 1] = False
    m = prepare_g2_map(tau, g2, g2 * 0.01, valid, ["a", "b"], n_columns=40)
    assert m.image.shape == (2, 40)
    lo, hi = m.log_tau_range
    centres = lo + (np.arange(40) + 0.5) * (hi - lo) / 40
    # independent reference: nearest delay in log space
    nearest = np.argmin(np.abs(centres[:, None] - np.log10(tau)[None, :]), axis=1)
    ref = np.where(valid, g2, np.nan)[nearest].T
    np.testing.assert_array_equal(np.isnan(m.image), np.isnan(ref))
    np.testing.assert_array_equal(m.image[np.isfinite(ref)], ref[np.isfinite(ref)])
    assert np.isnan(m.image[1]).sum() == (nearest == 2).sum() > 0
    norm = prepare_g2_map(tau, g2, g2 * 0.01, valid, ["a", "b"], normalize=True)
    np.testing.assert_allclose(norm.image[:, 0], [1.25, 1.25])


def test_g2map_plots_demo_file(qtbot, panel, demo):
    with qtbot.waitSignal(panel.sigUpdated, timeout=15000):
        panel.set_results(demo)
    res = demo[0]
    d = panel.data
    assert d is not None and d.image.shape[0] == res.multitau.g2.shape[1]
    items = panel.plot_items()
    imgs = [it for it in items if isinstance(it, pg.ImageItem)]
    assert len(imgs) == 1 and imgs[0].image.shape == d.image.T.shape
    # the profile is the selected bin's valid points against log10(tau)
    with qtbot.waitSignal(panel.sigUpdated, timeout=5000):
        panel.bin_spin.setValue(3)
    x, y = panel.curve.getData()
    ok = res.multitau.valid[:, 3]
    np.testing.assert_allclose(10**x, res.multitau.tau[ok])
    np.testing.assert_allclose(y, res.multitau.g2[ok, 3])
    assert panel.bin_line.value() == pytest.approx(3.5)
    assert "q=" in panel.bin_label.text()
    cols, _header = panel.data_columns()
    np.testing.assert_allclose(cols["g2"], res.multitau.g2[ok, 3])
    # a q-map click elsewhere (1-based dynamic bin 6) selects column 5
    panel.context.sigSelectedBin.emit(6)
    assert panel.bin_spin.value() == 5
    x, _y = panel.curve.getData()
    assert len(x) == res.multitau.valid[:, 5].sum()


def test_g2map_not_applicable_without_multitau(panel, demo):
    twotime_only = [r for r in demo if r.multitau is None]
    assert panel.applies_to(twotime_only) == "No multitau g2 in these files"
    assert panel.applies_to(demo) is None


def test_export_figure_uses_the_selected_file_and_bin(qtbot, panel, demo, tmp_path):
    with qtbot.waitSignal(panel.sigUpdated, timeout=15000):
        panel.set_results(demo)
    with qtbot.waitSignal(panel.sigUpdated, timeout=15000):
        panel.set_current(1)
    with qtbot.waitSignal(panel.sigUpdated, timeout=5000):
        panel.bin_spin.setValue(3)
    assert panel.figure_kind == "g2map"
    assert panel.figure_options() == {
        "file_index": 1,
        "bin_index": 3,
        "normalize": False,
    }
    out = tmp_path / "x.png"
    with qtbot.waitSignal(panel.sigExported, timeout=60000) as blocker:
        assert panel.export_figure(out) is not None
    assert blocker.args == [str(out)]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["x.png"]
