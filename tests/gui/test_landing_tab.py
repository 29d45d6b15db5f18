"""Where the window lands: the demo opens fitted on g2; Clear does not leave it on Metadata."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gui


def test_demo_opens_on_g2_fitted(window, demo_files, wait_idle):
    a01 = next(p for p in demo_files if p.name.startswith("A01"))
    window.open_and_fit([str(a01.parent), str(a01)], "g2")
    wait_idle(window, 120000)
    assert window.current_panel().name == "g2"
    g2 = window.panels["g2"]
    assert g2.fits is not None and g2.fits.n_curves == g2.blocks[0].n_bins
    assert window.browser.target_paths() == [str(a01.resolve())]


def test_clear_and_reopen_keeps_the_chosen_tab(window, demo_files, open_demo, wait_idle):
    open_demo(window, demo_files, names=["A01"])
    assert window.current_panel().name == "g2"  # first start: g2, not Metadata
    i = window.tab_index("saxs1d")
    window.tabs.setCurrentIndex(i)  # as a click does
    window.browser.clear_targets()
    wait_idle(window)
    open_demo(window, demo_files, names=["A02"])
    assert window.current_panel().name == "saxs1d"
    # a tab that does not apply to the new files: the first of the priority list that does
    window.preferred_tab = "twotime"  # as left by a file that had two-time maps
    window.browser.clear_targets()
    wait_idle(window)
    open_demo(window, demo_files, names=["A01"])  # no two-time data
    assert window.current_panel().name == "g2"


def test_folder_alone_opens_its_first_file_on_g2(window, demo_files, wait_idle):
    # as `xpcsviewer FOLDER` does on a first start: no session, no targets
    assert window.central.currentWidget() is window.empty_state
    assert window.empty_state.title.text() == "No files open"
    window.open_paths([str(demo_files[0].parent)])
    wait_idle(window, 60000)
    assert window.browser.target_paths() == [str(demo_files[0])]
    assert window.central.currentWidget() is window.tabs
    assert window.current_panel().name == "g2"
    assert window.tabs.isTabEnabled(window.tabs.currentIndex())


def test_folder_keeps_restored_targets_inside_it(window, demo_files, wait_idle):
    d = demo_files[0].parent
    window.browser.open_folder(str(d))
    wait_idle(window)
    window.browser.set_targets([str(demo_files[2]), str(demo_files[3])], 1)  # a session
    wait_idle(window)
    window.open_paths([str(d)])
    wait_idle(window)
    assert window.browser.target_paths() == [str(demo_files[2]), str(demo_files[3])]


def test_folder_replaces_targets_of_another_folder(window, demo_files, wait_idle, tmp_path):
    import shutil

    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(demo_files[1], other / demo_files[1].name)
    window.browser.open_folder(str(demo_files[0].parent))
    wait_idle(window)
    window.browser.set_targets([str(demo_files[2])])
    wait_idle(window)
    window.open_paths([str(other)])
    wait_idle(window)
    assert window.browser.target_paths() == [str(other / demo_files[1].name)]
    assert "another folder" in window.message_label.text()


def test_empty_window_says_what_to_do(window, demo_files, wait_idle, tmp_path, qtbot):
    (tmp_path / "empty").mkdir()
    window.browser.open_folder(str(tmp_path / "empty"))
    wait_idle(window)
    assert window.empty_state.title.text() == "No result files here"
    assert not window.empty_state.first_btn.isVisibleTo(window.empty_state)
    window.browser.open_folder(str(demo_files[0].parent))  # listed, nothing chosen
    wait_idle(window)
    es = window.empty_state
    assert window.central.currentWidget() is es
    assert es.title.text().startswith(f"{len(demo_files)} result file(s)")
    assert "Add" in es.text.text() and es.first_btn.isVisibleTo(es)
    es.first_btn.click()
    wait_idle(window, 60000)
    assert window.browser.target_paths() == [str(demo_files[0])]
    assert window.central.currentWidget() is window.tabs
    window.browser.clear_targets()  # back to the hint, not to greyed-out tabs
    wait_idle(window)
    assert window.central.currentWidget() is es and es.first_btn.isVisibleTo(es)


def test_unopenable_targets_are_listed(window, tmp_path, wait_idle):
    bad = tmp_path / "bad_results.hdf"
    bad.write_bytes(b"not hdf5")
    window.open_paths([str(bad)])
    wait_idle(window)
    es = window.empty_state
    assert window.central.currentWidget() is es
    assert es.title.text() == "No target could be opened"
    assert "bad_results.hdf" in es.text.text()
