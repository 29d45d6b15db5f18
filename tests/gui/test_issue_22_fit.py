"""Issue 22, item 8 and part of 10: text and plots that did not fit the window.

Before the fix the source list cut long names at the end (ten real 8-ID-I files
looked identical), the status-bar progress cut its label mid-word and kept the
label of a failed job ("SAXS-2D ROIs: 0%") while other jobs ran, the g2 tab's
partition note ran off the edge, and the shortcuts dialog wrapped its lines.
"""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import Qt

pytestmark = pytest.mark.gui

_SERIES = [f"Average_B0147_S3_7_300C10p_att00_Rq0_{a:05d}_{b:05d}_results.hdf"
           for a, b in ((1, 200), (200, 350), (351, 500))]


def test_source_names_elided_in_the_middle(qtbot, sync_context, tmp_path):
    from xpcsviewer.gui.browser import DataBrowser

    for name in _SERIES:
        (tmp_path / name).write_bytes(b"")
    b = DataBrowser(sync_context)
    qtbot.addWidget(b)
    b.resize(300, 600)
    b.show()
    b.open_folder(str(tmp_path))
    assert b.source_names() == _SERIES
    for view in (b.source_list, b.target_list):
        # cut in the middle, so the ends that tell the files apart stay visible; no
        # sideways scrolling that shows only the common start
        assert view.textElideMode() == Qt.TextElideMode.ElideMiddle
    qtbot.waitUntil(lambda: b.source_list.viewport().width() > 100)
    assert b.source_list.horizontalScrollBar().maximum() == 0
    assert b.source_list.item(0).toolTip().endswith(_SERIES[0])


def test_progress_forgets_failed_job_and_cuts_between_words(qtbot, window, wait_idle):
    from xpcsviewer.gui.workers import wait_for_event_job

    wait_idle(window)
    runner = window.context.runner
    release = threading.Event()
    runner.submit("test:bg", wait_for_event_job, release, description="background")

    def failing(progress=None, cancel=None):
        progress(0, 10, "start")
        raise RuntimeError("no ROI")

    with qtbot.waitSignal(runner.sigJobFinished, timeout=5000,
                          check_params_cb=lambda key, _rid: key == "test:fail"):
        runner.submit("test:fail", failing, description="SAXS-2D ROIs",
                      on_error=lambda _info: None)
    qtbot.waitUntil(window.progress.isVisible, timeout=2000)
    qtbot.wait(20)  # the bar follows on its own event-loop turn
    # the failed job's "SAXS-2D ROIs: 0%" is gone at once; the runner is still busy
    assert runner.is_busy
    assert "SAXS-2D" not in window.progress.format()
    assert "SAXS-2D" not in window.progress.toolTip()
    assert "background" in window.progress.toolTip()

    long = "compiling the fits (first run only) for every model of every open file"

    def reporting(progress=None, cancel=None):
        progress(3, 10, "step")
        release.wait(10)

    runner.submit("test:long", reporting, description=long)
    qtbot.waitUntil(lambda: "compiling" in window.progress.format(), timeout=3000)
    fmt = window.progress.format()
    label = fmt[: -len(": %p%")]
    assert label.endswith("\u2026")
    # whole words only, and the text fits the bar
    assert long.startswith(label[:-1]) and long[len(label) - 1] == " "
    fm = window.progress.fontMetrics()
    assert fm.horizontalAdvance(window.progress.text()) < window.progress.width()
    assert window.progress.toolTip().startswith(long)
    release.set()
    wait_idle(window)


def test_clipped_label_wraps_then_elides_with_tooltip(qtbot):
    from xpcsviewer.gui.widgets import ClippedLabel

    lab = ClippedLabel("short", lines=2)
    qtbot.addWidget(lab)
    lab.resize(300, 10)
    lab.show()
    h = lab.height()
    assert lab.shown_lines() == (["short"], False) and lab.toolTip() == ""
    note = ("7 file(s), 168 curve(s), 24 panel(s); the files have different q "
            "partitions: a panel holds the bins within 1 % in q; curves show their own q")
    lab.setText(note)
    assert lab.height() == h  # the text never changes the layout
    lines, cut = lab.shown_lines()
    assert len(lines) == 2 and cut and lines[-1].endswith("\u2026")
    fm = lab.fontMetrics()
    assert all(fm.horizontalAdvance(s) <= lab.contentsRect().width() for s in lines)
    assert lab.toolTip() == note and lab.text() == note
    lab.resize(2000, 10)
    assert lab.shown_lines()[1] is False and lab.toolTip() == ""


def test_g2_partition_note_stays_inside_the_tab(qtbot, sync_context):
    from xpcsviewer.gui.panels.g2 import G2Panel

    p = G2Panel(sync_context)
    qtbot.addWidget(p)
    p.resize(700, 600)
    p.show()
    note = "the files have different q partitions: a panel holds the bins " * 3
    p.status.setText(note)
    # never wider than the tab, and all of it in the tooltip
    assert p.status.width() <= p.width()
    assert p.status.shown_lines()[1] and p.status.toolTip() == note


def test_shortcuts_dialog_is_an_aligned_table(qtbot, window):
    from xpcsviewer.gui._window_extras import SHORTCUTS

    box = window.show_shortcuts()
    t = box.table
    assert t.columnCount() == 2 and t.rowCount() == len(SHORTCUTS)
    assert [t.item(r, 0).text() for r in range(t.rowCount())] == [k for k, _ in SHORTCUTS]
    assert not t.wordWrap()
    qtbot.waitUntil(box.isVisible)
    # every row on one line, the whole table visible: no wrapping, no scrolling
    for r in range(t.rowCount()):
        assert t.rowHeight(r) < 2 * t.fontMetrics().lineSpacing()
    assert t.horizontalScrollBar().maximum() == 0
    assert t.verticalScrollBar().maximum() == 0
    box.close()
