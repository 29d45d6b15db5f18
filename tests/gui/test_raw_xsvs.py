"""The Raw tab's XSVS page (issue 46): a fake result drawn (P(k) with its fits, beta(T),
the table), the bin and exposure chosen, the CSV export's contract header, the file
beside the source read by itself, and a computation end to end in a worker."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import h5py
import numpy as np
import pyqtgraph as pg
import pytest

pytest.importorskip("pytestqt")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _xsvs_fake import fake_xsvs

pytestmark = pytest.mark.gui

N, H, W = 256, 32, 40
FRAME_TIME = 1e-3


@pytest.fixture
def panel(qtbot):
    from xpcsviewer.gui.context import AppContext
    from xpcsviewer.gui.panels.raw import RawPanel
    from xpcsviewer.gui.workers import TaskRunner

    ctx = AppContext(runner=TaskRunner())
    p = RawPanel(ctx)
    qtbot.addWidget(p)
    p.resize(1300, 850)
    p.show()
    p.modes.setCurrentWidget(p.xsvs)
    yield p
    p.cancel_jobs()
    ctx.runner.wait_for_done(10000)


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    """``(path, frames)``: N frames of speckle-like counts (gamma-modulated Poisson),
    ``NAME_qmap.h5`` beside it."""
    from xpcsviewer.cli import main
    from xpcsviewer.jobs._correlate_inputs import RAW_FRAME_TIME

    d = tmp_path_factory.mktemp("rawxsvs")
    rng = np.random.default_rng(3)
    m = 4.0  # modes of a frame; intensities correlated over 8 frames
    base = rng.gamma(m, 0.2 / m, (N // 8, H, W)).repeat(8, axis=0)
    frames = rng.poisson(base).astype(np.uint16)
    path = d / "run_raw.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("/entry/data/data", data=frames)
        f[RAW_FRAME_TIME] = FRAME_TIME
    assert main(["qmap", "--shape", str(H), str(W), "--energy", "10", "--det-dist", "5",
                 "--pixel-size", "75e-6", "--bcx", "20", "--bcy", "16", "--dq-num", "3",
                 "--sq-num", "6", "-o", str(d / "run_qmap.h5"), "--quiet"]) == 0
    return path, frames


@pytest.fixture(scope="module")
def result_of_dense(dense):
    """A result file correlated from the dense source (its g2 fit goes beside)."""
    from xpcsviewer.cli import main

    path, _ = dense
    out = path.with_name("run_results.hdf")
    assert main(["correlate", str(path), "--qmap", str(path.with_name("run_qmap.h5")),
                 "-o", str(out), "--quiet"]) == 0
    return out


def _n(item) -> int:
    return 0 if item.xData is None else int(item.xData.size)


def _show(panel, qtbot, path):
    from xpcsviewer.gui.raw_sources import RAW_CURRENT_KEY, RAW_SOURCES_KEY, raw_target

    panel.find_check.setChecked(False)
    t = raw_target(path)
    panel.context.set_shared(RAW_SOURCES_KEY, [t])
    panel.context.set_shared(RAW_CURRENT_KEY, t)
    qtbot.waitUntil(lambda: panel.info is not None, timeout=60000)
    assert panel.context.runner.wait_until_idle(60000)


def test_view_draws_a_fake_result_and_follows_bin_and_exposure(panel, qtbot):
    from xpcsviewer.views.xsvs import beta_view, pk_view

    res = fake_xsvs(cap=3)
    v = panel.xsvs
    v.set_result(res)
    assert v.bin_combo.count() == 4 and v.level_combo.count() == 6
    assert "1 ms" in v.level_combo.itemText(0) and "q 0.002" in v.bin_combo.itemText(0)
    # it opens on the first exposure whose P(k) was fitted
    first = int(np.flatnonzero(np.isin(res.nb["status"][0], ("ok", "misfit")))[0])
    assert first > 0 and v.level_combo.currentData() == first
    np.testing.assert_allclose(v.pk_points.yData, pk_view(res, 0, first).p)
    v.level_combo.setCurrentIndex(0)
    ref = pk_view(res, 0, 0)
    np.testing.assert_allclose(v.pk_points.yData, ref.p)
    assert _n(v.pk_nb) == 0  # poisson status: no negative binomial drawn
    assert _n(v.pk_poisson) > 0
    assert "poisson" in v.pk_text.text() and "no excess variance" in v.pk_text.text()
    v.bin_combo.setCurrentIndex(2)
    v.level_combo.setCurrentIndex(3)
    ref = pk_view(res, 2, 3)
    np.testing.assert_allclose(v.pk_points.yData, ref.p)
    np.testing.assert_allclose(v.pk_nb.yData, ref.nb[ref.nb > ref.p.min() / 20])
    assert v.pk_cens.xData.tolist() == [3.0]  # censored at the cap, apart
    assert v.pk_nb_cens.xData.tolist() == [3.0]
    assert v.pk_nb.xData.max() <= 2  # the pmf stops below the cap
    assert "M = " in v.pk_text.text() and ": ok" in v.pk_text.text()
    assert "q-bin 3" in v.pk_plot.getPlotItem().titleLabel.text
    assert "T = 8 ms" in v.pk_plot.getPlotItem().titleLabel.text
    # beta(T): every bin with ok points, the model lines and the g2 markers
    curves = beta_view(res)
    assert len(v.curves) == len(curves) == 4
    named = [it for it in v.beta_items if isinstance(it, pg.PlotDataItem) and it.name()]
    assert len(named) == 4
    np.testing.assert_allclose(named[1].yData, curves[1].beta)
    lines = [it for it in v.beta_items if isinstance(it, pg.PlotDataItem)
             and it.xData is not None and it.xData.size == curves[0].t_model.size]
    assert len(lines) == 4  # the fitted law of every bin (dashed for the limit)
    t = v.table
    assert t.rowCount() == 4
    assert t.item(3, 3).text() == "\u03c4 > 50 ms"
    assert t.item(0, 5).text().startswith("0.306")
    t.selectRow(1)
    assert v.bin_combo.currentIndex() == 1
    assert "4 q-bins \u00d7 6 exposures" in v.status.text()
    assert v.figure_btn.isEnabled() and v.csv_btn.isEnabled()


def test_export_csv_and_figure(panel, qtbot, tmp_path):
    from xpcsviewer.model.xsvs import CSV_COLUMNS

    res = fake_xsvs()
    v = panel.xsvs
    v.set_result(res)
    out = tmp_path / "x.csv"
    with qtbot.waitSignal(panel.sigExported, timeout=30000):
        v.export_csv(str(out))
    rows = list(csv.reader(out.read_text().splitlines()))
    rows = [r for r in rows if r and not r[0].startswith("#")]
    assert tuple(rows[0]) == CSV_COLUMNS
    assert len(rows) == 1 + 4 * 6
    fig = tmp_path / "x.png"
    with qtbot.waitSignal(panel.sigExported, timeout=60000):
        v.export_figure(str(fig))
    assert fig.stat().st_size > 10_000


def test_file_beside_the_source_is_read_when_shown(panel, qtbot, dense, tmp_path):
    from xpcsviewer.jobs.xsvs import write_xsvs

    path, _ = dense
    beside = path.with_name(path.stem + "_xsvs.h5")
    write_xsvs(beside, fake_xsvs(source=str(path)))
    try:
        _show(panel, qtbot, path)
        qtbot.waitUntil(lambda: panel.xsvs.res is not None, timeout=30000)
        assert panel.xsvs.res_path == str(beside)
        assert "read from run_raw_xsvs.h5" in panel.xsvs.status.text()
        assert panel.xsvs.compute_btn.isEnabled()
    finally:
        beside.unlink()


def test_compute_runs_in_a_worker_end_to_end(panel, qtbot, dense, result_of_dense):
    from xpcsviewer.io import read_result

    path, frames = dense
    panel.set_results([read_result(result_of_dense)])  # the window's result files
    _show(panel, qtbot, path)
    v = panel.xsvs
    assert v.res is None and v.compute_btn.isEnabled()
    seen = []
    panel.context.runner.sigProgress.connect(lambda *a: seen.append(a))
    v.compute_btn.click()
    assert v.cancel_btn.isEnabled()
    qtbot.waitUntil(lambda: v.res is not None, timeout=120000)
    res = v.res
    assert v.res_path is None and "computed" in v.status.text()
    assert res.bin_ids.size == 3 and res.frame_time == pytest.approx(FRAME_TIME)
    # the histograms hold every valid pixel of a bin at the one-frame exposure
    qm = panel.info.qmap
    valid = np.asarray(qm.mask, bool)
    b = 0
    in_bin = (np.asarray(qm.dynamic_roi_map) == res.bin_ids[b]) & valid
    assert res.windows[0] == 1
    counts = frames[:, in_bin].ravel().astype(np.int64)
    k = res.kmax
    want = np.bincount(np.minimum(counts, k + 1), minlength=k + 2)
    np.testing.assert_array_equal(res.hist[b, 0] + res.cens[b, 0], want)
    assert v.table.rowCount() == 3
    assert not v.cancel_btn.isEnabled()
    # the g2 fit of the window's result of this source beside
    assert res.g2_source and Path(res.g2_source).name == "run_results.hdf"
    assert "g2 fit of run_results.hdf beside" in v.status.text()
    assert res.g2["contrast"].shape == (3,)
    assert seen  # progress went through the runner


def test_snapshot_shows_the_xsvs_page(qapp, dense, tmp_path):
    from xpcsviewer.gui.snapshot import render_snapshot
    from xpcsviewer.jobs.xsvs import write_xsvs

    path, _ = dense
    beside = path.with_name(path.stem + "_xsvs.h5")
    write_xsvs(beside, fake_xsvs(source=str(path)))
    seen = []
    try:
        out = render_snapshot([str(path)], "xsvs", tmp_path / "x.png", (1200, 800),
                              prepare=lambda p: seen.append(
                                  (p.modes.currentWidget() is p.xsvs, p.xsvs.res)),
                              say=None)
    finally:
        beside.unlink()
    assert out.stat().st_size > 20_000
    assert seen and seen[0][0] and seen[0][1] is not None  # read from beside the source
