"""g2 tab, "Recompute q-bin…" (issue 45): one bin of a result written by correlate from
a small raw file, recomputed in a worker with the Detector tab's mask, drawn over the
file's curve; the raw file asked for when it moved; the overlay cleared."""

from __future__ import annotations

import dataclasses

import h5py
import numpy as np
import pytest

pytest.importorskip("pytestqt")

from xpcsviewer.gui.context import AppContext
from xpcsviewer.gui.panels._g2_rebin import REBIN_COLOR
from xpcsviewer.gui.panels.detector import MASK_KEY, DetectorMask
from xpcsviewer.gui.panels.g2 import G2Panel
from xpcsviewer.gui.workers import TaskRunner


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    from xpcsviewer.compute.detector.partition import PartitionGrid, geometry_partition
    from xpcsviewer.compute.detector.qmap import DetectorGeometry
    from xpcsviewer.io.results.writer import write_qmap_file
    from xpcsviewer.jobs.correlate import CorrelateJob, correlate_file
    from xpcsviewer.synthetic.speckle import Geometry, simulate_frames

    d = tmp_path_factory.mktemp("g2rebin")
    shape = (24, 32)
    qm = geometry_partition(shape, DetectorGeometry(beam_center_x=-4.0, beam_center_y=12.0,
                                                    detector_distance=5.0, pixel_size=75e-6,
                                                    energy_kev=10.0), None, PartitionGrid(3, 6))
    qpath = write_qmap_file(d / "qmap.h5", qm)
    q, _ = Geometry(shape=shape, energy_kev=10.0, det_dist_m=5.0, pixel_size_m=75e-6,
                    bcx=-4.0, bcy=12.0).qmap()
    movie = simulate_frames(q, 200, 1e-3, D=5e6, beta=0.3, rate=0.5, seed=2).astype(np.uint16)
    raw = d / "raw.h5"
    with h5py.File(raw, "w") as f:
        f["/entry/data/data"] = movie
        f["/entry/instrument/detector_1/frame_time"] = 1e-3
    edited = np.asarray(qm.mask, bool).copy()
    edited[:, ::3] = False  # a third of the pixels
    whole = correlate_file(CorrelateJob(raw, write_qmap_file(
        d / "qmap_edited.h5", dataclasses.replace(qm, mask=edited)), d / "whole.hdf")).result
    out = correlate_file(CorrelateJob(raw, qpath, d / "scan_results.hdf")).output
    return d, raw, out, edited, whole


@pytest.fixture
def panel(qtbot):
    ctx = AppContext(runner=TaskRunner())
    p = G2Panel(ctx)
    qtbot.addWidget(p)
    p.resize(1100, 800)
    p.show()
    yield p
    p.cancel_jobs()
    ctx.runner.wait_for_done(10000)


def _load(qtbot, panel, path):
    from xpcsviewer.io import read_result

    res = read_result(path)
    with qtbot.waitSignal(panel.sigUpdated, timeout=10000):
        panel.set_results([res])
    return res


def _overlay_items(panel):
    import pyqtgraph as pg

    out = []
    for plot in panel.plot_widgets():
        for it in plot.listDataItems():
            if isinstance(it, pg.PlotDataItem) and it.opts["pen"] is not None \
                    and pg.mkPen(it.opts["pen"]).color().name() == REBIN_COLOR:
                out.append((plot, it))
    return out


def _recompute(qtbot, panel, k):
    panel.rebin_bin.setValue(k)
    panel.rebin_btn.click()
    assert panel.rebin_cancel.isEnabled()  # a worker runs it: cancel is offered
    qtbot.waitUntil(lambda: panel.rebin_btn.isEnabled(), timeout=20000)
    qtbot.waitUntil(lambda: not panel.context.runner.is_busy, timeout=10000)


def test_recompute_draws_the_edited_bin_over_the_file(qtbot, panel, made):
    _d, _raw, path, edited, whole = made
    res = _load(qtbot, panel, path)
    panel.context.set_shared(MASK_KEY, DetectorMask(str(res.path), edited,
                                                    int((~edited & res.qmap.mask).sum())))
    _recompute(qtbot, panel, 2)
    out = panel.rebin_overlay
    assert out is not None and out.q_bin == 2
    items = _overlay_items(panel)
    assert len(items) == 1
    plot, item = items[0]
    # in the panel of bin 2, the file's own curve beside it
    k, _m, _bi = panel.rebin_panel()
    assert plot is panel.plot_widgets()[k]
    ok = np.isfinite(out.g2)
    np.testing.assert_allclose(item.yData, out.g2[ok])
    ref = whole.multitau.g2[:, 1]
    np.testing.assert_allclose(out.g2[ok], ref[ok], rtol=1e-12)  # the whole job's bin
    in_bin = (res.qmap.dynamic_roi_map == 2) & (res.qmap.static_roi_map > 0)
    n_new, n_old = int((in_bin & edited).sum()), int((in_bin & res.qmap.mask).sum())
    texts = [lab.text for _s, lab in panel._rebin_items[1][1].items]
    assert any(f"bin 2, edited mask ({n_new} pixels)" in t for t in texts)
    status = panel.rebin_status.text()
    assert f"{n_old - n_new} pixels removed" in status and "first delays" in status
    # a redraw in another layout keeps the overlay
    with qtbot.waitSignal(panel.sigUpdated, timeout=10000):
        panel.layout_combo.setCurrentIndex(2)
    assert len(_overlay_items(panel)) == 1
    panel.rebin_clear.click()
    assert _overlay_items(panel) == [] and panel.rebin_overlay is None


def test_a_moved_raw_file_is_asked_for(qtbot, panel, made, tmp_path, monkeypatch):
    from xpcsviewer.jobs.correlate import CorrelateJob, correlate_file

    d, raw, _path, _edited, _whole = made
    mine = tmp_path / "raw.h5"
    mine.write_bytes(raw.read_bytes())
    path = correlate_file(CorrelateJob(mine, d / "qmap.h5", tmp_path / "r.hdf")).output
    moved = mine.rename(tmp_path / "elsewhere.h5")
    asked = []
    monkeypatch.setattr(panel, "ask_raw_path",
                        lambda recorded, result: asked.append(recorded) or str(moved))
    _load(qtbot, panel, path)
    _recompute(qtbot, panel, 1)
    qtbot.waitUntil(lambda: panel.rebin_overlay is not None, timeout=20000)
    qtbot.waitUntil(lambda: not panel.context.runner.is_busy, timeout=10000)
    assert asked == [str(tmp_path / "raw.h5")]
    assert panel.rebin_overlay.raw == str(moved)
    assert "no Detector-tab mask" in panel.rebin_status.text()  # the file's own mask
    assert len(_overlay_items(panel)) == 1
