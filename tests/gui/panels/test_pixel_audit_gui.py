"""The pixel audit in the GUI (issue 36), driven as a user would: Audit pixels on the
G2 tab, the flagged pixels circled there and on SAXS-2D, Mask these into the Detector
tab's mask (undoable), Regroup, and the regrouped file's plateau at the truth."""

from __future__ import annotations

import csv

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

pytestmark = pytest.mark.gui

LEFT = Qt.MouseButton.LeftButton
H01 = "H01_hot_pixels_R100nm"


@pytest.fixture(scope="module")
def hot_dir(tmp_path_factory):
    from xpcsviewer.synthetic.demo import write_demo

    out = tmp_path_factory.mktemp("hot_gui")
    write_demo(out, seed=0, names=[H01], workers=1)
    return out


def _circled(item) -> set[tuple[int, int]]:
    x, y = item.getData()
    return {(int(r - 0.5), int(c - 0.5)) for c, r in zip(x, y, strict=True)}


def test_audit_circle_mask_regroup(qtbot, window, hot_dir, wait_idle, tmp_path):
    path = hot_dir / f"{H01}_results.hdf"
    window.browser.add_paths([str(path)])
    wait_idle(window, 60000)
    src = window.results[0]
    s = src.sample
    injected = set(zip(s["hot_pixel_rows"], s["hot_pixel_cols"], strict=True))
    window.select_tab("g2pixel")
    wait_idle(window)
    gp = window.panels["g2pixel"]
    gp.tools_tabs.setCurrentIndex(1)  # the Pixel audit page
    QTest.mouseClick(gp.audit_btn, LEFT)
    wait_idle(window, 60000)
    assert gp.audit_table.rowCount() == 50
    top4 = {(int(gp.audit_table.item(i, 1).text()), int(gp.audit_table.item(i, 2).text()))
            for i in range(4)}
    assert top4 == injected
    assert "4 flagged" in gp.audit_label.text()
    assert _circled(gp.audit_overlay) == injected
    # the same circles on SAXS-2D
    window.select_tab("saxs2d")
    wait_idle(window)
    assert _circled(window.panels["saxs2d"].flagged_item) == injected
    # "circle flagged" off: gone from both
    gp.audit_show.setChecked(False)
    assert not _circled(window.panels["saxs2d"].flagged_item)
    assert not _circled(gp.audit_overlay)
    gp.audit_show.setChecked(True)
    # the table as CSV, atomically, where the user chose
    csv_path = tmp_path / "pixels.csv"
    gp.save_audit_table(str(csv_path))
    wait_idle(window)
    rows = list(csv.reader(csv_path.open()))
    assert rows[0][:4] == ["file", "bin", "row", "col"] and len(rows) == 101
    # Mask these: one undoable step in the Detector tab's mask
    window.select_tab("g2pixel")
    QTest.mouseClick(gp.mask_these_btn, LEFT)
    wait_idle(window)
    assert gp.tools_tabs.currentWidget() is gp.regroup_box  # the next step
    det = window.panels["detector"]
    h = det.histories[str(path)]
    assert h.n_masked == 4
    assert not any(h.current[r, c] for r, c in injected)
    shared = window.context.shared["detector_mask"]
    assert shared.path == str(path) and shared.n_masked == 4
    # Regroup with the Detector tab's mask: the plateau is back at the truth
    gp.regroup_dir = str(tmp_path)
    with qtbot.waitSignal(window.sigTargetsLoaded, timeout=120000):
        QTest.mouseClick(gp.regroup_btn, LEFT)
    wait_idle(window)
    new = window.results[1]
    assert "regrouped" in new.label
    assert not any(new.qmap.mask[r, c] for r, c in injected)
    q, tau = src.qmap.dynamic_q, src.multitau.tau[:3]
    truth = (1 + s["contrast"] * np.exp(-2 * s["D"] * q[None, :] ** 2 * tau[:, None])).mean(0)
    before = src.multitau.g2[:3].mean(0) / truth - 1
    after = new.multitau.g2[:3].mean(0) / truth - 1
    assert np.abs(before).max() > 0.02 and np.abs(after).max() < 0.01
    # undo on the Detector tab gives the pixels back
    window.select_tab("detector")
    wait_idle(window)
    QTest.mouseClick(det.mask_tools.undo_btn, LEFT)
    wait_idle(window)
    assert h.n_masked == 0
