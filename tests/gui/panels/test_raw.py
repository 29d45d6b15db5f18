"""The Raw tab (issue 45) on small generated raw files: a dense HDF5 run with a q-map
and planted faults, and a Rigaku ``.bin``. Frames, sums, traces and P(k) are checked
against the generated counts (NumPy on the arrays written, not the readers); clicks go
through Qt events; every read must run in a worker and the GUI thread keep beating."""

from __future__ import annotations

import itertools
import threading
import time

import h5py
import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

pytestmark = pytest.mark.gui

LEFT = Qt.MouseButton.LeftButton
NOMOD = Qt.KeyboardModifier.NoModifier
N, H, W = 240, 32, 40
HOT = (20, 30)
EMPTY = (100, 119)
COSMIC_FRAME = 180
FRAME_TIME = 1e-3
BOUND_S = 1.0  # as tests/gui/test_stalls.py: lenient for a loaded 2-core runner


def _viewport_pos(widget, view, x: float, y: float) -> QPoint:
    return widget.mapFromScene(view.mapViewToScene(QPointF(x, y)))


def click_at(widget, view, x, y):
    QTest.mouseClick(widget.viewport(), LEFT, NOMOD, _viewport_pos(widget, view, x, y))
    QApplication.processEvents()


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    """``(path, frames, qmap)``: N frames of H x W with a hot pixel, a block of empty
    frames and a cosmic cluster; ``NAME_qmap.h5`` beside it."""
    from xpcsviewer.cli import main
    from xpcsviewer.io.results.reader import read_qmap
    from xpcsviewer.jobs._correlate_inputs import RAW_FRAME_TIME

    d = tmp_path_factory.mktemp("rawtab")
    rng = np.random.default_rng(7)
    frames = rng.poisson(0.08, (N, H, W)).astype(np.uint16)
    frames[:, HOT[0], HOT[1]] = 40 + rng.poisson(4, N)
    frames[EMPTY[0]:EMPTY[1] + 1] = 0
    frames[COSMIC_FRAME, 8:11, 8:11] = 30
    path = d / "run_raw.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("/entry/data/data", data=frames)
        f[RAW_FRAME_TIME] = FRAME_TIME
    qpath = d / "run_qmap.h5"
    assert main(["qmap", "--shape", str(H), str(W), "--energy", "10", "--det-dist", "5",
                 "--pixel-size", "75e-6", "--bcx", "20", "--bcy", "16", "--dq-num", "6",
                 "--sq-num", "12", "-o", str(qpath), "--quiet"]) == 0
    return path, frames, read_qmap(qpath)


@pytest.fixture(scope="module")
def rigaku(tmp_path_factory):
    """``(path, frames)``: a Rigaku ``.bin`` module (512 x 1024), 60 frames, no q-map."""
    from xpcsviewer.synthetic.sparse_files import write_rigaku_bin

    d = tmp_path_factory.mktemp("rawtab_bin")
    rng = np.random.default_rng(11)
    n = 60
    frame = np.repeat(np.arange(n), 40)
    pixel = rng.integers(0, 512 * 1024, frame.size)
    count = rng.integers(1, 4, frame.size).astype(np.uint16)
    path = write_rigaku_bin(d / "scan.bin", frame, pixel, count)
    dense = np.zeros((n, 512 * 1024), np.float64)
    np.add.at(dense, (frame, pixel), count)
    return path, dense.reshape(n, 512, 1024)


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
    yield p
    p.cancel_jobs()
    ctx.runner.wait_for_done(10000)


def _show(panel, qtbot, path, inspected=True):
    from xpcsviewer.gui.raw_sources import RAW_CURRENT_KEY, RAW_SOURCES_KEY, raw_target

    t = raw_target(path)
    panel.context.set_shared(RAW_SOURCES_KEY, [t])
    panel.context.set_shared(RAW_CURRENT_KEY, t)
    qtbot.waitUntil(lambda: panel.image_view.data is not None
                    and (panel.inspection is not None or not inspected), timeout=60000)
    assert panel.context.runner.wait_until_idle(60000)
    return t


def _wait_frame(panel, qtbot, what):
    qtbot.waitUntil(lambda: panel.image_view.data is not None
                    and panel.image_view.data.what == what, timeout=20000)


def test_tab_shows_frames_and_ranges_of_a_dense_run(panel, qtbot, dense):
    path, frames, _ = dense
    _show(panel, qtbot, path)
    iv = panel.image_view
    assert iv.data.what == ("one", 0, 0)
    np.testing.assert_array_equal(iv.data.image, frames[0])
    assert panel.info.qmap_path.endswith("run_qmap.h5")  # found beside the source
    assert f"{N:,} frames of {H}x{W}" in panel.status.text()
    assert iv.bins_item.image is not None and iv.mask_item.image is not None
    iv.first_spin.setValue(37)
    _wait_frame(panel, qtbot, ("one", 37, 37))
    np.testing.assert_array_equal(iv.data.image, frames[37])
    assert iv.slider.value() == 37
    for how, ref in (("sum", frames[10:31].sum(0)), ("mean", frames[10:31].mean(0)),
                     ("max", frames[10:31].max(0))):
        iv.show_combo.setCurrentIndex(iv.show_combo.findData(how))
        iv.first_spin.setValue(10)
        iv.last_spin.setValue(30)
        _wait_frame(panel, qtbot, (how, 10, 30))
        np.testing.assert_allclose(iv.data.image, ref, rtol=1e-12)
    iv.log_check.setChecked(False)  # linear: the values are shown as they are
    _wait_frame(panel, qtbot, ("max", 10, 30))
    qtbot.waitUntil(lambda: not iv.data.log)
    np.testing.assert_array_equal(iv.data.shown, frames[10:31].max(0))


def test_inspection_fills_timelines_maps_and_faults(panel, qtbot, dense):
    path, frames, qm = dense
    _show(panel, qtbot, path)
    ins = panel.inspection
    valid = np.asarray(qm.mask, bool)
    want = (frames * valid).sum(axis=(1, 2))
    assert len(panel.timelines.curves["photons"].xData) == N
    np.testing.assert_allclose(panel.timelines.curves["photons"].yData, want)
    occ = panel.timelines.curves["occupancy"].yData
    np.testing.assert_allclose(occ, ((frames > 0) & valid).sum(axis=(1, 2)) / valid.sum())
    kinds = {f.kind for f in ins.findings}
    assert {"hot_pixel", "empty_frames"} <= kinds
    t = panel.faults.table
    assert t.rowCount() == len(ins.findings) > 0
    rows = {t.item(i, 0).text().split(" (")[0] for i in range(t.rowCount())}
    assert {"hot pixel", "empty frames"} <= rows
    # the q-bin's photons against time and P(k), against the generated counts
    b = panel.bin_spin.value()
    in_bin = (np.asarray(qm.dynamic_roi_map) == b) & valid
    qtbot.waitUntil(lambda: panel.traces.data is not None
                    and panel.traces.data.what == ("bin", b), timeout=20000)
    np.testing.assert_allclose(panel.traces.data.trace, frames[:, in_bin].sum(axis=1))
    assert panel.traces.data.control is not None
    counts = frames[:, in_bin].ravel()
    kmax = ins.count_hist.shape[1] - 2
    ref = np.bincount(np.minimum(counts, kmax + 1), minlength=kmax + 2) / counts.size
    ok = ref[:-1] > 0
    np.testing.assert_allclose(panel.pk.p, ref[:-1][ok], rtol=1e-12)
    # the per-pixel maps: mean flux in photons/s/pixel
    iv = panel.image_view
    iv.show_combo.setCurrentIndex(iv.show_combo.findData("flux"))
    _wait_frame(panel, qtbot, ("map", "flux"))
    np.testing.assert_allclose(iv.data.image, frames.sum(0) / (N * FRAME_TIME), rtol=1e-12)
    iv.show_combo.setCurrentIndex(iv.show_combo.findData("max_count"))
    _wait_frame(panel, qtbot, ("map", "max"))
    np.testing.assert_array_equal(iv.data.image, frames.max(0))
    # the mean image goes to the Detector tab
    from xpcsviewer.gui.raw_sources import RAW_MEAN_IMAGE_KEY

    p, mean = panel.context.shared[RAW_MEAN_IMAGE_KEY]
    assert p == str(path)
    np.testing.assert_allclose(mean, frames.mean(0), rtol=1e-12)


def test_clicks_on_a_timeline_and_a_pixel(panel, qtbot, dense):
    path, frames, qm = dense
    _show(panel, qtbot, path)
    tl = panel.timelines
    p = tl.plots["photons"]
    gv = tl  # the GraphicsLayoutWidget is the view of its plots
    y = float(np.mean(tl.curves["photons"].yData))
    click_at(gv, p.getViewBox(), 150.2, y)
    _wait_frame(panel, qtbot, ("one", 150, 150))
    np.testing.assert_array_equal(panel.image_view.data.image, frames[150])
    assert tl.lines[0].value() == 150
    iv = panel.image_view
    click_at(iv.image.graphics_view, iv.view, HOT[1] + 0.5, HOT[0] + 0.5)
    qtbot.waitUntil(lambda: panel.traces.data is not None
                    and panel.traces.data.what == ("pixel", *HOT), timeout=20000)
    np.testing.assert_allclose(panel.traces.data.trace, frames[:, HOT[0], HOT[1]])
    assert panel.pages.currentIndex() == 0
    # a drawn region: the valid pixels of rows 2..5, columns 3..8
    panel.show_region_trace(2, 6, 3, 9)
    qtbot.waitUntil(lambda: panel.traces.data.what[0] == "roi", timeout=20000)
    valid = np.asarray(qm.mask, bool)[2:6, 3:9]
    np.testing.assert_allclose(panel.traces.data.trace,
                               (frames[:, 2:6, 3:9] * valid).sum(axis=(1, 2)))


def test_fault_rows_mask_these_and_exclude_frames(panel, qtbot, dense):
    from xpcsviewer.gui.panels._pixel_audit_box import MASK_REQUEST_KEY, MaskRequest
    from xpcsviewer.gui.raw_sources import RAW_EXCLUDE_KEY

    path = dense[0]
    _show(panel, qtbot, path)
    fs = panel.inspection.findings
    hot = [i for i, f in enumerate(fs) if f.kind == "hot_pixel" and HOT in f.pixels]
    empty = [i for i, f in enumerate(fs) if f.kind == "empty_frames"]
    assert hot and empty
    seen = []
    panel.context.sigSharedChanged.connect(seen.append)
    panel.faults.select_rows([hot[0]])
    assert panel.faults.mask_btn.isEnabled() and not panel.faults.exclude_btn.isEnabled()
    QTest.mouseClick(panel.faults.mask_btn, LEFT)
    req = panel.context.shared[MASK_REQUEST_KEY]
    assert isinstance(req, MaskRequest) and req.path == str(path)
    want = np.zeros((H, W), bool)
    for r, c in fs[hot[0]].pixels:
        want[r, c] = True
    np.testing.assert_array_equal(req.selected, want)
    assert seen.count(MASK_REQUEST_KEY) == 1
    # a frame finding: its frames are shown and can be left out of a correlation
    panel.faults.select_rows([empty[0]])
    first = fs[empty[0]].frames[0]
    _wait_frame(panel, qtbot, ("one", first, first))
    assert panel.timelines.regions[0].isVisible()
    assert not panel.faults.mask_btn.isEnabled() and panel.faults.exclude_btn.isEnabled()
    QTest.mouseClick(panel.faults.exclude_btn, LEFT)
    got_path, ranges = panel.context.shared[RAW_EXCLUDE_KEY]
    assert got_path == str(path) and (EMPTY[0], EMPTY[1]) in ranges
    assert panel.context.runner.wait_until_idle(20000)


def test_rigaku_bin_frames_from_their_events(panel, qtbot, rigaku):
    path, dense = rigaku
    _show(panel, qtbot, path)
    iv = panel.image_view
    assert panel.info.layout == "rigaku" and panel.info.qmap is None
    assert panel.frame_edit.isEnabled()  # a .bin stores no frame time
    np.testing.assert_array_equal(iv.data.image, dense[0])
    iv.show_combo.setCurrentIndex(iv.show_combo.findData("sum"))
    iv.first_spin.setValue(5)
    iv.last_spin.setValue(44)
    _wait_frame(panel, qtbot, ("sum", 5, 44))
    np.testing.assert_array_equal(iv.data.image, dense[5:45].sum(0))
    np.testing.assert_allclose(panel.timelines.curves["photons"].yData,
                               dense.sum(axis=(1, 2)))
    assert panel.bin_spin.isEnabled() is False  # no q-map: no q-bins


def test_no_read_on_the_gui_thread_and_no_stall(panel, qtbot, dense, monkeypatch):
    import xpcsviewer.io.raw.source as source_mod
    import xpcsviewer.jobs.inspect as inspect_mod
    from xpcsviewer.gui.heartbeat import Heartbeat

    path, frames, qm = dense
    # the kernels load once per process (the app's start-up warm-up does it in a
    # worker); loading them holds the GIL for ~1 s, which is not this tab's work
    inspect_mod.inspect_source(path, qmap=qm)
    threads = []

    def spy(mod, name):
        real = getattr(mod, name)

        def wrapped(*a, **k):
            threads.append((name, threading.current_thread() is threading.main_thread()))
            return real(*a, **k)
        monkeypatch.setattr(mod, name, wrapped)

    for mod, name in ((source_mod, "open_raw_source"), (inspect_mod, "inspect_source"),
                      (inspect_mod, "frame_image"), (inspect_mod, "pixel_trace")):
        spy(mod, name)
    path, frames, qm = dense
    cpu = []  # (beat, GUI-thread CPU time): the work between beats, whatever the load

    class CpuBeat(Heartbeat):
        def _beat(self):
            super()._beat()
            cpu.append(time.thread_time())

    beat = CpuBeat(10).start()
    t0 = time.monotonic()
    _show(panel, qtbot, path)
    iv = panel.image_view
    for k in range(0, 60, 3):  # a slider dragged over the frames: the latest wins
        iv.slider.setValue(k)
        QTest.qWait(5)
    _wait_frame(panel, qtbot, ("one", 57, 57))
    panel.show_pixel_trace(*HOT)
    assert panel.context.runner.wait_until_idle(20000)
    gap = beat.max_gap(t0)
    beat.stop()
    work = max(b - a for a, b in itertools.pairwise(cpu))
    names = {n for n, _ in threads}
    assert {"open_raw_source", "inspect_source", "frame_image", "pixel_trace"} <= names
    assert not [n for n, on_gui in threads if on_gui], threads
    np.testing.assert_array_equal(iv.data.image, frames[57])
    print(f"longest GUI-thread gap while the Raw tab opened, inspected and read: "
          f"{1000 * gap:.0f} ms; most GUI-thread CPU between two beats {1000 * work:.0f} ms")
    assert gap < BOUND_S


def test_correlate_opens_the_dialog_on_the_shown_source(panel, qtbot, dense):
    from xpcsviewer.gui.correlate_dialog import CorrelateDialog

    path = dense[0]
    _show(panel, qtbot, path, inspected=False)
    assert panel.correlate_btn.isEnabled()
    QTest.mouseClick(panel.correlate_btn, LEFT)
    dialogs = [w for w in QApplication.topLevelWidgets()
               if isinstance(w, CorrelateDialog) and w.isVisible()]
    assert len(dialogs) == 1
    dlg = dialogs[0]
    assert dlg.target.path == str(path)
    assert dlg.target.qmap_path == panel.info.qmap_path  # the q-map the tab shows
    dlg.close()
    assert panel.context.runner.wait_until_idle(20000)


def test_trace_of_a_run_of_nanosecond_frames_is_drawn(qtbot):
    """A Timepix run in frames of 31 ns lasts 200 us: the trace and spectrum plots take
    their x ranges from the data (auto-downsampling over the default 0..1 view kept no
    point, and the plot stayed empty)."""
    from xpcsviewer.gui.panels._raw_jobs import TraceData
    from xpcsviewer.gui.panels._raw_views import TracePlots

    w = TracePlots()
    qtbot.addWidget(w)
    w.resize(400, 400)
    w.show()
    n, ft = 6400, 3.125e-8
    rng = np.random.default_rng(2)
    trace = rng.poisson(40.0, n).astype(np.float64)
    freq = np.fft.rfftfreq(n, ft)
    power = np.abs(np.fft.rfft(trace - trace.mean())) ** 2
    w.set_data(TraceData("q-bin 1", ("bin", 1), trace, None, "", freq, power, None), ft)
    QApplication.processEvents()
    (x0, x1), (y0, y1) = w.trace_plot.viewRange()
    assert x0 <= 0.0 and x1 >= (n - 1) * ft and x1 < 1e-3
    assert y0 <= trace.min() and y1 >= trace.max()
    xs, _ys = w.trace.getData()
    assert xs is not None and xs.size > 100  # points drawn, not downsampled away
    (_f0, f1), _ = w.spec_plot.viewRange()
    assert f1 >= freq[-1] * 0.99
