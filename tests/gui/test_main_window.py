"""The main window: tabs, data browser, loading, errors, cancel, session."""

from __future__ import annotations

import json
import threading

import pytest
from PySide6.QtCore import Qt

from xpcsviewer.gui.panels import panel_names
from xpcsviewer.synthetic.demo import DEMO_SPECS

pytestmark = pytest.mark.gui


def test_window_builds_without_data(window, wait_idle):
    assert [window.panel_at(i).name for i in range(window.tabs.count())] == panel_names()
    for i in range(window.tabs.count()):
        if window.panel_at(i).name == "live":  # makes files: needs none
            assert window.tabs.isTabEnabled(i)
            continue
        assert not window.tabs.isTabEnabled(i)
        assert window.tabs.tabToolTip(i)  # says why
    wait_idle(window)
    assert "float64" in window.backend_label.text()
    menus = [a.text() for a in window.menuBar().actions()]
    assert menus == ["&File", "&View", "&Tools", "&Help"]


def test_open_demo_set_enables_tabs(window, demo_files, open_demo):
    paths = open_demo(window, demo_files)
    # the per-pixel G2 side files are listed too, said to be side files (issue 45)
    kinds = {e.name: e.kind.kind for e in window.browser.entries}
    assert sorted(n for n, k in kinds.items() if k == "result") == [p.name for p in demo_files]
    assert sorted(n for n, k in kinds.items() if k != "result") == [
        p.name for p in sorted(demo_files[0].parent.glob("*_results_G2.hdf"))]
    assert {k for n, k in kinds.items() if n.endswith("_G2.hdf")} == {"side"}
    assert len(window.results) == len(paths) == len(DEMO_SPECS)
    for name in ("saxs2d", "saxs1d", "stability", "intensity", "qmap", "metadata"):
        i = window.tab_index(name)
        assert window.tabs.isTabEnabled(i), window.tabs.tabToolTip(i)
    assert window.errors == []


def test_filter_sort_add_remove_reorder(window, demo_files, wait_idle):
    b = window.browser
    b.open_folder(str(demo_files[0].parent))
    wait_idle(window)
    b.filter_edit.setText("silica water")
    assert b.source_names() == [p.name for p in demo_files[:3]]
    b.filter_mode.setCurrentText("prefix")
    b.filter_edit.setText("B01")
    assert b.source_names() == [demo_files[3].name]
    b.filter_edit.setText("")
    b.sort_combo.setCurrentText("name-reverse")
    results = [n for n in b.source_names() if not n.endswith("_G2.hdf")]  # side files
    assert results == [p.name for p in reversed(demo_files)]
    b.sort_combo.setCurrentText("name")
    b.filter_edit.setText("A0")
    b.add_selected()  # a filter selects its matches
    wait_idle(window)
    assert [p.split("/")[-1] for p in b.target_paths()] == [p.name for p in demo_files[:3]]
    b.add_selected()  # duplicates are skipped
    assert len(b.target_paths()) == 3
    b.target_list.setCurrentRow(2)
    b.move_current(-1)
    assert [p.split("/")[-1][:3] for p in b.target_paths()] == ["A01", "A03", "A02"]
    b.target_list.clearSelection()
    b.target_list.setCurrentRow(0)
    b.remove_selected()
    wait_idle(window)
    assert [r.label[:3] for r in window.results] == ["A03", "A02"]
    b.clear_targets()
    wait_idle(window)
    assert window.results == [] and not window.tabs.isTabEnabled(0)


def test_arrow_keys_step_through_targets_and_replot(window, demo_files, qtbot, wait_idle,
                                                    open_demo):
    open_demo(window, demo_files, names={"A01", "A02", "A03"})
    window.select_tab("metadata")
    wait_idle(window)
    panel = window.panels["metadata"]
    tl = window.browser.target_list
    tl.setFocus()
    tl.setCurrentRow(0)
    wait_idle(window)
    assert panel.current_result().label.startswith("A01")
    qtbot.keyClick(tl, Qt.Key.Key_Down)
    wait_idle(window)
    assert panel.current_result().label.startswith("A02")
    assert any("A02" in v for _n, v, _u in panel.leaves())
    qtbot.keyClick(tl, Qt.Key.Key_Down)
    wait_idle(window)
    assert panel.file_selector.currentText().startswith("A03")


def test_corrupt_file_reports_and_the_rest_loads(window, demo_files, tmp_path, wait_idle):
    import shutil

    for p in demo_files[:2]:
        shutil.copy(p, tmp_path / p.name)
    bad = tmp_path / "Z99_broken_results.hdf"
    bad.write_bytes(b"this is not an HDF5 file")
    window.browser.open_folder(str(tmp_path))
    wait_idle(window)
    window.browser.add_paths([str(p) for p in sorted(tmp_path.glob("*.hdf"))])
    wait_idle(window)
    assert len(window.results) == 2
    assert any("Z99_broken" in e.message for e in window.errors)
    text = window.message_label.text()
    assert text.count("Z99_broken_results.hdf") == 1, text  # named once, by its name
    assert "XpcsFileError" not in text and str(tmp_path) not in text
    assert window.details_btn.isVisible()
    box = window.show_error_details()
    assert box is not None and "Z99_broken" in box.text()
    assert "XpcsFileError" not in box.informativeText()
    box.close()
    # the unreadable target is marked in the list, the others are not
    tl = window.browser.target_list
    texts = [tl.item(i).text() for i in range(tl.count())]
    marked = [t for t in texts if t.startswith("\u26a0")]
    assert marked == ["\u26a0 Z99_broken_results.hdf"]
    row = texts.index(marked[0])
    assert "not opened" in tl.item(row).toolTip()


def test_cancel_button_cancels_running_jobs(qtbot, window, wait_idle):
    started = threading.Event()
    cancelled_at = []

    def long_job(progress=None, cancel=None):
        for i in range(100_000):
            started.set()
            if cancel.cancelled:
                cancelled_at.append(i)
                cancel.raise_if_cancelled()
            threading.Event().wait(0.001)

    wait_idle(window)
    window.context.runner.submit("test:long", long_job, description="long")
    assert started.wait(5)
    # the status bar follows on the next event-loop turn (a progress bar repaints
    # synchronously: never inside a job's callback)
    qtbot.waitUntil(window.cancel_btn.isVisible, timeout=2000)
    assert window.progress.isVisible()
    window.cancel_btn.click()
    wait_idle(window, 5000)
    assert cancelled_at
    qtbot.waitUntil(lambda: not window.cancel_btn.isVisible(), timeout=2000)
    assert not window.progress.isVisible()


def test_no_job_starts_or_lands_after_shutdown(qtbot, window, wait_idle):
    """A job running at shutdown has its result dropped, and a timer firing after it
    (the Detector's delayed re-partition) starts nothing: the widgets are going."""
    release = threading.Event()
    applied, ran = [], []

    def slow(progress=None, cancel=None):
        release.wait(5)
        return 1

    wait_idle(window)
    runner = window.context.runner
    runner.submit("test:slow", slow, on_result=applied.append)
    threading.Timer(0.2, release.set).start()  # the job ends while shutdown waits
    assert window.shutdown(5000)
    assert applied == [] and runner.closed
    rid = runner.submit("test:late", lambda progress=None, cancel=None: ran.append(1),
                        on_result=applied.append)
    qtbot.wait(50)
    assert rid == -1 and ran == [] and applied == [] and not runner.is_busy


def test_session_round_trip(qtbot, demo_files, _config_dir, wait_idle, open_demo):
    from xpcsviewer.gui.main_window import MainWindow

    win = MainWindow(restore_session=False, save_session_on_close=True)
    qtbot.addWidget(win)
    win.show()
    open_demo(win, demo_files, names={"A01", "B01"})
    win.select_tab("saxs1d")
    win.panels["saxs1d"].norm_combo.setCurrentIndex(2)
    win.panels["saxs1d"].logx.setChecked(False)
    win.set_theme("dark")
    wait_idle(win)
    win.close()
    data = json.loads((_config_dir / "session.json").read_text())
    assert data["active_tab"] == "saxs1d" and len(data["targets"]) == 2
    assert data["panels"]["saxs1d"]["norm"] == "iq4"

    win2 = MainWindow(restore_session=True, save_session_on_close=False)
    qtbot.addWidget(win2)
    win2.show()
    wait_idle(win2)
    assert win2.browser.target_paths() == data["targets"]
    assert len(win2.results) == 2
    assert win2.current_panel().name == "saxs1d"
    assert win2.panels["saxs1d"].norm_combo.currentData() == "iq4"
    assert not win2.panels["saxs1d"].logx.isChecked()
    assert win2.theme == "dark" and win2.recent[0] == str(demo_files[0].parent)
    win2.set_theme("light")
    win2.shutdown()


def test_missing_targets_skipped_with_message(qtbot, demo_files, _config_dir, wait_idle):
    from xpcsviewer.gui.main_window import MainWindow

    _config_dir.mkdir(parents=True, exist_ok=True)
    (_config_dir / "session.json").write_text(json.dumps({
        "targets": [str(demo_files[0]), "/nonexistent/X_results.hdf"],
        "active_tab": "metadata", "panels": {"saxs2d": {"cmap": 12, "levels": "bad"}}}))
    win = MainWindow()
    qtbot.addWidget(win)
    wait_idle(win)
    assert len(win.results) == 1
    assert any("missing" in e.message for e in win.errors)
    win.shutdown()


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", "\x00\xff"])
def test_corrupt_session_is_ignored(qtbot, _config_dir, content):
    from xpcsviewer.gui.main_window import MainWindow

    _config_dir.mkdir(parents=True, exist_ok=True)
    (_config_dir / "session.json").write_text(content, errors="surrogateescape")
    win = MainWindow(save_session_on_close=False)
    qtbot.addWidget(win)
    assert win.results == []
    assert any("session" in e.message.lower() for e in win.errors)
    win.shutdown()


def test_drop_files_on_target_list(window, demo_files, wait_idle):
    from PySide6.QtCore import QMimeData, QPointF, QUrl
    from PySide6.QtGui import QDropEvent

    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(demo_files[0]))])
    tl = window.browser.target_list
    ev = QDropEvent(QPointF(5, 5), Qt.DropAction.CopyAction, mime,
                    Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    tl.dropEvent(ev)
    wait_idle(window)
    assert window.browser.target_paths() == [str(demo_files[0])]
    assert len(window.results) == 1


def test_refresh_picks_up_new_files(window, demo_files, tmp_path, wait_idle):
    import shutil

    shutil.copy(demo_files[0], tmp_path / demo_files[0].name)
    window.browser.open_folder(str(tmp_path))
    wait_idle(window)
    assert len(window.browser.source_names()) == 1
    shutil.copy(demo_files[1], tmp_path / demo_files[1].name)
    window.browser.refresh()
    wait_idle(window)
    assert len(window.browser.source_names()) == 2


def test_export_figure_and_data_of_current_tab(window, demo_files, tmp_path, qtbot, wait_idle,
                                               open_demo):
    open_demo(window, demo_files, names={"A01", "A02"})
    window.select_tab("saxs1d")
    wait_idle(window)
    panel = window.panels["saxs1d"]
    with qtbot.waitSignal(panel.sigExported, timeout=30000):
        panel.export_data(tmp_path / "saxs1d.csv")
    text = (tmp_path / "saxs1d.csv").read_text()
    assert text.startswith("# SAXS-1D") and "A01" in text
    with qtbot.waitSignal(panel.sigExported, timeout=60000):
        panel.export_figure(tmp_path / "saxs1d.png")
    assert (tmp_path / "saxs1d.png").stat().st_size > 1000
    wait_idle(window)


@pytest.mark.realdata
def test_real_files_open_in_every_saxs_tab(window, real_data_dir, wait_idle):
    files = sorted((real_data_dir / "aps8idi_llps_saxpcs").glob("*.hdf"))[:2]
    if not files:
        pytest.skip("no real result files")
    window.open_paths([str(f) for f in files])
    wait_idle(window, 60000)
    assert len(window.results) == 2 and window.errors == []
    for name in ("saxs2d", "saxs1d", "stability", "intensity", "qmap"):
        window.select_tab(name)
        wait_idle(window, 60000)
        assert window.panels[name].plot_items(), name
    assert len(window.panels["saxs1d"].curves) == 2
    st = window.panels["stability"].result
    assert st.profiles.shape[0] == window.results[0].saxs_1d_segments.shape[0]


def test_every_tab_in_sight_at_the_default_size(qtbot):
    """Issue 33 (7): at 1389x868 Live and Series sat behind the tab bar's scroll arrows."""
    from xpcsviewer.gui.main_window import MainWindow

    win = MainWindow(restore_session=False, save_session_on_close=False)
    qtbot.addWidget(win)
    win.resize(1389, 868)
    win.show()
    win.show_live()
    qtbot.wait(100)
    tb = win.tabs.tabBar()
    right = max(tb.tabRect(i).right() for i in range(tb.count()))
    assert right <= tb.width()
    fm = tb.fontMetrics()
    short = [tb.tabText(i) for i in range(tb.count())
             if tb.tabRect(i).width() < fm.horizontalAdvance(tb.tabText(i))]
    assert not short, f"labels cut at the default size: {short}"
    win.shutdown(5000)


def test_export_figure_dialog_offers_journal_sizes(window, demo_files, tmp_path, qtbot,
                                                   wait_idle, open_demo, monkeypatch):
    """The Export Figure dialog has a size row (the presets of `export --size`); the
    chosen size sets the page width and is offered again next time (issue 33)."""
    from PySide6.QtCore import Qt

    from xpcsviewer.gui.export_dialog import FigureExportDialog

    open_demo(window, demo_files, names={"A01"})
    window.select_tab("saxs1d")
    wait_idle(window)
    seen = []

    def fake_exec(dlg):
        seen.append([dlg.size_combo.itemData(i) for i in range(dlg.size_combo.count())])
        seen.append(dlg.chosen_size())
        assert all(dlg.size_combo.itemData(i, Qt.ItemDataRole.ToolTipRole)
                   for i in range(dlg.size_combo.count()))
        dlg.size_combo.setCurrentIndex(dlg.size_combo.findData("single"))
        dlg.selectFile(str(tmp_path / "single.png"))
        return 1

    monkeypatch.setattr(FigureExportDialog, "exec", fake_exec)
    panel = window.panels["saxs1d"]
    with qtbot.waitSignal(panel.sigExported, timeout=60000):
        window._on_export_figure()
    assert seen == [["double", "single", "slide"], "double"]
    from PIL import Image

    with Image.open(tmp_path / "single.png") as im:
        assert im.size[0] == round(3.4 * 200)  # 3.4 in at the export's 200 dpi
    seen.clear()
    monkeypatch.setattr(FigureExportDialog, "exec", lambda dlg: seen.append(
        dlg.chosen_size()) or 0)
    window._on_export_figure()
    assert seen == ["single"]  # remembered; a cancelled dialog writes nothing
    wait_idle(window)
