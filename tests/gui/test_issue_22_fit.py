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
    assert "SAXS-2D" not in window.progress_label.text()
    assert "SAXS-2D" not in window.progress.toolTip()
    assert "background" in window.progress.toolTip()

    long = "compiling the fits (first run only) for every model of every open file"

    def reporting(progress=None, cancel=None):
        progress(3, 10, "step")
        release.wait(10)

    runner.submit("test:long", reporting, description=long)
    qtbot.waitUntil(lambda: "compiling" in window.progress_label.text(), timeout=3000)
    label = window.progress_label.text()
    assert label.endswith("\u2026")
    # whole words only; the name fits its label and the bar holds only the percentage
    # (issue 33: "compiling t|he fits" ran past the bar)
    assert long.startswith(label[:-1]) and long[len(label) - 1] == " "
    fm = window.progress_label.fontMetrics()
    assert fm.horizontalAdvance(label) <= window.progress_label.width()
    assert window.progress.format() == "%p%"
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


def test_g2_grid_and_legend_fit_a_1400_px_window(qtbot, window, demo_files, wait_idle,
                                                 tmp_path):
    import shutil

    from xpcsviewer.gui.panels._g2_draw import LABEL_PX

    # a series of real-looking names that differ only near the end
    paths = [str(shutil.copyfile(demo_files[k], tmp_path / name))
             for k, name in enumerate([*_SERIES, _SERIES[0].replace("00001", "00501")])]
    window.resize(1400, 900)
    window.browser.add_paths(paths)
    wait_idle(window, 60000)
    window.select_tab("g2")
    wait_idle(window, 60000)
    p = window.panels["g2"]
    c = p._canvas("qbin")
    assert c.nc == 3 and c.n > 3
    # the default three columns fit the window beside the dock and the fit panel
    assert c.scroll.horizontalScrollBar().maximum() == 0
    assert c.glw.ci.geometry().width() <= c.glw.width() + 0.5
    leg = c.top_legend
    assert leg.isVisible() and len(leg.items) == 4
    assert leg.sceneBoundingRect().right() <= c.glw.width()

    # whole file names as labels: cut in the middle, in full as tooltips, still inside
    p.label_style.setText("1,2,3,4,5,6,7,8,9,10")
    p.label_style.editingFinished.emit()
    wait_idle(window, 60000)
    labels = [lab for _s, lab in leg.items]
    assert all(lab.toolTip().startswith("Average_B0147") for lab in labels)
    assert all("\u2026" in lab.text for lab in labels)
    assert all(lab.minimumWidth() <= LABEL_PX["top"] + 12 for lab in labels)
    assert leg.sceneBoundingRect().right() <= c.glw.width()
    assert c.scroll.horizontalScrollBar().maximum() == 0

    # one panel per file, legends beside the panels: wider than the window, so the
    # grid scrolls sideways over all of it instead of cutting the last column off
    p.layout_combo.setCurrentIndex(p.layout_combo.findData("file"))
    wait_idle(window, 60000)
    c = p._canvas("file")
    assert c.glw.ci.geometry().width() <= c.glw.width() + 0.5


def _drawn_labels(axis) -> list[str]:
    from PySide6.QtGui import QImage, QPainter

    img = QImage(8, 8, QImage.Format.Format_ARGB32)
    painter = QPainter(img)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [t[2] for t in specs[2] if t[2]]


@pytest.mark.parametrize(("lo", "hi", "n_below"), [(6e-4, 3e-3, 2), (2e-6, 2e-2, 4)])
def test_log_axis_labels_below_a_decade(qtbot, lo, hi, n_below):
    """tau from 0.6 to 3 ms had one label (0.001) and none below it; over four
    decades the minor labels were all dropped (decades counted twice)."""
    import numpy as np
    import pyqtgraph as pg

    from xpcsviewer.gui.widgets import log_friendly_plot_widget

    pw = log_friendly_plot_widget()
    qtbot.addWidget(pw)
    pw.resize(700, 420)
    pw.show()
    plot = pw.getPlotItem()
    plot.addItem(pg.PlotDataItem(np.geomspace(1e-3, 1e-2, 8), np.geomspace(lo, hi, 8)))
    plot.setLogMode(x=True, y=True)
    plot.autoRange()
    qtbot.waitUntil(lambda: plot.getAxis("left").size().height() > 300)
    for _ in range(2):  # the first paint widens the axis to its labels
        pw.grab()
        qtbot.wait(10)
    labels = _drawn_labels(plot.getAxis("left"))

    def value(s: str) -> float:
        sup = str.maketrans("\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079",
                            "-0123456789")
        if "10" in s and not s.startswith("0"):
            mant, _, exp = s.partition("10")
            m = float(mant.rstrip("\u00b7") or 1)
            return m * 10.0 ** int(exp.translate(sup))
        return float(s)

    vals = sorted(value(s) for s in labels)
    assert len(vals) == len(set(vals))  # no label drawn twice
    assert sum(v < 1e-3 for v in vals) >= n_below
    # never crowded: neighbouring labels at least a text height apart
    h = plot.getAxis("left").size().height()
    span = np.diff(plot.getAxis("left").range)[0]
    gaps = np.diff(np.log10(vals)) * h / span
    assert gaps.min() >= pw.fontMetrics().height()


def test_stability_shows_a_line_of_text_while_computing(qtbot, demo_results):
    """The Stability tab painted empty axes for seconds while its job waited."""
    from PySide6.QtCore import QThreadPool

    from xpcsviewer.gui.context import AppContext
    from xpcsviewer.gui.panels.stability import StabilityPanel
    from xpcsviewer.gui.workers import TaskRunner, wait_for_event_job

    pool = QThreadPool()
    pool.setMaxThreadCount(1)
    ctx = AppContext(runner=TaskRunner(pool=pool))
    p = StabilityPanel(ctx)
    qtbot.addWidget(p)
    p.resize(900, 600)
    p.show()
    busy = threading.Event()
    ctx.runner.submit("test:busy", wait_for_event_job, busy)  # e.g. the start-up compile
    try:
        p.set_results([demo_results["A01"], demo_results["E01"]])
        assert p.plot_stack.currentWidget() is p.placeholder
        assert not p.pw.isVisible()
        assert "computing" in p.placeholder.text() and "A01" in p.placeholder.text()
    finally:
        busy.set()
    qtbot.waitUntil(p.pw.isVisible, timeout=20000)
    assert p.result is not None and p.plot_items()
    # another file: its own line until its curves are there
    busy = threading.Event()
    ctx.runner.submit("test:busy", wait_for_event_job, busy)
    try:
        p.set_current(1)
        assert p.plot_stack.currentWidget() is p.placeholder and "E01" in p.placeholder.text()
    finally:
        busy.set()
    qtbot.waitUntil(p.pw.isVisible, timeout=20000)
    assert p.result.flagged
    ctx.runner.wait_for_done(10000)


def test_backend_label_leaves_starting_once_jax_is_up(window, qtbot):
    """Issue 33 (7): "JAX: starting..." stayed over 60 s, while the fits compiled long
    after JAX was loaded; after the warm-up's first step the label names the backend."""
    from xpcsviewer.gui._window_extras import WARMUP_DESCRIPTION

    window.warmup_done = False
    window.backend_label.setText("JAX: starting\u2026")
    window._label_progress({"key": WARMUP_DESCRIPTION, "done": 1, "total": 3,
                            "message": "least-squares programs"})
    text = window.backend_label.text()
    assert "starting" not in text and "preparing fits" in text
    assert text.startswith(("JAX", "NumPy"))
