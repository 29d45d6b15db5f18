"""Raw sources in the window (issue 45): the browser says what each file is, and raw
sources open in the Raw tab (shared keys), never as result targets."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent

from xpcsviewer.gui.raw_sources import RAW_CURRENT_KEY, RAW_SOURCES_KEY, RawTarget
from xpcsviewer.synthetic.raw_examples import write_raw_examples

pytestmark = pytest.mark.gui


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    d = tmp_path_factory.mktemp("raw_folder")
    return d, write_raw_examples(d)


def _browser(sync_context, qtbot, folder):
    from xpcsviewer.gui.browser import DataBrowser

    b = DataBrowser(sync_context)
    qtbot.addWidget(b)
    b.resize(320, 700)
    b.show()
    b.open_folder(str(folder))
    return b


def test_browser_lists_what_each_file_is(sync_context, qtbot, examples):
    d, _ = examples
    b = _browser(sync_context, qtbot, d)
    kinds = {e.name: e.kind for e in b.entries}
    # one entry per source: six module files are one 3M set, three blocks one series
    assert set(kinds) == {
        "A01_example_results.hdf", "A01_example_results_G2.hdf", "D01_dense.h5",
        "D02_dense.npy", "S01_rigaku.bin", "S02_rigaku3m.bin.000-005",
        "S03_esrf_qmap.h5", "S03_esrf_sparse_frame_0_00000-00002.h5", "S04_id11_sparse.h5",
        "S05_timepix_events.h5"}
    assert [n for n, k in kinds.items() if k.kind == "result"] == ["A01_example_results.hdf"]
    assert kinds["S03_esrf_qmap.h5"].kind == "qmap"
    assert kinds["A01_example_results_G2.hdf"].kind == "side"
    assert kinds["S02_rigaku3m.bin.000-005"].text.startswith("raw: Rigaku 3M")
    assert "20 frames" in kinds["S02_rigaku3m.bin.000-005"].text
    assert "30 frames, 60 hits" in kinds["S03_esrf_sparse_frame_0_00000-00002.h5"].text
    # every item shows its description (second line) and says it in its tooltip
    for i in range(b.source_list.count()):
        it = b.source_list.item(i)
        assert it.data(Qt.ItemDataRole.UserRole + 1) in it.toolTip()
    # the status line counts kinds, not "result files"
    assert b.source_box.title() == "Source: 10 of 10"
    assert b.source_list.horizontalScrollBar().maximum() == 0


def test_double_click_raw_goes_to_the_raw_list_not_targets(sync_context, qtbot, examples):
    d, files = examples
    b = _browser(sync_context, qtbot, d)
    got = []
    b.sigRawSources.connect(got.append)
    names = b.source_names()
    for name in ("S02_rigaku3m.bin.000-005", "A01_example_results.hdf", "S03_esrf_qmap.h5"):
        b.source_list.item(names.index(name)).setSelected(True)
    b.add_selected()
    assert [p.split("/")[-1] for p in b.target_paths()] == ["A01_example_results.hdf"]
    (raw,) = got[0]
    assert isinstance(raw, RawTarget)
    assert (raw.path, raw.layout, raw.label) == (str(files["rigaku_3m"]), "rigaku-3m",
                                                 "S02_rigaku3m.bin.000-005")


def test_open_paths_cli_and_drop_route_raw_sources(qtbot, examples, sync_context):
    from xpcsviewer.gui.main_window import MainWindow

    _, files = examples
    win = MainWindow(context=sync_context, restore_session=False,
                     save_session_on_close=False)
    qtbot.addWidget(win)
    win.show()
    # as `xpcsviewer NAME_sparse_frame_0_00001.h5` does (gui/app.py -> open_paths): a
    # block stands for its series, opened by its first block
    win.open_paths([str(files["esrf"]).replace("_00000.h5", "_00001.h5")])
    (t,) = win.context.shared[RAW_SOURCES_KEY]
    assert t.path == str(files["esrf"].resolve()) and t.layout == "esrf-csr"
    assert t.label == "S03_esrf_sparse_frame_0_00000-00002.h5"  # as the browser lists it
    assert t.qmap_path == str(files["qmap"].resolve())  # NAME_qmap.h5 beside it
    assert win.context.shared[RAW_CURRENT_KEY] == t
    assert win.browser.target_paths() == [] and win.results == []
    assert win.central.currentWidget() is win.tabs  # not the "no files open" page
    if "raw" in win.panels:
        assert win.current_panel().name == "raw"
    # a drop on the window: the Timepix list joins, with a bin time from the file
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(files["timepix"])),
                  QUrl.fromLocalFile(str(files["result"]))])
    ev = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime,
                    Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    win.dropEvent(ev)
    raws = win.context.shared[RAW_SOURCES_KEY]
    assert [r.layout for r in raws] == ["esrf-csr", "timepix"]
    assert raws[1].bin_time == pytest.approx(1e-9) and raws[1].qmap_path is None
    assert win.context.shared[RAW_CURRENT_KEY] == raws[1]
    assert [p.split("/")[-1] for p in win.browser.target_paths()] == [
        "A01_example_results.hdf"]
    # the same source again: listed once
    win.open_paths([str(files["esrf"])])
    assert len(win.context.shared[RAW_SOURCES_KEY]) == 2
    win.shutdown(5000)


def test_empty_state_offers_raw_sources(qtbot, tmp_path, sync_context):
    from xpcsviewer.gui.main_window import MainWindow
    from xpcsviewer.synthetic.sparse_files import write_rigaku_bin

    write_rigaku_bin(tmp_path / "only.bin", [0, 1, 2], [5, 6, 7], [1, 1, 2])
    win = MainWindow(context=sync_context, restore_session=False,
                     save_session_on_close=False)
    qtbot.addWidget(win)
    win.open_paths([str(tmp_path)])
    assert "raw source" in win.empty_state.title.text()
    assert win.open_first_file()
    assert [t.label for t in win.context.shared[RAW_SOURCES_KEY]] == ["only.bin"]
    win.shutdown(5000)


def _window_on(qtbot, sync_context, paths):
    from xpcsviewer.gui.main_window import MainWindow

    win = MainWindow(context=sync_context, restore_session=False,
                     save_session_on_close=False)
    qtbot.addWidget(win)
    win.resize(1200, 800)
    win.show()
    win.open_paths([str(p) for p in paths])
    return win


def test_mask_request_on_a_raw_source_is_one_undoable_step(qtbot, examples, sync_context):
    from PySide6.QtTest import QTest

    from xpcsviewer.gui.panels._pixel_audit_box import MASK_REQUEST_KEY, MaskRequest
    from xpcsviewer.gui.panels.detector import MASK_KEY
    from xpcsviewer.gui.raw_sources import RAW_MEAN_IMAGE_KEY
    from xpcsviewer.io.results.reader import read_qmap

    _, files = examples
    win = _window_on(qtbot, sync_context, [files["esrf"]])
    (t,) = win.context.shared[RAW_SOURCES_KEY]
    det = win.panels["detector"]
    assert win.tabs.isTabEnabled(win.tab_index("detector"))  # a raw source, no result
    win.select_tab("detector")
    qmask = np.asarray(read_qmap(files["qmap"]).mask, bool)
    h = det.history()
    assert det.subject().path == t.path and np.array_equal(h.initial, qmask)
    assert det.file_selector.currentText() == f"raw: {t.label}"
    # the Raw tab, shown first, inspected the source and published its mean image
    mean = win.context.shared[RAW_MEAN_IMAGE_KEY]
    assert mean[0] == t.path and not det.data["blank"]
    assert np.array_equal(det.data["raw"], mean[1]) and mean[1].shape == qmask.shape
    assert win.context.shared[MASK_KEY].path == t.path
    # the Raw tab's "Mask these": two valid pixels, one already outside the q-map's mask
    sel = np.zeros(qmask.shape, bool)
    valid = np.argwhere(qmask)
    sel[tuple(valid[0])] = sel[tuple(valid[5])] = True
    sel[tuple(np.argwhere(~qmask)[0])] = True
    win.context.set_shared(MASK_REQUEST_KEY, MaskRequest(t.path, sel, "raw faults"))
    assert h.version == 1 and h.n_masked == 2
    shared = win.context.shared[MASK_KEY]
    assert shared.path == t.path and shared.n_masked == 2
    assert np.array_equal(shared.mask, qmask & ~sel)
    QTest.mouseClick(det.mask_tools.undo_btn, Qt.MouseButton.LeftButton)
    assert h.n_masked == 0 and np.array_equal(win.context.shared[MASK_KEY].mask, qmask)
    QTest.mouseClick(det.mask_tools.redo_btn, Qt.MouseButton.LeftButton)
    assert h.n_masked == 2
    # the Raw tab's mean image replaces the blank frame; the mask stays
    img = np.arange(qmask.size, dtype=float).reshape(qmask.shape)
    win.context.set_shared(RAW_MEAN_IMAGE_KEY, (t.path, img))
    assert not det.data["blank"] and np.array_equal(det.data["raw"], img)
    assert det.history() is h and h.n_masked == 2
    # a result made current takes the tab back; the raw source's mask is kept
    win.browser.add_paths([str(files["result"])])
    assert str(det.subject().path) == str(files["result"].resolve())
    assert det.history() is not h and h.n_masked == 2
    assert "drawn_masks" in det.get_settings()
    assert all(e["file"] != t.path for e in det.get_settings()["drawn_masks"])
    win.shutdown(5000)


def test_raw_source_without_qmap_has_all_pixels_valid(qtbot, examples, sync_context):
    from xpcsviewer.gui.panels._pixel_audit_box import MASK_REQUEST_KEY, MaskRequest

    _, files = examples
    win = _window_on(qtbot, sync_context, [files["timepix"], files["result"]])
    (t,) = win.context.shared[RAW_SOURCES_KEY]
    det = win.panels["detector"]
    win.select_tab("detector")
    assert det.subject().path == t.path  # opened last: shown (in the Raw tab too)
    assert det.file_selector.count() == 2
    det.file_selector.activated.emit(0)  # the user picks the result
    assert str(det.subject().path) == str(files["result"].resolve())
    # a request for the raw source turns the tab to it, with the detector's shape
    sel = np.zeros((32, 40), bool)
    sel[3, 4] = True
    win.context.set_shared(MASK_REQUEST_KEY, MaskRequest(t.path, sel, "hot pixel"))
    h = det.history()
    assert det.subject().path == t.path and det.subject().qmap is None
    assert h.initial.all() and h.initial.shape == (32, 40) and h.n_masked == 1
    assert det.center_item.getData()[0] is None  # no beam centre without a q-map
    win.shutdown(5000)


def test_snapshot_of_a_raw_folder(qapp, examples, tmp_path):
    """``xpcsviewer snapshot FOLDER``: the browser on a raw folder, its first raw source's
    mask in the Detector tab (was exit 3: a folder is no result file)."""
    from PySide6.QtGui import QImage

    from xpcsviewer.cli import main

    d, _ = examples
    raw_only = tmp_path / "raw"
    raw_only.mkdir()
    for f in d.iterdir():
        if not f.name.startswith("A01"):  # no result: the first raw source opens
            (raw_only / f.name).write_bytes(f.read_bytes())
    out = tmp_path / "raw.png"
    assert main(["snapshot", str(raw_only), "--tab", "detector", "-o", str(out),
                 "--size", "900", "600"]) == 0
    img = QImage(str(out))
    assert (img.width(), img.height()) == (900, 600)
    assert len({img.pixel(x, y) for x in range(0, 900, 7) for y in range(0, 600, 7)}) > 20


def test_snapshot_of_an_unreadable_raw_source_fails_as_info_does(examples, tmp_path, capsys):
    """A raw source the reader refuses (a .bin cut inside a word, a dense file linking
    outside its folder) stops `snapshot` with exit 3 and its reason, never a blank tab."""
    import h5py

    from xpcsviewer.cli import main

    _, files = examples
    cut = tmp_path / "cut.bin"
    cut.write_bytes(files["rigaku"].read_bytes()[:-3])
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    with h5py.File(outside / "data.h5", "w") as f:
        f["data"] = np.ones((4, 6, 6), np.uint16)
    inner = tmp_path / "in"
    inner.mkdir()
    with h5py.File(inner / "linked.h5", "w") as f:
        f["/entry/data/data"] = h5py.ExternalLink(str(outside / "data.h5"), "data")
    for src, why in ((cut, "truncated last word"), (inner / "linked.h5", "outside the input")):
        rc = main(["snapshot", str(src), "--tab", "raw", "-o", str(tmp_path / "s.png"),
                   "--overwrite", "--quiet"])
        err = capsys.readouterr().err
        assert rc == 3 and why in err and src.name in err, err
        assert not (tmp_path / "s.png").exists()
