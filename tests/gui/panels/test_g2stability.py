"""g2 stability tab: snapshots by frames, tau drift, disabled without partials."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")

import pyqtgraph as pg

from xpcsviewer.gui.context import AppContext
from xpcsviewer.gui.panels.g2stability import (
    G2StabilityPanel,
    fit_partial_snapshots,
)
from xpcsviewer.gui.workers import TaskRunner
from xpcsviewer.io import read_result


@pytest.fixture(scope="module")
def demo(demo_set_dir):
    return {p.name.split("_")[0]: read_result(p)
            for p in sorted(demo_set_dir.glob("*_results.hdf"))}


@pytest.fixture
def panel(qtbot):
    ctx = AppContext(runner=TaskRunner())
    p = G2StabilityPanel(ctx)
    qtbot.addWidget(p)
    p.resize(1000, 700)
    p.show()
    yield p
    p.cancel_jobs()
    ctx.runner.wait_for_done(20000)


def test_drift_of_known_snapshots():
    # exact single exponentials whose tau grows 1.0 -> 1.5 ms: drift +50 % in every bin
    tau = np.geomspace(1e-5, 1e-1, 40)
    taus = np.array([1.0e-3, 1.2e-3, 1.5e-3])
    bins = np.array([1.0, 2.0])
    part = 1.0 + 0.2 * np.exp(-2 * tau[None, :, None] / (taus[:, None, None] / bins))
    err = np.full_like(part, 1e-3)
    fit = fit_partial_snapshots(tau, part, err, np.array([100, 200, 300]), ["a", "b"])
    np.testing.assert_allclose(fit.fit_tau, taus[:, None] / bins[None, :], rtol=1e-6)
    np.testing.assert_allclose(fit.drift, [0.5, 0.5], rtol=1e-6)
    assert fit.drift_median == pytest.approx(0.5, rel=1e-6)


def test_snapshots_plotted_with_frame_labels_and_drift(qtbot, panel, demo):
    damaged = demo["E01"]
    with qtbot.waitSignal(panel.sigUpdated, timeout=60000):
        panel.set_results([damaged, demo["A01"]])
    mt = damaged.multitau
    n_p = mt.g2_partial.shape[0]
    curves = [it for it in panel.plot_items() if isinstance(it, pg.PlotDataItem)]
    points = [c for c in curves if c.opts["symbol"] is not None]
    assert len(points) == n_p
    by_name = {c.name(): c for c in points}
    assert set(by_name) == {f"frames={int(x)}" for x in mt.g2_partial_labels}
    _x, y = by_name[f"frames={int(mt.g2_partial_labels[-1])}"].getData()
    ok = np.isfinite(mt.g2_partial[-1, :, 0])
    np.testing.assert_allclose(y, mt.g2_partial[-1, ok, 0])
    # beam damage speeds the dynamics up: tau shrinks from first to last snapshot
    assert panel.fit.drift_median < -0.05
    text = panel.drift_label.text()
    assert "\u03c4 drift" in text and "%" in text and "\u26a0" in text


def test_disabled_with_reason_without_partials(qtbot, panel, demo):
    reason = panel.applies_to([demo["A01"], demo["A02"]])
    assert reason is not None and "partial g2" in reason
    assert panel.applies_to([demo["E01"]]) is None


def test_export_figure_uses_the_selected_file_and_bin(qtbot, panel, demo, tmp_path):
    with qtbot.waitSignal(panel.sigUpdated, timeout=60000):
        panel.set_results([demo["E01"], demo["A01"]])
    with qtbot.waitSignal(panel.sigUpdated, timeout=5000):
        panel.bin_spin.setValue(2)
    panel.threshold.setValue(25.0)
    assert panel.figure_kind == "g2stability"
    opts = panel.figure_options()
    assert opts.pop("fit") is panel.fit  # the tab's fit of this file, not fitted again
    assert opts == {
        "file_index": 0,
        "bin_index": 2,
        "threshold": 25.0,
    }
    out = tmp_path / "x.png"
    with qtbot.waitSignal(panel.sigExported, timeout=60000) as blocker:
        assert panel.export_figure(out) is not None
    assert blocker.args == [str(out)]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["x.png"]


def test_opens_on_a_file_with_snapshots(qtbot, panel, demo):
    """Issue 22 (10): the tab opened on the current target even when it had no
    snapshots (only "no partial g2 snapshots" and empty axes)."""
    with qtbot.waitSignal(panel.sigUpdated, timeout=60000):
        panel.set_results([demo["A01"], demo["A02"], demo["E01"]])
    assert panel.current_result() is demo["E01"] and panel.fit is not None
    labels = [panel.file_selector.itemText(i) for i in range(panel.file_selector.count())]
    assert labels[0].endswith("no snapshots") and labels[1].endswith("no snapshots")
    assert "no snapshots" not in labels[2]
    assert panel.file_selector.currentIndex() == 2
    # a file chosen in the selector is shown as chosen, and says why it is empty
    panel.file_selector.activated.emit(0)
    assert panel.current_result() is demo["A01"] and panel.fit is None
    assert "no partial g2 snapshots" in panel.drift_label.text()
    # none has any: the tab is disabled, its tooltip says why
    assert "No partial g2 snapshots" in panel.applies_to([demo["A01"], demo["A02"]])


def test_a_fit_not_back_yet_is_made_in_the_export_worker(qtbot, panel, demo, tmp_path):
    # the GUI thread never fits: before the tab's fit is back the option is deferred
    # and the export job (a worker) makes it
    from xpcsviewer.gui.panels.base import Deferred, export_figure_job

    panel.fit = None
    panel.results = [demo["E01"]]
    panel.current_index = 0
    opts = panel.figure_options()
    assert isinstance(opts["fit"], Deferred)
    out = export_figure_job("g2stability", [demo["E01"]], opts, str(tmp_path / "d.png"))
    assert out["written"] == [str(tmp_path / "d.png")] and out["removed"] == []
    assert open(out["written"][0], "rb").read(8) == b"\x89PNG\r\n\x1a\n"
