"""Correlate from the window (issue 45): the dialog takes the window's q-map, mask and
excluded frames, runs the job in a worker, opens the result on the g2 tab; a cancel
leaves nothing behind."""

from __future__ import annotations

import os
import threading
import time

import h5py
import numpy as np
import pytest

SHAPE = (24, 32)


@pytest.fixture
def raw_source(tmp_path):
    """A dense raw file with its q-map beside it (``NAME_qmap.h5``, as the demo's)."""
    from xpcsviewer.compute.detector.partition import PartitionGrid, geometry_partition
    from xpcsviewer.compute.detector.qmap import DetectorGeometry
    from xpcsviewer.gui.raw_sources import raw_target
    from xpcsviewer.io.results.writer import write_qmap_file

    d = tmp_path / "data"
    d.mkdir()
    qm = geometry_partition(SHAPE, DetectorGeometry(beam_center_x=-5.0, beam_center_y=-5.0,
                                                    detector_distance=5.0, pixel_size=75e-6,
                                                    energy_kev=10.0), None, PartitionGrid(4, 8))
    write_qmap_file(d / "run_qmap.h5", qm, source_file="test", overwrite=True)
    frames = np.random.default_rng(4).poisson(1.0, size=(80, *SHAPE)).astype(np.uint16)
    with h5py.File(d / "run.h5", "w") as f:
        f["/entry/data/data"] = frames
        f["/entry/instrument/detector_1/frame_time"] = 1e-3
    target = raw_target(d / "run.h5")
    assert target is not None and target.qmap_path == str(d / "run_qmap.h5")
    return target, qm


def _dialog(window, target):
    from xpcsviewer.gui.correlate_dialog import open_correlate_dialog

    return open_correlate_dialog(window, window.context, target)


def test_dialog_correlates_and_opens_the_result_on_the_g2_tab(window, qtbot, raw_source,
                                                              tmp_path, wait_idle):
    from xpcsviewer.gui.panels.detector import MASK_KEY, DetectorMask
    from xpcsviewer.gui.raw_sources import RAW_EXCLUDE_KEY

    target, _qm = raw_source
    mask = np.ones(SHAPE, bool)
    mask[:2] = False
    ctx = window.context
    ctx.set_shared(MASK_KEY, DetectorMask(target.path, mask, int((~mask).sum())))
    ctx.set_shared(RAW_EXCLUDE_KEY, (target.path, [(30, 34), (10, 12)]))
    dlg = _dialog(window, target)
    assert dlg.exclude_edit.text() == "10-12,30-34"
    assert dlg.mask_combo.currentData() == "detector"
    assert dlg.qmap_edit.text() == target.qmap_path
    assert dlg.frame_time_edit.text() == "0.001"
    out = tmp_path / "results" / "run_results.hdf"
    dlg.output_edit.setText(str(out))
    dlg.mode_combo.setCurrentIndex(dlg.mode_combo.findData("both"))
    dlg.dq_edit.setText("1")
    qtbot.waitUntil(lambda: "72 of 80 frames" in dlg.plan_label.text(), timeout=30000)
    assert "estimated time" in dlg.plan_label.text()
    assert "--exclude-frames 10-12,30-34" in dlg.command_label.text()
    dlg.run_btn.click()
    assert dlg.running and dlg.cancel_btn.text() == "Cancel"
    wait_idle(window, 60000)
    assert dlg.outcome is not None, dlg.status.text()
    assert not dlg.running and "8 frames excluded in 2 blocks" in dlg.status.text()
    assert out.is_file() and (out.parent / "run_results_mask.hdf").is_file()
    qtbot.waitUntil(lambda: window.results and str(window.results[0].path) == str(out),
                    timeout=30000)
    qtbot.waitUntil(lambda: window.current_panel() is window.panels["g2"], timeout=10000)
    with h5py.File(out, "r") as f:
        cfg = f["xpcs/multitau/config"]
        assert cfg["excluded_frames"][()].decode() == "10-12,30-34"
        assert cfg["mask_removed_pixels"][()] > 0
        assert "xpcs/twotime" in f
    dlg.close()


def test_cancel_in_the_dialog_leaves_nothing(window, qtbot, raw_source, tmp_path,
                                            monkeypatch, wait_idle):
    """The run is held at its first progress report until the user cancels."""
    from xpcsviewer.gui import correlate_dialog
    from xpcsviewer.gui.panels.detector import MASK_KEY, PARTITION_KEY, DetectorMask, DrawnPartition

    target, qm = raw_source
    ctx = window.context
    ctx.set_shared(MASK_KEY, DetectorMask(target.path, np.ones(SHAPE, bool), 0))
    ctx.set_shared(PARTITION_KEY, DrawnPartition(target.path, qm, {}))
    running = threading.Event()
    real = correlate_dialog.run_form

    def held(form, progress=None, cancel=None):
        def hold(*a):
            running.set()
            deadline = time.monotonic() + 20
            while not cancel.cancelled and time.monotonic() < deadline:
                time.sleep(0.01)
            progress(*a)

        return real(form, progress=hold, cancel=cancel)

    monkeypatch.setattr(correlate_dialog, "run_form", held)
    dlg = _dialog(window, target)
    dlg.qmap_combo.setCurrentIndex(dlg.qmap_combo.findData("drawn"))
    out = tmp_path / "out"
    dlg.output_edit.setText(str(out / "r.hdf"))
    assert "r_qmap.hdf" in dlg.command_label.text() and "r_mask.hdf" in dlg.command_label.text()
    dlg.start()
    qtbot.waitUntil(running.is_set, timeout=20000)
    assert (out / "r_qmap.hdf").is_file()  # the side files were written before the run
    dlg.cancel_or_close()
    wait_idle(window, 60000)
    assert dlg.outcome is None and "cancelled: nothing was written" in dlg.status.text()
    assert sorted(os.listdir(out)) == []
    assert dlg.isVisible() and dlg.run_btn.isEnabled()
    dlg.close()


def test_file_menu_asks_for_a_raw_source(window, qtbot, raw_source, monkeypatch, wait_idle):
    from PySide6.QtWidgets import QFileDialog

    from xpcsviewer.gui.correlate_dialog import CorrelateDialog

    target, _qm = raw_source
    act = next(a for a in window.menuBar().actions()[0].menu().actions()
               if a.text().replace("&", "") == "Correlate Raw\u2026")
    monkeypatch.setattr(QFileDialog, "getOpenFileName",
                        staticmethod(lambda *a, **k: (target.path, "")))
    act.trigger()
    dlgs = window.findChildren(CorrelateDialog)
    assert len(dlgs) == 1 and dlgs[0].target.path == target.path
    wait_idle(window, 30000)
    dlgs[0].close()
    # a file that is no raw source is said, no dialog
    monkeypatch.setattr(QFileDialog, "getOpenFileName",
                        staticmethod(lambda *a, **k: (target.qmap_path, "")))
    act.trigger()
    assert "not a raw source" in window.context.last_error.message
    wait_idle(window, 30000)
