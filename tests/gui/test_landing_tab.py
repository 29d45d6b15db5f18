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
