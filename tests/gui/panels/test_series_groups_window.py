"""Issue 49 item 1 in the real window: A02, H01 and S05 (three samples, three
q-partitions) opened as targets; the Series tab, shown by a click on its tab, draws no
line that joins two of them, labels each line with its own q, and says in its status
line what was not joined and why. Repeats of one sample (F01-F04) still join."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

pytestmark = pytest.mark.gui


def _show_series(window, qtbot, wait_idle):
    bar = window.tabs.tabBar()
    i = window.tab_index("series")
    assert window.tabs.isTabEnabled(i), window.tabs.tabToolTip(i)
    qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(i).center())
    panel = window.panels["series"]
    assert window.current_panel() is panel
    wait_idle(window, 240000)
    qtbot.waitUntil(lambda: not panel._pending and bool(panel.table.files), timeout=240000)
    return panel


def _named_lines(panel) -> dict[str, list[float]]:
    """Legend text -> x of the tau line drawn under that name."""
    return {it.name(): list(it.xData) for it in panel.tau_plot.listDataItems()
            if it.name()}


def test_series_tab_keeps_a02_h01_s05_apart(window, demo_files, open_demo, wait_idle,
                                            qtbot):
    from xpcsviewer.views.series_groups import series_groups

    open_demo(window, demo_files, names=["A02", "H01", "S05"])
    panel = _show_series(window, qtbot, wait_idle)
    t = panel.table
    assert [p.split("/")[-1][:3] for p in (f.path for f in t.files)] == ["A02", "H01", "S05"]
    groups = series_groups(t)
    assert [g.files for g in groups] == [(0,), (1,), (2,)]
    # bin 1 is three lines, each named by its own q (0.0016, 0.0044, 0.0015) and file
    lines = _named_lines(panel)
    legend = list(lines)
    # the key is a line below the plots (no legend over the tau plot), one entry per
    # group: each group named once, its lines' q after it
    assert panel.tau_plot.legend is None
    key = panel.tau_key.text()
    plain = re.sub(r"<[^>]+>", "", key)
    assert plain.startswith("q (\u00c5\u207b\u00b9): A02_silica_R250nm_water: \u2501 ")
    for g in groups:
        assert plain.count(f"{g.label}: ") == 1, plain
    assert plain.count("\u2501") == len(lines)
    assert panel.tau_key.isVisible() and panel.tau_key.wordWrap()
    shots = Path("/tmp/s57/shots/ui49")
    if shots.is_dir():
        panel.window().grab().save(str(shots / "series_three_groups.png"))
    ones = [n for n in legend if n.startswith(tuple(f"q={g.q[1]:.4g} (" for g in groups))]
    assert len(ones) == 3, legend
    assert ones[0].endswith("(A02_silica_R250nm_water)")
    assert ones[1].endswith("(H01_hot_pixels_R100nm)")
    assert ones[2].endswith("(S05_timepix_timetag_tau\u2026)")
    qs = sorted(float(n.split()[0][2:]) for n in ones)
    assert qs[0] < 0.0016 < qs[1] < 0.0017 < 0.004 < qs[2]
    # no line holds more than one file's point (the files all started at one time: x 0)
    assert all(len(x) <= 1 for x in lines.values())
    # the status line says what was not joined and why
    s = panel.status.text()
    assert ("not joined to A02_silica_R250nm_water (lines of their own): "
            "H01_hot_pixels_R100nm (other sample: radius 1e-07 vs 2.5e-07; its bins' q "
            "differ by > 2 %: bin 1 q 0.004") in s
    assert "S05_timepix_timetag_tau\u2026 (other sample: radius not stated vs 2.5e-07; " \
           "its bins' q differ by > 2 %: bin 1 q 0.001458" in s
    # the bin list says that bin 1 stands for several q
    item = panel.bin_list.item(0)
    assert item.text().startswith("1: q=0.00146\u2013") and "3 lines" in item.toolTip()
    # the tab's table export says each row's group (the CSV's last column)
    cols, _ = panel.data_columns()
    assert list(cols)[-1] == "group"
    n = [len(f.bins) for f in t.files]
    assert cols["group"].tolist() == [1.0] * n[0] + [2.0] * n[1] + [3.0] * n[2]


def test_series_tab_still_joins_repeats_of_one_sample(window, demo_files, open_demo,
                                                      wait_idle, qtbot):
    open_demo(window, demo_files, names=["F01", "F02", "F03", "F04"])
    panel = _show_series(window, qtbot, wait_idle)
    assert len(panel.table.files) == 4
    lines = _named_lines(panel)
    assert len(lines) == len(panel.chosen_bins()) == 4
    assert all(n.startswith("q=") and "(" not in n for n in lines)
    # one group: the key is the lines' q, no group name
    plain = re.sub(r"<[^>]+>", "", panel.tau_key.text())
    assert plain.startswith("q (\u00c5\u207b\u00b9): \u2501 ") and plain.count("\u2501") == 4
    assert max(len(x) for x in lines.values()) >= 3  # one line through the repeats
    assert "not joined" not in panel.status.text()
